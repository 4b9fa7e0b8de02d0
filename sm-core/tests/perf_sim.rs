//! The performance manager against the simulated fabric's PMAs (issue 21): one counter
//! sweep reads every ACTIVE port, equal to what the fabric counted; injected errors raise
//! one alarm naming node, port and peer, and degrade the link; a counter near its maximum
//! is cleared; a link taken down is down, and its LinkDownedCounter counts.

mod common;

use common::*;
use fabric::{NodeId, PKey};
use fabric_sim::Fault;
use mad::perf::Counter;
use sm_core::SweeperConfig;
use sm_core::perf::{Health, PerfConfig, PerfEvent, PerfManager, PerfSweepStats};

const S: u64 = 1_000_000_000;

fn up(spec: &str) -> (fabric::Topology, Harness) {
    let t = topo(spec);
    let mut h = Harness::new(&t, SweeperConfig::default(), 3);
    h.subnet_up();
    h.settle(10 * S);
    (t, h)
}

fn perf() -> PerfManager {
    PerfManager::new(PerfConfig {
        interval: 60 * S,
        ..PerfConfig::default()
    })
}

/// Drives `p` (GMPs through the fabric from the SM's port) until `limit` of virtual time
/// passes or a sweep ends; returns the events.
fn run(h: &mut Harness, p: &mut PerfManager, limit: u64) -> Vec<PerfEvent> {
    let end = h.now + limit;
    let mut out = Vec::new();
    while h.now < end {
        if p.poll_timeout().is_some_and(|t| t <= h.now) {
            p.handle_timeout(h.now);
        }
        while let Some(tx) = p.poll_transmit(h.now) {
            h.fab
                .send_gmp(h.now, h.sm, tx.dlid, PKey(0xFFFF), &tx.mad)
                .unwrap();
        }
        while let Some(g) = h.fab.poll_recv_gmp(h.sm) {
            assert!(p.handle_gmp(h.now, &g.mad), "a PerfMgt answer");
        }
        let mut done = false;
        while let Some(e) = p.poll_event() {
            done |= matches!(e, PerfEvent::SweepDone(_));
            out.push(e);
        }
        if done {
            break;
        }
        let next = [h.fab.next_event_time(), p.poll_timeout()]
            .into_iter()
            .flatten()
            .min();
        let Some(t) = next else { break };
        h.now = h.now.max(t).min(end);
        h.fab.run_until(h.now);
    }
    out
}

fn done(ev: &[PerfEvent]) -> PerfSweepStats {
    ev.iter()
        .find_map(|e| match e {
            PerfEvent::SweepDone(s) => Some(*s),
            _ => None,
        })
        .expect("a finished sweep")
}

#[test]
fn one_sweep_reads_every_active_port_as_the_fabric_counted() {
    let (t, mut h) = up("ft2:8");
    let targets = h.sw.perf_targets();
    let readable = targets.iter().filter(|t| t.readable()).count();
    // Both ends of every link.
    assert_eq!(readable, 2 * t.num_links());
    let mut p = perf();
    p.set_fabric(h.now, targets, true);
    let ev = run(&mut h, &mut p, 10 * S);
    let s = done(&ev);
    assert_eq!((s.ports, s.failed), (readable, 0));
    // One ClassPortInfo per node (16 switches... 8 in ft2:8, 32 CAs) and two reads per port
    // (the fabric's PMAs offer the extended counters).
    let nodes = p
        .ports()
        .iter()
        .map(|r| r.target.lid)
        .collect::<std::collections::BTreeSet<_>>()
        .len() as u64;
    assert_eq!(s.mads, nodes + 2 * readable as u64);
    for r in p.ports() {
        let node = h.fab.node_by_guid(r.target.node_guid).unwrap();
        let fab = h.fab.port_counters(node, r.target.port).unwrap();
        let got = r.last.expect("read").pc;
        for c in Counter::ALL {
            if matches!(
                c,
                Counter::XmitData | Counter::RcvData | Counter::XmitPkts | Counter::RcvPkts
            ) {
                // Answers of later reads crossed some ports since.
                assert!(got.get(c) <= fab.get(c), "{c:?}");
            } else {
                assert_eq!(got.get(c), fab.get(c), "{c:?} of {:?}", r.target);
            }
        }
    }
    assert!(p.links().iter().all(|l| l.health == Health::Ok));
}

#[test]
fn injected_errors_raise_one_alarm_naming_the_peer_and_degrade_the_link() {
    let (t, mut h) = up("ft2:8");
    let (node, port, _) = ca_ports(&t)[5];
    let guid = t.node(node).node_guid;
    let mut p = perf();
    p.set_fabric(h.now, h.sw.perf_targets(), true);
    let first = run(&mut h, &mut p, 10 * S);
    assert!(
        !first.iter().any(|e| matches!(e, PerfEvent::Alarm(_))),
        "{first:?}"
    );
    h.fab
        .inject_port_errors(node, port, Counter::SymbolError, 11)
        .unwrap();
    p.request_sweep(h.now);
    let ev = run(&mut h, &mut p, 10 * S);
    let alarms: Vec<_> = ev
        .iter()
        .filter_map(|e| match e {
            PerfEvent::Alarm(a) => Some(a),
            _ => None,
        })
        .collect();
    assert_eq!(alarms.len(), 1, "{ev:?}");
    let a = alarms[0];
    assert_eq!(
        (a.node_guid, a.port, a.counter, a.value),
        (guid, port, Counter::SymbolError, 11)
    );
    let peer = t.remote(fabric::PortRef::new(node, port)).unwrap();
    assert_eq!(
        a.peer.as_ref().map(|p| (p.node_guid, p.port)),
        Some((t.node(peer.node).node_guid, peer.port.0))
    );
    let degraded: Vec<_> = ev
        .iter()
        .filter_map(|e| match e {
            PerfEvent::Health(l) => Some(l),
            _ => None,
        })
        .collect();
    assert_eq!(degraded.len(), 1);
    assert_eq!(degraded[0].health, Health::Degraded);
    assert_eq!(p.errors(&p.config().thresholds).len(), 1);
    // The same value next sweep: no second alarm; it no longer grows, so the link is ok
    // again once the window holds no increase (10 samples).
    for _ in 0..10 {
        p.request_sweep(h.now);
        let ev = run(&mut h, &mut p, 10 * S);
        assert!(!ev.iter().any(|e| matches!(e, PerfEvent::Alarm(_))));
    }
    assert!(p.links().iter().all(|l| l.health == Health::Ok));
}

#[test]
fn a_counter_near_its_maximum_is_cleared() {
    let (t, mut h) = up("ft2:4");
    let (node, port, _) = ca_ports(&t)[0];
    h.fab
        .inject_port_errors(node, port, Counter::RcvErrors, 0xC000)
        .unwrap();
    let mut p = perf();
    p.set_fabric(h.now, h.sw.perf_targets(), true);
    let s = done(&run(&mut h, &mut p, 10 * S));
    assert_eq!(s.clears, 1);
    let r = p.port(t.node(node).node_guid, port).unwrap();
    assert_eq!(r.clears, 1);
    assert_eq!(h.fab.port_counters(node, port).unwrap().rcv_errors, 0);
    assert_eq!(r.last.unwrap().pc.rcv_errors, 0);
}

#[test]
fn a_link_taken_down_is_down_and_counted() {
    let (t, mut h) = up("ft2:4");
    let (node, port, _) = ca_ports(&t)[1];
    let mut p = perf();
    p.set_fabric(h.now, h.sw.perf_targets(), true);
    run(&mut h, &mut p, 10 * S);
    h.fab.inject(h.now, Fault::LinkDown { node, port }).unwrap();
    h.sw.request_sweep(h.now, true);
    assert!(h.heavy_done());
    h.settle(10 * S);
    p.set_fabric(h.now, h.sw.perf_targets(), true);
    let guid = t.node(node).node_guid;
    let down: Vec<_> = p
        .links()
        .into_iter()
        .filter(|l| l.health == Health::Down)
        .collect();
    assert_eq!(down.len(), 1, "{down:?}");
    assert!(down[0].a.node_guid == guid || down[0].b.node_guid == guid);
    // Back up: the switch end's LinkDownedCounter counted the fall.
    h.fab.inject(h.now, Fault::LinkUp { node, port }).unwrap();
    h.sw.request_sweep(h.now, true);
    assert!(h.heavy_done());
    h.settle(10 * S);
    p.set_fabric(h.now, h.sw.perf_targets(), true);
    p.request_sweep(h.now);
    run(&mut h, &mut p, 10 * S);
    let peer = t.remote(fabric::PortRef::new(node, port)).unwrap();
    let r = p
        .port(t.node(peer.node).node_guid, peer.port.0)
        .expect("the switch port");
    assert!(r.last.unwrap().pc.link_downed >= 1);
    assert!(
        p.links().iter().all(|l| l.health == Health::Ok),
        "{:?}",
        p.links()
    );
    let _: NodeId = node;
}
