//! Engines on generated fat trees, tori and random graphs.

mod common;

use common::*;
use routing::{
    EngineOptions, FatTree, MinHop, RoutingError, Sequential, UpDown, route, route_on,
    route_with_chain,
};
use runner::Threads;

const FAT_TREES: &[&str] = &[
    "ft2:4",
    "ft2:8",
    "ft2:12",
    "ft3:4",
    "ft3:8",
    "ft3:12:pods=6",
];
const OTHERS: &[&str] = &[
    "torus:4x4",
    "torus:3x3x3",
    "torus:5x4:hosts=2",
    "random:24:seed=1:radix=12:links=6",
    "random:40:seed=2:radix=16:links=8",
    "random:64:seed=3",
];

#[test]
fn every_engine_routes_every_pair_on_fat_trees() {
    for spec in FAT_TREES {
        let t = fabric_of(spec);
        let inp = input(&t, 0);
        for e in [
            &MinHop as &dyn routing::Engine,
            &UpDown::default(),
            &FatTree,
        ] {
            let r = route(&inp, e).unwrap();
            let what = format!("{spec} {}", e.name());
            let m = assert_complete(&inp, &r.lfts, &what);
            if e.name() == "minhop" {
                // Minimal, and with switch LIDs in the dependency graph (spine to spine
                // through a leaf turns down then up) not free of credit loops.
                assert_eq!(m.max_switch_hops, m.diameter, "{what}");
                continue;
            }
            assert!(
                !m.cdg.has_cycle,
                "{what}: fat-tree routes must be deadlock-free"
            );
        }
    }
}

#[test]
fn ftree_is_contention_free_for_shifts_on_complete_fat_trees() {
    for spec in ["ft2:4", "ft2:8", "ft2:12", "ft3:4", "ft3:8", "ft3:12"] {
        let t = fabric_of(spec);
        let inp = input(&t, 0);
        let r = route(&inp, &FatTree).unwrap();
        let m = metrics_of(&inp, &r.lfts);
        assert_eq!(m.shift.undelivered, 0, "{spec}");
        assert_eq!(
            m.shift.max_link_load, 1,
            "{spec}: per shift {:?}",
            m.shift.max_link_load_per_shift
        );
        assert_eq!(m.max_link_load, 1, "{spec}");
    }
}

#[test]
fn minhop_is_not_contention_free_on_ft3() {
    // Shows the shift metric can fail: min-hop balances counts, not permutations.
    let t = fabric_of("ft3:8");
    let inp = input(&t, 0);
    let r = route(&inp, &MinHop).unwrap();
    let m = metrics_of(&inp, &r.lfts);
    assert!(m.shift.max_link_load > 1, "{:?}", m.shift);
}

#[test]
fn every_engine_but_ftree_routes_tori_and_random_graphs() {
    for spec in OTHERS {
        let t = fabric_of(spec);
        let inp = input(&t, 0);
        for e in [&MinHop as &dyn routing::Engine, &UpDown::default()] {
            let r = route(&inp, e).unwrap();
            let what = format!("{spec} {}", e.name());
            let m = assert_complete(&inp, &r.lfts, &what);
            if e.name() == "minhop" {
                assert_eq!(m.max_switch_hops, m.diameter, "{what}: min-hop is shortest");
            }
        }
    }
}

#[test]
fn updn_cdg_is_acyclic_on_tori_and_random_graphs() {
    for spec in OTHERS {
        let t = fabric_of(spec);
        let inp = input(&t, 0);
        let r = route(&inp, &UpDown::default()).unwrap();
        let m = metrics_of(&inp, &r.lfts);
        assert!(m.cdg.dependencies > 0, "{spec}");
        assert!(!m.cdg.has_cycle, "{spec}: up/down must be deadlock-free");
    }
}

#[test]
fn minhop_cdg_has_cycles_on_a_torus() {
    // The check is able to find cycles: min-hop on a ring-like torus has them.
    let t = fabric_of("torus:6x6");
    let inp = input(&t, 0);
    let r = route(&inp, &MinHop).unwrap();
    let m = metrics_of(&inp, &r.lfts);
    assert!(m.cdg.has_cycle);
}

#[test]
fn ftree_refuses_non_fat_trees_with_a_reason() {
    for spec in ["torus:4x4", "random:24:seed=1:radix=12:links=6"] {
        let t = fabric_of(spec);
        let inp = input(&t, 0);
        match route(&inp, &FatTree) {
            Err(RoutingError::NotAFatTree { why }) => assert!(!why.is_empty()),
            other => panic!("{spec}: expected NotAFatTree, got {other:?}"),
        }
    }
}

#[test]
fn chain_falls_back_and_reports_why() {
    let t = fabric_of("torus:4x4");
    let inp = input(&t, 0);
    let out = route_with_chain(
        &inp,
        &["ftree", "updn", "minhop"],
        &EngineOptions::default(),
        &Sequential,
        1,
        None,
    )
    .unwrap();
    assert_eq!(out.routing.engine, "updn");
    assert_eq!(out.refusals.len(), 1);
    assert_eq!(out.refusals[0].engine, "ftree");
    assert!(matches!(
        out.refusals[0].reason,
        RoutingError::NotAFatTree { .. }
    ));

    // Up/down with a root that is not in the fabric refuses; min-hop takes over.
    // (Min-hop has credit loops on this torus: accepted on request here.)
    let opts = EngineOptions {
        updn_roots: vec![fabric::Guid(0xdead)],
        accept_credit_loops: true,
        ..EngineOptions::default()
    };
    let out = route_with_chain(
        &inp,
        &["ftree", "updn", "minhop"],
        &opts,
        &Sequential,
        2,
        None,
    )
    .unwrap();
    assert_eq!(out.routing.engine, "minhop");
    assert_eq!(out.refusals.len(), 2);
    assert_eq!(
        out.refusals[1].reason,
        RoutingError::RootNotFound(fabric::Guid(0xdead))
    );

    // A fat tree is taken by the first engine.
    let ft = fabric_of("ft2:8");
    let inp = input(&ft, 0);
    let out = route_with_chain(
        &inp,
        &["ftree", "minhop"],
        &EngineOptions::default(),
        &Sequential,
        1,
        None,
    )
    .unwrap();
    assert_eq!(out.routing.engine, "ftree");
    assert!(out.refusals.is_empty());

    assert!(matches!(
        route_with_chain(
            &inp,
            &["bogus"],
            &EngineOptions::default(),
            &Sequential,
            1,
            None
        ),
        Err(RoutingError::UnknownEngine(_))
    ));
    // Everything refuses: the error lists every reason.
    let t = fabric_of("torus:4x4");
    let inp = input(&t, 0);
    match route_with_chain(
        &inp,
        &["ftree"],
        &EngineOptions::default(),
        &Sequential,
        1,
        None,
    ) {
        Err(RoutingError::AllRefused(r)) => assert_eq!(r.len(), 1),
        other => panic!("{other:?}"),
    }
}

#[test]
fn same_lfts_for_any_number_of_workers_and_shards() {
    for spec in ["ft3:8", "torus:4x4x2", "random:40:seed=2:radix=16:links=8"] {
        let t = fabric_of(spec);
        let inp = input(&t, 1);
        for e in [
            &MinHop as &dyn routing::Engine,
            &UpDown::default(),
            &FatTree,
        ] {
            let Ok(reference) = route(&inp, e) else {
                assert!(e.name() == "ftree" && !spec.starts_with("ft"));
                continue;
            };
            for workers in [1, 2, 4, 8] {
                for shards in [workers, 3 * workers] {
                    let r = route_on(&inp, e, &Threads(workers), shards, None).unwrap();
                    assert_eq!(
                        r.lfts,
                        reference.lfts,
                        "{spec} {} {workers}w {shards}s",
                        e.name()
                    );
                    assert_eq!(r.hops, reference.hops);
                }
            }
        }
    }
}

#[test]
fn minhop_spreads_destinations_evenly_over_uplinks() {
    let t = fabric_of("ft2:8");
    let inp = input(&t, 0);
    let r = route(&inp, &MinHop).unwrap();
    // Leaf 0 (switch index 0): up ports 5..=8; remote hosts 7 leaves x 4 = 28 -> 7 each.
    let leaf = &r.lfts.switches[0];
    let mut per_port = [0u32; 9];
    for ep in &inp.end_ports {
        if ep.switch != 0 {
            per_port[leaf.port(ep.lids.base.0) as usize] += 1;
        }
    }
    assert_eq!(&per_port[5..], &[7, 7, 7, 7]);
}

#[test]
fn lmc_lids_are_all_routed_and_spread() {
    let t = fabric_of("ft2:8");
    let inp = input(&t, 2);
    for e in [
        &MinHop as &dyn routing::Engine,
        &UpDown::default(),
        &FatTree,
    ] {
        let r = route(&inp, e).unwrap();
        assert_complete(&inp, &r.lfts, e.name());
        // Every LID of every end port reachable from every switch.
        for s in 0..inp.num_switches() {
            for ep in &inp.end_ports {
                for k in 0..4 {
                    assert!(walk(&inp, &r.lfts, s, ep.lids.base.0 + k).is_some());
                }
            }
        }
        // From leaf 0, the 4 LIDs of a remote host leave on 4 different uplinks.
        let remote = inp.end_ports.iter().find(|e| e.switch == 3).unwrap();
        let mut ports: Vec<u8> = (0..4)
            .map(|k| r.lfts.switches[0].port(remote.lids.base.0 + k))
            .collect();
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), 4, "{}: {ports:?}", e.name());
    }
}

#[test]
fn hop_tables_match_the_walks() {
    let t = fabric_of("torus:4x3");
    let inp = input(&t, 0);
    let r = route(&inp, &MinHop).unwrap();
    for s in 0..inp.num_switches() {
        for d in 0..inp.num_switches() {
            let lid = inp.switches[d].lid.0;
            assert_eq!(
                walk(&inp, &r.lfts, s, lid),
                r.hops.hops(s, d).map(u32::from)
            );
        }
    }
}

#[test]
fn a_larger_fat_tree_is_complete_and_ftree_contention_free() {
    let t = fabric_of("ft3:16");
    let inp = input(&t, 0);
    for e in [
        &MinHop as &dyn routing::Engine,
        &UpDown::default(),
        &FatTree,
    ] {
        let r = route_on(&inp, e, &Threads(2), 4, None).unwrap();
        let m = assert_complete(&inp, &r.lfts, e.name());
        if e.name() == "minhop" {
            assert_eq!(m.max_switch_hops, m.diameter);
        } else {
            // Up*down* routes between switch LIDs (core to core) may be longer than the
            // diameter; host pairs stay at 4 switch hops.
            assert_eq!(m.max_hops, 6, "{}", e.name());
        }
        if e.name() == "ftree" {
            assert_eq!(m.max_link_load, 1, "{:?}", m.shift);
        }
    }
}

#[test]
fn updn_detects_the_spines_as_roots() {
    // With 24 pods each pod holds under 5% of the hosts, so the aggregation switches pass
    // OpenSM's histogram test too; only the cores must be kept.
    for (spec, top) in [("ft3:24", "core"), ("ft2:12", "spine"), ("ft3:8", "core")] {
        let t = fabric_of(spec);
        let inp = input(&t, 0);
        let roots = routing::updn::find_roots(&inp, &[]).unwrap();
        let want: Vec<u32> = (0..inp.num_switches() as u32)
            .filter(|&s| {
                t.node(inp.switches[s as usize].node)
                    .description
                    .starts_with(top)
            })
            .collect();
        assert_eq!(roots, want, "{spec}");
    }
    // A torus has no such switch: one central root.
    let t = fabric_of("torus:4x4");
    assert_eq!(
        routing::updn::find_roots(&input(&t, 0), &[]).unwrap().len(),
        1
    );
}
