//! Targeted re-discovery (issue 24): a heavy sweep asked for by link-state changes alone
//! re-reads the switches that changed instead of the whole fabric, and ends where a full
//! discovery would have: a full heavy sweep right after it writes nothing.

mod common;
use common::*;
use fabric::{NodeId, PKey, PortRef};
use fabric_sim::{Fault, SetRecord};
use mad::AttributeId;
use sm_core::{Event, SweepReason, SweeperConfig};

fn all_full(_: fabric::Guid, _: fabric::Guid) -> Option<PKey> {
    Some(PKey(0xFFFF))
}

fn up(spec: &str, seed: u64) -> (fabric::Topology, Harness) {
    let t = topo(spec);
    let mut h = Harness::new(&t, SweeperConfig::default(), seed);
    h.subnet_up();
    h.heavy_done();
    h.fab.take_set_log();
    (t, h)
}

/// Runs until the sweeper is quiet (no heavy sweep for two light intervals) and returns
/// the heavy sweeps that ran: (reason, discovery SMPs).
fn quiet(h: &mut Harness) -> Vec<(SweepReason, u64)> {
    let start = h.events.len();
    let until = h.now + 3_000_000_000;
    while h.now < until && h.step() {}
    let mut out = Vec::new();
    let mut reason = None;
    for e in &h.events[start..] {
        match e {
            Event::HeavySweepStarted { reason: r, .. } => reason = Some(*r),
            Event::DiscoveryDone { smps, .. } => {
                out.push((reason.take().expect("started"), *smps));
            }
            _ => {}
        }
    }
    out
}

/// The Sets a full heavy sweep writes now (PortStateChange clears left out).
fn full_sweep_writes(h: &mut Harness) -> Vec<SetRecord> {
    h.fab.take_set_log();
    let start = h.events.len();
    h.sw.request_sweep(h.now, true);
    assert!(h.heavy_done());
    assert!(h.events[start..].iter().any(|e| matches!(
        e,
        Event::HeavySweepStarted {
            reason: SweepReason::Requested,
            ..
        }
    )));
    (h.fab.take_set_log().into_iter())
        .filter(|r| r.attr != AttributeId::SWITCH_INFO.0)
        .collect()
}

/// Discovery SMPs of a full sweep of the fabric now.
fn full_discovery_smps(h: &Harness) -> u64 {
    h.events
        .iter()
        .find_map(|e| match e {
            Event::DiscoveryDone { smps, .. } => Some(*smps),
            _ => None,
        })
        .expect("a first discovery")
}

fn switch_link(t: &fabric::Topology, skip: usize) -> (NodeId, u8) {
    t.links()
        .filter(|(a, b)| t.node(a.node).is_switch() && t.node(b.node).is_switch())
        .nth(skip)
        .map(|(a, _)| (a.node, a.port.0))
        .expect("a switch link")
}

fn assert_targeted(sweeps: &[(SweepReason, u64)], full: u64) {
    assert!(!sweeps.is_empty());
    for (r, smps) in sweeps {
        assert!(matches!(r, SweepReason::LinkTraps(_)), "{sweeps:?}");
        assert!(*smps * 10 < full, "{smps} of {full} SMPs: {sweeps:?}");
    }
}

#[test]
fn a_link_down_and_up_again_are_swept_where_they_happened() {
    for (spec, skip) in [("ft2:16", 0), ("ft2:16", 40), ("ft3:8", 3)] {
        let (t, mut h) = up(spec, 31);
        let full = full_discovery_smps(&h);
        let (node, port) = switch_link(&t, skip);
        h.fab.inject(h.now, Fault::LinkDown { node, port }).unwrap();
        let sweeps = quiet(&mut h);
        assert_targeted(&sweeps, full);
        assert!(
            h.fab
                .take_set_log()
                .iter()
                .any(|r| r.attr == AttributeId::LINEAR_FORWARDING_TABLE.0)
        );
        h.check_programmed(&t);
        h.check_delivery(&t, 5, all_full, PKey(0xFFFF));
        assert_eq!(full_sweep_writes(&mut h), vec![], "{spec}: down");

        h.fab.inject(h.now, Fault::LinkUp { node, port }).unwrap();
        let sweeps = quiet(&mut h);
        assert_targeted(&sweeps, full);
        let peer = t.remote(PortRef::new(node, port)).unwrap();
        for (n, p) in [(node, port), (peer.node, peer.port.0)] {
            assert_eq!(h.fab.port_state(n, p).unwrap(), fabric::PortState::Active);
        }
        h.check_programmed(&t);
        h.check_delivery(&t, 5, all_full, PKey(0xFFFF));
        assert_eq!(full_sweep_writes(&mut h), vec![], "{spec}: up again");
    }
}

#[test]
fn a_host_link_down_leaves_the_host_out_as_a_full_sweep_does() {
    let (t, mut h) = up("ft2:8", 32);
    let full = full_discovery_smps(&h);
    // A host that is not the SM's.
    let (ca, p, _) = ca_ports(&t)[5];
    let leaf = t.remote(PortRef::new(ca, p)).unwrap();
    h.fab
        .inject(
            h.now,
            Fault::LinkDown {
                node: leaf.node,
                port: leaf.port.0,
            },
        )
        .unwrap();
    let sweeps = quiet(&mut h);
    assert_targeted(&sweeps, full);
    assert_eq!(full_sweep_writes(&mut h), vec![]);
    h.fab
        .inject(
            h.now,
            Fault::LinkUp {
                node: leaf.node,
                port: leaf.port.0,
            },
        )
        .unwrap();
    let sweeps = quiet(&mut h);
    assert_targeted(&sweeps, full);
    h.check_programmed(&t);
    h.check_delivery(&t, 3, all_full, PKey(0xFFFF));
    assert_eq!(full_sweep_writes(&mut h), vec![]);
}

/// The first spine of a 2-level fat tree: every leaf loses one uplink with it, every host
/// keeps a path.
fn first_spine(t: &fabric::Topology) -> NodeId {
    t.switches()
        .map(|(id, _)| id)
        .find(|&id| {
            (1..=t.node(id).num_ports())
                .filter_map(|p| t.remote(PortRef::new(id, p)))
                .all(|r| t.node(r.node).is_switch())
        })
        .unwrap()
}

#[test]
fn a_switch_gone_and_back_ends_as_a_full_sweep_would() {
    let (t, mut h) = up("ft2:16", 33);
    let spine = first_spine(&t);
    let full_smps = full_discovery_smps(&h);
    h.fab
        .inject(h.now, Fault::RemoveNode { node: spine })
        .unwrap();
    // Traps of the leaves whose way to the SM crossed the spine are lost, and so are the
    // light sweep's polls of what lies behind it: the leaves report a PortStateChange and
    // are read whole, which cuts every path to the spine (its check read is taken back);
    // no full discovery.
    let sweeps = quiet(&mut h);
    assert!(!sweeps.is_empty());
    for (r, smps) in &sweeps {
        assert!(matches!(r, SweepReason::LinkTraps(_)), "{sweeps:?}");
        assert!(*smps < full_smps, "{smps} of {full_smps} SMPs: {sweeps:?}");
    }
    h.check_delivery(&t, 5, all_full, PKey(0xFFFF));
    assert_eq!(full_sweep_writes(&mut h), vec![]);
    // Back, fresh: its links train; the leaves' traps bring a targeted sweep that discovers
    // it behind them, gives it its LID back and programs it.
    h.fab
        .inject(h.now, Fault::ReturnNode { node: spine })
        .unwrap();
    let sweeps = quiet(&mut h);
    assert!(!sweeps.is_empty());
    h.check_programmed(&t);
    h.check_delivery(&t, 5, all_full, PKey(0xFFFF));
    assert_eq!(full_sweep_writes(&mut h), vec![]);
}

/// A spine removed whole that carried the leaves' routes to the SM: only the SM's own leaf
/// traps, the spine's check read goes out over a new path through another leaf, and that
/// leaf (it reports a PortStateChange) is read whole: its port to the spine is down, so the
/// check cannot answer and is taken back at once instead of waiting for its timeout.
#[test]
fn a_dead_switch_check_is_taken_back_when_a_read_cuts_its_path() {
    let (t, mut h) = up("ft2:16", 33);
    let spine = first_spine(&t);
    h.fab
        .inject(h.now, Fault::RemoveNode { node: spine })
        .unwrap();
    let second = 1_000_000_000;
    assert!(h.run_until(second, |e| matches!(
        e,
        Event::HeavySweepStarted {
            reason: SweepReason::LinkTraps(_),
            ..
        }
    )));
    let (start, timeouts) = (h.now, h.sw.counters().timeouts);
    assert!(h.run_until(second, |e| matches!(e, Event::DiscoveryDone { .. })));
    let took = h.now - start;
    let quarter = SweeperConfig::default().timeout / 4;
    assert!(
        took < quarter / 10,
        "targeted discovery took {took} ns (a check's timeout is {quarter} ns)"
    );
    assert_eq!(
        h.sw.counters().timeouts,
        timeouts,
        "a read of the targeted sweep timed out"
    );
    quiet(&mut h);
    h.check_delivery(&t, 5, all_full, PKey(0xFFFF));
    assert_eq!(full_sweep_writes(&mut h), vec![]);
}

#[test]
fn paths_through_a_lost_link_are_replaced_on_a_torus() {
    // On a torus the SM's directed paths cross many switch links: losing one of the SM's
    // own switch's links breaks paths the targeted sweep must replace.
    let (t, mut h) = up("torus:4x4x2", 34);
    let full = full_discovery_smps(&h);
    let (ca, p, _) = ca_ports(&t)[0];
    let sm_switch = t.remote(PortRef::new(ca, p)).unwrap().node;
    let port = (1..=t.node(sm_switch).num_ports())
        .find(|&q| {
            t.remote(PortRef::new(sm_switch, q))
                .is_some_and(|r| t.node(r.node).is_switch())
        })
        .unwrap();
    h.fab
        .inject(
            h.now,
            Fault::LinkDown {
                node: sm_switch,
                port,
            },
        )
        .unwrap();
    let sweeps = quiet(&mut h);
    assert_targeted(&sweeps, full);
    h.check_programmed(&t);
    assert_eq!(full_sweep_writes(&mut h), vec![]);
    // The light sweeps after it reach every switch through the new paths: no change found.
    let sweeps = quiet(&mut h);
    assert_eq!(sweeps, vec![]);
}
