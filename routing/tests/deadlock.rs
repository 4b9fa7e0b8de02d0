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
}
