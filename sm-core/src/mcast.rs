//! [`Multicast`] owns the groups, what the switches hold, and the blocks being written. It
//! never sends and never decides when a pass runs (the sweeper queues the Sets it plans).
//!
//! Multicast forwarding tables: the groups the SA hands over ([`crate::Sweeper::set_multicast`])
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
//!   ([`Multicast::mft_tops`]). Other switches' MulticastFDBTop is written back as read.

use crate::discovery::Discovery;
use crate::io::Req;
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
pub(crate) struct Multicast {
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

impl Multicast {
    /// `known`: the blocks the switches are known to hold (a takeover).
    pub fn new(known: Option<&MftTables>) -> Multicast {
        Multicast {
            known: known.cloned().unwrap_or_default(),
            ..Multicast::default()
        }
    }

    /// Takes the groups (sorted by MLID). Returns false when they are the ones known.
    pub fn set_groups(&mut self, groups: Vec<McastGroup>) -> bool {
        let mut g = groups;
        g.sort_by_key(|x| x.mlid);
        if self.groups.as_ref() == Some(&g) {
            return false;
        }
        self.groups = Some(g);
        self.dirty = true;
        true
    }

    /// The MFT blocks the switches are known to hold.
    pub fn known(&self) -> &MftTables {
        &self.known
    }

    /// The groups last handed over (None: never).
    pub fn groups(&self) -> Option<&[McastGroup]> {
        self.groups.as_deref()
    }

    /// Keeps the switch graph of this heavy sweep for the trees.
    pub fn keep_input(&mut self, input: &RoutingInput) {
        self.input = Some(Arc::new(input.clone()));
    }

    /// Plans the MFT writes of a heavy sweep (after routing, before the intent): switches
    /// whose LFT is not known valid lose what is known of their MFT.
    pub fn plan(&mut self, disc: &Discovery) {
        self.writing.clear();
        self.planned.clear();
        self.failed_switches.clear();
        let lost: Vec<Guid> = disc
            .switches()
            .iter()
            .filter(|s| !s.lft_valid)
            .map(|s| disc.node(s.node).guid)
            .collect();
        for g in lost {
            if let Some(t) = self.known.remove(&g) {
                for (pos, block) in t.into_keys() {
                    self.unknown.insert((g, pos, block));
                }
            }
        }
        if self.groups.is_some() {
            self.plan_writes(disc);
        }
    }

    /// Diffs the wanted tables against the known ones into `planned` / `writing`.
    fn plan_writes(&mut self, disc: &Discovery) {
        self.dirty = false;
        let (Some(groups), Some(input)) = (&self.groups, &self.input) else {
            return;
        };
        let want: Mfts = McastGraph::new(input).tables(groups);
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
        for (&sw, t) in &self.known {
            for &(pos, block) in t.keys() {
                keys.insert((sw, pos, block));
            }
        }
        keys.extend(self.unknown.iter().copied());
        let empty = BTreeMap::new();
        let mut writes = Vec::new();
        for (sw, pos, block) in keys {
            let Some(node) = disc.find(sw) else {
                continue;
            };
            let n = disc.node(node);
            if !disc.seen(node) || !n.is_switch || usize::from(pos) * 16 > usize::from(n.nports) {
                continue;
            }
            let masks = mcast::block_masks(want.get(&sw).unwrap_or(&empty), pos, block);
            let have = self
                .known
                .get(&sw)
                .and_then(|t| t.get(&(pos, block)))
                .copied()
                .unwrap_or([0; 32]);
            if have != masks || self.unknown.contains(&(sw, pos, block)) {
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
            self.writing.insert((node, w.position, w.block), w.masks);
            self.planned.push(w);
        }
    }

    /// The MFT blocks planned (for the intent being built).
    pub fn planned(&self) -> &[MftBlockWrite] {
        &self.planned
    }

    /// The MFT Sets (node, position, block) of the planned writes, in order.
    pub fn queued(&self) -> Vec<(u32, u8, u16)> {
        let mut todo: Vec<(u32, u8, u16)> = self.writing.keys().copied().collect();
        todo.sort_unstable();
        todo
    }

    /// Plans a standalone pass when the groups changed and the fabric was routed. Returns
    /// true when it has blocks to write.
    pub fn start_pass(&mut self, disc: &Discovery) -> bool {
        if !self.dirty || self.input.is_none() {
            return false;
        }
        self.writing.clear();
        self.planned.clear();
        self.failed_switches.clear();
        self.plan_writes(disc);
        !self.planned.is_empty()
    }

    /// The standalone pass waits for intent `id`.
    pub fn await_pass_intent(&mut self, id: u64) {
        self.pass_intent = Some(id);
    }

    /// Intent `id` was committed: true when it was the standalone pass's (which may run).
    pub fn pass_committed(&mut self, id: u64) -> bool {
        if self.pass_intent != Some(id) {
            return false;
        }
        self.pass_intent = None;
        true
    }

    /// Intent `id` could not be committed: true when it was the standalone pass's
    /// (dropped; the groups stay to be planned again).
    pub fn pass_rejected(&mut self, id: u64) -> bool {
        if self.pass_intent != Some(id) {
            return false;
        }
        self.pass_intent = None;
        self.writing.clear();
        self.planned.clear();
        self.dirty = true;
        true
    }

    /// MulticastFDBTop wanted by every switch of this sweep that supports it (port 0
    /// CapabilityMask IsMulticastFDBTopSupported), by node index, with the blocks being
    /// written counted as written. Empty until the groups are known (MFTs left alone).
    pub fn mft_tops(&self, disc: &Discovery) -> HashMap<u32, u16> {
        let mut tops = HashMap::new();
        if self.groups.is_none() {
            return tops;
        }
        // Highest block with a non-zero entry, per node: what is known, minus blocks being
        // zeroed, plus blocks being written non-zero.
        let mut highest: HashMap<u32, u16> = HashMap::new();
        for (&(node, _pos, block), masks) in &self.writing {
            if *masks != [0; 32] {
                let h = highest.entry(node).or_insert(block);
                *h = (*h).max(block);
            }
        }
        for s in disc.switches() {
            let n = disc.node(s.node);
            if !disc.seen(s.node) {
                continue;
            }
            let p0 = disc.port(n.port_index(0));
            if p0.info.capability_mask & PortInfo::CAP_IS_MULTICAST_FDB_TOP_SUPPORTED == 0 {
                continue;
            }
            let known = self.known.get(&n.guid).and_then(|t| {
                t.keys()
                    .filter(|&&(pos, block)| {
                        self.writing
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

    /// Switches an MFT Set failed on (for IntentDone), sorted; forgotten here.
    pub fn take_failed_switches(&mut self) -> Vec<Guid> {
        let mut v = std::mem::take(&mut self.failed_switches);
        v.sort_unstable();
        v.dedup();
        v
    }

    /// What was planned is not known to be written (intent not committed).
    pub fn forget_planned(&mut self) {
        for w in std::mem::take(&mut self.planned) {
            self.unknown.insert((w.switch, w.position, w.block));
        }
        self.writing.clear();
    }

    /// Re-applies a previous master's MFT blocks (the pending intent): they become what is
    /// known once written. Returns the MFT Sets (node, position, block) to queue and the
    /// switches not reached.
    pub fn reapply(
        &mut self,
        disc: &Discovery,
        blocks: &[MftBlockWrite],
    ) -> (Vec<(u32, u8, u16)>, Vec<Guid>) {
        let mut sets = Vec::new();
        let mut unreached = Vec::new();
        for w in blocks {
            match disc.find(w.switch) {
                Some(node) if disc.seen(node) && disc.node(node).is_switch => {
                    self.writing.insert((node, w.position, w.block), w.masks);
                    sets.push((node, w.position, w.block));
                }
                _ => unreached.push(w.switch),
            }
        }
        (sets, unreached)
    }

    /// The data of an MFT Set.
    pub fn fill(&self, req: &Req, data: &mut [u8; 64]) -> Option<()> {
        let masks = self.writing.get(&(req.node, req.port, req.arg))?;
        MulticastForwardingTable { port_masks: *masks }.encode(data);
        Some(())
    }

    /// The modifier of an MFT Set.
    pub fn modifier(req: &Req) -> u32 {
        MulticastForwardingTable::modifier(req.port, req.arg)
    }

    /// An MFT Set to switch `g` was answered: the block is known.
    pub fn done(&mut self, g: Guid, req: &Req) {
        let Some(masks) = self.writing.get(&(req.node, req.port, req.arg)).copied() else {
            return;
        };
        self.unknown.remove(&(g, req.port, req.arg));
        if masks == [0; 32] {
            if let Some(t) = self.known.get_mut(&g) {
                t.remove(&(req.port, req.arg));
                if t.is_empty() {
                    self.known.remove(&g);
                }
            }
        } else {
            self.known
                .entry(g)
                .or_default()
                .insert((req.port, req.arg), masks);
        }
    }

    /// An MFT Set to switch `g` was given up: the block is unknown.
    pub fn failed(&mut self, g: Guid, req: &Req) {
        if let Some(t) = self.known.get_mut(&g) {
            t.remove(&(req.port, req.arg));
        }
        self.unknown.insert((g, req.port, req.arg));
        self.failed_switches.push(g);
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
