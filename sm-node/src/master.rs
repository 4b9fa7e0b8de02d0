//! [`MasterActor`]: drives sm-core's sweeper over a [`Transport`] — sends what
//! `poll_transmit` yields, feeds received MADs to `handle_mad`, runs the sweeper's timer from
//! `poll_timeout` on the daemon's monotonic clock, hands routing jobs to the
//! [`RoutingPool`], persists guid2lid and reports [`Milestone`]s.
//!
//! The actor holds the master role for as long as it runs: a later RaftActor starts it when
//! this replica becomes leader and sends [`Shutdown`] (or stops its arbiter) when it steps
//! down; nothing else in the daemon sends SMPs.

mod explain;
mod perf;

pub use explain::Explain;
pub use perf::{PerfReader, QueryCounters, WithPerf, link_text};

use crate::milestone::{Milestone, MilestoneKind};
use crate::pool::RoutingPool;
use crate::store::Guid2LidStore;
use crate::transport::{Attached, Inbound, InboundRx, Transport};
use actix::prelude::*;
use sm_core::{Counters, Event, Phase, Sweeper, VTime};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc::UnboundedSender;

/// The daemon's clock: nanoseconds since the master started, from a monotonic clock.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    start: Instant,
}

impl Clock {
    /// A clock starting now.
    pub fn start() -> Clock {
        Clock {
            start: Instant::now(),
        }
    }

    /// Sweeper time now.
    pub fn now(&self) -> VTime {
        self.start.elapsed().as_nanos() as VTime
    }

    /// Wall time elapsed since start.
    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }
}

/// Everything the master needs.
pub struct MasterParts {
    /// The sweeper, configured.
    pub sweeper: Sweeper,
    /// The fabric attachment.
    pub attached: Attached,
    /// The routing pool.
    pub pool: RoutingPool,
    /// Where guid2lid is persisted (None: not persisted).
    pub store: Option<Guid2LidStore>,
    /// Who gets milestones.
    pub observers: Vec<UnboundedSender<Milestone>>,
    /// The performance manager's configuration (None: no perf manager, e.g. a standby).
    pub perf: Option<sm_core::perf::PerfConfig>,
}

/// The master: one sweeper, one transport.
pub struct MasterActor {
    sweeper: Sweeper,
    /// None once stopped (dropping it detaches from the fabric).
    transport: Option<Box<dyn Transport>>,
    /// Received MADs; shared with the stream that wakes the actor, so that the timer can
    /// take what already arrived before it declares requests timed out.
    inbound: Rc<RefCell<InboundRx>>,
    pool: RoutingPool,
    store: Option<Guid2LidStore>,
    observers: Vec<UnboundedSender<Milestone>>,
    clock: Clock,
    /// Deadline of the armed timer and its handle.
    timer: Option<(VTime, SpawnHandle)>,
    routing_since: Option<Instant>,
    stop_reason: Option<String>,
    /// Where intents go (a Raft cluster's master); None: they stay queued in the sweeper.
    intents: Option<UnboundedSender<sm_core::IntentEvent>>,
    /// The replica's write lease (a Raft cluster's master): Sets leave only within it.
    lease: Option<std::sync::Arc<crate::fence::Lease>>,
    /// Callers waiting for a P_KeyTable read-back, by read-back id.
    readbacks: std::collections::HashMap<sm_core::ReadbackId, ReadbackReply>,
    /// Wall time (Unix ms) each recent heavy sweep's discovery completed, by sweep number.
    discovered_at: std::collections::BTreeMap<u64, u64>,
    /// The SA (when the transport carries GMPs and this is the master).
    sa: Option<crate::sa_service::SaService>,
    /// Where SA state changes are proposed (a Raft cluster's master).
    sa_proposer: Option<Recipient<crate::propose::Propose>>,
    /// The sweeper stood by for a foreign master since it last reached SUBNET UP.
    stood_by: bool,
    /// The performance manager (master role with a configuration).
    perf: Option<sm_core::perf::PerfManager>,
    /// Live counter queries waiting, by query id.
    perf_waiting: perf::Waiting,
    /// The transport carries GMPs (the SA and the perf manager run).
    gmps: bool,
    /// What this actor reports to the process's metrics.
    metrics: crate::metrics::RoleMetrics,
}

/// Where a finished read-back goes.
type ReadbackReply = tokio::sync::oneshot::Sender<sm_core::ReadbackReport>;

impl MasterActor {
    /// A master over `parts`; start it with `Actor::start`.
    pub fn new(parts: MasterParts) -> MasterActor {
        let master = parts.sweeper.role() != sm_core::Role::Standby;
        MasterActor {
            metrics: crate::metrics::RoleMetrics::start(master),
            sweeper: parts.sweeper,
            transport: Some(parts.attached.transport),
            inbound: Rc::new(RefCell::new(parts.attached.inbound)),
            pool: parts.pool,
            store: parts.store,
            observers: parts.observers,
            clock: Clock::start(),
            timer: None,
            routing_since: None,
            stop_reason: None,
            intents: None,
            lease: None,
            readbacks: std::collections::HashMap::new(),
            discovered_at: std::collections::BTreeMap::new(),
            sa: None,
            sa_proposer: None,
            stood_by: false,
            perf: parts.perf.map(sm_core::perf::PerfManager::new),
            perf_waiting: perf::Waiting::new(),
            gmps: false,
        }
    }

    fn notify(&mut self, kind: MilestoneKind) {
        let m = Milestone {
            elapsed: self.clock.elapsed(),
            kind,
        };
        self.metrics.milestone(&m);
        self.observers.retain(|o| o.send(m.clone()).is_ok());
    }

    /// Runs the sweeper until it has nothing more to do now: due timeouts, transmits,
    /// events; then arms the timer for its next deadline.
    fn pump(&mut self, ctx: &mut Context<Self>) {
        loop {
            let now = self.clock.now();
            if matches!(self.sweeper.poll_timeout(), Some(t) if t <= now) {
                self.sweeper.handle_timeout(now);
            }
            let Some(transport) = self.transport.as_mut() else {
                return;
            };
            if let Some(l) = &self.lease {
                let until = l
                    .until()
                    .map(|t| t.saturating_duration_since(self.clock.start).as_nanos() as VTime);
                self.sweeper.set_lease(Some(until.unwrap_or(0)));
            }
            let mut sent = 0usize;
            while let Some(tx) = self.sweeper.poll_transmit_at(self.clock.now()) {
                if let Err(e) = transport.send(tx.dlid, &tx.smp) {
                    return self.fail(ctx, e.to_string());
                }
                sent += 1;
            }
            if sent > 0
                && let Err(e) = transport.flush()
            {
                return self.fail(ctx, e.to_string());
            }
            while let Some(ev) = self.sweeper.poll_event() {
                self.on_event(ev, ctx);
            }
            if let Some(sink) = &self.intents {
                while let Some(ie) = self.sweeper.poll_intent() {
                    let _ = sink.send(ie);
                }
            }
            if let Err(e) = self.perf_pump() {
                return self.fail(ctx, e);
            }
            if !matches!(self.deadline(), Some(t) if t <= self.clock.now()) {
                break;
            }
        }
        self.metrics.phase(self.sweeper.phase());
        self.arm_timer(ctx);
    }

    /// The earliest of the sweeper's and the perf manager's deadlines.
    fn deadline(&mut self) -> Option<VTime> {
        match (self.sweeper.poll_timeout(), self.perf_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn arm_timer(&mut self, ctx: &mut Context<Self>) {
        let Some(deadline) = self.deadline() else {
            return;
        };
        if let Some((armed, h)) = self.timer {
            if armed <= deadline {
                return; // fires earlier; it pumps and re-arms
            }
            ctx.cancel_future(h);
        }
        let wait = Duration::from_nanos(deadline.saturating_sub(self.clock.now()));
        let h = ctx.run_later(wait, |act, ctx| {
            act.timer = None;
            // Responses that arrived while this thread was busy are not timeouts.
            act.drain_inbound();
            act.pump(ctx);
        });
        self.timer = Some((deadline, h));
    }

    fn on_event(&mut self, ev: Event, ctx: &mut Context<Self>) {
        match &ev {
            Event::RoutingNeeded(_) => tracing::debug!("{ev}"),
            Event::RoutingFailed(_) => tracing::error!("E_NODE_ROUTING: {ev}"),
            Event::SubnetUp { counters, .. } => tracing::info!(
                "SUBNET UP after {:.1} ms: {} SMPs ({} Sets, {} directed, {} LID-routed, {} timeouts)",
                self.clock.elapsed().as_secs_f64() * 1e3,
                counters.total(),
                counters.sets(),
                counters.directed,
                counters.lid_routed,
                counters.timeouts
            ),
            Event::ForeignMaster { .. } => {
                self.stood_by = true;
                let c = self.sweeper.counters();
                tracing::info!("{ev}; {} Sets sent so far", c.sets());
            }
            Event::ForeignMasterGone { .. }
            | Event::HandoverSent { .. }
            | Event::HandoverTaken { .. }
            | Event::HandoverFailed { .. }
            | Event::SmInfoSetApplied { .. } => {
                let c = self.sweeper.counters();
                tracing::info!("{ev}; {} Sets sent so far", c.sets());
            }
            Event::HandoverReceived { .. } => {
                // "Entering MASTER state" follows at SUBNET UP, as after a takeover (a
                // master already up that takes a HANDOVER stays up: no SUBNET UP follows).
                self.stood_by = !self.sweeper.is_subnet_up();
                let c = self.sweeper.counters();
                tracing::info!("{ev}; {} Sets sent so far", c.sets());
            }
            Event::LightSweepComplete { changed: false, .. } => tracing::debug!("{ev}"),
            Event::SmInfoSetRefused { .. } => tracing::warn!("E_NODE_SMINFO_SET: {ev}"),
            Event::SmKeyIgnored { .. } => tracing::warn!("E_NODE_SM_KEY: {ev}"),
            Event::LftDrift { .. }
            | Event::PKeyDrift { .. }
            | Event::UnknownSm { .. }
            | Event::RogueMaster { .. } => tracing::warn!("E_NODE_ROGUE: {ev}"),
            Event::FieldNotHeld { .. } => tracing::warn!("E_NODE_SMA_FIELD: {ev}"),
            _ => tracing::info!("{ev}"),
        }
        if matches!(ev, Event::SubnetUp { .. }) && std::mem::take(&mut self.stood_by) {
            tracing::info!(
                "Entering MASTER state (priority {})",
                self.sweeper.config().sm_priority
            );
        }
        if let Some(kind) = MilestoneKind::from_event(&ev) {
            self.notify(kind);
        }
        if matches!(ev, Event::HeavySweepComplete { .. }) && crate::metrics::served() {
            self.metrics.ports_down(self.ports_not_active());
        }
        self.publish_metrics();
        if matches!(
            ev,
            Event::SubnetUp { .. } | Event::HeavySweepComplete { .. }
        ) {
            self.sa_refresh(ctx);
        }
        match ev {
            Event::RoutingNeeded(job) => self.route(*job, ctx),
            Event::DiscoveryDone { .. } => {
                let sweep = self.sweeper.sweep_number();
                self.discovered_at.insert(sweep, crate::clock::unix_ms());
                while self.discovered_at.len() > 16 {
                    self.discovered_at.pop_first();
                }
            }
            Event::PKeyReadback(r) => {
                if let Some(tx) = self.readbacks.remove(&r.id) {
                    let _ = tx.send(*r);
                }
            }
            Event::LidsAssigned { .. } => self.persist(),
            Event::HeavySweepComplete { .. } => {
                self.persist();
                self.perf_targets();
            }
            Event::RoutingDone { .. } => {
                if let Some(t) = self.routing_since.take() {
                    tracing::info!(
                        "routing on {} workers took {:.1} ms",
                        self.pool.workers(),
                        t.elapsed().as_secs_f64() * 1e3
                    );
                }
            }
            _ => {}
        }
    }

    fn route(&mut self, job: sm_core::RoutingJob, ctx: &mut Context<Self>) {
        self.routing_since = Some(Instant::now());
        self.notify(MilestoneKind::RoutingStarted);
        let pool = self.pool.clone();
        let fut = async move { pool.route(job).await };
        ctx.spawn(fut.into_actor(self).map(|res, act, ctx| {
            let res = res.map_err(|e| {
                tracing::error!("{e}");
                sm_core::SmError::from(e)
            });
            act.sweeper.handle_routing_result(act.clock.now(), res);
            act.pump(ctx);
        }));
    }

    /// Writes guid2lid when it changed.
    fn persist(&mut self) {
        let Some(store) = self.store.as_mut() else {
            return;
        };
        let map = self.sweeper.guid2lid();
        match store.save(map) {
            Ok(true) => {
                let ports = map.len();
                tracing::info!(
                    "guid2lid saved: {ports} ports in {}",
                    store.path().display()
                );
                self.notify(MilestoneKind::Guid2LidSaved { ports });
            }
            Ok(false) => {}
            Err(e) => tracing::error!("{e}"),
        }
    }

    /// Hands every MAD already received to the sweeper.
    fn drain_inbound(&mut self) {
        let now = self.clock.now();
        loop {
            let Ok(batch) = self.inbound.borrow_mut().try_recv() else {
                break;
            };
            for m in batch {
                self.sweeper.handle_mad(now, m.slid, m.smp);
            }
        }
    }

    /// Adds the SMPs counted since the last call to the process's metrics, with the SMInfo
    /// state.
    fn publish_metrics(&mut self) {
        let c = *self.sweeper.counters();
        self.metrics.publish(&c, self.sweeper.sm_state());
    }

    /// Linked ports of the last discovery whose PortState, as last read, is not ACTIVE.
    fn ports_not_active(&self) -> usize {
        let t = self.sweeper.discovered_topology();
        t.links()
            .flat_map(|(a, b)| [a, b])
            .filter(|p| {
                let guid = t.node(p.node).node_guid;
                self.sweeper
                    .port_info_as_read(guid, p.port.0)
                    .is_some_and(|(pi, _)| pi.state() != Some(fabric::PortState::Active))
            })
            .count()
    }

    fn fail(&mut self, ctx: &mut Context<Self>, reason: String) {
        tracing::error!("E_NODE_TRANSPORT: {reason}; master stops");
        self.stop_reason = Some(reason);
        ctx.stop();
    }
}

impl Actor for MasterActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let (port, what) = self
            .transport
            .as_ref()
            .map(|t| (t.port_guid().to_string(), t.describe()))
            .unwrap_or_default();
        let role = if self.sweeper.role() == sm_core::Role::Standby {
            "STANDBY"
        } else {
            "MASTER"
        };
        tracing::info!(
            "Entering {role} state (priority {}, port {port}, {what})",
            self.sweeper.config().sm_priority,
        );
        if role == "MASTER" {
            self.notify(MilestoneKind::EnteredMaster);
        }
        let rx = self.inbound.clone();
        ctx.add_stream(futures_util::stream::poll_fn(move |cx| {
            rx.borrow_mut().poll_recv(cx)
        }));
        if role == "MASTER" {
            self.sa_start(ctx);
        }
        self.publish_metrics();
        ctx.run_interval(Duration::from_secs(1), |act, _| act.publish_metrics());
        self.pump(ctx);
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        self.persist();
        // Detach from the fabric before anyone hears that the master stopped.
        drop(self.transport.take());
        let reason = self
            .stop_reason
            .take()
            .unwrap_or_else(|| "shutdown".to_string());
        let c = *self.sweeper.counters();
        self.metrics.stopped(&c, self.sweeper.sm_state());
        tracing::info!(
            "master stopped ({reason}); SMInfo state {:?}, {} SMPs sent, {} Sets",
            self.sweeper.sm_state(),
            c.total(),
            c.sets()
        );
        self.notify(MilestoneKind::Stopped { reason });
    }
}

impl StreamHandler<Vec<Inbound>> for MasterActor {
    fn handle(&mut self, batch: Vec<Inbound>, ctx: &mut Context<Self>) {
        let now = self.clock.now();
        for m in batch {
            self.sweeper.handle_mad(now, m.slid, m.smp);
        }
        self.pump(ctx);
    }

    fn finished(&mut self, ctx: &mut Context<Self>) {
        self.fail(ctx, "the fabric transport closed".into());
    }
}

/// Asks for a sweep now (heavy: rediscover and reprogram; light: poll for changes).
#[derive(Message)]
#[rtype(result = "()")]
pub struct RequestSweep {
    /// Heavy or light.
    pub heavy: bool,
}

impl Handler<RequestSweep> for MasterActor {
    type Result = ();
    fn handle(&mut self, m: RequestSweep, ctx: &mut Context<Self>) {
        self.sweeper.request_sweep(self.clock.now(), m.heavy);
        self.pump(ctx);
    }
}

/// A graceful stop (SIGTERM of a single SM): HANDOVER to the best STANDBY SM found
/// (`sm_core::Sweeper::hand_over_to_stop`); true when one went out, and its end comes as
/// the milestone `HandoverEnded`.
#[derive(Message)]
#[rtype(result = "bool")]
pub struct HandOverToStop;

impl Handler<HandOverToStop> for MasterActor {
    type Result = bool;
    fn handle(&mut self, _: HandOverToStop, ctx: &mut Context<Self>) -> bool {
        let sent = self.sweeper.hand_over_to_stop(self.clock.now());
        self.pump(ctx);
        sent
    }
}

/// Replaces the partition policy of the running master (a SIGHUP reload): the text (None:
/// no partitions file) goes to `sm_core::Sweeper::set_policy`, which refuses a text that
/// does not parse (the answer is that error, and nothing changes) and otherwise requests a
/// heavy sweep that writes the P_Key blocks the new policy changes; the answer is the
/// number of the first heavy sweep certain to program it. The SA takes the new policy's
/// IPoIB broadcast groups (created where missing; proposed first in a cluster).
#[derive(Message)]
#[rtype(result = "Result<u64, String>")]
pub struct ReloadPolicy {
    /// The partitions.conf text, already read (None: left as it is).
    pub text: Option<String>,
    /// The QoS policy text, already read (None: left as it is).
    pub qos: Option<String>,
}

impl Handler<ReloadPolicy> for MasterActor {
    type Result = Result<u64, String>;
    fn handle(&mut self, m: ReloadPolicy, ctx: &mut Context<Self>) -> Self::Result {
        let now = self.clock.now();
        let sw = &mut self.sweeper;
        let mut first = sw.sweep_number() + 1;
        if let Some(q) = m.qos {
            first = sw.set_qos_policy(now, Some(q)).map_err(|e| e.to_string())?;
        }
        if let Some(t) = m.text {
            first = sw.set_policy(now, Some(t)).map_err(|e| e.to_string())?;
        }
        if let Some(a) = self
            .sa
            .as_mut()
            .and_then(|sa| sa.reload_policy(&self.sweeper))
        {
            self.sa_run(vec![a], ctx);
        }
        self.pump(ctx);
        Ok(first)
    }
}

/// The master's state.
#[derive(Clone, Debug)]
pub struct Status {
    /// Sweeper phase.
    pub phase: Phase,
    /// SUBNET UP reached.
    pub subnet_up: bool,
    /// The SM's LID.
    pub sm_lid: fabric::Lid,
    /// Current or last heavy sweep number.
    pub sweep: u64,
    /// SMP counters since start.
    pub counters: Counters,
    /// Ports in the guid2lid map.
    pub guid2lid_ports: usize,
    /// SMInfo state this SM answers with (STANDBY while a foreign master outranks it).
    pub sm_state: mad::SmState,
    /// The foreign master it stands by for (port GUID, priority).
    pub foreign_master: Option<(fabric::Guid, u8)>,
}

/// Reads the master's [`Status`].
#[derive(Message)]
#[rtype(result = "Status")]
pub struct GetStatus;

impl Handler<GetStatus> for MasterActor {
    type Result = MessageResult<GetStatus>;
    fn handle(&mut self, _: GetStatus, _: &mut Context<Self>) -> Self::Result {
        MessageResult(Status {
            phase: self.sweeper.phase(),
            subnet_up: self.sweeper.is_subnet_up(),
            sm_lid: self.sweeper.sm_lid(),
            sweep: self.sweeper.sweep_number(),
            counters: *self.sweeper.counters(),
            guid2lid_ports: self.sweeper.guid2lid().len(),
            sm_state: self.sweeper.sm_state(),
            foreign_master: self.sweeper.foreign_master(),
        })
    }
}

/// Stops the master: flushes guid2lid, stops sending, drops the transport. Answers once the
/// guid2lid file is written.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Shutdown;

impl Handler<Shutdown> for MasterActor {
    type Result = ();
    fn handle(&mut self, _: Shutdown, ctx: &mut Context<Self>) {
        self.persist();
        ctx.stop();
    }
}

/// Reads the master's tables (guid2lid, LFTs, P_Key tables) to record them in the log.
#[derive(Message)]
#[rtype(result = "replica_core::SweepTables")]
pub struct GetTables;

impl Handler<GetTables> for MasterActor {
    type Result = MessageResult<GetTables>;
    fn handle(&mut self, _: GetTables, _: &mut Context<Self>) -> Self::Result {
        MessageResult(replica_core::SweepTables {
            guid2lid: self.sweeper.guid2lid().clone(),
            lfts: self.sweeper.lfts().cloned(),
            pkeys: self.sweeper.pkey_tables(),
            topology: Some(replica::topology_to_proto(
                &self.sweeper.discovered_topology(),
            )),
        })
    }
}

/// The topology of the master's last discovery and its guid -> LID map (admin API).
#[derive(Message)]
#[rtype(result = "(std::sync::Arc<fabric::Topology>, sm_core::Guid2Lid)")]
pub struct GetTopology;

impl Handler<GetTopology> for MasterActor {
    type Result = MessageResult<GetTopology>;
    fn handle(&mut self, _: GetTopology, _: &mut Context<Self>) -> Self::Result {
        MessageResult((
            self.sweeper.discovered_topology(),
            self.sweeper.guid2lid().clone(),
        ))
    }
}

/// The topology of the master's last discovery with the P_Key table capacities its nodes
/// reported (what a policy is checked against before it is committed).
#[derive(Message)]
#[rtype(result = "(std::sync::Arc<fabric::Topology>, partitions::Caps)")]
pub struct GetFabric;

impl Handler<GetFabric> for MasterActor {
    type Result = MessageResult<GetFabric>;
    fn handle(&mut self, _: GetFabric, _: &mut Context<Self>) -> Self::Result {
        MessageResult((
            self.sweeper.discovered_topology(),
            self.sweeper.partition_caps(),
        ))
    }
}

/// Attaches the master to its Raft replica: the sweeper's intents (intent-first
/// programming) go to `intents`, and Sets leave only within `lease`.
#[derive(Message)]
#[rtype(result = "()")]
pub struct SetIntentSink {
    /// Where intents go.
    pub intents: UnboundedSender<sm_core::IntentEvent>,
    /// The write lease.
    pub lease: std::sync::Arc<crate::fence::Lease>,
}

impl Handler<SetIntentSink> for MasterActor {
    type Result = ();
    fn handle(&mut self, m: SetIntentSink, ctx: &mut Context<Self>) {
        self.intents = Some(m.intents);
        self.lease = Some(m.lease);
        self.pump(ctx);
    }
}

/// The intent was committed (true) or could not be (false).
#[derive(Message)]
#[rtype(result = "()")]
pub struct IntentCommitted {
    /// Intent id.
    pub id: u64,
    /// Committed.
    pub ok: bool,
}

impl Handler<IntentCommitted> for MasterActor {
    type Result = ();
    fn handle(&mut self, m: IntentCommitted, ctx: &mut Context<Self>) {
        let now = self.clock.now();
        if m.ok {
            self.sweeper.handle_intent_committed(now, m.id);
        } else {
            self.sweeper.handle_intent_rejected(now, m.id);
        }
        self.pump(ctx);
    }
}

/// Reads every managed P_KeyTable back from the fabric now (Gets only; see
/// `sm_core::Sweeper::request_pkey_readback`). Answers with the read-back report once every
/// Get was answered or given up; an error when this master cannot read (standby) or stopped
/// before the read-back finished.
#[derive(Message)]
#[rtype(result = "Result<sm_core::ReadbackReport, String>")]
pub struct ReadPKeys;

impl Handler<ReadPKeys> for MasterActor {
    type Result = ResponseFuture<Result<sm_core::ReadbackReport, String>>;
    fn handle(&mut self, _: ReadPKeys, ctx: &mut Context<Self>) -> Self::Result {
        let (tx, rx) = tokio::sync::oneshot::channel();
        match self.sweeper.request_pkey_readback(self.clock.now()) {
            Ok(id) => {
                self.readbacks.insert(id, tx);
                self.pump(ctx);
            }
            Err(e) => return Box::pin(async move { Err(e.to_string()) }),
        }
        Box::pin(async move {
            rx.await.map_err(|_| {
                "E_NODE_READBACK: the master stopped before the read-back finished".to_string()
            })
        })
    }
}

/// Progress of the running read-back: (ports finished, ports to read); None when none runs.
#[derive(Message)]
#[rtype(result = "Option<(usize, usize)>")]
pub struct ReadbackProgress;

impl Handler<ReadbackProgress> for MasterActor {
    type Result = Option<(usize, usize)>;
    fn handle(&mut self, _: ReadbackProgress, _: &mut Context<Self>) -> Self::Result {
        self.sweeper.readback_progress().map(|(_, d, t)| (d, t))
    }
}

/// PortInfo of one port as the master last read it.
#[derive(Clone, Debug)]
pub struct PortInfoAsRead {
    /// The attribute as read.
    pub info: mad::PortInfo,
    /// Heavy sweep whose discovery read it.
    pub sweep: u64,
    /// When that discovery completed (Unix ms; 0 when no longer remembered).
    pub read_unix_ms: u64,
}

/// Reads [`PortInfoAsRead`] of (node GUID, port); None when the master never read it.
#[derive(Message)]
#[rtype(result = "Option<PortInfoAsRead>")]
pub struct GetPortInfo {
    /// Node GUID.
    pub node: fabric::Guid,
    /// Port number.
    pub port: u8,
}

impl Handler<GetPortInfo> for MasterActor {
    type Result = Option<PortInfoAsRead>;
    fn handle(&mut self, m: GetPortInfo, _: &mut Context<Self>) -> Self::Result {
        let (info, sweep) = self.sweeper.port_info_as_read(m.node, m.port)?;
        Some(PortInfoAsRead {
            info,
            sweep,
            read_unix_ms: self.discovered_at.get(&sweep).copied().unwrap_or(0),
        })
    }
}

// ---------------------------------------------------------------------------------------
// The SA (issue 10): GMPs in, answers out; changes committed before they are answered.

impl MasterActor {
    fn sa_start(&mut self, ctx: &mut Context<Self>) {
        let Some(t) = self.transport.as_mut() else {
            return;
        };
        let port = t.port_guid();
        let Some(mut rx) = t.take_gmps() else {
            return;
        };
        self.gmps = true;
        self.sa = Some(crate::sa_service::SaService::new(&self.sweeper, port));
        ctx.add_stream(futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx)));
        ctx.run_interval(Duration::from_millis(50), |act, ctx| {
            let now = act.clock.now();
            let mut out = Vec::new();
            if let Some(sa) = act.sa.as_mut()
                && sa.next_timer().is_some_and(|t| t <= now)
            {
                sa.pump(now, &mut out);
            }
            act.sa_run(out, ctx);
        });
        tracing::info!("SA serving on port {port}");
    }

    fn sa_refresh(&mut self, ctx: &mut Context<Self>) {
        if let Some(sa) = self.sa.as_mut() {
            let reports = sa.refresh(&self.sweeper);
            self.sa_run(reports, ctx);
        }
    }

    /// Sends the SA's answers; proposes its changes (answering after commit).
    fn sa_run(&mut self, actions: Vec<crate::sa_service::SaAction>, ctx: &mut Context<Self>) {
        use crate::sa_service::SaAction;
        for a in actions {
            match a {
                SaAction::Send {
                    dlid,
                    dqpn,
                    mad,
                    len,
                } => {
                    if let Some(t) = self.transport.as_mut()
                        && let Err(e) = t.send_gmp(dlid, dqpn, &mad, len)
                    {
                        tracing::warn!("SA-W003 answer to LID {} not sent: {e}", dlid.0);
                    }
                }
                SaAction::Propose { state, replies } => {
                    let Some(p) = self.sa_proposer.clone() else {
                        self.sa_committed(true, replies, ctx);
                        continue;
                    };
                    let cmd = proto::state::Command {
                        request_id: 0,
                        kind: Some(proto::state::command::Kind::SetSaState(state)),
                    };
                    let fut = async move {
                        match p.send(crate::propose::Propose(cmd)).await {
                            Ok(Ok(rx)) => rx.await.map(|r| r.accepted).unwrap_or(false),
                            _ => false,
                        }
                    };
                    ctx.spawn(fut.into_actor(self).map(move |ok, act, ctx| {
                        act.sa_committed(ok, replies, ctx);
                    }));
                }
            }
        }
    }

    fn sa_committed(&mut self, ok: bool, replies: Vec<(sa::Reply, u32)>, ctx: &mut Context<Self>) {
        if !ok {
            tracing::warn!(
                "SA-W004 SA state change not committed: {} answers dropped",
                replies.len()
            );
            return;
        }
        let now = self.clock.now();
        let Some(sa) = self.sa.as_mut() else { return };
        let mut out = Vec::new();
        for (r, qpn) in replies {
            sa.reply(now, r, qpn, &mut out);
        }
        let groups = sa.mcast_groups();
        self.sweeper.set_alias_guids(now, sa.aliases());
        self.sweeper.set_multicast(now, groups);
        self.sa_run(out, ctx);
        self.pump(ctx);
    }
}

impl StreamHandler<Vec<crate::transport::InboundGmp>> for MasterActor {
    fn handle(&mut self, batch: Vec<crate::transport::InboundGmp>, ctx: &mut Context<Self>) {
        let now = self.clock.now();
        let now_ms = crate::clock::unix_ms();
        // PerfMgt answers go to the perf manager, everything else to the SA.
        let before = batch.len();
        let batch: Vec<_> = batch
            .into_iter()
            .filter(|g| !self.perf_gmp(&g.mad))
            .collect();
        if batch.len() != before {
            self.pump(ctx);
        }
        let Some(sa) = self.sa.as_mut() else { return };
        let out = sa.handle(&self.sweeper, now, now_ms, batch);
        self.sa_run(out, ctx);
    }

    fn finished(&mut self, _: &mut Context<Self>) {}
}

/// Connects the master's SA to its Raft replica: loads the replicated SA state and
/// proposes later changes through `proposer`.
#[derive(Message)]
#[rtype(result = "()")]
pub struct SetSaState {
    /// The replicated SA state.
    pub state: proto::state::SaState,
    /// Where changes are proposed.
    pub proposer: Recipient<crate::propose::Propose>,
}

impl Handler<SetSaState> for MasterActor {
    type Result = ();
    fn handle(&mut self, m: SetSaState, ctx: &mut Context<Self>) {
        self.sa_proposer = Some(m.proposer);
        let Some(sa) = self.sa.as_mut() else { return };
        let now = self.clock.now();
        let first = sa.load(&m.state, &mut self.sweeper, now);
        let groups = sa.mcast_groups();
        self.sweeper.set_alias_guids(now, sa.aliases());
        self.sweeper.set_multicast(now, groups);
        if let Some(a) = first {
            self.sa_run(vec![a], ctx);
        }
        self.pump(ctx);
    }
}
