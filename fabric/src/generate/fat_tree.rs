//! 2- and 3-level fat trees (folded Clos networks) of any even radix.

use super::{GenError, SwitchRole, attach_hosts, check_size, invalid, switch_guid};
use crate::topology::{NodeId, PortRef, Topology};
use crate::types::NodeType;

/// Parameters of a fat tree built from radix-k switches (h = hosts per leaf, P = pods).
///
/// * 2 levels: k leaves and k/2 spines. Leaf i: hosts on ports 1..=h, port k/2+1+j up to
///   spine j, which uses port i+1 for it. Full (h = k/2): k²/2 hosts, 3k/2 switches.
/// * 3 levels: P pods (default k) of k/2 leaves and k/2 aggregation switches, and (k/2)²
///   cores. Leaf l of pod p: hosts on ports 1..=h, port k/2+1+j up to aggregation switch j
///   of the pod (its port l+1). Aggregation switch j: port k/2+1+m up to core j·k/2+m (the
///   core's port p+1). Full: k³/4 hosts, k²+k²/4 switches (k = 36: 11,664 and 1,620).
///
/// Down ports are always the low half, up ports the high half, so a router can tell levels
/// from port numbers alone; descriptions are `leaf L`/`spine S` (2 levels) and
/// `leaf pP lL`/`agg pP aA`/`core C` (3 levels), indices from 0.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FatTreeSpec {
    /// 2 or 3.
    pub levels: u8,
    /// Switch radix k: even, 2..=254.
    pub radix: u16,
    /// Hosts per leaf switch, 0..=k/2 (default k/2).
    pub hosts_per_leaf: u16,
    /// Pods of a 3-level tree, 1..=k (default k). Must be k for 2 levels.
    pub pods: u16,
}

impl FatTreeSpec {
    /// A full fat tree: k/2 hosts per leaf and, for 3 levels, k pods.
    pub fn new(levels: u8, radix: u16) -> FatTreeSpec {
        FatTreeSpec {
            levels,
            radix,
            hosts_per_leaf: radix / 2,
            pods: radix,
        }
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), GenError> {
        if self.levels != 2 && self.levels != 3 {
            return Err(invalid(
                "levels",
                format!("a fat tree has 2 or 3 levels, not {}", self.levels),
            ));
        }
        if self.radix < 2 || self.radix > 254 || self.radix & 1 != 0 {
            return Err(invalid(
                "radix",
                format!(
                    "a fat-tree radix must be an even number from 2 to 254, not {}",
                    self.radix
                ),
            ));
        }
        let half = self.radix / 2;
        if self.hosts_per_leaf > half {
            return Err(invalid(
                "hosts per leaf",
                format!(
                    "at most radix/2 = {half} hosts fit on a leaf, not {}",
                    self.hosts_per_leaf
                ),
            ));
        }
        if self.levels == 2 && self.pods != self.radix {
            return Err(invalid("pods", "pods apply to 3-level fat trees only"));
        }
        if self.levels == 3 && (self.pods == 0 || self.pods > self.radix) {
            return Err(invalid(
                "pods",
                format!(
                    "a 3-level tree of radix {} has 1 to {} pods, not {}",
                    self.radix, self.radix, self.pods
                ),
            ));
        }
        Ok(())
    }

    /// Number of switches.
    pub fn num_switches(&self) -> u64 {
        let k = u64::from(self.radix);
        if self.levels == 2 {
            k + k / 2
        } else {
            u64::from(self.pods) * k + (k / 2) * (k / 2)
        }
    }

    /// Number of hosts.
    pub fn num_hosts(&self) -> u64 {
        let leaves = if self.levels == 2 {
            u64::from(self.radix)
        } else {
            u64::from(self.pods) * u64::from(self.radix / 2)
        };
        leaves * u64::from(self.hosts_per_leaf)
    }
}

/// Builds a fat tree (see [`FatTreeSpec`] for the wiring).
pub fn fat_tree(spec: &FatTreeSpec) -> Result<Topology, GenError> {
    spec.validate()?;
    check_size(spec.num_switches() + spec.num_hosts())?;
    if spec.levels == 2 {
        two_level(spec)
    } else {
        three_level(spec)
    }
}

fn two_level(spec: &FatTreeSpec) -> Result<Topology, GenError> {
    let k = spec.radix;
    let half = k / 2;
    let mut t = Topology::new();
    let mut leaves = Vec::with_capacity(usize::from(k));
    for i in 0..k {
        let guid = switch_guid(SwitchRole::Leaf, 0, u32::from(i));
        leaves.push(t.add_node(NodeType::Switch, k, guid, format!("leaf {i}"))?);
    }
    let mut spines = Vec::with_capacity(usize::from(half));
    for j in 0..half {
        let guid = switch_guid(SwitchRole::Spine, 0, u32::from(j));
        spines.push(t.add_node(NodeType::Switch, k, guid, format!("spine {j}"))?);
    }
    for (i, &leaf) in leaves.iter().enumerate() {
        for (j, &spine) in spines.iter().enumerate() {
            t.connect(
                PortRef::new(leaf, (half as usize + 1 + j) as u8),
                PortRef::new(spine, (i + 1) as u8),
            )?;
        }
    }
    let plan: Vec<(NodeId, u16)> = leaves.iter().map(|&l| (l, spec.hosts_per_leaf)).collect();
    attach_hosts(&mut t, &plan)?;
    Ok(t)
}

fn three_level(spec: &FatTreeSpec) -> Result<Topology, GenError> {
    let k = spec.radix;
    let half = k / 2;
    let mut t = Topology::new();
    let mut leaves = Vec::new();
    for p in 0..spec.pods {
        for l in 0..half {
            let guid = switch_guid(SwitchRole::Leaf, p, u32::from(l));
            leaves.push(t.add_node(NodeType::Switch, k, guid, format!("leaf p{p} l{l}"))?);
        }
    }
    let mut aggs = Vec::new();
    for p in 0..spec.pods {
        for a in 0..half {
            let guid = switch_guid(SwitchRole::Spine, p, u32::from(a));
            aggs.push(t.add_node(NodeType::Switch, k, guid, format!("agg p{p} a{a}"))?);
        }
    }
    let mut cores = Vec::new();
    for c in 0..u32::from(half) * u32::from(half) {
        let guid = switch_guid(SwitchRole::Core, 0, c);
        cores.push(t.add_node(NodeType::Switch, k, guid, format!("core {c}"))?);
    }
    let half_us = usize::from(half);
    for p in 0..usize::from(spec.pods) {
        for l in 0..half_us {
            let leaf = leaves[p * half_us + l];
            for j in 0..half_us {
                t.connect(
                    PortRef::new(leaf, (half_us + 1 + j) as u8),
                    PortRef::new(aggs[p * half_us + j], (l + 1) as u8),
                )?;
            }
        }
        for j in 0..half_us {
            let agg = aggs[p * half_us + j];
            for m in 0..half_us {
                t.connect(
                    PortRef::new(agg, (half_us + 1 + m) as u8),
                    PortRef::new(cores[j * half_us + m], (p + 1) as u8),
                )?;
            }
        }
    }
    let plan: Vec<(NodeId, u16)> = leaves.iter().map(|&l| (l, spec.hosts_per_leaf)).collect();
    attach_hosts(&mut t, &plan)?;
    Ok(t)
}
