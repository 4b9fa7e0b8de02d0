//! Phase 2: one LFT per source switch.
//!
//! For switch `s`, a bit mask per destination switch `t` marks the output ports the engine
//! may use (the neighbour is one hop closer under the engine's rule). Destinations are
//! then taken in OpenSM's order ([`RoutingInput::routing_order`]); each picks among its
//! allowed ports the one that carries the fewest end-port destinations so far (lowest port
//! on a tie; for the further LIDs of an LMC port, the first port after the one the previous
//! LID took) after the engine's own preferences, and bumps that port's counter. Routes to
//! switch LIDs are not counted, as in OpenSM with its default `port_profile_switch_nodes
//! FALSE`. With these rules our min-hop and up/down tables equal OpenSM 3.3.23's entry for
//! entry on the same LIDs (tested on ibsim fat trees and a torus, LMC 0 and 2); OpenSM's
//! extra tie-break on `forwarded_to` (only reached when every next switch is already used
//! by the port's other LIDs) is not modelled.

use crate::engine::{Hints, Plan, ShardResult};
use crate::ftree_balance::Balance;
use crate::hops::{DOWN_ONLY, HopTable, UNREACHABLE};
use crate::input::{NONE, Peer, RoutingInput};
use crate::lft::NO_ROUTE;
use std::collections::HashMap;
use std::ops::Range;

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Move {
    /// Min-hop: any neighbour one hop closer.
    Any,
    /// Up/down: an up move is legal when `s` is not on a down-only route.
    Up,
    /// Up/down: a down move is legal only into a neighbour whose own route is down-only.
    Down,
}

/// True when a move of kind `mv` from a switch whose hop-table entry towards some
/// destination switch is `a` into a neighbour whose entry is `b` is legal and minimal.
#[inline(always)]
pub(crate) fn allowed(mv: Move, a: u8, b: u8) -> bool {
    match mv {
        Move::Any => a == b.wrapping_add(1),
        Move::Up => a == (b & !DOWN_ONLY) + 1,
        Move::Down => b >= DOWN_ONLY && b != UNREACHABLE && (a & !DOWN_ONLY) == b - DOWN_ONLY + 1,
    }
}

fn fill_masks(masks: &mut [u64], words: usize, p: usize, mv: Move, row_s: &[u8], row_m: &[u8]) {
    let bit = 1u64 << (p % 64);
    let w = p / 64;
    if words == 1 {
        // Separate loops per move kind keep the inner loop branch-free.
        macro_rules! fill {
            ($mv:expr) => {
                for ((m, &a), &b) in masks.iter_mut().zip(row_s).zip(row_m) {
                    *m |= (allowed($mv, a, b) as u64) << p;
                }
            };
        }
        match mv {
            Move::Any => fill!(Move::Any),
            Move::Up => fill!(Move::Up),
            Move::Down => fill!(Move::Down),
        }
    } else {
        for (t, (&a, &b)) in row_s.iter().zip(row_m).enumerate() {
            if allowed(mv, a, b) {
                masks[t * words + w] |= bit;
            }
        }
    }
}

/// Iterates the set bits of a multi-word mask as port numbers.
fn ports_of(mask: &[u64]) -> impl Iterator<Item = u8> + '_ {
    mask.iter().enumerate().flat_map(|(w, &word)| {
        let mut b = word;
        std::iter::from_fn(move || {
            if b == 0 {
                return None;
            }
            let i = b.trailing_zeros() as usize;
            b &= b - 1;
            Some((w * 64 + i) as u8)
        })
    })
}

fn has_port(mask: &[u64], p: u8) -> bool {
    mask.get(p as usize / 64)
        .is_some_and(|w| w & (1u64 << (p % 64)) != 0)
}

/// Least-loaded choice among a fixed set of ports, exact and amortised O(1): `at_min` holds
/// the ports whose count equals `min`; counts only grow, so a port found above `min` is
/// dropped lazily, and the set is rebuilt by one scan when it runs empty.
struct Class {
    mask: Box<[u64]>,
    min: u32,
    at_min: Box<[u64]>,
}

impl Class {
    fn new(mask: &[u64]) -> Class {
        Class {
            mask: mask.into(),
            min: 0,
            at_min: vec![0; mask.len()].into_boxed_slice(),
        }
    }

    /// The port with the least (count, port).
    fn take(&mut self, counters: &[u32]) -> Option<u8> {
        loop {
            for (w, word) in self.at_min.iter_mut().enumerate() {
                while *word != 0 {
                    let i = word.trailing_zeros() as usize;
                    let p = w * 64 + i;
                    if counters[p] == self.min {
                        return Some(p as u8);
                    }
                    *word &= *word - 1;
                }
            }
            let min = ports_of(&self.mask).map(|p| counters[p as usize]).min()?;
            self.min = min;
            for (w, word) in self.at_min.iter_mut().enumerate() {
                let mut b = self.mask[w];
                *word = 0;
                while b != 0 {
                    let i = b.trailing_zeros() as usize;
                    b &= b - 1;
                    if counters[w * 64 + i] == min {
                        *word |= 1u64 << i;
                    }
                }
            }
        }
    }
}

/// FxHash-style hasher for mask lookups (keys are small u64 slices).
#[derive(Default)]
struct MaskHasher(u64);

impl std::hash::Hasher for MaskHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
}

type MaskMap = HashMap<Box<[u64]>, u32, std::hash::BuildHasherDefault<MaskHasher>>;

/// The least-loaded port of `mask`; ties go to the first port met when scanning from port
/// `start` upwards and wrapping (OpenSM's scan order; `start` 1 means lowest port first).
/// `slots` is the number of port slots, management port included.
fn least_from(mask: &[u64], counters: &[u32], start: usize, slots: usize) -> Option<u8> {
    let shift = slots - start % slots;
    ports_of(mask).min_by_key(|&p| (counters[p as usize], (p as usize + shift) % slots))
}

/// One destination LID as the LFT loop reads it (see `compute_lfts`).
struct Step {
    lid: u32,
    /// Dense index of the switch the LID leads to.
    switch: u32,
    /// End port index, NONE for a switch LID.
    end: u32,
    /// Output port at that switch.
    port: u8,
    /// Not the first LID of its end port (LMC): the port scan starts after the previous
    /// LID's port.
    follows: bool,
    /// Fat-tree root chosen for the LID (NONE without a fat-tree plan).
    root: u32,
}

pub(crate) fn compute_lfts(
    plan: &Plan,
    input: &RoutingInput,
    hops: &HopTable,
    range: Range<usize>,
    hints: Option<&Hints<'_>>,
    balance: Option<&Balance>,
) -> ShardResult {
    let n = input.num_switches();
    let nports = input.max_ports() as usize + 1;
    let words = nports.div_ceil(64).max(1);
    let dests = input.dests();
    let nlids = dests.len();
    let mut masks = vec![0u64; n * words];
    let mut counters = vec![0u32; nports];
    let mut port_nbr = vec![NONE; nports];
    // Per neighbour switch: the mask of ports leading to it (reset through `touched`).
    let mut nbr_mask = vec![0u64; n * words];
    let mut touched: Vec<u32> = Vec::new();
    let mut class_of = vec![NONE; n];
    let mut class_ids: MaskMap = MaskMap::default();
    let mut classes: Vec<Class> = Vec::new();
    let any_lmc = input.end_ports.iter().any(|e| e.lids.lmc > 0);
    // LMC: per end port, the ports leading to next switches its LIDs already use.
    let mut used_by_port = vec![
        0u64;
        if any_lmc {
            input.end_ports.len() * words
        } else {
            0
        }
    ];
    let mut pref = vec![0u64; words];
    let mut out = Vec::with_capacity(range.len());
    let ft = plan.ftree.as_ref();
    let stride = ft.map_or(1, |f| f.max_level as usize + 1);
    let nroots = ft.map_or(0, |f| f.roots.len());
    // Fat-tree: ports of s leading up towards each root.
    let mut toward = vec![0u64; nroots * words];
    // What the inner loop reads per destination, once, in routing order: it runs for every
    // (switch, LID) pair, and reading the LID-indexed tables (destinations, end ports,
    // fat-tree roots and paths) there cost a cache miss each on large fabrics.
    let steps: Vec<Step> = input
        .routing_order()
        .iter()
        .map(|&lid16| {
            let lid = lid16 as usize;
            let d = &dests[lid];
            Step {
                lid: u32::from(lid16),
                switch: d.switch,
                end: d.end,
                port: d.port,
                follows: d.end != NONE
                    && lid > input.end_ports[d.end as usize].lids.base.0 as usize,
                root: ft.map_or(NONE, |f| f.lid_root[lid]),
            }
        })
        .collect();
    let step_paths: Vec<u32> = match ft {
        Some(f) => steps
            .iter()
            .flat_map(|st| {
                let lo = st.lid as usize * stride;
                f.lid_path[lo..lo + stride].iter().copied()
            })
            .collect(),
        None => Vec::new(),
    };

    for s in range.clone() {
        masks.iter_mut().for_each(|m| *m = 0);
        counters.iter_mut().for_each(|c| *c = 0);
        used_by_port.iter_mut().for_each(|w| *w = 0);
        port_nbr.iter_mut().for_each(|c| *c = NONE);
        for &m in &touched {
            nbr_mask[m as usize * words..(m as usize + 1) * words]
                .iter_mut()
                .for_each(|w| *w = 0);
        }
        touched.clear();
        let row_s = hops.row(s);
        for (p, peer) in input.ports(s).iter().enumerate() {
            if let Peer::Switch { sw, .. } = *peer {
                port_nbr[p] = sw;
                touched.push(sw);
                nbr_mask[sw as usize * words + p / 64] |= 1u64 << (p % 64);
                let mv = match &plan.dirs {
                    None => Move::Any,
                    Some(d) if d.is_up(s, sw as usize) => Move::Up,
                    Some(_) => Move::Down,
                };
                fill_masks(&mut masks, words, p, mv, row_s, hops.row(sw as usize));
            }
        }
        // The masks' classes.
        class_ids.clear();
        classes.clear();
        for t in 0..n {
            let m = &masks[t * words..(t + 1) * words];
            let bits: u32 = m.iter().map(|w| w.count_ones()).sum();
            class_of[t] = if bits < 2 {
                NONE
            } else if let Some(&c) = class_ids.get(m) {
                c
            } else {
                let c = classes.len() as u32;
                classes.push(Class::new(m));
                class_ids.insert(m.to_vec().into_boxed_slice(), c);
                c
            };
        }
        if let Some(f) = ft {
            toward.iter_mut().for_each(|w| *w = 0);
            let row_us = &f.updist[s * nroots..(s + 1) * nroots];
            for (p, &m) in port_nbr.iter().enumerate() {
                if m == NONE {
                    continue;
                }
                let row_um = &f.updist[m as usize * nroots..(m as usize + 1) * nroots];
                let bit = 1u64 << (p % 64);
                for (r, (&us, &um)) in row_us.iter().zip(row_um).enumerate() {
                    if us != UNREACHABLE && um.wrapping_add(1) == us {
                        toward[r * words + p / 64] |= bit;
                    }
                }
            }
        }
        let prev = hints.and_then(|h| h.table(s));
        let mut lft = vec![NO_ROUTE; nlids];
        for (i, d) in steps.iter().enumerate() {
            let lid = d.lid as usize;
            // OpenSM (port_profile_switch_nodes off) does not count routes to switches.
            let count = u32::from(d.end != NONE);
            let t = d.switch as usize;
            if t == s {
                lft[lid] = d.port;
                continue;
            }
            let mask = &masks[t * words..(t + 1) * words];
            let class = class_of[t];
            if class == NONE {
                // Zero or one allowed port.
                if let Some(p) = ports_of(mask).next() {
                    lft[lid] = p;
                    counters[p as usize] += count;
                }
                continue;
            }
            let kept = prev.and_then(|p| p.get(lid)).copied().unwrap_or(NO_ROUTE);
            if kept != NO_ROUTE && has_port(mask, kept) {
                lft[lid] = kept;
                counters[kept as usize] += count;
                continue;
            }
            // Fat-tree, degraded leaf: the globally balanced choice.
            if let Some(p) = balance
                .and_then(|b| b.port(s, lid))
                .filter(|&p| has_port(mask, p))
            {
                lft[lid] = p;
                counters[p as usize] += count;
                continue;
            }
            // Engine preferences narrow the set; the least-loaded port of it wins.
            let mut narrowed = false;
            // Further LIDs of an LMC port: OpenSM starts its port scan after the port the
            // previous LID took, so equal loads rotate.
            let start = if d.follows {
                lft[lid - 1] as usize + 1
            } else {
                1
            };
            let ft_dest = ft.filter(|_| d.end != NONE && d.root != NONE);
            if let Some(f) = ft_dest {
                // Down (by level) along the destination's chosen path when the next switch
                // of that path is a legal neighbour; otherwise up towards its root. (The
                // up*down* orientation may call a move down that climbs a level, near the
                // switches that join the roots: see `Directions::from_ranks`.)
                let down: &[u64] = if row_s[t] & DOWN_ONLY != 0 && f.level[s] > 0 {
                    let m = step_paths[i * stride + f.level[s] as usize - 1];
                    if m == NONE {
                        &[]
                    } else {
                        &nbr_mask[m as usize * words..(m as usize + 1) * words]
                    }
                } else {
                    &[]
                };
                for (w, pw) in pref.iter_mut().enumerate() {
                    *pw = mask[w] & down.get(w).copied().unwrap_or(0);
                }
                if pref.iter().all(|&w| w == 0) {
                    let r = d.root as usize;
                    let up = &toward[r * words..(r + 1) * words];
                    for (w, pw) in pref.iter_mut().enumerate() {
                        *pw = mask[w] & up[w];
                    }
                }
                narrowed = pref.iter().any(|&w| w != 0);
            } else if any_lmc && d.end != NONE {
                // LMC (OpenSM's enhanced mode): the LIDs of one end port prefer next switches
                // that its other LIDs do not use yet.
                let used = &used_by_port[d.end as usize * words..(d.end as usize + 1) * words];
                for (w, pw) in pref.iter_mut().enumerate() {
                    *pw = mask[w] & !used[w];
                }
                narrowed = pref.iter().any(|&w| w != 0) && pref != mask;
            }
            let chosen = if narrowed {
                if pref.iter().map(|w| w.count_ones()).sum::<u32>() == 1 {
                    ports_of(&pref).next()
                } else {
                    least_from(&pref, &counters, start, nports)
                }
            } else if start != 1 {
                least_from(mask, &counters, start, nports)
            } else {
                classes[class as usize].take(&counters)
            };
            if let Some(p) = chosen {
                lft[lid] = p;
                counters[p as usize] += count;
                if any_lmc && d.end != NONE {
                    let m = port_nbr[p as usize] as usize;
                    let e = d.end as usize;
                    for w in 0..words {
                        used_by_port[e * words + w] |= nbr_mask[m * words + w];
                    }
                }
            }
        }
        out.push(lft);
    }
    ShardResult {
        switches: range,
        lfts: out,
    }
}
