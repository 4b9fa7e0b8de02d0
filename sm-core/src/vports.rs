//! Virtual ports ([`Vports`]): IB virtualization (SR-IOV with vports) on the CA ports that
//! offer it (PortInfo CapabilityMask2 IsVirtualizationSupported). It never sends and never
//! decides when a phase runs: the sweeper queues the reads and Sets it returns.
//!
//! * After a heavy sweep's discovery, every virtualization-capable CA port read in that
//!   sweep is read in rounds: VirtualizationInfo (VPortCap, VPortIndexTop, enabled); then
//!   the VPortInfo of every vport 1..=VPortIndexTop (vport 0 is the physical port, managed
//!   through PortInfo), then P_KeyTable block 0 of every vport found. A port with
//!   virtualization off gets a VirtualizationInfo Set turning it on (and clearing
//!   VPortStateChange) in stage 2, like every write after the intent; its answer asks for
//!   the heavy sweep that reads and brings up its vports. A port whose reads fail keeps nothing (its
//!   vports are not managed this sweep, the sweep is not clean).
//! * LIDs: a vport that says LIDRequired gets its own LID through the same guid2lid map as
//!   the physical ports (keyed by the vport GUID, LMC 0): the remembered LID, else the LID
//!   it carries when nobody else holds it, else the lowest free one. The map is replicated
//!   after each sweep, so a new master seeded from it gives every vport the same LID.
//! * Routing: a vport LID leaves every switch through the port its physical port's base LID
//!   leaves by ([`Vports::route`]), so its LFT entries are part of the routing result (and of
//!   the LFT blocks recorded for a takeover: a new master computes the same entries).
//! * P_Keys: a vport's table (block 0, 32 keys) is laid out from the partition policy as
//!   for a CA port whose port GUID is the vport GUID; the switch port facing the physical
//!   port carries the union of the physical port's and its vports' keys, so enforcement
//!   passes every vport's traffic while each vport's own table isolates it.
//! * Bring-up, as ports: a vport in INIT gets a VPortInfo Set with its LID and ARMED with
//!   the physical ports' ARMED stage, then ACTIVE once its physical port is ACTIVE; an
//!   ACTIVE vport with another LID gets its LID (state unchanged). Only what differs from
//!   what was read is written; the tables are read back in every heavy sweep, so a takeover
//!   writes nothing on an unchanged fabric without any replicated record of them.

use crate::guid2lid::Guid2Lid;
use crate::io::Op;
use fabric::{Guid, Lid};
use std::collections::{BTreeMap, BTreeSet};

/// PortState values as VPortInfo/VPortState carry them (IBA PortState encoding).
pub mod state {
    /// No state change.
    pub const NOP: u8 = 0;
    /// Down.
    pub const DOWN: u8 = 1;
    /// Init.
    pub const INIT: u8 = 2;
    /// Armed (not used by vports).
    pub const ARMED: u8 = 3;
    /// Active.
    pub const ACTIVE: u8 = 4;
}

/// Keys in a vport's P_KeyTable block 0 (the only block managed).
pub const VPORT_PKEYS: usize = 32;

/// One vport as read (and as it should be).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VPortRecord {
    /// Index on the physical port (0..=VPortIndexTop).
    pub index: u16,
    /// The vport GUID (VPortInfo).
    pub guid: Guid,
    /// State as read (PortState encoding).
    pub state: u8,
    /// The vport needs a LID of its own (otherwise it answers at the physical port's LID).
    pub lid_required: bool,
    /// LID as read.
    pub lid: Lid,
    /// LID it should carry (its own, or the physical port's base LID).
    pub lid_want: Lid,
    /// P_KeyTable block 0 as read (None: not read).
    pub pkeys: Option<[u16; VPORT_PKEYS]>,
    /// P_KeyTable block 0 it should hold (empty: not managed).
    pub pkey_want: Vec<u16>,
    /// VPortInfo as last read or written (what a Set writes back besides LID and state).
    pub info: mad::VPortInfo,
}

/// A virtualization-capable physical CA port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VirtPort {
    /// Node index and port number in the discovery arena.
    pub node: u32,
    /// Port number.
    pub port: u8,
    /// The physical port's GUID.
    pub pf_guid: Guid,
    /// The node's GUID.
    pub node_guid: Guid,
    /// VirtualizationInfo.VPortCap.
    pub vport_cap: u16,
    /// VirtualizationInfo.VPortIndexTop.
    pub top: u16,
    /// VirtualizationInfo.VirtualizationEnable.
    pub enabled: bool,
    /// VirtualizationInfo as last read or written.
    pub info: mad::VirtualizationInfo,
    /// Read this sweep (VirtualizationInfo answered).
    pub read: bool,
    /// Vports by index.
    pub vports: BTreeMap<u16, VPortRecord>,
}

/// A read or Set to queue: (op, node, port, arg = vport index).
pub(crate) type VportReq = (Op, u32, u8, u16);

/// An alias port of this sweep: its GUID and GUIDInfo block 0 as read or written.
type AliasPort = (Guid, Option<[Guid; 8]>);

/// Which read round runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Round {
    #[default]
    Idle,
    Info,
    VPortInfo,
    PKeys,
}

/// The vports of the fabric, by (node index, port), and the alias GUIDs of end ports.
#[derive(Debug, Default)]
pub(crate) struct Vports {
    ports: BTreeMap<(u32, u8), VirtPort>,
    round: Round,
    /// Alias GUIDs wanted in GUIDInfo block 0, by port GUID (index 0 unused: the port GUID).
    aliases: BTreeMap<Guid, [Guid; 8]>,
    /// Ports ever given aliases: their block 0 is read and kept as wanted (cleared when
    /// their aliases go).
    alias_managed: BTreeSet<Guid>,
    /// This sweep's alias ports: (node, port) -> (port GUID, block 0 as read or written).
    alias_ports: BTreeMap<(u32, u8), AliasPort>,
}

impl Vports {
    /// Every virtualization-capable port known.
    pub fn ports(&self) -> impl Iterator<Item = &VirtPort> {
        self.ports.values()
    }

    /// Every vport GUID and alias GUID this sweeper knows, with its physical port's GUID
    /// (what `explain` resolves a VF GUID through).
    pub fn functions(&self) -> BTreeMap<Guid, Guid> {
        let mut out = BTreeMap::new();
        for p in self.ports.values() {
            for v in p.vports.values() {
                out.insert(v.guid, p.pf_guid);
            }
        }
        for (port, b) in &self.aliases {
            for g in b.iter().filter(|g| g.0 != 0) {
                out.insert(*g, *port);
            }
        }
        out
    }

    /// The vport with `guid`, with its physical port.
    pub fn find(&self, guid: Guid) -> Option<(&VirtPort, &VPortRecord)> {
        self.ports
            .values()
            .find_map(|p| p.vports.values().find(|v| v.guid == guid).map(|v| (p, v)))
    }

    /// Starts the reads of a heavy sweep: `capable` are the virtualization-capable CA ports
    /// (node, port, port GUID, node GUID) read in this sweep. Ports no longer capable are
    /// forgotten. Returns the VirtualizationInfo Gets.
    pub fn start(&mut self, capable: &[(u32, u8, Guid, Guid)]) -> Vec<VportReq> {
        let keep: BTreeSet<(u32, u8)> = capable.iter().map(|&(n, p, _, _)| (n, p)).collect();
        self.alias_ports.clear();
        self.ports.retain(|k, _| keep.contains(k));
        for &(node, port, pf_guid, node_guid) in capable {
            let e = self.ports.entry((node, port)).or_insert_with(|| VirtPort {
                node,
                port,
                pf_guid,
                node_guid,
                vport_cap: 0,
                top: 0,
                enabled: false,
                info: mad::VirtualizationInfo::default(),
                read: false,
                vports: BTreeMap::new(),
            });
            e.read = false;
            e.pf_guid = pf_guid;
            e.node_guid = node_guid;
        }
        self.round = if capable.is_empty() {
            Round::Idle
        } else {
            Round::Info
        };
        capable
            .iter()
            .map(|&(n, p, _, _)| (Op::VirtInfoGet, n, p, 0))
            .collect()
    }

    /// Replaces the alias GUIDs (by port GUID and GUIDInfo index; only block 0, indexes
    /// 1..=7, is programmed). True when what is wanted changed.
    pub fn set_aliases(&mut self, map: &BTreeMap<Guid, BTreeMap<u16, Guid>>) -> bool {
        let mut want = BTreeMap::new();
        for (port, t) in map {
            let mut b = [Guid(0); 8];
            for (&i, &g) in t.range(1..8) {
                b[usize::from(i)] = g;
            }
            if b.iter().any(|g| g.0 != 0) {
                want.insert(*port, b);
            }
        }
        if want == self.aliases {
            return false;
        }
        self.alias_managed.extend(want.keys().copied());
        self.aliases = want;
        true
    }

    /// Ports whose GUIDInfo is managed (read every heavy sweep).
    pub fn alias_managed(&self) -> impl Iterator<Item = Guid> + '_ {
        self.alias_managed.iter().copied()
    }

    /// Starts this sweep's alias reads: `ports` are the managed ports found (node, port,
    /// port GUID). Returns the GUIDInfo Gets.
    pub fn start_aliases(&mut self, ports: &[(u32, u8, Guid)]) -> Vec<VportReq> {
        self.alias_ports = ports.iter().map(|&(n, p, g)| ((n, p), (g, None))).collect();
        if !ports.is_empty() && self.round == Round::Idle {
            self.round = Round::Info;
        }
        ports
            .iter()
            .map(|&(n, p, _)| (Op::GuidInfoGet, n, p, 0))
            .collect()
    }

    /// GUIDInfo block 0 of an alias port as read or written.
    pub fn on_guid_info(&mut self, node: u32, port: u8, block: [Guid; 8]) {
        if let Some(e) = self.alias_ports.get_mut(&(node, port)) {
            e.1 = Some(block);
        }
    }

    /// A GUIDInfo Get or Set given up: the block is unknown (written next sweep).
    pub fn on_guid_info_failed(&mut self, node: u32, port: u8) {
        if let Some(e) = self.alias_ports.get_mut(&(node, port)) {
            e.1 = None;
        }
    }

    /// Block 0 of `port`'s GUIDInfo as it should be (index 0: the port GUID).
    pub fn alias_block(&self, node: u32, port: u8) -> Option<[Guid; 8]> {
        let (g, _) = self.alias_ports.get(&(node, port))?;
        let mut b = self.aliases.get(g).copied().unwrap_or([Guid(0); 8]);
        b[0] = *g;
        Some(b)
    }

    /// The GUIDInfo Sets: alias ports whose block 0 is not known to hold what it should.
    pub fn alias_sets(&self) -> Vec<VportReq> {
        self.alias_ports
            .iter()
            .filter(
                |&(&(n, p), (_, held))| match (held, self.alias_block(n, p)) {
                    (Some(h), Some(w)) => h[1..] != w[1..],
                    _ => true,
                },
            )
            .map(|(&(n, p), _)| (Op::GuidInfoSet, n, p, 0))
            .collect()
    }

    /// The reads of the next round (empty when the reads are over).
    pub fn next_round(&mut self) -> Vec<VportReq> {
        let mut out = Vec::new();
        loop {
            self.round = match self.round {
                Round::Idle => return out,
                Round::Info => {
                    for p in self.ports.values().filter(|p| p.read && p.enabled) {
                        for i in 1..=p.top.min(p.vport_cap) {
                            out.push((Op::VPortInfoGet, p.node, p.port, i));
                        }
                    }
                    Round::VPortInfo
                }
                Round::VPortInfo => {
                    for p in self.ports.values() {
                        for v in p.vports.values() {
                            out.push((Op::VPortPKeyGet, p.node, p.port, v.index));
                        }
                    }
                    Round::PKeys
                }
                Round::PKeys => Round::Idle,
            };
            if !out.is_empty() {
                return out;
            }
        }
    }

    /// True while reads remain to be started or answered.
    pub fn reading(&self) -> bool {
        self.round != Round::Idle
    }

    /// A VirtualizationInfo answer (Get or Set): vports above the new top are forgotten.
    pub fn on_info(&mut self, node: u32, port: u8, info: mad::VirtualizationInfo) {
        let (cap, top, enabled) = (
            info.vport_cap,
            info.vport_index_top,
            info.virtualization_enable,
        );
        if let Some(p) = self.ports.get_mut(&(node, port)) {
            p.info = info;
            p.vport_cap = cap;
            p.top = top;
            p.enabled = enabled;
            p.read = true;
            let limit = if enabled { top.min(cap) } else { 0 };
            p.vports.retain(|&i, _| enabled && i <= limit);
        }
    }

    /// A VPortInfo answer (a zero GUID is an unused index: forgotten).
    pub fn on_vport_info(&mut self, node: u32, port: u8, index: u16, info: mad::VPortInfo) {
        let Some(p) = self.ports.get_mut(&(node, port)) else {
            return;
        };
        let (guid, vport_state, lid_required, lid) = (
            info.port_guid,
            info.vport_state,
            info.lid_required,
            info.vport_lid,
        );
        if guid.0 == 0 {
            p.vports.remove(&index);
            return;
        }
        let v = p.vports.entry(index).or_insert_with(|| VPortRecord {
            index,
            guid,
            state: vport_state,
            lid_required,
            lid,
            lid_want: Lid(0),
            pkeys: None,
            pkey_want: Vec::new(),
            info,
        });
        v.info = info;
        if v.guid != guid {
            v.pkeys = None;
            v.lid_want = Lid(0);
        }
        v.guid = guid;
        v.state = vport_state;
        v.lid_required = lid_required;
        v.lid = lid;
    }

    /// A vport read that was given up: the vport is not managed this sweep.
    pub fn on_read_failed(&mut self, node: u32, port: u8, op: Op, index: u16) {
        let Some(p) = self.ports.get_mut(&(node, port)) else {
            return;
        };
        match op {
            Op::VirtInfoGet | Op::VirtInfoSet => {
                p.read = false;
                p.vports.clear();
            }
            _ => {
                p.vports.remove(&index);
            }
        }
    }

    /// A P_KeyTable block 0 answer (read or written).
    pub fn on_pkeys(&mut self, node: u32, port: u8, index: u16, keys: [u16; VPORT_PKEYS]) {
        if let Some(v) = self.vport_mut(node, port, index) {
            v.pkeys = Some(keys);
        }
    }

    /// A VPortInfo Set answered: what it holds now.
    pub fn on_vport_set(&mut self, node: u32, port: u8, index: u16, info: mad::VPortInfo) {
        if let Some(v) = self.vport_mut(node, port, index) {
            v.state = info.vport_state;
            v.lid = info.vport_lid;
            v.info = info;
        }
    }

    /// A Set given up: what the vport holds is unknown (read again next sweep).
    pub fn on_set_failed(&mut self, node: u32, port: u8, op: Op, index: u16) {
        if let Some(v) = self.vport_mut(node, port, index) {
            if op == Op::VPortPKeySet {
                v.pkeys = None;
            } else {
                v.state = state::NOP;
            }
        }
    }

    fn vport_mut(&mut self, node: u32, port: u8, index: u16) -> Option<&mut VPortRecord> {
        self.ports.get_mut(&(node, port))?.vports.get_mut(&index)
    }

    /// The vport at (node, port, index).
    pub fn vport(&self, node: u32, port: u8, index: u16) -> Option<&VPortRecord> {
        self.ports.get(&(node, port))?.vports.get(&index)
    }

    /// Gives every vport the LID it should carry: its own through `map` when it needs one
    /// (see the module doc), the physical port's base LID (`pf_lid`) otherwise. Returns the
    /// vports' own LIDs with the physical port's (node, port), for routing.
    pub fn assign_lids(
        &mut self,
        map: &mut Guid2Lid,
        pf_lid: impl Fn(u32, u8) -> Lid,
    ) -> Vec<(Lid, u32, u8)> {
        let mut own = Vec::new();
        let mut wanting: Vec<(u32, u8, u16)> = Vec::new();
        for p in self.ports.values_mut() {
            let base = pf_lid(p.node, p.port);
            for v in p.vports.values_mut() {
                if !v.lid_required {
                    v.lid_want = base;
                    continue;
                }
                wanting.push((p.node, p.port, v.index));
            }
        }
        // Vport GUID order, as the physical ports get theirs.
        wanting.sort_by_key(|&(n, p, i)| self.ports[&(n, p)].vports[&i].guid);
        let mut pending = Vec::new();
        for &(n, p, i) in &wanting {
            let v = &self.ports[&(n, p)].vports[&i];
            if let Some((lo, _)) = map.get(v.guid) {
                own.push((n, p, i, lo));
                continue;
            }
            pending.push((n, p, i));
        }
        // The LIDs in use, built only when a vport needs a new one.
        let mut used: BTreeSet<u16> = BTreeSet::new();
        if !pending.is_empty() {
            for (_, lo, hi) in map.iter() {
                used.extend(lo.0..=hi.0);
            }
        }
        let mut cursor = 1u16;
        for (n, p, i) in pending {
            let cur = self.ports[&(n, p)].vports[&i].lid;
            let lid = if cur.is_unicast() && !used.contains(&cur.0) {
                cur
            } else {
                while used.contains(&cursor) && cursor <= Lid::UNICAST_MAX.0 {
                    cursor += 1;
                }
                if cursor > Lid::UNICAST_MAX.0 {
                    continue;
                }
                Lid(cursor)
            };
            used.insert(lid.0);
            map.set(self.ports[&(n, p)].vports[&i].guid, lid, lid);
            own.push((n, p, i, lid));
        }
        let mut out = Vec::new();
        for (n, p, i, lid) in own {
            if let Some(v) = self.vport_mut(n, p, i) {
                v.lid_want = lid;
                out.push((lid, n, p));
            }
        }
        out.sort();
        out
    }

    /// Sets every vport's wanted P_KeyTable block 0 from `layout` (the keys of a CA port
    /// with that GUID on that node, in table order). Returns, per physical port, the union
    /// of its vports' keys (for the switch port facing it).
    pub fn plan_pkeys(
        &mut self,
        layout: impl Fn(Guid, Guid, u8, Guid) -> Vec<u16>,
    ) -> Vec<(u32, u8, Vec<u16>)> {
        let mut out = Vec::new();
        for p in self.ports.values_mut() {
            let mut union = Vec::new();
            for v in p.vports.values_mut() {
                let mut keys = layout(p.node_guid, p.pf_guid, p.port, v.guid);
                keys.truncate(VPORT_PKEYS);
                keys.resize(VPORT_PKEYS, 0);
                for &k in keys.iter().filter(|k| **k & 0x7FFF != 0) {
                    if !union.contains(&k) {
                        union.push(k);
                    }
                }
                v.pkey_want = keys;
            }
            if !p.vports.is_empty() {
                out.push((p.node, p.port, union));
            }
        }
        out
    }

    /// The VirtualizationInfo Sets of stage 2: ports read with virtualization off get it on
    /// (their vports come up in the heavy sweep their answer asks for).
    pub fn enable_sets(&self) -> Vec<VportReq> {
        self.ports
            .values()
            .filter(|p| p.read && !p.enabled)
            .map(|p| (Op::VirtInfoSet, p.node, p.port, 0))
            .collect()
    }

    /// Vports a bring-up stage will write (not ACTIVE, or not carrying their LID).
    pub fn bring_up_candidates(&self) -> impl Iterator<Item = (&VirtPort, &VPortRecord)> {
        self.ports.values().flat_map(|p| {
            p.vports
                .values()
                .filter(|v| v.lid_want.0 != 0 && (v.state != state::ACTIVE || v.lid != v.lid_want))
                .map(move |v| (p, v))
        })
    }

    /// The P_KeyTable Sets: vports whose block 0 is not known to hold what it should.
    pub fn pkey_sets(&self) -> Vec<VportReq> {
        let mut out = Vec::new();
        for p in self.ports.values() {
            for v in p.vports.values() {
                if v.pkey_want.is_empty() {
                    continue;
                }
                let held = v.pkeys.map(|k| k.to_vec());
                if held.as_deref() != Some(&v.pkey_want[..]) {
                    out.push((Op::VPortPKeySet, p.node, p.port, v.index));
                }
            }
        }
        out
    }

    /// The VPortInfo Sets of a bring-up stage: `arm` (with the ports' ARMED stage) takes
    /// vports in INIT to ARMED with their LID; otherwise vports of ACTIVE physical ports
    /// (`pf_active`) go from ARMED to ACTIVE, and ACTIVE ones not carrying the LID they
    /// should get it.
    pub fn bring_up_sets(&self, arm: bool, pf_active: impl Fn(u32, u8) -> bool) -> Vec<VportReq> {
        let mut out = Vec::new();
        for p in self.ports.values() {
            let active = pf_active(p.node, p.port);
            for v in p.vports.values().filter(|v| v.lid_want.0 != 0) {
                let wanted = if arm {
                    v.state == state::INIT
                } else {
                    active
                        && (v.state == state::ARMED
                            || (v.state == state::ACTIVE && v.lid != v.lid_want))
                };
                if wanted {
                    out.push((Op::VPortInfoSet, p.node, p.port, v.index));
                }
            }
        }
        out
    }

    /// The state a VPortInfo Set of `v` writes: ARMED from INIT, ACTIVE from ARMED, no
    /// change otherwise (a LID only).
    pub fn next_state(v: &VPortRecord) -> u8 {
        match v.state {
            state::INIT => state::ARMED,
            state::ARMED => state::ACTIVE,
            _ => state::NOP,
        }
    }

    /// Number of vports known and of those ACTIVE.
    pub fn counts(&self) -> (usize, usize) {
        let all = self.ports.values().map(|p| p.vports.len()).sum();
        let active = self
            .ports
            .values()
            .flat_map(|p| p.vports.values())
            .filter(|v| v.state == state::ACTIVE)
            .count();
        (all, active)
    }
}

/// The LFT entries of vport LIDs: on every switch, a vport LID leaves through the port its
/// physical port's base LID leaves by. `own` is what [`Vports::assign_lids`] returned with
/// the physical port's base LID for each.
pub fn route(lfts: &mut routing::Lfts, own: &[(Lid, Lid)]) {
    for sw in &mut lfts.switches {
        for &(vlid, pf) in own {
            let out = sw.ports.get(pf.0 as usize).copied().unwrap_or(0xFF);
            let at = vlid.0 as usize;
            if sw.ports.len() <= at {
                sw.ports.resize(at + 1, 0xFF);
            }
            sw.ports[at] = out;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vinfo(cap: u16, top: u16, enable: bool) -> mad::VirtualizationInfo {
        mad::VirtualizationInfo {
            vport_cap: cap,
            vport_index_top: top,
            virtualization_enable: enable,
            ..mad::VirtualizationInfo::default()
        }
    }

    fn vpi(guid: u64, st: u8, lid_required: bool, lid: u16) -> mad::VPortInfo {
        mad::VPortInfo {
            port_guid: Guid(guid),
            vport_state: st,
            lid_required,
            vport_lid: Lid(lid),
            ..mad::VPortInfo::default()
        }
    }

    fn one_port(vports: &[(u16, u64, bool, u16)]) -> Vports {
        let mut v = Vports::default();
        v.start(&[(1, 1, Guid(0x100), Guid(0x10))]);
        v.on_info(1, 1, vinfo(8, 7, true));
        for &(i, g, req, lid) in vports {
            v.on_vport_info(1, 1, i, vpi(g, state::INIT, req, lid));
        }
        v
    }

    #[test]
    fn reads_run_in_rounds_up_to_the_top_index() {
        let mut v = Vports::default();
        let r = v.start(&[(1, 1, Guid(0x100), Guid(0x10))]);
        assert_eq!(r, vec![(Op::VirtInfoGet, 1, 1, 0)]);
        v.on_info(1, 1, vinfo(8, 0, false));
        // Virtualization off: no vport read; turned on by a Set in stage 2.
        assert!(v.next_round().is_empty() && !v.reading());
        assert_eq!(v.enable_sets(), vec![(Op::VirtInfoSet, 1, 1, 0)]);
        v.start(&[(1, 1, Guid(0x100), Guid(0x10))]);
        v.on_info(1, 1, vinfo(8, 3, true));
        assert!(v.enable_sets().is_empty());
        let r = v.next_round();
        assert_eq!(r.len(), 3);
        assert!(r.iter().all(|x| x.0 == Op::VPortInfoGet && x.3 >= 1));
        v.on_vport_info(1, 1, 1, vpi(0x201, state::INIT, false, 0));
        v.on_vport_info(1, 1, 2, vpi(0, state::DOWN, false, 0));
        v.on_vport_info(1, 1, 3, vpi(0x203, state::INIT, true, 0));
        let r = v.next_round();
        assert_eq!(
            r,
            vec![(Op::VPortPKeyGet, 1, 1, 1), (Op::VPortPKeyGet, 1, 1, 3)]
        );
        assert!(v.reading());
        assert!(v.next_round().is_empty());
        assert!(!v.reading());
    }

    #[test]
    fn vport_lids_come_from_the_map_then_carried_then_lowest_free() {
        let mut v = one_port(&[
            (0, 0x200, false, 0),
            (1, 0x201, true, 9),
            (2, 0x202, true, 5),
        ]);
        let mut m = Guid2Lid::new();
        m.set(Guid(0x100), Lid(5), Lid(5)); // the PF holds 5
        m.set(Guid(0x999), Lid(1), Lid(1)); // an absent port keeps 1
        let own = v.assign_lids(&mut m, |_, _| Lid(5));
        // 0x201 keeps the 9 it carries; 0x202 carries the PF's 5: gets the lowest free, 2.
        assert_eq!(own, vec![(Lid(2), 1, 1), (Lid(9), 1, 1)]);
        assert_eq!(v.vport(1, 1, 0).unwrap().lid_want, Lid(5));
        assert_eq!(m.get(Guid(0x202)), Some((Lid(2), Lid(2))));
        // A second sweep (a new master seeded with the map) gives the same LIDs.
        let mut w = one_port(&[
            (0, 0x200, false, 0),
            (1, 0x201, true, 0),
            (2, 0x202, true, 0),
        ]);
        let again = w.assign_lids(&mut m, |_, _| Lid(5));
        assert_eq!(again, own);
    }

    #[test]
    fn only_what_differs_is_written() {
        let mut v = one_port(&[(0, 0x200, true, 0)]);
        let mut m = Guid2Lid::new();
        v.assign_lids(&mut m, |_, _| Lid(3));
        v.plan_pkeys(|_, _, _, _| vec![0xFFFF, 0x8001]);
        assert_eq!(v.pkey_sets(), vec![(Op::VPortPKeySet, 1, 1, 0)]);
        assert_eq!(
            v.bring_up_sets(true, |_, _| false),
            vec![(Op::VPortInfoSet, 1, 1, 0)],
            "INIT -> ARMED does not wait for the physical port"
        );
        assert_eq!(Vports::next_state(v.vport(1, 1, 0).unwrap()), state::ARMED);
        let lid = v.vport(1, 1, 0).unwrap().lid_want;
        v.on_vport_set(1, 1, 0, vpi(0x200, state::ARMED, true, lid.0));
        assert!(v.bring_up_sets(true, |_, _| true).is_empty());
        assert!(
            v.bring_up_sets(false, |_, _| false).is_empty(),
            "PF not ACTIVE"
        );
        assert_eq!(
            v.bring_up_sets(false, |_, _| true),
            vec![(Op::VPortInfoSet, 1, 1, 0)]
        );
        let mut keys = [0u16; VPORT_PKEYS];
        keys[0] = 0xFFFF;
        keys[1] = 0x8001;
        v.on_pkeys(1, 1, 0, keys);
        let lid = v.vport(1, 1, 0).unwrap().lid_want;
        v.on_vport_set(1, 1, 0, vpi(0x200, state::ACTIVE, true, lid.0));
        assert!(v.pkey_sets().is_empty());
        assert!(v.bring_up_sets(false, |_, _| true).is_empty());
    }

    #[test]
    fn alias_blocks_are_written_only_when_they_differ() {
        let mut v = Vports::default();
        let mut map = BTreeMap::new();
        map.insert(
            Guid(0x100),
            BTreeMap::from([(2u16, Guid(0xA2)), (9, Guid(0xA9))]),
        );
        assert!(v.set_aliases(&map));
        assert!(!v.set_aliases(&map), "the same aliases change nothing");
        assert_eq!(v.alias_managed().collect::<Vec<_>>(), vec![Guid(0x100)]);
        v.start(&[]);
        let gets = v.start_aliases(&[(4, 1, Guid(0x100))]);
        assert_eq!(gets, vec![(Op::GuidInfoGet, 4, 1, 0)]);
        let mut held = [Guid(0); 8];
        held[0] = Guid(0x100);
        v.on_guid_info(4, 1, held);
        assert_eq!(v.alias_sets(), vec![(Op::GuidInfoSet, 4, 1, 0)]);
        let want = v.alias_block(4, 1).unwrap();
        assert_eq!(want[2], Guid(0xA2));
        assert!(
            want[3..].iter().all(|g| g.0 == 0),
            "index 9 is beyond block 0"
        );
        v.on_guid_info(4, 1, want);
        assert!(v.alias_sets().is_empty());
        // The aliases go: the managed port is cleared.
        assert!(v.set_aliases(&BTreeMap::new()));
        assert_eq!(v.alias_sets(), vec![(Op::GuidInfoSet, 4, 1, 0)]);
        assert_eq!(v.alias_block(4, 1).unwrap()[2], Guid(0));
    }

    #[test]
    fn a_vport_lid_is_routed_as_its_physical_port() {
        let mut l = routing::Lfts {
            switches: vec![routing::SwitchLft {
                guid: Guid(1),
                lid: Lid(1),
                ports: vec![0xFF, 0, 3, 7],
            }],
        };
        route(&mut l, &[(Lid(6), Lid(3))]);
        assert_eq!(l.switches[0].ports, vec![0xFF, 0, 3, 7, 0xFF, 0xFF, 7]);
    }
}
