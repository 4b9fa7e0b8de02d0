//! Stage 1 of dfsssp: balanced shortest paths.
//!
//! Destinations are routed in units: the LIDs of one destination switch `t` (its end ports'
//! LIDs and its own) are dealt round robin, in OpenSM's order
//! ([`RoutingInput::routing_order`]), into `groups` groups, and each group shares one tree;
//! units go in the order of their first LID. Per-LID trees balance links best, but the
//! layering gives one SL per (source switch, destination switch) pair, so the more
//! different routes a pair has, the more dependencies its layer must hold: 4 groups balance
//! better than one tree per LID on random fabrics (4,572 vs 4,932 busiest all-to-all link
//! on random:256, min-hop 5,232) in 5 layers instead of 7; a torus needs one group and
//! ties to the lowest port ([`super::GROUP_STEPS`]).
//!
//! A unit's tree: each switch `x` forwards to a neighbour one hop closer to `t`, the one
//! through which the weight accumulated to `t` is least. Since only neighbours one hop
//! closer are candidates, every route is a minimal-hop route and the tree is a
//! single-source shortest-path tree (towards `t`) under the lexicographic cost (hops,
//! weight): Dijkstra without a heap, by hop levels. The levels are the destination switch's
//! row of the hop table (links are bidirectional, so distances to `t` equal distances from
//! `t`) and are kept, with each switch's candidate next hops, for the next unit on `t`.
//!
//! Switches without end ports receive management traffic only (their own LID): their
//! trees are up*down* under the up/down orientation ([`crate::updn`]) instead, the shortest
//! such (two-state hop levels of [`crate::hops`]: a switch entered from above only goes
//! down), balanced by the same weights. Their routes then agree with the layering's
//! starting order, so on fat trees, where shortest routes between spines and cores must
//! turn down then up, every pair still fits one layer.
//!
//! Weights: one per switch-to-switch channel, starting at 0. After a unit, each channel
//! gains the number of end ports (sources) times the unit's LIDs whose route crosses the
//! channel; end ports on the destination's own switch cross none, and switches are not
//! counted as sources (their management traffic is light).
//!
//! Parallel yet the same for any worker count: units go in batches of [`LANES`] x
//! [`CHUNK`] consecutive units; lane `i` of a batch routes the batch's `i`-th chunk, one
//! unit after the other, each seeing the weights as of the batch's start plus the
//! increments of the lane's earlier units. The lanes are the jobs of [`Executor::map`];
//! after a batch every increment is added to the weights (integer sums do not depend on
//! the order). Lanes and chunks are constants, so the tables do not depend on the worker
//! or shard count.
//!
//! Ties (equal weight through two neighbours) go, with `spread`, to the smaller value of a
//! fixed hash of (unit's first LID, switch, port): a batch's units see the same weights,
//! and a hash spreads their tied choices instead of sending them all through the lowest
//! port. Without `spread` they go to the lowest port: on tori and meshes, whose ports
//! follow the dimensions, tied routes then turn alike (close to dimension order), which
//! closes fewer cycles and saves layers (a 6x6x6 torus with 2 hosts per switch fits 8
//! layers only so).

use crate::engine::Executor;
use crate::hops::{self, DOWN_ONLY, Directions, HopTable, UNREACHABLE};
use crate::input::{NONE, Peer, RoutingInput};
use crate::lft::NO_ROUTE;
use std::sync::Mutex;

/// Parallel lanes per batch (a constant: the result must not depend on the worker count).
pub const LANES: usize = 4;
/// Consecutive destinations one lane routes in order within a batch.
pub const CHUNK: usize = 8;

/// One destination's tree: the output port of every switch (NO_ROUTE: unreachable), and the
/// weight increments it causes, as (global channel, sources crossing it).
struct Tree {
    ports: Vec<u8>,
    deltas: Vec<(u32, u64)>,
}

/// A candidate hop towards the cached destination switch: port, next switch, channel.
#[derive(Clone, Copy)]
struct Hop {
    port: u8,
    next: u32,
    channel: u32,
}

/// Per-lane state kept across batches: the hop levels and candidate hops of the last
/// destination switch, the tree's costs and source counts, and the lane's own weight
/// increments of the current batch.
struct Lane {
    /// Destination switch the levels and candidates are for (NONE: none yet), and
    /// whether they are up*down* ones.
    t: u32,
    updown: bool,
    /// Reachable switches by increasing distance to `t` (`t` first).
    order: Vec<u32>,
    /// Candidates of `order[i]` (i >= 1): `cands[cand_start[i - 1]..cand_start[i]]`.
    cand_start: Vec<u32>,
    cands: Vec<Hop>,
    cost: Vec<u64>,
    next: Vec<u32>,
    count: Vec<u64>,
    /// Weight increments of this lane's earlier destinations in the batch.
    local: Vec<u64>,
    touched: Vec<u32>,
}

impl Lane {
    fn new(n: usize, channels: usize) -> Lane {
        Lane {
            t: NONE,
            updown: false,
            order: Vec::with_capacity(n),
            cand_start: Vec::with_capacity(n),
            cands: Vec::new(),
            cost: vec![0; n],
            next: vec![NONE; n],
            count: vec![0; n],
            local: vec![0; channels],
            touched: Vec::new(),
        }
    }

    /// Orders the switches by distance to `t` and lists each one's candidate next hops:
    /// neighbours one hop closer (`dirs` None: plain shortest paths, `dist` is `t`'s row of
    /// the hop table), or the up*down* moves one hop closer under `dirs` (a switch that is
    /// entered from above, down-only towards `t`, only goes down).
    fn levels(&mut self, input: &RoutingInput, dist: &[u8], t: u32, dirs: Option<&Directions>) {
        if self.t == t && self.updown == dirs.is_some() {
            return;
        }
        self.t = t;
        self.updown = dirs.is_some();
        let level = |v: u8| {
            if dirs.is_some() && v != UNREACHABLE {
                v & !DOWN_ONLY
            } else {
                v
            }
        };
        let mut start = [0u32; 257];
        for &d in dist {
            if d != UNREACHABLE {
                start[level(d) as usize + 1] += 1;
            }
        }
        for i in 1..start.len() {
            start[i] += start[i - 1];
        }
        self.order.clear();
        self.order.resize(start[256] as usize, 0);
        for (x, &d) in dist.iter().enumerate() {
            if d != UNREACHABLE {
                let l = level(d) as usize;
                self.order[start[l] as usize] = x as u32;
                start[l] += 1;
            }
        }
        self.cands.clear();
        self.cand_start.clear();
        for &x in &self.order[1..] {
            let x = x as usize;
            let closer = level(dist[x]).wrapping_sub(1);
            for (p, peer) in input.ports(x).iter().enumerate() {
                let Peer::Switch { sw, .. } = *peer else {
                    continue;
                };
                let y = sw as usize;
                if dist[y] == UNREACHABLE || level(dist[y]) != closer {
                    continue;
                }
                if let Some(dirs) = dirs {
                    let up = dirs.key[y] < dirs.key[x];
                    let legal = if up {
                        dist[x] & DOWN_ONLY == 0
                    } else {
                        dist[y] & DOWN_ONLY != 0
                    };
                    if !legal {
                        continue;
                    }
                }
                self.cands.push(Hop {
                    port: p as u8,
                    next: sw,
                    channel: input.channel(x, p as u8) as u32,
                });
            }
            self.cand_start.push(self.cands.len() as u32);
        }
    }

    /// Forgets the lane's increments (a new batch starts from the global weights).
    fn reset(&mut self) {
        for &c in &self.touched {
            self.local[c as usize] = 0;
        }
        self.touched.clear();
    }
}

/// What every tree of a run reads.
#[derive(Clone, Copy)]
struct Ctx<'a> {
    input: &'a RoutingInput,
    hops: &'a HopTable,
    /// End ports per switch.
    sources: &'a [u32],
    /// The up/down orientation for switch-only destinations.
    dirs: Option<&'a Directions>,
    /// Ties by a hash (true) or to the lowest port.
    spread: bool,
}

/// A fixed 64-bit mix (SplitMix64's finaliser): the deterministic tie-break.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The tree of destination `lid` under `weights` plus the lane's increments, which it then
/// extends by its own.
fn tree(cx: &Ctx<'_>, weights: &[u64], unit: &[u16], ln: &mut Lane) -> Tree {
    let Ctx {
        input,
        hops,
        sources,
        dirs,
        spread,
    } = *cx;
    let n = input.num_switches();
    let mut ports = vec![NO_ROUTE; n];
    let mut deltas = Vec::new();
    let Some(&lid) = unit.first() else {
        return Tree { ports, deltas };
    };
    let d = input.dest(lid);
    if !d.is_used() {
        return Tree { ports, deltas };
    }
    let t = d.switch;
    // Switch-only destinations go up*down* (see the module documentation).
    let updown = dirs.filter(|_| sources[t as usize] == 0);
    if let Some(dirs) = updown {
        if ln.t != t || !ln.updown {
            let shard = hops::compute_hop_shard(input, Some(dirs), t as usize..t as usize + 1);
            ln.levels(input, shard.col(0), t, Some(dirs));
        }
    } else {
        // Plain BFS hops on an undirected graph: row t is also the column of distances to t.
        ln.levels(input, hops.row(t as usize), t, None);
    }
    ports[t as usize] = d.port;
    ln.cost[t as usize] = 0;
    ln.next[t as usize] = NONE;
    let mut from = 0;
    for (i, &x) in ln.order[1..].iter().enumerate() {
        let x = x as usize;
        let to = ln.cand_start[i] as usize;
        let cands = &ln.cands[from..to];
        from = to;
        // Invariant: x is at distance >= 1 from t on a BFS level, so it has at least one
        // neighbour one hop closer.
        let Some(first) = cands.first() else { continue };
        let cost = |h: &Hop| {
            ln.cost[h.next as usize] + weights[h.channel as usize] + ln.local[h.channel as usize]
        };
        let mut best = *first;
        let mut best_cost = cost(first);
        let mut best_tie = None;
        for h in &cands[1..] {
            let c = cost(h);
            if c > best_cost {
                continue;
            }
            if c == best_cost {
                let key = |p: u8| {
                    if spread {
                        mix(u64::from(lid) << 40 | (x as u64) << 8 | u64::from(p))
                    } else {
                        u64::from(p)
                    }
                };
                let bt = *best_tie.get_or_insert_with(|| key(best.port));
                let tie = key(h.port);
                if tie >= bt {
                    continue;
                }
                best_tie = Some(tie);
            } else {
                best_tie = None;
            }
            best = *h;
            best_cost = c;
        }
        ln.cost[x] = best_cost;
        ln.next[x] = best.next;
        ports[x] = best.port;
    }
    // Weight increments: end ports of each switch follow its route; push the counts from
    // the farthest switches towards t.
    let k = unit.len() as u64;
    for &x in &ln.order {
        let x = x as usize;
        ln.count[x] = u64::from(sources[x]) * k;
    }
    // End ports of t itself cross no channel; zeroed for clarity.
    ln.count[t as usize] = 0;
    for &x in ln.order[1..].iter().rev() {
        let x = x as usize;
        let k = ln.count[x];
        let y = ln.next[x];
        if k == 0 || y == NONE {
            continue;
        }
        let c = input.channel(x, ports[x]);
        deltas.push((c as u32, k));
        if ln.local[c] == 0 {
            ln.touched.push(c as u32);
        }
        ln.local[c] += k;
        ln.count[y as usize] += k;
    }
    Tree { ports, deltas }
}

/// Routing units: the LIDs of one destination switch in [`GROUPS`] groups (round robin in
/// OpenSM's order), each group one tree; units in the order of their first LID.
fn units(input: &RoutingInput, groups: usize) -> Vec<Vec<u16>> {
    let n = input.num_switches();
    let mut seen = vec![0usize; n];
    for &lid in input.routing_order() {
        let d = input.dest(lid);
        if d.is_used() {
            seen[d.switch as usize] += 1;
        }
    }
    // More groups than LIDs on any switch: one unit per LID.
    let groups = groups.clamp(1, seen.iter().copied().max().unwrap_or(1).max(1));
    seen.iter_mut().for_each(|c| *c = 0);
    let mut unit_of: Vec<usize> = vec![usize::MAX; n * groups];
    let mut units: Vec<Vec<u16>> = Vec::new();
    for &lid in input.routing_order() {
        let d = input.dest(lid);
        if !d.is_used() {
            continue;
        }
        let t = d.switch as usize;
        let g = seen[t] % groups;
        seen[t] += 1;
        let slot = &mut unit_of[t * groups + g];
        if *slot == usize::MAX {
            *slot = units.len();
            units.push(Vec::new());
        }
        units[*slot].push(lid);
    }
    units
}

/// Balanced shortest-path LFTs: one table per switch (index = LID, `max_lid + 1` entries),
/// in the order of `input.switches`. The lanes of a batch are the jobs on `exec`.
pub(crate) fn route_paths<X: Executor>(
    input: &RoutingInput,
    hops: &HopTable,
    dirs: Option<&Directions>,
    groups: usize,
    spread: bool,
    exec: &X,
) -> Vec<Vec<u8>> {
    let n = input.num_switches();
    let nlids = input.max_lid() as usize + 1;
    let mut tables = vec![vec![NO_ROUTE; nlids]; n];
    let mut weights = vec![0u64; input.num_channels()];
    let sources = input.end_ports_per_switch();
    // One lane state per lane, reused by every batch; each job locks only its own.
    let lanes: Vec<Mutex<Lane>> = (0..LANES)
        .map(|_| Mutex::new(Lane::new(n, input.num_channels())))
        .collect();
    let units = units(input, groups);
    let cx = Ctx {
        input,
        hops,
        sources: &sources,
        dirs,
        spread,
    };
    for batch in units.chunks(LANES * CHUNK) {
        let w = &weights;
        let chunks: Vec<&[Vec<u16>]> = batch.chunks(CHUNK).collect();
        let parts = exec.map(chunks.len(), |j| {
            // A poisoned lock can only follow a panic in another job, which the executor
            // propagates; the lane state is reset before use anyway.
            let mut ln = lanes[j].lock().unwrap_or_else(|e| e.into_inner());
            ln.reset();
            chunks[j]
                .iter()
                .map(|unit| tree(&cx, w, unit, &mut ln))
                .collect::<Vec<_>>()
        });
        let trees: Vec<Tree> = parts.into_iter().flatten().collect();
        // Switch by switch, so each table is written in one place per batch.
        for (x, table) in tables.iter_mut().enumerate() {
            for (unit, tr) in batch.iter().zip(&trees) {
                for &lid in unit {
                    table[lid as usize] = tr.ports[x];
                }
            }
        }
        for (unit, tr) in batch.iter().zip(trees) {
            for &lid in unit {
                let d = input.dest(lid);
                if d.is_used() {
                    tables[d.switch as usize][lid as usize] = d.port;
                }
            }
            for (c, k) in tr.deltas {
                weights[c as usize] += k;
            }
        }
    }
    tables
}
