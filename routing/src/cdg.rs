//! Deadlock freedom as a checked property: the channel dependency graph (CDG) per virtual
//! lane, checked after every routing run ([`crate::route_with_chain`]).
//!
//! A channel is one direction of a switch-to-switch link (switch, output port). A route
//! that enters a switch on channel `a` and leaves it on channel `b` makes `b` a dependency
//! of `a`: a packet holding a buffer of `a` waits for credits of `b`. A routing is free of
//! credit loops when the graph of these dependencies is acyclic on every VL.
//!
//! What is counted: the forwarding entry of **every** switch towards **every** used LID,
//! end-port LIDs and switch LIDs alike. Every switch is a possible injection point (its
//! management port 0 sends and receives GMPs, PerfMgt for instance, on data VLs), so an
//! entry no host path reaches still counts. Only LID-routed SMPs use VL15, which has no
//! credits; they are not data traffic, but their routes are the same entries.
//!
//! VLs: a path's VL comes from its SL through the SL2VL tables. Min-hop, up/down and
//! fat-tree put every path on SL 0, mapped to VL 0 ([`PathVls::Single`]). Engines that
//! spread paths over VLs give each (source switch, destination switch) pair an SL and each
//! switch output port an SL-to-VL table ([`PathVls::Layered`]); the graph's vertices are
//! then (channel, VL) pairs, every path is followed hop by hop from every switch (each one
//! injects with its own SL), and a cycle may cross VLs.

use crate::engine::Executor;
use crate::input::{Peer, RoutingInput};
use crate::lft::{Lfts, NO_ROUTE};
use crate::sl::{EngineSl2Vl, PathSl};
use serde::Serialize;
use std::sync::Arc;

/// Which VL each path uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathVls {
    /// Every path, to end ports and to switches, on this VL (SL 0 -> VL 0).
    Single(u8),
    /// Each path on the SL of its (source switch, destination switch) pair, each hop on the
    /// VL the hop's output port maps that SL to.
    Layered {
        /// SL per switch pair.
        sl: Arc<PathSl>,
        /// SL-to-VL per switch output port.
        sl2vl: Arc<EngineSl2Vl>,
    },
}

impl Default for PathVls {
    fn default() -> PathVls {
        PathVls::Single(0)
    }
}

/// The dependency graph of one VL.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct VlCdg {
    /// The virtual lane.
    pub vl: u8,
    /// Switch-to-switch channels.
    pub channels: usize,
    /// Distinct dependencies (channel pairs used back to back by some route).
    pub dependencies: u64,
    /// True when the graph has no cycle.
    pub acyclic: bool,
    /// One cycle when there is one, as `SWITCH_GUID:PORT` output channels in order.
    pub cycle: Vec<String>,
}

/// The deadlock check of one routing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CdgReport {
    /// VLs that carry paths, ascending.
    pub vls_used: Vec<u8>,
    /// One graph per VL used, in the same order.
    pub per_vl: Vec<VlCdg>,
    /// Routes to switch LIDs are part of the graphs (always true here).
    pub switch_lids_included: bool,
}

impl CdgReport {
    /// True when every VL's graph is acyclic.
    pub fn acyclic(&self) -> bool {
        self.per_vl.iter().all(|v| v.acyclic)
    }

    /// The first VL with a cycle.
    pub fn first_cycle(&self) -> Option<&VlCdg> {
        self.per_vl.iter().find(|v| !v.acyclic)
    }
}

/// Builds the dependency graph of every VL `vls` uses from `lfts` (matched to `input`'s
/// switches by GUID) and looks for a cycle in each.
pub fn check(input: &RoutingInput, lfts: &Lfts, vls: &PathVls) -> CdgReport {
    check_on(input, lfts, vls, &crate::Sequential, 1)
}

/// [`check`] with the one-VL graph built in `shards` jobs on `exec` (each job the channels
/// of a range of switches: the same graph for any number of jobs).
pub fn check_on<X: Executor>(
    input: &RoutingInput,
    lfts: &Lfts,
    vls: &PathVls,
    exec: &X,
    shards: usize,
) -> CdgReport {
    let tables = lfts.tables_for(input);
    // Every pair on one SL that every port maps to the same VL: the layered graph is the
    // single-VL graph of that VL (built per LID one step ahead, without following paths).
    let uniform = match vls {
        PathVls::Single(_) => None,
        PathVls::Layered { sl, sl2vl } => {
            let guids: Vec<_> = input.switches.iter().map(|s| s.guid).collect();
            let dense = sl.dense(&guids);
            let s0 = dense.first().copied().unwrap_or(0);
            let vl = sl2vl.default[s0 as usize & 0xF];
            (dense.iter().all(|&s| s == s0)
                && sl2vl
                    .per_out_port
                    .values()
                    .all(|t| t[s0 as usize & 0xF] == vl))
            .then_some(vl)
        }
    };
    if let Some(vl) = uniform {
        let mut rep = check_on(input, lfts, &PathVls::Single(vl), exec, shards);
        for v in &mut rep.per_vl {
            for c in &mut v.cycle {
                c.push_str(&format!("@VL{vl}"));
            }
        }
        return rep;
    }
    match vls {
        PathVls::Single(vl) => {
            let g = Graph::build(input, &tables, exec, shards);
            let cycle = g.find_cycle();
            CdgReport {
                vls_used: vec![*vl],
                per_vl: vec![VlCdg {
                    vl: *vl,
                    channels: g.channels,
                    dependencies: g.dependencies,
                    acyclic: cycle.is_none(),
                    cycle: cycle
                        .unwrap_or_default()
                        .into_iter()
                        .map(|c| g.name(input, c))
                        .collect(),
                }],
                switch_lids_included: true,
            }
        }
        PathVls::Layered { sl, sl2vl } => {
            let (g, nvl, used) = Graph::build_layered(input, &tables, sl, sl2vl);
            let cycle = g.find_cycle();
            // A cycle is reported on the VL of its first vertex.
            let cycle_vl = cycle.as_ref().and_then(|c| c.first()).map(|&v| v % nvl);
            let per_vl = (0..nvl)
                .filter(|v| used[*v])
                .map(|v| VlCdg {
                    vl: v as u8,
                    channels: g.channels / nvl,
                    dependencies: g.deps_from_vl[v],
                    acyclic: cycle_vl != Some(v),
                    cycle: if cycle_vl == Some(v) {
                        cycle
                            .iter()
                            .flatten()
                            .map(|&c| format!("{}@VL{}", g.name(input, c / nvl), c % nvl))
                            .collect()
                    } else {
                        Vec::new()
                    },
                })
                .collect::<Vec<_>>();
            CdgReport {
                vls_used: per_vl.iter().map(|v| v.vl).collect(),
                per_vl,
                switch_lids_included: true,
            }
        }
    }
}

/// The VL-0 graph of host traffic only: the routes from every switch that has end ports
/// towards every end-port LID, the switches they pass through included, and nothing towards
/// or from a switch LID. That is the graph OpenSM's dfsssp and nue keep acyclic (their
/// paths run between terminals), so a routing that [`check`] finds cyclic only through
/// switch LIDs (management traffic) is acyclic here. Every path on one VL: for comparison
/// with such engines' own claims, not a replacement for [`check`].
pub fn check_hosts_only(input: &RoutingInput, lfts: &Lfts) -> VlCdg {
    let tables = lfts.tables_for(input);
    let g = Graph::build_filtered(input, &tables, true, &crate::Sequential, 1);
    let cycle = g.find_cycle();
    VlCdg {
        vl: 0,
        channels: g.channels,
        dependencies: g.dependencies,
        acyclic: cycle.is_none(),
        cycle: cycle
            .unwrap_or_default()
            .into_iter()
            .map(|c| g.name(input, c))
            .collect(),
    }
}

/// Dependencies between switch-to-switch channels, as adjacency lists.
struct Graph {
    /// Vertices: channels, or (channel, VL) pairs as `channel * nvl + vl` when layered.
    channels: usize,
    dependencies: u64,
    /// Layered graphs: dependencies whose first vertex is on each VL.
    deps_from_vl: Vec<u64>,
    /// (switch, port) of each channel id.
    chan: Vec<(u32, u8)>,
    succ_start: Vec<usize>,
    succ: Vec<u32>,
}

impl Graph {
    fn build<X: Executor>(
        input: &RoutingInput,
        tables: &[&[u8]],
        exec: &X,
        shards: usize,
    ) -> Graph {
        Graph::build_filtered(input, tables, false, exec, shards)
    }

    /// `hosts_only`: end-port LIDs only, and at each switch only when a route from a switch
    /// with end ports passes through it (see [`check_hosts_only`]).
    fn build_filtered<X: Executor>(
        input: &RoutingInput,
        tables: &[&[u8]],
        hosts_only: bool,
        exec: &X,
        shards: usize,
    ) -> Graph {
        let n = input.num_switches();
        let mut has_hosts = vec![false; n];
        for ep in &input.end_ports {
            has_hosts[ep.switch as usize] = true;
        }
        // reached[x] == lid: a host route towards lid passes through switch x.
        let mut reached = vec![u32::MAX; n];
        // Channel ids for switch-to-switch output ports: id_of[channel(s, p)].
        let mut id_of = vec![u32::MAX; input.num_channels()];
        let mut chan = Vec::new();
        // First channel id of each switch (ids are given in switch order).
        let mut chan_start = Vec::with_capacity(n + 1);
        for s in 0..n {
            chan_start.push(chan.len());
            for (p, peer) in input.ports(s).iter().enumerate() {
                if matches!(peer, Peer::Switch { .. }) {
                    id_of[input.channel(s, p as u8)] = chan.len() as u32;
                    chan.push((s as u32, p as u8));
                }
            }
        }
        chan_start.push(chan.len());
        let nch = chan.len();
        let words = (input.max_ports() as usize + 1).div_ceil(64).max(1);
        let mut deps = vec![0u64; nch * words];
        let mut dependencies = 0u64;
        let dests = input.dests();
        if !hosts_only {
            // Switch-major: one switch's table read in order, its neighbours' tables in a
            // few sequential streams; a channel's dependencies all belong to its switch, so
            // jobs over switch ranges fill disjoint parts of the graph. This loop runs for
            // every (switch, used LID) pair: what it needs per output port is looked up once
            // per switch ([`Hop`]), the used LIDs are ranges, and a dependency is one OR
            // (the count is the number of bits set, taken once per job).
            let used = used_ranges(dests);
            // Per switch: its switch-to-switch ports, as a set over all 256 port numbers.
            let sw_ports: Vec<[u64; 4]> = (0..n)
                .map(|s| {
                    let mut bits = [0u64; 4];
                    for (p, peer) in input.ports(s).iter().enumerate().take(256) {
                        if matches!(peer, Peer::Switch { .. }) {
                            bits[p / 64] |= 1u64 << (p % 64);
                        }
                    }
                    bits
                })
                .collect();
            let jobs = shards.clamp(1, n.max(1));
            let parts = exec.map(jobs, |j| {
                let (a, b) = (j * n / jobs, (j + 1) * n / jobs);
                let c0 = chan_start[a];
                let mut local = vec![0u64; (chan_start[b] - c0) * words];
                let mut hop: Vec<Hop<'_>> = Vec::new();
                // In blocks of LIDs, every switch of the job per block: the neighbours'
                // tables are read where a block of them is still cached from the switches
                // before (switches next to each other share most of their neighbours).
                for blk in blocks(&used, CDG_BLOCK) {
                    for (x, t) in tables.iter().enumerate().take(b).skip(a) {
                        let r = blk.start.min(t.len())..blk.end.min(t.len());
                        if r.is_empty() {
                            continue;
                        }
                        hop.clear();
                        hop.extend(input.ports(x).iter().enumerate().map(
                            |(p, peer)| match *peer {
                                Peer::Switch { sw, .. } => Hop {
                                    table: tables[sw as usize],
                                    channels: sw_ports[sw as usize],
                                    chan: id_of[input.channel(x, p as u8)] as usize - c0,
                                },
                                _ => Hop::NOT_SWITCH,
                            },
                        ));
                        for (lid, &p) in t[r.clone()].iter().enumerate() {
                            let Some(h) = hop.get(p as usize) else {
                                continue;
                            };
                            let p2 = h.table.get(r.start + lid).copied().unwrap_or(NO_ROUTE);
                            let (w, bit) = (p2 as usize / 64, 1u64 << (p2 % 64));
                            if h.channels[w] & bit != 0 {
                                local[h.chan * words + w] |= bit;
                            }
                        }
                    }
                }
                let count = local.iter().map(|w| u64::from(w.count_ones())).sum::<u64>();
                (c0, local, count)
            });
            for (c0, local, count) in parts {
                deps[c0 * words..c0 * words + local.len()].copy_from_slice(&local);
                dependencies += count;
            }
        }
        for (lid, d) in dests.iter().enumerate() {
            if !hosts_only || lid == 0 || !d.is_used() {
                continue;
            }
            if hosts_only {
                if d.end == crate::input::NONE {
                    continue;
                }
                for s in (0..n).filter(|&s| has_hosts[s]) {
                    let mut cur = s;
                    while reached[cur] != lid as u32 {
                        reached[cur] = lid as u32;
                        let p = tables[cur].get(lid).copied().unwrap_or(NO_ROUTE);
                        match input.ports(cur).get(p as usize) {
                            Some(Peer::Switch { sw, .. }) => cur = *sw as usize,
                            _ => break,
                        }
                    }
                }
            }
            for (x, t) in tables.iter().enumerate() {
                if hosts_only && reached[x] != lid as u32 {
                    continue;
                }
                let p = t.get(lid).copied().unwrap_or(NO_ROUTE);
                let Some(Peer::Switch { sw, .. }) = input.ports(x).get(p as usize) else {
                    continue;
                };
                let nx = *sw as usize;
                let p2 = tables[nx].get(lid).copied().unwrap_or(NO_ROUTE);
                if !matches!(input.ports(nx).get(p2 as usize), Some(Peer::Switch { .. })) {
                    continue;
                }
                let c = id_of[input.channel(x, p)] as usize;
                let w = &mut deps[c * words + p2 as usize / 64];
                let bit = 1u64 << (p2 % 64);
                if *w & bit == 0 {
                    *w |= bit;
                    dependencies += 1;
                }
            }
        }
        let mut succ_start = Vec::with_capacity(nch + 1);
        let mut succ = Vec::with_capacity(dependencies as usize);
        for (c, &(s, p)) in chan.iter().enumerate() {
            succ_start.push(succ.len());
            let Some(Peer::Switch { sw, .. }) = input.ports(s as usize).get(p as usize) else {
                continue;
            };
            for w in 0..words {
                let mut b = deps[c * words + w];
                while b != 0 {
                    let i = b.trailing_zeros() as usize;
                    b &= b - 1;
                    succ.push(id_of[input.channel(*sw as usize, (w * 64 + i) as u8)]);
                }
            }
        }
        succ_start.push(succ.len());
        Graph {
            channels: nch,
            dependencies,
            deps_from_vl: Vec::new(),
            chan,
            succ_start,
            succ,
        }
    }

    /// `SWITCH_GUID:PORT` of a channel.
    fn name(&self, input: &RoutingInput, c: usize) -> String {
        let (s, p) = self.chan[c];
        format!("{}:{}", input.switches[s as usize].guid, p)
    }

    /// The (channel, VL) graph of a layered routing: every switch's path to every used LID
    /// is followed with the SL of its (source switch, destination switch) pair. A path that
    /// reaches a (switch, SL) already followed towards the same LID stops there (the rest
    /// is the same), so the work is bounded by switches x SLs per LID. Returns the graph,
    /// the number of VLs and which VLs carry a hop.
    fn build_layered(
        input: &RoutingInput,
        tables: &[&[u8]],
        sl: &PathSl,
        sl2vl: &EngineSl2Vl,
    ) -> (Graph, usize, Vec<bool>) {
        let n = input.num_switches();
        let mut id_of = vec![u32::MAX; input.num_channels()];
        let mut chan = Vec::new();
        let mut chan_table: Vec<&[u8; 16]> = Vec::new();
        for s in 0..n {
            let guid = input.switches[s].guid;
            for (p, peer) in input.ports(s).iter().enumerate() {
                if matches!(peer, Peer::Switch { .. }) {
                    id_of[input.channel(s, p as u8)] = chan.len() as u32;
                    chan.push((s as u32, p as u8));
                    chan_table.push(sl2vl.table(guid, p as u8));
                }
            }
        }
        let nvl = chan_table
            .iter()
            .flat_map(|t| t.iter())
            .map(|&v| v as usize + 1)
            .max()
            .unwrap_or(1)
            .clamp(1, 16);
        let nch = chan.len();
        // SL per (source switch, destination switch), dense.
        let guids: Vec<_> = input.switches.iter().map(|s| s.guid).collect();
        let pair_sl = sl.dense(&guids);
        let mut edges: Vec<u64> = Vec::new();
        // Dependencies already recorded, by (first channel, output port after it, SL): the
        // SL and the two channels' tables fix both VLs, so each is pushed once instead of
        // once per path through it (millions on large fabrics).
        let stride = input.max_ports() as usize + 1;
        let mut recorded = vec![0u64; (nch * stride * 16).div_ceil(64)];
        let mut used = vec![false; nvl];
        let mut seen = vec![u32::MAX; n * 16];
        let dests = input.dests();
        // LIDs in blocks: each switch's entries for a block are copied once (one cache line
        // per table) instead of read table by table for every LID.
        const B: usize = 64;
        let mut col = vec![NO_ROUTE; n * B];
        for block in (0..dests.len()).step_by(B) {
            let width = B.min(dests.len() - block);
            for (x, t) in tables.iter().enumerate() {
                for k in 0..width {
                    col[x * B + k] = t.get(block + k).copied().unwrap_or(NO_ROUTE);
                }
            }
            for (k, d) in dests[block..block + width].iter().enumerate() {
                let lid = block + k;
                if lid == 0 || !d.is_used() {
                    continue;
                }
                let t = d.switch as usize;
                for x in 0..n {
                    let s_l = pair_sl[x * n + t];
                    let mut cur = x;
                    let mut prev: Option<u32> = None;
                    let mut prev_c = usize::MAX;
                    loop {
                        let mark = &mut seen[cur * 16 + s_l as usize];
                        let again = *mark == lid as u32;
                        *mark = lid as u32;
                        let p = col[cur * B + k];
                        let Some(Peer::Switch { sw, .. }) = input.ports(cur).get(p as usize) else {
                            break;
                        };
                        let c = id_of[input.channel(cur, p)] as usize;
                        let vl = chan_table[c][s_l as usize] as usize;
                        used[vl] = true;
                        let v = (c * nvl + vl) as u32;
                        if let Some(u) = prev {
                            let key = (prev_c * stride + p as usize) * 16 + s_l as usize;
                            if recorded[key / 64] >> (key % 64) & 1 == 0 {
                                recorded[key / 64] |= 1 << (key % 64);
                                edges.push(u64::from(u) << 32 | u64::from(v));
                            }
                        }
                        prev_c = c;
                        if again {
                            break;
                        }
                        prev = Some(v);
                        cur = *sw as usize;
                    }
                }
            }
        }
        edges.sort_unstable();
        edges.dedup();
        let nv = nch * nvl;
        let mut succ_start = Vec::with_capacity(nv + 1);
        let mut succ = Vec::with_capacity(edges.len());
        let mut deps_from_vl = vec![0u64; nvl];
        let mut k = 0;
        for u in 0..nv {
            succ_start.push(succ.len());
            while k < edges.len() && (edges[k] >> 32) as usize == u {
                succ.push(edges[k] as u32);
                deps_from_vl[u % nvl] += 1;
                k += 1;
            }
        }
        succ_start.push(succ.len());
        let g = Graph {
            channels: nv,
            dependencies: edges.len() as u64,
            deps_from_vl,
            chan,
            succ_start,
            succ,
        };
        (g, nvl, used)
    }

    /// One cycle (channel ids in order), by an iterative three-colour depth-first search.
    fn find_cycle(&self) -> Option<Vec<usize>> {
        const WHITE: u8 = 0;
        const GREY: u8 = 1;
        const BLACK: u8 = 2;
        let n = self.channels;
        let mut colour = vec![WHITE; n];
        // (channel, next successor index)
        let mut stack: Vec<(usize, usize)> = Vec::new();
        for start in 0..n {
            if colour[start] != WHITE {
                continue;
            }
            colour[start] = GREY;
            stack.push((start, self.succ_start[start]));
            while let Some(top) = stack.last_mut() {
                let (c, i) = *top;
                if i == self.succ_start[c + 1] {
                    colour[c] = BLACK;
                    stack.pop();
                    continue;
                }
                top.1 += 1;
                let m = self.succ[i] as usize;
                match colour[m] {
                    WHITE => {
                        colour[m] = GREY;
                        stack.push((m, self.succ_start[m]));
                    }
                    GREY => {
                        // The grey channels on the stack from m to c form the cycle.
                        let from = stack.iter().position(|&(s, _)| s == m).unwrap_or(0);
                        return Some(stack[from..].iter().map(|&(s, _)| s).collect());
                    }
                    _ => {}
                }
            }
        }
        None
    }
}

/// What the dependency scan needs about one output port of a switch.
struct Hop<'a> {
    /// The next switch's table (empty when the port does not lead to a switch).
    table: &'a [u8],
    /// The next switch's switch-to-switch ports (none when the port does not lead to one).
    channels: [u64; 4],
    /// The port's channel id, relative to the job's first channel.
    chan: usize,
}

impl Hop<'_> {
    const NOT_SWITCH: Hop<'static> = Hop {
        table: &[],
        channels: [0; 4],
        chan: 0,
    };
}

/// LIDs per block of the dependency scan: a block of every table (4 MB at 3,920 switches)
/// stays in a shared L3 cache while the switches that read it as neighbours come by.
const CDG_BLOCK: usize = 1024;

/// `ranges` cut into pieces of at most `len` LIDs, in order.
fn blocks(
    ranges: &[std::ops::Range<usize>],
    len: usize,
) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
    ranges.iter().flat_map(move |r| {
        (r.start..r.end)
            .step_by(len)
            .map(move |a| a..(a + len).min(r.end))
    })
}

/// The used LIDs (LID 0 excluded) as ascending, disjoint ranges.
fn used_ranges(dests: &[crate::input::Dest]) -> Vec<std::ops::Range<usize>> {
    let mut out: Vec<std::ops::Range<usize>> = Vec::new();
    for (lid, d) in dests.iter().enumerate().skip(1) {
        if !d.is_used() {
            continue;
        }
        match out.last_mut() {
            Some(r) if r.end == lid => r.end = lid + 1,
            _ => out.push(lid..lid + 1),
        }
    }
    out
}
