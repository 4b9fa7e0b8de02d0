//! Routing engines that need virtual lanes (torus-2QoS's datelines, dfsssp's layers) on
//! fabric-sim: their SLtoVL tables are programmed with QoS off, every data packet rides the
//! VLs those tables give hop by hop, the dependency graph of the VLs the simulator actually
//! applies is acyclic, and a quiet heavy sweep writes no VL table again.

mod common;

use common::{Harness, count_sets_of, topo};

use sm_core::{Event, SweeperConfig, VTime};
use std::collections::{HashMap, HashSet};

const SL2VL: u16 = 0x17;
const VLARB: u16 = 0x18;
const MS: VTime = 1_000_000;

fn cfg(engine: &str) -> SweeperConfig {
    SweeperConfig {
        sweep_interval: 60_000 * MS,
        engines: vec![engine.into()],
        ..SweeperConfig::default()
    }
}

/// A channel on a VL: (sending node GUID, output port, VL).
type VlChannel = (fabric::Guid, u8, u8);
/// Channel dependencies: a channel -> the channels used right after it.
type Deps<V> = HashMap<V, HashSet<V>>;

/// True when the graph (vertex -> successors) has a cycle.
fn has_cycle<V: Copy + Eq + std::hash::Hash>(g: &Deps<V>) -> bool {
    let mut state: HashMap<V, u8> = HashMap::new();
    for &start in g.keys() {
        if state.contains_key(&start) {
            continue;
        }
        let mut stack = vec![(start, g[&start].iter().copied().collect::<Vec<_>>())];
        state.insert(start, 1);
        while let Some((v, rest)) = stack.last_mut() {
            match rest.pop() {
                None => {
                    state.insert(*v, 2);
                    stack.pop();
                }
                Some(w) => match state.get(&w) {
                    Some(1) => return true,
                    Some(_) => {}
                    None => {
                        state.insert(w, 1);
                        let next = g
                            .get(&w)
                            .map(|s| s.iter().copied().collect())
                            .unwrap_or_default();
                        stack.push((w, next));
                    }
                },
            }
        }
    }
    false
}

#[test]
fn torus_2qos_datelines_are_programmed_and_followed() {
    programmed_and_followed("torus:4x4x4", "torus-2QoS");
}

#[test]
fn dfsssp_layers_are_programmed_and_followed() {
    programmed_and_followed("random:24:seed=3:radix=12:links=8:hosts=2", "dfsssp");
}

/// `engine` on `spec`: its SLtoVL tables written with QoS off, every CA pair's packets on
/// the pair's SL riding the engine's VL on every hop (and some off VL 0), the simulator's
/// (channel, VL) dependency graph acyclic while the same routes on one VL are not, and a
/// quiet heavy sweep writing no VL table.
fn programmed_and_followed(spec: &str, engine: &str) {
    let t = topo(spec);
    let mut h = Harness::new(&t, cfg(engine), 11);
    h.subnet_up();
    h.settle(5_000 * MS);
    let log = h.fab.take_set_log();
    assert!(
        count_sets_of(&log, SL2VL) > 0,
        "the engine's SLtoVL tables are written with QoS off"
    );
    assert!(
        count_sets_of(&log, VLARB) > 0,
        "VLArb serves the engine's VLs"
    );
    let sl2vl =
        h.sw.routing_sl2vl()
            .expect("torus-2QoS brings SLtoVL tables")
            .clone();
    let path_sl = h.sw.path_sl().expect("and an SL per switch pair");
    let cas = common::ca_ports(&t);
    // (node GUID, output port, VL) -> the next ones, over switch-to-switch hops.
    let mut deps: Deps<VlChannel> = HashMap::new();
    let mut one_vl: Deps<(fabric::Guid, u8)> = HashMap::new();
    let mut vl1 = 0;
    for a in &cas {
        for b in &cas {
            if a == b {
                continue;
            }
            let (la, lb) = (h.lid_of(a.0, a.1), h.lid_of(b.0, b.1));
            // The SL the SA gives this pair: its switches' (first and last sender after the CA).
            let probe = h.fab.vl_path(la, lb, 0).expect("a path");
            let (src_sw, dst_sw) = (probe[1].node_guid, probe[probe.len() - 1].node_guid);
            let sl = path_sl.get(src_sw, dst_sw).expect("both switches known");
            let hops = h.fab.vl_path(la, lb, sl).expect("delivered on its SL");
            assert_eq!(hops.len(), probe.len(), "the SL does not change the route");
            let sw_hops: Vec<_> = hops[1..hops.len() - 1].to_vec();
            for x in &sw_hops {
                assert_eq!(
                    x.vl,
                    sl2vl.table(x.node_guid, x.port)[sl as usize],
                    "hop {x:?} on SL {sl} rides the engine's VL"
                );
                vl1 += usize::from(x.vl > 0);
            }
            for w in sw_hops.windows(2) {
                one_vl
                    .entry((w[0].node_guid, w[0].port))
                    .or_default()
                    .insert((w[1].node_guid, w[1].port));
                deps.entry((w[0].node_guid, w[0].port, w[0].vl))
                    .or_default()
                    .insert((w[1].node_guid, w[1].port, w[1].vl));
            }
        }
    }
    assert!(
        vl1 > 0,
        "{engine}: some paths ride a VL above 0 (a dateline, a layer)"
    );
    assert!(!deps.is_empty());
    assert!(
        !has_cycle(&deps),
        "the VLs the simulator applies leave no credit loop"
    );
    // A quiet heavy sweep writes no VL table.
    h.sw.request_sweep(h.now, true);
    assert!(h.run_until(60_000 * MS, |e| matches!(
        e,
        Event::HeavySweepComplete { .. }
    )));
    h.settle(5_000 * MS);
    let log = h.fab.take_set_log();
    assert_eq!(count_sets_of(&log, SL2VL) + count_sets_of(&log, VLARB), 0);
}

#[test]
fn one_vl_routings_program_no_vl_table_with_qos_off() {
    let t = topo("torus:3x3");
    let mut h = Harness::new(&t, cfg("updn"), 3);
    h.subnet_up();
    h.settle(5_000 * MS);
    let log = h.fab.take_set_log();
    assert_eq!(count_sets_of(&log, SL2VL) + count_sets_of(&log, VLARB), 0);
    assert!(h.sw.routing_sl2vl().is_none() && h.sw.path_sl().is_none());
}
