//! The crate's errors: [`CoreError`] (the replica cannot go on, or cannot be built) and
//! [`ProposeError`] (why a request was not taken).

/// The replica cannot be built or cannot go on.
#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    /// Its log failed (a write, a flush, a read raft needed): the replica stops for good.
    #[error("RCORE-E001 storage: {what}: {source}")]
    Storage {
        /// What the replica was doing.
        what: &'static str,
        /// The log's error.
        source: storage::Error,
    },
    /// raft-rs refused the configuration or the recovered log.
    #[error("RCORE-E002 raft: {0}")]
    Raft(#[from] raft::Error),
    /// The configuration cannot work.
    #[error("RCORE-E003 configuration: {0}")]
    Config(String),
    /// The recovered applied state does not decode.
    #[error("RCORE-E004 applied state at index {index} does not decode: {reason}")]
    State {
        /// Index of the state.
        index: u64,
        /// Why.
        reason: String,
    },
}

/// Why a proposal, read or membership request was not taken.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProposeError {
    /// This replica is not the leader; the leader it knows of (0 = none) and its address.
    #[error("RCORE-E010 not the leader (leader {leader_id} at {leader_address:?})")]
    NotLeader {
        /// Raft id.
        leader_id: u64,
        /// Peer/admin address ("" when unknown).
        leader_address: String,
    },
    /// raft-rs refused it, or the request names something that does not exist.
    #[error("RCORE-E011 {0}")]
    Failed(String),
    /// The replica is stopping or stopped.
    #[error("RCORE-E012 the replica is stopping")]
    Stopping,
}
