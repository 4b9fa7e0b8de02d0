//! Admin security configured in the node's config file and flags (no environment): plain
//! HTTP/2 is refused unless `--insecure-loopback` is given AND the listen address is
//! loopback (the error names what to configure); a replica whose `[admin]` table names its
//! TLS certificate, key, CA and tokens file serves TLS with those tokens.

mod pki;

use pki::pki;
use proto::admin::sm_admin_client::SmAdminClient;
use proto::admin::*;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tonic::Code;
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};

const BOUND: Duration = Duration::from_secs(60);
const READ: &str = "read-token-cfg-0123";
const ADMIN: &str = "admin-token-cfg-4567";
const SECURITY_VARS: [&str; 7] = [
    "SM_TLS_CERT",
    "SM_TLS_KEY",
    "SM_TLS_CA",
    "SM_TLS_DOMAIN",
    "SM_TOKENS_FILE",
    "SM_TOKENS",
    "SM_INSECURE_LOOPBACK",
];

/// Kills the child (by its PID, through `Child::kill`) on every path; its stderr goes to
/// the file beside it.
struct Guard(Option<Child>, PathBuf);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn temp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("smnode-admin-cfg-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// One replica in cluster mode on the in-process simulator, security settings from `extra`
/// only (the security environment variables are removed).
fn replica(dir: &Path, port: u16, extra: &[&str]) -> Guard {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sm-node"));
    cmd.args(["--id", "1", "--peers"])
        .arg(format!("1=127.0.0.1:{port}"))
        .arg("--data-dir")
        .arg(dir.join("r1"))
        .args(["--fabric", "sim:ft2:8", "--sweep-interval", "0"])
        .args(["--routing-workers", "1"])
        .args(extra)
        .stdout(Stdio::null());
    let log = dir.join(format!("replica-{port}.log"));
    cmd.stderr(std::fs::File::create(&log).unwrap());
    for v in SECURITY_VARS {
        cmd.env_remove(v);
    }
    Guard(Some(cmd.spawn().unwrap()), log)
}

/// Waits (bounded) for the child to exit; returns its success and stderr.
fn exit_of(g: &mut Guard) -> (bool, String) {
    let start = Instant::now();
    let c = g.0.as_mut().unwrap();
    let status = loop {
        if let Some(s) = c.try_wait().unwrap() {
            break s;
        }
        assert!(start.elapsed() < BOUND, "the replica did not exit");
        std::thread::sleep(Duration::from_millis(20));
    };
    g.0 = None;
    let mut err = String::new();
    if let Ok(mut f) = std::fs::File::open(&g.1) {
        let _ = f.read_to_string(&mut err);
    }
    (status.success(), err)
}

#[test]
fn plaintext_is_refused_unless_asked_for_on_loopback() {
    let d = temp("plain");
    // No flag: refused, and the message says what to configure.
    let mut g = replica(&d, free_port(), &[]);
    let (ok, err) = exit_of(&mut g);
    assert!(!ok, "started without TLS and without --insecure-loopback");
    assert!(err.contains("E_NODE_TLS_PLAINTEXT"), "{err}");
    assert!(
        err.contains("insecure-loopback = true") && err.contains("tls-cert"),
        "{err}"
    );
    // The flag on a non-loopback listen address: refused too.
    let port = free_port();
    let mut g = replica(
        &d,
        port,
        &[
            "--insecure-loopback",
            "--listen",
            &format!("0.0.0.0:{port}"),
        ],
    );
    let (ok, err) = exit_of(&mut g);
    assert!(!ok);
    assert!(
        err.contains("E_NODE_TLS_PLAINTEXT") && err.contains("0.0.0.0"),
        "{err}"
    );
    // The flag on loopback: serves plain HTTP/2.
    let port = free_port();
    let _g = replica(&d, port, &["--insecure-loopback"]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let start = Instant::now();
        loop {
            assert!(start.elapsed() < BOUND, "no plain answer");
            if let Ok(ch) = Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
                .unwrap()
                .connect()
                .await
                && SmAdminClient::new(ch)
                    .cluster_status(ClusterStatusRequest::default())
                    .await
                    .is_ok()
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    drop(_g);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn tls_and_tokens_from_the_config_file() {
    let d = temp("tls");
    let p = pki();
    let w = |n: &str, t: &str| {
        let f = d.join(n);
        std::fs::write(&f, t).unwrap();
        f.display().to_string()
    };
    let (cert, key, ca) = (
        w("cert.pem", &p.cert_pem),
        w("key.pem", &p.key_pem),
        w("ca.pem", &p.ca_pem),
    );
    let tokens = w("tokens", &format!("# roles\nread {READ}\nadmin {ADMIN}\n"));
    let conf = w(
        "node.toml",
        &format!(
            "[admin]\ntls-cert = {cert:?}\ntls-key = {key:?}\ntls-ca = {ca:?}\ntokens-file = {tokens:?}\ninsecure-loopback = false\n"
        ),
    );
    let port = free_port();
    let _g = replica(&d, port, &["--config", &conf]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let tls = ClientTlsConfig::new()
            .domain_name("localhost")
            .ca_certificate(Certificate::from_pem(&p.ca_pem))
            .identity(Identity::from_pem(&p.cert_pem, &p.key_pem));
        let start = Instant::now();
        let mut c = loop {
            assert!(start.elapsed() < BOUND, "no TLS answer");
            if let Ok(ch) = Endpoint::from_shared(format!("https://127.0.0.1:{port}"))
                .unwrap()
                .tls_config(tls.clone())
                .unwrap()
                .connect()
                .await
            {
                break SmAdminClient::new(ch);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let e = c
            .cluster_status(ClusterStatusRequest::default())
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::Unauthenticated, "{e:?}");
        let mut r = tonic::Request::new(ClusterStatusRequest::default());
        r.metadata_mut()
            .insert("authorization", format!("Bearer {READ}").parse().unwrap());
        let st = c.cluster_status(r).await.unwrap().into_inner();
        assert_eq!(st.self_id, 1);
        let mut r = tonic::Request::new(TriggerSweepRequest { heavy: false });
        r.metadata_mut()
            .insert("authorization", format!("Bearer {READ}").parse().unwrap());
        let e = c.trigger_sweep(r).await.unwrap_err();
        assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
        // Plain text to the TLS listener fails.
        let plain = Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
            .unwrap()
            .connect_timeout(Duration::from_secs(2))
            .connect()
            .await;
        if let Ok(ch) = plain {
            assert!(
                SmAdminClient::new(ch)
                    .cluster_status(ClusterStatusRequest::default())
                    .await
                    .is_err()
            );
        }
    });
    drop(_g);
    let _ = std::fs::remove_dir_all(&d);
}
