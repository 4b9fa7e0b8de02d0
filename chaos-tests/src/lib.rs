//! `chaos-tests` — fault injection against a Quorum SM cluster, at two levels.
//!
//! * [`sim`]: a deterministic simulation of the whole cluster in one thread on virtual
//!   time. Three replicas, each the production replica core (`replica_core::ReplicaCore`,
//!   the code the daemon's RaftActor drives) on a `storage::VolatileLog` (its "disk": kept
//!   across crashes, losing what was not flushed); the sweepers it asks for — the master
//!   and the standby SM, sm-core `Sweeper`s — attached to an in-process
//!   `fabric_sim::SimFabric` at its own port. The simulation only drives: it delivers
//!   messages and ticks and carries out the core's outputs; it restates no Raft, lease,
//!   seeding or intent rule. A simulated network drops, delays, duplicates, reorders and
//!   partitions Raft messages; replicas crash, restart, pause, stop gracefully, transfer
//!   leadership, leave and rejoin the voters; clients propose policies, read linearizably
//!   and join multicast groups; links flap, switches reboot, MADs are lost. A schedule
//!   comes from a seed; invariants are checked after every step; a failing schedule is
//!   shrunk and printed with its seed.
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
pub mod lincheck;
pub mod process;
pub mod sim;

pub use error::ChaosError;
