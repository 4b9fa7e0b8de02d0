//! Fat-tree detection and the per-destination root assignment of the fat-tree engine.
//!
//! Levels: leaves are the switches with end ports (level 0); every other switch's level is
//! its BFS distance to the nearest leaf. A topology is a fat tree when it is connected, no
//! link joins two switches of the same level, and every switch below the top level has at
//! least one uplink. Roots are the top-level switches.
//!
//! Routing: destinations (end-port LIDs) are taken in (leaf, port, LID) order. For each,
//! a path is climbed from its leaf to a root, at every switch taking the uplink that carries
//! the fewest destinations so far (ties: lower remote switch index, then lower port). The
//! switches on that path route down along it; every switch that can reach the destination
//! leaf only by going down does so; every other switch goes up towards the chosen root.
//! On a complete fat tree this is the D-mod-k assignment: consecutive destinations get
//! different uplinks at every level, so every shift permutation loads each link at most once.
//!
//! Degraded trees (links or switches missing): a leaf that some root cannot reach by going
//! down has fewer downward paths than destinations to spread over them; with one root per
//! destination for every source, a root that carries two of the leaf's destinations
//! carries twice the load on its last link (2x the lower bound on a radix-36 2-level tree
//! with one spine-leaf link gone). On a degraded tree every source picks its own way to
//! every destination, balanced over the whole fabric ([`crate::ftree_balance`]); routes
//! stay shortest up*down*. [`all_to_all_lower_bound`] is the bound it is measured against.

use crate::error::RoutingError;
use crate::hops::{Directions, UNREACHABLE};
use crate::input::{NONE, Peer, RoutingInput};

/// Per-destination state of the fat-tree engine.
#[derive(Clone, Debug)]
pub struct FtreePlan {
    /// Level of each switch (0 = leaf).
    pub level: Vec<u8>,
    /// Highest level.
    pub max_level: u8,
    /// Root switches (top level), by root position.
    pub roots: Vec<u32>,
    /// `updist[x * R + r]`: up-only hops from switch x to root r, [`UNREACHABLE`] if none.
    pub updist: Vec<u8>,
    /// Root position chosen per LID (u32::MAX for switch LIDs and unused LIDs).
    pub lid_root: Vec<u32>,
    /// Switch on the chosen path per LID and level: `lid_path[lid * (max_level + 1) + level]`.
    pub lid_path: Vec<u32>,
    /// Some leaf is not reached by every root going down (a link or switch above it is
    /// missing): the tree is degraded and [`crate::ftree_balance`] balances it.
    pub degraded: bool,
    /// Per switch: its index among the switches of its level, in switch index order.
    pub level_idx: Vec<u32>,
}

/// Switch levels, or why the topology is not a fat tree.
pub fn levels(input: &RoutingInput) -> Result<(Vec<u8>, u8), RoutingError> {
    let n = input.num_switches();
    let nf = |why: String| RoutingError::NotAFatTree { why };
    if n == 0 {
        return Err(nf("no switches".into()));
    }
    let cas = input.end_ports_per_switch();
    let leaves: Vec<u32> = (0..n as u32).filter(|&s| cas[s as usize] > 0).collect();
    if leaves.is_empty() {
        return Err(nf("no switch has end ports".into()));
    }
    let from0 = crate::updn::bfs_from(input, &[0]);
    let unreachable = from0.iter().filter(|&&d| d == NONE).count();
    if unreachable > 0 {
        return Err(RoutingError::Disconnected {
            unreachable,
            from: input.switches[0].guid,
        });
    }
    let dist = crate::updn::bfs_from(input, &leaves);
    let unreachable = dist.iter().filter(|&&d| d == NONE).count();
    if unreachable > 0 {
        return Err(RoutingError::Disconnected {
            unreachable,
            from: input.switches[leaves[0] as usize].guid,
        });
    }
    let max = *dist.iter().max().unwrap_or(&0);
    if max > 30 {
        return Err(nf(format!("{max} levels")));
    }
    for s in 0..n {
        let mut has_up = false;
        for &m in input.neighbours(s) {
            if dist[m as usize] == dist[s] {
                return Err(nf(format!(
                    "switches {} and {} are linked at the same level {}",
                    input.switches[s].guid, input.switches[m as usize].guid, dist[s]
                )));
            }
            has_up |= dist[m as usize] > dist[s];
        }
        if !has_up && dist[s] < max {
            return Err(nf(format!(
                "switch {} at level {} has no uplink (top level is {})",
                input.switches[s].guid, dist[s], max
            )));
        }
    }
    Ok((dist.iter().map(|&d| d as u8).collect(), max as u8))
}

/// Orientation for the fat-tree engine: rank = distance below the top level.
pub fn directions(input: &RoutingInput, level: &[u8], max_level: u8) -> Directions {
    let rank: Vec<u32> = level.iter().map(|&l| (max_level - l) as u32).collect();
    Directions::from_ranks(input, &rank)
}

/// Builds the fat-tree plan: levels, roots, up-distances and the root/path per LID.
pub fn plan(input: &RoutingInput) -> Result<(FtreePlan, Directions), RoutingError> {
    let (level, max_level) = levels(input)?;
    let n = input.num_switches();
    let roots: Vec<u32> = (0..n as u32)
        .filter(|&s| level[s as usize] == max_level)
        .collect();
    let mut root_pos = vec![NONE; n];
    for (i, &r) in roots.iter().enumerate() {
        root_pos[r as usize] = i as u32;
    }
    // Up-only distance to every root: BFS down from each root (row-major by switch).
    let nr = roots.len();
    let mut updist = vec![UNREACHABLE; nr * n];
    let mut col = vec![UNREACHABLE; n];
    let mut queue = Vec::new();
    for (ri, &r) in roots.iter().enumerate() {
        col.iter_mut().for_each(|v| *v = UNREACHABLE);
        col[r as usize] = 0;
        queue.clear();
        queue.push(r);
        let mut head = 0;
        while head < queue.len() {
            let y = queue[head] as usize;
            head += 1;
            updist[y * nr + ri] = col[y];
            for &x in input.neighbours(y) {
                let x = x as usize;
                if level[x] + 1 == level[y] && col[x] == UNREACHABLE {
                    col[x] = col[y] + 1;
                    queue.push(x as u32);
                }
            }
        }
    }
    // Greedy climb per destination LID.
    let stride = max_level as usize + 1;
    let nlids = input.max_lid() as usize + 1;
    let mut lid_root = vec![NONE; nlids];
    let mut lid_path = vec![NONE; nlids * stride];
    let mut down_count = vec![0u32; input.num_channels()];
    for ep in &input.end_ports {
        for k in 0..ep.lids.count() {
            let lid = ep.lids.base.0 as usize + k as usize;
            let mut cur = ep.switch as usize;
            lid_path[lid * stride] = cur as u32;
            while level[cur] < max_level {
                let mut best: Option<(u32, u32, u8)> = None;
                for (p, peer) in input.ports(cur).iter().enumerate() {
                    let Peer::Switch { sw, .. } = *peer else {
                        continue;
                    };
                    if level[sw as usize] != level[cur] + 1 {
                        continue;
                    }
                    let c = down_count[input.channel(cur, p as u8)];
                    let cand = (c, sw, p as u8);
                    if best.is_none_or(|b| cand < b) {
                        best = Some(cand);
                    }
                }
                // Invariant: levels() checked every switch below the top has an uplink.
                let Some((_, up, p)) = best else { break };
                down_count[input.channel(cur, p)] += 1;
                cur = up as usize;
                lid_path[lid * stride + level[cur] as usize] = up;
            }
            lid_root[lid] = root_pos[cur];
        }
    }
    // Degraded: some root does not reach a leaf by going down (= up from the leaf).
    let degraded = input.end_ports.iter().any(|ep| {
        let leaf = ep.switch as usize;
        updist[leaf * nr..(leaf + 1) * nr].contains(&UNREACHABLE)
    });
    let mut per_level = vec![0u32; max_level as usize + 1];
    let level_idx = level
        .iter()
        .map(|&l| {
            let i = per_level[l as usize];
            per_level[l as usize] += 1;
            i
        })
        .collect();
    let dirs = directions(input, &level, max_level);
    Ok((
        FtreePlan {
            level,
            max_level,
            roots,
            updist,
            lid_root,
            lid_path,
            degraded,
            level_idx,
        },
        dirs,
    ))
}

/// The cut lower bound for the busiest switch-to-switch link under all-to-all traffic
/// (every ordered pair of end ports, one path each) on a fat tree, None when the topology
/// is not one. For every level below the top, the switches at or below it fall into
/// connected parts (a leaf, a pod, ...); a part with `h` of the `H` end ports exchanges
/// `h * (H - h)` pairs in each direction over its `u` links to the level above, so some
/// link carries at least `ceil(h * (H - h) / u)`. The bound is the largest over all parts;
/// on a complete fat tree it is reached (every uplink of a leaf carries its share).
pub fn all_to_all_lower_bound(input: &RoutingInput) -> Option<u64> {
    let (level, max_level) = levels(input).ok()?;
    let n = input.num_switches();
    let hosts = input.end_ports_per_switch();
    let total: u64 = hosts.iter().map(|&h| h as u64).sum();
    let mut best = 0u64;
    for l in 0..max_level {
        // Parts: components of the switches at levels <= l.
        let mut part = vec![NONE; n];
        let mut stack = Vec::new();
        for start in 0..n {
            if level[start] > l || part[start] != NONE {
                continue;
            }
            part[start] = start as u32;
            stack.push(start);
            let (mut h, mut up) = (0u64, 0u64);
            while let Some(x) = stack.pop() {
                h += hosts[x] as u64;
                for peer in input.ports(x) {
                    let Peer::Switch { sw, .. } = *peer else {
                        continue;
                    };
                    let y = sw as usize;
                    if level[y] > l {
                        up += 1;
                    } else if part[y] == NONE {
                        part[y] = start as u32;
                        stack.push(y);
                    }
                }
            }
            if up > 0 {
                best = best.max((h * (total - h)).div_ceil(up));
            }
        }
    }
    Some(best)
}
