//! The daemon's error type; every message starts with a stable, grep-able code.

use crate::transport::TransportError;
use std::path::PathBuf;

/// Errors of the daemon's library side (configuration, persistence, start-up).
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// A configuration value or file is wrong.
    #[error("E_NODE_CONFIG: {0}")]
    Config(String),
    /// A file the configuration names is refused (its own code, e.g. E_NODE_QOS_POLICY).
    #[error(transparent)]
    Conf(deploy::config::ConfigError),
    /// The partitions file does not parse; every syntax error with `file:line:col`.
    #[error("E_NODE_PARTITIONS: {path}: policy rejected, refusing to start:\n{errors}")]
    Partitions {
        /// The file.
        path: PathBuf,
        /// One `file:line:col: code: message` line per error.
        errors: String,
    },
    /// The guid2lid file cannot be read, parsed or written.
    #[error("E_NODE_GUID2LID: {path}: {why}")]
    Guid2Lid {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        why: String,
    },
    /// The fabric transport failed.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// The sweeper refused its configuration.
    #[error("E_NODE_SWEEPER: {0}")]
    Sweeper(#[from] sm_core::SmError),
    /// The cluster side failed (storage, threads, gRPC); the message starts with its code.
    #[error("{0}")]
    Cluster(String),
    /// An actor is gone (its mailbox closed).
    #[error("E_NODE_ACTOR: {0}")]
    Actor(String),
    /// The replica's log cannot be opened: `source.is_damaged()` when the data directory
    /// exists but holds less than this replica acknowledged or fails verification (the
    /// replica must not start, nor vote, from it); see storage/README.md.
    #[error("E_NODE_STORAGE: {path}: refusing to start from this log: {source}")]
    Storage {
        /// The sled directory.
        path: PathBuf,
        /// The storage's error (its code, `STORAGE-E0xx`, names what and where).
        source: storage::Error,
    },
}

impl From<deploy::config::ConfigError> for NodeError {
    fn from(e: deploy::config::ConfigError) -> NodeError {
        match e {
            deploy::config::ConfigError::Config(m) => NodeError::Config(m),
            deploy::config::ConfigError::Partitions { path, errors } => {
                NodeError::Partitions { path, errors }
            }
            e @ deploy::config::ConfigError::QosPolicy { .. } => NodeError::Conf(e),
        }
    }
}
