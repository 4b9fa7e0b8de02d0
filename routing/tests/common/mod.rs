//! Shared helpers for the routing integration tests.
#![allow(dead_code)]

use fabric::{GenSpec, Topology};
use routing::input::Peer;
use routing::{Lfts, NO_ROUTE, RoutingInput, assign_lids_sequential, metrics};

/// Builds a generated fabric from a spec string such as "ft3:8".
pub fn fabric_of(spec: &str) -> Topology {
    spec.parse::<GenSpec>()
        .unwrap_or_else(|e| panic!("bad spec {spec}: {e}"))
        .generate()
        .unwrap_or_else(|e| panic!("cannot generate {spec}: {e}"))
}

/// Routing input with sequential LIDs.
pub fn input(t: &Topology, lmc: u8) -> RoutingInput {
    let lids = assign_lids_sequential(t, lmc).unwrap();
    RoutingInput::new(t, &lids, None).unwrap()
}

/// Metrics with every shift 1..N-1 when N is small, the default set otherwise.
pub fn metrics_of(input: &RoutingInput, lfts: &Lfts) -> metrics::Metrics {
    let n = input.end_ports.len();
    let shifts = (n <= 400).then(|| (1..n).collect());
    metrics::analyze(
        input,
        lfts,
        &metrics::MetricsOptions {
            shifts,
            ..Default::default()
        },
    )
}

/// Asserts every (switch, LID) walk delivers and every end-port pair is routed.
pub fn assert_complete(input: &RoutingInput, lfts: &Lfts, what: &str) -> metrics::Metrics {
    let m = metrics_of(input, lfts);
    assert_eq!(m.loops, 0, "{what}: loops");
    assert_eq!(m.dead_ends, 0, "{what}: dead ends");
    assert_eq!(m.unreachable_pairs, 0, "{what}: unreachable pairs");
    assert_eq!(m.routed_pairs, m.ca_pairs, "{what}: routed pairs");
    assert!(m.walks > 0, "{what}: nothing checked");
    m
}

/// Walks switch s's route to `lid`; returns the switch hops, or None on a loop/dead end.
pub fn walk(input: &RoutingInput, lfts: &Lfts, s: usize, lid: u16) -> Option<u32> {
    let mut x = s;
    for h in 0..=input.num_switches() as u32 {
        let p = lfts.switches[x].port(lid);
        if p == NO_ROUTE {
            return None;
        }
        if p == 0 {
            return (input.switches[x].lid.0 == lid).then_some(h);
        }
        match input.ports(x)[p as usize] {
            Peer::Switch { sw, .. } => x = sw as usize,
            Peer::End(e) => {
                let l = input.end_ports[e as usize].lids;
                return (lid >= l.base.0 && (lid as u32) < l.base.0 as u32 + l.count())
                    .then_some(h);
            }
            _ => return None,
        }
    }
    None
}
