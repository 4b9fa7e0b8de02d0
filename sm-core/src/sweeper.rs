//! The sweeper: the SM's state machine, driven by responses and timeouts, read through
//! `poll_transmit` / `poll_event` / `poll_timeout`.

use crate::config::Role;
use crate::config::SweeperConfig;
use crate::counters::Counters;
use crate::events::{Event, RoutingOutcome, SweepReason};
use crate::intent::IntentEvent;
use crate::io::{Io, Op, Req, Transmit};
use crate::state::{NONE, Node, Port, Switch};
use crate::{SmError, VTime};
use fabric::{Guid, Lid};
use mad::{AttributeId, Method, MgmtClass, Notice, SmInfo, SmState, Smp};
use routing::Lfts;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// Where the sweeper is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Nothing running; waiting for the next light sweep.
    Idle,
    /// Heavy sweep: discovering.
    Discovering,
    /// Heavy sweep: discovery done; LIDs, partitions and the routing input are computed at
    /// the next `handle_timeout` (`poll_timeout` says now).
    Lids,
    /// Heavy sweep: waiting for the daemon's routing result.
    Routing,
    /// Heavy sweep: programming stage 1 (PortInfo fields), 2 (LFT, SwitchInfo, P_Key),
    /// 3 (ARMED), 4 (ACTIVE), 5 (clear PortStateChange).
    Programming(u8),
    /// Light sweep running.
    Light,
    /// Heavy sweep: rotating ports to this term's M_Key (after discovery, before any other
    /// Set).
    Rekey,
    /// Heavy sweep: re-programming a previous master's unfinished intent.
    Reapply,
    /// Heavy sweep: programming planned, waiting for the driver to commit the intent
    /// ([`Sweeper::handle_intent_committed`]).
    AwaitIntent,
    /// A multicast programming pass between sweeps (MFT blocks only; see `mcast`).
    Multicast,
    /// Heavy sweep after discovery, or standing by: SMInfo Gets of other SMs (see
    /// `foreign`).
    SmInfo,
    /// Heavy sweep, after a foreign master went away: LFT blocks read back before writing.
    LftCheck,
}

/// The SM's sans-IO brain. See the crate documentation for the driver loop.
pub struct Sweeper {
    pub(crate) cfg: SweeperConfig,
    pub(crate) policy_text: Option<String>,
    pub(crate) now: VTime,
    pub(crate) phase: Phase,
    pub(crate) sweep: u64,
    pub(crate) io: Io,
    pub(crate) events: VecDeque<Event>,
    pub(crate) sweep_start: Counters,
    pub(crate) nodes: Vec<Node>,
    pub(crate) ports: Vec<Port>,
    pub(crate) switches: Vec<Switch>,
    pub(crate) by_guid: HashMap<Guid, u32>,
    pub(crate) paths: Vec<u8>,
    /// The SM's own node and port (known after the hop-0 NodeInfo).
    pub(crate) local: u32,
    pub(crate) local_port: u8,
    pub(crate) sm_lid: Lid,
    pub(crate) state: SmState,
    pub(crate) act_count: u32,
    /// Tables last handed to the switches (by GUID) and the max LID they cover.
    pub(crate) lfts: Option<Arc<Lfts>>,
    pub(crate) max_lid: u16,
    pub(crate) subnet_up: bool,
    pub(crate) heavy_pending: Option<SweepReason>,
    pub(crate) next_light: Option<VTime>,
    pub(crate) light_changed: bool,
    pub(crate) light_start: Counters,
    /// Discovery statistics of the current sweep.
    pub(crate) disc_links: u64,
    pub(crate) disc_ports: u64,
    pub(crate) disc_min: u64,
    /// Sets planned in the current sweep (for the minimum-SMP figure) and failed.
    pub(crate) planned_sets: u64,
    pub(crate) failed_sets: u64,
    pub(crate) stage_counts: [u64; 4],
    pub(crate) first_sweep_done: bool,
    /// The current or last heavy sweep gave up on a request or left a port not ACTIVE.
    pub(crate) dirty: bool,
    /// LFT blocks (switch node, block) the current routing result changes.
    pub(crate) lft_todo: Vec<(u32, u16)>,
    /// P_KeyTable blocks (node, port, block) the current sweep writes.
    pub(crate) pkey_todo: Vec<(u32, u8, u16)>,
    /// P_KeyTable blocks of fresh ports taken to hold what is wanted already (IBA default).
    pub(crate) pkey_assumed: Vec<(u32, u8, u16)>,
    /// No Set may leave (not leader of the current term with a valid lease).
    pub(crate) fenced: bool,
    /// Sets leave only before this time (None: no lease).
    pub(crate) lease_until: Option<VTime>,
    /// Candidate M_Keys: `m_key_prev` then `m_key` (ports index into it).
    pub(crate) keys: Vec<u64>,
    /// Intent counter, the intent waiting for its commit, and the one being programmed.
    pub(crate) intent_seq: u64,
    pub(crate) awaiting_intent: Option<u64>,
    pub(crate) current_intent: Option<u64>,
    /// The previous master's intent being re-applied, blocks re-applied (LFT, P_Key) and
    /// targets not reached.
    pub(crate) reapply_id: Option<u64>,
    pub(crate) reapplied: [u64; 2],
    pub(crate) reapply_unreached: (Vec<Guid>, Vec<(Guid, u8)>),
    pub(crate) intent_events: VecDeque<IntentEvent>,
    /// Ports (node GUID, port) a P_Key or PortInfo Set failed on in this sweep.
    pub(crate) failed_ports: Vec<(Guid, u8)>,
    /// Sets sent while the daemon routes (ungated mode, see `program`).
    pub(crate) during_routing: crate::program::DuringRouting,
    /// Multicast groups and forwarding tables.
    pub(crate) mcast: crate::mcast::McastState,
    /// P_KeyTable read-backs (see `readback`).
    pub(crate) readback: crate::readback::Readbacks,
    /// Other SMs on the fabric (see `foreign`).
    pub(crate) foreign: crate::foreign::ForeignState,
}

impl Sweeper {
    /// A sweeper that starts its first heavy sweep at the first `handle_timeout` (its
    /// `poll_timeout` is 0). Fails when the partitions text does not parse.
    pub fn new(cfg: SweeperConfig) -> Result<Sweeper, SmError> {
        if let Some(t) = &cfg.partitions_conf {
            partitions::load(t, cfg.partition_options)?;
        }
        if cfg.lmc > 7 || cfg.sm_priority > 15 || cfg.per_switch_window == 0 {
            return Err(SmError::Config(
                "lmc must be 0..=7, sm_priority 0..=15, per_switch_window >= 1".into(),
            ));
        }
        let known = cfg.known_lfts.clone();
        let mcast = crate::mcast::McastState::new(cfg.known_mfts.as_deref());
        let known_top = known
            .as_ref()
            .and_then(|l| l.switches.iter().map(crate::intent::routed_top).max())
            .unwrap_or(0);
        let mut keys: Vec<u64> = Vec::new();
        for &k in cfg.m_key_prev.iter().chain(std::iter::once(&cfg.m_key)) {
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        keys.truncate(255);
        let standby = cfg.role == Role::Standby;
        Ok(Sweeper {
            policy_text: cfg.partitions_conf.clone(),
            io: Io::new(cfg.window),
            cfg,
            now: 0,
            phase: Phase::Idle,
            sweep: 0,
            events: VecDeque::new(),
            sweep_start: Counters::default(),
            nodes: Vec::new(),
            ports: Vec::new(),
            switches: Vec::new(),
            by_guid: HashMap::new(),
            paths: Vec::new(),
            local: NONE,
            local_port: 0,
            sm_lid: Lid(0),
            state: if standby {
                SmState::Standby
            } else {
                SmState::Discovering
            },
            act_count: 0,
            lfts: known,
            max_lid: known_top,
            subnet_up: false,
            heavy_pending: (!standby).then_some(SweepReason::Initial),
            next_light: (!standby).then_some(0),
            light_changed: false,
            light_start: Counters::default(),
            disc_links: 0,
            disc_ports: 0,
            disc_min: 0,
            planned_sets: 0,
            failed_sets: 0,
            stage_counts: [0; 4],
            first_sweep_done: false,
            dirty: false,
            lft_todo: Vec::new(),
            pkey_todo: Vec::new(),
            pkey_assumed: Vec::new(),
            fenced: false,
            lease_until: None,
            keys,
            intent_seq: 0,
            awaiting_intent: None,
            current_intent: None,
            reapply_id: None,
            reapplied: [0; 2],
            reapply_unreached: (Vec::new(), Vec::new()),
            intent_events: VecDeque::new(),
            failed_ports: Vec::new(),
            during_routing: Default::default(),
            mcast,
            readback: Default::default(),
            foreign: Default::default(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &SweeperConfig {
        &self.cfg
    }

    /// Counters since the sweeper started.
    pub fn counters(&self) -> &Counters {
        self.io.counters()
    }

    /// Current phase.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// True once SUBNET UP was reached.
    pub fn is_subnet_up(&self) -> bool {
        self.subnet_up
    }

    /// The SM's own LID (0 before LIDs are assigned).
    pub fn sm_lid(&self) -> Lid {
        self.sm_lid
    }

    /// SMInfo.SMState this SM answers with.
    pub fn sm_state(&self) -> SmState {
        self.state
    }

    /// The guid2lid map (export it with [`crate::Guid2Lid::export`] to persist LIDs).
    pub fn guid2lid(&self) -> &crate::Guid2Lid {
        &self.cfg.guid2lid
    }

    /// The forwarding tables last handed out for programming (by switch GUID).
    pub fn lfts(&self) -> Option<&Lfts> {
        self.lfts.as_deref()
    }

    /// The P_KeyTables this SM knows the ports hold (what it wrote or was told), by
    /// (node GUID, port): what a replicated state keeps for a takeover
    /// ([`SweeperConfig::known_pkeys`]).
    pub fn pkey_tables(&self) -> crate::PKeyTables {
        let mut m = crate::PKeyTables::new();
        for n in &self.nodes {
            for p in 0..=n.nports {
                let port = &self.ports[n.port_index(p)];
                if port.pkey_known_valid && !port.pkey_known.is_empty() {
                    m.insert((n.guid, p), port.pkey_known.clone());
                }
            }
        }
        m
    }

    /// Number of the current (or last) heavy sweep.
    pub fn sweep_number(&self) -> u64 {
        self.sweep
    }

    /// Asks for a sweep: heavy (rediscover, re-route, program) or light (poll for change).
    /// Runs at once when idle; a heavy request made while busy runs right after the running
    /// sweep, a light one is dropped (a sweep is already running).
    pub fn request_sweep(&mut self, now: VTime, heavy: bool) {
        self.now = self.now.max(now);
        if self.cfg.role == Role::Standby || (self.standing_by() && !heavy) {
            return;
        }
        if heavy {
            self.heavy_pending.get_or_insert(SweepReason::Requested);
        }
        if self.phase == Phase::Idle {
            if heavy {
                self.start_pending_heavy();
            } else {
                self.start_light();
            }
        }
    }

    /// Replaces the partition policy (an OpenSM partitions.conf text; None: no file, every
    /// end port a full member of the default partition) of a running sweeper: what a
    /// SIGHUP reload hands over. The text is checked as [`Sweeper::new`] checks it; a text
    /// that does not parse is returned as the error and changes nothing (the policy in
    /// force stays). Otherwise the new policy is in force from the next heavy sweep on, and
    /// one is requested as by [`Sweeper::request_sweep`]: it rediscovers and re-routes as
    /// any heavy sweep does, so on an unchanged fabric its only Sets are the P_KeyTable
    /// blocks (and switch enforcement bits of ports coming up) the new policy changes.
    /// [`SweeperConfig::partitions_conf`] reads the new text afterwards.
    ///
    /// Returns the number of the first heavy sweep certain to program the new policy (every
    /// later one does too; a heavy sweep already running takes it if it has not planned its
    /// P_KeyTables yet).
    pub fn set_policy(&mut self, now: VTime, text: Option<String>) -> Result<u64, SmError> {
        if let Some(t) = &text {
            partitions::load(t, self.cfg.partition_options)?;
        }
        self.cfg.partitions_conf.clone_from(&text);
        self.policy_text = text;
        let first = self.sweep + 1;
        self.request_sweep(now, true);
        Ok(first)
    }

    /// The partition policy text in force (None: no partitions file).
    pub fn policy_text(&self) -> Option<&str> {
        self.policy_text.as_deref()
    }

    /// The next SMP to send, if the window allows one.
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        if let Some(t) = self.io.pop_out() {
            return Some(t);
        }
        if !self.may_transmit() {
            return None;
        }
        loop {
            let (slot, tid, _gate, req) = self.io.window().next(self.cfg.per_switch_window)?;
            let full_tid = (u64::from(self.cfg.tid_high) << 32) | u64::from(tid);
            match self.build(&req, full_tid) {
                Some(t) => {
                    let (_, key) = self.key_for(&req);
                    let deadline = self.now + self.cfg.timeout;
                    let win = self.io.window();
                    win.set_key(slot, key);
                    win.arm(deadline, slot, tid);
                    self.io.record(&t);
                    return Some(t);
                }
                None => {
                    // Cannot be built (path too long, target vanished): counts as failed.
                    if let Some(r) = self.io.window().cancel(slot) {
                        self.fail(r);
                    }
                }
            }
        }
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// When `handle_timeout` must next be called (None: nothing scheduled, e.g. waiting
    /// for a routing result or idle with light sweeps off).
    pub fn poll_timeout(&mut self) -> Option<VTime> {
        let d = self.io.window().next_deadline();
        let l = match self.phase {
            Phase::Idle => self.next_light,
            Phase::Lids => Some(self.now),
            _ => None,
        };
        match (d, l) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Handles expired requests and due sweeps.
    pub fn handle_timeout(&mut self, now: VTime) {
        self.now = self.now.max(now);
        while let Some((gate, mut req)) = self.io.window().expired(now) {
            self.io.counters_mut().timeouts += 1;
            if !matches!(req.op, Op::SmInfoGet | Op::SmInfoSet) {
                self.key_timed_out(&req);
            }
            if req.lid_routed {
                // One LID-routed try: the route may cross a link that just went away.
                self.io.counters_mut().dr_fallbacks += 1;
                req.tries = 0;
                req.lid_routed = false;
                let g = self.gate_of(&req);
                self.io.window().requeue(g, req, true);
            } else if req.tries < self.cfg.retries {
                req.tries += 1;
                self.io.window().requeue(gate, req, true);
            } else {
                self.fail(req);
            }
        }
        if self.phase == Phase::Lids {
            self.run_lids();
        }
        if self.phase == Phase::Idle && self.next_light.is_some_and(|t| t <= now) {
            self.next_light = None;
            if self.standing_by() && self.heavy_pending.is_none() {
                self.start_poll();
            } else if self.heavy_pending.is_some() {
                self.start_pending_heavy();
            } else {
                self.start_light();
            }
        }
        self.advance();
    }

    /// A MAD that reached the SM: a response to one of its requests, a trap, or a request
    /// addressed to its port (SMInfo). `slid` is the LRH source LID when the transport knows
    /// it (needed to answer LID-routed requests; `Lid(0)` when unknown).
    pub fn handle_mad(&mut self, now: VTime, slid: Lid, smp: Smp) {
        self.now = self.now.max(now);
        if smp.class != MgmtClass::SUBN_LID_ROUTED && smp.class != MgmtClass::SUBN_DIRECTED_ROUTE {
            return;
        }
        if smp.method == Method::TRAP {
            if self.cfg.role == Role::Master && !self.standing_by() {
                self.on_trap(smp);
            }
        } else if !smp.is_response() {
            self.on_request(slid, smp);
        } else {
            let tid = smp.tid as u32;
            if (smp.tid >> 32) as u32 != self.cfg.tid_high {
                self.io.counters_mut().stale += 1;
                return;
            }
            let Some((_gate, req)) = self.io.window().complete(tid) else {
                self.io.counters_mut().stale += 1;
                return;
            };
            if smp.status & 0x7FFF != 0 {
                self.io.counters_mut().error_status += 1;
                self.fail(req);
            } else {
                self.io.settle();
                self.on_reply(req, &smp);
            }
        }
        self.advance();
    }

    /// Takes the routing result of the last `RoutingNeeded` job.
    pub fn handle_routing_result(&mut self, now: VTime, result: Result<RoutingOutcome, SmError>) {
        self.now = self.now.max(now);
        if self.phase != Phase::Routing {
            return;
        }
        match result {
            Ok(r) if r.sweep == self.sweep => self.start_programming(r),
            Ok(_) => {}
            Err(e) => {
                self.events.push_back(Event::RoutingFailed(e.to_string()));
                self.finish_heavy();
            }
        }
        self.advance();
    }

    /// Requests addressed to the SM's port: SMInfo Get/Set is answered with this SM's
    /// priority, GUID, state, and SM_Key only to authenticated requesters: the SMP carries
    /// this SM's M_Key (any SMP does while M_Key is 0, as in OpenSM, which ignores an SM
    /// whose answer lacks its key) or the SMInfo presented the SM_Key. A Set with a
    /// handover modifier is checked, answered and acted on as `foreign::handover` says.
    fn on_request(&mut self, slid: Lid, smp: Smp) {
        if smp.attr_id != AttributeId::SM_INFO
            || (smp.method != Method::GET && smp.method != Method::SET)
        {
            return;
        }
        let verdict = if smp.method == Method::SET {
            self.check_sm_info_set(&smp)
        } else {
            crate::foreign::SetVerdict::AsGet
        };
        if matches!(verdict, crate::foreign::SetVerdict::Ignore) {
            return;
        }
        let guid = self
            .sm_port_guid()
            .or(self.cfg.sm_port_guid)
            .unwrap_or(Guid(0));
        let mut r = smp.make_response();
        let info = SmInfo {
            guid,
            sm_key: if self.cfg.m_key == 0
                || smp.m_key == self.cfg.m_key
                || smp
                    .attr::<SmInfo>()
                    .is_ok_and(|i| i.sm_key == self.cfg.sm_key)
            {
                self.cfg.sm_key
            } else {
                0
            },
            act_count: self.act_count,
            priority: self.cfg.sm_priority,
            sm_state: self.state.to_wire(),
        };
        r.set_attr(&info);
        r.status = verdict.status();
        let dlid = if r.is_directed() {
            Lid::PERMISSIVE
        } else {
            slid
        };
        self.io.send(Transmit { dlid, smp: r });
        self.apply_sm_info_set(verdict);
    }

    fn on_trap(&mut self, smp: Smp) {
        self.io.counters_mut().traps += 1;
        let Ok(n) = smp.attr::<Notice>() else {
            return;
        };
        let mut r = smp.clone();
        r.method = Method::TRAP_REPRESS;
        r.status = 0;
        // The SMA checks the M_Key of a TrapRepress like that of a Set: a repress with a
        // wrong key is a violation, which is itself trapped (a storm).
        r.m_key = self.key_at_lid(n.issuer_lid);
        self.io.send(Transmit {
            dlid: n.issuer_lid,
            smp: r,
        });
        let number = n.trap_number().unwrap_or(0);
        self.events.push_back(Event::Trap {
            number,
            issuer: n.issuer_lid,
        });
        if matches!(number, 128 | 144 | 145) {
            self.heavy_pending.get_or_insert(SweepReason::Trap(number));
            if self.phase == Phase::Idle {
                self.start_pending_heavy();
            }
        }
    }

    /// The M_Key believed in force at the end port answering to `lid` (this term's key
    /// when no port is known by that LID).
    fn key_at_lid(&self, lid: Lid) -> u64 {
        for n in &self.nodes {
            let range = if n.is_switch { 0..=0 } else { 1..=n.nports };
            for p in range {
                let port = &self.ports[n.port_index(p)];
                let lo = port.info.lid.0;
                if lo != 0 && lid.0 >= lo && lid.0 - lo < (1u16 << port.info.lmc.min(7)) {
                    let mi = if n.is_switch {
                        n.first_port as usize
                    } else {
                        n.port_index(p)
                    };
                    let k = self.ports[mi].key_idx;
                    return self
                        .keys
                        .get(usize::from(k))
                        .copied()
                        .unwrap_or(self.cfg.m_key);
                }
            }
        }
        self.cfg.m_key
    }

    pub(crate) fn sm_port_guid(&self) -> Option<Guid> {
        (self.local != NONE).then(|| {
            let n = &self.nodes[self.local as usize];
            self.ports[n.port_index(self.local_port)].guid
        })
    }

    /// The gate of a request: the switch whose VL15 buffer it occupies last.
    pub(crate) fn gate_of(&self, req: &Req) -> u32 {
        if req.node == NONE {
            return NONE;
        }
        if req.op == Op::Probe {
            return req.node;
        }
        let n = &self.nodes[req.node as usize];
        if n.is_switch {
            return req.node;
        }
        let p = &self.ports[self.route_port(req.node, req.port)];
        if p.via == NONE { req.node } else { p.via }
    }

    /// Index of the port whose path (and LID) reaches `node` for a request about `port`:
    /// a CA port reached on its own is addressed through itself (a CA's SMA applies
    /// P_KeyTable and other per-port attributes to the port an SMP arrives on).
    pub(crate) fn route_port(&self, node: u32, port: u8) -> usize {
        let n = &self.nodes[node as usize];
        if !n.is_switch && port != 0 && port <= n.nports {
            let i = n.port_index(port);
            if self.ports[i].path_sweep != 0 {
                return i;
            }
        }
        n.port_index(n.path_port)
    }

    pub(crate) fn push(&mut self, op: Op, node: u32, port: u8, arg: u16) {
        // LID routes are trusted only once this sweep's LFTs are written (port bring-up,
        // PortStateChange clears) and for light-sweep polls; discovery, LID changes and
        // table writes happen while routes may be in flux, so they go directed.
        let after_tables = match op {
            Op::PortInfoSet => arg >= 3,
            Op::SwitchInfoSet => arg == 1,
            Op::LightSwitchInfo => true,
            _ => false,
        };
        let lid_routed = self.cfg.lid_routed_programming
            && self.io.lid_routes()
            && after_tables
            && self.target_lid(node, port).0 != 0;
        let req = Req {
            op,
            node,
            port,
            arg,
            tries: 0,
            lid_routed,
            key: 0,
        };
        let g = self.gate_of(&req);
        self.io.push(g, req);
    }

    /// The LID a LID-routed SMP to `node` goes to (0 when it has none in the fabric yet).
    pub(crate) fn target_lid(&self, node: u32, port: u8) -> Lid {
        if node == NONE {
            return Lid(0);
        }
        let p = &self.ports[self.route_port(node, port)];
        if p.info.lid == p.lid && p.lid.0 != 0 {
            p.lid
        } else {
            Lid(0)
        }
    }

    /// Builds the SMP of a request.
    pub(crate) fn build(&mut self, req: &Req, tid: u64) -> Option<Transmit> {
        let (method, attr, attr_mod) = match req.op {
            Op::Probe => (Method::GET, AttributeId::NODE_INFO, 0),
            Op::NodeDesc => (Method::GET, AttributeId::NODE_DESCRIPTION, 0),
            Op::PortInfoGet => (Method::GET, AttributeId::PORT_INFO, u32::from(req.port)),
            Op::SwitchInfoGet | Op::LightSwitchInfo => (Method::GET, AttributeId::SWITCH_INFO, 0),
            Op::LftSet => (
                Method::SET,
                AttributeId::LINEAR_FORWARDING_TABLE,
                u32::from(req.arg),
            ),
            Op::PKeySet => (
                Method::SET,
                AttributeId::P_KEY_TABLE,
                mad::PKeyTable::modifier(req.port, req.arg),
            ),
            Op::PortInfoSet | Op::RekeySet => {
                (Method::SET, AttributeId::PORT_INFO, u32::from(req.port))
            }
            Op::SwitchInfoSet => (Method::SET, AttributeId::SWITCH_INFO, 0),
            Op::MftSet => (
                Method::SET,
                AttributeId::MULTICAST_FORWARDING_TABLE,
                Sweeper::mft_modifier(req),
            ),
            Op::ReadBack => self.readback_attr(req),
            Op::SmInfoGet => (Method::GET, AttributeId::SM_INFO, 0),
            Op::SmInfoSet => (Method::SET, AttributeId::SM_INFO, u32::from(req.arg)),
            Op::LftGet => (
                Method::GET,
                AttributeId::LINEAR_FORWARDING_TABLE,
                u32::from(req.arg),
            ),
        };
        let (mut smp, dlid) = if req.lid_routed {
            let lid = self.target_lid(req.node, req.port);
            if lid.0 == 0 {
                return None;
            }
            (Smp::lid_routed(method, tid, attr, attr_mod), lid)
        } else {
            if req.op == Op::ReadBack && !self.readback_path_ok(req) {
                return None;
            }
            let mut buf = [0u8; 64];
            let len = self.path_to(req, &mut buf)?;
            (
                Smp::directed(method, tid, attr, attr_mod, &buf[..len]).ok()?,
                Lid::PERMISSIVE,
            )
        };
        smp.m_key = self.key_for(req).0;
        if req.op == Op::SmInfoSet {
            self.fill_sm_info_set(req, &mut smp.data);
        } else if method == Method::SET {
            self.fill_set(req, &mut smp.data)?;
        }
        Some(Transmit { dlid, smp })
    }

    /// Copies the directed path of a request into `buf` (a probe goes one hop past its
    /// node) and returns its length.
    fn path_to(&self, req: &Req, buf: &mut [u8; 64]) -> Option<usize> {
        if req.node == NONE {
            return Some(0);
        }
        let p = &self.ports[self.route_port(req.node, req.port)];
        if p.path_sweep == 0 {
            return None;
        }
        let (off, len) = (p.path_off as usize, p.path_len as usize);
        buf[..len].copy_from_slice(&self.paths[off..off + len]);
        if req.op == Op::Probe {
            if len >= mad::smp::MAX_HOPS as usize {
                return None;
            }
            buf[len] = req.port;
            return Some(len + 1);
        }
        Some(len)
    }

    /// Common failure path: a request was given up.
    pub(crate) fn fail(&mut self, req: Req) {
        self.io.give_up();
        self.on_failure(req);
    }

    /// Moves to the next phase when the current one has nothing left in flight.
    pub(crate) fn advance(&mut self) {
        while self.io.idle() {
            match self.phase {
                Phase::Discovering => self.finish_discovery(),
                Phase::Programming(s) => self.next_stage(s),
                Phase::Light => self.finish_light(),
                Phase::Rekey | Phase::Reapply => self.pre_routing(self.phase),
                Phase::Multicast => self.finish_mcast_pass(),
                Phase::SmInfo => self.finish_sm_info(),
                Phase::LftCheck => self.finish_lft_check(),
                Phase::Idle => {
                    if self.standing_by() {
                        return;
                    }
                    self.start_mcast_pass();
                    if self.phase == Phase::Idle {
                        return;
                    }
                }
                Phase::Routing => match self.during_routing.result.take() {
                    Some(r) => self.start_programming(*r),
                    None => return,
                },
                Phase::Lids | Phase::AwaitIntent => return,
            }
            if !self.io.idle() {
                return;
            }
            if matches!(
                self.phase,
                Phase::Idle | Phase::Routing | Phase::Lids | Phase::AwaitIntent
            ) {
                return;
            }
        }
    }

    pub(crate) fn start_pending_heavy(&mut self) {
        let reason = self.heavy_pending.take().unwrap_or(SweepReason::Requested);
        self.start_heavy(reason);
    }

    /// Ends a heavy sweep (complete or abandoned) and schedules the next sweep.
    pub(crate) fn finish_heavy(&mut self) {
        self.phase = Phase::Idle;
        self.first_sweep_done = true;
        let c = self.io.counters().since(&self.sweep_start);
        self.events.push_back(Event::HeavySweepComplete {
            sweep: self.sweep,
            counters: c,
            min_smps: self.disc_min + self.planned_sets,
        });
        self.schedule_next();
        self.start_waiting_readback();
    }

    pub(crate) fn schedule_next(&mut self) {
        if self.heavy_pending.is_some() {
            self.start_pending_heavy();
        } else {
            self.next_light = Some(self.now + self.cfg.sweep_interval);
        }
    }
}
