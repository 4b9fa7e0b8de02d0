//! fabric-simd: serves a simulated fabric on a Unix socket. SM processes attach at named
//! CA ports and exchange MADs; control requests inject faults and read accounting.
//! Protocol: fabric-sim/PROTOCOL.md.

use anyhow::{Context, Result};
use clap::Parser;
use fabric_sim::{SimConfig, SimFabric, server};
use std::path::PathBuf;

/// Serve a simulated InfiniBand fabric on a Unix socket.
#[derive(Parser, Debug)]
#[command(name = "fabric-simd", version)]
struct Args {
    /// Topology file (ibsim / ibnetdiscover format) or generator spec (e.g. ft3:36).
    #[arg(long)]
    topology: String,
    /// Unix socket path to listen on (removed first if it exists and is a socket).
    #[arg(long)]
    socket: PathBuf,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Per-hop latency in virtual nanoseconds.
    #[arg(long, default_value_t = SimConfig::default().hop_latency_ns)]
    hop_latency_ns: u64,
    /// SMA processing time in virtual nanoseconds.
    #[arg(long, default_value_t = SimConfig::default().sma_latency_ns)]
    sma_latency_ns: u64,
    /// SMPs a switch output port holds before dropping.
    #[arg(long, default_value_t = SimConfig::default().vl15_depth)]
    vl15_depth: u32,
    /// Repeat unrepressed traps this often (virtual ns; 0 = send once).
    #[arg(long, default_value_t = 0)]
    trap_repeat_ns: u64,
    /// Do not keep the accepted-Set log.
    #[arg(long)]
    no_set_log: bool,
    /// Fault script: one JSON control request per line (usually `{"op":"at",...}`),
    /// applied at start; blank lines and lines starting with `#` are skipped.
    #[arg(long)]
    script: Option<PathBuf>,
}

fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let args = Args::parse();
    let t0 = std::time::Instant::now();
    let topo = server::load_topology(&args.topology)
        .map_err(|e| anyhow::anyhow!("SIMD-E001 loading topology: {e}"))?;
    let cfg = SimConfig {
        seed: args.seed,
        hop_latency_ns: args.hop_latency_ns,
        sma_latency_ns: args.sma_latency_ns,
        vl15_depth: args.vl15_depth,
        log_sets: !args.no_set_log,
        trap_repeat_ns: args.trap_repeat_ns,
        ..SimConfig::default()
    };
    let mut sim = SimFabric::new(&topo, cfg).context("SIMD-E002 building the fabric")?;
    if let Some(path) = &args.script {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("SIMD-E005 reading script {}", path.display()))?;
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let r = fabric_sim::control::handle(&mut sim, 0, line);
            if r["ok"] != true {
                anyhow::bail!(
                    "SIMD-E006 script {} line {}: {}",
                    path.display(),
                    i + 1,
                    r["error"]
                );
            }
        }
    }
    if let Ok(meta) = std::fs::symlink_metadata(&args.socket) {
        use std::os::unix::fs::FileTypeExt;
        if meta.file_type().is_socket() {
            std::fs::remove_file(&args.socket).context("SIMD-E003 removing stale socket")?;
        }
    }
    let handle = server::spawn(sim, &args.socket)
        .with_context(|| format!("SIMD-E004 listening on {}", args.socket.display()))?;
    tracing::info!(
        nodes = topo.len(),
        links = topo.num_links(),
        load_ms = t0.elapsed().as_millis() as u64,
        socket = %args.socket.display(),
        "SIMD-I001 fabric-simd ready"
    );
    handle.join();
    Ok(())
}
