//! Random irregular switch graphs, connected, seeded.

use super::{GenError, SwitchRole, attach_hosts, check_size, invalid, switch_guid};
use crate::rng::SplitMix64;
use crate::topology::{NodeId, PortRef, Topology};
use crate::types::NodeType;
use std::collections::HashSet;

/// Parameters of a random irregular fabric.
///
/// `switches` switches of `radix` ports (description `switch N`); hosts on ports
/// 1..=hosts_per_switch; switch-to-switch links on the next `links_per_switch` ports. The
/// graph is built from `seed` with [`SplitMix64`]: first a random spanning tree (so it is
/// always connected), then the remaining link ports are paired at random, never a switch
/// with itself and never two links between the same pair. Each switch gets at most
/// `links_per_switch` links; a few ports may stay free when the pairing cannot complete
/// (an odd total, or the last candidates already adjacent).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RandomSpec {
    /// Number of switches (1 or more).
    pub switches: u32,
    /// Ports per switch (default 36).
    pub radix: u16,
    /// Switch-to-switch links per switch (default radix/2; at least 2 when there are more
    /// than 2 switches, so that the graph can be connected).
    pub links_per_switch: u16,
    /// Hosts per switch (default radix − links_per_switch).
    pub hosts_per_switch: u16,
    /// Seed of the random choices.
    pub seed: u64,
}

impl RandomSpec {
    /// Defaults: radix 36, 18 links and 18 hosts per switch.
    pub fn new(switches: u32, seed: u64) -> RandomSpec {
        RandomSpec {
            switches,
            radix: 36,
            links_per_switch: 18,
            hosts_per_switch: 18,
            seed,
        }
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), GenError> {
        if self.switches == 0 {
            return Err(invalid("switches", "a fabric needs at least 1 switch"));
        }
        if self.radix == 0 || self.radix > 254 {
            return Err(invalid(
                "radix",
                format!("a switch has 1 to 254 ports, not {}", self.radix),
            ));
        }
        let used = u32::from(self.links_per_switch) + u32::from(self.hosts_per_switch);
        if used > u32::from(self.radix) {
            return Err(invalid(
                "ports",
                format!(
                    "{} links + {} hosts per switch exceed the radix {}",
                    self.links_per_switch, self.hosts_per_switch, self.radix
                ),
            ));
        }
        let needed = match self.switches {
            1 => 0,
            2 => 1,
            _ => 2,
        };
        if self.links_per_switch < needed {
            return Err(invalid(
                "links per switch",
                format!(
                    "{} switches need at least {needed} links per switch to be connected",
                    self.switches
                ),
            ));
        }
        Ok(())
    }
}

/// Builds a random irregular fabric (see [`RandomSpec`]).
pub fn random(spec: &RandomSpec) -> Result<Topology, GenError> {
    spec.validate()?;
    let n = spec.switches as usize;
    check_size(u64::from(spec.switches) * (1 + u64::from(spec.hosts_per_switch)))?;
    let mut rng = SplitMix64::new(spec.seed);
    let mut t = Topology::new();
    let switches: Vec<NodeId> = (0..spec.switches)
        .map(|i| {
            let guid = switch_guid(SwitchRole::Random, 0, i);
            t.add_node(NodeType::Switch, spec.radix, guid, format!("switch {i}"))
        })
        .collect::<Result<_, _>>()?;

    let mut g = Wiring {
        t: &mut t,
        switches: &switches,
        first_link_port: spec.hosts_per_switch + 1,
        used: vec![0u16; n],
        adjacent: HashSet::new(),
    };

    // Random spanning tree: attach each switch (in random order) to a random switch already
    // in the tree that still has a free link port. With links_per_switch >= 2 a newcomer
    // always keeps a free port, so the candidate list is never empty.
    let l = spec.links_per_switch;
    let mut order: Vec<usize> = (0..n).collect();
    rng.shuffle(&mut order);
    let mut candidates: Vec<usize> = vec![order[0]];
    for &v in &order[1..] {
        let idx = rng.below(candidates.len() as u64) as usize;
        let u = candidates[idx];
        g.link(u, v)?;
        if g.used[u] >= l {
            candidates.swap_remove(idx);
        }
        if g.used[v] < l {
            candidates.push(v);
        }
    }

    // Pair the remaining link ports at random, a few rounds.
    let mut stubs: Vec<usize> = Vec::new();
    for s in 0..n {
        stubs.extend(std::iter::repeat_n(s, usize::from(l - g.used[s])));
    }
    for _round in 0..8 {
        if stubs.len() < 2 {
            break;
        }
        rng.shuffle(&mut stubs);
        let mut left = Vec::new();
        let mut pairs = stubs.chunks_exact(2);
        for pair in &mut pairs {
            let (a, b) = (pair[0], pair[1]);
            if a != b && !g.adjacent.contains(&key(a, b)) {
                g.link(a, b)?;
            } else {
                left.extend_from_slice(pair);
            }
        }
        left.extend_from_slice(pairs.remainder());
        if left.len() == stubs.len() {
            break;
        }
        stubs = left;
    }

    let plan: Vec<(NodeId, u16)> = switches
        .iter()
        .map(|&s| (s, spec.hosts_per_switch))
        .collect();
    attach_hosts(&mut t, &plan)?;
    Ok(t)
}

fn key(a: usize, b: usize) -> (u32, u32) {
    (a.min(b) as u32, a.max(b) as u32)
}

/// Switch-to-switch cabling state: link ports are filled in order from `first_link_port`.
struct Wiring<'a> {
    t: &'a mut Topology,
    switches: &'a [NodeId],
    first_link_port: u16,
    used: Vec<u16>,
    adjacent: HashSet<(u32, u32)>,
}

impl Wiring<'_> {
    fn link(&mut self, a: usize, b: usize) -> Result<(), GenError> {
        let pa = (self.first_link_port + self.used[a]) as u8;
        let pb = (self.first_link_port + self.used[b]) as u8;
        self.t.connect(
            PortRef::new(self.switches[a], pa),
            PortRef::new(self.switches[b], pb),
        )?;
        self.used[a] += 1;
        self.used[b] += 1;
        self.adjacent.insert(key(a, b));
        Ok(())
    }
}
