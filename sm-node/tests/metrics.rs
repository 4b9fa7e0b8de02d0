//! `GET /metrics` scraped and held to a strict exposition checker (`metrics_check`): a
//! replica started in this process (every family, per-port rows from the perf manager's
//! API, counters going on across a master restart inside the process), and three replica
//! processes whose listeners come from the `metrics-listen` key and flag (per-port families
//! by key and flags, standby and master SMInfo states, the failover a kill -9 causes).

mod common;
mod metrics_check;

use metrics_check::{Exposition, Format, check};
use proto::admin::ClusterStatusRequest;
use proto::admin::sm_admin_client::SmAdminClient;
use sm_node::cluster::harness::LocalCluster;
use sm_node::cluster::raft_actor::ReadState;
use sm_node::cluster::{self, ClusterConfig};
use sm_node::config::{AdminSecurity, FileConfig, NodeConfig};
use sm_node::master::Shutdown;
use sm_node::metrics::{
    self, EXPORTED, LinkHealth, LinkHealthRow, PortCounter, PortCounterRow, info,
};
use sm_node::milestone::MilestoneKind;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

const BOUND: Duration = Duration::from_secs(60);
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0";

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn free_addr() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// One HTTP/1.1 GET: (status code, Content-Type, body).
fn get(
    addr: SocketAddr,
    path: &str,
    accept: Option<&str>,
) -> Result<(u16, String, String), String> {
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2))
        .map_err(|e| format!("{addr}: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(20)))
        .map_err(|e| e.to_string())?;
    let accept = accept
        .map(|a| format!("Accept: {a}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{accept}Connection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut raw = String::new();
    s.read_to_string(&mut raw).map_err(|e| e.to_string())?;
    let (head, body) = raw.split_once("\r\n\r\n").ok_or("no header end")?;
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or("no status")?;
    let header = |name: &str| {
        head.lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
            })
            .unwrap_or_default()
    };
    assert_ne!(
        header("transfer-encoding"),
        "chunked",
        "unexpected chunked body"
    );
    Ok((code, header("content-type"), body.to_string()))
}

/// Scrapes `addr` in `format` and checks the text strictly.
fn scrape(addr: SocketAddr, format: Format) -> Exposition {
    let accept = (format == Format::OpenMetrics).then_some(OPENMETRICS);
    let (code, ct, body) = get(addr, "/metrics", accept).unwrap();
    assert_eq!(code, 200, "{body}");
    match format {
        Format::OpenMetrics => assert!(ct.starts_with("application/openmetrics-text"), "{ct}"),
        Format::Prometheus => assert!(ct.starts_with("text/plain; version=0.0.4"), "{ct}"),
    }
    if let Some(p) = std::env::var_os("SMNODE_METRICS_DUMP") {
        std::fs::write(p, &body).unwrap();
    }
    check(&body, format).unwrap_or_else(|e| panic!("{e}\n--- scraped ---\n{body}"))
}

fn one(x: &Exposition, name: &str) -> f64 {
    x.get(name, &[])
        .unwrap_or_else(|| panic!("no {name} in {:#?}", x.families.keys()))
}

fn row(guid: u64, port: u8, base: u64) -> PortCounterRow {
    let mut r = PortCounterRow {
        node_guid: guid,
        port,
        ..PortCounterRow::default()
    };
    for (i, c) in EXPORTED.into_iter().enumerate() {
        *r.counter_mut(c) = base + i as u64;
    }
    r
}

/// The families every replica serves, with HELP and TYPE as documented in docs/metrics.md.
const FAMILIES: [(&str, &str); 25] = [
    ("sm_build", "info"),
    ("sm_raft_term", "gauge"),
    ("sm_raft_commit_index", "gauge"),
    ("sm_raft_applied_index", "gauge"),
    ("sm_raft_leader_id", "gauge"),
    ("sm_raft_is_leader", "gauge"),
    ("sm_policy_version", "gauge"),
    ("sm_leader_changes", "counter"),
    ("sm_admin_proposals", "counter"),
    ("sm_smps_sent", "counter"),
    ("sm_smp_timeouts", "counter"),
    ("sm_traps", "counter"),
    ("sm_rogue_alarms", "counter"),
    ("sm_sminfo_state", "gauge"),
    ("sm_subnet_up_seconds", "gauge"),
    ("sm_failover_seconds", "gauge"),
    ("sm_ports_down", "gauge"),
    ("sm_fabric_nodes", "gauge"),
    ("sm_fabric_switches", "gauge"),
    ("sm_fabric_links", "gauge"),
    ("sm_heavy_sweep_seconds", "histogram"),
    ("sm_light_sweep_seconds", "histogram"),
    ("sm_routing_seconds", "histogram"),
    ("sm_admin_rpc_seconds", "histogram"),
    ("ib_port_alarms", "counter"),
];

/// One replica in this process on the in-process simulator (ft2:4, light sweeps every
/// 0.2 s), its gRPC and /metrics on loopback: every family checked strictly in both
/// formats, the per-port API's rows in the scrape, then the master stopped and started
/// again by the replica, and the counters going on from where they were.
#[test]
fn an_in_process_replica_serves_strict_metrics_that_survive_a_master_restart() {
    let rt = rt();
    let dir = common::temp_dir("metrics-inproc");
    let grpc = free_addr();
    let node = NodeConfig::try_from(FileConfig {
        fabric: Some("sim:ft2:4".into()),
        routing_workers: Some(1),
        sweep_interval: Some(0.2),
        ..FileConfig::default()
    })
    .unwrap();
    let (otx, mut orx) = tokio::sync::mpsc::unbounded_channel();
    let (replica, addr) = rt.block_on(async {
        let plain = AdminSecurity {
            insecure_loopback: Some(true),
            ..AdminSecurity::default()
        };
        sm_node::tls::install_from_config(&plain, grpc).unwrap();
        let peers = BTreeMap::from([(1, grpc.to_string())]);
        let ccfg = ClusterConfig {
            id: 1,
            peers: peers.clone(),
            listen: grpc,
            data_dir: dir.clone(),
            tick: Duration::from_millis(20),
            election_ticks: 10,
            heartbeat_ticks: 2,
            snapshot_every: 1000,
            port_guid: fabric::Guid(0),
            peer_sm_guids: Vec::new(),
            voters: Vec::new(),
            bootstrap: true,
        };
        let tx = cluster::net::spawn_senders(1, &peers);
        let replica = cluster::start_replica(ccfg, node, tx, vec![otx]).unwrap();
        let raft = replica.raft.clone();
        tokio::spawn(cluster::serve_grpc(
            1,
            grpc,
            raft.clone(),
            std::future::pending(),
        ));
        let listen = Some("127.0.0.1:0".parse().unwrap());
        let addr = metrics::spawn(raft, 1, listen, true).unwrap().unwrap();
        common::wait_subnet_up(&mut orx).await;
        let seen = common::wait_for(&mut orx, "a light sweep", |k| {
            matches!(k, MilestoneKind::LightSweepComplete { .. })
        })
        .await;
        // The perf manager's first counter sweep follows SUBNET UP; the next is 180 s away,
        // so the rows set by hand below stay as set.
        if !seen
            .iter()
            .any(|m| matches!(m.kind, MilestoneKind::PerfSweepDone { .. }))
        {
            common::wait_for(&mut orx, "a counter sweep", |k| {
                matches!(k, MilestoneKind::PerfSweepDone { .. })
            })
            .await;
        }
        // Two admin RPCs through the gRPC service.
        let mut a = SmAdminClient::new(cluster::net::channel(&grpc.to_string()).unwrap());
        for _ in 0..2 {
            a.cluster_status(ClusterStatusRequest::default())
                .await
                .unwrap();
        }
        (replica, addr)
    });
    // What the perf manager handed in: every port it read (ft2:4: 16 links, both ends),
    // its totals since its first reading (0 after that one sweep).
    let real = scrape(addr, Format::OpenMetrics);
    let pkts: Vec<_> = real.named("ib_port_xmit_pkts_total").collect();
    assert_eq!(pkts.len(), 32, "{pkts:?}");
    assert!(real.named("ib_link_health").count() >= 8);
    // Rows by hand: replace and values.
    assert!(metrics::port_counters_wanted());
    metrics::set_port_counters(&[
        row(0x0002_c903_0000_0001, 1, 10),
        row(0xf452_1403_0000_0002, 36, 1000),
    ]);
    metrics::set_link_health(&[LinkHealthRow {
        node_guid: 0x0002_c903_0000_0001,
        port: 1,
        peer_guid: 0xf452_1403_0000_0002,
        peer_port: 36,
        health: LinkHealth::Degraded,
    }]);
    metrics::add_port_alarms(PortCounter::SymbolError, 2);

    let x = scrape(addr, Format::OpenMetrics);
    for (name, kind) in FAMILIES {
        let f = x
            .families
            .get(name)
            .unwrap_or_else(|| panic!("no family {name}"));
        assert_eq!(f.kind.as_deref(), Some(kind), "{name}");
        assert!(
            f.help.as_ref().is_some_and(|h| h.len() > 10),
            "{name}: {f:?}"
        );
    }
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(x.get("sm_build_info", &[("version", version)]), Some(1.0));
    assert!(one(&x, "sm_raft_term") >= 1.0);
    assert_eq!(one(&x, "sm_raft_is_leader"), 1.0);
    assert_eq!(one(&x, "sm_raft_leader_id"), 1.0);
    assert!(one(&x, "sm_raft_commit_index") >= one(&x, "sm_raft_applied_index"));
    assert_eq!(one(&x, "sm_sminfo_state"), 3.0, "MASTER");
    assert!(one(&x, "sm_subnet_up_seconds") > 0.0);
    assert_eq!(
        one(&x, "sm_failover_seconds"),
        0.0,
        "no failover in a 1-replica cluster"
    );
    assert_eq!(one(&x, "sm_ports_down"), 0.0);
    let topo = sm_node::daemon::load_topology("ft2:4").unwrap();
    assert_eq!(
        one(&x, "sm_fabric_switches"),
        topo.switches().count() as f64
    );
    assert_eq!(one(&x, "sm_fabric_nodes"), topo.len() as f64);
    assert_eq!(one(&x, "sm_fabric_links"), topo.num_links() as f64);
    assert_eq!(one(&x, "sm_leader_changes_total"), 0.0);
    for h in [
        "sm_heavy_sweep_seconds",
        "sm_light_sweep_seconds",
        "sm_routing_seconds",
    ] {
        assert!(one(&x, &format!("{h}_count")) >= 1.0, "{h}");
        assert!(one(&x, &format!("{h}_sum")) > 0.0, "{h}");
        assert!(
            x.named(&format!("{h}_bucket")).count() >= 10,
            "{h}: buckets"
        );
    }
    let rpc = |x: &Exposition| {
        x.get("sm_admin_rpc_seconds_count", &[("method", "ClusterStatus")])
            .unwrap_or(0.0)
    };
    assert!(rpc(&x) >= 2.0);
    let node_info_gets = |x: &Exposition| {
        x.get(
            "sm_smps_sent_total",
            &[("attribute", "NodeInfo"), ("method", "Get")],
        )
        .unwrap()
    };
    let gets = node_info_gets(&x);
    assert!(gets >= topo.len() as f64, "{gets}");
    assert!(
        x.get(
            "sm_smps_sent_total",
            &[("attribute", "PortInfo"), ("method", "Set")]
        )
        .unwrap()
            > 0.0
    );
    // The perf manager's rows: 17 counter families, the link's health, the alarm.
    let port = [("node_guid", "0x0002c90300000001"), ("port", "1")];
    for (i, c) in EXPORTED.into_iter().enumerate() {
        let short = info(c).unwrap().0;
        let name = format!("ib_port_{short}_total");
        assert_eq!(x.get(&name, &port), Some(10.0 + i as f64), "{name}");
        assert_eq!(x.named(&name).count(), 2, "{name}");
        assert_eq!(
            x.families[&format!("ib_port_{short}")].kind.as_deref(),
            Some("counter")
        );
    }
    let link = [
        ("node_guid", "0x0002c90300000001"),
        ("port", "1"),
        ("peer_guid", "0xf452140300000002"),
        ("peer_port", "36"),
    ];
    assert_eq!(x.get("ib_link_health", &link), Some(1.0));
    assert_eq!(
        x.get("ib_port_alarms_total", &[("counter", "symbol_error")]),
        Some(2.0)
    );

    // docs/metrics.md names every family served, with its HELP.
    let doc = include_str!("../../docs/metrics.md");
    for (fam, f) in &x.families {
        let sample = match f.kind.as_deref() {
            Some("counter") => format!("{fam}_total"),
            Some("info") => format!("{fam}_info"),
            _ => fam.clone(),
        };
        assert!(
            doc.contains(&format!("| `{sample}` |")),
            "{sample} is not in docs/metrics.md"
        );
        let help = f.help.as_deref().unwrap_or_default().trim_end_matches('.');
        let help = help.trim_end_matches(", accumulated across counter clears");
        assert!(
            doc.contains(help),
            "HELP of {fam} is not in docs/metrics.md: {help}"
        );
    }

    // The same registry as Prometheus text 0.0.4 (what a scraper without the OpenMetrics
    // Accept header gets), and nothing but /metrics is served.
    let p = scrape(addr, Format::Prometheus);
    assert_eq!(
        p.families["sm_smps_sent_total"].kind.as_deref(),
        Some("counter")
    );
    assert_eq!(p.families["sm_build_info"].kind.as_deref(), Some("gauge"));
    assert_eq!(
        p.families["sm_heavy_sweep_seconds"].kind.as_deref(),
        Some("histogram")
    );
    assert_eq!(p.get("ib_port_symbol_error_total", &port), Some(10.0));
    assert_eq!(get(addr, "/", None).unwrap().0, 404);

    // The master stops; the replica starts another; the registry goes on counting.
    let sweeps = one(&x, "sm_heavy_sweep_seconds_count");
    rt.block_on(async {
        let raft = replica.raft.clone();
        let master = raft
            .send(ReadState(Box::new(|v| v.master)))
            .await
            .unwrap()
            .expect("a master");
        master.send(Shutdown).await.unwrap();
        common::wait_for(&mut orx, "the master's stop", |k| {
            matches!(k, MilestoneKind::Stopped { .. })
        })
        .await;
        common::wait_subnet_up(&mut orx).await;
    });
    let y = scrape(addr, Format::OpenMetrics);
    assert!(
        node_info_gets(&y) > gets,
        "{} <= {gets}",
        node_info_gets(&y)
    );
    assert!(one(&y, "sm_heavy_sweep_seconds_count") > sweeps);
    assert!(rpc(&y) >= rpc(&x));
    assert_eq!(one(&y, "sm_sminfo_state"), 3.0);
    assert_eq!(
        y.get("ib_port_alarms_total", &[("counter", "symbol_error")]),
        Some(2.0)
    );

    replica.system.stop();
    let _ = replica.thread.join();
    drop(rt);
    let _ = std::fs::remove_dir_all(&dir);
}

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_sm-node"))
}

/// `sm-node ARGS --check-config`: (success, stdout).
fn check_config(args: &[&str]) -> (bool, String) {
    let out = std::process::Command::new(bin())
        .args(args)
        .arg("--check-config")
        .env_remove("SM_METRICS_LISTEN")
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

/// The key and the flags, as `--check-config` reads them; then three replica processes
/// (ft2:4 on fabric-simd): replica 1's listener from the config file's `metrics-listen`,
/// 2 and 3's from `--metrics-listen`; per-port families off by the key (1), on by
/// `--metrics-port-counters true` over that key (2), off by `--no-metrics-port-counters`
/// (3). Every replica's scrape passes the checker, the master shows SMInfo MASTER and the
/// others STANDBY; kill -9 of the master, and the new master reports the failover.
#[test]
fn replica_processes_serve_metrics_from_the_key_and_the_flags_and_measure_a_failover() {
    let d = common::temp_dir("metrics-procs");
    let addrs: Vec<SocketAddr> = (0..3).map(|_| free_addr()).collect();
    let toml = d.join("metrics.toml");
    std::fs::write(
        &toml,
        format!(
            "metrics-listen = \"{}\"\nmetrics-port-counters = false\n",
            addrs[0]
        ),
    )
    .unwrap();
    let toml_s = toml.to_str().unwrap();
    let fabric = ["--fabric", "sim:ft2:4"];
    let (ok, out) = check_config(&[&fabric[..], &["--config", toml_s]].concat());
    assert!(ok, "{out}");
    assert!(
        out.contains(&format!("metrics {} (per-port families off)", addrs[0])),
        "{out}"
    );
    let (ok, out) = check_config(
        &[
            &fabric[..],
            &["--config", toml_s, "--metrics-port-counters", "true"],
        ]
        .concat(),
    );
    assert!(ok && out.contains("(per-port families on)"), "{out}");
    let (ok, out) = check_config(
        &[
            &fabric[..],
            &[
                "--metrics-listen",
                "127.0.0.1:9999",
                "--no-metrics-port-counters",
            ],
        ]
        .concat(),
    );
    assert!(
        ok && out.contains("metrics 127.0.0.1:9999 (per-port families off)"),
        "{out}"
    );
    let (ok, out) = check_config(&fabric);
    assert!(
        ok && out.contains("metrics not served (per-port families on)"),
        "{out}"
    );
    let (ok, out) = check_config(
        &[
            &fabric[..],
            &[
                "--metrics-port-counters",
                "true",
                "--no-metrics-port-counters",
            ],
        ]
        .concat(),
    );
    assert!(!ok && out.contains("cannot be used with"), "{out}");

    let mut c = LocalCluster::new(&bin(), "ft2:4", 3, &d.join("cluster")).unwrap();
    let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    c.replicas[0].extra = s(&["--config", toml_s]);
    let a1 = addrs[1].to_string();
    c.replicas[1].extra = s(&[
        "--config",
        toml_s,
        "--metrics-listen",
        &a1,
        "--metrics-port-counters",
        "true",
    ]);
    let a2 = addrs[2].to_string();
    c.replicas[2].extra = s(&["--metrics-listen", &a2, "--no-metrics-port-counters"]);
    c.start_all().unwrap();
    let rt = rt();
    let leader = rt.block_on(c.wait_serving(0, BOUND)).unwrap().leader_id;
    // Every replica: strict text; SMInfo MASTER at the leader, STANDBY elsewhere (once
    // its standby SM attached).
    let state = |id: u64| -> f64 {
        let want = if id == leader { 3.0 } else { 2.0 };
        let t0 = Instant::now();
        loop {
            let x = scrape(addrs[id as usize - 1], Format::OpenMetrics);
            let v = one(&x, "sm_sminfo_state");
            if v == want || t0.elapsed() > BOUND {
                assert_eq!(one(&x, "sm_raft_leader_id"), leader as f64);
                scrape(addrs[id as usize - 1], Format::Prometheus);
                return v;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    for id in 1..=3 {
        assert_eq!(
            state(id),
            if id == leader { 3.0 } else { 2.0 },
            "replica {id}"
        );
    }
    for (id, per_port) in [(1, "off"), (2, "on"), (3, "off")] {
        let log = std::fs::read_to_string(c.dir.join(format!("replica{id}.log"))).unwrap();
        let line = format!("/metrics (per-port families {per_port})");
        assert!(log.contains(&line), "replica {id}: no {line:?} in\n{log}");
    }
    // kill -9 of the master: the new master measures the takeover.
    let killed_ms = sm_node::clock::unix_ms();
    c.kill9(leader);
    let st = rt.block_on(c.wait_serving(killed_ms, BOUND)).unwrap();
    assert_ne!(st.leader_id, leader);
    let x = scrape(addrs[st.leader_id as usize - 1], Format::OpenMetrics);
    let failover = one(&x, "sm_failover_seconds");
    assert!(
        failover > 0.0 && failover < BOUND.as_secs_f64(),
        "{failover}"
    );
    assert!(one(&x, "sm_leader_changes_total") >= 1.0);
    assert_eq!(one(&x, "sm_sminfo_state"), 3.0);
    assert!(one(&x, "sm_subnet_up_seconds") > 0.0);
    drop(c);
    let _ = std::fs::remove_dir_all(&d);
}

/// The checker itself refuses what it must.
#[test]
fn the_checker_refuses_malformed_expositions() {
    let ok = "# HELP a_seconds A.\n# TYPE a_seconds histogram\na_seconds_sum 1.5\na_seconds_count 2\na_seconds_bucket{le=\"1.0\"} 1\na_seconds_bucket{le=\"+Inf\"} 2\n# HELP c C.\n# TYPE c counter\nc_total{k=\"v\"} 3\n# EOF\n";
    check(ok, Format::OpenMetrics).unwrap();
    let bad = [
        ("no EOF", ok.trim_end_matches("# EOF\n").to_string()),
        ("no HELP", ok.replace("# HELP c C.\n", "")),
        ("no TYPE", ok.replace("# TYPE c counter\n", "")),
        ("counter without _total", ok.replace("c_total{", "c{")),
        ("bad name", ok.replace("c_total{", "c-x_total{")),
        ("bad label", ok.replace("{k=", "{1k=")),
        ("unquoted label", ok.replace("{k=\"v\"}", "{k=v}")),
        (
            "duplicate series",
            ok.replace(
                "c_total{k=\"v\"} 3\n",
                "c_total{k=\"v\"} 3\nc_total{k=\"v\"} 4\n",
            ),
        ),
        (
            "buckets falling",
            ok.replace("le=\"1.0\"} 1", "le=\"1.0\"} 3"),
        ),
        (
            "+Inf != count",
            ok.replace("a_seconds_count 2", "a_seconds_count 5"),
        ),
        (
            "no +Inf",
            ok.replace("a_seconds_bucket{le=\"+Inf\"} 2\n", ""),
        ),
        ("bad value", ok.replace("} 3\n", "} three\n")),
        ("negative counter", ok.replace("} 3\n", "} -3\n")),
        (
            "interleaved",
            ok.replace("# EOF\n", "a_seconds_sum 2\n# EOF\n"),
        ),
    ];
    for (what, text) in bad {
        assert!(
            check(&text, Format::OpenMetrics).is_err(),
            "{what} passed:\n{text}"
        );
    }
    let prom = "# HELP c_total C.\n# TYPE c_total counter\nc_total 1\n";
    check(prom, Format::Prometheus).unwrap();
    assert!(check(&prom.replace("c_total", "c"), Format::Prometheus).is_err());
}
