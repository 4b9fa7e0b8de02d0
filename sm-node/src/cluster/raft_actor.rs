//! [`RaftActor`]: owns raft-rs's `RawNode` over the sled storage and the replicated state;
//! ticks, handles Ready in raft-rs's order (send; apply snapshot; apply committed; append;
//! hard state; FLUSH; send persisted messages; advance), answers proposals matched by the
//! request id in the entry, keeps the write lease, and holds the master role: it starts a
//! [`MasterActor`] once it leads and has applied its term's first entry, records the
//! master's sweep results through Raft, and stops the master the moment it steps down.

use super::lease::{AckBook, Lease};
use super::seed::{self, SweepTables};
use super::{ClusterConfig, PeerTx};
use crate::config::NodeConfig;
use crate::daemon;
use crate::master::{
    GetTables, IntentCommitted, MasterActor, MasterParts, RequestSweep, SetIntentSink, Shutdown,
};
use crate::milestone::{Milestone, MilestoneKind};
use crate::pool::RoutingPool;
use actix::prelude::*;
use prost::Message as _;
use proto::admin::{ClusterStatusReply, GetPolicyReply, MasterInfo, ReplicaStatus, Role};
use proto::state::{ApplyResult, Command, MasterRecord, Noop, command::Kind};
use protobuf::Message as _;
use raft::eraftpb::{
    ConfChange, ConfChangeType, ConfChangeV2, Entry, EntryType, Message as RaftMessage, Snapshot,
};
use raft::{RawNode, StateRole, Storage as _};
use replica::ReplicatedState;
use sm_core::Sweeper;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use storage::{RaftLog, SledStorage};
use tokio::sync::{mpsc, oneshot};

/// Entries applied between two saves of the applied state.
const SAVE_APPLIED_EVERY: u64 = 64;
/// M_Key base when the replicated configuration sets none.
const DEFAULT_M_KEY_BASE: u64 = 0x5153_4D5F_4D4B_4559;
/// A proposal not answered within this is dropped (the caller times out first).
const PROPOSAL_TTL: Duration = Duration::from_secs(30);

mod read_index;
pub use read_index::ReadIndex;

/// Why a proposal was not taken.
#[derive(Clone, Debug)]
pub enum ProposeError {
    /// This replica is not the leader; the leader it knows of (0 = none) and its address.
    NotLeader {
        /// Raft id.
        leader_id: u64,
        /// Peer/admin address ("" when unknown).
        leader_address: String,
    },
    /// raft-rs refused it.
    Failed(String),
}

/// The RaftActor.
pub struct RaftActor {
    cfg: ClusterConfig,
    node_cfg: NodeConfig,
    raw: RawNode<SledStorage>,
    store: SledStorage,
    state: ReplicatedState,
    peers: PeerTx,
    pending: HashMap<u64, (Instant, oneshot::Sender<ApplyResult>)>,
    answers: Vec<(oneshot::Sender<ApplyResult>, ApplyResult)>,
    next_request: u64,
    lease: Arc<Lease>,
    /// Acknowledgements of this leadership, dated by the send of the heartbeat answered.
    acks: AckBook<Instant>,
    /// Term of the leadership being held, and the index its first entry has.
    leading: Option<(u64, u64)>,
    master: Option<(u64, Addr<MasterActor>)>,
    /// Master generation counter (milestones of a stopped master are told apart).
    master_gen: u64,
    /// Restart the master once the current one reports Stopped (policy changed).
    restart_master: bool,
    pool: RoutingPool,
    observers: Vec<mpsc::UnboundedSender<Milestone>>,
    fence_dropped: Arc<AtomicU64>,
    last_saved: u64,
    last_snapshot: u64,
    subnet_up_unix_ms: u64,
    last_sweep_unix_ms: u64,
    stop_waiters: Vec<oneshot::Sender<()>>,
    stopping: Option<Instant>,
    recording: bool,
    /// No master start before this (after a failed start, e.g. the port still attached).
    master_retry_at: Option<Instant>,
    /// The standby SM attached to the fabric while this replica is not master (answers
    /// SMInfo STANDBY, sends nothing else).
    standby: Option<(u64, Addr<MasterActor>)>,
    /// The master or standby being stopped (its generation): nothing attaches until its
    /// Stopped milestone says the port is free.
    detaching: Option<u64>,
    /// Stopping for good: no master or standby starts again.
    shut: bool,
    /// Linearizable reads in a ReadIndex round.
    reads: read_index::ReadWaiters,
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn logger() -> slog::Logger {
    slog::Logger::root(slog::Discard, slog::o!())
}

impl RaftActor {
    /// Opens the storage in `cfg.data_dir` (initialising it with the configured voters on
    /// first start), recovers the applied state and builds the RawNode.
    pub fn new(
        cfg: ClusterConfig,
        node_cfg: NodeConfig,
        peers: PeerTx,
        observers: Vec<mpsc::UnboundedSender<Milestone>>,
    ) -> Result<RaftActor, crate::NodeError> {
        let err = |e: String| crate::NodeError::Cluster(format!("E_NODE_RAFT: {e}"));
        std::fs::create_dir_all(&cfg.data_dir)
            .map_err(|e| err(format!("{}: {e}", cfg.data_dir.display())))?;
        let store =
            SledStorage::open_with_lock_wait(cfg.data_dir.join("raft"), Duration::from_secs(5))
                .map_err(|e| err(e.to_string()))?;
        let st = store.initial_state().map_err(|e| err(e.to_string()))?;
        if !st.initialized() {
            let cs = raft::eraftpb::ConfState {
                voters: if cfg.voters.is_empty() {
                    cfg.peers.keys().copied().collect()
                } else {
                    cfg.voters.clone()
                },
                ..Default::default()
            };
            store
                .initialize_with_conf_state(cs)
                .and_then(|_| store.flush())
                .map_err(|e| err(e.to_string()))?;
        }
        let (applied, state) = match store.recovery_state().map_err(|e| err(e.to_string()))? {
            Some(a) => (
                a.index,
                ReplicatedState::restore(&a.data).map_err(|e| err(e.to_string()))?,
            ),
            None => (0, ReplicatedState::new()),
        };
        let rc = raft::Config {
            id: cfg.id,
            election_tick: cfg.election_ticks,
            heartbeat_tick: cfg.heartbeat_ticks,
            min_election_tick: cfg.election_ticks,
            max_election_tick: cfg.election_ticks * 2,
            check_quorum: true,
            pre_vote: true,
            applied,
            max_size_per_msg: 1024 * 1024,
            max_inflight_msgs: 256,
            ..raft::Config::default()
        };
        let raw = RawNode::new(&rc, store.clone(), &logger()).map_err(|e| err(e.to_string()))?;
        let snap_index = store.snapshot_metadata().map(|m| m.index).unwrap_or(0);
        tracing::info!(
            "replica {} recovered: applied index {applied}, policy version {}, {} LIDs, {} LFTs",
            cfg.id,
            state.policy().version,
            state.guid2lid().len(),
            state.lfts().count()
        );
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Ok(RaftActor {
            next_request: (cfg.id << 56) | (nanos & ((1 << 56) - 1)),
            pool: RoutingPool::start(node_cfg.workers),
            cfg,
            node_cfg,
            raw,
            store,
            state,
            peers,
            pending: HashMap::new(),
            answers: Vec::new(),
            lease: Lease::new(),
            acks: AckBook::new(),
            leading: None,
            master: None,
            master_gen: 0,
            restart_master: false,
            observers,
            fence_dropped: Arc::new(AtomicU64::new(0)),
            last_saved: applied,
            last_snapshot: snap_index,
            subnet_up_unix_ms: 0,
            last_sweep_unix_ms: 0,
            stop_waiters: Vec::new(),
            stopping: None,
            recording: false,
            master_retry_at: None,
            standby: None,
            detaching: None,
            shut: false,
            reads: Default::default(),
        })
    }

    /// The lease (shared with the fenced transport).
    pub fn lease(&self) -> Arc<Lease> {
        self.lease.clone()
    }

    fn fresh_request_id(&mut self) -> u64 {
        self.next_request = self.next_request.wrapping_add(1);
        self.next_request
    }

    fn is_leader(&self) -> bool {
        self.raw.raft.state == StateRole::Leader
    }

    fn fatal(&mut self, what: &str, e: impl std::fmt::Display, ctx: &mut Context<Self>) {
        tracing::error!("E_NODE_STORAGE: {what}: {e}; the replica stops");
        self.stop_master();
        ctx.stop();
        System::current().stop();
    }

    fn send_messages(&mut self, msgs: Vec<RaftMessage>) {
        for mut m in msgs {
            // Heartbeats carry a tag dated now, before the send (see lease::AckBook).
            self.acks.stamp(&mut m, Instant::now());
            let to = m.to;
            match m.write_to_bytes() {
                Ok(b) => self.peers.send(to, b),
                Err(e) => tracing::error!("E_NODE_RAFT: encode message to {to}: {e}"),
            }
        }
    }

    /// Records acknowledgements from peers (for the lease), dated by the send of the
    /// heartbeat each answers, and unwraps the lease tag before raft-rs sees the message.
    fn note_ack(&mut self, m: &mut RaftMessage) {
        let term = self.is_leader().then_some(self.raw.raft.term);
        self.acks.receive(m, term, Instant::now());
    }

    /// Lease: until the send of the latest heartbeat a quorum of voters acknowledged (self
    /// counts as now) plus half the minimum election timeout (lease::lease_end).
    fn update_lease(&mut self) {
        if !self.is_leader() {
            self.lease.revoke();
            return;
        }
        let cs = self.raw.raft.prs().conf().to_conf_state();
        let end = self.acks.lease_end(
            &[&cs.voters, &cs.voters_outgoing],
            self.cfg.id,
            Instant::now(),
            self.cfg.lease_duration(),
        );
        match end {
            Some(t) => self.lease.hold_until(t),
            None => self.lease.revoke(),
        }
    }

    fn on_ready(&mut self, ctx: &mut Context<Self>) {
        if self.store.take_snapshot_request().is_some() {
            self.make_snapshot(ctx);
        }
        if !self.raw.has_ready() {
            return;
        }
        let mut rd = self.raw.ready();
        self.take_read_states(rd.read_states());
        // 1. Messages that may leave before persisting (the leader's appends, heartbeats).
        self.send_messages(rd.take_messages());
        // 2. A snapshot from the leader replaces log and state.
        if !rd.snapshot().is_empty() {
            let snap: Snapshot = rd.snapshot().clone();
            match ReplicatedState::restore(&snap.data) {
                Ok(s) => self.state = s,
                Err(e) => return self.fatal("snapshot from the leader", e, ctx),
            }
            let idx = snap.get_metadata().index;
            if let Err(e) = self.store.apply_snapshot(snap) {
                return self.fatal("apply snapshot", e, ctx);
            }
            self.last_saved = idx;
            self.last_snapshot = idx;
            tracing::info!("applied a snapshot from the leader at index {idx}");
        }
        // 3. Committed entries (persisted on a quorum) to the state.
        let committed = rd.take_committed_entries();
        self.apply_entries(committed, ctx);
        // 4. New entries, 5. hard state, then FLUSH before anything acknowledges them.
        if let Err(e) = self.store.append(rd.entries()) {
            return self.fatal("append", e, ctx);
        }
        if let Some(hs) = rd.hs()
            && let Err(e) = self.store.set_hardstate(hs.clone())
        {
            return self.fatal("hard state", e, ctx);
        }
        if let Err(e) = self.store.flush() {
            return self.fatal("flush", e, ctx);
        }
        // 6. Messages acknowledging persisted state.
        self.send_messages(rd.take_persisted_messages());
        // 7. Light ready.
        let mut light = self.raw.advance(rd);
        if let Some(commit) = light.commit_index() {
            let r = self
                .store
                .initial_state()
                .map_err(|e| e.to_string())
                .and_then(|s| {
                    let mut hs = s.hard_state;
                    hs.commit = commit;
                    self.store.set_hardstate(hs).map_err(|e| e.to_string())
                });
            if let Err(e) = r {
                return self.fatal("commit index", e, ctx);
            }
        }
        self.send_messages(light.take_messages());
        let committed = light.take_committed_entries();
        self.apply_entries(committed, ctx);
        self.raw.advance_apply();
        if let Err(e) = self.store.flush() {
            return self.fatal("flush", e, ctx);
        }
        // Answers only after everything above is on disk.
        for (tx, r) in self.answers.drain(..) {
            let _ = tx.send(r);
        }
        self.answer_reads();
        self.after_apply(ctx);
    }

    fn apply_entries(&mut self, entries: Vec<Entry>, ctx: &mut Context<Self>) {
        if entries.is_empty() {
            return;
        }
        let mut policy_changed = false;
        for e in entries {
            let (index, term) = (e.index, e.term);
            let cmd = match e.get_entry_type() {
                EntryType::EntryNormal if e.data.is_empty() => noop(),
                EntryType::EntryNormal => match Command::decode(&e.data[..]) {
                    Ok(c) => c,
                    Err(err) => {
                        tracing::error!("E_NODE_RAFT: entry {index}: undecodable command: {err}");
                        noop()
                    }
                },
                EntryType::EntryConfChange => {
                    match ConfChange::parse_from_bytes(&e.data) {
                        Ok(cc) => {
                            let r = self.raw.apply_conf_change(&cc);
                            self.apply_conf(r, ctx)
                        }
                        Err(err) => {
                            tracing::error!("E_NODE_RAFT: entry {index}: conf change: {err}")
                        }
                    }
                    noop()
                }
                EntryType::EntryConfChangeV2 => {
                    match ConfChangeV2::parse_from_bytes(&e.data) {
                        Ok(cc) => {
                            let r = self.raw.apply_conf_change(&cc);
                            self.apply_conf(r, ctx)
                        }
                        Err(err) => {
                            tracing::error!("E_NODE_RAFT: entry {index}: conf change: {err}")
                        }
                    }
                    noop()
                }
            };
            if index <= self.state.applied_index() {
                continue; // replayed after a snapshot that already holds it
            }
            // Tenants named by node description resolve through the recorded topology.
            let tenant_text_before = (matches!(cmd.kind, Some(Kind::SetTopology(_)))
                && self.state.tenants_use_descriptions())
            .then(|| self.state.effective_policy_text().ok().flatten());
            let out = self.state.apply(index, term, &cmd);
            if out.is_accepted()
                && (matches!(cmd.kind, Some(Kind::SetTenants(_)))
                    || tenant_text_before
                        .is_some_and(|b| b != self.state.effective_policy_text().ok().flatten()))
            {
                policy_changed = true;
                tracing::info!(
                    "tenant set version {} in force (index {index})",
                    self.state.tenants().version
                );
            }
            if let Err(err) = &out.result {
                if cmd.request_id == 0 {
                    // The replicas' own commands (records, intents) should never be refused.
                    tracing::warn!("E_NODE_APPLY: entry {index} refused: {err}");
                } else {
                    tracing::debug!("entry {index} refused: {err}");
                }
            }
            if matches!(cmd.kind, Some(Kind::ApplyPolicy(_))) && out.is_accepted() {
                policy_changed = true;
                tracing::info!(
                    "partition policy version {} in force (index {index})",
                    out.policy_version
                );
            }
            if cmd.request_id != 0
                && let Some((_, tx)) = self.pending.remove(&cmd.request_id)
            {
                self.answers.push((tx, out.to_proto()));
            }
        }
        let applied = self.state.applied_index();
        if applied >= self.last_saved + SAVE_APPLIED_EVERY {
            self.save_applied(ctx);
        }
        if applied >= self.last_snapshot + self.cfg.snapshot_every {
            self.make_snapshot(ctx);
        }
        if policy_changed && self.master.is_some() {
            // The sweeper takes its policy at start: restart the master on the new one.
            tracing::info!("restarting the master on the new partition policy");
            self.restart_master = true;
            self.stop_master_keep_lease();
        }
    }

    fn apply_conf(&mut self, r: raft::Result<raft::eraftpb::ConfState>, ctx: &mut Context<Self>) {
        match r {
            Ok(cs) => {
                tracing::info!("membership now: voters {:?}", cs.voters);
                if let Err(e) = self.store.set_conf_state(cs) {
                    self.fatal("conf state", e, ctx);
                }
            }
            Err(e) => tracing::error!("E_NODE_RAFT: conf change refused: {e}"),
        }
    }

    fn save_applied(&mut self, ctx: &mut Context<Self>) {
        let idx = self.state.applied_index();
        if let Err(e) = self.store.save_applied(idx, &self.state.snapshot_bytes()) {
            return self.fatal("save applied state", e, ctx);
        }
        self.last_saved = idx;
    }

    fn make_snapshot(&mut self, ctx: &mut Context<Self>) {
        let idx = self.state.applied_index();
        if idx == 0 {
            return;
        }
        let cs = match self.store.initial_state() {
            Ok(s) => s.conf_state,
            Err(e) => return self.fatal("conf state", e, ctx),
        };
        let r = self
            .store
            .create_snapshot(idx, cs, self.state.snapshot_bytes())
            .and_then(|_| self.store.compact(idx));
        match r {
            Ok(()) => {
                self.last_snapshot = idx;
                self.last_saved = idx;
                tracing::info!("snapshot at index {idx}; log compacted");
            }
            Err(e) => tracing::warn!("E_NODE_RAFT: snapshot at {idx}: {e}"),
        }
    }

    /// Leadership bookkeeping after every Ready.
    fn after_apply(&mut self, ctx: &mut Context<Self>) {
        self.update_lease();
        let term = self.raw.raft.term;
        if self.is_leader() {
            let first = match self.leading {
                Some((t, i)) if t == term => i,
                _ => {
                    let i = self.raw.raft.raft_log.last_index();
                    tracing::info!("replica {} is leader of term {term}", self.cfg.id);
                    self.leading = Some((term, i));
                    self.acks.reset();
                    // Heartbeats now: only their acknowledgements start the lease.
                    self.raw.ping();
                    i
                }
            };
            if self.master.is_none()
                && !self.restart_master
                && self.stopping.is_none()
                && self.state.applied_index() >= first
                && self.lease.valid()
                && self.master_retry_at.is_none_or(|t| Instant::now() >= t)
            {
                self.start_master(ctx);
            }
        } else {
            if self.leading.take().is_some() {
                tracing::info!(
                    "replica {} stepped down (term {term}, leader {})",
                    self.cfg.id,
                    self.raw.raft.leader_id
                );
            }
            self.stop_master();
            self.start_standby(ctx);
        }
        if self.stopping.is_some() && !self.is_leader() {
            self.finish_stop();
        }
    }

    /// Milestones of actor generation `gen_` come to this actor.
    fn watch(&mut self, gen_: u64, ctx: &mut Context<Self>) -> mpsc::UnboundedSender<Milestone> {
        let (tx, mut rx) = mpsc::unbounded_channel::<Milestone>();
        ctx.add_stream(futures_util::stream::poll_fn(move |cx| {
            rx.poll_recv(cx).map(|o| o.map(|m| (gen_, m)))
        }));
        tx
    }

    /// Attaches a standby SM (SMInfo STANDBY) while this replica is not master.
    fn start_standby(&mut self, ctx: &mut Context<Self>) {
        if self.shut
            || self.is_leader()
            || self.standby.is_some()
            || self.master.is_some()
            || self.detaching.is_some()
            || self.stopping.is_some()
            || self.master_retry_at.is_some_and(|t| Instant::now() < t)
        {
            return;
        }
        let node_cfg = self.node_cfg.clone();
        let built = (|| -> Result<_, crate::NodeError> {
            let (mut scfg, _) = node_cfg.sweeper_config()?;
            scfg.role = sm_core::Role::Standby;
            scfg.guid2lid = sm_core::Guid2Lid::new();
            let (attached, _) = daemon::attach(&node_cfg)?;
            scfg.sm_port_guid = Some(attached.transport.port_guid());
            Ok((Sweeper::new(scfg)?, attached))
        })();
        let (sweeper, mut attached) = match built {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!("E_NODE_STANDBY: cannot attach the standby SM (retrying): {e}");
                self.master_retry_at = Some(Instant::now() + Duration::from_millis(200));
                return;
            }
        };
        attached.transport = Box::new(super::fence::FencedTransport::new(
            attached.transport,
            self.lease.clone(),
            self.fence_dropped.clone(),
        ));
        self.master_retry_at = None;
        self.master_gen += 1;
        let gen_ = self.master_gen;
        let tx = self.watch(gen_, ctx);
        let addr = MasterActor::new(MasterParts {
            sweeper,
            attached,
            pool: self.pool.clone(),
            store: None,
            observers: vec![tx],
        })
        .start();
        tracing::info!(
            "replica {}: standby SM attached (SMInfo STANDBY)",
            self.cfg.id
        );
        self.standby = Some((gen_, addr));
    }

    fn start_master(&mut self, ctx: &mut Context<Self>) {
        if let Some((g, s)) = self.standby.take() {
            // Free the port first; the master attaches once the standby has stopped.
            s.do_send(Shutdown);
            self.detaching = Some(g);
            return;
        }
        if self.detaching.is_some() || self.shut {
            return;
        }
        let term = self.raw.raft.term;
        let seeds = seed::seeds(&self.state);
        let pending = self.state.pending_intent().cloned();
        if pending.is_none()
            && let Some(open) = self.state.open_intent()
        {
            // Never sealed, so never programmed: drop it.
            let id = open.id;
            self.propose_quiet(Command {
                request_id: 0,
                kind: Some(Kind::AbortIntent(proto::state::AbortIntent { id })),
            });
        }
        // Per-term M_Key: a deposed master's Sets fail in the fabric once the ports are
        // rotated. The keys ports may still hold: the last master's, earlier terms', none.
        let base = match self.state.config().m_key_base {
            0 => DEFAULT_M_KEY_BASE,
            b => b,
        };
        let m_key = seed::m_key_of_term(base, term);
        let mut m_key_prev: Vec<u64> = Vec::new();
        if let Some(m) = self.state.master()
            && m.m_key != 0
        {
            m_key_prev.push(m.m_key);
        }
        for t in (1..term).rev().take(8) {
            m_key_prev.push(seed::m_key_of_term(base, t));
        }
        m_key_prev.push(0);
        let mut seen = std::collections::HashSet::new();
        m_key_prev.retain(|k| *k != m_key && seen.insert(*k));
        let mut node_cfg = self.node_cfg.clone();
        node_cfg.guid2lid = None; // LIDs live in the log
        let built = (|| -> Result<_, crate::NodeError> {
            let (mut scfg, _) = node_cfg.sweeper_config()?;
            scfg.guid2lid = seeds.guid2lid.clone();
            scfg.known_lfts = seeds.known_lfts.clone();
            scfg.known_pkeys = seeds.known_pkeys.clone();
            scfg.known_mfts = seeds.known_mfts.clone();
            if seeds.policy.is_some() {
                scfg.partitions_conf = seeds.policy.clone();
            }
            if seeds.known_lfts.is_some() {
                // A takeover: clients keep their SA registrations.
                scfg.reregister_on_takeover = false;
            }
            // Intent first: every sweep's programming is committed before its first Set; a
            // previous master's sealed, unfinished intent is re-applied first.
            scfg.gate_programming = true;
            scfg.intent_id_base = term << 32;
            scfg.pending_intent = pending.as_ref().map(seed::intent_from_proto);
            scfg.m_key = m_key;
            scfg.m_key_prev = m_key_prev.clone();
            let sweeper = Sweeper::new(scfg)?;
            let (attached, _) = daemon::attach(&node_cfg)?;
            Ok((sweeper, attached))
        })();
        let (sweeper, mut attached) = match built {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!("E_NODE_MASTER: cannot start the master (retrying in 20 ms): {e}");
                self.master_retry_at = Some(Instant::now() + Duration::from_millis(20));
                return;
            }
        };
        let port_guid = attached.transport.port_guid();
        attached.transport = Box::new(super::fence::FencedTransport::new(
            attached.transport,
            self.lease.clone(),
            self.fence_dropped.clone(),
        ));
        self.master_retry_at = None;
        self.master_gen += 1;
        let gen_ = self.master_gen;
        let (itx, mut irx) = mpsc::unbounded_channel::<sm_core::IntentEvent>();
        ctx.add_stream(futures_util::stream::poll_fn(move |cx| {
            irx.poll_recv(cx).map(|o| o.map(|m| IntentFrom(gen_, m)))
        }));
        let tx = self.watch(gen_, ctx);
        let mut observers = self.observers.clone();
        observers.push(tx);
        tracing::info!(
            "replica {} becomes MASTER for term {term} (seeded: {} LIDs, {} LFTs, {} P_Key tables, policy {})",
            self.cfg.id,
            seeds.guid2lid.len(),
            seeds.known_lfts.as_ref().map_or(0, |l| l.switches.len()),
            seeds.known_pkeys.as_ref().map_or(0, |p| p.len()),
            self.state.policy().version
        );
        let addr = MasterActor::new(MasterParts {
            sweeper,
            attached,
            pool: self.pool.clone(),
            store: None,
            observers,
        })
        .start();
        addr.do_send(SetIntentSink {
            intents: itx,
            lease: self.lease.clone(),
        });
        // The SA answers from the replicated SA state; its changes are proposed here.
        addr.do_send(crate::master::SetSaState {
            state: self.state.sa_state().clone(),
            proposer: ctx.address().recipient(),
        });
        self.master = Some((gen_, addr));
        // The master record of this term.
        let rec = Command {
            request_id: 0,
            kind: Some(Kind::SetMaster(MasterRecord {
                term,
                replica_id: self.cfg.id,
                sm_port_guid: port_guid.0,
                sm_lid: 0,
                m_key,
            })),
        };
        self.propose_quiet(rec);
    }

    /// Stops the master (if any) and ends the lease.
    fn stop_master(&mut self) {
        self.lease.revoke();
        self.stop_master_keep_lease();
    }

    fn stop_master_keep_lease(&mut self) {
        if let Some((g, m)) = self.master.take() {
            tracing::info!("replica {}: master role ends", self.cfg.id);
            m.do_send(Shutdown);
            self.detaching = Some(g);
        }
    }

    fn propose_quiet(&mut self, cmd: Command) {
        if let Err(e) = self.raw.propose(vec![], cmd.encode_to_vec()) {
            tracing::warn!("E_NODE_RAFT: proposal dropped: {e}");
        }
    }

    fn not_leader(&self) -> ProposeError {
        let leader_id = self.raw.raft.leader_id;
        ProposeError::NotLeader {
            leader_id,
            leader_address: self.cfg.peers.get(&leader_id).cloned().unwrap_or_default(),
        }
    }

    /// Records the master's topology and LIDs after a completed sweep (what it programmed was committed
    /// as intents before the Sets left).
    fn record(&mut self, t: SweepTables) {
        if !self.is_leader() {
            return;
        }
        let mut cmds = Vec::new();
        if let Some(c) = seed::topology_command(&self.state, &t) {
            cmds.push(c);
        }
        if let Some(c) = seed::lid_command(&self.state, &t) {
            cmds.push(c);
        }
        if !cmds.is_empty() {
            tracing::info!("recording the sweep in the log: {} commands", cmds.len());
        }
        for c in cmds {
            self.propose_quiet(c);
        }
    }

    fn finish_stop(&mut self) {
        self.stopping = None;
        self.shut = true;
        self.stop_master();
        if let Some((_, s)) = self.standby.take() {
            s.do_send(Shutdown);
        }
        for w in self.stop_waiters.drain(..) {
            let _ = w.send(());
        }
    }

    /// The voter most fit to take over: caught up, highest priority is not known here, so
    /// the highest match index (ties: lowest id).
    fn best_successor(&self) -> Option<u64> {
        let last = self.raw.raft.raft_log.last_index();
        self.raw
            .raft
            .prs()
            .iter()
            .filter(|(id, p)| **id != self.cfg.id && p.recent_active && p.matched + 16 >= last)
            .max_by_key(|(id, p)| (p.matched, std::cmp::Reverse(**id)))
            .map(|(id, _)| *id)
    }

    fn status(&self) -> ClusterStatusReply {
        let raft = &self.raw.raft;
        let leader = raft.state == StateRole::Leader;
        let commit = raft.raft_log.committed;
        let replicas = self
            .cfg
            .peers
            .iter()
            .map(|(id, addr)| {
                let pr = if leader { raft.prs().get(*id) } else { None };
                let role = if *id == self.cfg.id {
                    match raft.state {
                        StateRole::Leader => Role::Leader,
                        StateRole::Follower => Role::Follower,
                        StateRole::Candidate => Role::Candidate,
                        StateRole::PreCandidate => Role::PreCandidate,
                    }
                } else if *id == raft.leader_id {
                    Role::Leader
                } else if let Some(p) = pr {
                    if p.recent_active {
                        Role::Follower
                    } else {
                        Role::Unreachable
                    }
                } else {
                    Role::Unspecified
                };
                let matched = if *id == self.cfg.id {
                    raft.raft_log.last_index()
                } else {
                    pr.map_or(0, |p| p.matched)
                };
                let is_self = *id == self.cfg.id;
                ReplicaStatus {
                    id: *id,
                    peer_address: addr.clone(),
                    admin_address: addr.clone(),
                    priority: if is_self {
                        self.node_cfg.priority as u32
                    } else {
                        0
                    },
                    port_guid: if is_self { self.cfg.port_guid.0 } else { 0 },
                    role: role as i32,
                    match_index: if leader || is_self { matched } else { 0 },
                    voter: raft.prs().conf().voters().contains(*id),
                    lag: if leader || is_self {
                        commit.saturating_sub(matched)
                    } else {
                        0
                    },
                }
            })
            .collect();
        ClusterStatusReply {
            self_id: self.cfg.id,
            term: raft.term,
            leader_id: raft.leader_id,
            commit_index: commit,
            applied_index: self.state.applied_index(),
            replicas,
            master: self.state.master().map(|m| MasterInfo {
                term: m.term,
                replica_id: m.replica_id,
                sm_port_guid: m.sm_port_guid,
                sm_lid: m.sm_lid,
            }),
            last_sweep_unix_ms: self.last_sweep_unix_ms,
            subnet_up_unix_ms: self.subnet_up_unix_ms,
            policy_version: self.state.policy().version,
            intent_pending: self.state.pending_intent().is_some(),
        }
    }
}

fn noop() -> Command {
    Command {
        request_id: 0,
        kind: Some(Kind::Noop(Noop {})),
    }
}

impl Actor for RaftActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(self.cfg.tick, |act, ctx| {
            act.raw.tick();
            let now = Instant::now();
            act.pending
                .retain(|_, (t, _)| now.duration_since(*t) < PROPOSAL_TTL);
            if let Some(since) = act.stopping
                && now.duration_since(since) > Duration::from_secs(3)
            {
                tracing::warn!("leadership transfer did not complete; stopping anyway");
                act.finish_stop();
            }
            act.on_ready(ctx);
        });
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        self.stop_master();
        let idx = self.state.applied_index();
        let _ = self.store.save_applied(idx, &self.state.snapshot_bytes());
        let _ = self.store.flush();
    }
}

/// Raft messages from a peer (encoded eraftpb::Message).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Step(pub Vec<Vec<u8>>);

impl Handler<Step> for RaftActor {
    type Result = ();
    fn handle(&mut self, m: Step, ctx: &mut Context<Self>) {
        for b in m.0 {
            match RaftMessage::parse_from_bytes(&b) {
                Ok(mut msg) => {
                    self.note_ack(&mut msg);
                    // A stale or misdirected message is raft's business.
                    let _ = self.raw.step(msg);
                }
                Err(e) => tracing::warn!("E_NODE_PEER: undecodable raft message: {e}"),
            }
        }
        self.on_ready(ctx);
    }
}

/// Proposes a command; the receiver gets the apply result once committed and applied here.
#[derive(Message)]
#[rtype(result = "Result<oneshot::Receiver<ApplyResult>, ProposeError>")]
pub struct Propose(pub Command);

impl Handler<Propose> for RaftActor {
    type Result = Result<oneshot::Receiver<ApplyResult>, ProposeError>;
    fn handle(&mut self, m: Propose, ctx: &mut Context<Self>) -> Self::Result {
        if !self.is_leader() || self.stopping.is_some() {
            return Err(self.not_leader());
        }
        let mut cmd = m.0;
        if cmd.request_id == 0 {
            cmd.request_id = self.fresh_request_id();
        }
        let (tx, rx) = oneshot::channel();
        self.raw
            .propose(vec![], cmd.encode_to_vec())
            .map_err(|e| ProposeError::Failed(e.to_string()))?;
        self.pending.insert(cmd.request_id, (Instant::now(), tx));
        self.on_ready(ctx);
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
        MessageResult(self.status())
    }
}

/// The policy in force here.
#[derive(Message)]
#[rtype(result = "GetPolicyReply")]
pub struct GetPolicy;

impl Handler<GetPolicy> for RaftActor {
    type Result = MessageResult<GetPolicy>;
    fn handle(&mut self, _: GetPolicy, _: &mut Context<Self>) -> Self::Result {
        let p = self.state.policy();
        MessageResult(GetPolicyReply {
            text: p.text.clone(),
            version: p.version,
            applied_at_index: p.applied_at_index,
        })
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
        match &self.master {
            Some((_, a)) => {
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
        if !self.is_leader() {
            return Err(self.not_leader());
        }
        if m.0 == self.cfg.id {
            return Ok(());
        }
        if !self.cfg.peers.contains_key(&m.0) {
            return Err(ProposeError::Failed(format!("no replica {}", m.0)));
        }
        tracing::info!("transferring leadership to replica {}", m.0);
        self.raw.transfer_leader(m.0);
        self.on_ready(ctx);
        Ok(())
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
        if !self.is_leader() {
            return Err(self.not_leader());
        }
        let mut cc = ConfChange {
            node_id: m.id,
            ..Default::default()
        };
        cc.set_change_type(if m.add {
            ConfChangeType::AddNode
        } else {
            ConfChangeType::RemoveNode
        });
        self.raw
            .propose_conf_change(vec![], cc)
            .map_err(|e| ProposeError::Failed(e.to_string()))?;
        self.on_ready(ctx);
        Ok(())
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
        if self.is_leader()
            && let Some(to) = self.best_successor()
        {
            tracing::info!("graceful stop: handing leadership to replica {to} first");
            self.stopping = Some(Instant::now());
            self.stop_master_keep_lease();
            self.raw.transfer_leader(to);
            self.on_ready(ctx);
        } else {
            self.finish_stop();
        }
        MessageResult(rx)
    }
}

impl StreamHandler<(u64, Milestone)> for RaftActor {
    fn handle(&mut self, (gen_, m): (u64, Milestone), ctx: &mut Context<Self>) {
        let current = self.master.as_ref().is_some_and(|(g, _)| *g == gen_);
        match &m.kind {
            MilestoneKind::SubnetUp { .. } if current && self.subnet_up_unix_ms == 0 => {
                self.subnet_up_unix_ms = unix_ms();
            }
            MilestoneKind::HeavySweepComplete { .. } | MilestoneKind::LightSweepComplete { .. }
                if current =>
            {
                self.last_sweep_unix_ms = unix_ms();
                if matches!(m.kind, MilestoneKind::HeavySweepComplete { .. })
                    && !self.recording
                    && let Some((_, a)) = &self.master
                {
                    self.recording = true;
                    let fut = a.send(GetTables);
                    ctx.spawn(fut.into_actor(self).map(|r, act, ctx| {
                        act.recording = false;
                        if let Ok(t) = r {
                            act.record(t);
                            act.on_ready(ctx);
                        }
                    }));
                }
            }
            MilestoneKind::Stopped { reason } => {
                if current {
                    tracing::warn!("the master stopped by itself ({reason})");
                    self.master = None;
                }
                if self.standby.as_ref().is_some_and(|(g, _)| *g == gen_) {
                    tracing::warn!("the standby SM stopped by itself ({reason})");
                    self.standby = None;
                }
                if self.detaching == Some(gen_) {
                    // The port is free: attach the master or the standby.
                    self.detaching = None;
                    self.restart_master = false;
                }
                self.after_apply(ctx);
            }
            _ => {}
        }
    }

    fn finished(&mut self, _: &mut Context<Self>) {}
}

/// What an admin query sees of a replica (see [`ReadState`]).
pub struct ReadView<'a> {
    /// The applied state.
    pub state: &'a ReplicatedState,
    /// True when this replica leads with a valid lease (its reads are linearizable).
    pub leader_with_lease: bool,
    /// This replica's Raft id, configured SM priority, current term and known leader.
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
        let view = ReadView {
            state: &self.state,
            leader_with_lease: self.is_leader() && self.lease.valid(),
            self_id: self.cfg.id,
            priority: self.node_cfg.priority,
            term: self.raw.raft.term,
            leader_id: self.raw.raft.leader_id,
            master: self.master.as_ref().map(|(_, a)| a.clone()),
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

/// An intent event of master generation `.0`.
pub struct IntentFrom(u64, sm_core::IntentEvent);

impl StreamHandler<IntentFrom> for RaftActor {
    fn handle(&mut self, IntentFrom(gen_, ev): IntentFrom, ctx: &mut Context<Self>) {
        let Some((g, master)) = self.master.clone() else {
            return;
        };
        if g != gen_ {
            return;
        }
        match ev {
            sm_core::IntentEvent::Program(it) => {
                let id = it.id;
                let term = self.raw.raft.term;
                let contents = seed::intent_to_contents(&it);
                let mut cmds =
                    replica::split_intent(id, term, contents, replica::DEFAULT_MAX_COMMAND_BYTES);
                let seal = cmds.pop();
                for c in cmds {
                    self.propose_quiet(c);
                }
                let rx = seal.and_then(|mut c| {
                    c.request_id = self.fresh_request_id();
                    let (tx, rx) = oneshot::channel();
                    self.raw.propose(vec![], c.encode_to_vec()).ok()?;
                    self.pending.insert(c.request_id, (Instant::now(), tx));
                    Some(rx)
                });
                tracing::info!(
                    "intent {id}: {} LFT blocks, {} P_Key blocks, {} PortInfo changes proposed",
                    it.lft_blocks.len(),
                    it.pkey_blocks.len(),
                    it.port_changes.len()
                );
                match rx {
                    Some(rx) => {
                        ctx.spawn(
                            async move { rx.await.map(|r| r.accepted).unwrap_or(false) }
                                .into_actor(self)
                                .map(move |ok, _, _| {
                                    if !ok {
                                        tracing::warn!("intent {id} was not committed");
                                    }
                                    master.do_send(IntentCommitted { id, ok });
                                }),
                        );
                    }
                    None => master.do_send(IntentCommitted { id, ok: false }),
                }
                self.on_ready(ctx);
            }
            sm_core::IntentEvent::Done {
                id,
                failed_switches,
                failed_ports,
                ..
            } => {
                self.propose_quiet(Command {
                    request_id: 0,
                    kind: Some(Kind::IntentDone(proto::state::IntentDone {
                        id,
                        failed_switches: failed_switches.iter().map(|g| g.0).collect(),
                        failed_ports: failed_ports
                            .iter()
                            .map(|(g, p)| proto::state::PortRef {
                                node_guid: g.0,
                                port: *p as u32,
                            })
                            .collect(),
                    })),
                });
                self.on_ready(ctx);
            }
        }
    }

    fn finished(&mut self, _: &mut Context<Self>) {}
}
