//! Heavy sweep, parts 2 and 3: LIDs, the routing hand-off, and the programming planner.
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
//! daemon routes (`plan_during_routing`); the routing result waits for them to be answered.
//!
//! Targets with a LID already in the fabric are reached LID-routed once the SM port has its
//! LID and the LFTs are programmed; the window falls back to directed route on failure.

use crate::SmError;
use crate::events::{Event, RoutingJob, RoutingOutcome};
use crate::io::{Op, Req};
use crate::lids::{self, LidRequest};
use crate::state::NONE;
use crate::sweeper::{Phase, Sweeper};
use fabric::{Guid, Lid, NodeId, PKey, PortRef, Topology};
use mad::{LinearForwardingTable, PortInfo, Smp, SmpAttribute, SwitchInfo};
use routing::{EngineOptions, LidAssignment, NO_ROUTE, RoutingInput};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

const INIT: u8 = 2;

/// What an ungated heavy sweep sent while the daemon routed.
#[derive(Debug, Default)]
pub(crate) struct DuringRouting {
    /// A routing result that arrived while those Sets were still in flight: applied once
    /// they are answered.
    pub(crate) result: Option<Box<RoutingOutcome>>,
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
const ARMED: u8 = 3;
const ACTIVE: u8 = 4;

impl Sweeper {
    /// Builds the topology, assigns LIDs, plans P_KeyTables and returns the routing job.
    pub(crate) fn prepare_routing(&mut self) -> Result<RoutingJob, SmError> {
        let sweep = self.disc.sweep();
        let mut topo = Topology::new();
        let mut tnode = vec![NONE; self.disc.nodes().len()];
        let mut order = Vec::new();
        for (i, n) in self.disc.nodes().iter().enumerate() {
            if n.seen != sweep {
                continue;
            }
            let Some(kind) = n.info.kind() else { continue };
            let id = topo.add_node(kind, u16::from(n.nports), n.guid, n.desc.text())?;
            tnode[i] = id.0;
            order.push(i);
            if !n.is_switch {
                for p in 1..=n.nports {
                    let port = self.disc.port(n.port_index(p));
                    if port.path_sweep == sweep && port.guid.0 != 0 {
                        topo.set_port_guid(PortRef::new(id, p), port.guid)?;
                    }
                }
            }
        }
        for &i in &order {
            let n = &self.disc.nodes()[i];
            for p in 1..=n.nports {
                let port = self.disc.port(n.port_index(p));
                if port.remote_sweep != sweep || port.remote == NONE {
                    continue;
                }
                let r = port.remote as usize;
                if tnode[r] == NONE || (r, port.remote_port) <= (i, p) {
                    continue;
                }
                // An inconsistent pair (a port claimed twice) is skipped, not fatal.
                let _ = topo.connect(
                    PortRef::new(NodeId(tnode[i]), p),
                    PortRef::new(NodeId(tnode[r]), port.remote_port),
                );
            }
        }
        // LIDs.
        let mut reqs = Vec::new();
        let mut where_ = Vec::new();
        for &i in &order {
            let n = &self.disc.nodes()[i];
            let end_ports: &[u8] = if n.is_switch { &[0] } else { &[] };
            let mut add = |p: u8, lmc: u8, ports: &crate::state::Port| {
                let current = if ports.info_sweep == sweep {
                    ports.info.lid
                } else {
                    Lid(0)
                };
                reqs.push(LidRequest {
                    guid: ports.guid,
                    lmc,
                    current,
                });
                where_.push((i, p));
            };
            for &p in end_ports {
                add(p, 0, self.disc.port(n.port_index(p)));
            }
            if !n.is_switch {
                for p in 1..=n.nports {
                    let port = self.disc.port(n.port_index(p));
                    if port.remote_sweep == sweep {
                        add(p, self.cfg.lmc, port);
                    }
                }
            }
        }
        let (assigned, outcome) = lids::assign(&reqs, &mut self.cfg.guid2lid)?;
        let mut la = LidAssignment::new();
        for ((&(i, p), lid), r) in where_.iter().zip(&assigned).zip(&reqs) {
            let n = &self.disc.nodes()[i];
            let port = self.disc.port_mut(n.port_index(p));
            if port.lid != *lid && port.lid.0 != 0 {
                port.pkey_known_valid = port.pkey_known_valid && port.info.lid == *lid;
            }
            port.lid = *lid;
            port.lmc = r.lmc;
            la.set(PortRef::new(NodeId(tnode[i]), p), *lid, r.lmc)?;
        }
        let ln = self.disc.node(self.disc.local());
        self.sm_lid = self.disc.port(ln.port_index(self.disc.local_port())).lid;
        self.events.push_back(Event::LidsAssigned {
            from_map: outcome.from_map,
            kept: outcome.kept,
            new: outcome.new,
            changed: outcome.changed,
            max_lid: outcome.max_lid,
        });
        self.plan_partitions(&topo)?;
        let sm_port = PortRef::new(
            NodeId(tnode[self.disc.local() as usize]),
            self.disc.local_port(),
        );
        let input = RoutingInput::new(&topo, &la, Some(sm_port))?;
        self.mcast_keep_input(&input);
        Ok(RoutingJob {
            sweep,
            input,
            engines: self.cfg.engines.clone(),
            options: EngineOptions {
                updn_roots: self.cfg.updn_roots.clone(),
            },
            shards: self.cfg.routing_shards.max(1),
            prev: self.lfts.clone(),
        })
    }

    fn plan_partitions(&mut self, topo: &Topology) -> Result<(), SmError> {
        let mut opts = self.cfg.partition_options;
        opts.sm_port_guid = self.disc.sm_port_guid();
        let policy = match &self.policy_text {
            Some(t) => partitions::load(t, opts)?,
            None => partitions::Policy::no_file(opts),
        };
        let sweep = self.disc.sweep();
        let mut caps = partitions::Caps::default();
        let mut pcap = BTreeMap::new();
        let mut ecap = BTreeMap::new();
        for i in 0..self.disc.nodes().len() as u32 {
            let n = self.disc.node(i);
            if n.seen != sweep {
                continue;
            }
            pcap.insert(n.guid, n.info.partition_cap);
            if n.is_switch {
                let s = self.disc.switch(n.sw);
                ecap.insert(n.guid, s.info.partition_enforcement_cap);
            }
            for p in 0..=n.nports {
                let port = self.disc.port_of_mut(i, p);
                port.pkey_want.clear();
                port.enforce_in = false;
                port.enforce_out = false;
            }
        }
        caps.partition_cap = pcap;
        caps.switch_enforcement_cap = ecap;
        let plan = partitions::plan(&policy, topo, &caps);
        for pp in &plan.ports {
            self.set_pkey_want(pp.port.node_guid, pp.port.port, &pp.table.entries());
        }
        for sp in &plan.switch_ports {
            if let Some(t) = &sp.table {
                self.set_pkey_want(sp.switch_guid, sp.port, &t.entries());
            }
            if let Some(i) = self.disc.find(sp.switch_guid) {
                let n = self.disc.node(i);
                if sp.port <= n.nports {
                    let port = self.disc.port_mut(n.port_index(sp.port));
                    port.enforce_in = sp.enforce_in;
                    port.enforce_out = sp.enforce_out;
                }
            }
        }
        Ok(())
    }

    fn set_pkey_want(&mut self, node: Guid, port: u8, keys: &[PKey]) {
        let Some(i) = self.disc.find(node) else {
            return;
        };
        let n = self.disc.node(i);
        if port > n.nports {
            return;
        }
        let p = self.disc.port_mut(n.port_index(port));
        p.pkey_want.clear();
        p.pkey_want.extend(keys.iter().map(|k| k.0));
        if p.pkey_known.len() != p.pkey_want.len() {
            p.pkey_known_valid = false;
        }
    }

    /// Ungated mode, routing job just handed out: sends now what does not depend on the
    /// routes, so the fabric is busy while the daemon routes — stage 1 (PortInfo fields of
    /// ports not in INIT) and the ARMED Sets of ports still in INIT (links that carry no
    /// traffic: a port transmits data only once ACTIVE, and ACTIVE still comes after the
    /// tables of stage 2). Ports that are already up keep stage 3's order (their partition
    /// enforcement bits change only after their P_KeyTables). The stages planned later find
    /// these ports done (the Set responses updated what is known of them).
    /// Not in a cluster's sweeper (gated, fenced or under a lease): there every Set waits
    /// for its intent and its lease, in stage order.
    pub(crate) fn plan_during_routing(&mut self) {
        if self.cfg.gate_programming || self.fenced || self.lease_until.is_some() {
            return;
        }
        self.plan_stage(1);
        self.plan_arm_init();
    }

    /// ARMED Sets (with fields, for CA ports) of every linked port still in INIT.
    fn plan_arm_init(&mut self) {
        let sweep = self.disc.sweep();
        for i in 0..self.disc.nodes().len() {
            if self.disc.nodes()[i].seen != sweep {
                continue;
            }
            for p in 1..=self.disc.nodes()[i].nports {
                let pi = self.disc.nodes()[i].port_index(p);
                let port = self.disc.port(pi);
                if port.remote_sweep == sweep
                    && port.info.port_state == INIT
                    && !self.during_routing.sent(pi, sweep, ARMED_SET)
                {
                    self.during_routing.mark(pi, sweep, ARMED_SET);
                    self.queue_set(Op::PortInfoSet, i as u32, p, 3);
                }
            }
        }
    }

    /// Accepts the routing result: diffs it against what is programmed and starts stage 1.
    /// While Sets sent during routing are still in flight, the result waits for them
    /// (`advance` brings it back once the window is idle).
    pub(crate) fn start_programming(&mut self, r: RoutingOutcome) {
        if !self.io.idle() {
            self.during_routing.result = Some(Box::new(r));
            return;
        }
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
        for s in self.disc.switches_mut().iter_mut() {
            s.lft_idx = NONE;
        }
        self.lft_todo.clear();
        let mut max_lid = 0u16;
        for (k, t) in r.lfts.switches.iter().enumerate() {
            max_lid = max_lid.max(t.ports.len().saturating_sub(1) as u16);
            let Some(node) = self.disc.find(t.guid) else {
                continue;
            };
            let sw = self.disc.node(node).sw;
            if sw == NONE {
                continue;
            }
            let s = self.disc.switch_mut(sw);
            s.lft_idx = k as u32;
            let prev = if s.lft_valid {
                old_idx
                    .get(&t.guid)
                    .and_then(|&j| old.as_ref().map(|o| &o.switches[j]))
            } else {
                None
            };
            let blocks = t.ports.len().div_ceil(routing::BLOCK_LIDS);
            for b in 0..blocks {
                let lo = b * routing::BLOCK_LIDS;
                let hi = (lo + routing::BLOCK_LIDS).min(t.ports.len());
                let same = prev.is_some_and(|p| {
                    (lo..lo + routing::BLOCK_LIDS).all(|l| {
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
        self.events.push_back(Event::RoutingDone {
            engine: r.engine,
            lft_blocks: self.lft_todo.len(),
            refusals: r.refusals,
        });
        self.lfts = Some(Arc::new(r.lfts));
        drop(old);
        self.plan_pkeys();
        self.plan_mfts();
        if self.start_lft_check() {
            return;
        }
        if self.gate() {
            return;
        }
        self.phase = Phase::Programming(0);
        self.next_stage(0);
    }

    /// Decides the P_KeyTable blocks this sweep writes (`pkey_todo`); what is known of each
    /// port becomes what it is about to hold (a failed Set marks it unknown again).
    fn plan_pkeys(&mut self) {
        let sweep = self.disc.sweep();
        self.pkey_todo.clear();
        self.pkey_assumed.clear();
        for i in 0..self.disc.nodes().len() {
            if self.disc.nodes()[i].seen != sweep {
                continue;
            }
            for p in 0..=self.disc.nodes()[i].nports {
                let pi = self.disc.nodes()[i].port_index(p);
                let port = self.disc.port_mut(pi);
                if port.pkey_want.is_empty() {
                    continue;
                }
                let blocks = port.pkey_want.len().div_ceil(32);
                let assumed = !port.pkey_known_valid && port.fresh && self.cfg.assume_default_pkeys;
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
                        self.pkey_todo.push((i as u32, p, b as u16));
                    } else if assumed {
                        self.pkey_assumed.push((i as u32, p, b as u16));
                    }
                }
            }
        }
    }

    /// Plans stages after `done` until one has work; after stage 5 the sweep completes.
    pub(crate) fn next_stage(&mut self, done: u8) {
        if done == 2 {
            self.after_tables();
        }
        for stage in done + 1..=5 {
            self.phase = Phase::Programming(stage);
            self.plan_stage(stage);
            if !self.io.idle() {
                return;
            }
            if stage == 2 {
                self.after_tables();
            }
        }
        self.finish_programming();
    }

    fn after_tables(&mut self) {
        let top = self.max_lid;
        for s in self.disc.switches_mut().iter_mut() {
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

    fn end_ports_of(&self, i: usize) -> (bool, u8) {
        let n = &self.disc.nodes()[i];
        (n.is_switch, n.nports)
    }

    fn plan_stage(&mut self, stage: u8) {
        let sweep = self.disc.sweep();
        let n_nodes = self.disc.nodes().len();
        match stage {
            1 => {
                for i in 0..n_nodes {
                    if self.disc.nodes()[i].seen != sweep {
                        continue;
                    }
                    let (is_switch, nports) = self.end_ports_of(i);
                    let range = if is_switch { 0..=0 } else { 1..=nports };
                    for p in range {
                        let pi = self.disc.nodes()[i].port_index(p);
                        let port = self.disc.port(pi);
                        if port.lid.0 == 0
                            || (!is_switch && port.remote_sweep != sweep)
                            || self.during_routing.sent(pi, sweep, FIELDS | ARMED_SET)
                        {
                            continue;
                        }
                        // A CA port still in INIT gets its fields with the ARMED Set of
                        // stage 3 (one SMP instead of two); the SM's own port first.
                        let own = i as u32 == self.disc.local() && p == self.disc.local_port();
                        if !is_switch && !own && port.info.port_state == INIT {
                            continue;
                        }
                        let want = self.desired(i as u32, p, 1);
                        if fields_differ(&port.info, &want) {
                            if self.phase == Phase::Routing {
                                self.during_routing.mark(pi, sweep, FIELDS);
                            }
                            self.queue_set(Op::PortInfoSet, i as u32, p, 1);
                        }
                    }
                }
            }
            2 => {
                let todo = std::mem::take(&mut self.lft_todo);
                for &(node, b) in &todo {
                    self.queue_set(Op::LftSet, node, 0, b);
                }
                self.stage_counts[0] += todo.len() as u64;
                self.lft_todo = todo;
                let mft_tops = self.mft_tops();
                for k in 0..self.disc.switches().len() {
                    let s = &self.disc.switches()[k];
                    let node = s.node;
                    if self.disc.node(node).seen != sweep {
                        continue;
                    }
                    let mft_top = mft_tops.get(&node).copied();
                    let top = s.lft_idx != NONE && s.info.linear_fdb_top != self.max_lid
                        || mft_top.is_some_and(|t| t != s.info.multicast_fdb_top);
                    let psc_seen = s.psc_seen;
                    self.disc.switches_mut()[k].mft_top_want = mft_top;
                    // One SwitchInfo Set writes LinearFDBTop (and MulticastFDBTop where the
                    // switch supports it and the groups are known) and clears PortStateChange
                    // (stage 5 then has nothing left for this switch). Clearing here rather
                    // than after ACTIVE loses no change: our ARMED/ACTIVE Sets do not set
                    // the bit (IBA: only transitions from or to Down do), a link that
                    // changes later sets it again.
                    if psc_seen {
                        self.disc.switches_mut()[k].psc_seen = false;
                        self.queue_set(Op::SwitchInfoSet, node, 0, 1);
                    } else if top {
                        self.queue_set(Op::SwitchInfoSet, node, 0, 0);
                    }
                }
                let todo = std::mem::take(&mut self.pkey_todo);
                for &(node, p, b) in &todo {
                    self.stage_counts[1] += 1;
                    self.queue_set(Op::PKeySet, node, p, b);
                }
                self.pkey_todo = todo;
                self.queue_mfts();
            }
            3 | 4 => {
                for i in 0..n_nodes {
                    if self.disc.nodes()[i].seen != sweep {
                        continue;
                    }
                    let (is_switch, nports) = self.end_ports_of(i);
                    for p in 1..=nports {
                        let pi = self.disc.nodes()[i].port_index(p);
                        let port = self.disc.port(pi);
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
                            self.queue_set(Op::PortInfoSet, i as u32, p, u16::from(stage));
                        }
                    }
                }
            }
            5 => {
                for k in 0..self.disc.switches().len() {
                    let s = &self.disc.switches()[k];
                    if self.disc.node(s.node).seen == sweep && s.psc_seen {
                        self.queue_set(Op::SwitchInfoSet, s.node, 0, 1);
                    }
                }
            }
            _ => {}
        }
    }

    fn queue_set(&mut self, op: Op, node: u32, port: u8, arg: u16) {
        self.planned_sets += 1;
        match op {
            Op::PortInfoSet => self.stage_counts[2] += 1,
            Op::SwitchInfoSet => self.stage_counts[3] += 1,
            _ => {}
        }
        self.push(op, node, port, arg);
    }

    fn finish_programming(&mut self) {
        let [lft, pkey, port_sets, switch_sets] = self.stage_counts;
        self.events.push_back(Event::ProgrammingDone {
            lft_blocks: lft,
            pkey_blocks: pkey,
            port_sets,
            switch_sets,
            failed: self.failed_sets,
        });
        self.intent_finished();
        let sweep = self.disc.sweep();
        let mut inactive = 0usize;
        for n in self.disc.nodes().iter().filter(|n| n.seen == sweep) {
            for p in 1..=n.nports {
                let port = self.disc.port(n.port_index(p));
                if port.remote_sweep == sweep && port.info.port_state != ACTIVE {
                    inactive += 1;
                }
            }
        }
        let ln = self.disc.node(self.disc.local());
        let sm = self.disc.port(ln.port_index(self.disc.local_port()));
        let clean = self.failed_sets == 0 && inactive == 0 && !self.dirty;
        let lid_ok = clean && sm.lid.0 != 0 && sm.info.lid == sm.lid;
        self.io.set_lid_ok(lid_ok);
        self.io.set_all_active(clean);
        if !self.subnet_up && clean {
            self.subnet_up = true;
            self.state = mad::SmState::Master;
            self.events.push_back(Event::SubnetUp {
                at: self.now,
                counters: self.io.counters().since(&self.sweep_start),
            });
        }
        if !clean {
            // Something did not take or was not reached: look again at the next interval.
            self.dirty = true;
        }
        self.finish_heavy();
    }

    /// The PortInfo this SM wants a port to hold at a stage.
    pub(crate) fn desired(&self, node: u32, port: u8, stage: u8) -> PortInfo {
        let n = self.disc.node(node);
        let p = self.disc.port(n.port_index(port));
        let mut pi = p.info;
        pi.port_state = 0;
        pi.port_phys_state = 0;
        pi.link_down_default_state = 0;
        pi.client_reregister = false;
        let end = !n.is_switch || port == 0;
        if end && p.lid.0 != 0 {
            pi.lid = p.lid;
            pi.lmc = p.lmc;
            pi.master_sm_lid = self.sm_lid;
            pi.gid_prefix = self.cfg.subnet_prefix;
            pi.m_key = self.cfg.m_key;
            pi.m_key_protect_bits = self.cfg.m_key_protect_bits;
            pi.m_key_lease_period = if p.lease_not_held {
                p.info.m_key_lease_period
            } else {
                self.cfg.m_key_lease_period
            };
            let rereg_cap =
                p.info.capability_mask & PortInfo::CAP_IS_CLIENT_REREGISTRATION_SUPPORTED != 0;
            // ClientReregister where the port is new to this SM or its LID changes, with the
            // Set that writes its fields (stage 1, or stage 3 for a port still in INIT).
            let writes_fields = stage == 1 || (stage == 3 && p.info.port_state == INIT);
            let new_to_us = !p.programmed && self.cfg.reregister_on_takeover;
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

    /// Writes the data of a Set request; None when it no longer makes sense.
    pub(crate) fn fill_set(&self, req: &Req, data: &mut [u8; 64]) -> Option<()> {
        let n = self.disc.node(req.node);
        match req.op {
            Op::LftSet => {
                let s = self.disc.switch(n.sw);
                let t = &self.lfts.as_ref()?.switches[s.lft_idx as usize];
                let mut lft = LinearForwardingTable::default();
                let lo = (usize::from(req.arg) * 64).min(t.ports.len());
                let hi = (lo + 64).min(t.ports.len());
                lft.ports[..hi - lo].copy_from_slice(&t.ports[lo..hi]);
                lft.ports[hi - lo..].fill(NO_ROUTE);
                lft.encode(data);
            }
            Op::PKeySet => {
                let p = self.disc.port(n.port_index(req.port));
                let mut t = mad::PKeyTable::default();
                let lo = usize::from(req.arg) * 32;
                for (k, e) in t.keys.iter_mut().enumerate() {
                    *e = PKey(p.pkey_want.get(lo + k).copied().unwrap_or(0));
                }
                t.encode(data);
            }
            Op::PortInfoSet => {
                self.desired(req.node, req.port, req.arg as u8).encode(data);
            }
            Op::RekeySet => self.rekey_info(req.node, req.port).encode(data),
            Op::MftSet => self.fill_mft(req, data)?,
            Op::SwitchInfoSet => {
                let s = self.disc.switch(n.sw);
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

    pub(crate) fn on_set_done(&mut self, req: Req, smp: &Smp) {
        let n = self.disc.node(req.node);
        match req.op {
            Op::PortInfoSet | Op::RekeySet => {
                let info = PortInfo::decode(&smp.data);
                self.note_key(&req, &info);
                let n = self.disc.node(req.node);
                let pi = n.port_index(req.port);
                let is_switch = n.is_switch;
                let lease = self.cfg.m_key_lease_period;
                let node_guid = n.guid;
                let p = self.disc.port_mut(pi);
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
                for (field, wrote, holds) in not_held {
                    self.events.push_back(Event::FieldNotHeld {
                        node: node_guid,
                        port: req.port,
                        field,
                        wrote,
                        holds,
                    });
                }
                p.programmed = true;
            }
            Op::SwitchInfoSet => {
                let s = self.disc.switch_mut(n.sw);
                s.info = SwitchInfo::decode(&smp.data);
                s.fdb_top = self.max_lid;
            }
            Op::MftSet => self.mft_done(&req),
            _ => {}
        }
    }

    pub(crate) fn on_set_failed(&mut self, req: Req) {
        self.failed_sets += 1;
        let n = self.disc.node(req.node);
        let (guid, sw) = (n.guid, n.sw);
        match req.op {
            Op::LftSet => {
                let s = self.disc.switch_mut(sw);
                s.lft_failed = true;
                s.lft_valid = false;
            }
            Op::PKeySet => {
                self.disc.port_of_mut(req.node, req.port).pkey_known_valid = false;
                self.failed_ports.push((guid, req.port));
            }
            Op::PortInfoSet | Op::RekeySet => self.failed_ports.push((guid, req.port)),
            Op::MftSet => self.mft_failed(&req),
            _ => {}
        }
    }
}

pub(crate) fn fields_differ(have: &PortInfo, want: &PortInfo) -> bool {
    have.lid != want.lid
        || have.lmc != want.lmc
        || have.master_sm_lid != want.master_sm_lid
        || have.gid_prefix != want.gid_prefix
        || have.m_key != want.m_key
        || have.m_key_protect_bits != want.m_key_protect_bits
        || have.m_key_lease_period != want.m_key_lease_period
        || want.client_reregister
}
