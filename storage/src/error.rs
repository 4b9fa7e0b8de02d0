//! The crate's error type and its mapping into raft-rs's error.

/// Everything that can go wrong in this crate.
///
/// Errors reach raft-rs through [`From<Error> for raft::Error`]: storage-level conditions
/// raft knows (`SnapshotOutOfDate`) keep their raft meaning, everything else becomes
/// `raft::Error::Store(raft::StorageError::Other(..))`, which makes the raft instance stop
/// (raft-rs treats any other storage error as fatal for that node).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// sled failed (IO error, corruption detected by sled, unsupported on-disk version...).
    #[cfg(feature = "sled")]
    #[error("STORAGE-E001 sled: {0}")]
    Sled(#[from] sled::Error),

    /// A value stored in sled could not be decoded as the protobuf message it should hold.
    #[error("STORAGE-E002 cannot decode {what} stored under {key}: {source}")]
    Decode {
        /// What the value should have been (`"entry"`, `"hard state"`...).
        what: &'static str,
        /// Where it was read from, in readable form.
        key: String,
        /// protobuf's explanation.
        source: protobuf::ProtobufError,
    },

    /// A raft message could not be encoded (protobuf refuses only messages over 2 GiB).
    #[error("STORAGE-E003 cannot encode {what}: {source}")]
    Encode {
        /// What was being encoded.
        what: &'static str,
        /// protobuf's explanation.
        source: protobuf::ProtobufError,
    },

    /// A key in the entries tree is not an 8-byte big-endian index.
    #[error("STORAGE-E004 corrupted key in the entries tree: {0:02x?} (expected 8 bytes)")]
    CorruptedKey(Vec<u8>),

    /// A value in the meta tree has the wrong shape.
    #[error("STORAGE-E005 corrupted meta value {key:?}: {reason}")]
    CorruptedMeta {
        /// The meta key.
        key: &'static str,
        /// What is wrong with it.
        reason: String,
    },

    /// The entry stored under an index carries a different index, or an index in the
    /// middle of the log is missing.
    #[error("STORAGE-E006 log corrupted: expected entry {expected}, found {found}")]
    LogHole {
        /// The index that should be there.
        expected: u64,
        /// The index found instead (0 when nothing was found).
        found: u64,
    },

    /// `append` was given entries that start after `last_index + 1`.
    #[error("STORAGE-E007 append at {first} leaves a gap after last index {last}")]
    AppendGap {
        /// Index of the first appended entry.
        first: u64,
        /// Current last index.
        last: u64,
    },

    /// `append` was given entries that start before `first_index` (already compacted).
    #[error(
        "STORAGE-E008 append at {first} overwrites compacted entries (first index {first_index})"
    )]
    AppendCompacted {
        /// Index of the first appended entry.
        first: u64,
        /// Current first index.
        first_index: u64,
    },

    /// The entries given to `append` do not have consecutive indexes.
    #[error("STORAGE-E009 appended entries not consecutive: {prev} followed by {next}")]
    AppendNotConsecutive {
        /// Index of an entry.
        prev: u64,
        /// Index of the entry that follows it.
        next: u64,
    },

    /// `compact` was asked to drop entries that were never received.
    #[error("STORAGE-E010 compact index {compact_index} beyond last index {last} + 1")]
    CompactBeyondLog {
        /// The requested compact index.
        compact_index: u64,
        /// Current last index.
        last: u64,
    },

    /// `apply_snapshot` was given a snapshot older than the log it would replace.
    #[error("STORAGE-E011 snapshot at {index} is out of date (first index {first_index})")]
    SnapshotOutOfDate {
        /// The snapshot's index.
        index: u64,
        /// Current first index.
        first_index: u64,
    },

    /// `create_snapshot` was asked for an index whose term the log does not know.
    #[error(
        "STORAGE-E012 cannot snapshot at {index}: outside the log [{first_index}, {last_index}]"
    )]
    SnapshotIndexOutOfRange {
        /// The requested index.
        index: u64,
        /// Current first index.
        first_index: u64,
        /// Current last index.
        last_index: u64,
    },

    /// `create_snapshot` was asked for an index older than the current snapshot.
    #[error("STORAGE-E013 snapshot at {index} is older than the stored snapshot at {current}")]
    SnapshotRegression {
        /// The requested index.
        index: u64,
        /// The stored snapshot's index.
        current: u64,
    },

    /// `save_applied` would move the applied index backwards.
    #[error("STORAGE-E014 applied index would go backwards: {current} -> {new}")]
    AppliedRegression {
        /// The stored applied index.
        current: u64,
        /// The index given.
        new: u64,
    },

    /// `entries` was asked for a range it cannot serve (`low > high`, or `high` past
    /// `last_index + 1`, which MemStorage answers with a panic).
    #[error("STORAGE-E015 invalid entries range [{low}, {high}) (last index {last})")]
    InvalidRange {
        /// Requested low bound (inclusive).
        low: u64,
        /// Requested high bound (exclusive).
        high: u64,
        /// Current last index.
        last: u64,
    },

    /// The storage is already initialized and cannot be given an initial conf state.
    #[error("STORAGE-E016 storage already initialized")]
    AlreadyInitialized,

    /// An error reported by raft-rs's own storage (used by the MemStorage wrapper).
    #[error("STORAGE-E017 raft: {0}")]
    Raft(#[from] raft::Error),

    /// The applied state and snapshot are both older than the log's start: the entries
    /// needed to rebuild the state machine were compacted away.
    #[error(
        "STORAGE-E019 cannot recover: state machine saved at {index} but the log starts at {first_index}"
    )]
    Unrecoverable {
        /// Index of the newest applied state or snapshot.
        index: u64,
        /// Current first index.
        first_index: u64,
    },

    /// sled's exclusive file lock stayed held (another process uses this directory).
    #[error("STORAGE-E020 storage at {path} is locked by another user (waited {waited:?})")]
    Locked {
        /// The database directory.
        path: String,
        /// How long opening waited.
        waited: std::time::Duration,
    },

    /// A lock was poisoned by a panic in another thread.
    #[error("STORAGE-E018 internal lock poisoned")]
    Poisoned,

    /// A stored value's checksum does not match its key and bytes: the value was changed
    /// on disk (bit rot, a torn write sled did not catch, an edit behind our back).
    #[error(
        "STORAGE-E021 checksum mismatch in {what} at {key}: stored {stored:08x}, computed {computed:08x}"
    )]
    Checksum {
        /// What the value is (`"entry"`, `"hard state"`...).
        what: &'static str,
        /// Where it is (tree/key).
        key: String,
        /// The checksum stored with the value.
        stored: u32,
        /// The checksum of the bytes found.
        computed: u32,
    },

    /// A stored value is too short to carry its checksum.
    #[error("STORAGE-E022 {what} at {key} is {len} bytes, too short for its checksum")]
    ShortRecord {
        /// What the value is.
        what: &'static str,
        /// Where it is (tree/key).
        key: String,
        /// Its length.
        len: usize,
    },

    /// The store was written in a format this build does not read: `found` is `None` for a
    /// store written before checksums (format 0), else the version it declares.
    #[error(
        "STORAGE-E023 {path}: on-disk format {} is not supported (this build reads format {supported}); {hint}",
        found.map_or_else(|| "0 (no checksums)".to_string(), |v| v.to_string())
    )]
    UnsupportedFormat {
        /// The database directory.
        path: String,
        /// The version found (`None`: no format key, a store written before checksums).
        found: Option<u32>,
        /// The version this build reads and writes.
        supported: u32,
        /// What the operator can do.
        hint: &'static str,
    },

    /// The database directory is missing or empty, but the durable mark next to it says
    /// flushes happened: the log this replica acknowledged is gone (a wiped data dir).
    #[error(
        "STORAGE-E024 {path} is missing or empty but {mark} records flush generation {generation} (commit {commit}, last index {last_index}): the acknowledged log is gone"
    )]
    Wiped {
        /// The database directory.
        path: String,
        /// The mark file.
        mark: String,
        /// Generation the last flush made durable.
        generation: u64,
        /// Commit index at that flush.
        commit: u64,
        /// Last index at that flush.
        last_index: u64,
    },

    /// The store is older than its last flush: sled recovered an earlier state (it cuts its
    /// log at the first damaged record it meets, so a flipped byte or a truncated file
    /// loses everything written after it without an error from sled).
    #[error(
        "STORAGE-E025 {path} went back to write generation {found} but generation {durable} was flushed (then: commit {commit}, last index {last_index}; now: commit {found_commit}, last index {found_last_index}): acknowledged writes are lost"
    )]
    RolledBack {
        /// The database directory.
        path: String,
        /// Generation the mark says was made durable.
        durable: u64,
        /// Generation found in the store.
        found: u64,
        /// Commit index recorded by the mark.
        commit: u64,
        /// Last index recorded by the mark.
        last_index: u64,
        /// Commit index found in the store.
        found_commit: u64,
        /// Last index found in the store.
        found_last_index: u64,
    },

    /// The store does not hold what its last flush recorded (same generation, different
    /// state; or a later generation that went back on something that only moves forward).
    #[error(
        "STORAGE-E026 {path}: {field} is {found} but the flush of generation {generation} recorded {durable}"
    )]
    NotAsFlushed {
        /// The database directory.
        path: String,
        /// Which value differs (`"commit"`, `"last index"`...).
        field: &'static str,
        /// The value the mark recorded.
        durable: u64,
        /// The value found in the store.
        found: u64,
        /// The generation of the mark.
        generation: u64,
    },

    /// The hard state's commit index is beyond the last entry: committed (acknowledged)
    /// entries are missing from the log.
    #[error(
        "STORAGE-E027 hard state commit {commit} is beyond the last index {last_index}: acknowledged entries are lost"
    )]
    CommitBeyondLog {
        /// The stored commit index.
        commit: u64,
        /// The last index found.
        last_index: u64,
    },

    /// Log terms go down from one entry to the next (or below the term of the last
    /// discarded entry).
    #[error("STORAGE-E028 entry {index} has term {term}, below term {prev_term} before it")]
    TermRegression {
        /// The entry.
        index: u64,
        /// Its term.
        term: u64,
        /// The term of the entry (or discarded entry) before it.
        prev_term: u64,
    },

    /// The stored snapshot or applied state does not fit the log.
    #[error("STORAGE-E029 {what} at index {index} does not fit the log: {reason}")]
    StateBeyondLog {
        /// `"snapshot"` or `"applied state"`.
        what: &'static str,
        /// Its index.
        index: u64,
        /// Why.
        reason: String,
    },

    /// The durable mark next to the store cannot be read or holds no valid slot.
    #[error("STORAGE-E030 durable mark {path} is unreadable: {reason}")]
    MarkCorrupt {
        /// The mark file.
        path: String,
        /// Why.
        reason: String,
    },

    /// The store holds written state but its durable mark is gone, so what it acknowledged
    /// cannot be checked.
    #[error(
        "STORAGE-E031 {path} holds a log (write generation {generation}) but its durable mark {mark} is missing"
    )]
    MarkMissing {
        /// The database directory.
        path: String,
        /// The mark file that should be there.
        mark: String,
        /// Generation found in the store.
        generation: u64,
    },

    /// A file system operation of this crate failed (fsync, the mark, the directory).
    #[error("STORAGE-E032 {op} {path}: {source}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// On which path.
        path: String,
        /// The system's error.
        source: std::io::Error,
    },
}

/// What kind of failure an [`Error`] is, for callers that decide what to do next (the
/// replica: refuse to start, rejoin as a new member, retry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Stored bytes are damaged or inconsistent (checksums, decoding, holes in the log,
    /// terms going down): the data directory exists but cannot be trusted.
    Corrupt,
    /// The data directory exists (or its mark does) but holds less than this replica made
    /// durable: acknowledged writes are lost (rollback, wiped directory, commit beyond log).
    Lost,
    /// The store was written in another on-disk format.
    Unsupported,
    /// Another process holds the store.
    Locked,
    /// The file system or the disk failed; retrying or freeing space may help.
    Io,
    /// The caller asked for something the log refuses (a gap, an old snapshot...);
    /// nothing was written.
    Usage,
    /// A bug (poisoned lock, sled reporting a bug).
    Internal,
}

impl Error {
    /// The kind of failure. Opening a data directory that exists but is damaged or lost
    /// entries gives [`ErrorKind::Corrupt`] or [`ErrorKind::Lost`]; a new (absent or
    /// empty) one opens without error ([`crate::SledStorage::created`] says so).
    pub fn kind(&self) -> ErrorKind {
        match self {
            #[cfg(feature = "sled")]
            Error::Sled(e) => match e {
                sled::Error::Corruption { .. } => ErrorKind::Corrupt,
                sled::Error::Io(_) => ErrorKind::Io,
                sled::Error::Unsupported(_) => ErrorKind::Unsupported,
                sled::Error::CollectionNotFound(_) => ErrorKind::Corrupt,
                sled::Error::ReportableBug(_) => ErrorKind::Internal,
            },
            Error::Decode { .. }
            | Error::CorruptedKey(_)
            | Error::CorruptedMeta { .. }
            | Error::LogHole { .. }
            | Error::Checksum { .. }
            | Error::ShortRecord { .. }
            | Error::TermRegression { .. }
            | Error::MarkCorrupt { .. } => ErrorKind::Corrupt,
            Error::Unrecoverable { .. }
            | Error::Wiped { .. }
            | Error::RolledBack { .. }
            | Error::NotAsFlushed { .. }
            | Error::CommitBeyondLog { .. }
            | Error::StateBeyondLog { .. }
            | Error::MarkMissing { .. } => ErrorKind::Lost,
            Error::UnsupportedFormat { .. } => ErrorKind::Unsupported,
            Error::Locked { .. } => ErrorKind::Locked,
            Error::Io { .. } => ErrorKind::Io,
            Error::Encode { .. }
            | Error::AppendGap { .. }
            | Error::AppendCompacted { .. }
            | Error::AppendNotConsecutive { .. }
            | Error::CompactBeyondLog { .. }
            | Error::SnapshotOutOfDate { .. }
            | Error::SnapshotIndexOutOfRange { .. }
            | Error::SnapshotRegression { .. }
            | Error::AppliedRegression { .. }
            | Error::InvalidRange { .. }
            | Error::AlreadyInitialized
            | Error::Raft(_) => ErrorKind::Usage,
            Error::Poisoned => ErrorKind::Internal,
        }
    }

    /// The data directory exists but holds less than was acknowledged or cannot be trusted
    /// ([`ErrorKind::Corrupt`] or [`ErrorKind::Lost`]): the replica must not start from it
    /// (and must not vote); it can only come back as a new member that receives the log
    /// from the others.
    pub fn is_damaged(&self) -> bool {
        matches!(self.kind(), ErrorKind::Corrupt | ErrorKind::Lost)
    }
}

#[cfg(feature = "sled")]
impl From<sled::transaction::TransactionError<Error>> for Error {
    fn from(e: sled::transaction::TransactionError<Error>) -> Self {
        match e {
            sled::transaction::TransactionError::Abort(e) => e,
            sled::transaction::TransactionError::Storage(e) => Error::Sled(e),
        }
    }
}

impl From<Error> for raft::Error {
    fn from(e: Error) -> Self {
        match e {
            Error::SnapshotOutOfDate { .. } => {
                raft::Error::Store(raft::StorageError::SnapshotOutOfDate)
            }
            Error::Raft(inner) => inner,
            other => raft::Error::Store(raft::StorageError::Other(Box::new(other))),
        }
    }
}

/// Result with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
