//! The SA MAD (IBA 15.2.1.1): common MAD header, RMPP header (IBA 13.6.2.1), SA header,
//! then 200 bytes of data at offset 56. Records themselves live elsewhere.
//!
//! | bytes | field | fields.c |
//! |---|---|---|
//! | 0-23 | common MAD header | `IB_MAD_*_F` |
//! | 24 | RMPPVersion | `IB_SA_RMPP_VERS_F` |
//! | 25 | RMPPType | `IB_SA_RMPP_TYPE_F` |
//! | 26 | RRespTime (bits 7..3), RMPPFlags (bits 2..0) | `IB_SA_RMPP_RESP_F`, `IB_SA_RMPP_FLAGS_F` |
//! | 27 | RMPPStatus | `IB_SA_RMPP_STATUS_F` |
//! | 28-31 | Data1 (SegmentNumber) | `IB_SA_RMPP_D1_F` |
//! | 32-35 | Data2 (PayloadLength / NewWindowLast) | `IB_SA_RMPP_D2_F` |
//! | 36-43 | SM_Key | `IB_SA_MKEY_F` |
//! | 44-45 | AttributeOffset (8-byte units) | `IB_SA_ATTROFFS_F` |
//! | 46-47 | reserved | |
//! | 48-55 | ComponentMask | `IB_SA_COMPMASK_F` |
//! | 56-255 | SA data | `IB_SA_DATA_F` |
//!
//! The records themselves (IBA 15.2.5) are in the submodules, each a [`SaRecord`] with its
//! ComponentMask table ([`CompField`]).

mod fabric_records;
mod mcast;
mod path;
mod record;
mod service;
mod table_records;

pub use fabric_records::{
    LftRecord, LinkRecord, NodeRecord, PKeyTableRecord, PortInfoRecord, SmInfoRecord,
    SwitchInfoRecord,
};
pub use mcast::{McMemberRecord, join_state};
pub use path::{MultiPathRecord, PathRecord, selector};
pub use record::{CompField, Gid, SaRecord, bits_equal, bits_value, comp_match, record_matches};
pub use service::{ClassPortInfo, InformInfo, InformInfoRecord, ServiceRecord};
pub use table_records::{GuidInfoRecord, MftRecord, SlToVlRecord, VlArbRecord};

use crate::MadError;
use crate::header::{MadHeader, MgmtClass, header_of};
use crate::wire::*;

/// The 12-byte RMPP header at bytes 24-35 of every RMPP-capable MAD.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct RmppHeader {
    /// Byte 24: RMPPVersion (1; 0 when RMPP is not used).
    pub version: u8,
    /// Byte 25: RMPPType (see `TYPE_*`).
    pub rmpp_type: u8,
    /// Byte 26 bits 7..3: RRespTime (5 bits).
    pub resp_time: u8,
    /// Byte 26 bits 2..0: RMPPFlags (see `FLAG_*`).
    pub flags: u8,
    /// Byte 27: RMPPStatus.
    pub status: u8,
    /// Bytes 28-31: Data1 (SegmentNumber for DATA and ACK).
    pub data1: u32,
    /// Bytes 32-35: Data2 (PayloadLength for DATA, NewWindowLast for ACK).
    pub data2: u32,
}

impl RmppHeader {
    /// Length on the wire.
    pub const LEN: usize = 12;
    /// The RMPP version this crate speaks.
    pub const VERSION: u8 = 1;
    /// RMPPType DATA.
    pub const TYPE_DATA: u8 = 1;
    /// RMPPType ACK.
    pub const TYPE_ACK: u8 = 2;
    /// RMPPType STOP.
    pub const TYPE_STOP: u8 = 3;
    /// RMPPType ABORT.
    pub const TYPE_ABORT: u8 = 4;
    /// Flag bit 0: Active (RMPP in use).
    pub const FLAG_ACTIVE: u8 = 0x1;
    /// Flag bit 1: First segment.
    pub const FLAG_FIRST: u8 = 0x2;
    /// Flag bit 2: Last segment.
    pub const FLAG_LAST: u8 = 0x4;
    /// RRespTime value meaning "no time value given".
    pub const NO_RESP_TIME: u8 = 0x1F;

    /// True when the Active flag is set.
    pub fn is_active(&self) -> bool {
        self.flags & Self::FLAG_ACTIVE != 0
    }

    /// SegmentNumber (Data1).
    pub fn segment_number(&self) -> u32 {
        self.data1
    }

    /// PayloadLength (Data2 of a DATA segment).
    pub fn payload_length(&self) -> u32 {
        self.data2
    }

    /// Decodes 12 bytes.
    pub fn decode_array(b: &[u8; 12]) -> RmppHeader {
        RmppHeader {
            version: b[0],
            rmpp_type: b[1],
            resp_time: b[2] >> 3,
            flags: b[2] & 0x7,
            status: b[3],
            data1: get_u32(b, 4),
            data2: get_u32(b, 8),
        }
    }

    /// Encodes 12 bytes.
    pub fn encode_array(&self, b: &mut [u8; 12]) {
        b[0] = self.version;
        b[1] = self.rmpp_type;
        b[2] = ((self.resp_time & 0x1F) << 3) | (self.flags & 0x7);
        b[3] = self.status;
        put_u32(b, 4, self.data1);
        put_u32(b, 8, self.data2);
    }

    /// Checks the protocol invariants of an active header: version 1 and a defined type.
    pub fn check(&self) -> Result<(), MadError> {
        if !self.is_active() {
            return Ok(());
        }
        if self.version != Self::VERSION {
            return Err(MadError::BadRmpp(
                "active RMPP header with version other than 1",
            ));
        }
        if !(Self::TYPE_DATA..=Self::TYPE_ABORT).contains(&self.rmpp_type) {
            return Err(MadError::BadRmpp("RMPPType not DATA, ACK, STOP or ABORT"));
        }
        Ok(())
    }
}

/// Header of an SA MAD (bytes 0-55).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct SaHeader {
    /// Bytes 0-23.
    pub mad: MadHeader,
    /// Bytes 24-35.
    pub rmpp: RmppHeader,
    /// Bytes 36-43: SM_Key.
    pub sm_key: u64,
    /// Bytes 44-45: AttributeOffset, in 8-byte units (record size of a GetTable answer).
    pub attr_offset: u16,
    /// Bytes 48-55: ComponentMask.
    pub comp_mask: u64,
}

/// Length of the SA header.
pub const SA_HEADER_LEN: usize = 56;
/// Bytes of SA data in one MAD.
pub const SA_DATA_LEN: usize = 200;

/// One SA MAD: header and the 200-byte data area.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct SaMad {
    /// Bytes 0-55.
    pub header: SaHeader,
    /// Bytes 56-255.
    pub data: [u8; SA_DATA_LEN],
}

impl Default for SaMad {
    fn default() -> SaMad {
        SaMad {
            header: SaHeader {
                mad: MadHeader {
                    base_version: 1,
                    mgmt_class: MgmtClass::SUBN_ADM,
                    class_version: 2,
                    ..MadHeader::default()
                },
                ..SaHeader::default()
            },
            data: [0; SA_DATA_LEN],
        }
    }
}

impl SaMad {
    /// Decodes a 256-byte SA MAD; fails when the class is not 0x03.
    pub fn decode(b: &[u8; 256]) -> Result<SaMad, MadError> {
        let mad = header_of(b);
        if mad.mgmt_class != MgmtClass::SUBN_ADM {
            return Err(MadError::WrongClass {
                class: mad.mgmt_class.0,
                expected: "subnet administration (0x03)",
            });
        }
        Ok(SaMad {
            header: SaHeader {
                mad,
                rmpp: RmppHeader::decode_array(&get_arr(b, 24)),
                sm_key: get_u64(b, 36),
                attr_offset: get_u16(b, 44),
                comp_mask: get_u64(b, 48),
            },
            data: get_arr(b, SA_HEADER_LEN),
        })
    }

    /// Decodes from a slice that must be exactly 256 bytes.
    pub fn decode_slice(s: &[u8]) -> Result<SaMad, MadError> {
        if s.len() > 256 {
            return Err(MadError::BadLength {
                what: "SA MAD",
                expected: 256,
                got: s.len(),
            });
        }
        SaMad::decode(prefix(s, "SA MAD")?)
    }

    /// Encodes into a 256-byte buffer (all of it is written; bytes 46-47 zero).
    pub fn encode_into(&self, b: &mut [u8; 256]) {
        let mut hb = [0u8; 24];
        self.header.mad.encode_array(&mut hb);
        put_arr(b, 0, &hb);
        let mut rb = [0u8; 12];
        self.header.rmpp.encode_array(&mut rb);
        put_arr(b, 24, &rb);
        put_u64(b, 36, self.header.sm_key);
        put_u16(b, 44, self.header.attr_offset);
        put_u16(b, 46, 0);
        put_u64(b, 48, self.header.comp_mask);
        put_arr(b, SA_HEADER_LEN, &self.data);
    }

    /// Encodes to a new array.
    pub fn encode(&self) -> [u8; 256] {
        let mut b = [0u8; 256];
        self.encode_into(&mut b);
        b
    }
}

/// Iterates over the records of an SA response payload (the data area of one MAD, or the
/// reassembled data of an RMPP transfer): records sit every `attr_offset * 8` bytes
/// (IBA 15.2.5.1 AttributeOffset) and each is at least `record_len` bytes. A trailing
/// partial stride (RMPP pads the last segment) is ignored.
pub fn sa_records(
    payload: &[u8],
    attr_offset: u16,
    record_len: usize,
) -> Result<SaRecords<'_>, MadError> {
    let stride = usize::from(attr_offset) * 8;
    if stride == 0 {
        return Ok(SaRecords {
            rest: &[],
            stride: 1,
            record_len,
        });
    }
    if stride < record_len {
        return Err(MadError::BadAttributeLength {
            what: "SA record (AttributeOffset * 8)",
            len: record_len,
            max: stride,
        });
    }
    Ok(SaRecords {
        rest: payload,
        stride,
        record_len,
    })
}

/// Iterator returned by [`sa_records`]: each item is one record's `record_len` bytes.
#[derive(Clone, Debug)]
pub struct SaRecords<'a> {
    rest: &'a [u8],
    stride: usize,
    record_len: usize,
}

impl<'a> Iterator for SaRecords<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.rest.is_empty() {
            return None;
        }
        let rec = self.rest.get(..self.record_len)?;
        self.rest = self.rest.get(self.stride..).unwrap_or(&[]);
        Some(rec)
    }
}

/// SA class-specific status codes (IBA 15.2.1.1 Table 186), in bits 15..8 of the MAD status.
pub mod sa_status {
    /// ERR_NO_RESOURCES: the SA has no resources to complete the request.
    pub const NO_RESOURCES: u16 = 0x0100;
    /// ERR_REQ_INVALID: the request is invalid (e.g. a limited member creating a group).
    pub const REQ_INVALID: u16 = 0x0200;
    /// ERR_NO_RECORDS: no record matched a Get.
    pub const NO_RECORDS: u16 = 0x0300;
    /// ERR_TOO_MANY_RECORDS: more than one record matched a Get.
    pub const TOO_MANY_RECORDS: u16 = 0x0400;
    /// ERR_REQ_INVALID_GID: a GID in the request is invalid.
    pub const REQ_INVALID_GID: u16 = 0x0500;
    /// ERR_REQ_INSUFFICIENT_COMPONENTS: the ComponentMask lacks components the request needs.
    pub const REQ_INSUFFICIENT_COMPONENTS: u16 = 0x0600;
    /// ERR_REQ_DENIED: the request is denied (e.g. not trusted).
    pub const REQ_DENIED: u16 = 0x0700;
}

impl SaMad {
    /// A request of `method` for record `attr_id` with `mask` and `data`, class version 2.
    pub fn request(
        method: crate::header::Method,
        attr_id: crate::header::AttributeId,
        tid: u64,
        mask: u64,
        data: [u8; SA_DATA_LEN],
    ) -> SaMad {
        let mut m = SaMad::default();
        m.header.mad.method = method;
        m.header.mad.attr_id = attr_id;
        m.header.mad.tid = tid;
        m.header.comp_mask = mask;
        m.data = data;
        m
    }

    /// The skeleton of the response to this request: same TID, attribute, modifier and
    /// ComponentMask, the response method, status 0, no data, no RMPP.
    pub fn response(&self) -> SaMad {
        let mut r = SaMad::default();
        r.header.mad.base_version = self.header.mad.base_version;
        r.header.mad.class_version = self.header.mad.class_version;
        r.header.mad.method = self.header.mad.method.response();
        r.header.mad.tid = self.header.mad.tid;
        r.header.mad.attr_id = self.header.mad.attr_id;
        r.header.mad.attr_mod = self.header.mad.attr_mod;
        r.header.comp_mask = self.header.comp_mask;
        r
    }
}
