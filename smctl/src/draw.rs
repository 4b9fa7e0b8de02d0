//! `smctl draw fabric|partitions`: pictures of the fabric (tiers of a fat tree, link state
//! coloured, the master SM's port marked) and of the partition reachability matrix (from the
//! audit read back from the fabric), drawn by the `views` crate.
//!
//! Sources: the cluster (`--server`: ListNodes + SmInfo, Audit), or offline a topology file /
//! generator spec (`--topology ft2:36`) and an audit report JSON (`--report FILE`, what
//! `smctl audit --json` or `smctl partitions audit --json` print).
//!
//! Errors reaching the operator start with `E_DRAW_` (`E_DRAW_SOURCE`, `E_DRAW_IO`,
//! `E_DRAW_VIEW`).

use crate::client::{self, status_err};
use anyhow::{Context, anyhow};
use clap::{Args, Subcommand, ValueEnum};
use proto::admin::{AuditProgressRequest, AuditRequest, ListNodesRequest, SmInfoRequest};
use std::path::PathBuf;
use std::process::ExitCode;

/// Output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Graphviz DOT (fabric only).
    Dot,
    /// SVG.
    Svg,
    /// Text (partitions only).
    Text,
}

/// `smctl draw ...`.
#[derive(Subcommand)]
pub enum DrawCmd {
    /// The fabric as tiers: hosts, leaf switches, spines; link state coloured; master marked.
    Fabric(FabricArgs),
    /// The reachability matrix between tenants/partitions (full, limited, none).
    Partitions(PartitionsArgs),
}

/// `smctl draw fabric`.
#[derive(Args)]
pub struct FabricArgs {
    /// Output format.
    #[arg(long, value_enum, default_value = "svg")]
    format: Format,
    /// LIDs to highlight (drawn on their own even when their leaf's hosts are collapsed).
    #[arg(long, num_args = 1..)]
    highlight: Vec<u32>,
    /// Hosts per leaf drawn one by one; more are collapsed into one box with a count.
    #[arg(long, default_value_t = 4)]
    max_hosts: usize,
    /// Draw a topology file or generator spec (ft2:36) offline instead of asking the cluster
    /// (`--topo` is an old name of it).
    #[arg(long = "topology", alias = "topo")]
    topo: Option<String>,
    /// Write here instead of stdout.
    #[arg(short, long)]
    output: Option<PathBuf>,
}

/// `smctl draw partitions`.
#[derive(Args)]
pub struct PartitionsArgs {
    /// Output format (svg or text).
    #[arg(long, value_enum, default_value = "svg")]
    format: Format,
    /// An audit report JSON file instead of asking the cluster for an audit.
    #[arg(long)]
    report: Option<PathBuf>,
    /// Title of the picture.
    #[arg(
        long,
        default_value = "Partition reachability (read back from the fabric)"
    )]
    title: String,
    /// Write here instead of stdout.
    #[arg(short, long)]
    output: Option<PathBuf>,
}

fn emit(text: &str, output: &Option<PathBuf>) -> anyhow::Result<ExitCode> {
    match output {
        Some(p) => {
            std::fs::write(p, text)
                .with_context(|| format!("E_DRAW_IO: cannot write {}", p.display()))?;
            eprintln!("draw: wrote {} ({} bytes)", p.display(), text.len());
        }
        None => {
            // A closed pipe (`| head`) is not an error.
            let _ = std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes());
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn offline_topology(source: &str) -> anyhow::Result<fabric::Topology> {
    let path = std::path::Path::new(source);
    if path.exists() {
        let text = crate::input::read_file(path)
            .with_context(|| format!("E_DRAW_IO: cannot read {}", path.display()))?;
        fabric::netfile::parse(&text).map_err(|e| {
            anyhow!(
                "E_DRAW_SOURCE: {}:{}:{}: {}",
                path.display(),
                e.line,
                e.col,
                e.kind
            )
        })
    } else {
        let spec: fabric::GenSpec = source.parse().map_err(|e| {
            anyhow!("E_DRAW_SOURCE: {source:?} is neither an existing file nor a spec ({e})")
        })?;
        spec.generate()
            .map_err(|e| anyhow!("E_DRAW_SOURCE: {spec}: {e}"))
    }
}

fn fabric(a: FabricArgs) -> anyhow::Result<ExitCode> {
    let model = match &a.topo {
        Some(src) => views::model::from_topology(&offline_topology(src)?),
        None => client::block_on(async {
            let mut c = client::connect().await?;
            let nodes = c
                .list_nodes(ListNodesRequest::default())
                .await
                .map_err(status_err)?
                .into_inner();
            // No master yet is not an error for a picture.
            let sm = c
                .sm_info(SmInfoRequest::default())
                .await
                .ok()
                .map(|r| r.into_inner());
            anyhow::Ok(views::model::from_list_nodes(&nodes, sm.as_ref()))
        })??,
    };
    let opts = views::DrawOptions {
        max_hosts_per_leaf: a.max_hosts,
        highlight: a.highlight.iter().copied().collect(),
    };
    let d = views::arrange(&model, &opts).map_err(|e| anyhow!("E_DRAW_VIEW: {e}"))?;
    eprintln!(
        "draw: {} switches, {} hosts, {} links ({} not active); {} boxes",
        d.switches,
        d.hosts,
        d.links,
        d.links_not_active,
        d.boxes.len()
    );
    if a.format == Format::Svg && d.edges.len() > 1500 {
        eprintln!(
            "draw: {} edges to lay out: this can take minutes (ft3:16's 2,176 take seconds in a debug build); --format dot piped to Graphviz is faster",
            d.edges.len()
        );
    }
    let text = match a.format {
        Format::Dot => views::to_dot(&d),
        Format::Svg => views::to_svg(&d),
        Format::Text => return Err(anyhow!("E_DRAW_SOURCE: --format text is for partitions")),
    };
    emit(&text, &a.output)
}

fn partitions(a: PartitionsArgs) -> anyhow::Result<ExitCode> {
    let json = match &a.report {
        Some(p) => crate::input::read_file(p)
            .with_context(|| format!("E_DRAW_IO: cannot read {}", p.display()))?,
        None => client::block_on(async {
            // The audit waits for a read-back of every P_KeyTable.
            client::set_command_timeout(client::AUDIT_REQUEST_TIMEOUT);
            let mut c = client::connect().await?;
            eprintln!("draw: the master is reading every P_KeyTable back from the fabric");
            let mut pc = c.clone();
            let audit = c.audit(AuditRequest::default());
            tokio::pin!(audit);
            let mut tick = tokio::time::interval(std::time::Duration::from_millis(250));
            let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
            let mut shown = false;
            // Progress from AuditProgress while the read-back runs (terminals only).
            let r = loop {
                tokio::select! {
                    r = &mut audit => break r,
                    _ = tick.tick(), if tty => {
                        if let Ok(p) = pc.audit_progress(AuditProgressRequest {}).await {
                            let p = p.into_inner();
                            if p.running {
                                eprint!("\rdraw: {}/{} ports read by replica {}   ", p.ports_done, p.ports_total, p.replica);
                                shown = true;
                            }
                        }
                    }
                }
            };
            if shown {
                eprintln!();
            }
            let r = r.map_err(status_err)?.into_inner();
            eprintln!(
                "draw: {} port tables read by replica {} in {} ms",
                r.ports, r.read_by_replica, r.read_ms
            );
            anyhow::Ok(r.report_json)
        })??,
    };
    let m = views::Reachability::from_audit_json(&json).map_err(|e| anyhow!("E_DRAW_VIEW: {e}"))?;
    let text = match a.format {
        Format::Svg => views::matrix_svg(&m, &a.title),
        Format::Text => views::matrix_text(&m),
        Format::Dot => return Err(anyhow!("E_DRAW_SOURCE: --format dot is for the fabric")),
    };
    emit(&text, &a.output)
}

/// Runs `smctl draw`.
pub fn run(cmd: DrawCmd) -> anyhow::Result<ExitCode> {
    match cmd {
        DrawCmd::Fabric(a) => fabric(a),
        DrawCmd::Partitions(a) => partitions(a),
    }
}
