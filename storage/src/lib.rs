//! Durable storage of a Quorum SM replica: the Raft log and the applied state machine.
//!
//! [`SledStorage`] implements raft-rs's [`raft::Storage`] (what `RawNode` reads) and
//! [`RaftLog`] (what the RaftActor writes, in raft-rs's Ready order) on a sled database,
//! together with the applied state machine as opaque bytes ([`RaftLog::save_applied`]).
//! [`MemRaftLog`] puts raft-rs's `MemStorage` behind the same trait, and [`conformance`]
//! holds the checks both must pass.
//!
//! Guarantees: each write method is atomic on disk (one sled batch or transaction); what was
//! written before [`RaftLog::flush`] returned survives the death of the process and a power
//! loss (sled's flush, then `fsync` of its files and directories, then the durable mark).
//! Every stored record carries a checksum; [`SledStorage::open`] verifies the whole store
//! and compares it with the mark of its last flush, so a store that holds less than it
//! acknowledged (sled silently cuts its log at a damaged record; a truncated file; a wiped
//! directory) is refused with an [`Error`] for which [`Error::is_damaged`] holds, never
//! opened as a shorter log. See the crate's README for the format and the error codes.
//!
//! This crate must never: interpret the applied state's bytes, run a Raft node, spawn threads
//! of its own (sled runs its own flusher thread), or panic on what it reads from disk
//! (corruption is an [`Error`]).

//! # The Ready loop
//!
//! In raft-rs's order; `flush` comes before anything that acknowledges persisted state:
//!
//! ```no_run
//! use raft::{RawNode, eraftpb::{Entry, Message}};
//! use storage::{RaftLog, SledStorage};
//!
//! fn on_ready(
//!     raw: &mut RawNode<SledStorage>,
//!     store: &SledStorage,
//!     send: &mut impl FnMut(Vec<Message>),
//!     apply: &mut impl FnMut(Vec<Entry>),
//! ) -> storage::Result<()> {
//!     if !raw.has_ready() {
//!         return Ok(());
//!     }
//!     let mut rd = raw.ready();
//!     send(rd.take_messages());
//!     if !rd.snapshot().is_empty() {
//!         store.apply_snapshot(rd.snapshot().clone())?; // also sets the applied state
//!     }
//!     apply(rd.take_committed_entries()); // then store.save_applied(..)
//!     store.append(rd.entries())?;
//!     if let Some(hs) = rd.hs() {
//!         store.set_hardstate(hs.clone())?;
//!     }
//!     store.flush()?;
//!     send(rd.take_persisted_messages());
//!     let mut light = raw.advance(rd);
//!     if let Some(commit) = light.commit_index() {
//!         let mut hs = raft::Storage::initial_state(store)?.hard_state;
//!         hs.commit = commit;
//!         store.set_hardstate(hs)?;
//!     }
//!     send(light.take_messages());
//!     apply(light.take_committed_entries());
//!     raw.advance_apply();
//!     Ok(())
//! }
//! ```
//!
//! Recovery: open the storage, take [`RaftLog::recovery_state`] as the state machine, set
//! raft-rs's `Config::applied` to its index, and raft replays the committed entries after it.

pub mod codec;
pub mod conformance;
pub mod error;
pub mod log;
pub mod mem;
#[cfg(feature = "sled")]
pub mod sled_storage;
pub mod volatile;

pub use error::{Error, ErrorKind, Result};
pub use log::{AppliedState, RaftLog};
pub use mem::MemRaftLog;
#[cfg(feature = "sled")]
pub use sled_storage::{OpenOptions, SledStorage, SyncEvent, SyncHook};
pub use volatile::VolatileLog;
