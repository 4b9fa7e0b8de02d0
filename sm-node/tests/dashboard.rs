//! The dashboard end to end on a 3-replica process cluster over fabric-simd, with admin
//! tokens configured:
//! * over HTTP: no token and a wrong token are refused (401, E_DASH_AUTH); `/?token=READ`
//!   sets an HttpOnly cookie; the status API, the fabric picture and the metric samples
//!   answer with the cookie and agree with the admin API;
//! * `smctl draw fabric --format dot` and `smctl draw partitions --format text` against the
//!   same replica with the read token (tiers, master marked, counts);
//! * in headless Chromium (Debian `chromium` + `chromium-driver`, driven through WebDriver by
//!   fantoccini): the master and the fabric counts on the page equal the admin API's; the
//!   master is killed with SIGKILL and the failover event appears on the open page without a
//!   reload; screenshots are written under target/tmp/dashboard/ (paths printed). When
//!   chromium or chromedriver is missing this part fails under `CI=true` and is reported
//!   `SKIPPED: ...` otherwise (testenv).
//!
//! Every child is killed on every path (Drop guards: the replicas by PID, chromedriver with
//! its process group, so the chromium it started goes too), and the whole test runs under a
//! watchdog.

mod common;

use proto::admin::sm_admin_client::SmAdminClient;
use proto::admin::*;
use sm_node::cluster::harness::LocalCluster;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const READ: &str = "dash-read-0123";
const ADMIN: &str = "dash-admin-4567";
const BOUND: Duration = Duration::from_secs(60);
const WATCHDOG: Duration = Duration::from_secs(240);

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn with_token<T>(m: T) -> tonic::Request<T> {
    let mut r = tonic::Request::new(m);
    r.metadata_mut()
        .insert("authorization", format!("Bearer {READ}").parse().unwrap());
    r
}

async fn admin(addr: &str) -> Result<SmAdminClient<tonic::transport::Channel>, String> {
    let ch = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .map_err(|e| e.to_string())?
        .connect_timeout(Duration::from_secs(2))
        .connect()
        .await
        .map_err(|e| e.to_string())?;
    Ok(SmAdminClient::new(ch))
}

/// One HTTP/1.1 GET; (status, headers, body).
fn http_get(port: u16, path: &str, headers: &[(&str, &str)]) -> (u16, String, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, head.to_string(), body.to_string())
}

/// Kills a child and everything in its process group when dropped: chromedriver's
/// chromium processes outlived a SIGKILL of chromedriver alone after a failed run.
struct GroupGuard(Child);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.0.id()) {
            // SAFETY: kill(2) with a negative PID signals that process group; no memory is
            // touched. The group is the child's own (spawned with process_group(0)).
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Status of replica `id` with the read token, waiting until `pred` holds.
async fn wait_status(
    addr: &str,
    pred: impl Fn(&ClusterStatusReply) -> bool,
) -> Result<ClusterStatusReply, String> {
    let start = Instant::now();
    let mut last = String::new();
    while start.elapsed() < BOUND {
        if let Ok(mut a) = admin(addr).await {
            match a
                .cluster_status(with_token(ClusterStatusRequest::default()))
                .await
            {
                Ok(r) if pred(r.get_ref()) => return Ok(r.into_inner()),
                Ok(r) => last = format!("{:?}", r.into_inner()),
                Err(e) => last = e.to_string(),
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Err(format!(
        "{addr}: condition not reached in {BOUND:?}; last: {last}"
    ))
}

#[test]
fn dashboard_http_and_headless_chromium() {
    // Built before the cluster starts (the first build after a change takes a while).
    common::smctl::bin();
    let d = std::env::temp_dir().join(format!("smnode-dash-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let mut c = LocalCluster::new(
        &PathBuf::from(env!("CARGO_BIN_EXE_sm-node")),
        "ft2:8",
        3,
        &d,
    )
    .unwrap();
    // After LocalCluster::new, which lays the directory anew.
    let tokens = d.join("tokens");
    std::fs::write(&tokens, format!("read {READ}\nadmin {ADMIN}\n")).unwrap();
    c.common
        .extend(["--tokens-file".to_string(), tokens.display().to_string()]);
    let mut dash = Vec::new();
    for r in &mut c.replicas {
        let p = free_port();
        r.extra
            .extend(["--dashboard-listen".to_string(), format!("127.0.0.1:{p}")]);
        dash.push(p);
    }
    c.start_all().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let out =
        rt.block_on(async { tokio::time::timeout(WATCHDOG, scenario(&mut c, &dash, &d)).await });
    drop(c);
    match out {
        Ok(()) => {
            let _ = std::fs::remove_dir_all(&d);
        }
        Err(_) => panic!(
            "watchdog: dashboard test did not finish in {WATCHDOG:?}; logs in {}",
            d.display()
        ),
    }
}

async fn scenario(c: &mut LocalCluster, dash: &[u16], dir: &Path) {
    let addrs: Vec<String> = c.replicas.iter().map(|r| r.addr.clone()).collect();
    let st = wait_status(&addrs[0], |s| s.leader_id != 0).await.unwrap();
    let leader = st.leader_id;
    // SUBNET UP is recorded on the master's replica.
    wait_status(&addrs[(leader - 1) as usize], |s| {
        s.leader_id == leader && s.subnet_up_unix_ms != 0
    })
    .await
    .unwrap();
    let f = (1..=3u64).find(|i| *i != leader).unwrap();
    let fi = (f - 1) as usize;
    wait_status(&addrs[fi], |s| s.leader_id == leader && s.master.is_some())
        .await
        .unwrap();
    let mut fa = admin(&addrs[fi]).await.unwrap();
    let nodes = fa
        .list_nodes(with_token(ListNodesRequest::default()))
        .await
        .unwrap()
        .into_inner()
        .nodes;
    let switches = nodes.iter().filter(|n| n.node_type == "switch").count();
    let hosts = nodes.len() - switches;
    let port = dash[fi];

    // --- HTTP: tokens, cookie, API agreement.
    let p = port;
    let (code, _, body) = tokio::task::spawn_blocking(move || http_get(p, "/", &[]))
        .await
        .unwrap();
    assert_eq!(code, 401, "{body}");
    assert!(body.contains("E_DASH_AUTH"), "{body}");
    let (code, _, _) = tokio::task::spawn_blocking(move || http_get(p, "/?token=not-a-token", &[]))
        .await
        .unwrap();
    assert_eq!(code, 401);
    let (code, head, _) =
        tokio::task::spawn_blocking(move || http_get(p, &format!("/?token={READ}"), &[]))
            .await
            .unwrap();
    assert_eq!(code, 303, "{head}");
    let cookie_line = head
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("set-cookie:"))
        .unwrap_or_else(|| panic!("no cookie: {head}"))
        .to_string();
    assert!(
        cookie_line.contains(&format!("qsm_token={READ}")),
        "{cookie_line}"
    );
    assert!(cookie_line.contains("HttpOnly"), "{cookie_line}");
    assert!(!cookie_line.contains("Secure"), "plain HTTP: {cookie_line}");
    let cookie = format!("qsm_token={READ}");
    let ck = cookie.clone();
    let (code, _, body) = tokio::task::spawn_blocking(move || http_get(p, "/", &[("Cookie", &ck)]))
        .await
        .unwrap();
    assert_eq!(code, 200);
    assert!(
        body.contains("Quorum SM") && body.contains("/app.js"),
        "{body}"
    );
    let ck = cookie.clone();
    let (code, _, body) =
        tokio::task::spawn_blocking(move || http_get(p, "/api/status", &[("Cookie", &ck)]))
            .await
            .unwrap();
    assert_eq!(code, 200, "{body}");
    let js: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(js["leader_id"], leader, "{js}");
    assert_eq!(js["fabric"]["switches"], switches, "{js}");
    assert_eq!(js["fabric"]["hosts"], hosts, "{js}");
    assert_eq!(js["replicas"].as_array().map(Vec::len), Some(3), "{js}");
    let auth = format!("Bearer {READ}");
    let (code, _, body) = tokio::task::spawn_blocking(move || {
        http_get(p, "/api/fabric.svg", &[("Authorization", &auth)])
    })
    .await
    .unwrap();
    assert_eq!(code, 200, "{body}");
    assert!(
        body.contains("<svg") && body.contains("[master SM]"),
        "{}",
        &body[..body.len().min(400)]
    );
    // Metric samples arrive once a second.
    let start = Instant::now();
    loop {
        let ck = cookie.clone();
        let (_, _, body) =
            tokio::task::spawn_blocking(move || http_get(p, "/api/metrics", &[("Cookie", &ck)]))
                .await
                .unwrap();
        let js: serde_json::Value = serde_json::from_str(&body).unwrap();
        let samples = js["samples"].as_array().cloned().unwrap_or_default();
        if samples.len() >= 2 && samples[samples.len() - 1]["leader_id"] == leader {
            break;
        }
        assert!(start.elapsed() < BOUND, "no metric samples: {js}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }

    // --- smctl draw against the same replica (read token).
    let smctl = |args: &[&str]| {
        let out = Command::new(common::smctl::bin())
            .args(["--server", &addrs[fi], "--token", READ])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let dot = smctl(&["draw", "fabric", "--format", "dot"]);
    assert_eq!(dot.matches("rank=same").count(), 3, "{dot}");
    assert!(dot.contains("[master SM]"), "{dot}");
    assert!(
        dot.contains(&format!("{switches} switches, {hosts} hosts")),
        "{dot}"
    );
    let matrix = smctl(&["draw", "partitions", "--format", "text"]);
    assert!(matrix.contains("full"), "{matrix}");

    // --- Browser.
    let Some([chromium, driver]) = testenv::require(
        "dashboard_http_and_headless_chromium (browser part)",
        ["chromium", "chromedriver"],
    ) else {
        return;
    };
    browser(c, &chromium, &driver, port, leader, f, switches, hosts, dir).await;
}

#[allow(clippy::too_many_arguments)]
async fn browser(
    c: &mut LocalCluster,
    chromium: &Path,
    driver: &Path,
    port: u16,
    leader: u64,
    follower: u64,
    switches: usize,
    hosts: usize,
    dir: &Path,
) {
    use fantoccini::{ClientBuilder, Locator};
    let dport = free_port();
    let _driver = GroupGuard(
        Command::new(driver)
            .arg(format!("--port={dport}"))
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(
                std::fs::File::create(dir.join("chromedriver.log"))
                    .map(Stdio::from)
                    .unwrap_or_else(|_| Stdio::null()),
            )
            .spawn()
            .expect("chromedriver starts"),
    );
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        serde_json::json!({
            "binary": chromium.display().to_string(),
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                     "--disable-dev-shm-usage", "--window-size=1400,1100",
                     format!("--user-data-dir={}", dir.join("chrome-profile").display())],
        }),
    );
    let start = Instant::now();
    let client = loop {
        match ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps.clone())
            .connect(&format!("http://127.0.0.1:{dport}"))
            .await
        {
            Ok(cl) => break cl,
            Err(e) => {
                assert!(start.elapsed() < BOUND, "chromedriver session: {e}");
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }
    };
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dashboard");
    std::fs::create_dir_all(&shots).unwrap();
    let text_of = |css: &str| {
        let (client, css) = (client.clone(), css.to_string());
        async move {
            match client.find(Locator::Css(&css)).await {
                Ok(e) => e.text().await.unwrap_or_default(),
                Err(_) => String::new(),
            }
        }
    };
    client
        .goto(&format!("http://127.0.0.1:{port}/?token={READ}"))
        .await
        .unwrap();
    // The page polls /api/status; wait until it shows the master and the counts.
    let want_master = format!("replica {leader}");
    let start = Instant::now();
    loop {
        let m = text_of("#master").await;
        let s = text_of("#switches").await;
        let h = text_of("#hosts").await;
        if m == want_master && s == switches.to_string() && h == hosts.to_string() {
            break;
        }
        assert!(
            start.elapsed() < BOUND,
            "page shows master {m:?} switches {s:?} hosts {h:?}; admin API: {want_master} {switches} {hosts}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    // The fabric picture is there.
    client
        .wait()
        .at_most(BOUND)
        .for_element(Locator::Css("#fabric svg"))
        .await
        .unwrap();
    // The audit button: the master reads every P_Key table back; the matrix appears.
    client
        .find(Locator::Css("#audit-btn"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let matrix = client
        .wait()
        .at_most(BOUND)
        .for_element(Locator::Css("#matrix svg rect.cell"))
        .await
        .unwrap();
    assert!(
        !matrix
            .attr("class")
            .await
            .unwrap()
            .unwrap_or_default()
            .is_empty()
    );
    let before = shots.join("before-failover.png");
    std::fs::write(&before, client.screenshot().await.unwrap()).unwrap();
    eprintln!("dashboard screenshot: {}", before.display());

    // Kill the master; the open page (never reloaded) shows the failover event.
    // A marker in the page's JS state: a reload would erase it.
    client
        .execute("window.qsmMarker = 42; return 1;", vec![])
        .await
        .unwrap();
    c.kill9(leader);
    let start = Instant::now();
    let text = loop {
        let t = text_of("#events li.failover").await;
        if !t.is_empty() {
            break t;
        }
        assert!(start.elapsed() < BOUND, "no failover event on the page");
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert!(text.contains(&format!("from replica {leader}")), "{text}");
    // The master shown moves to the new leader.
    let start = Instant::now();
    loop {
        let m = text_of("#master").await;
        if m.starts_with("replica ") && m != want_master {
            break;
        }
        assert!(start.elapsed() < BOUND, "master still shown as {m:?}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    // The killed replica is an alarm (the new leader cannot reach it), not a grey row.
    let start = Instant::now();
    let alarm = loop {
        let t = text_of(&format!("#alarm-list li[data-replica='{leader}']")).await;
        if !t.is_empty() {
            break t;
        }
        assert!(
            start.elapsed() < BOUND,
            "no alarm for the killed replica {leader}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert!(alarm.contains("does not answer the leader"), "{alarm}");
    assert!(
        !text_of(&format!("#replicas tr.dead[data-id='{leader}']"))
            .await
            .is_empty()
    );
    let marker = client
        .execute("return window.qsmMarker || 0;", vec![])
        .await
        .unwrap();
    assert_eq!(marker, serde_json::json!(42), "the page was reloaded");
    let after = shots.join("after-failover.png");
    std::fs::write(&after, client.screenshot().await.unwrap()).unwrap();
    eprintln!("dashboard screenshot: {}", after.display());
    eprintln!("failover seen on replica {follower}'s dashboard: {text}");
    let _ = client.close().await;
}
