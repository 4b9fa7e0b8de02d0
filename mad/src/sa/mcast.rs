//! MCMemberRecord (IBA 15.2.5.17, attribute 0x0038). Layout: opensm `ib_member_rec_t`;
//! ComponentMask bits: `IB_MCR_COMPMASK_*`.

use super::record::{CompField, Gid, SaRecord, cf};
use crate::header::AttributeId;
use crate::sa::SA_DATA_LEN;
use crate::wire::*;
use fabric::Lid;

/// JoinState bits (IBA 15.2.5.17, low 4 bits of byte 48).
pub mod join_state {
    /// FullMember.
    pub const FULL: u8 = 0x1;
    /// NonMember.
    pub const NON: u8 = 0x2;
    /// SendOnlyNonMember.
    pub const SEND_ONLY_NON: u8 = 0x4;
    /// SendOnlyFullMember.
    pub const SEND_ONLY_FULL: u8 = 0x8;
}

/// MCMemberRecord, 52 bytes padded to 56.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct McMemberRecord {
    /// Bytes 0-15: MGID.
    pub mgid: Gid,
    /// Bytes 16-31: PortGID.
    pub port_gid: Gid,
    /// Bytes 32-35: Q_Key.
    pub q_key: u32,
    /// Bytes 36-37: MLID.
    pub mlid: Lid,
    /// Byte 38 bits 7..6: MTUSelector.
    pub mtu_selector: u8,
    /// Byte 38 bits 5..0: MTU.
    pub mtu: u8,
    /// Byte 39: TClass.
    pub tclass: u8,
    /// Bytes 40-41: P_Key.
    pub pkey: u16,
    /// Byte 42 bits 7..6: RateSelector.
    pub rate_selector: u8,
    /// Byte 42 bits 5..0: Rate.
    pub rate: u8,
    /// Byte 43 bits 7..6: PacketLifeTimeSelector.
    pub pkt_life_selector: u8,
    /// Byte 43 bits 5..0: PacketLifeTime.
    pub pkt_life: u8,
    /// Byte 44 bits 7..4: SL.
    pub sl: u8,
    /// Bytes 44-46, 20 bits: FlowLabel.
    pub flow_label: u32,
    /// Byte 47: HopLimit.
    pub hop_limit: u8,
    /// Byte 48 bits 7..4: Scope.
    pub scope: u8,
    /// Byte 48 bits 3..0: JoinState (see [`join_state`]).
    pub join_state: u8,
    /// Byte 49 bit 7: ProxyJoin.
    pub proxy_join: bool,
}

impl McMemberRecord {
    /// ComponentMask bit: MGID.
    pub const CM_MGID: u64 = 1 << 0;
    /// ComponentMask bit: PortGID.
    pub const CM_PORT_GID: u64 = 1 << 1;
    /// ComponentMask bit: Q_Key.
    pub const CM_QKEY: u64 = 1 << 2;
    /// ComponentMask bit: MLID.
    pub const CM_MLID: u64 = 1 << 3;
    /// ComponentMask bit: MTUSelector.
    pub const CM_MTU_SELECTOR: u64 = 1 << 4;
    /// ComponentMask bit: MTU.
    pub const CM_MTU: u64 = 1 << 5;
    /// ComponentMask bit: TClass.
    pub const CM_TCLASS: u64 = 1 << 6;
    /// ComponentMask bit: P_Key.
    pub const CM_PKEY: u64 = 1 << 7;
    /// ComponentMask bit: RateSelector.
    pub const CM_RATE_SELECTOR: u64 = 1 << 8;
    /// ComponentMask bit: Rate.
    pub const CM_RATE: u64 = 1 << 9;
    /// ComponentMask bit: PacketLifeTime.
    pub const CM_PKT_LIFE: u64 = 1 << 11;
    /// ComponentMask bit: SL.
    pub const CM_SL: u64 = 1 << 12;
    /// ComponentMask bit: FlowLabel.
    pub const CM_FLOW_LABEL: u64 = 1 << 13;
    /// ComponentMask bit: HopLimit.
    pub const CM_HOP_LIMIT: u64 = 1 << 14;
    /// ComponentMask bit: Scope.
    pub const CM_SCOPE: u64 = 1 << 15;
    /// ComponentMask bit: JoinState.
    pub const CM_JOIN_STATE: u64 = 1 << 16;
    /// ComponentMask bit: ProxyJoin.
    pub const CM_PROXY_JOIN: u64 = 1 << 17;
}

const MC_FIELDS: &[CompField] = &[
    cf(0, "MGID", 0, 7, 128),
    cf(1, "PortGID", 16, 7, 128),
    cf(2, "Q_Key", 32, 7, 32),
    cf(3, "MLID", 36, 7, 16),
    cf(4, "MTUSelector", 38, 7, 2),
    cf(5, "MTU", 38, 5, 6),
    cf(6, "TClass", 39, 7, 8),
    cf(7, "P_Key", 40, 7, 16),
    cf(8, "RateSelector", 42, 7, 2),
    cf(9, "Rate", 42, 5, 6),
    cf(10, "PacketLifeTimeSelector", 43, 7, 2),
    cf(11, "PacketLifeTime", 43, 5, 6),
    cf(12, "SL", 44, 7, 4),
    cf(13, "FlowLabel", 44, 3, 20),
    cf(14, "HopLimit", 47, 7, 8),
    cf(15, "Scope", 48, 7, 4),
    cf(16, "JoinState", 48, 3, 4),
    cf(17, "ProxyJoin", 49, 7, 1),
];

impl SaRecord for McMemberRecord {
    const ID: AttributeId = AttributeId::SA_MC_MEMBER_RECORD;
    const LEN: usize = 56;
    const NAME: &'static str = "MCMemberRecord";
    const FIELDS: &'static [CompField] = MC_FIELDS;

    fn decode_data(b: &[u8; SA_DATA_LEN]) -> McMemberRecord {
        let sfh = get_u32(b, 44);
        McMemberRecord {
            mgid: Gid(get_arr(b, 0)),
            port_gid: Gid(get_arr(b, 16)),
            q_key: get_u32(b, 32),
            mlid: Lid(get_u16(b, 36)),
            mtu_selector: b[38] >> 6,
            mtu: b[38] & 0x3F,
            tclass: b[39],
            pkey: get_u16(b, 40),
            rate_selector: b[42] >> 6,
            rate: b[42] & 0x3F,
            pkt_life_selector: b[43] >> 6,
            pkt_life: b[43] & 0x3F,
            sl: (sfh >> 28) as u8,
            flow_label: (sfh >> 8) & 0xF_FFFF,
            hop_limit: (sfh & 0xFF) as u8,
            scope: b[48] >> 4,
            join_state: b[48] & 0xF,
            proxy_join: b[49] & 0x80 != 0,
        }
    }

    fn encode_data(&self, b: &mut [u8; SA_DATA_LEN]) {
        b.fill(0);
        put_arr(b, 0, &self.mgid.0);
        put_arr(b, 16, &self.port_gid.0);
        put_u32(b, 32, self.q_key);
        put_u16(b, 36, self.mlid.0);
        b[38] = ((self.mtu_selector & 3) << 6) | (self.mtu & 0x3F);
        b[39] = self.tclass;
        put_u16(b, 40, self.pkey);
        b[42] = ((self.rate_selector & 3) << 6) | (self.rate & 0x3F);
        b[43] = ((self.pkt_life_selector & 3) << 6) | (self.pkt_life & 0x3F);
        put_u32(
            b,
            44,
            (u32::from(self.sl & 0xF) << 28)
                | ((self.flow_label & 0xF_FFFF) << 8)
                | u32::from(self.hop_limit),
        );
        b[48] = ((self.scope & 0xF) << 4) | (self.join_state & 0xF);
        b[49] = u8::from(self.proxy_join) << 7;
    }
}
