//! ChangeMembership (`smctl members add|remove`): the guard (`replica::admin::membership`)
//! decides on the leader's view before anything is proposed, then the call is answered once
//! the conf change is applied. Changes through this process are serialized (one at a time,
//! each waits until it is applied).

use super::errors::{Call, actor_err, commit_unknown, forwarded_write_failure, status_of};
use super::{AdminService, forwarded};
use crate::cluster::net::PROPOSE_TIMEOUT;
use crate::cluster::raft_actor::{ChangeMembership, GetClusterStatus};
use proto::admin::{ChangeMembershipReply, ChangeMembershipRequest, ClusterStatusReply};
use replica::admin::membership::{Refusal, guard, voters};
use std::time::{Duration, Instant};
use tonic::{Request, Response, Status};

/// One membership change at a time in this process: the guard's view, the proposal and the
/// wait for it to be applied never interleave with another change's.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// How long the leader waits to see its conf change applied before answering commit-unknown.
const APPLY_TIMEOUT: Duration = PROPOSE_TIMEOUT;

/// The status the client gets: NOT_FOUND for an unknown replica, FAILED_PRECONDITION
/// otherwise; the message starts with the code.
pub fn refusal_status(r: &Refusal) -> Status {
    if r.is_unknown() {
        Status::not_found(r.message())
    } else {
        Status::failed_precondition(r.message())
    }
}

impl AdminService {
    pub(super) async fn change_membership_impl(
        &self,
        req: Request<ChangeMembershipRequest>,
    ) -> Result<Response<ChangeMembershipReply>, Status> {
        self.auth.admin(&req, "ChangeMembership")?;
        let r = *req.get_ref();
        {
            let _one = ONE_AT_A_TIME.lock().await;
            let st = self.raft.send(GetClusterStatus).await.map_err(actor_err)?;
            if st.leader_id == st.self_id {
                return self.change_here(&st, r).await.map(Response::new);
            }
        }
        // The guard needs the leader's view: the leader decides.
        let (mut c, addr) = self.leader_for_write(&req).await?;
        c.change_membership(forwarded(&req, r))
            .await
            .map_err(|s| forwarded_write_failure(s, &addr))
    }

    /// On the leader (holding [`ONE_AT_A_TIME`]): guard, propose, wait until applied.
    async fn change_here(
        &self,
        st: &ClusterStatusReply,
        r: ChangeMembershipRequest,
    ) -> Result<ChangeMembershipReply, Status> {
        if let Err(refusal) = guard(st, r.id, r.add, r.force) {
            tracing::warn!(
                "replica {}: membership change refused: {}",
                self.id,
                refusal.message()
            );
            return Err(refusal_status(&refusal));
        }
        self.raft
            .send(ChangeMembership {
                id: r.id,
                add: r.add,
            })
            .await
            .map_err(actor_err)?
            .map_err(|e| status_of(e, Call::Membership))?;
        let deadline = Instant::now() + APPLY_TIMEOUT;
        loop {
            let now = self.raft.send(GetClusterStatus).await.map_err(actor_err)?;
            if now
                .replicas
                .iter()
                .any(|p| p.id == r.id && p.voter == r.add)
            {
                return Ok(ChangeMembershipReply {
                    leader_id: self.id,
                    voters: voters(&now),
                });
            }
            if Instant::now() > deadline {
                return Err(commit_unknown(&format!(
                    "the conf change ({} replica {}) was proposed and not seen applied within {APPLY_TIMEOUT:?} (voters now {:?}, leader {})",
                    if r.add { "add" } else { "remove" },
                    r.id,
                    voters(&now),
                    now.leader_id
                )));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
