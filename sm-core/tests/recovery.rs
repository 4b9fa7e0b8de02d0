//! Recovery from faults the chaos simulation found the sweeper blind to:
//! - F1: a switch that rebooted while no master ran comes back with default tables; the
//!   next master, seeded with the replicated `known_pkeys` / `known_lfts`, must rewrite its
//!   P_KeyTables (and LFT), and nothing else;
//! - F2: the master's own CA link goes down (a heavy sweep then finds a one-node fabric)
//!   and comes back: the master must notice and bring its port (and the subnet) up again;
//! - a port an intent reports failed loses its P_KeyTable record in the replicated state:
//!   the sweeper must forget the table too and write it again (seed 1197, counted as F1).

mod common;

use common::{Harness, ca_ports, topo};
use fabric::{NodeId, PKey, PortRef, PortState, Topology};
use fabric_sim::Fault;
use mad::AttributeId;
use sm_core::{Event, IntentEvent, MS, SweeperConfig};
use std::sync::Arc;

/// Two tenants (the SM's own port in neither) and a limited default partition: switch
/// ports facing end ports get enforcement tables of their own.
fn policy(t: &Topology) -> String {
    let cas = ca_ports(t);
    format!(
        "Default=0x7fff : ALL=full ;\nA=0x0001 : {}=full, {}=full ;\nB=0x0002 : {}=full, {}=limited ;\n",
        cas[1].2, cas[2].2, cas[3].2, cas[4].2
    )
}

/// A switch facing CA ports that is not the SM's own leaf.
fn other_leaf(t: &Topology) -> NodeId {
    let cas = ca_ports(t);
    let leaf = |(n, p, _): (NodeId, u8, fabric::Guid)| t.remote(PortRef::new(n, p)).unwrap().node;
    let sm_leaf = leaf(cas[0]);
    cas.iter()
        .map(|&c| leaf(c))
        .find(|&l| l != sm_leaf)
        .unwrap()
}

/// The P_KeyTable of every external port of switch `sw`, in port order.
fn tables(h: &Harness, t: &Topology, sw: NodeId) -> Vec<Vec<PKey>> {
    tables_of(&h.fab, t, sw)
}

#[test]
fn takeover_rewrites_the_pkeys_of_a_switch_rebooted_while_no_master_ran() {
    let t = topo("ft2:4");
    let cfg = |seeded: Option<&Harness>| SweeperConfig {
        partitions_conf: Some(policy(&t)),
        sweep_interval: 500 * MS,
        guid2lid: seeded.map(|h| h.sw.guid2lid().clone()).unwrap_or_default(),
        known_lfts: seeded.and_then(|h| h.sw.lfts().cloned().map(Arc::new)),
        known_pkeys: seeded.map(|h| Arc::new(h.sw.pkey_tables())),
        reregister_on_takeover: false,
        ..SweeperConfig::default()
    };
    let mut a = Harness::new(&t, cfg(None), 93);
    a.subnet_up();
    let victim = other_leaf(&t);
    let want = tables(&a, &t, victim);
    assert!(
        want.iter().any(|k| k.len() > 1 && k[1].0 != 0),
        "the policy gives the victim's ports no table of their own: {want:?}"
    );
    // The master dies; while no master runs, the switch reboots and its links retrain.
    let cfg_b = cfg(Some(&a));
    let mut fab = a.fab;
    fab.detach(a.sm).unwrap();
    fab.inject(a.now, Fault::RebootSwitch { node: victim })
        .unwrap();
    let now = a.now + 1_000 * MS;
    fab.run_until(now);
    assert_ne!(
        tables_of(&fab, &t, victim),
        want,
        "the reboot kept the tables"
    );
    // The new master is seeded with the replicated tables.
    let mut b = Harness::with_fabric(fab, &t, cfg_b);
    b.now = now;
    b.fab.take_set_log();
    b.subnet_up();
    assert_eq!(
        tables(&b, &t, victim),
        want,
        "the rebooted switch's P_KeyTables were not rewritten; log:\n{}",
        b.log.join("\n")
    );
    let log = b.fab.take_set_log();
    let pkey_sets: Vec<_> = log
        .iter()
        .filter(|r| r.attr == AttributeId::P_KEY_TABLE.0)
        .collect();
    assert!(
        pkey_sets.iter().all(|r| r.node == victim),
        "P_KeyTables rewritten on a switch that kept them: {pkey_sets:?}"
    );
    assert!(
        log.iter()
            .any(|r| r.node == victim && r.attr == AttributeId::LINEAR_FORWARDING_TABLE.0),
        "the rebooted switch's LFT was not rewritten"
    );
    b.check_programmed(&t);
}

fn tables_of(fab: &fabric_sim::SimFabric, t: &Topology, sw: NodeId) -> Vec<Vec<PKey>> {
    let n = t.node(sw);
    (1..=n.ports.len() as u8 - 1)
        .map(|p| fab.pkey_table(sw, p).unwrap())
        .collect()
}

#[test]
fn master_recovers_after_its_own_link_flaps() {
    let t = topo("ft2:8:hosts=1");
    let cfg = SweeperConfig {
        sweep_interval: 100 * MS,
        ..SweeperConfig::default()
    };
    let mut h = Harness::new(&t, cfg, 109);
    h.subnet_up();
    let (n, p, _) = ca_ports(&t)[0];
    h.fab
        .inject(h.now, Fault::LinkDown { node: n, port: p })
        .unwrap();
    // The light sweep's polls go unanswered; the heavy sweep that follows finds only the
    // SM's own node.
    assert!(
        h.run_until(5_000 * MS, |e| matches!(
            e,
            Event::DiscoveryDone { nodes: 1, .. }
        )),
        "no one-node heavy sweep; log:\n{}",
        h.log.join("\n")
    );
    h.fab
        .inject(h.now, Fault::LinkUp { node: n, port: p })
        .unwrap();
    let until = h.now + 3_000 * MS;
    while h.now < until && h.step() {}
    assert_eq!(
        h.fab.port_state(n, p).unwrap(),
        PortState::Active,
        "the SM's own port did not come back; log:\n{}",
        h.log.join("\n")
    );
    h.check_programmed(&t);
}

/// One turn of a gated driver (a Raft leader whose log commits every intent at once).
fn step_gated(h: &mut Harness, intents: &mut Vec<IntentEvent>) -> bool {
    let more = h.step();
    while let Some(ie) = h.sw.poll_intent() {
        if let IntentEvent::Program(it) = &ie {
            h.sw.handle_intent_committed(h.now, it.id);
        }
        intents.push(ie);
    }
    more
}

#[test]
fn a_port_reported_failed_gets_its_pkeys_written_again() {
    // The replicated state drops the P_KeyTable record of every port an intent reports
    // failed; the sweeper must forget it too and write it again, or the record never
    // comes back. Here a takeover's M_Key rotation fails on a CA port whose link goes down
    // just after discovery; the link comes back with the port's LID (not fresh).
    let t = topo("ft2:4");
    let cfg = |seeded: Option<&Harness>| SweeperConfig {
        partitions_conf: Some(policy(&t)),
        sweep_interval: 200 * MS,
        m_key: if seeded.is_some() { 2 } else { 1 },
        m_key_prev: if seeded.is_some() { vec![1] } else { vec![] },
        m_key_protect_bits: 1,
        gate_programming: seeded.is_some(),
        guid2lid: seeded.map(|h| h.sw.guid2lid().clone()).unwrap_or_default(),
        known_lfts: seeded.and_then(|h| h.sw.lfts().cloned().map(Arc::new)),
        known_pkeys: seeded.map(|h| Arc::new(h.sw.pkey_tables())),
        reregister_on_takeover: false,
        ..SweeperConfig::default()
    };
    let mut a = Harness::new(&t, cfg(None), 1197);
    a.subnet_up();
    let cfg_b = cfg(Some(&a));
    let mut fab = a.fab;
    fab.detach(a.sm).unwrap();
    let mut b = Harness::with_fabric(fab, &t, cfg_b);
    b.now = a.now;
    let (n, p, g) = ca_ports(&t)[1];
    let node_guid = t.node(n).node_guid;
    let mut intents = Vec::new();
    while !b
        .events
        .iter()
        .any(|e| matches!(e, Event::DiscoveryDone { .. }))
    {
        assert!(step_gated(&mut b, &mut intents));
    }
    b.fab
        .inject(b.now, Fault::LinkDown { node: n, port: p })
        .unwrap();
    let done = |intents: &[IntentEvent]| {
        intents.iter().any(|ie| {
            matches!(ie, IntentEvent::Done { failed_ports, .. }
                if failed_ports.contains(&(node_guid, p)))
        })
    };
    let end = b.now + 5_000 * MS;
    while !done(&intents) && b.now < end {
        assert!(step_gated(&mut b, &mut intents));
    }
    assert!(
        done(&intents),
        "the port {g} was not reported failed; log:\n{}",
        b.log.join("\n")
    );
    let from = intents.len();
    b.fab
        .inject(b.now, Fault::LinkUp { node: n, port: p })
        .unwrap();
    let end = b.now + 3_000 * MS;
    while b.now < end && step_gated(&mut b, &mut intents) {}
    let rewritten = intents[from..].iter().any(|ie| {
        matches!(ie, IntentEvent::Program(it)
            if it.pkey_blocks.iter().any(|w| w.node == node_guid && w.port == p))
    });
    assert!(
        rewritten,
        "no later intent records the P_KeyTable of {g} again; log:\n{}",
        b.log.join("\n")
    );
    assert_eq!(b.fab.port_state(n, p).unwrap(), PortState::Active);
}
