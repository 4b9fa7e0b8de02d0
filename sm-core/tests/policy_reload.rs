//! Partition policy reload on a running sweeper (`Sweeper::set_policy`, what SIGHUP hands
//! over): a changed membership rewrites only the P_KeyTable blocks it changes and the
//! fabric then holds the planner's tables for the new policy; a text that does not parse is
//! refused with its position, the policy in force stays, and the next sweep writes nothing.

mod common;

use common::{Harness, ca_ports, topo};
use fabric::{Guid, PKey, Topology};
use fabric_sim::SimConfig;
use mad::AttributeId;
use sm_core::{Event, SmError, SweepReason, SweeperConfig};
use std::collections::BTreeSet;

/// Tenant A holds CA ports 1 and 2, tenant B ports 3 and 4 (the SM's port 0 in neither).
fn policy_a(g: &[Guid]) -> String {
    format!(
        "Default=0x7fff : ALL=full ;\nA=0x0001 : {}=full, {}=full ;\nB=0x0002 : {}=full, {}=full ;\n",
        g[1], g[2], g[3], g[4]
    )
}

/// Port 4 moves from tenant B to tenant A.
fn policy_b(g: &[Guid]) -> String {
    format!(
        "Default=0x7fff : ALL=full ;\nA=0x0001 : {}=full, {}=full, {}=full ;\nB=0x0002 : {}=full ;\n",
        g[1], g[2], g[4], g[3]
    )
}

/// Every P_KeyTable the fabric holds, by (node GUID, port).
fn fabric_tables(h: &Harness, t: &Topology) -> Vec<((Guid, u8), Vec<PKey>)> {
    let mut v = Vec::new();
    for (id, n) in t.nodes() {
        for p in 0..n.ports.len() as u8 {
            if let Ok(keys) = h.fab.pkey_table(id, p) {
                v.push(((n.node_guid, p), keys));
            }
        }
    }
    v
}

/// The planner's tables for `text` on `t`, with the simulator's capabilities.
fn planned(t: &Topology, text: &str, sm_port: Guid) -> Vec<((Guid, u8), Vec<PKey>)> {
    let sim = SimConfig::default();
    let opts = partitions::Options {
        sm_port_guid: Some(sm_port),
        ..partitions::Options::default()
    };
    let policy = partitions::load(text, opts).unwrap();
    let caps = partitions::Caps {
        ca_partition_cap: sim.ca_partition_cap,
        switch_partition_cap: sim.switch_partition_cap,
        enforcement_cap: sim.switch_partition_cap,
        ..partitions::Caps::default()
    };
    let plan = partitions::plan(&policy, t, &caps);
    let mut v: Vec<_> = plan
        .ports
        .iter()
        .map(|pp| ((pp.port.node_guid, pp.port.port), pp.table.entries()))
        .collect();
    v.extend(plan.switch_ports.iter().filter_map(|sp| {
        sp.table
            .as_ref()
            .map(|tb| ((sp.switch_guid, sp.port), tb.entries()))
    }));
    v.sort_by_key(|(k, _)| *k);
    v
}

fn harness(t: &Topology, text: String, seed: u64) -> Harness {
    let cfg = SweeperConfig {
        partitions_conf: Some(text),
        // Light sweeps out of the way.
        sweep_interval: 1_000 * sm_core::MS * 1_000,
        ..SweeperConfig::default()
    };
    let mut h = Harness::new(t, cfg, seed);
    h.subnet_up();
    if !h
        .events
        .iter()
        .any(|e| matches!(e, Event::HeavySweepComplete { .. }))
    {
        assert!(h.heavy_done());
    }
    h
}

#[test]
fn a_reloaded_policy_rewrites_only_the_changed_pkey_blocks() {
    let t = topo("ft2:8");
    let cas = ca_ports(&t);
    let guids: Vec<Guid> = cas.iter().map(|c| c.2).collect();
    let mut h = harness(&t, policy_a(&guids), 41);
    h.fab.take_set_log();
    let before = fabric_tables(&h, &t);
    let counters = *h.sw.counters();

    let b = policy_b(&guids);
    let first = h.sw.set_policy(h.now, Some(b.clone())).unwrap();
    assert_eq!(h.sw.policy_text(), Some(b.as_str()));
    assert_eq!(h.sw.config().partitions_conf.as_deref(), Some(b.as_str()));
    let start = h.events.len();
    assert!(h.heavy_done(), "no heavy sweep; log:\n{}", h.log.join("\n"));
    assert!(
        h.events[start..].iter().any(|e| matches!(
            e,
            Event::HeavySweepStarted {
                reason: SweepReason::Requested,
                sweep,
            } if *sweep == first
        )),
        "the reload did not request a heavy sweep"
    );
    assert!(
        h.events[start..]
            .iter()
            .any(|e| matches!(e, Event::RoutingDone { lft_blocks: 0, .. })),
        "routing changed LFT blocks on an unchanged fabric"
    );

    // Exactly the two tables that changed were written, one block each: the moved CA port
    // and the switch port facing it (its enforcement table follows the CA's keys).
    let log = h.fab.take_set_log();
    let (moved_node, moved_port, moved_guid) = cas[4];
    let peer = t.node(moved_node).ports[usize::from(moved_port)]
        .remote
        .expect("the moved port is cabled");
    let sw_guid = t.node(peer.node).node_guid;
    let want: BTreeSet<(Guid, u8)> = [
        (t.node(moved_node).node_guid, moved_port),
        (sw_guid, peer.port.0),
    ]
    .into();
    assert!(
        log.iter().all(|r| r.attr == AttributeId::P_KEY_TABLE.0),
        "a Set other than P_KeyTable: {log:?}"
    );
    let got: BTreeSet<(Guid, u8)> = log
        .iter()
        .map(|r| {
            // A switch names the port in the modifier; a CA's SMA uses the arrival port.
            let port = if t.node(r.node).is_switch() {
                mad::PKeyTable::split_modifier(r.attr_mod).0
            } else {
                r.in_port
            };
            (r.node_guid, port)
        })
        .collect();
    assert_eq!(got, want, "moved port {moved_guid}: {log:?}");
    assert_eq!(log.len(), 2, "{log:?}");
    let d = h.sw.counters().since(&counters);
    assert_eq!(d.sets(), 2, "the sweeper counted other Sets");

    // The fabric holds the planner's tables for B, and only the two tables changed.
    let after = fabric_tables(&h, &t);
    let changed: BTreeSet<(Guid, u8)> = before
        .iter()
        .zip(&after)
        .filter(|(x, y)| x.1 != y.1)
        .map(|(x, _)| x.0)
        .collect();
    assert_eq!(changed, want);
    let plan = planned(&t, &b, guids[0]);
    assert!(!plan.is_empty());
    for ((g, p), keys) in &plan {
        let held = &after
            .iter()
            .find(|(k, _)| k == &(*g, *p))
            .unwrap_or_else(|| panic!("{g} port {p} not in the fabric"))
            .1;
        let mut held = held.clone();
        held.resize(keys.len().max(held.len()), PKey(0));
        let mut keys = keys.clone();
        keys.resize(held.len(), PKey(0));
        assert_eq!(held, keys, "{g} port {p}");
    }
    assert!(
        after.iter().any(
            |((g, p), k)| (*g, *p) == (t.node(moved_node).node_guid, moved_port)
                && k.contains(&PKey(0x8001))
                && !k.contains(&PKey(0x8002))
        ),
        "the moved port does not hold A's key instead of B's"
    );
    h.check_programmed(&t);
}

#[test]
fn a_malformed_policy_is_refused_and_the_next_sweep_writes_nothing() {
    let t = topo("ft2:8");
    let guids: Vec<Guid> = ca_ports(&t).iter().map(|c| c.2).collect();
    let a = policy_a(&guids);
    let mut h = harness(&t, a.clone(), 42);
    h.fab.take_set_log();
    let before = fabric_tables(&h, &t);
    // Line 2's PKey is not a number.
    let bad = format!(
        "Default=0x7fff : ALL=full ;\nA=0xZZ01 : {}=full ;\n",
        guids[1]
    );
    let err = h.sw.set_policy(h.now, Some(bad)).unwrap_err();
    let SmError::Partitions(partitions::PartitionsError::Parse(errs)) = &err else {
        panic!("not a parse error: {err:?}");
    };
    assert_eq!(errs[0].pos.line, 2, "{err}");
    assert_eq!(errs[0].pos.col, 3, "{err}");
    assert_eq!(
        h.sw.policy_text(),
        Some(a.as_str()),
        "the policy in force changed"
    );
    assert_eq!(h.sw.config().partitions_conf.as_deref(), Some(a.as_str()));
    // set_policy asked for nothing; a requested heavy sweep still writes nothing.
    assert_eq!(h.sw.phase(), sm_core::Phase::Idle);
    let counters = *h.sw.counters();
    h.sw.request_sweep(h.now, true);
    assert!(h.heavy_done());
    assert!(
        h.fab.take_set_log().is_empty(),
        "a Set after a refused policy"
    );
    assert_eq!(h.sw.counters().since(&counters).sets(), 0);
    assert_eq!(fabric_tables(&h, &t), before);
    // None (no file) is a valid policy: every end port full in the default partition.
    h.sw.set_policy(h.now, None).unwrap();
    assert!(h.heavy_done());
    let log = h.fab.take_set_log();
    assert!(!log.is_empty() && log.iter().all(|r| r.attr == AttributeId::P_KEY_TABLE.0));
    let (n, p, _) = ca_ports(&t)[1];
    let keys = h.fab.pkey_table(n, p).unwrap();
    assert!(keys.contains(&PKey(0xFFFF)) && !keys.contains(&PKey(0x8001)));
}

#[test]
fn a_policy_set_during_a_heavy_sweep_is_programmed_by_the_next_one() {
    let t = topo("ft2:8");
    let cas = ca_ports(&t);
    let guids: Vec<Guid> = cas.iter().map(|c| c.2).collect();
    let mut h = harness(&t, policy_a(&guids), 43);
    // A heavy sweep runs (discovering) when the new policy arrives.
    h.sw.request_sweep(h.now, true);
    let running = h.sw.sweep_number();
    assert_ne!(h.sw.phase(), sm_core::Phase::Idle);
    let b = policy_b(&guids);
    let first = h.sw.set_policy(h.now, Some(b.clone())).unwrap();
    assert_eq!(first, running + 1);
    assert!(h.run_until(120_000_000_000, |e| matches!(
        e,
        Event::HeavySweepComplete { sweep, .. } if *sweep == first
    )));
    let after = fabric_tables(&h, &t);
    for ((g, p), keys) in planned(&t, &b, guids[0]) {
        let mut held = after.iter().find(|(k, _)| *k == (g, p)).unwrap().1.clone();
        held.resize(keys.len().max(held.len()), PKey(0));
        let mut keys = keys;
        keys.resize(held.len(), PKey(0));
        assert_eq!(held, keys, "{g} port {p}");
    }
    h.check_programmed(&t);
}
