//! A three-replica Raft cluster next to OpenSM on ibsim (net.2sw2path4hca; replicas at
//! Hca1..Hca3 started with `--peer-sm-guids`, OpenSM at Hca4), the IBA 14.4.1 rules with
//! the cluster as one SM:
//!
//! * OpenSM `-p 15` masters first: the cluster's master (the Raft leader's) stands by with
//!   0 Sets, no replica reaches SUBNET UP, `sminfo` names OpenSM. OpenSM is stopped: the
//!   leader takes over, reads the LFT blocks back and writes only those found wrong, and
//!   `sminfo` names it.
//! * The cluster (`--priority 10`) masters first, OpenSM `-p 0` starts: OpenSM enters
//!   STANDBY. The leader is killed (SIGKILL): a new leader masters within the failover
//!   bound and OpenSM stays STANDBY.
//!
//! Every process runs with a deadline and is killed by PID on every path (drop guards).
//! When ibsim, OpenSM or the diags are missing the tests fail under `CI=true` and print
//! `SKIPPED: ...` otherwise (testenv).

mod foreign_ibsim;
mod ibsim_common;

use foreign_ibsim::*;
use ibsim_common::*;
use std::path::Path;
use std::time::{Duration, Instant};
use umad::testing::{Ibsim, NET_2SW2PATH4HCA};

/// The replicas' SM port GUIDs (Hca1..Hca3 of net.2sw2path4hca), by index.
const REPLICA_PORTS: [u64; 3] = [0x100001, 0x100004, 0x100007];
/// Hca4's port GUID: OpenSM's.
const OPENSM_PORT: u64 = 0x10000a;

/// Starts the three replicas (sweep interval 1 s, SM priority `priority`), each told the
/// replicas' SM ports. `slot` keeps the listen ports of the tests of this binary (they run
/// at the same time, in one process) apart.
fn start_cluster(sim: &Ibsim, priority: u8, slot: u16) -> Vec<Option<Watched>> {
    let base = 21000 + (std::process::id() % 1000) as u16 * 6 + slot * 3;
    let peers: String = (1..=3)
        .map(|i| format!("{i}=127.0.0.1:{}", base + i))
        .collect::<Vec<_>>()
        .join(",");
    let guids = REPLICA_PORTS
        .iter()
        .map(|g| format!("{g:#x}"))
        .collect::<Vec<_>>()
        .join(",");
    (1..=3u16)
        .map(|i| {
            let dir = sim.dir().join(format!("r{i}"));
            std::fs::create_dir_all(&dir).unwrap();
            let mut c = sim.client(env!("CARGO_BIN_EXE_sm-node"), Some(&format!("Hca{i}")));
            c.current_dir(&dir)
                .args(["--id", &i.to_string(), "--peers", &peers])
                .args(["--initial-cluster-state", "new", "--data-dir"])
                .arg(dir.join("data"))
                .args([
                    "--fabric",
                    "umad:/dev/infiniband/umad0",
                    "--sweep-interval",
                    "1",
                    "--priority",
                    &priority.to_string(),
                    "--peer-sm-guids",
                    &guids,
                    "--insecure-loopback",
                ])
                .env("RUST_LOG", "info");
            Some(Watched::spawn(c, &format!("replica-{i}"), sim.dir(), true))
        })
        .collect()
}

/// Reads the replicas' logs until one line matches `pred`: (replica index, line).
fn wait_any(
    reps: &mut [Option<Watched>],
    what: &str,
    pred: impl Fn(&str) -> bool,
) -> (usize, String) {
    let end = Instant::now() + WAIT;
    let mut seen = vec![0usize; reps.len()];
    loop {
        for (i, r) in reps.iter_mut().enumerate() {
            let Some(r) = r.as_mut() else { continue };
            let log = r.drain();
            if let Some(l) = log[seen[i]..].iter().find(|l| pred(l)) {
                return (i, l.clone());
            }
            seen[i] = log.len();
        }
        assert!(Instant::now() < end, "no replica logged {what}");
        // Polling log files for a line, not waiting for time to pass.
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Lines matching `pred` in every replica's log so far.
fn lines_all(reps: &mut [Option<Watched>], pred: impl Fn(&str) -> bool) -> Vec<String> {
    reps.iter_mut()
        .flatten()
        .flat_map(|r| {
            r.drain()
                .iter()
                .filter(|l| pred(l))
                .cloned()
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The GUID of the MASTER `sminfo` at Hca4 names (None: no MASTER answer).
fn master_guid(sim: &Ibsim) -> Option<u64> {
    let o = sim
        .run_tool("sminfo", &[], Some("Hca4"), TOOL_TIMEOUT)
        .ok()?;
    (o.success() && o.stdout.contains("SMINFO_MASTER")).then(|| parse_sminfo(&o.stdout).1)
}

#[test]
fn cluster_stands_by_for_opensm_then_takes_over() {
    if !ready("cluster_stands_by_for_opensm_then_takes_over", &["opensm"]) {
        return;
    }
    let sim = Ibsim::start(Path::new(NET_2SW2PATH4HCA), &[]).expect("ibsim");
    let mut osm = start_opensm(&sim, "Hca4", 15);
    osm.wait_for("SUBNET UP", |l| l.contains("SUBNET UP"));
    let mut reps = start_cluster(&sim, 0, 0);
    let (leader, standby) = wait_any(&mut reps, "STANDBY for OpenSM", |l| {
        l.contains("Entering STANDBY state (master ")
    });
    assert_eq!(hex_after(&standby, "master "), OPENSM_PORT, "{standby}");
    assert_eq!(num_before(&standby, " Sets sent so far"), 0, "{standby}");
    assert_sminfo_master(&sim, OPENSM_PORT, 15, "sminfo names OpenSM");
    // Five more poll intervals: still nobody but OpenSM masters.
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(5) {
        // Waiting out the standby polls whose absence of Sets is the point.
        std::thread::sleep(Duration::from_millis(250));
    }
    let wrote = lines_all(&mut reps, |l| {
        l.contains("SUBNET UP")
            || l.contains("PROGRAMMING COMPLETE")
            || l.contains("Entering MASTER state (priority 0)")
    });
    assert!(
        wrote.is_empty(),
        "a replica programmed while OpenSM mastered:\n{}",
        wrote.join("\n")
    );
    assert_sminfo_master(&sim, OPENSM_PORT, 15, "sminfo still names OpenSM");

    // OpenSM goes away: the leader (whichever replica leads then) takes over.
    let osm_log = osm.terminate();
    let stopped = Instant::now();
    let (_, gone) = wait_any(&mut reps, "master gone", |l| {
        l.contains("did not answer") || l.contains("now reports")
    });
    assert_eq!(num_before(&gone, " Sets sent so far"), 0, "{gone}");
    let (new, check) = wait_any(&mut reps, "LFT CHECK", |l| l.contains("LFT CHECK COMPLETE"));
    let read = num_before(&check, " blocks read back");
    let kept = num_before(&check, " already right");
    let (_, prog) = wait_any(&mut reps, "PROGRAMMING COMPLETE", |l| {
        l.contains("PROGRAMMING COMPLETE")
    });
    let written = num_before(&prog, " LFT blocks,");
    assert_eq!(written, read - kept, "only blocks found wrong are written");
    wait_any(&mut reps, "MASTER", |l| {
        l.contains("Entering MASTER state (priority 0)")
    });
    let took = stopped.elapsed();
    assert_sminfo_master(&sim, REPLICA_PORTS[new], 0, "sminfo names the leader");
    println!("{standby}\n{gone}\n{check}\n{prog}");
    println!(
        "stood by at replica {}; takeover by replica {} {:.1} s after OpenSM exited; OpenSM logged {} lines",
        leader + 1,
        new + 1,
        took.as_secs_f64(),
        osm_log.len()
    );
    drop(reps);
    sim.stop();
}

#[test]
fn opensm_stands_by_next_to_the_cluster_across_a_leader_kill() {
    if !ready(
        "opensm_stands_by_next_to_the_cluster_across_a_leader_kill",
        &["opensm"],
    ) {
        return;
    }
    let sim = Ibsim::start(Path::new(NET_2SW2PATH4HCA), &[]).expect("ibsim");
    let mut reps = start_cluster(&sim, 10, 1);
    let (leader, _) = wait_any(&mut reps, "SUBNET UP", |l| l.contains("SUBNET UP after"));
    assert_sminfo_master(&sim, REPLICA_PORTS[leader], 10, "sminfo names the leader");
    let mut osm = start_opensm(&sim, "Hca4", 0);
    let line = osm.wait_for("OpenSM STANDBY or MASTER", |l| {
        l.contains("Entering STANDBY state") || l.contains("Entering MASTER state")
    });
    assert!(
        line.contains("Entering STANDBY state"),
        "OpenSM (priority 0) did not yield to the cluster (priority 10): {line}\n{}",
        osm.drain().join("\n")
    );
    assert_sminfo_master(&sim, REPLICA_PORTS[leader], 10, "sminfo names the leader");

    // kill -9 of the leader: another replica masters, OpenSM stays STANDBY.
    if let Some(mut r) = reps[leader].take() {
        let _ = r.child.kill();
        let _ = r.child.wait();
    }
    let killed = Instant::now();
    let end = killed + SM_DEADLINE;
    let new = loop {
        if let Some(guid) = master_guid(&sim)
            && guid != REPLICA_PORTS[leader]
            && REPLICA_PORTS.contains(&guid)
        {
            break guid;
        }
        assert!(Instant::now() < end, "no new master");
        std::thread::sleep(Duration::from_millis(100));
    };
    let failover = killed.elapsed();
    // OpenSM's standby polls the master it knew (the killed replica) every 10 s and gives
    // up on it after 4 misses; watch it for `QSM_OPENSM_WATCH_S` seconds more (default 12:
    // past its first missed poll).
    let watch: u64 = std::env::var("QSM_OPENSM_WATCH_S")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    let watch_end = killed + Duration::from_secs(watch);
    while Instant::now() < watch_end {
        // Watching OpenSM's log for a state change over a fixed window.
        std::thread::sleep(Duration::from_millis(250));
        assert!(
            !osm.drain()
                .iter()
                .any(|l| l.contains("Entering MASTER state")),
            "OpenSM took over after the leader was killed:\n{}",
            osm.drain().join("\n")
        );
    }
    let new_now = master_guid(&sim).expect("a master after the watch");
    assert_eq!(new_now, new, "the new master kept the subnet");
    assert!(
        failover < Duration::from_secs(20),
        "failover took {:.1} s",
        failover.as_secs_f64()
    );
    assert!(
        !osm.drain()
            .iter()
            .any(|l| l.contains("Entering MASTER state")),
        "OpenSM took over during the failover:\n{}",
        osm.drain().join("\n")
    );
    println!(
        "{line}\nleader replica {} killed; new master {new:#x} after {:.1} s; OpenSM still STANDBY {watch} s after the kill",
        leader + 1,
        failover.as_secs_f64()
    );
    drop(osm);
    drop(reps);
    sim.stop();
}
