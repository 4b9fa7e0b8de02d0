//! The planner: policy + topology -> every P_KeyTable to write, switch enforcement, and the
//! multicast groups, laid out the way OpenSM lays out a fresh fabric (osm_pkey_mgr.c) so the
//! tables can be compared block by block with OpenSM's.

use crate::lints::{Lint, LintCode};
use crate::policy::{EndPort, Held, McGroup, PartEnforce, Policy, PortMembership};
use fabric::{Guid, Membership, NodeType, PKey, Topology};
use serde::Serialize;
use std::collections::BTreeMap;

/// Entries per P_KeyTable block.
pub const BLOCK_LEN: usize = 32;

/// Table capacities: NodeInfo.PartitionCap per node and SwitchInfo.PartitionEnforcementCap
/// per switch. Defaults apply where a node has no entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Caps {
    /// PartitionCap of CAs and routers (default 128, a common HCA value).
    pub ca_partition_cap: u16,
    /// PartitionCap of switches, i.e. of switch port 0 (default 128).
    pub switch_partition_cap: u16,
    /// PartitionEnforcementCap of switches (default 64; 0 = no enforcement).
    pub enforcement_cap: u16,
    /// Per node GUID overrides of PartitionCap.
    pub partition_cap: BTreeMap<Guid, u16>,
    /// Per switch node GUID overrides of PartitionEnforcementCap.
    pub switch_enforcement_cap: BTreeMap<Guid, u16>,
}

impl Default for Caps {
    fn default() -> Caps {
        Caps {
            ca_partition_cap: 128,
            switch_partition_cap: 128,
            enforcement_cap: 64,
            partition_cap: BTreeMap::new(),
            switch_enforcement_cap: BTreeMap::new(),
        }
    }
}

impl Caps {
    /// What ibsim reports: PartitionCap 64 on CAs, 8 on switches, enforcement cap 64.
    pub fn ibsim() -> Caps {
        Caps {
            ca_partition_cap: 64,
            switch_partition_cap: 8,
            enforcement_cap: 64,
            ..Caps::default()
        }
    }

    fn partition_cap_of(&self, node: Guid, t: NodeType) -> u16 {
        self.partition_cap.get(&node).copied().unwrap_or(match t {
            NodeType::Switch => self.switch_partition_cap,
            _ => self.ca_partition_cap,
        })
    }

    fn enforcement_cap_of(&self, switch: Guid) -> u16 {
        self.switch_enforcement_cap
            .get(&switch)
            .copied()
            .unwrap_or(self.enforcement_cap)
    }
}

/// One 32-entry block of a P_KeyTable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PKeyBlock {
    /// Block number (the SMP attribute modifier's low 16 bits).
    pub index: u16,
    /// The 32 entries.
    #[serde(serialize_with = "crate::hexser::pkey_block")]
    pub keys: [PKey; BLOCK_LEN],
}

/// A whole P_KeyTable: `ceil(cap / 32)` blocks, entries beyond `cap` are zero.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PKeyTable {
    /// Number of usable entries.
    pub cap: u16,
    /// The blocks, in order.
    pub blocks: Vec<PKeyBlock>,
}

impl PKeyTable {
    /// An all-zero table of `cap` entries.
    pub fn empty(cap: u16) -> PKeyTable {
        let n = (cap as usize).div_ceil(BLOCK_LEN);
        PKeyTable {
            cap,
            blocks: (0..n)
                .map(|i| PKeyBlock {
                    index: i as u16,
                    keys: [PKey(0); BLOCK_LEN],
                })
                .collect(),
        }
    }

    /// Builds a table from entries in index order (at most `cap` are kept).
    pub fn from_entries(cap: u16, entries: &[PKey]) -> PKeyTable {
        let mut t = PKeyTable::empty(cap);
        for (i, k) in entries.iter().take(cap as usize).enumerate() {
            t.set(i, *k);
        }
        t
    }

    /// The entry at an index (zero beyond the table).
    pub fn get(&self, i: usize) -> PKey {
        self.blocks
            .get(i / BLOCK_LEN)
            .map(|b| b.keys[i % BLOCK_LEN])
            .unwrap_or(PKey(0))
    }

    fn set(&mut self, i: usize, k: PKey) {
        if let Some(b) = self.blocks.get_mut(i / BLOCK_LEN) {
            b.keys[i % BLOCK_LEN] = k;
        }
    }

    /// All entries in index order, including empty ones, up to `cap`.
    pub fn entries(&self) -> Vec<PKey> {
        (0..self.cap as usize).map(|i| self.get(i)).collect()
    }

    /// The valid (non-empty) keys with their indices.
    pub fn valid(&self) -> Vec<(usize, PKey)> {
        self.entries()
            .into_iter()
            .enumerate()
            .filter(|(_, k)| !k.is_invalid())
            .collect()
    }

    /// The blocks of `self` that differ from `current` (what an SM must write).
    pub fn changed_blocks(&self, current: &PKeyTable) -> Vec<PKeyBlock> {
        self.blocks
            .iter()
            .filter(|b| current.blocks.get(b.index as usize) != Some(*b))
            .copied()
            .collect()
    }
}

/// The plan for one end port.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PortPlan {
    /// The port.
    pub port: EndPort,
    /// Its table.
    pub table: PKeyTable,
    /// Keys that did not fit (PartitionCap too small).
    #[serde(serialize_with = "crate::hexser::pkeys")]
    pub dropped: Vec<PKey>,
}

/// The plan for a switch external port facing an end port.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SwitchPortPlan {
    /// Switch node GUID.
    #[serde(serialize_with = "crate::hexser::guid")]
    pub switch_guid: Guid,
    /// Port number on the switch.
    pub port: u8,
    /// The end port it faces.
    pub peer: EndPort,
    /// The table to write; None under part_enforce off (OpenSM writes none then).
    pub table: Option<PKeyTable>,
    /// PortInfo.PartitionEnforcementInbound.
    pub enforce_in: bool,
    /// PortInfo.PartitionEnforcementOutbound.
    pub enforce_out: bool,
    /// True when the peer's keys did not fit the enforcement cap (enforcement cleared).
    pub overflow: bool,
}

/// A partition as planned on this topology.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PlannedPartition {
    /// Name.
    pub name: String,
    /// Partition number.
    #[serde(serialize_with = "crate::hexser::part")]
    pub pkey: u16,
    /// Port GUIDs holding the full key.
    #[serde(serialize_with = "crate::hexser::guids")]
    pub full: Vec<Guid>,
    /// Port GUIDs holding the limited key.
    #[serde(serialize_with = "crate::hexser::guids")]
    pub limited: Vec<Guid>,
    /// Multicast groups (only when the partition has members).
    pub groups: Vec<McGroup>,
}

/// Everything the SM programs for partitions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// part_enforce in force.
    pub part_enforce: PartEnforce,
    /// Partitions with at least one member port, in OpenSM order.
    pub partitions: Vec<PlannedPartition>,
    /// Every end port, sorted by (node GUID, port).
    pub ports: Vec<PortPlan>,
    /// Switch ports facing end ports, sorted by (switch GUID, port).
    pub switch_ports: Vec<SwitchPortPlan>,
    /// Switch-to-switch ports: enforcement must be clear (OpenSM never writes their tables).
    #[serde(serialize_with = "crate::hexser::guid_ports")]
    pub inter_switch_ports: Vec<(Guid, u8)>,
    /// Overflow problems found while planning.
    pub lints: Vec<Lint>,
}

/// End ports of a topology as OpenSM discovers them: every switch's port 0 and every cabled
/// CA or router port. Sorted by (node GUID, port).
pub fn end_ports(topo: &Topology) -> Vec<EndPort> {
    let mut out = Vec::new();
    for (_, node) in topo.nodes() {
        if node.is_switch() {
            out.push(EndPort {
                node_guid: node.node_guid,
                port_guid: node.ports[0].guid,
                port: 0,
                node_type: node.node_type,
            });
            continue;
        }
        for pn in node.port_numbers() {
            let p = &node.ports[pn.0 as usize];
            if p.remote.is_some() {
                out.push(EndPort {
                    node_guid: node.node_guid,
                    port_guid: p.guid,
                    port: pn.0,
                    node_type: node.node_type,
                });
            }
        }
    }
    out.sort();
    out
}

/// Lays out one port's table as OpenSM does on a fresh fabric: index 0 holds the `indx0` key
/// or else the default key (0x7fff/0xffff; with allow_both_pkeys only 0xffff); the other keys
/// follow from index 1 in OpenSM's partition order (byte-swapped PKey), limited before full.
/// Keys beyond the capacity are dropped.
pub fn layout(policy: &Policy, m: &PortMembership, cap: u16) -> (PKeyTable, Vec<PKey>) {
    layout_in_order(policy, &policy.opensm_order(), m, cap)
}

fn layout_in_order(
    policy: &Policy,
    order: &[usize],
    m: &PortMembership,
    cap: u16,
) -> (PKeyTable, Vec<PKey>) {
    let both = policy.options.allow_both_pkeys;
    let mut pending = Vec::new();
    for &i in order {
        let Held { full, limited } = m.held[i];
        let base = policy.partitions[i].pkey;
        if limited {
            pending.push(PKey::new(base, Membership::Limited));
        }
        if full {
            pending.push(PKey::new(base, Membership::Full));
        }
    }
    let is_default = |k: PKey| {
        if both {
            k == PKey::DEFAULT_FULL
        } else {
            k.partition() == 0x7FFF
        }
    };
    let is_indx0 = |k: PKey| match m.indx0 {
        Some(x) if both => k == x,
        Some(x) => k.partition() == x.partition(),
        None => false,
    };
    let mut table = PKeyTable::empty(cap);
    let mut dropped = Vec::new();
    let mut last: Option<usize> = None;
    for k in pending {
        let mut idx = if (m.indx0.is_none() && is_default(k)) || is_indx0(k) {
            0
        } else {
            last.map(|l| l + 1).unwrap_or(1)
        };
        if idx >= cap as usize {
            let free = if is_default(k) {
                None
            } else {
                (1..cap as usize).find(|&i| table.get(i).is_invalid())
            };
            match free {
                Some(f) => idx = f,
                None => {
                    dropped.push(k);
                    continue;
                }
            }
        }
        table.set(idx, k);
        last = Some(last.map_or(idx, |l| l.max(idx)));
    }
    (table, dropped)
}

/// The table OpenSM writes on the switch port facing an end port: the end port's keys in
/// index order, packed from index 0, a limited key left out when the full key of the same
/// partition is there. Returns the entries (not truncated).
pub fn peer_entries(table: &PKeyTable) -> Vec<PKey> {
    let valid = table.valid();
    valid
        .iter()
        .filter(|(_, k)| {
            k.is_full()
                || !valid
                    .iter()
                    .any(|(_, f)| f.is_full() && f.partition() == k.partition())
        })
        .map(|(_, k)| *k)
        .collect()
}

/// Plans every table and group for a topology.
pub fn plan(policy: &Policy, topo: &Topology, caps: &Caps) -> Plan {
    let ports = end_ports(topo);
    let members = policy.resolve(&ports);
    let mut lints = Vec::new();
    let mut port_plans = Vec::new();
    let order = policy.opensm_order();
    for m in &members {
        let cap = caps.partition_cap_of(m.port.node_guid, m.port.node_type);
        let (table, dropped) = layout_in_order(policy, &order, m, cap);
        if !dropped.is_empty() {
            lints.push(Lint::new(
                LintCode::TableOverflow,
                None,
                format!(
                    "port {} (node {} port {}) has PartitionCap {cap}: keys {} do not fit and are dropped",
                    m.port.port_guid,
                    m.port.node_guid,
                    m.port.port,
                    list_keys(&dropped)
                ),
            ));
        }
        port_plans.push(PortPlan {
            port: m.port,
            table,
            dropped,
        });
    }
    let (enf_in, enf_out) = policy.options.part_enforce.bits();
    let mut switch_ports = Vec::new();
    let mut inter_switch_ports = Vec::new();
    for (_, node) in topo.nodes() {
        if !node.is_switch() {
            continue;
        }
        for pn in node.port_numbers() {
            if let Some(r) = node.ports[pn.0 as usize].remote
                && topo.node(r.node).is_switch()
            {
                inter_switch_ports.push((node.node_guid, pn.0));
            }
        }
    }
    for pp in &port_plans {
        if pp.port.node_type == NodeType::Switch {
            continue;
        }
        let Some(id) = topo.node_by_guid(pp.port.node_guid) else {
            continue;
        };
        let Some(remote) = topo.remote(fabric::PortRef::new(id, pp.port.port)) else {
            continue;
        };
        let sw = topo.node(remote.node);
        if !sw.is_switch() {
            continue;
        }
        let ecap = caps.enforcement_cap_of(sw.node_guid);
        if ecap == 0 {
            continue;
        }
        let mut sp = SwitchPortPlan {
            switch_guid: sw.node_guid,
            port: remote.port.0,
            peer: pp.port,
            table: None,
            enforce_in: false,
            enforce_out: false,
            overflow: false,
        };
        if policy.options.part_enforce != PartEnforce::Off {
            let entries = peer_entries(&pp.table);
            sp.overflow = entries.len() > ecap as usize;
            sp.table = Some(PKeyTable::from_entries(ecap, &entries));
            if sp.overflow {
                lints.push(Lint::new(
                    LintCode::EnforcementOverflow,
                    None,
                    format!(
                        "switch {} port {} (facing {}) has PartitionEnforcementCap {ecap} but needs {} keys: \
                         OpenSM silently clears enforcement there",
                        sw.node_guid,
                        remote.port.0,
                        pp.port.port_guid,
                        entries.len()
                    ),
                ));
            } else {
                sp.enforce_in = enf_in;
                sp.enforce_out = enf_out;
            }
        }
        switch_ports.push(sp);
    }
    switch_ports.sort_by_key(|s| (s.switch_guid, s.port));
    inter_switch_ports.sort();
    let mut partitions = Vec::new();
    let written: Vec<std::collections::BTreeSet<PKey>> = port_plans
        .iter()
        .map(|pp| pp.table.valid().into_iter().map(|(_, k)| k).collect())
        .collect();
    for &i in &order {
        let p = &policy.partitions[i];
        let mut full = Vec::new();
        let mut limited = Vec::new();
        for ((m, keys), pp) in members.iter().zip(&written).zip(&port_plans) {
            if m.held[i].full && keys.contains(&PKey::new(p.pkey, Membership::Full)) {
                full.push(pp.port.port_guid);
            }
            if m.held[i].limited && keys.contains(&PKey::new(p.pkey, Membership::Limited)) {
                limited.push(pp.port.port_guid);
            }
        }
        let any_member = members.iter().any(|m| m.held[i].full || m.held[i].limited);
        if !any_member {
            continue;
        }
        partitions.push(PlannedPartition {
            name: p.name.clone(),
            pkey: p.pkey,
            full,
            limited,
            groups: p.groups.clone(),
        });
    }
    Plan {
        part_enforce: policy.options.part_enforce,
        partitions,
        ports: port_plans,
        switch_ports,
        inter_switch_ports,
        lints,
    }
}

/// Formats keys as `0x8001, 0x0002` (at most 8, then a count).
pub fn list_keys(keys: &[PKey]) -> String {
    let mut s = keys
        .iter()
        .take(8)
        .map(|k| k.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    if keys.len() > 8 {
        s.push_str(&format!(" ... ({} more)", keys.len() - 8));
    }
    s
}
