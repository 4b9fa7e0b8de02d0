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
use deploy::cli::DaemonArgs;
use sm_node::config::NodeConfig;
use sm_node::config::SweeperConfigOf as _;
use sm_node::daemon;
use sm_node::master::{HandOverToStop, MasterActor, ReloadPolicy, Shutdown};
use sm_node::milestone::MilestoneKind;
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
    /// Every other flag.
    #[command(flatten)]
    d: deploy::cli::DaemonArgs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    deploy::logging::init(cli.d.log_format);
    let result = match &cli.command {
        Some(sub) => cluster_cli::run_sub(sub),
        None if cli.d.check_config => check_config(&cli.d),
        None if cli.d.id.is_some() => run_cluster(&cli.d),
        None => run(&cli.d),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            // stderr stays locked from the reason to the exit: a thread still running (a
            // wedged replica thread is not waited for) cannot print after the last line.
            let _last = std::io::stderr().lock();
            tracing::error!("{e:#}");
            std::process::exit(1)
        }
    }
}

/// `--check-config`: everything start-up reads and checks (partitions, guid2lid and root
/// GUID files included), one line, exit 0; an error exits non-zero.
fn check_config(cli: &DaemonArgs) -> anyhow::Result<ExitCode> {
    let cfg = cli.node_config()?;
    let (scfg, _) = cfg.sweeper_config()?;
    println!("{}", deploy::cli::check_line(&cfg, scfg.guid2lid.len()));
    Ok(ExitCode::SUCCESS)
}

fn run_cluster(cli: &DaemonArgs) -> anyhow::Result<ExitCode> {
    let cfg = cli.node_config()?;
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
        bootstrap: cli.initial_cluster_state == deploy::cli::InitialClusterState::New,
        dashboard_listen: cli.dashboard_listen,
    })
}

fn run(cli: &DaemonArgs) -> anyhow::Result<ExitCode> {
    let cfg = cli.node_config()?;
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

/// A graceful stop hands the fabric to the best STANDBY SM first (IBA HANDOVER), waiting
/// (at most 10 s) for it to take over or refuse; with none known, nothing to wait for.
async fn hand_over(
    master: &actix::Addr<MasterActor>,
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<sm_node::milestone::Milestone>,
    sum: &mut deploy::summary::Summary,
) {
    if !master.send(HandOverToStop).await.unwrap_or(false) {
        return;
    }
    let wait = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        while let Some(m) = rx.recv().await {
            sum.add(&m);
            if let MilestoneKind::HandoverEnded { taken, text } = &m.kind {
                return Some((*taken, text.clone()));
            }
        }
        None
    });
    match wait.await {
        Ok(Some((true, text))) => tracing::info!("handed over before stopping: {text}"),
        Ok(Some((false, text))) => tracing::warn!("handover before stopping failed: {text}"),
        _ => tracing::warn!("no answer to the handover within 10 s; stopping anyway"),
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
    if !stopped && reason != "--exit-after-subnet-up" {
        hand_over(&master, &mut rx, &mut sum).await;
    }
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
