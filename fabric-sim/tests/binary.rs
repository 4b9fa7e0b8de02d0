//! The fabric-simd binary end to end: start it on a generated fabric, attach two clients
//! over its socket, query, stop it.

use fabric::{GenSpec, Lid};
use fabric_sim::client::SimClient;
use mad::{NodeInfo, Smp, SmpAttribute};
use serde_json::json;
use std::process::{Command, Stdio};

#[test]
fn fabric_simd_serves_a_generated_fabric() {
    let dir = std::env::temp_dir().join(format!("fabric-simd-bin-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("simd.sock");
    let topo = "ft2:8".parse::<GenSpec>().unwrap().generate().unwrap();
    let (sw, _) = topo.switches().next().unwrap();
    let sw_guid = topo.node(sw).node_guid;
    // The last port of the first switch is unplugged by the start-up script.
    let last = topo.node(sw).num_ports();
    let script = dir.join("faults.jsonl");
    std::fs::write(
        &script,
        format!(
            "# start-up faults\n{{\"op\":\"link_down\",\"node\":\"{:#x}\",\"port\":{last}}}\n",
            sw_guid.0
        ),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_fabric-simd"))
        .args(["--topology", "ft2:8", "--seed", "3", "--script"])
        .arg(&script)
        .arg("--socket")
        .arg(&sock)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait for the socket to accept (startup), bounded.
    let mut conn = None;
    for _ in 0..500 {
        if let Ok(c) = SimClient::connect(&sock) {
            conn = Some(c);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let mut a = conn.expect("fabric-simd accepts connections");
    let mut b = SimClient::connect(&sock).unwrap();
    let hosts: Vec<_> = topo
        .cas()
        .take(2)
        .map(|(id, n)| (id, n.ports[1].guid))
        .collect();
    for (c, (_, g)) in [(&mut a, hosts[0]), (&mut b, hosts[1])] {
        let r = c.attach(&format!("{:#x}", g.0)).unwrap();
        assert_eq!(r["port_guid"], format!("{:#018x}", g.0));
    }
    for (i, (c, (id, g))) in [(&mut a, hosts[0]), (&mut b, hosts[1])]
        .into_iter()
        .enumerate()
    {
        let q = Smp::dr_get(i as u64, NodeInfo::ID, 0, &[]).unwrap();
        c.send(Lid::PERMISSIVE, &q).unwrap();
        let (_, _, r) = c.recv().unwrap();
        let ni = NodeInfo::decode(&r.data);
        assert_eq!(ni.port_guid, g);
        assert_eq!(ni.node_guid, topo.node(id).node_guid);
        assert_eq!(ni.local_port_num, 1);
    }
    let r = a.control(&json!({"op": "counters"})).unwrap();
    assert_eq!(r["counters"]["sma_requests"], 2);
    let r = a
        .control(&json!({"op": "port_state", "node": format!("{:#x}", sw_guid.0), "port": last}))
        .unwrap();
    assert_eq!(r["state"], 1, "the script took the link down");
    child.kill().unwrap();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
}
