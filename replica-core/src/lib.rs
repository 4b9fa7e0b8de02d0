//! The replica of a Quorum SM cluster as pure code: one [`ReplicaCore`] per replica, in the
//! style of raft-rs's `RawNode` and openraft's engine. Inputs are values (a tick with the
//! driver's time, a peer's Raft message, a proposal, a read, the master's milestones and
//! intents); outputs are values ([`Output`]: messages to send, start/stop the master or the
//! standby SM with its seed, answers, notices to log). The daemon's actor and the chaos
//! simulation drive this same code; only their IO differs.
//!
//! What it does: raft-rs's Ready in raft-rs's order with the log flushed before anything
//! acknowledges it (everything written is flushed before an input method returns), the
//! replicated state machine applied, snapshots and log compaction, restart from the saved
//! applied state, the write lease ([`lease`]), the master role as one [`Role`] (seeded from
//! the replicated state with a per-term M_Key, [`start`]), intent-first programming
//! (chunks and seal proposed, the seal's commit answered to the master that proposed it),
//! recording a heavy sweep's topology and LIDs, ReadIndex reads, membership changes,
//! leadership transfer by priority, and the graceful stop.
//!
//! What it must never do: IO of any kind (the log is a [`storage::RaftLog`] handed in; the
//! only IO is the driver's), read a clock (time is the `now` argument), spawn threads, use
//! randomness that is not seeded from [`CoreConfig::seed`], or depend on actix, tokio,
//! tonic or sled.

pub mod config;
mod core;
pub mod error;
pub mod lease;
pub mod output;
mod ready;
mod recover;
mod requests;
mod role;
pub mod seed;
pub mod start;
pub mod status;

pub use crate::core::ReplicaCore;
pub use config::CoreConfig;
pub use error::{CoreError, ProposeError};
pub use output::{Level, Notice, Output};
pub use role::Role;
pub use seed::{Seeds, SweepTables};
pub use sm_core::VTime;
pub use start::{MasterSeed, PolicyVersions};
pub use status::{CoreStatus, PeerRole, PeerView};

/// FNV-1a of an entry's type and data: what the simulation's checker compares across
/// replicas ([`Output::Applied`]).
pub fn entry_hash(kind: i32, data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ (kind as u64);
    for &b in data {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
    }
    h
}
