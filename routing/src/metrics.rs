//! Route-quality metrics of a set of LFTs on a topology: hop-count distribution, unreachable
//! pairs, link loads for all-to-all and shift permutations, a channel-dependency-graph cycle
//! check and a loop check.
//!
//! Conventions: traffic flows between end ports (CA/router ports cabled to a switch), to
//! their base LIDs; hop counts count every link from source port to destination port (two
//! end ports on one switch are 2 hops apart). Link loads are counted on switch-to-switch
//! channels (one per direction of a link): the number of source/destination pairs whose path
//! uses the channel. Shift permutation `s` sends end port `i` to end port `(i + s) mod N`,
//! end ports numbered in [`RoutingInput::end_ports`] order (by switch, then port). The loop
//! check walks the tables from every switch to every used LID: a walk that revisits a switch
//! is a loop; one that reaches a "no route" entry or a wrong port is a dead end. The channel
//! dependency graphs are [`crate::cdg::check`]'s: per VL, from the routes of every switch
//! towards every used LID, switch LIDs included (switches send and receive GMPs on data VLs).

use crate::cdg::{self, PathVls, VlCdg};
use crate::input::{NONE, Peer, RoutingInput};
use crate::lft::{Lfts, NO_ROUTE};
use serde::Serialize;

/// Options for [`analyze`].
#[derive(Clone, Debug, Default)]
pub struct MetricsOptions {
    /// Shift distances to evaluate; None = a default set (1-8, 16-18, 32, 36, 64, N/3, N/2...).
    pub shifts: Option<Vec<usize>>,
    /// Which VL each path uses, for the deadlock check ([`crate::Routing::path_vls`] of
    /// the routing measured; default: every path on VL 0).
    pub vls: PathVls,
}

/// Link-load figures for one traffic pattern.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LoadStats {
    /// Largest number of pairs on one switch-to-switch channel.
    pub max_link_load: u64,
    /// Mean over all switch-to-switch channels.
    pub mean_link_load: f64,
    /// All-to-all on a fat tree: the cut lower bound for the busiest link
    /// ([`crate::ftree::all_to_all_lower_bound`]); None elsewhere and for other patterns.
    pub lower_bound: Option<u64>,
}

/// Shift-permutation figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ShiftStats {
    /// Shifts evaluated.
    pub shifts: Vec<usize>,
    /// Max link load per shift, in the same order.
    pub max_link_load_per_shift: Vec<u64>,
    /// The worst (largest) of them.
    pub max_link_load: u64,
    /// Mean link load of the worst shift.
    pub mean_link_load: f64,
    /// Pairs of the shifts that were not delivered.
    pub undelivered: u64,
}

/// Channel-dependency-graph figures (see [`crate::cdg`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CdgStats {
    /// Switch-to-switch channels.
    pub channels: usize,
    /// Distinct dependencies over every VL.
    pub dependencies: u64,
    /// True when the dependency graph of some VL has a cycle (a deadlock is possible).
    pub has_cycle: bool,
    /// VLs that carry paths.
    pub vls_used: Vec<u8>,
    /// Per VL: channels, dependencies, acyclicity, one cycle if any.
    pub per_vl: Vec<VlCdg>,
    /// Routes to switch LIDs are in the graphs.
    pub switch_lids_included: bool,
    /// Host traffic only, every path on one VL ([`cdg::check_hosts_only`]): the graph
    /// OpenSM's dfsssp and nue keep acyclic, for comparing with their claims.
    pub hosts_only: VlCdg,
}

/// Everything [`analyze`] measures.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Metrics {
    /// Switches.
    pub switches: usize,
    /// End ports (traffic endpoints).
    pub end_ports: usize,
    /// Ordered end-port pairs (N * (N - 1)).
    pub ca_pairs: u64,
    /// Pairs whose route delivers.
    pub routed_pairs: u64,
    /// Pairs without a working route.
    pub unreachable_pairs: u64,
    /// `hop_histogram[h]` = routed pairs `h` links apart.
    pub hop_histogram: Vec<u64>,
    /// Longest routed pair, in links.
    pub max_hops: u32,
    /// Mean over routed pairs, in links.
    pub mean_hops: f64,
    /// Worst shift-permutation max link load (1 = contention-free).
    pub max_link_load: u64,
    /// All-to-all link loads.
    pub all_to_all: LoadStats,
    /// Shift-permutation link loads.
    pub shift: ShiftStats,
    /// (switch, LID) walks checked.
    pub walks: u64,
    /// Walks that loop.
    pub loops: u64,
    /// Walks that end on "no route" or a wrong port.
    pub dead_ends: u64,
    /// Of those, walks towards switch LIDs (management traffic only).
    pub dead_ends_to_switches: u64,
    /// Longest walk in switch hops.
    pub max_switch_hops: u32,
    /// Switch-graph diameter (shortest paths), for comparison with `max_switch_hops`.
    pub diameter: u32,
    /// Channel-dependency-graph check.
    pub cdg: CdgStats,
}

const UNKNOWN: u32 = u32::MAX;
const ON_STACK: u32 = u32::MAX - 1;
const FAIL: u32 = u32::MAX - 2;
const LOOP: u32 = u32::MAX - 3;
const DELIVERED: u32 = u32::MAX - 1;
const DEAD: u32 = u32::MAX - 2;

/// Measures `lfts` (matched to `input`'s switches by GUID; a missing switch forwards
/// nothing) on `input`.
// Several arrays are indexed by switch in lock-step; index loops read clearest.
#[allow(clippy::needless_range_loop)]
pub fn analyze(input: &RoutingInput, lfts: &Lfts, opts: &MetricsOptions) -> Metrics {
    let n = input.num_switches();
    let tables = lfts.tables_for(input);
    let dests = input.dests();
    let nlids = dests.len();
    let nep = input.end_ports.len();
    let eps_at = input.end_ports_per_switch();
    let nchan = input.num_channels();
    let is_sw_chan: Vec<bool> = (0..n)
        .flat_map(|s| {
            input
                .ports(s)
                .iter()
                .map(|p| matches!(p, Peer::Switch { .. }))
        })
        .collect();
    let sw_channels = is_sw_chan.iter().filter(|&&b| b).count();

    let mut m = Metrics {
        switches: n,
        end_ports: nep,
        ca_pairs: (nep as u64) * (nep.saturating_sub(1) as u64),
        ..Metrics::default()
    };
    let mut hist: Vec<u64> = Vec::new();
    let mut a2a = vec![0u64; nchan];
    let mut next = vec![0u32; n];
    let mut next_port = vec![0u8; n];
    let mut res = vec![UNKNOWN; n];
    let mut stack: Vec<u32> = Vec::new();
    let mut count = vec![0u64; n];
    let mut order: Vec<u32> = Vec::with_capacity(n);
    let mut bucket: Vec<u32> = Vec::new();
    const B: usize = 64;
    let mut col = vec![NO_ROUTE; n * B];

    for block in (0..nlids).step_by(B) {
        let width = B.min(nlids - block);
        for (x, t) in tables.iter().enumerate() {
            for k in 0..width {
                col[x * B + k] = t.get(block + k).copied().unwrap_or(NO_ROUTE);
            }
        }
        for k in 0..width {
            let lid = block + k;
            let d = dests[lid];
            if lid == 0 || !d.is_used() {
                continue;
            }
            let dest_end = d.end;
            let ep_lids = (d.end != NONE).then(|| input.end_ports[d.end as usize].lids);
            // One step from every switch.
            for x in 0..n {
                let p = col[x * B + k];
                next_port[x] = p;
                next[x] = if p == NO_ROUTE {
                    DEAD
                } else if p == 0 {
                    if d.switch as usize == x && d.end == NONE {
                        DELIVERED
                    } else {
                        DEAD
                    }
                } else {
                    match input.ports(x).get(p as usize) {
                        Some(Peer::Switch { sw, .. }) => *sw,
                        Some(Peer::End(e)) => {
                            let l = input.end_ports[*e as usize].lids;
                            let lid16 = lid as u32;
                            if lid16 >= l.base.0 as u32 && lid16 < l.base.0 as u32 + l.count() {
                                DELIVERED
                            } else {
                                DEAD
                            }
                        }
                        _ => DEAD,
                    }
                };
            }
            // Resolve walk lengths.
            res.iter_mut().for_each(|r| *r = UNKNOWN);
            for x in 0..n {
                if res[x] != UNKNOWN {
                    continue;
                }
                stack.clear();
                let mut cur = x as u32;
                let tail = loop {
                    let c = cur as usize;
                    match res[c] {
                        ON_STACK => break LOOP,
                        UNKNOWN => {}
                        v => break v,
                    }
                    res[c] = ON_STACK;
                    stack.push(cur);
                    match next[c] {
                        DELIVERED => break 0u32.wrapping_sub(1), // becomes 0 below
                        DEAD => break FAIL,
                        nx => cur = nx,
                    }
                };
                // Unwind: each stacked switch is one hop further than its successor.
                let mut v = tail;
                for &y in stack.iter().rev() {
                    v = match v {
                        LOOP | FAIL => v,
                        _ => v.wrapping_add(1),
                    };
                    res[y as usize] = v;
                }
            }
            for x in 0..n {
                m.walks += 1;
                match res[x] {
                    LOOP => m.loops += 1,
                    FAIL => {
                        m.dead_ends += 1;
                        m.dead_ends_to_switches += u64::from(dest_end == NONE);
                    }
                    h => m.max_switch_hops = m.max_switch_hops.max(h),
                }
            }
            // Traffic metrics only for end-port base LIDs.
            let Some(l) = ep_lids else { continue };
            if l.base.0 as usize != lid {
                continue;
            }
            order.clear();
            bucket.clear();
            bucket.resize(n + 1, 0);
            for x in 0..n {
                let srcs = eps_at[x] as u64 - u64::from(x == d.switch as usize && dest_end != NONE);
                count[x] = srcs;
                match res[x] {
                    LOOP | FAIL => m.unreachable_pairs += srcs,
                    h => {
                        m.routed_pairs += srcs;
                        let hops = h as usize + 2;
                        if hist.len() <= hops {
                            hist.resize(hops + 1, 0);
                        }
                        hist[hops] += srcs;
                        bucket[h as usize] += 1;
                    }
                }
            }
            // Counting sort by distance, then push counts towards the destination.
            let mut acc = 0u32;
            for b in bucket.iter_mut() {
                let c = *b;
                *b = acc;
                acc += c;
            }
            order.resize(acc as usize, 0);
            for x in 0..n {
                let h = res[x];
                if h != LOOP && h != FAIL {
                    order[bucket[h as usize] as usize] = x as u32;
                    bucket[h as usize] += 1;
                }
            }
            for &x in order.iter().rev() {
                let x = x as usize;
                let nx = next[x];
                if nx < n as u32 && count[x] > 0 {
                    a2a[input.channel(x, next_port[x])] += count[x];
                    count[nx as usize] += count[x];
                }
            }
        }
    }
    m.hop_histogram = hist;
    let routed_hops: u64 = m
        .hop_histogram
        .iter()
        .enumerate()
        .map(|(h, &c)| h as u64 * c)
        .sum();
    m.max_hops = m.hop_histogram.iter().rposition(|&c| c > 0).unwrap_or(0) as u32;
    m.mean_hops = if m.routed_pairs > 0 {
        routed_hops as f64 / m.routed_pairs as f64
    } else {
        0.0
    };
    m.all_to_all = load_stats(&a2a, &is_sw_chan, sw_channels);
    m.all_to_all.lower_bound = crate::ftree::all_to_all_lower_bound(input);
    m.shift = shift_stats(input, &tables, opts, &is_sw_chan, sw_channels);
    m.max_link_load = m.shift.max_link_load;
    let rep = cdg::check(input, lfts, &opts.vls);
    m.cdg = CdgStats {
        channels: sw_channels,
        dependencies: rep.per_vl.iter().map(|v| v.dependencies).sum(),
        has_cycle: !rep.acyclic(),
        vls_used: rep.vls_used,
        per_vl: rep.per_vl,
        switch_lids_included: rep.switch_lids_included,
        hosts_only: cdg::check_hosts_only(input, lfts),
    };
    m.diameter = diameter(input);
    m
}

fn load_stats(load: &[u64], is_sw: &[bool], channels: usize) -> LoadStats {
    let (mut max, mut sum) = (0u64, 0u64);
    for (l, &sw) in load.iter().zip(is_sw) {
        if sw {
            max = max.max(*l);
            sum += *l;
        }
    }
    LoadStats {
        max_link_load: max,
        mean_link_load: if channels > 0 {
            sum as f64 / channels as f64
        } else {
            0.0
        },
        lower_bound: None,
    }
}

/// The default shift set for `n` end ports.
pub fn default_shifts(n: usize) -> Vec<usize> {
    let mut v: Vec<usize> = vec![1, 2, 3, 4, 5, 6, 7, 8, 16, 17, 18, 19, 32, 36, 64, 128, 324];
    v.extend([n / 3, n / 2, n.saturating_sub(1)]);
    v.retain(|&s| s >= 1 && s < n);
    v.sort_unstable();
    v.dedup();
    v
}

fn shift_stats(
    input: &RoutingInput,
    tables: &[&[u8]],
    opts: &MetricsOptions,
    is_sw: &[bool],
    channels: usize,
) -> ShiftStats {
    let eps = &input.end_ports;
    let n = eps.len();
    let shifts = opts.shifts.clone().unwrap_or_else(|| default_shifts(n));
    let mut st = ShiftStats {
        shifts: shifts.clone(),
        ..ShiftStats::default()
    };
    let mut load = vec![0u64; input.num_channels()];
    let bound = input.num_switches() + 1;
    for &sh in &shifts {
        load.iter_mut().for_each(|l| *l = 0);
        if n == 0 {
            st.max_link_load_per_shift.push(0);
            continue;
        }
        for (i, src) in eps.iter().enumerate() {
            let dst = &eps[(i + sh) % n];
            let lid = dst.lids.base.0 as usize;
            let mut x = src.switch as usize;
            let mut delivered = false;
            for _ in 0..bound {
                let p = tables[x].get(lid).copied().unwrap_or(NO_ROUTE);
                match input.ports(x).get(p as usize) {
                    Some(Peer::Switch { sw, .. }) if p != 0 => {
                        load[input.channel(x, p)] += 1;
                        x = *sw as usize;
                    }
                    Some(Peer::End(e)) if p != 0 => {
                        delivered = *e as usize == (i + sh) % n
                            || input.end_ports[*e as usize].lids == dst.lids;
                        break;
                    }
                    _ => break,
                }
            }
            if !delivered {
                st.undelivered += 1;
            }
        }
        let ls = load_stats(&load, is_sw, channels);
        st.max_link_load_per_shift.push(ls.max_link_load);
        if ls.max_link_load >= st.max_link_load {
            st.max_link_load = ls.max_link_load;
            st.mean_link_load = ls.mean_link_load;
        }
    }
    st
}

/// Largest shortest-path distance between two switches (0 for one switch).
pub fn diameter(input: &RoutingInput) -> u32 {
    let n = input.num_switches();
    let mut dist = vec![NONE; n];
    let mut queue = Vec::with_capacity(n);
    let mut best = 0;
    for s in 0..n {
        dist.iter_mut().for_each(|d| *d = NONE);
        queue.clear();
        dist[s] = 0;
        queue.push(s as u32);
        let mut h = 0;
        while h < queue.len() {
            let y = queue[h] as usize;
            h += 1;
            for &x in input.neighbours(y) {
                if dist[x as usize] == NONE {
                    dist[x as usize] = dist[y] + 1;
                    best = best.max(dist[y] + 1);
                    queue.push(x);
                }
            }
        }
    }
    best
}
