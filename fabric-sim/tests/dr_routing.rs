//! Directed-route forwarding through the simulator: NodeInfo over 0..5 hops, wrong
//! ports, and the return path at every hop.

mod common;

use common::*;
use fabric_sim::{TraceKind, VTime};
use mad::{NodeInfo, Smp, SmpAttribute};

/// InitialPath for S_k in the chain: H0's port 1, then S_i's output port i+1.
fn path_to(k: usize) -> Vec<u8> {
    let mut p = vec![1u8];
    for i in 1..k {
        p.push((i + 1) as u8);
    }
    p.truncate(k);
    p
}

#[test]
fn nodeinfo_over_0_to_5_hops_comes_from_the_right_node() {
    let (t, h0, sws, _) = chain();
    let mut fab = sim(&t, false);
    let sm = fab.attach(fab.port_guid(h0, 1).unwrap()).unwrap();
    // 0 hops: the SM's own HCA.
    let (st, ni) = dr_get::<NodeInfo>(&mut fab, sm, &[], 0).expect("answer");
    assert_eq!(st, 0);
    assert_eq!(ni.node_guid, fab.node_guid(h0).unwrap());
    assert_eq!(ni.local_port_num, 1);
    assert_eq!(ni.port_guid, fab.port_guid(h0, 1).unwrap());
    assert_eq!(ni.node_type, 1);
    assert_eq!(ni.num_ports, 1);
    for k in 1..=5 {
        let path = path_to(k);
        assert_eq!(path.len(), k);
        let (st, ni) = dr_get::<NodeInfo>(&mut fab, sm, &path, 0).expect("answer");
        assert_eq!(st, 0, "hop {k}");
        assert_eq!(ni.node_guid, fab.node_guid(sws[k - 1]).unwrap(), "hop {k}");
        assert_eq!(ni.node_type, 2);
        assert_eq!(ni.num_ports, 12);
        // Arrived on S1 port 12, S2 port 11, ... S5 port 8.
        assert_eq!(ni.local_port_num, (13 - k) as u8, "hop {k}");
        assert_eq!(ni.partition_cap, fab.config().switch_partition_cap);
    }
}

#[test]
fn nodeinfo_of_a_ca_behind_the_chain_reports_its_own_port() {
    let (t, h0, sws, hosts) = chain();
    let _ = sws;
    let mut fab = sim(&t, false);
    let sm = fab.attach(fab.port_guid(h0, 1).unwrap()).unwrap();
    // H3 hangs on S3 port 1: path to S3 then port 1.
    let mut path = path_to(3);
    path.push(1);
    let (st, ni) = dr_get::<NodeInfo>(&mut fab, sm, &path, 0).expect("answer");
    assert_eq!(st, 0);
    assert_eq!(ni.node_guid, fab.node_guid(hosts[2]).unwrap());
    assert_eq!(ni.local_port_num, 1);
    assert_eq!(ni.port_guid, fab.port_guid(hosts[2], 1).unwrap());
    assert_eq!(ni.num_ports, 2);
}

#[test]
fn return_path_is_correct_at_every_hop() {
    let (t, h0, sws, _) = chain();
    let mut fab = sim(&t, true);
    let sm = fab.attach(fab.port_guid(h0, 1).unwrap()).unwrap();
    let path = path_to(5);
    let q = Smp::dr_get(77, NodeInfo::ID, 0, &path).unwrap();
    let r = dr(&mut fab, sm, &q).expect("answer");
    // The response carries the return path the switches wrote: arrival ports 12..8.
    assert_eq!(&r.return_path[1..=5], &[12, 11, 10, 9, 8]);
    assert!(r.direction);
    assert_eq!(r.hop_pointer, 0);
    let trace: Vec<_> = fab
        .take_trace()
        .into_iter()
        .filter(|h| h.tid == 77 && h.kind == TraceKind::Arrive)
        .collect();
    // Outbound: S1..S5, each writing ReturnPath[hop] = arrival port.
    let out: Vec<_> = trace.iter().filter(|h| !h.direction).collect();
    assert_eq!(out.len(), 5);
    for (i, h) in out.iter().enumerate() {
        assert_eq!(h.node, sws[i]);
        assert_eq!(h.port, (12 - i) as u8);
        assert_eq!(
            h.hop_pointer,
            (i + 2) as u8,
            "pointer incremented after hop {i}"
        );
        // ReturnPath[1..=hop] holds every arrival port so far, nothing beyond.
        let expect: Vec<u8> = (0..=i).map(|j| (12 - j) as u8).collect();
        assert_eq!(&h.return_path[1..=i + 1], &expect[..], "hop {i}");
        assert!(h.return_path[i + 2..].iter().all(|&b| b == 0));
    }
    // Back: S4..S1 then H0, arriving on the ports the request left by.
    let back: Vec<_> = trace.iter().filter(|h| h.direction).collect();
    assert_eq!(back.len(), 5);
    for (j, h) in back.iter().enumerate() {
        if j < 4 {
            let sw = 3 - j; // S4, S3, S2, S1
            assert_eq!(h.node, sws[sw]);
            assert_eq!(h.port, (sw + 2) as u8, "came back on its output port");
            assert_eq!(h.hop_pointer, (4 - j) as u8, "pointer decremented");
            // Each switch sends it on out of ReturnPath[hop pointer] = its arrival port.
            assert_eq!(h.return_path[usize::from(h.hop_pointer)], (12 - sw) as u8);
            assert_eq!(&h.return_path[1..=5], &[12, 11, 10, 9, 8]);
        } else {
            assert_eq!(h.node, h0);
            assert_eq!(h.port, 1);
            assert_eq!(h.hop_pointer, 0);
        }
    }
    // Times strictly increase hop by hop.
    let times: Vec<VTime> = trace.iter().map(|h| h.time).collect();
    assert!(times.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn wrong_port_in_path_is_discarded_without_answer() {
    let (t, h0, _, _) = chain();
    let mut fab = sim(&t, false);
    let sm = fab.attach(fab.port_guid(h0, 1).unwrap()).unwrap();
    // Port 13 does not exist on a 12-port switch (C14-9: invalid port, discard).
    let before = fab.accounting().counters.clone();
    let q = Smp::dr_get(tid(), NodeInfo::ID, 0, &[1, 2, 13]).unwrap();
    assert!(dr(&mut fab, sm, &q).is_none());
    let c = fab.accounting().counters.clone();
    assert_eq!(c.dropped_dr, before.dropped_dr + 1);
    // Port 7 of S2 exists but has no cable: discarded at the link.
    let q = Smp::dr_get(tid(), NodeInfo::ID, 0, &[1, 2, 7]).unwrap();
    assert!(dr(&mut fab, sm, &q).is_none());
    assert_eq!(
        fab.accounting().counters.dropped_link_down,
        c.dropped_link_down + 1
    );
    // Port 0 in the path is invalid too.
    let q = Smp::dr_get(tid(), NodeInfo::ID, 0, &[1, 0]).unwrap();
    assert!(dr(&mut fab, sm, &q).is_none());
    // A CA asked to forward (path continues past H3) discards it.
    let q = Smp::dr_get(tid(), NodeInfo::ID, 0, &[1, 2, 3, 1, 2]).unwrap();
    assert!(dr(&mut fab, sm, &q).is_none());
    // The first hop must leave by the SM's own port.
    let q = Smp::dr_get(tid(), NodeInfo::ID, 0, &[2]).unwrap();
    assert!(dr(&mut fab, sm, &q).is_none());
    assert_eq!(fab.accounting().counters.dropped_dr, before.dropped_dr + 4);
    // The fabric still answers a correct path afterwards.
    assert!(dr_get::<NodeInfo>(&mut fab, sm, &[1, 2], 0).is_some());
}

#[test]
fn bad_attribute_and_modifier_status_codes() {
    let (t, h0, _, _) = chain();
    let mut fab = sim(&t, false);
    let sm = fab.attach(fab.port_guid(h0, 1).unwrap()).unwrap();
    // SwitchInfo on a CA: method/attribute unsupported.
    let q = Smp::dr_get(tid(), mad::AttributeId::SWITCH_INFO, 0, &[]).unwrap();
    assert_eq!(dr(&mut fab, sm, &q).unwrap().status, 0x0C);
    // Unknown attribute.
    let q = Smp::dr_get(tid(), mad::AttributeId(0x00FE), 0, &[1]).unwrap();
    assert_eq!(dr(&mut fab, sm, &q).unwrap().status, 0x0C);
    // NodeInfo is read-only.
    let q = Smp::dr_set(tid(), 0, &[1], &NodeInfo::default()).unwrap();
    assert_eq!(dr(&mut fab, sm, &q).unwrap().status, 0x0C);
    // PortInfo of port 13 on a 12-port switch: invalid modifier.
    let q = Smp::dr_get(tid(), mad::AttributeId::PORT_INFO, 13, &[1]).unwrap();
    assert_eq!(dr(&mut fab, sm, &q).unwrap().status, 0x1C);
    // LFT block beyond LinearFDBCap.
    let q = Smp::dr_get(tid(), mad::AttributeId::LINEAR_FORWARDING_TABLE, 768, &[1]).unwrap();
    assert_eq!(dr(&mut fab, sm, &q).unwrap().status, 0x1C);
    let q = Smp::dr_get(tid(), mad::AttributeId::LINEAR_FORWARDING_TABLE, 767, &[1]).unwrap();
    assert_eq!(dr(&mut fab, sm, &q).unwrap().status, 0);
    // P_KeyTable block beyond the switch's PartitionEnforcementCap (32 = one block).
    let q = Smp::dr_get(tid(), mad::AttributeId::P_KEY_TABLE, (3 << 16) | 1, &[1]).unwrap();
    assert_eq!(dr(&mut fab, sm, &q).unwrap().status, 0x1C);
    // Unsupported method: status 0x08.
    let mut q = Smp::dr_get(tid(), NodeInfo::ID, 0, &[1]).unwrap();
    q.method = mad::Method::SEND;
    assert_eq!(dr(&mut fab, sm, &q).unwrap().status, 0x08);
}

#[test]
fn an_sm_on_port_2_of_a_dual_port_hca_sees_port_2() {
    use fabric::{Guid, NodeType, PortRef, Topology};
    let mut t = Topology::new();
    let hca = t.add_node(NodeType::Ca, 2, Guid(0x1000), "HCA").unwrap();
    let a = t.add_node(NodeType::Switch, 4, Guid(0x2001), "A").unwrap();
    let b = t.add_node(NodeType::Switch, 4, Guid(0x2002), "B").unwrap();
    t.connect(PortRef::new(hca, 1), PortRef::new(a, 3)).unwrap();
    t.connect(PortRef::new(hca, 2), PortRef::new(b, 4)).unwrap();
    let mut fab = sim(&t, false);
    let sm = fab.attach(fab.port_guid(hca, 2).unwrap()).unwrap();
    let (_, ni) = dr_get::<NodeInfo>(&mut fab, sm, &[], 0).unwrap();
    assert_eq!(ni.local_port_num, 2);
    assert_eq!(ni.port_guid, Guid(0x1002));
    let (_, ni) = dr_get::<NodeInfo>(&mut fab, sm, &[2], 0).unwrap();
    assert_eq!((ni.node_guid, ni.local_port_num), (Guid(0x2002), 4));
    // The first hop must leave by the port the SM is attached at.
    assert!(dr_get::<NodeInfo>(&mut fab, sm, &[1], 0).is_none());
    // PortInfo with modifier 0 on a CA means the port the SMP arrived on.
    let (_, pi) = dr_get::<mad::PortInfo>(&mut fab, sm, &[], 0).unwrap();
    assert_eq!(pi.local_port_num, 2);
    let (_, pi1) = dr_get::<mad::PortInfo>(&mut fab, sm, &[], 1).unwrap();
    assert_eq!(
        pi1.local_port_num, 2,
        "LocalPortNum is the arrival port whatever the modifier"
    );
    assert_eq!(pi1.port_state, 2);
    let (st, _) = dr_get::<mad::PortInfo>(&mut fab, sm, &[], 3).unwrap();
    assert_eq!(st, 0x1C);
}
