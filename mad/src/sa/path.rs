//! PathRecord (IBA 15.2.5.16, attribute 0x0035) and MultiPathRecord (IBA 15.2.5.20,
//! attribute 0x003A). Layouts: opensm `ib_path_rec_t`, `ib_multipath_rec_t`; ComponentMask
//! bits: `IB_PR_COMPMASK_*`, `IB_MPR_COMPMASK_*`.

use super::record::{CompField, Gid, SaRecord, cf};
use crate::header::AttributeId;
use crate::sa::SA_DATA_LEN;
use crate::wire::*;
use fabric::Lid;

/// Selector values of MTU, Rate and PacketLifeTime (IBA 15.2.5.16): how the value is meant.
pub mod selector {
    /// Greater than the value.
    pub const GREATER: u8 = 0;
    /// Less than the value.
    pub const LESS: u8 = 1;
    /// Exactly the value.
    pub const EXACTLY: u8 = 2;
    /// The largest available.
    pub const LARGEST: u8 = 3;
}

fn get_gid(b: &[u8; SA_DATA_LEN], o: usize) -> Gid {
    Gid(get_arr(b, o))
}

/// PathRecord, 64 bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct PathRecord {
    /// Bytes 0-7: ServiceID.
    pub service_id: u64,
    /// Bytes 8-23: DGID.
    pub dgid: Gid,
    /// Bytes 24-39: SGID.
    pub sgid: Gid,
    /// Bytes 40-41: DLID.
    pub dlid: Lid,
    /// Bytes 42-43: SLID.
    pub slid: Lid,
    /// Byte 44 bit 7: RawTraffic.
    pub raw_traffic: bool,
    /// Bytes 44-46, 20 bits: FlowLabel.
    pub flow_label: u32,
    /// Byte 47: HopLimit.
    pub hop_limit: u8,
    /// Byte 48: TClass.
    pub tclass: u8,
    /// Byte 49 bit 7: Reversible.
    pub reversible: bool,
    /// Byte 49 bits 6..0: NumbPath (requests: how many paths at most).
    pub numb_path: u8,
    /// Bytes 50-51: P_Key.
    pub pkey: u16,
    /// Bytes 52-53 bits 15..4: QoSClass.
    pub qos_class: u16,
    /// Byte 53 bits 3..0: SL.
    pub sl: u8,
    /// Byte 54 bits 7..6: MTUSelector.
    pub mtu_selector: u8,
    /// Byte 54 bits 5..0: MTU (1 256 .. 5 4096).
    pub mtu: u8,
    /// Byte 55 bits 7..6: RateSelector.
    pub rate_selector: u8,
    /// Byte 55 bits 5..0: Rate (2 = 2.5 Gb/s, 3 = 10 Gb/s, ...).
    pub rate: u8,
    /// Byte 56 bits 7..6: PacketLifeTimeSelector.
    pub pkt_life_selector: u8,
    /// Byte 56 bits 5..0: PacketLifeTime.
    pub pkt_life: u8,
    /// Byte 57: Preference.
    pub preference: u8,
}

impl PathRecord {
    /// ComponentMask bit: ServiceID (both halves).
    pub const CM_SERVICE_ID: u64 = 0b11;
    /// ComponentMask bit: DGID.
    pub const CM_DGID: u64 = 1 << 2;
    /// ComponentMask bit: SGID.
    pub const CM_SGID: u64 = 1 << 3;
    /// ComponentMask bit: DLID.
    pub const CM_DLID: u64 = 1 << 4;
    /// ComponentMask bit: SLID.
    pub const CM_SLID: u64 = 1 << 5;
    /// ComponentMask bit: HopLimit.
    pub const CM_HOP_LIMIT: u64 = 1 << 9;
    /// ComponentMask bit: Reversible.
    pub const CM_REVERSIBLE: u64 = 1 << 11;
    /// ComponentMask bit: NumbPath.
    pub const CM_NUMB_PATH: u64 = 1 << 12;
    /// ComponentMask bit: P_Key.
    pub const CM_PKEY: u64 = 1 << 13;
    /// ComponentMask bit: SL.
    pub const CM_SL: u64 = 1 << 15;
    /// Component mask bit of QoSClass.
    pub const CM_QOS_CLASS: u64 = 1 << 14;
    /// ComponentMask bit: MTUSelector.
    pub const CM_MTU_SELECTOR: u64 = 1 << 16;
    /// ComponentMask bit: MTU.
    pub const CM_MTU: u64 = 1 << 17;
    /// ComponentMask bit: RateSelector.
    pub const CM_RATE_SELECTOR: u64 = 1 << 18;
    /// ComponentMask bit: Rate.
    pub const CM_RATE: u64 = 1 << 19;
}

const PATH_FIELDS: &[CompField] = &[
    cf(0, "ServiceID8MSB", 0, 7, 8),
    cf(1, "ServiceID56LSB", 1, 7, 56),
    cf(2, "DGID", 8, 7, 128),
    cf(3, "SGID", 24, 7, 128),
    cf(4, "DLID", 40, 7, 16),
    cf(5, "SLID", 42, 7, 16),
    cf(6, "RawTraffic", 44, 7, 1),
    cf(8, "FlowLabel", 44, 3, 20),
    cf(9, "HopLimit", 47, 7, 8),
    cf(10, "TClass", 48, 7, 8),
    cf(11, "Reversible", 49, 7, 1),
    cf(12, "NumbPath", 49, 6, 7),
    cf(13, "P_Key", 50, 7, 16),
    cf(14, "QoSClass", 52, 7, 12),
    cf(15, "SL", 53, 3, 4),
    cf(16, "MTUSelector", 54, 7, 2),
    cf(17, "MTU", 54, 5, 6),
    cf(18, "RateSelector", 55, 7, 2),
    cf(19, "Rate", 55, 5, 6),
    cf(20, "PacketLifeTimeSelector", 56, 7, 2),
    cf(21, "PacketLifeTime", 56, 5, 6),
    cf(22, "Preference", 57, 7, 8),
];

impl SaRecord for PathRecord {
    const ID: AttributeId = AttributeId::SA_PATH_RECORD;
    const LEN: usize = 64;
    const NAME: &'static str = "PathRecord";
    const FIELDS: &'static [CompField] = PATH_FIELDS;

    fn decode_data(b: &[u8; SA_DATA_LEN]) -> PathRecord {
        let hfr = get_u32(b, 44);
        let qs = get_u16(b, 52);
        PathRecord {
            service_id: get_u64(b, 0),
            dgid: get_gid(b, 8),
            sgid: get_gid(b, 24),
            dlid: Lid(get_u16(b, 40)),
            slid: Lid(get_u16(b, 42)),
            raw_traffic: hfr >> 31 != 0,
            flow_label: (hfr >> 8) & 0xF_FFFF,
            hop_limit: (hfr & 0xFF) as u8,
            tclass: b[48],
            reversible: b[49] & 0x80 != 0,
            numb_path: b[49] & 0x7F,
            pkey: get_u16(b, 50),
            qos_class: qs >> 4,
            sl: (qs & 0xF) as u8,
            mtu_selector: b[54] >> 6,
            mtu: b[54] & 0x3F,
            rate_selector: b[55] >> 6,
            rate: b[55] & 0x3F,
            pkt_life_selector: b[56] >> 6,
            pkt_life: b[56] & 0x3F,
            preference: b[57],
        }
    }

    fn encode_data(&self, b: &mut [u8; SA_DATA_LEN]) {
        b.fill(0);
        put_u64(b, 0, self.service_id);
        put_arr(b, 8, &self.dgid.0);
        put_arr(b, 24, &self.sgid.0);
        put_u16(b, 40, self.dlid.0);
        put_u16(b, 42, self.slid.0);
        put_u32(
            b,
            44,
            (u32::from(self.raw_traffic) << 31)
                | ((self.flow_label & 0xF_FFFF) << 8)
                | u32::from(self.hop_limit),
        );
        b[48] = self.tclass;
        b[49] = (u8::from(self.reversible) << 7) | (self.numb_path & 0x7F);
        put_u16(b, 50, self.pkey);
        put_u16(
            b,
            52,
            ((self.qos_class & 0xFFF) << 4) | u16::from(self.sl & 0xF),
        );
        b[54] = ((self.mtu_selector & 3) << 6) | (self.mtu & 0x3F);
        b[55] = ((self.rate_selector & 3) << 6) | (self.rate & 0x3F);
        b[56] = ((self.pkt_life_selector & 3) << 6) | (self.pkt_life & 0x3F);
        b[57] = self.preference;
    }
}

/// MultiPathRecord, 200 bytes: path parameters, then SGIDCount source GIDs followed by
/// DGIDCount destination GIDs (at most 11 in all).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct MultiPathRecord {
    /// Byte 0 bit 7: RawTraffic.
    pub raw_traffic: bool,
    /// Bytes 0-2, 20 bits: FlowLabel.
    pub flow_label: u32,
    /// Byte 3: HopLimit.
    pub hop_limit: u8,
    /// Byte 4: TClass.
    pub tclass: u8,
    /// Byte 5 bit 7: Reversible.
    pub reversible: bool,
    /// Byte 5 bits 6..0: NumbPath.
    pub numb_path: u8,
    /// Bytes 6-7: P_Key.
    pub pkey: u16,
    /// Bytes 8-9 bits 15..4: QoSClass.
    pub qos_class: u16,
    /// Byte 9 bits 3..0: SL.
    pub sl: u8,
    /// Byte 10: MTUSelector (7..6) and MTU (5..0).
    pub mtu_selector: u8,
    /// MTU.
    pub mtu: u8,
    /// Byte 11: RateSelector (7..6) and Rate (5..0).
    pub rate_selector: u8,
    /// Rate.
    pub rate: u8,
    /// Byte 12: PacketLifeTimeSelector (7..6) and PacketLifeTime (5..0).
    pub pkt_life_selector: u8,
    /// PacketLifeTime.
    pub pkt_life: u8,
    /// Byte 13 and bytes 17-23: ServiceID (8 MSB, 56 LSB).
    pub service_id: u64,
    /// Byte 14 bits 7..6: IndependenceSelector.
    pub independence: u8,
    /// Byte 15: SGIDCount.
    pub sgid_count: u8,
    /// Byte 16: DGIDCount.
    pub dgid_count: u8,
    /// Bytes 24-199: the GIDs.
    pub gids: [Gid; MultiPathRecord::MAX_GIDS],
}

impl MultiPathRecord {
    /// GIDs the record can carry.
    pub const MAX_GIDS: usize = 11;

    /// The source GIDs named by SGIDCount (clamped to the record).
    pub fn sgids(&self) -> &[Gid] {
        let s = usize::from(self.sgid_count).min(Self::MAX_GIDS);
        &self.gids[..s]
    }

    /// The destination GIDs named by DGIDCount (clamped to the record).
    pub fn dgids(&self) -> &[Gid] {
        let s = usize::from(self.sgid_count).min(Self::MAX_GIDS);
        let d = (s + usize::from(self.dgid_count)).min(Self::MAX_GIDS);
        &self.gids[s..d]
    }
}

const MULTIPATH_FIELDS: &[CompField] = &[
    cf(0, "RawTraffic", 0, 7, 1),
    cf(2, "FlowLabel", 0, 3, 20),
    cf(3, "HopLimit", 3, 7, 8),
    cf(4, "TClass", 4, 7, 8),
    cf(5, "Reversible", 5, 7, 1),
    cf(6, "NumbPath", 5, 6, 7),
    cf(7, "P_Key", 6, 7, 16),
    cf(8, "QoSClass", 8, 7, 12),
    cf(9, "SL", 9, 3, 4),
    cf(10, "MTUSelector", 10, 7, 2),
    cf(11, "MTU", 10, 5, 6),
    cf(12, "RateSelector", 11, 7, 2),
    cf(13, "Rate", 11, 5, 6),
    cf(14, "PacketLifeTimeSelector", 12, 7, 2),
    cf(15, "PacketLifeTime", 12, 5, 6),
    cf(16, "ServiceID8MSB", 13, 7, 8),
    cf(17, "IndependenceSelector", 14, 7, 2),
    cf(19, "SGIDCount", 15, 7, 8),
    cf(20, "DGIDCount", 16, 7, 8),
    cf(21, "ServiceID56LSB", 17, 7, 56),
];

impl SaRecord for MultiPathRecord {
    const ID: AttributeId = AttributeId::SA_MULTI_PATH_RECORD;
    const LEN: usize = 200;
    const NAME: &'static str = "MultiPathRecord";
    const FIELDS: &'static [CompField] = MULTIPATH_FIELDS;

    fn decode_data(b: &[u8; SA_DATA_LEN]) -> MultiPathRecord {
        let hfr = get_u32(b, 0);
        let qs = get_u16(b, 8);
        let mut gids = [Gid::default(); Self::MAX_GIDS];
        for (i, g) in gids.iter_mut().enumerate() {
            *g = get_gid(b, 24 + 16 * i);
        }
        let mut sid = [0u8; 8];
        sid[0] = b[13];
        sid[1..].copy_from_slice(&b[17..24]);
        MultiPathRecord {
            raw_traffic: hfr >> 31 != 0,
            flow_label: (hfr >> 8) & 0xF_FFFF,
            hop_limit: (hfr & 0xFF) as u8,
            tclass: b[4],
            reversible: b[5] & 0x80 != 0,
            numb_path: b[5] & 0x7F,
            pkey: get_u16(b, 6),
            qos_class: qs >> 4,
            sl: (qs & 0xF) as u8,
            mtu_selector: b[10] >> 6,
            mtu: b[10] & 0x3F,
            rate_selector: b[11] >> 6,
            rate: b[11] & 0x3F,
            pkt_life_selector: b[12] >> 6,
            pkt_life: b[12] & 0x3F,
            service_id: u64::from_be_bytes(sid),
            independence: b[14] >> 6,
            sgid_count: b[15],
            dgid_count: b[16],
            gids,
        }
    }

    fn encode_data(&self, b: &mut [u8; SA_DATA_LEN]) {
        b.fill(0);
        put_u32(
            b,
            0,
            (u32::from(self.raw_traffic) << 31)
                | ((self.flow_label & 0xF_FFFF) << 8)
                | u32::from(self.hop_limit),
        );
        b[4] = self.tclass;
        b[5] = (u8::from(self.reversible) << 7) | (self.numb_path & 0x7F);
        put_u16(b, 6, self.pkey);
        put_u16(
            b,
            8,
            ((self.qos_class & 0xFFF) << 4) | u16::from(self.sl & 0xF),
        );
        b[10] = ((self.mtu_selector & 3) << 6) | (self.mtu & 0x3F);
        b[11] = ((self.rate_selector & 3) << 6) | (self.rate & 0x3F);
        b[12] = ((self.pkt_life_selector & 3) << 6) | (self.pkt_life & 0x3F);
        let sid = self.service_id.to_be_bytes();
        b[13] = sid[0];
        b[14] = (self.independence & 3) << 6;
        b[15] = self.sgid_count;
        b[16] = self.dgid_count;
        b[17..24].copy_from_slice(&sid[1..]);
        for (i, g) in self.gids.iter().enumerate() {
            put_arr(b, 24 + 16 * i, &g.0);
        }
    }
}
