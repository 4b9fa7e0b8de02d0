//! The defects an operator found attacking a 3-replica cluster on loopback, each on a process
//! cluster over fabric-simd (ft2:8):
//! * smctl on a closed stdout (`smctl nodes --json | head -c 10`) ends quietly by SIGPIPE on
//!   every print path, never with a panic;
//! * a policy `smctl partitions check` calls an error is refused by ApplyPolicy before it is
//!   proposed: 10,001 partitions (PART-E022), more keys than the CAs' PartitionCap holds
//!   (PART-E008, checked at the master against the fabric's caps, also through a follower),
//!   a text over 1 MiB (E_ADMIN_LIMIT) and a 20 MB one (the gRPC request limit; smctl refuses
//!   it before sending); the policy in force is unchanged;
//! * the dashboard refuses an oversized request head (431) and a request body (413);
//! * membership: removing a voter that would leave fewer than a majority of the configured
//!   replicas healthy needs `--force`, the last voter is never removed, smctl exits non-zero
//!   with the code the leader logged, and nothing is proposed;
//! * writes: a write forwarded to a leader that was killed (nothing sent) is UNAVAILABLE; a
//!   write forwarded to a leader that stops answering after it was sent is ABORTED
//!   `E_NODE_COMMIT_UNKNOWN` (smctl exit 7), never UNAVAILABLE.

mod common;

use proto::admin::sm_admin_client::SmAdminClient;
use proto::admin::*;
use sm_node::cluster::harness::LocalCluster;
use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;
use tonic::Code;

const BOUND: Duration = Duration::from_secs(60);

fn dir(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("smnode-limits-{name}-{}", std::process::id()))
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn cluster(name: &str) -> LocalCluster {
    LocalCluster::new(
        &PathBuf::from(env!("CARGO_BIN_EXE_sm-node")),
        "ft2:8",
        3,
        &dir(name),
    )
    .unwrap()
}

fn smctl(server: &str, args: &[&str]) -> Output {
    Command::new(common::smctl::bin())
        .arg("--server")
        .arg(server)
        .args(args)
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `n` partitions of ALL=full after Default.
fn partitions(n: u32) -> String {
    let mut s = String::from("Default=0x7fff : ALL=full ;\n");
    for i in 1..=n {
        s.push_str(&format!("P{i}={i:#06x} : ALL=full ;\n"));
    }
    s
}

fn apply(text: &str, version: u64) -> ApplyPolicyRequest {
    ApplyPolicyRequest {
        text: text.into(),
        expected_version: version,
        request_id: 0,
    }
}

/// An admin client without the default 4 MiB limit on what it sends (the server's limit is
/// what is tested).
fn admin(c: &LocalCluster, id: u64) -> SmAdminClient<tonic::transport::Channel> {
    c.admin(id).unwrap().max_encoding_message_size(64 << 20)
}

/// An admin client whose calls wait up to 60 s.
fn patient(c: &LocalCluster, id: u64) -> SmAdminClient<tonic::transport::Channel> {
    let addr = &c.replicas[(id - 1) as usize].addr;
    let ch = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .timeout(BOUND)
        .connect_lazy();
    SmAdminClient::new(ch)
}

async fn policy_version(c: &LocalCluster, id: u64) -> u64 {
    admin(c, id)
        .get_policy(GetPolicyRequest { linearizable: true })
        .await
        .unwrap()
        .into_inner()
        .version
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

/// Runs smctl with its stdout a pipe whose reading end is already closed.
fn closed_stdout(server: &str, args: &[&str]) -> (std::process::ExitStatus, String) {
    let mut child = Command::new(common::smctl::bin())
        .arg("--server")
        .arg(server)
        .args(args)
        .stdout(closed_pipe())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (child.wait().unwrap(), err)
}

/// One HTTP/1.1 GET with extra header lines and an optional body; the status code.
fn http_status(port: u16, extra: &str) -> u16 {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let req =
        format!("GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n{extra}");
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    String::from_utf8_lossy(&raw)
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

#[test]
fn closed_pipes_policy_limits_and_dashboard_limits() {
    let smctl_bin = common::smctl::bin();
    assert!(smctl_bin.exists());
    let mut c = cluster("policy");
    let dash = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    c.replicas[0].extra.extend([
        "--dashboard-listen".to_string(),
        format!("127.0.0.1:{dash}"),
    ]);
    c.start_all().unwrap();
    let d = c.dir.clone();
    rt().block_on(async {
        let st = c.wait_serving(0, BOUND).await.unwrap();
        let leader = st.leader_id;
        let f = (1..=3).find(|i| *i != leader).unwrap();
        c.wait_status(f, BOUND, |s| s.leader_id == leader)
            .await
            .unwrap();
        let fa = c.replicas[(f - 1) as usize].addr.clone();

        // --- smctl on a closed stdout, every kind of print path.
        for args in [
            &["nodes", "--json"][..],
            &["nodes"],
            &["cluster", "--json"],
            &["cluster"],
            &["sminfo"],
            &["partitions", "show"],
            &["tenants", "list", "--json"],
            &["topo", "gen", "spec", "ft2:8"],
        ] {
            let (status, err) = closed_stdout(&fa, args);
            assert!(!err.contains("panicked"), "smctl {args:?}: {err}");
            assert_eq!(
                status.signal(),
                Some(libc::SIGPIPE),
                "smctl {args:?} ended with {status:?}: {err}"
            );
        }

        // --- Policies `check` calls an error are refused by apply, through the follower.
        let v0 = policy_version(&c, leader).await;
        let many = d.join("many.conf");
        std::fs::write(&many, partitions(10_000)).unwrap();
        let e = admin(&c, f)
            .apply_policy(apply(&partitions(10_000), v0))
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
        assert!(
            e.message().starts_with("E_NODE_POLICY_REFUSED") && e.message().contains("PART-E022"),
            "{e:?}"
        );
        let o = smctl(&fa, &["partitions", "check", many.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("PART-E022"),
            "{}",
            text(&o)
        );

        // More keys than the ports hold (PartitionCap 128 on CAs, 32 on switches): checked at the
        // master against the fabric's caps.
        let over = d.join("over.conf");
        std::fs::write(&over, partitions(200)).unwrap();
        let o = smctl(&fa, &["partitions", "check", over.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("PART-E008"),
            "{}",
            text(&o)
        );
        let o = smctl(
            &fa,
            &[
                "partitions",
                "apply",
                over.to_str().unwrap(),
                "--expect-version",
                &v0.to_string(),
            ],
        );
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("InvalidArgument") && err.contains("PART-E008"),
            "{}",
            text(&o)
        );
        // What fits is accepted.
        let fits = admin(&c, f)
            .apply_policy(apply(&partitions(20), v0))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(fits.version, v0 + 1);
        let v1 = fits.version;

        // Over 1 MiB (within the gRPC request limit): E_ADMIN_LIMIT, not parsed.
        let mut big = String::from("Default=0x7fff : ALL=full ;\n");
        while big.len() <= (3 << 19) {
            big.push_str("# a comment line of padding, padding, padding, padding, padding\n");
        }
        for id in [leader, f] {
            let e = admin(&c, id)
                .apply_policy(apply(&big, v1))
                .await
                .unwrap_err();
            assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
            assert!(e.message().starts_with("E_ADMIN_LIMIT"), "{e:?}");
            assert!(e.message().contains("MAX_POLICY_BYTES"), "{e:?}");
        }
        // 20 MB: refused by the request limit before any handler runs.
        let mut huge = String::with_capacity(20 << 20);
        while huge.len() < (20 << 20) {
            huge.push_str("# a comment line of padding, padding, padding, padding, padding\n");
        }
        let e = admin(&c, leader)
            .apply_policy(apply(&huge, v1))
            .await
            .unwrap_err();
        assert_ne!(e.code(), Code::Ok, "{e:?}");
        let hf = d.join("huge.conf");
        std::fs::write(&hf, &huge).unwrap();
        let o = smctl(
            &fa,
            &[
                "partitions",
                "apply",
                hf.to_str().unwrap(),
                "--expect-version",
                &v1.to_string(),
            ],
        );
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("MAX_POLICY_BYTES"),
            "{}",
            text(&o)
        );
        for id in 1..=3 {
            c.wait_status(id, BOUND, |s| s.policy_version == v1)
                .await
                .unwrap();
        }
        assert_eq!(
            policy_version(&c, f).await,
            v1,
            "a refused policy changed the state"
        );

        // --- The dashboard's request limits.
        let port = dash;
        let codes = tokio::task::spawn_blocking(move || {
            let pad = "x".repeat(20 * 1024);
            (
                http_status(port, &format!("X-Pad: {pad}\r\n\r\n")),
                http_status(port, "Content-Length: 5\r\n\r\nhello"),
            )
        })
        .await
        .unwrap();
        assert_eq!(codes, (431, 413));
    });
    drop(c);
    let _ = std::fs::remove_dir_all(&d);
}

fn voters(s: &ClusterStatusReply) -> Vec<u64> {
    s.replicas
        .iter()
        .filter(|r| r.voter)
        .map(|r| r.id)
        .collect()
}

fn log_of(d: &Path, id: u64) -> String {
    std::fs::read_to_string(d.join(format!("replica{id}.log"))).unwrap_or_default()
}

#[test]
fn removing_voters_keeps_a_majority_unless_forced_and_never_the_last() {
    let mut c = cluster("members");
    common::smctl::bin();
    c.start_all().unwrap();
    let d = c.dir.clone();
    rt().block_on(async {
        let st = c.wait_serving(0, BOUND).await.unwrap();
        let leader = st.leader_id;
        let f1 = (1..=3).find(|i| *i != leader).unwrap();
        let f2 = (1..=3).find(|i| *i != leader && *i != f1).unwrap();
        for id in [f1, f2] {
            c.wait_status(id, BOUND, |s| s.leader_id == leader)
                .await
                .unwrap();
        }
        // Every follower recently active, as the leader sees it.
        c.wait_status(leader, BOUND, |s| {
            s.replicas
                .iter()
                .all(|r| r.role == Role::Leader as i32 || r.role == Role::Follower as i32)
        })
        .await
        .unwrap();
        let addr = |id: u64| c.replicas[(id - 1) as usize].addr.clone();
        let la = addr(leader);

        // Not a configured replica: NOT_FOUND, exit 5.
        let o = smctl(&addr(f2), &["members", "remove", "9"]);
        assert_eq!(o.status.code(), Some(5), "{}", text(&o));

        // The first follower goes (through the other follower: forwarded to the leader).
        let o = smctl(&addr(f2), &["members", "remove", &f1.to_string()]);
        assert!(o.status.success(), "{}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stdout).contains(&format!("remove replica {f1}")),
            "{}",
            text(&o)
        );
        // Answered once applied: the leader's status shows it at once.
        let st = c.status(leader).await.unwrap();
        assert_eq!(voters(&st), {
            let mut v = vec![leader, f2];
            v.sort_unstable();
            v
        });

        // The second would leave 1 healthy voter of 3 configured: refused without --force.
        let before = c.status(leader).await.unwrap();
        let o = smctl(&la, &["members", "remove", &f2.to_string()]);
        assert_eq!(o.status.code(), Some(6), "{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(err.contains("E_NODE_MEMBERSHIP_QUORUM"), "{}", text(&o));
        let after = c.status(leader).await.unwrap();
        assert_eq!(
            voters(&after),
            voters(&before),
            "a refused removal changed the voters"
        );
        // With --force it goes.
        let o = smctl(&la, &["members", "remove", &f2.to_string(), "--force"]);
        assert!(o.status.success(), "{}", text(&o));
        assert_eq!(voters(&c.status(leader).await.unwrap()), vec![leader]);

        // The last voter: refused, with or without --force, and nothing is proposed (the
        // leader's log holds no refused conf change; it logged what the client got).
        for extra in [&[][..], &["--force"]] {
            let mut args = vec!["members", "remove"];
            let id = leader.to_string();
            args.push(&id);
            args.extend_from_slice(extra);
            let o = smctl(&la, &args);
            assert_eq!(o.status.code(), Some(6), "{}", text(&o));
            let err = String::from_utf8_lossy(&o.stderr).to_string();
            assert!(err.contains("E_NODE_MEMBERSHIP_LAST_VOTER"), "{}", text(&o));
            let msg = err
                .split("FailedPrecondition: ")
                .nth(1)
                .unwrap_or_default()
                .trim()
                .to_string();
            assert!(!msg.is_empty(), "{err}");
            assert!(
                log_of(&d, leader).contains(&msg),
                "the leader did not log: {msg}"
            );
        }
        let st = c.status(leader).await.unwrap();
        assert_eq!(voters(&st), vec![leader]);
        assert_eq!(st.leader_id, leader);
        for id in 1..=3 {
            assert!(
                !log_of(&d, id).contains("conf change refused"),
                "replica {id} refused a conf change it was given"
            );
        }
        // The single voter still commits alone.
        let v = admin(&c, leader)
            .apply_policy(apply(&partitions(2), 0))
            .await
            .unwrap()
            .into_inner()
            .version;
        assert_eq!(v, 1);
    });
    drop(c);
    let _ = std::fs::remove_dir_all(&d);
}

fn tenant_request(name: &str, pkey: u32) -> SetTenantRequest {
    SetTenantRequest {
        tenant: Some(proto::state::Tenant {
            name: name.into(),
            pkey,
            ..Default::default()
        }),
        storage: Vec::new(),
        expected_version: None,
        request_id: 0,
    }
}

#[test]
fn forwarded_writes_say_unavailable_before_sending_and_commit_unknown_after() {
    let mut c = cluster("outcome");
    common::smctl::bin();
    c.start_all().unwrap();
    let d = c.dir.clone();
    let conf = d.join("p.conf");
    std::fs::write(&conf, partitions(3)).unwrap();
    rt().block_on(async {
        let st = c.wait_serving(0, BOUND).await.unwrap();
        let first = st.leader_id;
        let others: Vec<u64> = (1..=3).filter(|i| *i != first).collect();
        for &id in &others {
            c.wait_status(id, BOUND, |s| s.leader_id == first)
                .await
                .unwrap();
        }
        // The leader is killed: the followers still name it, the connection is refused, nothing
        // was sent: UNAVAILABLE.
        c.kill9(first);
        let e = admin(&c, others[0])
            .apply_policy(apply(&partitions(1), 0))
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::Unavailable, "{e:?}");
        let e = admin(&c, others[1])
            .set_tenant(tenant_request("red", 0x0101))
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::Unavailable, "{e:?}");

        // The two left elect a leader; it stops answering (SIGSTOP) after the writes
        // forwarded to it were sent: their outcome is unknown.
        let st = c.wait_serving(0, BOUND).await.unwrap();
        let leader = st.leader_id;
        let f = *others.iter().find(|i| **i != leader).unwrap();
        c.wait_status(f, BOUND, |s| s.leader_id == leader)
            .await
            .unwrap();
        let v = st.policy_version;
        let fa = c.replicas[(f - 1) as usize].addr.clone();
        c.pause(leader);
        // Clients that wait longer than the follower does for the leader (the harness's
        // give up after 2 s): the follower's own answer is what is tested.
        let mut a = patient(&c, f);
        let mut b = patient(&c, f);
        let conf_s = conf.to_str().unwrap().to_string();
        let vs = v.to_string();
        let (tenant, policy, cli) = tokio::join!(
            a.set_tenant(tenant_request("red", 0x0101)),
            b.apply_policy(apply(&partitions(2), v)),
            tokio::task::spawn_blocking(move || {
                smctl(
                    &fa,
                    &["partitions", "apply", &conf_s, "--expect-version", &vs],
                )
            })
        );
        c.resume(leader);
        for (what, e) in [
            ("SetTenant", tenant.unwrap_err()),
            ("ApplyPolicy", policy.unwrap_err()),
        ] {
            assert_eq!(e.code(), Code::Aborted, "{what}: {e:?}");
            assert!(
                e.message().starts_with("E_NODE_COMMIT_UNKNOWN"),
                "{what}: {e:?}"
            );
        }
        let o = cli.unwrap();
        assert_eq!(o.status.code(), Some(7), "{}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("E_NODE_COMMIT_UNKNOWN"),
            "{}",
            text(&o)
        );
    });
    drop(c);
    let _ = std::fs::remove_dir_all(&d);
}
