//! fabric-simd over a real Unix socket in a temporary directory: several clients
//! attached at different CA ports each see their own port's view; malformed frames
//! close only the offending client.

mod common;

use common::*;
use fabric::Lid;
use fabric_sim::client::SimClient;
use fabric_sim::{SimConfig, server};
use mad::{NodeInfo, PortInfo, Smp, SmpAttribute};
use serde_json::json;
use std::path::PathBuf;

fn sock(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fabric-sim-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("sim.sock")
}

fn node_info(c: &mut SimClient, path: &[u8], tid: u64) -> NodeInfo {
    let q = Smp::dr_get(tid, NodeInfo::ID, 0, path).unwrap();
    c.send(Lid::PERMISSIVE, &q).unwrap();
    loop {
        let (_, _, r) = c.recv().unwrap();
        if r.tid == tid {
            assert_eq!(r.status, 0);
            return NodeInfo::decode(&r.data);
        }
    }
}

#[test]
fn two_clients_at_different_ca_ports_see_their_own_view() {
    let s = small(SimConfig::default());
    let (h, s1, s2) = (s.h.clone(), s.s1, s.s2);
    let guids: Vec<_> = (1..=5).map(|i| s.hg(i)).collect();
    let node_guids: Vec<_> = h.iter().map(|n| s.fab.node_guid(*n).unwrap()).collect();
    let s1g = s.fab.node_guid(s1).unwrap();
    let s2g = s.fab.node_guid(s2).unwrap();
    // The Small helper attached an in-process SM at H1; serve a fresh fabric instead.
    drop(s);
    let fresh = small(SimConfig::default());
    let mut fab = fresh.fab;
    fab.detach(fresh.sm).unwrap();
    let path = sock("two");
    let srv = server::spawn(fab, &path).unwrap();

    let mut a = SimClient::connect(&path).unwrap();
    let mut b = SimClient::connect(&path).unwrap();
    let ra = a.attach("H2").unwrap();
    let rb = b.attach(&format!("{:#x}", guids[3].0)).unwrap();
    assert_eq!(ra["port"], 1);
    assert_eq!(ra["port_guid"], format!("{:#018x}", guids[1].0));
    assert_eq!(rb["node_guid"], format!("{:#018x}", node_guids[3].0));

    // Hop count 0: each reaches its own HCA, LocalPortNum and PortGUID of its own port.
    let na = node_info(&mut a, &[], 1);
    let nb = node_info(&mut b, &[], 2);
    assert_eq!(na.node_guid, node_guids[1]);
    assert_eq!(na.port_guid, guids[1]);
    assert_eq!(na.local_port_num, 1);
    assert_eq!(nb.node_guid, node_guids[3]);
    assert_eq!(nb.port_guid, guids[3]);
    // One hop: A (H2) reaches S1 on port 2, B (H4) reaches S2 on port 2.
    let na = node_info(&mut a, &[1], 3);
    let nb = node_info(&mut b, &[1], 4);
    assert_eq!((na.node_guid, na.local_port_num), (s1g, 2));
    assert_eq!((nb.node_guid, nb.local_port_num), (s2g, 2));
    // Same path seen from the other side: A -> S1 -> S2 arrives on S2 port 3.
    let na = node_info(&mut a, &[1, 3], 5);
    assert_eq!((na.node_guid, na.local_port_num), (s2g, 3));
    // PortInfo of their own ports: IsSM set by attaching.
    let q = Smp::dr_get(6, PortInfo::ID, 0, &[]).unwrap();
    a.send(Lid::PERMISSIVE, &q).unwrap();
    let (_, _, r) = a.recv().unwrap();
    let pi = PortInfo::decode(&r.data);
    assert_ne!(pi.capability_mask & PortInfo::CAP_IS_SM, 0);
    assert_eq!(pi.local_port_num, 1);

    // Control requests work from any client, and accounting sees both sources.
    let c = a.control(&json!({"op": "accounting"})).unwrap();
    assert_eq!(c["ok"], true);
    assert_eq!(c["per_source"].as_array().unwrap().len(), 2);
    let c = b.control(&json!({"op": "counters"})).unwrap();
    assert_eq!(c["counters"]["sma_requests"], 6);

    // A second SM cannot attach at an occupied port.
    let mut dup = SimClient::connect(&path).unwrap();
    assert!(dup.attach("H2").is_err());
    let mut nobody = SimClient::connect(&path).unwrap();
    let e = nobody.attach("no-such-node").unwrap_err();
    assert!(e.to_string().contains("SIMD-E013"), "{e}");

    srv.with_sim(|f| assert_eq!(f.accounting().counters.delivered_to_sm, 6));
    // Inspection requests.
    let r = a.control(&json!({"op": "lft", "node": "S1"})).unwrap();
    assert_eq!(r["lft"], json!([255]), "top 0, nothing programmed");
    let r = a
        .control(&json!({"op": "pkeys", "node": "H3", "port": 1}))
        .unwrap();
    assert_eq!(r["pkeys"], json!([[0, 0xFFFF]]));
    let r = a
        .control(&json!({"op": "deliver_many", "pairs": [["H1", 3, 0xFFFF], ["H2", 4, 0xFFFF]]}))
        .unwrap();
    assert_eq!(r["deliveries"].as_array().unwrap().len(), 2);
    assert_eq!(r["deliveries"][0], json!({"Dropped": "SourceNotActive"}));
    srv.shutdown();
}

#[test]
fn malformed_frames_close_only_that_client() {
    let fresh = small(SimConfig::default());
    let mut fab = fresh.fab;
    fab.detach(fresh.sm).unwrap();
    let path = sock("bad");
    let srv = server::spawn(fab, &path).unwrap();
    let mut good = SimClient::connect(&path).unwrap();
    good.attach("H1").unwrap();
    let bad_inputs: Vec<Vec<u8>> = vec![
        vec![0, 0, 0, 0],                                 // zero length
        vec![0xFF, 0xFF, 0xFF, 0xFF, 1],                  // oversized
        vec![0, 0, 0, 2, 0x77, 0],                        // unknown type
        vec![0, 0, 0, 4, 0x03, 1, 2, 3],                  // short MAD
        fabric_sim::protocol::frame(0x03, &[0u8; 258]),   // MAD before attach (class 0)
        fabric_sim::protocol::frame(0x01, &[0xFF, 0xFE]), // attach name not UTF-8
        fabric_sim::protocol::frame(0x04, b"{not json"),  // bad control: answered, not fatal
    ];
    for (i, raw) in bad_inputs.iter().enumerate() {
        let mut c = SimClient::connect(&path).unwrap();
        c.send_raw(raw).unwrap();
        if i == 6 {
            // The first answer is the one to the bad request, the second to "time".
            let r = c.control(&json!({"op": "time"})).unwrap();
            assert_eq!(r["ok"], false);
            assert!(r["error"].as_str().unwrap().contains("SIM-E020"));
            let r = c.control(&json!({"op": "time"})).unwrap();
            assert_eq!(r["ok"], true);
            continue;
        }
        let e = c.recv().unwrap_err();
        assert!(e.to_string().contains("SIMD-E"), "input {i}: {e}");
    }
    // An attached client sending a MAD that is not an SMP is closed too.
    let mut c = SimClient::connect(&path).unwrap();
    c.attach("H3").unwrap();
    let mut junk = [0u8; 256];
    junk[1] = 0x03; // SA class
    c.send_raw(&fabric_sim::protocol::frame(
        0x03,
        &fabric_sim::protocol::mad_out(0xFFFF, &junk),
    ))
    .unwrap();
    assert!(c.recv().unwrap_err().to_string().contains("SIMD-E017"));
    // The good client is unaffected.
    let ni = node_info(&mut good, &[1], 9);
    assert_eq!(ni.node_type, 2);
    srv.shutdown();
}
