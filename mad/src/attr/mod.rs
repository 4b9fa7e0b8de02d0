//! SMP attributes (IBA 14.2.5), each decoded field by field from and encoded to the
//! 64-byte SMP data area. Reserved bits decode to nothing and encode as zero; every defined
//! bit round-trips, including values the spec reserves (kept as raw integers).

mod node;
mod notice;
mod port_info;
mod sm_info;
mod switch;
mod tables;
mod virt;

pub use node::{NodeDescription, NodeInfo};
pub use notice::{Notice, NoticeDetails, ProducerType};
pub use port_info::PortInfo;
pub use sm_info::{SmInfo, SmState};
pub use switch::{LinearForwardingTable, MulticastForwardingTable, SwitchInfo};
pub use tables::{GuidInfo, PKeyTable, SlToVlTable, VlArbEntry, VlArbitrationTable};
pub use virt::{
    VNodeDescription, VNodeInfo, VPortGuidInfo, VPortInfo, VPortPKeyTable, VPortState,
    VirtualizationInfo, split_vport_block_modifier, vport_block_modifier, vport_modifier,
};

use crate::MadError;
use crate::header::AttributeId;

/// An attribute carried in the 64-byte data area of an SMP.
pub trait SmpAttribute: Sized {
    /// Attribute id in the MAD header.
    const ID: AttributeId;
    /// Bytes the attribute occupies on the wire (at most 64; SA records embed this many).
    const LEN: usize;
    /// Name, for errors and logs.
    const NAME: &'static str;

    /// Decodes from the SMP data area. Every bit pattern decodes.
    fn decode(data: &[u8; 64]) -> Self;

    /// Encodes into the SMP data area, writing all 64 bytes (reserved bits and the bytes
    /// after [`Self::LEN`] become zero).
    fn encode(&self, data: &mut [u8; 64]);

    /// Encodes to a new 64-byte array.
    fn to_data(&self) -> [u8; 64] {
        let mut d = [0u8; 64];
        self.encode(&mut d);
        d
    }

    /// Decodes from the first [`Self::LEN`] bytes of `s` (e.g. inside an SA record).
    fn decode_slice(s: &[u8]) -> Result<Self, MadError> {
        let src = s.get(..Self::LEN).ok_or(MadError::Truncated {
            what: Self::NAME,
            needed: Self::LEN,
            got: s.len(),
        })?;
        let mut d = [0u8; 64];
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

/// Extracts `width` bits whose most significant bit is `msb` (7 = top bit of the byte).
#[inline(always)]
pub(crate) fn bits(byte: u8, msb: u32, width: u32) -> u8 {
    let shift = msb + 1 - width;
    (byte >> shift) & (((1u16 << width) - 1) as u8)
}

/// Places the low `width` bits of `v` so that their most significant bit is `msb`.
#[inline(always)]
pub(crate) fn place(v: u8, msb: u32, width: u32) -> u8 {
    let shift = msb + 1 - width;
    (v & (((1u16 << width) - 1) as u8)) << shift
}
