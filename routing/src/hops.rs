//! Phase 1: switch-to-switch hop tables, one breadth-first search per destination switch.
//!
//! Entry `(x, t)` is the number of switch-to-switch hops from switch `x` to switch `t`
//! under the engine's path rule, [`UNREACHABLE`] when there is no legal path. For the
//! directed rule (up/down, fat-tree) bit 7 ([`DOWN_ONLY`]) marks switches whose route to `t`
//! goes only down: such a switch may be entered from above on the way to `t`.
//!
//! Up*down* paths do not join every pair of switches when there are several roots (two
//! spines of a fat tree, for instance). For a destination switch that some switch cannot
//! reach legally, a second, plain shortest-path column is kept as a fallback (what OpenSM's
//! `connect_roots` option allows); only switch LIDs need it on fat trees.

use crate::error::RoutingError;
use crate::input::RoutingInput;
use std::ops::Range;

/// Entry value for "no legal path".
pub const UNREACHABLE: u8 = 0xFF;
/// Flag bit: the switch's route to this destination switch is down-only.
pub const DOWN_ONLY: u8 = 0x80;
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
    /// Orients the switch graph by `rank` (0 at the roots), ties broken by GUID.
    pub fn from_ranks(input: &RoutingInput, rank: &[u32]) -> Directions {
        let n = input.num_switches();
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_by_key(|&s| (rank[s as usize], input.switches[s as usize].guid, s));
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
    /// Plain shortest-path columns for destinations some switch cannot reach legally.
    fallback: Vec<(usize, Vec<u8>)>,
    too_deep: bool,
}

/// The merged hop table, row-major by source switch: `data[x * S + t]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HopTable {
    n: usize,
    data: Vec<u8>,
    /// Row-major plain shortest paths, filled only in the fallback columns.
    fallback: Option<Vec<u8>>,
    fallback_cols: usize,
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
            UNREACHABLE => match self.fallback.as_ref().map(|f| f[x * self.n + t]) {
                None | Some(UNREACHABLE) => None,
                Some(v) => Some(v),
            },
            v => Some(v & !DOWN_ONLY),
        }
    }

    /// Number of destination switches that some switch can reach only through the plain
    /// shortest-path fallback (0 for min-hop, and for up/down with a single root).
    pub fn fallback_destinations(&self) -> usize {
        self.fallback_cols
    }

    /// The fallback (plain shortest path) row of `x`, when any fallback column exists.
    pub fn fallback_row(&self, x: usize) -> Option<&[u8]> {
        self.fallback
            .as_ref()
            .map(|f| &f[x * self.n..(x + 1) * self.n])
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
    let mut fallback = Vec::new();
    let mut queue: Vec<u32> = Vec::with_capacity(n);
    let mut queue_b: Vec<u32> = Vec::with_capacity(n);
    for (i, t) in range.clone().enumerate() {
        let col = &mut cols[i * n..(i + 1) * n];
        queue.clear();
        match dirs {
            None => {
                too_deep |= !plain_bfs(input, t, col, &mut queue);
            }
            Some(dirs) => {
                // Phase A: switches with a down-only path to t (reverse of down moves).
                col[t] = DOWN_ONLY;
                queue.push(t as u32);
                let mut head = 0;
                while head < queue.len() {
                    let y = queue[head] as usize;
                    head += 1;
                    let d = (col[y] & !DOWN_ONLY) + 1;
                    if d > MAX_HOPS {
                        too_deep = true;
                        break;
                    }
                    for &x in dirs.ups(y) {
                        if col[x as usize] == UNREACHABLE {
                            col[x as usize] = d | DOWN_ONLY;
                            queue.push(x);
                        }
                    }
                }
                // Phase B: the rest go up first; merge the two queues in distance order.
                queue_b.clear();
                let (mut ha, mut hb) = (0, 0);
                loop {
                    let da = queue.get(ha).map(|&y| col[y as usize] & !DOWN_ONLY);
                    let db = queue_b.get(hb).map(|&y| col[y as usize]);
                    let y = match (da, db) {
                        (None, None) => break,
                        (Some(a), Some(b)) if b < a => {
                            hb += 1;
                            queue_b[hb - 1]
                        }
                        (Some(_), _) => {
                            ha += 1;
                            queue[ha - 1]
                        }
                        (None, Some(_)) => {
                            hb += 1;
                            queue_b[hb - 1]
                        }
                    } as usize;
                    let d = (col[y] & !DOWN_ONLY) + 1;
                    if d > MAX_HOPS {
                        too_deep = true;
                        break;
                    }
                    for &x in dirs.downs(y) {
                        if col[x as usize] == UNREACHABLE {
                            col[x as usize] = d;
                            queue_b.push(x);
                        }
                    }
                }
                if queue.len() + queue_b.len() < n {
                    let mut fb = vec![UNREACHABLE; n];
                    too_deep |= !plain_bfs(input, t, &mut fb, &mut queue);
                    fallback.push((t, fb));
                }
            }
        }
    }
    HopShard {
        range,
        cols,
        fallback,
        too_deep,
    }
}

/// Merges phase-1 shards (any order, must cover `0..S` exactly) into a row-major table.
pub fn merge_hop_shards(n: usize, shards: Vec<HopShard>) -> Result<HopTable, RoutingError> {
    let mut data = vec![UNREACHABLE; n * n];
    let mut fallback: Option<Vec<u8>> = None;
    let mut fallback_cols = 0;
    for sh in shards {
        fallback_cols += sh.fallback.len();
        for (t, col) in &sh.fallback {
            let f = fallback.get_or_insert_with(|| vec![UNREACHABLE; n * n]);
            for (x, &v) in col.iter().enumerate() {
                f[x * n + t] = v;
            }
        }
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
    Ok(HopTable {
        n,
        data,
        fallback,
        fallback_cols,
    })
}
