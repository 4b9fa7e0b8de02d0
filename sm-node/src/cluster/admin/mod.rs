//! The `SmAdmin` service of one replica: status and policy reads from the applied state,
//! writes proposed here or forwarded to the leader (`Peer.Forward`).
//!
//! Status codes: INVALID_ARGUMENT (`line:col`) for a policy that does not parse,
//! FAILED_PRECONDITION for a stale `expected_version`, UNAVAILABLE (with the leader's
//! address when known) without a leader or a quorum.

use super::net::{MAX_MESSAGE, PROPOSE_TIMEOUT, channel, propose_local};
use super::raft_actor::{
    GetClusterStatus, GetPolicy, ProposeError, RaftActor, TransferLeader, TriggerSweep,
};
use actix::Addr;
use proto::admin::sm_admin_client::SmAdminClient;
use proto::admin::sm_admin_server::{SmAdmin, SmAdminServer};
use proto::admin::*;
use proto::peer::peer_client::PeerClient;
use proto::peer::{ProposeRequest, propose_reply};
use proto::state::{self, ApplyResult, Command, command::Kind};
use std::time::{Duration, Instant};
use tonic::{Request, Response, Status};

/// The `SmAdmin` service.
pub struct AdminService {
    /// This replica's id.
    pub id: u64,
    /// Its RaftActor.
    pub raft: Addr<RaftActor>,
}

fn actor_err(e: actix::MailboxError) -> Status {
    Status::unavailable(format!("E_NODE_ACTOR: raft actor: {e}"))
}

fn not_leader_status(leader_id: u64, addr: &str) -> Status {
    if leader_id == 0 {
        Status::unavailable("E_NODE_NO_LEADER: no leader known (no quorum?)")
    } else {
        Status::unavailable(format!(
            "E_NODE_NOT_LEADER: leader is replica {leader_id} at {addr}"
        ))
    }
}

impl AdminService {
    /// Proposes here when leader, else forwards to the leader.
    async fn propose(&self, cmd: Command) -> Result<ApplyResult, Status> {
        match propose_local(&self.raft, cmd.clone()).await {
            Ok(r) => Ok(r),
            Err(ProposeError::Failed(m)) => {
                Err(Status::unavailable(format!("E_NODE_PROPOSE: {m}")))
            }
            Err(ProposeError::NotLeader {
                leader_id,
                leader_address,
            }) => {
                if leader_id == 0 || leader_address.is_empty() {
                    return Err(not_leader_status(leader_id, &leader_address));
                }
                let ch = channel(&leader_address)
                    .map_err(|e| Status::unavailable(format!("E_NODE_FORWARD: {e}")))?;
                let mut c = PeerClient::new(ch).max_decoding_message_size(MAX_MESSAGE);
                let req = ProposeRequest {
                    from: self.id,
                    command: Some(cmd),
                };
                let reply = tokio::time::timeout(PROPOSE_TIMEOUT, c.forward(req))
                    .await
                    .map_err(|_| Status::unavailable("E_NODE_FORWARD: leader did not answer"))?
                    .map_err(|e| {
                        Status::unavailable(format!(
                            "E_NODE_FORWARD: leader {leader_id} at {leader_address}: {}",
                            e.message()
                        ))
                    })?
                    .into_inner();
                match reply.result {
                    Some(propose_reply::Result::Applied(a)) => Ok(a),
                    Some(propose_reply::Result::NotLeader(n)) => {
                        Err(not_leader_status(n.leader_id, &n.leader_address))
                    }
                    Some(propose_reply::Result::Failed(m)) => {
                        Err(Status::unavailable(format!("E_NODE_PROPOSE: {m}")))
                    }
                    None => Err(Status::internal("E_NODE_FORWARD: empty reply")),
                }
            }
        }
    }

    async fn leader_client(
        &self,
    ) -> Result<Option<SmAdminClient<tonic::transport::Channel>>, Status> {
        let st = self.raft.send(GetClusterStatus).await.map_err(actor_err)?;
        if st.leader_id == st.self_id {
            return Ok(None);
        }
        let addr = st
            .replicas
            .iter()
            .find(|r| r.id == st.leader_id)
            .map(|r| r.admin_address.clone())
            .ok_or_else(|| not_leader_status(0, ""))?;
        let ch = channel(&addr).map_err(|e| Status::unavailable(format!("E_NODE_FORWARD: {e}")))?;
        Ok(Some(SmAdminClient::new(ch)))
    }
}

#[tonic::async_trait]
impl SmAdmin for AdminService {
    async fn cluster_status(
        &self,
        _req: Request<ClusterStatusRequest>,
    ) -> Result<Response<ClusterStatusReply>, Status> {
        let st = self.raft.send(GetClusterStatus).await.map_err(actor_err)?;
        Ok(Response::new(st))
    }

    async fn get_policy(
        &self,
        _req: Request<GetPolicyRequest>,
    ) -> Result<Response<GetPolicyReply>, Status> {
        Ok(Response::new(
            self.raft.send(GetPolicy).await.map_err(actor_err)?,
        ))
    }

    async fn apply_policy(
        &self,
        req: Request<ApplyPolicyRequest>,
    ) -> Result<Response<ApplyPolicyReply>, Status> {
        let r = req.into_inner();
        // Check here first: a bad text never reaches the log.
        if let Err(errs) = partitions::parse(&r.text) {
            let first = errs
                .first()
                .map_or_else(|| "syntax error".to_string(), |e| e.to_string());
            return Err(Status::invalid_argument(format!(
                "E_NODE_POLICY_SYNTAX: {first} ({} error(s))",
                errs.len()
            )));
        }
        let cmd = Command {
            request_id: r.request_id,
            kind: Some(Kind::ApplyPolicy(state::ApplyPolicy {
                text: r.text,
                expected_version: r.expected_version,
            })),
        };
        let a = self.propose(cmd).await?;
        if a.accepted {
            return Ok(Response::new(ApplyPolicyReply {
                version: a.policy_version,
                index: a.index,
                warnings: Vec::new(),
            }));
        }
        let msg = format!("{}: {}", a.code, a.message);
        Err(match a.code.as_str() {
            "REPL-E004" => Status::failed_precondition(msg),
            "REPL-E003" => Status::invalid_argument(format!("{msg} (at {}:{})", a.line, a.col)),
            _ => Status::internal(msg),
        })
    }

    async fn trigger_sweep(
        &self,
        req: Request<TriggerSweepRequest>,
    ) -> Result<Response<TriggerSweepReply>, Status> {
        let heavy = req.get_ref().heavy;
        match self
            .raft
            .send(TriggerSweep { heavy })
            .await
            .map_err(actor_err)?
        {
            Ok(master_id) => Ok(Response::new(TriggerSweepReply { master_id })),
            Err(_) => match self.leader_client().await? {
                Some(mut c) => c.trigger_sweep(TriggerSweepRequest { heavy }).await,
                None => Err(Status::unavailable(
                    "E_NODE_NO_MASTER: the master is starting",
                )),
            },
        }
    }

    async fn transfer_master(
        &self,
        req: Request<TransferMasterRequest>,
    ) -> Result<Response<TransferMasterReply>, Status> {
        let to = req.get_ref().to_replica;
        match self
            .raft
            .send(TransferLeader(to))
            .await
            .map_err(actor_err)?
        {
            Ok(()) => {}
            Err(ProposeError::NotLeader { .. }) => {
                return match self.leader_client().await? {
                    Some(mut c) => {
                        c.transfer_master(TransferMasterRequest { to_replica: to })
                            .await
                    }
                    None => Err(not_leader_status(0, "")),
                };
            }
            Err(ProposeError::Failed(m)) => return Err(Status::invalid_argument(m)),
        }
        // Wait (bounded) until this replica sees the new leader.
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let st = self.raft.send(GetClusterStatus).await.map_err(actor_err)?;
            if st.leader_id == to {
                return Ok(Response::new(TransferMasterReply {
                    leader_id: st.leader_id,
                    term: st.term,
                }));
            }
            if Instant::now() > deadline {
                return Err(Status::deadline_exceeded(format!(
                    "E_NODE_TRANSFER: replica {to} did not take over (leader {}, term {})",
                    st.leader_id, st.term
                )));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// The `SmAdmin` server for `svc`.
pub fn admin_server(svc: AdminService) -> SmAdminServer<AdminService> {
    SmAdminServer::new(svc)
        .max_decoding_message_size(MAX_MESSAGE)
        .max_encoding_message_size(MAX_MESSAGE)
}
