//! Durable storage of a Quorum SM replica: the Raft log and the applied state machine.
//!
//! [`SledStorage`] implements raft-rs's [`raft::Storage`] (what `RawNode` reads) and
//! [`RaftLog`] (what the RaftActor writes, in raft-rs's Ready order) on a sled database,
//! together with the applied state machine as opaque bytes ([`RaftLog::save_applied`]).
//! [`MemRaftLog`] puts raft-rs's `MemStorage` behind the same trait, and [`conformance`]
//! holds the checks both must pass.
//!
//! Guarantees: each write method is atomic on disk (one sled batch or transaction); what was
//! written before [`RaftLog::flush`] returned survives the death of the process. sled 0.34's
//! flush uses `sync_file_range`, not a full `fsync` of metadata: after a power loss or a
//! kernel crash recently flushed writes may be lost (sled issues 654 and 1452).
//!
//! This crate must never: interpret the applied state's bytes, run a Raft node, spawn threads
//! of its own (sled runs its own flusher thread), or panic on what it reads from disk
//! (corruption is an [`Error`]).

pub mod codec;
pub mod conformance;
pub mod error;
pub mod log;
pub mod mem;
pub mod sled_storage;

pub use error::{Error, Result};
pub use log::{AppliedState, RaftLog};
pub use mem::MemRaftLog;
pub use sled_storage::SledStorage;
