//! Cluster mode of the binary: one replica (`--id`), and the `demo` / `status` subcommands.

use anyhow::{Context, anyhow};
use sm_node::cluster::raft_actor::GracefulStop;
use sm_node::cluster::{self, ClusterConfig, seed};
use sm_node::config::{FabricSpec, NodeConfig};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum Sub {
    /// Starts a simulated fabric (fabric-simd's server, in this process) and N sm-node
    /// replica processes on loopback, waits for SUBNET UP, prints the cluster; Ctrl-C stops
    /// everything.
    Demo(crate::demo::DemoArgs),
    /// Benchmark: proposal commit latency and failover time (kill -9 of the master).
    BenchCluster(crate::bench::BenchArgs),
    /// Moves from OpenSM: reads opensm.conf (and partitions.conf, guid2lid, the root GUID
    /// file), writes sm-node.toml and copies the files; prints every OpenSM key with what it
    /// became or why it is not supported.
    ImportOpensm(deploy::import::ImportOptions),
    /// Prints a replica's view of the cluster.
    Status {
        /// Replica address (IP:PORT).
        #[arg(long, default_value = "127.0.0.1:7101")]
        addr: String,
    },
}

/// Runs a subcommand.
pub fn run_sub(sub: &Sub) -> anyhow::Result<ExitCode> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    match sub {
        Sub::Demo(a) => rt.block_on(crate::demo::run(a)),
        Sub::BenchCluster(a) => rt.block_on(crate::bench::run(a)),
        Sub::ImportOpensm(o) => {
            print!("{}", deploy::import::run(o)?.render());
            Ok(ExitCode::SUCCESS)
        }
        Sub::Status { addr } => rt.block_on(async {
            let st = status(addr).await?;
            print!("{}", views::cluster::status_text(&st));
            Ok(ExitCode::SUCCESS)
        }),
    }
}

/// Asks `addr` for its ClusterStatus.
pub async fn status(addr: &str) -> anyhow::Result<proto::admin::ClusterStatusReply> {
    let ch = cluster::net::channel(addr)?;
    let mut c = proto::admin::sm_admin_client::SmAdminClient::new(ch);
    Ok(
        c.cluster_status(proto::admin::ClusterStatusRequest::default())
            .await
            .map_err(|e| anyhow!("E_NODE_STATUS: {addr}: {}", e.message()))?
            .into_inner(),
    )
}

/// One replica's settings.
pub struct ReplicaArgs {
    pub id: u64,
    pub peers: String,
    pub listen: Option<std::net::SocketAddr>,
    pub data_dir: PathBuf,
    pub tick_ms: u64,
    pub election_ticks: usize,
    pub snapshot_every: u64,
    pub node: NodeConfig,
    pub voters: Vec<u64>,
    /// The other replicas' SM port GUIDs (`--peer-sm-guids`).
    pub peer_sm_guids: Vec<u64>,
    /// An empty data directory belongs to a new cluster (else: recover a lost log).
    pub bootstrap: bool,
    /// Where to serve the read-only dashboard (None: not served).
    pub dashboard_listen: Option<std::net::SocketAddr>,
}

/// Runs one replica until SIGINT/SIGTERM (graceful: a master hands leadership over first);
/// SIGHUP proposes the `--partitions` file again (see `sm_node::cluster::reload`).
pub fn run_replica(a: ReplicaArgs) -> anyhow::Result<ExitCode> {
    if a.election_ticks < 5 {
        // The write lease is half the election timeout; with the heartbeat every 2 ticks it
        // must last longer than one heartbeat interval or it lapses between heartbeats.
        return Err(anyhow!(
            "E_NODE_CONFIG: --election-ticks {} is below 5: the master's write lease (half the election timeout) must outlast the 2-tick heartbeat interval",
            a.election_ticks
        ));
    }
    let peers = cluster::parse_peers(&a.peers)?;
    let own = peers
        .get(&a.id)
        .ok_or_else(|| anyhow!("E_NODE_CONFIG: --id {} is not in --peers", a.id))?;
    let listen = match a.listen {
        Some(l) => l,
        None => own.parse().context("E_NODE_CONFIG: own peer address")?,
    };
    let port_guid = match &a.node.fabric {
        FabricSpec::Simd { port, .. } => seed::guid_of_port_name(port),
        FabricSpec::Sim { port, .. } => {
            seed::guid_of_port_name(port.as_deref().unwrap_or_default())
        }
        _ => fabric::Guid(0),
    };
    let ccfg = ClusterConfig {
        id: a.id,
        peers: peers.clone(),
        listen,
        data_dir: a.data_dir,
        tick: Duration::from_millis(a.tick_ms.max(1)),
        election_ticks: a.election_ticks,
        snapshot_every: a.snapshot_every.max(1),
        heartbeat_ticks: 2,
        port_guid,
        peer_sm_guids: a.peer_sm_guids.into_iter().map(fabric::Guid).collect(),
        voters: a.voters,
        bootstrap: a.bootstrap,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    sm_node::tls::install_from_config(&a.node.admin, listen).map_err(|e| anyhow!("{e}"))?;
    let dash_cfg = a.node.admin.clone();
    let ufm = a.node.ufm.clone().map(|u| (u, a.node.admin.clone()));
    let partitions = a.node.partitions.clone();
    let (metrics_listen, port_counters) = (a.node.metrics_listen, a.node.metrics_port_counters);
    let qos_file = a.node.qos_policy_file.clone();
    let code = rt.block_on(async move {
        let mut signals = crate::stop::StopSignals::install()?;
        let mut hangups = crate::stop::Hangups::install()?;
        let tx = cluster::net::spawn_senders(a.id, &peers);
        let replica = cluster::start_replica(ccfg, a.node, tx, Vec::new())?;
        let cluster::Replica {
            raft,
            system,
            thread,
            mut died,
        } = replica;
        // The replica's thread ending (a panic, or the system stopped) is noticed at once.
        let mut joined = tokio::task::spawn_blocking(move || thread.join());
        tracing::info!("replica {} serving Peer and SmAdmin on {listen}", a.id);
        sm_node::metrics::spawn(raft.clone(), a.id, metrics_listen, port_counters)
            .map_err(|e| anyhow!("E_NODE_METRICS: {e}"))?;
        cluster::preference::spawn(raft.clone());
        let (dash_stop, dash_stop_rx) = tokio::sync::oneshot::channel::<()>();
        if let Some(dl) = a.dashboard_listen {
            let (raft, id) = (raft.clone(), a.id);
            tokio::spawn(async move {
                let stop = async move {
                    let _ = dash_stop_rx.await;
                };
                if let Err(e) = sm_node::dashboard::serve(id, dl, raft, dash_cfg, stop).await {
                    tracing::error!("{e}");
                }
            });
        }
        if let Some((u, cfg)) = ufm {
            let (raft, id, stop) = (raft.clone(), a.id, std::future::pending());
            tokio::spawn(async move {
                if let Err(e) = sm_node::dashboard::serve_ufm(id, raft, u, cfg, stop).await {
                    tracing::error!("{e}");
                }
            });
        }
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let mut server = tokio::spawn(cluster::serve_grpc(
            a.id,
            listen,
            raft.clone(),
            async move {
                let _ = stop_rx.await;
            },
        ));
        let end = loop {
            tokio::select! {
                sig = signals.recv() => break End::Signal(sig),
                r = &mut server => break End::Failed(match r {
                    Ok(Err(e)) => e.to_string(),
                    r => format!("E_NODE_GRPC: the gRPC server ended: {r:?}"),
                }),
                Ok(why) = &mut died => break End::Failed(why),
                r = &mut joined => {
                    let why = r.map_or_else(|e| format!("the replica thread: {e}"), cluster::thread_end);
                    break End::Failed(format!("E_NODE_FATAL: replica {}: {why}", a.id));
                }
                // SIGHUP: propose the partitions file again (cluster::reload).
                () = hangups.recv() => {
                    let (raft, path, q) = (raft.clone(), partitions.clone(), qos_file.clone());
                    tokio::spawn(async move {
                        cluster::reload::on_hangup(a.id, raft, path.as_deref(), q.as_deref()).await;
                    });
                }
            }
        };
        let id = a.id;
        if let End::Signal(sig) = &end {
            tracing::info!("replica {id} stopping ({sig})");
            if let Ok(Ok(rx)) = tokio::time::timeout(STOP_STEP, raft.send(GracefulStop)).await {
                let _ = tokio::time::timeout(STOP_STEP, rx).await;
            }
        }
        system.stop();
        let _ = stop_tx.send(());
        let _ = dash_stop.send(());
        // A server that already ended (the failure above) is not polled again.
        if !server.is_finished() {
            let _ = tokio::time::timeout(STOP_STEP, server).await;
        }
        // After a failure the replica thread is dead or wedged: not waited for.
        let thread_ended = joined.is_finished()
            || (matches!(end, End::Signal(_))
                && tokio::time::timeout(STOP_STEP, &mut joined).await.is_ok());
        match end {
            End::Signal(_) if thread_ended => {
                tracing::info!("replica {id} stopped");
                Ok(ExitCode::SUCCESS)
            }
            // The reason is printed by `main` as the process's last line.
            End::Signal(_) => Err(anyhow!(
                "E_NODE_STOP: replica {id}: the replica did not stop within {STOP_STEP:?}; exiting anyway"
            )),
            End::Failed(why) => Err(anyhow!("{why}; exiting")),
        }
    });
    // A task still blocked (a wedged thread, a blocking call) must not keep the process
    // alive: dropping the runtime would wait for it for ever.
    rt.shutdown_timeout(Duration::from_secs(1));
    code
}

/// Each step of a stop (hand-over, gRPC drain, the replica thread) is bounded by this, so
/// SIGTERM always ends the process.
const STOP_STEP: Duration = Duration::from_secs(5);

/// Why the replica process ends.
enum End {
    /// A stop signal: a graceful stop.
    Signal(&'static str),
    /// The replica cannot go on: exit non-zero with this as the last word.
    Failed(String),
}
