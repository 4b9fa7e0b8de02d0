//! GMPs (SA-style MADs on QP1) between attached SMs and clients: LID-routed, P_Key
//! checked, in-process and over the socket.

mod common;

use common::*;
use fabric::{Lid, PKey};
use fabric_sim::client::SimClient;
use fabric_sim::{Delivery, DropReason, SimConfig, server};
use mad::PortInfo;

fn sa_mad(tid: u8) -> [u8; 256] {
    let mut m = [0u8; 256];
    m[0] = 1; // base version
    m[1] = 0x03; // SA class
    m[2] = 2;
    m[3] = 0x01; // Get
    m[15] = tid;
    m[100] = 0xAB;
    m
}

#[test]
fn gmps_travel_between_client_and_sm_with_pkey_checks() {
    let mut s = small(SimConfig::default());
    s.bring_up();
    let client = s.fab.attach_client(s.hg(2)).unwrap();
    assert_eq!(
        s.fab.port_info(s.h[1], 1).unwrap().capability_mask & PortInfo::CAP_IS_SM,
        0,
        "a client is not an SM"
    );
    let now = s.fab.now();
    let d = s
        .fab
        .send_gmp(now, client, Lid(1), PKey(0xFFFF), &sa_mad(1))
        .unwrap();
    assert_eq!(
        d,
        Delivery::Delivered {
            dst_port: s.hg(1),
            hops: 2
        }
    );
    settle(&mut s.fab);
    let g = s.fab.poll_recv_gmp(s.sm).expect("SM got the query");
    assert_eq!(g.slid, Lid(2));
    assert_eq!(g.pkey, PKey(0xFFFF));
    assert_eq!(g.mad, sa_mad(1));
    assert!(g.time > now);
    // The SM answers to the requester's LID.
    let mut resp = sa_mad(1);
    resp[3] = 0x81;
    let d = s
        .fab
        .send_gmp(s.fab.now(), s.sm, g.slid, g.pkey, &resp)
        .unwrap();
    assert!(d.is_delivered());
    settle(&mut s.fab);
    assert_eq!(s.fab.poll_recv_gmp(client).unwrap().mad, resp);
    // Nobody attached at H5: dropped.
    assert_eq!(
        s.fab
            .send_gmp(s.fab.now(), s.sm, Lid(5), PKey(0xFFFF), &resp)
            .unwrap(),
        Delivery::Dropped(DropReason::NoReceiver)
    );
    // P_Keys apply: H2 limited in partition 1 only cannot use the default partition,
    // and cannot reach the SM (default partition only) in partition 1.
    let mut t = mad::PKeyTable::default();
    t.keys[0] = PKey(0x0001);
    dr_set(&mut s.fab, s.sm, H_PATHS[1], 0, &t).unwrap();
    assert_eq!(
        s.fab
            .send_gmp(s.fab.now(), client, Lid(1), PKey(0xFFFF), &sa_mad(2))
            .unwrap(),
        Delivery::Dropped(DropReason::SourcePKey)
    );
    assert_eq!(
        s.fab
            .send_gmp(s.fab.now(), client, Lid(1), PKey(0x0001), &sa_mad(3))
            .unwrap(),
        Delivery::Dropped(DropReason::DestinationPKey {
            node: s.h[0],
            port: 1
        })
    );
    let c = &s.fab.accounting().counters;
    assert_eq!((c.gmps_sent, c.gmps_delivered, c.gmps_dropped), (5, 2, 3));
}

#[test]
fn gmps_over_the_socket() {
    let mut s = small(SimConfig::default());
    s.bring_up();
    let mut fab = s.fab;
    fab.detach(s.sm).unwrap();
    let dir = std::env::temp_dir().join(format!("fabric-sim-gmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("g.sock");
    let srv = server::spawn(fab, &path).unwrap();
    let mut sm = SimClient::connect(&path).unwrap();
    sm.attach("H1").unwrap();
    let mut cl = SimClient::connect(&path).unwrap();
    cl.attach_client("H4").unwrap();
    cl.send_gmp(Lid(1), PKey(0xFFFF), &sa_mad(7)).unwrap();
    let g = sm.recv_gmp().unwrap();
    assert_eq!((g.slid, g.mad), (Lid(4), sa_mad(7)));
    let mut resp = sa_mad(7);
    resp[3] = 0x81;
    sm.send_gmp(g.slid, g.pkey, &resp).unwrap();
    let r = cl.recv_gmp().unwrap();
    assert_eq!((r.slid, r.mad), (Lid(1), resp));
    // A GMP frame of the wrong size closes that client only.
    let mut bad = SimClient::connect(&path).unwrap();
    bad.attach_client("H5").unwrap();
    bad.send_raw(&fabric_sim::protocol::frame(0x08, &[0u8; 10]))
        .unwrap();
    assert!(
        bad.recv_gmp()
            .unwrap_err()
            .to_string()
            .contains("SIMD-E020")
    );
    cl.send_gmp(Lid(1), PKey(0xFFFF), &sa_mad(8)).unwrap();
    assert_eq!(sm.recv_gmp().unwrap().mad, sa_mad(8));
    srv.shutdown();
    let _ = std::fs::remove_dir_all(&dir);
}
