//! One simulated replica: raft-rs `RawNode` on a `MemStorage` that survives crashes (the
//! "disk"), the `ReplicatedState` it applies committed entries to, the write lease, and
//! while it leads with a valid lease, a master: an sm-core `Sweeper` attached to the
//! fabric at this replica's port.
//!
//! This is the sans-IO twin of `sm_node::cluster::raft_actor::RaftActor`: the Ready
//! handling follows the same order (messages, committed entries, append + hard state,
//! persisted messages, light ready), the lease is the same rule (the quorum-th most recent
//! acknowledgement of this leader's term, self counting as now, plus half the minimum
//! election timeout), and a master is seeded and keyed by `sm_node::cluster::seed`
//! exactly as `RaftActor::start_master` does.

use super::Variant;
use super::net::Net;
use fabric::Guid;
use fabric_sim::{AttachId, SimFabric};
use prost::Message as _;
use proto::state::{Command, MasterRecord, command::Kind};
use raft::eraftpb::{EntryType, Message};
use raft::storage::MemStorage;
use raft::{RawNode, StateRole};
use replica::ReplicatedState;
use sm_core::{Event, IntentEvent, Sweeper, SweeperConfig, VTime};
use sm_node::cluster::seed;
use std::collections::BTreeMap;

/// The cluster's M_Key base in the simulation (the real node's default is private to it;
/// any non-zero base exercises the same per-term rotation).
pub const M_KEY_BASE: u64 = 0x5153_4D5F_4D4B_4559;

/// Raft timing (virtual): the real node's defaults, 50 ms ticks and a 10-tick election
/// timeout.
pub const TICK_NS: VTime = 50_000_000;
/// Election timeout in ticks.
pub const ELECTION_TICKS: usize = 10;
/// Heartbeat interval in ticks.
pub const HEARTBEAT_TICKS: usize = 2;

/// What the nodes tell the world during a step (read by the checker).
#[derive(Debug, Default)]
pub struct Observed {
    /// (replica, index, term, hash of the entry) for every committed entry applied.
    pub applied: Vec<(u64, u64, u64, u64)>,
    /// Client proposals acknowledged as accepted: (index, policy version, text).
    pub acked: Vec<(u64, u64, String)>,
    /// (replica, term) of every master started.
    pub masters: Vec<(u64, u64)>,
    /// (replica, term) of every SUBNET UP.
    pub subnet_up: Vec<(u64, u64)>,
    /// (replica, term) of every heavy sweep completed.
    pub heavy_done: Vec<(u64, u64)>,
    /// (replica, term, failures) of every IntentDone a master emitted.
    pub intents_done: Vec<(u64, u64, bool)>,
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

/// The master role of one term.
pub struct Master {
    /// Term it was started for.
    pub term: u64,
    /// The sweeper.
    pub sw: Sweeper,
    /// Its attachment to the fabric.
    pub at: AttachId,
    /// Which start of a master on this replica it is (1, 2, ...): a master restarted
    /// within its term (new policy) reuses the term's intent ids, so a seal is matched to
    /// the instance that proposed it, never to a later one (the `RaftActor`'s generation).
    pub instance: u64,
}

enum Pending {
    /// The seal of intent `intent` proposed by master instance `master` (see
    /// [`Master::instance`]): only that instance hears of its commit, as in `RaftActor`,
    /// where the answer goes to the master actor that proposed it.
    Seal { intent: u64, master: u64 },
    /// A client's ApplyPolicy.
    Client { text: String },
}

/// One replica.
pub struct Node {
    /// Raft id (1-based).
    pub id: u64,
    /// Its fabric port.
    pub port_guid: Guid,
    voters: Vec<u64>,
    disk: MemStorage,
    raw: Option<RawNode<MemStorage>>,
    /// Applied state (rebuilt from the log on restart).
    pub state: ReplicatedState,
    /// SIGSTOP'ed: not driven, messages wait.
    pub paused: bool,
    /// Messages that arrived while paused.
    pub held: Vec<Message>,
    /// Next tick.
    pub next_tick: VTime,
    acks: sm_node::cluster::lease::AckBook<VTime>,
    /// End of the write lease (None: no lease).
    pub lease_until: Option<VTime>,
    leading: Option<(u64, u64)>,
    /// The master role, while held.
    pub master: Option<Master>,
    pending: BTreeMap<u64, Pending>,
    next_request: u64,
    /// Terms of masters stopped since the world last looked.
    pub stopped: Vec<u64>,
    /// Masters started by this process so far (numbers [`Master::instance`]).
    instances: u64,
}

fn logger() -> slog::Logger {
    slog::Logger::root(slog::Discard, slog::o!())
}

/// FNV-1a of an entry (type and data): what the checker compares across replicas.
pub fn entry_hash(kind: i32, data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ (kind as u64);
    for &b in data {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
    }
    h
}

impl Node {
    /// A fresh replica (empty disk with the voters), booted at `now` with its first tick at
    /// `now + phase`.
    pub fn new(
        id: u64,
        voters: Vec<u64>,
        port_guid: Guid,
        now: VTime,
        phase: VTime,
    ) -> Result<Node, raft::Error> {
        let cs = raft::eraftpb::ConfState {
            voters: voters.clone(),
            ..Default::default()
        };
        let disk = MemStorage::new_with_conf_state(cs);
        let mut n = Node {
            id,
            port_guid,
            voters,
            disk,
            raw: None,
            state: ReplicatedState::new(),
            paused: false,
            held: Vec::new(),
            next_tick: now,
            acks: sm_node::cluster::lease::AckBook::new(),
            lease_until: None,
            leading: None,
            master: None,
            pending: BTreeMap::new(),
            next_request: id << 56,
            stopped: Vec::new(),
            instances: 0,
        };
        n.boot(now + phase)?;
        Ok(n)
    }

    /// Starts the process on its disk: a fresh RawNode, state rebuilt from the log (raft
    /// hands every committed entry again since applied starts at 0).
    pub fn boot(&mut self, first_tick: VTime) -> Result<(), raft::Error> {
        // One fixed election timeout per replica (raft-rs draws its randomised timeout from
        // an unseeded generator: a range of one value keeps the run deterministic); the
        // replicas' tick phases differ, which breaks the symmetry.
        let cfg = raft::Config {
            id: self.id,
            election_tick: ELECTION_TICKS,
            heartbeat_tick: HEARTBEAT_TICKS,
            min_election_tick: ELECTION_TICKS,
            max_election_tick: ELECTION_TICKS + 1,
            check_quorum: true,
            pre_vote: true,
            applied: 0,
            max_size_per_msg: 1024 * 1024,
            max_inflight_msgs: 256,
            ..raft::Config::default()
        };
        self.raw = Some(RawNode::new(&cfg, self.disk.clone(), &logger())?);
        self.state = ReplicatedState::new();
        self.next_tick = first_tick;
        self.paused = false;
        self.held.clear();
        Ok(())
    }

    /// True while the process exists.
    pub fn is_up(&self) -> bool {
        self.raw.is_some()
    }

    /// True when this replica is Raft leader (crashed: false).
    pub fn is_leader(&self) -> bool {
        self.raw
            .as_ref()
            .is_some_and(|r| r.raft.state == StateRole::Leader)
    }

    /// Current Raft term (0 when crashed).
    pub fn term(&self) -> u64 {
        self.raw.as_ref().map_or(0, |r| r.raft.term)
    }

    /// Last log index on disk.
    pub fn last_index(&self) -> u64 {
        self.raw
            .as_ref()
            .map_or(0, |r| r.raft.raft_log.last_index())
    }

    /// kill -9: everything in memory is gone; the disk stays.
    pub fn crash(&mut self, fab: &mut SimFabric) {
        self.stop_master(fab);
        self.raw = None;
        self.paused = false;
        self.held.clear();
        self.acks = sm_node::cluster::lease::AckBook::new();
        self.lease_until = None;
        self.leading = None;
        self.pending.clear();
    }

    /// Stops the master role, if held (the sweeper goes, the port detaches).
    pub fn stop_master(&mut self, fab: &mut SimFabric) {
        if let Some(m) = self.master.take() {
            self.stopped.push(m.term);
            let _ = fab.detach(m.at);
        }
    }

    /// One Raft tick.
    pub fn tick(&mut self) {
        if let Some(r) = self.raw.as_mut() {
            r.tick();
        }
    }

    /// A Raft message from the network.
    pub fn step(&mut self, m: Message, now: VTime) {
        let Some(raw) = self.raw.as_mut() else {
            return;
        };
        let mut m = m;
        let term = (raw.raft.state == StateRole::Leader).then_some(raw.raft.term);
        self.acks.receive(&mut m, term, now);
        // A refused message (stale, unknown peer) changes nothing.
        let _ = raw.step(m);
    }

    fn fresh_request(&mut self) -> u64 {
        self.next_request += 1;
        self.next_request
    }

    fn propose(&mut self, cmd: &Command) -> bool {
        self.raw
            .as_mut()
            .is_some_and(|r| r.propose(vec![], cmd.encode_to_vec()).is_ok())
    }

    /// A client's ApplyPolicy through this replica (true when proposed).
    pub fn propose_policy(&mut self, text: &str) -> bool {
        if !self.is_leader() {
            return false;
        }
        let rid = self.fresh_request();
        let cmd = Command {
            request_id: rid,
            kind: Some(Kind::ApplyPolicy(proto::state::ApplyPolicy {
                text: text.to_string(),
                expected_version: self.state.policy().version,
            })),
        };
        let ok = self.propose(&cmd);
        if ok {
            self.pending.insert(
                rid,
                Pending::Client {
                    text: text.to_string(),
                },
            );
        }
        ok
    }

    /// Handles every Ready (the RaftActor's order), then leadership bookkeeping.
    pub fn process(&mut self, cx: &mut Ctx<'_>) -> Result<(), raft::Error> {
        let Some(mut raw) = self.raw.take() else {
            return Ok(());
        };
        let r = self.ready_loop(&mut raw, cx);
        self.raw = Some(raw);
        r?;
        self.after_apply(cx);
        // Starting a master proposes its record: hand that to Raft too.
        if let Some(mut raw) = self.raw.take() {
            let r = self.ready_loop(&mut raw, cx);
            self.raw = Some(raw);
            r?;
        }
        Ok(())
    }

    fn ready_loop(
        &mut self,
        raw: &mut RawNode<MemStorage>,
        cx: &mut Ctx<'_>,
    ) -> Result<(), raft::Error> {
        while raw.has_ready() {
            let mut rd = raw.ready();
            for m in rd.take_messages() {
                {
                    let mut m = m;
                    self.acks.stamp(&mut m, cx.now);
                    cx.net.send(cx.now, m);
                }
            }
            if !rd.snapshot().is_empty() {
                // Never produced: the simulation does not compact its logs, so a leader
                // always has the entries a follower needs.
                let snap = rd.snapshot().clone();
                if let Ok(s) = ReplicatedState::restore(&snap.data) {
                    self.state = s;
                }
                self.disk.wl().apply_snapshot(snap)?;
            }
            let committed = rd.take_committed_entries();
            self.apply(committed, cx);
            self.disk.wl().append(rd.entries())?;
            if let Some(hs) = rd.hs() {
                self.disk.wl().set_hardstate(hs.clone());
            }
            for m in rd.take_persisted_messages() {
                {
                    let mut m = m;
                    self.acks.stamp(&mut m, cx.now);
                    cx.net.send(cx.now, m);
                }
            }
            let mut light = raw.advance(rd);
            if let Some(c) = light.commit_index() {
                self.disk.wl().mut_hard_state().commit = c;
            }
            for m in light.take_messages() {
                {
                    let mut m = m;
                    self.acks.stamp(&mut m, cx.now);
                    cx.net.send(cx.now, m);
                }
            }
            let committed = light.take_committed_entries();
            self.apply(committed, cx);
            raw.advance_apply();
        }
        Ok(())
    }

    /// Applies committed entries (conf changes are never proposed in the simulation: they
    /// apply as no-ops).
    fn apply(&mut self, entries: Vec<raft::eraftpb::Entry>, cx: &mut Ctx<'_>) {
        let mut policy_changed = false;
        for e in entries {
            let (index, term) = (e.index, e.term);
            cx.obs.applied.push((
                self.id,
                index,
                term,
                entry_hash(e.get_entry_type() as i32, &e.data),
            ));
            let cmd = match e.get_entry_type() {
                EntryType::EntryNormal if !e.data.is_empty() => {
                    Command::decode(&e.data[..]).unwrap_or_else(|_| noop())
                }
                _ => noop(),
            };
            if index <= self.state.applied_index() {
                continue;
            }
            let out = self.state.apply(index, term, &cmd);
            if matches!(cmd.kind, Some(Kind::ApplyPolicy(_))) && out.is_accepted() {
                policy_changed = true;
            }
            if cmd.request_id == 0 {
                continue;
            }
            match self.pending.remove(&cmd.request_id) {
                Some(Pending::Seal { intent, master }) => {
                    if let Some(m) = self.master.as_mut().filter(|m| m.instance == master) {
                        if out.is_accepted() {
                            m.sw.handle_intent_committed(cx.now, intent);
                        } else {
                            m.sw.handle_intent_rejected(cx.now, intent);
                        }
                    }
                }
                Some(Pending::Client { text }) if out.is_accepted() => {
                    cx.obs.acked.push((index, out.policy_version, text));
                }
                _ => {}
            }
        }
        if policy_changed && self.master.is_some() {
            // The sweeper takes its policy at start: restart the master on the new one
            // (it starts again at the next bookkeeping, lease kept).
            self.stop_master(cx.fab);
        }
    }

    /// Lease, then the master role: started when leader, caught up to the term's first
    /// index and within the lease; stopped on stepping down.
    fn after_apply(&mut self, cx: &mut Ctx<'_>) {
        let Some(raw) = self.raw.as_ref() else {
            return;
        };
        let leader = raw.raft.state == StateRole::Leader;
        let term = raw.raft.term;
        // The lease (RaftActor::update_lease).
        self.lease_until = if leader {
            let cs = raw.raft.prs().conf().to_conf_state();
            self.acks.lease_end(
                &[&cs.voters, &cs.voters_outgoing],
                self.id,
                cx.now,
                lease_ns(),
            )
        } else {
            None
        };
        let mut new_leadership = false;
        if leader {
            let first = match self.leading {
                Some((t, i)) if t == term => i,
                _ => {
                    let i = raw.raft.raft_log.last_index();
                    self.leading = Some((term, i));
                    self.acks.reset();
                    new_leadership = true;
                    i
                }
            };
            if new_leadership && let Some(r) = self.raw.as_mut() {
                r.ping();
            }
            if self.master.is_none()
                && self.state.applied_index() >= first
                && self.lease_until.is_some_and(|u| cx.now < u)
            {
                self.start_master(term, cx);
            }
        } else {
            self.leading = None;
            if cx.variant == Variant::Correct {
                self.stop_master(cx.fab);
            }
        }
    }

    /// RaftActor::start_master on virtual time.
    fn start_master(&mut self, term: u64, cx: &mut Ctx<'_>) {
        let seeds = seed::seeds(&self.state);
        let pending = self.state.pending_intent().cloned();
        if pending.is_none()
            && let Some(open) = self.state.open_intent()
        {
            let id = open.id;
            self.propose(&Command {
                request_id: 0,
                kind: Some(Kind::AbortIntent(proto::state::AbortIntent { id })),
            });
        }
        let base = match self.state.config().m_key_base {
            0 => M_KEY_BASE,
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
        let mut seen = std::collections::BTreeSet::new();
        m_key_prev.retain(|k| *k != m_key && seen.insert(*k));
        let mut scfg = SweeperConfig {
            // The harness's settings: light sweeps, one routing shard.
            sweep_interval: 500_000_000,
            ..SweeperConfig::default()
        };
        scfg.guid2lid = seeds.guid2lid.clone();
        scfg.known_lfts = seeds.known_lfts.clone();
        scfg.known_pkeys = seeds.known_pkeys.clone();
        if seeds.policy.is_some() {
            scfg.partitions_conf = seeds.policy.clone();
        }
        if seeds.known_lfts.is_some() {
            scfg.reregister_on_takeover = false;
        }
        scfg.gate_programming = true;
        scfg.intent_id_base = term << 32;
        scfg.pending_intent = pending.as_ref().map(seed::intent_from_proto);
        scfg.m_key = m_key;
        scfg.m_key_prev = m_key_prev;
        let Ok(sw) = Sweeper::new(scfg) else {
            // A policy that does not parse was refused at apply: unreachable.
            return;
        };
        let Ok(at) = cx.fab.attach(self.port_guid) else {
            return;
        };
        self.instances += 1;
        self.master = Some(Master {
            term,
            sw,
            at,
            instance: self.instances,
        });
        cx.obs.masters.push((self.id, term));
        let (id, st) = (self.id, &self.state);
        cx.obs.note(cx.now, || {
            format!(
                "r{id}: MASTER of term {term} (applied {}, policy v{}, {} LIDs, pending intent {:?})",
                st.applied_index(),
                st.policy().version,
                st.guid2lid().len(),
                st.pending_intent().map(|i| i.id)
            )
        });
        self.propose(&Command {
            request_id: 0,
            kind: Some(Kind::SetMaster(MasterRecord {
                term,
                replica_id: self.id,
                sm_port_guid: self.port_guid.0,
                sm_lid: 0,
                m_key,
            })),
        });
    }

    /// Sends what the master has to send now (Sets only within the lease).
    pub fn master_transmit(&mut self, cx: &mut Ctx<'_>) {
        let lease = match cx.variant {
            Variant::Correct => Some(self.lease_until.unwrap_or(0)),
            Variant::Unfenced => None,
        };
        let Some(m) = self.master.as_mut() else {
            return;
        };
        m.sw.set_lease(lease);
        while let Some(tx) = m.sw.poll_transmit_at(cx.now) {
            let r = if tx.dlid.is_permissive() {
                cx.fab.send(cx.now, m.at, &tx.smp)
            } else {
                cx.fab.send_lid(cx.now, m.at, tx.dlid, &tx.smp)
            };
            // A malformed SMP is the sweeper's bug; the fabric counts and drops it.
            let _ = r;
        }
    }

    /// Earliest time the master wants to run.
    pub fn master_timeout(&mut self) -> Option<VTime> {
        self.master.as_mut().and_then(|m| m.sw.poll_timeout())
    }

    /// Drives the master: responses, due timeouts, events (routing inline, intents into
    /// the log, sweep records).
    pub fn master_run(&mut self, cx: &mut Ctx<'_>) {
        let Some(mut m) = self.master.take() else {
            return;
        };
        while let Some(r) = cx.fab.poll_recv_full(m.at) {
            m.sw.handle_mad(cx.now, r.slid, r.smp);
        }
        if matches!(m.sw.poll_timeout(), Some(t) if t <= cx.now) {
            m.sw.handle_timeout(cx.now);
        }
        loop {
            let mut any = false;
            while let Some(ev) = m.sw.poll_event() {
                any = true;
                let id = self.id;
                cx.obs.note(cx.now, || format!("r{id} t{}: {ev}", m.term));
                match ev {
                    Event::RoutingNeeded(job) => {
                        let r = sm_core::route_inline(&job);
                        m.sw.handle_routing_result(cx.now, r);
                    }
                    Event::SubnetUp { .. } => cx.obs.subnet_up.push((self.id, m.term)),
                    Event::HeavySweepComplete { .. } => {
                        cx.obs.heavy_done.push((self.id, m.term));
                        self.record(&m);
                    }
                    _ => {}
                }
            }
            while let Some(ie) = m.sw.poll_intent() {
                any = true;
                self.on_intent(&mut m, ie, cx);
            }
            if !any {
                break;
            }
        }
        self.master = Some(m);
    }

    fn on_intent(&mut self, m: &mut Master, ie: IntentEvent, cx: &mut Ctx<'_>) {
        match ie {
            IntentEvent::Program(it) => {
                let id = it.id;
                let me = self.id;
                cx.obs.note(cx.now, || {
                    format!(
                        "r{me}: intent {id:x}: {} LFT blocks, {} P_Key blocks, {} PortInfo changes",
                        it.lft_blocks.len(),
                        it.pkey_blocks.len(),
                        it.port_changes.len()
                    )
                });
                let contents = seed::intent_to_contents(&it);
                let mut cmds =
                    replica::split_intent(id, m.term, contents, replica::DEFAULT_MAX_COMMAND_BYTES);
                let seal = cmds.pop();
                for c in &cmds {
                    self.propose(c);
                }
                let sealed = seal.is_some_and(|mut c| {
                    c.request_id = self.fresh_request();
                    let ok = self.propose(&c);
                    if ok {
                        self.pending.insert(
                            c.request_id,
                            Pending::Seal {
                                intent: id,
                                master: m.instance,
                            },
                        );
                    }
                    ok
                });
                if cx.variant == Variant::Unfenced {
                    // The broken driver: programs without waiting for the quorum.
                    m.sw.handle_intent_committed(cx.now, id);
                } else if !sealed {
                    m.sw.handle_intent_rejected(cx.now, id);
                }
            }
            IntentEvent::Done {
                id,
                failed_switches,
                failed_ports,
                ..
            } => {
                cx.obs.intents_done.push((
                    self.id,
                    m.term,
                    !failed_switches.is_empty() || !failed_ports.is_empty(),
                ));
                self.propose(&Command {
                    request_id: 0,
                    kind: Some(Kind::IntentDone(proto::state::IntentDone {
                        id,
                        failed_switches: failed_switches.iter().map(|g| g.0).collect(),
                        failed_ports: failed_ports
                            .iter()
                            .map(|(g, p)| proto::state::PortRef {
                                node_guid: g.0,
                                port: u32::from(*p),
                            })
                            .collect(),
                    })),
                });
            }
        }
    }

    /// RaftActor::record: topology and LIDs of a completed heavy sweep into the log.
    fn record(&mut self, m: &Master) {
        if !self.is_leader() {
            return;
        }
        let t = seed::SweepTables {
            guid2lid: m.sw.guid2lid().clone(),
            lfts: m.sw.lfts().cloned(),
            pkeys: m.sw.pkey_tables(),
            topology: Some(replica::topology_to_proto(&m.sw.discovered_topology())),
        };
        let mut cmds = Vec::new();
        if let Some(c) = seed::topology_command(&self.state, &t) {
            cmds.push(c);
        }
        if let Some(c) = seed::lid_command(&self.state, &t) {
            cmds.push(c);
        }
        for c in &cmds {
            self.propose(c);
        }
    }

    /// The voters.
    pub fn voters(&self) -> &[u64] {
        &self.voters
    }
}

/// Lease length: half the minimum election timeout (ClusterConfig::lease_duration).
pub fn lease_ns() -> VTime {
    TICK_NS * ELECTION_TICKS as VTime / 2
}

fn noop() -> Command {
    Command {
        request_id: 0,
        kind: Some(Kind::Noop(proto::state::Noop {})),
    }
}
