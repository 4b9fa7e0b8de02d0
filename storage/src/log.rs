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
    /// Gives a new, empty log its first conf state (every replica of a new cluster starts
    /// with the same voters). Not durable before [`RaftLog::flush`].
    ///
    /// Errors: [`crate::Error::AlreadyInitialized`] when the log holds anything already.
    fn initialize(&self, cs: ConfState) -> Result<()>;

    /// When raft asked for a snapshot this log could not give (none stored, or older than
    /// the index raft requested): the index it must be at least, and the request is cleared.
    /// The replica then calls [`RaftLog::create_snapshot`]. Logs that never refuse: `None`.
    fn take_snapshot_request(&self) -> Option<u64> {
        None
    }

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

    /// The stored snapshot, if any, read without side effects (unlike
    /// `raft::Storage::snapshot`, which may record a request for a newer one).
    fn load_snapshot(&self) -> Result<Option<Snapshot>>;

    /// Makes everything written so far durable (see the implementation's caveats).
    fn flush(&self) -> Result<()>;

    /// True while the replica that owns this log is recovering a lost log: it must not vote
    /// or campaign until it has caught up with a leader (set when a replica of an existing
    /// cluster starts on an empty log; kept across restarts until cleared).
    fn recovering(&self) -> Result<bool>;

    /// Sets or clears [`RaftLog::recovering`]. Not durable before [`RaftLog::flush`].
    fn set_recovering(&self, on: bool) -> Result<()>;

    /// Where a restarting replica resumes: the newer of the saved applied state and the
    /// stored snapshot's data (same format), or `None` for a replica that never applied
    /// anything. The replica then replays the committed entries after its index (raft-rs
    /// does so when its `Config::applied` is set to that index).
    ///
    /// `save_applied` need not run after every entry: replay covers the rest, as long as
    /// the log is never compacted past the newer of the applied index and the snapshot.
    ///
    /// Errors: [`crate::Error::Unrecoverable`] when the log was compacted past that index
    /// (the entries needed to replay are gone).
    fn recovery_state(&self) -> Result<Option<AppliedState>> {
        let applied = self.load_applied()?;
        let snap = self.load_snapshot()?.map(|s| AppliedState {
            index: s.get_metadata().index,
            data: s.data.to_vec(),
        });
        let best = match (applied, snap) {
            (Some(a), Some(s)) => Some(if s.index > a.index { s } else { a }),
            (a, s) => a.or(s),
        };
        let first_index = self.first_index()?;
        let resume = best.as_ref().map_or(0, |b| b.index);
        if resume + 1 < first_index {
            return Err(crate::Error::Unrecoverable {
                index: resume,
                first_index,
            });
        }
        Ok(best)
    }
}
