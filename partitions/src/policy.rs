//! Semantics: from the syntax tree to a [`Policy`] (partitions, ordered membership rules,
//! multicast groups), following what OpenSM documents and does (osm_prtn.c,
//! osm_prtn_config.c). See the crate documentation for where we depart from OpenSM.

use crate::ast::*;
use crate::lints::{Lint, LintCode};
use fabric::{Guid, Membership, NodeType, PKey};
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// The default partition number.
pub const DEFAULT_PARTITION: u16 = 0x7FFF;
/// Q_Key of IPoIB groups when none is given.
pub const IPOIB_QKEY: u32 = 0x0B1B;

/// OpenSM's `part_enforce`: which direction switch ports facing end ports check P_Keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PartEnforce {
    /// Inbound and outbound (OpenSM's default).
    #[default]
    Both,
    /// Inbound only.
    In,
    /// Outbound only.
    Out,
    /// None: switch tables are not written, enforcement is cleared.
    Off,
}

impl PartEnforce {
    /// (inbound, outbound) bits.
    pub fn bits(self) -> (bool, bool) {
        match self {
            PartEnforce::Both => (true, true),
            PartEnforce::In => (true, false),
            PartEnforce::Out => (false, true),
            PartEnforce::Off => (false, false),
        }
    }
}

impl FromStr for PartEnforce {
    type Err = String;
    fn from_str(s: &str) -> Result<PartEnforce, String> {
        match s {
            "both" => Ok(PartEnforce::Both),
            "in" => Ok(PartEnforce::In),
            "out" => Ok(PartEnforce::Out),
            "off" => Ok(PartEnforce::Off),
            _ => Err(format!(
                "part_enforce must be both, in, out or off, not '{s}'"
            )),
        }
    }
}

impl fmt::Display for PartEnforce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PartEnforce::Both => "both",
            PartEnforce::In => "in",
            PartEnforce::Out => "out",
            PartEnforce::Off => "off",
        })
    }
}

/// SM options that change what a file means.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize)]
pub struct Options {
    /// OpenSM `allow_both_pkeys`: a port may hold full and limited keys of one partition.
    pub allow_both_pkeys: bool,
    /// OpenSM `part_enforce`.
    pub part_enforce: PartEnforce,
    /// The SM's own port GUID (what SELF names).
    pub sm_port_guid: Option<Guid>,
    /// OpenSM `qos`: without it OpenSM forces every partition's SL to 0.
    pub qos: bool,
}

/// Which ports a rule applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Selector {
    /// Every end port.
    All,
    /// Every end port of one node type.
    Type(NodeType),
    /// One port GUID.
    Port(Guid),
    /// SELF when the SM port GUID is unknown: matches nothing.
    UnknownSelf,
}

/// What a rule does to the ports it selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Effect {
    /// Full only (removes limited).
    Full,
    /// Limited only (removes full).
    Limited,
    /// Full and limited (only with allow_both_pkeys).
    Both,
    /// Adds full, leaves limited alone (the SM port in Default, applied last).
    EnsureFull,
}

/// One membership assignment, applied in order (a later rule overrides an earlier one).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Rule {
    /// Index into [`Policy::partitions`].
    pub partition: usize,
    /// Which ports.
    pub selector: Selector,
    /// What it does.
    pub effect: Effect,
    /// Whether the statement had `indx0`.
    pub indx0: bool,
    /// Where it is written (None for the built-in Default rules).
    pub pos: Option<Pos>,
}

/// A multicast group the SM creates for a partition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct McGroup {
    /// The group's MGID (scope nibble applied).
    #[serde(serialize_with = "crate::hexser::mgid")]
    pub mgid: [u8; 16],
    /// The group's P_Key (partition with the full bit).
    #[serde(serialize_with = "crate::hexser::pkey")]
    pub pkey: PKey,
    /// MTU code.
    pub mtu: u8,
    /// Rate code.
    pub rate: u8,
    /// Service level.
    pub sl: u8,
    /// Scope nibble.
    pub scope: u8,
    /// Q_Key.
    pub q_key: u32,
    /// Traffic class.
    pub tclass: u8,
    /// Flow label.
    pub flow_label: u32,
    /// True for the IPoIB broadcast group of an `ipoib` partition.
    pub broadcast: bool,
}

impl McGroup {
    /// The MGID in IPv6 notation.
    pub fn mgid_string(&self) -> String {
        std::net::Ipv6Addr::from(self.mgid).to_string()
    }
}

/// One partition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Partition {
    /// Name (the first one given for this PKey; `%04x` of the key when none).
    pub name: String,
    /// Partition number (low 15 bits).
    pub pkey: u16,
    /// True when the number was generated.
    pub auto_pkey: bool,
    /// Where its definitions start.
    pub defined_at: Vec<Pos>,
    /// True when some definition had `ipoib`.
    pub ipoib: bool,
    /// Partition SL (0 unless QoS).
    pub sl: u8,
    /// Multicast groups, creation order.
    pub groups: Vec<McGroup>,
}

/// The meaning of a partitions file under given options.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Policy {
    /// Options it was built with.
    pub options: Options,
    /// False when built for "no partitions file" (ALL=full in Default).
    pub from_file: bool,
    /// Partitions in creation order; index 0 is Default (0x7fff).
    pub partitions: Vec<Partition>,
    /// Membership rules in application order.
    pub rules: Vec<Rule>,
}

/// An end port as the policy sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct EndPort {
    /// Node GUID.
    #[serde(serialize_with = "crate::hexser::guid")]
    pub node_guid: Guid,
    /// Port GUID (a switch's port 0 has the node GUID).
    #[serde(serialize_with = "crate::hexser::guid")]
    pub port_guid: Guid,
    /// Port number (0 for a switch).
    pub port: u8,
    /// Node type.
    pub node_type: NodeType,
}

/// The membership of one port in one partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize)]
pub struct Held {
    /// Holds the full key.
    pub full: bool,
    /// Holds the limited key.
    pub limited: bool,
}

impl Held {
    /// The strongest membership held, if any.
    pub fn best(self) -> Option<Membership> {
        if self.full {
            Some(Membership::Full)
        } else if self.limited {
            Some(Membership::Limited)
        } else {
            None
        }
    }
}

/// All memberships of one port.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PortMembership {
    /// The port.
    pub port: EndPort,
    /// Per partition index: what the port holds.
    pub held: Vec<Held>,
    /// The key OpenSM puts at index 0 (from `indx0`), if any.
    pub indx0: Option<PKey>,
}

impl Policy {
    /// The policy when there is no partitions file: `Default=0x7fff,ipoib : ALL=full ;`.
    pub fn no_file(options: Options) -> Policy {
        let mut b = Builder::new(options, false);
        b.finish_defaults();
        b.policy
    }

    /// Builds the policy of a parsed file. Also returns the semantic lints found on the way.
    pub fn from_file(file: &PartitionFile, options: Options) -> (Policy, Vec<Lint>) {
        let mut b = Builder::new(options, true);
        if file.statements.is_empty() {
            b.lints.push(Lint::new(
                LintCode::EmptyFile,
                None,
                "the file defines nothing: every port but the SM's is a limited member of Default \
                 (OpenSM would treat an empty file as a parse failure and fall back to ALL=full)",
            ));
        }
        for st in &file.statements {
            b.statement(st);
        }
        b.finish_defaults();
        (b.policy, b.lints)
    }

    /// Partition indices in OpenSM's processing order: its partition map is keyed by the PKey
    /// in network byte order, so on a little-endian host partitions are visited in order of
    /// the byte-swapped key (0x0001 < 0x1001 < 0x0002 < 0x7fff).
    pub fn opensm_order(&self) -> Vec<usize> {
        let mut idx: Vec<usize> = (0..self.partitions.len()).collect();
        idx.sort_by_key(|&i| self.partitions[i].pkey.swap_bytes());
        idx
    }

    /// Index of the partition with this number.
    pub fn partition_index(&self, pkey: u16) -> Option<usize> {
        self.partitions.iter().position(|p| p.pkey == pkey & 0x7FFF)
    }

    /// Replays the rules over a set of end ports. Rules naming one GUID are indexed, so the
    /// cost is ports x (rules naming many ports) + rules naming one port.
    pub fn resolve(&self, ports: &[EndPort]) -> Vec<PortMembership> {
        let mut by_guid: std::collections::HashMap<Guid, Vec<usize>> = Default::default();
        let mut global = Vec::new();
        for (i, r) in self.rules.iter().enumerate() {
            match r.selector {
                Selector::Port(g) => by_guid.entry(g).or_default().push(i),
                Selector::UnknownSelf => {}
                _ => global.push(i),
            }
        }
        ports
            .iter()
            .map(|p| {
                let own = by_guid.get(&p.port_guid).map(Vec::as_slice).unwrap_or(&[]);
                let (mut a, mut b) = (global.iter().peekable(), own.iter().peekable());
                let merged = std::iter::from_fn(move || match (a.peek(), b.peek()) {
                    (Some(x), Some(y)) if x < y => a.next(),
                    (Some(_), Some(_)) | (None, Some(_)) => b.next(),
                    (Some(_), None) => a.next(),
                    (None, None) => None,
                });
                self.apply(*p, merged.map(|&i| &self.rules[i]))
            })
            .collect()
    }

    /// What OpenSM itself gives a port: the rules without our final "SM port stays full in
    /// Default" rule.
    pub fn opensm_membership(&self, port: EndPort) -> PortMembership {
        self.apply(
            port,
            self.rules.iter().filter(|r| r.effect != Effect::EnsureFull),
        )
    }

    /// Replays the rules for one port.
    pub fn resolve_port(&self, port: EndPort) -> PortMembership {
        self.apply(port, self.rules.iter())
    }

    fn apply<'a>(&self, port: EndPort, rules: impl Iterator<Item = &'a Rule>) -> PortMembership {
        let mut held = vec![Held::default(); self.partitions.len()];
        let mut indx0: Option<PKey> = None;
        let both_ok = self.options.allow_both_pkeys;
        for r in rules {
            let hit = match r.selector {
                Selector::All => true,
                Selector::Type(t) => t == port.node_type,
                Selector::Port(g) => g == port.port_guid,
                Selector::UnknownSelf => false,
            };
            if !hit {
                continue;
            }
            let base = self.partitions[r.partition].pkey;
            let h = &mut held[r.partition];
            // OpenSM calls osm_prtn_add_port once per key inserted: full first, then limited.
            let calls: &[bool] = match r.effect {
                Effect::Full => {
                    *h = Held {
                        full: true,
                        limited: false,
                    };
                    &[true]
                }
                Effect::Limited => {
                    *h = Held {
                        full: false,
                        limited: true,
                    };
                    &[false]
                }
                Effect::Both => {
                    *h = Held {
                        full: true,
                        limited: both_ok,
                    };
                    if both_ok { &[true, false] } else { &[true] }
                }
                Effect::EnsureFull => {
                    h.full = true;
                    if !both_ok {
                        h.limited = false;
                    }
                    continue;
                }
            };
            for &full in calls {
                let key = PKey::new(
                    base,
                    if full {
                        Membership::Full
                    } else {
                        Membership::Limited
                    },
                );
                if r.indx0 {
                    indx0 = Some(key);
                } else if indx0.is_some_and(|k| k.partition() == base) {
                    indx0 = None;
                }
            }
        }
        PortMembership { port, held, indx0 }
    }
}

#[derive(Clone, Copy)]
struct Flags {
    mtu: u8,
    rate: u8,
    sl: u8,
    scope_mask: u16,
    q_key: u32,
    tclass: u8,
    flow_label: u32,
}

impl Default for Flags {
    fn default() -> Flags {
        Flags {
            mtu: 4,
            rate: 3,
            sl: 0,
            scope_mask: 0,
            q_key: 0,
            tclass: 0,
            flow_label: 0,
        }
    }
}

impl Flags {
    fn apply(&mut self, f: GroupFlag) {
        match f {
            GroupFlag::Mtu(v) => self.mtu = v,
            GroupFlag::Rate(v) => self.rate = v,
            GroupFlag::Sl(v) => self.sl = v,
            GroupFlag::Scope(v) => self.scope_mask |= 1 << v,
            GroupFlag::QKey(v) => self.q_key = v,
            GroupFlag::TClass(v) => self.tclass = v,
            GroupFlag::FlowLabel(v) => self.flow_label = v,
        }
    }
}

struct Builder {
    policy: Policy,
    lints: Vec<Lint>,
    pkey_counter: u16,
}

const BROADCAST_MGID: [u8; 16] = [
    0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
];

impl Builder {
    fn new(options: Options, from_file: bool) -> Builder {
        let mut b = Builder {
            policy: Policy {
                options,
                from_file,
                partitions: Vec::new(),
                rules: Vec::new(),
            },
            lints: Vec::new(),
            pkey_counter: 0,
        };
        b.policy.partitions.push(Partition {
            name: "Default".into(),
            pkey: DEFAULT_PARTITION,
            auto_pkey: false,
            defined_at: Vec::new(),
            ipoib: !from_file,
            sl: 0,
            groups: Vec::new(),
        });
        b.policy.rules.push(Rule {
            partition: 0,
            selector: Selector::All,
            effect: if from_file {
                Effect::Limited
            } else {
                Effect::Full
            },
            indx0: false,
            pos: None,
        });
        b.push_self_full(Effect::Full);
        if !from_file {
            let flags = Flags {
                q_key: IPOIB_QKEY,
                ..Flags::default()
            };
            b.add_group(0, BROADCAST_MGID, flags, true);
        }
        b
    }

    fn push_self_full(&mut self, effect: Effect) {
        let selector = match self.policy.options.sm_port_guid {
            Some(g) => Selector::Port(g),
            None => Selector::UnknownSelf,
        };
        self.policy.rules.push(Rule {
            partition: 0,
            selector,
            effect,
            indx0: false,
            pos: None,
        });
    }

    fn finish_defaults(&mut self) {
        // Documented: "OpenSM's port will always have full membership in default partition".
        self.push_self_full(Effect::EnsureFull);
    }

    fn find_by_name(&self, name: &str) -> Option<usize> {
        self.policy
            .opensm_order()
            .into_iter()
            .find(|&i| self.policy.partitions[i].name == name)
    }

    fn generate_pkey(&mut self) -> Option<u16> {
        while self.pkey_counter < DEFAULT_PARTITION - 1 {
            self.pkey_counter += 1;
            if self.policy.partition_index(self.pkey_counter).is_none() {
                return Some(self.pkey_counter);
            }
        }
        None
    }

    fn statement(&mut self, st: &Statement) {
        let mut flags = Flags::default();
        let mut ipoib = false;
        let mut indx0 = false;
        let mut defmember = MemberWord::Limited;
        let mut had_group_flags = None;
        for f in &st.flags {
            match &f.kind {
                HeaderFlagKind::Ipoib => ipoib = true,
                HeaderFlagKind::Indx0 => indx0 = true,
                HeaderFlagKind::DefMember(m) => defmember = m.value,
                HeaderFlagKind::Group(g) => {
                    flags.apply(*g);
                    had_group_flags.get_or_insert(f.word.pos);
                }
            }
        }
        let name = st.name.as_ref().map(|w| w.text.as_str());
        // Find or create the partition, as osm_prtn_make_new does.
        let idx = match st.pkey {
            Some(spec) => {
                let base = spec.value & 0x7FFF;
                match self.policy.partition_index(base) {
                    Some(i) => {
                        let existing = &self.policy.partitions[i].name;
                        if let Some(n) = name
                            && n != existing
                            && i != 0
                        {
                            self.lints.push(Lint::new(
                                LintCode::PKeyAlias,
                                Some(spec.pos),
                                format!(
                                    "PKey {:#06x} is already partition '{existing}': '{n}' merges into it under the first name",
                                    base
                                ),
                            ));
                        }
                        i
                    }
                    None => self.new_partition(name, base, false),
                }
            }
            None => match name.and_then(|n| self.find_by_name(n)) {
                Some(i) => i,
                None => match self.generate_pkey() {
                    Some(k) => {
                        self.lints.push(Lint::new(
                            LintCode::AutoPKey,
                            Some(st.pos),
                            format!(
                                "no PKey given: generated {k:#06x}, which depends on file order and may merge with a later explicit PKey"
                            ),
                        ));
                        self.new_partition(name, k, true)
                    }
                    None => return,
                },
            },
        };
        self.policy.partitions[idx].defined_at.push(st.pos);
        if !self.policy.options.qos && flags.sl != 0 {
            self.lints.push(Lint::new(
                LintCode::SlWithoutQos,
                had_group_flags,
                format!(
                    "sl={} ignored: without QoS OpenSM forces SL 0 for partition '{}'",
                    flags.sl, self.policy.partitions[idx].name
                ),
            ));
            flags.sl = 0;
        }
        self.policy.partitions[idx].sl = flags.sl;
        if ipoib {
            self.policy.partitions[idx].ipoib = true;
            let mut bflags = flags;
            if bflags.q_key == 0 {
                bflags.q_key = IPOIB_QKEY;
            }
            self.add_group(idx, BROADCAST_MGID, bflags, true);
        }
        let has_mgid = st.items.iter().any(|i| matches!(i, Item::Mgid(_)));
        if let Some(pos) = had_group_flags
            && !ipoib
            && !has_mgid
        {
            self.lints.push(Lint::new(
                LintCode::GroupFlagsUnused,
                Some(pos),
                "multicast group parameters on a definition without ipoib or mgid= have no effect",
            ));
        }
        for item in &st.items {
            match item {
                Item::Member(m) => self.member(idx, m, defmember, indx0),
                Item::Mgid(line) => self.mgid(idx, line, flags),
            }
        }
    }

    fn new_partition(&mut self, name: Option<&str>, pkey: u16, auto: bool) -> usize {
        let name = match name {
            Some(n) if !n.is_empty() => n.to_string(),
            _ => format!("{pkey:04x}"),
        };
        self.policy.partitions.push(Partition {
            name,
            pkey,
            auto_pkey: auto,
            defined_at: Vec::new(),
            ipoib: false,
            sl: 0,
            groups: Vec::new(),
        });
        self.policy.partitions.len() - 1
    }

    fn member(&mut self, idx: usize, m: &Member, defmember: MemberWord, indx0: bool) {
        let word = m.membership.as_ref().map(|s| s.value).unwrap_or(defmember);
        let effect = match word {
            MemberWord::Full => Effect::Full,
            MemberWord::Limited | MemberWord::Unrecognized => Effect::Limited,
            MemberWord::Both if self.policy.options.allow_both_pkeys => Effect::Both,
            MemberWord::Both => Effect::Full,
        };
        let selector = match m.target {
            Target::None => return,
            Target::All => Selector::All,
            Target::AllCas => Selector::Type(NodeType::Ca),
            Target::AllSwitches => Selector::Type(NodeType::Switch),
            Target::AllRouters => Selector::Type(NodeType::Router),
            Target::Guid(g) => Selector::Port(g),
            Target::SelfPort => match self.policy.options.sm_port_guid {
                Some(g) => Selector::Port(g),
                None => {
                    self.lints.push(Lint::new(
                        LintCode::SelfUnknown,
                        Some(m.name.pos),
                        "SELF used but the SM port GUID is not known: it matches no port here",
                    ));
                    Selector::UnknownSelf
                }
            },
        };
        self.policy.rules.push(Rule {
            partition: idx,
            selector,
            effect,
            indx0,
            pos: Some(m.name.pos),
        });
    }

    fn mgid(&mut self, idx: usize, line: &MgidLine, conf: Flags) {
        // Inherits the partition's flags except TClass (as osm_prtn_config.c does).
        let mut flags = Flags { tclass: 0, ..conf };
        for f in &line.flags {
            flags.apply(f.flag);
        }
        let mut mgid = line.mgid;
        let pkey = PKey::new(self.policy.partitions[idx].pkey, Membership::Full);
        let is_ip = mgid[2..4] == [0x40, 0x1b] || mgid[2..4] == [0x60, 0x1b];
        if is_ip {
            let mp = u16::from_be_bytes([mgid[4], mgid[5]]);
            let mut problem = None;
            if !(mgid == BROADCAST_MGID || mp == 0 || mp == pkey.0) {
                problem = Some(format!(
                    "IP group's PKey bits {mp:#06x} are neither 0 nor the partition's {}",
                    pkey
                ));
            } else if flags.rate != conf.rate {
                problem = Some(format!(
                    "IP group's rate {} differs from the partition's broadcast rate {}",
                    flags.rate, conf.rate
                ));
            } else if flags.mtu != conf.mtu {
                problem = Some(format!(
                    "IP group's mtu {} differs from the partition's broadcast mtu {}",
                    flags.mtu, conf.mtu
                ));
            }
            if let Some(msg) = problem {
                self.lints.push(Lint::new(
                    LintCode::BadIpGroup,
                    Some(line.pos),
                    format!("{msg}: OpenSM does not create this group"),
                ));
                return;
            }
            mgid[4..6].copy_from_slice(&pkey.0.to_be_bytes());
            if flags.q_key == 0 {
                flags.q_key = IPOIB_QKEY;
            }
            // OpenSM's SA (ipoib_mcgroup_creation_validation, default TRUE) refuses an IP
            // group unless the partition's IPoIB broadcast group of the same scope exists.
            let mut bcast = BROADCAST_MGID;
            bcast[4..6].copy_from_slice(&pkey.0.to_be_bytes());
            let mut kept = 0u16;
            for scope in scopes_of(flags.scope_mask) {
                let mut b = bcast;
                b[1] = (b[1] & 0xF0) | scope;
                let mut g = mgid;
                g[1] = (g[1] & 0xF0) | scope;
                let ok = g == b
                    || self
                        .policy
                        .partitions
                        .iter()
                        .any(|p| p.groups.iter().any(|x| x.mgid == b));
                if ok {
                    kept |= 1 << scope;
                } else {
                    self.lints.push(Lint::new(
                        LintCode::BadIpGroup,
                        Some(line.pos),
                        format!(
                            "IP multicast group {} needs the partition's IPoIB broadcast group {} \
                             (add ipoib to the partition): OpenSM does not create it",
                            std::net::Ipv6Addr::from(g),
                            std::net::Ipv6Addr::from(b)
                        ),
                    ));
                }
            }
            if kept == 0 {
                return;
            }
            flags.scope_mask = kept;
        }
        self.add_group(idx, mgid, flags, false);
    }

    fn add_group(&mut self, idx: usize, mgid: [u8; 16], flags: Flags, broadcast: bool) {
        let pkey = PKey::new(self.policy.partitions[idx].pkey, Membership::Full);
        let mut mgid = mgid;
        if broadcast {
            mgid[4..6].copy_from_slice(&pkey.0.to_be_bytes());
        }
        for scope in scopes_of(flags.scope_mask) {
            let mut g = mgid;
            g[1] = (g[1] & 0xF0) | scope;
            let exists = self
                .policy
                .partitions
                .iter()
                .any(|p| p.groups.iter().any(|x| x.mgid == g));
            if exists {
                continue;
            }
            self.policy.partitions[idx].groups.push(McGroup {
                mgid: g,
                pkey,
                mtu: flags.mtu,
                rate: flags.rate,
                sl: flags.sl,
                scope,
                q_key: flags.q_key,
                tclass: flags.tclass,
                flow_label: flags.flow_label,
                broadcast,
            });
        }
    }
}

/// The scopes a scope mask names; no scope given means link-local (2).
fn scopes_of(mask: u16) -> Vec<u8> {
    if mask == 0 {
        vec![2]
    } else {
        (1..16u8).filter(|s| mask & (1 << s) != 0).collect()
    }
}
