//! The write side of a raft log, as the RaftActor drives it, and the applied state.

use raft::eraftpb::{ConfState, Entry, HardState, Snapshot};

use crate::error::Result;

/// The replica's applied state machine as this crate sees it: opaque bytes and the index
/// of the last entry they include.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AppliedState {
    /// Index of the last log entry applied to `data`.
    pub index: u64,
    /// The serialized state machine (the same format as snapshot data).
    pub data: Vec<u8>,
}

/// A raft log that can be written in raft-rs's Ready order, on top of [`raft::Storage`].
///
/// Every method takes `&self` (implementations use interior mutability, like raft-rs's
/// `MemStorage`), so the RaftActor can keep a handle next to the one inside `RawNode`.
///
/// Nothing written is guaranteed durable until [`RaftLog::flush`] returns. The order per
/// Ready is: `apply_snapshot`, `append`, `set_hardstate`, `flush`, then send the persisted
/// messages.
pub trait RaftLog: raft::Storage {
    /// Appends `entries` (consecutive indexes). Entries at or after `entries[0].index`
    /// already in the log are replaced (the conflicting suffix is truncated).
    ///
    /// Errors: [`crate::Error::AppendCompacted`] when `entries[0].index < first_index`,
    /// [`crate::Error::AppendGap`] when it is past `last_index + 1`,
    /// [`crate::Error::AppendNotConsecutive`] when the indexes are not consecutive.
    fn append(&self, entries: &[Entry]) -> Result<()>;

    /// Stores the hard state (term, vote, commit).
    fn set_hardstate(&self, hs: HardState) -> Result<()>;

    /// Stores the conf state (after a conf change is applied).
    fn set_conf_state(&self, cs: ConfState) -> Result<()>;

    /// Replaces the whole log with `snapshot` (a snapshot received from the leader):
    /// the log becomes empty with first index `snapshot.index + 1`, the hard state's commit
    /// becomes the snapshot index and its term at least the snapshot term, the conf state
    /// becomes the snapshot's, and the snapshot becomes the one `snapshot()` returns.
    ///
    /// Errors: [`crate::Error::SnapshotOutOfDate`] when `snapshot.index < first_index`.
    fn apply_snapshot(&self, snapshot: Snapshot) -> Result<()>;

    /// Discards the entries before `compact_index`. Compacting at or below `first_index`
    /// does nothing. The caller must not compact past what it has applied and snapshotted.
    ///
    /// Errors: [`crate::Error::CompactBeyondLog`] when `compact_index > last_index + 1`.
    fn compact(&self, compact_index: u64) -> Result<()>;

    /// Records a snapshot of the applied state at `index` (which must be in the log or be
    /// the current snapshot's index) with `conf_state` and `data`, and returns it.
    /// It becomes the snapshot that `raft::Storage::snapshot` hands to raft. The log is not
    /// compacted: call [`RaftLog::compact`] afterwards.
    fn create_snapshot(&self, index: u64, conf_state: ConfState, data: Vec<u8>)
    -> Result<Snapshot>;

    /// Stores the applied state machine: `index` and `data` together, atomically.
    ///
    /// Errors: [`crate::Error::AppliedRegression`] when `index` is below the stored one.
    fn save_applied(&self, index: u64, data: &[u8]) -> Result<()>;

    /// The stored applied state, if any was ever saved. `apply_snapshot` also sets it (to
    /// the snapshot's index and data), so recovery is: take this state, then replay the
    /// committed entries after its index.
    fn load_applied(&self) -> Result<Option<AppliedState>>;

    /// Makes everything written so far durable (see the implementation's caveats).
    fn flush(&self) -> Result<()>;
}
