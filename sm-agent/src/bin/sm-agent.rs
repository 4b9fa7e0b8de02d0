//! `sm-agent`: the Quorum SM host agent. Polls the host's tenant assignment from the admin
//! API, writes the tenant cgroup's `rdma.max`, reports `rdma.current` usage and P_Key drift as
//! log lines with stable codes (README.md). `--once` runs one cycle and exits 1 on any error
//! or drift; `--json` prints each cycle's report as one JSON line on stdout.

use anyhow::Context;
use clap::Parser;
use sm_agent::client::{Conn, fetch};
use sm_agent::reconcile::{Assignment, Config, Level, Report, reconcile};
use sm_agent::{Roots, sysfs};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Quorum SM host agent.
#[derive(Parser)]
#[command(name = "sm-agent", version, about)]
struct Cli {
    /// Admin endpoint of any replica (host:port).
    #[arg(long, env = "SM_AGENT_SERVER")]
    server: String,
    /// Bearer token (read role).
    #[arg(long, env = "SM_AGENT_TOKEN")]
    token: Option<String>,
    /// CA certificate (PEM) for TLS; without it plain HTTP/2 (loopback only).
    #[arg(long)]
    ca: Option<PathBuf>,
    /// TLS server name to verify.
    #[arg(long, default_value = "localhost")]
    tls_domain: String,
    /// Client certificate (PEM) for mutual TLS (with --key).
    #[arg(long, requires = "key")]
    cert: Option<PathBuf>,
    /// Client key (PEM) for mutual TLS (with --cert).
    #[arg(long, requires = "cert")]
    key: Option<PathBuf>,
    /// sysfs root.
    #[arg(long, default_value = "/sys")]
    sysfs_root: PathBuf,
    /// cgroup v2 root.
    #[arg(long, default_value = "/sys/fs/cgroup")]
    cgroup_root: PathBuf,
    /// Tenant cgroup under the root; `{tenant}` is replaced by the tenant name.
    #[arg(long, default_value = "tenants/{tenant}")]
    cgroup_path: String,
    /// Port GUIDs to ask for (default: every InfiniBand port in sysfs).
    #[arg(long = "port-guid", value_parser = parse_u64)]
    port_guids: Vec<u64>,
    /// Seconds between cycles.
    #[arg(long, default_value_t = 10)]
    interval: u64,
    /// One cycle, then exit (1 on an error or drift).
    #[arg(long)]
    once: bool,
    /// Print each cycle's report as a JSON line on stdout.
    #[arg(long)]
    json: bool,
    /// Log lines on stderr as text or json (one JSON object per line); text has colour only
    /// on a terminal and never with NO_COLOR set.
    #[arg(long, env = "SM_LOG_FORMAT", default_value = "text")]
    log_format: deploy::logging::LogFormat,
}

fn parse_u64(s: &str) -> Result<u64, String> {
    let r = match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|_| format!("'{s}' is not a number (decimal or 0x hex)"))
}

async fn cycle(cli: &Cli, cfg: &Config, conn: &Conn) -> Report {
    let ports = match sysfs::host_ports(&cfg.roots) {
        Ok(p) => p,
        Err(e) => {
            return Report {
                errors: vec![e.to_string()],
                ..Report::default()
            };
        }
    };
    let guids: Vec<u64> = if cli.port_guids.is_empty() {
        ports.iter().map(|p| p.guid.0).collect()
    } else {
        cli.port_guids.clone()
    };
    match fetch(conn, &guids).await {
        Ok(a) => reconcile(cfg, &ports, &Assignment::from(a)),
        Err(e) => Report {
            errors: vec![e.to_string()],
            ..Report::default()
        },
    }
}

fn emit(cli: &Cli, r: &Report) -> anyhow::Result<()> {
    for (level, line) in r.log_lines() {
        match level {
            Level::Info => tracing::info!("{line}"),
            Level::Warn => tracing::warn!("{line}"),
            Level::Error => tracing::error!("{line}"),
        }
    }
    if cli.json {
        println!("{}", serde_json::to_string(r).context("report JSON")?);
    }
    Ok(())
}

fn main() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    deploy::logging::init(cli.log_format);
    let cfg = Config {
        roots: Roots {
            sysfs: cli.sysfs_root.clone(),
            cgroup: cli.cgroup_root.clone(),
        },
        cgroup_path: cli.cgroup_path.clone(),
    };
    let conn = Conn {
        server: cli.server.clone(),
        token: cli.token.clone(),
        ca: cli.ca.clone(),
        tls_domain: cli.tls_domain.clone(),
        identity: cli.cert.clone().zip(cli.key.clone()),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        // Installed once, before the first cycle: a signal that lands during a cycle is kept.
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .context("SIGTERM handler")?;
        let mut int = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
            .context("SIGINT handler")?;
        loop {
            let r = cycle(&cli, &cfg, &conn).await;
            emit(&cli, &r)?;
            if cli.once {
                let bad = !r.errors.is_empty() || !r.drift.is_empty();
                return Ok(if bad {
                    ExitCode::from(1)
                } else {
                    ExitCode::SUCCESS
                });
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(cli.interval.max(1))) => {}
                _ = term.recv() => return Ok(ExitCode::SUCCESS),
                _ = int.recv() => return Ok(ExitCode::SUCCESS),
            }
        }
    })
}
