//! The crate's error type.

use crate::deliver::DropReason;
use fabric::{Guid, Lid, NodeId};
use thiserror::Error;

/// Everything the simulator refuses to do.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SimError {
    /// No port in the fabric has this GUID.
    #[error("SIM-E001 no port with GUID {0}")]
    NoSuchPort(Guid),
    /// The port exists but is a switch port; SMs attach at CA (or router) ports.
    #[error("SIM-E002 port {0} is a switch port; attach at a CA port")]
    NotAnEndPort(Guid),
    /// An SM is already attached at this port.
    #[error("SIM-E003 an SM is already attached at port {0}")]
    AlreadyAttached(Guid),
    /// The attach id is unknown or was detached.
    #[error("SIM-E004 unknown attach id {0}")]
    NoSuchAttach(u32),
    /// A LID-routed SMP was given to `send`, which has no destination LID for it.
    #[error("SIM-E005 a LID-routed SMP needs a destination LID: use send_lid")]
    NeedsDestination,
    /// The node id is not in this fabric.
    #[error("SIM-E006 no node {0:?}")]
    NoSuchNode(NodeId),
    /// The node has no such port.
    #[error("SIM-E007 node {node:?} has no port {port}")]
    BadPort {
        /// Node.
        node: NodeId,
        /// Port number.
        port: u8,
    },
    /// The node is not a switch.
    #[error("SIM-E008 node {0:?} is not a switch")]
    NotASwitch(NodeId),
    /// No node matches this name (node description or GUID).
    #[error("SIM-E009 no node or port named {0:?}")]
    NoSuchName(String),
    /// A probability outside 0..=1.
    #[error("SIM-E010 probability {0} is not within 0..=1")]
    BadProbability(String),
    /// A 256-byte MAD that is not an SMP.
    #[error("SIM-E011 not an SMP: {0}")]
    BadSmp(String),
    /// A LID that is not unicast where one is needed.
    #[error("SIM-E012 LID {0} is not a unicast LID")]
    BadLid(Lid),
    /// The topology is too large for the simulator's indexes.
    #[error("SIM-E013 topology too large: {0}")]
    TooLarge(String),
    /// No end port (CA port or switch port 0) owns this LID.
    #[error("SIM-E014 no end port has LID {0}")]
    NoSuchLid(Lid),
    /// A service level outside 0..=15.
    #[error("SIM-E015 SL {0} is not within 0..=15")]
    BadSl(u8),
    /// The packet would be dropped on the way (see [`DropReason`]).
    #[error("SIM-E016 the packet is dropped: {0:?}")]
    Dropped(DropReason),
    /// A performance counter the simulated ports do not keep (see the `perf` module).
    #[error("SIM-E017 counter {0} is not modelled")]
    NotModelled(&'static str),
    /// A port cannot be made virtualization-capable as asked.
    #[error("SIM-E018 port {0} cannot host these vports: {1}")]
    Virtualization(Guid, String),
    /// No vport has this GUID.
    #[error("SIM-E019 no vport with GUID {0}")]
    NoSuchVPort(Guid),
}
