use fabric::generate::{FatTreeSpec, fat_tree};
use fabric::{Guid, Lid};
use proto::state::{
    ClusterConfig, Command, LidEntry, LidUpdate, MasterRecord, Noop, ReplicaInfo, TopoLink,
    TopoNode, Topology, command::Kind,
};

use super::cmd;
use crate::{
    ApplyError, Effect, LidAssignment, ReplicatedState, topology_from_proto, topology_to_proto,
};

#[test]
fn duplicate_request_ids_are_applied_once() {
    let mut s = ReplicatedState::new();
    let lids = |l: u32| {
        Kind::UpdateLids(LidUpdate {
            set: vec![LidEntry {
                port_guid: 1,
                base_lid: l,
                lmc: 0,
            }],
            ..LidUpdate::default()
        })
    };
    assert!(s.apply(1, 1, &cmd(77, lids(5))).is_accepted());
    let o = s.apply(2, 1, &cmd(77, lids(6)));
    assert_eq!(o.result, Ok(Effect::Duplicate));
    assert!(o.to_proto().duplicate && o.to_proto().accepted);
    assert_eq!(s.lid_of(Guid(1)).unwrap().base, Lid(5));
    assert_eq!(s.applied_index(), 2);
    // Request id 0 never deduplicates.
    assert!(s.apply(3, 1, &cmd(0, lids(7))).is_accepted());
    assert_eq!(
        s.apply(4, 1, &cmd(0, lids(8))).result,
        Ok(Effect::LidsUpdated { set: 1, removed: 0 })
    );
    assert_eq!(s.lid_of(Guid(1)).unwrap().base, Lid(8));
}

#[test]
fn dedup_window_forgets_the_oldest() {
    let mut s = ReplicatedState::new();
    let n = crate::DEDUP_WINDOW as u64 + 1;
    for i in 1..=n {
        s.apply(i, 1, &cmd(i, Kind::Noop(Noop {})));
    }
    assert!(!s.seen_request(1));
    assert!(s.seen_request(2) && s.seen_request(n));
}

#[test]
fn replayed_and_empty_entries() {
    let mut s = ReplicatedState::new();
    s.apply(5, 2, &cmd(0, Kind::Noop(Noop {})));
    let o = s.apply(5, 2, &cmd(0, Kind::Noop(Noop {})));
    assert_eq!(
        o.result,
        Err(ApplyError::AlreadyApplied {
            index: 5,
            applied: 5
        })
    );
    let o = s.apply(3, 2, &cmd(0, Kind::Noop(Noop {})));
    assert!(matches!(o.result, Err(ApplyError::AlreadyApplied { .. })));
    assert_eq!((s.applied_index(), s.applied_term()), (5, 2));
    let o = s.apply(6, 3, &Command::default());
    assert_eq!(o.result, Err(ApplyError::EmptyCommand));
    assert_eq!((s.applied_index(), s.applied_term()), (6, 3));
}

#[test]
fn lid_updates_validate_then_clear_remove_set() {
    let mut s = ReplicatedState::new();
    let e = |g: u64, l: u32, m: u32| LidEntry {
        port_guid: g,
        base_lid: l,
        lmc: m,
    };
    let up = |set, remove, replace_all| {
        Kind::UpdateLids(LidUpdate {
            set,
            remove,
            replace_all,
        })
    };
    assert!(
        s.apply(
            1,
            1,
            &cmd(
                0,
                up(vec![e(1, 1, 0), e(2, 2, 1), e(3, 4, 0)], vec![], false)
            )
        )
        .is_accepted()
    );
    for bad in [e(4, 0, 0), e(4, 0xC000, 0), e(4, 9, 8)] {
        let o = s.apply(
            s.applied_index() + 1,
            1,
            &cmd(0, up(vec![e(5, 9, 0), bad], vec![1], true)),
        );
        assert_eq!(o.to_proto().code, "REPL-E016");
    }
    assert_eq!(s.guid2lid().len(), 3, "refused updates change nothing");
    let o = s.apply(9, 1, &cmd(0, up(vec![e(2, 6, 0)], vec![3, 99], false)));
    assert_eq!(o.result, Ok(Effect::LidsUpdated { set: 1, removed: 1 }));
    assert_eq!(
        s.guid2lid()
            .iter()
            .map(|(g, a)| (g.0, a.base.0))
            .collect::<Vec<_>>(),
        vec![(1, 1), (2, 6)]
    );
    s.apply(10, 1, &cmd(0, up(vec![e(7, 7, 2)], vec![], true)));
    assert_eq!(s.guid2lid().len(), 1);
    assert_eq!(
        s.lid_of(Guid(7)),
        Some(LidAssignment {
            base: Lid(7),
            lmc: 2
        })
    );
}

#[test]
fn master_records_only_move_forward() {
    let mut s = ReplicatedState::new();
    let m = |term| {
        Kind::SetMaster(MasterRecord {
            term,
            replica_id: 2,
            sm_port_guid: 0xabc,
            sm_lid: 1,
            m_key: term * 3,
        })
    };
    assert!(s.apply(1, 3, &cmd(0, m(3))).is_accepted());
    assert!(s.apply(2, 3, &cmd(0, m(3))).is_accepted());
    let o = s.apply(3, 4, &cmd(0, m(2)));
    assert_eq!(
        o.result,
        Err(ApplyError::StaleMaster {
            term: 2,
            current: 3
        })
    );
    assert!(s.apply(4, 5, &cmd(0, m(5))).is_accepted());
    assert_eq!(s.master().unwrap().m_key, 15);
}

#[test]
fn config_is_validated() {
    let mut s = ReplicatedState::new();
    let r = |id, priority| ReplicaInfo {
        id,
        priority,
        ..ReplicaInfo::default()
    };
    let good = ClusterConfig {
        lmc: 1,
        m_key_protect_bits: 1,
        replicas: vec![r(1, 15), r(2, 0)],
        routing_engines: vec!["ftree".into(), "minhop".into()],
        ..ClusterConfig::default()
    };
    assert!(
        s.apply(1, 1, &cmd(0, Kind::SetConfig(good.clone())))
            .is_accepted()
    );
    let bads = [
        ClusterConfig {
            lmc: 8,
            ..good.clone()
        },
        ClusterConfig {
            m_key_protect_bits: 4,
            ..good.clone()
        },
        ClusterConfig {
            replicas: vec![r(1, 0), r(1, 1)],
            ..good.clone()
        },
        ClusterConfig {
            replicas: vec![r(0, 0)],
            ..good.clone()
        },
        ClusterConfig {
            replicas: vec![r(3, 16)],
            ..good.clone()
        },
    ];
    for (i, b) in bads.into_iter().enumerate() {
        let o = s.apply(i as u64 + 2, 1, &cmd(0, Kind::SetConfig(b)));
        assert_eq!(o.to_proto().code, "REPL-E018", "case {i}");
    }
    assert_eq!(s.config(), &good);
}

#[test]
fn topology_is_validated_and_converts_both_ways() {
    let t = fat_tree(&FatTreeSpec::new(2, 8)).unwrap();
    let p = topology_to_proto(&t);
    assert_eq!(p.nodes.len(), t.len());
    assert_eq!(p.links.len(), t.num_links());
    let back = topology_from_proto(&p).unwrap();
    assert_eq!(back, t);
    let mut s = ReplicatedState::new();
    let o = s.apply(1, 1, &cmd(0, Kind::SetTopology(p.clone())));
    assert_eq!(
        o.result,
        Ok(Effect::TopologySet {
            nodes: t.len(),
            links: t.num_links()
        })
    );
    assert_eq!(s.topology(), &p);

    let node = |g| TopoNode {
        node_guid: g,
        node_type: 2,
        num_ports: 2,
        ..TopoNode::default()
    };
    let link = |a, ap, b, bp| TopoLink {
        a_node: a,
        a_port: ap,
        b_node: b,
        b_port: bp,
        ..TopoLink::default()
    };
    let bads = [
        Topology {
            nodes: vec![node(1), node(1)],
            links: vec![],
        },
        Topology {
            nodes: vec![node(1), node(2)],
            links: vec![link(0, 1, 2, 1)],
        },
        Topology {
            nodes: vec![node(1), node(2)],
            links: vec![link(0, 3, 1, 1)],
        },
        Topology {
            nodes: vec![node(1), node(2)],
            links: vec![link(0, 1, 1, 1), link(0, 1, 1, 2)],
        },
        Topology {
            nodes: vec![node(1)],
            links: vec![link(0, 1, 0, 1)],
        },
        Topology {
            nodes: vec![TopoNode {
                num_ports: 0,
                ..node(1)
            }],
            links: vec![],
        },
    ];
    for (i, b) in bads.into_iter().enumerate() {
        let o = s.apply(i as u64 + 2, 1, &cmd(0, Kind::SetTopology(b)));
        assert_eq!(o.to_proto().code, "REPL-E017", "case {i}");
    }
    assert_eq!(s.topology(), &p);
}
