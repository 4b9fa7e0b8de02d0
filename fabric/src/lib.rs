//! `fabric` — the value types every Quorum SM crate shares: GUIDs, LIDs, port numbers,
//! P_Keys, node types and port states; the [`Topology`] graph of a subnet; the
//! ibnetdiscover/ibsim topology file format ([`netfile`]); and seeded topology generators
//! ([`generate`], named by compact [`GenSpec`] strings such as `ft3:36` or `random:256:seed=7`).
//!
//! This crate is pure: it must never do IO beyond what its caller hands it as text,
//! never read a clock, never spawn a thread, and never use unseeded randomness.

pub mod generate;
pub mod netfile;
pub mod rng;
pub mod topology;
pub mod types;

pub use generate::{DegradedSpec, GenError, GenSpec};
pub use topology::{LinkSpeed, LinkWidth, Node, NodeId, Port, PortRef, Topology, TopologyError};
pub use types::{Guid, Lid, Membership, NodeType, PKey, PhysState, PortNum, PortState};
