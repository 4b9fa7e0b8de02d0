//! The messages the RaftActor answers: each one an input of the core (or a read of it),
//! followed by carrying out the core's outputs.

use super::RaftActor;
use crate::master::{MasterActor, RequestSweep};
use crate::milestone::Milestone;
use crate::propose::{Propose, ProposeError};
use actix::prelude::*;
use fabric::Guid;
use proto::admin::{ClusterStatusReply, GetPolicyReply, GetVlTablesReply};
use proto::state::ApplyResult;
use raft::eraftpb::Message as RaftMessage;
use replica::ReplicatedState;
use std::time::Instant;
use tokio::sync::{mpsc, oneshot};

/// Raft messages from a peer (encoded eraftpb::Message).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Step(pub Vec<Vec<u8>>);

impl Handler<Step> for RaftActor {
    type Result = ();
    fn handle(&mut self, m: Step, ctx: &mut Context<Self>) {
        use protobuf::Message as _;
        let msgs: Vec<RaftMessage> =
            m.0.iter()
                .filter_map(|b| match RaftMessage::parse_from_bytes(b) {
                    Ok(msg) => Some(msg),
                    Err(e) => {
                        tracing::warn!("E_NODE_PEER: undecodable raft message: {e}");
                        None
                    }
                })
                .collect();
        let (now, bytes, t0) = (
            self.now(),
            m.0.iter().map(Vec::len).sum::<usize>(),
            Instant::now(),
        );
        self.core.step_batch(now, msgs);
        self.slow("a step", bytes, t0);
        self.drive(ctx);
    }
}

impl Handler<Propose> for RaftActor {
    type Result = Result<oneshot::Receiver<ApplyResult>, ProposeError>;
    fn handle(&mut self, m: Propose, ctx: &mut Context<Self>) -> Self::Result {
        let now = self.now();
        let request = self.core.propose(now, m.0)?;
        let (tx, rx) = oneshot::channel();
        self.pending.insert(request, tx);
        self.drive(ctx);
        Ok(rx)
    }
}

/// Confirms leadership with a ReadIndex round; answers the read index once it is applied
/// here (the caller then reads the applied state), or NotLeader.
#[derive(Message)]
#[rtype(result = "Result<oneshot::Receiver<Result<u64, ProposeError>>, ProposeError>")]
pub struct ReadIndex;

impl Handler<ReadIndex> for RaftActor {
    type Result = Result<oneshot::Receiver<Result<u64, ProposeError>>, ProposeError>;
    fn handle(&mut self, _: ReadIndex, ctx: &mut Context<Self>) -> Self::Result {
        let now = self.now();
        let ticket = self.core.read_index(now)?;
        let (tx, rx) = oneshot::channel();
        self.reads.insert(ticket, tx);
        self.drive(ctx);
        Ok(rx)
    }
}

/// The cluster as this replica sees it.
#[derive(Message)]
#[rtype(result = "ClusterStatusReply")]
pub struct GetClusterStatus;

impl Handler<GetClusterStatus> for RaftActor {
    type Result = MessageResult<GetClusterStatus>;
    fn handle(&mut self, _: GetClusterStatus, _: &mut Context<Self>) -> Self::Result {
        MessageResult(crate::cluster::admin::status::reply(
            &self.core.status(),
            self.core.state(),
            crate::cluster::admin::status::Own {
                priority: self.node_cfg.priority,
                port_guid: self.cfg.port_guid,
                last_sweep_unix_ms: self.last_sweep_unix_ms,
                subnet_up_unix_ms: self.subnet_up_unix_ms,
                programmed: self.programmed,
            },
        ))
    }
}

/// The policy in force here.
#[derive(Message)]
#[rtype(result = "GetPolicyReply")]
pub struct GetPolicy {
    /// The QoS policy instead of the partition policy.
    pub qos: bool,
}

impl Handler<GetPolicy> for RaftActor {
    type Result = MessageResult<GetPolicy>;
    fn handle(&mut self, m: GetPolicy, _: &mut Context<Self>) -> Self::Result {
        let st = self.core.state();
        let p = if m.qos { st.qos_policy() } else { st.policy() };
        MessageResult(GetPolicyReply {
            text: p.text.clone(),
            version: p.version,
            applied_at_index: p.applied_at_index,
        })
    }
}

/// The VL table blocks as programmed (of one node, or all).
#[derive(Message)]
#[rtype(result = "GetVlTablesReply")]
pub struct GetVlTables(pub u64);

impl Handler<GetVlTables> for RaftActor {
    type Result = MessageResult<GetVlTables>;
    fn handle(&mut self, m: GetVlTables, _: &mut Context<Self>) -> Self::Result {
        MessageResult(replica::admin::query::vl_tables(self.core.state(), m.0))
    }
}

/// Asks the master for a sweep; answers the master's id, or not-leader.
#[derive(Message)]
#[rtype(result = "Result<u64, ProposeError>")]
pub struct TriggerSweep {
    /// Heavy sweep.
    pub heavy: bool,
}

impl Handler<TriggerSweep> for RaftActor {
    type Result = Result<u64, ProposeError>;
    fn handle(&mut self, m: TriggerSweep, _: &mut Context<Self>) -> Self::Result {
        match self.master() {
            Some(a) => {
                a.do_send(RequestSweep { heavy: m.heavy });
                Ok(self.cfg.id)
            }
            None => Err(self.not_leader()),
        }
    }
}

/// Transfers leadership (hence the master role) to a replica.
#[derive(Message)]
#[rtype(result = "Result<(), ProposeError>")]
pub struct TransferLeader(pub u64);

impl Handler<TransferLeader> for RaftActor {
    type Result = Result<(), ProposeError>;
    fn handle(&mut self, m: TransferLeader, ctx: &mut Context<Self>) -> Self::Result {
        let now = self.now();
        let r = self.core.transfer_leader(now, m.0);
        self.drive(ctx);
        r
    }
}

/// The other replicas' SM priorities and port GUIDs (from the preference loop): a leader
/// hands over to a caught-up replica of higher priority.
#[derive(Message)]
#[rtype(result = "Option<u64>")]
pub struct ConsiderPriorities(pub Vec<(u64, u8, Guid)>);

impl Handler<ConsiderPriorities> for RaftActor {
    type Result = Option<u64>;
    fn handle(&mut self, m: ConsiderPriorities, ctx: &mut Context<Self>) -> Self::Result {
        let now = self.now();
        let r = self.core.consider_priorities(now, &m.0);
        self.drive(ctx);
        r
    }
}

/// Adds (true) or removes (false) a voter through a conf change.
#[derive(Message)]
#[rtype(result = "Result<(), ProposeError>")]
pub struct ChangeMembership {
    /// Raft id.
    pub id: u64,
    /// Add or remove.
    pub add: bool,
}

impl Handler<ChangeMembership> for RaftActor {
    type Result = Result<(), ProposeError>;
    fn handle(&mut self, m: ChangeMembership, ctx: &mut Context<Self>) -> Self::Result {
        let now = self.now();
        let r = self.core.change_membership(now, m.id, m.add);
        self.drive(ctx);
        r
    }
}

/// Graceful stop: a leader hands leadership to a caught-up peer first (bounded wait), then
/// the master stops. Answers when done.
#[derive(Message)]
#[rtype(result = "oneshot::Receiver<()>")]
pub struct GracefulStop;

impl Handler<GracefulStop> for RaftActor {
    type Result = MessageResult<GracefulStop>;
    fn handle(&mut self, _: GracefulStop, ctx: &mut Context<Self>) -> Self::Result {
        let (tx, rx) = oneshot::channel();
        self.stop_waiters.push(tx);
        let now = self.now();
        self.core.graceful_stop(now);
        self.drive(ctx);
        MessageResult(rx)
    }
}

/// What an admin query sees of a replica (see [`ReadState`]).
pub struct ReadView<'a> {
    /// The applied state.
    pub state: &'a ReplicatedState,
    /// True when this replica leads with a valid lease (its reads are linearizable).
    pub leader_with_lease: bool,
    /// This replica's Raft id.
    pub self_id: u64,
    /// Configured SM priority.
    pub priority: u8,
    /// Current term.
    pub term: u64,
    /// Known leader (0 = none).
    pub leader_id: u64,
    /// The master actor when this replica is master.
    pub master: Option<Addr<MasterActor>>,
}

/// Runs a read-only closure on this replica's state (admin queries).
pub struct ReadState<R: Send + 'static>(pub Box<dyn FnOnce(ReadView<'_>) -> R + Send>);

impl<R: Send + 'static> Message for ReadState<R> {
    type Result = R;
}

impl<R: Send + 'static> Handler<ReadState<R>> for RaftActor {
    type Result = MessageResult<ReadState<R>>;
    fn handle(&mut self, m: ReadState<R>, _: &mut Context<Self>) -> Self::Result {
        let now = self.now();
        let view = ReadView {
            state: self.core.state(),
            leader_with_lease: self.core.is_leader() && self.core.lease_valid(now),
            self_id: self.cfg.id,
            priority: self.node_cfg.priority,
            term: self.core.term(),
            leader_id: self.core.leader_id(),
            master: self.master(),
        };
        MessageResult((m.0)(view))
    }
}

/// Adds an observer of the milestones of every master started from now on.
#[derive(Message)]
#[rtype(result = "()")]
pub struct AddObserver(pub mpsc::UnboundedSender<Milestone>);

impl Handler<AddObserver> for RaftActor {
    type Result = ();
    fn handle(&mut self, m: AddObserver, _: &mut Context<Self>) {
        self.observers.push(m.0);
    }
}

impl RaftActor {
    /// The running master's actor, if this replica is master.
    fn master(&self) -> Option<Addr<MasterActor>> {
        self.core
            .master_gen()
            .and_then(|g| self.roles.get(&g).cloned())
    }

    fn not_leader(&self) -> ProposeError {
        let leader_id = self.core.leader_id();
        ProposeError::NotLeader {
            leader_id,
            leader_address: self.cfg.peers.get(&leader_id).cloned().unwrap_or_default(),
        }
    }
}
