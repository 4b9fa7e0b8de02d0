//! Traffic that involves attached SMs: SMInfo requests delivered to the SM at the
//! target port and answered by it, trap 144, mixed-mode directed routes.

mod common;

use common::*;
use fabric::Lid;
use fabric_sim::{Fault, SimConfig};
use mad::{Method, NodeInfo, Notice, NoticeDetails, SmInfo, Smp, SmpAttribute};

#[test]
fn dr_sminfo_reaches_the_sm_at_the_target_port_and_its_answer_returns() {
    let mut s = small(SimConfig::default());
    let sm2 = s.fab.attach(s.hg(2)).unwrap();
    let q = Smp::dr_get(42, SmInfo::ID, 0, H_PATHS[1]).unwrap();
    s.fab.send(0, s.sm, &q).unwrap();
    settle(&mut s.fab);
    let req = s
        .fab
        .poll_recv_full(sm2)
        .expect("request delivered to the SM at H2");
    assert_eq!(req.smp.method, Method::GET);
    assert_eq!(req.smp.attr_id, SmInfo::ID);
    assert_eq!(req.slid, Lid::PERMISSIVE);
    // The SM answers with make_response and sends it back along the return path.
    let mut resp = req.smp.make_response();
    let info = SmInfo {
        guid: s.hg(2),
        sm_key: 0,
        act_count: 9,
        priority: 7,
        sm_state: 2,
    };
    resp.set_attr(&info);
    let now = s.fab.now();
    s.fab.send(now, sm2, &resp).unwrap();
    settle(&mut s.fab);
    let (_, r) = s.fab.poll_recv(s.sm).expect("answer at H1");
    assert_eq!(r.tid, 42);
    assert_eq!(r.method, Method::GET_RESP);
    assert_eq!(SmInfo::decode(&r.data), info);
    // The SMA of a CA without an SM answers 0x0C.
    let q = Smp::dr_get(43, SmInfo::ID, 0, H_PATHS[2]).unwrap();
    let r = dr(&mut s.fab, s.sm, &q).unwrap();
    assert_eq!(r.status, 0x0C);
}

#[test]
fn lid_routed_sminfo_carries_the_requester_lid() {
    let mut s = small(SimConfig::default());
    let sm2 = s.fab.attach(s.hg(2)).unwrap();
    s.bring_up();
    let q = Smp::lid_get(50, SmInfo::ID, 0);
    s.fab.send_lid(s.fab.now(), s.sm, Lid(2), &q).unwrap();
    settle(&mut s.fab);
    let req = s.fab.poll_recv_full(sm2).expect("delivered");
    assert_eq!(req.slid, Lid(1));
    assert_eq!(req.dlid, Lid(2));
    let resp = req.smp.make_response();
    s.fab.send_lid(s.fab.now(), sm2, req.slid, &resp).unwrap();
    settle(&mut s.fab);
    let r = s.fab.poll_recv_full(s.sm).expect("answer");
    assert_eq!(r.smp.tid, 50);
    assert_eq!(r.slid, Lid(2));
}

#[test]
fn capability_change_sends_trap_144() {
    let mut s = small(SimConfig::default());
    s.bring_up();
    let mask = s.fab.port_info(s.h[3], 1).unwrap().capability_mask | 1 << 9;
    s.fab
        .inject(
            s.fab.now(),
            Fault::CapabilityMask {
                port_guid: s.hg(4),
                mask,
            },
        )
        .unwrap();
    settle(&mut s.fab);
    let traps: Vec<_> = others(&mut s.fab, s.sm)
        .into_iter()
        .filter(|r| r.smp.method == Method::TRAP)
        .collect();
    assert_eq!(traps.len(), 1);
    let n = Notice::decode(&traps[0].smp.data);
    assert_eq!(n.trap_number(), Some(144));
    assert_eq!(n.issuer_lid, Lid(4));
    match n.details() {
        NoticeDetails::CapabilityChange {
            lid,
            capability_mask,
            ..
        } => {
            assert_eq!(lid, Lid(4));
            assert_eq!(capability_mask, mask);
        }
        d => panic!("unexpected {d:?}"),
    }
    assert_eq!(s.fab.port_info(s.h[3], 1).unwrap().capability_mask, mask);
}

/// An SM registering on a port the master has swept, and leaving it, changes the port's
/// IsSM: the SMA traps each change (144) to the master, as an HCA's does.
#[test]
fn an_sm_attaching_or_leaving_traps_its_is_sm_change() {
    let mut s = small(SimConfig::default());
    s.bring_up();
    let is_sm = mad::PortInfo::CAP_IS_SM;
    let mut masks = Vec::new();
    let sm4 = s.fab.attach(s.hg(4)).unwrap();
    settle(&mut s.fab);
    s.fab.detach(sm4).unwrap();
    settle(&mut s.fab);
    for r in others(&mut s.fab, s.sm) {
        if r.smp.method != Method::TRAP {
            continue;
        }
        let n = Notice::decode(&r.smp.data);
        assert_eq!((n.trap_number(), n.issuer_lid), (Some(144), Lid(4)));
        match n.details() {
            NoticeDetails::CapabilityChange {
                capability_mask, ..
            } => masks.push(capability_mask & is_sm != 0),
            d => panic!("unexpected {d:?}"),
        }
    }
    assert_eq!(masks, vec![true, false], "IsSM set, then cleared");
    assert_eq!(
        s.fab.port_info(s.h[3], 1).unwrap().capability_mask & is_sm,
        0
    );
    // A client (no IsSM) attaching changes nothing and traps nothing.
    s.fab.attach_client(s.hg(4)).unwrap();
    settle(&mut s.fab);
    assert!(
        others(&mut s.fab, s.sm)
            .iter()
            .all(|r| r.smp.method != Method::TRAP)
    );
}

#[test]
fn mixed_mode_lid_routed_start() {
    // LID-routed from the SM to S2 (DrSLID = 1), then directed S2 -> port 1 -> H3.
    let mut s = small(SimConfig::default());
    s.bring_up();
    let q = Smp::dr_get(60, NodeInfo::ID, 0, &[1])
        .unwrap()
        .with_dr_lids(Lid(1), Lid::PERMISSIVE);
    s.fab.send_lid(s.fab.now(), s.sm, Lid(S2_LID), &q).unwrap();
    settle(&mut s.fab);
    let (_, r) = s.fab.poll_recv(s.sm).expect("answer");
    assert_eq!(r.tid, 60);
    assert_eq!(r.status, 0);
    let ni = NodeInfo::decode(&r.data);
    assert_eq!(ni.node_guid, s.fab.node_guid(s.h[2]).unwrap());
    assert_eq!(r.return_path[1], 1, "S2 -> H3 hop arrived on H3 port 1");
}

#[test]
fn mixed_mode_lid_routed_end() {
    // Directed H1 -> S1, then LID-routed to DrDLID = 3 (H3); the answer goes LID-routed
    // back to S1 and directed from there.
    let mut s = small(SimConfig::default());
    s.bring_up();
    let q = Smp::dr_get(61, NodeInfo::ID, 0, &[1])
        .unwrap()
        .with_dr_lids(Lid::PERMISSIVE, Lid(3));
    let r = dr(&mut s.fab, s.sm, &q).expect("answer");
    assert_eq!(r.status, 0);
    let ni = NodeInfo::decode(&r.data);
    assert_eq!(ni.node_guid, s.fab.node_guid(s.h[2]).unwrap());
    // Without LIDs the LID-routed part cannot be routed: no answer.
    let mut fresh = small(SimConfig::default());
    let q = Smp::dr_get(62, NodeInfo::ID, 0, &[1])
        .unwrap()
        .with_dr_lids(Lid::PERMISSIVE, Lid(3));
    assert!(dr(&mut fresh.fab, fresh.sm, &q).is_none());
}

#[test]
fn traps_repeat_until_repressed_when_configured() {
    let cfg = SimConfig {
        trap_repeat_ns: 1_000_000,
        trap_repeats: 3,
        ..SimConfig::default()
    };
    // Not repressed: the first copy and 3 repetitions, same TID.
    let mut s = small(cfg.clone());
    s.bring_up();
    s.fab
        .inject(
            s.fab.now(),
            Fault::LinkDown {
                node: s.s1,
                port: 2,
            },
        )
        .unwrap();
    settle(&mut s.fab);
    let traps: Vec<_> = others(&mut s.fab, s.sm)
        .into_iter()
        .filter(|r| r.smp.method == Method::TRAP)
        .collect();
    assert_eq!(traps.len(), 4);
    assert!(traps.iter().all(|r| r.smp.tid == traps[0].smp.tid));
    assert!(traps.windows(2).all(|w| w[1].time - w[0].time == 1_000_000));
    // Repressed after the first copy: no repetition.
    let mut s = small(cfg);
    s.bring_up();
    s.fab
        .inject(
            s.fab.now(),
            Fault::LinkDown {
                node: s.s1,
                port: 2,
            },
        )
        .unwrap();
    s.fab.run_until(s.fab.now() + 100_000);
    let first = s.fab.poll_recv_full(s.sm).expect("first trap");
    assert_eq!(first.smp.method, Method::TRAP);
    let mut rep = first.smp.clone();
    rep.method = Method::TRAP_REPRESS;
    s.fab.send_lid(s.fab.now(), s.sm, first.slid, &rep).unwrap();
    settle(&mut s.fab);
    assert!(
        others(&mut s.fab, s.sm)
            .iter()
            .all(|r| r.smp.method != Method::TRAP),
        "repressed: no repetition"
    );
}
