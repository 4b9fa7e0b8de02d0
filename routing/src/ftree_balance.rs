//! Fat-tree balancing on degraded trees (a leaf some root cannot reach by going down: a
//! link or a switch above it is missing).
//!
//! With one root per destination for every source (the D-mod-k assignment of
//! [`crate::ftree`]), the `h` destinations of a leaf share its `u < h` surviving downward
//! paths whole: some path carries two destinations from every source, twice the cut lower
//! bound ([`crate::ftree::all_to_all_lower_bound`]). Here each source switch picks its own
//! way, seeing the traffic routed before it. End-port destinations are taken in routing
//! order; for each, the switches with end ports (the sources) walk to it one after the
//! other, from a start that rotates with the destination:
//! - a switch whose port towards this destination is already fixed (a switch has one LFT
//!   entry per LID: the first source through it decides for all) follows it;
//! - otherwise it fixes the legal shortest up*down* port (the hop tables' rule,
//!   [`crate::select::allowed`]) whose way on costs least: the busiest channel to the
//!   destination, then the sum of the channels' all-to-all loads, following fixed ports
//!   and else each switch's cheapest candidate (ties: the less loaded first channel, then
//!   a rotation by the destination's ordinal on its leaf and the switch's index in its
//!   level);
//! - the source's end ports are then added to the load of every channel it walked.
//!
//! Routes stay up*down* and shortest, so the routing keeps its deadlock freedom; switches
//! no source passes keep the LFT phase's own choice. Incremental routing: an entry of the
//! tables in force that is still legal is kept (as the LFT phase keeps it) and the walks
//! follow it, so only the entries that must change are balanced, against real loads. Measured (routing/tests/deadlock.rs,
//! docs/routing.md): within 1.03x of the lower bound on ft2:36 and ft3:36 (6 pods) with
//! links removed, where one root per destination gave 1.9-2.1x. The work is sequential (a
//! walk sees the loads of those before it), so the result is the same for any number of
//! workers; it grows with sources x destinations and is skipped on a complete tree.

use crate::engine::{Hints, Plan};
use crate::hops::HopTable;
use crate::input::{NONE, Peer, RoutingInput};
use crate::lft::NO_ROUTE;
use crate::select::{Move, allowed};

/// The chosen port of every switch a source walked through, towards every end-port LID.
#[derive(Clone, Debug)]
pub struct Balance {
    /// Per LID: its column in `choice`, or [`NONE`].
    slot: Vec<u32>,
    /// End-port LIDs.
    width: usize,
    /// `choice[switch * width + slot]`.
    choice: Vec<u8>,
}

impl Balance {
    /// The port switch `s` takes towards `lid`, when this balancing decided it.
    pub(crate) fn port(&self, s: usize, lid: usize) -> Option<u8> {
        let k = *self.slot.get(lid)?;
        if k == NONE {
            return None;
        }
        Some(self.choice[s * self.width + k as usize]).filter(|&p| p != NO_ROUTE)
    }
}

/// A candidate: (port, next switch, channel).
type Cand = (u8, u32, u32);

/// Legal shortest ports of every switch towards one destination switch, as a CSR list.
struct Candidates {
    start: Vec<u32>,
    list: Vec<Cand>,
}

impl Candidates {
    fn new(n: usize) -> Candidates {
        Candidates {
            start: vec![0; n + 1],
            list: Vec::new(),
        }
    }

    fn fill(&mut self, plan: &Plan, input: &RoutingInput, hops: &HopTable, t: usize) {
        let n = input.num_switches();
        self.list.clear();
        for x in 0..n {
            self.start[x] = self.list.len() as u32;
            let a = hops.row(x)[t];
            for (p, peer) in input.ports(x).iter().enumerate() {
                let Peer::Switch { sw, .. } = *peer else {
                    continue;
                };
                let mv = match &plan.dirs {
                    None => Move::Any,
                    Some(d) if d.is_up(x, sw as usize) => Move::Up,
                    Some(_) => Move::Down,
                };
                if allowed(mv, a, hops.row(sw as usize)[t]) {
                    self.list
                        .push((p as u8, sw, input.channel(x, p as u8) as u32));
                }
            }
        }
        self.start[n] = self.list.len() as u32;
    }

    fn of(&self, x: usize) -> &[Cand] {
        &self.list[self.start[x] as usize..self.start[x + 1] as usize]
    }
}

/// The cost of a way to the destination: the busiest channel on it, then the sum of its
/// channels' loads (compared in that order: a way never adds to the busiest channel while
/// another way avoids it; among ways as busy, the least loaded overall).
type Cost = (u64, u64);

const FREE: Cost = (0, 0);
const NO_WAY: Cost = (u64::MAX, u64::MAX);

/// The cost of taking a channel with `load` and then a way costing `rest`.
fn then(load: u64, rest: Cost) -> Cost {
    (load.max(rest.0), load.saturating_add(rest.1))
}

/// The walk state for one destination: the ports fixed so far (a switch has one LFT entry
/// per LID, so the first source through it decides for every later one) and, per switch,
/// its cheapest candidate and that candidate's cost when last computed.
///
/// Costs only grow while a destination is balanced (loads are only added, and fixing a
/// port only removes options), so when the remembered cheapest candidate still costs what
/// it cost, it is still the cheapest: checking it is one walk along its way, and every
/// candidate is recomputed only when that cost has grown (traffic went its way since).
struct Walk {
    /// Per switch: fixed (port, next switch, channel), port NO_ROUTE when not fixed.
    fixed: Vec<Cand>,
    /// Per switch: the cheapest candidate's index (NONE: not computed for this
    /// destination) and its cost.
    memo: Vec<(u32, Cost)>,
    /// Switches with a memo for the current destination.
    memoised: Vec<u32>,
}

impl Walk {
    /// The cost from `x` to the destination switch `t`: along the fixed port when `x` has
    /// one, else its cheapest candidate.
    fn cost(&mut self, x: usize, t: usize, cands: &Candidates, load: &[u64]) -> Cost {
        if x == t {
            return FREE;
        }
        if self.memo[x] == (NONE, FREE) {
            self.memoised.push(x as u32);
        }
        let (p, y, ch) = self.fixed[x];
        if p != NO_ROUTE {
            let v = then(load[ch as usize], self.cost(y as usize, t, cands, load));
            // (Kept as the switch's lower bound for the lazy choice of its predecessors.)
            self.memo[x].1 = v;
            return v;
        }
        let c = cands.of(x);
        let (i, was) = self.memo[x];
        if i != NONE {
            let (_, y, ch) = c[i as usize];
            let now = then(load[ch as usize], self.cost(y as usize, t, cands, load));
            if now == was {
                return now;
            }
        }
        let mut best = (NONE, NO_WAY);
        for (j, &(_, y, ch)) in c.iter().enumerate() {
            let v = then(load[ch as usize], self.cost(y as usize, t, cands, load));
            if v < best.1 {
                best = (j as u32, v);
            }
        }
        self.memo[x] = best;
        best.1
    }

    /// Forgets the fixed ports and memos of the previous destination.
    fn reset(&mut self, touched: &mut Vec<u32>) {
        for &x in touched.iter() {
            self.fixed[x as usize].0 = NO_ROUTE;
        }
        touched.clear();
        for &x in &self.memoised {
            self.memo[x as usize] = (NONE, FREE);
        }
        self.memoised.clear();
    }
}

/// The balanced choices for a fat-tree plan on a degraded tree (every end-port LID is
/// balanced then, so the loads the choices see are the whole traffic); None on a complete
/// tree or for other engines.
pub(crate) fn balance(
    plan: &Plan,
    input: &RoutingInput,
    hops: &HopTable,
    hints: Option<&Hints<'_>>,
) -> Option<Balance> {
    let f = plan.ftree.as_ref()?;
    if !f.degraded {
        return None;
    }
    let dests = input.dests();
    let mut slot = vec![NONE; dests.len()];
    let mut width = 0usize;
    for &lid in input.routing_order() {
        let lid = lid as usize;
        if dests[lid].end != NONE {
            slot[lid] = width as u32;
            width += 1;
        }
    }
    let n = input.num_switches();
    let hosts = input.end_ports_per_switch();
    let sources: Vec<usize> = (0..n).filter(|&x| hosts[x] > 0).collect();
    // Ordinal of each destination on its leaf (for the rotations).
    let mut ordinal = vec![0u32; n];
    let mut choice = vec![NO_ROUTE; n * width];
    let mut load = vec![0u64; input.num_channels()];
    let mut w = Walk {
        fixed: vec![(NO_ROUTE, NONE, 0); n],
        memo: vec![(NONE, FREE); n],
        memoised: Vec::new(),
    };
    let mut cands = Candidates::new(n);
    let mut cur = NONE;
    let mut touched: Vec<u32> = Vec::new();
    for &lid in input.routing_order() {
        let lid = lid as usize;
        let k = slot[lid];
        if k == NONE {
            continue;
        }
        let t = dests[lid].switch as usize;
        w.reset(&mut touched);
        if t as u32 != cur {
            cands.fill(plan, input, hops, t);
            cur = t as u32;
        }
        // Incremental routing: the entries of the tables in force that stay legal are kept
        // by the LFT phase, so the walks follow them too (their loads are real).
        if let Some(h) = hints {
            for x in 0..n {
                let Some(&p) = h.table(x).and_then(|tb| tb.get(lid)) else {
                    continue;
                };
                if let Some(&c) = cands.of(x).iter().find(|c| c.0 == p) {
                    w.fixed[x] = c;
                    touched.push(x as u32);
                }
            }
        }
        let spread = ordinal[t];
        ordinal[t] += 1;
        // Sources one by one (from a rotating start), each walking to the destination on
        // the fixed ports and fixing the cheapest one where none is fixed yet; its traffic
        // is added before the next source chooses.
        let start = (spread as usize + f.level_idx[t] as usize) % sources.len();
        for i in 0..sources.len() {
            let x0 = sources[(start + i) % sources.len()];
            if x0 == t {
                continue;
            }
            let flow = u64::from(hosts[x0]);
            let mut x = x0;
            let mut steps = 0;
            while x != t && steps < n {
                steps += 1;
                if w.fixed[x].0 == NO_ROUTE {
                    let c = cands.of(x);
                    let rot = (spread + f.level_idx[x]) as usize % c.len().max(1);
                    // Lazily: the candidate with the least lower bound (the next switch's
                    // last computed cost) is recomputed until its fresh cost is its bound.
                    let mut pick: Option<((Cost, u64, usize), Cand)>;
                    loop {
                        pick = None;
                        for (j, &cand) in c.iter().enumerate() {
                            let l = load[cand.2 as usize];
                            let lb = w.memo[cand.1 as usize].1;
                            // (j - rot) mod len, without a division per candidate.
                            let r = if j >= rot { j - rot } else { j + c.len() - rot };
                            let key = (then(l, lb), l, r);
                            if pick.is_none_or(|(b, _)| key < b) {
                                pick = Some((key, cand));
                            }
                        }
                        let Some(((bound, l, _), cand)) = pick else {
                            break;
                        };
                        let fresh = then(l, w.cost(cand.1 as usize, t, &cands, &load));
                        if fresh <= bound {
                            break;
                        }
                    }
                    let Some((_, cand)) = pick else { break };
                    w.fixed[x] = cand;
                    touched.push(x as u32);
                    choice[x * width + k as usize] = cand.0;
                }
                let (_, y, ch) = w.fixed[x];
                load[ch as usize] += flow;
                x = y as usize;
            }
        }
    }
    Some(Balance {
        slot,
        width,
        choice,
    })
}
