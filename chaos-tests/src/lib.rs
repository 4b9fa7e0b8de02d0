//! `chaos-tests` — fault injection against a Quorum SM cluster, at two levels.
//!
//! * [`sim`]: a deterministic simulation of the whole cluster in one thread on virtual
//!   time. Three replicas, each a raft-rs `RawNode` on an in-memory storage (its "disk",
//!   kept across crashes) applying committed commands to a `replica::ReplicatedState`; the
//!   leader runs an sm-core `Sweeper` attached to an in-process `fabric_sim::SimFabric` at
//!   its own port, seeded and fenced by the same rules as `sm-node` (seeds from
//!   `sm_node::cluster::seed`, the write lease of `sm_node::cluster::lease`, intent-first
//!   programming). A simulated network drops, delays, duplicates, reorders and partitions
//!   Raft messages; replicas crash, restart and pause; links flap, switches reboot, MADs
//!   are lost. A schedule comes from a seed; invariants are checked after every step; a
//!   failing schedule is shrunk and printed with its seed.
//! * [`process`]: fabric-simd plus three `sm-node` processes on loopback, a TCP proxy on
//!   every peer link (pass, drop, delay, black-hole), kill -9, restart, SIGSTOP/SIGCONT,
//!   link flaps, switch reboots and MAD loss through the fabric handle, with the same
//!   invariants checked continuously and a failover-time distribution.
//!
//! The simulation must never read a clock, do IO, spawn a thread or use unseeded
//! randomness (everything draws from `fabric::rng::SplitMix64`). The process level owns
//! processes: it must stop every child it starts, by PID, on every path.

pub mod delivery;
pub mod error;
pub mod process;
pub mod sim;

pub use error::ChaosError;
