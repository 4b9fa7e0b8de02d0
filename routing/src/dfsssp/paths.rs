//! Stage 1 of dfsssp: balanced shortest paths.
//!
//! For every destination LID (OpenSM's order) a shortest-path tree towards its switch `t`:
//! each switch `x` forwards to a neighbour one hop closer to `t`, the one through which the
//! weight accumulated to `t` is least. Since only neighbours one hop closer are candidates,
//! every route is a minimal-hop route and the tree is a single-source shortest-path tree
//! (towards `t`) under the lexicographic cost (hops, weight): Dijkstra without a heap, by
//! hop levels. The levels are the destination switch's row of the hop table (links are
//! bidirectional, so distances to `t` equal distances from `t`), shared by every LID on
//! `t`; only the weights differ between LIDs.
//!
//! Weights: one per switch-to-switch channel, starting at 0. After a destination, each
//! channel gains the number of end ports (sources) whose route to it crosses the channel;
//! end ports on the destination's own switch cross none, and switches are not counted as
//! sources (their management traffic is light). Destinations go in batches of [`BATCH`]:
//! every destination of a batch sees the weights as of the batch's start, its tree is
//! computed in parallel with the others of the batch (the jobs of [`Executor::map`]), and the
//! batch's weight increments are added afterwards. Integer sums do not depend on the order,
//! and the batch size does not depend on the workers, so the tables are the same for any
//! worker or shard count.
//!
//! Ties (equal weight through two neighbours) go to the smaller value of a fixed hash of
//! (LID, switch, port): a batch's destinations see the same weights, and a hash spreads
//! their tied choices instead of sending them all through the lowest port.

use crate::engine::Executor;
use crate::hops::{HopTable, UNREACHABLE};
use crate::input::{NONE, Peer, RoutingInput};
use crate::lft::NO_ROUTE;

/// Destinations per batch (a constant: the result must not depend on the worker count).
pub const BATCH: usize = 32;

/// One destination's tree: the output port of every switch (NO_ROUTE: unreachable), and the
/// weight increments it causes, as (global channel, sources crossing it).
struct Tree {
    ports: Vec<u8>,
    deltas: Vec<(u32, u64)>,
}

/// Per-job scratch space: the hop levels of the last destination switch, and the tree's
/// costs and source counts.
struct Scratch {
    /// Destination switch whose levels `order` holds (NONE: none yet).
    t: u32,
    /// Reachable switches by increasing distance to `t` (`t` first).
    order: Vec<u32>,
    cost: Vec<u64>,
    next: Vec<u32>,
    count: Vec<u64>,
}

impl Scratch {
    fn new(n: usize) -> Scratch {
        Scratch {
            t: NONE,
            order: Vec::with_capacity(n),
            cost: vec![0; n],
            next: vec![NONE; n],
            count: vec![0; n],
        }
    }

    /// Orders the switches by their distance to `t` (a counting sort of `t`'s hop row).
    fn levels(&mut self, dist: &[u8], t: u32) {
        if self.t == t {
            return;
        }
        self.t = t;
        let mut start = [0u32; 257];
        for &d in dist {
            if d != UNREACHABLE {
                start[d as usize + 1] += 1;
            }
        }
        for i in 1..start.len() {
            start[i] += start[i - 1];
        }
        let reachable = start[256] as usize;
        self.order.clear();
        self.order.resize(reachable, 0);
        for (x, &d) in dist.iter().enumerate() {
            if d != UNREACHABLE {
                self.order[start[d as usize] as usize] = x as u32;
                start[d as usize] += 1;
            }
        }
    }
}

/// A fixed 64-bit mix (SplitMix64's finaliser): the deterministic tie-break.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The tree of destination `lid` under `weights`.
fn tree(
    input: &RoutingInput,
    hops: &HopTable,
    weights: &[u64],
    sources: &[u32],
    lid: u16,
    sc: &mut Scratch,
) -> Tree {
    let n = input.num_switches();
    let mut ports = vec![NO_ROUTE; n];
    let mut deltas = Vec::new();
    let d = input.dest(lid);
    if !d.is_used() {
        return Tree { ports, deltas };
    }
    let t = d.switch;
    // Plain BFS hops on an undirected graph: row t is also the column of distances to t.
    let dist = hops.row(t as usize);
    sc.levels(dist, t);
    ports[t as usize] = d.port;
    sc.cost[t as usize] = 0;
    sc.next[t as usize] = NONE;
    for &x in &sc.order[1..] {
        let x = x as usize;
        let closer = dist[x].wrapping_sub(1);
        let mut best: Option<(u64, u64, u8, u32)> = None;
        for (p, peer) in input.ports(x).iter().enumerate() {
            let Peer::Switch { sw, .. } = *peer else {
                continue;
            };
            if dist[sw as usize] != closer {
                continue;
            }
            let c = sc.cost[sw as usize] + weights[input.channel(x, p as u8)];
            let tie = mix(u64::from(lid) << 40 | (x as u64) << 8 | p as u64);
            if best.is_none_or(|(bc, bt, _, _)| (c, tie) < (bc, bt)) {
                best = Some((c, tie, p as u8, sw));
            }
        }
        // Invariant: x is at distance >= 1 from t in a BFS tree, so some neighbour is one
        // hop closer; a switch without one would not be in `order`.
        if let Some((c, _, p, y)) = best {
            sc.cost[x] = c;
            sc.next[x] = y;
            ports[x] = p;
        }
    }
    // Weight increments: end ports of each switch follow its route; push the counts from
    // the farthest switches towards t.
    let own = u32::from(d.end != NONE);
    for &x in &sc.order {
        let x = x as usize;
        sc.count[x] = u64::from(sources[x] - if x == t as usize { own } else { 0 });
    }
    for &x in sc.order[1..].iter().rev() {
        let x = x as usize;
        let k = sc.count[x];
        let y = sc.next[x];
        if k == 0 || y == NONE {
            continue;
        }
        deltas.push((input.channel(x, ports[x]) as u32, k));
        sc.count[y as usize] += k;
    }
    Tree { ports, deltas }
}

/// Balanced shortest-path LFTs: one table per switch (index = LID, `max_lid + 1` entries),
/// in the order of `input.switches`. `shards` jobs per batch on `exec`.
pub(crate) fn route_paths<X: Executor>(
    input: &RoutingInput,
    hops: &HopTable,
    exec: &X,
    shards: usize,
) -> Vec<Vec<u8>> {
    let n = input.num_switches();
    let nlids = input.max_lid() as usize + 1;
    let mut tables = vec![vec![NO_ROUTE; nlids]; n];
    let mut weights = vec![0u64; input.num_channels()];
    let sources = input.end_ports_per_switch();
    for batch in input.routing_order().chunks(BATCH) {
        let jobs = shards.clamp(1, batch.len());
        let w = &weights;
        let parts = exec.map(jobs, |j| {
            let mut sc = Scratch::new(n);
            batch[j * batch.len() / jobs..(j + 1) * batch.len() / jobs]
                .iter()
                .map(|&lid| tree(input, hops, w, &sources, lid, &mut sc))
                .collect::<Vec<_>>()
        });
        for (&lid, tr) in batch.iter().zip(parts.into_iter().flatten()) {
            for (table, &p) in tables.iter_mut().zip(&tr.ports) {
                table[lid as usize] = p;
            }
            for (c, k) in tr.deltas {
                weights[c as usize] += k;
            }
        }
    }
    tables
}
