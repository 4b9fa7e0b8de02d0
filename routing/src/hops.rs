//! Phase 1: switch-to-switch hop tables, one breadth-first search per destination switch.
//!
//! Entry `(x, t)` is the number of switch-to-switch hops from switch `x` to switch `t`
//! under the engine's path rule, [`UNREACHABLE`] when there is no legal path. For the
//! directed rule (up/down, fat-tree) bit 7 ([`DOWN_ONLY`]) marks switches whose route to `t`
//! goes only down: such a switch may be entered from above on the way to `t`.
//!
//! Every pair of switches of a connected fabric has an up*down* path: [`Directions`] orders
//! the switches so that the orientation has a single local minimum. There is no fallback to
//! plain shortest paths (an earlier version kept one for pairs without a legal path, and
//! its down-then-up turns closed credit loops on fat trees with missing links).

use crate::error::RoutingError;
use crate::input::RoutingInput;
use std::ops::Range;

/// Entry value for "no legal path".
pub const UNREACHABLE: u8 = 0xFF;
/// Flag bit: the switch's route to this destination switch is down-only.
pub const DOWN_ONLY: u8 = 0x80;
/// Search marks (never left in a finished column: distances stay below [`MAX_HOPS`]).
const PENDING_U: u8 = 0x7F;
const PENDING_D: u8 = 0xFE;
/// Longest path the tables hold, in switch hops.
pub const MAX_HOPS: u8 = 100;

/// Up/down orientation of the switch graph: a total order on switches (`key`), "up" means
/// towards a smaller key. The orientation is acyclic, so up*down* paths cannot deadlock.
#[derive(Clone, Debug)]
pub struct Directions {
    /// Position of each switch in (rank, GUID) order; rank 0 = roots.
    pub key: Vec<u32>,
    up_start: Vec<u32>,
    up: Vec<u32>,
    down_start: Vec<u32>,
    down: Vec<u32>,
}

impl Directions {
    /// Orients the switch graph by `rank` (0 at the roots), ties broken by GUID, so that the
    /// orientation has exactly one local minimum per connected component.
    ///
    /// The order is a graph search from the first switch in (rank, GUID) order that always
    /// takes next the frontier switch with the least (rank, GUID): every switch but the first
    /// has a neighbour before it, so every up-walk ends at that first switch and every pair
    /// of switches is joined by an up*down* path. A plain sort by (rank, GUID) makes every
    /// root that has no root neighbour a local minimum (the spines of a fat tree); then
    /// pairs whose only paths turn up at a lower switch (spine to spine, or a spine towards
    /// a leaf it lost its link to) have no legal path at all. With a single root, or roots
    /// adjacent to each other, the search order equals the sort.
    pub fn from_ranks(input: &RoutingInput, rank: &[u32]) -> Directions {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let n = input.num_switches();
        let prio = |s: u32| Reverse((rank[s as usize], input.switches[s as usize].guid, s));
        let mut sorted: Vec<u32> = (0..n as u32).collect();
        sorted.sort_by_key(|&s| prio(s).0);
        let mut order: Vec<u32> = Vec::with_capacity(n);
        let mut queued = vec![false; n];
        let mut heap: BinaryHeap<Reverse<(u32, fabric::Guid, u32)>> = BinaryHeap::new();
        // One search: `starts` in this order, then the frontier, least priority first.
        let mut grow = |starts: &[u32], queued: &mut [bool], order: &mut Vec<u32>| {
            for &s in starts {
                queued[s as usize] = true;
            }
            let mut next = starts.iter().copied();
            while let Some(s) = next.next().or_else(|| heap.pop().map(|Reverse(p)| p.2)) {
                order.push(s);
                for &m in input.neighbours(s as usize) {
                    if !queued[m as usize] {
                        queued[m as usize] = true;
                        heap.push(prio(m));
                    }
                }
            }
        };
        // Several roots: the first rank-1 switch (by most root neighbours, then GUID) comes
        // right after a root it touches, before the other roots, so every root it touches
        // is below it and no later switch is squeezed between the roots.
        let roots = sorted
            .iter()
            .take_while(|&&s| rank[s as usize] == 0)
            .count();
        if roots > 1 {
            let root_nbrs = |s: u32| {
                input
                    .neighbours(s as usize)
                    .iter()
                    .filter(|&&m| rank[m as usize] == 0)
                    .count()
            };
            let hub = sorted
                .iter()
                .copied()
                .filter(|&s| rank[s as usize] == 1 && root_nbrs(s) > 0)
                .max_by_key(|&s| (root_nbrs(s), Reverse(prio(s).0)));
            if let Some(hub) = hub {
                let first = input
                    .neighbours(hub as usize)
                    .iter()
                    .copied()
                    .filter(|&m| rank[m as usize] == 0)
                    .min_by_key(|&m| prio(m).0);
                if let Some(first) = first {
                    grow(&[first, hub], &mut queued, &mut order);
                }
            }
        }
        for &start in &sorted {
            if !queued[start as usize] {
                grow(&[start], &mut queued, &mut order);
            }
        }
        let mut key = vec![0u32; n];
        for (pos, &s) in order.iter().enumerate() {
            key[s as usize] = pos as u32;
        }
        let (mut up_start, mut up, mut down_start, mut down) = (
            Vec::with_capacity(n + 1),
            Vec::new(),
            Vec::with_capacity(n + 1),
            Vec::new(),
        );
        for s in 0..n {
            up_start.push(up.len() as u32);
            down_start.push(down.len() as u32);
            for &m in input.neighbours(s) {
                if key[m as usize] < key[s] {
                    up.push(m);
                } else {
                    down.push(m);
                }
            }
        }
        up_start.push(up.len() as u32);
        down_start.push(down.len() as u32);
        Directions {
            key,
            up_start,
            up,
            down_start,
            down,
        }
    }

    /// Neighbours of `s` that are closer to the roots.
    pub fn ups(&self, s: usize) -> &[u32] {
        &self.up[self.up_start[s] as usize..self.up_start[s + 1] as usize]
    }

    /// Neighbours of `s` that are further from the roots.
    pub fn downs(&self, s: usize) -> &[u32] {
        &self.down[self.down_start[s] as usize..self.down_start[s + 1] as usize]
    }

    /// True when the move `from -> to` goes up.
    pub fn is_up(&self, from: usize, to: usize) -> bool {
        self.key[to] < self.key[from]
    }
}

/// Phase-1 result for a range of destination switches: one column per destination.
#[derive(Clone, Debug)]
pub struct HopShard {
    /// Destination switches covered.
    pub range: Range<usize>,
    /// `cols[(t - range.start) * S + x]` = entry (x, t).
    cols: Vec<u8>,
    too_deep: bool,
}

impl HopShard {
    /// The column of the `i`-th destination switch of the range: entry x is (x, t).
    pub(crate) fn col(&self, i: usize) -> &[u8] {
        let n = self.cols.len() / self.range.len().max(1);
        &self.cols[i * n..(i + 1) * n]
    }
}

/// The merged hop table, row-major by source switch: `data[x * S + t]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HopTable {
    n: usize,
    data: Vec<u8>,
}

impl HopTable {
    /// Number of switches.
    pub fn len(&self) -> usize {
        self.n
    }

    /// True when there are no switches.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Switch hops from `x` to `t` under the engine's rule, None when unreachable.
    pub fn hops(&self, x: usize, t: usize) -> Option<u8> {
        match self.data[x * self.n + t] {
            UNREACHABLE => None,
            v => Some(v & !DOWN_ONLY),
        }
    }

    /// The raw row of `x` (flags included).
    pub fn row(&self, x: usize) -> &[u8] {
        &self.data[x * self.n..(x + 1) * self.n]
    }

    /// Largest finite entry (the diameter under the engine's rule).
    pub fn max_hops(&self) -> u8 {
        (0..self.n)
            .flat_map(|x| (0..self.n).map(move |t| (x, t)))
            .filter_map(|(x, t)| self.hops(x, t))
            .max()
            .unwrap_or(0)
    }
}

fn plain_bfs(input: &RoutingInput, t: usize, col: &mut [u8], queue: &mut Vec<u32>) -> bool {
    col.iter_mut().for_each(|v| *v = UNREACHABLE);
    queue.clear();
    col[t] = 0;
    queue.push(t as u32);
    let mut head = 0;
    while head < queue.len() {
        let y = queue[head] as usize;
        head += 1;
        let d = col[y] + 1;
        if d > MAX_HOPS {
            return false;
        }
        for &x in input.neighbours(y) {
            if col[x as usize] == UNREACHABLE {
                col[x as usize] = d;
                queue.push(x);
            }
        }
    }
    true
}

/// Shards of at least this many destination switches are searched [`BATCH`] at a time
/// ([`batch_search`]: one pass over every edge per level for up to 64 destinations); fewer
/// (dfsssp asks for one at a time) one by one ([`queue_search`]: each edge once per
/// destination). Both give the same columns (tested).
const BATCH_MIN: usize = 16;
/// Destinations per [`batch_search`]: one bit each in a u64 per switch.
const BATCH: usize = 64;

/// Computes the columns of destination switches `range`. With `dirs` the legal paths are
/// up*down* (up/down, fat-tree); without, any shortest path (min-hop).
pub fn compute_hop_shard(
    input: &RoutingInput,
    dirs: Option<&Directions>,
    range: Range<usize>,
) -> HopShard {
    let n = input.num_switches();
    let mut cols = vec![UNREACHABLE; range.len() * n];
    let mut too_deep = false;
    if range.len() >= BATCH_MIN && n > 0 {
        let mut bufs = BatchBufs::new(n);
        for (b, chunk) in cols.chunks_mut(BATCH * n).enumerate() {
            let t0 = range.start + b * BATCH;
            too_deep |= batch_search(input, dirs, t0..t0 + chunk.len() / n, chunk, &mut bufs);
        }
    } else {
        let mut queue: Vec<u32> = Vec::with_capacity(n);
        let mut queue_b: Vec<u32> = Vec::with_capacity(n);
        for (i, t) in range.clone().enumerate() {
            let col = &mut cols[i * n..(i + 1) * n];
            too_deep |= queue_search(input, dirs, t, col, &mut queue, &mut queue_b);
        }
    }
    HopShard {
        range,
        cols,
        too_deep,
    }
}

/// One destination's column by a queue search; true when a path is longer than
/// [`MAX_HOPS`].
fn queue_search(
    input: &RoutingInput,
    dirs: Option<&Directions>,
    t: usize,
    col: &mut [u8],
    queue: &mut Vec<u32>,
    queue_b: &mut Vec<u32>,
) -> bool {
    queue.clear();
    match dirs {
        None => !plain_bfs(input, t, col, queue),
        Some(dirs) => {
            // Level-synchronous search from t over the two states of a switch: D (its
            // route goes only down: it may be entered from above) and U (it may go up
            // first, and down into a D neighbour; it is never entered from above). At
            // each distance a switch with an up neighbour one hop closer is U, one with
            // only a D neighbour below it one hop closer is D: every switch gets its
            // shortest up*down* distance, and a tie keeps the up moves open.
            col[t] = DOWN_ONLY;
            queue.push(t as u32);
            let mut head = 0;
            let mut d = 0u8;
            while head < queue.len() {
                let level_end = queue.len();
                if d >= MAX_HOPS {
                    return true;
                }
                queue_b.clear();
                for &y in &queue[head..level_end] {
                    let y = y as usize;
                    // x -> y is an up move for every x in downs(y).
                    for &x in dirs.downs(y) {
                        if col[x as usize] == UNREACHABLE {
                            col[x as usize] = PENDING_U;
                            queue_b.push(x);
                        } else if col[x as usize] == PENDING_D {
                            col[x as usize] = PENDING_U;
                        }
                    }
                    if col[y] & DOWN_ONLY != 0 {
                        for &x in dirs.ups(y) {
                            if col[x as usize] == UNREACHABLE {
                                col[x as usize] = PENDING_D;
                                queue_b.push(x);
                            }
                        }
                    }
                }
                head = level_end;
                d += 1;
                for &x in queue_b.iter() {
                    let c = &mut col[x as usize];
                    *c = if *c == PENDING_U { d } else { d | DOWN_ONLY };
                }
                queue.extend_from_slice(queue_b);
            }
            false
        }
    }
}

/// Per-switch bit sets of [`batch_search`] (bit k: destination k of the batch).
struct BatchBufs {
    /// Reached at any distance so far.
    seen: Vec<u64>,
    /// Reached at the current distance, and of those the down-only ones.
    front: Vec<u64>,
    front_d: Vec<u64>,
    /// Reached at the next distance, and of those the down-only ones.
    next: Vec<u64>,
    next_d: Vec<u64>,
}

impl BatchBufs {
    fn new(n: usize) -> BatchBufs {
        BatchBufs {
            seen: vec![0; n],
            front: vec![0; n],
            front_d: vec![0; n],
            next: vec![0; n],
            next_d: vec![0; n],
        }
    }
}

/// The columns of destination switches `ts` (at most 64; `cols` holds one column of `n`
/// entries per destination) in one level-synchronous search, the destinations as bits.
/// The rules of [`queue_search`], per switch x instead of per reached switch: x is reached
/// at distance d + 1 as U when a neighbour above it (`ups(x)`; without directions any
/// neighbour) was reached at d, otherwise as D when a neighbour below it (`downs(x)`) was
/// reached at d as D. True when a path is longer than [`MAX_HOPS`].
fn batch_search(
    input: &RoutingInput,
    dirs: Option<&Directions>,
    ts: Range<usize>,
    cols: &mut [u8],
    b: &mut BatchBufs,
) -> bool {
    let n = input.num_switches();
    b.seen.fill(0);
    b.front.fill(0);
    b.front_d.fill(0);
    for (k, t) in ts.clone().enumerate() {
        let bit = 1u64 << k;
        b.seen[t] |= bit;
        b.front[t] |= bit;
        if dirs.is_some() {
            b.front_d[t] |= bit;
            cols[k * n + t] = DOWN_ONLY;
        } else {
            cols[k * n + t] = 0;
        }
    }
    let mut live = !ts.is_empty();
    let mut d = 0u8;
    while live {
        if d >= MAX_HOPS {
            return true;
        }
        d += 1;
        for x in 0..n {
            let or = |ys: &[u32], f: &[u64]| ys.iter().fold(0u64, |a, &y| a | f[y as usize]);
            let (up, down) = match dirs {
                None => (or(input.neighbours(x), &b.front), 0),
                Some(dirs) => (or(dirs.ups(x), &b.front), or(dirs.downs(x), &b.front_d)),
            };
            let up = up & !b.seen[x];
            let down = down & !b.seen[x] & !up;
            b.next[x] = up | down;
            b.next_d[x] = down;
        }
        live = false;
        for x in 0..n {
            let mut new = b.next[x];
            if new == 0 {
                continue;
            }
            live = true;
            b.seen[x] |= new;
            let down = b.next_d[x];
            while new != 0 {
                let k = new.trailing_zeros() as usize;
                new &= new - 1;
                cols[k * n + x] = if down >> k & 1 != 0 { d | DOWN_ONLY } else { d };
            }
        }
        std::mem::swap(&mut b.front, &mut b.next);
        std::mem::swap(&mut b.front_d, &mut b.next_d);
    }
    false
}

/// Plain shortest switch-to-switch hops (no direction rule), one BFS per destination
/// switch, in `shards` jobs on `exec`: the hop table of engines whose paths are shortest
/// but which do not use the shared phases (torus-2QoS, dfsssp).
pub fn plain_table<X: crate::Executor>(
    input: &RoutingInput,
    exec: &X,
    shards: usize,
) -> Result<HopTable, RoutingError> {
    let shards = crate::split(input, shards);
    let parts = exec.map(shards.len(), |i| {
        compute_hop_shard(input, None, shards[i].switches.clone())
    });
    merge_hop_shards(input.num_switches(), parts)
}

/// Merges phase-1 shards (any order, must cover `0..S` exactly) into a row-major table.
pub fn merge_hop_shards(n: usize, shards: Vec<HopShard>) -> Result<HopTable, RoutingError> {
    let mut data = vec![UNREACHABLE; n * n];
    for sh in shards {
        if sh.too_deep {
            return Err(RoutingError::DiameterTooLarge { max: MAX_HOPS });
        }
        // Transpose in tiles so both sides stay in cache.
        const TILE: usize = 64;
        let cols = sh.range.len();
        for t0 in (0..cols).step_by(TILE) {
            for x0 in (0..n).step_by(TILE) {
                for ti in t0..(t0 + TILE).min(cols) {
                    let t = sh.range.start + ti;
                    let src = &sh.cols[ti * n..(ti + 1) * n];
                    for x in x0..(x0 + TILE).min(n) {
                        data[x * n + t] = src[x];
                    }
                }
            }
        }
    }
    Ok(HopTable { n, data })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::assign_lids_sequential;

    fn input(spec: &str) -> RoutingInput {
        let topo = spec
            .parse::<fabric::DegradedSpec>()
            .expect("valid spec")
            .generate()
            .expect("generates");
        let lids = assign_lids_sequential(&topo, 0).expect("LIDs fit");
        RoutingInput::new(&topo, &lids, None).expect("valid input")
    }

    /// The batched search (shards of 16 or more destinations) gives, column for column,
    /// what the queue search gives one destination at a time, with and without directions.
    #[test]
    fn batch_search_equals_queue_search() {
        for spec in [
            "ft2:12",
            "ft3:8",
            "ft3:12:remove=5:seed=3",
            "torus:5x4x3",
            "random:150:seed=7",
            "random:90:seed=2",
        ] {
            let input = input(spec);
            let n = input.num_switches();
            assert!(n >= BATCH_MIN, "{spec}: {n} switches");
            let roots = crate::updn::find_roots(&input, &[]).expect("roots");
            let updn = crate::updn::directions(&input, &roots).expect("directions");
            let ftree = crate::ftree::plan(&input).ok().map(|(_, d)| d);
            for dirs in [None, Some(&updn), ftree.as_ref()] {
                // Ranges that straddle a batch and end in a partial one.
                for range in [0..n, 1..n.min(BATCH + 9)] {
                    let batched = compute_hop_shard(&input, dirs, range.clone());
                    for (i, t) in range.clone().enumerate() {
                        let one = compute_hop_shard(&input, dirs, t..t + 1);
                        assert_eq!(batched.col(i), one.col(0), "{spec} t={t}");
                        assert!(!one.too_deep, "{spec}");
                    }
                    assert!(!batched.too_deep, "{spec}");
                }
            }
        }
    }
}
