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
    // Non-short-circuit `&` (and wrapping arithmetic, whose result only counts when the
    // other terms hold): no branch, so `fill_byte` vectorises for every move kind.
    match mv {
        Move::Any => a == b.wrapping_add(1),
        Move::Up => a == (b & !DOWN_ONLY) + 1,
        Move::Down => {
            (b >= DOWN_ONLY)
                & (b != UNREACHABLE)
                & ((a & !DOWN_ONLY) == b.wrapping_sub(DOWN_ONLY).wrapping_add(1))
        }
    }
}

/// ORs port `p`'s bit (`bit`, within its byte of the masks) into `acc[t]` for every
/// destination switch `t` the port may lead to. Branch-free per destination, one loop per
/// move kind, on bytes: the loop vectorises 8 times wider than on the u64 masks.
fn fill_byte(acc: &mut [u8], bit: u8, mv: Move, row_s: &[u8], row_m: &[u8]) {
    macro_rules! fill {
        ($mv:expr) => {
            for ((m, &a), &b) in acc.iter_mut().zip(row_s).zip(row_m) {
                *m |= (allowed($mv, a, b) as u8).wrapping_neg() & bit;
            }
        };
    }
    match mv {
        Move::Any => fill!(Move::Any),
        Move::Up => fill!(Move::Up),
        Move::Down => fill!(Move::Down),
    }
}

/// ORs byte `g` of the masks (ports `8g .. 8g + 8`), gathered in `acc`, into `masks`.
fn merge_byte<const W: usize>(masks: &mut [[u64; W]], acc: &[u8], g: usize) {
    let (w, shift) = (g / 8, (g % 8) * 8);
    for (m, &a) in masks.iter_mut().zip(acc) {
        m[w] |= u64::from(a) << shift;
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
struct Class<const W: usize> {
    mask: [u64; W],
    min: u32,
    at_min: [u64; W],
}

impl<const W: usize> Class<W> {
    fn new(mask: [u64; W]) -> Class<W> {
        Class {
            mask,
            min: 0,
            at_min: [0; W],
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
                    *word |= u64::from(counters[w * 64 + i] == min) << i;
                }
            }
        }
    }

    /// [`Class::take`] when the caller then adds `count` to the port's counter: a port
    /// that leaves the minimum is dropped from `at_min` at once instead of at the next
    /// call (the same choices; the next call's first candidate is usually valid).
    fn take_counted(&mut self, counters: &[u32], count: u32) -> Option<u8> {
        let p = self.take(counters)?;
        if count > 0 {
            self.at_min[p as usize / 64] &= !(1u64 << (p % 64));
        }
        Some(p)
    }
}

/// FxHash-style hasher for mask lookups (keys are masks of one to four u64 words).
#[derive(Default)]
struct MaskHasher(u64);

impl std::hash::Hasher for MaskHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for c in bytes.chunks(8) {
            let mut v = [0u8; 8];
            v[..c.len()].copy_from_slice(c);
            self.write_u64(u64::from_le_bytes(v));
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
}

type MaskMap<const W: usize> = HashMap<[u64; W], u32, std::hash::BuildHasherDefault<MaskHasher>>;

/// The least-loaded port of `mask`; ties go to the first port met when scanning from port
/// `start` upwards and wrapping (OpenSM's scan order; `start` 1 means lowest port first).
/// `slots` is the number of port slots, management port included.
fn least_from(mask: &[u64], counters: &[u32], start: usize, slots: usize) -> Option<u8> {
    let shift = slots - start % slots;
    ports_of(mask).min_by_key(|&p| (counters[p as usize], (p as usize + shift) % slots))
}

/// One destination LID as the LFT loop reads it (see `compute_lfts`): 16 bytes, read for
/// every (switch, LID) pair.
struct Step {
    /// Dense index of the switch the LID leads to.
    switch: u32,
    /// End port index, NONE for a switch LID.
    end: u32,
    /// Fat-tree root chosen for the LID (NONE without a fat-tree plan).
    root: u32,
    /// Unicast LIDs fit in 16 bits.
    lid: u16,
    /// Output port at that switch.
    port: u8,
    /// Not the first LID of its end port (LMC): the port scan starts after the previous
    /// LID's port.
    follows: bool,
}

pub(crate) fn compute_lfts(
    plan: &Plan,
    input: &RoutingInput,
    hops: &HopTable,
    range: Range<usize>,
    hints: Option<&Hints<'_>>,
    balance: Option<&Balance>,
) -> ShardResult {
    // Port masks are arrays of as many 64-bit words as the widest switch needs (port
    // numbers are u8: at most 4), so that the loop below, which runs for every (switch,
    // LID) pair, works on fixed-size values; one function, compiled per width.
    let words = (input.max_ports() as usize + 1).div_ceil(64).max(1);
    match words {
        1 => lfts_of::<1>(plan, input, hops, range, hints, balance),
        2 => lfts_of::<2>(plan, input, hops, range, hints, balance),
        3 => lfts_of::<3>(plan, input, hops, range, hints, balance),
        _ => lfts_of::<4>(plan, input, hops, range, hints, balance),
    }
}

fn and<const W: usize>(a: &[u64; W], b: &[u64; W]) -> [u64; W] {
    std::array::from_fn(|w| a[w] & b[w])
}

fn is_empty<const W: usize>(m: &[u64; W]) -> bool {
    m.iter().all(|&w| w == 0)
}

fn ones<const W: usize>(m: &[u64; W]) -> u32 {
    m.iter().map(|w| w.count_ones()).sum()
}

/// [`compute_lfts`] with masks of `W` words.
fn lfts_of<const W: usize>(
    plan: &Plan,
    input: &RoutingInput,
    hops: &HopTable,
    range: Range<usize>,
    hints: Option<&Hints<'_>>,
    balance: Option<&Balance>,
) -> ShardResult {
    let n = input.num_switches();
    let nports = input.max_ports() as usize + 1;
    let dests = input.dests();
    let nlids = dests.len();
    // Per destination switch: the ports the engine allows towards it.
    let mut masks = vec![[0u64; W]; n];
    let mut acc = vec![0u8; n];
    let mut counters = vec![0u32; nports];
    let mut port_nbr = vec![NONE; nports];
    // Per neighbour switch: the mask of ports leading to it (reset through `touched`).
    let mut nbr_mask = vec![[0u64; W]; n];
    let mut touched: Vec<u32> = Vec::new();
    let mut class_of = vec![NONE; n];
    let mut class_ids: MaskMap<W> = MaskMap::default();
    let mut classes: Vec<Class<W>> = Vec::new();
    let any_lmc = input.end_ports.iter().any(|e| e.lids.lmc > 0);
    // LMC: per end port, the ports leading to next switches its LIDs already use.
    let mut used_by_port = vec![[0u64; W]; if any_lmc { input.end_ports.len() } else { 0 }];
    let mut out = Vec::with_capacity(range.len());
    let ft = plan.ftree.as_ref();
    let stride = ft.map_or(1, |f| f.max_level as usize + 1);
    let nroots = ft.map_or(0, |f| f.roots.len());
    // Fat-tree: ports of s leading up towards each root.
    let mut toward = vec![[0u64; W]; nroots];
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
                switch: d.switch,
                end: d.end,
                root: ft.map_or(NONE, |f| f.lid_root[lid]),
                lid: lid16,
                port: d.port,
                follows: d.end != NONE
                    && lid > input.end_ports[d.end as usize].lids.base.0 as usize,
            }
        })
        .collect();
    // Fat-tree: the switch on each destination's chosen path, per level then per step
    // (a source switch reads one level's run).
    let step_paths: Vec<u32> = match ft {
        Some(f) => (0..stride)
            .flat_map(|l| {
                steps
                    .iter()
                    .map(move |st| f.lid_path[st.lid as usize * stride + l])
            })
            .collect(),
        None => Vec::new(),
    };
    let nsteps = steps.len();

    for s in range.clone() {
        masks.fill([0; W]);
        counters.fill(0);
        used_by_port.fill([0; W]);
        port_nbr.fill(NONE);
        for &m in &touched {
            nbr_mask[m as usize] = [0; W];
        }
        touched.clear();
        let row_s = hops.row(s);
        // The masks, one byte (8 ports) at a time: the allowed moves of each port gathered
        // in `acc`, then ORed into the masks once per byte.
        for (g, group) in input.ports(s).chunks(8).enumerate() {
            let mut any = false;
            for (k, peer) in group.iter().enumerate() {
                let p = g * 8 + k;
                if let Peer::Switch { sw, .. } = *peer {
                    if !any {
                        acc.fill(0);
                        any = true;
                    }
                    port_nbr[p] = sw;
                    touched.push(sw);
                    nbr_mask[sw as usize][p / 64] |= 1u64 << (p % 64);
                    let mv = match &plan.dirs {
                        None => Move::Any,
                        Some(d) if d.is_up(s, sw as usize) => Move::Up,
                        Some(_) => Move::Down,
                    };
                    fill_byte(&mut acc, 1 << k, mv, row_s, hops.row(sw as usize));
                }
            }
            if any {
                merge_byte(&mut masks, &acc, g);
            }
        }
        // The masks' classes.
        class_ids.clear();
        classes.clear();
        for (m, class) in masks.iter().zip(class_of.iter_mut()) {
            *class = if ones(m) < 2 {
                NONE
            } else if let Some(&c) = class_ids.get(m) {
                c
            } else {
                let c = classes.len() as u32;
                classes.push(Class::new(*m));
                class_ids.insert(*m, c);
                c
            };
        }
        // Fat-tree: the switches one level below s on the destinations' paths (None at a
        // leaf).
        let mut below: Option<&[u32]> = None;
        if let Some(f) = ft {
            toward.fill([0; W]);
            let row_us = &f.updist[s * nroots..(s + 1) * nroots];
            for (p, &m) in port_nbr.iter().enumerate() {
                if m == NONE {
                    continue;
                }
                let row_um = &f.updist[m as usize * nroots..(m as usize + 1) * nroots];
                let bit = 1u64 << (p % 64);
                for (r, (&us, &um)) in row_us.iter().zip(row_um).enumerate() {
                    if us != UNREACHABLE && um.wrapping_add(1) == us {
                        toward[r][p / 64] |= bit;
                    }
                }
            }
            below = (f.level[s] > 0).then(|| {
                let l = f.level[s] as usize - 1;
                &step_paths[l * nsteps..(l + 1) * nsteps]
            });
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
            let mask = &masks[t];
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
            let mut pref = [0u64; W];
            // Further LIDs of an LMC port: OpenSM starts its port scan after the port the
            // previous LID took, so equal loads rotate.
            let start = if d.follows {
                lft[lid - 1] as usize + 1
            } else {
                1
            };
            if ft.is_some() && d.end != NONE && d.root != NONE {
                // Down (by level) along the destination's chosen path when the next switch
                // of that path is a legal neighbour; otherwise up towards its root. (The
                // up*down* orientation may call a move down that climbs a level, near the
                // switches that join the roots: see `Directions::from_ranks`.)
                if let Some(path) = below.filter(|_| row_s[t] & DOWN_ONLY != 0) {
                    let m = path[i];
                    if m != NONE {
                        pref = and(mask, &nbr_mask[m as usize]);
                    }
                }
                if is_empty(&pref) {
                    pref = and(mask, &toward[d.root as usize]);
                }
                narrowed = !is_empty(&pref);
            } else if any_lmc && d.end != NONE {
                // LMC (OpenSM's enhanced mode): the LIDs of one end port prefer next switches
                // that its other LIDs do not use yet.
                let used = &used_by_port[d.end as usize];
                pref = std::array::from_fn(|w| mask[w] & !used[w]);
                narrowed = !is_empty(&pref) && pref != *mask;
            }
            let chosen = if narrowed {
                if ones(&pref) == 1 {
                    ports_of(&pref).next()
                } else {
                    least_from(&pref, &counters, start, nports)
                }
            } else if start != 1 {
                least_from(mask, &counters, start, nports)
            } else {
                classes[class as usize].take_counted(&counters, count)
            };
            if let Some(p) = chosen {
                lft[lid] = p;
                counters[p as usize] += count;
                if any_lmc && d.end != NONE {
                    let m = port_nbr[p as usize] as usize;
                    let used = &mut used_by_port[d.end as usize];
                    for (u, nb) in used.iter_mut().zip(&nbr_mask[m]) {
                        *u |= nb;
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
