//! torus-2QoS: recognition from the switch graph, dimension-order routes with datelines
//! (acyclic on two VLs), balance, a failed link, refusals and shard independence.

mod common;

use common::{assert_complete, metrics_of, walk};
use fabric::{DegradedSpec, PortRef, Topology};
use routing::lft::Lfts;
use routing::torus::{Shape, recognise};
use routing::{
    EngineOptions, Peer, Routing, RoutingError, RoutingInput, Sequential, assign_lids_sequential,
    route_on, route_with_chain,
};

fn topo(spec: &str) -> Topology {
    let d: DegradedSpec = spec.parse().unwrap();
    d.generate().unwrap()
}

fn input_of(t: &Topology) -> RoutingInput {
    let lids = assign_lids_sequential(t, 0).unwrap();
    RoutingInput::new(t, &lids, None).unwrap()
}

/// Independent check of a recognised shape: coordinates are a bijection onto the grid and
/// every link joins positions ±1 (mod k when wrapped) apart in exactly one dimension.
fn check_shape(input: &RoutingInput, shape: &Shape) {
    let n = input.num_switches();
    let mut seen = std::collections::BTreeSet::new();
    for s in 0..n {
        assert!(seen.insert(shape.coords(s).to_vec()), "duplicate position");
        assert_eq!(shape.switch_at(shape.coords(s)), s);
        for peer in input.ports(s) {
            let Peer::Switch { sw, .. } = *peer else {
                continue;
            };
            let (a, b) = (shape.coords(s), shape.coords(sw as usize));
            let diffs: Vec<usize> = (0..shape.dims()).filter(|&d| a[d] != b[d]).collect();
            assert_eq!(diffs.len(), 1, "{a:?} {b:?}");
            let d = diffs[0];
            let k = shape.sizes[d];
            let delta = (b[d] + k - a[d]) % k;
            if shape.wrapped[d] {
                assert!(delta == 1 || delta == k - 1, "{a:?} {b:?}");
            } else {
                assert_eq!(a[d].abs_diff(b[d]), 1, "{a:?} {b:?}");
            }
        }
    }
    let positions: usize = shape.sizes.iter().map(|&k| k as usize).product();
    assert_eq!(positions, n);
}

/// A mesh: the torus generator's fabric without its wrap-around links (coordinates are in
/// the switch descriptions, `torus x,y,..`).
fn mesh(spec: &str) -> Topology {
    let mut t = topo(spec);
    let coords = |t: &Topology, p: PortRef| -> Vec<i32> {
        t.node(p.node)
            .description
            .trim_start_matches("torus ")
            .split(',')
            .map(|c| c.parse().unwrap())
            .collect()
    };
    let wraps: Vec<PortRef> = t
        .links()
        .filter(|(a, b)| t.node(a.node).is_switch() && t.node(b.node).is_switch())
        .filter(|(a, b)| {
            let (ca, cb) = (coords(&t, *a), coords(&t, *b));
            ca.iter().zip(&cb).any(|(x, y)| (x - y).abs() > 1)
        })
        .map(|(a, _)| a)
        .collect();
    for p in wraps {
        t.disconnect(p);
    }
    t
}

fn torus_route(input: &RoutingInput, shards: usize) -> Routing {
    let out = route_with_chain(
        input,
        &["torus-2QoS"],
        &EngineOptions::default(),
        &Sequential,
        shards,
        None,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.routing.engine, "torus-2QoS");
    assert!(out.cdg.acyclic(), "{:?}", out.cdg);
    out.routing
}

#[test]
fn recognises_tori_rings_and_meshes() {
    for (spec, sizes) in [
        ("torus:6x6x6:hosts=4", vec![6, 6, 6]),
        ("torus:4x4x4", vec![4, 4, 4]),
        ("torus:5x5", vec![5, 5]),
        ("torus:3x3x3", vec![3, 3, 3]),
        ("torus:7", vec![7]),
        ("torus:4", vec![4]),
        ("torus:3x5x4", vec![3, 4, 5]),
    ] {
        let input = input_of(&topo(spec));
        let shape = recognise(&input).unwrap_or_else(|e| panic!("{spec}: {e}"));
        check_shape(&input, &shape);
        let mut got = shape.sizes.clone();
        got.sort();
        assert_eq!(got, sizes, "{spec}");
        assert!(shape.wrapped.iter().all(|&w| w), "{spec}");
        assert!(shape.missing_links().is_empty(), "{spec}");
    }
    for (spec, sizes) in [("torus:5x4", vec![4, 5]), ("torus:4x3x3", vec![3, 3, 4])] {
        let input = input_of(&mesh(spec));
        let shape = recognise(&input).unwrap_or_else(|e| panic!("mesh {spec}: {e}"));
        check_shape(&input, &shape);
        let mut got = shape.sizes.clone();
        got.sort();
        assert_eq!(got, sizes, "mesh {spec}");
        assert!(shape.wrapped.iter().all(|&w| !w), "mesh {spec}");
    }
}

#[test]
fn dimension_order_is_acyclic_on_two_vls_and_complete() {
    for spec in [
        "torus:4x4x4",
        "torus:5x5:hosts=2",
        "torus:3x3x3",
        "torus:6x4",
        "torus:7",
    ] {
        let input = input_of(&topo(spec));
        let out = route_with_chain(
            &input,
            &["torus-2QoS"],
            &EngineOptions::default(),
            &Sequential,
            3,
            None,
        )
        .unwrap_or_else(|e| panic!("{spec}: {e}"));
        assert!(out.cdg.acyclic(), "{spec}: {:?}", out.cdg);
        assert_eq!(out.cdg.vls_used, vec![0, 1], "{spec}");
        let r = &out.routing;
        let dims = recognise(&input).unwrap().dims();
        let sls = r.path_sl.as_ref().unwrap().sls();
        assert!(sls.iter().all(|&s| (s as usize) < 1 << dims), "{spec}");
        assert_eq!(r.sl2vl.as_ref().unwrap().max_vl(&sls), 1, "{spec}");
        let m = assert_complete(&input, &r.lfts, spec);
        assert_eq!(m.dead_ends_to_switches, 0, "{spec}");
    }
    // A mesh needs no dateline: one VL.
    let input = input_of(&mesh("torus:5x4"));
    let r = torus_route(&input, 2);
    assert_eq!(r.path_sl.as_ref().unwrap().sls(), [0].into());
    assert_complete(&input, &r.lfts, "mesh 5x4");
}

/// Busiest all-to-all link: DOR on a k-ary torus (k even, ties `+`) loads a `+` channel
/// with 6 * h^2 * k^(n-1) pairs for k = 6 (OpenSM's dor: 3,456 on 6x6x6 with 4 hosts);
/// min-hop does worse.
#[test]
fn busiest_all_to_all_link_matches_dimension_order() {
    let input = input_of(&topo("torus:6x6:hosts=2"));
    let r = torus_route(&input, 1);
    let m = metrics_of(&input, &r.lfts);
    assert_eq!(m.all_to_all.max_link_load, 6 * 4 * 6);
    let minhop = routing::route(
        &input,
        routing::engine_by_name("minhop", &Default::default())
            .unwrap()
            .as_ref(),
    )
    .unwrap();
    let mm = metrics_of(&input, &minhop.lfts);
    assert!(m.all_to_all.max_link_load <= mm.all_to_all.max_link_load);
}

/// The switch pairs (index) whose route in `lfts` crosses the link between switches
/// `a` and `b`, and the (switch, LID) entries whose walk does.
fn users(input: &RoutingInput, lfts: &Lfts, a: usize, b: usize) -> Vec<(usize, u16)> {
    let mut out = Vec::new();
    for (lid, d) in input.dests().iter().enumerate() {
        if lid == 0 || !d.is_used() {
            continue;
        }
        for s in 0..input.num_switches() {
            let mut x = s;
            for _ in 0..=input.num_switches() {
                let p = lfts.switches[x].port(lid as u16);
                let Some(Peer::Switch { sw, .. }) = input.ports(x).get(p as usize) else {
                    break;
                };
                let y = *sw as usize;
                if (x, y) == (a, b) || (x, y) == (b, a) {
                    out.push((s, lid as u16));
                    break;
                }
                x = y;
            }
        }
    }
    out
}

#[test]
fn a_failed_link_moves_only_the_pairs_that_used_it() {
    for (base, spec) in [
        ("torus:6x6x6:hosts=4", "torus:6x6x6:hosts=4:remove=1:seed=3"),
        ("torus:5x5x5", "torus:5x5x5:remove=1:seed=3"),
        ("torus:6x6:hosts=2", "torus:6x6:hosts=2:remove=1:seed=1"),
        ("torus:4x4x4", "torus:4x4x4:remove=1:seed=2"),
        ("torus:3x3x3", "torus:3x3x3:remove=1:seed=1"),
        ("torus:7", "torus:7:remove=1:seed=3"),
    ] {
        // A 1-D ring that lost a link is a line (nothing tells them apart): routed as a
        // mesh, on SL 0, so only its LFT entries are compared.
        let one_d = !base.contains('x');
        let full = input_of(&topo(base));
        let t = topo(spec);
        let broken = input_of(&t);
        let before = torus_route(&full, 1);
        let after = torus_route(&broken, 2);
        assert_complete(&broken, &after.lfts, spec);
        // The removed link, by switch index (same node order in both).
        let mut gone = None;
        for s in 0..full.num_switches() {
            for (p, peer) in full.ports(s).iter().enumerate() {
                if let Peer::Switch { sw, .. } = *peer
                    && broken.ports(s)[p] == Peer::None
                {
                    gone = Some((s, sw as usize));
                }
            }
        }
        let (a, b) = gone.expect("a link was removed");
        let used = users(&full, &before.lfts, a, b);
        let used_set: std::collections::HashSet<_> = used.iter().copied().collect();
        assert!(!used.is_empty(), "{spec}");
        let (sl0, sl1) = (
            before.path_sl.as_ref().unwrap(),
            after.path_sl.as_ref().unwrap(),
        );
        let mut changed = 0;
        for (lid, d) in full.dests().iter().enumerate() {
            if lid == 0 || !d.is_used() {
                continue;
            }
            let t_sw = d.switch as usize;
            for s in 0..full.num_switches() {
                let g = (full.switches[s].guid, full.switches[t_sw].guid);
                let same_entry = before.lfts.switches[s].port(lid as u16)
                    == after.lfts.switches[s].port(lid as u16);
                let same_sl = sl0.get(g.0, g.1) == sl1.get(g.0, g.1);
                if used_set.contains(&(s, lid as u16)) {
                    changed += 1;
                    assert!(
                        walk(&broken, &after.lfts, s, lid as u16).is_some(),
                        "{spec}"
                    );
                } else {
                    // Not on a path over the failed link: entry kept; the pair's SL too
                    // unless its path from s to t's switch LID used the link.
                    assert!(same_entry, "{spec}: switch {s} LID {lid}");
                    let t_lid = full.switches[t_sw].lid.0;
                    if !one_d && !used_set.contains(&(s, t_lid)) {
                        assert!(same_sl, "{spec}: pair {s} -> {t_sw}");
                    }
                }
            }
        }
        assert!(changed > 0, "{spec}");
        let entries = full.num_switches() * full.dests().iter().filter(|d| d.is_used()).count();
        let sl_changed = (0..full.num_switches())
            .flat_map(|s| (0..full.num_switches()).map(move |t| (s, t)))
            .filter(|&(s, t)| {
                let g = (full.switches[s].guid, full.switches[t].guid);
                sl0.get(g.0, g.1) != sl1.get(g.0, g.1)
            })
            .count();
        println!(
            "{spec}: {changed} of {entries} (switch, LID) walks used the failed link; {sl_changed} switch pairs changed SL"
        );
    }
}

/// Removes the links of switch `s` towards `+` in the ring of the generator's dimension 0
/// for two switches of the same ring.
#[test]
fn two_failed_links_in_one_ring_are_refused_and_the_chain_moves_on() {
    let mut t = topo("torus:5x5");
    // Generator wiring (hosts on port 1): dimension 0 `+` is port 2. Switches 0 and 2 share
    // the dimension-0 ring y = 0.
    let sws: Vec<_> = t.switches().map(|(id, _)| id).collect();
    t.disconnect(PortRef::new(sws[0], 2)).unwrap();
    t.disconnect(PortRef::new(sws[2], 2)).unwrap();
    let input = input_of(&t);
    let err = recognise(&input).unwrap_err();
    assert_eq!(err.code(), "ROUTE-E-TORUS-FAULTS", "{err}");
    let out = route_with_chain(
        &input,
        &["torus-2QoS", "updn"],
        &EngineOptions::default(),
        &Sequential,
        2,
        None,
    )
    .unwrap();
    assert_eq!(out.routing.engine, "updn");
    assert_eq!(out.refusals[0].reason.code(), "ROUTE-E-TORUS-FAULTS");
}

#[test]
fn a_fat_tree_is_not_a_torus() {
    for spec in ["ft2:8", "ft3:4"] {
        let input = input_of(&topo(spec));
        let out = route_with_chain(
            &input,
            &["torus-2QoS", "updn"],
            &EngineOptions::default(),
            &Sequential,
            2,
            None,
        )
        .unwrap();
        assert_eq!(out.routing.engine, "updn", "{spec}");
        let reason = &out.refusals[0].reason;
        assert_eq!(reason.code(), "ROUTE-E-NOT-TORUS", "{spec}: {reason}");
        assert!(matches!(reason, RoutingError::NotATorus { .. }));
    }
}

#[test]
fn identical_for_any_shard_count() {
    for spec in ["torus:5x4x3:hosts=2", "torus:6x6:remove=1:seed=5"] {
        let input = input_of(&topo(spec));
        let e = routing::engine_by_name("torus-2QoS", &Default::default()).unwrap();
        let one = route_on(&input, e.as_ref(), &Sequential, 1, None).unwrap();
        for shards in [3, 7] {
            for r in [
                route_on(&input, e.as_ref(), &Sequential, shards, None).unwrap(),
                route_on(&input, e.as_ref(), &runner::Threads(2), shards, None).unwrap(),
            ] {
                assert_eq!(r.lfts, one.lfts, "{spec} {shards}");
                assert_eq!(r.path_sl, one.path_sl, "{spec} {shards}");
                assert_eq!(r.sl2vl, one.sl2vl, "{spec} {shards}");
                assert_eq!(r.hops.row(0), one.hops.row(0), "{spec} {shards}");
            }
        }
    }
}

#[test]
fn parallel_links_count_once_and_share_the_load() {
    // A ring of 5 with 2 hosts per switch; host port 2 of every switch is freed and
    // switches 0-1 and 2-3 get a second link there, beside their ring links.
    let mut t = topo("torus:5:hosts=2");
    let sws: Vec<_> = t.switches().map(|(id, _)| id).collect();
    for &s in &sws {
        t.disconnect(PortRef::new(s, 2));
    }
    t.connect(PortRef::new(sws[0], 2), PortRef::new(sws[1], 2))
        .unwrap();
    t.connect(PortRef::new(sws[2], 2), PortRef::new(sws[3], 2))
        .unwrap();
    let input = input_of(&t);
    let shape = recognise(&input).unwrap();
    check_shape(&input, &shape);
    assert_eq!(shape.sizes, vec![5]);
    let r = torus_route(&input, 1);
    assert_complete(&input, &r.lfts, "parallel");
    // Switch 0 reaches the end ports of switches 1 and 2 over its two links to switch 1.
    let used: std::collections::BTreeSet<u8> = input
        .dests()
        .iter()
        .enumerate()
        .filter(|(l, d)| *l > 0 && d.is_used() && (d.switch == 1 || d.switch == 2))
        .filter(|(_, d)| d.end != u32::MAX)
        .map(|(l, _)| r.lfts.switches[0].port(l as u16))
        .collect();
    assert_eq!(used, [2, 3].into());
}

#[test]
fn failures_in_different_rings_are_routed() {
    // 4x6 seed 1: the two links lost sit on either side of one link, which is then in no
    // intact square; it is placed by coordinates.
    for spec in [
        "torus:4x6:remove=2:seed=1",
        "torus:4x4x4:remove=3:seed=0",
        "torus:5x5x5:remove=3:seed=2",
    ] {
        let input = input_of(&topo(spec));
        let shape = recognise(&input).unwrap_or_else(|e| panic!("{spec}: {e}"));
        check_shape(&input, &shape);
        assert!(shape.missing_links().len() >= 2, "{spec}");
        let r = torus_route(&input, 2);
        assert_complete(&input, &r.lfts, spec);
    }
}

#[test]
fn a_switch_without_links_is_refused_as_a_fault() {
    let mut t = topo("torus:4x4x4");
    let sw = t.switches().nth(5).unwrap().0;
    let ports: Vec<u8> = t.node(sw).port_numbers().map(|p| p.0).collect();
    for p in ports {
        if t.remote(PortRef::new(sw, p))
            .is_some_and(|r| t.node(r.node).is_switch())
        {
            t.disconnect(PortRef::new(sw, p));
        }
    }
    let err = recognise(&input_of(&t)).unwrap_err();
    assert_eq!(err.code(), "ROUTE-E-TORUS-FAULTS", "{err}");
}

#[test]
fn every_lid_of_an_lmc_port_is_routed() {
    let t = topo("torus:4x4:hosts=2");
    let input = common::input(&t, 2);
    let r = torus_route(&input, 3);
    assert_complete(&input, &r.lfts, "torus:4x4 lmc 2");
    for (lid, d) in input.dests().iter().enumerate() {
        if lid > 0 && d.is_used() {
            for s in 0..input.num_switches() {
                assert!(walk(&input, &r.lfts, s, lid as u16).is_some(), "{s} {lid}");
            }
        }
    }
}

/// A torus needs two data VLs (the dateline's); with one it is a refusal and the chain
/// moves on; a mesh (no dateline) routes on one.
#[test]
fn a_torus_with_one_vl_is_refused_and_a_mesh_routes() {
    let one = EngineOptions {
        max_layers: 1,
        ..EngineOptions::default()
    };
    let input = input_of(&topo("torus:4x4"));
    let out =
        route_with_chain(&input, &["torus-2QoS", "updn"], &one, &Sequential, 1, None).unwrap();
    assert_eq!(out.routing.engine, "updn");
    assert_eq!(out.refusals[0].reason.code(), "ROUTE-E-LAYERS");
    let input = input_of(&mesh("torus:4x4"));
    let out = route_with_chain(&input, &["torus-2QoS"], &one, &Sequential, 1, None).unwrap();
    assert_eq!(out.cdg.vls_used, vec![0]);
    assert!(out.cdg.acyclic());
}
