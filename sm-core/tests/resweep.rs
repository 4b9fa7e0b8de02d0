//! Sweeps after SUBNET UP: nothing changed means no Set; LIDs survive a restart.

mod common;
use common::*;
use fabric::{Lid, NodeId};
use sm_core::{Event, Guid2Lid, SweepReason, SweeperConfig};

fn all_lids(h: &Harness, t: &fabric::Topology) -> Vec<(NodeId, u8, Lid)> {
    let mut v = Vec::new();
    for (id, n) in t.nodes() {
        if n.is_switch() {
            v.push((id, 0, h.lid_of(id, 0)));
        }
    }
    for (n, p, _) in ca_ports(t) {
        v.push((n, p, h.lid_of(n, p)));
    }
    v
}

#[test]
fn second_sweeps_with_nothing_changed_send_no_set() {
    let t = topo("ft2:12");
    let cfg = SweeperConfig {
        sweep_interval: 1_000_000_000,
        ..SweeperConfig::default()
    };
    let mut h = Harness::new(&t, cfg, 11);
    h.subnet_up();
    h.heavy_done();
    let sets_at_up = h.fab.take_set_log().len();
    assert!(sets_at_up > 0);
    // Light sweep: SwitchInfo polls only.
    assert!(h.run_until(5_000_000_000, |e| matches!(
        e,
        Event::LightSweepComplete { changed: false, smps } if *smps > 0
    )));
    assert!(h.fab.take_set_log().is_empty());
    assert!(
        h.sw.counters().lid_routed > 0,
        "light sweeps poll LID-routed once routes exist"
    );
    // Requested heavy sweep: full rediscovery and re-route, still no Set.
    let before = *h.sw.counters();
    h.sw.request_sweep(h.now, true);
    let start = h.events.len();
    assert!(h.heavy_done());
    assert!(
        h.fab.take_set_log().is_empty(),
        "a quiet heavy sweep wrote something"
    );
    let d = h.sw.counters().since(&before);
    assert_eq!(d.sets(), 0);
    assert!(d.gets() > 0);
    assert!(h.events[start..].iter().any(|e| matches!(
        e,
        Event::HeavySweepStarted {
            reason: SweepReason::Requested,
            ..
        }
    )));
    assert!(
        h.events[start..]
            .iter()
            .any(|e| matches!(e, Event::RoutingDone { lft_blocks: 0, .. }))
    );
    // Still everything up and routed.
    h.check_programmed(&t);
}

#[test]
fn quiet_heavy_sweeps_on_torus_and_random_send_no_set() {
    for spec in [
        "torus:4x4x2:hosts=2",
        "random:20:seed=9:radix=10:links=5:hosts=2",
    ] {
        let t = topo(spec);
        let mut h = Harness::new(&t, SweeperConfig::default(), 14);
        h.subnet_up();
        h.heavy_done();
        h.fab.take_set_log();
        for _ in 0..2 {
            h.sw.request_sweep(h.now, true);
            assert!(h.heavy_done());
        }
        assert!(
            h.fab.take_set_log().is_empty(),
            "{spec}: quiet heavy sweeps wrote"
        );
        h.check_programmed(&t);
    }
}

#[test]
fn fields_the_sma_does_not_hold_are_reported_once_not_rewritten_every_sweep() {
    // ibsim's SMA keeps no M_KeyLeasePeriod and no partition enforcement bits: a Set's
    // answer reports other values than the ones written. The SM says so once per port and
    // field, and writes the held values back rather than the same Sets every sweep.
    let t = topo("ft2:8");
    let conf = "Default=0x7fff, ipoib : ALL=full ;\n";
    let fab = fabric_sim::SimFabric::new(
        &t,
        fabric_sim::SimConfig {
            seed: 5,
            ibsim_port_info_sets: true,
            ..fabric_sim::SimConfig::default()
        },
    )
    .unwrap();
    let cfg = SweeperConfig {
        partitions_conf: Some(conf.to_string()),
        ..SweeperConfig::default()
    };
    let mut h = Harness::with_fabric(fab, &t, cfg);
    h.subnet_up();
    h.heavy_done();
    let not_held = |h: &Harness, field: &str| {
        h.events
            .iter()
            .filter(|e| matches!(e, Event::FieldNotHeld { field: f, .. } if f.starts_with(field)))
            .count()
    };
    let end_ports = ca_ports(&t).len() + t.switches().count();
    assert_eq!(not_held(&h, "M_KeyLeasePeriod"), end_ports);
    // Switch ports facing CAs are the ones with enforcement on.
    assert_eq!(not_held(&h, "PartitionEnforcement"), ca_ports(&t).len());
    h.fab.take_set_log();
    for _ in 0..2 {
        h.sw.request_sweep(h.now, true);
        assert!(h.heavy_done());
    }
    let log = h.fab.take_set_log();
    assert!(log.is_empty(), "quiet heavy sweeps wrote {log:?}");
    assert_eq!(
        not_held(&h, ""),
        end_ports + ca_ports(&t).len(),
        "said once"
    );
    h.check_programmed(&t);
}

#[test]
fn guid2lid_keeps_every_lid_across_a_restart() {
    let t = topo("random:12:seed=3:radix=8:links=4:hosts=3");
    let mut h = Harness::new(&t, SweeperConfig::default(), 12);
    h.subnet_up();
    let lids = all_lids(&h, &t);
    let file = h.sw.guid2lid().export();
    assert_eq!(file.lines().count(), lids.len());
    // Restart on a fabric that forgot everything (power cycle): the file alone keeps LIDs.
    let map = Guid2Lid::parse(&file).unwrap();
    let cfg = SweeperConfig {
        guid2lid: map.clone(),
        ..SweeperConfig::default()
    };
    let mut h2 = Harness::new(&t, cfg, 13);
    h2.subnet_up();
    assert_eq!(all_lids(&h2, &t), lids);
    h2.check_programmed(&t);
    assert_eq!(h2.sw.guid2lid(), &map);
    // Restart on the running fabric: LIDs kept, no LID changes.
    let mut fab = h.fab;
    fab.detach(h.sm).unwrap();
    let known = h.sw.lfts().cloned().map(std::sync::Arc::new);
    let cfg = SweeperConfig {
        guid2lid: map.clone(),
        ..SweeperConfig::default()
    };
    let mut h3 = Harness::with_fabric(fab, &t, cfg);
    h3.now = h.now;
    h3.subnet_up();
    assert_eq!(all_lids(&h3, &t), lids);
    assert!(h3.events.iter().any(|e| matches!(
        e,
        Event::LidsAssigned {
            changed: 0,
            new: 0,
            ..
        }
    )));
    // The tables the fabric holds are unknown to a new SM (it does not read them back), so
    // it rewrites them; every write succeeds.
    assert!(h3.events.iter().any(|e| matches!(
        e,
        Event::ProgrammingDone { failed: 0, lft_blocks, .. } if *lft_blocks > 0
    )));
    h3.check_programmed(&t);

    // A takeover that knows the programmed tables (replicated state) and does not ask
    // clients to re-register writes nothing at all.
    let known_pkeys = std::sync::Arc::new(h3.sw.pkey_tables());
    assert!(!known_pkeys.is_empty());
    let mut fab = h3.fab;
    fab.detach(h3.sm).unwrap();
    let cfg = SweeperConfig {
        guid2lid: map,
        known_lfts: known,
        known_pkeys: Some(known_pkeys),
        reregister_on_takeover: false,
        ..SweeperConfig::default()
    };
    let mut h4 = Harness::with_fabric(fab, &t, cfg);
    h4.now = h3.now;
    h4.fab.take_set_log();
    h4.subnet_up();
    assert!(
        h4.events
            .iter()
            .any(|e| matches!(e, Event::RoutingDone { lft_blocks: 0, .. }))
    );
    let log = h4.fab.take_set_log();
    assert!(log.is_empty(), "takeover wrote: {log:?}");
    assert_eq!(all_lids(&h4, &t), lids);
    h4.check_programmed(&t);

    // The SA's replicated state did not load: the next heavy sweep writes one PortInfo
    // (with ClientReregister) to every CA port, and nothing else; the one after, nothing.
    h4.sw.reregister_clients(h4.now);
    assert!(h4.heavy_done());
    let log = h4.fab.take_set_log();
    let cas = ca_ports(&t);
    assert_eq!(log.len(), cas.len(), "{log:?}");
    for &(n, p, g) in &cas {
        assert!(
            log.iter()
                .any(|r| r.attr == 0x15 && r.node == n && r.in_port == p),
            "no PortInfo Set to {g}: {log:?}"
        );
        assert!(h4.fab.port_info(n, p).unwrap().client_reregister, "{g}");
    }
    h4.sw.request_sweep(h4.now, true);
    assert!(h4.heavy_done());
    let log = h4.fab.take_set_log();
    assert!(log.is_empty(), "reregistered twice: {log:?}");
    assert_eq!(all_lids(&h4, &t), lids);
}

/// While a heavy sweep discovers, the topology the sweeper shows (what the admin API, the SA
/// and the replicated log read) is the last completed discovery's, never the half-read
/// fabric: a master recording its sweep while the next one had begun recorded CA nodes
/// without their links.
#[test]
fn the_topology_shown_during_a_discovery_is_the_last_complete_one() {
    let t = topo("ft2:8");
    let mut h = Harness::new(&t, SweeperConfig::default(), 5);
    h.subnet_up();
    h.heavy_done();
    let done = h.sw.discovered_topology();
    assert_eq!(done.len(), t.len());
    assert_eq!(done.links().count(), t.links().count());
    h.sw.request_sweep(h.now, true);
    let mut during = 0;
    while h.sw.phase() != sm_core::Phase::Idle || during == 0 {
        if h.sw.phase() == sm_core::Phase::Discovering {
            during += 1;
            let shown = h.sw.discovered_topology();
            assert_eq!(shown.len(), t.len(), "turn {during} of the discovery");
            assert_eq!(shown.links().count(), t.links().count());
        }
        assert!(h.step(), "the sweep never ended");
    }
    assert!(during > 3, "{during} turns seen discovering");
    assert_eq!(
        h.sw.discovered_topology().links().count(),
        t.links().count()
    );
}

/// A master not run for more than two sweep intervals (its process stopped) sweeps the whole
/// fabric, with its SMInfo queries, before anything else: traps sent meanwhile may be lost
/// and another SM may have come (chaos seed 22299). Run on time, it does not.
#[test]
fn a_master_resumed_after_a_long_stop_sweeps_the_whole_fabric() {
    let t = topo("ft2:8");
    let cfg = SweeperConfig {
        sweep_interval: 1_000_000_000,
        ..SweeperConfig::default()
    };
    let mut h = Harness::new(&t, cfg, 3);
    h.subnet_up();
    h.heavy_done();
    let resumed = |e: &Event| {
        matches!(
            e,
            Event::HeavySweepStarted {
                reason: SweepReason::Resumed,
                ..
            }
        )
    };
    // Three light sweeps on time: no such sweep.
    assert!(!h.run_until(3_500_000_000, resumed));
    // Stopped for five intervals.
    h.now += 5_000_000_000;
    assert!(h.run_until(1_000_000, resumed), "{}", h.log.join("\n"));
}
