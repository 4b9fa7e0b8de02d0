//! Which ports of the simulated fabric can still reach each other: two SMs on parts of the
//! fabric that a link down cut apart manage two subnets, each rightly with its own master.

use fabric::{Guid, NodeId, PortState};
use fabric_sim::SimFabric;
use std::collections::{BTreeSet, VecDeque};

/// A cable: (node, port) at each end.
pub type Cable = (NodeId, u8, NodeId, u8);

/// True when the nodes of ports `a` and `b` are joined by cables whose ends are all up (not
/// Down) on nodes that are present. Unknown ports are not reachable.
pub fn reachable(fab: &SimFabric, cables: &[Cable], a: Guid, b: Guid) -> bool {
    let (Some((from, _)), Some((to, _))) = (fab.port_by_guid(a), fab.port_by_guid(b)) else {
        return false;
    };
    let up = |n: NodeId, p: u8| {
        fab.node_present(n) && fab.port_state(n, p).is_ok_and(|s| s != PortState::Down)
    };
    let mut seen = BTreeSet::from([from]);
    let mut todo = VecDeque::from([from]);
    while let Some(n) = todo.pop_front() {
        if n == to {
            return true;
        }
        for &(x, xp, y, yp) in cables {
            let next = match (x == n, y == n) {
                (true, _) => y,
                (_, true) => x,
                _ => continue,
            };
            if up(x, xp) && up(y, yp) && seen.insert(next) {
                todo.push_back(next);
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabric_sim::{Fault, SimConfig};

    #[test]
    fn a_link_down_cuts_a_host_off_and_its_return_joins_it_again() {
        let topo = "ft2:4"
            .parse::<fabric::GenSpec>()
            .unwrap()
            .generate()
            .unwrap();
        let cables: Vec<Cable> = topo
            .links()
            .map(|(a, b)| (a.node, a.port.0, b.node, b.port.0))
            .collect();
        let cas: Vec<(NodeId, u8, Guid)> = topo
            .nodes()
            .filter(|(_, n)| !n.is_switch())
            .map(|(id, n)| (id, 1, n.ports[1].guid))
            .collect();
        let mut fab = SimFabric::new(&topo, SimConfig::default()).unwrap();
        fab.run_until(1_000_000);
        let (a, b) = (cas[0].2, cas[cas.len() - 1].2);
        assert!(reachable(&fab, &cables, a, b));
        let (node, port) = (cas[0].0, 1);
        fab.inject(fab.now(), Fault::LinkDown { node, port })
            .unwrap();
        fab.run_until(2_000_000);
        assert!(!reachable(&fab, &cables, a, b));
        assert!(!reachable(&fab, &cables, b, a));
        assert!(reachable(&fab, &cables, b, cas[1].2));
        assert!(!reachable(&fab, &cables, a, Guid(0xdead)));
        fab.inject(fab.now(), Fault::LinkUp { node, port }).unwrap();
        fab.run_until(1_000_000_000);
        assert!(reachable(&fab, &cables, a, b));
    }
}
