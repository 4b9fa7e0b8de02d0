//! `sm-node demo`: the fabric (fabric-simd's server on threads of this process, a generated
//! topology) and N replica processes of this same binary on loopback; waits for SUBNET UP,
//! prints the cluster, and on Ctrl-C (or with `--exit-after-subnet-up`) stops the replicas
//! with SIGTERM and the fabric.

use anyhow::{Context, anyhow};
use fabric::Guid;
use fabric_sim::{SimConfig, SimFabric};
use sm_node::daemon;
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

/// `demo` flags.
#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// Replicas.
    #[arg(long, default_value_t = 3)]
    replicas: u64,
    /// Topology: a generator spec (ft2:36, ft3:4, torus:4x4x2, ...) or a file.
    #[arg(long, default_value = "ft2:36")]
    fabric: String,
    /// First replica's port; replica i listens on BASE+i.
    #[arg(long, default_value_t = 7100)]
    base_port: u16,
    /// Working directory (sled data, socket, logs); default a fresh one under /tmp.
    #[arg(long)]
    dir: Option<std::path::PathBuf>,
    /// Stop everything once SUBNET UP was reported (CI, smoke tests).
    #[arg(long)]
    exit_after_subnet_up: bool,
    /// Serve every replica's read-only dashboard: replica i at this address's port + i - 1
    /// (plain HTTP on loopback, no token: the demo's replicas run with --insecure-loopback).
    #[arg(long)]
    dashboard_listen: Option<std::net::SocketAddr>,
    /// Serve every replica's Prometheus metrics (`GET /metrics`): replica i at this
    /// address's port + i - 1.
    #[arg(long)]
    metrics_listen: Option<std::net::SocketAddr>,
}

/// `addr` with its port moved up by `i - 1` (replica i of the demo).
fn nth(addr: std::net::SocketAddr, i: u64) -> std::net::SocketAddr {
    let mut a = addr;
    a.set_port(addr.port().saturating_add((i - 1) as u16));
    a
}

/// CA port GUIDs with a cable, in topology order.
fn ca_ports(t: &fabric::Topology) -> Vec<Guid> {
    t.cas()
        .flat_map(|(_, n)| {
            n.port_numbers()
                .filter(|p| n.ports[p.0 as usize].remote.is_some())
                .map(|p| n.ports[p.0 as usize].guid)
                .collect::<Vec<_>>()
        })
        .collect()
}

struct Children(Vec<Child>);

impl Children {
    fn stop(&mut self) {
        for c in &mut self.0 {
            // SAFETY: kill(2) on the pid of a child this process spawned and has not reaped.
            unsafe {
                libc::kill(c.id() as i32, libc::SIGTERM);
            }
        }
        for c in &mut self.0 {
            let _ = c.wait();
        }
        self.0.clear();
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Runs the demo.
pub async fn run(a: &DemoArgs) -> anyhow::Result<ExitCode> {
    let mut signals = crate::stop::StopSignals::install()?;
    let dir = a.dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("quorum-sm-demo-{}", std::process::id()))
    });
    std::fs::create_dir_all(&dir).with_context(|| format!("{}", dir.display()))?;
    let topo = daemon::load_topology(&a.fabric)?;
    let ports = ca_ports(&topo);
    if ports.len() < a.replicas as usize {
        return Err(anyhow!("the fabric has fewer CA ports than replicas"));
    }
    let sim = SimFabric::new(&topo, SimConfig::default()).map_err(|e| anyhow!("{e}"))?;
    let socket = dir.join("simd.sock");
    let _ = std::fs::remove_file(&socket);
    let server = fabric_sim::server::spawn(sim, &socket).map_err(|e| anyhow!("{e}"))?;
    println!(
        "fabric {} ({} nodes) served at {}",
        a.fabric,
        topo.nodes().count(),
        socket.display()
    );
    println!(
        "replicas start with --insecure-loopback: plain HTTP/2 on 127.0.0.1 (development; see docs/admin.md for TLS and tokens)"
    );
    let peers: Vec<String> = (1..=a.replicas)
        .map(|i| format!("{i}=127.0.0.1:{}", a.base_port + i as u16))
        .collect();
    let peers = peers.join(",");
    let exe = std::env::current_exe()?;
    let mut children = Children(Vec::new());
    for i in 1..=a.replicas {
        let log = std::fs::File::create(dir.join(format!("replica{i}.log")))?;
        let port = ports[(i - 1) as usize];
        let mut cmd = Command::new(&exe);
        if let Some(d) = a.dashboard_listen {
            cmd.arg("--dashboard-listen").arg(nth(d, i).to_string());
            println!("replica {i}: dashboard http://{}/", nth(d, i));
        }
        if let Some(m) = a.metrics_listen {
            cmd.arg("--metrics-listen").arg(nth(m, i).to_string());
            println!("replica {i}: metrics http://{}/metrics", nth(m, i));
        }
        let child = cmd
            .arg("--id")
            .arg(i.to_string())
            .arg("--peers")
            .arg(&peers)
            .args(["--initial-cluster-state", "new"])
            .arg("--data-dir")
            .arg(dir.join(format!("r{i}")))
            .arg("--fabric")
            .arg(format!("simd:{}@0x{:016x}", socket.display(), port.0))
            .args(["--sweep-interval", "5"])
            // Development set-up on loopback: plain HTTP/2, said explicitly.
            .arg("--insecure-loopback")
            .env(
                "RUST_LOG",
                std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()?;
        println!(
            "replica {i}: pid {}, 127.0.0.1:{}, CA port 0x{:016x}, log {}",
            child.id(),
            a.base_port + i as u16,
            port.0,
            dir.join(format!("replica{i}.log")).display()
        );
        children.0.push(child);
    }
    let start = Instant::now();
    let first = format!("127.0.0.1:{}", a.base_port + 1);
    // Poll the cluster until the leader reports SUBNET UP (bounded).
    let st = loop {
        if start.elapsed() > Duration::from_secs(120) {
            return Err(anyhow!(
                "no SUBNET UP within 120 s; see the logs in {}",
                dir.display()
            ));
        }
        if let Ok(st) = crate::cluster_cli::status(&first).await
            && st.leader_id != 0
        {
            let leader = st
                .replicas
                .iter()
                .find(|r| r.id == st.leader_id)
                .map(|r| r.peer_address.clone())
                .unwrap_or_default();
            if let Ok(ls) = crate::cluster_cli::status(&leader).await
                && ls.subnet_up_unix_ms != 0
                && ls.leader_id == ls.self_id
            {
                break ls;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    println!(
        "SUBNET UP {:.2} s after the replicas were started",
        start.elapsed().as_secs_f64()
    );
    print!("{}", views::cluster::status_text(&st));
    if !a.exit_after_subnet_up {
        println!(
            "Ctrl-C stops everything (try: kill -9 the master's pid, then `sm-node status --addr {first}`)"
        );
        let sig = signals.recv().await;
        println!("{sig}");
    }
    println!("stopping the replicas (SIGTERM) and the fabric");
    children.stop();
    server.shutdown();
    Ok(ExitCode::SUCCESS)
}
