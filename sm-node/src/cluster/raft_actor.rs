//! [`RaftActor`]: the daemon's driver of the replica core (`replica_core::ReplicaCore`
//! over the sled log). It feeds the core its inputs — ticks on the monotonic clock, peer
//! messages, proposals, reads, the master's milestones and intents — and carries out what
//! the core outputs: sends over the peer transport, starts and stops the master and the
//! standby SM actors, answers callers, logs notices. Every rule (Ready order, flush before
//! acknowledging, lease, seeding, intents, roles) is the core's; the simulation drives the
//! same core.

use super::{ClusterConfig, PeerTx};
use crate::clock::unix_ms;
use crate::config::NodeConfig;
use crate::fence::Lease;
use crate::master::{GetTables, IntentCommitted, MasterActor, Shutdown};
use crate::milestone::{Milestone, MilestoneKind};
use crate::pool::RoutingPool;
use actix::prelude::*;
use proto::state::ApplyResult;
use protobuf::Message as _;
use replica_core::{CoreConfig, Level, Output, PolicyVersions, ReplicaCore, VTime};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use storage::SledStorage;
use tokio::sync::{mpsc, oneshot};

mod handlers;
mod roles;

pub use crate::propose::{Propose, ProposeError};
pub use handlers::{
    AddObserver, ChangeMembership, ConsiderPriorities, GetClusterStatus, GetPolicy, GetVlTables,
    GracefulStop, ReadIndex, ReadState, ReadView, Step, TransferLeader, TriggerSweep,
};

/// The RaftActor.
pub struct RaftActor {
    cfg: ClusterConfig,
    node_cfg: NodeConfig,
    core: ReplicaCore<SledStorage>,
    /// The replica's clock: the core's time is nanoseconds since this.
    base: Instant,
    peers: PeerTx,
    lease: Arc<Lease>,
    /// The running master and standby actors, by generation.
    roles: BTreeMap<u64, Addr<MasterActor>>,
    pending: HashMap<u64, oneshot::Sender<ApplyResult>>,
    reads: HashMap<u64, oneshot::Sender<Result<u64, ProposeError>>>,
    stop_waiters: Vec<oneshot::Sender<()>>,
    pool: RoutingPool,
    observers: Vec<mpsc::UnboundedSender<Milestone>>,
    fence_dropped: Arc<AtomicU64>,
    subnet_up_unix_ms: u64,
    last_sweep_unix_ms: u64,
    /// The policy versions each running master generation was started with.
    role_versions: BTreeMap<u64, PolicyVersions>,
    /// What the master's last completed heavy sweep programmed (None: no heavy sweep yet).
    programmed: Option<PolicyVersions>,
    /// Told why, when the replica gives up.
    died: Option<oneshot::Sender<String>>,
}

impl RaftActor {
    /// Opens the sled log in `cfg.data_dir` and builds the core over it (a new log gets the
    /// configured voters; an old one resumes from its saved applied state).
    pub fn new(
        cfg: ClusterConfig,
        node_cfg: NodeConfig,
        peers: PeerTx,
        observers: Vec<mpsc::UnboundedSender<Milestone>>,
    ) -> Result<RaftActor, crate::NodeError> {
        let err = |e: String| crate::NodeError::Cluster(format!("E_NODE_RAFT: {e}"));
        std::fs::create_dir_all(&cfg.data_dir)
            .map_err(|e| err(format!("{}: {e}", cfg.data_dir.display())))?;
        let path = cfg.data_dir.join("raft");
        let store = SledStorage::open_with_lock_wait(&path, Duration::from_secs(5))
            .map_err(|source| crate::NodeError::Storage { path, source })?;
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let mut cc = CoreConfig::new(cfg.id, cfg.peers.clone());
        cc.voters = cfg.voters.clone();
        cc.tick = cfg.tick.as_nanos() as VTime;
        cc.election_ticks = cfg.election_ticks;
        cc.heartbeat_ticks = cfg.heartbeat_ticks;
        cc.snapshot_every = cfg.snapshot_every;
        cc.port_guid = cfg.port_guid;
        cc.priority = node_cfg.priority;
        cc.seed = nanos ^ cfg.id;
        cc.bootstrap = cfg.bootstrap;
        let core = ReplicaCore::new(cc, store).map_err(|e| err(e.to_string()))?;
        let base = Instant::now();
        Ok(RaftActor {
            pool: RoutingPool::start(node_cfg.workers),
            lease: Lease::new(base),
            base,
            cfg,
            node_cfg,
            core,
            peers,
            roles: BTreeMap::new(),
            pending: HashMap::new(),
            reads: HashMap::new(),
            stop_waiters: Vec::new(),
            observers,
            fence_dropped: Arc::new(AtomicU64::new(0)),
            subnet_up_unix_ms: 0,
            last_sweep_unix_ms: 0,
            role_versions: BTreeMap::new(),
            programmed: None,
            died: None,
        })
    }

    /// Who hears why when the replica gives up (the process then exits non-zero).
    pub fn on_death(mut self, tx: oneshot::Sender<String>) -> Self {
        self.died = Some(tx);
        self
    }

    /// The lease (shared with the fenced transport).
    pub fn lease(&self) -> Arc<Lease> {
        self.lease.clone()
    }

    fn now(&self) -> VTime {
        self.base.elapsed().as_nanos() as VTime
    }

    /// Warns when handling one input kept this thread (and so the heartbeats) from running
    /// for more than a tenth of the election timeout.
    fn slow(&self, what: &str, bytes: usize, t0: Instant) {
        let took = t0.elapsed();
        if took > self.cfg.tick * self.cfg.election_ticks as u32 / 10 {
            tracing::warn!(
                "E_NODE_RAFT_SLOW: replica {}: {what} ({bytes} bytes) took {} ms",
                self.cfg.id,
                took.as_millis()
            );
        }
    }

    /// Carries out everything the core has to say, until it has nothing more.
    fn drive(&mut self, ctx: &mut Context<Self>) {
        while let Some(o) = self.core.poll_output() {
            self.lease.set(self.core.lease_until());
            match o {
                Output::Send(m) => match m.write_to_bytes() {
                    Ok(b) => self.peers.send(m.to, b),
                    Err(e) => tracing::error!("E_NODE_RAFT: encode message to {}: {e}", m.to),
                },
                Output::StartMaster { gen_, seed } => self.start_master(gen_, &seed, ctx),
                Output::StartStandby { gen_ } => self.start_standby(gen_, ctx),
                Output::StopRole { gen_ } => match self.roles.get(&gen_) {
                    Some(a) => a.do_send(Shutdown),
                    None => {
                        let now = self.now();
                        self.core.role_stopped(now, gen_);
                    }
                },
                Output::IntentResult {
                    gen_,
                    id,
                    committed,
                } => {
                    if let Some(a) = self.roles.get(&gen_) {
                        a.do_send(IntentCommitted { id, ok: committed });
                    }
                }
                Output::RecordTables { gen_ } => self.record_tables(gen_, ctx),
                Output::Answer { request, result } => {
                    if let Some(tx) = self.pending.remove(&request) {
                        let _ = tx.send(result);
                    }
                }
                Output::Dropped { request } => {
                    self.pending.remove(&request);
                }
                Output::ReadDone { ticket, result } => {
                    if let Some(tx) = self.reads.remove(&ticket) {
                        let _ = tx.send(result);
                    }
                }
                Output::Applied { .. } => {}
                Output::Stopped => {
                    for w in self.stop_waiters.drain(..) {
                        let _ = w.send(());
                    }
                }
                Output::Fatal(e) => {
                    tracing::error!(
                        "E_NODE_STORAGE: replica {}: {e}; the replica stops",
                        self.cfg.id
                    );
                    for a in self.roles.values() {
                        a.do_send(Shutdown);
                    }
                    // The process exits non-zero with this as its last line (cluster_cli).
                    if let Some(tx) = self.died.take() {
                        let _ = tx.send(format!("E_NODE_FATAL: replica {}: {e}", self.cfg.id));
                    }
                    ctx.stop();
                    System::current().stop();
                }
                Output::Notice(n) => {
                    let id = self.cfg.id;
                    match n.level() {
                        Level::Debug => tracing::debug!("replica {id}: {n}"),
                        Level::Info => tracing::info!("replica {id}: {n}"),
                        Level::Warn => tracing::warn!("replica {id}: {n}"),
                        Level::Error => tracing::error!("replica {id}: {n}"),
                    }
                }
            }
        }
        self.lease.set(self.core.lease_until());
        crate::metrics::leader_seen(self.cfg.id, self.core.leader_id());
    }

    /// Reads the master's tables after its heavy sweep and hands them to the core.
    fn record_tables(&mut self, gen_: u64, ctx: &mut Context<Self>) {
        let Some(a) = self.roles.get(&gen_) else {
            self.core.tables_unavailable(gen_);
            return;
        };
        ctx.spawn(a.send(GetTables).into_actor(self).map(move |r, act, ctx| {
            let now = act.now();
            match r {
                Ok(t) => act.core.sweep_tables(now, gen_, &t),
                Err(_) => act.core.tables_unavailable(gen_),
            }
            act.drive(ctx);
        }));
    }

    /// Milestones of role generation `gen_` come to this actor.
    fn watch(&mut self, gen_: u64, ctx: &mut Context<Self>) -> mpsc::UnboundedSender<Milestone> {
        let (tx, mut rx) = mpsc::unbounded_channel::<Milestone>();
        ctx.add_stream(futures_util::stream::poll_fn(move |cx| {
            rx.poll_recv(cx).map(|o| o.map(|m| (gen_, m)))
        }));
        tx
    }
}

impl Actor for RaftActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.drive(ctx);
        ctx.run_interval(self.cfg.tick, |act, ctx| {
            let (now, t0) = (act.now(), Instant::now());
            act.core.tick(now);
            act.slow("a tick", 0, t0);
            act.drive(ctx);
        });
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        self.lease.set(None);
        for a in self.roles.values() {
            a.do_send(Shutdown);
        }
        if let Err(e) = self.core.shutdown() {
            tracing::error!("E_NODE_STORAGE: replica {}: at stop: {e}", self.cfg.id);
        }
    }
}

impl StreamHandler<(u64, Milestone)> for RaftActor {
    fn handle(&mut self, (gen_, m): (u64, Milestone), ctx: &mut Context<Self>) {
        let current = self.core.master_gen() == Some(gen_);
        let now = self.now();
        match &m.kind {
            MilestoneKind::SubnetUp { .. } if current && self.subnet_up_unix_ms == 0 => {
                self.subnet_up_unix_ms = unix_ms();
            }
            MilestoneKind::HeavySweepComplete { .. } if current => {
                self.last_sweep_unix_ms = unix_ms();
                self.programmed = self.role_versions.get(&gen_).copied();
                self.core.heavy_sweep_done(now, gen_);
            }
            MilestoneKind::LightSweepComplete { .. } if current => {
                self.last_sweep_unix_ms = unix_ms();
            }
            MilestoneKind::Stopped { reason } => {
                self.role_versions.remove(&gen_);
                if self.roles.remove(&gen_).is_some() {
                    tracing::info!("replica {}: role {gen_} stopped ({reason})", self.cfg.id);
                }
                self.core.role_stopped(now, gen_);
            }
            _ => {}
        }
        self.drive(ctx);
    }

    fn finished(&mut self, _: &mut Context<Self>) {}
}

/// An intent event of master generation `.0`.
pub struct IntentFrom(u64, sm_core::IntentEvent);

impl StreamHandler<IntentFrom> for RaftActor {
    fn handle(&mut self, IntentFrom(gen_, ev): IntentFrom, ctx: &mut Context<Self>) {
        let (now, t0) = (self.now(), Instant::now());
        self.core.intent(now, gen_, ev);
        self.slow("an intent", 0, t0);
        self.drive(ctx);
    }

    fn finished(&mut self, _: &mut Context<Self>) {}
}
