//! Up/down: root selection and switch ranks.
//!
//! Roots are the GUIDs given, or detected automatically with OpenSM's rule: build, for each
//! switch, the histogram of switch hops to every CA (and router) port; a switch is a root
//! when exactly one bar of the histogram holds more than 90% of those ports and no other bar
//! more than 5% (the spines of a fat tree see every host at the same distance); of the
//! switches that pass, only those whose dominant bar is nearest are kept (on large fat trees
//! the aggregation switches pass too, and adjacent roots would forbid every cross-pod path
//! under up*down*). When no
//! switch passes (tori, random graphs) we take the single most central switch: least
//! eccentricity towards CA switches, then least total distance, then lowest GUID.
//! Ranks are BFS distances from the nearest root; moves towards a lower (rank, GUID) are up.

use crate::error::RoutingError;
use crate::hops::Directions;
use crate::input::{NONE, RoutingInput};
use fabric::Guid;

/// Breadth-first distances from a set of sources over the switch graph (u32::MAX = unreached).
pub(crate) fn bfs_from(input: &RoutingInput, sources: &[u32]) -> Vec<u32> {
    let n = input.num_switches();
    let mut dist = vec![NONE; n];
    let mut queue = Vec::with_capacity(n);
    for &s in sources {
        if dist[s as usize] == NONE {
            dist[s as usize] = 0;
            queue.push(s);
        }
    }
    let mut head = 0;
    while head < queue.len() {
        let y = queue[head] as usize;
        head += 1;
        for &x in input.neighbours(y) {
            if dist[x as usize] == NONE {
                dist[x as usize] = dist[y] + 1;
                queue.push(x);
            }
        }
    }
    dist
}

/// The root switches: the given GUIDs, or the automatic rule described in the module doc.
pub fn find_roots(input: &RoutingInput, given: &[Guid]) -> Result<Vec<u32>, RoutingError> {
    let n = input.num_switches();
    if n == 0 {
        return Err(RoutingError::NoRoots);
    }
    if !given.is_empty() {
        let mut roots = Vec::new();
        for g in given {
            let s = input
                .switch_by_guid(*g)
                .ok_or(RoutingError::RootNotFound(*g))?;
            roots.push(s as u32);
        }
        roots.sort_unstable();
        roots.dedup();
        return Ok(roots);
    }
    let cas = input.end_ports_per_switch();
    let total: u64 = cas.iter().map(|&c| c as u64).sum();
    // hist[x][d] = CA ports at switch distance d from x; ecc/sum for the fallback.
    let mut hist: Vec<Vec<u64>> = vec![Vec::new(); n];
    let mut ecc = vec![0u32; n];
    let mut sum = vec![0u64; n];
    for (leaf, &c) in cas.iter().enumerate() {
        if c == 0 {
            continue;
        }
        let d = bfs_from(input, &[leaf as u32]);
        for x in 0..n {
            if d[x] == NONE {
                continue;
            }
            let h = &mut hist[x];
            if h.len() <= d[x] as usize {
                h.resize(d[x] as usize + 1, 0);
            }
            h[d[x] as usize] += c as u64;
            ecc[x] = ecc[x].max(d[x]);
            sum[x] += d[x] as u64 * c as u64;
        }
    }
    let mut roots = Vec::new();
    if total > 0 {
        let (thd1, thd2) = (total as f64 * 0.9, total as f64 * 0.05);
        // (switch, distance of its dominant bar) for every switch passing OpenSM's test.
        let mut cands = Vec::new();
        for (x, h) in hist.iter().enumerate() {
            let over1: Vec<usize> = (0..h.len()).filter(|&d| h[d] as f64 > thd1).collect();
            let over2 = h.iter().filter(|&&v| v as f64 > thd2).count();
            if over1.len() == 1 && over2 == 1 {
                cands.push((x as u32, over1[0]));
            }
        }
        // Keep those that see the hosts closest: on a large fat tree the aggregation
        // switches pass the test too (their own pod is under 5% of the hosts), but the
        // spines see every host nearer, and roots must not be adjacent to each other.
        if let Some(best) = cands.iter().map(|c| c.1).min() {
            roots = cands.iter().filter(|c| c.1 == best).map(|c| c.0).collect();
        }
    }
    if roots.is_empty() {
        let best = (0..n)
            .min_by_key(|&x| (ecc[x], sum[x], input.switches[x].guid))
            .ok_or(RoutingError::NoRoots)?;
        roots.push(best as u32);
    }
    Ok(roots)
}

/// Ranks (BFS distance from the nearest root) and the resulting orientation.
pub fn directions(input: &RoutingInput, roots: &[u32]) -> Result<Directions, RoutingError> {
    let rank = bfs_from(input, roots);
    let unreachable = rank.iter().filter(|&&v| v == NONE).count();
    if unreachable > 0 {
        return Err(RoutingError::Disconnected {
            unreachable,
            from: input.switches[roots[0] as usize].guid,
        });
    }
    Ok(Directions::from_ranks(input, &rank))
}
