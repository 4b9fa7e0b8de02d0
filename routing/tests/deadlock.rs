//! Deadlock freedom: up/down and fat-tree stay within up*down* on degraded fat trees (the
//! fabrics of issue 20), every routing run is checked per VL with switch LIDs included, and
//! a cyclic routing is refused unless accepted on request.

mod common;

use common::assert_complete;
use fabric::DegradedSpec;
use routing::{
    EngineOptions, RoutingError, RoutingInput, Sequential, assign_lids_sequential, cdg,
    route_with_chain,
};

fn degraded(spec: &str) -> RoutingInput {
    let d: DegradedSpec = spec.parse().unwrap();
    let t = d.generate().unwrap();
    let lids = assign_lids_sequential(&t, 0).unwrap();
    RoutingInput::new(&t, &lids, None).unwrap()
}

/// Issue 20: on ft2:36 with 3 spine-leaf links removed, updn and ftree had credit loops:
/// the hop tables fell back to plain shortest paths (down-then-up turns) for pairs with no
/// up*down* path (a spine towards a leaf it lost its link to, spine to spine).
#[test]
fn updn_and_ftree_are_acyclic_on_degraded_ft2_36() {
    for seed in 1..=4 {
        let spec = format!("ft2:36:remove=3:seed={seed}");
        let input = degraded(&spec);
        for engine in ["updn", "ftree"] {
            let out = route_with_chain(
                &input,
                &[engine],
                &EngineOptions::default(),
                &Sequential,
                3,
                None,
            )
            .unwrap_or_else(|e| panic!("{spec} {engine}: {e}"));
            assert_eq!(out.routing.engine, engine, "{spec}");
            assert!(out.cdg.acyclic(), "{spec} {engine}: {:?}", out.cdg);
            assert!(out.cdg.switch_lids_included);
            assert_eq!(out.cdg.vls_used, vec![0]);
            let m = assert_complete(&input, &out.routing.lfts, &format!("{spec} {engine}"));
            // Every walk delivers, switch LIDs included (no pair left without a route).
            assert_eq!(m.dead_ends_to_switches, 0, "{spec} {engine}");
            assert!(!m.cdg.has_cycle, "{spec} {engine}");
        }
    }
}

#[test]
fn degraded_ft3_is_acyclic_and_complete() {
    let spec = "ft3:12:pods=4:remove=3%:seed=2";
    let input = degraded(spec);
    for engine in ["updn", "ftree"] {
        let out = route_with_chain(
            &input,
            &[engine],
            &EngineOptions::default(),
            &Sequential,
            2,
            None,
        )
        .unwrap_or_else(|e| panic!("{spec} {engine}: {e}"));
        assert!(out.cdg.acyclic(), "{spec} {engine}");
        assert_complete(&input, &out.routing.lfts, engine);
    }
}

#[test]
fn a_cyclic_routing_is_refused_by_default_and_kept_on_request() {
    // Min-hop on a torus has credit loops.
    let input = degraded("torus:4x4");
    let err = route_with_chain(
        &input,
        &["minhop"],
        &EngineOptions::default(),
        &Sequential,
        1,
        None,
    )
    .unwrap_err();
    let RoutingError::AllRefused(refusals) = err else {
        panic!("{err}")
    };
    assert_eq!(refusals[0].reason.code(), "ROUTE-E-CDG");
    assert!(refusals[0].reason.to_string().starts_with("ROUTE-E-CDG"));
    // The chain moves on to an engine without loops.
    let out = route_with_chain(
        &input,
        &["minhop", "updn"],
        &EngineOptions::default(),
        &Sequential,
        1,
        None,
    )
    .unwrap();
    assert_eq!(out.routing.engine, "updn");
    assert_eq!(out.refusals[0].reason.code(), "ROUTE-E-CDG");
    assert!(out.warnings.is_empty() && out.cdg.acyclic());
    // Accepted on request, with a warning and the cycle in the report.
    let opts = EngineOptions {
        accept_credit_loops: true,
        ..EngineOptions::default()
    };
    let out = route_with_chain(&input, &["minhop"], &opts, &Sequential, 1, None).unwrap();
    assert_eq!(out.routing.engine, "minhop");
    assert!(
        out.warnings[0].starts_with("ROUTE-W-CDG"),
        "{:?}",
        out.warnings
    );
    let v = out.cdg.first_cycle().unwrap();
    assert!(v.cycle.len() >= 2, "{v:?}");
    assert_eq!(
        cdg::check(&input, &out.routing.lfts, &Default::default()),
        out.cdg
    );
    // The one-VL graph built in jobs over switch ranges is the same graph.
    for shards in [2, 5, 16] {
        assert_eq!(
            cdg::check_on(
                &input,
                &out.routing.lfts,
                &Default::default(),
                &runner::Threads(3),
                shards
            ),
            out.cdg
        );
    }
}

/// The layered check: a ring of 5 switches routed the short way round has a credit loop on
/// one VL; with paths that cross a dateline on SL 1 (SL n on VL n) it has none, and a cycle
/// is found again when the dateline paths' tables send SL 1 back to VL 0.
#[test]
fn layered_paths_follow_their_sl_to_vl_tables() {
    use routing::lft::{Lfts, NO_ROUTE, SwitchLft};
    use routing::{EngineSl2Vl, PathSl, Peer};
    use std::sync::Arc;
    let input = degraded("torus:5");
    let n = input.num_switches();
    assert_eq!(n, 5);
    // Ring order from switch 0, and the port towards the next / previous switch.
    let port_to = |s: usize, t: usize| {
        input
            .ports(s)
            .iter()
            .position(|p| matches!(p, Peer::Switch { sw, .. } if *sw as usize == t))
    };
    let mut ring = vec![0usize];
    while ring.len() < n {
        let cur = *ring.last().unwrap();
        let next = input
            .neighbours(cur)
            .iter()
            .map(|&m| m as usize)
            .find(|m| !ring.contains(m))
            .unwrap();
        ring.push(next);
    }
    let pos: Vec<usize> = (0..n)
        .map(|s| ring.iter().position(|&r| r == s).unwrap())
        .collect();
    let dests = input.dests();
    let mut lfts = Lfts {
        switches: Vec::new(),
    };
    for s in 0..n {
        let mut ports = vec![NO_ROUTE; dests.len()];
        for (lid, d) in dests.iter().enumerate() {
            if !d.is_used() || lid == 0 {
                continue;
            }
            let t = d.switch as usize;
            ports[lid] = if t == s {
                d.port
            } else {
                let fwd = (pos[t] + n - pos[s]) % n;
                let next = if fwd <= n / 2 {
                    ring[(pos[s] + 1) % n]
                } else {
                    ring[(pos[s] + n - 1) % n]
                };
                port_to(s, next).unwrap() as u8
            };
        }
        lfts.switches.push(SwitchLft {
            guid: input.switches[s].guid,
            lid: input.switches[s].lid,
            ports,
        });
    }
    let single = cdg::check(&input, &lfts, &Default::default());
    assert!(
        !single.acyclic(),
        "the short way round a ring is a loop on one VL"
    );
    // Dateline between ring positions n-1 and 0: a path crossing it is on SL 1.
    let guids: Vec<_> = input.switches.iter().map(|s| s.guid).collect();
    let mut sl = PathSl::new(&guids);
    for x in 0..n {
        for t in 0..n {
            let fwd = (pos[t] + n - pos[x]) % n;
            let crosses = if fwd <= n / 2 {
                pos[t] < pos[x]
            } else {
                pos[t] > pos[x]
            };
            sl.set(guids[x], guids[t], u8::from(crosses));
        }
    }
    let sl = Arc::new(sl);
    let layered = cdg::PathVls::Layered {
        sl: sl.clone(),
        sl2vl: Arc::new(EngineSl2Vl::identity()),
    };
    let rep = cdg::check(&input, &lfts, &layered);
    assert!(rep.acyclic(), "{rep:?}");
    assert_eq!(rep.vls_used, vec![0, 1]);
    assert!(rep.per_vl.iter().all(|v| v.dependencies > 0), "{rep:?}");
    // Tables that put SL 1 on VL 0 everywhere bring the loop back.
    let mut squash = EngineSl2Vl::identity();
    squash.default[1] = 0;
    let rep = cdg::check(
        &input,
        &lfts,
        &cdg::PathVls::Layered {
            sl,
            sl2vl: Arc::new(squash),
        },
    );
    assert_eq!(rep.vls_used, vec![0]);
    assert!(!rep.acyclic());
    assert!(rep.per_vl[0].cycle[0].ends_with("@VL0"), "{rep:?}");
}

/// Issue 20: the fat-tree engine on ft2:36 with 3 spine-leaf links removed keeps the
/// busiest all-to-all link within 1.1x the cut lower bound (it was 1,260 against 667: one
/// root per destination put two of a degraded leaf's hosts behind one spine for every
/// source), and reaches the bound on the complete tree.
#[test]
fn ftree_on_degraded_ft2_36_stays_near_the_lower_bound() {
    // ftree through the checked chain on `spec`: the all-to-all metrics (one shift).
    let measured = |spec: &str| {
        use routing::metrics::{self, MetricsOptions};
        let input = degraded(spec);
        let r = route_with_chain(
            &input,
            &["ftree"],
            &EngineOptions::default(),
            &Sequential,
            3,
            None,
        )
        .unwrap_or_else(|e| panic!("{spec}: {e}"));
        let opts = MetricsOptions {
            shifts: Some(vec![1]),
            ..MetricsOptions::default()
        };
        let m = metrics::analyze(&input, &r.routing.lfts, &opts);
        let (busiest, bound) = (
            m.all_to_all.max_link_load,
            m.all_to_all.lower_bound.unwrap(),
        );
        eprintln!("{spec}: busiest {busiest}, bound {bound}");
        assert!(!m.cdg.has_cycle && m.unreachable_pairs == 0, "{spec}");
        (busiest, bound)
    };
    assert_eq!(measured("ft2:36"), (630, 630));
    // Two levels, then three with links removed at both levels (ft3:36 with 6 pods is in
    // the docs: 2,052 against 2,040 on seed 1).
    let degraded_specs = (1..=4)
        .map(|seed| format!("ft2:36:remove=3:seed={seed}"))
        .chain((1..=2).map(|seed| format!("ft3:12:pods=6:remove=3%:seed={seed}")));
    for spec in degraded_specs {
        let (busiest, bound) = measured(&spec);
        if spec.starts_with("ft2") {
            assert!(bound >= 667, "{spec}: bound {bound}");
        }
        assert!(
            busiest * 10 <= bound * 11,
            "{spec}: busiest {busiest} > 1.1 x {bound}"
        );
    }
}

/// The host-traffic graph (`cdg::check_hosts_only`, OpenSM's dfsssp/nue model): min-hop on
/// a degraded fat tree is cyclic only through switch LIDs (spine to spine through a leaf),
/// so the host graph is acyclic; on a torus host traffic alone closes the rings.
#[test]
fn hosts_only_graph_leaves_switch_lids_out() {
    let opts = EngineOptions {
        accept_credit_loops: true,
        ..EngineOptions::default()
    };
    let input = degraded("ft2:36:remove=3:seed=1");
    let out = route_with_chain(&input, &["minhop"], &opts, &Sequential, 1, None).unwrap();
    assert!(!out.cdg.acyclic(), "{:?}", out.cdg);
    let h = cdg::check_hosts_only(&input, &out.routing.lfts);
    assert!(h.acyclic, "{h:?}");
    assert!(h.dependencies > 0 && h.dependencies < out.cdg.per_vl[0].dependencies);
    assert_eq!(h.channels, out.cdg.per_vl[0].channels);
    let input = degraded("torus:4x4");
    let out = route_with_chain(&input, &["minhop"], &opts, &Sequential, 1, None).unwrap();
    let h = cdg::check_hosts_only(&input, &out.routing.lfts);
    assert!(!h.acyclic && h.cycle.len() >= 2, "{h:?}");
    // The metrics carry it next to the full check.
    let m = routing::metrics::analyze(&input, &out.routing.lfts, &Default::default());
    assert_eq!(m.cdg.hosts_only, h);
}

/// Every pair on one SL with one VL for it everywhere: the layered check is the single-VL
/// check of that VL (same graph, cycles named with their VL).
#[test]
fn a_uniform_layering_is_checked_as_its_single_vl() {
    use routing::{EngineSl2Vl, PathSl};
    use std::sync::Arc;
    let input = degraded("torus:4x4");
    let out = route_with_chain(
        &input,
        &["minhop"],
        &EngineOptions {
            accept_credit_loops: true,
            ..EngineOptions::default()
        },
        &Sequential,
        1,
        None,
    )
    .unwrap();
    let guids: Vec<_> = input.switches.iter().map(|s| s.guid).collect();
    let mut sl = PathSl::new(&guids);
    for &x in &guids {
        for &t in &guids {
            sl.set(x, t, 2);
        }
    }
    let single = cdg::check(&input, &out.routing.lfts, &cdg::PathVls::Single(2));
    let layered = cdg::check(
        &input,
        &out.routing.lfts,
        &cdg::PathVls::Layered {
            sl: Arc::new(sl),
            sl2vl: Arc::new(EngineSl2Vl::identity()),
        },
    );
    assert_eq!(layered.vls_used, vec![2]);
    assert!(!layered.acyclic());
    assert_eq!(
        layered.per_vl[0].dependencies,
        single.per_vl[0].dependencies
    );
    assert!(layered.per_vl[0].cycle[0].ends_with("@VL2"), "{layered:?}");
}
