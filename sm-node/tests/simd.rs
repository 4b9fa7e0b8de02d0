//! The fabric-simd socket transport: the daemon attached through a Unix socket at a named
//! CA port reaches SUBNET UP. Once against fabric-simd's server running on threads of this
//! test (`fabric_sim::server::spawn`, the code behind the binary), once against the
//! `fabric-simd` binary as a separate process when it is built.

mod common;

use common::*;
use fabric::PKey;
use fabric_sim::{SimConfig, SimFabric};
use sm_node::daemon;
use sm_node::master::Shutdown;
use sm_node::milestone::MilestoneKind;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Runs the daemon against the socket until its first heavy sweep completes, then stops it.
fn run_daemon(socket: &Path, port: &str) {
    let cfg = cfg(&format!("simd:{}@{port}", socket.display()), 2);
    actix_rt::System::new().block_on(async {
        let (attached, sim) = daemon::attach(&cfg).unwrap();
        assert!(sim.is_none());
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let master = daemon::start_master(&cfg, attached, vec![tx]).unwrap();
        wait_subnet_up(&mut rx).await;
        master.send(Shutdown).await.unwrap();
        wait_for(&mut rx, "Stopped", |k| {
            matches!(k, MilestoneKind::Stopped { .. })
        })
        .await;
    });
}

#[test]
fn daemon_over_the_socket_brings_ft2_up() {
    let dir = temp_dir("simd-inproc");
    let spec = "ft2:8";
    let t = daemon::load_topology(spec).unwrap();
    let sim = SimFabric::new(&t, SimConfig::default()).unwrap();
    let server = fabric_sim::server::spawn(sim, &dir.join("simd.sock")).unwrap();
    let port = format!("0x{:016x}", ca_ports(&t)[3].2.0);
    run_daemon(server.path(), &port);
    // Check the fabric through the server's own handle.
    server.with_sim(|s| {
        for &(n, p, g) in &ca_ports(&t) {
            assert_eq!(
                s.port_state(n, p).unwrap(),
                fabric::PortState::Active,
                "{g}"
            );
        }
        let cas = ca_ports(&t);
        for &(_, _, a) in &cas {
            for &(n, p, b) in &cas {
                if a != b {
                    let lid = s.port_info(n, p).unwrap().lid;
                    let d = s.deliver(a, lid, PKey(0xFFFF));
                    assert!(d.is_delivered(), "{a} -> {b}: {d:?}");
                }
            }
        }
    });
    server.shutdown();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn master_stops_when_fabric_simd_goes_away() {
    let dir = temp_dir("simd-gone");
    let t = daemon::load_topology("ft2:4").unwrap();
    let sim = SimFabric::new(&t, SimConfig::default()).unwrap();
    let server = fabric_sim::server::spawn(sim, &dir.join("simd.sock")).unwrap();
    let port = format!("0x{:016x}", ca_ports(&t)[0].2.0);
    let cfg = cfg(&format!("simd:{}@{port}", server.path().display()), 1);
    actix_rt::System::new().block_on(async {
        let (attached, _) = daemon::attach(&cfg).unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let _master = daemon::start_master(&cfg, attached, vec![tx]).unwrap();
        wait_subnet_up(&mut rx).await;
        server.shutdown();
        // The master notices the closed socket by itself and stops, saying why: its reader
        // sees the end of the stream, or a send in flight fails first (broken pipe).
        wait_for(&mut rx, "Stopped (transport closed)", |k| {
            matches!(k, MilestoneKind::Stopped { reason }
                if reason.contains("transport closed") || reason.starts_with("E_NODE_TRANSPORT_IO"))
        })
        .await;
    });
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `fabric-simd` next to this test's executable (target/<profile>/), if built.
fn simd_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let profile_dir = exe.parent()?.parent()?;
    let bin = profile_dir.join("fabric-simd");
    bin.is_file().then_some(bin)
}

#[test]
fn daemon_over_the_socket_of_a_fabric_simd_process() {
    let Some(bin) = simd_binary() else {
        // `cargo test --workspace` builds it; `cargo test -p sm-node` alone does not.
        testenv::skip(
            "daemon_over_the_socket_of_a_fabric_simd_process",
            "fabric-simd not built next to this test",
            "run `cargo build -p fabric-sim` or the whole suite with scripts/test.sh",
        );
        return;
    };
    let dir = temp_dir("simd-proc");
    let socket = dir.join("simd.sock");
    // Killed on drop: also when an assertion fails first (a failed run left it running).
    let mut child = Killed(
        Command::new(&bin)
            .args(["--topology", "torus:3x3x2", "--socket"])
            .arg(&socket)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // Ready when it logs SIMD-I001 (blocking reads; the process's exit ends them).
    let mut err = BufReader::new(child.0.stderr.take().unwrap());
    let mut line = String::new();
    let mut ready = false;
    while err.read_line(&mut line).unwrap() > 0 {
        if line.contains("SIMD-I001") {
            ready = true;
            break;
        }
        line.clear();
    }
    assert!(ready, "fabric-simd never became ready");
    // Keep draining its log so it never blocks on a full pipe.
    std::thread::spawn(move || for _ in err.lines() {});
    let t = daemon::load_topology("torus:3x3x2").unwrap();
    let port = format!("0x{:016x}", ca_ports(&t)[0].2.0);
    run_daemon(&socket, &port);
    // Every CA port ACTIVE (PortState 4) with a LID, and every pair delivers, checked by a
    // second client through the control protocol.
    let mut c = fabric_sim::client::SimClient::connect(&socket).unwrap();
    let mut lids = Vec::new();
    for &(_, p, g) in &ca_ports(&t) {
        let node = format!("0x{:016x}", g.0);
        let v = c
            .control(&serde_json::json!({"op": "port_state", "node": node, "port": p}))
            .unwrap();
        assert_eq!(
            (v["ok"].as_bool(), v["state"].as_u64()),
            (Some(true), Some(4)),
            "{g}: {v}"
        );
        let lid = v["lid"].as_u64().unwrap();
        assert_ne!(lid, 0, "{g}: {v}");
        lids.push((node, lid));
    }
    for (a, _) in &lids {
        for (b, lid) in &lids {
            if a != b {
                let v = c
                    .control(&serde_json::json!({"op": "deliver", "src": a, "dlid": lid, "pkey": 0xFFFF}))
                    .unwrap();
                assert!(v["delivery"].get("Delivered").is_some(), "{a} -> {b}: {v}");
            }
        }
    }
    drop(child);
    std::fs::remove_dir_all(&dir).unwrap();
}
