//! [`SledStorage`]: raft-rs's `Storage` and our [`RaftLog`] on a sled database.
//!
//! Layout: tree `raft_entries` maps the 8-byte big-endian index to the protobuf `Entry`;
//! tree `raft_meta` holds the format version, the write generation, the hard state, conf
//! state, latest snapshot, the (index, term) of the last discarded entry and the applied
//! state (see [`crate::codec`]). Every value carries a CRC32 of its key and bytes, checked
//! on every read. Every write that touches both trees is one sled transaction; every write
//! to one tree is one sled batch, so each operation is all-or-nothing on disk.
//!
//! Next to the sled directory `<dir>` lives its durable mark `<dir>.mark` ([`mark`]): the
//! write generation and a summary of the log as of the last flush. Opening verifies the
//! whole store ([`verify`]) and compares it with the mark, so a store that holds less than
//! it acknowledged (sled cuts its log at the first damaged record without an error, a
//! truncated file, a wiped directory) is refused with a typed error.
//!
//! Durability: nothing is durable before [`SledStorage::flush`] returns; flush is sled's
//! flush (`pwrite` + `sync_file_range`), then `fsync` of every file in the sled directory
//! and of the directory ([`durable`]), then the mark (`pwrite` + `fdatasync`).

mod durable;
mod mark;
mod verify;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use raft::eraftpb::{ConfState, Entry, HardState, Snapshot, SnapshotMetadata};
use raft::util::NO_LIMIT;
use raft::{GetEntriesContext, RaftState, StorageError};
use sled::Transactional;
use sled::transaction::ConflictableTransactionResult;

pub use durable::{DirState, SyncEvent, SyncHook};
pub use mark::{MARK_LEN, Mark, Summary, mark_path};

use crate::codec::{
    ENTRIES_TREE, FORMAT_VERSION, KEY_APPLIED, KEY_CONF_STATE, KEY_FORMAT, KEY_GENERATION,
    KEY_HARD_STATE, KEY_RECOVERING, KEY_SNAPSHOT, KEY_TRUNCATED, META_TREE, decode, decode_applied,
    encode, encode_applied, encode_index_term, entry_place, index_key, key_index, meta_place, seal,
    unseal,
};
use crate::error::{Error, Result};
use crate::log::{AppliedState, RaftLog};
use durable::DirSync;
use mark::MarkFile;
use verify::{Cache, Loaded};

/// How long [`SledStorage::open`] waits for sled's file lock.
pub const LOCK_WAIT: Duration = Duration::from_secs(3);
/// Pause between two attempts to take sled's file lock.
const LOCK_RETRY: Duration = Duration::from_millis(5);

/// The on-disk side of a store opened from a path: fsync of its directory and its mark.
struct Durable {
    sync: DirSync,
    mark: MarkFile,
}

struct Inner {
    db: sled::Db,
    entries: sled::Tree,
    meta: sled::Tree,
    cache: RwLock<Cache>,
    /// `None` for a temporary store (nothing to make durable).
    durable: Option<Durable>,
    /// Serializes flushes; the generation the last flush made durable.
    flush_lock: Mutex<()>,
    flushed: AtomicU64,
    /// This open created the store (the directory was absent or empty, and had no mark).
    created: bool,
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

/// How to open a [`SledStorage`]: [`SledStorage::open`] with the defaults, or these
/// options' [`OpenOptions::open`].
#[derive(Clone)]
pub struct OpenOptions {
    lock_wait: Duration,
    sync_hook: Option<SyncHook>,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            lock_wait: LOCK_WAIT,
            sync_hook: None,
        }
    }
}

impl std::fmt::Debug for OpenOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenOptions")
            .field("lock_wait", &self.lock_wait)
            .field("sync_hook", &self.sync_hook.is_some())
            .finish()
    }
}

impl OpenOptions {
    /// The defaults: wait [`LOCK_WAIT`] for sled's lock, no sync hook.
    pub fn new() -> Self {
        Self::default()
    }

    /// How long to retry while sled's exclusive file lock is held.
    pub fn lock_wait(mut self, wait: Duration) -> Self {
        self.lock_wait = wait;
        self
    }

    /// A function called after every `fsync` (power-loss tests).
    pub fn sync_hook(mut self, hook: SyncHook) -> Self {
        self.sync_hook = Some(hook);
        self
    }

    /// Opens the store in the sled directory `path`, or creates it when `path` is absent
    /// or an empty directory and has no mark ([`SledStorage::created`] then says so).
    ///
    /// An existing store is verified whole before this returns (checksums, continuity,
    /// terms, commit and snapshot within the log, the mark of the last flush).
    ///
    /// Errors, none of which changes the directory except through sled's own recovery:
    /// [`Error::Wiped`] (absent or empty but the mark exists), [`Error::RolledBack`] and
    /// [`Error::NotAsFlushed`] (less than the last flush), [`Error::MarkMissing`],
    /// [`Error::MarkCorrupt`], [`Error::UnsupportedFormat`] (a store from before checksums),
    /// the verification errors ([`Error::Checksum`], [`Error::LogHole`],
    /// [`Error::TermRegression`], [`Error::CommitBeyondLog`], [`Error::StateBeyondLog`]...),
    /// [`Error::Locked`] after [`OpenOptions::lock_wait`], [`Error::Sled`], [`Error::Io`].
    /// [`Error::is_damaged`] is true for every error that means "this directory exists but
    /// holds less than it acknowledged or cannot be trusted".
    pub fn open(&self, path: impl AsRef<Path>) -> Result<SledStorage> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let mark_path = mark_path(path)?;
        let state = durable::inspect(path)?;
        if state != DirState::Populated
            && let Some(m) = mark::read(&mark_path)?
        {
            return Err(wiped(&name, &mark_path, &m));
        }
        let db = open_locked(path, self.lock_wait)?;
        let sync = DirSync::new(path, self.sync_hook.clone());
        // Read again under sled's lock: another process may have created it meanwhile.
        let mark = mark::read(&mark_path)?;
        let entries = db.open_tree(ENTRIES_TREE)?;
        let meta = db.open_tree(META_TREE)?;
        let loaded = verify::load(&name, &entries, &meta)?;
        let (cache, mark_file, created) = match (loaded, mark) {
            (Loaded::Verified(c), Some(m)) => {
                verify::check_against_mark(&name, &c, &m)?;
                (*c, MarkFile::open(&mark_path)?, false)
            }
            (Loaded::Verified(c), None) => {
                return Err(Error::MarkMissing {
                    path: name,
                    mark: mark_path.display().to_string(),
                    generation: c.generation,
                });
            }
            (Loaded::Pristine { formatted: false }, Some(m)) => {
                return Err(wiped(&name, &mark_path, &m));
            }
            (Loaded::Pristine { .. }, Some(m)) if m.generation > 0 => {
                return Err(Error::RolledBack {
                    path: name,
                    durable: m.generation,
                    found: 0,
                    commit: m.summary.commit,
                    last_index: m.summary.last_index,
                    found_commit: 0,
                    found_last_index: 0,
                });
            }
            (Loaded::Pristine { .. }, Some(_)) => {
                (Cache::default(), MarkFile::open(&mark_path)?, false)
            }
            (Loaded::Pristine { formatted }, None) => {
                // New, or a creation that crashed before its mark: nothing was ever
                // acknowledged from it. Format, make it durable, then write the mark.
                if !formatted {
                    write_format(&meta)?;
                }
                db.flush()?;
                sync.sync()?;
                let m = MarkFile::create(&mark_path, &Mark::default())?;
                sync.sync_dir(&durable::parent_of(path))?;
                sync.notify(SyncEvent::File(m.path()));
                (Cache::default(), m, true)
            }
        };
        Ok(SledStorage::build(
            db,
            entries,
            meta,
            cache,
            Some(Durable {
                sync,
                mark: mark_file,
            }),
            created,
        ))
    }
}

fn wiped(name: &str, mark_path: &Path, m: &Mark) -> Error {
    Error::Wiped {
        path: name.to_string(),
        mark: mark_path.display().to_string(),
        generation: m.generation,
        commit: m.summary.commit,
        last_index: m.summary.last_index,
    }
}

/// sled's open, retrying while its file lock is held.
///
/// sled 0.34 takes the lock with `try_lock_exclusive` and releases it only when its last
/// internal handle is dropped, which its background IO threads may do a moment after the
/// `Db` itself is dropped: reopening in the same process right after a drop can fail
/// spuriously with "could not acquire lock". A lock held by another live process stays
/// held and ends in [`Error::Locked`].
fn open_locked(path: &Path, wait: Duration) -> Result<sled::Db> {
    let start = Instant::now();
    loop {
        match sled::Config::new().path(path).open() {
            Ok(db) => return Ok(db),
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

fn write_format(meta: &sled::Tree) -> Result<()> {
    let mut b = sled::Batch::default();
    b.insert(
        KEY_FORMAT,
        seal(KEY_FORMAT.as_bytes(), &FORMAT_VERSION.to_be_bytes()),
    );
    b.insert(
        KEY_GENERATION,
        seal(KEY_GENERATION.as_bytes(), &0u64.to_be_bytes()),
    );
    meta.apply_batch(b)?;
    Ok(())
}

/// Seals `payload` for meta key `key`.
fn sealed_meta(key: &str, payload: &[u8]) -> Vec<u8> {
    seal(key.as_bytes(), payload)
}

impl SledStorage {
    /// Opens (or creates) the storage in the sled directory at `path`, waiting up to
    /// [`LOCK_WAIT`] for sled's file lock; see [`OpenOptions::open`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        OpenOptions::new().open(path)
    }

    /// Opens (or creates) the storage at `path`, retrying while sled's exclusive file lock
    /// is held, for at most `wait`; see [`OpenOptions::open`].
    pub fn open_with_lock_wait(path: impl AsRef<Path>, wait: Duration) -> Result<Self> {
        OpenOptions::new().lock_wait(wait).open(path)
    }

    /// A storage in a temporary sled database, removed when the last handle is dropped
    /// (tests and in-memory demos). It has no mark and its flush does not `fsync`.
    pub fn open_temporary() -> Result<Self> {
        let db = sled::Config::new().temporary(true).open()?;
        let entries = db.open_tree(ENTRIES_TREE)?;
        let meta = db.open_tree(META_TREE)?;
        write_format(&meta)?;
        Ok(Self::build(db, entries, meta, Cache::default(), None, true))
    }

    fn build(
        db: sled::Db,
        entries: sled::Tree,
        meta: sled::Tree,
        cache: Cache,
        durable: Option<Durable>,
        created: bool,
    ) -> SledStorage {
        let flushed = AtomicU64::new(cache.generation);
        SledStorage {
            inner: Arc::new(Inner {
                db,
                entries,
                meta,
                cache: RwLock::new(cache),
                durable,
                flush_lock: Mutex::new(()),
                flushed,
                created,
                snapshot_wanted: AtomicBool::new(false),
                snapshot_wanted_index: AtomicU64::new(0),
            }),
        }
    }

    /// Whether this open created the store: its directory was absent or empty and no mark
    /// was next to it (a new replica), as opposed to a store that existed and was verified.
    /// A directory that exists but is damaged or lost entries never opens; its error has
    /// [`Error::is_damaged`].
    pub fn created(&self) -> bool {
        self.inner.created
    }

    /// The underlying sled database.
    pub fn db(&self) -> &sled::Db {
        &self.inner.db
    }

    /// Where the durable mark of the sled directory `path` lives (`<path>.mark`).
    pub fn mark_path(path: impl AsRef<Path>) -> Result<PathBuf> {
        mark_path(path.as_ref())
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
        self.put_meta(
            &mut cache,
            KEY_CONF_STATE,
            Some(&encode("conf state", &cs)?),
        )?;
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

    /// Makes everything written so far durable, against a power loss too: sled's flush
    /// (`pwrite` + `sync_file_range`), `fsync` of every file in the sled directory and of
    /// the directory, then the mark records this write generation (`fdatasync`). Does
    /// nothing when nothing was written since the last flush. A temporary store only
    /// does sled's flush.
    pub fn flush(&self) -> Result<()> {
        let _serial = self.inner.flush_lock.lock().map_err(|_| Error::Poisoned)?;
        let (generation, summary) = {
            let c = self.read()?;
            (c.generation, c.summary())
        };
        if generation == self.inner.flushed.load(Ordering::Acquire) {
            return Ok(());
        }
        self.inner.db.flush()?;
        if let Some(d) = &self.inner.durable {
            d.sync.sync()?;
            d.mark.write(&Mark {
                generation,
                summary,
            })?;
            d.sync.notify(SyncEvent::File(d.mark.path()));
        }
        self.inner.flushed.store(generation, Ordering::Release);
        Ok(())
    }

    fn read(&self) -> Result<RwLockReadGuard<'_, Cache>> {
        self.inner.cache.read().map_err(|_| Error::Poisoned)
    }

    fn write(&self) -> Result<RwLockWriteGuard<'_, Cache>> {
        self.inner.cache.write().map_err(|_| Error::Poisoned)
    }

    /// The generation the next write carries: the first write after a flush raises it
    /// (adding the new value to `meta`), later ones keep it. A store sled persisted past
    /// its last flush therefore always shows a generation above the mark's.
    fn next_generation(&self, cache: &Cache, meta: &mut sled::Batch) -> u64 {
        if cache.generation != self.inner.flushed.load(Ordering::Acquire) {
            return cache.generation;
        }
        let g = cache.generation + 1;
        meta.insert(
            KEY_GENERATION,
            sealed_meta(KEY_GENERATION, &g.to_be_bytes()),
        );
        g
    }

    /// Writes the meta record `key` (sealed; `None` removes it) in one batch with the raised
    /// generation when it is the first write since a flush.
    fn put_meta(&self, cache: &mut Cache, key: &'static str, payload: Option<&[u8]>) -> Result<()> {
        let mut m = sled::Batch::default();
        let generation = self.next_generation(cache, &mut m);
        match payload {
            Some(p) => m.insert(key, sealed_meta(key, p)),
            None => m.remove(key),
        }
        self.inner.meta.apply_batch(m)?;
        cache.generation = generation;
        Ok(())
    }

    fn get_meta(&self, key: &'static str, what: &'static str) -> Result<Option<Vec<u8>>> {
        match self.inner.meta.get(key)? {
            None => Ok(None),
            Some(v) => Ok(Some(
                unseal(what, || meta_place(key), key.as_bytes(), &v)?.to_vec(),
            )),
        }
    }

    fn decode_entry(index: u64, key: &[u8], value: &[u8]) -> Result<Entry> {
        let payload = unseal("entry", || entry_place(index), key, value)?;
        decode("entry", || entry_place(index), payload)
    }

    fn read_entry(&self, index: u64) -> Result<Entry> {
        let key = index_key(index);
        let bytes = self.inner.entries.get(key)?.ok_or(Error::LogHole {
            expected: index,
            found: 0,
        })?;
        let e = Self::decode_entry(index, &key, &bytes)?;
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
            let e = Self::decode_entry(index, &k, &v)?;
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
            .get_meta(KEY_SNAPSHOT, "snapshot")?
            .ok_or(Error::CorruptedMeta {
                key: KEY_SNAPSHOT,
                reason: "snapshot metadata cached but value missing".to_string(),
            })?;
        Ok(decode("snapshot", || meta_place(KEY_SNAPSHOT), &bytes)?)
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
            let key = index_key(e.index);
            batch.insert(&key, seal(&key, &encode("entry", e)?));
        }
        // Truncate the conflicting suffix that the new entries do not overwrite.
        for i in last.index + 1..=cache.last_index {
            batch.remove(&index_key(i));
        }
        // The generation goes first: sled recovers a prefix of its log, so entries it
        // kept past the last flush always come with the raised generation.
        let mut m = sled::Batch::default();
        let generation = self.next_generation(&cache, &mut m);
        if generation != cache.generation {
            self.inner.meta.apply_batch(m)?;
            cache.generation = generation;
        }
        self.inner.entries.apply_batch(batch)?;
        cache.last_index = last.index;
        cache.last_term = last.term;
        Ok(())
    }

    fn set_hardstate(&self, hs: HardState) -> Result<()> {
        let mut cache = self.write()?;
        self.put_meta(
            &mut cache,
            KEY_HARD_STATE,
            Some(&encode("hard state", &hs)?),
        )?;
        cache.hard_state = hs;
        Ok(())
    }

    fn set_conf_state(&self, cs: ConfState) -> Result<()> {
        let mut cache = self.write()?;
        self.put_meta(
            &mut cache,
            KEY_CONF_STATE,
            Some(&encode("conf state", &cs)?),
        )?;
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
        let generation = self.next_generation(&cache, &mut mbatch);
        mbatch.insert(
            KEY_SNAPSHOT,
            sealed_meta(KEY_SNAPSHOT, &encode("snapshot", &snapshot)?),
        );
        mbatch.insert(
            KEY_HARD_STATE,
            sealed_meta(KEY_HARD_STATE, &encode("hard state", &hs)?),
        );
        mbatch.insert(
            KEY_CONF_STATE,
            sealed_meta(KEY_CONF_STATE, &encode("conf state", &cs)?),
        );
        mbatch.insert(
            KEY_TRUNCATED,
            sealed_meta(KEY_TRUNCATED, &encode_index_term(index, term)),
        );
        mbatch.insert(
            KEY_APPLIED,
            sealed_meta(KEY_APPLIED, &encode_applied(index, &snapshot.data)),
        );
        self.transact(&ebatch, &mbatch)?;

        cache.generation = generation;
        cache.snapshot = meta.clone();
        cache.hard_state = hs;
        cache.conf_state = cs;
        cache.truncated_index = index;
        cache.truncated_term = term;
        cache.last_index = index;
        cache.last_term = term;
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
        let generation = self.next_generation(&cache, &mut mbatch);
        mbatch.insert(
            KEY_TRUNCATED,
            sealed_meta(KEY_TRUNCATED, &encode_index_term(new_truncated, term)),
        );
        self.transact(&ebatch, &mbatch)?;
        cache.generation = generation;
        cache.truncated_index = new_truncated;
        cache.truncated_term = term;
        if cache.last_index == new_truncated {
            cache.last_term = term;
        }
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
        self.put_meta(&mut cache, KEY_SNAPSHOT, Some(&encode("snapshot", &snap)?))?;
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
        self.put_meta(&mut cache, KEY_APPLIED, Some(&encode_applied(index, data)))?;
        cache.applied_index = Some(index);
        Ok(())
    }

    fn load_applied(&self) -> Result<Option<AppliedState>> {
        let _cache = self.read()?;
        match self.get_meta(KEY_APPLIED, "applied state")? {
            None => Ok(None),
            Some(v) => {
                let (index, data) = decode_applied(&v)?;
                Ok(Some(AppliedState { index, data }))
            }
        }
    }

    fn load_snapshot(&self) -> Result<Option<Snapshot>> {
        let _cache = self.read()?;
        match self.get_meta(KEY_SNAPSHOT, "snapshot")? {
            None => Ok(None),
            Some(v) => Ok(Some(decode("snapshot", || meta_place(KEY_SNAPSHOT), &v)?)),
        }
    }

    fn flush(&self) -> Result<()> {
        SledStorage::flush(self)
    }

    fn recovering(&self) -> Result<bool> {
        Ok(self.read()?.recovering)
    }

    fn set_recovering(&self, on: bool) -> Result<()> {
        let mut cache = self.write()?;
        if cache.recovering == on {
            return Ok(());
        }
        self.put_meta(&mut cache, KEY_RECOVERING, on.then_some(&[1u8][..]))?;
        cache.recovering = on;
        Ok(())
    }
}
