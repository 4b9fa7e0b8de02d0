//! ServiceRecord (IBA 15.2.5.14, 0x0031), ClassPortInfo (IBA 13.4.8.1, 0x0001), InformInfo
//! (IBA 13.4.8.3, 0x0003) and InformInfoRecord (IBA 15.2.5.12, 0x00F3). Layouts: opensm
//! `ib_service_record_t`, `ib_class_port_info_t`, `ib_inform_info_t`,
//! `ib_inform_info_record_t`; ComponentMask bits `IB_SR_COMPMASK_*`, `IB_IIR_COMPMASK_*`.

use super::record::{CompField, Gid, SaRecord, cf};
use crate::header::AttributeId;
use crate::sa::SA_DATA_LEN;
use crate::wire::*;
use fabric::Lid;

/// ServiceRecord, 176 bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ServiceRecord {
    /// Bytes 0-7: ServiceID.
    pub id: u64,
    /// Bytes 8-23: ServiceGID (the port offering the service).
    pub gid: Gid,
    /// Bytes 24-25: ServiceP_Key.
    pub pkey: u16,
    /// Bytes 28-31: ServiceLease in seconds (0xFFFFFFFF: infinite).
    pub lease: u32,
    /// Bytes 32-47: ServiceKey.
    pub key: [u8; 16],
    /// Bytes 48-111: ServiceName (UTF-8, zero padded).
    pub name: [u8; 64],
    /// Bytes 112-127: ServiceData8.
    pub data8: [u8; 16],
    /// Bytes 128-143: ServiceData16.
    pub data16: [u16; 8],
    /// Bytes 144-159: ServiceData32.
    pub data32: [u32; 4],
    /// Bytes 160-175: ServiceData64.
    pub data64: [u64; 2],
}

impl Default for ServiceRecord {
    fn default() -> ServiceRecord {
        ServiceRecord {
            id: 0,
            gid: Gid::default(),
            pkey: 0,
            lease: 0,
            key: [0; 16],
            name: [0; 64],
            data8: [0; 16],
            data16: [0; 8],
            data32: [0; 4],
            data64: [0; 2],
        }
    }
}

impl ServiceRecord {
    /// ServiceLease meaning "never expires".
    pub const INFINITE_LEASE: u32 = 0xFFFF_FFFF;
    /// ComponentMask bit: ServiceID.
    pub const CM_ID: u64 = 1 << 0;
    /// ComponentMask bit: ServiceGID.
    pub const CM_GID: u64 = 1 << 1;
    /// ComponentMask bit: ServiceP_Key.
    pub const CM_PKEY: u64 = 1 << 2;
    /// ComponentMask bit: ServiceLease.
    pub const CM_LEASE: u64 = 1 << 4;
    /// ComponentMask bit: ServiceKey.
    pub const CM_KEY: u64 = 1 << 5;
    /// ComponentMask bit: ServiceName.
    pub const CM_NAME: u64 = 1 << 6;

    /// The name as text (up to the first NUL).
    pub fn name_text(&self) -> String {
        let end = self.name.iter().position(|&c| c == 0).unwrap_or(64);
        String::from_utf8_lossy(&self.name[..end]).into_owned()
    }

    /// Sets the name (truncated to 64 bytes).
    pub fn set_name(&mut self, s: &str) {
        self.name = [0; 64];
        let n = s.len().min(64);
        self.name[..n].copy_from_slice(&s.as_bytes()[..n]);
    }
}

const fn service_fields() -> [CompField; 36] {
    let mut t = [cf(0, "ServiceID", 0, 7, 64); 36];
    t[1] = cf(1, "ServiceGID", 8, 7, 128);
    t[2] = cf(2, "ServiceP_Key", 24, 7, 16);
    t[3] = cf(4, "ServiceLease", 28, 7, 32);
    t[4] = cf(5, "ServiceKey", 32, 7, 128);
    t[5] = cf(6, "ServiceName", 48, 7, 512);
    let mut i = 0;
    while i < 16 {
        t[6 + i] = cf(7 + i as u8, "ServiceData8", 112 + i as u16, 7, 8);
        i += 1;
    }
    i = 0;
    while i < 8 {
        t[22 + i] = cf(23 + i as u8, "ServiceData16", 128 + 2 * i as u16, 7, 16);
        i += 1;
    }
    i = 0;
    while i < 4 {
        t[30 + i] = cf(31 + i as u8, "ServiceData32", 144 + 4 * i as u16, 7, 32);
        i += 1;
    }
    t[34] = cf(35, "ServiceData64", 160, 7, 64);
    t[35] = cf(36, "ServiceData64", 168, 7, 64);
    t
}

const SERVICE_FIELDS: &[CompField] = &service_fields();

impl SaRecord for ServiceRecord {
    const ID: AttributeId = AttributeId::SA_SERVICE_RECORD;
    const LEN: usize = 176;
    const NAME: &'static str = "ServiceRecord";
    const FIELDS: &'static [CompField] = SERVICE_FIELDS;

    fn decode_data(b: &[u8; SA_DATA_LEN]) -> ServiceRecord {
        let mut r = ServiceRecord {
            id: get_u64(b, 0),
            gid: Gid(get_arr(b, 8)),
            pkey: get_u16(b, 24),
            lease: get_u32(b, 28),
            key: get_arr(b, 32),
            name: get_arr(b, 48),
            data8: get_arr(b, 112),
            ..ServiceRecord::default()
        };
        for (i, v) in r.data16.iter_mut().enumerate() {
            *v = get_u16(b, 128 + 2 * i);
        }
        for (i, v) in r.data32.iter_mut().enumerate() {
            *v = get_u32(b, 144 + 4 * i);
        }
        for (i, v) in r.data64.iter_mut().enumerate() {
            *v = get_u64(b, 160 + 8 * i);
        }
        r
    }

    fn encode_data(&self, b: &mut [u8; SA_DATA_LEN]) {
        b.fill(0);
        put_u64(b, 0, self.id);
        put_arr(b, 8, &self.gid.0);
        put_u16(b, 24, self.pkey);
        put_u32(b, 28, self.lease);
        put_arr(b, 32, &self.key);
        put_arr(b, 48, &self.name);
        put_arr(b, 112, &self.data8);
        for (i, v) in self.data16.iter().enumerate() {
            put_u16(b, 128 + 2 * i, *v);
        }
        for (i, v) in self.data32.iter().enumerate() {
            put_u32(b, 144 + 4 * i, *v);
        }
        for (i, v) in self.data64.iter().enumerate() {
            put_u64(b, 160 + 8 * i, *v);
        }
    }
}

/// ClassPortInfo, 72 bytes (the SA's answers: capabilities, response time, redirect/trap
/// addresses).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct ClassPortInfo {
    /// Byte 0: BaseVersion.
    pub base_version: u8,
    /// Byte 1: ClassVersion.
    pub class_version: u8,
    /// Bytes 2-3: CapabilityMask (SA: bit 0 traps, bit 1 Get/Set notice, bit 8 ...).
    pub capability_mask: u16,
    /// Bytes 4-7 bits 31..5: CapabilityMask2 (27 bits).
    pub capability_mask2: u32,
    /// Bytes 4-7 bits 4..0: RespTimeValue.
    pub resp_time_value: u8,
    /// Bytes 8-23: RedirectGID.
    pub redirect_gid: Gid,
    /// Bytes 24-27: RedirectTC (8), RedirectSL (4), RedirectFL (20).
    pub redirect_tc_sl_fl: u32,
    /// Bytes 28-29: RedirectLID.
    pub redirect_lid: Lid,
    /// Bytes 30-31: RedirectP_Key.
    pub redirect_pkey: u16,
    /// Bytes 32-35 bits 23..0: RedirectQP.
    pub redirect_qp: u32,
    /// Bytes 36-39: RedirectQ_Key.
    pub redirect_qkey: u32,
    /// Bytes 40-55: TrapGID.
    pub trap_gid: Gid,
    /// Bytes 56-59: TrapTC (8), TrapSL (4), TrapFL (20).
    pub trap_tc_sl_fl: u32,
    /// Bytes 60-61: TrapLID.
    pub trap_lid: Lid,
    /// Bytes 62-63: TrapP_Key.
    pub trap_pkey: u16,
    /// Bytes 64-67: TrapHL (8) and TrapQP (24).
    pub trap_hl_qp: u32,
    /// Bytes 68-71: TrapQ_Key.
    pub trap_qkey: u32,
}

impl SaRecord for ClassPortInfo {
    const ID: AttributeId = AttributeId::CLASS_PORT_INFO;
    const LEN: usize = 72;
    const NAME: &'static str = "ClassPortInfo";
    const FIELDS: &'static [CompField] = &[];

    fn decode_data(b: &[u8; SA_DATA_LEN]) -> ClassPortInfo {
        let c2 = get_u32(b, 4);
        ClassPortInfo {
            base_version: b[0],
            class_version: b[1],
            capability_mask: get_u16(b, 2),
            capability_mask2: c2 >> 5,
            resp_time_value: (c2 & 0x1F) as u8,
            redirect_gid: Gid(get_arr(b, 8)),
            redirect_tc_sl_fl: get_u32(b, 24),
            redirect_lid: Lid(get_u16(b, 28)),
            redirect_pkey: get_u16(b, 30),
            redirect_qp: get_u32(b, 32) & 0xFF_FFFF,
            redirect_qkey: get_u32(b, 36),
            trap_gid: Gid(get_arr(b, 40)),
            trap_tc_sl_fl: get_u32(b, 56),
            trap_lid: Lid(get_u16(b, 60)),
            trap_pkey: get_u16(b, 62),
            trap_hl_qp: get_u32(b, 64),
            trap_qkey: get_u32(b, 68),
        }
    }

    fn encode_data(&self, b: &mut [u8; SA_DATA_LEN]) {
        b.fill(0);
        b[0] = self.base_version;
        b[1] = self.class_version;
        put_u16(b, 2, self.capability_mask);
        put_u32(
            b,
            4,
            ((self.capability_mask2 & 0x07FF_FFFF) << 5) | u32::from(self.resp_time_value & 0x1F),
        );
        put_arr(b, 8, &self.redirect_gid.0);
        put_u32(b, 24, self.redirect_tc_sl_fl);
        put_u16(b, 28, self.redirect_lid.0);
        put_u16(b, 30, self.redirect_pkey);
        put_u32(b, 32, self.redirect_qp & 0xFF_FFFF);
        put_u32(b, 36, self.redirect_qkey);
        put_arr(b, 40, &self.trap_gid.0);
        put_u32(b, 56, self.trap_tc_sl_fl);
        put_u16(b, 60, self.trap_lid.0);
        put_u16(b, 62, self.trap_pkey);
        put_u32(b, 64, self.trap_hl_qp);
        put_u32(b, 68, self.trap_qkey);
    }
}

/// InformInfo, 36 bytes: a subscription to traps (Set with Subscribe 1) or its removal.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct InformInfo {
    /// Bytes 0-15: GID of the port whose traps are wanted (zero: use the LID range).
    pub gid: Gid,
    /// Bytes 16-17: LIDRangeBegin (0xFFFF: all).
    pub lid_range_begin: Lid,
    /// Bytes 18-19: LIDRangeEnd.
    pub lid_range_end: Lid,
    /// Byte 22: IsGeneric.
    pub is_generic: u8,
    /// Byte 23: Subscribe (1 subscribe, 0 unsubscribe).
    pub subscribe: u8,
    /// Bytes 24-25: Type (0xFFFF: all).
    pub trap_type: u16,
    /// Bytes 26-27: TrapNumber (generic; 0xFFFF: all) or DeviceID.
    pub trap_number: u16,
    /// Bytes 28-30: QPN (24 bits) to send Reports to.
    pub qpn: u32,
    /// Byte 31 bits 4..0: RespTimeValue.
    pub resp_time_value: u8,
    /// Bytes 33-35: ProducerType (generic; 0xFFFFFF: all) or VendorID.
    pub producer_type: u32,
}

impl InformInfo {
    /// Matches every value of a 16-bit field.
    pub const ALL16: u16 = 0xFFFF;
    /// Matches every producer.
    pub const ALL_PRODUCERS: u32 = 0xFF_FFFF;

    /// True when this subscription wants generic trap `trap` from a producer of type
    /// `producer`, notice type `notice_type`.
    pub fn wants(&self, trap: u16, notice_type: u8, producer: u32) -> bool {
        self.is_generic != 0
            && (self.trap_number == Self::ALL16 || self.trap_number == trap)
            && (self.trap_type == Self::ALL16 || self.trap_type == u16::from(notice_type))
            && (self.producer_type == Self::ALL_PRODUCERS || self.producer_type == producer)
    }
}

impl SaRecord for InformInfo {
    const ID: AttributeId = AttributeId::INFORM_INFO;
    // 36 bytes; never in a table, so the padded length is not used for AttributeOffset.
    const LEN: usize = 36;
    const NAME: &'static str = "InformInfo";
    const FIELDS: &'static [CompField] = &[];

    fn decode_data(b: &[u8; SA_DATA_LEN]) -> InformInfo {
        let q = get_u32(b, 28);
        InformInfo {
            gid: Gid(get_arr(b, 0)),
            lid_range_begin: Lid(get_u16(b, 16)),
            lid_range_end: Lid(get_u16(b, 18)),
            is_generic: b[22],
            subscribe: b[23],
            trap_type: get_u16(b, 24),
            trap_number: get_u16(b, 26),
            qpn: q >> 8,
            resp_time_value: (q & 0x1F) as u8,
            producer_type: get_u24(b, 33),
        }
    }

    fn encode_data(&self, b: &mut [u8; SA_DATA_LEN]) {
        b.fill(0);
        put_arr(b, 0, &self.gid.0);
        put_u16(b, 16, self.lid_range_begin.0);
        put_u16(b, 18, self.lid_range_end.0);
        b[22] = self.is_generic;
        b[23] = self.subscribe;
        put_u16(b, 24, self.trap_type);
        put_u16(b, 26, self.trap_number);
        put_u32(
            b,
            28,
            ((self.qpn & 0xFF_FFFF) << 8) | u32::from(self.resp_time_value & 0x1F),
        );
        put_u24(b, 33, self.producer_type);
    }
}

/// InformInfoRecord, 60 bytes padded to 64: who subscribed (SubscriberGID, Enum) and what.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct InformInfoRecord {
    /// Bytes 0-15: SubscriberGID.
    pub subscriber_gid: Gid,
    /// Bytes 16-17: Enum (distinguishes a subscriber's subscriptions).
    pub enumeration: u16,
    /// Bytes 24-59: InformInfo.
    pub inform_info: InformInfo,
}

const IIR_FIELDS: &[CompField] = &[
    cf(0, "SubscriberGID", 0, 7, 128),
    cf(1, "Enum", 16, 7, 16),
    cf(3, "GID", 24, 7, 128),
    cf(4, "LIDRangeBegin", 40, 7, 16),
    cf(5, "LIDRangeEnd", 42, 7, 16),
    cf(7, "IsGeneric", 46, 7, 8),
    cf(8, "Subscribe", 47, 7, 8),
    cf(9, "Type", 48, 7, 16),
    cf(10, "TrapNumber", 50, 7, 16),
    cf(11, "QPN", 52, 7, 24),
    cf(13, "RespTimeValue", 55, 4, 5),
    cf(15, "ProducerType", 57, 7, 24),
];

impl SaRecord for InformInfoRecord {
    const ID: AttributeId = AttributeId::SA_INFORM_INFO_RECORD;
    const LEN: usize = 64;
    const NAME: &'static str = "InformInfoRecord";
    const FIELDS: &'static [CompField] = IIR_FIELDS;

    fn decode_data(b: &[u8; SA_DATA_LEN]) -> InformInfoRecord {
        let mut inner = [0u8; SA_DATA_LEN];
        inner[..36].copy_from_slice(&b[24..60]);
        InformInfoRecord {
            subscriber_gid: Gid(get_arr(b, 0)),
            enumeration: get_u16(b, 16),
            inform_info: InformInfo::decode_data(&inner),
        }
    }

    fn encode_data(&self, b: &mut [u8; SA_DATA_LEN]) {
        b.fill(0);
        put_arr(b, 0, &self.subscriber_gid.0);
        put_u16(b, 16, self.enumeration);
        let inner = self.inform_info.to_data();
        b[24..60].copy_from_slice(&inner[..36]);
    }
}
