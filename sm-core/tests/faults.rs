//! Faults: link down, switch reboot, MAD loss; traps and SMInfo.

mod common;
use common::*;
use fabric::{NodeId, PKey};
use fabric_sim::Fault;
use mad::{AttributeId, Method, SmInfo, SmState, Smp};
use sm_core::{Event, SweepReason, SweeperConfig};

fn all_full(_: fabric::Guid, _: fabric::Guid) -> Option<PKey> {
    Some(PKey(0xFFFF))
}

/// A switch-to-switch link, neither end being the SM's leaf.
fn inter_switch_link(t: &fabric::Topology, avoid: NodeId) -> (NodeId, u8) {
    t.links()
        .find(|(a, b)| {
            t.node(a.node).is_switch()
                && t.node(b.node).is_switch()
                && a.node != avoid
                && b.node != avoid
        })
        .map(|(a, _)| (a.node, a.port.0))
        .unwrap()
}

fn sm_leaf(t: &fabric::Topology) -> NodeId {
    let (n, p, _) = ca_ports(t)[0];
    t.remote(fabric::PortRef::new(n, p)).unwrap().node
}

#[test]
fn link_down_trap_heavy_sweep_rewrites_only_affected_blocks() {
    let t = topo("ft2:16");
    let mut h = Harness::new(&t, SweeperConfig::default(), 21);
    h.subnet_up();
    h.heavy_done();
    let total_blocks: usize = match h
        .events
        .iter()
        .find(|e| matches!(e, Event::RoutingDone { .. }))
    {
        Some(Event::RoutingDone { lft_blocks, .. }) => *lft_blocks,
        _ => unreachable!(),
    };
    h.fab.take_set_log();
    let (node, port) = inter_switch_link(&t, sm_leaf(&t));
    h.fab.inject(h.now, Fault::LinkDown { node, port }).unwrap();
    let start = h.events.len();
    assert!(h.heavy_done());
    let ev = &h.events[start..];
    eprintln!(
        "EVENTS {:?}",
        ev.iter()
            .filter(|e| !matches!(e, Event::RoutingNeeded(_)))
            .collect::<Vec<_>>()
    );
    assert!(
        ev.iter()
            .any(|e| matches!(e, Event::Trap { number: 128, .. })),
        "{:?}",
        h.log
    );
    assert!(ev.iter().any(|e| matches!(
        e,
        Event::HeavySweepStarted {
            reason: SweepReason::LinkTraps(_),
            ..
        }
    )));
    // Every trap was repressed, and the switch's SMA saw the TrapRepress.
    let repressed =
        h.sw.counters()
            .get(AttributeId::NOTICE, Method::TRAP_REPRESS);
    assert_eq!(repressed, h.sw.counters().traps);
    assert!(
        h.fab
            .accounting()
            .per_attr_method()
            .get(&(AttributeId::NOTICE.0, 7))
            .copied()
            .unwrap_or(0)
            >= 1
    );
    let changed = ev
        .iter()
        .find_map(|e| match e {
            Event::RoutingDone { lft_blocks, .. } => Some(*lft_blocks),
            _ => None,
        })
        .unwrap();
    let log = h.fab.take_set_log();
    let lft_sets = log
        .iter()
        .filter(|r| r.attr == AttributeId::LINEAR_FORWARDING_TABLE.0)
        .count();
    assert!(
        changed > 0 && changed < total_blocks / 2,
        "{changed} of {total_blocks}"
    );
    assert_eq!(lft_sets, changed);
    assert!(
        log.iter()
            .all(|r| r.attr == AttributeId::LINEAR_FORWARDING_TABLE.0
                || r.attr == AttributeId::SWITCH_INFO.0),
        "only LFT blocks (and the PortStateChange clears) are written: {log:?}"
    );
    // Every pair still delivers: a fat tree has other paths.
    h.check_programmed(&t);
    h.check_delivery(&t, 3, all_full, PKey(0xFFFF));
    // Plug it back: the link trains (INIT), a trap brings a heavy sweep that arms and
    // activates both ends again.
    h.fab.inject(h.now, Fault::LinkUp { node, port }).unwrap();
    let until = h.now + 2_000_000_000;
    while h.now < until && h.step() {}
    assert_eq!(
        h.fab.port_state(node, port).unwrap(),
        fabric::PortState::Active
    );
    let peer = t.remote(fabric::PortRef::new(node, port)).unwrap();
    assert_eq!(
        h.fab.port_state(peer.node, peer.port.0).unwrap(),
        fabric::PortState::Active
    );
    h.check_programmed(&t);
    h.check_delivery(&t, 3, all_full, PKey(0xFFFF));
}

#[test]
fn rebooted_switch_is_detected_and_reprogrammed() {
    let t = topo("ft2:8");
    let cfg = SweeperConfig {
        sweep_interval: 200_000_000,
        ..SweeperConfig::default()
    };
    let mut h = Harness::new(&t, cfg, 22);
    h.subnet_up();
    h.heavy_done();
    h.fab.take_set_log();
    let avoid = sm_leaf(&t);
    let victim = t
        .switches()
        .map(|(id, _)| id)
        .find(|&id| id != avoid)
        .unwrap();
    h.fab
        .inject(h.now, Fault::RebootSwitch { node: victim })
        .unwrap();
    // Let it reboot, retrain, and the SM notice and repair (several sweeps).
    let until = h.now + 3_000_000_000;
    while h.now < until && h.step() {}
    let log = h.fab.take_set_log();
    assert!(
        log.iter()
            .any(|r| r.node == victim && r.attr == AttributeId::LINEAR_FORWARDING_TABLE.0),
        "the rebooted switch's LFT was not rewritten"
    );
    assert!(h.events.iter().any(|e| matches!(
        e,
        Event::HeavySweepStarted {
            reason: SweepReason::Change | SweepReason::Trap(_) | SweepReason::LinkTraps(_),
            ..
        }
    )));
    h.check_programmed(&t);
    h.check_delivery(&t, 1, all_full, PKey(0xFFFF));
}

#[test]
fn light_sweep_alone_detects_a_lost_lft() {
    // A rogue host clears a switch's LinearFDBTop (its table is gone as far as forwarding
    // goes) without any link changing, so no trap: only the light sweep can notice.
    let t = topo("ft2:8");
    let cfg = SweeperConfig {
        sweep_interval: 100_000_000,
        ..SweeperConfig::default()
    };
    let mut h = Harness::new(&t, cfg, 23);
    h.subnet_up();
    h.heavy_done();
    let victim = t
        .switches()
        .map(|(id, _)| id)
        .find(|&id| id != sm_leaf(&t))
        .unwrap();
    let victim_lid = h.lid_of(victim, 0);
    let rogue = ca_ports(&t)[3].2;
    let smp = Smp::lid_set(0x99, 0, &mad::SwitchInfo::default());
    h.fab
        .inject(
            h.now,
            Fault::Rogue {
                port_guid: rogue,
                dlid: victim_lid,
                smp: Box::new(smp),
            },
        )
        .unwrap();
    h.fab.take_set_log();
    let start = h.events.len();
    assert!(h.run_until(2_000_000_000, |e| matches!(
        e,
        Event::LightSweepComplete { changed: true, .. }
    )));
    assert!(h.heavy_done());
    assert!(
        !h.events[start..]
            .iter()
            .any(|e| matches!(e, Event::Trap { .. }))
    );
    assert!(h.events[start..].iter().any(|e| matches!(
        e,
        Event::HeavySweepStarted {
            reason: SweepReason::Change,
            ..
        }
    )));
    let log = h.fab.take_set_log();
    assert!(
        log.iter()
            .any(|r| r.node == victim && r.attr == AttributeId::LINEAR_FORWARDING_TABLE.0)
    );
    assert!(
        log.iter().all(|r| r.node == victim),
        "only the victim is rewritten"
    );
    h.check_programmed(&t);
    h.check_delivery(&t, 1, all_full, PKey(0xFFFF));
}

#[test]
fn five_percent_mad_loss_still_reaches_subnet_up() {
    // fabric-sim loses each link transmission with this probability, so an SMP round trip
    // of 6-10 hops is lost far more often than 5%.
    let t = topo("ft2:12");
    for seed in [24, 25, 26, 27] {
        let fab = fabric_sim::SimFabric::new(
            &t,
            fabric_sim::SimConfig {
                seed,
                ..Default::default()
            },
        )
        .unwrap();
        let mut h = Harness::with_fabric(fab, &t, SweeperConfig::default());
        h.fab.inject(0, Fault::Loss { prob: 0.05 }).unwrap();
        h.subnet_up();
        assert!(h.sw.counters().timeouts > 0);
        h.fab.inject(h.now, Fault::Loss { prob: 0.0 }).unwrap();
        h.check_programmed(&t);
        h.check_delivery(&t, 1, all_full, PKey(0xFFFF));
    }
}

#[test]
fn sminfo_of_its_own_port_is_answered() {
    let t = topo("ft2:8");
    let cfg = SweeperConfig {
        sm_priority: 7,
        sm_key: 0x1234,
        // With an M_Key in force, a requester must carry it to be shown the SM_Key.
        m_key: 0x55,
        ..SweeperConfig::default()
    };
    let mut h = Harness::new(&t, cfg, 25);
    h.subnet_up();
    let cas = ca_ports(&t);
    let other = h.fab.attach(cas[5].2).unwrap();
    let q = Smp::lid_get(0x77, AttributeId::SM_INFO, 0);
    h.fab.send_lid(h.now, other, h.sw.sm_lid(), &q).unwrap();
    let mut answer = None;
    for _ in 0..100 {
        h.step();
        if let Some((_, r)) = h.fab.poll_recv(other) {
            answer = Some(r);
            break;
        }
    }
    let r = answer.expect("no SMInfo answer");
    assert_eq!(r.method, Method::GET_RESP);
    assert_eq!(r.tid, 0x77);
    let i: SmInfo = r.attr().unwrap();
    assert_eq!(i.guid, cas[0].2);
    assert_eq!(i.priority, 7);
    assert_eq!(i.state(), Some(SmState::Master));
    assert_eq!(
        i.sm_key, 0,
        "SM_Key only for requesters that carry the M_Key or present it"
    );
}

#[test]
fn duplicated_and_delayed_mads_are_matched_by_tid() {
    let t = topo("torus:3x3:hosts=2");
    let mut h = Harness::new(&t, SweeperConfig::default(), 26);
    h.fab.inject(0, Fault::Duplicate { prob: 0.2 }).unwrap();
    h.subnet_up();
    assert!(
        h.sw.counters().stale > 0,
        "duplicates must be seen and ignored"
    );
    h.fab.inject(h.now, Fault::Duplicate { prob: 0.0 }).unwrap();
    h.check_programmed(&t);
    h.check_delivery(&t, 1, all_full, PKey(0xFFFF));
}

#[test]
fn m_key_is_written_and_keeps_rogue_sets_out() {
    let t = topo("ft2:8");
    let cfg = SweeperConfig {
        m_key: 0xdead_beef,
        m_key_protect_bits: 1,
        subnet_prefix: 0xfec0_0000_0000_0000,
        sweep_interval: 100_000_000,
        ..SweeperConfig::default()
    };
    let mut h = Harness::new(&t, cfg, 27);
    h.subnet_up();
    h.heavy_done();
    let cas = ca_ports(&t);
    let (n, p, _) = cas[2];
    let info = h.fab.port_info(n, p).unwrap();
    assert_eq!(info.m_key, 0xdead_beef);
    assert_eq!(info.m_key_protect_bits, 1);
    assert_eq!(info.gid_prefix, 0xfec0_0000_0000_0000);
    assert_eq!(info.master_sm_lid, h.sw.sm_lid());
    // A rogue Set without the key is refused by the SMA.
    let victim_lid = h.lid_of(n, p);
    let mut bad = info;
    bad.lid = fabric::Lid(0x777);
    let smp = Smp::lid_set(0x55, u32::from(p), &bad);
    h.fab.take_set_log();
    h.fab
        .inject(
            h.now,
            Fault::Rogue {
                port_guid: cas[5].2,
                dlid: victim_lid,
                smp: Box::new(smp),
            },
        )
        .unwrap();
    assert!(h.run_until(1_000_000_000, |e| matches!(
        e,
        Event::LightSweepComplete { changed: false, .. }
    )));
    assert!(h.fab.take_set_log().is_empty());
    assert_eq!(h.lid_of(n, p), victim_lid);
    assert!(h.fab.accounting().counters.dropped_m_key > 0);
}

#[test]
fn sm_link_down_at_start_comes_up_when_the_link_does() {
    let t = topo("ft2:8");
    let cfg = SweeperConfig {
        sweep_interval: 100_000_000,
        ..SweeperConfig::default()
    };
    let mut h = Harness::new(&t, cfg, 28);
    let (n, p, _) = ca_ports(&t)[0];
    h.fab
        .inject(0, Fault::LinkDown { node: n, port: p })
        .unwrap();
    assert!(h.run_until(500_000_000, |e| matches!(
        e,
        Event::HeavySweepComplete { .. }
    )));
    assert!(!h.sw.is_subnet_up());
    h.fab
        .inject(h.now, Fault::LinkUp { node: n, port: p })
        .unwrap();
    h.subnet_up();
    h.check_programmed(&t);
}
