//! Small and odd fabrics: one switch, a chain, host-only links, many random graphs.

mod common;

use common::*;
use fabric::{Guid, NodeType, PortRef, Topology};
use routing::{
    EngineOptions, FatTree, MinHop, NO_ROUTE, RoutingError, Sequential, UpDown, route,
    route_with_chain,
};

fn one_switch(hosts: u8) -> Topology {
    let mut t = Topology::new();
    let sw = t.add_node(NodeType::Switch, 8, Guid(0x100), "sw").unwrap();
    for h in 0..hosts {
        let ca = t
            .add_node(
                NodeType::Ca,
                1,
                Guid(0x1000 + 16 * h as u64),
                format!("h{h}"),
            )
            .unwrap();
        t.connect(PortRef::new(sw, h + 1), PortRef::new(ca, 1))
            .unwrap();
    }
    t
}

#[test]
fn a_single_switch_is_routed_by_every_engine() {
    let t = one_switch(4);
    let inp = input(&t, 0);
    for e in [
        &MinHop as &dyn routing::Engine,
        &UpDown::default(),
        &FatTree,
    ] {
        let r = route(&inp, e).unwrap();
        let m = assert_complete(&inp, &r.lfts, e.name());
        assert_eq!(m.hop_histogram, vec![0, 0, 12]);
        assert_eq!(r.lfts.switches[0].port(1), 0, "own LID on port 0");
        assert_eq!(r.lfts.switches[0].port(0), NO_ROUTE);
    }
}

#[test]
fn no_switch_means_nothing_to_route() {
    let mut t = Topology::new();
    let a = t.add_node(NodeType::Ca, 1, Guid(0x10), "a").unwrap();
    let b = t.add_node(NodeType::Ca, 1, Guid(0x20), "b").unwrap();
    t.connect(PortRef::new(a, 1), PortRef::new(b, 1)).unwrap();
    let inp = input(&t, 0);
    assert_eq!(inp.num_switches(), 0);
    assert!(
        inp.end_ports.is_empty(),
        "back-to-back CAs are not routing destinations"
    );
    assert!(route(&inp, &MinHop).unwrap().lfts.switches.is_empty());
    assert!(matches!(
        route(&inp, &UpDown::default()),
        Err(RoutingError::NoRoots)
    ));
    assert!(matches!(
        route(&inp, &FatTree),
        Err(RoutingError::NotAFatTree { .. })
    ));
}

#[test]
fn a_chain_of_switches() {
    // sw0 - sw1 - sw2 - sw3, one host each: a "tree" but not a fat tree (leaves at every level).
    let mut t = Topology::new();
    let sws: Vec<_> = (0..4)
        .map(|i| {
            t.add_node(NodeType::Switch, 4, Guid(0x100 + i), format!("s{i}"))
                .unwrap()
        })
        .collect();
    for i in 0..3 {
        t.connect(PortRef::new(sws[i], 2), PortRef::new(sws[i + 1], 3))
            .unwrap();
    }
    for (i, &s) in sws.iter().enumerate() {
        let ca = t
            .add_node(NodeType::Ca, 1, Guid(0x1000 + 16 * i as u64), "h")
            .unwrap();
        t.connect(PortRef::new(s, 1), PortRef::new(ca, 1)).unwrap();
    }
    let inp = input(&t, 0);
    for e in [&MinHop as &dyn routing::Engine, &UpDown::default()] {
        let r = route(&inp, e).unwrap();
        let m = assert_complete(&inp, &r.lfts, e.name());
        assert_eq!(m.max_switch_hops, 3);
        assert!(!m.cdg.has_cycle);
    }
    let out = route_with_chain(
        &inp,
        &["ftree", "minhop"],
        &EngineOptions::default(),
        &Sequential,
        2,
        None,
    )
    .unwrap();
    assert_eq!(out.routing.engine, "minhop");
}

#[test]
fn disconnected_fabrics_route_what_they_can() {
    let mut t = one_switch(2);
    let sw2 = t.add_node(NodeType::Switch, 8, Guid(0x200), "sw2").unwrap();
    let ca = t.add_node(NodeType::Ca, 1, Guid(0x5000), "far").unwrap();
    t.connect(PortRef::new(sw2, 1), PortRef::new(ca, 1))
        .unwrap();
    let inp = input(&t, 0);
    let r = route(&inp, &MinHop).unwrap();
    let m = metrics_of(&inp, &r.lfts);
    assert_eq!(m.ca_pairs, 6);
    assert_eq!(m.routed_pairs, 2);
    assert_eq!(m.unreachable_pairs, 4);
    assert_eq!(m.loops, 0);
    assert!(matches!(
        route(&inp, &UpDown::default()),
        Err(RoutingError::Disconnected { .. })
    ));
    assert!(matches!(
        route(&inp, &FatTree),
        Err(RoutingError::Disconnected { .. })
    ));
}

#[test]
fn many_random_graphs() {
    for seed in 1..=12 {
        let spec = format!("random:{}:seed={seed}:radix=10:links=5", 8 + seed * 3);
        let t = fabric_of(&spec);
        let inp = input(&t, (seed % 3) as u8);
        for e in [&MinHop as &dyn routing::Engine, &UpDown::default()] {
            let r = route(&inp, e).unwrap();
            let m = assert_complete(&inp, &r.lfts, &format!("{spec} {}", e.name()));
            if e.name() == "updn" {
                assert!(!m.cdg.has_cycle, "{spec}");
            } else {
                assert_eq!(m.max_switch_hops, m.diameter, "{spec}");
            }
        }
    }
}
