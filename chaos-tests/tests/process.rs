//! Process level in CI: three sm-node processes on fabric-simd, three master kills with
//! other faults in between; every invariant holds and every kill is followed by a failover,
//! counted. How long failovers take is `chaos process`'s business (it prints the
//! distribution and checks a bound), never this test's: a wait here gives up only after its
//! patience in polls, as a liveness bound. The 100-kill run is `chaos process --kills 100`
//! (see docs/chaos.md).

use chaos_tests::process::{self, Options};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// The sm-node binary of this build: next to the test's target directory; built with the
/// cargo running this test when missing (`cargo test -p chaos-tests` alone does not build
/// other packages' binaries).
fn sm_node() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    // target/<profile>/deps/<test> -> target/<profile>/sm-node
    let dir = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("target profile directory")
        .to_path_buf();
    let bin = dir.join("sm-node");
    if !bin.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let release = dir.file_name().is_some_and(|n| n == "release");
        let mut c = Command::new(cargo);
        c.args(["build", "-p", "sm-node", "--bin", "sm-node"]);
        if release {
            c.arg("--release");
        }
        // Watchdog: a nested cargo that waits on a lock forever is killed, by PID.
        let mut child = c.spawn().expect("run cargo build for sm-node");
        let start = std::time::Instant::now();
        let st = loop {
            if let Some(st) = child.try_wait().expect("wait for cargo") {
                break st;
            }
            if start.elapsed() > Duration::from_secs(900) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("cargo build -p sm-node took over 15 min; build it first");
            }
            std::thread::sleep(Duration::from_millis(200));
        };
        assert!(
            st.success(),
            "cargo build -p sm-node failed; build it first"
        );
    }
    assert!(bin.exists(), "{} missing", bin.display());
    bin
}

/// Runs `opts` (in a fresh directory named after `name`) with three master kills and checks
/// what every run must show: no violation, each kill followed by a failover.
fn run_checked(name: &str, opts: Options) -> process::Report {
    let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    let opts = Options {
        sm_node: sm_node(),
        dir: dir.clone(),
        kills: 3,
        failover_bound: None,
        ..opts
    };
    let report = process::run(&opts).expect("the process-level run");
    println!("{report}");
    assert!(
        report.violations.is_empty(),
        "violations (logs in {}):\n{report}",
        dir.display()
    );
    assert_eq!(report.faults.get("kill -9 master"), Some(&3), "{report}");
    assert_eq!(report.failover_ms.len(), 3, "{report}");
    let _ = std::fs::remove_dir_all(&dir);
    report
}

#[test]
fn three_master_kills_with_faults_hold_every_invariant() {
    let report = run_checked(
        "chaos-ci",
        Options {
            seed: 11,
            extra_fault_p: 1.0,
            ..Options::default()
        },
    );
    // Every kill -9 of the master was followed by a failover, and every killed replica was
    // restarted.
    assert_eq!(report.faults.get("restart"), Some(&3), "{report}");
    assert!(report.checks > 100, "{report}");
    assert!(report.sets > 0, "the fabric accepted no Set at all");
    assert!(
        report.tables_compared > 0,
        "no P_Key table compared: {report}"
    );
}

/// Admin API clients compare-and-set and read the policy through random replicas while
/// masters are killed: the recorded history is linearizable (the checker's own tests, in
/// `chaos_tests::lincheck`, show it rejects stale reads and lost writes).
#[test]
fn client_history_under_master_kills_is_linearizable() {
    let report = run_checked(
        "chaos-ci-lin",
        Options {
            seed: 5,
            clients: 2,
            ..Options::default()
        },
    );
    assert!(
        report.client_ops > 0,
        "no client operation recorded: {report}"
    );
}
