//! [`MemRaftLog`]: raft-rs's `MemStorage` behind our [`RaftLog`] trait, for tests and as
//! the reference the conformance suite compares [`crate::SledStorage`] with.
//!
//! Log operations (entries, term, first/last index, append, compact, apply_snapshot, hard
//! and conf state) are MemStorage's own. MemStorage panics where our trait returns errors
//! (append with a gap or over compacted entries, compact past the log); this wrapper checks
//! those preconditions first and returns the same errors as `SledStorage`. MemStorage has no
//! stored snapshot with data nor an applied state: the wrapper keeps both beside it, and its
//! `snapshot()` returns the stored one under the same rules as `SledStorage` (MemStorage's
//! own synthesizes an empty one at the commit index).

use std::sync::{Arc, RwLock};

use raft::eraftpb::{ConfState, Entry, HardState, Snapshot};
use raft::storage::MemStorage;
use raft::{GetEntriesContext, RaftState, Storage, StorageError};

use crate::error::{Error, Result};
use crate::log::{AppliedState, RaftLog};

#[derive(Default)]
struct Extra {
    snapshot: Snapshot,
    applied: Option<AppliedState>,
    recovering: bool,
}

/// A snapshot raft asked for and this log could not give (as `SledStorage` keeps it).
#[derive(Debug, Default)]
struct Wanted {
    /// Raft asked.
    asked: std::sync::atomic::AtomicBool,
    /// The index it must be at least.
    index: std::sync::atomic::AtomicU64,
}

/// raft-rs's `MemStorage` implementing [`RaftLog`]. Not durable: `flush` does nothing.
#[derive(Clone, Default)]
pub struct MemRaftLog {
    store: MemStorage,
    extra: Arc<RwLock<Extra>>,
    wanted: Arc<Wanted>,
}

impl MemRaftLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// A log initialized with `cs`, like `MemStorage::new_with_conf_state`.
    pub fn new_with_conf_state(cs: ConfState) -> Self {
        MemRaftLog {
            store: MemStorage::new_with_conf_state(cs),
            extra: Arc::default(),
            wanted: Arc::default(),
        }
    }

    /// The wrapped MemStorage.
    pub fn mem_storage(&self) -> &MemStorage {
        &self.store
    }

    fn extra_read(&self) -> Result<std::sync::RwLockReadGuard<'_, Extra>> {
        self.extra.read().map_err(|_| Error::Poisoned)
    }

    fn extra_write(&self) -> Result<std::sync::RwLockWriteGuard<'_, Extra>> {
        self.extra.write().map_err(|_| Error::Poisoned)
    }
}

impl Storage for MemRaftLog {
    fn initial_state(&self) -> raft::Result<RaftState> {
        self.store.initial_state()
    }

    fn entries(
        &self,
        low: u64,
        high: u64,
        max_size: impl Into<Option<u64>>,
        context: GetEntriesContext,
    ) -> raft::Result<Vec<Entry>> {
        self.store.entries(low, high, max_size, context)
    }

    fn term(&self, idx: u64) -> raft::Result<u64> {
        self.store.term(idx)
    }

    fn first_index(&self) -> raft::Result<u64> {
        self.store.first_index()
    }

    fn last_index(&self) -> raft::Result<u64> {
        self.store.last_index()
    }

    fn snapshot(&self, request_index: u64, _to: u64) -> raft::Result<Snapshot> {
        let extra = self.extra_read()?;
        let index = extra.snapshot.get_metadata().index;
        let current_conf = self.store.initial_state()?.conf_state;
        if index == 0
            || index < request_index
            || extra.snapshot.get_metadata().get_conf_state() != &current_conf
        {
            use std::sync::atomic::Ordering;
            self.wanted.index.fetch_max(request_index, Ordering::AcqRel);
            self.wanted.asked.store(true, Ordering::Release);
            return Err(raft::Error::Store(
                StorageError::SnapshotTemporarilyUnavailable,
            ));
        }
        Ok(extra.snapshot.clone())
    }
}

impl RaftLog for MemRaftLog {
    fn initialize(&self, cs: ConfState) -> Result<()> {
        let _writer = self.extra_write()?;
        let st = self.store.initial_state()?;
        if st.initialized()
            || st.hard_state != HardState::default()
            || self.store.last_index()? != 0
        {
            return Err(Error::AlreadyInitialized);
        }
        self.store.wl().set_conf_state(cs);
        Ok(())
    }

    fn take_snapshot_request(&self) -> Option<u64> {
        use std::sync::atomic::Ordering;
        self.wanted
            .asked
            .swap(false, Ordering::AcqRel)
            .then(|| self.wanted.index.swap(0, Ordering::AcqRel))
    }

    fn append(&self, ents: &[Entry]) -> Result<()> {
        let Some(first) = ents.first() else {
            return Ok(());
        };
        for w in ents.windows(2) {
            if w[1].index != w[0].index + 1 {
                return Err(Error::AppendNotConsecutive {
                    prev: w[0].index,
                    next: w[1].index,
                });
            }
        }
        // The extra lock serializes writers; bounds are read before taking MemStorage's lock.
        let _writer = self.extra_write()?;
        let (first_index, last_index) = (self.store.first_index()?, self.store.last_index()?);
        if first.index < first_index {
            return Err(Error::AppendCompacted {
                first: first.index,
                first_index,
            });
        }
        if first.index > last_index + 1 {
            return Err(Error::AppendGap {
                first: first.index,
                last: last_index,
            });
        }
        self.store.wl().append(ents)?;
        Ok(())
    }

    fn set_hardstate(&self, hs: HardState) -> Result<()> {
        let _writer = self.extra_write()?;
        self.store.wl().set_hardstate(hs);
        Ok(())
    }

    fn set_conf_state(&self, cs: ConfState) -> Result<()> {
        let _writer = self.extra_write()?;
        self.store.wl().set_conf_state(cs);
        Ok(())
    }

    fn apply_snapshot(&self, snapshot: Snapshot) -> Result<()> {
        let mut extra = self.extra_write()?;
        let index = snapshot.get_metadata().index;
        let first_index = self.store.first_index()?;
        match self.store.wl().apply_snapshot(snapshot.clone()) {
            Ok(()) => {}
            Err(raft::Error::Store(StorageError::SnapshotOutOfDate)) => {
                return Err(Error::SnapshotOutOfDate { index, first_index });
            }
            Err(e) => return Err(e.into()),
        }
        extra.applied = Some(AppliedState {
            index,
            data: snapshot.data.to_vec(),
        });
        extra.snapshot = snapshot;
        Ok(())
    }

    fn compact(&self, compact_index: u64) -> Result<()> {
        let _writer = self.extra_write()?;
        let last = self.store.last_index()?;
        if compact_index > last + 1 {
            return Err(Error::CompactBeyondLog {
                compact_index,
                last,
            });
        }
        self.store.wl().compact(compact_index)?;
        Ok(())
    }

    fn create_snapshot(
        &self,
        index: u64,
        conf_state: ConfState,
        data: Vec<u8>,
    ) -> Result<Snapshot> {
        let mut extra = self.extra_write()?;
        let (first_index, last_index) = (self.store.first_index()?, self.store.last_index()?);
        let term = match self.store.term(index) {
            Ok(t) if index != 0 && index <= last_index => t,
            _ => {
                return Err(Error::SnapshotIndexOutOfRange {
                    index,
                    first_index,
                    last_index,
                });
            }
        };
        let current = extra.snapshot.get_metadata().index;
        if index < current {
            return Err(Error::SnapshotRegression { index, current });
        }
        let mut snap = Snapshot::default();
        snap.mut_metadata().index = index;
        snap.mut_metadata().term = term;
        snap.mut_metadata().set_conf_state(conf_state);
        snap.data = data.into();
        extra.snapshot = snap.clone();
        Ok(snap)
    }

    fn save_applied(&self, index: u64, data: &[u8]) -> Result<()> {
        let mut extra = self.extra_write()?;
        if let Some(current) = extra.applied.as_ref().map(|a| a.index)
            && index < current
        {
            return Err(Error::AppliedRegression {
                current,
                new: index,
            });
        }
        extra.applied = Some(AppliedState {
            index,
            data: data.to_vec(),
        });
        Ok(())
    }

    fn load_applied(&self) -> Result<Option<AppliedState>> {
        Ok(self.extra_read()?.applied.clone())
    }

    fn load_snapshot(&self) -> Result<Option<Snapshot>> {
        let extra = self.extra_read()?;
        Ok((extra.snapshot.get_metadata().index != 0).then(|| extra.snapshot.clone()))
    }

    fn flush(&self) -> Result<()> {
        Ok(())
    }

    fn recovering(&self) -> Result<bool> {
        Ok(self.extra_read()?.recovering)
    }

    fn set_recovering(&self, on: bool) -> Result<()> {
        self.extra_write()?.recovering = on;
        Ok(())
    }
}
