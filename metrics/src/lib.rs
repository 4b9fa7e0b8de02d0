//! `sm-metrics` — the Prometheus registry of a Quorum SM replica, through prometheus-client:
//! every family, its HELP and type (all listed in docs/metrics.md), and the calls that
//! update them. sm-node serves it (`metrics-listen`, `GET /metrics`).
//!
//! It must never decide anything about the fabric or the cluster, do IO (beyond handing
//! out the encoded text) or block: it only stores what it is handed.
//!
//! One registry per process, created once: the master and standby SM actors, the RaftActor
//! and the admin service only update it, so counters go on across a master's restart
//! inside the process. What is recorded:
//! - by the role actors ([`RoleMetrics`]): SMPs sent, timeouts, traps, the SMInfo state,
//!   heavy and light sweep and routing durations, SUBNET UP time, ports down, the fabric's
//!   size, the failover duration (leader loss to this master's SUBNET UP);
//! - by the RaftActor ([`leader_seen`]): leader changes, the start of a failover;
//! - by the admin service: RPC latencies ([`RpcTimer`]) and proposals ([`proposal`]);
//! - at scrape time ([`set_raft`]): Raft term, commit, applied, leader, policy version;
//! - by the performance manager ([`fabric`], [`publish_perf`]): per-port counters, link
//!   health, alarms.

pub mod fabric;
mod perf;
mod role;
pub mod rows;

pub use mad::perf::Counter as PortCounter;
pub use perf::publish_perf;
pub use role::RoleMetrics;
pub use rows::{EXPORTED, LinkHealth, LinkHealthRow, PortCounterRow, info};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::{Registry, Unit};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

type Labels<const N: usize> = [(&'static str, &'static str); N];
type Seconds = Gauge<f64, AtomicU64>;
type Hist = Family<Labels<1>, Histogram, fn() -> Histogram>;

/// The SM's and the cluster's families (handles into the registry).
struct Sm {
    raft_term: Gauge,
    raft_commit_index: Gauge,
    raft_applied_index: Gauge,
    raft_leader_id: Gauge,
    raft_is_leader: Gauge,
    policy_version: Gauge,
    leader_changes: Counter,
    proposals: Counter,
    smps: Family<Labels<2>, Counter>,
    smp_timeouts: Counter,
    traps: Counter,
    rogue_alarms: Counter,
    sminfo_state: Gauge,
    subnet_up: Seconds,
    failover: Seconds,
    ports_down: Gauge,
    nodes: Gauge,
    switches: Gauge,
    links: Gauge,
    heavy_sweep: Histogram,
    light_sweep: Histogram,
    routing: Histogram,
    rpc: Hist,
}

/// The process's registry and its families.
struct Metrics {
    registry: Registry,
    sm: Sm,
    fabric: fabric::FabricMetrics,
    /// A listener serves the registry (costly figures are computed only then).
    served: AtomicBool,
    /// The role actor whose SMInfo state the gauge shows (the last one started).
    sminfo_owner: AtomicU64,
    roles: AtomicU64,
    leader: Mutex<LeaderWatch>,
}

/// What the RaftActor last said about the leader.
#[derive(Default)]
struct LeaderWatch {
    /// The last leader known (0: none yet).
    known: u64,
    /// When this replica saw the known leader go, while it may become the new master.
    lost_at: Option<Instant>,
}

fn rpc_histogram() -> Histogram {
    // 100 µs .. 13 s.
    Histogram::new(exponential_buckets(1e-4, 2.0, 18))
}

impl Metrics {
    fn new() -> Metrics {
        let mut r = Registry::default();
        let g = |r: &mut Registry, name: &str, help: &str| {
            let g = Gauge::default();
            r.register(name, help, g.clone());
            g
        };
        let c = |r: &mut Registry, name: &str, help: &str| {
            let c = Counter::default();
            r.register(name, help, c.clone());
            c
        };
        let s = |r: &mut Registry, name: &str, help: &str| {
            let g = Seconds::default();
            r.register_with_unit(name, help, Unit::Seconds, g.clone());
            g
        };
        let h = |r: &mut Registry, name: &str, help: &str, b: Histogram| {
            r.register_with_unit(name, help, Unit::Seconds, b.clone());
            b
        };
        r.register(
            "sm_build",
            "Build of this sm-node (value 1)",
            Info::new([("version", env!("CARGO_PKG_VERSION"))]),
        );
        let raft_term = g(&mut r, "sm_raft_term", "Raft term of this replica");
        let raft_commit_index = g(&mut r, "sm_raft_commit_index", "Raft commit index");
        let raft_applied_index = g(&mut r, "sm_raft_applied_index", "Raft applied index");
        let raft_leader_id = g(
            &mut r,
            "sm_raft_leader_id",
            "Raft id of the known leader (0: none)",
        );
        let raft_is_leader = g(&mut r, "sm_raft_is_leader", "1 when this replica leads");
        let policy_version = g(
            &mut r,
            "sm_policy_version",
            "Version of the partition policy in force",
        );
        let leader_changes = c(
            &mut r,
            "sm_leader_changes",
            "Changes of Raft leader this replica saw (failovers and transfers)",
        );
        let proposals = c(
            &mut r,
            "sm_admin_proposals",
            "Admin writes proposed to Raft through this replica",
        );
        let smps = Family::default();
        r.register(
            "sm_smps_sent",
            "SMPs this replica's SM sent (as master or standby), by attribute and method; resends included",
            smps.clone(),
        );
        let smp_timeouts = c(
            &mut r,
            "sm_smp_timeouts",
            "SMP requests of this replica's SM that timed out (each resend once)",
        );
        let traps = c(&mut r, "sm_traps", "Traps this replica's SM received");
        let rogue_alarms = c(
            &mut r,
            "sm_rogue_alarms",
            "Alarms this replica's master raised about another SM acting behind its back: an LFT or P_Key block changed, an unknown SM, an SM with another SM_Key, a lower-priority SM claiming MASTER",
        );
        let sminfo_state = g(
            &mut r,
            "sm_sminfo_state",
            "SMInfo state of this replica's SM: 0 not active (no SM attached), 1 discovering, 2 standby, 3 master",
        );
        let subnet_up = s(
            &mut r,
            "sm_subnet_up",
            "Time from this replica's last master start to its SUBNET UP",
        );
        let failover = s(
            &mut r,
            "sm_failover",
            "Last failover this replica took over: from its seeing the old leader gone to its master's SUBNET UP",
        );
        let ports_down = g(
            &mut r,
            "sm_ports_down",
            "Linked ports not ACTIVE in the master's last heavy sweep (0 when this replica is not master)",
        );
        let nodes = g(
            &mut r,
            "sm_fabric_nodes",
            "Nodes the master's last discovery found",
        );
        let switches = g(
            &mut r,
            "sm_fabric_switches",
            "Switches the master's last discovery found",
        );
        let links = g(
            &mut r,
            "sm_fabric_links",
            "Links the master's last discovery found",
        );
        // 1 ms .. 131 s: ft3:36 in process takes about 1 s, through umad tens of seconds.
        let heavy_sweep = h(
            &mut r,
            "sm_heavy_sweep",
            "Heavy sweep durations (start to HEAVY SWEEP COMPLETE)",
            Histogram::new(exponential_buckets(1e-3, 2.0, 18)),
        );
        let light_sweep = h(
            &mut r,
            "sm_light_sweep",
            "Light sweep durations",
            Histogram::new(exponential_buckets(5e-4, 2.0, 16)),
        );
        let routing = h(
            &mut r,
            "sm_routing",
            "Routing durations (job sent to the pool to result accepted)",
            Histogram::new(exponential_buckets(5e-4, 2.0, 18)),
        );
        let rpc: Hist = Family::new_with_constructor(rpc_histogram);
        r.register_with_unit(
            "sm_admin_rpc",
            "Admin RPC latencies by method",
            Unit::Seconds,
            rpc.clone(),
        );
        let fabric = fabric::FabricMetrics::register(&mut r);
        // Rows are stored only once a listener serves them with the per-port families on.
        fabric.set_enabled(false);
        Metrics {
            registry: r,
            sm: Sm {
                raft_term,
                raft_commit_index,
                raft_applied_index,
                raft_leader_id,
                raft_is_leader,
                policy_version,
                leader_changes,
                proposals,
                smps,
                smp_timeouts,
                traps,
                rogue_alarms,
                sminfo_state,
                subnet_up,
                failover,
                ports_down,
                nodes,
                switches,
                links,
                heavy_sweep,
                light_sweep,
                routing,
                rpc,
            },
            fabric,
            served: AtomicBool::new(false),
            sminfo_owner: AtomicU64::new(0),
            roles: AtomicU64::new(0),
            leader: Mutex::new(LeaderWatch::default()),
        }
    }
}

static M: OnceLock<Metrics> = OnceLock::new();

fn m() -> &'static Metrics {
    M.get_or_init(Metrics::new)
}

/// True once a listener serves the metrics.
pub fn served() -> bool {
    m().served.load(Ordering::Relaxed)
}

/// Exposition formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0 text (ends with `# EOF`).
    OpenMetrics,
    /// The Prometheus text format 0.0.4.
    Prometheus,
}

impl Format {
    /// The Content-Type of a reply in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Prometheus => prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
        }
    }
}

/// The registry's text now, without asking the replica.
pub fn encode(format: Format) -> String {
    let mut s = String::new();
    let r = &m().registry;
    let done = match format {
        Format::OpenMetrics => prometheus_client::encoding::text::encode(&mut s, r),
        Format::Prometheus => prometheus_client::encoding::prometheus_text::encode(&mut s, r),
    };
    if let Err(e) = done {
        tracing::error!("E_METRICS_ENCODE: encoding the metrics: {e}");
    }
    s
}

/// The Raft figures of this replica, set just before a scrape encodes the registry.
#[derive(Clone, Copy, Debug, Default)]
pub struct RaftFigures {
    /// Raft term.
    pub term: u64,
    /// Commit index.
    pub commit_index: u64,
    /// Applied index.
    pub applied_index: u64,
    /// Known leader (0: none).
    pub leader_id: u64,
    /// This replica's id.
    pub self_id: u64,
    /// Version of the partition policy in force.
    pub policy_version: u64,
}

/// Sets the Raft gauges.
pub fn set_raft(f: RaftFigures) {
    let sm = &m().sm;
    let i = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    sm.raft_term.set(i(f.term));
    sm.raft_commit_index.set(i(f.commit_index));
    sm.raft_applied_index.set(i(f.applied_index));
    sm.raft_leader_id.set(i(f.leader_id));
    sm.raft_is_leader
        .set(i64::from(f.leader_id != 0 && f.leader_id == f.self_id));
    sm.policy_version.set(i(f.policy_version));
}

/// A listener serves the registry from now on; `port_counters` keeps the per-port families
/// (`metrics-port-counters`).
pub fn mark_served(port_counters: bool) {
    let mm = m();
    mm.fabric.set_enabled(port_counters);
    mm.served.store(true, Ordering::Relaxed);
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
        m().sm
            .rpc
            .get_or_create(&[("method", self.method)])
            .observe(s);
    }
}

/// Counts an admin write proposed to Raft.
pub fn proposal() {
    m().sm.proposals.inc();
}

/// The RaftActor's view of the leader after each step (`self_id` is this replica): counts
/// leader changes, and notes when a leader this replica knew went, so that its own master's
/// SUBNET UP ends a measured failover. One replica per process.
pub fn leader_seen(self_id: u64, leader: u64) {
    let mm = m();
    let Ok(mut w) = mm.leader.lock() else {
        return;
    };
    if leader == w.known {
        return;
    }
    if w.known != 0 && w.lost_at.is_none() {
        w.lost_at = Some(Instant::now());
    }
    if leader == 0 {
        return;
    }
    if w.known != 0 {
        mm.sm.leader_changes.inc();
    }
    w.known = leader;
    if leader != self_id {
        // Another replica's master takes over: not measured here.
        w.lost_at = None;
    }
}

/// True when per-port rows are kept (served, per-port families on): the perf manager may
/// skip building rows otherwise.
pub fn port_counters_wanted() -> bool {
    m().fabric.enabled()
}

/// Replaces every port's counters with `rows` (ports not in them disappear); stores
/// nothing unless `/metrics` is served with the per-port families on. See [`fabric`].
pub fn set_port_counters(rows: &[PortCounterRow]) {
    m().fabric.set_port_counters(rows);
}

/// Adds or replaces the counters of the ports in `rows` (see [`fabric`]).
pub fn update_port_counters(rows: &[PortCounterRow]) {
    m().fabric.update_port_counters(rows);
}

/// Replaces every link's health (see [`fabric`]).
pub fn set_link_health(rows: &[LinkHealthRow]) {
    m().fabric.set_link_health(rows);
}

/// Counts `n` perf manager alarms on `counter`.
pub fn add_port_alarms(counter: PortCounter, n: u64) {
    m().fabric.add_port_alarms(counter, n);
}
