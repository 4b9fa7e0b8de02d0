//! Programming's part in intents and takeovers: the blocks of a sweep's intent, what a
//! rejected or failed intent leaves unknown, a previous master's intent laid over the
//! known tables (re-apply), and the LFT blocks read back after a foreign master.

use super::answers::{Wanted, desired, fields_differ};
use super::{Programming, Set};
use crate::discovery::Discovery;
use crate::intent::{LftBlockWrite, PKeyBlockWrite, PortChange};
use crate::io::Op;
use crate::state::NONE;
use fabric::{Guid, Lid};
use mad::LinearForwardingTable;
use routing::{BLOCK_LIDS, Lfts, NO_ROUTE, SwitchLft};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

impl Programming {
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
            if let Some(i) = disc.find(*g)
                && *p <= disc.node(i).nports
            {
                disc.port_of_mut(i, *p).pkey_known_valid = false;
            }
        }
    }

    /// Re-apply of a previous master's intent, LFT part: the known tables with the
    /// intent's blocks laid over them become the programmed tables. Returns the LFT Sets
    /// to queue and the switches not reached.
    pub fn reapply_lfts(
        &mut self,
        disc: &mut Discovery,
        blocks: &[LftBlockWrite],
    ) -> (Vec<Set>, Vec<Guid>) {
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
                    sets.push((Op::LftSet, node, 0, w.block));
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
    /// Returns the P_KeyTable Sets to queue and the ports not reached.
    pub fn reapply_pkeys(
        &self,
        disc: &mut Discovery,
        blocks: &[PKeyBlockWrite],
    ) -> (Vec<Set>, Vec<(Guid, u8)>) {
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
            sets.push((Op::PKeySet, node, w.port, w.block));
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
