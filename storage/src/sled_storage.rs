//! [`SledStorage`]: raft-rs's `Storage` and our [`RaftLog`] on a sled database.
//!
//! Layout: tree `raft_entries` maps the 8-byte big-endian index to the protobuf `Entry`;
//! tree `raft_meta` holds the hard state, conf state, latest snapshot, the (index, term) of
//! the last discarded entry and the applied state (see [`crate::codec`]). Every write that
//! touches both trees is one sled transaction; every write to one tree is one sled batch, so
//! each operation is all-or-nothing on disk.
//!
//! Durability: nothing is durable before [`SledStorage::flush`] returns. sled 0.34's flush
//! writes its log with `pwrite` and calls `sync_file_range` on the written range, so flushed
//! data survives the death of the process, but it is not a full `fsync` of the file and its
//! metadata (sled's background flusher does `sync_all` every 500 ms): after a power loss or
//! kernel crash recently flushed data may be missing (sled issues 654 and 1452).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use raft::eraftpb::{ConfState, Entry, HardState, Snapshot, SnapshotMetadata};
use raft::util::NO_LIMIT;
use raft::{GetEntriesContext, RaftState, StorageError};
use sled::Transactional;
use sled::transaction::ConflictableTransactionResult;

use crate::codec::{
    ENTRIES_TREE, KEY_APPLIED, KEY_CONF_STATE, KEY_HARD_STATE, KEY_SNAPSHOT, KEY_TRUNCATED,
    META_TREE, decode, decode_applied, decode_index_term, encode, encode_applied,
    encode_index_term, index_key, key_index,
};
use crate::error::{Error, Result};
use crate::log::{AppliedState, RaftLog};

/// How long [`SledStorage::open`] waits for sled's file lock.
pub const LOCK_WAIT: Duration = Duration::from_secs(3);
/// Pause between two attempts to take sled's file lock.
const LOCK_RETRY: Duration = Duration::from_millis(5);

/// What is cached in memory; always equal to what is in sled (updated after sled accepts).
#[derive(Debug, Clone, Default)]
struct Cache {
    hard_state: HardState,
    conf_state: ConfState,
    snapshot: SnapshotMetadata,
    /// Index and term of the last discarded entry: first index is `truncated_index + 1`.
    truncated_index: u64,
    truncated_term: u64,
    last_index: u64,
    applied_index: Option<u64>,
}

impl Cache {
    fn first_index(&self) -> u64 {
        self.truncated_index + 1
    }
}

struct Inner {
    db: sled::Db,
    entries: sled::Tree,
    meta: sled::Tree,
    cache: RwLock<Cache>,
    /// raft asked for a snapshot we could not give (none, or older than it wanted).
    snapshot_wanted: AtomicBool,
    snapshot_wanted_index: AtomicU64,
}

/// A durable raft log in sled. Cheap to clone: clones share the same database.
#[derive(Clone)]
pub struct SledStorage {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for SledStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SledStorage").finish_non_exhaustive()
    }
}

impl SledStorage {
    /// Opens (or creates) the storage in the sled database at `path`, waiting up to
    /// [`LOCK_WAIT`] for sled's file lock (see [`SledStorage::open_with_lock_wait`]).
    pub fn open(path: impl AsRef<std::path::Path>) -> Result<Self> {
        Self::open_with_lock_wait(path, LOCK_WAIT)
    }

    /// Opens (or creates) the storage at `path`, retrying while sled's exclusive file lock
    /// is held, for at most `wait`.
    ///
    /// sled 0.34 takes the lock with `try_lock_exclusive` and releases it only when its
    /// last internal handle is dropped, which its background IO threads may do a moment
    /// after the `Db` itself is dropped: reopening in the same process right after a drop
    /// can fail spuriously with "could not acquire lock". A lock held by another live
    /// process stays held and ends in [`Error::Locked`].
    pub fn open_with_lock_wait(path: impl AsRef<std::path::Path>, wait: Duration) -> Result<Self> {
        let path = path.as_ref();
        let start = Instant::now();
        loop {
            match sled::Config::new().path(path).open() {
                Ok(db) => return Self::from_db(db),
                Err(sled::Error::Io(e)) if e.to_string().contains("could not acquire lock") => {
                    if start.elapsed() >= wait {
                        return Err(Error::Locked {
                            path: path.display().to_string(),
                            waited: start.elapsed(),
                        });
                    }
                    std::thread::sleep(LOCK_RETRY);
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// A storage in a temporary sled database, removed when the last handle is dropped
    /// (tests and in-memory demos).
    pub fn open_temporary() -> Result<Self> {
        let db = sled::Config::new().temporary(true).open()?;
        Self::from_db(db)
    }

    /// Uses an already open sled database (its other trees stay the caller's).
    pub fn from_db(db: sled::Db) -> Result<Self> {
        let entries = db.open_tree(ENTRIES_TREE)?;
        let meta = db.open_tree(META_TREE)?;
        let cache = load_cache(&entries, &meta)?;
        Ok(SledStorage {
            inner: Arc::new(Inner {
                db,
                entries,
                meta,
                cache: RwLock::new(cache),
                snapshot_wanted: AtomicBool::new(false),
                snapshot_wanted_index: AtomicU64::new(0),
            }),
        })
    }

    /// The underlying sled database.
    pub fn db(&self) -> &sled::Db {
        &self.inner.db
    }

    /// Gives a new, empty storage its first conf state (every replica of a new cluster is
    /// initialized with the same voters), like `MemStorage::initialize_with_conf_state`.
    /// Not durable before [`SledStorage::flush`].
    pub fn initialize_with_conf_state(&self, cs: ConfState) -> Result<()> {
        let mut cache = self.write()?;
        if cache.conf_state != ConfState::default()
            || cache.last_index != 0
            || cache.truncated_index != 0
            || cache.hard_state != HardState::default()
        {
            return Err(Error::AlreadyInitialized);
        }
        self.inner
            .meta
            .insert(KEY_CONF_STATE, encode("conf state", &cs)?)?;
        cache.conf_state = cs;
        Ok(())
    }

    /// When raft asked for a snapshot this storage could not give (none stored yet, or
    /// older than the index raft requested), returns the index it must be at least and
    /// clears the request. The RaftActor then calls [`RaftLog::create_snapshot`].
    pub fn take_snapshot_request(&self) -> Option<u64> {
        if self.inner.snapshot_wanted.swap(false, Ordering::AcqRel) {
            Some(self.inner.snapshot_wanted_index.swap(0, Ordering::AcqRel))
        } else {
            None
        }
    }

    /// Metadata of the stored snapshot (index 0: none yet).
    pub fn snapshot_metadata(&self) -> Result<SnapshotMetadata> {
        Ok(self.read()?.snapshot.clone())
    }

    /// Makes everything written so far durable against a process crash: sled 0.34's
    /// `flush` (write + `sync_file_range`). Not a full `fsync` of file metadata, so a
    /// power loss may lose recently flushed writes (sled issues 654, 1452).
    pub fn flush(&self) -> Result<()> {
        self.inner.db.flush()?;
        Ok(())
    }

    fn read(&self) -> Result<RwLockReadGuard<'_, Cache>> {
        self.inner.cache.read().map_err(|_| Error::Poisoned)
    }

    fn write(&self) -> Result<RwLockWriteGuard<'_, Cache>> {
        self.inner.cache.write().map_err(|_| Error::Poisoned)
    }

    fn read_entry(&self, index: u64) -> Result<Entry> {
        let bytes = self
            .inner
            .entries
            .get(index_key(index))?
            .ok_or(Error::LogHole {
                expected: index,
                found: 0,
            })?;
        let e: Entry = decode("entry", || format!("entries/{index}"), &bytes)?;
        if e.index != index {
            return Err(Error::LogHole {
                expected: index,
                found: e.index,
            });
        }
        Ok(e)
    }

    fn term_of(&self, cache: &Cache, idx: u64) -> Result<std::result::Result<u64, StorageError>> {
        if idx == cache.truncated_index {
            return Ok(Ok(cache.truncated_term));
        }
        if idx < cache.first_index() {
            return Ok(Err(StorageError::Compacted));
        }
        if idx > cache.last_index {
            return Ok(Err(StorageError::Unavailable));
        }
        Ok(Ok(self.read_entry(idx)?.term))
    }

    /// Runs one transaction over both trees applying the two batches.
    fn transact(&self, entries: &sled::Batch, meta: &sled::Batch) -> Result<()> {
        (&self.inner.entries, &self.inner.meta).transaction(
            |(te, tm)| -> ConflictableTransactionResult<(), Error> {
                te.apply_batch(entries)?;
                tm.apply_batch(meta)?;
                Ok(())
            },
        )?;
        Ok(())
    }
}

fn load_cache(entries: &sled::Tree, meta: &sled::Tree) -> Result<Cache> {
    let mut cache = Cache::default();
    if let Some(v) = meta.get(KEY_HARD_STATE)? {
        cache.hard_state = decode("hard state", || KEY_HARD_STATE.to_string(), &v)?;
    }
    if let Some(v) = meta.get(KEY_CONF_STATE)? {
        cache.conf_state = decode("conf state", || KEY_CONF_STATE.to_string(), &v)?;
    }
    if let Some(v) = meta.get(KEY_SNAPSHOT)? {
        let snap: Snapshot = decode("snapshot", || KEY_SNAPSHOT.to_string(), &v)?;
        cache.snapshot = snap.get_metadata().clone();
    }
    if let Some(v) = meta.get(KEY_TRUNCATED)? {
        (cache.truncated_index, cache.truncated_term) = decode_index_term(KEY_TRUNCATED, &v)?;
    }
    if let Some(v) = meta.get(KEY_APPLIED)? {
        cache.applied_index = Some(decode_applied(&v)?.0);
    }
    cache.last_index = cache.truncated_index;
    if let Some((first_key, _)) = entries.first()? {
        let first = key_index(&first_key)?;
        if first != cache.first_index() {
            return Err(Error::LogHole {
                expected: cache.first_index(),
                found: first,
            });
        }
        if let Some((last_key, _)) = entries.last()? {
            cache.last_index = key_index(&last_key)?;
        }
        let count = entries.len() as u64;
        if count != cache.last_index - first + 1 {
            return Err(Error::CorruptedMeta {
                key: KEY_TRUNCATED,
                reason: format!(
                    "entries tree holds {count} entries for the range [{first}, {}]",
                    cache.last_index
                ),
            });
        }
    }
    Ok(cache)
}

impl raft::Storage for SledStorage {
    fn initial_state(&self) -> raft::Result<RaftState> {
        let cache = self.read()?;
        Ok(RaftState::new(
            cache.hard_state.clone(),
            cache.conf_state.clone(),
        ))
    }

    fn entries(
        &self,
        low: u64,
        high: u64,
        max_size: impl Into<Option<u64>>,
        _context: GetEntriesContext,
    ) -> raft::Result<Vec<Entry>> {
        let max_size = max_size.into().unwrap_or(NO_LIMIT);
        let cache = self.read()?;
        if low < cache.first_index() {
            return Err(raft::Error::Store(StorageError::Compacted));
        }
        if high > cache.last_index + 1 {
            return Err(raft::Error::Store(StorageError::Unavailable));
        }
        if low > high {
            return Err(Error::InvalidRange {
                low,
                high,
                last: cache.last_index,
            }
            .into());
        }
        let mut out = Vec::with_capacity((high - low).min(1024) as usize);
        let mut size: u64 = 0;
        let mut expected = low;
        for kv in self.inner.entries.range(index_key(low)..index_key(high)) {
            let (k, v) = kv.map_err(Error::from)?;
            let index = key_index(&k)?;
            let e: Entry = decode("entry", || format!("entries/{index}"), &v)?;
            if index != expected || e.index != expected {
                return Err(Error::LogHole {
                    expected,
                    found: if index != expected { index } else { e.index },
                }
                .into());
            }
            // Same rule as raft::util::limit_size: the first entry always, then entries
            // while the running total stays within max_size.
            size += u64::from(protobuf::Message::compute_size(&e));
            if !out.is_empty() && max_size != NO_LIMIT && size > max_size {
                return Ok(out);
            }
            out.push(e);
            expected += 1;
        }
        if expected != high {
            return Err(Error::LogHole { expected, found: 0 }.into());
        }
        Ok(out)
    }

    fn term(&self, idx: u64) -> raft::Result<u64> {
        let cache = self.read()?;
        self.term_of(&cache, idx)?.map_err(raft::Error::Store)
    }

    fn first_index(&self) -> raft::Result<u64> {
        Ok(self.read()?.first_index())
    }

    fn last_index(&self) -> raft::Result<u64> {
        Ok(self.read()?.last_index)
    }

    /// The stored snapshot when its index is at least `request_index` and its conf state
    /// is the current one; otherwise `SnapshotTemporarilyUnavailable` (raft retries on a
    /// later heartbeat) and the request is recorded for
    /// [`SledStorage::take_snapshot_request`]. A snapshot from before the latest conf
    /// change would not list a newly added replica, which refuses such a snapshot.
    fn snapshot(&self, request_index: u64, _to: u64) -> raft::Result<Snapshot> {
        let cache = self.read()?;
        if cache.snapshot.index == 0
            || cache.snapshot.index < request_index
            || cache.snapshot.get_conf_state() != &cache.conf_state
        {
            self.inner
                .snapshot_wanted_index
                .fetch_max(request_index, Ordering::AcqRel);
            self.inner.snapshot_wanted.store(true, Ordering::Release);
            return Err(raft::Error::Store(
                StorageError::SnapshotTemporarilyUnavailable,
            ));
        }
        let bytes = self
            .inner
            .meta
            .get(KEY_SNAPSHOT)
            .map_err(Error::from)?
            .ok_or(Error::CorruptedMeta {
                key: KEY_SNAPSHOT,
                reason: "snapshot metadata cached but value missing".to_string(),
            })?;
        Ok(decode("snapshot", || KEY_SNAPSHOT.to_string(), &bytes)?)
    }
}

impl RaftLog for SledStorage {
    fn initialize(&self, cs: ConfState) -> Result<()> {
        self.initialize_with_conf_state(cs)
    }

    fn take_snapshot_request(&self) -> Option<u64> {
        SledStorage::take_snapshot_request(self)
    }

    fn append(&self, ents: &[Entry]) -> Result<()> {
        let (Some(first), Some(last)) = (ents.first(), ents.last()) else {
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
        let mut cache = self.write()?;
        if first.index < cache.first_index() {
            return Err(Error::AppendCompacted {
                first: first.index,
                first_index: cache.first_index(),
            });
        }
        if first.index > cache.last_index + 1 {
            return Err(Error::AppendGap {
                first: first.index,
                last: cache.last_index,
            });
        }
        let mut batch = sled::Batch::default();
        for e in ents {
            batch.insert(&index_key(e.index), encode("entry", e)?);
        }
        // Truncate the conflicting suffix that the new entries do not overwrite.
        for i in last.index + 1..=cache.last_index {
            batch.remove(&index_key(i));
        }
        self.inner.entries.apply_batch(batch)?;
        cache.last_index = last.index;
        Ok(())
    }

    fn set_hardstate(&self, hs: HardState) -> Result<()> {
        let mut cache = self.write()?;
        self.inner
            .meta
            .insert(KEY_HARD_STATE, encode("hard state", &hs)?)?;
        cache.hard_state = hs;
        Ok(())
    }

    fn set_conf_state(&self, cs: ConfState) -> Result<()> {
        let mut cache = self.write()?;
        self.inner
            .meta
            .insert(KEY_CONF_STATE, encode("conf state", &cs)?)?;
        cache.conf_state = cs;
        Ok(())
    }

    fn apply_snapshot(&self, snapshot: Snapshot) -> Result<()> {
        let mut cache = self.write()?;
        let meta = snapshot.get_metadata();
        let (index, term) = (meta.index, meta.term);
        if index < cache.first_index() {
            return Err(Error::SnapshotOutOfDate {
                index,
                first_index: cache.first_index(),
            });
        }
        let mut hs = cache.hard_state.clone();
        hs.term = hs.term.max(term);
        hs.commit = index;
        let cs = meta.get_conf_state().clone();

        let mut ebatch = sled::Batch::default();
        for i in cache.first_index()..=cache.last_index {
            ebatch.remove(&index_key(i));
        }
        let mut mbatch = sled::Batch::default();
        mbatch.insert(KEY_SNAPSHOT, encode("snapshot", &snapshot)?);
        mbatch.insert(KEY_HARD_STATE, encode("hard state", &hs)?);
        mbatch.insert(KEY_CONF_STATE, encode("conf state", &cs)?);
        mbatch.insert(KEY_TRUNCATED, &encode_index_term(index, term));
        mbatch.insert(KEY_APPLIED, encode_applied(index, &snapshot.data));
        self.transact(&ebatch, &mbatch)?;

        cache.snapshot = meta.clone();
        cache.hard_state = hs;
        cache.conf_state = cs;
        cache.truncated_index = index;
        cache.truncated_term = term;
        cache.last_index = index;
        cache.applied_index = Some(index);
        Ok(())
    }

    fn compact(&self, compact_index: u64) -> Result<()> {
        let mut cache = self.write()?;
        if compact_index <= cache.first_index() {
            return Ok(());
        }
        if compact_index > cache.last_index + 1 {
            return Err(Error::CompactBeyondLog {
                compact_index,
                last: cache.last_index,
            });
        }
        let new_truncated = compact_index - 1;
        let term = self.read_entry(new_truncated)?.term;
        let mut ebatch = sled::Batch::default();
        for i in cache.first_index()..compact_index {
            ebatch.remove(&index_key(i));
        }
        let mut mbatch = sled::Batch::default();
        mbatch.insert(KEY_TRUNCATED, &encode_index_term(new_truncated, term));
        self.transact(&ebatch, &mbatch)?;
        cache.truncated_index = new_truncated;
        cache.truncated_term = term;
        Ok(())
    }

    fn create_snapshot(
        &self,
        index: u64,
        conf_state: ConfState,
        data: Vec<u8>,
    ) -> Result<Snapshot> {
        let mut cache = self.write()?;
        if index == 0 || index < cache.truncated_index || index > cache.last_index {
            return Err(Error::SnapshotIndexOutOfRange {
                index,
                first_index: cache.first_index(),
                last_index: cache.last_index,
            });
        }
        if index < cache.snapshot.index {
            return Err(Error::SnapshotRegression {
                index,
                current: cache.snapshot.index,
            });
        }
        let term = match self.term_of(&cache, index)? {
            Ok(t) => t,
            // Unreachable given the range check above; reported rather than assumed.
            Err(_) => {
                return Err(Error::SnapshotIndexOutOfRange {
                    index,
                    first_index: cache.first_index(),
                    last_index: cache.last_index,
                });
            }
        };
        let mut snap = Snapshot::default();
        let meta = snap.mut_metadata();
        meta.index = index;
        meta.term = term;
        meta.set_conf_state(conf_state);
        snap.data = data.into();
        self.inner
            .meta
            .insert(KEY_SNAPSHOT, encode("snapshot", &snap)?)?;
        cache.snapshot = snap.get_metadata().clone();
        if self.inner.snapshot_wanted_index.load(Ordering::Acquire) <= index {
            self.inner.snapshot_wanted.store(false, Ordering::Release);
        }
        Ok(snap)
    }

    fn save_applied(&self, index: u64, data: &[u8]) -> Result<()> {
        let mut cache = self.write()?;
        if let Some(current) = cache.applied_index
            && index < current
        {
            return Err(Error::AppliedRegression {
                current,
                new: index,
            });
        }
        self.inner
            .meta
            .insert(KEY_APPLIED, encode_applied(index, data))?;
        cache.applied_index = Some(index);
        Ok(())
    }

    fn load_applied(&self) -> Result<Option<AppliedState>> {
        let _cache = self.read()?;
        match self.inner.meta.get(KEY_APPLIED)? {
            None => Ok(None),
            Some(v) => {
                let (index, data) = decode_applied(&v)?;
                Ok(Some(AppliedState { index, data }))
            }
        }
    }

    fn load_snapshot(&self) -> Result<Option<Snapshot>> {
        let _cache = self.read()?;
        match self.inner.meta.get(KEY_SNAPSHOT)? {
            None => Ok(None),
            Some(v) => Ok(Some(decode("snapshot", || KEY_SNAPSHOT.to_string(), &v)?)),
        }
    }

    fn flush(&self) -> Result<()> {
        SledStorage::flush(self)
    }

    fn recovering(&self) -> Result<bool> {
        Ok(self.inner.meta.get(crate::codec::KEY_RECOVERING)?.is_some())
    }

    fn set_recovering(&self, on: bool) -> Result<()> {
        if on {
            self.inner
                .meta
                .insert(crate::codec::KEY_RECOVERING, &[1u8][..])?;
        } else {
            self.inner.meta.remove(crate::codec::KEY_RECOVERING)?;
        }
        Ok(())
    }
}
