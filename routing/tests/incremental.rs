//! Incremental routing after a link loss.

mod common;

use common::*;
use fabric::{PortRef, Topology};
use routing::input::Peer;
use routing::{
    FatTree, MinHop, RoutingInput, Sequential, UpDown, changed_blocks, route, route_incremental,
};
use runner::Threads;

/// Removes the highest-numbered uplink of the first switch; returns the new input.
fn drop_uplink(topo: &mut Topology, inp: &RoutingInput) -> RoutingInput {
    let leaf = inp.switches[0].node;
    let port = (1..=topo.node(leaf).num_ports())
        .rev()
        .find(|&p| {
            topo.remote(PortRef::new(leaf, p))
                .is_some_and(|r| topo.node(r.node).is_switch())
        })
        .unwrap();
    topo.disconnect(PortRef::new(leaf, port)).unwrap();
    input(topo, 0)
}

#[test]
fn link_loss_changes_fewer_blocks_incrementally_and_stays_valid() {
    for spec in [
        "ft3:8",
        "ft3:12:pods=6",
        "torus:6x6:hosts=4",
        "random:40:seed=2:radix=16:links=8",
    ] {
        for e in [
            &MinHop as &dyn routing::Engine,
            &UpDown::default(),
            &FatTree,
        ] {
            let mut topo = fabric_of(spec);
            let before_in = input(&topo, 0);
            let Ok(before) = route(&before_in, e) else {
                continue; // ftree on a non-fat-tree
            };
            let after_in = drop_uplink(&mut topo, &before_in);
            let what = format!("{spec} {}", e.name());
            let full = route(&after_in, e).unwrap();
            let (inc, changed) =
                route_incremental(&after_in, e, &Sequential, 3, &before.lfts).unwrap();
            let full_changed = changed_blocks(&before.lfts, &full.lfts);
            let (inc8, _) = route_incremental(&after_in, e, &Threads(4), 8, &before.lfts).unwrap();
            assert_eq!(
                inc8.lfts, inc.lfts,
                "{what}: incremental result depends on sharding"
            );
            assert_eq!(changed, changed_blocks(&before.lfts, &inc.lfts));
            assert!(changed > 0, "{what}: a lost link must change something");
            // Up/down on ft3:8 now changes as many blocks incrementally as from scratch
            // (43 and 43): the lost uplink moves switches in the one-minimum orientation
            // (`Directions::from_ranks`), so switch-LID routes change either way.
            assert!(
                changed < full_changed || (e.name() == "updn" && changed == full_changed),
                "{what}: incremental {changed} vs full {full_changed}"
            );
            assert_complete(&after_in, &inc.lfts, &what);
            // Every previous entry that is still a minimal choice was kept.
            for s in 0..after_in.num_switches() {
                for (lid, d) in after_in.dests().iter().enumerate().skip(1) {
                    if !d.is_used() || d.switch as usize == s {
                        continue;
                    }
                    let t = d.switch as usize;
                    let old = before.lfts.switches[s].port(lid as u16);
                    let new = inc.lfts.switches[s].port(lid as u16);
                    // The new entry is one hop closer under the engine's own hop table.
                    let Peer::Switch { sw: m, .. } = after_in.ports(s)[new as usize] else {
                        panic!("{what}: switch {s} lid {lid} leaves on a non-switch port {new}");
                    };
                    let hs = inc.hops.hops(s, t).unwrap();
                    assert_eq!(inc.hops.hops(m as usize, t), Some(hs - 1), "{what}");
                    if old != new && e.name() == "minhop" {
                        // For min-hop, an old port one hop closer would have been kept.
                        if let Peer::Switch { sw: om, .. } = after_in.ports(s)[old as usize] {
                            assert_ne!(
                                inc.hops.hops(om as usize, t),
                                Some(hs - 1),
                                "{what}: s{s} lid {lid}: valid entry {old} replaced by {new}"
                            );
                        }
                    }
                }
            }
        }
    }
}

/// A spine-leaf link lost on ft2:36: the incremental fat-tree routing keeps every entry that
/// stays legal and balances only the ones that must change against the loads of the kept
/// ones, so it is as balanced as a full routing (within 1.1x of the lower bound) while
/// changing far fewer blocks.
#[test]
fn ftree_after_a_link_loss_rebalances_only_what_changes() {
    use routing::metrics::{self, MetricsOptions};
    let mut topo = fabric_of("ft2:36");
    let before_in = input(&topo, 0);
    let before = route(&before_in, &FatTree).unwrap();
    let after_in = drop_uplink(&mut topo, &before_in);
    let full = route(&after_in, &FatTree).unwrap();
    let (inc, changed) =
        route_incremental(&after_in, &FatTree, &Sequential, 3, &before.lfts).unwrap();
    let opts = MetricsOptions {
        shifts: Some(vec![1]),
        ..MetricsOptions::default()
    };
    let (mf, mi) = (
        metrics::analyze(&after_in, &full.lfts, &opts),
        metrics::analyze(&after_in, &inc.lfts, &opts),
    );
    let bound = mf.all_to_all.lower_bound.unwrap();
    let full_changed = changed_blocks(&before.lfts, &full.lfts);
    println!(
        "ft2:36 minus one spine-leaf link: full {} ({full_changed} blocks), incremental {} ({changed} blocks), bound {bound}",
        mf.all_to_all.max_link_load, mi.all_to_all.max_link_load
    );
    assert!(mi.all_to_all.max_link_load * 10 <= bound * 11);
    assert!(changed * 4 < full_changed, "{changed} vs {full_changed}");
    assert!(!mi.cdg.has_cycle && mi.unreachable_pairs == 0);
}
