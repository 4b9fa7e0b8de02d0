//! The daemon's configuration (sm-node reads it; pure but for reading the files it names): a TOML file ([`FileConfig`]) overlaid by command-line flags
//! (same fields), resolved into a [`NodeConfig`], then into the sweeper's configuration.
//!
//! Every key, commented, with its default: `packaging/etc/sm-node.toml`, the file the
//! Debian package installs as `/etc/quorum-sm/sm-node.toml` (a test loads it).
//!
//! Every `[admin]` key has a flag (`--tls-cert`, `--tls-key`, `--tls-ca`, `--tls-domain`,
//! `--tokens-file`, `--insecure-loopback`); the environment variables `SM_TLS_CERT`,
//! `SM_TLS_KEY`, `SM_TLS_CA`, `SM_TLS_DOMAIN`, `SM_TOKENS_FILE` / `SM_TOKENS` and
//! `SM_INSECURE_LOOPBACK=1` override both (see [`crate::tls`]).

use serde::Deserialize;
use sm_core::{MS, SweeperConfig};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// A configuration that cannot be used (what the daemon's `--check-config` and its start
/// refuse).
#[derive(Debug, Error)]
pub enum ConfigError {
    /// A configuration value or file is wrong.
    #[error("E_NODE_CONFIG: {0}")]
    Config(String),
    /// The partitions file does not parse; every syntax error with `file:line:col`.
    #[error("E_NODE_PARTITIONS: {path}: policy rejected, refusing to start:\n{errors}")]
    Partitions {
        /// The file.
        path: PathBuf,
        /// One `file:line:col: code: message` line per error.
        errors: String,
    },
    /// The QoS policy file cannot be read or does not parse; every error with
    /// `file:line:col`.
    #[error("E_NODE_QOS_POLICY: {path}: QoS policy rejected, refusing to start:\n{errors}")]
    QosPolicy {
        /// The file.
        path: PathBuf,
        /// One `file:line:col: code message` line per error.
        errors: String,
    },
}

/// Default per-attempt SMP timeout on umad, in ms. ibsim answers in tens of µs when idle but
/// queues up to a window's worth of SMPs behind a busy single thread, and a real fabric has
/// switch hops of its own: 200 ms never fires on a healthy fabric and still retries quickly.
pub const UMAD_SMP_TIMEOUT_MS: u64 = 200;

/// Outstanding SMPs allowed on a umad port. ibsim declares a client dead with more than
/// about 256 requests in flight (umad README); 128 leaves room for traps and retries, and a
/// real HCA's QP0 send queue is of the same order.
pub const UMAD_WINDOW: usize = 128;

/// How the in-process simulator's virtual time advances.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Pace {
    /// As fast as the CPU allows.
    #[default]
    Fast,
    /// Following the wall clock.
    RealTime,
}

impl std::str::FromStr for Pace {
    type Err = String;
    fn from_str(s: &str) -> Result<Pace, String> {
        match s {
            "fast" => Ok(Pace::Fast),
            "realtime" => Ok(Pace::RealTime),
            _ => Err(format!("sim pace {s:?}: expected fast or realtime")),
        }
    }
}

/// Where the fabric is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FabricSpec {
    /// `sim:SPEC[@PORT]`: the in-process simulator loaded from a generator spec (`ft2:36`,
    /// `ft3:36`, `torus:4x4x4`, `random:256`) or a topology file; the SM attaches at PORT
    /// (NodeDescription, `name[N]` or `0x` GUID), by default the first cabled CA port.
    Sim {
        /// Generator spec or topology file.
        topology: String,
        /// Attach port name.
        port: Option<String>,
    },
    /// `simd:SOCKET@PORT`: a running `fabric-simd` at Unix socket SOCKET, attached at PORT.
    Simd {
        /// Socket path.
        socket: PathBuf,
        /// Attach port name.
        port: String,
    },
    /// `umad:DEVICE[:PORT]`: the kernel user-MAD device (`/dev/infiniband/umad0`; ibsim
    /// through `LD_PRELOAD=libumad2sim.so`); PORT, when given, must be the device's port
    /// number.
    Umad {
        /// Device path.
        device: String,
        /// Expected local port number.
        port: Option<u8>,
    },
}

impl FabricSpec {
    /// Default per-attempt SMP timeout for this transport, in ms.
    pub fn default_smp_timeout_ms(&self) -> u64 {
        match self {
            FabricSpec::Umad { .. } => UMAD_SMP_TIMEOUT_MS,
            _ => SweeperConfig::default().timeout / MS,
        }
    }

    /// Outstanding SMPs allowed on this transport.
    pub fn smp_window(&self) -> usize {
        match self {
            FabricSpec::Umad { .. } => UMAD_WINDOW,
            _ => SweeperConfig::default().window,
        }
    }
}

impl std::str::FromStr for FabricSpec {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<FabricSpec, ConfigError> {
        if let Some(rest) = s.strip_prefix("sim:") {
            let (topology, port) = match rest.rsplit_once('@') {
                Some((t, p)) => (t.to_string(), Some(p.to_string())),
                None => (rest.to_string(), None),
            };
            if topology.is_empty() {
                return Err(ConfigError::Config(format!(
                    "--fabric {s:?}: empty topology"
                )));
            }
            Ok(FabricSpec::Sim { topology, port })
        } else if let Some(rest) = s.strip_prefix("simd:") {
            match rest.rsplit_once('@') {
                Some((sock, port)) if !sock.is_empty() && !port.is_empty() => {
                    Ok(FabricSpec::Simd {
                        socket: PathBuf::from(sock),
                        port: port.to_string(),
                    })
                }
                _ => Err(ConfigError::Config(format!(
                    "--fabric {s:?}: expected simd:SOCKET@PORTNAME"
                ))),
            }
        } else if let Some(rest) = s.strip_prefix("umad:") {
            let (device, port) = match rest.rsplit_once(':') {
                Some((d, p)) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
                    let n = p.parse::<u8>().map_err(|_| {
                        ConfigError::Config(format!("--fabric {s:?}: bad port number {p:?}"))
                    })?;
                    (d, Some(n))
                }
                _ => (rest, None),
            };
            if !device.starts_with('/') {
                return Err(ConfigError::Config(format!(
                    "--fabric {s:?}: expected umad:/dev/infiniband/umadN[:PORT]"
                )));
            }
            Ok(FabricSpec::Umad {
                device: device.to_string(),
                port,
            })
        } else {
            Err(ConfigError::Config(format!(
                "--fabric {s:?}: expected sim:SPEC[@PORT], simd:SOCKET@PORTNAME or umad:DEVICE[:PORT]"
            )))
        }
    }
}

/// The TOML file, and the flags overlaid on it (the same struct: every key is a long flag,
/// its doc comment the flag's help): every field optional.
#[derive(Clone, Debug, Default, Deserialize, clap::Args)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct FileConfig {
    /// Fabric: `umad:/dev/infiniband/umadN[:PORT]` (the kernel user-MAD device of a real
    /// HCA, or ibsim's through libumad2sim), `sim:SPEC[@PORT]` (in-process simulator; SPEC
    /// a generator spec such as ft2:36, ft3:36, torus:4x4x4, random:256, or a topology
    /// file) or `simd:SOCKET@PORTNAME` (a running fabric-simd).
    #[arg(long)]
    pub fabric: Option<String>,
    /// SM priority 0-15 (default 0).
    #[arg(long)]
    pub priority: Option<u8>,
    /// Routing engine chain, comma separated: ftree, torus-2QoS, dfsssp, updn, minhop
    /// (default ftree,updn,minhop).
    #[arg(long)]
    pub routing_engine: Option<String>,
    /// Keep a routing with a credit loop (a cycle in a VL's channel dependency graph,
    /// routes to switch LIDs included) with a ROUTE-W-CDG warning instead of refusing it
    /// and trying the next engine of the chain (default false: refuse).
    #[arg(long)]
    pub routing_accept_credit_loops: Option<bool>,
    /// Seconds between light sweeps (default 10; 0 disables them).
    #[arg(long)]
    pub sweep_interval: Option<f64>,
    /// OpenSM partitions.conf, read at start: a file with syntax errors is refused (every
    /// error with file:line:col) and sm-node does not start. SIGHUP (`kill -HUP PID`)
    /// reads it again: a file that parses is in force from the heavy sweep it triggers
    /// (only changed P_Key blocks are written); one that does not is logged as
    /// E_NODE_POLICY_RELOAD with file:line:col and the policy in force is kept.
    #[arg(long)]
    pub partitions: Option<PathBuf>,
    /// guid2lid file in OpenSM's format (default DATA_DIR/guid2lid). A single replica reads
    /// and keeps it; a cluster keeps its LIDs in the Raft log and reads the file only for a
    /// new cluster's first master (an imported OpenSM guid2lid), never writing it.
    #[arg(long)]
    pub guid2lid: Option<PathBuf>,
    /// Up/down root switches: OpenSM's root GUID file (one node GUID per line; default:
    /// detected).
    #[arg(long)]
    pub root_guid_file: Option<PathBuf>,
    /// Data directory (guid2lid, and the Raft log of a cluster replica). Without it and
    /// --guid2lid, a single replica does not persist LIDs.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// LMC of CA ports (0-7, default 0).
    #[arg(long)]
    pub lmc: Option<u8>,
    /// Routing worker threads (default: available cores).
    #[arg(long)]
    pub routing_workers: Option<usize>,
    /// In-process simulator pace: fast (default) or realtime.
    #[arg(long)]
    pub sim_pace: Option<String>,
    /// In-process simulator seed (default 1).
    #[arg(long)]
    pub sim_seed: Option<u64>,
    /// Time to wait for an SMP's response before resending, in ms (default 20; 200 on
    /// umad).
    #[arg(long)]
    pub smp_timeout_ms: Option<u64>,
    /// SMPs in flight at most (default 256; 128 on umad, ibsim's safe limit).
    #[arg(long)]
    pub smp_window: Option<usize>,
    /// `[admin]`: TLS and tokens of the gRPC listener (flags --tls-cert etc.).
    #[arg(skip)]
    pub admin: Option<AdminSecurity>,
    /// Most OperationalVLs a port is brought up with: 1 VL0, 2 VL0-1, 3 VL0-3, 4 VL0-7,
    /// 5 VL0-14 (OpenSM's max_op_vls; default 5).
    #[arg(long)]
    pub max_op_vls: Option<u8>,
    /// `[qos]` (file only): `enabled` (OpenSM's `qos`), OpenSM's `qos_*` table options by
    /// name, `qos_policy_file`.
    #[arg(skip)]
    pub qos: Option<std::collections::BTreeMap<String, toml::Value>>,
    /// Cluster mode: serve Prometheus metrics (`GET /metrics`, plain HTTP) here, e.g.
    /// 127.0.0.1:9464 (default: not served; the SM_METRICS_LISTEN environment variable is
    /// read when neither the key nor the flag is set).
    #[arg(long)]
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// Performance manager: the master reads every ACTIVE port's PerfMgt counters each
    /// sweep time (OpenSM's `perfmgr`; default true here, FALSE in OpenSM).
    #[arg(long)]
    pub perfmgr: Option<bool>,
    /// Seconds between two counter sweeps (OpenSM's `perfmgr_sweep_time_s`, default 180).
    #[arg(long)]
    pub perfmgr_sweep_time_s: Option<u64>,
    /// Counter queries outstanding at once (OpenSM's `perfmgr_max_outstanding_queries`,
    /// default 500).
    #[arg(long)]
    pub perfmgr_max_outstanding_queries: Option<usize>,
    /// Counter queries sent per second at most (default 20000).
    #[arg(long)]
    pub perfmgr_rate: Option<u32>,
    /// Alarm thresholds in infiniband-diags' `error_thresholds` format (`Name=value`
    /// lines; default: the values that file suggests, e.g. SymbolErrorCounter=10).
    #[arg(long)]
    pub perfmgr_error_thresholds: Option<PathBuf>,
    /// Serve the per-port fabric families (`ib_port_<counter>_total`, `ib_link_health`:
    /// one series per port and counter, docs/metrics.md) on /metrics (default true;
    /// `--no-metrics-port-counters` is `false`).
    #[arg(long)]
    pub metrics_port_counters: Option<bool>,
    /// Cluster mode: serve the UFM-compatible PKey API (ib-kubernetes' UFM plugin;
    /// docs/tenants.md) here, e.g. 0.0.0.0:8443: HTTPS with the admin TLS settings, plain
    /// HTTP only with insecure-loopback on a loopback address (default: not served).
    #[arg(long)]
    pub ufm_listen: Option<std::net::SocketAddr>,
    /// User name of the UFM API's basic auth (default `admin`).
    #[arg(long)]
    pub ufm_username: Option<String>,
    /// File holding the password of the UFM API's basic auth (required with ufm-listen).
    #[arg(long)]
    pub ufm_password_file: Option<PathBuf>,
    /// File of UFM access tokens (one per line), accepted on /ufmRestV3 as UFM's token auth
    /// (default: token auth off).
    #[arg(long)]
    pub ufm_token_file: Option<PathBuf>,
    /// File holding the admin bearer token the UFM API presents to the admin API (needed
    /// when the admin API has tokens).
    #[arg(long)]
    pub ufm_admin_token_file: Option<PathBuf>,
}

/// The UFM-compatible PKey API's settings (`ufm-*` keys), given `ufm-listen`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UfmConfig {
    /// Listen address.
    pub listen: std::net::SocketAddr,
    /// Basic auth user name.
    pub username: String,
    /// Basic auth password file.
    pub password_file: PathBuf,
    /// UFM token file.
    pub token_file: Option<PathBuf>,
    /// Admin bearer token file.
    pub admin_token_file: Option<PathBuf>,
}

/// The `[admin]` table: security of a replica's gRPC listener (Peer and SmAdmin share it)
/// and of the connections it opens to the other replicas. Paths are read at start.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct AdminSecurity {
    /// PEM certificate chain of this replica (server and client identity).
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of `tls_cert`.
    pub tls_key: Option<PathBuf>,
    /// PEM CA that signed every replica's certificate: clients verify servers with it and
    /// the server requires client certificates signed by it (mutual TLS).
    pub tls_ca: Option<PathBuf>,
    /// Name checked in the other replicas' certificates (default `localhost`).
    pub tls_domain: Option<String>,
    /// Bearer tokens: one `ROLE TOKEN` per line (roles `read`, `admin`).
    pub tokens_file: Option<PathBuf>,
    /// Plain HTTP/2 without TLS, allowed only on a loopback listen address (development).
    pub insecure_loopback: Option<bool>,
}

impl AdminSecurity {
    /// `self` with every key `over` sets replaced.
    pub fn overlay(self, over: AdminSecurity) -> AdminSecurity {
        AdminSecurity {
            tls_cert: over.tls_cert.or(self.tls_cert),
            tls_key: over.tls_key.or(self.tls_key),
            tls_ca: over.tls_ca.or(self.tls_ca),
            tls_domain: over.tls_domain.or(self.tls_domain),
            tokens_file: over.tokens_file.or(self.tokens_file),
            insecure_loopback: over.insecure_loopback.or(self.insecure_loopback),
        }
    }
}

impl FileConfig {
    /// Reads a TOML file.
    pub fn load(path: &Path) -> Result<FileConfig, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError::Config(format!("{}: {e}", path.display())))?;
        toml::from_str(&text).map_err(|e| ConfigError::Config(format!("{}: {e}", path.display())))
    }

    /// `self` with every field `over` sets replaced (flags override the file).
    pub fn overlay(self, over: FileConfig) -> FileConfig {
        FileConfig {
            fabric: over.fabric.or(self.fabric),
            priority: over.priority.or(self.priority),
            routing_engine: over.routing_engine.or(self.routing_engine),
            routing_accept_credit_loops: over
                .routing_accept_credit_loops
                .or(self.routing_accept_credit_loops),
            sweep_interval: over.sweep_interval.or(self.sweep_interval),
            partitions: over.partitions.or(self.partitions),
            guid2lid: over.guid2lid.or(self.guid2lid),
            data_dir: over.data_dir.or(self.data_dir),
            lmc: over.lmc.or(self.lmc),
            routing_workers: over.routing_workers.or(self.routing_workers),
            sim_pace: over.sim_pace.or(self.sim_pace),
            sim_seed: over.sim_seed.or(self.sim_seed),
            smp_timeout_ms: over.smp_timeout_ms.or(self.smp_timeout_ms),
            smp_window: over.smp_window.or(self.smp_window),
            root_guid_file: over.root_guid_file.or(self.root_guid_file),
            admin: match (self.admin, over.admin) {
                (Some(a), Some(b)) => Some(a.overlay(b)),
                (a, b) => b.or(a),
            },
            max_op_vls: over.max_op_vls.or(self.max_op_vls),
            qos: over.qos.or(self.qos),
            metrics_listen: over.metrics_listen.or(self.metrics_listen),
            perfmgr: over.perfmgr.or(self.perfmgr),
            perfmgr_sweep_time_s: over.perfmgr_sweep_time_s.or(self.perfmgr_sweep_time_s),
            perfmgr_max_outstanding_queries: over
                .perfmgr_max_outstanding_queries
                .or(self.perfmgr_max_outstanding_queries),
            perfmgr_rate: over.perfmgr_rate.or(self.perfmgr_rate),
            perfmgr_error_thresholds: over
                .perfmgr_error_thresholds
                .or(self.perfmgr_error_thresholds),
            metrics_port_counters: over.metrics_port_counters.or(self.metrics_port_counters),
            ufm_listen: over.ufm_listen.or(self.ufm_listen),
            ufm_username: over.ufm_username.or(self.ufm_username),
            ufm_password_file: over.ufm_password_file.or(self.ufm_password_file),
            ufm_token_file: over.ufm_token_file.or(self.ufm_token_file),
            ufm_admin_token_file: over.ufm_admin_token_file.or(self.ufm_admin_token_file),
        }
    }
}

/// The resolved configuration.
#[derive(Clone, Debug)]
pub struct NodeConfig {
    /// The fabric.
    pub fabric: FabricSpec,
    /// SM priority.
    pub priority: u8,
    /// Routing engines, in order.
    pub engines: Vec<String>,
    /// Keep routings with credit loops (with a warning) instead of refusing them.
    pub accept_credit_loops: bool,
    /// Light sweep interval in ms (0: none).
    pub sweep_interval_ms: u64,
    /// partitions.conf path.
    pub partitions: Option<PathBuf>,
    /// Where guid2lid is persisted (None: not persisted).
    pub guid2lid: Option<PathBuf>,
    /// LMC.
    pub lmc: u8,
    /// Routing workers.
    pub workers: usize,
    /// In-process simulator pace.
    pub pace: Pace,
    /// In-process simulator seed.
    pub seed: u64,
    /// SMP response timeout in ms.
    pub smp_timeout_ms: u64,
    /// Outstanding SMPs at most.
    pub smp_window: usize,
    /// Up/down root switches (empty: detected).
    pub updn_roots: Vec<fabric::Guid>,
    /// `[admin]` security settings (cluster mode).
    pub admin: AdminSecurity,
    /// Most OperationalVLs a port is brought up with.
    pub max_op_vls: u8,
    /// QoS tables (None: QoS off).
    pub qos: Option<std::sync::Arc<qos::QosTables>>,
    /// `[qos] qos_policy_file` (QoS on only).
    pub qos_policy_file: Option<PathBuf>,
    /// Where a cluster replica serves Prometheus metrics (None: not served).
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// The performance manager (`perfmgr*` keys).
    pub perf: sm_core::perf::PerfConfig,
    /// The per-port fabric families are served with the metrics.
    pub metrics_port_counters: bool,
    /// The UFM-compatible PKey API (None: not served).
    pub ufm: Option<UfmConfig>,
}

/// The `[qos]` table: None when absent or `enabled = false`; the `qos_*` keys checked.
fn qos_tables(
    t: Option<std::collections::BTreeMap<String, toml::Value>>,
) -> Result<QosConfig, ConfigError> {
    let Some(t) = t else {
        return Ok((None, None));
    };
    let bad = |e: String| ConfigError::Config(format!("[qos]: {e}"));
    let mut pairs = Vec::new();
    for (k, v) in t {
        // `enabled` is OpenSM's `qos`.
        let k = if k == "enabled" { "qos".to_string() } else { k };
        let v = match v {
            toml::Value::String(s) => s,
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Boolean(b) => (if b { "TRUE" } else { "FALSE" }).to_string(),
            v => {
                return Err(bad(format!(
                    "{k} = {v}: expected a string, integer or boolean"
                )));
            }
        };
        pairs.push((k, v));
    }
    let opts = qos::QosOptions::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .map_err(|e| bad(e.to_string()))?;
    let tables = opts.build().map_err(|e| bad(e.to_string()))?;
    let on = opts.enabled.unwrap_or(true);
    let policy = opts.policy_file.filter(|_| on).map(PathBuf::from);
    Ok((on.then(|| std::sync::Arc::new(tables)), policy))
}

/// QoS tables (None: off) and the QoS policy file (None: none).
type QosConfig = (Option<std::sync::Arc<qos::QosTables>>, Option<PathBuf>);

/// Reads and checks a QoS policy file (OpenSM's qos-policy.conf); every error is reported
/// as `file:line:col`.
pub fn load_qos_policy(path: &Path) -> Result<String, ConfigError> {
    let bad = |errors: String| ConfigError::QosPolicy {
        path: path.to_path_buf(),
        errors,
    };
    let text =
        std::fs::read_to_string(path).map_err(|e| bad(format!("{}: {e}", path.display())))?;
    if let Err(errs) = qos::Policy::parse(&text) {
        let lines: Vec<String> = errs
            .iter()
            .map(|e| {
                let p = e.pos().unwrap_or_default();
                format!("{}:{}:{}: {e}", path.display(), p.line, p.col)
            })
            .collect();
        return Err(bad(lines.join("\n")));
    }
    Ok(text)
}

impl TryFrom<FileConfig> for NodeConfig {
    type Error = ConfigError;
    fn try_from(f: FileConfig) -> Result<NodeConfig, ConfigError> {
        let (qos, qos_policy_file) = qos_tables(f.qos.clone())?;
        let perf = perf_config(&f)?;
        let fabric: FabricSpec = f
            .fabric
            .as_deref()
            .ok_or_else(|| ConfigError::Config("no fabric given (--fabric or `fabric =`)".into()))?
            .parse()?;
        let priority = f.priority.unwrap_or(0);
        if priority > 15 {
            return Err(ConfigError::Config(format!(
                "priority {priority}: must be 0..=15"
            )));
        }
        let lmc = f.lmc.unwrap_or(0);
        if lmc > 7 {
            return Err(ConfigError::Config(format!("lmc {lmc}: must be 0..=7")));
        }
        let engines: Vec<String> = f
            .routing_engine
            .as_deref()
            .unwrap_or("ftree,updn,minhop")
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        for e in &engines {
            routing::engine_by_name(e, &routing::EngineOptions::default())
                .map_err(|err| ConfigError::Config(format!("routing engine {e:?}: {err}")))?;
        }
        if engines.is_empty() {
            return Err(ConfigError::Config("empty routing engine chain".into()));
        }
        let interval = f.sweep_interval.unwrap_or(10.0);
        if !interval.is_finite() || interval < 0.0 {
            return Err(ConfigError::Config(format!(
                "sweep interval {interval}: must be >= 0 seconds"
            )));
        }
        let guid2lid = f
            .guid2lid
            .or_else(|| f.data_dir.as_ref().map(|d| d.join("guid2lid")));
        let pace = match f.sim_pace.as_deref() {
            Some(p) => p.parse().map_err(ConfigError::Config)?,
            None => Pace::Fast,
        };
        let smp_timeout_ms = match f.smp_timeout_ms {
            Some(0) => return Err(ConfigError::Config("smp timeout must be >= 1 ms".into())),
            Some(t) => t,
            None => fabric.default_smp_timeout_ms(),
        };
        let smp_window = match f.smp_window {
            Some(0) => return Err(ConfigError::Config("smp window must be >= 1".into())),
            Some(w) => w,
            None => fabric.smp_window(),
        };
        let updn_roots = match &f.root_guid_file {
            Some(p) => crate::roots::read(p).map_err(|e| ConfigError::Config(e.to_string()))?,
            None => Vec::new(),
        };
        Ok(NodeConfig {
            smp_window,
            updn_roots,
            fabric,
            priority,
            engines,
            accept_credit_loops: f.routing_accept_credit_loops.unwrap_or(false),
            sweep_interval_ms: (interval * 1e3).round() as u64,
            partitions: f.partitions,
            guid2lid,
            lmc,
            workers: f
                .routing_workers
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
                .max(1),
            pace,
            seed: f.sim_seed.unwrap_or(1),
            smp_timeout_ms,
            admin: f.admin.unwrap_or_default(),
            max_op_vls: match f.max_op_vls.unwrap_or(5) {
                v @ 1..=5 => v,
                v => {
                    return Err(ConfigError::Config(format!(
                        "max-op-vls {v}: must be 1..=5"
                    )));
                }
            },
            qos,
            qos_policy_file,
            metrics_listen: f.metrics_listen,
            perf: sm_core::perf::PerfConfig {
                // Queries share the transport with the SMPs: never more in flight than the
                // SMP window unless asked (128 on umad, ibsim's safe limit).
                max_outstanding: match f.perfmgr_max_outstanding_queries {
                    Some(n) => n,
                    None => perf.max_outstanding.min(smp_window),
                },
                ..perf
            },
            metrics_port_counters: f.metrics_port_counters.unwrap_or(true),
            ufm: match (f.ufm_listen, f.ufm_password_file) {
                (None, _) => None,
                (Some(_), None) => {
                    return Err(ConfigError::Config(
                        "ufm-listen needs ufm-password-file (the UFM API's basic auth)".into(),
                    ));
                }
                (Some(listen), Some(password_file)) => Some(UfmConfig {
                    listen,
                    username: f.ufm_username.unwrap_or_else(|| "admin".into()),
                    password_file,
                    token_file: f.ufm_token_file,
                    admin_token_file: f.ufm_admin_token_file,
                }),
            },
        })
    }
}

/// The `perfmgr*` keys checked into the performance manager's configuration.
fn perf_config(f: &FileConfig) -> Result<sm_core::perf::PerfConfig, ConfigError> {
    use sm_core::perf::{PerfConfig, Thresholds};
    let mut c = PerfConfig {
        enabled: f.perfmgr.unwrap_or(true),
        ..PerfConfig::default()
    };
    if let Some(s) = f.perfmgr_sweep_time_s {
        if s == 0 {
            return Err(ConfigError::Config(
                "perfmgr sweep time must be >= 1 s".into(),
            ));
        }
        c.interval = s.saturating_mul(1_000_000_000);
    }
    match f.perfmgr_max_outstanding_queries {
        Some(0) => {
            return Err(ConfigError::Config(
                "perfmgr max outstanding queries must be >= 1".into(),
            ));
        }
        Some(n) => c.max_outstanding = n,
        None => {}
    }
    match f.perfmgr_rate {
        Some(0) => return Err(ConfigError::Config("perfmgr rate must be >= 1".into())),
        Some(r) => c.rate_per_sec = r,
        None => {}
    }
    if let Some(p) = &f.perfmgr_error_thresholds {
        let text = std::fs::read_to_string(p)
            .map_err(|e| ConfigError::Config(format!("{}: {e}", p.display())))?;
        c.thresholds = Thresholds::parse(&text, &Thresholds::default())
            .map_err(|e| ConfigError::Config(format!("{}: {e}", p.display())))?;
    }
    Ok(c)
}

/// Reads and checks a partitions file; every syntax error is reported as `file:line:col`.
pub fn load_partitions(path: &Path) -> Result<String, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Partitions {
        path: path.to_path_buf(),
        errors: format!("{}: {e}", path.display()),
    })?;
    if let Err(errs) = partitions::parse(&text) {
        let errors = errs
            .iter()
            .map(|e| format!("{}:{e}", path.display()))
            .collect::<Vec<_>>()
            .join("\n");
        return Err(ConfigError::Partitions {
            path: path.to_path_buf(),
            errors,
        });
    }
    Ok(text)
}
