//! The checked policy: port groups, qos-setup scopes, QoS levels and match rules, with
//! every name reference resolved to an index.

use crate::error::Pos;
use crate::tables::{VLARB_TABLE_LEN, VlArb};

/// An inclusive range of numbers (`a-b`, or `a` for `a-a`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NumRange {
    /// Low end.
    pub lo: u64,
    /// High end (>= lo).
    pub hi: u64,
}

impl NumRange {
    /// Whether `v` is in the range.
    pub fn contains(&self, v: u64) -> bool {
        self.lo <= v && v <= self.hi
    }
}

/// Whether any range of a list holds `v`.
pub fn in_ranges(ranges: &[NumRange], v: u64) -> bool {
    ranges.iter().any(|r| r.contains(v))
}

/// A `node-type:` word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NodeTypeSel {
    /// `CA`.
    Ca,
    /// `SWITCH`.
    Switch,
    /// `ROUTER`.
    Router,
    /// `ALL`: every port.
    All,
    /// `SELF`: the SM's own port.
    SelfPort,
}

/// A `port-name:` entry, `node description/Pnum`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PortName {
    /// Compared with NodeDescription exactly.
    pub node_desc: String,
    /// The port number (1-254).
    pub port: u8,
}

/// A `port-group`: a port is a member when any of its selectors holds it.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct PortGroup {
    /// `name:`, as written.
    pub name: String,
    /// Where `port-group` is.
    pub pos: Pos,
    /// `use:` (a description).
    pub use_: Option<String>,
    /// `port-guid:` ranges.
    pub port_guids: Vec<NumRange>,
    /// `port-name:` entries.
    pub port_names: Vec<PortName>,
    /// `pkey:` ranges of partition numbers (low 15 bits): ports with a key of one of them,
    /// full or limited.
    pub pkeys: Vec<NumRange>,
    /// `partition:` names: ports in one of these partitions.
    pub partitions: Vec<String>,
    /// `node-type:` words.
    pub node_types: Vec<NodeTypeSel>,
}

impl PortGroup {
    /// True when the group has no selector at all (it can match nothing).
    pub fn is_empty(&self) -> bool {
        self.port_guids.is_empty()
            && self.port_names.is_empty()
            && self.pkeys.is_empty()
            && self.partitions.is_empty()
            && self.node_types.is_empty()
    }
}

/// A `vlarb-scope`: ports of its groups get these VLArb values instead of the options'.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VlArbScope {
    /// Where `vlarb-scope` is.
    pub pos: Pos,
    /// Indices into [`super::Policy::port_groups`].
    pub groups: Vec<usize>,
    /// `vlarb-high:` (entries not given are 0:0), None = keep the options' table.
    pub vlarb_high: Option<[VlArb; VLARB_TABLE_LEN]>,
    /// `vlarb-low:`, None = keep the options' table.
    pub vlarb_low: Option<[VlArb; VLARB_TABLE_LEN]>,
    /// `vl-high-limit:`, None = keep the options' value.
    pub vl_high_limit: Option<u8>,
}

/// `from:`/`to:` of an `sl2vl-scope`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PortSel {
    /// `*`, or the key absent: every port.
    All,
    /// Port numbers.
    Ports(Vec<NumRange>),
}

impl PortSel {
    /// Whether the selection holds port `p`.
    pub fn contains(&self, p: u8) -> bool {
        match self {
            PortSel::All => true,
            PortSel::Ports(r) => in_ranges(r, u64::from(p)),
        }
    }
}

/// An `sl2vl-scope`: ports of its groups get this SL2VL table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sl2VlScope {
    /// Where `sl2vl-scope` is.
    pub pos: Pos,
    /// Indices into [`super::Policy::port_groups`].
    pub groups: Vec<usize>,
    /// Input ports (switch external ports only).
    pub from: PortSel,
    /// Output ports (switch external ports only).
    pub to: PortSel,
    /// The table.
    pub sl2vl: [u8; 16],
}

/// A QoS level: the SL and the limits a path record gets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QosLevel {
    /// `name:` (for a level generated from a qos-ulps SL: `ulp-sl<N>`).
    pub name: String,
    /// Where `qos-level` is (the ulp rule for a generated level).
    pub pos: Pos,
    /// `use:`.
    pub use_: Option<String>,
    /// `sl:`, 0-15.
    pub sl: u8,
    /// `mtu-limit:` (IBA MTU code 1-5).
    pub mtu_limit: Option<u8>,
    /// `rate-limit:` (IBA rate code 2-24).
    pub rate_limit: Option<u8>,
    /// `packet-life:` (PathRecord PacketLifeTime, 0-63).
    pub packet_life: Option<u8>,
    /// `path-bits:` ranges (0-127).
    pub path_bits: Vec<NumRange>,
    /// `pkey:` ranges of partition numbers (low 15 bits).
    pub pkeys: Vec<NumRange>,
    /// True for the levels a qos-ulps `: SL` creates (one per SL).
    pub generated: bool,
}

/// Which ports a rule's group criterion looks at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GroupMatch {
    /// A named port group (index into [`super::Policy::port_groups`]).
    Group(usize),
    /// Port GUID ranges given in a qos-ulps rule.
    Guids(Vec<NumRange>),
}

/// Where a rule comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RuleOrigin {
    /// A `qos-match-rule`.
    MatchRule,
    /// A qos-ulps line (`any`, `sdp`, `rds`, `iser`, `srp`, `ipoib`).
    Ulp,
}

/// A match rule: a query matches when it meets every criterion the rule has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatchRule {
    /// Where the rule is.
    pub pos: Pos,
    /// Where it comes from.
    pub origin: RuleOrigin,
    /// `use:`.
    pub use_: Option<String>,
    /// `qos-class:` ranges (12-bit).
    pub qos_classes: Vec<NumRange>,
    /// `source:` groups (the source port must be in one).
    pub source: Vec<GroupMatch>,
    /// `destination:` groups (the destination port must be in one).
    pub destination: Vec<GroupMatch>,
    /// qos-ulps `source-target-port-guid`: the source or the destination must be in one.
    pub either: Vec<GroupMatch>,
    /// `service-id:` ranges.
    pub service_ids: Vec<NumRange>,
    /// `pkey:` ranges of partition numbers (low 15 bits).
    pub pkeys: Vec<NumRange>,
    /// Index into [`super::Policy::levels`].
    pub level: usize,
}

impl MatchRule {
    /// True when the rule has no criterion: it matches every query.
    pub fn matches_all(&self) -> bool {
        self.qos_classes.is_empty()
            && self.source.is_empty()
            && self.destination.is_empty()
            && self.either.is_empty()
            && self.service_ids.is_empty()
            && self.pkeys.is_empty()
    }
}
