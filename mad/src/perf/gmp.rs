//! The PerfMgt MAD (IBA 16.1.1): common MAD header, 40 reserved bytes, 192-byte data area.
//!
//! | bytes | field |
//! |---|---|
//! | 0-23 | common MAD header (class 0x04, class version 1) |
//! | 24-63 | reserved |
//! | 64-255 | PerfMgt data (the attribute) |
//!
//! (opensm `ib_perfmgt_mad_t`: `header`, `resv[40]`, `data[IB_PM_DATA_SIZE]`.)

use super::PerfAttribute;
use crate::MadError;
use crate::header::{AttributeId, MadHeader, MadStatus, Method, MgmtClass, header_of};
use crate::wire::*;

/// Class version of the Performance Management class.
pub const PERF_CLASS_VERSION: u8 = 1;
/// Offset of the data area in the MAD.
pub const PERF_DATA_OFFSET: usize = 64;
/// Bytes of data in one PerfMgt MAD.
pub const PERF_DATA_LEN: usize = 192;

/// One PerfMgt MAD. Decoding then encoding returns the input with bytes 24-63 (reserved)
/// cleared; the data area is kept whole, so bytes past the attribute survive too.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct PerfMad {
    /// Bytes 0-23.
    pub header: MadHeader,
    /// Bytes 64-255.
    pub data: [u8; PERF_DATA_LEN],
}

impl Default for PerfMad {
    fn default() -> PerfMad {
        PerfMad {
            header: MadHeader {
                base_version: MadHeader::BASE_VERSION,
                mgmt_class: MgmtClass::PERF_MGMT,
                class_version: PERF_CLASS_VERSION,
                ..MadHeader::default()
            },
            data: [0; PERF_DATA_LEN],
        }
    }
}

impl PerfMad {
    /// Decodes a 256-byte MAD; fails ([`MadError::WrongClass`]) when the class is not 0x04.
    pub fn decode(b: &[u8; 256]) -> Result<PerfMad, MadError> {
        let header = header_of(b);
        if header.mgmt_class != MgmtClass::PERF_MGMT {
            return Err(MadError::WrongClass {
                class: header.mgmt_class.0,
                expected: "performance management (0x04)",
            });
        }
        Ok(PerfMad {
            header,
            data: get_arr(b, PERF_DATA_OFFSET),
        })
    }

    /// Decodes from a slice that must be exactly 256 bytes: shorter is
    /// [`MadError::Truncated`], longer [`MadError::BadLength`].
    pub fn decode_slice(s: &[u8]) -> Result<PerfMad, MadError> {
        if s.len() > 256 {
            return Err(MadError::BadLength {
                what: "PerfMgt MAD",
                expected: 256,
                got: s.len(),
            });
        }
        PerfMad::decode(prefix(s, "PerfMgt MAD")?)
    }

    /// Encodes into a 256-byte buffer (all of it is written; bytes 24-63 zero).
    pub fn encode_into(&self, b: &mut [u8; 256]) {
        let mut hb = [0u8; MadHeader::LEN];
        self.header.encode_array(&mut hb);
        b.fill(0);
        put_arr(b, 0, &hb);
        put_arr(b, PERF_DATA_OFFSET, &self.data);
    }

    /// Encodes to a new array.
    pub fn encode(&self) -> [u8; 256] {
        let mut b = [0u8; 256];
        self.encode_into(&mut b);
        b
    }

    /// A request of `method` for `attr_id` with an empty data area.
    pub fn request(method: Method, tid: u64, attr_id: AttributeId, attr_mod: u32) -> PerfMad {
        let mut m = PerfMad::default();
        m.header.method = method;
        m.header.tid = tid;
        m.header.attr_id = attr_id;
        m.header.attr_mod = attr_mod;
        m
    }

    /// A Get of attribute `T` whose data area holds `query` (a PortCounters Get carries its
    /// PortSelect in the data, the attribute modifier is 0).
    pub fn get<T: PerfAttribute>(tid: u64, attr_mod: u32, query: &T) -> PerfMad {
        let mut m = PerfMad::request(Method::GET, tid, T::ID, attr_mod);
        query.encode(&mut m.data);
        m
    }

    /// A Set of attribute `T` (a PortCounters Set clears the counters CounterSelect names).
    pub fn set<T: PerfAttribute>(tid: u64, attr_mod: u32, attr: &T) -> PerfMad {
        let mut m = PerfMad::request(Method::SET, tid, T::ID, attr_mod);
        attr.encode(&mut m.data);
        m
    }

    /// The skeleton of the response to this request: GetResp, same versions, TID,
    /// attribute and modifier, status 0, data area copied (an agent overwrites it).
    pub fn response(&self) -> PerfMad {
        let mut r = PerfMad::default();
        r.header.base_version = self.header.base_version;
        r.header.class_version = self.header.class_version;
        r.header.method = self.header.method.response();
        r.header.tid = self.header.tid;
        r.header.attr_id = self.header.attr_id;
        r.header.attr_mod = self.header.attr_mod;
        r.data = self.data;
        r
    }

    /// The status word.
    pub fn mad_status(&self) -> MadStatus {
        MadStatus(self.header.status)
    }

    /// Sets the status word.
    pub fn with_status(mut self, status: MadStatus) -> PerfMad {
        self.header.status = status.0;
        self
    }

    /// Decodes the data area as attribute `T`, checking that the MAD carries `T::ID`
    /// ([`MadError::AttributeMismatch`] otherwise).
    pub fn attr<T: PerfAttribute>(&self) -> Result<T, MadError> {
        if self.header.attr_id != T::ID {
            return Err(MadError::AttributeMismatch {
                expected: T::ID.0,
                found: self.header.attr_id.0,
            });
        }
        Ok(T::decode(&self.data))
    }

    /// Writes `attr` into the data area and sets the attribute id to `T::ID`.
    pub fn set_attr<T: PerfAttribute>(&mut self, attr: &T) {
        self.header.attr_id = T::ID;
        attr.encode(&mut self.data);
    }
}
