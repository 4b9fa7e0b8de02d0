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
