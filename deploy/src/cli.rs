//! The daemon's command-line flags (besides its subcommands): every configuration file key as
//! a flag ([`FileConfig`] flattened), the cluster-mode flags and the admin security flags,
//! overlaid on the file into a checked [`NodeConfig`]. Pure: parsing and overlaying only; the
//! daemon (sm-node) opens files and the fabric.

use crate::config::{AdminSecurity, ConfigError, FileConfig, NodeConfig};
use std::path::PathBuf;

/// The daemon's flags, flattened into `sm-node`'s command line next to its subcommands.
#[derive(clap::Args, Debug, Clone)]
pub struct DaemonArgs {
    /// Cluster mode: this replica's Raft id (with --peers and --data-dir).
    #[arg(long)]
    pub id: Option<u64>,
    /// Cluster mode: every replica as ID=IP:PORT, comma separated (this one included);
    /// Peer and SmAdmin gRPC are served there, with mutual TLS (--tls-cert, --tls-key,
    /// --tls-ca) or, on loopback only, plain HTTP/2 with --insecure-loopback.
    #[arg(long)]
    pub peers: Option<String>,
    /// Cluster mode: the initial voters, comma separated (default: every replica in
    /// --peers). Used only when the data directory is first initialized: a replica listed
    /// in --peers but not here starts as a non-voter and joins through `smctl members add`.
    #[arg(long, value_delimiter = ',')]
    pub voters: Vec<u64>,
    /// Cluster mode: the SM port GUIDs of the replicas (hex, comma separated; this one's
    /// may be listed too). Given, the master obeys the IBA priority rules towards every
    /// other SM (OpenSM...) as the cluster's one SM: it stands by for a foreign MASTER that
    /// outranks it and takes a HANDOVER; the replicas are never queried. Not given: other
    /// SMs are not looked at (docs/foreign-sms.md).
    #[arg(long, value_delimiter = ',', value_parser = parse_hex_guid)]
    pub peer_sm_guids: Vec<u64>,
    /// Cluster mode: what an EMPTY data directory means. `new`: this replica is one of a new
    /// cluster (every replica starts empty and votes). `existing` (default): the cluster
    /// exists and this replica's log was lost or is new: it recovers from the leader and
    /// neither votes nor campaigns until caught up, so it never votes with less than it
    /// once acknowledged. Ignored when the data directory holds a log.
    #[arg(long, value_enum, default_value_t = InitialClusterState::Existing)]
    pub initial_cluster_state: InitialClusterState,
    /// Cluster mode: listen address (default: this replica's address in --peers).
    #[arg(long)]
    pub listen: Option<std::net::SocketAddr>,
    /// Cluster mode: serve the read-only web dashboard here (HTTPS with the admin TLS
    /// settings; plain HTTP only with --insecure-loopback on a loopback address).
    #[arg(long)]
    pub dashboard_listen: Option<std::net::SocketAddr>,
    /// Cluster mode: Raft tick in ms.
    #[arg(long, default_value_t = 50)]
    pub tick_ms: u64,
    /// Cluster mode: election timeout in ticks (randomised up to twice that); at least 5.
    #[arg(long, default_value_t = 10)]
    pub election_ticks: usize,
    /// Cluster mode: snapshot the replicated state and compact the log every N applied
    /// entries.
    #[arg(long, default_value_t = 1000)]
    pub snapshot_every: u64,
    /// TOML configuration file (keys as the long flags: fabric, priority, routing-engine,
    /// sweep-interval, partitions, guid2lid, root-guid-file, data-dir, lmc, routing-workers,
    /// sim-pace, sim-seed, smp-timeout-ms, smp-window, and an [admin] table for TLS and
    /// tokens); flags override it. Example: /etc/quorum-sm/sm-node.toml.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Every key of the configuration file as a flag.
    #[command(flatten)]
    pub node: FileConfig,
    /// Log lines as text or json (one JSON object per line).
    #[arg(long, env = "SM_LOG_FORMAT", default_value = "text")]
    pub log_format: crate::logging::LogFormat,
    /// Read and check the configuration (files included), print one line, exit.
    #[arg(long)]
    pub check_config: bool,
    /// Exit once the first heavy sweep (the one that reaches SUBNET UP) completes.
    #[arg(long)]
    pub exit_after_subnet_up: bool,
    /// After the first SUBNET UP, and again after the heavy sweep that programs a policy
    /// reloaded by SIGHUP, write the master's LFTs and P_Key tables to this file
    /// (`lft GUID LID PORT` and `pkeys GUID PORT KEYS...` lines).
    #[arg(long)]
    pub dump_tables: Option<PathBuf>,
    /// Cluster mode security ([admin] in the config file): PEM certificate chain of this
    /// replica.
    #[arg(long)]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long)]
    pub tls_key: Option<PathBuf>,
    /// PEM CA of the replicas (verifies servers; the server requires client certificates).
    #[arg(long)]
    pub tls_ca: Option<PathBuf>,
    /// Name checked in the other replicas' certificates (default localhost).
    #[arg(long)]
    pub tls_domain: Option<String>,
    /// Admin bearer tokens file: `ROLE TOKEN` lines (roles read, admin).
    #[arg(long)]
    pub tokens_file: Option<PathBuf>,
    /// Serve plain HTTP/2 without TLS: development only, refused unless the listen address
    /// is loopback.
    #[arg(long)]
    pub insecure_loopback: bool,
    /// Leave the per-port fabric families out of /metrics (`metrics-port-counters = false`).
    #[arg(long, conflicts_with = "metrics_port_counters")]
    pub no_metrics_port_counters: bool,
}

impl DaemonArgs {
    /// The flags as a configuration layer over the file.
    pub fn overlay(&self) -> FileConfig {
        FileConfig {
            admin: Some(AdminSecurity {
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

    /// The configuration file (`--config`, when given) overlaid by the flags, checked.
    pub fn node_config(&self) -> Result<NodeConfig, ConfigError> {
        let file = match &self.config {
            Some(p) => FileConfig::load(p)?,
            None => FileConfig::default(),
        };
        NodeConfig::try_from(file.overlay(self.overlay()))
    }
}

/// `--check-config`'s one line for a checked configuration whose guid2lid file holds `ports`
/// ports.
pub fn check_line(cfg: &NodeConfig, ports: usize) -> String {
    let none = || PathBuf::from("none");
    let parts = cfg.partitions.clone().unwrap_or_else(none);
    let g2l = cfg.guid2lid.clone().unwrap_or_else(none);
    let (engines, roots) = (cfg.engines.join(","), cfg.updn_roots.len());
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
    format!(
        "config OK: {fabric:?}, priority {prio}, routing {engines}, {roots} root GUIDs, partitions {parts:?}, guid2lid {g2l:?} ({ports} ports), metrics {metrics} (per-port families {per_port})"
    )
}

/// A GUID in hex, with or without 0x.
pub fn parse_hex_guid(s: &str) -> Result<u64, String> {
    let h = s.trim();
    let h = h
        .strip_prefix("0x")
        .or_else(|| h.strip_prefix("0X"))
        .unwrap_or(h);
    u64::from_str_radix(h, 16).map_err(|e| format!("{s:?}: {e}"))
}

/// What an empty data directory of a cluster replica means (`--initial-cluster-state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum InitialClusterState {
    /// A replica of a new cluster.
    New,
    /// A replica of an existing cluster whose log is recovered from the leader.
    Existing,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(clap::Parser)]
    struct Cmd {
        #[command(flatten)]
        d: DaemonArgs,
    }

    #[test]
    fn flags_overlay_the_file_and_guids_parse() {
        let c = Cmd::try_parse_from([
            "sm-node",
            "--peer-sm-guids",
            "0x10,ab",
            "--insecure-loopback",
            "--no-metrics-port-counters",
        ])
        .expect("parses");
        assert_eq!(c.d.peer_sm_guids, vec![0x10, 0xab]);
        let o = c.d.overlay();
        assert_eq!(o.metrics_port_counters, Some(false));
        assert_eq!(o.admin.and_then(|a| a.insecure_loopback), Some(true));
        assert!(Cmd::try_parse_from(["sm-node", "--peer-sm-guids", "xyz"]).is_err());
        assert_eq!(c.d.initial_cluster_state, InitialClusterState::Existing);
    }
}
