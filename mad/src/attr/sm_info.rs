//! SMInfo (IBA 14.2.5.13).

use super::{SmpAttribute, bits, place};
use crate::header::AttributeId;
use crate::wire::*;
use fabric::Guid;

/// SMInfo.SMState values (IBA Table 160).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum SmState {
    /// 0: not active.
    NotActive,
    /// 1: discovering.
    Discovering,
    /// 2: standby.
    Standby,
    /// 3: master.
    Master,
}

impl SmState {
    /// The 4-bit wire value.
    pub fn to_wire(self) -> u8 {
        match self {
            SmState::NotActive => 0,
            SmState::Discovering => 1,
            SmState::Standby => 2,
            SmState::Master => 3,
        }
    }

    /// Decodes the wire value.
    pub fn from_wire(v: u8) -> Option<SmState> {
        Some(match v {
            0 => SmState::NotActive,
            1 => SmState::Discovering,
            2 => SmState::Standby,
            3 => SmState::Master,
            _ => return None,
        })
    }
}

/// SMInfo, 21 bytes (libibmad fields.c `IB_SMINFO_*_F`; opensm `ib_sm_info_t`). The
/// attribute modifier of a Set carries the control (1 Handover, 2 Acknowledge, 3 Disable,
/// 4 Standby, 5 Discover; see the `SmInfo::MOD_*` constants).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct SmInfo {
    /// Bytes 0-7: GUID of the SM's port.
    pub guid: Guid,
    /// Bytes 8-15: SM_Key (zero in answers to requesters without the key).
    pub sm_key: u64,
    /// Bytes 16-19: ActCount (incremented while the SM is active).
    pub act_count: u32,
    /// Byte 20 bits 7..4: Priority (0..=15).
    pub priority: u8,
    /// Byte 20 bits 3..0: SMState wire value; see [`SmInfo::state`].
    pub sm_state: u8,
}

impl SmInfo {
    /// Attribute modifier of a Set: HANDOVER.
    pub const MOD_HANDOVER: u32 = 1;
    /// Attribute modifier of a Set: ACKNOWLEDGE.
    pub const MOD_ACKNOWLEDGE: u32 = 2;
    /// Attribute modifier of a Set: DISABLE.
    pub const MOD_DISABLE: u32 = 3;
    /// Attribute modifier of a Set: STANDBY.
    pub const MOD_STANDBY: u32 = 4;
    /// Attribute modifier of a Set: DISCOVER.
    pub const MOD_DISCOVER: u32 = 5;

    /// The SM state, `None` for values the spec does not define.
    pub fn state(&self) -> Option<SmState> {
        SmState::from_wire(self.sm_state)
    }
}

impl SmpAttribute for SmInfo {
    const ID: AttributeId = AttributeId::SM_INFO;
    const LEN: usize = 21;
    const NAME: &'static str = "SMInfo";

    fn decode(d: &[u8; 64]) -> SmInfo {
        SmInfo {
            guid: Guid(get_u64(d, 0)),
            sm_key: get_u64(d, 8),
            act_count: get_u32(d, 16),
            priority: bits(d[20], 7, 4),
            sm_state: bits(d[20], 3, 4),
        }
    }

    fn encode(&self, d: &mut [u8; 64]) {
        d.fill(0);
        put_u64(d, 0, self.guid.0);
        put_u64(d, 8, self.sm_key);
        put_u32(d, 16, self.act_count);
        d[20] = place(self.priority, 7, 4) | place(self.sm_state, 3, 4);
    }
}
