//! Programming while the daemon routes (ungated sweeper): stage 1 and the ARMED Sets of
//! ports in INIT go out before the routing result, nothing that depends on routes does, and
//! every port still gets each Set once — also from an SMA that does not echo every field it
//! was sent (ibsim keeps neither the M_Key fields nor the partition enforcement bits).

mod common;

use common::{Harness, topo};
use fabric::{NodeId, Topology};
use mad::{AttributeId, Method, PortInfo, SmpAttribute};
use sm_core::{Event, SweeperConfig, route_inline};
use std::collections::HashMap;

const PI: u16 = AttributeId::PORT_INFO.0;
const SI: u16 = AttributeId::SWITCH_INFO.0;
const LFT: u16 = AttributeId::LINEAR_FORWARDING_TABLE.0;

/// Like `Harness::step`, but the routing job is kept (not answered) and PortInfo Set
/// responses lose what a forgetful SMA would not echo.
fn step(h: &mut Harness, job: &mut Option<sm_core::RoutingJob>) -> bool {
    while let Some(tx) = h.sw.poll_transmit() {
        if tx.dlid.is_permissive() {
            h.fab.send(h.now, h.sm, &tx.smp).unwrap();
        } else {
            h.fab.send_lid(h.now, h.sm, tx.dlid, &tx.smp).unwrap();
        }
    }
    let next = match (h.fab.next_event_time(), h.sw.poll_timeout()) {
        (Some(a), Some(b)) => a.min(b),
        (a, b) => match a.or(b) {
            Some(t) => t,
            None => return false,
        },
    };
    h.now = h.now.max(next);
    h.fab.run_until(h.now);
    while let Some(mut r) = h.fab.poll_recv_full(h.sm) {
        if r.smp.attr_id == AttributeId::PORT_INFO && r.smp.method == Method::GET_RESP {
            let mut pi = PortInfo::decode(&r.smp.data);
            pi.m_key_lease_period = 0;
            pi.partition_enforcement_inbound = false;
            pi.partition_enforcement_outbound = false;
            pi.encode(&mut r.smp.data);
        }
        h.sw.handle_mad(h.now, r.slid, r.smp);
    }
    if matches!(h.sw.poll_timeout(), Some(t) if t <= h.now) {
        h.sw.handle_timeout(h.now);
    }
    while let Some(ev) = h.sw.poll_event() {
        h.log.push(ev.to_string());
        match ev {
            Event::RoutingNeeded(j) => *job = Some(*j),
            other => h.events.push(other),
        }
    }
    true
}

fn config() -> SweeperConfig {
    SweeperConfig {
        m_key_lease_period: 60,
        ..SweeperConfig::default()
    }
}

/// (node, port) -> PortInfo Sets the fabric accepted, and SwitchInfo / LFT Set counts.
fn count_sets(log: &[fabric_sim::SetRecord]) -> (HashMap<(NodeId, u32), usize>, usize, usize) {
    let mut pi = HashMap::new();
    let (mut si, mut lft) = (0, 0);
    for r in log {
        match r.attr {
            PI => *pi.entry((r.node, r.attr_mod & 0xFF)).or_insert(0) += 1,
            SI => si += 1,
            LFT => lft += 1,
            _ => {}
        }
    }
    (pi, si, lft)
}

fn linked_ports(t: &Topology) -> Vec<(NodeId, u32, bool)> {
    let mut v = Vec::new();
    for (id, n) in t.nodes() {
        for p in n.port_numbers() {
            if n.ports[p.0 as usize].remote.is_some() {
                v.push((id, u32::from(p.0), n.is_switch()));
            }
        }
    }
    v
}

#[test]
fn arming_overlaps_routing_and_every_port_is_set_once_per_stage() {
    let t = topo("ft2:8");
    let mut h = Harness::new(&t, config(), 7);
    let mut job = None;
    // Until nothing is left to do without the routing result (the job is kept).
    let mut turns = 0;
    while step(&mut h, &mut job) {
        turns += 1;
        assert!(turns < 100_000, "never idle; log:\n{}", h.log.join("\n"));
    }
    assert!(job.is_some(), "no routing job; log:\n{}", h.log.join("\n"));
    let (pi, si, lft) = count_sets(&h.fab.take_set_log());
    assert_eq!(lft, 0, "an LFT block was written before routing");
    assert_eq!(si, 0, "SwitchInfo was written before routing");
    let linked = linked_ports(&t);
    let cas = linked.iter().filter(|p| !p.2).count();
    let switch_ports = linked.len() - cas;
    // Every linked port ARMED (CA ports with their fields), every switch's port 0 and the
    // SM's own port got their fields: all while routing.
    let armed_sets: usize = linked
        .iter()
        .map(|&(n, p, _)| pi.get(&(n, p)).copied().unwrap_or(0))
        .sum();
    assert!(
        armed_sets >= linked.len(),
        "{armed_sets} PortInfo Sets on {} linked ports",
        linked.len()
    );
    let switches = t.switches().count();
    for (sid, _) in t.switches() {
        assert_eq!(pi.get(&(sid, 0)), Some(&1), "port 0 of switch {sid:?}");
    }
    for &(n, p, _) in &linked {
        assert_eq!(
            h.fab.port_state(n, p as u8).unwrap(),
            fabric::PortState::Armed
        );
    }
    let during = pi.values().sum::<usize>();
    // The SM's own port: one fields Set and one ARMED Set.
    assert_eq!(during, linked.len() + switches + 1);

    // Now the routing result: the rest of the sweep.
    let r = route_inline(&job.take().unwrap());
    h.sw.handle_routing_result(h.now, r);
    let mut turns = 0;
    while !h.events.iter().any(|e| matches!(e, Event::SubnetUp { .. })) {
        assert!(
            step(&mut h, &mut job),
            "stalled; log:\n{}",
            h.log.join("\n")
        );
        turns += 1;
        assert!(turns < 100_000, "no SUBNET UP; log:\n{}", h.log.join("\n"));
    }
    h.check_programmed(&t);
    let (pi, si, lft) = count_sets(&h.fab.take_set_log());
    assert!(lft > 0);
    assert_eq!(si, switches, "one SwitchInfo Set per switch (LinearFDBTop)");
    // After routing: only the ACTIVE Sets, once per linked port; no field or ARMED Set
    // repeated although the SMA did not echo the lease period and enforcement bits.
    for &(n, p, _) in &linked {
        assert_eq!(pi.get(&(n, p)), Some(&1), "node {n:?} port {p}");
    }
    assert_eq!(pi.values().sum::<usize>(), linked.len());
    assert_eq!(switch_ports + cas, linked.len());
}

#[test]
fn a_routing_result_that_arrives_first_waits_for_the_sets_in_flight() {
    // The plain harness answers the routing job in the same turn it is emitted, before any
    // Set sent during routing is answered.
    let t = topo("ft2:8");
    let mut h = Harness::new(&t, SweeperConfig::default(), 3);
    h.subnet_up();
    h.check_programmed(&t);
    let sets = h.fab.take_set_log();
    let (pi, si, _) = count_sets(&sets);
    let linked = linked_ports(&t);
    let switches = t.switches().count();
    assert_eq!(si, switches);
    // ARMED + ACTIVE per linked port, port 0 fields per switch, the SM's own fields Set.
    assert_eq!(pi.values().sum::<usize>(), 2 * linked.len() + switches + 1);
    // A quiet heavy sweep afterwards sends no Set.
    h.sw.request_sweep(h.now, true);
    assert!(h.heavy_done());
    assert!(h.fab.take_set_log().is_empty(), "a quiet sweep sent a Set");
}
