//! Programming ([`Programming`]): the routing result handed out, the partition policy in
//! force, and the planner of a heavy sweep's Sets — what it writes, in which stage, and
//! what came of it.
//!
//! Stages, each starting when the previous one has nothing in flight:
//! 1. PortInfo of end ports whose LID, LMC, MasterSMLID, subnet prefix or M_Key fields
//!    differ (ClientReregister where a port is new to this SM or its LID changes); a CA
//!    port still in INIT (other than the SM's own) gets these fields with its ARMED Set in
//!    stage 3 instead, one SMP fewer per host on a fresh fabric;
//! 2. changed 64-entry LFT blocks, SwitchInfo.LinearFDBTop (the same Set clears
//!    PortStateChange where discovery saw it set), changed 32-entry P_KeyTable blocks;
//! 3. every port in INIT to ARMED (switch ports facing end ports also get their partition
//!    enforcement bits);
//! 4. every ARMED port to ACTIVE;
//! 5. SwitchInfo.PortStateChange cleared where it is still set (stage 2 normally did it).
//!
//! Ungated (single SM), stage 1 and the ARMED Sets of ports in INIT already go out while the
//! daemon routes ([`Programming::arm_init_sets`]); the routing result waits for them to be
//! answered.
//!
//! Targets with a LID already in the fabric are reached LID-routed once the SM port has its
//! LID and the LFTs are programmed; the window falls back to directed route on failure.
//!
//! Programming plans and records; it never sends (the sweeper queues the Sets it returns)
//! and never decides when a stage runs. On the port and switch records it owns the P_Key
//! tables wanted and known, the enforcement bits, what a port does not hold, and the LFT
//! state of each switch.

use crate::SmError;
use crate::config::SweeperConfig;
use crate::discovery::Discovery;
use crate::events::{Event, RoutingOutcome};
use crate::intent::{LftBlockWrite, PKeyBlockWrite, PortChange};
use crate::io::{Op, Req};
use crate::state::{NONE, routed_top};
use fabric::{Guid, Lid, PKey, Topology};
use mad::{LinearForwardingTable, PortInfo, Smp, SmpAttribute, SwitchInfo};
use routing::{BLOCK_LIDS, Lfts, NO_ROUTE, SwitchLft};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

const INIT: u8 = 2;
const ARMED: u8 = 3;
const ACTIVE: u8 = 4;

/// A request to queue: (op, node, port, arg).
pub(crate) type Set = (Op, u32, u8, u16);

/// What an ungated heavy sweep sent while the daemon routed.
#[derive(Debug, Default)]
struct DuringRouting {
    /// A routing result that arrived while those Sets were still in flight: applied once
    /// they are answered.
    result: Option<Box<RoutingOutcome>>,
    /// Per port index: the sweep and the Sets ([`FIELDS`], [`ARMED_SET`]) that already
    /// went out during routing. Stage 1 skips a port that got either (an ARMED Set of a CA
    /// port carries its fields), stage 3 one that got its ARMED Set: each port is planned
    /// once per sweep, as in stage order (planning again would repeat Sets whose fields an
    /// SMA does not echo back).
    sent: Vec<(u64, u8)>,
}

/// A stage-1 (fields) Set went out during routing.
const FIELDS: u8 = 1;
/// An ARMED Set went out during routing.
const ARMED_SET: u8 = 2;

impl DuringRouting {
    fn mark(&mut self, port: usize, sweep: u64, what: u8) {
        if self.sent.len() <= port {
            self.sent.resize(port + 1, (0, 0));
        }
        let e = &mut self.sent[port];
        if e.0 != sweep {
            *e = (sweep, 0);
        }
        e.1 |= what;
    }

    fn sent(&self, port: usize, sweep: u64, what: u8) -> bool {
        self.sent
            .get(port)
            .is_some_and(|&(s, m)| s == sweep && m & what != 0)
    }
}

/// The programming state of a sweeper (see the module documentation).
#[derive(Debug)]
pub(crate) struct Programming {
    /// The partition policy in force (partitions.conf text; None: no file).
    policy_text: Option<String>,
    /// Tables last handed to the switches (by GUID).
    lfts: Option<Arc<Lfts>>,
    /// The max LID they cover (LinearFDBTop).
    max_lid: u16,
    /// LFT blocks (switch node, block) the current routing result changes.
    lft_todo: Vec<(u32, u16)>,
    /// P_KeyTable blocks (node, port, block) the current sweep writes.
    pkey_todo: Vec<(u32, u8, u16)>,
    /// P_KeyTable blocks of fresh ports taken to hold what is wanted already (IBA default).
    pkey_assumed: Vec<(u32, u8, u16)>,
    /// Sets planned in the current sweep (for the minimum-SMP figure) and failed.
    planned_sets: u64,
    failed_sets: u64,
    /// LFT blocks, P_Key blocks, PortInfo Sets, SwitchInfo Sets of the current sweep.
    stage_counts: [u64; 4],
    /// Ports (node GUID, port) a P_Key or PortInfo Set failed on in this sweep.
    failed_ports: Vec<(Guid, u8)>,
    /// Sets sent while the daemon routes (ungated mode).
    during_routing: DuringRouting,
}

impl Programming {
    /// `known`: the tables the switches are known to hold (a takeover).
    pub fn new(policy_text: Option<String>, known: Option<Arc<Lfts>>) -> Programming {
        let max_lid = known
            .as_ref()
            .and_then(|l| l.switches.iter().map(routed_top).max())
            .unwrap_or(0);
        Programming {
            policy_text,
            lfts: known,
            max_lid,
            lft_todo: Vec::new(),
            pkey_todo: Vec::new(),
            pkey_assumed: Vec::new(),
            planned_sets: 0,
            failed_sets: 0,
            stage_counts: [0; 4],
            failed_ports: Vec::new(),
            during_routing: DuringRouting::default(),
        }
    }

    /// The partition policy text in force.
    pub fn policy_text(&self) -> Option<&str> {
        self.policy_text.as_deref()
    }

    /// Replaces the partition policy (planned from the next heavy sweep on).
    pub fn set_policy_text(&mut self, text: Option<String>) {
        self.policy_text = text;
    }

    /// The forwarding tables last handed out for programming.
    pub fn lfts(&self) -> Option<&Lfts> {
        self.lfts.as_deref()
    }

    /// The same, shared (the routing job's previous tables).
    pub fn lfts_shared(&self) -> Option<Arc<Lfts>> {
        self.lfts.clone()
    }

    /// A heavy sweep starts: its counts and failures are reset.
    pub fn start_sweep(&mut self) {
        self.planned_sets = 0;
        self.failed_sets = 0;
        self.stage_counts = [0; 4];
        self.failed_ports.clear();
        self.during_routing.result = None;
    }

    /// One more Set planned in this sweep (re-applied, multicast, M_Key rotation).
    pub fn count_planned(&mut self) {
        self.planned_sets += 1;
    }

    /// Sets planned in this sweep.
    pub fn planned_sets(&self) -> u64 {
        self.planned_sets
    }

    /// Sets given up in this sweep.
    pub fn failed_sets(&self) -> u64 {
        self.failed_sets
    }

    /// LFT blocks, P_Key blocks, PortInfo Sets and SwitchInfo Sets of this sweep.
    pub fn stage_counts(&self) -> [u64; 4] {
        self.stage_counts
    }

    /// Ports a P_Key or PortInfo Set failed on since the last call.
    pub fn take_failed_ports(&mut self) -> Vec<(Guid, u8)> {
        std::mem::take(&mut self.failed_ports)
    }

    /// A routing result that arrived while Sets sent during routing were in flight.
    pub fn hold_result(&mut self, r: RoutingOutcome) {
        self.during_routing.result = Some(Box::new(r));
    }

    /// The routing result held back, if any.
    pub fn take_held_result(&mut self) -> Option<RoutingOutcome> {
        self.during_routing.result.take().map(|r| *r)
    }

    /// LFT blocks (switch node, block) the current routing result changes.
    pub fn lft_todo(&self) -> &[(u32, u16)] {
        &self.lft_todo
    }

    /// Plans the P_KeyTables and enforcement bits of every port of this sweep from the
    /// policy in force.
    pub fn plan_partitions(
        &self,
        disc: &mut Discovery,
        topo: &Topology,
        options: partitions::Options,
    ) -> Result<(), SmError> {
        let mut opts = options;
        opts.sm_port_guid = disc.sm_port_guid();
        let policy = match &self.policy_text {
            Some(t) => partitions::load(t, opts)?,
            None => partitions::Policy::no_file(opts),
        };
        let mut caps = partitions::Caps::default();
        let mut pcap = BTreeMap::new();
        let mut ecap = BTreeMap::new();
        for i in 0..disc.nodes().len() as u32 {
            if !disc.seen(i) {
                continue;
            }
            let n = disc.node(i);
            pcap.insert(n.guid, n.info.partition_cap);
            if n.is_switch {
                let s = disc.switch(n.sw);
                ecap.insert(n.guid, s.info.partition_enforcement_cap);
            }
            for p in 0..=n.nports {
                let port = disc.port_of_mut(i, p);
                port.pkey_want.clear();
                port.enforce_in = false;
                port.enforce_out = false;
            }
        }
        caps.partition_cap = pcap;
        caps.switch_enforcement_cap = ecap;
        let plan = partitions::plan(&policy, topo, &caps);
        for pp in &plan.ports {
            set_pkey_want(disc, pp.port.node_guid, pp.port.port, &pp.table.entries());
        }
        for sp in &plan.switch_ports {
            if let Some(t) = &sp.table {
                set_pkey_want(disc, sp.switch_guid, sp.port, &t.entries());
            }
            if let Some(i) = disc.find(sp.switch_guid) {
                if sp.port <= disc.node(i).nports {
                    let port = disc.port_of_mut(i, sp.port);
                    port.enforce_in = sp.enforce_in;
                    port.enforce_out = sp.enforce_out;
                }
            }
        }
        Ok(())
    }

    /// Takes the routing result: diffs it against what is programmed (`lft_todo`) and keeps
    /// its tables. Returns the [`Event::RoutingDone`] to report.
    pub fn take_routing(&mut self, disc: &mut Discovery, r: RoutingOutcome) -> Event {
        let old = self.lfts.take();
        let old_idx: HashMap<Guid, usize> = old
            .as_ref()
            .map(|o| {
                o.switches
                    .iter()
                    .enumerate()
                    .map(|(k, s)| (s.guid, k))
                    .collect()
            })
            .unwrap_or_default();
        for s in disc.switches_mut() {
            s.lft_idx = NONE;
        }
        self.lft_todo.clear();
        let mut max_lid = 0u16;
        for (k, t) in r.lfts.switches.iter().enumerate() {
            max_lid = max_lid.max(t.ports.len().saturating_sub(1) as u16);
            let Some(node) = disc.find(t.guid) else {
                continue;
            };
            let sw = disc.node(node).sw;
            if sw == NONE {
                continue;
            }
            let s = disc.switch_mut(sw);
            s.lft_idx = k as u32;
            let prev = if s.lft_valid {
                old_idx
                    .get(&t.guid)
                    .and_then(|&j| old.as_ref().map(|o| &o.switches[j]))
            } else {
                None
            };
            let blocks = t.ports.len().div_ceil(BLOCK_LIDS);
            for b in 0..blocks {
                let lo = b * BLOCK_LIDS;
                let hi = (lo + BLOCK_LIDS).min(t.ports.len());
                let same = prev.is_some_and(|p| {
                    (lo..lo + BLOCK_LIDS).all(|l| {
                        let new = if l < hi { t.ports[l] } else { NO_ROUTE };
                        p.port(l as u16) == new
                    })
                });
                if !same {
                    self.lft_todo.push((node, b as u16));
                }
            }
        }
        self.max_lid = max_lid;
        let done = Event::RoutingDone {
            engine: r.engine,
            lft_blocks: self.lft_todo.len(),
            refusals: r.refusals,
        };
        self.lfts = Some(Arc::new(r.lfts));
        drop(old);
        done
    }

    /// Decides the P_KeyTable blocks this sweep writes (`pkey_todo`); what is known of each
    /// port becomes what it is about to hold (a failed Set marks it unknown again).
    /// `assume_default`: a fresh port holds the IBA default table.
    pub fn plan_pkeys(&mut self, disc: &mut Discovery, assume_default: bool) {
        self.pkey_todo.clear();
        self.pkey_assumed.clear();
        for i in 0..disc.nodes().len() as u32 {
            if !disc.seen(i) {
                continue;
            }
            for p in 0..=disc.node(i).nports {
                let port = disc.port_of_mut(i, p);
                if port.pkey_want.is_empty() {
                    continue;
                }
                let blocks = port.pkey_want.len().div_ceil(32);
                let assumed = !port.pkey_known_valid && port.fresh && assume_default;
                if assumed {
                    // A port never configured since reset holds the IBA default
                    // table: 0xFFFF at index 0, the rest invalid.
                    port.pkey_known.clear();
                    port.pkey_known.resize(port.pkey_want.len(), 0);
                    if let Some(k) = port.pkey_known.first_mut() {
                        *k = 0xFFFF;
                    }
                    port.pkey_known_valid = true;
                }
                let all = !port.pkey_known_valid;
                let mut todo = [false; 64];
                for (b, t) in todo.iter_mut().enumerate().take(blocks.min(64)) {
                    let lo = b * 32;
                    let hi = (lo + 32).min(port.pkey_want.len());
                    *t = all || port.pkey_known[lo..hi] != port.pkey_want[lo..hi];
                }
                port.pkey_known.clone_from(&port.pkey_want);
                port.pkey_known_valid = true;
                for (b, t) in todo.iter().enumerate().take(blocks.min(64)) {
                    if *t {
                        self.pkey_todo.push((i, p, b as u16));
                    } else if assumed {
                        self.pkey_assumed.push((i, p, b as u16));
                    }
                }
            }
        }
    }

    /// A Set planned: counted (every Set, and per stage).
    fn planned(&mut self, sets: &mut Vec<Set>, op: Op, node: u32, port: u8, arg: u16) {
        self.planned_sets += 1;
        match op {
            Op::PortInfoSet => self.stage_counts[2] += 1,
            Op::SwitchInfoSet => self.stage_counts[3] += 1,
            _ => {}
        }
        sets.push((op, node, port, arg));
    }

    /// ARMED Sets (with fields, for CA ports) of every linked port still in INIT, sent
    /// while the daemon routes.
    pub fn arm_init_sets(&mut self, disc: &Discovery) -> Vec<Set> {
        let sweep = disc.sweep();
        let mut sets = Vec::new();
        for i in 0..disc.nodes().len() as u32 {
            if !disc.seen(i) {
                continue;
            }
            for p in 1..=disc.node(i).nports {
                let pi = disc.node(i).port_index(p);
                let port = disc.port(pi);
                if port.remote_sweep == sweep
                    && port.info.port_state == INIT
                    && !self.during_routing.sent(pi, sweep, ARMED_SET)
                {
                    self.during_routing.mark(pi, sweep, ARMED_SET);
                    self.planned(&mut sets, Op::PortInfoSet, i, p, 3);
                }
            }
        }
        sets
    }

    /// The Sets of programming stage `stage` (1..=5), in order. `routing`: planned while
    /// the daemon routes (stage 1 only). `mft_tops`: MulticastFDBTop wanted per switch
    /// node (stage 2; see `Multicast::mft_tops`).
    pub fn plan_stage(
        &mut self,
        disc: &mut Discovery,
        want: &Wanted<'_>,
        stage: u8,
        routing: bool,
        mft_tops: &HashMap<u32, u16>,
    ) -> Vec<Set> {
        let sweep = disc.sweep();
        let n_nodes = disc.nodes().len() as u32;
        let mut sets = Vec::new();
        match stage {
            1 => {
                for i in 0..n_nodes {
                    if !disc.seen(i) {
                        continue;
                    }
                    let (is_switch, nports) = (disc.node(i).is_switch, disc.node(i).nports);
                    let range = if is_switch { 0..=0 } else { 1..=nports };
                    for p in range {
                        let pi = disc.node(i).port_index(p);
                        let port = disc.port(pi);
                        if port.lid.0 == 0
                            || (!is_switch && port.remote_sweep != sweep)
                            || self.during_routing.sent(pi, sweep, FIELDS | ARMED_SET)
                        {
                            continue;
                        }
                        // A CA port still in INIT gets its fields with the ARMED Set of
                        // stage 3 (one SMP instead of two); the SM's own port first.
                        let own = i == disc.local() && p == disc.local_port();
                        if !is_switch && !own && port.info.port_state == INIT {
                            continue;
                        }
                        let wanted = desired(disc, want, i, p, 1);
                        if fields_differ(&port.info, &wanted) {
                            if routing {
                                self.during_routing.mark(pi, sweep, FIELDS);
                            }
                            self.planned(&mut sets, Op::PortInfoSet, i, p, 1);
                        }
                    }
                }
            }
            2 => {
                let todo = std::mem::take(&mut self.lft_todo);
                for &(node, b) in &todo {
                    self.planned(&mut sets, Op::LftSet, node, 0, b);
                }
                self.stage_counts[0] += todo.len() as u64;
                self.lft_todo = todo;
                for k in 0..disc.switches().len() {
                    let s = &disc.switches()[k];
                    let node = s.node;
                    if !disc.seen(node) {
                        continue;
                    }
                    let mft_top = mft_tops.get(&node).copied();
                    let top = s.lft_idx != NONE && s.info.linear_fdb_top != self.max_lid
                        || mft_top.is_some_and(|t| t != s.info.multicast_fdb_top);
                    let psc_seen = s.psc_seen;
                    let s = &mut disc.switches_mut()[k];
                    s.mft_top_want = mft_top;
                    // One SwitchInfo Set writes LinearFDBTop (and MulticastFDBTop where the
                    // switch supports it and the groups are known) and clears PortStateChange
                    // (stage 5 then has nothing left for this switch). Clearing here rather
                    // than after ACTIVE loses no change: our ARMED/ACTIVE Sets do not set
                    // the bit (IBA: only transitions from or to Down do), a link that
                    // changes later sets it again.
                    if psc_seen {
                        s.psc_seen = false;
                        self.planned(&mut sets, Op::SwitchInfoSet, node, 0, 1);
                    } else if top {
                        self.planned(&mut sets, Op::SwitchInfoSet, node, 0, 0);
                    }
                }
                let todo = std::mem::take(&mut self.pkey_todo);
                for &(node, p, b) in &todo {
                    self.stage_counts[1] += 1;
                    self.planned(&mut sets, Op::PKeySet, node, p, b);
                }
                self.pkey_todo = todo;
            }
            3 | 4 => {
                for i in 0..n_nodes {
                    if !disc.seen(i) {
                        continue;
                    }
                    let (is_switch, nports) = (disc.node(i).is_switch, disc.node(i).nports);
                    for p in 1..=nports {
                        let pi = disc.node(i).port_index(p);
                        let port = disc.port(pi);
                        if port.remote_sweep != sweep
                            || (stage == 3 && self.during_routing.sent(pi, sweep, ARMED_SET))
                        {
                            continue;
                        }
                        let st = port.info.port_state;
                        let need = if stage == 3 {
                            st == INIT
                                || (is_switch
                                    && !port.enforce_not_held
                                    && (port.info.partition_enforcement_inbound != port.enforce_in
                                        || port.info.partition_enforcement_outbound
                                            != port.enforce_out))
                        } else {
                            st == ARMED
                        };
                        if need {
                            self.planned(&mut sets, Op::PortInfoSet, i, p, u16::from(stage));
                        }
                    }
                }
            }
            5 => {
                for k in 0..disc.switches().len() {
                    let s = &disc.switches()[k];
                    if disc.seen(s.node) && s.psc_seen {
                        let node = s.node;
                        self.planned(&mut sets, Op::SwitchInfoSet, node, 0, 1);
                    }
                }
            }
            _ => {}
        }
        sets
    }

    /// Stage 2 is done: every switch whose LFT Sets all took holds the tables.
    pub fn after_tables(&self, disc: &mut Discovery) {
        let top = self.max_lid;
        for s in disc.switches_mut() {
            if s.lft_idx != NONE && !s.lft_failed {
                s.lft_valid = true;
                // A LinearFDBTop found right (another SM, or an earlier life of this one,
                // set it) got no SwitchInfo Set: record it, or light sweeps see a mismatch
                // and every interval becomes a heavy sweep.
                if s.info.linear_fdb_top == top {
                    s.fdb_top = top;
                }
            }
        }
    }

    /// Writes the data of an LFT, P_KeyTable, PortInfo (stage) or SwitchInfo Set; None when
    /// it no longer makes sense.
    pub fn fill_set(
        &self,
        disc: &Discovery,
        want: &Wanted<'_>,
        req: &Req,
        data: &mut [u8; 64],
    ) -> Option<()> {
        let n = disc.node(req.node);
        match req.op {
            Op::LftSet => {
                let s = disc.switch(n.sw);
                let t = &self.lfts.as_ref()?.switches[s.lft_idx as usize];
                let mut lft = LinearForwardingTable::default();
                let lo = (usize::from(req.arg) * 64).min(t.ports.len());
                let hi = (lo + 64).min(t.ports.len());
                lft.ports[..hi - lo].copy_from_slice(&t.ports[lo..hi]);
                lft.ports[hi - lo..].fill(NO_ROUTE);
                lft.encode(data);
            }
            Op::PKeySet => {
                let p = disc.port(n.port_index(req.port));
                let mut t = mad::PKeyTable::default();
                let lo = usize::from(req.arg) * 32;
                for (k, e) in t.keys.iter_mut().enumerate() {
                    *e = PKey(p.pkey_want.get(lo + k).copied().unwrap_or(0));
                }
                t.encode(data);
            }
            Op::PortInfoSet => {
                desired(disc, want, req.node, req.port, req.arg as u8).encode(data);
            }
            Op::SwitchInfoSet => {
                let s = disc.switch(n.sw);
                let mut si: SwitchInfo = s.info;
                si.linear_fdb_top = self.max_lid;
                if let Some(t) = s.mft_top_want {
                    si.multicast_fdb_top = t;
                }
                si.port_state_change = req.arg == 1;
                si.encode(data);
            }
            _ => return None,
        }
        Some(())
    }

    /// A PortInfo Set (stage or M_Key rotation) was answered with `info`: it is what the
    /// port holds now. Returns a [`Event::FieldNotHeld`] for each field the port is found
    /// not to hold (once per port and field).
    pub fn on_port_info_set(
        &self,
        disc: &mut Discovery,
        req: &Req,
        info: PortInfo,
        lease: u16,
    ) -> Vec<Event> {
        let n = disc.node(req.node);
        let pi = n.port_index(req.port);
        let is_switch = n.is_switch;
        let node_guid = n.guid;
        let p = disc.port_mut(pi);
        let mut not_held = Vec::new();
        if (!is_switch || req.port == 0)
            && p.lid.0 != 0
            && info.m_key_lease_period != lease
            && !p.lease_not_held
        {
            p.lease_not_held = true;
            not_held.push((
                "M_KeyLeasePeriod",
                u32::from(lease),
                u32::from(info.m_key_lease_period),
            ));
        }
        let enforce = |i: bool, o: bool| u32::from(i) << 1 | u32::from(o);
        if is_switch
            && req.port != 0
            && req.op == Op::PortInfoSet
            && req.arg == 3
            && !p.enforce_not_held
            && (info.partition_enforcement_inbound != p.enforce_in
                || info.partition_enforcement_outbound != p.enforce_out)
        {
            p.enforce_not_held = true;
            not_held.push((
                "PartitionEnforcement(Inbound,Outbound)",
                enforce(p.enforce_in, p.enforce_out),
                enforce(
                    info.partition_enforcement_inbound,
                    info.partition_enforcement_outbound,
                ),
            ));
        }
        p.info = info;
        p.programmed = true;
        not_held
            .into_iter()
            .map(|(field, wrote, holds)| Event::FieldNotHeld {
                node: node_guid,
                port: req.port,
                field,
                wrote,
                holds,
            })
            .collect()
    }

    /// A SwitchInfo Set was answered: what the switch holds now, LinearFDBTop included.
    pub fn on_switch_info_set(&self, disc: &mut Discovery, req: &Req, smp: &Smp) {
        let sw = disc.node(req.node).sw;
        let s = disc.switch_mut(sw);
        s.info = SwitchInfo::decode(&smp.data);
        s.fdb_top = self.max_lid;
    }

    /// A Set was given up: counted, and what it was to write is not known to be held.
    pub fn on_set_failed(&mut self, disc: &mut Discovery, req: &Req) {
        self.failed_sets += 1;
        let n = disc.node(req.node);
        let (guid, sw) = (n.guid, n.sw);
        match req.op {
            Op::LftSet => {
                let s = disc.switch_mut(sw);
                s.lft_failed = true;
                s.lft_valid = false;
            }
            Op::PKeySet => {
                disc.port_of_mut(req.node, req.port).pkey_known_valid = false;
                self.failed_ports.push((guid, req.port));
            }
            Op::PortInfoSet | Op::RekeySet => self.failed_ports.push((guid, req.port)),
            _ => {}
        }
    }

    /// The LFT and P_KeyTable blocks this sweep is about to write (and the P_Key blocks
    /// taken to be held already), for its intent.
    pub fn intent_blocks(&self, disc: &Discovery) -> (Vec<LftBlockWrite>, Vec<PKeyBlockWrite>) {
        let mut lft_blocks = Vec::new();
        if let Some(l) = &self.lfts {
            for &(node, b) in &self.lft_todo {
                let n = disc.node(node);
                let s = disc.switch(n.sw);
                let Some(t) = l.switches.get(s.lft_idx as usize) else {
                    continue;
                };
                let mut ports = [NO_ROUTE; 64];
                let lo = (usize::from(b) * BLOCK_LIDS).min(t.ports.len());
                let hi = (lo + BLOCK_LIDS).min(t.ports.len());
                ports[..hi - lo].copy_from_slice(&t.ports[lo..hi]);
                lft_blocks.push(LftBlockWrite {
                    switch: n.guid,
                    block: b,
                    ports,
                });
            }
        }
        let mut pkey_blocks = Vec::new();
        let todo = self.pkey_todo.iter().map(|&x| (x, false));
        let assumed = self.pkey_assumed.iter().map(|&x| (x, true));
        for ((node, port, b), assumed) in todo.chain(assumed) {
            let n = disc.node(node);
            let p = disc.port(n.port_index(port));
            let mut keys = [0u16; 32];
            let lo = usize::from(b) * 32;
            for (k, e) in keys.iter_mut().enumerate() {
                *e = p.pkey_want.get(lo + k).copied().unwrap_or(0);
            }
            pkey_blocks.push(PKeyBlockWrite {
                node: n.guid,
                port,
                block: b,
                keys,
                assumed,
            });
        }
        (lft_blocks, pkey_blocks)
    }

    /// PortInfo field changes stage 1 (and stage 3, for CA ports still in INIT) will write.
    pub fn planned_port_changes(&self, disc: &Discovery, want: &Wanted<'_>) -> Vec<PortChange> {
        let sweep = disc.sweep();
        let mut v = Vec::new();
        for (i, p, n, port) in disc.end_ports_seen() {
            if port.lid.0 == 0 || (!n.is_switch && port.remote_sweep != sweep) {
                continue;
            }
            let wanted = desired(disc, want, i, p, 1);
            if fields_differ(&port.info, &wanted) {
                v.push(PortChange {
                    node: n.guid,
                    port: p,
                    port_guid: port.guid,
                    lid: wanted.lid,
                    lmc: wanted.lmc,
                    master_sm_lid: wanted.master_sm_lid,
                    m_key: wanted.m_key,
                    m_key_protect_bits: wanted.m_key_protect_bits,
                    m_key_lease_period: wanted.m_key_lease_period,
                    subnet_prefix: wanted.gid_prefix,
                });
            }
        }
        v
    }

    /// What this sweep planned to write is not known to be written: its switches' tables
    /// and its ports' P_KeyTables become unknown.
    pub fn forget_planned(&self, disc: &mut Discovery) {
        for &(node, _) in &self.lft_todo {
            let sw = disc.node(node).sw;
            if sw != NONE {
                let s = disc.switch_mut(sw);
                s.lft_valid = false;
                s.lft_failed = true;
            }
        }
        for &(node, port, _) in &self.pkey_todo {
            disc.port_of_mut(node, port).pkey_known_valid = false;
        }
    }

    /// Switches an LFT Set failed on in this sweep.
    pub fn lft_failed_switches<'a>(&self, disc: &'a Discovery) -> impl Iterator<Item = Guid> + 'a {
        disc.switches()
            .iter()
            .filter(|s| s.lft_failed)
            .map(|s| disc.node(s.node).guid)
    }

    /// The tables of `switches` and the P_KeyTables of `ports` are not known to be held.
    pub fn forget_failed(&self, disc: &mut Discovery, switches: &[Guid], ports: &[(Guid, u8)]) {
        for g in switches {
            if let Some(i) = disc.find(*g) {
                let sw = disc.node(i).sw;
                if sw != NONE {
                    disc.switch_mut(sw).lft_valid = false;
                }
            }
        }
        for (g, p) in ports {
            if let Some(i) = disc.find(*g) {
                if *p <= disc.node(i).nports {
                    disc.port_of_mut(i, *p).pkey_known_valid = false;
                }
            }
        }
    }

    /// Re-apply of a previous master's intent, LFT part: the known tables with the
    /// intent's blocks laid over them become the programmed tables. Returns the LFT Sets
    /// (switch node, block) to queue and the switches not reached.
    pub fn reapply_lfts(
        &mut self,
        disc: &mut Discovery,
        blocks: &[LftBlockWrite],
    ) -> (Vec<(u32, u16)>, Vec<Guid>) {
        let mut tables: BTreeMap<Guid, SwitchLft> = self
            .lfts
            .as_ref()
            .map(|l| l.switches.iter().map(|s| (s.guid, s.clone())).collect())
            .unwrap_or_default();
        let mut had: HashMap<Guid, bool> = HashMap::new();
        let mut covered: HashMap<Guid, Vec<bool>> = HashMap::new();
        for w in blocks {
            let t = tables.entry(w.switch).or_insert_with(|| SwitchLft {
                guid: w.switch,
                lid: Lid(0),
                ports: Vec::new(),
            });
            had.entry(w.switch).or_insert(!t.ports.is_empty());
            let lo = usize::from(w.block) * BLOCK_LIDS;
            if t.ports.len() < lo + BLOCK_LIDS {
                t.ports.resize(lo + BLOCK_LIDS, NO_ROUTE);
            }
            t.ports[lo..lo + BLOCK_LIDS].copy_from_slice(&w.ports);
            let c = covered.entry(w.switch).or_default();
            if c.len() <= usize::from(w.block) {
                c.resize(usize::from(w.block) + 1, false);
            }
            c[usize::from(w.block)] = true;
        }
        let lfts = Lfts {
            switches: tables.into_values().collect(),
        };
        let idx: HashMap<Guid, usize> = lfts
            .switches
            .iter()
            .enumerate()
            .map(|(k, s)| (s.guid, k))
            .collect();
        for (g, s) in disc.switches_by_guid_mut() {
            s.lft_idx = idx.get(&g).map_or(NONE, |&k| k as u32);
            if let (Some(&h), Some(c)) = (had.get(&g), covered.get(&g)) {
                // Valid afterwards: it was known valid, or the intent alone covers it.
                s.lft_valid = (h && s.lft_valid) || (!h && c.iter().all(|&x| x));
            }
        }
        self.lfts = Some(Arc::new(lfts));
        let mut sets = Vec::new();
        let mut unreached = Vec::new();
        for w in blocks {
            match disc.find(w.switch) {
                Some(node) if disc.seen(node) && disc.node(node).sw != NONE => {
                    sets.push((node, w.block));
                }
                _ => {
                    if let Some(node) = disc.find(w.switch) {
                        let sw = disc.node(node).sw;
                        if sw != NONE {
                            let s = disc.switch_mut(sw);
                            s.lft_failed = true;
                            s.lft_valid = false;
                        }
                    }
                    unreached.push(w.switch);
                }
            }
        }
        (sets, unreached)
    }

    /// Re-apply, P_Key part: the intent's blocks laid over what is known of each port.
    /// Returns the P_KeyTable Sets (node, port, block) to queue and the ports not reached.
    pub fn reapply_pkeys(
        &self,
        disc: &mut Discovery,
        blocks: &[PKeyBlockWrite],
    ) -> (Vec<(u32, u8, u16)>, Vec<(Guid, u8)>) {
        let mut sets = Vec::new();
        let mut unreached = Vec::new();
        let mut pcov: HashMap<(Guid, u8), (bool, Vec<bool>)> = HashMap::new();
        for w in blocks {
            let Some(node) = disc
                .find(w.node)
                .filter(|&n| disc.seen(n))
                .filter(|&n| w.port <= disc.node(n).nports)
            else {
                unreached.push((w.node, w.port));
                continue;
            };
            let p = disc.port_of_mut(node, w.port);
            let e = pcov.entry((w.node, w.port)).or_insert_with(|| {
                // What is known of an unknown table is only what the intent writes.
                if !p.pkey_known_valid {
                    p.pkey_known.clear();
                }
                (p.pkey_known_valid, Vec::new())
            });
            let lo = usize::from(w.block) * 32;
            if p.pkey_known.len() < lo + 32 {
                p.pkey_known.resize(lo + 32, 0);
            }
            p.pkey_known[lo..lo + 32].copy_from_slice(&w.keys);
            p.pkey_want.clone_from(&p.pkey_known);
            if e.1.len() <= usize::from(w.block) {
                e.1.resize(usize::from(w.block) + 1, false);
            }
            e.1[usize::from(w.block)] = true;
            p.pkey_known_valid = e.0 || e.1.iter().all(|&x| x);
            sets.push((node, w.port, w.block));
        }
        (sets, unreached)
    }

    /// An LFT block read back (before writing it, after a foreign master): does it hold
    /// what the routing wants? None when the switch has no programmed table.
    pub fn lft_block_matches(
        &self,
        disc: &Discovery,
        node: u32,
        block: u16,
        got: &LinearForwardingTable,
    ) -> Option<bool> {
        let n = disc.node(node);
        if n.sw == NONE {
            return None;
        }
        let s = disc.switch(n.sw);
        let t = self
            .lfts
            .as_ref()
            .and_then(|l| l.switches.get(s.lft_idx as usize))?;
        let lo = (usize::from(block) * 64).min(t.ports.len());
        let hi = (lo + 64).min(t.ports.len());
        Some((0..64).all(|k| {
            let want = if lo + k < hi {
                t.ports[lo + k]
            } else {
                NO_ROUTE
            };
            got.ports[k] == want
        }))
    }

    /// Blocks read back equal to what the routing wants are not written.
    pub fn keep_lft_blocks(&mut self, same: &[(u32, u16)]) {
        self.lft_todo.retain(|x| !same.contains(x));
    }
}

/// What a PortInfo Set writes besides what the port holds: the configuration's settings
/// and this SM's LID.
pub(crate) struct Wanted<'a> {
    pub cfg: &'a SweeperConfig,
    pub sm_lid: Lid,
}

/// The PortInfo this SM wants a port to hold at a stage.
pub(crate) fn desired(
    disc: &Discovery,
    want: &Wanted<'_>,
    node: u32,
    port: u8,
    stage: u8,
) -> PortInfo {
    let cfg = want.cfg;
    let n = disc.node(node);
    let p = disc.port(n.port_index(port));
    let mut pi = p.info;
    pi.port_state = 0;
    pi.port_phys_state = 0;
    pi.link_down_default_state = 0;
    pi.client_reregister = false;
    let end = !n.is_switch || port == 0;
    if end && p.lid.0 != 0 {
        pi.lid = p.lid;
        pi.lmc = p.lmc;
        pi.master_sm_lid = want.sm_lid;
        pi.gid_prefix = cfg.subnet_prefix;
        pi.m_key = cfg.m_key;
        pi.m_key_protect_bits = cfg.m_key_protect_bits;
        pi.m_key_lease_period = if p.lease_not_held {
            p.info.m_key_lease_period
        } else {
            cfg.m_key_lease_period
        };
        let rereg_cap =
            p.info.capability_mask & PortInfo::CAP_IS_CLIENT_REREGISTRATION_SUPPORTED != 0;
        // ClientReregister where the port is new to this SM or its LID changes, with the
        // Set that writes its fields (stage 1, or stage 3 for a port still in INIT).
        let writes_fields = stage == 1 || (stage == 3 && p.info.port_state == INIT);
        let new_to_us = !p.programmed && cfg.reregister_on_takeover;
        if writes_fields && !n.is_switch && rereg_cap && (new_to_us || p.info.lid != p.lid) {
            pi.client_reregister = true;
        }
    }
    if n.is_switch && port != 0 {
        pi.partition_enforcement_inbound = p.enforce_in;
        pi.partition_enforcement_outbound = p.enforce_out;
    }
    match stage {
        3 if p.info.port_state == INIT => pi.port_state = ARMED,
        4 if p.info.port_state == ARMED => pi.port_state = ACTIVE,
        _ => {}
    }
    pi
}

/// Sets what a port's P_KeyTable should hold (unknown when the size changes).
fn set_pkey_want(disc: &mut Discovery, node: Guid, port: u8, keys: &[PKey]) {
    let Some(i) = disc.find(node) else {
        return;
    };
    if port > disc.node(i).nports {
        return;
    }
    let p = disc.port_of_mut(i, port);
    p.pkey_want.clear();
    p.pkey_want.extend(keys.iter().map(|k| k.0));
    if p.pkey_known.len() != p.pkey_want.len() {
        p.pkey_known_valid = false;
    }
}

fn fields_differ(have: &PortInfo, want: &PortInfo) -> bool {
    have.lid != want.lid
        || have.lmc != want.lmc
        || have.master_sm_lid != want.master_sm_lid
        || have.gid_prefix != want.gid_prefix
        || have.m_key != want.m_key
        || have.m_key_protect_bits != want.m_key_protect_bits
        || have.m_key_lease_period != want.m_key_lease_period
        || want.client_reregister
}
