//! Phase 2: one LFT per source switch.
//!
//! For switch `s`, a bit mask per destination switch `t` marks the output ports the engine
//! may use (the neighbour is one hop closer under the engine's rule). Destinations are
//! then taken in LID order; each picks among its allowed ports by the engine's tie-break
//! and bumps that port's counter.

use crate::engine::{Hints, Plan, ShardResult};
use crate::hops::{DOWN_ONLY, HopTable, UNREACHABLE};
use crate::input::{NONE, Peer, RoutingInput};
use crate::lft::NO_ROUTE;
use std::ops::Range;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Move {
    /// Min-hop: any neighbour one hop closer.
    Any,
    /// Up/down: an up move is legal when `s` is not on a down-only route.
    Up,
    /// Up/down: a down move is legal only into a neighbour whose own route is down-only.
    Down,
}

fn fill_masks(masks: &mut [u64], words: usize, p: usize, mv: Move, row_s: &[u8], row_m: &[u8]) {
    let bit = 1u64 << (p % 64);
    let w = p / 64;
    let cond = |a: u8, b: u8| -> bool {
        match mv {
            Move::Any => a == b.wrapping_add(1),
            Move::Up => a == (b & !DOWN_ONLY) + 1,
            Move::Down => b >= DOWN_ONLY && a == b.wrapping_add(1),
        }
    };
    if words == 1 {
        // Separate loops per move kind keep the inner loop branch-free.
        match mv {
            Move::Any => {
                for ((m, &a), &b) in masks.iter_mut().zip(row_s).zip(row_m) {
                    *m |= ((a == b.wrapping_add(1)) as u64) << p;
                }
            }
            Move::Up => {
                for ((m, &a), &b) in masks.iter_mut().zip(row_s).zip(row_m) {
                    *m |= ((a == (b & !DOWN_ONLY) + 1) as u64) << p;
                }
            }
            Move::Down => {
                for ((m, &a), &b) in masks.iter_mut().zip(row_s).zip(row_m) {
                    *m |= ((b >= DOWN_ONLY && a == b.wrapping_add(1)) as u64) << p;
                }
            }
        }
    } else {
        for (t, (&a, &b)) in row_s.iter().zip(row_m).enumerate() {
            if cond(a, b) {
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

pub(crate) fn compute_lfts(
    plan: &Plan,
    input: &RoutingInput,
    hops: &HopTable,
    range: Range<usize>,
    hints: Option<&Hints<'_>>,
) -> ShardResult {
    let n = input.num_switches();
    let nports = input.max_ports() as usize + 1;
    let words = nports.div_ceil(64).max(1);
    let dests = input.dests();
    let nlids = dests.len();
    let mut masks = vec![0u64; n * words];
    let mut fb_masks = vec![
        0u64;
        if hops.fallback_row(0).is_some() {
            n * words
        } else {
            0
        }
    ];
    let mut counters = vec![0u32; nports];
    let mut port_nbr = vec![NONE; nports];
    let mut sibling_nbrs: Vec<u32> = Vec::new();
    let mut last_end = NONE;
    let mut out = Vec::with_capacity(range.len());
    let ft = plan.ftree.as_ref();
    let stride = ft.map_or(1, |f| f.max_level as usize + 1);

    for s in range.clone() {
        masks.iter_mut().for_each(|m| *m = 0);
        fb_masks.iter_mut().for_each(|m| *m = 0);
        counters.iter_mut().for_each(|c| *c = 0);
        port_nbr.iter_mut().for_each(|c| *c = NONE);
        let row_s = hops.row(s);
        for (p, peer) in input.ports(s).iter().enumerate() {
            if let Peer::Switch { sw, .. } = *peer {
                port_nbr[p] = sw;
                let mv = match &plan.dirs {
                    None => Move::Any,
                    Some(d) if d.is_up(s, sw as usize) => Move::Up,
                    Some(_) => Move::Down,
                };
                fill_masks(&mut masks, words, p, mv, row_s, hops.row(sw as usize));
                if let (Some(fs), Some(fm)) = (hops.fallback_row(s), hops.fallback_row(sw as usize))
                {
                    fill_masks(&mut fb_masks, words, p, Move::Any, fs, fm);
                }
            }
        }
        let prev = hints.and_then(|h| h.table(s));
        let mut lft = vec![NO_ROUTE; nlids];
        for (lid, d) in dests.iter().enumerate().skip(1) {
            if !d.is_used() {
                continue;
            }
            let t = d.switch as usize;
            if t == s {
                lft[lid] = d.port;
                continue;
            }
            let mut mask = &masks[t * words..(t + 1) * words];
            if mask.iter().all(|&w| w == 0) {
                // No legal up*down* path: the plain shortest-path fallback, if any.
                match fb_masks.get(t * words..(t + 1) * words) {
                    Some(f) if f.iter().any(|&w| w != 0) => mask = f,
                    _ => continue,
                }
            }
            if let Some(&pp) = prev.and_then(|p| p.get(lid))
                && pp != NO_ROUTE
                && has_port(mask, pp)
            {
                lft[lid] = pp;
                counters[pp as usize] += 1;
                continue;
            }
            // LMC > 0: LIDs of one end port prefer next switches not used by its other LIDs.
            if d.end != last_end {
                last_end = d.end;
                sibling_nbrs.clear();
            }
            let lmc = d.end != NONE && input.end_ports[d.end as usize].lids.lmc > 0;
            let preferred = |p: u8| -> bool {
                let m = port_nbr[p as usize];
                if let Some(f) = ft
                    && d.end != NONE
                {
                    let root = f.lid_root[lid];
                    if root == NONE {
                        return true;
                    }
                    if row_s[t] & DOWN_ONLY != 0 {
                        let lvl = f.level[m as usize] as usize;
                        return f.lid_path[lid * stride + lvl] == m;
                    }
                    let base = root as usize * n;
                    let us = f.updist[base + s];
                    return us != UNREACHABLE && f.updist[base + m as usize].wrapping_add(1) == us;
                }
                !(lmc && sibling_nbrs.contains(&m))
            };
            let mut best: Option<(bool, u32, u8)> = None;
            for p in ports_of(mask) {
                let key = (!preferred(p), counters[p as usize], p);
                if best.is_none_or(|b| key < b) {
                    best = Some(key);
                }
            }
            if let Some((_, _, p)) = best {
                lft[lid] = p;
                counters[p as usize] += 1;
                if lmc {
                    sibling_nbrs.push(port_nbr[p as usize]);
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
