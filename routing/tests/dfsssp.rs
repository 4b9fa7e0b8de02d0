//! dfsssp: balanced shortest paths layered onto VLs, deadlock-free on any topology (the
//! layered check of route_with_chain passes), as balanced as min-hop on random fabrics, the
//! same for any shard count and executor, refused with ROUTE-E-LAYERS when the layers do not
//! suffice.

mod common;

use common::{assert_complete, fabric_of, input, walk};
use fabric::DegradedSpec;
use routing::{
    ChainOutcome, EngineOptions, Executor, RoutingError, RoutingInput, Sequential,
    assign_lids_sequential, metrics, route_with_chain,
};
use runner::Threads;

fn degraded(spec: &str) -> RoutingInput {
    let d: DegradedSpec = spec.parse().unwrap();
    let t = d.generate().unwrap();
    let lids = assign_lids_sequential(&t, 0).unwrap();
    RoutingInput::new(&t, &lids, None).unwrap()
}

fn chain<X: Executor>(
    inp: &RoutingInput,
    engine: &str,
    opts: &EngineOptions,
    exec: &X,
    shards: usize,
) -> Result<ChainOutcome, RoutingError> {
    route_with_chain(inp, &[engine], opts, exec, shards, None)
}

/// Routes with dfsssp through the checked chain and asserts: accepted, acyclic per VL with
/// switch LIDs, at most 8 VLs, every pair delivered, paths minimal, a PathSl for every pair
/// whose SLs are exactly the VLs the check found.
fn checked(inp: &RoutingInput, what: &str) -> (ChainOutcome, metrics::Metrics) {
    let out = chain(inp, "dfsssp", &EngineOptions::default(), &Sequential, 3)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(out.routing.engine, "dfsssp");
    assert!(out.cdg.acyclic(), "{what}: {:?}", out.cdg.first_cycle());
    assert!(out.cdg.switch_lids_included);
    assert!(
        out.cdg.vls_used.len() <= 8,
        "{what}: {:?}",
        out.cdg.vls_used
    );
    match out.routing.path_sl.as_ref() {
        Some(sl) => {
            assert!(out.routing.sl2vl.is_some());
            let sls: Vec<u8> = sl.sls().into_iter().collect();
            assert_eq!(sls, out.cdg.vls_used, "{what}: SL n on VL n");
            assert!(sls.len() > 1, "{what}: SLs only when layers are needed");
        }
        None => {
            assert!(out.routing.sl2vl.is_none());
            assert_eq!(out.cdg.vls_used, vec![0], "{what}: one layer, SL free");
        }
    }
    let m = assert_complete(inp, &out.routing.lfts, what);
    assert_eq!(m.dead_ends_to_switches, 0, "{what}");
    // Every switch reaches every LID of a switch with end ports in exactly its shortest hop
    // count; switches without end ports (management traffic only) are reached up*down*,
    // possibly in more hops.
    let hosts = inp.end_ports_per_switch();
    for (lid, d) in inp.dests().iter().enumerate() {
        if lid == 0 || !d.is_used() {
            continue;
        }
        let t = d.switch as usize;
        for x in 0..inp.num_switches() {
            let h = walk(inp, &out.routing.lfts, x, lid as u16);
            let shortest = out.routing.hops.hops(x, t).map(u32::from);
            if hosts[t] > 0 {
                assert_eq!(h, shortest, "{what}: switch {x} to LID {lid}");
            } else {
                assert!(
                    h.is_some() && h >= shortest,
                    "{what}: switch {x} to LID {lid}"
                );
            }
        }
    }
    (out, m)
}

#[test]
fn random_fabric_is_acyclic_within_8_vls_and_no_busier_than_minhop() {
    for spec in [
        "random:64:seed=3:radix=16:links=8:hosts=4",
        "random:48:seed=1:radix=12:links=6",
    ] {
        let inp = input(&fabric_of(spec), 0);
        let (out, m) = checked(&inp, spec);
        let minhop = chain(
            &inp,
            "minhop",
            &EngineOptions {
                accept_credit_loops: true,
                ..EngineOptions::default()
            },
            &Sequential,
            1,
        )
        .unwrap();
        let mh = common::metrics_of(&inp, &minhop.routing.lfts);
        assert!(
            m.all_to_all.max_link_load <= mh.all_to_all.max_link_load,
            "{spec}: dfsssp {} > minhop {}",
            m.all_to_all.max_link_load,
            mh.all_to_all.max_link_load
        );
        assert!(
            out.cdg.vls_used.len() > 1,
            "{spec}: a random graph needs layers"
        );
    }
}

#[test]
fn torus_is_acyclic_within_8_vls() {
    // (A full torus:6x6x6:hosts=4 takes 8 layers; its figures are in the bench.)
    for spec in ["torus:5x5x4:hosts=2", "torus:6x6:hosts=2"] {
        let inp = input(&fabric_of(spec), 0);
        let (out, _) = checked(&inp, spec);
        assert!(out.cdg.vls_used.len() >= 2, "{spec}: a torus needs layers");
    }
}

#[test]
fn fat_trees_degraded_or_not_use_one_layer_or_more_and_stay_acyclic() {
    for spec in ["ft2:36:remove=3:seed=1", "ft3:12:pods=4:remove=3%:seed=2"] {
        let inp = degraded(spec);
        checked(&inp, spec);
    }
    let inp = input(&fabric_of("ft3:8"), 0);
    let (out, _) = checked(&inp, "ft3:8");
    assert_eq!(
        out.cdg.vls_used,
        vec![0],
        "a complete fat tree needs one layer"
    );
    assert!(
        out.routing.path_sl.is_none() && out.routing.sl2vl.is_none(),
        "one layer: no SL or VL table of its own (the SA and the QoS tables stay free)"
    );
}

#[test]
fn results_are_identical_for_any_shard_count_and_executor() {
    for spec in ["random:40:seed=2:radix=16:links=8", "torus:6x6:hosts=2"] {
        let inp = input(&fabric_of(spec), 0);
        let opts = EngineOptions::default();
        let base = chain(&inp, "dfsssp", &opts, &Sequential, 1).unwrap();
        for shards in [3, 7] {
            for threads in [false, true] {
                let r = if threads {
                    chain(&inp, "dfsssp", &opts, &Threads(3), shards).unwrap()
                } else {
                    chain(&inp, "dfsssp", &opts, &Sequential, shards).unwrap()
                };
                let what = format!("{spec} shards={shards} threads={threads}");
                assert_eq!(r.routing.lfts, base.routing.lfts, "{what}");
                assert_eq!(r.routing.path_sl, base.routing.path_sl, "{what}");
                assert_eq!(r.routing.hops, base.routing.hops, "{what}");
                assert_eq!(r.cdg, base.cdg, "{what}");
            }
        }
    }
}

#[test]
fn too_few_layers_are_refused_with_a_stable_code() {
    let inp = input(&fabric_of("torus:5x5"), 0);
    let opts = EngineOptions {
        max_layers: 1,
        ..EngineOptions::default()
    };
    let err = chain(&inp, "dfsssp", &opts, &Sequential, 2).unwrap_err();
    let RoutingError::AllRefused(refusals) = err else {
        panic!("{err}")
    };
    let reason = &refusals[0].reason;
    assert_eq!(reason.code(), "ROUTE-E-LAYERS");
    let RoutingError::TooManyLayers {
        needed, allowed, ..
    } = reason
    else {
        panic!("{reason}")
    };
    assert_eq!(*allowed, 1);
    assert!(*needed >= 2, "{reason}");
    let text = reason.to_string();
    assert!(text.starts_with("ROUTE-E-LAYERS: dfsssp needs"), "{text}");
    // A chain moves on to up/down.
    let out = route_with_chain(&inp, &["dfsssp", "updn"], &opts, &Sequential, 2, None).unwrap();
    assert_eq!(out.routing.engine, "updn");
    assert_eq!(out.refusals[0].reason.code(), "ROUTE-E-LAYERS");
}

#[test]
fn dfsssp_is_known_by_name() {
    assert_eq!(
        routing::engine_by_name("dfsssp", &EngineOptions::default())
            .unwrap()
            .name(),
        "dfsssp"
    );
    let err = routing::engine_by_name("sssp", &EngineOptions::default()).err();
    let text = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(text.contains("dfsssp"), "{text}");
}

#[test]
fn lmc_and_switch_only_destinations_are_routed_and_acyclic() {
    // Two LIDs per end port; a fat tree's spines and cores have no end ports (up*down*).
    for spec in [
        "random:24:seed=1:radix=12:links=6",
        "torus:4x4:hosts=2",
        "ft3:8",
    ] {
        let inp = input(&fabric_of(spec), 1);
        checked(&inp, &format!("{spec} lmc=1"));
    }
}

/// The same fabric discovered in another order (a new master discovers from its own port)
/// gets the same tables and the same SL per switch pair: a takeover writes nothing.
#[test]
fn the_same_fabric_in_another_node_order_routes_the_same() {
    use fabric::{PortRef, Topology};
    use routing::LidAssignment;
    let t = fabric_of("random:24:seed=3:radix=12:links=8:hosts=2");
    // The net file's node blocks in reverse order: every node id changes.
    let text = fabric::netfile::write(&t).unwrap();
    let blocks: Vec<&str> = text
        .split("\n\n")
        .filter(|b| !b.trim().is_empty())
        .collect();
    let reversed: Vec<&str> = blocks.iter().rev().copied().collect();
    let r = fabric::netfile::parse(&(reversed.join("\n\n") + "\n")).unwrap();
    // The same LIDs, by port GUID.
    let lids_a = assign_lids_sequential(&t, 0).unwrap();
    let guid_of = |t: &Topology, p: PortRef| {
        let n = t.node(p.node);
        if n.is_switch() {
            n.node_guid
        } else {
            n.ports[p.port.0 as usize].guid
        }
    };
    let by_guid: std::collections::HashMap<_, _> =
        lids_a.iter().map(|(p, l)| (guid_of(&t, p), l)).collect();
    let mut lids_b = LidAssignment::new();
    for (id, n) in r.nodes() {
        for p in 0..n.ports.len() as u8 {
            let pr = PortRef::new(id, p);
            if let Some(l) = by_guid
                .get(&guid_of(&r, pr))
                .filter(|_| n.is_switch() == (p == 0))
            {
                lids_b.set(pr, l.base, l.lmc).unwrap();
            }
        }
    }
    let a = RoutingInput::new(&t, &lids_a, None).unwrap();
    let b = RoutingInput::new(&r, &lids_b, None).unwrap();
    assert_ne!(
        a.switches.iter().map(|s| s.guid).collect::<Vec<_>>(),
        b.switches.iter().map(|s| s.guid).collect::<Vec<_>>(),
        "the switches are in another order"
    );
    let (oa, ob) = (checked(&a, "a").0, checked(&b, "b").0);
    let sl_a = oa.routing.path_sl.expect("layers");
    let sl_b = ob.routing.path_sl.expect("layers");
    for sa in &oa.routing.lfts.switches {
        let sb = ob
            .routing
            .lfts
            .switches
            .iter()
            .find(|s| s.guid == sa.guid)
            .unwrap();
        assert_eq!(sa.ports, sb.ports, "switch {}", sa.guid);
        for sc in &oa.routing.lfts.switches {
            assert_eq!(sl_a.get(sa.guid, sc.guid), sl_b.get(sa.guid, sc.guid));
        }
    }
}
