//! Prometheus text metrics of a replica, served on a small HTTP listener
//! (`SM_METRICS_LISTEN=127.0.0.1:9464`, `GET /metrics`): admin RPC counts and latencies,
//! SMPs sent by the master by attribute and method, heavy sweep and routing durations,
//! Raft term/commit/applied, leader changes seen (failovers) and admin proposals.

use crate::cluster::raft_actor::{AddObserver, GetClusterStatus, RaftActor, ReadState};
use crate::master::GetStatus;
use crate::milestone::{Milestone, MilestoneKind};
use actix::Addr;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// (count, sum of seconds, last seconds).
type Hist = (u64, f64, f64);

#[derive(Default)]
struct Metrics {
    rpc: Mutex<BTreeMap<&'static str, Hist>>,
    sweeps: Mutex<Hist>,
    routing: Mutex<Hist>,
    leader_changes: AtomicU64,
    proposals: AtomicU64,
}

static M: OnceLock<Metrics> = OnceLock::new();

fn m() -> &'static Metrics {
    M.get_or_init(Metrics::default)
}

fn add(h: &Mutex<Hist>, secs: f64) {
    if let Ok(mut h) = h.lock() {
        h.0 += 1;
        h.1 += secs;
        h.2 = secs;
    }
}

/// Times one admin RPC (recorded when dropped).
pub struct RpcTimer {
    method: &'static str,
    start: Instant,
}

impl RpcTimer {
    /// Starts timing `method`.
    pub fn new(method: &'static str) -> RpcTimer {
        RpcTimer {
            method,
            start: Instant::now(),
        }
    }
}

impl Drop for RpcTimer {
    fn drop(&mut self) {
        let s = self.start.elapsed().as_secs_f64();
        if let Ok(mut r) = m().rpc.lock() {
            let e = r.entry(self.method).or_default();
            e.0 += 1;
            e.1 += s;
            e.2 = s;
        }
    }
}

/// Counts an admin write proposed to Raft.
pub fn proposal() {
    m().proposals.fetch_add(1, Ordering::Relaxed);
}

/// The metrics text of this replica now.
pub async fn render(raft: &Addr<RaftActor>) -> String {
    let mut o = String::new();
    let mm = m();
    if let Ok(st) = raft.send(GetClusterStatus).await {
        let _ = writeln!(o, "# TYPE sm_raft_term gauge\nsm_raft_term {}", st.term);
        let _ = writeln!(
            o,
            "# TYPE sm_raft_commit_index gauge\nsm_raft_commit_index {}",
            st.commit_index
        );
        let _ = writeln!(
            o,
            "# TYPE sm_raft_applied_index gauge\nsm_raft_applied_index {}",
            st.applied_index
        );
        let _ = writeln!(
            o,
            "# TYPE sm_raft_leader_id gauge\nsm_raft_leader_id {}",
            st.leader_id
        );
        let _ = writeln!(
            o,
            "# TYPE sm_raft_is_leader gauge\nsm_raft_is_leader {}",
            u8::from(st.leader_id == st.self_id)
        );
        let _ = writeln!(
            o,
            "# TYPE sm_policy_version gauge\nsm_policy_version {}",
            st.policy_version
        );
    }
    let _ = writeln!(
        o,
        "# TYPE sm_leader_changes_total counter\nsm_leader_changes_total {}",
        mm.leader_changes.load(Ordering::Relaxed)
    );
    let _ = writeln!(
        o,
        "# TYPE sm_admin_proposals_total counter\nsm_admin_proposals_total {}",
        mm.proposals.load(Ordering::Relaxed)
    );
    if let Ok(Some(master)) = raft.send(ReadState(Box::new(|v| v.master))).await
        && let Ok(s) = master.send(GetStatus).await
    {
        let _ = writeln!(o, "# TYPE sm_smps_sent_total counter");
        for (i, (an, _)) in sm_core::ATTRS.iter().enumerate() {
            for (j, (mn, _)) in sm_core::METHODS.iter().enumerate() {
                let v = s.counters.sent[i][j];
                if v != 0 {
                    let _ = writeln!(
                        o,
                        "sm_smps_sent_total{{attribute=\"{an}\",method=\"{mn}\"}} {v}"
                    );
                }
            }
        }
        let _ = writeln!(
            o,
            "# TYPE sm_smp_timeouts_total counter\nsm_smp_timeouts_total {}",
            s.counters.timeouts
        );
        let _ = writeln!(
            o,
            "# TYPE sm_traps_total counter\nsm_traps_total {}",
            s.counters.traps
        );
    }
    for (name, h) in [
        ("sm_heavy_sweep_seconds", &mm.sweeps),
        ("sm_routing_seconds", &mm.routing),
    ] {
        if let Ok(h) = h.lock() {
            let _ = writeln!(
                o,
                "# TYPE {name} summary\n{name}_count {}\n{name}_sum {:.6}\n{name}_last {:.6}",
                h.0, h.1, h.2
            );
        }
    }
    if let Ok(r) = mm.rpc.lock() {
        let _ = writeln!(o, "# TYPE sm_admin_rpc_seconds summary");
        for (k, h) in r.iter() {
            let _ = writeln!(
                o,
                "sm_admin_rpc_seconds_count{{method=\"{k}\"}} {}\nsm_admin_rpc_seconds_sum{{method=\"{k}\"}} {:.6}",
                h.0, h.1
            );
        }
    }
    o
}

/// Follows milestones (sweep and routing durations) and leader changes of `raft`.
fn follow(raft: Addr<RaftActor>) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Milestone>();
    raft.do_send(AddObserver(tx));
    tokio::spawn(async move {
        let (mut sweep_at, mut route_at): (Option<Duration>, Option<Duration>) = (None, None);
        while let Some(ms) = rx.recv().await {
            match ms.kind {
                MilestoneKind::HeavySweepStarted { .. } => sweep_at = Some(ms.elapsed),
                MilestoneKind::HeavySweepComplete { .. } => {
                    if let Some(t) = sweep_at.take() {
                        add(&m().sweeps, ms.elapsed.saturating_sub(t).as_secs_f64());
                    }
                }
                MilestoneKind::RoutingStarted => route_at = Some(ms.elapsed),
                MilestoneKind::RoutingDone { .. } => {
                    if let Some(t) = route_at.take() {
                        add(&m().routing, ms.elapsed.saturating_sub(t).as_secs_f64());
                    }
                }
                _ => {}
            }
        }
    });
    tokio::spawn(async move {
        let mut last = 0u64;
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let Ok(st) = raft.send(GetClusterStatus).await else {
                return;
            };
            if st.leader_id != 0 && st.leader_id != last {
                if last != 0 {
                    m().leader_changes.fetch_add(1, Ordering::Relaxed);
                }
                last = st.leader_id;
            }
        }
    });
}

/// Serves `/metrics` (on the current tokio runtime) at `listen` (the `metrics-listen`
/// key or flag), else at `SM_METRICS_LISTEN` when set; with `SM_METRICS_PORT_PLUS_ID=1` the
/// environment's port is increased by the replica id (several replicas on one host sharing
/// an environment).
pub fn spawn(
    raft: Addr<RaftActor>,
    id: u64,
    listen: Option<std::net::SocketAddr>,
) -> Result<(), String> {
    let addr = match (listen, std::env::var("SM_METRICS_LISTEN")) {
        (Some(a), _) => a,
        (None, Err(_)) => return Ok(()),
        (None, Ok(addr)) => {
            let mut a: std::net::SocketAddr = addr
                .parse()
                .map_err(|e| format!("SM_METRICS_LISTEN={addr}: {e}"))?;
            if std::env::var("SM_METRICS_PORT_PLUS_ID").is_ok_and(|v| v == "1") {
                a.set_port(a.port().saturating_add(id as u16));
            }
            a
        }
    };
    let std_l = std::net::TcpListener::bind(addr)
        .map_err(|e| format!("E_NODE_METRICS: bind {addr}: {e}"))?;
    std_l.set_nonblocking(true).map_err(|e| e.to_string())?;
    let l = tokio::net::TcpListener::from_std(std_l).map_err(|e| e.to_string())?;
    follow(raft.clone());
    tracing::info!("metrics on http://{addr}/metrics");
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        loop {
            let Ok((mut s, _)) = l.accept().await else {
                continue;
            };
            let raft = raft.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                let _ = s.read(&mut buf).await;
                let body = render(&raft).await;
                let resp = format!(
                    "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(resp.as_bytes()).await;
            });
        }
    });
    Ok(())
}
