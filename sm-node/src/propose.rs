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
