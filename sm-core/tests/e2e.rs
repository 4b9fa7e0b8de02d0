//! End to end on the simulated fabric: SUBNET UP, programming, delivery and isolation.

mod common;
use common::*;
use fabric::PKey;
use sm_core::{Event, SweeperConfig};

fn all_full(_: fabric::Guid, _: fabric::Guid) -> Option<PKey> {
    Some(PKey(0xFFFF))
}

#[test]
fn ft2_radix8_comes_up_and_every_pair_delivers() {
    let t = topo("ft2:8");
    let mut h = Harness::new(&t, SweeperConfig::default(), 1);
    h.subnet_up();
    h.check_programmed(&t);
    let (ok, _) = h.check_delivery(&t, 1, all_full, PKey(0xFFFF));
    assert!(ok > 0);
    // Milestones in order.
    let kinds: Vec<&str> = h
        .events
        .iter()
        .map(|e| match e {
            Event::HeavySweepStarted { .. } => "start",
            Event::DiscoveryDone { .. } => "disc",
            Event::LidsAssigned { .. } => "lids",
            Event::RoutingDone { .. } => "routing",
            Event::ProgrammingDone { .. } => "prog",
            Event::SubnetUp { .. } => "up",
            Event::HeavySweepComplete { .. } => "done",
            _ => "other",
        })
        .collect();
    assert_eq!(
        &kinds[..7],
        ["start", "disc", "lids", "routing", "prog", "up", "done"]
    );
    match &h.events[1] {
        Event::DiscoveryDone {
            nodes, switches, ..
        } => {
            assert_eq!(*nodes, t.len());
            assert_eq!(*switches, t.switches().count());
        }
        e => panic!("{e:?}"),
    }
    assert!(h.log.iter().any(|l| l.starts_with("SUBNET UP")));
}

#[test]
fn torus_comes_up_and_every_pair_delivers() {
    let t = topo("torus:4x4x3");
    let mut h = Harness::new(&t, SweeperConfig::default(), 2);
    h.subnet_up();
    h.check_programmed(&t);
    let (ok, _) = h.check_delivery(&t, 1, all_full, PKey(0xFFFF));
    assert_eq!(ok, 48 * 47);
    // A torus is not a fat tree: ftree refuses, up/down routes it.
    assert!(h.events.iter().any(|e| matches!(
        e,
        Event::RoutingDone { engine: "updn", refusals, .. } if !refusals.is_empty()
    )));
}

#[test]
fn random_fabric_comes_up_and_every_pair_delivers() {
    let t = topo("random:24:seed=5:radix=12:links=6:hosts=3");
    let mut h = Harness::new(&t, SweeperConfig::default(), 3);
    h.subnet_up();
    h.check_programmed(&t);
    let n = ca_ports(&t).len();
    let (ok, _) = h.check_delivery(&t, 1, all_full, PKey(0xFFFF));
    assert_eq!(ok, n * (n - 1));
    match &h.events[1] {
        Event::DiscoveryDone { nodes, links, .. } => {
            assert_eq!(*nodes, t.len());
            assert_eq!(*links, t.num_links());
        }
        e => panic!("{e:?}"),
    }
}

/// Two tenants: even CA ports in A (0x0001), odd ones in B (0x0002), Default limited for
/// everyone but the SM's port.
fn two_tenants(t: &fabric::Topology) -> (String, Vec<fabric::Guid>, Vec<fabric::Guid>) {
    let cas = ca_ports(t);
    let a: Vec<_> = cas.iter().step_by(2).map(|c| c.2).collect();
    let b: Vec<_> = cas.iter().skip(1).step_by(2).map(|c| c.2).collect();
    let list = |v: &[fabric::Guid]| {
        v.iter()
            .map(|g| format!("0x{:016x}=full", g.0))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let conf = format!(
        "Default=0x7fff : ALL=limited, SELF=full ;\nTenantA=0x0001 : {} ;\nTenantB=0x0002 : {} ;\n",
        list(&a),
        list(&b)
    );
    (conf, a, b)
}

#[test]
fn ft2_two_tenants_deliver_inside_and_never_across() {
    two_tenant_check("ft2:8", 1);
}

#[test]
fn ft2_radix36_two_tenants_deliver_inside_and_never_across() {
    two_tenant_check("ft2:36", 53);
}

fn two_tenant_check(spec: &str, stride: usize) {
    let t = topo(spec);
    let (conf, a, b) = two_tenants(&t);
    let sm_port = ca_ports(&t)[0].2;
    let cfg = SweeperConfig {
        partitions_conf: Some(conf),
        ..SweeperConfig::default()
    };
    let mut h = Harness::new(&t, cfg, 4);
    h.subnet_up();
    h.check_programmed(&t);
    let tenant = |g: fabric::Guid| {
        if a.contains(&g) {
            1u16
        } else if b.contains(&g) {
            2
        } else {
            0
        }
    };
    let allowed = |x: fabric::Guid, y: fabric::Guid| -> Option<PKey> {
        if tenant(x) == tenant(y) {
            Some(PKey(0x8000 | tenant(x)))
        } else if x == sm_port {
            Some(PKey(0xFFFF))
        } else if y == sm_port {
            Some(PKey(0x7FFF))
        } else {
            None
        }
    };
    let (ok, blocked) = h.check_delivery(&t, stride, allowed, PKey(0x8001));
    let (_, blocked2) = h.check_delivery(&t, stride, allowed, PKey(0x7FFF));
    assert!(ok > 0 && blocked > 0 && blocked == blocked2);
    // Limited members of Default cannot use it between themselves.
    let cas = ca_ports(&t);
    let (n, p, _) = cas[3];
    let lid = h.lid_of(n, p);
    assert!(!h.fab.deliver(cas[1].2, lid, PKey(0x7FFF)).is_delivered());
    // P_Key blocks were written (the default table does not hold the tenant keys).
    assert!(h.events.iter().any(|e| matches!(
        e,
        Event::ProgrammingDone { pkey_blocks, .. } if *pkey_blocks > 0
    )));
}

#[test]
fn ft2_radix36_comes_up_and_pairs_deliver() {
    let t = topo("ft2:36");
    let mut h = Harness::new(&t, SweeperConfig::default(), 5);
    h.subnet_up();
    h.check_programmed(&t);
    let (ok, _) = h.check_delivery(&t, 37, all_full, PKey(0xFFFF));
    assert!(ok > 10_000);
}

#[test]
fn lmc_gives_aligned_blocks_and_every_lid_routes() {
    let t = topo("ft2:8");
    let cfg = SweeperConfig {
        lmc: 2,
        ..SweeperConfig::default()
    };
    let mut h = Harness::new(&t, cfg, 6);
    h.subnet_up();
    h.check_programmed(&t);
    let cas = ca_ports(&t);
    for &(n, p, _) in &cas {
        let info = h.fab.port_info(n, p).unwrap();
        assert_eq!(info.lmc, 2);
        assert_eq!(info.lid.0 % 4, 0);
    }
    for &(_, _, a) in cas.iter().take(4) {
        for &(n, p, b) in &cas {
            if a == b {
                continue;
            }
            let base = h.lid_of(n, p).0;
            for k in 0..4 {
                let d = h.fab.deliver(a, fabric::Lid(base + k), PKey(0xFFFF));
                assert!(d.is_delivered(), "{a} -> {b} LID {}: {d:?}", base + k);
            }
        }
    }
}

#[test]
fn a_fabric_that_cannot_be_addressed_is_refused_with_the_lids_it_needs() {
    // ft2:36 at LMC 7: 648 CA ports x 128 LIDs + 54 switches = 82,998 LIDs > 49,151.
    let t = topo("ft2:36");
    let cfg = SweeperConfig {
        lmc: 7,
        ..SweeperConfig::default()
    };
    let mut h = Harness::new(&t, cfg, 3);
    let failed = h.run_until(10_000_000_000, |e| matches!(e, Event::RoutingFailed(_)));
    assert!(failed, "no refusal; log:\n{}", h.log.join("\n"));
    let why = h
        .events
        .iter()
        .find_map(|e| match e {
            Event::RoutingFailed(w) => Some(w.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        why,
        "SMC-E008 fabric needs 82998 LIDs (LMC 7) but a subnet has 49151: 702 end ports, \
         split it into subnets or lower the LMC"
    );
    assert!(
        !h.events
            .iter()
            .any(|e| matches!(e, Event::LidsAssigned { .. } | Event::SubnetUp { .. })),
        "no LID is given out"
    );
    for &(n, p, _) in ca_ports(&t).iter().take(8) {
        assert_eq!(h.lid_of(n, p), fabric::Lid(0));
    }
}

#[test]
fn two_port_hca_on_two_switches_gets_both_ports_and_per_port_pkeys() {
    use fabric::{Guid, NodeType, PortRef, Topology};
    let mut t = Topology::new();
    let b = t.add_node(NodeType::Ca, 1, Guid(0x2000), "B").unwrap();
    let s1 = t.add_node(NodeType::Switch, 8, Guid(0x100), "sw1").unwrap();
    let s2 = t.add_node(NodeType::Switch, 8, Guid(0x200), "sw2").unwrap();
    let a = t.add_node(NodeType::Ca, 2, Guid(0x1000), "A").unwrap();
    let c = t.add_node(NodeType::Ca, 1, Guid(0x3000), "C").unwrap();
    for (x, y) in [
        ((s1, 1), (s2, 1)),
        ((a, 1), (s1, 2)),
        ((a, 2), (s2, 2)),
        ((b, 1), (s1, 3)),
        ((c, 1), (s2, 3)),
    ] {
        t.connect(PortRef::new(x.0, x.1), PortRef::new(y.0, y.1))
            .unwrap();
    }
    let a1 = t.node(a).ports[1].guid;
    let a2 = t.node(a).ports[2].guid;
    let cg = t.node(c).ports[1].guid;
    let conf = format!(
        "Default=0x7fff : ALL=full ;\nX=0x0001 : 0x{:016x}=full, 0x{:016x}=full ;\n",
        a2.0, cg.0
    );
    let cfg = SweeperConfig {
        partitions_conf: Some(conf),
        ..SweeperConfig::default()
    };
    let mut h = Harness::new(&t, cfg, 7);
    h.subnet_up();
    h.check_programmed(&t);
    let (l1, l2) = (h.lid_of(a, 1), h.lid_of(a, 2));
    assert_ne!(l1, l2);
    // Port 2 (the one not first reached, whose SMPs must arrive on it) holds the key.
    assert!(h.fab.deliver(cg, l2, PKey(0x8001)).is_delivered());
    assert!(!h.fab.deliver(cg, l1, PKey(0x8001)).is_delivered());
    assert!(h.fab.deliver(cg, l1, PKey(0xFFFF)).is_delivered());
    assert!(
        h.fab
            .deliver(a1, h.lid_of(b, 1), PKey(0xFFFF))
            .is_delivered()
    );
    match &h.events[1] {
        Event::DiscoveryDone { nodes, links, .. } => assert_eq!((*nodes, *links), (5, 5)),
        e => panic!("{e:?}"),
    }
}
