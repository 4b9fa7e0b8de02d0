//! Scalar value types of an InfiniBand subnet: GUIDs, LIDs, port numbers, P_Keys,
//! node types and port states.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A 64-bit globally unique identifier (node GUID, port GUID or system image GUID),
/// burned into the hardware.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
pub struct Guid(pub u64);

impl fmt::Debug for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Guid({:#018x})", self.0)
    }
}

impl fmt::Display for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#018x}", self.0)
    }
}

/// A 16-bit Local Identifier assigned by the SM.
///
/// 0x0000 is reserved, 0x0001-0xBFFF are unicast, 0xC000-0xFFFE multicast and
/// 0xFFFF the permissive LID.
#[derive(
    Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug, Serialize, Deserialize,
)]
pub struct Lid(pub u16);

impl Lid {
    /// The reserved LID 0 ("no LID assigned yet").
    pub const UNASSIGNED: Lid = Lid(0);
    /// The lowest unicast LID.
    pub const UNICAST_MIN: Lid = Lid(0x0001);
    /// The highest unicast LID.
    pub const UNICAST_MAX: Lid = Lid(0xBFFF);
    /// The lowest multicast LID.
    pub const MULTICAST_MIN: Lid = Lid(0xC000);
    /// The highest multicast LID.
    pub const MULTICAST_MAX: Lid = Lid(0xFFFE);
    /// The permissive LID (0xFFFF), used by directed-route SMPs.
    pub const PERMISSIVE: Lid = Lid(0xFFFF);

    /// True for 0x0001..=0xBFFF.
    pub fn is_unicast(self) -> bool {
        (Self::UNICAST_MIN.0..=Self::UNICAST_MAX.0).contains(&self.0)
    }

    /// True for 0xC000..=0xFFFE.
    pub fn is_multicast(self) -> bool {
        (Self::MULTICAST_MIN.0..=Self::MULTICAST_MAX.0).contains(&self.0)
    }

    /// True for 0xFFFF.
    pub fn is_permissive(self) -> bool {
        self == Self::PERMISSIVE
    }
}

impl fmt::Display for Lid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A physical port number on a node. Port 0 is a switch's management port;
/// CA ports are numbered from 1. 255 is reserved.
#[derive(
    Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug, Serialize, Deserialize,
)]
pub struct PortNum(pub u8);

impl fmt::Display for PortNum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Membership of a port in a partition, carried in bit 15 of a P_Key.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
pub enum Membership {
    /// Bit 15 clear: may talk only to full members of the partition.
    Limited,
    /// Bit 15 set: may talk to every member of the partition.
    Full,
}

/// A 16-bit partition key: the low 15 bits name the partition, bit 15 is the
/// membership bit (1 = full, 0 = limited).
#[derive(
    Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug, Serialize, Deserialize,
)]
pub struct PKey(pub u16);

impl PKey {
    /// The membership bit.
    pub const FULL_BIT: u16 = 0x8000;
    /// The default partition, full membership (0xFFFF).
    pub const DEFAULT_FULL: PKey = PKey(0xFFFF);
    /// The default partition, limited membership (0x7FFF).
    pub const DEFAULT_LIMITED: PKey = PKey(0x7FFF);
    /// An empty table entry (0x0000); so is 0x8000, which names the same invalid partition.
    pub const INVALID: PKey = PKey(0);

    /// Builds a key from a partition number (low 15 bits used) and a membership.
    pub fn new(partition: u16, membership: Membership) -> PKey {
        let base = partition & 0x7FFF;
        match membership {
            Membership::Full => PKey(base | Self::FULL_BIT),
            Membership::Limited => PKey(base),
        }
    }

    /// The partition this key names (low 15 bits).
    pub fn partition(self) -> u16 {
        self.0 & 0x7FFF
    }

    /// The membership this key carries.
    pub fn membership(self) -> Membership {
        if self.0 & Self::FULL_BIT != 0 {
            Membership::Full
        } else {
            Membership::Limited
        }
    }

    /// True when the key is full membership.
    pub fn is_full(self) -> bool {
        self.membership() == Membership::Full
    }

    /// True for the invalid keys 0x0000 and 0x8000 (partition 0), which match nothing.
    pub fn is_invalid(self) -> bool {
        self.partition() == 0
    }

    /// The IBA match rule: same partition, neither invalid, and at least one full member.
    pub fn matches(self, other: PKey) -> bool {
        !self.is_invalid()
            && self.partition() == other.partition()
            && (self.is_full() || other.is_full())
    }
}

impl fmt::Display for PKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#06x}", self.0)
    }
}

/// NodeInfo.NodeType.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
pub enum NodeType {
    /// Channel adapter (HCA or TCA), wire value 1.
    Ca,
    /// Switch, wire value 2.
    Switch,
    /// Router, wire value 3.
    Router,
}

impl NodeType {
    /// The NodeInfo.NodeType wire value.
    pub fn to_wire(self) -> u8 {
        match self {
            NodeType::Ca => 1,
            NodeType::Switch => 2,
            NodeType::Router => 3,
        }
    }

    /// Decodes the NodeInfo.NodeType wire value.
    pub fn from_wire(v: u8) -> Option<NodeType> {
        match v {
            1 => Some(NodeType::Ca),
            2 => Some(NodeType::Switch),
            3 => Some(NodeType::Router),
            _ => None,
        }
    }
}

/// PortInfo.PortState (logical link state).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
pub enum PortState {
    /// 0: no state change (valid only in a Set).
    NoChange,
    /// 1: Down.
    Down,
    /// 2: Initialize — physical link up, not yet configured by the SM.
    Init,
    /// 3: Armed.
    Armed,
    /// 4: Active.
    Active,
}

impl PortState {
    /// The 4-bit wire value.
    pub fn to_wire(self) -> u8 {
        match self {
            PortState::NoChange => 0,
            PortState::Down => 1,
            PortState::Init => 2,
            PortState::Armed => 3,
            PortState::Active => 4,
        }
    }

    /// Decodes the 4-bit wire value (5 is ActiveDefer, treated as unknown here).
    pub fn from_wire(v: u8) -> Option<PortState> {
        match v {
            0 => Some(PortState::NoChange),
            1 => Some(PortState::Down),
            2 => Some(PortState::Init),
            3 => Some(PortState::Armed),
            4 => Some(PortState::Active),
            _ => None,
        }
    }
}

/// PortInfo.PortPhysicalState.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
pub enum PhysState {
    /// 0: no state change (Set only).
    NoChange,
    /// 1: Sleep.
    Sleep,
    /// 2: Polling.
    Polling,
    /// 3: Disabled.
    Disabled,
    /// 4: PortConfigurationTraining.
    Training,
    /// 5: LinkUp.
    LinkUp,
    /// 6: LinkErrorRecovery.
    LinkErrorRecovery,
    /// 7: Phy Test.
    PhyTest,
}

impl PhysState {
    /// The 4-bit wire value.
    pub fn to_wire(self) -> u8 {
        match self {
            PhysState::NoChange => 0,
            PhysState::Sleep => 1,
            PhysState::Polling => 2,
            PhysState::Disabled => 3,
            PhysState::Training => 4,
            PhysState::LinkUp => 5,
            PhysState::LinkErrorRecovery => 6,
            PhysState::PhyTest => 7,
        }
    }

    /// The name as `smpquery portinfo` prints it.
    pub fn name(self) -> &'static str {
        match self {
            PhysState::NoChange => "NoChange",
            PhysState::Sleep => "Sleep",
            PhysState::Polling => "Polling",
            PhysState::Disabled => "Disabled",
            PhysState::Training => "PortConfigurationTraining",
            PhysState::LinkUp => "LinkUp",
            PhysState::LinkErrorRecovery => "LinkErrorRecovery",
            PhysState::PhyTest => "PhyTest",
        }
    }

    /// Decodes the 4-bit wire value.
    pub fn from_wire(v: u8) -> Option<PhysState> {
        Some(match v {
            0 => PhysState::NoChange,
            1 => PhysState::Sleep,
            2 => PhysState::Polling,
            3 => PhysState::Disabled,
            4 => PhysState::Training,
            5 => PhysState::LinkUp,
            6 => PhysState::LinkErrorRecovery,
            7 => PhysState::PhyTest,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lid_ranges() {
        assert!(!Lid(0).is_unicast());
        assert!(Lid(1).is_unicast());
        assert!(Lid(0xBFFF).is_unicast());
        assert!(!Lid(0xC000).is_unicast());
        assert!(Lid(0xC000).is_multicast());
        assert!(Lid(0xFFFE).is_multicast());
        assert!(!Lid(0xFFFF).is_multicast());
        assert!(Lid(0xFFFF).is_permissive());
    }

    #[test]
    fn pkey_match_rule() {
        let full = PKey(0x8001);
        let lim = PKey(0x0001);
        let other = PKey(0x8002);
        assert!(full.matches(lim));
        assert!(lim.matches(full));
        assert!(full.matches(full));
        assert!(!lim.matches(lim));
        assert!(!full.matches(other));
        assert!(!PKey(0x8000).matches(PKey(0x8000)));
        assert_eq!(
            PKey::DEFAULT_FULL.partition(),
            PKey::DEFAULT_LIMITED.partition()
        );
        assert_eq!(PKey::new(0xFFFF, Membership::Limited), PKey(0x7FFF));
    }

    #[test]
    fn enum_wire_round_trip() {
        for v in 0..=15u8 {
            if let Some(s) = PortState::from_wire(v) {
                assert_eq!(s.to_wire(), v);
            }
            if let Some(s) = PhysState::from_wire(v) {
                assert_eq!(s.to_wire(), v);
            }
            if let Some(t) = NodeType::from_wire(v) {
                assert_eq!(t.to_wire(), v);
            }
        }
    }
}
