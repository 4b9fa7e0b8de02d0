//! `sm-node`: the Quorum SM daemon (single-replica form). Attaches to a fabric, becomes
//! master, sweeps it to SUBNET UP and keeps it up with light and heavy sweeps until SIGINT /
//! SIGTERM (or, with `--exit-after-subnet-up`, until the first sweep completes), then
//! flushes guid2lid and prints a summary of what it did. SIGHUP re-reads the partitions file
//! (see [`reload_partitions`]).

mod bench;
mod cluster_cli;
mod demo;
mod stop;

mod tables;

use anyhow::anyhow;
use clap::Parser;
use sm_node::config::SweeperConfigOf as _;
use sm_node::config::{FileConfig, NodeConfig};
use sm_node::daemon;
use sm_node::master::{MasterActor, ReloadPolicy, Shutdown};
use sm_node::milestone::MilestoneKind;
use std::path::PathBuf;
use std::process::ExitCode;

/// Quorum SM daemon: one replica (with --id and --peers) of a Raft cluster, or a single
/// SM. Moving from OpenSM: `sm-node import-opensm` reads opensm.conf, partitions.conf,
/// guid2lid and the root GUID file. Logs go to stderr: RUST_LOG sets the level, colour
/// only on a terminal and never with NO_COLOR set.
#[derive(Parser, Debug)]
#[command(name = "sm-node", version, args_conflicts_with_subcommands = true)]
struct Cli {
    /// `demo` (fabric + three replicas in one command) or `status` (ask a replica).
    #[command(subcommand)]
    command: Option<cluster_cli::Sub>,
    /// Cluster mode: this replica's Raft id (with --peers and --data-dir).
    #[arg(long)]
    id: Option<u64>,
    /// Cluster mode: every replica as ID=IP:PORT, comma separated (this one included);
    /// Peer and SmAdmin gRPC are served there, with mutual TLS (--tls-cert, --tls-key,
    /// --tls-ca) or, on loopback only, plain HTTP/2 with --insecure-loopback.
    #[arg(long)]
    peers: Option<String>,
    /// Cluster mode: the initial voters, comma separated (default: every replica in
    /// --peers). Used only when the data directory is first initialized: a replica listed
    /// in --peers but not here starts as a non-voter and joins through `smctl members add`.
    #[arg(long, value_delimiter = ',')]
    voters: Vec<u64>,
    /// Cluster mode: the SM port GUIDs of the replicas (hex, comma separated; this one's
    /// may be listed too). Given, the master obeys the IBA priority rules towards every
    /// other SM (OpenSM...) as the cluster's one SM: it stands by for a foreign MASTER that
    /// outranks it and takes a HANDOVER; the replicas are never queried. Not given: other
    /// SMs are not looked at (docs/foreign-sms.md).
    #[arg(long, value_delimiter = ',', value_parser = parse_hex_guid)]
    peer_sm_guids: Vec<u64>,
    /// Cluster mode: what an EMPTY data directory means. `new`: this replica is one of a new
    /// cluster (every replica starts empty and votes). `existing` (default): the cluster
    /// exists and this replica's log was lost or is new: it recovers from the leader and
    /// neither votes nor campaigns until caught up, so it never votes with less than it
    /// once acknowledged. Ignored when the data directory holds a log.
    #[arg(long, value_enum, default_value_t = InitialClusterState::Existing)]
    initial_cluster_state: InitialClusterState,
    /// Cluster mode: listen address (default: this replica's address in --peers).
    #[arg(long)]
    listen: Option<std::net::SocketAddr>,
    /// Cluster mode: serve the read-only web dashboard here (HTTPS with the admin TLS
    /// settings; plain HTTP only with --insecure-loopback on a loopback address).
    #[arg(long)]
    dashboard_listen: Option<std::net::SocketAddr>,
    /// Cluster mode: Raft tick in ms.
    #[arg(long, default_value_t = 50)]
    tick_ms: u64,
    /// Cluster mode: election timeout in ticks (randomised up to twice that); at least 5.
    #[arg(long, default_value_t = 10)]
    election_ticks: usize,
    /// Cluster mode: snapshot the replicated state and compact the log every N applied
    /// entries.
    #[arg(long, default_value_t = 1000)]
    snapshot_every: u64,
    /// TOML configuration file (keys as the long flags: fabric, priority, routing-engine,
    /// sweep-interval, partitions, guid2lid, root-guid-file, data-dir, lmc, routing-workers,
    /// sim-pace, sim-seed, smp-timeout-ms, smp-window, and an [admin] table for TLS and
    /// tokens); flags override it. Example: /etc/quorum-sm/sm-node.toml.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Every key of the configuration file as a flag.
    #[command(flatten)]
    node: FileConfig,
    /// Log lines as text or json (one JSON object per line).
    #[arg(long, env = "SM_LOG_FORMAT", default_value = "text")]
    log_format: deploy::logging::LogFormat,
    /// Read and check the configuration (files included), print one line, exit.
    #[arg(long)]
    check_config: bool,
    /// Exit once the first heavy sweep (the one that reaches SUBNET UP) completes.
    #[arg(long)]
    exit_after_subnet_up: bool,
    /// After the first SUBNET UP, and again after the heavy sweep that programs a policy
    /// reloaded by SIGHUP, write the master's LFTs and P_Key tables to this file
    /// (`lft GUID LID PORT` and `pkeys GUID PORT KEYS...` lines).
    #[arg(long)]
    dump_tables: Option<PathBuf>,
    /// Cluster mode security ([admin] in the config file): PEM certificate chain of this
    /// replica.
    #[arg(long)]
    tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long)]
    tls_key: Option<PathBuf>,
    /// PEM CA of the replicas (verifies servers; the server requires client certificates).
    #[arg(long)]
    tls_ca: Option<PathBuf>,
    /// Name checked in the other replicas' certificates (default localhost).
    #[arg(long)]
    tls_domain: Option<String>,
    /// Admin bearer tokens file: `ROLE TOKEN` lines (roles read, admin).
    #[arg(long)]
    tokens_file: Option<PathBuf>,
    /// Serve plain HTTP/2 without TLS: development only, refused unless the listen address
    /// is loopback.
    #[arg(long)]
    insecure_loopback: bool,
    /// Leave the per-port fabric families out of /metrics (`metrics-port-counters = false`).
    #[arg(long, conflicts_with = "metrics_port_counters")]
    no_metrics_port_counters: bool,
}

impl Cli {
    fn overlay(&self) -> FileConfig {
        FileConfig {
            admin: Some(sm_node::config::AdminSecurity {
                tls_cert: self.tls_cert.clone(),
                tls_key: self.tls_key.clone(),
                tls_ca: self.tls_ca.clone(),
                tls_domain: self.tls_domain.clone(),
                tokens_file: self.tokens_file.clone(),
                insecure_loopback: self.insecure_loopback.then_some(true),
            }),
            metrics_port_counters: if self.no_metrics_port_counters {
                Some(false)
            } else {
                self.node.metrics_port_counters
            },
            ..self.node.clone()
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    deploy::logging::init(cli.log_format);
    let result = match &cli.command {
        Some(sub) => cluster_cli::run_sub(sub),
        None if cli.check_config => check_config(&cli),
        None if cli.id.is_some() => run_cluster(cli),
        None => run(cli),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            tracing::error!("{e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The configuration file overlaid by the flags, resolved.
fn node_config(cli: &Cli) -> anyhow::Result<NodeConfig> {
    let file = match &cli.config {
        Some(p) => FileConfig::load(p)?,
        None => FileConfig::default(),
    };
    Ok(NodeConfig::try_from(file.overlay(cli.overlay()))?)
}

/// `--check-config`: everything start-up reads and checks (partitions, guid2lid and root
/// GUID files included), one line, exit 0; an error exits non-zero.
fn check_config(cli: &Cli) -> anyhow::Result<ExitCode> {
    let cfg = node_config(cli)?;
    let (scfg, _) = cfg.sweeper_config()?;
    let none = || PathBuf::from("none");
    let (parts, g2l) = (cfg.partitions.clone(), cfg.guid2lid.clone());
    let (parts, g2l) = (parts.unwrap_or_else(none), g2l.unwrap_or_else(none));
    let (engines, roots, ports) = (
        cfg.engines.join(","),
        cfg.updn_roots.len(),
        scfg.guid2lid.len(),
    );
    let (fabric, prio) = (&cfg.fabric, cfg.priority);
    let metrics = match cfg.metrics_listen {
        Some(a) => a.to_string(),
        None => "not served".to_string(),
    };
    let per_port = if cfg.metrics_port_counters {
        "on"
    } else {
        "off"
    };
    println!(
        "config OK: {fabric:?}, priority {prio}, routing {engines}, {roots} root GUIDs, partitions {parts:?}, guid2lid {g2l:?} ({ports} ports), metrics {metrics} (per-port families {per_port})"
    );
    Ok(ExitCode::SUCCESS)
}

fn run_cluster(cli: Cli) -> anyhow::Result<ExitCode> {
    let cfg = node_config(&cli)?;
    cfg.sweeper_config()?;
    // LIDs are replicated through Raft; the guid2lid file (DATA_DIR/guid2lid or --guid2lid)
    // is read by a new cluster's first master only, never written.
    let id = cli.id.unwrap_or(0);
    let peers = cli
        .peers
        .as_deref()
        .ok_or_else(|| anyhow!("E_NODE_CONFIG: --id needs --peers"))?;
    let data_dir = cli
        .node
        .data_dir
        .clone()
        .ok_or_else(|| anyhow!("E_NODE_CONFIG: --id needs --data-dir"))?;
    cluster_cli::run_replica(cluster_cli::ReplicaArgs {
        id,
        peers: peers.to_string(),
        listen: cli.listen,
        data_dir,
        tick_ms: cli.tick_ms,
        election_ticks: cli.election_ticks,
        snapshot_every: cli.snapshot_every,
        node: cfg,
        voters: cli.voters.clone(),
        peer_sm_guids: cli.peer_sm_guids.clone(),
        bootstrap: cli.initial_cluster_state == InitialClusterState::New,
        dashboard_listen: cli.dashboard_listen,
    })
}

/// A GUID in hex, with or without 0x.
fn parse_hex_guid(s: &str) -> Result<u64, String> {
    let h = s.trim();
    let h = h
        .strip_prefix("0x")
        .or_else(|| h.strip_prefix("0X"))
        .unwrap_or(h);
    u64::from_str_radix(h, 16).map_err(|e| format!("{s:?}: {e}"))
}

/// What an empty data directory of a cluster replica means (`--initial-cluster-state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum InitialClusterState {
    /// A replica of a new cluster.
    New,
    /// A replica of an existing cluster whose log is recovered from the leader.
    Existing,
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let cfg = node_config(&cli)?;
    // Check everything that can be wrong before touching the fabric.
    cfg.sweeper_config()?;
    if cfg.guid2lid.is_none() {
        tracing::warn!("no --data-dir or --guid2lid: LIDs will not survive a restart");
    }
    let exit_after = cli.exit_after_subnet_up;
    tables::set_path(cli.dump_tables.clone());
    let sys = actix_rt::System::new();
    sys.block_on(async move { serve(cfg, exit_after).await })
}

/// SIGHUP: reads the partitions file again and hands it to the master. A file that cannot be
/// read or does not parse is logged as `E_NODE_POLICY_RELOAD` (every syntax error as
/// file:line:col) and changes nothing. Returns the first heavy sweep certain to program the
/// new policy when the master took it.
async fn reload_partitions(cfg: &NodeConfig, master: &actix::Addr<MasterActor>) -> Option<u64> {
    use sm_node::config::{ConfigError, load_partitions, load_qos_policy};
    let ((Some(path), qos) | (None, qos @ Some(path))) =
        (cfg.partitions.as_ref(), cfg.qos_policy_file.as_ref())
    else {
        tracing::info!("SIGHUP: no partitions or QoS policy file is configured; nothing to reload");
        return None;
    };
    tracing::info!("SIGHUP: reading {}", path.display());
    // Both files are read and checked before anything changes.
    let loaded = (cfg.partitions.as_deref().map(load_partitions).transpose())
        .and_then(|p| Ok((p, qos.map(|q| load_qos_policy(q)).transpose()?)));
    let (text, qos) = match loaded {
        Ok(t) => t,
        Err(ConfigError::Partitions { errors, .. } | ConfigError::QosPolicy { errors, .. }) => {
            let errors = errors.lines().collect::<Vec<_>>().join("; ");
            tracing::error!("E_NODE_POLICY_RELOAD: {errors}; the policy in force is kept");
            return None;
        }
        Err(e) => {
            tracing::error!("E_NODE_POLICY_RELOAD: {e}; the policy in force is kept");
            return None;
        }
    };
    match master.send(ReloadPolicy { text, qos }).await {
        Ok(Ok(first)) => {
            tracing::info!(
                "partitions reloaded from {} (in force from heavy sweep {first})",
                path.display()
            );
            Some(first)
        }
        Ok(Err(e)) => {
            tracing::error!(
                "E_NODE_POLICY_RELOAD: {}: {e}; the policy in force is kept",
                path.display()
            );
            None
        }
        Err(e) => {
            tracing::error!("E_NODE_ACTOR: partitions reload: {e}");
            None
        }
    }
}

async fn serve(cfg: NodeConfig, exit_after: bool) -> anyhow::Result<ExitCode> {
    let mut signals = stop::StopSignals::install()?;
    let mut hangups = stop::Hangups::install()?;
    let t_attach = std::time::Instant::now();
    let (attached, sim) = daemon::attach(&cfg)?;
    tracing::info!(
        "attached in {:.1} ms ({} routing workers)",
        t_attach.elapsed().as_secs_f64() * 1e3,
        cfg.workers
    );
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let master = daemon::start_master(&cfg, attached, vec![tx])?;
    let mut sum = deploy::summary::Summary::default();
    let mut stopped = false;
    // The first heavy sweep certain to program a reloaded policy (None: no reload waiting).
    let mut reloaded: Option<u64> = None;
    let reason = loop {
        tokio::select! {
            sig = signals.recv() => break sig,
            () = hangups.recv() => {
                if let Some(first) = reload_partitions(&cfg, &master).await {
                    reloaded = Some(first);
                }
            }
            m = rx.recv() => {
                let Some(m) = m else { break "master gone" };
                let done = exit_after && sum.subnet_up.is_some()
                    && matches!(m.kind, MilestoneKind::HeavySweepComplete { .. });
                if let MilestoneKind::Stopped { .. } = m.kind {
                    stopped = true;
                }
                if matches!(m.kind, MilestoneKind::SubnetUp { .. }) && sum.subnet_up.is_none()
                    && let Err(e) = tables::dump(&master).await
                {
                    tracing::error!("{e:#}");
                }
                if let (Some(first), MilestoneKind::HeavySweepComplete { sweep, .. }) =
                    (reloaded, &m.kind)
                    && *sweep >= first
                {
                    reloaded = None;
                    tracing::info!("reloaded partition policy programmed by heavy sweep {sweep}");
                    if let Err(e) = tables::dump(&master).await {
                        tracing::error!("{e:#}");
                    }
                }
                sum.add(&m);
                if stopped {
                    break "master stopped";
                }
                if done {
                    break "--exit-after-subnet-up";
                }
            }
        }
    };
    tracing::info!("stopping ({reason})");
    if !stopped {
        master
            .send(Shutdown)
            .await
            .map_err(|e| anyhow!("E_NODE_ACTOR: shutdown: {e}"))?;
        // Wait for the master's last word (guid2lid flushed, transport detached).
        while let Some(m) = rx.recv().await {
            let last = matches!(m.kind, MilestoneKind::Stopped { .. });
            sum.add(&m);
            if last {
                break;
            }
        }
    }
    print!("{}", sum.render(&cfg));
    if let Some(h) = &sim {
        let c = h.with(|s| s.accounting().counters.clone());
        println!(
            "  simulator     {} SMPs in, {} to the SM, dropped: {} VL15 overflow, {} not active, {} DR, {} other",
            c.sent,
            c.delivered_to_sm,
            c.dropped_vl15,
            c.dropped_not_active,
            c.dropped_dr,
            c.dropped_loss
                + c.dropped_link_down
                + c.dropped_no_route
                + c.dropped_bad_dlid
                + c.dropped_no_sm
                + c.dropped_m_key
                + c.dropped_loop
                + c.dropped_other
        );
    }
    actix_rt::System::current().stop();
    // A master that stopped on its own lost its fabric; a signal or the exit flag is a
    // normal end.
    Ok(if stopped {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
