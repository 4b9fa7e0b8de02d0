//! Walks directed routes out and back with `dr_step`, as DOMAIN.md "Directed route" and
//! IBA 14.2.2 describe: hop pointer, ReturnPath filled with arrival ports, D bit, and the
//! mixed LID-routed mode.

use fabric::Lid;
use mad::{
    AttributeId, DrAction, DrDropReason, DrIngress, DrNode, Method, NodeInfo, Smp, SmpAttribute,
    dr_step,
};

// A small fabric, by hand:
//   S  (CA, 1 port)     port 1  <->  N1 (switch, 8 ports) port 3
//   N1 port 5           <->  N2 (switch, 8 ports) port 2
//   N2 port 7           <->  N3 (CA, 2 ports) port 2
//   N2 port 1           <->  T  (CA, 1 port) port 1     (used by the mixed-mode walk)
const S: DrNode = DrNode {
    is_switch: false,
    num_ports: 1,
};
const N1: DrNode = DrNode {
    is_switch: true,
    num_ports: 8,
};
const N2: DrNode = DrNode {
    is_switch: true,
    num_ports: 8,
};
const N3: DrNode = DrNode {
    is_switch: false,
    num_ports: 2,
};

#[test]
fn three_hop_path_out_and_back() {
    let mut smp = Smp::dr_get(0x1234, AttributeId::NODE_INFO, 0, &[1, 5, 7]).unwrap();
    assert_eq!(
        (smp.hop_pointer, smp.hop_count, smp.direction),
        (0, 3, false)
    );

    // S sends (C14-9:1): pointer 0 -> 1, out of InitialPath[1].
    assert_eq!(dr_step(&mut smp, S, DrIngress::Local), DrAction::Forward(1));
    assert_eq!(smp.hop_pointer, 1);
    // N1 receives on port 3 (C14-9:2): ReturnPath[1] = 3, pointer 2, out of port 5.
    assert_eq!(
        dr_step(&mut smp, N1, DrIngress::Port(3)),
        DrAction::Forward(5)
    );
    assert_eq!((smp.hop_pointer, smp.return_path[1]), (2, 3));
    // N2 receives on port 2: ReturnPath[2] = 2, pointer 3, out of port 7.
    assert_eq!(
        dr_step(&mut smp, N2, DrIngress::Port(2)),
        DrAction::Forward(7)
    );
    assert_eq!((smp.hop_pointer, smp.return_path[2]), (3, 2));
    // N3 receives on port 2 (C14-9:3): ReturnPath[3] = 2, pointer 4, deliver to its SMA.
    assert_eq!(dr_step(&mut smp, N3, DrIngress::Port(2)), DrAction::Deliver);
    assert_eq!(smp.hop_pointer, 4);
    assert_eq!(&smp.return_path[1..4], &[3, 2, 2]);

    // The SMA answers: GetResp, D = 1, paths kept.
    let mut resp = smp.make_response();
    resp.set_attr(&NodeInfo {
        node_type: 1,
        num_ports: 2,
        ..NodeInfo::default()
    });
    assert_eq!(resp.method, Method::GET_RESP);
    assert!(resp.direction);
    assert_eq!(resp.hop_pointer, 4);
    // Bytes on the wire: status bit 15 is D (linux IB_SMP_DIRECTION 0x8000).
    let wire = resp.encode();
    assert_eq!(wire[4] & 0x80, 0x80);
    let mut resp = Smp::decode(&wire).unwrap();

    // N3 sends it back (C14-13:1): pointer 3, out of ReturnPath[3] = 2.
    assert_eq!(
        dr_step(&mut resp, N3, DrIngress::Local),
        DrAction::Forward(2)
    );
    assert_eq!(resp.hop_pointer, 3);
    // N2 receives on port 7 (C14-13:2): pointer 2, out of ReturnPath[2] = 2.
    assert_eq!(
        dr_step(&mut resp, N2, DrIngress::Port(7)),
        DrAction::Forward(2)
    );
    assert_eq!(resp.hop_pointer, 2);
    // N1 receives on port 5: pointer 1, out of ReturnPath[1] = 3.
    assert_eq!(
        dr_step(&mut resp, N1, DrIngress::Port(5)),
        DrAction::Forward(3)
    );
    assert_eq!(resp.hop_pointer, 1);
    // S receives on port 1 (C14-13:3): pointer 0, DrSLID permissive: deliver to the SM.
    assert_eq!(dr_step(&mut resp, S, DrIngress::Port(1)), DrAction::Deliver);
    assert_eq!(resp.hop_pointer, 0);
    let ni: NodeInfo = resp.attr().unwrap();
    assert_eq!(ni.num_ports, 2);
    assert_eq!(resp.tid, 0x1234);
}

#[test]
fn mixed_mode_lid_routed_both_ends() {
    // The SM (LID 1, on S) reaches N1 (LID 10) by LID routing, takes the directed hop
    // N1 -5-> N2, and N2 LID-routes to the target T (LID 20).
    let mut smp = Smp::dr_get(7, AttributeId::PORT_INFO, 1, &[5])
        .unwrap()
        .with_dr_lids(Lid(1), Lid(20));
    // N1 receives it LID-routed with pointer 0 (C14-9:1 from the wire, switch, DrSLID set).
    assert_eq!(
        dr_step(&mut smp, N1, DrIngress::Port(3)),
        DrAction::Forward(5)
    );
    assert_eq!(smp.hop_pointer, 1);
    // N2 is the end of the directed part (C14-9:3): ReturnPath[1] = 2, pointer 2,
    // continue LID-routed to DrDLID.
    assert_eq!(
        dr_step(&mut smp, N2, DrIngress::Port(2)),
        DrAction::LidRoute(Lid(20))
    );
    assert_eq!((smp.hop_pointer, smp.return_path[1]), (2, 2));
    // T receives it LID-routed with pointer = hop count + 1 (C14-9:4): its SMA answers.
    assert_eq!(
        dr_step(&mut smp, DrNode::ca(1), DrIngress::Port(1)),
        DrAction::Deliver
    );
    let mut resp = smp.make_response();
    // T sends the response LID-routed back to the requester (N2), pointer unchanged.
    assert_eq!(
        dr_step(&mut resp, DrNode::ca(1), DrIngress::Local),
        DrAction::LidRouteToRequester
    );
    assert_eq!(resp.hop_pointer, 2);
    // N2 receives it (C14-13:1 from the wire): pointer 1, out of ReturnPath[1] = 2.
    assert_eq!(
        dr_step(&mut resp, N2, DrIngress::Port(1)),
        DrAction::Forward(2)
    );
    assert_eq!(resp.hop_pointer, 1);
    // N1 receives on 5 (C14-13:3): pointer 0, DrSLID not permissive: LID-route to the SM.
    assert_eq!(
        dr_step(&mut resp, N1, DrIngress::Port(5)),
        DrAction::LidRoute(Lid(1))
    );
    assert_eq!(resp.hop_pointer, 0);
    // The SM's node receives it with pointer 0 (C14-13:4).
    assert_eq!(dr_step(&mut resp, S, DrIngress::Port(1)), DrAction::Deliver);
}

#[test]
fn drops() {
    // A CA in the middle of a path cannot forward (C14-9:2).
    let mut smp = Smp::dr_get(1, NodeInfo::ID, 0, &[1, 2, 3]).unwrap();
    smp.hop_pointer = 1;
    assert_eq!(
        dr_step(&mut smp, N3, DrIngress::Port(1)),
        DrAction::Drop(DrDropReason::NotASwitch)
    );
    // A port beyond NumPorts.
    let mut smp = Smp::dr_get(1, NodeInfo::ID, 0, &[1, 9, 3]).unwrap();
    smp.hop_pointer = 1;
    assert_eq!(
        dr_step(&mut smp, N1, DrIngress::Port(1)),
        DrAction::Drop(DrDropReason::BadPort(9))
    );
    // Port 0 in the path.
    let mut smp = Smp::dr_get(1, NodeInfo::ID, 0, &[1, 0, 3]).unwrap();
    smp.hop_pointer = 1;
    assert_eq!(
        dr_step(&mut smp, N1, DrIngress::Port(1)),
        DrAction::Drop(DrDropReason::BadPort(0))
    );
    // Unreasonable hop pointer (C14-9:5).
    let mut smp = Smp::dr_get(1, NodeInfo::ID, 0, &[1, 2]).unwrap();
    smp.hop_pointer = 9;
    assert_eq!(
        dr_step(&mut smp, N1, DrIngress::Port(1)),
        DrAction::Drop(DrDropReason::BadHopPointer)
    );
    // Pointer 0 arriving from the wire in a purely directed route: the sender should have
    // incremented it.
    let mut smp = Smp::dr_get(1, NodeInfo::ID, 0, &[1, 2]).unwrap();
    assert_eq!(
        dr_step(&mut smp, N1, DrIngress::Port(1)),
        DrAction::Drop(DrDropReason::BadHopPointer)
    );
    // Hop count above 63 is refused by decode and by the step.
    let mut smp = Smp::dr_get(1, NodeInfo::ID, 0, &[1]).unwrap();
    smp.hop_count = 64;
    assert_eq!(
        dr_step(&mut smp, N1, DrIngress::Port(1)),
        DrAction::Drop(DrDropReason::HopCountTooLarge)
    );
    let mut wire = Smp::dr_get(1, NodeInfo::ID, 0, &[1]).unwrap().encode();
    wire[7] = 64;
    assert_eq!(
        Smp::decode(&wire),
        Err(mad::MadError::HopCountTooLarge { hop_count: 64 })
    );
    // LID-routed SMPs are not DR.
    let mut smp = Smp::lid_get(1, NodeInfo::ID, 0);
    assert_eq!(
        dr_step(&mut smp, N1, DrIngress::Port(1)),
        DrAction::Drop(DrDropReason::NotDirected)
    );
}

#[test]
fn zero_hop_is_the_local_node() {
    let mut smp = Smp::dr_get(1, NodeInfo::ID, 0, &[]).unwrap();
    assert_eq!(dr_step(&mut smp, S, DrIngress::Local), DrAction::Deliver);
    assert_eq!(smp.hop_pointer, 1);
    let mut resp = smp.make_response();
    assert_eq!(dr_step(&mut resp, S, DrIngress::Local), DrAction::Deliver);
    assert_eq!(resp.hop_pointer, 0);
}

use proptest::prelude::*;

/// A random chain: the SM's CA (one port, port 1), then nodes 1..=n; node i has `ports`
/// ports, is entered on `arrive` and (except the last) left by `out`, both within range.
/// Intermediate nodes are switches; the last may be a CA.
fn chain() -> impl Strategy<Value = (Vec<(u8, u8, u8)>, bool)> {
    let node = (2u8..=64).prop_flat_map(|n| (Just(n), 1..=n, 1..=n));
    (prop::collection::vec(node, 1..=63), any::<bool>())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    #[test]
    #[allow(clippy::needless_range_loop)] // i is the hop number, used for several arrays
    fn random_paths_go_out_and_come_back((nodes, last_is_ca) in chain()) {
        let n = nodes.len();
        let sm = DrNode::ca(1);
        let node = |i: usize| {
            let ports = nodes[i - 1].0;
            if i == n && last_is_ca { DrNode::ca(ports) } else { DrNode::switch(ports) }
        };
        let arrive = |i: usize| nodes[i - 1].1;
        // path[0] leaves the SM's CA by port 1; path[i] leaves node i.
        let path: Vec<u8> = std::iter::once(1).chain(nodes[..n - 1].iter().map(|x| x.2)).collect();
        let mut smp = Smp::dr_get(99, AttributeId::NODE_INFO, 0, &path).unwrap();
        prop_assert_eq!(dr_step(&mut smp, sm, DrIngress::Local), DrAction::Forward(1));
        for i in 1..=n {
            let act = dr_step(&mut smp, node(i), DrIngress::Port(arrive(i)));
            if i < n {
                prop_assert_eq!(act, DrAction::Forward(path[i]));
            } else {
                prop_assert_eq!(act, DrAction::Deliver);
            }
            prop_assert_eq!(usize::from(smp.hop_pointer), i + 1);
            prop_assert_eq!(smp.return_path[i], arrive(i));
        }
        // Through the wire and back: the response retraces the arrival ports.
        let mut resp = Smp::decode(&smp.make_response().encode()).unwrap();
        prop_assert!(resp.direction);
        prop_assert_eq!(dr_step(&mut resp, node(n), DrIngress::Local), DrAction::Forward(arrive(n)));
        for i in (1..n).rev() {
            // Node i receives it on the port it forwarded the request out of.
            let act = dr_step(&mut resp, node(i), DrIngress::Port(path[i]));
            prop_assert_eq!(act, DrAction::Forward(arrive(i)));
            prop_assert_eq!(usize::from(resp.hop_pointer), i);
        }
        prop_assert_eq!(dr_step(&mut resp, sm, DrIngress::Port(1)), DrAction::Deliver);
        prop_assert_eq!(resp.hop_pointer, 0);
    }

    #[test]
    fn dr_step_never_panics(
        b in prop::collection::vec(any::<u8>(), 256),
        is_switch in any::<bool>(),
        num_ports in any::<u8>(),
        from in prop::option::of(any::<u8>()),
    ) {
        let mut a: [u8; 256] = b.try_into().unwrap();
        a[1] = 0x81;
        a[7] &= 0x3f;
        let mut smp = Smp::decode(&a).unwrap();
        let from = from.map_or(DrIngress::Local, DrIngress::Port);
        let node = DrNode { is_switch, num_ports };
        match dr_step(&mut smp, node, from) {
            DrAction::Forward(p) => prop_assert!(p >= 1 && p <= num_ports),
            DrAction::Deliver | DrAction::LidRoute(_) | DrAction::LidRouteToRequester
            | DrAction::Drop(_) => {}
        }
    }
}
