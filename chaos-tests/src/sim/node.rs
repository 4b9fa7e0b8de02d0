//! One simulated replica: the production replica core (`replica_core::ReplicaCore`) on a
//! disk that loses what was not flushed when the machine dies (`storage::VolatileLog`), and
//! the sweepers the core asks for — its master and its standby SM, sm-core `Sweeper`s
//! attached to the simulated fabric at this replica's port.
//!
//! This file is only the simulation's driver of the core: it delivers messages and ticks on
//! virtual time and carries out the core's outputs, as the daemon's actor does with sled,
//! tonic and actix. No Raft, apply, seeding, lease or intent rule is restated here.

use super::Variant;
use super::net::Net;
use fabric::Guid;
use fabric_sim::{AttachId, SimFabric};
use proto::state::{ApplyPolicy, Command, command::Kind};
use raft::eraftpb::Message;
use replica::ReplicatedState;
use replica_core::{CoreConfig, Output, ReplicaCore, Role, SweepTables};
use sm_core::{Event, IntentEvent, Sweeper, SweeperConfig, VTime};
use std::collections::BTreeMap;
use storage::VolatileLog;

/// Raft timing (virtual): the real node's defaults, 50 ms ticks and a 10-tick election
/// timeout.
pub const TICK_NS: VTime = 50_000_000;
/// Election timeout in ticks.
pub const ELECTION_TICKS: usize = 10;
/// Snapshot every this many applied entries (small, so that runs compact their logs and
/// lagging replicas catch up from snapshots).
pub const SNAPSHOT_EVERY: u64 = 40;
/// Save the applied state every this many entries.
pub const SAVE_EVERY: u64 = 16;

/// What the nodes tell the world during a step (read by the checker).
#[derive(Debug, Default)]
pub struct Observed {
    /// (replica, index, term, hash of the entry) for every committed entry applied.
    pub applied: Vec<(u64, u64, u64, u64)>,
    /// Client proposals acknowledged as accepted: (index, policy version, text).
    pub acked: Vec<(u64, u64, String)>,
    /// Linearizable reads answered: (replica, lowest version it may return, version read).
    pub reads: Vec<(u64, u64, u64)>,
    /// (replica, term) of every master started.
    pub masters: Vec<(u64, u64)>,
    /// (replica, term) of every SUBNET UP.
    pub subnet_up: Vec<(u64, u64)>,
    /// (replica, term) of every heavy sweep completed.
    pub heavy_done: Vec<(u64, u64)>,
    /// (replica, term, failures) of every IntentDone a master emitted.
    pub intents_done: Vec<(u64, u64, bool)>,
    /// (replica, why) of every replica whose core gave up.
    pub fatal: Vec<(u64, String)>,
    /// Event lines for `--trace` (None: not kept).
    pub trace: Option<Vec<String>>,
}

impl Observed {
    /// Keeps a trace line when tracing.
    pub fn note(&mut self, now: VTime, f: impl FnOnce() -> String) {
        if let Some(t) = self.trace.as_mut() {
            t.push(format!("[{:>10.3} ms] {}", now as f64 / 1e6, f()));
        }
    }
}

/// The environment a node acts on during a step.
pub struct Ctx<'a> {
    /// Virtual now.
    pub now: VTime,
    /// Replica network.
    pub net: &'a mut Net,
    /// The fabric.
    pub fab: &'a mut SimFabric,
    /// Observations.
    pub obs: &'a mut Observed,
    /// Driver variant.
    pub variant: Variant,
}

/// A sweeper the core asked for, attached at this replica's port.
pub struct Attached {
    /// The core's generation of it.
    pub gen_: u64,
    /// Term it masters (None: the standby).
    pub term: Option<u64>,
    /// The sweeper.
    pub sw: Sweeper,
    /// Its attachment (None: the unfenced driver's standby, which it never attaches).
    pub at: Option<AttachId>,
}

/// A linearizable read in flight: the lowest policy version it may return.
#[derive(Clone, Copy, Debug)]
struct ReadCall {
    floor: u64,
}

/// One replica.
pub struct Node {
    /// Raft id (1-based).
    pub id: u64,
    /// Its fabric port.
    pub port_guid: Guid,
    /// SM priority (the world raises one to test priority transfer).
    pub priority: u8,
    /// Every replica's SM port (`SweeperConfig::peer_sms`, as sm-node's
    /// `--peer-sm-guids`): the masters obey the IBA rules towards any other SM.
    pub peer_sms: Vec<Guid>,
    cfg: CoreConfig,
    disk: VolatileLog,
    core: Option<ReplicaCore<VolatileLog>>,
    /// SIGSTOP'ed: not driven, messages wait.
    pub paused: bool,
    /// Messages that arrived while paused.
    pub held: Vec<Message>,
    /// Next tick.
    pub next_tick: VTime,
    /// The master, while one runs.
    pub master: Option<Attached>,
    /// The standby SM, while one runs.
    pub standby: Option<Attached>,
    /// The unfenced driver's deposed master, still running.
    pub zombie: Option<Attached>,
    /// Terms of masters stopped since the world last looked.
    pub stopped: Vec<u64>,
    clients: BTreeMap<u64, String>,
    reads: BTreeMap<u64, ReadCall>,
    boots: u64,
    last_state: ReplicatedState,
    /// The voters it knew when it last went down (empty: never up, or a new disk).
    last_voters: Vec<u64>,
    /// The SA state whose multicast groups the master was given last.
    groups_given: Option<proto::state::SaState>,
}

impl Node {
    /// A replica with an empty disk (the core initializes it with the voters), booted with
    /// its first tick at `first_tick`; its random choices derive from `seed`.
    pub fn new(
        id: u64,
        peers: &[u64],
        port_guid: Guid,
        seed: u64,
        first_tick: VTime,
    ) -> Result<Node, replica_core::CoreError> {
        let mut cfg = CoreConfig::new(id, peers.iter().map(|&p| (p, format!("sim:{p}"))).collect());
        cfg.tick = TICK_NS;
        cfg.election_ticks = ELECTION_TICKS;
        cfg.snapshot_every = SNAPSHOT_EVERY;
        cfg.save_applied_every = SAVE_EVERY;
        cfg.snapshot_timeout = 2 * crate::sim::world::MS * 1000;
        cfg.port_guid = port_guid;
        cfg.seed = seed;
        cfg.observe_applied = true;
        cfg.bootstrap = true;
        let mut n = Node {
            id,
            port_guid,
            priority: 0,
            peer_sms: Vec::new(),
            cfg,
            disk: VolatileLog::new(),
            core: None,
            paused: false,
            held: Vec::new(),
            next_tick: first_tick,
            master: None,
            standby: None,
            zombie: None,
            stopped: Vec::new(),
            clients: BTreeMap::new(),
            reads: BTreeMap::new(),
            boots: 0,
            last_state: ReplicatedState::new(),
            last_voters: Vec::new(),
            groups_given: None,
        };
        n.boot(first_tick)?;
        Ok(n)
    }

    /// Starts the process on its disk: the core resumes from what was flushed.
    pub fn boot(&mut self, first_tick: VTime) -> Result<(), replica_core::CoreError> {
        self.boots += 1;
        let mut cfg = self.cfg.clone();
        cfg.seed = self.cfg.seed ^ self.boots.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        cfg.priority = self.priority;
        self.core = Some(ReplicaCore::new(cfg, self.disk.clone())?);
        self.next_tick = first_tick;
        self.paused = false;
        self.held.clear();
        Ok(())
    }

    /// True while the process exists.
    pub fn is_up(&self) -> bool {
        self.core.is_some()
    }

    /// True when this replica is Raft leader (down: false).
    pub fn is_leader(&self) -> bool {
        self.core.as_ref().is_some_and(|c| c.is_leader())
    }

    /// Current Raft term (0 when down).
    pub fn term(&self) -> u64 {
        self.core.as_ref().map_or(0, |c| c.term())
    }

    /// Last log index (0 when down).
    pub fn last_index(&self) -> u64 {
        self.core.as_ref().map_or(0, |c| c.last_index())
    }

    /// The applied state (the last one it had when down).
    pub fn state(&self) -> &ReplicatedState {
        self.core.as_ref().map_or(&self.last_state, |c| c.state())
    }

    /// The voters this replica's log records (down: none).
    pub fn voters(&self) -> Vec<u64> {
        self.core.as_ref().map_or_else(Vec::new, voters_of)
    }

    /// The voters it knows: up, what its log records; down, what it knew when it went down
    /// (its disk holds at least that membership).
    pub fn voters_known(&self) -> Vec<u64> {
        self.core
            .as_ref()
            .map_or_else(|| self.last_voters.clone(), voters_of)
    }

    /// The core (None when down).
    pub fn core_mut(&mut self) -> Option<&mut ReplicaCore<VolatileLog>> {
        self.core.as_mut()
    }

    /// kill -9: memory is gone, unflushed writes are lost, the disk stays.
    pub fn crash(&mut self, fab: &mut SimFabric) {
        if let Some(c) = self.core.take() {
            self.last_state = c.state().clone();
            self.last_voters = voters_of(&c);
        }
        // A VolatileLog only fails on a poisoned lock, which a panic elsewhere caused.
        let _ = self.disk.crash();
        for a in [self.master.take(), self.standby.take(), self.zombie.take()]
            .into_iter()
            .flatten()
        {
            if let Some(t) = a.term {
                self.stopped.push(t);
            }
            if let Some(at) = a.at {
                let _ = fab.detach(at);
            }
        }
        self.paused = false;
        self.held.clear();
        self.clients.clear();
        self.reads.clear();
    }

    /// The disk is replaced: the process dies, its log is gone; the next boot starts on an
    /// empty log in an existing cluster (it recovers from the leader without voting).
    pub fn wipe(&mut self, fab: &mut SimFabric) {
        self.crash(fab);
        self.disk = VolatileLog::new();
        self.cfg.bootstrap = false;
        self.last_state = ReplicatedState::new();
        self.last_voters.clear();
    }

    /// True while the core recovers a lost log.
    pub fn is_recovering(&self) -> bool {
        self.core.as_ref().is_some_and(|c| c.is_recovering())
    }

    /// One Raft tick, then the core's outputs.
    pub fn tick(&mut self, cx: &mut Ctx<'_>) {
        if let Some(c) = self.core.as_mut() {
            c.tick(cx.now);
        }
        self.drain(cx);
    }

    /// A Raft message from the network, then the core's outputs.
    pub fn step(&mut self, m: Message, cx: &mut Ctx<'_>) {
        if let Some(c) = self.core.as_mut() {
            c.step(cx.now, m);
        }
        self.drain(cx);
    }

    /// A client's ApplyPolicy through this replica (true when proposed).
    pub fn propose_policy(&mut self, text: &str, cx: &mut Ctx<'_>) -> bool {
        let Some(c) = self.core.as_mut() else {
            return false;
        };
        let cmd = Command {
            request_id: 0,
            kind: Some(Kind::ApplyPolicy(ApplyPolicy {
                text: text.to_string(),
                expected_version: c.state().policy().version,
            })),
        };
        let r = c.propose(cx.now, cmd);
        if let Ok(request) = r {
            self.clients.insert(request, text.to_string());
        }
        self.drain(cx);
        r.is_ok()
    }

    /// A client's linearizable read of the policy version through this replica; it must
    /// return at least `floor` (every version acknowledged before it began).
    pub fn read_policy(&mut self, floor: u64, cx: &mut Ctx<'_>) -> bool {
        let Some(c) = self.core.as_mut() else {
            return false;
        };
        let r = c.read_index(cx.now);
        if let Ok(t) = r {
            self.reads.insert(t, ReadCall { floor });
        }
        self.drain(cx);
        r.is_ok()
    }

    /// Runs `f` on the core (when up), then carries out its outputs.
    pub fn with_core<R>(
        &mut self,
        cx: &mut Ctx<'_>,
        f: impl FnOnce(&mut ReplicaCore<VolatileLog>, VTime) -> R,
    ) -> Option<R> {
        let now = cx.now;
        let r = self.core.as_mut().map(|c| f(c, now));
        self.drain(cx);
        r
    }

    /// Carries out everything the core has to say.
    pub fn drain(&mut self, cx: &mut Ctx<'_>) {
        let Some(mut core) = self.core.take() else {
            return;
        };
        let mut exit = false;
        while let Some(o) = core.poll_output() {
            match o {
                Output::Send(m) => cx.net.send(cx.now, m),
                Output::StartMaster { gen_, seed } => self.start_master(&mut core, gen_, &seed, cx),
                Output::StartStandby { gen_ } => self.start_standby(&mut core, gen_, cx),
                Output::StopRole { gen_ } => self.stop_role(&mut core, gen_, cx),
                Output::IntentResult {
                    gen_,
                    id,
                    committed,
                } => {
                    if let Some(m) = self.master.as_mut().filter(|m| m.gen_ == gen_) {
                        if committed {
                            m.sw.handle_intent_committed(cx.now, id);
                        } else {
                            m.sw.handle_intent_rejected(cx.now, id);
                        }
                    }
                }
                Output::RecordTables { gen_ } => {
                    match self.master.as_ref().filter(|m| m.gen_ == gen_) {
                        Some(m) => {
                            let t = SweepTables {
                                guid2lid: m.sw.guid2lid().clone(),
                                lfts: m.sw.lfts().cloned(),
                                pkeys: m.sw.pkey_tables(),
                                topology: Some(replica::topology_to_proto(
                                    &m.sw.discovered_topology(),
                                )),
                            };
                            core.sweep_tables(cx.now, gen_, &t);
                        }
                        None => core.tables_unavailable(gen_),
                    }
                }
                Output::Answer { request, result } => {
                    if let Some(text) = self.clients.remove(&request)
                        && result.accepted
                    {
                        cx.obs
                            .acked
                            .push((result.index, result.policy_version, text));
                    }
                }
                Output::Dropped { request } => {
                    self.clients.remove(&request);
                }
                Output::ReadDone { ticket, result } => {
                    if let (Some(call), Ok(_)) = (self.reads.remove(&ticket), &result) {
                        let got = core.state().policy().version;
                        cx.obs.reads.push((self.id, call.floor, got));
                    }
                }
                Output::Applied { index, term, hash } => {
                    cx.obs.applied.push((self.id, index, term, hash));
                }
                Output::Stopped => exit = true,
                Output::Fatal(e) => {
                    cx.obs.fatal.push((self.id, e.to_string()));
                    exit = true;
                }
                Output::Notice(n) => {
                    let id = self.id;
                    cx.obs.note(cx.now, || format!("r{id}: {n}"));
                }
            }
        }
        self.give_groups(&core, cx.now);
        self.core = Some(core);
        if exit {
            // The process ends (graceful stop done, or the core gave up).
            if let Some(c) = self.core.as_mut() {
                let _ = c.shutdown();
            }
            self.crash(cx.fab);
        }
    }

    /// The master's SA hands the replicated multicast groups to its sweeper (as the daemon's
    /// SA service does after loading or committing the SA state): through the `sa` crate's
    /// engine, whose groups-to-forwarding rule the daemon uses.
    fn give_groups(&mut self, core: &ReplicaCore<VolatileLog>, now: VTime) {
        let Some(m) = self.master.as_mut() else {
            self.groups_given = None;
            return;
        };
        let st = core.state().sa_state();
        if self.groups_given.as_ref() == Some(st) {
            return;
        }
        let mut e = sa::SaEngine::new(sa::SaConfig::default());
        if e.load(st).is_ok() {
            let groups = e
                .forwarding_groups()
                .into_iter()
                .map(|(mlid, members)| sm_core::McastGroup { mlid, members })
                .collect();
            m.sw.set_multicast(now, groups);
        }
        self.groups_given = Some(st.clone());
    }

    fn sweeper_config() -> SweeperConfig {
        SweeperConfig {
            // The harness's settings: light sweeps, one routing shard.
            sweep_interval: 500_000_000,
            ..SweeperConfig::default()
        }
    }

    fn start_master(
        &mut self,
        core: &mut ReplicaCore<VolatileLog>,
        gen_: u64,
        seed: &replica_core::MasterSeed,
        cx: &mut Ctx<'_>,
    ) {
        if let Some(z) = self.zombie.take()
            && let Some(at) = z.at
        {
            let _ = cx.fab.detach(at);
        }
        let mut scfg = Self::sweeper_config();
        seed.configure(&mut scfg);
        scfg.peer_sms.clone_from(&self.peer_sms);
        let attached = Sweeper::new(scfg)
            .map_err(|e| e.to_string())
            .and_then(|sw| {
                Ok((
                    sw,
                    cx.fab.attach(self.port_guid).map_err(|e| e.to_string())?,
                ))
            });
        let Ok((sw, at)) = attached else {
            return core.attach_failed(cx.now, gen_);
        };
        self.master = Some(Attached {
            gen_,
            term: Some(seed.term),
            sw,
            at: Some(at),
        });
        self.groups_given = None;
        cx.obs.masters.push((self.id, seed.term));
        core.master_started(cx.now, gen_, self.port_guid);
    }

    fn start_standby(&mut self, core: &mut ReplicaCore<VolatileLog>, gen_: u64, cx: &mut Ctx<'_>) {
        let mut scfg = Self::sweeper_config();
        replica_core::start::configure_standby(&mut scfg, self.port_guid);
        let Ok(sw) = Sweeper::new(scfg) else {
            return core.attach_failed(cx.now, gen_);
        };
        let at = if self.zombie.is_some() {
            // The unfenced driver's deposed master still holds the port.
            None
        } else {
            match cx.fab.attach(self.port_guid) {
                Ok(at) => Some(at),
                Err(_) => return core.attach_failed(cx.now, gen_),
            }
        };
        self.standby = Some(Attached {
            gen_,
            term: None,
            sw,
            at,
        });
    }

    fn stop_role(&mut self, core: &mut ReplicaCore<VolatileLog>, gen_: u64, cx: &mut Ctx<'_>) {
        if self.master.as_ref().is_some_and(|m| m.gen_ == gen_) {
            let m = self.master.take();
            if cx.variant == Variant::Unfenced && !core.is_leader() {
                // The broken driver: a deposed master keeps running.
                self.zombie = m;
            } else if let Some(m) = m {
                if let Some(t) = m.term {
                    self.stopped.push(t);
                }
                if let Some(at) = m.at {
                    let _ = cx.fab.detach(at);
                }
            }
        } else if let Some(s) = self.standby.take_if(|s| s.gen_ == gen_)
            && let Some(at) = s.at
        {
            let _ = cx.fab.detach(at);
        }
        core.role_stopped(cx.now, gen_);
    }

    /// Sends what the sweepers have to send now (a master's Sets only within the lease).
    pub fn transmit(&mut self, cx: &mut Ctx<'_>) {
        let lease = self.core.as_ref().and_then(|c| c.lease_until());
        let fenced = cx.variant == Variant::Correct;
        for a in [&mut self.master, &mut self.standby, &mut self.zombie]
            .into_iter()
            .flatten()
        {
            let Some(at) = a.at else { continue };
            a.sw.set_lease(fenced.then_some(lease.unwrap_or(0)));
            while let Some(tx) = a.sw.poll_transmit_at(cx.now) {
                if fenced && !replica_core::lease::fence_allows(tx.smp.method, lease, cx.now) {
                    continue;
                }
                // A malformed SMP is the sweeper's bug; the fabric counts and drops it.
                let _ = if tx.dlid.is_permissive() {
                    cx.fab.send(cx.now, at, &tx.smp)
                } else {
                    cx.fab.send_lid(cx.now, at, tx.dlid, &tx.smp)
                };
            }
        }
    }

    /// Earliest time a sweeper wants to run.
    pub fn sweeper_timeout(&mut self) -> Option<VTime> {
        [&mut self.master, &mut self.standby, &mut self.zombie]
            .into_iter()
            .flatten()
            .filter_map(|a| a.sw.poll_timeout())
            .min()
    }

    /// Drives the sweepers: received MADs, due timeouts, events (routing inline; a master's
    /// milestones and intents go to the core, whose outputs may answer the master at once).
    pub fn run_sweepers(&mut self, cx: &mut Ctx<'_>) {
        for a in [&mut self.standby, &mut self.zombie].into_iter().flatten() {
            let zombie = a.term.is_some();
            let (_, intents) = Self::collect(self.id, a, cx);
            if zombie && cx.variant == Variant::Unfenced {
                for ie in intents {
                    if let IntentEvent::Program(it) = ie {
                        // The broken driver: programs without waiting for the quorum.
                        a.sw.handle_intent_committed(cx.now, it.id);
                    }
                }
            }
        }
        loop {
            let Some(m) = self.master.as_mut() else {
                return;
            };
            let gen_ = m.gen_;
            let (heavy_done, intents) = Self::collect(self.id, m, cx);
            if !heavy_done && intents.is_empty() {
                return;
            }
            if let Some(c) = self.core.as_mut() {
                if heavy_done {
                    c.heavy_sweep_done(cx.now, gen_);
                }
                for ie in intents {
                    let program = match &ie {
                        IntentEvent::Program(it) => Some(it.id),
                        IntentEvent::Done { .. } => None,
                    };
                    c.intent(cx.now, gen_, ie);
                    if cx.variant == Variant::Unfenced
                        && let (Some(id), Some(m)) = (program, self.master.as_mut())
                    {
                        // The broken driver: programs without waiting for the quorum.
                        m.sw.handle_intent_committed(cx.now, id);
                    }
                }
            }
            self.drain(cx);
        }
    }

    /// Runs one sweeper until it has nothing to say: whether a heavy sweep completed, and
    /// its intents.
    fn collect(id: u64, a: &mut Attached, cx: &mut Ctx<'_>) -> (bool, Vec<IntentEvent>) {
        if let Some(at) = a.at {
            while let Some(r) = cx.fab.poll_recv_full(at) {
                a.sw.handle_mad(cx.now, r.slid, r.smp);
            }
        }
        if matches!(a.sw.poll_timeout(), Some(t) if t <= cx.now) {
            a.sw.handle_timeout(cx.now);
        }
        let mut heavy_done = false;
        let mut intents = Vec::new();
        let Some(term) = a.term else {
            while a.sw.poll_event().is_some() {}
            return (false, intents);
        };
        loop {
            let mut any = false;
            while let Some(ev) = a.sw.poll_event() {
                any = true;
                cx.obs.note(cx.now, || format!("r{id} t{term}: {ev}"));
                match ev {
                    Event::RoutingNeeded(job) => {
                        let r = sm_core::route_inline(&job);
                        a.sw.handle_routing_result(cx.now, r);
                    }
                    Event::SubnetUp { .. } => cx.obs.subnet_up.push((id, term)),
                    Event::HeavySweepComplete { .. } => {
                        cx.obs.heavy_done.push((id, term));
                        heavy_done = true;
                    }
                    _ => {}
                }
            }
            while let Some(ie) = a.sw.poll_intent() {
                any = true;
                if let IntentEvent::Done {
                    failed_switches,
                    failed_ports,
                    ..
                } = &ie
                {
                    let failed = !failed_switches.is_empty() || !failed_ports.is_empty();
                    cx.obs.intents_done.push((id, term, failed));
                }
                intents.push(ie);
            }
            if !any {
                return (heavy_done, intents);
            }
        }
    }

    /// The SA of the master changes the multicast groups: `state` is proposed as the
    /// replicated SA state (true when proposed).
    pub fn propose_sa_state(&mut self, state: proto::state::SaState, cx: &mut Ctx<'_>) -> bool {
        let Some(c) = self.core.as_mut() else {
            return false;
        };
        let r = c.propose(
            cx.now,
            Command {
                request_id: 0,
                kind: Some(Kind::SetSaState(state)),
            },
        );
        self.drain(cx);
        r.is_ok()
    }

    /// The core's role (None when down).
    pub fn role(&self) -> Option<Role> {
        self.core.as_ref().map(|c| c.role())
    }
}

/// The voters a replica's log records.
fn voters_of(c: &ReplicaCore<VolatileLog>) -> Vec<u64> {
    c.status()
        .replicas
        .iter()
        .filter(|p| p.voter)
        .map(|p| p.id)
        .collect()
}
