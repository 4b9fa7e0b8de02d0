//! Stage 2 of dfsssp: switch pairs onto layers (SLs, one VL each) so that every layer's
//! channel dependency graph is acyclic.
//!
//! Vertices are switch-to-switch channels. The dependencies of a pair (source switch `x`,
//! destination switch `t`) are the consecutive channel pairs of the routes from `x` to
//! every LID of `t`, all on the pair's layer: that is how [`crate::cdg::check`] follows a
//! path injected at `x` (each switch injects, so a switch in the middle of another pair's
//! path contributes its own pair, on its own layer).
//!
//! Fast path: when the dependency graph of every route on a single layer is already acyclic
//! (fat trees, up*down*-like routes), every pair goes on layer 0.
//!
//! Otherwise pairs are placed one by one, destination switches in index order and for each
//! its source switches in index order, on the lowest layer where its dependencies keep the
//! layer acyclic. Each layer keeps a topological order of its graph, updated edge by edge
//! with Pearce and Kelly's algorithm ("A dynamic topological sort algorithm for directed
//! acyclic graphs", JEA 2006): an edge `u -> v` with `u` already before `v` costs nothing;
//! otherwise a forward search from `v` bounded by `u`'s position finds a cycle, or the two
//! affected regions are reordered. A pair that would close a cycle has its edges on that
//! layer removed again (removing edges keeps an order valid) and tries the next layer. The
//! pairs' dependencies are gathered in parallel, per batch of destination switches; the
//! placement itself is sequential and follows the fixed order, so the result does not
//! depend on the worker count.

use crate::engine::Executor;
use crate::error::RoutingError;
use crate::input::{Peer, RoutingInput};
use crate::lft::NO_ROUTE;

/// The layer of every (source switch, destination switch) pair.
pub(crate) struct Layering {
    /// `sl[x * n + t]`: the layer (SL) of the pair.
    pub sl: Vec<u8>,
}

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
}

impl Channels {
    fn new(input: &RoutingInput) -> Channels {
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
        Channels {
            id_of,
            port,
            stride: input.max_ports() as usize + 1,
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
            succ: vec![Vec::new(); n],
            pred: vec![Vec::new(); n],
            ord: (0..n as u32).collect(),
            mark: vec![0; n],
            epoch: 0,
            stack: Vec::new(),
            fwd: Vec::new(),
            back: Vec::new(),
            pool: Vec::new(),
        }
    }

    fn has(&self, k: usize) -> bool {
        self.present[k / 64] >> (k % 64) & 1 == 1
    }

    fn flip(&mut self, k: usize) {
        self.present[k / 64] ^= 1 << (k % 64);
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
            for &z in &self.succ[w as usize] {
                if z == u {
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

    /// Adds every dependency of a pair, or none when one would close a cycle.
    fn try_pair(
        &mut self,
        ch: &Channels,
        deps: &[(u32, u32)],
        added: &mut Vec<(u32, u32)>,
    ) -> bool {
        added.clear();
        for &(u, v) in deps {
            let k = ch.key(u, v);
            if self.has(k) {
                continue;
            }
            if !self.insert(u, v) {
                for &(u, v) in added.iter().rev() {
                    self.pop(u, v);
                    self.flip(ch.key(u, v));
                }
                return false;
            }
            self.flip(k);
            added.push((u, v));
        }
        true
    }
}

/// True when the graph of every dependency of every route on one layer is acyclic.
fn single_layer_acyclic(input: &RoutingInput, ch: &Channels, tables: &[Vec<u8>]) -> bool {
    let nch = ch.len();
    let mut bits = vec![0u64; (nch * ch.stride).div_ceil(64)];
    let dests = input.dests();
    for (lid, d) in dests.iter().enumerate() {
        if lid == 0 || !d.is_used() {
            continue;
        }
        for x in 0..input.num_switches() {
            let p = tables[x][lid];
            let Some(Peer::Switch { sw, .. }) = input.ports(x).get(p as usize) else {
                continue;
            };
            let y = *sw as usize;
            let q = tables[y][lid];
            if !matches!(input.ports(y).get(q as usize), Some(Peer::Switch { .. })) {
                continue;
            }
            let k = ch.id_of[input.channel(x, p)] as usize * ch.stride + q as usize;
            bits[k / 64] |= 1 << (k % 64);
        }
    }
    // Kahn's algorithm on the bitset graph: successors of channel u = (head of u, port q).
    let mut head = vec![0u32; nch];
    for s in 0..input.num_switches() {
        for (p, peer) in input.ports(s).iter().enumerate() {
            if let Peer::Switch { sw, .. } = peer {
                head[ch.id_of[input.channel(s, p as u8)] as usize] = *sw;
            }
        }
    }
    let succ = |u: usize, f: &mut dyn FnMut(usize)| {
        for q in 0..ch.stride {
            let k = u * ch.stride + q;
            if bits[k / 64] >> (k % 64) & 1 == 1 {
                f(ch.id_of[input.channel(head[u] as usize, q as u8)] as usize);
            }
        }
    };
    let mut indeg = vec![0u32; nch];
    for u in 0..nch {
        succ(u, &mut |v| indeg[v] += 1);
    }
    let mut queue: Vec<usize> = (0..nch).filter(|&u| indeg[u] == 0).collect();
    let mut head_q = 0;
    while head_q < queue.len() {
        let u = queue[head_q];
        head_q += 1;
        succ(u, &mut |v| {
            indeg[v] -= 1;
            if indeg[v] == 0 {
                queue.push(v);
            }
        });
    }
    queue.len() == nch
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
pub(crate) fn assign<X: Executor>(
    input: &RoutingInput,
    tables: &[Vec<u8>],
    exec: &X,
    shards: usize,
    max_layers: u8,
) -> Result<Layering, RoutingError> {
    let n = input.num_switches();
    let ch = Channels::new(input);
    let mut sl = vec![0u8; n * n];
    if single_layer_acyclic(input, &ch, tables) {
        return Ok(Layering { sl });
    }
    let mut lids_of: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (lid, d) in input.dests().iter().enumerate() {
        if lid != 0 && d.is_used() {
            lids_of[d.switch as usize].push(lid as u32);
        }
    }
    let mut layers: Vec<Layer> = Vec::new();
    let mut added = Vec::new();
    let cap = usize::from(super::MAX_SLS);
    let mut overflow = false;
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
                if d.is_empty() {
                    continue;
                }
                let mut l = 0;
                loop {
                    if l == layers.len() {
                        if l == cap {
                            return Err(too_many(cap + 1, max_layers));
                        }
                        layers.push(Layer::new(&ch));
                    }
                    if layers[l].try_pair(&ch, d, &mut added) {
                        break;
                    }
                    l += 1;
                }
                overflow |= l >= usize::from(max_layers);
                sl[x * n + tt] = l as u8;
            }
            t += (starts.len() - 1) / n;
        }
        t0 = t1;
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
