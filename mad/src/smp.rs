//! Subnet Management Packets in both forms (IBA 14.2.1): LID-routed (class 0x01) and
//! directed route (class 0x81), always 256 bytes.
//!
//! Layout (linux `struct ib_smp`, libibmad fields.c `IB_DRSMP_*_F`):
//!
//! | bytes | LID-routed | directed route |
//! |---|---|---|
//! | 0-23 | common MAD header | common header; status bit 15 = D, byte 6 hop pointer, byte 7 hop count |
//! | 24-31 | M_Key | M_Key |
//! | 32-33 | reserved | DrSLID |
//! | 34-35 | reserved | DrDLID |
//! | 36-63 | reserved | reserved |
//! | 64-127 | SMP data | SMP data |
//! | 128-191 | reserved | InitialPath |
//! | 192-255 | reserved | ReturnPath |
//!
//! Reserved areas decode to nothing and encode as zeros; every defined field round-trips.

use crate::MadError;
use crate::attr::SmpAttribute;
use crate::header::{AttributeId, MadHeader, Method, MgmtClass, header_of};
use crate::wire::*;
use fabric::Lid;

/// Length of every SMP.
pub const SMP_LEN: usize = 256;
/// Offset of the 64-byte SMP data area.
pub const SMP_DATA_OFFSET: usize = 64;
/// Length of the SMP data area.
pub const SMP_DATA_LEN: usize = 64;
/// Offset of the directed-route InitialPath.
pub const SMP_INITIAL_PATH_OFFSET: usize = 128;
/// Offset of the directed-route ReturnPath.
pub const SMP_RETURN_PATH_OFFSET: usize = 192;
/// Largest directed-route hop count (the path arrays hold 64 bytes, entry 0 unused).
pub const MAX_HOPS: u8 = 63;
/// Bit 15 of the status word of a directed-route SMP: the direction bit D.
pub const DR_DIRECTION_BIT: u16 = 0x8000;

/// One SMP, either form, with every defined field decoded.
///
/// For LID-routed SMPs `direction`, `hop_pointer`, `hop_count`, `dr_slid`, `dr_dlid` and the
/// paths are not on the wire: decoding sets them to zero / false and encoding ignores them,
/// and `status` carries all 16 bits. For directed-route SMPs `status` carries the low 15
/// bits and `direction` bit 15.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Smp {
    /// Byte 0: base version (1).
    pub base_version: u8,
    /// Byte 1: 0x01 (LID-routed) or 0x81 (directed route).
    pub class: MgmtClass,
    /// Byte 2: class version (1).
    pub class_version: u8,
    /// Byte 3: method with the R bit.
    pub method: Method,
    /// Bytes 4-5: status (15 bits for directed route, 16 for LID-routed).
    pub status: u16,
    /// Byte 4 bit 7 (status bit 15) of a directed-route SMP: D, false outbound, true returning.
    pub direction: bool,
    /// Byte 6 of a directed-route SMP: hop pointer.
    pub hop_pointer: u8,
    /// Byte 7 of a directed-route SMP: hop count (0..=63).
    pub hop_count: u8,
    /// Bytes 8-15: transaction id.
    pub tid: u64,
    /// Bytes 16-17: attribute id.
    pub attr_id: AttributeId,
    /// Bytes 20-23: attribute modifier.
    pub attr_mod: u32,
    /// Bytes 24-31: M_Key.
    pub m_key: u64,
    /// Bytes 32-33 of a directed-route SMP: DrSLID (0xFFFF when the SM end is directed).
    pub dr_slid: Lid,
    /// Bytes 34-35 of a directed-route SMP: DrDLID (0xFFFF when the target end is directed).
    pub dr_dlid: Lid,
    /// Bytes 64-127: the attribute data.
    pub data: [u8; 64],
    /// Bytes 128-191 of a directed-route SMP: InitialPath (entry 0 unused, entries
    /// 1..=hop_count are output ports).
    pub initial_path: [u8; 64],
    /// Bytes 192-255 of a directed-route SMP: ReturnPath (entry i = port the SMP arrived on
    /// at hop i).
    pub return_path: [u8; 64],
}

impl Default for Smp {
    fn default() -> Smp {
        Smp {
            base_version: 1,
            class: MgmtClass::SUBN_LID_ROUTED,
            class_version: 1,
            method: Method::GET,
            status: 0,
            direction: false,
            hop_pointer: 0,
            hop_count: 0,
            tid: 0,
            attr_id: AttributeId(0),
            attr_mod: 0,
            m_key: 0,
            dr_slid: Lid(0),
            dr_dlid: Lid(0),
            data: [0; 64],
            initial_path: [0; 64],
            return_path: [0; 64],
        }
    }
}

impl Smp {
    /// True for class 0x81.
    pub fn is_directed(&self) -> bool {
        self.class == MgmtClass::SUBN_DIRECTED_ROUTE
    }

    /// True when the method has the R bit.
    pub fn is_response(&self) -> bool {
        self.method.is_response()
    }

    /// Decodes a 256-byte SMP. Fails for a class other than 0x01/0x81 and for a
    /// directed-route hop count above 63. Never panics.
    pub fn decode(b: &[u8; SMP_LEN]) -> Result<Smp, MadError> {
        let h = header_of(b);
        let mut smp = Smp {
            base_version: h.base_version,
            class: h.mgmt_class,
            class_version: h.class_version,
            method: h.method,
            status: h.status,
            tid: h.tid,
            attr_id: h.attr_id,
            attr_mod: h.attr_mod,
            m_key: get_u64(b, 24),
            data: get_arr(b, SMP_DATA_OFFSET),
            ..Smp::default()
        };
        match h.mgmt_class {
            MgmtClass::SUBN_LID_ROUTED => {}
            MgmtClass::SUBN_DIRECTED_ROUTE => {
                let hop_count = b[7];
                if hop_count > MAX_HOPS {
                    return Err(MadError::HopCountTooLarge { hop_count });
                }
                smp.status = h.status & !DR_DIRECTION_BIT;
                smp.direction = h.status & DR_DIRECTION_BIT != 0;
                smp.hop_pointer = b[6];
                smp.hop_count = hop_count;
                smp.dr_slid = Lid(get_u16(b, 32));
                smp.dr_dlid = Lid(get_u16(b, 34));
                smp.initial_path = get_arr(b, SMP_INITIAL_PATH_OFFSET);
                smp.return_path = get_arr(b, SMP_RETURN_PATH_OFFSET);
            }
            MgmtClass(class) => {
                return Err(MadError::WrongClass {
                    class,
                    expected: "an SMP class (0x01 or 0x81)",
                });
            }
        }
        Ok(smp)
    }

    /// Decodes from a slice that must be exactly 256 bytes.
    pub fn decode_slice(s: &[u8]) -> Result<Smp, MadError> {
        if s.len() > SMP_LEN {
            return Err(MadError::BadLength {
                what: "SMP",
                expected: SMP_LEN,
                got: s.len(),
            });
        }
        Smp::decode(prefix(s, "SMP")?)
    }

    /// The common MAD header as it goes on the wire (status with the D bit, hop fields in
    /// the class-specific word for directed route).
    pub fn header(&self) -> MadHeader {
        let (status, class_specific) = if self.is_directed() {
            let d = if self.direction { DR_DIRECTION_BIT } else { 0 };
            (
                (self.status & !DR_DIRECTION_BIT) | d,
                u16::from_be_bytes([self.hop_pointer, self.hop_count]),
            )
        } else {
            (self.status, 0)
        };
        MadHeader {
            base_version: self.base_version,
            mgmt_class: self.class,
            class_version: self.class_version,
            method: self.method,
            status,
            class_specific,
            tid: self.tid,
            attr_id: self.attr_id,
            reserved: 0,
            attr_mod: self.attr_mod,
        }
    }

    /// Encodes into a 256-byte buffer (all of it is written).
    pub fn encode_into(&self, b: &mut [u8; SMP_LEN]) {
        let dr = self.is_directed();
        let h = self.header();
        let mut hb = [0u8; 24];
        h.encode_array(&mut hb);
        put_arr(b, 0, &hb);
        put_u64(b, 24, self.m_key);
        b[32..64].fill(0);
        put_arr(b, SMP_DATA_OFFSET, &self.data);
        if dr {
            put_u16(b, 32, self.dr_slid.0);
            put_u16(b, 34, self.dr_dlid.0);
            put_arr(b, SMP_INITIAL_PATH_OFFSET, &self.initial_path);
            put_arr(b, SMP_RETURN_PATH_OFFSET, &self.return_path);
        } else {
            b[128..256].fill(0);
        }
    }

    /// Encodes to a new 256-byte array.
    pub fn encode(&self) -> [u8; SMP_LEN] {
        let mut b = [0u8; SMP_LEN];
        self.encode_into(&mut b);
        b
    }

    /// A LID-routed request (class 0x01) with zeroed data.
    pub fn lid_routed(method: Method, tid: u64, attr_id: AttributeId, attr_mod: u32) -> Smp {
        Smp {
            method,
            tid,
            attr_id,
            attr_mod,
            ..Smp::default()
        }
    }

    /// A LID-routed Get.
    pub fn lid_get(tid: u64, attr_id: AttributeId, attr_mod: u32) -> Smp {
        Smp::lid_routed(Method::GET, tid, attr_id, attr_mod)
    }

    /// A LID-routed Set carrying `attr`.
    pub fn lid_set<T: SmpAttribute>(tid: u64, attr_mod: u32, attr: &T) -> Smp {
        let mut smp = Smp::lid_routed(Method::SET, tid, T::ID, attr_mod);
        attr.encode(&mut smp.data);
        smp
    }

    /// A directed-route request (class 0x81, D=0, hop pointer 0) along `path`, where
    /// `path\[i\]` is the output port at hop i+1 (InitialPath\[i+1\]); `path.len()` becomes
    /// the hop count. DrSLID and DrDLID are permissive (a purely directed route).
    pub fn directed(
        method: Method,
        tid: u64,
        attr_id: AttributeId,
        attr_mod: u32,
        path: &[u8],
    ) -> Result<Smp, MadError> {
        if path.len() > MAX_HOPS as usize {
            return Err(MadError::PathTooLong { len: path.len() });
        }
        let mut initial_path = [0u8; 64];
        initial_path[1..=path.len()].copy_from_slice(path);
        Ok(Smp {
            class: MgmtClass::SUBN_DIRECTED_ROUTE,
            method,
            tid,
            attr_id,
            attr_mod,
            hop_count: path.len() as u8,
            dr_slid: Lid::PERMISSIVE,
            dr_dlid: Lid::PERMISSIVE,
            initial_path,
            ..Smp::default()
        })
    }

    /// A directed-route Get along `path` (see [`Smp::directed`]).
    pub fn dr_get(
        tid: u64,
        attr_id: AttributeId,
        attr_mod: u32,
        path: &[u8],
    ) -> Result<Smp, MadError> {
        Smp::directed(Method::GET, tid, attr_id, attr_mod, path)
    }

    /// A directed-route Set carrying `attr` along `path`.
    pub fn dr_set<T: SmpAttribute>(
        tid: u64,
        attr_mod: u32,
        path: &[u8],
        attr: &T,
    ) -> Result<Smp, MadError> {
        let mut smp = Smp::directed(Method::SET, tid, T::ID, attr_mod, path)?;
        attr.encode(&mut smp.data);
        Ok(smp)
    }

    /// Turns a directed-route SMP into the mixed form: LID-routed from `dr_slid` to the
    /// first node of the directed part, directed for the path, then LID-routed to `dr_dlid`.
    /// Pass [`Lid::PERMISSIVE`] for an end that is directed.
    pub fn with_dr_lids(mut self, dr_slid: Lid, dr_dlid: Lid) -> Smp {
        self.dr_slid = dr_slid;
        self.dr_dlid = dr_dlid;
        self
    }

    /// A LID-routed Trap(Notice) from an SMA to the SM (IBA 14.2.5.1). Send it to the
    /// master SM's LID (PortInfo.MasterSMLID).
    pub fn trap(tid: u64, notice: &crate::attr::Notice) -> Smp {
        let mut smp = Smp::lid_routed(Method::TRAP, tid, AttributeId::NOTICE, 0);
        notice.encode(&mut smp.data);
        smp
    }

    /// Sets the status (for DR SMPs only the low 15 bits are kept; the D bit is
    /// [`Smp::direction`]).
    pub fn with_status(mut self, status: crate::header::MadStatus) -> Smp {
        self.status = status.0;
        self
    }

    /// The status as a [`crate::header::MadStatus`].
    pub fn mad_status(&self) -> crate::header::MadStatus {
        crate::header::MadStatus(self.status)
    }

    /// Sets the M_Key.
    pub fn with_m_key(mut self, m_key: u64) -> Smp {
        self.m_key = m_key;
        self
    }

    /// The directed path (InitialPath\[1..=hop_count\]).
    pub fn path(&self) -> &[u8] {
        let n = usize::from(self.hop_count.min(MAX_HOPS));
        &self.initial_path[1..=n]
    }

    /// The response an SMA sends for this request: method GetResp for Get/Set (R bit for
    /// the others), status OK, same TID, attribute and modifier, data unchanged (the SMA
    /// overwrites it). For directed route D is set; hop count, hop pointer, DrSLID, DrDLID
    /// and both paths are kept, so the response can walk the return path (IBA 14.2.2.3).
    pub fn make_response(&self) -> Smp {
        let mut r = self.clone();
        r.method = self.method.response();
        r.status = 0;
        if r.is_directed() {
            r.direction = true;
        }
        r
    }

    /// Decodes the data area as attribute `T`, checking that the SMP carries `T::ID`.
    pub fn attr<T: SmpAttribute>(&self) -> Result<T, MadError> {
        if self.attr_id != T::ID {
            return Err(MadError::AttributeMismatch {
                expected: T::ID.0,
                found: self.attr_id.0,
            });
        }
        Ok(T::decode(&self.data))
    }

    /// Writes `attr` into the data area and sets the attribute id to `T::ID`.
    pub fn set_attr<T: SmpAttribute>(&mut self, attr: &T) {
        self.attr_id = T::ID;
        attr.encode(&mut self.data);
    }
}
