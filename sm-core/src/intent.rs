//! Intent-first programming (a Raft cluster's master): what a heavy sweep is about to write
//! is handed to the driver as an [`Intent`] before any Set goes out, and a previous
//! master's unfinished intent is re-programmed first.
//!
//! * Gated (`SweeperConfig::gate_programming`): once routing is diffed, the LFT blocks,
//!   P_KeyTable blocks and PortInfo field changes of the sweep form an [`Intent`]
//!   ([`IntentEvent::Program`]); the sweeper waits in [`crate::Phase::AwaitIntent`] until
//!   [`crate::Sweeper::handle_intent_committed`], programs, and emits [`IntentEvent::Done`]
//!   when every Set of the sweep was answered or given up (the failed targets listed).
//!   A sweep with nothing for an intent (no LFT/P_Key block, no PortInfo field change)
//!   emits none and is not gated: a quiet sweep costs no Raft entry. Port state changes
//!   (ARMED, ACTIVE), SwitchInfo LinearFDBTop and PortStateChange clears are not intents
//!   (they are not replicated state); like every Set they obey fencing.
//! * Re-apply (`SweeperConfig::pending_intent`): after the first discovery (and the M_Key
//!   rotation, see `keys`), exactly the intent's LFT and P_Key blocks are written again
//!   (their PortInfo changes are not: the sweep that follows writes every field that
//!   differs, with this master's LIDs, MasterSMLID and M_Key), then
//!   [`IntentEvent::Done`] with the intent's id, then LIDs and routing.

use crate::VTime;
use crate::io::Op;
use crate::state::NONE;
use crate::sweeper::{Phase, Sweeper};
use fabric::{Guid, Lid};
use routing::{BLOCK_LIDS, Lfts, NO_ROUTE, SwitchLft};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// One 64-entry LinearForwardingTable block to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LftBlockWrite {
    /// Switch node GUID.
    pub switch: Guid,
    /// Block number (LIDs `block*64 .. block*64+63`).
    pub block: u16,
    /// Egress port per LID (255 = no route).
    pub ports: [u8; 64],
}

/// One 32-entry P_KeyTable block to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PKeyBlockWrite {
    /// Node GUID.
    pub node: Guid,
    /// Port number (0 for a switch's management port).
    pub port: u8,
    /// Block number (indices `block*32 .. block*32+31`).
    pub block: u16,
    /// P_Keys (membership bit included).
    pub keys: [u16; 32],
    /// The port is taken to hold this block already (a port never configured since reset
    /// holds the IBA default table): recorded as programmed but not written by this sweep.
    /// A re-apply writes it like any other block.
    pub assumed: bool,
}

/// PortInfo fields a sweep writes to an end port (switch port 0, CA port).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortChange {
    /// Node GUID.
    pub node: Guid,
    /// Port number.
    pub port: u8,
    /// Port GUID (what guid2lid is keyed by).
    pub port_guid: Guid,
    /// Base LID.
    pub lid: Lid,
    /// LMC.
    pub lmc: u8,
    /// MasterSMLID.
    pub master_sm_lid: Lid,
    /// M_Key.
    pub m_key: u64,
    /// M_KeyProtectBits.
    pub m_key_protect_bits: u8,
    /// M_KeyLeasePeriod.
    pub m_key_lease_period: u16,
    /// GID prefix.
    pub subnet_prefix: u64,
}

/// What a heavy sweep is about to program (or what a previous master did not finish).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Intent {
    /// Unique id (`SweeperConfig::intent_id_base` + counter).
    pub id: u64,
    /// LFT blocks.
    pub lft_blocks: Vec<LftBlockWrite>,
    /// P_KeyTable blocks.
    pub pkey_blocks: Vec<PKeyBlockWrite>,
    /// PortInfo field changes.
    pub port_changes: Vec<PortChange>,
    /// MulticastForwardingTable blocks.
    pub mft_blocks: Vec<crate::MftBlockWrite>,
}

impl Intent {
    /// True when there is nothing in it.
    pub fn is_empty(&self) -> bool {
        self.lft_blocks.is_empty()
            && self.pkey_blocks.is_empty()
            && self.port_changes.is_empty()
            && self.mft_blocks.is_empty()
    }
}

/// What the driver must commit (read with [`crate::Sweeper::poll_intent`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IntentEvent {
    /// Commit this intent, then call [`crate::Sweeper::handle_intent_committed`] (or
    /// [`crate::Sweeper::handle_intent_rejected`] if it could not be committed).
    Program(Intent),
    /// Every Set of intent `id` was answered or given up: commit IntentDone.
    Done {
        /// The intent.
        id: u64,
        /// Switches an LFT Set of the intent failed on.
        failed_switches: Vec<Guid>,
        /// Ports (node GUID, port) a P_Key or PortInfo Set failed on.
        failed_ports: Vec<(Guid, u8)>,
        /// LFT blocks written.
        lft_blocks: u64,
        /// P_Key blocks written.
        pkey_blocks: u64,
    },
}

impl Sweeper {
    /// Gated mode, routing diffed: builds the sweep's intent. Returns true when the sweep
    /// now waits for it to be committed.
    pub(crate) fn gate(&mut self) -> bool {
        if !self.cfg.gate_programming {
            return false;
        }
        let mut it = Intent::default();
        if let Some(l) = self.lfts.clone() {
            for &(node, b) in &self.lft_todo {
                let n = self.disc.node(node);
                let s = self.disc.switch(n.sw);
                let Some(t) = l.switches.get(s.lft_idx as usize) else {
                    continue;
                };
                let mut ports = [NO_ROUTE; 64];
                let lo = (usize::from(b) * BLOCK_LIDS).min(t.ports.len());
                let hi = (lo + BLOCK_LIDS).min(t.ports.len());
                ports[..hi - lo].copy_from_slice(&t.ports[lo..hi]);
                it.lft_blocks.push(LftBlockWrite {
                    switch: n.guid,
                    block: b,
                    ports,
                });
            }
        }
        let todo = self.pkey_todo.iter().map(|&x| (x, false));
        let assumed = self.pkey_assumed.iter().map(|&x| (x, true));
        for ((node, port, b), assumed) in todo.chain(assumed) {
            let n = self.disc.node(node);
            let p = self.disc.port(n.port_index(port));
            let mut keys = [0u16; 32];
            let lo = usize::from(b) * 32;
            for (k, e) in keys.iter_mut().enumerate() {
                *e = p.pkey_want.get(lo + k).copied().unwrap_or(0);
            }
            it.pkey_blocks.push(PKeyBlockWrite {
                node: n.guid,
                port,
                block: b,
                keys,
                assumed,
            });
        }
        it.port_changes = self.planned_port_changes();
        it.mft_blocks = self.mft_intent_blocks();
        if it.is_empty() {
            return false;
        }
        self.intent_seq += 1;
        it.id = self.cfg.intent_id_base.wrapping_add(self.intent_seq);
        self.awaiting_intent = Some(it.id);
        self.phase = Phase::AwaitIntent;
        self.intent_events.push_back(IntentEvent::Program(it));
        true
    }

    /// The driver committed intent `id`: programming starts.
    pub fn handle_intent_committed(&mut self, now: VTime, id: u64) {
        self.now = self.now.max(now);
        if self.phase != Phase::AwaitIntent || self.awaiting_intent != Some(id) {
            return;
        }
        if self.mcast_intent_committed(id) {
            self.advance();
            return;
        }
        self.awaiting_intent = None;
        self.current_intent = Some(id);
        self.phase = Phase::Programming(0);
        self.next_stage(0);
        self.advance();
    }

    /// The driver could not commit intent `id` (lost leadership, proposal dropped): nothing
    /// of it is written, what it would have changed is marked unknown, and the sweep ends
    /// (a heavy sweep follows at the next interval).
    pub fn handle_intent_rejected(&mut self, now: VTime, id: u64) {
        self.now = self.now.max(now);
        if self.phase != Phase::AwaitIntent || self.awaiting_intent != Some(id) {
            return;
        }
        if self.mcast_intent_rejected(id) {
            self.advance();
            return;
        }
        self.awaiting_intent = None;
        self.forget_planned();
        self.finish_heavy();
        self.advance();
    }

    /// What this sweep planned to write is not known to be written: its switches' tables
    /// and its ports' P_KeyTables become unknown, and the sweep counts as not clean.
    pub(crate) fn forget_planned(&mut self) {
        for &(node, _) in &self.lft_todo {
            let sw = self.disc.node(node).sw;
            if sw != NONE {
                self.disc.switch_mut(sw).lft_valid = false;
                self.disc.switch_mut(sw).lft_failed = true;
            }
        }
        for &(node, port, _) in &self.pkey_todo {
            let i = self.disc.node(node).port_index(port);
            self.disc.port_mut(i).pkey_known_valid = false;
        }
        self.mcast_forget_planned();
        self.dirty = true;
    }

    /// The next intent event for the driver to commit.
    pub fn poll_intent(&mut self) -> Option<IntentEvent> {
        self.intent_events.pop_front()
    }

    /// PortInfo field changes stage 1 (and stage 3, for CA ports still in INIT) will write.
    fn planned_port_changes(&self) -> Vec<PortChange> {
        let sweep = self.disc.sweep();
        let mut v = Vec::new();
        for (i, p, n, port) in self.disc.end_ports_seen() {
            if port.lid.0 == 0 || (!n.is_switch && port.remote_sweep != sweep) {
                continue;
            }
            let want = self.desired(i, p, 1);
            if crate::program::fields_differ(&port.info, &want) {
                v.push(PortChange {
                    node: n.guid,
                    port: p,
                    port_guid: port.guid,
                    lid: want.lid,
                    lmc: want.lmc,
                    master_sm_lid: want.master_sm_lid,
                    m_key: want.m_key,
                    m_key_protect_bits: want.m_key_protect_bits,
                    m_key_lease_period: want.m_key_lease_period,
                    subnet_prefix: want.gid_prefix,
                });
            }
        }
        v
    }

    /// At the end of programming: IntentDone for the sweep's intent.
    pub(crate) fn intent_finished(&mut self) {
        let Some(id) = self.current_intent.take() else {
            return;
        };
        let ev = self.done_event(
            id,
            self.stage_counts[0],
            self.stage_counts[1],
            Default::default(),
        );
        self.intent_events.push_back(ev);
    }

    fn done_event(
        &mut self,
        id: u64,
        lft_blocks: u64,
        pkey_blocks: u64,
        unreached: (Vec<Guid>, Vec<(Guid, u8)>),
    ) -> IntentEvent {
        let (mut failed_switches, mut failed_ports) = unreached;
        failed_switches.extend(
            self.disc
                .switches()
                .iter()
                .filter(|s| s.lft_failed)
                .map(|s| self.disc.node(s.node).guid),
        );
        failed_switches.extend(self.mcast_failed_switches());
        failed_switches.sort_unstable();
        failed_switches.dedup();
        failed_ports.append(&mut self.failed_ports);
        failed_ports.sort_unstable();
        failed_ports.dedup();
        // The replicated state drops what it knows of every failed switch (LFT, MFT) and
        // port (P_KeyTable, PortInfo) when this is committed: forget the same here, so the
        // next sweep writes them again and the record comes back. Otherwise this sweeper
        // believes a table programmed that the replicated state (and the next master) no
        // longer records, and never rewrites it.
        for g in &failed_switches {
            if let Some(i) = self.disc.find(*g) {
                let sw = self.disc.node(i).sw;
                if sw != crate::state::NONE {
                    self.disc.switch_mut(sw).lft_valid = false;
                }
            }
        }
        for (g, p) in &failed_ports {
            if let Some(i) = self.disc.find(*g) {
                let n = self.disc.node(i);
                if *p <= n.nports {
                    self.disc.port_mut(n.port_index(*p)).pkey_known_valid = false;
                }
            }
        }
        IntentEvent::Done {
            id,
            failed_switches,
            failed_ports,
            lft_blocks,
            pkey_blocks,
        }
    }

    /// Re-programs the pending intent (after the first discovery). Returns false when there
    /// is none.
    pub(crate) fn start_reapply(&mut self) -> bool {
        let Some(it) = self.cfg.pending_intent.take() else {
            return false;
        };
        self.phase = Phase::Reapply;
        self.reapply_id = Some(it.id);
        let sweep = self.disc.sweep();
        // LFT: the known tables with the intent's blocks laid over them.
        let mut tables: BTreeMap<Guid, SwitchLft> = self
            .lfts
            .as_ref()
            .map(|l| l.switches.iter().map(|s| (s.guid, s.clone())).collect())
            .unwrap_or_default();
        let mut had: HashMap<Guid, bool> = HashMap::new();
        let mut covered: HashMap<Guid, Vec<bool>> = HashMap::new();
        for w in &it.lft_blocks {
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
        for (g, s) in self.disc.switches_by_guid_mut() {
            s.lft_idx = idx.get(&g).map_or(NONE, |&k| k as u32);
            if let (Some(&h), Some(c)) = (had.get(&g), covered.get(&g)) {
                // Valid afterwards: it was known valid, or the intent alone covers it.
                s.lft_valid = (h && s.lft_valid) || (!h && c.iter().all(|&x| x));
            }
        }
        self.lfts = Some(Arc::new(lfts));
        for w in &it.lft_blocks {
            match self.disc.find(w.switch) {
                Some(node)
                    if self.disc.node(node).seen == sweep && self.disc.node(node).sw != NONE =>
                {
                    self.reapplied[0] += 1;
                    self.queue_reapply(Op::LftSet, node, 0, w.block);
                }
                _ => {
                    if let Some(node) = self.disc.find(w.switch) {
                        let sw = self.disc.node(node).sw;
                        if sw != NONE {
                            self.disc.switch_mut(sw).lft_failed = true;
                            self.disc.switch_mut(sw).lft_valid = false;
                        }
                    }
                    self.reapply_unreached.0.push(w.switch);
                }
            }
        }
        // P_Keys: the intent's blocks laid over what is known of each port.
        let mut pcov: HashMap<(Guid, u8), (bool, Vec<bool>)> = HashMap::new();
        for w in &it.pkey_blocks {
            let Some(node) = self
                .disc
                .find(w.node)
                .filter(|&n| self.disc.node(n).seen == sweep)
                .filter(|&n| w.port <= self.disc.node(n).nports)
            else {
                self.reapply_unreached.1.push((w.node, w.port));
                continue;
            };
            let pi = self.disc.node(node).port_index(w.port);
            let p = self.disc.port_mut(pi);
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
            self.reapplied[1] += 1;
            self.queue_reapply(Op::PKeySet, node, w.port, w.block);
        }
        let unreached = self.mcast_reapply(&it.mft_blocks);
        self.reapply_unreached.0.extend(unreached);
        true
    }

    fn queue_reapply(&mut self, op: Op, node: u32, port: u8, arg: u16) {
        self.planned_sets += 1;
        self.push(op, node, port, arg);
    }

    /// Every re-applied Set answered or given up: IntentDone for the pending intent.
    pub(crate) fn finish_reapply(&mut self) {
        let Some(id) = self.reapply_id.take() else {
            return;
        };
        let [l, p] = self.reapplied;
        let unreached = std::mem::take(&mut self.reapply_unreached);
        let ev = self.done_event(id, l, p, unreached);
        self.intent_events.push_back(ev);
    }
}
