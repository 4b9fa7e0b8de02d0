//! Performance Management (management class 0x04, class version 1; IBA chapter 16.1): the
//! GMP that carries it and the attributes a performance manager reads — ClassPortInfo
//! (0x0001), PortCounters (0x0012) and PortCountersExtended (0x001D).
//!
//! A PerfMgt MAD is the 24-byte common MAD header, 40 reserved bytes, then a 192-byte data
//! area at offset 64 where the attribute starts (opensm `include/iba/ib_types.h`
//! `ib_perfmgt_mad_t`: `hdr`, `resv[40]`, `data[IB_PM_DATA_SIZE = 192]`; libibmad
//! `IB_PC_DATA_OFFS` = 64). All fields are big-endian.
//!
//! Attribute layouts are byte offsets inside the data area, taken from opensm
//! `ib_types.h` (`ib_port_counters_t`, `ib_port_counters_ext_t`, `ib_class_port_info_t`,
//! capability bits `IB_PM_*`); field names follow libibmad `fields.c` (`IB_PC_*_F`,
//! `IB_PC_EXT_*_F`, `IB_CPI_*_F`, which libibmad reads relative to `IB_PC_DATA_OFFS`). The
//! offsets were checked against MADs captured from ibsim 0.10 with infiniband-diags
//! `perfquery -d -d -d` (`mad/tests/perf_golden.rs`).

mod class_port_info;
mod counters;
mod gmp;

pub use class_port_info::ClassPortInfo;
pub use counters::{ALL_PORTS, Counter, ExtCounter, PortCounters, PortCountersExtended};
pub use gmp::{PERF_CLASS_VERSION, PERF_DATA_LEN, PERF_DATA_OFFSET, PerfMad};

use crate::MadError;
use crate::header::AttributeId;

/// An attribute carried in the 192-byte data area of a PerfMgt MAD.
pub trait PerfAttribute: Sized {
    /// Attribute id in the MAD header.
    const ID: AttributeId;
    /// Bytes the attribute occupies at the start of the data area.
    const LEN: usize;
    /// Name, for errors and logs.
    const NAME: &'static str;

    /// Decodes from the data area. Every bit pattern decodes.
    fn decode(data: &[u8; PERF_DATA_LEN]) -> Self;

    /// Encodes into the data area, writing all 192 bytes (reserved bits and the bytes after
    /// [`Self::LEN`] become zero).
    fn encode(&self, data: &mut [u8; PERF_DATA_LEN]);

    /// Encodes to a new data area.
    fn to_data(&self) -> [u8; PERF_DATA_LEN] {
        let mut d = [0u8; PERF_DATA_LEN];
        self.encode(&mut d);
        d
    }

    /// Decodes from the first [`Self::LEN`] bytes of `s`; a shorter `s` is
    /// [`MadError::Truncated`].
    fn decode_slice(s: &[u8]) -> Result<Self, MadError> {
        let src = s.get(..Self::LEN).ok_or(MadError::Truncated {
            what: Self::NAME,
            needed: Self::LEN,
            got: s.len(),
        })?;
        let mut d = [0u8; PERF_DATA_LEN];
        d[..Self::LEN].copy_from_slice(src);
        Ok(Self::decode(&d))
    }

    /// Encodes into the first [`Self::LEN`] bytes of `out`.
    fn encode_slice(&self, out: &mut [u8]) -> Result<(), MadError> {
        let got = out.len();
        let dst = out.get_mut(..Self::LEN).ok_or(MadError::Truncated {
            what: Self::NAME,
            needed: Self::LEN,
            got,
        })?;
        let d = self.to_data();
        dst.copy_from_slice(&d[..Self::LEN]);
        Ok(())
    }
}
