//! The `sm-node` binary: SIGINT after SUBNET UP stops it cleanly with guid2lid flushed;
//! `--exit-after-subnet-up` prints the summary; a bad partitions file refuses to start.

mod common;

use common::temp_dir;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_sm-node");

#[test]
fn sigint_after_subnet_up_stops_cleanly_and_flushes_guid2lid() {
    signal_after_subnet_up("INT");
}

#[test]
fn sigterm_after_subnet_up_stops_cleanly_and_flushes_guid2lid() {
    signal_after_subnet_up("TERM");
}

fn signal_after_subnet_up(sig: &str) {
    let dir = temp_dir(&format!("bin-sig{sig}"));
    let mut child = Command::new(BIN)
        .args([
            "--fabric",
            "sim:ft2:8",
            "--sweep-interval",
            "0",
            "--data-dir",
        ])
        .arg(&dir)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _guard = common::watchdog(child.id());
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut log = String::new();
    let mut line = String::new();
    while err.read_line(&mut line).unwrap() > 0 {
        log.push_str(&line);
        if line.contains("HEAVY SWEEP COMPLETE") {
            break;
        }
        line.clear();
    }
    assert!(log.contains("Entering MASTER state"), "{log}");
    assert!(log.contains("SUBNET UP"), "{log}");
    let st = Command::new("kill")
        .args([&format!("-{sig}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    for l in err.lines() {
        log.push_str(&l.unwrap());
        log.push('\n');
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{:?}\n{log}", out.status);
    assert!(log.contains(&format!("stopping (SIG{sig})")), "{log}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("SUBNET UP"), "{stdout}");
    // ft2 radix 8: 32 hosts and 12 switches, one LID each.
    let g2l = std::fs::read_to_string(dir.join("guid2lid")).unwrap();
    assert_eq!(g2l.lines().count(), 44, "{g2l}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn exit_after_subnet_up_prints_the_summary() {
    let out = Command::new(BIN)
        .args([
            "--fabric",
            "sim:torus:3x3x2",
            "--exit-after-subnet-up",
            "--routing-workers",
            "2",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    for want in [
        "discovery",
        "routing",
        "SUBNET UP",
        "36 nodes (18 switches)",
    ] {
        assert!(stdout.contains(want), "{want}: {stdout}");
    }
    assert!(!stdout.contains("not reached"), "{stdout}");
}

#[test]
fn a_bad_partitions_file_refuses_to_start_with_line_and_column() {
    let dir = temp_dir("bin-parts");
    let p = dir.join("partitions.conf");
    std::fs::write(
        &p,
        "Default=0x7fff : ALL=full ;\nBroken=0x0002 ALL=full ;\n",
    )
    .unwrap();
    let cfg = dir.join("node.toml");
    std::fs::write(
        &cfg,
        format!("fabric = \"sim:ft2:4\"\npartitions = \"{}\"\n", p.display()),
    )
    .unwrap();
    let out = Command::new(BIN)
        .arg("--config")
        .arg(&cfg)
        .arg("--exit-after-subnet-up")
        .env("RUST_LOG", "info")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("E_NODE_PARTITIONS"), "{err}");
    assert!(err.contains("partitions.conf:2:"), "{err}");
    assert!(out.stdout.is_empty(), "must not start");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_election_timeout_too_short_for_the_lease_is_refused() {
    let dir = temp_dir("bin-eticks");
    let out = Command::new(BIN)
        .args([
            "--id",
            "1",
            "--peers",
            "1=127.0.0.1:1",
            "--fabric",
            "sim:ft2:4",
        ])
        .args(["--insecure-loopback", "--election-ticks", "4", "--data-dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("E_NODE_CONFIG") && err.contains("--election-ticks 4"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A replica whose listen address is taken exits 1 with the reason as its last line (it
/// panicked on its way out before: the ended gRPC server's handle was awaited twice).
#[test]
fn a_replica_whose_address_is_taken_exits_1_saying_why() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let dir = temp_dir("bin-taken");
    let out = Command::new(BIN)
        .args(["--id", "1", "--peers"])
        .arg(format!("1=127.0.0.1:{port}"))
        .args(["--fabric", "sim:ft2:4", "--insecure-loopback", "--data-dir"])
        .arg(&dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.contains("E_NODE_GRPC")
            && last.contains(&format!("127.0.0.1:{port}"))
            && last.contains("in use"),
        "{err}"
    );
    drop(taken);
    std::fs::remove_dir_all(&dir).unwrap();
}
