//! How a replica process ends: SIGTERM is a graceful stop with exit status 0 and a last log
//! line saying so; a replica whose storage fails logs `E_NODE_STORAGE` and stops with a
//! non-zero status and a last log line saying why (`E_NODE_FATAL`). Waits are counted in polls
//! (a failure bound, not a speed claim).

use proto::admin::sm_admin_client::SmAdminClient;
use proto::admin::{ApplyPolicyRequest, ClusterStatusRequest};
use sm_node::cluster::harness::LocalCluster;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Polls of a wait, 20 ms apart: about a minute on an idle machine.
const POLLS: u32 = 3000;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn dir(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("smnode-life-{name}-{}", std::process::id()))
}

/// The last non-empty line of `text`.
fn last_line(text: &str) -> &str {
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
}

#[test]
fn sigterm_on_a_follower_exits_0_with_a_last_line_saying_it_stopped() {
    let d = dir("sigterm");
    let mut c = LocalCluster::new(
        &PathBuf::from(env!("CARGO_BIN_EXE_sm-node")),
        "ft2:4",
        3,
        &d,
    )
    .unwrap();
    c.start_all().unwrap();
    let leader = rt().block_on(async {
        c.wait_serving(0, Duration::from_secs(60))
            .await
            .unwrap()
            .leader_id
    });
    let follower = (1..=3).find(|i| *i != leader).unwrap();
    let exit = c.terminate(follower, POLLS);
    assert!(
        exit.is_some_and(|e| e.success()),
        "follower {follower} after SIGTERM: {exit:?}"
    );
    let log = std::fs::read_to_string(d.join(format!("replica{follower}.log"))).unwrap();
    assert!(
        last_line(&log).contains(&format!("replica {follower} stopped")),
        "last line: {:?}",
        last_line(&log)
    );
    assert!(log.contains("stopping (SIGTERM)"), "{log}");
    // The other two still commit.
    rt().block_on(async {
        let mut a = c.admin(leader).unwrap();
        a.apply_policy(ApplyPolicyRequest {
            text: "Default=0x7fff : ALL=full ;\n".into(),
            expected_version: 0,
            request_id: 0,
        })
        .await
        .unwrap();
    });
    drop(c);
    if std::env::var_os("SMNODE_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&d);
    }
}

/// A replica process killed by PID on drop.
struct Proc {
    child: Child,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A single-voter cluster whose sled storage starts failing once it is serving: the file
/// size limit of the process is lowered (RLIMIT_FSIZE, with SIGXFSZ ignored so that the
/// write fails with EFBIG instead of killing the process), then a write larger than the
/// limit is proposed. The replica must log E_NODE_STORAGE and exit non-zero, its last line
/// saying why (`E_NODE_FATAL: replica 1: ...`).
#[test]
fn a_replica_whose_storage_fails_exits_non_zero_saying_why() {
    let d = dir("fatal");
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sm-node"));
    cmd.args(["--id", "1", "--initial-cluster-state", "new", "--peers"])
        .arg(format!("1={addr}"))
        .arg("--data-dir")
        .arg(d.join("r1"))
        .args([
            "--fabric",
            "sim:ft2:4",
            "--sweep-interval",
            "0",
            "--insecure-loopback",
        ])
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        // A pipe: the file size limit does not apply to it, so the log survives.
        .stderr(Stdio::piped());
    // SAFETY: signal(2) is async-signal-safe; it only sets this child's disposition, which
    // exec keeps for an ignored signal.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    let log = Arc::new(Mutex::new(String::new()));
    let stderr = child.stderr.take().unwrap();
    {
        let log = log.clone();
        std::thread::spawn(move || {
            for l in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut g = log.lock().unwrap();
                g.push_str(&l);
                g.push('\n');
            }
        });
    }
    let mut p = Proc { child };
    let text = move || p_log(&log);
    rt().block_on(async {
        let ch = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
            .unwrap()
            .timeout(Duration::from_secs(30))
            .connect_lazy();
        let mut a = SmAdminClient::new(ch);
        let mut up = false;
        for _ in 0..POLLS {
            if let Ok(s) = a.cluster_status(ClusterStatusRequest::default()).await
                && s.get_ref().subnet_up_unix_ms != 0
            {
                up = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(up, "the replica never served:\n{}", text());
        // From now on no file of the process may grow past 64 KiB.
        let lim = libc::rlimit {
            rlim_cur: 64 * 1024,
            rlim_max: 64 * 1024,
        };
        // SAFETY: prlimit(2) on our own child's pid, with a valid rlimit and no old value.
        let r = unsafe {
            libc::prlimit(
                p.child.id() as libc::pid_t,
                libc::RLIMIT_FSIZE,
                &lim,
                std::ptr::null_mut(),
            )
        };
        assert_eq!(r, 0, "prlimit: {}", std::io::Error::last_os_error());
        // A policy of 300 KiB of comments: one log entry sled must write past the limit.
        let filler: String = (0..75)
            .map(|i| format!("# {i:04} {}\n", "x".repeat(4080)))
            .collect();
        let res = a
            .apply_policy(ApplyPolicyRequest {
                text: format!("{filler}Default=0x7fff : ALL=full ;\n"),
                expected_version: 0,
                request_id: 0,
            })
            .await;
        println!("apply with failing storage: {res:?}");
    });
    // The failure is seen...
    let mut seen = false;
    for _ in 0..POLLS {
        if text().contains("E_NODE_STORAGE") {
            seen = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(seen, "no E_NODE_STORAGE logged:\n{}", text());
    // ... and the process stops, non-zero, saying why last.
    let mut exit = None;
    for _ in 0..POLLS {
        if let Ok(Some(st)) = p.child.try_wait() {
            exit = Some(st);
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let log = text();
    let exit =
        exit.unwrap_or_else(|| panic!("still running {POLLS} polls after E_NODE_STORAGE:\n{log}"));
    assert!(!exit.success(), "exit {exit:?}:\n{log}");
    assert!(
        last_line(&log).contains("E_NODE_FATAL: replica 1"),
        "last line {:?}",
        last_line(&log)
    );
    drop(p);
    if std::env::var_os("SMNODE_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&d);
    }
}

fn p_log(log: &Arc<Mutex<String>>) -> String {
    log.lock().unwrap().clone()
}
