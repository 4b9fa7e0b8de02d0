//! Virtual lanes on fabric-sim: with QoS on, the first sweep writes SLtoVL and VLArb
//! blocks to every port that takes them and records them; a quiet heavy sweep writes none;
//! a new master seeded with the blocks as programmed writes none; a changed SLtoVL option
//! writes exactly the SLtoVL blocks again and no VLArb block; QoS off writes none at all.

mod common;

use common::{Harness, count_sets_of, topo};
use sm_core::{Event, Sweeper, SweeperConfig, VTime, VlAttr};
use std::sync::Arc;

const SL2VL: u16 = 0x17;
const VLARB: u16 = 0x18;
const MS: VTime = 1_000_000;

fn qos_tables(pairs: &[(&str, &str)]) -> Arc<qos::QosTables> {
    let opts = qos::QosOptions::from_pairs(pairs.iter().copied()).expect("options");
    Arc::new(opts.build().expect("tables"))
}

fn cfg(q: Option<Arc<qos::QosTables>>) -> SweeperConfig {
    SweeperConfig {
        sweep_interval: 60_000 * MS,
        qos: q,
        ..SweeperConfig::default()
    }
}

fn heavy(h: &mut Harness) {
    h.sw.request_sweep(h.now, true);
    assert!(h.run_until(60_000 * MS, |e| matches!(
        e,
        Event::HeavySweepComplete { .. }
    )));
    h.settle(5_000 * MS);
}

#[test]
fn qos_tables_are_written_once_and_kept() {
    let t = topo("ft2:8");
    let mut h = Harness::new(&t, cfg(Some(qos_tables(&[]))), 5);
    h.subnet_up();
    h.settle(5_000 * MS);
    let log = h.fab.take_set_log();
    let (sl2vl, vlarb) = (count_sets_of(&log, SL2VL), count_sets_of(&log, VLARB));
    let known = h.sw.vl_tables().clone();
    let known_sl2vl = known.keys().filter(|k| k.1 == VlAttr::SlToVl).count();
    println!("ft2:8 with QoS: {sl2vl} SLtoVL and {vlarb} VLArb Sets");
    assert!(sl2vl > 0 && vlarb > 0, "QoS on writes both tables");
    assert_eq!(sl2vl, known_sl2vl, "every SLtoVL Set is recorded once");
    assert_eq!(sl2vl + vlarb, known.len(), "every Set recorded, none twice");
    // Every switch's SLtoVL pairs: (N+1) inputs x N outputs for each switch.
    let sw_pairs: usize = t
        .switches()
        .map(|(_, n)| (n.num_ports() as usize + 1) * n.num_ports() as usize)
        .sum();
    let ca_ports = common::ca_ports(&t).len();
    assert_eq!(
        known_sl2vl,
        sw_pairs + ca_ports,
        "switch pairs and CA ports"
    );

    // A quiet heavy sweep writes nothing.
    heavy(&mut h);
    let log = h.fab.take_set_log();
    assert_eq!(
        count_sets_of(&log, SL2VL) + count_sets_of(&log, VLARB),
        0,
        "quiet sweep"
    );

    // A new master seeded with the recorded blocks writes none.
    let seeded = SweeperConfig {
        guid2lid: h.sw.guid2lid().clone(),
        known_lfts: h.sw.lfts().map(|l| Arc::new(l.clone())),
        known_pkeys: Some(Arc::new(h.sw.pkey_tables())),
        known_vl_tables: Some(Arc::new(known.clone())),
        reregister_on_takeover: false,
        ..cfg(Some(qos_tables(&[])))
    };
    h.sw = Sweeper::new(seeded).unwrap();
    h.subnet_up();
    h.settle(5_000 * MS);
    let log = h.fab.take_set_log();
    assert_eq!(
        count_sets_of(&log, SL2VL) + count_sets_of(&log, VLARB),
        0,
        "takeover on an unchanged fabric"
    );

    // A changed SLtoVL option: only the SLtoVL blocks are written again.
    let changed = SweeperConfig {
        guid2lid: h.sw.guid2lid().clone(),
        known_lfts: h.sw.lfts().map(|l| Arc::new(l.clone())),
        known_pkeys: Some(Arc::new(h.sw.pkey_tables())),
        known_vl_tables: Some(Arc::new(h.sw.vl_tables().clone())),
        reregister_on_takeover: false,
        ..cfg(Some(qos_tables(&[(
            "qos_sl2vl",
            "0,1,2,3,0,1,2,3,0,1,2,3,0,1,2,7",
        )])))
    };
    h.sw = Sweeper::new(changed).unwrap();
    h.subnet_up();
    h.settle(5_000 * MS);
    let log = h.fab.take_set_log();
    assert_eq!(count_sets_of(&log, VLARB), 0, "VLArb unchanged");
    assert_eq!(
        count_sets_of(&log, SL2VL),
        known_sl2vl,
        "every SLtoVL block changed"
    );
}

#[test]
fn qos_off_writes_no_vl_table() {
    let t = topo("ft2:8");
    let mut h = Harness::new(&t, cfg(None), 5);
    h.subnet_up();
    h.settle(5_000 * MS);
    let log = h.fab.take_set_log();
    assert_eq!(count_sets_of(&log, SL2VL) + count_sets_of(&log, VLARB), 0);
    assert!(h.sw.vl_tables().is_empty());
}

#[test]
fn three_sls_ride_three_vls_hop_by_hop() {
    let t = topo("ft2:8");
    // SL 0 -> VL 0, SL 1 -> VL 1, SL 2 -> VL 2, everything else on VL 0.
    let q = qos_tables(&[("qos_sl2vl", "0,1,2,0,0,0,0,0,0,0,0,0,0,0,0,0")]);
    let mut h = Harness::new(&t, cfg(Some(q)), 9);
    h.subnet_up();
    h.settle(5_000 * MS);
    let cas = common::ca_ports(&t);
    let (a, b) = (cas[1], cas[cas.len() - 1]);
    let (la, lb) = (h.lid_of(a.0, a.1), h.lid_of(b.0, b.1));
    for sl in 0..3u8 {
        let hops = h.fab.vl_path(la, lb, sl).expect("path");
        assert!(hops.len() >= 2, "through the fabric");
        assert!(
            hops.iter().all(|x| x.vl == sl),
            "SL {sl} rides VL {sl} on every hop: {hops:?}"
        );
        let d = h.fab.deliver_sl(a.2, lb, fabric::PKey::DEFAULT_FULL, sl);
        assert!(
            matches!(d, fabric_sim::Delivery::Delivered { dst_port, .. } if dst_port == b.2),
            "SL {sl} delivered: {d:?}"
        );
    }
}

/// A policy whose qos-setup gives the CA ports their own SLtoVL and VLArb tables.
const CA_SCOPE: &str = "\
port-groups
    port-group
        name: Hosts
        node-type: CA
    end-port-group
end-port-groups
qos-setup
    vlarb-tables
        vlarb-scope
            group: Hosts
            vlarb-low: 0:64,1:64
            vl-high-limit: 0
        end-vlarb-scope
    end-vlarb-tables
    sl2vl-tables
        sl2vl-scope
            group: Hosts
            sl2vl-table: 1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1
        end-sl2vl-scope
    end-sl2vl-tables
end-qos-setup
qos-levels
    qos-level
        name: DEFAULT
        sl: 0
    end-qos-level
end-qos-levels
";

#[test]
fn a_qos_setup_scope_rewrites_only_its_ports_tables() {
    let t = topo("ft2:8");
    let mut h = Harness::new(&t, cfg(Some(qos_tables(&[]))), 5);
    h.subnet_up();
    h.settle(5_000 * MS);
    h.fab.take_set_log();
    let cas: std::collections::BTreeSet<_> = common::ca_ports(&t).iter().map(|c| c.0).collect();
    // The policy arrives (a new master seeded with what is programmed, as after ApplyQosPolicy).
    let with_policy = SweeperConfig {
        guid2lid: h.sw.guid2lid().clone(),
        known_lfts: h.sw.lfts().map(|l| Arc::new(l.clone())),
        known_pkeys: Some(Arc::new(h.sw.pkey_tables())),
        known_vl_tables: Some(Arc::new(h.sw.vl_tables().clone())),
        reregister_on_takeover: false,
        qos_policy: Some(CA_SCOPE.into()),
        ..cfg(Some(qos_tables(&[])))
    };
    h.sw = Sweeper::new(with_policy).unwrap();
    h.subnet_up();
    h.settle(5_000 * MS);
    let log = h.fab.take_set_log();
    let vl: Vec<_> = log
        .iter()
        .filter(|r| r.attr == SL2VL || r.attr == VLARB)
        .collect();
    assert!(!vl.is_empty(), "the scope changes the hosts' tables");
    assert!(
        vl.iter().all(|r| cas.contains(&r.node)),
        "only CA ports are rewritten"
    );
    assert_eq!(
        vl.iter().filter(|r| r.attr == SL2VL).count(),
        cas.len(),
        "one SLtoVL per host port"
    );
    let got = h.fab.sl2vl(common::ca_ports(&t)[3].0, 0, 1).expect("table");
    assert_eq!(got.vl, [1; 16], "the scope's table, masked by VL0-7");

    // A bad policy is refused at start with its position.
    let bad = SweeperConfig {
        qos_policy: Some("qos-levels\n  qos-level\n    sl: 99\n".into()),
        ..cfg(Some(qos_tables(&[])))
    };
    let e = Sweeper::new(bad).err().expect("refused");
    assert!(e.to_string().contains("QOS-E"), "{e}");
}

#[test]
fn a_readback_reads_every_recorded_vl_block_back() {
    let t = topo("ft2:8");
    let mut h = Harness::new(&t, cfg(Some(qos_tables(&[]))), 5);
    h.subnet_up();
    h.settle(5_000 * MS);
    h.fab.take_set_log();
    let known = h.sw.vl_tables().clone();
    let id = h.sw.request_pkey_readback(h.now).unwrap();
    assert!(h.run_until(
        60_000 * MS,
        |e| matches!(e, Event::PKeyReadback(r) if r.id == id)
    ));
    let Some(Event::PKeyReadback(r)) = h
        .events
        .iter()
        .rev()
        .find(|e| matches!(e, Event::PKeyReadback(_)))
    else {
        unreachable!()
    };
    assert_eq!(r.vl.len(), known.len(), "every recorded block read");
    for (g, attr, m, data) in &r.vl {
        assert_eq!(
            data.as_ref(),
            known.get(&(*g, *attr, *m)),
            "{g} {attr:?} {m:#x} holds what was recorded"
        );
    }
    assert!(h.fab.take_set_log().is_empty(), "a read-back sends no Set");
}
