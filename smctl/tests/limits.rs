//! smctl against a replica that hangs, a closed stdout and inputs over their limits (no
//! cluster: a TCP listener that never answers stands in for a SIGSTOPped replica):
//! * a read with no answer exits 3 after `--timeout`, naming the flag; a write with no answer
//!   exits 7 (it was sent: it may have been committed); a TLS handshake that never completes
//!   exits 3 after `--connect-timeout`;
//! * on a closed stdout smctl ends by SIGPIPE without a panic, whatever prints;
//! * a policy file over `MAX_POLICY_BYTES` is refused before anything is sent;
//! * `--help` lists the exit codes.
//!
//! Waits on smctl are bounded (a failure bound: today's smctl would wait forever).

use std::io::Read;
use std::net::TcpListener;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Failure bound on one smctl run.
const BOUND: Duration = Duration::from_secs(60);

fn spawn(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_smctl"))
        .args(args)
        .env_remove("SMCTL_SERVER")
        .env_remove("SMCTL_TIMEOUT")
        .env_remove("SMCTL_CONNECT_TIMEOUT")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("smctl runs")
}

/// Waits (bounded) for `child`; its status and stderr. A child past the bound is killed and
/// the test fails.
fn finish(mut child: Child) -> (ExitStatus, String) {
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > BOUND {
            let _ = child.kill();
            let _ = child.wait();
            panic!("smctl still running after {BOUND:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (status, reader.join().unwrap())
}

/// A listener that completes TCP handshakes (the kernel's backlog) and never reads.
fn silent() -> (TcpListener, String) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let a = l.local_addr().unwrap().to_string();
    (l, a)
}

/// A pipe whose reading end is already closed (close-on-exec, so no other child inherits it):
/// every write to it fails with EPIPE/SIGPIPE, whatever the timing.
fn closed_pipe() -> Stdio {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: pipe2(2) fills both descriptors on success; each is owned exactly once below.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    unsafe {
        libc::close(fds[0]);
        Stdio::from(std::os::fd::OwnedFd::from_raw_fd(fds[1]))
    }
}

fn temp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("smctl-limits-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn a_replica_that_never_answers_times_out_with_exit_3_for_reads_and_7_for_writes() {
    let (_l, addr) = silent();
    let d = temp("hang");
    let conf = d.join("p.conf");
    std::fs::write(&conf, "Default=0x7fff : ALL=full ;\n").unwrap();
    // Reads: 3, with the flag named.
    let t0 = Instant::now();
    let (st, err) = finish(spawn(&["--server", &addr, "--timeout", "1", "cluster"]));
    assert_eq!(st.code(), Some(3), "{err}");
    assert!(
        err.contains("no answer") && err.contains("--timeout"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    let (st, err) = finish(spawn(&[
        "--server",
        &addr,
        "--timeout",
        "500ms",
        "nodes",
        "--json",
    ]));
    assert_eq!(st.code(), Some(3), "{err}");
    // Writes: sent, unanswered: 7 (commit unknown).
    let (st, err) = finish(spawn(&[
        "--server",
        &addr,
        "--timeout",
        "1",
        "partitions",
        "apply",
        conf.to_str().unwrap(),
        "--expect-version",
        "0",
    ]));
    assert_eq!(st.code(), Some(7), "{err}");
    assert!(err.contains("may have been committed"), "{err}");
    let (st, err) = finish(spawn(&[
        "--server",
        &addr,
        "--timeout",
        "1",
        "members",
        "remove",
        "2",
    ]));
    assert_eq!(st.code(), Some(7), "{err}");
    // The defaults bound it too (30 s): here set through the environment.
    let mut c = Command::new(env!("CARGO_BIN_EXE_smctl"));
    c.args(["--server", &addr, "sminfo"])
        .env("SMCTL_TIMEOUT", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (st, err) = finish(c.spawn().unwrap());
    assert_eq!(st.code(), Some(3), "{err}");
    assert!(t0.elapsed() < BOUND);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_tls_handshake_that_never_completes_times_out_with_exit_3() {
    let (_l, addr) = silent();
    let d = temp("tls");
    let key = rcgen::KeyPair::generate().unwrap();
    let ca = rcgen::CertificateParams::new(vec!["localhost".to_string()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let ca_path = d.join("ca.pem");
    std::fs::write(&ca_path, ca.pem()).unwrap();
    let (st, err) = finish(spawn(&[
        "--server",
        &addr,
        "--ca",
        ca_path.to_str().unwrap(),
        "--connect-timeout",
        "1",
        "cluster",
    ]));
    assert_eq!(st.code(), Some(3), "{err}");
    assert!(err.contains("--connect-timeout"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_closed_stdout_ends_smctl_by_sigpipe_without_a_panic() {
    let d = temp("pipe");
    let conf = d.join("p.conf");
    std::fs::write(
        &conf,
        "Default=0x7fff : ALL=full ;\nA=0x1 : ALL=limited ;\n",
    )
    .unwrap();
    let conf = conf.to_str().unwrap().to_string();
    for args in [
        &["topo", "gen", "spec", "ft3:8"][..],
        &["topo", "info", "ft2:4"],
        &["route", "--topology", "ft2:4", "--json"],
        &["partitions", "check", &conf, "--topology", "ft2:4"],
        &["partitions", "plan", &conf, "--topology", "ft2:4"],
        &["draw", "fabric", "--topo", "ft2:4", "--format", "dot"],
        &["completion", "bash"],
        &["--help"],
    ] {
        let child = Command::new(env!("CARGO_BIN_EXE_smctl"))
            .args(args)
            .stdout(closed_pipe())
            .stderr(Stdio::piped())
            .spawn()
            .expect("smctl runs");
        let (st, err) = finish(child);
        assert!(!err.contains("panicked"), "smctl {args:?}: {err}");
        assert_eq!(
            st.signal(),
            Some(libc::SIGPIPE),
            "smctl {args:?}: {st:?} {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_policy_over_the_limit_is_refused_before_anything_is_sent() {
    let d = temp("big");
    let big = d.join("big.conf");
    let mut text = String::from("Default=0x7fff : ALL=full ;\n");
    while text.len() <= partitions::MAX_POLICY_BYTES {
        text.push_str("# a comment line of padding, padding, padding, padding, padding\n");
    }
    std::fs::write(&big, &text).unwrap();
    let big = big.to_str().unwrap();
    // No server listens at port 1: a refusal that came from connecting would say so.
    for args in [
        &["--server", "127.0.0.1:1", "partitions", "apply", big][..],
        &["--server", "127.0.0.1:1", "partitions", "diff", big],
        &["partitions", "check", big],
    ] {
        let (st, err) = finish(spawn(args));
        assert_eq!(st.code(), Some(1), "smctl {args:?}: {err}");
        assert!(err.contains("MAX_POLICY_BYTES"), "smctl {args:?}: {err}");
        assert!(!err.contains("connect"), "smctl {args:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn help_lists_the_exit_codes_and_the_timeouts() {
    let out = Command::new(env!("CARGO_BIN_EXE_smctl"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for s in [
        "Exit codes",
        "3 unavailable",
        "7 commit unknown",
        "--connect-timeout",
        "--timeout",
    ] {
        assert!(help.contains(s), "{s} not in\n{help}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_smctl"))
        .args(["members", "remove", "--help"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("--force"));
}
