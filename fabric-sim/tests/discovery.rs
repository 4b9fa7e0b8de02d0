//! A whole fabric discovered by directed route through the in-process handle, the way an
//! SM does it: every node found exactly once, links consistent with the topology.

mod common;

use fabric::{GenSpec, Guid};
use fabric_sim::{SimConfig, SimFabric};
use mad::{NodeInfo, Smp, SmpAttribute};
use std::collections::{HashMap, VecDeque};

#[test]
fn dr_discovery_of_ft2_36_finds_every_node_and_link() {
    let topo = "ft2:36".parse::<GenSpec>().unwrap().generate().unwrap();
    let mut fab = SimFabric::new(&topo, SimConfig::default()).unwrap();
    let (h, _) = topo.cas().next().unwrap();
    let sm = fab.attach(topo.node(h).ports[1].guid).unwrap();
    // BFS: (path) -> NodeInfo; switches are expanded through every port.
    let mut seen: HashMap<Guid, (NodeInfo, Vec<u8>)> = HashMap::new();
    let mut links = 0usize;
    let mut q: VecDeque<Vec<u8>> = VecDeque::from([vec![]]);
    let mut tid = 0u64;
    let mut now = 0;
    // Pipeline up to 8 requests at a time.
    let mut inflight: HashMap<u64, Vec<u8>> = HashMap::new();
    while !q.is_empty() || !inflight.is_empty() {
        while inflight.len() < 8 {
            let Some(path) = q.pop_front() else { break };
            tid += 1;
            let smp = Smp::dr_get(tid, NodeInfo::ID, 0, &path).unwrap();
            fab.send(now, sm, &smp).unwrap();
            inflight.insert(tid, path);
        }
        let Some(t) = fab.next_event_time() else {
            panic!("requests lost: {:?}", inflight.keys().collect::<Vec<_>>());
        };
        fab.run_until(t);
        now = t;
        while let Some((_, r)) = fab.poll_recv(sm) {
            let path = inflight.remove(&r.tid).expect("known tid");
            assert_eq!(r.status, 0);
            let ni = NodeInfo::decode(&r.data);
            if !path.is_empty() {
                links += 1;
            }
            if seen.contains_key(&ni.node_guid) {
                continue;
            }
            if ni.is_switch() || path.is_empty() {
                for p in 1..=ni.num_ports {
                    if path.is_empty() && p != ni.local_port_num {
                        continue;
                    }
                    if p == ni.local_port_num && !path.is_empty() {
                        continue;
                    }
                    let id = topo.node_by_guid(ni.node_guid).unwrap();
                    if topo.node(id).ports[p as usize].remote.is_none() {
                        continue;
                    }
                    let mut np = path.clone();
                    np.push(p);
                    q.push_back(np);
                }
            }
            seen.insert(ni.node_guid, (ni, path));
        }
    }
    assert_eq!(seen.len(), topo.len());
    // Every link is crossed from each side except the one the BFS came in by: all
    // cabled ports were probed once (each link twice minus the tree edges).
    assert_eq!(links, 2 * topo.num_links() - (topo.len() - 1));
    // Each node's NodeInfo came from the node the topology has at the end of the path.
    for (guid, (ni, path)) in &seen {
        let mut at = h;
        for (i, &p) in path.iter().enumerate() {
            let port = if i == 0 { 1 } else { p };
            at = topo
                .remote(fabric::PortRef::new(at, port))
                .expect("path follows cables")
                .node;
        }
        assert_eq!(topo.node(at).node_guid, *guid);
        assert_eq!(ni.node_guid, *guid);
    }
    assert_eq!(fab.accounting().counters.dropped_vl15, 0);
    let per = fab.accounting().per_attr_method();
    assert_eq!(per.get(&(NodeInfo::ID.0, 1)), Some(&(tid)));
    assert_eq!(fab.accounting().per_node.iter().sum::<u64>(), tid);
}
