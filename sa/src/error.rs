//! The crate's error type.

use thiserror::Error;

/// What can go wrong outside of a request's answer (requests are answered with an SA
/// status, never with an error).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SaError {
    /// A replicated SA state that does not decode (wrong lengths or values).
    #[error("SA-E001 replicated SA state invalid: {0}")]
    BadState(String),
    /// A MAD handed to the RMPP machinery or the client is not what it expects.
    #[error("SA-E002 unexpected MAD: {0}")]
    Unexpected(String),
    /// An RMPP transfer was aborted or stopped by the peer, or ran out of retries.
    #[error("SA-E003 RMPP transfer failed: {0}")]
    Rmpp(String),
    /// The SA answered with a non-zero status.
    #[error("SA-E004 SA status {status:#06x}")]
    Status {
        /// The MAD status.
        status: u16,
    },
    /// Wire decoding failed.
    #[error("SA-E005 {0}")]
    Mad(#[from] mad::MadError),
}
