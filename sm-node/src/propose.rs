//! [`Propose`]: a command for the replicated log, sent to the replica's actor by whoever
//! changes replicated state (the admin API, the master's SA). Neutral ground, so the master
//! does not know the cluster module.

use actix::Message;
use proto::state::{ApplyResult, Command};
pub use replica_core::ProposeError;
use tokio::sync::oneshot;

/// Proposes a command; the receiver gets the apply result once it is committed and applied
/// on this replica (dropped: its outcome is unknown here).
#[derive(Message)]
#[rtype(result = "Result<oneshot::Receiver<ApplyResult>, ProposeError>")]
pub struct Propose(pub Command);

/// Why a write did not come back applied.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    /// Refused before anything was proposed (not the leader, stopping, raft refused it).
    #[error(transparent)]
    Refused(#[from] ProposeError),
    /// Proposed, but its outcome did not come back (no answer within the deadline, or the
    /// answer was dropped): it may have been committed.
    #[error("{0}")]
    CommitUnknown(String),
}
