//! Seeded topology generators: 2- and 3-level fat trees ([`fat_tree`]), n-dimensional tori
//! ([`torus`]) and random irregular switch graphs ([`random`]), and [`GenSpec`], the compact
//! name of a generated fabric (`ft2:36`, `ft3:48:hosts=8`, `torus:6x6x6`, `random:256:seed=7`).
//!
//! Every generator is deterministic: the same spec (and seed) gives the same [`Topology`],
//! node for node, on every machine.
//!
//! # Conventions shared by all generators
//!
//! * **Node order:** switches first (fat trees: leaves, then spines / aggregation switches,
//!   then cores; pods in order), then hosts. ibsim attaches clients to the first node of a
//!   file, i.e. a switch, unless `SIM_HOST` names a host id such as `H-1000000000000000`.
//! * **Hosts** are single-port CAs described `host N HCA-1` (N counts from 0 in node
//!   order), node GUID [`host_guid`]`(N)` = `0x1000_0000_0000_0000 | N << 4`, port GUID
//!   node GUID + 1.
//! * **Switches** have node GUID [`switch_guid`]`(role, group, index)` =
//!   `0x2000_0000_0000_0000 | role << 48 | group << 32 | index`, where role is a
//!   [`SwitchRole`] (1 leaf, 2 spine/aggregation, 3 core, 4 torus, 5 random), group the
//!   pod (3-level fat trees) or 0. So "leaf p3 l7" is `0x2001_0003_0000_0007`.
//! * **Ports:** hosts sit on a switch's lowest ports (1..=h), switch-to-switch links above
//!   them. Links are 4x SDR (the model's default).

mod degrade;
mod fat_tree;
mod random;
mod spec;
mod torus;

pub use degrade::{DegradedSpec, Removal, remove_switch_links};
pub use fat_tree::{FatTreeSpec, fat_tree};
pub use random::{RandomSpec, random};
pub use spec::GenSpec;
pub use torus::{TorusSpec, torus};

use crate::topology::{NodeId, PortRef, Topology, TopologyError};
use crate::types::{Guid, NodeType};
use thiserror::Error;

/// Largest fabric (in nodes) a generator will build.
pub const MAX_NODES: u64 = 4_000_000;

/// Errors of the generators and of [`GenSpec`] parsing.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum GenError {
    /// A parameter outside its valid range.
    #[error("invalid {param}: {reason}")]
    InvalidParameter {
        /// The parameter (e.g. "radix").
        param: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The fabric would exceed [`MAX_NODES`] nodes.
    #[error("the fabric would have {0} nodes; the generators build at most {MAX_NODES}")]
    TooLarge(u64),
    /// A [`GenSpec`] string that does not parse.
    #[error("invalid topology spec {spec:?}: {reason}")]
    BadSpec {
        /// The spec text.
        spec: String,
        /// What is wrong.
        reason: String,
    },
    /// The graph refused a node or link (a generator bug).
    #[error("generator produced an invalid topology: {0}")]
    Topology(#[from] TopologyError),
}

pub(crate) fn invalid(param: &'static str, reason: impl Into<String>) -> GenError {
    GenError::InvalidParameter {
        param,
        reason: reason.into(),
    }
}

/// What a generated switch is; encoded in bits 48..63 of its GUID.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SwitchRole {
    /// Fat-tree leaf (edge) switch, level 1.
    Leaf = 1,
    /// Fat-tree level 2: spine of a 2-level tree, aggregation switch of a 3-level tree.
    Spine = 2,
    /// Fat-tree level 3: core switch.
    Core = 3,
    /// Torus switch.
    Torus = 4,
    /// Random-graph switch.
    Random = 5,
}

/// Base of generated host GUIDs.
pub const HOST_GUID_BASE: u64 = 0x1000_0000_0000_0000;
/// Base of generated switch GUIDs.
pub const SWITCH_GUID_BASE: u64 = 0x2000_0000_0000_0000;

/// Node GUID of generated host `n`: `0x1000_0000_0000_0000 | n << 4` (port 1 is +1).
pub fn host_guid(n: u32) -> Guid {
    Guid(HOST_GUID_BASE | u64::from(n) << 4)
}

/// Node GUID of a generated switch: `0x2000_0000_0000_0000 | role << 48 | group << 32 | index`.
pub fn switch_guid(role: SwitchRole, group: u16, index: u32) -> Guid {
    Guid(SWITCH_GUID_BASE | (role as u64) << 48 | u64::from(group) << 32 | u64::from(index))
}

/// The role encoded in a generated switch GUID, if it is one.
pub fn switch_role(guid: Guid) -> Option<SwitchRole> {
    if guid.0 & 0xF000_0000_0000_0000 != SWITCH_GUID_BASE {
        return None;
    }
    Some(match (guid.0 >> 48) & 0x0FFF {
        1 => SwitchRole::Leaf,
        2 => SwitchRole::Spine,
        3 => SwitchRole::Core,
        4 => SwitchRole::Torus,
        5 => SwitchRole::Random,
        _ => return None,
    })
}

/// Adds `count` hosts, host `first + i` cabled to port `first_port + i` of `sw`.
fn add_hosts(
    t: &mut Topology,
    sw: NodeId,
    first_host: u32,
    count: u16,
    first_port: u8,
) -> Result<(), GenError> {
    for i in 0..count {
        let n = first_host + u32::from(i);
        let h = t.add_node(NodeType::Ca, 1, host_guid(n), format!("host {n} HCA-1"))?;
        t.connect(PortRef::new(sw, first_port + i as u8), PortRef::new(h, 1))?;
    }
    Ok(())
}

/// One planned host attachment: (switch, number of hosts); hosts are numbered in this order.
fn attach_hosts(t: &mut Topology, plan: &[(NodeId, u16)]) -> Result<(), GenError> {
    let mut next = 0u32;
    for &(sw, count) in plan {
        add_hosts(t, sw, next, count, 1)?;
        next += u32::from(count);
    }
    Ok(())
}

fn check_size(nodes: u64) -> Result<(), GenError> {
    if nodes > MAX_NODES {
        Err(GenError::TooLarge(nodes))
    } else {
        Ok(())
    }
}
