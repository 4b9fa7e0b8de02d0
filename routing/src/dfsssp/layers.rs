//! Stage 2 of dfsssp: switch pairs onto layers (SLs, one VL each) so that every layer's
//! channel dependency graph is acyclic.
//!
//! Vertices are switch-to-switch channels. The dependencies of a pair (source switch `x`,
//! destination switch `t`) are the consecutive channel pairs of the routes from `x` to
//! every LID of `t`, all on the pair's layer: that is how [`crate::cdg::check`] follows a
//! path injected at `x` (each switch injects, so a switch in the middle of another pair's
//! path contributes its own pair, on its own layer).
//!
//! Every layer starts from one order of the channels, the up/down order
//! ([`up_down_order`]): any route that never turns from a down channel to an up channel
//! ascends it. Fast path: when every route does, every pair goes on layer 0 (fat trees).
//!
//! Otherwise, pass 1 puts every pair whose dependencies all ascend the order on layer 0,
//! no search needed. Pass 2 places the others one by one, destination switch by
//! destination switch, sources nearest to it first: first on the layer of the pair's next
//! switch's own pair (its suffix is there already, so only the first hop's dependencies
//! are new), else on the lowest layer where its dependencies keep the layer acyclic. Each
//! layer keeps a topological order of its graph, updated edge by edge with Pearce and
//! Kelly's algorithm ("A dynamic topological sort algorithm for directed acyclic graphs",
//! JEA 2006): an edge `u -> v` with `u` already before `v` costs nothing; otherwise a
//! forward search from `v` bounded by `u`'s position finds a cycle, or the two affected
//! regions are reordered. The forward search has a budget ([`SEARCH_BUDGET`]): past it the
//! edge is refused as if it closed a cycle, which is never unsafe (the pair moves up a
//! layer). A pair refused by a layer has its edges there removed again (removing edges
//! keeps an order valid); a dependency refused before any edge of its pair went in closes a
//! cycle with committed edges only and is remembered as refused. The pairs' dependencies are
//! gathered in parallel, per batch of destination switches; the placement is sequential in
//! a fixed order, so the result does not depend on the worker count.

use crate::engine::Executor;
use crate::error::RoutingError;
use crate::input::{Peer, RoutingInput};
use crate::lft::NO_ROUTE;

/// The layer of every (source switch, destination switch) pair.
pub(crate) struct Layering {
    /// `sl[x * n + t]`: the layer (SL) of the pair.
    pub sl: Vec<u8>,
}

/// Vertices a forward search may visit before the insertion is refused as if it closed a
/// cycle (bounds the cost of one insertion on huge layers; see [`Layer::insert`]).
const SEARCH_BUDGET: usize = 4096;
/// The same on layer 0, which holds most dependencies (every up*down* one): a pair that
/// needs a long search there is more cheaply placed on a sparser layer.
const LAYER0_BUDGET: usize = 128;

/// Destination switches whose pairs' dependencies are gathered per parallel round.
const GATHER: usize = 16;

/// Dense ids of switch-to-switch channels.
struct Channels {
    /// Global channel ([`RoutingInput::channel`]) -> dense id, u32::MAX for other ports.
    id_of: Vec<u32>,
    /// Output port of each dense channel (its position among the head switch's ports).
    port: Vec<u8>,
    /// Bits per channel in an edge bitset (ports + 1).
    stride: usize,
    /// The order every layer starts from: a topological order of every up*down* route.
    initial_order: Vec<u32>,
}

impl Channels {
    fn new(input: &RoutingInput, key: &[u32]) -> Channels {
        let mut id_of = vec![u32::MAX; input.num_channels()];
        let mut port = Vec::new();
        for s in 0..input.num_switches() {
            for (p, peer) in input.ports(s).iter().enumerate() {
                if matches!(peer, Peer::Switch { .. }) {
                    id_of[input.channel(s, p as u8)] = port.len() as u32;
                    port.push(p as u8);
                }
            }
        }
        let initial_order = up_down_order(input, key, &id_of, port.len());
        Channels {
            id_of,
            port,
            stride: input.max_ports() as usize + 1,
            initial_order,
        }
    }

    fn len(&self) -> usize {
        self.port.len()
    }

    /// Bit index of dependency `u -> v` (v leaves the switch u enters).
    fn key(&self, u: u32, v: u32) -> usize {
        u as usize * self.stride + self.port[v as usize] as usize
    }
}

/// A position per channel such that every up*down* route is in increasing order, for the
/// switch order `key` of the up/down orientation ("up" towards a smaller key): up channels
/// first, by decreasing key of their tail, then down channels by increasing key of their
/// tail. On fat trees every route is up*down* (dfsssp routes switch-only destinations
/// up*down*); elsewhere many shortest routes are, and their dependencies agree with the
/// order from the start and cost nothing.
fn up_down_order(input: &RoutingInput, key: &[u32], id_of: &[u32], nch: usize) -> Vec<u32> {
    let n = input.num_switches();
    // (down, tail key transformed so one ascending sort gives the order, port, id).
    let mut chans: Vec<(bool, u32, u32, u32)> = Vec::with_capacity(nch);
    for s in 0..n {
        for (p, peer) in input.ports(s).iter().enumerate() {
            if let Peer::Switch { sw, .. } = peer {
                let id = id_of[input.channel(s, p as u8)];
                let down = key[*sw as usize] > key[s];
                let k = if down { key[s] } else { !key[s] };
                chans.push((down, k, p as u32, id));
            }
        }
    }
    chans.sort_unstable();
    let mut ord = vec![0u32; nch];
    for (pos, c) in chans.iter().enumerate() {
        ord[c.3 as usize] = pos as u32;
    }
    ord
}

/// Follows the route from `x` to `lid` and calls `f(u, v)` for each dependency.
fn walk(
    input: &RoutingInput,
    ch: &Channels,
    tables: &[Vec<u8>],
    x: usize,
    lid: usize,
    mut f: impl FnMut(u32, u32),
) {
    let mut cur = x;
    let mut prev = u32::MAX;
    // Routes are shortest, so at most n - 1 hops; the bound only guards the loop.
    for _ in 0..input.num_switches() {
        let p = tables[cur].get(lid).copied().unwrap_or(NO_ROUTE);
        let Some(Peer::Switch { sw, .. }) = input.ports(cur).get(p as usize) else {
            return;
        };
        let c = ch.id_of[input.channel(cur, p)];
        if prev != u32::MAX {
            f(prev, c);
        }
        prev = c;
        cur = *sw as usize;
    }
}

/// One layer's graph with a topological order kept by Pearce-Kelly.
struct Layer {
    present: Vec<u64>,
    /// Dependencies known to close a cycle with the layer's committed edges alone: the
    /// layer only grows, so they stay rejected.
    rejected: Vec<u64>,
    /// The last refused insertion was refused for the search budget, not a cycle found.
    budget_hit: bool,
    /// Vertices a forward search may visit.
    budget: usize,
    succ: Vec<Vec<u32>>,
    pred: Vec<Vec<u32>>,
    /// Position of each vertex in the topological order.
    ord: Vec<u32>,
    mark: Vec<u32>,
    epoch: u32,
    stack: Vec<u32>,
    fwd: Vec<u32>,
    back: Vec<u32>,
    pool: Vec<u32>,
}

impl Layer {
    fn new(ch: &Channels) -> Layer {
        let n = ch.len();
        Layer {
            present: vec![0; (n * ch.stride).div_ceil(64)],
            rejected: vec![0; (n * ch.stride).div_ceil(64)],
            budget_hit: false,
            budget: SEARCH_BUDGET,
            succ: vec![Vec::new(); n],
            pred: vec![Vec::new(); n],
            ord: ch.initial_order.clone(),
            mark: vec![0; n],
            epoch: 0,
            stack: Vec::new(),
            fwd: Vec::new(),
            back: Vec::new(),
            pool: Vec::new(),
        }
    }

    fn next_epoch(&mut self) -> u32 {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.mark.iter_mut().for_each(|m| *m = 0);
            self.epoch = 1;
        }
        self.epoch
    }

    /// Adds `u -> v` unless it closes a cycle (then the graph is unchanged, false).
    fn insert(&mut self, u: u32, v: u32) -> bool {
        if u == v {
            return false;
        }
        let (lb, ub) = (self.ord[v as usize], self.ord[u as usize]);
        if ub < lb {
            self.succ[u as usize].push(v);
            self.pred[v as usize].push(u);
            return true;
        }
        // Forward from v through vertices ordered before u: reaching u is a cycle.
        let e = self.next_epoch();
        self.fwd.clear();
        self.stack.clear();
        self.stack.push(v);
        self.mark[v as usize] = e;
        while let Some(w) = self.stack.pop() {
            self.fwd.push(w);
            if self.fwd.len() > self.budget {
                // Too far to tell cheaply: treat as a cycle (never wrong, maybe one layer
                // more). Not cached: a later attempt may succeed.
                self.budget_hit = true;
                return false;
            }
            for &z in &self.succ[w as usize] {
                if z == u {
                    self.budget_hit = false;
                    return false;
                }
                if self.mark[z as usize] != e && self.ord[z as usize] < ub {
                    self.mark[z as usize] = e;
                    self.stack.push(z);
                }
            }
        }
        // Backward from u through vertices ordered after v.
        let e = self.next_epoch();
        self.back.clear();
        self.stack.push(u);
        self.mark[u as usize] = e;
        while let Some(w) = self.stack.pop() {
            self.back.push(w);
            for &z in &self.pred[w as usize] {
                if self.mark[z as usize] != e && self.ord[z as usize] > lb {
                    self.mark[z as usize] = e;
                    self.stack.push(z);
                }
            }
        }
        // Reorder: the backward region (u and what reaches it) before the forward region
        // (v and what it reaches), each keeping its relative order, on the pooled positions.
        let ord = &self.ord;
        self.back.sort_unstable_by_key(|&w| ord[w as usize]);
        self.fwd.sort_unstable_by_key(|&w| ord[w as usize]);
        self.pool.clear();
        self.pool
            .extend(self.back.iter().chain(&self.fwd).map(|&w| ord[w as usize]));
        self.pool.sort_unstable();
        for (i, &w) in self.back.iter().chain(&self.fwd).enumerate() {
            self.ord[w as usize] = self.pool[i];
        }
        self.succ[u as usize].push(v);
        self.pred[v as usize].push(u);
        true
    }

    /// Removes the edge `u -> v` added last from `u` and last into `v`.
    fn pop(&mut self, u: u32, v: u32) {
        let s = self.succ[u as usize].pop();
        let p = self.pred[v as usize].pop();
        debug_assert_eq!((s, p), (Some(v), Some(u)));
    }

    /// Adds dependencies that all agree with the layer's order (no search needed).
    fn add_in_order(&mut self, ch: &Channels, deps: &[(u32, u32)]) {
        for &(u, v) in deps {
            let k = ch.key(u, v);
            if self.present[k / 64] >> (k % 64) & 1 == 0 {
                debug_assert!(self.ord[u as usize] < self.ord[v as usize]);
                self.present[k / 64] |= 1 << (k % 64);
                self.succ[u as usize].push(v);
                self.pred[v as usize].push(u);
            }
        }
    }

    /// Adds every dependency of a pair, or none when one would close a cycle. `fresh` is
    /// scratch space.
    fn try_pair(
        &mut self,
        ch: &Channels,
        deps: &[(u32, u32)],
        fresh: &mut Vec<(u32, u32)>,
        added: &mut Vec<(u32, u32)>,
    ) -> bool {
        fresh.clear();
        for &(u, v) in deps {
            let k = ch.key(u, v);
            if self.present[k / 64] >> (k % 64) & 1 == 1 {
                continue;
            }
            if self.rejected[k / 64] >> (k % 64) & 1 == 1 {
                return false;
            }
            fresh.push((u, v));
        }
        // Dependencies against the current order first: a rejection while nothing of the
        // pair is in yet is final for this layer.
        let ord = &self.ord;
        fresh.sort_by_key(|&(u, v)| ord[u as usize] < ord[v as usize]);
        added.clear();
        for &(u, v) in fresh.iter() {
            let k = ch.key(u, v);
            if !self.insert(u, v) {
                if added.is_empty() && !self.budget_hit {
                    self.rejected[k / 64] |= 1 << (k % 64);
                }
                for &(u, v) in added.iter().rev() {
                    self.pop(u, v);
                    let k = ch.key(u, v);
                    self.present[k / 64] &= !(1 << (k % 64));
                }
                return false;
            }
            self.present[k / 64] |= 1 << (k % 64);
            added.push((u, v));
        }
        true
    }
}

/// True when every dependency of every route to the LIDs `lids` agrees with the up*down*
/// order (no route turns from a down channel to an up channel). LIDs in blocks: each
/// switch's entries for a block are read once (one cache line per table).
fn up_down_lids(
    input: &RoutingInput,
    ch: &Channels,
    tables: &[Vec<u8>],
    lids: std::ops::Range<usize>,
) -> bool {
    const B: usize = 64;
    let n = input.num_switches();
    let dests = input.dests();
    let mut col = vec![NO_ROUTE; n * B];
    for block in lids.clone().step_by(B) {
        let width = B.min(lids.end - block);
        for (x, t) in tables.iter().enumerate() {
            col[x * B..x * B + width].copy_from_slice(&t[block..block + width]);
        }
        for k in 0..width {
            let lid = block + k;
            if lid == 0 || !dests[lid].is_used() {
                continue;
            }
            for x in 0..n {
                let p = col[x * B + k];
                let Some(Peer::Switch { sw, .. }) = input.ports(x).get(p as usize) else {
                    continue;
                };
                let y = *sw as usize;
                let q = col[y * B + k];
                if !matches!(input.ports(y).get(q as usize), Some(Peer::Switch { .. })) {
                    continue;
                }
                let (u, v) = (ch.id_of[input.channel(x, p)], ch.id_of[input.channel(y, q)]);
                if ch.initial_order[u as usize] > ch.initial_order[v as usize] {
                    return false;
                }
            }
        }
    }
    true
}

/// [`up_down_lids`] over every LID, in `shards` jobs on `exec`.
fn all_up_down<X: Executor>(
    input: &RoutingInput,
    ch: &Channels,
    tables: &[Vec<u8>],
    exec: &X,
    shards: usize,
) -> bool {
    let nlids = input.dests().len();
    let jobs = shards.clamp(1, nlids.max(1));
    exec.map(jobs, |j| {
        up_down_lids(input, ch, tables, j * nlids / jobs..(j + 1) * nlids / jobs)
    })
    .into_iter()
    .all(|ok| ok)
}

/// The dependencies of the pairs (x, t) for every x, t in `ts`: per t, per x, sorted and
/// deduplicated, flattened with offsets (`starts[(ti * n + x)..=]`).
fn gather(
    input: &RoutingInput,
    ch: &Channels,
    tables: &[Vec<u8>],
    lids_of: &[Vec<u32>],
    ts: std::ops::Range<usize>,
) -> (Vec<u32>, Vec<(u32, u32)>) {
    let n = input.num_switches();
    let mut starts = Vec::with_capacity(ts.len() * n + 1);
    let mut deps = Vec::new();
    for t in ts {
        for x in 0..n {
            let from = deps.len();
            starts.push(from as u32);
            for &lid in &lids_of[t] {
                walk(input, ch, tables, x, lid as usize, |u, v| deps.push((u, v)));
            }
            deps[from..].sort_unstable();
            let mut w = from;
            for r in from..deps.len() {
                if r == from || deps[r] != deps[w - 1] {
                    deps[w] = deps[r];
                    w += 1;
                }
            }
            deps.truncate(w);
        }
    }
    starts.push(deps.len() as u32);
    (starts, deps)
}

/// Places every (source switch, destination switch) pair on a layer; refuses with
/// `ROUTE-E-LAYERS` when more than `max_layers` are needed.
#[allow(clippy::too_many_arguments)]
pub(crate) fn assign<X: Executor>(
    input: &RoutingInput,
    tables: &[Vec<u8>],
    hops: &crate::hops::HopTable,
    key: &[u32],
    exec: &X,
    shards: usize,
    max_layers: u8,
    count_needed: bool,
) -> Result<Layering, RoutingError> {
    let n = input.num_switches();
    let ch = Channels::new(input, key);
    let mut sl = vec![0u8; n * n];
    if all_up_down(input, &ch, tables, exec, shards) {
        return Ok(Layering { sl });
    }
    let mut lids_of: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (lid, d) in input.dests().iter().enumerate() {
        if lid != 0 && d.is_used() {
            lids_of[d.switch as usize].push(lid as u32);
        }
    }
    // Pass 1: pairs whose every dependency agrees with the up*down* order go on layer 0
    // without any search (that order stays a topological order of layer 0 meanwhile).
    // The others wait for pass 2, in the same (destination, source) order.
    let mut layers: Vec<Layer> = vec![Layer::new(&ch)];
    let mut pending: Vec<(u32, u32)> = Vec::new();
    let mut pending_deps: Vec<(u32, u32)> = Vec::new();
    let mut pending_start: Vec<u32> = vec![0];
    let mut t0 = 0;
    while t0 < n {
        let t1 = (t0 + GATHER).min(n);
        let jobs = shards.clamp(1, t1 - t0);
        let parts = exec.map(jobs, |j| {
            let a = t0 + j * (t1 - t0) / jobs;
            let b = t0 + (j + 1) * (t1 - t0) / jobs;
            gather(input, &ch, tables, &lids_of, a..b)
        });
        let mut t = t0;
        for (starts, deps) in parts {
            for ti in 0..starts.len() - 1 {
                let (x, tt) = (ti % n, t + ti / n);
                let d = &deps[starts[ti] as usize..starts[ti + 1] as usize];
                let agrees = d
                    .iter()
                    .all(|&(u, v)| ch.initial_order[u as usize] < ch.initial_order[v as usize]);
                if agrees {
                    layers[0].add_in_order(&ch, d);
                } else {
                    pending.push((x as u32, tt as u32));
                    pending_deps.extend_from_slice(d);
                    pending_start.push(pending_deps.len() as u32);
                }
            }
            t += (starts.len() - 1) / n;
        }
        t0 = t1;
    }
    // Pass 2: first fit, with incremental cycle detection.
    layers[0].budget = LAYER0_BUDGET;
    let mut added = Vec::new();
    let mut fresh = Vec::new();
    let cap = usize::from(super::MAX_SLS);
    let mut overflow = false;
    // Sources nearest to their destination first: the route of a pair's next switch (its
    // suffix) is then placed already, and its layer is tried first: only the first hop's
    // dependencies are new there.
    let mut idx: Vec<usize> = (0..pending.len()).collect();
    idx.sort_by_key(|&k| {
        let (x, t) = pending[k];
        (t, hops.row(t as usize)[x as usize], x)
    });
    for k in idx {
        let (x, t) = pending[k];
        let d = &pending_deps[pending_start[k] as usize..pending_start[k + 1] as usize];
        let pref = lids_of[t as usize].first().and_then(|&lid| {
            let p = tables[x as usize][lid as usize];
            match input.ports(x as usize).get(p as usize) {
                Some(Peer::Switch { sw, .. }) => Some(sl[*sw as usize * n + t as usize] as usize),
                _ => None,
            }
        });
        if let Some(p) = pref
            && layers[p].try_pair(&ch, d, &mut fresh, &mut added)
        {
            sl[x as usize * n + t as usize] = p as u8;
            continue;
        }
        let mut l = 0;
        loop {
            if Some(l) == pref {
                l += 1;
                continue;
            }
            if l == layers.len() {
                if l == cap {
                    return Err(too_many(cap + 1, max_layers));
                }
                layers.push(Layer::new(&ch));
            }
            if layers[l].try_pair(&ch, d, &mut fresh, &mut added) {
                break;
            }
            l += 1;
        }
        if l >= usize::from(max_layers) {
            overflow = true;
            if !count_needed {
                return Err(too_many(l + 1, max_layers));
            }
        }
        sl[x as usize * n + t as usize] = l as u8;
    }
    if overflow {
        return Err(too_many(layers.len(), max_layers));
    }
    Ok(Layering { sl })
}

fn too_many(needed: usize, allowed: u8) -> RoutingError {
    RoutingError::TooManyLayers {
        engine: "dfsssp".to_string(),
        needed,
        allowed,
    }
}
