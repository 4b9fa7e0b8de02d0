//! Programming ([`Programming`]): the routing result handed out, the partition policy in
//! force, and the planner of a heavy sweep's Sets — what it writes, in which stage, and
//! what came of it.
//!
//! Programming plans and records; it never sends (the sweeper queues the Sets it returns)
//! and never decides when a stage runs. On the port and switch records it owns the P_Key
//! tables wanted and known, the enforcement bits, what a port does not hold, and the LFT
//! state of each switch.
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

mod answers;
mod intent;

pub(crate) use answers::Wanted;

use crate::SmError;
use crate::config::PKeyTables;
use crate::discovery::Discovery;
use crate::events::{Event, RoutingOutcome};
use crate::io::Op;
use crate::state::{NONE, routed_top};
use answers::{desired, fields_differ};
use fabric::{Guid, PKey, Topology};
use routing::{BLOCK_LIDS, Lfts, NO_ROUTE};
use std::collections::HashMap;
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
    /// Switches whose PortStateChange this sweep's Sets cleared.
    psc_cleared: Vec<u32>,
    /// Sets sent while the daemon routes (ungated mode).
    during_routing: DuringRouting,
    /// The SL per switch pair the routing in force requires (None: free).
    path_sl: Option<Arc<routing::PathSl>>,
    /// The SL-to-VL tables that routing relies on (None: the QoS ones, if any).
    sl2vl: Option<Arc<routing::EngineSl2Vl>>,
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
            psc_cleared: Vec::new(),
            during_routing: DuringRouting::default(),
            path_sl: None,
            sl2vl: None,
        }
    }

    /// The SL per switch pair the routing in force requires (None: free).
    pub fn path_sl(&self) -> Option<Arc<routing::PathSl>> {
        self.path_sl.clone()
    }

    /// The SL-to-VL tables the routing in force relies on (None: free).
    pub fn engine_sl2vl(&self) -> Option<&routing::EngineSl2Vl> {
        self.sl2vl.as_deref()
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
        self.psc_cleared.clear();
        self.during_routing.result = None;
    }

    /// The switches whose PortStateChange this sweep's Sets cleared (forgotten).
    pub fn take_psc_cleared(&mut self) -> Vec<u32> {
        std::mem::take(&mut self.psc_cleared)
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

    /// The P_KeyTables the ports are known to hold, by (node GUID, port).
    pub fn known_pkey_tables(&self, disc: &Discovery) -> PKeyTables {
        let mut m = PKeyTables::new();
        for n in disc.nodes() {
            for p in 0..=n.nports {
                let port = disc.port(n.port_index(p));
                if port.pkey_known_valid && !port.pkey_known.is_empty() {
                    m.insert((n.guid, p), port.pkey_known.clone());
                }
            }
        }
        m
    }

    /// LFT blocks (switch node, block) the current routing result changes.
    pub fn lft_todo(&self) -> &[(u32, u16)] {
        &self.lft_todo
    }

    /// Plans the P_KeyTables and enforcement bits of every port of this sweep from the
    /// policy in force. Returns the keys that did not fit a port's table (PartitionCap),
    /// by (node GUID, port), with their partition's name.
    pub fn plan_partitions(
        &self,
        disc: &mut Discovery,
        topo: &Topology,
        options: partitions::Options,
    ) -> Result<crate::explain::Dropped, SmError> {
        let mut opts = options;
        opts.sm_port_guid = disc.sm_port_guid();
        let policy = match &self.policy_text {
            Some(t) => partitions::load(t, opts)?,
            None => partitions::Policy::no_file(opts),
        };
        let caps = partition_caps(disc);
        for i in 0..disc.nodes().len() as u32 {
            if !disc.seen(i) {
                continue;
            }
            let nports = disc.node(i).nports;
            for p in 0..=nports {
                let port = disc.port_of_mut(i, p);
                port.pkey_want.clear();
                port.enforce_in = false;
                port.enforce_out = false;
            }
        }
        let plan = partitions::plan(&policy, topo, &caps);
        for pp in &plan.ports {
            set_pkey_want(disc, pp.port.node_guid, pp.port.port, &pp.table.entries());
        }
        for sp in &plan.switch_ports {
            if let Some(t) = &sp.table {
                set_pkey_want(disc, sp.switch_guid, sp.port, &t.entries());
            }
            if let Some(i) = disc.find(sp.switch_guid)
                && sp.port <= disc.node(i).nports
            {
                let port = disc.port_of_mut(i, sp.port);
                port.enforce_in = sp.enforce_in;
                port.enforce_out = sp.enforce_out;
            }
        }
        Ok(crate::explain::dropped_keys(&plan))
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
        self.path_sl = r.path_sl;
        self.sl2vl = r.sl2vl;
        let done = Event::RoutingDone {
            engine: r.engine,
            lft_blocks: self.lft_todo.len(),
            refusals: r.refusals,
            warnings: r.warnings,
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
                        self.psc_cleared.push(node);
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
                                || crate::vl::want::vl_high_limit(
                                    disc,
                                    want.cfg,
                                    want.qos_policy,
                                    i,
                                    p,
                                )
                                .is_some_and(|l| l != port.info.vl_high_limit)
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
                        self.psc_cleared.push(node);
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
}

/// The P_Key table capacities the nodes seen in the last sweep reported: NodeInfo.PartitionCap
/// per node and SwitchInfo.PartitionEnforcementCap per switch (defaults for nodes not seen).
pub(crate) fn partition_caps(disc: &Discovery) -> partitions::Caps {
    let mut caps = partitions::Caps::default();
    for i in 0..disc.nodes().len() as u32 {
        if !disc.seen(i) {
            continue;
        }
        let n = disc.node(i);
        caps.partition_cap.insert(n.guid, n.info.partition_cap);
        if n.is_switch {
            let s = disc.switch(n.sw);
            caps.switch_enforcement_cap
                .insert(n.guid, s.info.partition_enforcement_cap);
        }
    }
    caps
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
