//! Multicast forwarding tables: the groups the SA hands over ([`Sweeper::set_multicast`])
//! become one spanning tree per group ([`routing::mcast`]), merged into per-switch
//! MulticastForwardingTables; these are diffed per MFT block (32 MLIDs x 16 ports: one
//! position) against what the switches are known to hold, and only changed blocks are
//! written, through the same window as every other Set.
//!
//! * Until `set_multicast` is first called the sweeper leaves MFTs alone (a new master
//!   that has not been told the groups yet rewrites nothing).
//! * What switches hold: blocks written by this sweeper, or seeded on takeover
//!   ([`crate::SweeperConfig::known_mfts`], from the replicated state). A block not known is
//!   taken to be all zero (a switch's power-up table). A switch whose LFT is found lost
//!   (rebooted: LinearFDBTop changed) or that was not reached loses what is known of its
//!   MFT too, and a failed Set makes its block unknown, so both are written again.
//! * Every heavy sweep recomputes the trees on the fabric it discovered and programs the
//!   changed blocks in stage 2 with the LFTs (in gated mode, as part of the sweep's intent).
//!   Between heavy sweeps, a `set_multicast` that changes the tables runs its own short
//!   programming pass ([`crate::Phase::Multicast`]); in gated mode it is an intent of its
//!   own (MFT blocks only), committed first. A pass that changes nothing sends nothing and
//!   costs no intent.
//! * A switch whose port 0 sets IsMulticastFDBTopSupported ignores MFT entries above
//!   SwitchInfo.MulticastFDBTop. Once the groups are known, the sweeper keeps it at the last
//!   MLID of the highest block with a non-zero entry (0xBFFF, "no entry", when there is
//!   none), as OpenSM does: the SwitchInfo Set of the same stage as the MFT blocks writes it
//!   ([`Sweeper::mft_tops`]). Other switches' MulticastFDBTop is written back as read.

use crate::VTime;
use crate::intent::IntentEvent;
use crate::io::{Op, Req};
use crate::sweeper::{Phase, Sweeper};
use fabric::{Guid, Lid};
use mad::{MulticastForwardingTable, PortInfo, SmpAttribute};
use routing::RoutingInput;
use routing::mcast::{self, McastGraph, Mfts, PortMask};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

pub use routing::mcast::McastGroup;

/// First multicast LID (IBA 4.1).
const MLID_FIRST: u16 = 0xC000;
/// MulticastFDBTop meaning "no MFT entry valid" (the MLID before the first).
pub const NO_MFT_ENTRY: u16 = 0xBFFF;

/// MFT blocks by switch GUID, then (position, block): the 32 port masks of that block
/// (entry i for MLID 0xC000 + 32 block + i, bit j for port 16 position + j). Blocks absent
/// are all zero.
pub type MftTables = BTreeMap<Guid, BTreeMap<(u8, u16), [u16; 32]>>;

/// One MulticastForwardingTable block to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MftBlockWrite {
    /// Switch node GUID.
    pub switch: Guid,
    /// Position (ports 16 position .. 16 position + 15).
    pub position: u8,
    /// Block (MLIDs 0xC000 + 32 block ..).
    pub block: u16,
    /// The 32 port masks.
    pub masks: [u16; 32],
}

/// The sweeper's multicast state.
#[derive(Debug, Default)]
pub(crate) struct McastState {
    /// The groups (None: never told; MFTs are left alone).
    groups: Option<Vec<McastGroup>>,
    /// Blocks the switches are known to hold (non-zero ones; absent = zero).
    known: MftTables,
    /// Blocks whose content is unknown (a Set failed): always written.
    unknown: BTreeSet<(Guid, u8, u16)>,
    /// The switch graph of the last routed heavy sweep.
    input: Option<Arc<RoutingInput>>,
    /// Blocks being written (node index, position, block) -> masks.
    writing: HashMap<(u32, u8, u16), [u16; 32]>,
    /// The writes planned by the current pass (for the intent).
    planned: Vec<MftBlockWrite>,
    /// The groups changed since the tables were last planned.
    dirty: bool,
    /// A standalone pass waits for this intent.
    pass_intent: Option<u64>,
    /// Switches an MFT Set failed on in the current pass or sweep.
    failed_switches: Vec<Guid>,
}

impl McastState {
    pub(crate) fn new(known: Option<&MftTables>) -> McastState {
        McastState {
            known: known.cloned().unwrap_or_default(),
            ..McastState::default()
        }
    }
}

impl Sweeper {
    /// Hands over the multicast groups (every group with its MLID and member port GUIDs;
    /// the whole set each time: a group absent from it is removed). The tables are
    /// recomputed and the changed blocks written at once when the sweeper is idle and has
    /// routed the fabric, otherwise as soon as the running sweep ends (a heavy sweep that
    /// has not planned its programming yet takes them into its own).
    pub fn set_multicast(&mut self, now: VTime, groups: Vec<McastGroup>) {
        self.now = self.now.max(now);
        let mut g = groups;
        g.sort_by_key(|x| x.mlid);
        if self.mcast.groups.as_ref() == Some(&g) {
            return;
        }
        self.mcast.groups = Some(g);
        self.mcast.dirty = true;
        if self.phase == Phase::Idle {
            self.start_mcast_pass();
            self.advance();
        }
    }

    /// The MFTs the switches are known to hold, by switch GUID and (position, block):
    /// what a replicated state keeps for a takeover ([`crate::SweeperConfig::known_mfts`]).
    pub fn mft_tables(&self) -> &MftTables {
        &self.mcast.known
    }

    /// The multicast groups last handed over (None: never).
    pub fn multicast_groups(&self) -> Option<&[McastGroup]> {
        self.mcast.groups.as_deref()
    }

    /// Keeps the switch graph of this heavy sweep for the trees (called when the routing
    /// job is built).
    pub(crate) fn mcast_keep_input(&mut self, input: &RoutingInput) {
        self.mcast.input = Some(Arc::new(input.clone()));
    }

    /// Plans the MFT writes of a heavy sweep (after routing, before the intent): switches
    /// whose LFT is not known valid lose what is known of their MFT.
    pub(crate) fn plan_mfts(&mut self) {
        self.mcast.writing.clear();
        self.mcast.planned.clear();
        self.mcast.failed_switches.clear();
        let lost: Vec<Guid> = self
            .disc
            .switches()
            .iter()
            .filter(|s| !s.lft_valid)
            .map(|s| self.disc.node(s.node).guid)
            .collect();
        for g in lost {
            if let Some(t) = self.mcast.known.remove(&g) {
                for (pos, block) in t.into_keys() {
                    self.mcast.unknown.insert((g, pos, block));
                }
            }
        }
        if self.mcast.groups.is_some() {
            self.plan_mft_writes();
        }
    }

    /// Diffs the wanted tables against the known ones into `planned` / `writing`.
    fn plan_mft_writes(&mut self) {
        self.mcast.dirty = false;
        let (Some(groups), Some(input)) = (&self.mcast.groups, &self.mcast.input) else {
            return;
        };
        let want: Mfts = McastGraph::new(input).tables(groups);
        let sweep = self.disc.sweep();
        // Every (switch, position, block) wanted non-zero, known non-zero or unknown.
        let mut keys: BTreeSet<(Guid, u8, u16)> = BTreeSet::new();
        for (&sw, t) in &want {
            for (&mlid, m) in t {
                for (pos, &v) in m.0.iter().enumerate() {
                    if v != 0 {
                        keys.insert((sw, pos as u8, mcast::mft_block(mlid)));
                    }
                }
            }
        }
        for (&sw, t) in &self.mcast.known {
            for &(pos, block) in t.keys() {
                keys.insert((sw, pos, block));
            }
        }
        keys.extend(self.mcast.unknown.iter().copied());
        let empty = BTreeMap::new();
        let mut writes = Vec::new();
        for (sw, pos, block) in keys {
            let Some(node) = self.disc.find(sw) else {
                continue;
            };
            let n = self.disc.node(node);
            if n.seen != sweep || !n.is_switch || usize::from(pos) * 16 > usize::from(n.nports) {
                continue;
            }
            let masks = mcast::block_masks(want.get(&sw).unwrap_or(&empty), pos, block);
            let have = self
                .mcast
                .known
                .get(&sw)
                .and_then(|t| t.get(&(pos, block)))
                .copied()
                .unwrap_or([0; 32]);
            if have != masks || self.mcast.unknown.contains(&(sw, pos, block)) {
                writes.push((
                    node,
                    MftBlockWrite {
                        switch: sw,
                        position: pos,
                        block,
                        masks,
                    },
                ));
            }
        }
        for (node, w) in writes {
            self.mcast
                .writing
                .insert((node, w.position, w.block), w.masks);
            self.mcast.planned.push(w);
        }
    }

    /// The MFT blocks planned for the intent being built.
    pub(crate) fn mft_intent_blocks(&self) -> Vec<MftBlockWrite> {
        self.mcast.planned.clone()
    }

    /// Queues the planned MFT Sets (stage 2 of a heavy sweep, or a standalone pass).
    pub(crate) fn queue_mfts(&mut self) {
        let mut todo: Vec<(u32, u8, u16)> = self.mcast.writing.keys().copied().collect();
        todo.sort_unstable();
        for (node, pos, block) in todo {
            self.prog.count_planned();
            self.push(Op::MftSet, node, pos, block);
        }
    }

    /// Starts a standalone pass when the groups changed and the fabric was routed.
    pub(crate) fn start_mcast_pass(&mut self) {
        if !self.mcast.dirty || self.mcast.input.is_none() || self.phase != Phase::Idle {
            return;
        }
        self.mcast.writing.clear();
        self.mcast.planned.clear();
        self.mcast.failed_switches.clear();
        self.plan_mft_writes();
        if self.mcast.planned.is_empty() {
            return;
        }
        if self.cfg.gate_programming {
            let id = self.intent.next_id(self.cfg.intent_id_base);
            let it = crate::Intent {
                id,
                mft_blocks: self.mcast.planned.clone(),
                ..Default::default()
            };
            self.mcast.pass_intent = Some(id);
            self.phase = Phase::AwaitIntent;
            self.intent.propose(it);
            return;
        }
        self.run_mcast_pass();
    }

    fn run_mcast_pass(&mut self) {
        self.phase = Phase::Multicast;
        self.queue_mfts();
        let mut tops: Vec<(u32, u16)> = self.mft_tops().into_iter().collect();
        tops.sort_unstable();
        for (node, top) in tops {
            let sw = self.disc.node(node).sw as usize;
            if self.disc.switches()[sw].info.multicast_fdb_top != top {
                self.disc.switches_mut()[sw].mft_top_want = Some(top);
                self.prog.count_planned();
                self.push(Op::SwitchInfoSet, node, 0, 0);
            }
        }
    }

    /// MulticastFDBTop wanted by every switch of this sweep that supports it (port 0
    /// CapabilityMask IsMulticastFDBTopSupported), by node index, with the blocks being
    /// written counted as written. Empty until the groups are known (MFTs left alone).
    pub(crate) fn mft_tops(&self) -> HashMap<u32, u16> {
        let mut tops = HashMap::new();
        if self.mcast.groups.is_none() {
            return tops;
        }
        // Highest block with a non-zero entry, per node: what is known, minus blocks being
        // zeroed, plus blocks being written non-zero.
        let mut highest: HashMap<u32, u16> = HashMap::new();
        for (&(node, _pos, block), masks) in &self.mcast.writing {
            if *masks != [0; 32] {
                let h = highest.entry(node).or_insert(block);
                *h = (*h).max(block);
            }
        }
        let sweep = self.disc.sweep();
        for s in self.disc.switches() {
            let n = self.disc.node(s.node);
            if n.seen != sweep {
                continue;
            }
            let p0 = self.disc.port(n.port_index(0));
            if p0.info.capability_mask & PortInfo::CAP_IS_MULTICAST_FDB_TOP_SUPPORTED == 0 {
                continue;
            }
            let known = self.mcast.known.get(&n.guid).and_then(|t| {
                t.keys()
                    .filter(|&&(pos, block)| {
                        self.mcast
                            .writing
                            .get(&(s.node, pos, block))
                            .is_none_or(|m| *m != [0; 32])
                    })
                    .map(|&(_, block)| block)
                    .max()
            });
            let top = match (known, highest.get(&s.node).copied()) {
                (None, None) => NO_MFT_ENTRY,
                (a, b) => {
                    let block = u32::from(a.max(b).unwrap_or(0));
                    let last = u32::from(MLID_FIRST) + (block + 1) * 32 - 1;
                    u16::try_from(last).unwrap_or(u16::MAX)
                }
            };
            tops.insert(s.node, top);
        }
        tops
    }

    /// The driver committed intent `id`: true when it was a standalone multicast pass
    /// (now programming).
    pub(crate) fn mcast_intent_committed(&mut self, id: u64) -> bool {
        if self.mcast.pass_intent != Some(id) {
            return false;
        }
        self.intent.committed(id);
        self.mcast.pass_intent = None;
        self.run_mcast_pass();
        true
    }

    /// The driver could not commit intent `id`: true when it was a standalone multicast
    /// pass (dropped; the groups stay to be planned again).
    pub(crate) fn mcast_intent_rejected(&mut self, id: u64) -> bool {
        if self.mcast.pass_intent != Some(id) {
            return false;
        }
        self.intent.rejected();
        self.mcast.pass_intent = None;
        self.mcast.writing.clear();
        self.mcast.planned.clear();
        self.mcast.dirty = true;
        self.phase = Phase::Idle;
        true
    }

    /// Every Set of a standalone pass answered or given up.
    pub(crate) fn finish_mcast_pass(&mut self) {
        self.phase = Phase::Idle;
        if let Some(id) = self.intent.take_current() {
            let ev = IntentEvent::Done {
                id,
                failed_switches: self.mcast_failed_switches(),
                failed_ports: Vec::new(),
                lft_blocks: 0,
                pkey_blocks: 0,
            };
            self.intent.push_done(ev);
        }
        // A heavy sweep asked for while this pass ran (it plans the MFTs itself), or
        // groups handed over meanwhile.
        if self.heavy_pending.is_some() {
            self.start_pending_heavy();
        } else {
            self.start_mcast_pass();
        }
    }

    /// Switches an MFT Set failed on (for IntentDone), sorted.
    pub(crate) fn mcast_failed_switches(&mut self) -> Vec<Guid> {
        let mut v = std::mem::take(&mut self.mcast.failed_switches);
        v.sort_unstable();
        v.dedup();
        v
    }

    /// What was planned is not known to be written (intent not committed).
    pub(crate) fn mcast_forget_planned(&mut self) {
        for w in std::mem::take(&mut self.mcast.planned) {
            self.mcast.unknown.insert((w.switch, w.position, w.block));
        }
        self.mcast.writing.clear();
    }

    /// Re-applies a previous master's MFT blocks (the pending intent): they become what is
    /// known once written.
    pub(crate) fn mcast_reapply(&mut self, blocks: &[MftBlockWrite]) -> Vec<Guid> {
        let mut unreached = Vec::new();
        let sweep = self.disc.sweep();
        for w in blocks {
            match self.disc.find(w.switch) {
                Some(node)
                    if self.disc.node(node).seen == sweep && self.disc.node(node).is_switch =>
                {
                    self.mcast
                        .writing
                        .insert((node, w.position, w.block), w.masks);
                    self.prog.count_planned();
                    self.push(Op::MftSet, node, w.position, w.block);
                }
                _ => unreached.push(w.switch),
            }
        }
        unreached
    }

    /// The data of an MFT Set.
    pub(crate) fn fill_mft(&self, req: &Req, data: &mut [u8; 64]) -> Option<()> {
        let masks = self.mcast.writing.get(&(req.node, req.port, req.arg))?;
        MulticastForwardingTable { port_masks: *masks }.encode(data);
        Some(())
    }

    /// The modifier of an MFT Set.
    pub(crate) fn mft_modifier(req: &Req) -> u32 {
        MulticastForwardingTable::modifier(req.port, req.arg)
    }

    /// An MFT Set was answered: the block is known.
    pub(crate) fn mft_done(&mut self, req: &Req) {
        let Some(masks) = self
            .mcast
            .writing
            .get(&(req.node, req.port, req.arg))
            .copied()
        else {
            return;
        };
        let g = self.disc.node(req.node).guid;
        self.mcast.unknown.remove(&(g, req.port, req.arg));
        if masks == [0; 32] {
            if let Some(t) = self.mcast.known.get_mut(&g) {
                t.remove(&(req.port, req.arg));
                if t.is_empty() {
                    self.mcast.known.remove(&g);
                }
            }
        } else {
            self.mcast
                .known
                .entry(g)
                .or_default()
                .insert((req.port, req.arg), masks);
        }
    }

    /// An MFT Set was given up: the block is unknown.
    pub(crate) fn mft_failed(&mut self, req: &Req) {
        let g = self.disc.node(req.node).guid;
        if let Some(t) = self.mcast.known.get_mut(&g) {
            t.remove(&(req.port, req.arg));
        }
        self.mcast.unknown.insert((g, req.port, req.arg));
        self.mcast.failed_switches.push(g);
    }
}

/// The port masks of one MLID in `t` (test and tool helper): per switch GUID.
pub fn mlid_masks(t: &MftTables, mlid: Lid) -> BTreeMap<Guid, PortMask> {
    let mut out = BTreeMap::new();
    if mlid.0 < mcast::MLID_BASE {
        return out;
    }
    let block = mcast::mft_block(mlid.0);
    let i = usize::from(mlid.0 - mcast::MLID_BASE) % mcast::MFT_BLOCK_MLIDS;
    for (&sw, blocks) in t {
        let mut m = PortMask::default();
        for (&(pos, b), masks) in blocks {
            if b == block && pos < 16 {
                m.0[usize::from(pos)] = masks[i];
            }
        }
        if !m.is_empty() {
            out.insert(sw, m);
        }
    }
    out
}
