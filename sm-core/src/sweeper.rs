//! The sweeper: the SM's state machine, driven by responses and timeouts, read through
//! `poll_transmit` / `poll_event` / `poll_timeout`.
//!
//! As quinn-proto's `Connection`, the [`Sweeper`] holds one owned sub-state per concern,
//! each in its own module with the logic that touches only its own state, and runs here
//! what needs several of them:
//!
//! | field      | sub-state                          | owns                                                    |
//! |------------|------------------------------------|---------------------------------------------------------|
//! | `io`       | [`Io`](crate::io)                  | SMP window, SMPs outside it, counters, LID-route use    |
//! | `sched`    | [`Schedule`](crate::schedule)      | heavy sweep asked for, next sweep due, sweep outcome    |
//! | `disc`     | [`Discovery`](crate::discovery)    | node/port/switch arenas, paths, sweep number, stats     |
//! | `lids`     | [`LidState`](crate::lids)          | the SM's LID (LIDs assigned to the port records)        |
//! | `prog`     | [`Programming`](crate::program)    | routing result, policy, planned and failed Sets         |
//! | `intent`   | [`IntentState`](crate::intent)     | intent ids, awaiting/current intent, re-apply, events   |
//! | `fencing`  | [`Fencing`](crate::cluster)        | fence and write lease                                   |
//! | `keys`     | [`MKeys`](crate::keys)             | candidate M_Keys                                        |
//! | `light`    | [`Light`](crate::light)            | the running light sweep                                 |
//! | `mcast`    | [`Multicast`](crate::mcast)        | groups, MFT blocks known and being written              |
//! | `lanes`    | [`Lanes`](crate::vl)               | SLtoVL and VLArb blocks known and being written         |
//! | `readback` | [`Readback`](crate::readback)      | P_KeyTable read-back requests and targets               |
//! | `sms`      | [`ForeignSms`](crate::foreign)     | other SMs: answers, master followed, polls, handover    |
//! | `troubles` | [`Troubles`](crate::explain)       | requests given up per port, P_Keys not placed (explain) |
//! | `vports`   | [`Vports`](crate::vports)          | virtualization-capable ports, their vports as read/wanted |
//!
//! The sub-states never send and never change the phase: they return what is to be sent
//! or done, and the sweeper's child modules (one per flow: `requests`, `heavy`,
//! `programming`, `intent`, `light`, `sms`, `handover`, `mcast`, `vl`, `readback`, `cluster`,
//! `views`, `explain`, `vports`) queue it, move the phase and report events.

mod cluster;
mod explain;
mod handover;
mod heavy;
mod intent;
mod light;
mod mcast;
mod programming;
mod readback;
mod requests;
mod sms;
mod views;
mod vl;
mod vports;

use crate::cluster::Fencing;
use crate::config::Role;
use crate::config::SweeperConfig;
use crate::counters::Counters;
use crate::discovery::Discovery;
use crate::events::{Event, RoutingOutcome, SweepReason};
use crate::explain::{Troubles, Why};
use crate::foreign::ForeignSms;
use crate::intent::IntentState;
use crate::io::{Io, Op, Transmit};
use crate::keys::MKeys;
use crate::lids::LidState;
use crate::light::Light;
use crate::mcast::Multicast;
use crate::program::Programming;
use crate::readback::Readback;
use crate::schedule::Schedule;
use crate::vl::Lanes;
use crate::vports::Vports;
use crate::{SmError, VTime};
use fabric::{Lid, Topology};
use mad::{Method, MgmtClass, SmState, Smp};
use routing::Lfts;
use std::collections::VecDeque;
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
    /// Heavy sweep after discovery: reading the vports of virtualization-capable CA ports
    /// (see `vports`).
    VportRead,
}

/// The SM's sans-IO brain. See the crate documentation for the driver loop.
///
/// Its state is split into owned sub-states, one per concern, each in its own module with
/// the logic that touches only it; the `Sweeper` keeps them together with the SM's own
/// state and runs what needs several of them (the `sweeper/` modules).
pub struct Sweeper {
    /// The configuration (its guid2lid map, partitions text, role and pending intent
    /// change as the sweeper runs).
    cfg: SweeperConfig,
    /// The sweeper's time (the latest handed in).
    now: VTime,
    phase: Phase,
    /// What the driver reads with `poll_event`.
    events: VecDeque<Event>,
    /// SMInfo.SMState this SM answers with.
    state: SmState,
    /// SUBNET UP was reached (and not lost to a foreign master or a role change since).
    subnet_up: bool,
    /// A graceful stop handed over ([`Sweeper::hand_over_to_stop`]): no sweep after it.
    stopping: bool,
    /// The SMP window, SMPs outside it, counters.
    io: Io,
    /// Sweep scheduling and what the heavy sweeps left.
    sched: Schedule,
    /// The fabric as discovered.
    disc: Discovery,
    /// The topology of the last completed discovery (what the admin API, the SA and the
    /// replicated log see while the next discovery is still under way).
    last_topology: Arc<Topology>,
    /// The SM's LID.
    lids: LidState,
    /// Routing result, partition policy and the Sets of a heavy sweep.
    prog: Programming,
    /// Intents handed to the driver, programmed and re-applied.
    intent: IntentState,
    /// The fence and the write lease.
    fencing: Fencing,
    /// Candidate M_Keys.
    keys: MKeys,
    /// The running light sweep.
    light: Light,
    /// Multicast groups and forwarding tables.
    mcast: Multicast,
    /// SLtoVL and VLArb tables.
    lanes: Lanes,
    /// P_KeyTable read-backs.
    readback: Readback,
    /// Other SMs on the fabric.
    sms: ForeignSms,
    /// Requests given up and P_Keys not placed, for `explain`.
    troubles: Troubles,
    /// Virtualization-capable CA ports and their vports.
    vports: Vports,
    /// This sweep's vport LIDs with their physical port's base LID (routed alike).
    vport_routes: Vec<(Lid, Lid)>,
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
        let qos_policy = cfg
            .qos_policy
            .as_deref()
            .map(crate::vl::parse_policy)
            .transpose()?;
        let standby = cfg.role == Role::Standby;
        Ok(Sweeper {
            now: 0,
            phase: Phase::Idle,
            events: VecDeque::new(),
            state: if standby {
                SmState::Standby
            } else {
                SmState::Discovering
            },
            subnet_up: false,
            stopping: false,
            io: Io::new(cfg.window),
            sched: Schedule::new(standby),
            disc: Discovery::new(),
            last_topology: Arc::new(Topology::new()),
            lids: LidState::default(),
            prog: Programming::new(cfg.partitions_conf.clone(), cfg.known_lfts.clone()),
            intent: IntentState::default(),
            fencing: Fencing::default(),
            keys: MKeys::new(&cfg),
            light: Light::default(),
            mcast: Multicast::new(cfg.known_mfts.as_deref()),
            lanes: Lanes::new(cfg.known_vl_tables.as_deref(), qos_policy),
            readback: Readback::default(),
            sms: ForeignSms::default(),
            troubles: Troubles::default(),
            vports: Vports::default(),
            vport_routes: Vec::new(),
            cfg,
        })
    }

    /// Takes `now` as the sweeper's time. A MASTER is handed a time at least once per
    /// sweep interval (its light sweeps); more than two intervals without one mean the
    /// process did not run (SIGSTOP, a paused VM): traps sent meanwhile may be lost and
    /// another SM may have come, so a full heavy sweep (with its SMInfo queries) is asked
    /// for before anything else is written.
    fn clock(&mut self, now: VTime) {
        let interval = self.cfg.sweep_interval;
        if self.state == SmState::Master
            && self.sched.first_done()
            && interval > 0
            && now > self.now.saturating_add(interval.saturating_mul(2))
        {
            self.sched.request_heavy(SweepReason::Resumed);
        }
        self.now = self.now.max(now);
    }

    /// SMInfo.ActCount: the number of heavy sweeps started (wrapping).
    fn act_count(&self) -> u32 {
        self.disc.sweep() as u32
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
        self.lids.sm_lid()
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
        self.prog.lfts()
    }

    /// The P_KeyTables this SM knows the ports hold (what it wrote or was told), by
    /// (node GUID, port): what a replicated state keeps for a takeover
    /// ([`SweeperConfig::known_pkeys`]).
    pub fn pkey_tables(&self) -> crate::PKeyTables {
        self.prog.known_pkey_tables(&self.disc)
    }

    /// Number of the current (or last) heavy sweep.
    pub fn sweep_number(&self) -> u64 {
        self.disc.sweep()
    }

    /// Asks for a sweep: heavy (rediscover, re-route, program) or light (poll for change).
    /// Runs at once when idle; a heavy request made while busy runs right after the running
    /// sweep, a light one is dropped (a sweep is already running).
    pub fn request_sweep(&mut self, now: VTime, heavy: bool) {
        self.clock(now);
        if self.cfg.role == Role::Standby || (self.standing_by() && !heavy) {
            return;
        }
        if heavy {
            self.sched.request_heavy(SweepReason::Requested);
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
        self.prog.set_policy_text(text);
        let first = self.disc.sweep() + 1;
        self.request_sweep(now, true);
        Ok(first)
    }

    /// The partition policy text in force (None: no partitions file).
    pub fn policy_text(&self) -> Option<&str> {
        self.prog.policy_text()
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
                    // A targeted sweep's check read of a switch it did not read whole waits a
                    // quarter of the timeout: unanswered, the switch is taken to be gone and
                    // its neighbours' reads find it back if it was only slow.
                    let check = req.op == Op::SwitchInfoGet
                        && self.phase == Phase::Discovering
                        && self.disc.is_check(req.node);
                    let deadline = self.now + self.cfg.timeout / if check { 4 } else { 1 };
                    let win = self.io.window();
                    win.set_key(slot, key);
                    win.arm(deadline, slot, tid);
                    self.io.record(&t);
                    return Some(t);
                }
                None => {
                    // Cannot be built (path too long, target vanished): counts as failed.
                    if let Some(r) = self.io.window().cancel(slot) {
                        self.fail(r, Why::NotSent);
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
    /// for a routing result or idle with light sweeps off). A master holding queued Sets
    /// while its lease has lapsed is woken every 10 ms (`FENCE_RECHECK`): the
    /// driver extends the lease on its own (a quorum's acknowledgement), and nothing else
    /// would make the sweeper look again.
    pub fn poll_timeout(&mut self) -> Option<VTime> {
        let mut d = self.io.window().next_deadline();
        if self.cfg.role == Role::Master
            && self.fencing.lease_lapsed(self.now)
            && !self.may_transmit()
            && !self.io.idle()
        {
            let recheck = self.now + crate::cluster::FENCE_RECHECK;
            d = Some(d.map_or(recheck, |t| t.min(recheck)));
        }
        let l = match self.phase {
            Phase::Idle => self.sched.next(),
            Phase::Lids => Some(self.now),
            _ => None,
        };
        match (d, l) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Requests never resent: an SMInfo ACKNOWLEDGE moves the other SM from MASTER to
    /// STANDBY, so a copy resent after a late answer reaches it in STANDBY, where it is
    /// illegal (OpenSM logs ERR 2F07); its loss costs nothing (the other SM also stands by
    /// when its poll finds this one MASTER).
    fn sent_once(req: &crate::io::Req) -> bool {
        req.op == Op::SmInfoSet && u32::from(req.arg) == mad::SmInfo::MOD_ACKNOWLEDGE
    }

    /// Handles expired requests and due sweeps.
    pub fn handle_timeout(&mut self, now: VTime) {
        self.clock(now);
        while let Some((gate, mut req)) = self.io.window().expired(now) {
            self.io.counters_mut().timeouts += 1;
            if !matches!(req.op, Op::SmInfoGet | Op::SmInfoSet) {
                self.keys.timed_out(&mut self.disc, &req);
            }
            if req.lid_routed {
                // One LID-routed try: the route may cross a link that just went away.
                self.io.counters_mut().dr_fallbacks += 1;
                req.tries = 0;
                req.lid_routed = false;
                let g = self.disc.gate_of(&req);
                self.io.window().requeue(g, req, true);
            } else if req.tries < self.cfg.retries
                && !Self::sent_once(&req)
                && !(self.disc.targeted() && self.phase == Phase::Discovering)
            {
                // A targeted sweep's read is not resent: unanswered, the full discovery it
                // hands over to (which resends) follows one timeout later, not several (a
                // switch that died answers nothing).
                req.tries += 1;
                self.io.window().requeue(gate, req, true);
            } else {
                self.fail(req, Why::NoAnswer);
            }
        }
        if self.phase == Phase::Lids {
            self.run_lids();
        }
        if self.phase == Phase::Idle && self.sched.take_due(now) {
            if self.standing_by() && !self.sched.heavy_pending() {
                self.start_poll();
            } else if self.sched.heavy_pending() {
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
        self.clock(now);
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
                self.fail(req, Why::Status(smp.status & 0x7FFF));
            } else {
                self.io.settle();
                self.on_reply(req, &smp);
            }
        }
        self.advance();
    }

    /// Takes the routing result of the last `RoutingNeeded` job.
    pub fn handle_routing_result(&mut self, now: VTime, result: Result<RoutingOutcome, SmError>) {
        self.clock(now);
        if self.phase != Phase::Routing {
            return;
        }
        match result {
            Ok(r) if r.sweep == self.disc.sweep() => self.start_programming(r),
            Ok(_) => {}
            Err(e) => {
                self.events.push_back(Event::RoutingFailed(e.to_string()));
                self.finish_heavy();
            }
        }
        self.advance();
    }

    /// Moves to the next phase when the current one has nothing left in flight.
    fn advance(&mut self) {
        while self.io.idle() {
            match self.phase {
                Phase::Discovering => self.finish_discovery(),
                Phase::Programming(s) => self.next_stage(s),
                Phase::Light => self.finish_light(),
                Phase::Rekey | Phase::Reapply => self.pre_routing(self.phase),
                Phase::Multicast => self.finish_mcast_pass(),
                Phase::SmInfo => self.finish_sm_info(),
                Phase::LftCheck => self.finish_lft_check(),
                Phase::VportRead => self.next_vport_round(),
                Phase::Idle => {
                    if self.standing_by() {
                        return;
                    }
                    self.start_mcast_pass();
                    if self.phase == Phase::Idle {
                        return;
                    }
                }
                Phase::Routing => match self.prog.take_held_result() {
                    Some(r) => self.start_programming(r),
                    None => return,
                },
                Phase::Lids | Phase::AwaitIntent => return,
            }
            if !self.io.idle() {
                return;
            }
            // A phase that ended in Idle goes round once more: the Idle arm starts the
            // multicast pass for groups handed over meanwhile (and returns when none).
            if matches!(
                self.phase,
                Phase::Routing | Phase::Lids | Phase::AwaitIntent
            ) {
                return;
            }
        }
    }
}
