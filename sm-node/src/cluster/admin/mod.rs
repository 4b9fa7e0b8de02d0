//! The `SmAdmin` service of one replica: status and policy reads from the applied state,
//! writes proposed here or forwarded to the leader (`Peer.Forward`).
//!
//! Where reads come from: status, policy and SmInfo from this replica's applied state (or,
//! with `linearizable`, from the leader after a Raft ReadIndex round has confirmed that a
//! quorum still follows it and the read index is applied: a follower forwards the call).
//! Reads that need the fabric's topology (nodes, port, route, trace, diff, plan, audit) are
//! served by the master, which holds the topology of its last discovery; a follower forwards
//! them to the leader (the topology is not in the replicated log). LIDs, LFTs and P_Key
//! tables come from the replicated state. Every call is checked against the bearer tokens
//! ([`crate::auth`]): writes need the admin role.
//!
//! What the reads answer is computed by `replica::admin` (pure); this module decides where
//! it runs. Status codes (all mapped in [`errors`]): INVALID_ARGUMENT (`line:col`) for a
//! policy that does not parse, for a policy `smctl partitions check` calls an error (checked
//! at the master, against the fabric's P_Key table capacities) and for an input over its
//! limit ([`limits`]); FAILED_PRECONDITION for a stale `expected_version` and a membership
//! change the guard refuses ([`membership`]); UNAVAILABLE (with the leader's address when
//! known) without a leader or a quorum, when nothing was proposed; ABORTED
//! `E_NODE_COMMIT_UNKNOWN` for a write that was proposed (or sent to the leader) and whose
//! outcome did not come back.

pub mod errors;
mod explain;
pub mod limits;
pub mod membership;
mod perf;
pub mod sa;
pub mod status;
pub mod tenants;
pub mod watch;

use super::net::{MAX_MESSAGE, channel, connect_for_write, propose_local};
use super::raft_actor::{
    GetClusterStatus, GetPolicy, GetVlTables, ProposeError, RaftActor, ReadIndex, ReadState,
    ReadView, TransferLeader, TriggerSweep,
};
use crate::auth::Auth;
use crate::master::{GetFabric, GetPortInfo, GetTopology, ReadPKeys, ReadbackProgress};
use crate::propose::WriteError;
use actix::Addr;
use errors::{
    Call, actor_err, admin_status, commit_unknown, forwarded_read_failure, forwarded_write_failure,
    not_leader_status, status_of,
};
use fabric::Topology;
use proto::admin::sm_admin_client::SmAdminClient;
use proto::admin::sm_admin_server::{SmAdmin, SmAdminServer};
use proto::admin::*;
use proto::peer::peer_client::PeerClient;
use proto::peer::{ProposeRequest, propose_reply};
use proto::state::{self, ApplyResult, Command, command::Kind};
use replica::ReplicatedState;
use replica::admin::{AdminError, policy, query};
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tonic::{Request, Response, Status};

/// Bound on one ReadIndex round (linearizable reads).
const READ_INDEX_TIMEOUT: Duration = Duration::from_secs(3);

/// Bound on one P_KeyTable read-back (Audit).
const READBACK_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a follower waits for the leader's figures of a ClusterStatus.
const LEADER_FIGURES_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

/// Header marking a call forwarded by a replica (a forwarded call is never forwarded again).
const FORWARDED: &str = "x-sm-forwarded";

/// The `SmAdmin` service.
pub struct AdminService {
    /// This replica's id.
    pub id: u64,
    /// Its RaftActor.
    pub raft: Addr<RaftActor>,
    /// Token checks.
    pub auth: Auth,
}

/// `inner` as a new request carrying the caller's token and the forwarded mark.
fn forwarded<T, U>(orig: &Request<T>, inner: U) -> Request<U> {
    let mut r = Request::new(inner);
    if let Some(v) = orig.metadata().get("authorization") {
        r.metadata_mut().insert("authorization", v.clone());
    }
    r.metadata_mut()
        .insert(FORWARDED, tonic::metadata::MetadataValue::from_static("1"));
    r
}

fn is_forwarded<T>(r: &Request<T>) -> bool {
    r.metadata().get(FORWARDED).is_some()
}

/// Stream type of WatchEvents.
pub type EventStream = Pin<Box<dyn futures_util::Stream<Item = Result<Event, Status>> + Send>>;

impl AdminService {
    /// The service of replica `id`, with the process's token settings.
    pub fn new(id: u64, raft: Addr<RaftActor>) -> AdminService {
        AdminService {
            id,
            raft,
            auth: crate::tls::current().auth,
        }
    }

    async fn read<R: Send + 'static>(
        &self,
        f: impl FnOnce(ReadView<'_>) -> R + Send + 'static,
    ) -> Result<R, Status> {
        self.raft
            .send(ReadState(Box::new(f)))
            .await
            .map_err(actor_err)
    }

    /// Proposes here when leader, else forwards the command to the leader (`Peer.Forward`).
    /// UNAVAILABLE when nothing was proposed; commit unknown when it was proposed (or sent to
    /// the leader) and the outcome did not come back.
    async fn propose(&self, cmd: Command) -> Result<ApplyResult, Status> {
        crate::metrics::proposal();
        match propose_local(&self.raft, cmd.clone()).await {
            Ok(r) => Ok(r),
            Err(WriteError::Refused(ProposeError::NotLeader {
                leader_id,
                leader_address,
            })) => {
                if leader_id == 0 || leader_address.is_empty() {
                    return Err(not_leader_status(leader_id, &leader_address));
                }
                self.forward_command(cmd, leader_id, &leader_address).await
            }
            Err(WriteError::Refused(e)) => Err(status_of(e, Call::Propose)),
            Err(WriteError::CommitUnknown(m)) => Err(commit_unknown(&m)),
        }
    }

    /// Proposes `cmd` at the leader (`Peer.Forward`).
    async fn forward_command(
        &self,
        cmd: Command,
        leader_id: u64,
        addr: &str,
    ) -> Result<ApplyResult, Status> {
        let ch = connect_for_write(addr).await.map_err(|e| {
            Status::unavailable(format!(
                "E_NODE_FORWARD: cannot reach the leader (replica {leader_id}) at {addr}; nothing was sent: {e}"
            ))
        })?;
        let mut c = PeerClient::new(ch)
            .max_decoding_message_size(MAX_MESSAGE)
            .max_encoding_message_size(MAX_MESSAGE);
        let req = ProposeRequest {
            from: self.id,
            command: Some(cmd),
        };
        let reply = c
            .forward(req)
            .await
            .map_err(|s| forwarded_write_failure(s, addr))?
            .into_inner();
        match reply.result {
            Some(propose_reply::Result::Applied(a)) => Ok(a),
            Some(propose_reply::Result::NotLeader(n)) => {
                Err(not_leader_status(n.leader_id, &n.leader_address))
            }
            Some(propose_reply::Result::Failed(m)) => Err(Status::unavailable(format!(
                "E_NODE_PROPOSE: the leader (replica {leader_id}) refused it: {m}"
            ))),
            Some(propose_reply::Result::CommitUnknown(m)) => Err(commit_unknown(&format!(
                "at the leader (replica {leader_id}): {m}"
            ))),
            None => Err(Status::internal("E_NODE_FORWARD: empty reply")),
        }
    }

    /// The leader (id, admin address) when it is another replica; None when this replica
    /// leads or no leader is known.
    async fn leader_elsewhere(&self) -> Result<Option<(u64, String)>, Status> {
        let st = self.raft.send(GetClusterStatus).await.map_err(actor_err)?;
        if st.leader_id == 0 || st.leader_id == st.self_id {
            return Ok(None);
        }
        Ok(st
            .replicas
            .iter()
            .find(|r| r.id == st.leader_id)
            .map(|r| (r.id, r.admin_address.clone())))
    }

    /// The leader's admin client and address; None when this replica is the leader.
    async fn leader_client(
        &self,
    ) -> Result<Option<(SmAdminClient<tonic::transport::Channel>, String)>, Status> {
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
        Ok(Some((
            SmAdminClient::new(ch)
                .max_decoding_message_size(MAX_MESSAGE)
                .max_encoding_message_size(limits::MAX_ADMIN_REQUEST),
            addr,
        )))
    }

    /// The leader's client (and address) for a read that must be answered there
    /// (UNAVAILABLE when this replica is the leader but cannot answer, or the call was
    /// forwarded already). Map its failures with [`forwarded_read_failure`].
    async fn must_forward<T>(
        &self,
        req: &Request<T>,
        why: &str,
    ) -> Result<(SmAdminClient<tonic::transport::Channel>, String), Status> {
        if is_forwarded(req) {
            return Err(Status::unavailable(format!(
                "E_NODE_FORWARD: forwarded here but {why}"
            )));
        }
        self.leader_client()
            .await?
            .ok_or_else(|| Status::unavailable(format!("E_NODE_NO_MASTER: {why}")))
    }

    /// The leader's client (and address) for a write this replica does not run itself,
    /// connected now: a failure to connect means nothing was sent (UNAVAILABLE). Map its
    /// failures with [`forwarded_write_failure`].
    async fn leader_for_write<T>(
        &self,
        req: &Request<T>,
    ) -> Result<(SmAdminClient<tonic::transport::Channel>, String), Status> {
        if is_forwarded(req) {
            return Err(Status::unavailable(
                "E_NODE_FORWARD: forwarded here but this replica does not lead (leadership moved?); nothing was proposed",
            ));
        }
        let Some((leader, addr)) = self.leader_elsewhere().await? else {
            return Err(not_leader_status(0, ""));
        };
        let ch = connect_for_write(&addr).await.map_err(|e| {
            Status::unavailable(format!(
                "E_NODE_FORWARD: cannot reach the leader (replica {leader}) at {addr}; nothing was sent: {e}"
            ))
        })?;
        Ok((
            SmAdminClient::new(ch)
                .max_decoding_message_size(MAX_MESSAGE)
                .max_encoding_message_size(limits::MAX_ADMIN_REQUEST),
            addr,
        ))
    }

    /// True when a `linearizable` read must go to the leader. On the leader, a ReadIndex
    /// round first confirms that a quorum still follows it and waits until this replica has
    /// applied the index read (then the local state answers linearizably).
    async fn needs_leader(&self, linearizable: bool) -> Result<bool, Status> {
        if !linearizable {
            return Ok(false);
        }
        match self.raft.send(ReadIndex).await.map_err(actor_err)? {
            Err(ProposeError::NotLeader { .. }) => Ok(true),
            Err(e) => Err(status_of(e, Call::ReadIndex)),
            Ok(rx) => match tokio::time::timeout(READ_INDEX_TIMEOUT, rx).await {
                Ok(Ok(Ok(_index))) => Ok(false),
                Ok(Ok(Err(e))) => Err(status_of(e, Call::ReadIndex)),
                Ok(Err(_)) => Err(Status::unavailable(
                    "E_NODE_READ_INDEX: the raft actor dropped the read",
                )),
                Err(_) => Err(Status::unavailable(format!(
                    "E_NODE_READ_INDEX: leadership not confirmed by a quorum within {READ_INDEX_TIMEOUT:?} (no quorum?)"
                ))),
            },
        }
    }

    /// The master's topology when this replica is master.
    async fn master_topology(&self) -> Result<Option<Arc<Topology>>, Status> {
        let Some(m) = self.read(|v| v.master).await? else {
            return Ok(None);
        };
        let (t, _) = m.send(GetTopology).await.map_err(actor_err)?;
        Ok(Some(t))
    }

    /// The fabric a policy is checked against: the master's last discovery and its nodes'
    /// P_Key table capacities, when this replica is master and has discovered something.
    async fn master_fabric(&self) -> Result<Option<(Arc<Topology>, partitions::Caps)>, Status> {
        let Some(m) = self.read(|v| v.master).await? else {
            return Ok(None);
        };
        let (t, caps) = m.send(GetFabric).await.map_err(actor_err)?;
        Ok((!t.is_empty()).then_some((t, caps)))
    }

    /// `policy::validate` of `text` (what `smctl partitions check` runs) against `fabric`,
    /// on a blocking thread: planning a large fabric must not hold the Raft actor.
    async fn validate(
        &self,
        fabric: Option<(Arc<Topology>, partitions::Caps)>,
        text: String,
    ) -> Result<ValidatePolicyReply, Status> {
        let opts = self.read(|v| policy::options(v.state)).await?;
        tokio::task::spawn_blocking(move || {
            policy::validate_with(opts, fabric.as_ref().map(|(t, c)| (t.as_ref(), c)), &text)
        })
        .await
        .map_err(|e| Status::internal(format!("E_NODE_POLICY_CHECK: {e}")))
    }

    /// Runs `f` on the state and the master's topology, here when master.
    async fn with_topology<R: Send + 'static>(
        &self,
        f: impl FnOnce(&ReplicatedState, &Topology) -> Result<R, AdminError> + Send + 'static,
    ) -> Result<Option<R>, Status> {
        let Some(t) = self.master_topology().await? else {
            return Ok(None);
        };
        self.read(move |v| f(v.state, &t))
            .await?
            .map(Some)
            .map_err(admin_status)
    }
}

/// Serves a topology read here when master, else forwards it to the leader.
macro_rules! topo_read {
    ($self:ident, $req:ident, $method:ident, $f:expr) => {{
        $self.auth.read(&$req)?;
        let inner = $req.get_ref().clone();
        let f = $f;
        let local = if $self.needs_leader($req.get_ref().linearizable).await? {
            None
        } else {
            $self.with_topology(move |st, t| f(st, t, &inner)).await?
        };
        match local {
            Some(r) => Ok(Response::new(r)),
            None => {
                let (mut c, addr) = $self
                    .must_forward(&$req, "the master is not on this replica yet")
                    .await?;
                let fwd = forwarded(&$req, $req.get_ref().clone());
                c.$method(fwd)
                    .await
                    .map_err(|s| forwarded_read_failure(s, &addr))
            }
        }
    }};
}

/// Serves a plain read here, or at the leader when `linearizable` needs it.
macro_rules! state_read {
    ($self:ident, $req:ident, $method:ident, $local:expr) => {{
        $self.auth.read(&$req)?;
        if $self.needs_leader($req.get_ref().linearizable).await? {
            let (mut c, addr) = $self
                .must_forward(
                    &$req,
                    "no leader with a valid lease for a linearizable read",
                )
                .await?;
            let fwd = forwarded(&$req, $req.get_ref().clone());
            return c
                .$method(fwd)
                .await
                .map_err(|s| forwarded_read_failure(s, &addr));
        }
        $local
    }};
}

#[tonic::async_trait]
impl SmAdmin for AdminService {
    async fn cluster_status(
        &self,
        req: Request<ClusterStatusRequest>,
    ) -> Result<Response<ClusterStatusReply>, Status> {
        let _t = crate::metrics::RpcTimer::new("ClusterStatus");
        state_read!(self, req, cluster_status, {
            let st = self.raft.send(GetClusterStatus).await.map_err(actor_err)?;
            // A follower knows neither the replicas' progress nor the master's sweeps: it
            // asks the leader (bounded), and answers with its own figures if that fails.
            if st.leader_id == 0 || st.leader_id == st.self_id || is_forwarded(&req) {
                return Ok(Response::new(st));
            }
            let Ok(Some((mut c, _))) = self.leader_client().await else {
                return Ok(Response::new(st));
            };
            let fwd = forwarded(&req, ClusterStatusRequest::default());
            match tokio::time::timeout(LEADER_FIGURES_WAIT, c.cluster_status(fwd)).await {
                Ok(Ok(l)) => Ok(Response::new(views::cluster::with_leader_figures(
                    st,
                    &l.into_inner(),
                ))),
                _ => Ok(Response::new(st)),
            }
        })
    }

    async fn get_policy(
        &self,
        req: Request<GetPolicyRequest>,
    ) -> Result<Response<GetPolicyReply>, Status> {
        let _t = crate::metrics::RpcTimer::new("GetPolicy");
        state_read!(self, req, get_policy, {
            Ok(Response::new(
                self.raft
                    .send(GetPolicy { qos: false })
                    .await
                    .map_err(actor_err)?,
            ))
        })
    }

    async fn apply_policy(
        &self,
        req: Request<ApplyPolicyRequest>,
    ) -> Result<Response<ApplyPolicyReply>, Status> {
        let _t = crate::metrics::RpcTimer::new("ApplyPolicy");
        self.auth.admin(&req, "ApplyPolicy")?;
        // Checked before anything is proposed: a text over the size limit is not parsed, a
        // text that does not parse or that `smctl partitions check` calls an error never
        // reaches the log. The check needs the fabric (the ports' PartitionCap): it runs at
        // the master, so a replica that is not master forwards the call to the leader.
        policy::check_size(&req.get_ref().text).map_err(admin_status)?;
        if let Some(e) = policy::syntax_error(&req.get_ref().text) {
            return Err(admin_status(e));
        }
        let fabric = self.master_fabric().await?;
        if fabric.is_none() && !is_forwarded(&req) && self.leader_elsewhere().await?.is_some() {
            let (mut c, addr) = self.leader_for_write(&req).await?;
            let fwd = forwarded(&req, req.get_ref().clone());
            return c
                .apply_policy(fwd)
                .await
                .map_err(|s| forwarded_write_failure(s, &addr));
        }
        let r = req.into_inner();
        let checked = self.validate(fabric, r.text.clone()).await?;
        if !checked.ok {
            return Err(errors::policy_invalid(&checked));
        }
        let warnings = checked
            .diagnostics
            .into_iter()
            .map(|d| format!("{} {}:{} {}", d.code, d.line, d.col, d.message))
            .collect();
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
                warnings,
            }));
        }
        Err(errors::policy_refusal(&a))
    }

    async fn get_qos_policy(
        &self,
        req: Request<GetPolicyRequest>,
    ) -> Result<Response<GetPolicyReply>, Status> {
        let _t = crate::metrics::RpcTimer::new("GetQosPolicy");
        state_read!(self, req, get_qos_policy, {
            let m = GetPolicy { qos: true };
            Ok(Response::new(self.raft.send(m).await.map_err(actor_err)?))
        })
    }

    async fn get_vl_tables(
        &self,
        req: Request<GetVlTablesRequest>,
    ) -> Result<Response<GetVlTablesReply>, Status> {
        let _t = crate::metrics::RpcTimer::new("GetVlTables");
        state_read!(self, req, get_vl_tables, {
            let m = GetVlTables(req.get_ref().node_guid);
            Ok(Response::new(self.raft.send(m).await.map_err(actor_err)?))
        })
    }

    /// Checked before anything is proposed (size, syntax); the version rule at apply.
    async fn apply_qos_policy(
        &self,
        req: Request<ApplyPolicyRequest>,
    ) -> Result<Response<ApplyPolicyReply>, Status> {
        let _t = crate::metrics::RpcTimer::new("ApplyQosPolicy");
        self.auth.admin(&req, "ApplyQosPolicy")?;
        let r = req.into_inner();
        let warnings = replica::admin::qos::check(&r.text, &[]).map_err(admin_status)?;
        let kind = Kind::ApplyQosPolicy(state::ApplyPolicy {
            text: r.text,
            expected_version: r.expected_version,
        });
        let cmd = Command {
            request_id: r.request_id,
            kind: Some(kind),
        };
        let a = self.propose(cmd).await?;
        if !a.accepted {
            return Err(errors::policy_refusal(&a));
        }
        let (version, index) = (a.policy_version, a.index);
        Ok(Response::new(ApplyPolicyReply {
            version,
            index,
            warnings,
        }))
    }

    async fn trigger_sweep(
        &self,
        req: Request<TriggerSweepRequest>,
    ) -> Result<Response<TriggerSweepReply>, Status> {
        let _t = crate::metrics::RpcTimer::new("TriggerSweep");
        self.auth.admin(&req, "TriggerSweep")?;
        let heavy = req.get_ref().heavy;
        match self
            .raft
            .send(TriggerSweep { heavy })
            .await
            .map_err(actor_err)?
        {
            Ok(master_id) => Ok(Response::new(TriggerSweepReply { master_id })),
            Err(_) => {
                let (mut c, addr) = self.must_forward(&req, "the master is starting").await?;
                c.trigger_sweep(forwarded(&req, TriggerSweepRequest { heavy }))
                    .await
                    .map_err(|s| forwarded_read_failure(s, &addr))
            }
        }
    }

    async fn transfer_master(
        &self,
        req: Request<TransferMasterRequest>,
    ) -> Result<Response<TransferMasterReply>, Status> {
        let _t = crate::metrics::RpcTimer::new("TransferMaster");
        self.auth.admin(&req, "TransferMaster")?;
        let to = req.get_ref().to_replica;
        match self
            .raft
            .send(TransferLeader(to))
            .await
            .map_err(actor_err)?
        {
            Ok(()) => {}
            Err(ProposeError::NotLeader { .. }) => {
                let (mut c, addr) = self.must_forward(&req, "no leader").await?;
                return c
                    .transfer_master(forwarded(&req, TransferMasterRequest { to_replica: to }))
                    .await
                    .map_err(|s| forwarded_read_failure(s, &addr));
            }
            Err(e) => return Err(status_of(e, Call::Transfer)),
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

    async fn sm_info(&self, req: Request<SmInfoRequest>) -> Result<Response<SmInfoReply>, Status> {
        let _t = crate::metrics::RpcTimer::new("SmInfo");
        state_read!(self, req, sm_info, {
            let r = self
                .read(|v| {
                    let me_master = v.state.master().is_some_and(|m| m.replica_id == v.self_id);
                    (query::sm_info(v.state, Some(v.priority)), me_master)
                })
                .await?;
            let (mut info, me_master) = r;
            if !me_master && !is_forwarded(&req) {
                // The priority is the master's own configuration: ask it.
                if let Ok(Some((mut c, _))) = self.leader_client().await
                    && let Ok(l) = c.sm_info(forwarded(&req, *req.get_ref())).await
                {
                    info.priority = l.into_inner().priority;
                }
            }
            Ok(Response::new(info))
        })
    }

    async fn list_nodes(
        &self,
        req: Request<ListNodesRequest>,
    ) -> Result<Response<ListNodesReply>, Status> {
        let _t = crate::metrics::RpcTimer::new("ListNodes");
        topo_read!(
            self,
            req,
            list_nodes,
            |st: &ReplicatedState, t: &Topology, r: &ListNodesRequest| {
                Ok(query::list_nodes(st, t, r))
            }
        )
    }

    async fn get_port(
        &self,
        req: Request<GetPortRequest>,
    ) -> Result<Response<GetPortReply>, Status> {
        let _t = crate::metrics::RpcTimer::new("GetPort");
        self.auth.read(&req)?;
        let here = if self.needs_leader(req.get_ref().linearizable).await? {
            None
        } else {
            self.read(|v| v.master).await?
        };
        let Some(m) = here else {
            let (mut c, addr) = self
                .must_forward(&req, "the master is not on this replica yet")
                .await?;
            return c
                .get_port(forwarded(&req, *req.get_ref()))
                .await
                .map_err(|s| forwarded_read_failure(s, &addr));
        };
        let (t, _) = m.send(GetTopology).await.map_err(actor_err)?;
        let inner = *req.get_ref();
        let mut reply = self
            .read(move |v| query::get_port(v.state, &t, &inner))
            .await?
            .map_err(admin_status)?;
        let asked = GetPortInfo {
            node: fabric::Guid(reply.node_guid),
            port: reply.port as u8,
        };
        if let Some(pi) = m.send(asked).await.map_err(actor_err)? {
            let read = views::portinfo::ReadBy {
                sweep: pi.sweep,
                unix_ms: pi.read_unix_ms,
                replica: self.id,
            };
            views::portinfo::fill(&mut reply, &pi.info, read);
        }
        Ok(Response::new(reply))
    }

    async fn get_route(
        &self,
        req: Request<GetRouteRequest>,
    ) -> Result<Response<GetRouteReply>, Status> {
        let _t = crate::metrics::RpcTimer::new("GetRoute");
        topo_read!(self, req, get_route, query::get_route)
    }

    async fn trace_path(
        &self,
        req: Request<TracePathRequest>,
    ) -> Result<Response<TracePathReply>, Status> {
        let _t = crate::metrics::RpcTimer::new("TracePath");
        topo_read!(self, req, trace_path, query::trace)
    }

    async fn validate_policy(
        &self,
        req: Request<ValidatePolicyRequest>,
    ) -> Result<Response<ValidatePolicyReply>, Status> {
        let _t = crate::metrics::RpcTimer::new("ValidatePolicy");
        self.auth.read(&req)?;
        // The check ApplyPolicy runs, with the fabric where it is known: at the master.
        let fabric = self.master_fabric().await?;
        if fabric.is_none()
            && !is_forwarded(&req)
            && let Some((_, addr)) = self.leader_elsewhere().await?
            && let Some((mut c, _)) = self.leader_client().await?
        {
            let fwd = forwarded(&req, req.get_ref().clone());
            return c
                .validate_policy(fwd)
                .await
                .map_err(|s| forwarded_read_failure(s, &addr));
        }
        let r = self.validate(fabric, req.into_inner().text).await?;
        Ok(Response::new(r))
    }

    async fn diff_policy(
        &self,
        req: Request<DiffPolicyRequest>,
    ) -> Result<Response<DiffPolicyReply>, Status> {
        let _t = crate::metrics::RpcTimer::new("DiffPolicy");
        topo_read!(
            self,
            req,
            diff_policy,
            |st: &ReplicatedState, t: &Topology, r: &DiffPolicyRequest| {
                policy::diff(st, t, &r.text)
            }
        )
    }

    async fn plan_policy(
        &self,
        req: Request<PlanPolicyRequest>,
    ) -> Result<Response<PlanPolicyReply>, Status> {
        let _t = crate::metrics::RpcTimer::new("PlanPolicy");
        topo_read!(
            self,
            req,
            plan_policy,
            |st: &ReplicatedState, t: &Topology, r: &PlanPolicyRequest| {
                policy::plan(st, t, (!r.text.is_empty()).then_some(r.text.as_str()))
            }
        )
    }

    async fn audit(&self, req: Request<AuditRequest>) -> Result<Response<AuditReply>, Status> {
        let _t = crate::metrics::RpcTimer::new("Audit");
        self.auth.read(&req)?;
        let Some(m) = self.read(|v| v.master).await? else {
            let (mut c, addr) = self
                .must_forward(&req, "the master is not on this replica yet")
                .await?;
            return c
                .audit(forwarded(&req, *req.get_ref()))
                .await
                .map_err(|s| forwarded_read_failure(s, &addr));
        };
        let (t, _) = m.send(GetTopology).await.map_err(actor_err)?;
        let rb = tokio::time::timeout(READBACK_TIMEOUT, m.send(ReadPKeys))
            .await
            .map_err(|_| {
                Status::deadline_exceeded(format!(
                    "E_NODE_READBACK: the P_KeyTable read-back did not finish within {READBACK_TIMEOUT:?}"
                ))
            })?
            .map_err(actor_err)?
            .map_err(|e| Status::unavailable(format!("E_NODE_READBACK: {e}")))?;
        let rb = policy::Readback {
            readings: rb.tables.into_iter().map(reading).collect(),
            unanswered: rb.unanswered,
            smps: rb.smps,
            read_ms: rb.finished.saturating_sub(rb.requested) / 1_000_000,
            read_unix_ms: crate::clock::unix_ms(),
            replica: self.id,
            vl: rb
                .vl
                .into_iter()
                .map(|(g, a, m, d)| (g, vl_attr(a), m, d))
                .collect(),
        };
        let r = self.read(move |v| policy::audit(v.state, &t, &rb)).await?;
        Ok(Response::new(r))
    }

    async fn audit_progress(
        &self,
        req: Request<AuditProgressRequest>,
    ) -> Result<Response<AuditProgressReply>, Status> {
        self.auth.read(&req)?;
        let Some(m) = self.read(|v| v.master).await? else {
            let (mut c, addr) = self
                .must_forward(&req, "the master is not on this replica yet")
                .await?;
            return c
                .audit_progress(forwarded(&req, *req.get_ref()))
                .await
                .map_err(|s| forwarded_read_failure(s, &addr));
        };
        let p = m.send(ReadbackProgress).await.map_err(actor_err)?;
        Ok(Response::new(AuditProgressReply {
            running: p.is_some(),
            ports_done: p.map_or(0, |x| x.0 as u32),
            ports_total: p.map_or(0, |x| x.1 as u32),
            replica: self.id,
        }))
    }

    async fn change_membership(
        &self,
        req: Request<ChangeMembershipRequest>,
    ) -> Result<Response<ChangeMembershipReply>, Status> {
        let _t = crate::metrics::RpcTimer::new("ChangeMembership");
        self.change_membership_impl(req).await
    }

    async fn get_sa(&self, req: Request<GetSaRequest>) -> Result<Response<GetSaReply>, Status> {
        let _t = crate::metrics::RpcTimer::new("GetSa");
        self.get_sa_impl(req).await
    }

    async fn list_tenants(
        &self,
        req: Request<ListTenantsRequest>,
    ) -> Result<Response<ListTenantsReply>, Status> {
        let _t = crate::metrics::RpcTimer::new("ListTenants");
        self.list_tenants_impl(req).await
    }

    async fn set_tenant(
        &self,
        req: Request<SetTenantRequest>,
    ) -> Result<Response<SetTenantReply>, Status> {
        let _t = crate::metrics::RpcTimer::new("SetTenant");
        self.set_tenant_impl(req).await
    }

    async fn delete_tenant(
        &self,
        req: Request<DeleteTenantRequest>,
    ) -> Result<Response<DeleteTenantReply>, Status> {
        let _t = crate::metrics::RpcTimer::new("DeleteTenant");
        self.delete_tenant_impl(req).await
    }

    async fn change_guids(
        &self,
        r: Request<ChangeGuidsRequest>,
    ) -> Result<Response<ChangeGuidsReply>, Status> {
        let _t = crate::metrics::RpcTimer::new("ChangeGuids");
        self.change_guids_impl(r).await
    }

    async fn get_tenant_assignment(
        &self,
        req: Request<GetTenantAssignmentRequest>,
    ) -> Result<Response<GetTenantAssignmentReply>, Status> {
        let _t = crate::metrics::RpcTimer::new("GetTenantAssignment");
        self.get_tenant_assignment_impl(req).await
    }

    async fn get_counters(
        &self,
        req: Request<GetCountersRequest>,
    ) -> Result<Response<GetCountersReply>, Status> {
        let _t = crate::metrics::RpcTimer::new("GetCounters");
        self.get_counters_impl(req).await
    }

    async fn get_errors(
        &self,
        req: Request<GetErrorsRequest>,
    ) -> Result<Response<GetErrorsReply>, Status> {
        let _t = crate::metrics::RpcTimer::new("GetErrors");
        self.get_errors_impl(req).await
    }

    async fn get_link_health(
        &self,
        req: Request<GetLinkHealthRequest>,
    ) -> Result<Response<GetLinkHealthReply>, Status> {
        let _t = crate::metrics::RpcTimer::new("GetLinkHealth");
        self.get_link_health_impl(req).await
    }

    async fn explain(
        &self,
        req: Request<ExplainRequest>,
    ) -> Result<Response<ExplainReply>, Status> {
        let _t = crate::metrics::RpcTimer::new("Explain");
        self.explain_impl(req).await
    }

    type WatchEventsStream = EventStream;

    async fn watch_events(
        &self,
        req: Request<WatchEventsRequest>,
    ) -> Result<Response<EventStream>, Status> {
        let _t = crate::metrics::RpcTimer::new("WatchEvents");
        self.auth.read(&req)?;
        let mut rx = watch::spawn(self.raft.clone(), req.into_inner().kinds);
        let s = futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx).map(|o| o.map(Ok)));
        Ok(Response::new(Box::pin(s)))
    }
}

/// One table the master read back, as the audit takes it.
fn reading(x: sm_core::PortTable) -> partitions::PortReading {
    partitions::PortReading {
        node: x.node,
        port: x.port,
        pkeys: x.pkeys.into_iter().map(fabric::PKey).collect(),
        capacity: Some(x.capacity),
        enforce_in: x.enforce_in,
        enforce_out: x.enforce_out,
    }
}

/// The `SmAdmin` server for `svc`: requests up to [`limits::MAX_ADMIN_REQUEST`], answers up
/// to the peer transport's `MAX_MESSAGE`.
pub fn admin_server(svc: AdminService) -> SmAdminServer<AdminService> {
    SmAdminServer::new(svc)
        .max_decoding_message_size(limits::MAX_ADMIN_REQUEST)
        .max_encoding_message_size(MAX_MESSAGE)
}

/// The replicated state's `VlBlock.attr` of a VL attribute.
fn vl_attr(a: sm_core::VlAttr) -> u32 {
    match a {
        sm_core::VlAttr::SlToVl => replica::vl::VL_ATTR_SL2VL,
        sm_core::VlAttr::VlArb => replica::vl::VL_ATTR_VLARB,
    }
}
