//! The simulated world: three replicas, their network and the fabric on one virtual clock,
//! driven one discrete step at a time, with the checker run after every step.

use super::check::{ATTR_PORT_INFO, Checker, Violation};
use super::foreign::{ForeignMode, ForeignSm, Seen};
use super::net::Net;
use super::node::{Ctx, Node, Observed, TICK_NS};
use super::reach::reachable;
use super::schedule::Action;
use super::{RunStats, Variant};
use crate::ChaosError;
use fabric::rng::SplitMix64;
use fabric::{Guid, Lid, NodeId, PortState, Topology};
use fabric_sim::{Fault, SimConfig, SimFabric};
use mad::SmState;
use sm_core::VTime;
use std::collections::{BTreeMap, BTreeSet};

/// One millisecond of virtual time.
pub const MS: VTime = 1_000_000;
/// Steps at one virtual instant before the run is declared livelocked.
const SAME_TIME_LIMIT: u32 = 20_000;
/// How often the leader hears the others' priorities (the daemon's preference loop).
const PREFERENCE_PERIOD: VTime = 500 * MS;

/// CA ports with a cable: (node, port, port GUID).
pub fn ca_ports(t: &Topology) -> Vec<(NodeId, u8, Guid)> {
    sm_node::cluster::harness::ca_ports(t)
}

/// The world.
pub struct World {
    /// Virtual now.
    pub now: VTime,
    /// The fabric.
    pub fab: SimFabric,
    /// Its topology.
    pub topo: Topology,
    /// Replica network.
    pub net: Net,
    /// Replicas (index = id - 1).
    pub nodes: Vec<Node>,
    /// Driver variant.
    pub variant: Variant,
    /// Invariants.
    pub checker: Checker,
    /// Counters.
    pub stats: RunStats,
    rng: SplitMix64,
    /// CA ports.
    pub cas: Vec<(NodeId, u8, Guid)>,
    links: Vec<super::reach::Cable>,
    switches: Vec<NodeId>,
    /// Policies a client may apply.
    pub policies: Vec<String>,
    /// Fabric faults in effect until this time (no quiet takeover before it).
    pub fabric_busy_until: VTime,
    /// Master (replica, term) behind each port that ever had one.
    senders: BTreeMap<Guid, (u64, u64)>,
    obs: Observed,
    /// When a master-holding replica was hit (failover clock start).
    failover_from: Option<(u64, VTime)>,
    /// The links of the whole fabric, by node GUID and port.
    links_full: BTreeSet<(u64, u32, u64, u32)>,
    leaders_seen: BTreeSet<(u64, u64)>,
    next_preference: VTime,
    /// Replicas whose disk was replaced and that have not finished recovering.
    wiped: BTreeSet<u64>,
    /// When a master last completed a heavy sweep.
    last_heavy_done: VTime,
    /// The foreign SM, while one runs.
    pub foreign: Option<ForeignSm>,
    /// Where a foreign SM runs: the fourth CA port (port number, port GUID) and the switch
    /// its cable leads to (None: the fabric has three CA ports).
    foreign_port: Option<(u8, Guid, NodeId)>,
    /// The last foreign SM's Sets are an SM's (an honest one's), not a rogue's.
    foreign_legit: bool,
    /// Vports of the virtualization-capable HCAs (topology suffix `+vports=AxB`), with the
    /// LID each first had ACTIVE.
    pub vports: BTreeMap<Guid, Option<Lid>>,
}

/// A topology's links as (node GUID, port, node GUID, port), each link once, lower end
/// first.
pub fn link_set(t: &proto::state::Topology) -> BTreeSet<(u64, u32, u64, u32)> {
    let guid = |i: u32| t.nodes.get(i as usize).map_or(0, |n| n.node_guid);
    t.links
        .iter()
        .map(|l| {
            let a = (guid(l.a_node), l.a_port);
            let b = (guid(l.b_node), l.b_port);
            let (a, b) = if a <= b { (a, b) } else { (b, a) };
            (a.0, a.1, b.0, b.1)
        })
        .collect()
}

/// Multicast groups the simulation's clients join.
const GROUPS: u32 = 4;

/// `sa` with group `group % GROUPS` created or changed: an IPv4-over-IB style MGID, MLID
/// 0xC001 + the group, full members drawn from the CA ports by the group number.
pub fn join(
    sa: &proto::state::SaState,
    group: u32,
    cas: &[(NodeId, u8, Guid)],
) -> proto::state::SaState {
    let g = group % GROUPS;
    let mut mgid = vec![0xFF, 0x12, 0x40, 0x1B, 0xFF, 0xFF];
    mgid.resize(15, 0);
    mgid.push(g as u8 + 1);
    let members = (0..cas.len())
        .filter(|i| {
            (group >> 2).wrapping_add(*i as u32).is_multiple_of(2) || *i as u32 % GROUPS == g
        })
        .map(|i| {
            let mut gid = 0xFE80_0000_0000_0000u64.to_be_bytes().to_vec();
            gid.extend_from_slice(&cas[i].2.0.to_be_bytes());
            proto::state::McMember {
                port_gid: gid,
                join_state: 1,
                proxy_join: false,
            }
        })
        .collect();
    let mut out = sa.clone();
    out.groups.retain(|x| x.mgid != mgid);
    out.groups.push(proto::state::McGroup {
        mgid,
        mlid: 0xC001 + g,
        pkey: 0xFFFF,
        qkey: 0x0B1B,
        mtu: 4,
        rate: 3,
        members,
        scope: 2,
        ..Default::default()
    });
    out
}

/// Partition policies for the fabric's CA ports (GUIDs of the first four).
pub fn policies(cas: &[(NodeId, u8, Guid)]) -> Vec<String> {
    let g = |i: usize| cas[i % cas.len()].2;
    vec![
        "Default=0x7fff : ALL=full ;\n".to_string(),
        format!(
            "Default=0x7fff : ALL=full ;\nA=0x0001 : {}=full, {}=full, {}=limited ;\n",
            g(0),
            g(1),
            g(2)
        ),
        format!(
            "Default=0x7fff : ALL=full ;\nB=0x0002 : ALL=limited, {}=full ;\n",
            g(3)
        ),
        format!(
            "Default=0x7fff : ALL=full ;\nA=0x0001 : {}=full, {}=full ;\nC=0x0003 : {}=full, {}=limited ;\n",
            g(1),
            g(3),
            g(0),
            g(2)
        ),
    ]
}

impl World {
    /// Three replicas at the first three CA ports of `topology`, the fabric and the network
    /// seeded from `seed`.
    pub fn new(topology: &str, seed: u64, variant: Variant) -> Result<World, ChaosError> {
        let bad = |reason: String| ChaosError::Topology {
            spec: topology.into(),
            reason,
        };
        let (spec, virt) = super::vports::split_vports(topology).map_err(bad)?;
        let topo = spec
            .parse::<fabric::GenSpec>()
            .map_err(|e| e.to_string())
            .and_then(|s| s.generate().map_err(|e| e.to_string()))
            .map_err(|reason| ChaosError::Topology {
                spec: topology.into(),
                reason,
            })?;
        let cas = ca_ports(&topo);
        if cas.len() < 3 {
            return Err(ChaosError::Topology {
                spec: topology.into(),
                reason: format!("{} CA ports; three replicas need three", cas.len()),
            });
        }
        let mut fab = SimFabric::new(
            &topo,
            SimConfig {
                seed,
                ..SimConfig::default()
            },
        )?;
        let vports = super::vports::enable(&mut fab, &cas, virt).map_err(bad)?;
        let mut rng = SplitMix64::new(seed ^ 0x0A11_CE55_0000_0001);
        let voters = [1, 2, 3];
        let mut nodes = Vec::new();
        for id in 1..=3u64 {
            let phase = rng.below(TICK_NS);
            nodes.push(Node::new(
                id,
                &voters,
                cas[(id - 1) as usize].2,
                seed ^ id.wrapping_mul(0xA076_1D64_78BD_642F),
                phase,
            )?);
        }
        let replica_ports: Vec<Guid> = nodes.iter().map(|n| n.port_guid).collect();
        for n in &mut nodes {
            n.peer_sms.clone_from(&replica_ports);
        }
        let links = topo
            .links()
            .map(|(a, b)| (a.node, a.port.0, b.node, b.port.0))
            .collect();
        let switches = topo.switches().map(|(id, _)| id).collect();
        let policies = policies(&cas);
        let foreign_port = cas.get(3).and_then(|&(node, port, guid)| {
            let far = topo.remote(fabric::PortRef {
                node,
                port: fabric::PortNum(port),
            })?;
            Some((port, guid, far.node))
        });
        let links_full = link_set(&replica::topology_to_proto(&topo));
        Ok(World {
            now: 0,
            fab,
            topo,
            net: Net::new(seed ^ 0x4E37_0000_0000_0002),
            nodes,
            variant,
            checker: Checker::default(),
            stats: RunStats::default(),
            rng,
            cas,
            links,
            switches,
            policies,
            fabric_busy_until: 0,
            senders: BTreeMap::new(),
            obs: Observed::default(),
            failover_from: None,
            links_full,
            leaders_seen: BTreeSet::new(),
            next_preference: 0,
            wiped: BTreeSet::new(),
            last_heavy_done: 0,
            foreign: None,
            foreign_port,
            foreign_legit: false,
            vports,
        })
    }

    fn driven(&self, i: usize) -> bool {
        self.nodes[i].is_up() && !self.nodes[i].paused
    }

    /// The replica that is Raft leader (lowest id when several believe it), if any.
    pub fn leader(&self) -> Option<u64> {
        self.nodes.iter().find(|n| n.is_leader()).map(|n| n.id)
    }

    /// Runs until `end`, checking the invariants after every step.
    pub fn run_until(&mut self, end: VTime) -> Result<(), Violation> {
        let mut same = 0u32;
        loop {
            let prev = self.now;
            for i in 0..self.nodes.len() {
                if self.driven(i) {
                    self.with_node(i, |n, cx| n.transmit(cx));
                }
            }
            let mut next = self.fab.next_event_time();
            let mut fold = |t: Option<VTime>| {
                if let Some(t) = t {
                    next = Some(next.map_or(t, |n: VTime| n.min(t)));
                }
            };
            fold(self.net.next_time());
            fold(self.foreign.as_ref().map(ForeignSm::next_time));
            for i in 0..self.nodes.len() {
                if self.driven(i) {
                    fold(Some(self.nodes[i].next_tick));
                    fold(self.nodes[i].sweeper_timeout());
                }
            }
            let t = next.unwrap_or(end).min(end);
            self.now = self.now.max(t);
            if self.now == prev {
                same += 1;
                if same > SAME_TIME_LIMIT {
                    return Err(Violation {
                        at: self.now,
                        what: "INV-LIVE the simulation does not advance (livelock)".into(),
                    });
                }
            } else {
                same = 0;
            }
            self.step()?;
            self.stats.steps += 1;
            if self.now >= end {
                return Ok(());
            }
        }
    }

    /// Runs `f` on replica `i` with the world's context.
    pub fn with_node<R>(&mut self, i: usize, f: impl FnOnce(&mut Node, &mut Ctx<'_>) -> R) -> R {
        let mut cx = Ctx {
            now: self.now,
            net: &mut self.net,
            fab: &mut self.fab,
            obs: &mut self.obs,
            variant: self.variant,
        };
        f(&mut self.nodes[i], &mut cx)
    }

    /// One step at `self.now`.
    fn step(&mut self) -> Result<(), Violation> {
        let now = self.now;
        self.fab.run_until(now);
        let mut log = self.fab.take_set_log();
        if let Some((_, fg, _)) = self.foreign_port {
            let (theirs, ours): (Vec<_>, Vec<_>) =
                log.into_iter().partition(|r| r.source == Some(fg));
            log = ours;
            if !theirs.is_empty() {
                if self.foreign_legit {
                    self.stats.foreign_master_sets += theirs.len() as u64;
                } else {
                    self.stats.rogue_sets += theirs.len() as u64;
                }
                let nodes = &self.nodes;
                let (fab, cables) = (&self.fab, &self.links);
                let running = |r: u64, term: u64| {
                    nodes.get((r - 1) as usize).is_some_and(|n| {
                        // A paused master sends nothing (if it writes once resumed, the
                        // replica-side check catches it); one standing by writes nothing;
                        // one cut off from the foreign SM masters another subnet.
                        n.is_up()
                            && !n.paused
                            && reachable(fab, cables, n.port_guid, fg)
                            && n.master.as_ref().is_some_and(|m| {
                                m.term == Some(term)
                                    && !matches!(
                                        m.sw.sm_state(),
                                        SmState::Standby | SmState::NotActive
                                    )
                            })
                    })
                };
                self.checker
                    .foreign_sets(now, &theirs, fg, self.foreign_legit, running)?;
            }
        }
        if !log.is_empty() {
            self.stats.sets += log.len() as u64;
            let mft = mad::AttributeId::MULTICAST_FORWARDING_TABLE.0;
            let mfts = log.iter().filter(|r| r.attr == mft).count() as u64;
            self.stats.mft_sets += mfts;
            if self.checker.quiet.is_some() {
                self.stats.quiet_mft_sets += mfts;
                let lft = mad::AttributeId::LINEAR_FORWARDING_TABLE.0;
                self.stats.quiet_lft_sets += log.iter().filter(|r| r.attr == lft).count() as u64;
            }
            let senders = &self.senders;
            let (fab, cables) = (&self.fab, &self.links);
            // An honest foreign MASTER the Set's sender can reach: one a link down cut off
            // masters another subnet.
            let foreign_master = self
                .foreign
                .as_ref()
                .filter(|f| f.mode == ForeignMode::Honest && f.state == SmState::Master)
                .map(|f| f.guid);
            let beside = |src: Guid| foreign_master.is_some_and(|f| reachable(fab, cables, src, f));
            self.checker
                .sets(now, &log, |g| senders.get(&g).copied(), beside)?;
            if log.iter().any(|r| r.attr == ATTR_PORT_INFO) {
                self.check_lids()?;
            }
        }
        while let Some(e) = self.net.pop_due(now) {
            let i = (e.to - 1) as usize;
            if !self.nodes[i].is_up() {
                continue;
            }
            if self.nodes[i].paused {
                self.nodes[i].held.push(e.msg);
            } else {
                self.with_node(i, |n, cx| n.step(e.msg, cx));
            }
        }
        for i in 0..self.nodes.len() {
            if self.driven(i) && self.nodes[i].next_tick <= now {
                self.nodes[i].next_tick += TICK_NS;
                self.with_node(i, |n, cx| n.tick(cx));
            }
        }
        self.run_foreign();
        if now >= self.next_preference {
            self.next_preference = now + PREFERENCE_PERIOD;
            self.prefer();
        }
        for i in 0..self.nodes.len() {
            if self.driven(i) {
                self.with_node(i, |n, cx| n.run_sweepers(cx));
            }
        }
        self.observe()
    }

    /// The foreign SM answers what reached it and, when due, sweeps or polls: what it
    /// would learn from the replicas' SMInfo answers is read from their sweepers (a replica
    /// down or paused answers nothing).
    fn run_foreign(&mut self) {
        let now = self.now;
        let Some(f) = self.foreign.as_mut() else {
            return;
        };
        let mut became = f.serve(now, &mut self.fab);
        let mut did = Default::default();
        if f.next_time() <= now {
            let mut others = Vec::new();
            for n in self.nodes.iter().filter(|n| n.is_up() && !n.paused) {
                for a in [&n.master, &n.standby, &n.zombie].into_iter().flatten() {
                    if a.at.is_some() {
                        others.push(Seen {
                            guid: n.port_guid,
                            priority: a.sw.config().sm_priority,
                            state: a.sw.sm_state(),
                        });
                    }
                }
            }
            did = f.run(now, &mut self.fab, &others);
            became = became.or(did.became);
        }
        let (guid, prio) = (f.guid, f.priority);
        if let Some(st) = became {
            self.obs.note(now, || {
                format!("foreign SM {guid} (priority {prio}) enters {st:?}")
            });
        }
        if did.rogue_write {
            // A rogue write: the master corrects it; no takeover is quiet before that.
            self.busy(now + 100 * MS);
        }
    }

    /// The leader hears the others' priorities (the daemon's preference loop).
    fn prefer(&mut self) {
        let peers: Vec<(u64, u8, Guid)> = self
            .nodes
            .iter()
            .map(|n| (n.id, n.priority, n.port_guid))
            .collect();
        if peers.iter().all(|p| p.1 == 0) {
            return;
        }
        if let Some(i) =
            (0..self.nodes.len()).find(|&i| self.driven(i) && self.nodes[i].is_leader())
        {
            self.with_node(i, |n, cx| {
                n.with_core(cx, |c, now| c.consider_priorities(now, &peers))
            });
        }
    }

    /// Feeds what the nodes reported to the checker.
    fn observe(&mut self) -> Result<(), Violation> {
        let now = self.now;
        let nodes = &self.nodes;
        self.wiped
            .retain(|&i| !nodes[i as usize].is_up() || nodes[i as usize].is_recovering());
        for n in &self.nodes {
            if n.is_leader() {
                if self.leaders_seen.insert((n.id, n.term())) {
                    let (id, term) = (n.id, n.term());
                    self.obs
                        .note(now, || format!("r{id}: LEADER of term {term}"));
                }
                self.checker.leader(now, n.id, n.term())?;
            }
        }
        for n in &mut self.nodes {
            for term in n.stopped.drain(..) {
                let id = n.id;
                self.obs
                    .note(now, || format!("r{id}: master of term {term} stopped"));
            }
        }
        let mut obs = std::mem::take(&mut self.obs);
        self.obs.trace = obs.trace.take();
        for (r, i, t, h) in obs.applied {
            self.checker.applied(now, r, i, t, h)?;
        }
        self.checker.acked.extend(obs.acked);
        for (r, floor, got) in obs.reads {
            self.stats.reads += 1;
            self.checker.read(now, r, floor, got)?;
        }
        if let Some((r, why)) = obs.fatal.first() {
            return Err(Violation {
                at: now,
                what: format!("INV-FATAL replica {r} gave up: {why}"),
            });
        }
        for (r, term) in obs.masters {
            self.stats.masters += 1;
            let port = self.nodes[(r - 1) as usize].port_guid;
            self.senders.insert(port, (r, term));
            if self.checker.quiet.is_some_and(|(qr, _)| qr != r) {
                self.checker.quiet = None;
            }
            if self.quiet_takeover(r) {
                self.stats.quiet_takeovers += 1;
                self.checker.quiet = Some((r, term));
            }
        }
        if !obs.subnet_up.is_empty() {
            self.watch_vports();
        }
        for (r, _) in obs.subnet_up {
            if let Some((from_r, t0)) = self.failover_from
                && from_r != r
            {
                self.stats.failover_ns.push(now - t0);
                self.failover_from = None;
            }
        }
        for (r, term) in obs.heavy_done {
            if self.checker.quiet == Some((r, term)) {
                self.checker.quiet = None;
            }
            self.last_heavy_done = now;
        }
        Ok(())
    }

    fn check_lids(&mut self) -> Result<(), Violation> {
        let lids: Vec<(Guid, Lid)> = self
            .cas
            .iter()
            .map(|&(n, p, g)| (g, self.fab.port_info(n, p).map_or(Lid(0), |i| i.lid)))
            .collect();
        self.checker.lids(self.now, lids.into_iter())
    }

    /// Does replica `r`'s new master take over an unchanged, fully programmed fabric?
    fn quiet_takeover(&self, r: u64) -> bool {
        let n = &self.nodes[(r - 1) as usize];
        let st = n.state();
        // After a fabric fault, a takeover is quiet only once some master completed a heavy
        // sweep on the fabric as it is again: before that, what the log records may be the
        // tables of the faulty fabric (a deposed master found the link back but could not
        // commit its programming), and the new master rightly writes the difference.
        if self.now < self.fabric_busy_until
            || (self.fabric_busy_until > 0 && self.last_heavy_done <= self.fabric_busy_until)
            || st.pending_intent().is_some()
            || st.open_intent().is_some()
            || st.lfts().next().is_none()
        {
            return false;
        }
        if link_set(st.topology()) != self.links_full {
            return false;
        }
        for &(node, port, g) in &self.cas {
            let Ok(pi) = self.fab.port_info(node, port) else {
                return false;
            };
            if self.fab.port_state(node, port).ok() != Some(PortState::Active)
                || st.lid_of(g).map(|a| a.base) != Some(pi.lid)
            {
                return false;
            }
        }
        let top = st
            .guid2lid()
            .values()
            .map(|a| a.base.0 + ((1u16 << a.lmc) - 1))
            .max()
            .unwrap_or(0);
        for &s in &self.switches {
            let Ok(g) = self.fab.node_guid(s) else {
                return false;
            };
            let (Some(rec), Ok(fab)) = (st.lft(g), self.fab.lft(s)) else {
                return false;
            };
            for lid in 1..=usize::from(top) {
                let a = rec.get(lid).copied().unwrap_or(replica::NO_ROUTE);
                let b = fab.get(lid).copied().unwrap_or(replica::NO_ROUTE);
                if a != b {
                    return false;
                }
            }
        }
        true
    }

    /// Keeps a trace of events (read it with [`World::take_trace`]).
    pub fn enable_trace(&mut self) {
        self.obs.trace = Some(Vec::new());
    }

    /// The trace kept so far.
    pub fn take_trace(&mut self) -> Vec<String> {
        self.obs
            .trace
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Applies one schedule action now.
    pub fn act(&mut self, a: &Action) -> Result<(), ChaosError> {
        let now = self.now;
        let leader = self.leader();
        self.obs
            .note(now, || format!("ACTION {a} (leader {leader:?})"));
        match a {
            Action::CrashLeader => {
                if let Some(l) = self.leader() {
                    self.crash(l);
                }
            }
            Action::Crash(r) => self.crash(*r),
            Action::RestartAll => {
                for i in 0..self.nodes.len() {
                    if !self.nodes[i].is_up() {
                        let phase = self.rng.below(TICK_NS);
                        self.nodes[i].boot(now + phase)?;
                        self.stats.restarts += 1;
                    }
                }
            }
            Action::PauseLeader => {
                if let Some(l) = self.leader() {
                    self.pause(l);
                }
            }
            Action::Pause(r) => self.pause(*r),
            Action::ResumeAll => self.resume_all(),
            Action::IsolateLeader => {
                if let Some(l) = self.leader() {
                    self.isolate(l);
                }
            }
            Action::Isolate(r) => self.isolate(*r),
            Action::Heal => self.net.isolated.clear(),
            Action::NetChaos {
                drop_pct,
                dup_pct,
                jitter_ms,
            } => {
                self.stats.net_faults += 1;
                self.net.drop_p = f64::from(*drop_pct) / 100.0;
                self.net.dup_p = f64::from(*dup_pct) / 100.0;
                self.net.jitter_ns = 300_000 + VTime::from(*jitter_ms) * MS;
            }
            Action::NetCalm => {
                self.net.drop_p = 0.0;
                self.net.dup_p = 0.0;
                self.net.jitter_ns = 300_000;
            }
            Action::LinkFlap { link, down_ms } => {
                if !self.links.is_empty() {
                    let (node, port, _, _) = self.links[*link as usize % self.links.len()];
                    let up = now + VTime::from(*down_ms) * MS;
                    self.fab.inject(now, Fault::LinkDown { node, port })?;
                    self.fab.schedule(up, Fault::LinkUp { node, port })?;
                    self.busy(up + 100 * MS);
                    self.stats.fabric_faults += 1;
                }
            }
            Action::SwitchReboot { switch } => {
                if !self.switches.is_empty() {
                    let node = self.switches[*switch as usize % self.switches.len()];
                    self.fab.inject(now, Fault::RebootSwitch { node })?;
                    self.busy(now + 200 * MS);
                    self.stats.fabric_faults += 1;
                }
            }
            Action::MadLoss { pct, for_ms } => {
                let end = now + VTime::from(*for_ms) * MS;
                self.fab.inject(
                    now,
                    Fault::Loss {
                        prob: f64::from(*pct) / 100.0,
                    },
                )?;
                self.fab.schedule(end, Fault::Loss { prob: 0.0 })?;
                self.busy(end + 100 * MS);
                self.stats.fabric_faults += 1;
            }
            Action::ApplyPolicy { policy } => {
                let text = self.policies[*policy as usize % self.policies.len()].clone();
                if let Some(i) = self.driven_leader()
                    && self.with_node(i, |n, cx| n.propose_policy(&text, cx))
                {
                    self.stats.policies_proposed += 1;
                }
            }
            Action::ReadPolicy => {
                // Every version acknowledged before the read begins must be visible to it.
                let floor = self.checker.acked.iter().map(|a| a.1).max().unwrap_or(0);
                if let Some(i) = self.driven_leader() {
                    self.with_node(i, |n, cx| n.read_policy(floor, cx));
                }
            }
            Action::TransferLeader(r) => {
                let to = (*r).clamp(1, self.nodes.len() as u64);
                if let Some(i) = self.driven_leader() {
                    self.with_node(i, |n, cx| {
                        n.with_core(cx, |c, now| c.transfer_leader(now, to))
                    });
                    self.stats.transfers += 1;
                }
            }
            Action::GracefulStopLeader => {
                if let Some(i) = self.driven_leader() {
                    self.graceful_stop(i);
                }
            }
            Action::GracefulStop(r) => {
                let i = (r.saturating_sub(1) as usize).min(self.nodes.len() - 1);
                if self.driven(i) {
                    self.graceful_stop(i);
                }
            }
            Action::Prefer(r) => {
                for n in &mut self.nodes {
                    n.priority = u8::from(n.id == *r);
                }
            }
            Action::PreferNone => {
                for n in &mut self.nodes {
                    n.priority = 0;
                }
            }
            Action::RemoveFollower(r) => {
                let id = (*r).clamp(1, self.nodes.len() as u64);
                // Never while a replica recovers a lost log: two voters of which one may
                // not vote leave no quorum (the admin API refuses it without --force).
                let recovering =
                    !self.wiped.is_empty() || self.nodes.iter().any(Node::is_recovering);
                if let Some(i) = self.driven_leader()
                    && self.nodes[i].id != id
                    && self.nodes[i].voters().len() == self.nodes.len()
                    && !recovering
                {
                    self.with_node(i, |n, cx| {
                        n.with_core(cx, |c, now| c.change_membership(now, id, false))
                    });
                    self.stats.membership_changes += 1;
                }
            }
            Action::AddBack => self.add_back_voters(),
            Action::WipeDisk(r) => {
                let i = (r.saturating_sub(1) as usize).min(self.nodes.len() - 1);
                // One lost disk at a time: two would leave the cluster without a quorum
                // that holds every committed entry (unavailable by design, not a defect).
                let other_lost = self.nodes.iter().enumerate().any(|(j, n)| {
                    j != i && (n.is_recovering() || self.wiped.contains(&(j as u64)))
                });
                // Only with three voters: a replica removed meanwhile plus a lost log leaves
                // no quorum that holds the log. Every replica counts, the ones down with the
                // membership they last knew: an isolated replica may not have heard of a
                // removal the others committed (seed 9059: voters 2 and 3, then 2's disk lost,
                // so no quorum could ever form again).
                let voters = self
                    .nodes
                    .iter()
                    .map(|n| n.voters_known().len())
                    .min()
                    .unwrap_or(0);
                if !other_lost && voters == self.nodes.len() {
                    self.hit_master(self.nodes[i].id);
                    self.nodes[i].wipe(&mut self.fab);
                    self.wiped.insert(i as u64);
                    self.stats.disk_wipes += 1;
                }
            }
            Action::ForeignAppear { mode, priority } => {
                if let Some(f) = self.foreign.take() {
                    f.vanish(&mut self.fab);
                }
                if let Some((port, guid, leaf)) = self.foreign_port {
                    self.foreign = Some(ForeignSm::appear(
                        &mut self.fab,
                        now,
                        port,
                        guid,
                        leaf,
                        *mode,
                        *priority,
                    )?);
                    self.foreign_legit = *mode == ForeignMode::Honest;
                    self.checker.foreign_appeared(now);
                    self.stats.foreign_sms += 1;
                }
            }
            Action::ForeignVanish => {
                if let Some(f) = self.foreign.take() {
                    f.vanish(&mut self.fab);
                }
            }
            Action::JoinGroup { group } => {
                if let Some(i) = self.driven_leader() {
                    let st = join(self.nodes[i].state().sa_state(), *group, &self.cas);
                    if self.with_node(i, |n, cx| n.propose_sa_state(st, cx)) {
                        self.stats.group_joins += 1;
                    }
                }
            }
        }
        Ok(())
    }

    /// The leader, when it is driven.
    fn driven_leader(&self) -> Option<usize> {
        (0..self.nodes.len()).find(|&i| self.driven(i) && self.nodes[i].is_leader())
    }

    fn graceful_stop(&mut self, i: usize) {
        self.hit_master(self.nodes[i].id);
        self.with_node(i, |n, cx| n.with_core(cx, |c, now| c.graceful_stop(now)));
        self.stats.graceful_stops += 1;
    }

    /// Every replica removed from the voters is added back (through the leader).
    pub fn add_back_voters(&mut self) {
        let Some(i) = self.driven_leader() else {
            return;
        };
        let voters = self.nodes[i].voters();
        let missing: Vec<u64> = self
            .nodes
            .iter()
            .map(|n| n.id)
            .filter(|id| !voters.contains(id))
            .collect();
        if let Some(&id) = missing.first() {
            self.with_node(i, |n, cx| {
                n.with_core(cx, |c, now| c.change_membership(now, id, true))
            });
        }
    }

    fn busy(&mut self, until: VTime) {
        self.fabric_busy_until = self.fabric_busy_until.max(until);
        self.checker.quiet = None;
    }

    fn hit_master(&mut self, r: u64) {
        if self.nodes[(r - 1) as usize].master.is_some() && self.failover_from.is_none() {
            self.failover_from = Some((r, self.now));
            self.stats.failovers += 1;
        }
    }

    fn crash(&mut self, r: u64) {
        let i = (r.saturating_sub(1) as usize).min(self.nodes.len() - 1);
        if self.nodes[i].is_up() {
            self.hit_master(self.nodes[i].id);
            self.nodes[i].crash(&mut self.fab);
            self.stats.crashes += 1;
        }
    }

    fn pause(&mut self, r: u64) {
        let i = (r.saturating_sub(1) as usize).min(self.nodes.len() - 1);
        if self.nodes[i].is_up() && !self.nodes[i].paused {
            self.hit_master(self.nodes[i].id);
            self.nodes[i].paused = true;
            self.stats.pauses += 1;
        }
    }

    fn isolate(&mut self, r: u64) {
        let i = (r.saturating_sub(1) as usize).min(self.nodes.len() - 1);
        let id = self.nodes[i].id;
        if self.net.isolated.insert(id) {
            self.hit_master(id);
            self.stats.partitions += 1;
        }
    }

    /// SIGCONT of every paused replica: held messages are handed over, one tick is due.
    pub fn resume_all(&mut self) {
        let now = self.now;
        for i in 0..self.nodes.len() {
            if self.nodes[i].paused {
                self.nodes[i].paused = false;
                self.nodes[i].next_tick = now;
                for m in std::mem::take(&mut self.nodes[i].held) {
                    self.with_node(i, |n, cx| n.step(m, cx));
                }
            }
        }
    }

    /// Ends every fault: network healed and calm, every replica running, fabric loss off
    /// (links and rebooted switches come back by themselves).
    pub fn heal_all(&mut self) -> Result<(), ChaosError> {
        self.act(&Action::Heal)?;
        self.act(&Action::NetCalm)?;
        self.resume_all();
        self.act(&Action::RestartAll)?;
        self.act(&Action::PreferNone)?;
        self.act(&Action::ForeignVanish)?;
        self.fab.inject(self.now, Fault::Loss { prob: 0.0 })?;
        Ok(())
    }
}
