//! `smctl route ...`: offline routing of a topology file with the `routing` engines, and
//! route-quality analysis of LFTs dumped with `ibroute` (for example as OpenSM programmed
//! them), both with the metrics of `routing::metrics`.

use anyhow::{Context, anyhow};
use clap::{Args, Subcommand};
use fabric::{DegradedSpec, Guid, Topology, netfile};
use routing::metrics::{self, Metrics, MetricsOptions};
use routing::{EngineOptions, RoutingInput, assign_lids_sequential, ibroute, route_with_chain};
use runner::Threads;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

/// Appends a line to the output buffer (written to stdout once, at the end).
macro_rules! outln {
    ($o:expr, $($arg:tt)*) => {{
        use std::fmt::Write as _;
        let _ = writeln!($o, $($arg)*);
    }};
}

/// Writes the buffered output; a reader that went away (`| head`) is not an error.
fn emit(o: &str) -> anyhow::Result<ExitCode> {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(o.as_bytes()).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(e) => Err(anyhow!("E_ROUTE_IO: cannot write to stdout: {e}")),
    }
}

/// Arguments of `smctl route`.
#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct RouteArgs {
    #[command(subcommand)]
    action: Option<RouteAction>,
    /// Cluster (with --server): print this switch LID's LFT as programmed, like `ibroute LID`.
    lid: Option<u32>,
    /// Cluster: answer linearizably.
    #[arg(long)]
    linearizable: bool,
    /// Topology: an ibnetdiscover/ibsim file, or a generator spec such as `ft3:36`.
    #[arg(long)]
    topology: Option<String>,
    /// Engine, or a fallback chain as OpenSM's -R takes it (the daemon's default chain:
    /// the first engine that accepts the topology wins).
    #[arg(long, default_value = "ftree,updn,minhop")]
    engine: String,
    /// Worker threads (the result is identical for any number).
    #[arg(long, default_value_t = 1)]
    workers: usize,
    /// Shards per phase (default: 4 per worker).
    #[arg(long)]
    shards: Option<usize>,
    /// LMC for the sequential offline LID assignment (2^LMC LIDs per end port).
    #[arg(long, default_value_t = 0)]
    lmc: u8,
    /// Up/down root switch GUIDs, comma separated (default: detected).
    #[arg(long, value_delimiter = ',')]
    roots: Vec<String>,
    /// Write the LFTs as `ibroute` prints them, every switch concatenated.
    #[arg(long)]
    dump_lfts: Option<PathBuf>,
    /// Skip the quality metrics.
    #[arg(long)]
    no_metrics: bool,
    /// After routing, remove the link on NODE_GUID:PORT and route again twice: from scratch
    /// and incrementally (keeping valid entries); report the 64-LID blocks each changes.
    #[arg(long, value_name = "NODE_GUID:PORT")]
    drop_link: Option<String>,
    /// Keep a routing whose channel dependency graph has a cycle (with a ROUTE-W-CDG
    /// warning) instead of refusing it and trying the next engine of the chain.
    #[arg(long)]
    accept_credit_loops: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// `smctl route` subcommands.
#[derive(Subcommand)]
enum RouteAction {
    /// Metrics of an existing LFT dump (`ibroute <lid>` output of every switch, concatenated).
    Analyze(AnalyzeArgs),
}

#[derive(Args)]
struct AnalyzeArgs {
    /// Topology: an ibnetdiscover/ibsim file, or a generator spec.
    #[arg(long)]
    topology: String,
    /// The dump: `ibroute` outputs of the switches, concatenated.
    #[arg(long)]
    lfts: PathBuf,
    /// Also route with this engine (or chain) on the dump's own LIDs and report how many
    /// LFT entries and 64-LID blocks differ from the dump.
    #[arg(long)]
    compare_engine: Option<String>,
    /// With --compare-engine: keep our routing even when it has a credit loop.
    #[arg(long, requires = "compare_engine")]
    accept_credit_loops: bool,
    /// With --compare-engine: write our tables (ibroute format) to this file.
    #[arg(long, requires = "compare_engine")]
    dump_ours: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

fn load_topology(source: &str) -> anyhow::Result<Topology> {
    let path = Path::new(source);
    if path.exists() {
        let text = crate::input::read_file(path)
            .with_context(|| format!("E_ROUTE_IO: cannot read {}", path.display()))?;
        return netfile::parse(&text).map_err(|e| {
            anyhow!(
                "E_ROUTE_TOPO: {}:{}:{}: {}",
                path.display(),
                e.line,
                e.col,
                e.kind
            )
        });
    }
    // A generator spec, optionally with removed links (`ft2:36:remove=3:seed=1`).
    let spec: DegradedSpec = source.parse().map_err(|e| {
        anyhow!("E_ROUTE_ARGS: {source:?} is neither an existing file nor a generator spec ({e})")
    })?;
    spec.generate()
        .map_err(|e| anyhow!("E_ROUTE_ARGS: cannot generate {source}: {e}"))
}

fn peak_rss_mb() -> Option<f64> {
    runner::peak_rss_bytes().map(|b| b as f64 / (1024.0 * 1024.0))
}

fn parse_guid(s: &str) -> anyhow::Result<Guid> {
    u64::from_str_radix(s.trim().trim_start_matches("0x"), 16)
        .map(Guid)
        .map_err(|e| anyhow!("E_ROUTE_ARGS: bad root GUID {s:?}: {e}"))
}

/// Runs `smctl route`.
pub fn run(args: RouteArgs) -> anyhow::Result<ExitCode> {
    if let Some(lid) = args.lid {
        return crate::cluster_cmds::route(lid, args.linearizable, args.json);
    }
    if let Some(RouteAction::Analyze(a)) = args.action {
        return analyze(a);
    }
    let mut o = String::new();
    let source = args
        .topology
        .as_deref()
        .ok_or_else(|| anyhow!("E_ROUTE_ARGS: --topology is required"))?;
    let t0 = Instant::now();
    let topo = load_topology(source)?;
    let load_ms = ms(t0);

    let t0 = Instant::now();
    let lids = assign_lids_sequential(&topo, args.lmc).map_err(|e| anyhow!("E_ROUTE_LIDS: {e}"))?;
    let input = RoutingInput::new(&topo, &lids, None).map_err(|e| anyhow!("E_ROUTE_INPUT: {e}"))?;
    let input_ms = ms(t0);

    let chain: Vec<&str> = args.engine.split(',').map(str::trim).collect();
    let opts = EngineOptions {
        updn_roots: args
            .roots
            .iter()
            .map(|s| parse_guid(s))
            .collect::<anyhow::Result<_>>()?,
        accept_credit_loops: args.accept_credit_loops,
        ..EngineOptions::default()
    };
    let workers = args.workers.max(1);
    let shards = args.shards.unwrap_or(workers * 4).max(1);
    let t0 = Instant::now();
    let outcome = route_with_chain(&input, &chain, &opts, &Threads(workers), shards, None)
        .map_err(|e| anyhow!("E_ROUTE_ENGINE: {e}"))?;
    let routing_ms = ms(t0);
    for r in &outcome.refusals {
        eprintln!(
            "smctl: route: engine {} refused ({}), falling back: {}",
            r.engine,
            r.reason.code(),
            r.reason
        );
    }
    for w in &outcome.warnings {
        eprintln!("smctl: route: warning: {w}");
    }
    let routed = &outcome.routing;

    if let Some(path) = &args.dump_lfts {
        let text = ibroute::format_ibroute(&topo, &input, &routed.lfts);
        std::fs::write(path, text)
            .with_context(|| format!("E_ROUTE_IO: cannot write {}", path.display()))?;
    }
    let peak_after_routing = peak_rss_mb();

    let drop = match &args.drop_link {
        None => None,
        Some(spec) => Some(drop_link(
            &topo,
            &lids,
            spec,
            &chain,
            &opts,
            &Threads(workers),
            shards,
            &routed.lfts,
        )?),
    };

    let (m, metrics_ms) = if args.no_metrics {
        (None, 0.0)
    } else {
        let t0 = Instant::now();
        let mopts = MetricsOptions {
            vls: routed.path_vls(),
            ..MetricsOptions::default()
        };
        let m = metrics::analyze(&input, &routed.lfts, &mopts);
        (Some(m), ms(t0))
    };

    if args.json {
        let mut v = json!({
            "routing_ms": round1(routing_ms),
            "engine": routed.engine,
            "engine_chain": chain,
            "refusals": outcome.refusals.iter().map(|r| json!({
                "engine": r.engine, "code": r.reason.code(), "reason": r.reason.to_string()
            })).collect::<Vec<_>>(),
            "warnings": outcome.warnings,
            "deadlock_check": serde_json::to_value(&outcome.cdg)?,
            "workers": workers,
            "shards": shards,
            "peak_rss_mb": peak_after_routing.map(round1),
            "peak_rss_mb_with_metrics": peak_rss_mb().map(round1),
            "load_ms": round1(load_ms),
            "input_ms": round1(input_ms),
            "metrics_ms": round1(metrics_ms),
            "switches": input.num_switches(),
            "end_ports": input.end_ports.len(),
            "max_lid": input.max_lid(),
            "lft_blocks": routed.lfts.total_blocks(),
            "max_switch_hops_used": routed.hops.max_hops(),
        });
        if let Some(d) = &drop {
            v["drop_link"] = d.clone();
        }
        if let Some(m) = &m {
            v["max_link_load"] = json!(m.max_link_load);
            v["metrics"] = serde_json::to_value(m)?;
        }
        outln!(o, "{}", serde_json::to_string_pretty(&v)?);
    } else {
        outln!(
            o,
            "routed {} switches, {} end ports, LIDs 1..={} with {} ({} worker(s), {} shards)",
            input.num_switches(),
            input.end_ports.len(),
            input.max_lid(),
            routed.engine,
            workers,
            shards
        );
        outln!(
            o,
            "routing {routing_ms:.1} ms (topology load {load_ms:.1} ms, input {input_ms:.1} ms), peak RSS {}",
            peak_after_routing.map_or("n/a".into(), |v| format!("{v:.1} MB"))
        );
        if let Some(m) = &m {
            print_metrics(&mut o, m);
            outln!(o, "metrics {metrics_ms:.1} ms");
        }
        if let Some(d) = &drop {
            outln!(
                o,
                "after dropping {}: full recompute changes {} of {} LFT blocks ({} ms), incremental {} ({} ms); incremental routes: {} unreachable pairs, {} loops",
                d["link"].as_str().unwrap_or("?"),
                d["changed_blocks_full"],
                d["lft_blocks"],
                d["full_ms"],
                d["changed_blocks_incremental"],
                d["incremental_ms"],
                d["incremental_unreachable_pairs"],
                d["incremental_loops"],
            );
        }
    }
    emit(&o)
}

/// Removes one link, reroutes from scratch and incrementally, and compares both with `prev`.
#[allow(clippy::too_many_arguments)]
fn drop_link(
    topo: &Topology,
    lids: &routing::LidAssignment,
    spec: &str,
    chain: &[&str],
    opts: &EngineOptions,
    exec: &Threads,
    shards: usize,
    prev: &routing::Lfts,
) -> anyhow::Result<serde_json::Value> {
    let (g, p) = spec
        .split_once(':')
        .ok_or_else(|| anyhow!("E_ROUTE_ARGS: --drop-link wants NODE_GUID:PORT, not {spec:?}"))?;
    let guid = parse_guid(g)?;
    let port: u8 = p
        .parse()
        .map_err(|e| anyhow!("E_ROUTE_ARGS: bad port in --drop-link {spec:?}: {e}"))?;
    let node = topo
        .node_by_guid(guid)
        .ok_or_else(|| anyhow!("E_ROUTE_ARGS: no node with GUID {guid}"))?;
    let mut after = topo.clone();
    let remote = after
        .disconnect(fabric::PortRef::new(node, port))
        .ok_or_else(|| anyhow!("E_ROUTE_ARGS: port {port} of {guid} is not cabled"))?;
    // LIDs stay as they were, as the SM keeps them.
    let input = RoutingInput::new(&after, lids, None).map_err(|e| anyhow!("E_ROUTE_INPUT: {e}"))?;
    let t0 = Instant::now();
    let full = route_with_chain(&input, chain, opts, exec, shards, None)
        .map_err(|e| anyhow!("E_ROUTE_ENGINE: {e}"))?;
    let full_ms = ms(t0);
    let t0 = Instant::now();
    let inc = route_with_chain(&input, chain, opts, exec, shards, Some(prev))
        .map_err(|e| anyhow!("E_ROUTE_ENGINE: {e}"))?;
    let inc_ms = ms(t0);
    let m = metrics::analyze(
        &input,
        &inc.routing.lfts,
        &MetricsOptions {
            shifts: Some(vec![]),
            vls: inc.routing.path_vls(),
        },
    );
    Ok(json!({
        "link": format!("{guid}:{port} <-> {}:{}", after.node(remote.node).node_guid, remote.port.0),
        "engine": inc.routing.engine,
        "lft_blocks": prev.total_blocks(),
        "changed_blocks_full": routing::changed_blocks(prev, &full.routing.lfts),
        "changed_blocks_incremental": routing::changed_blocks(prev, &inc.routing.lfts),
        "full_ms": round1(full_ms),
        "incremental_ms": round1(inc_ms),
        "incremental_unreachable_pairs": m.unreachable_pairs,
        "incremental_loops": m.loops,
        "incremental_dead_ends": m.dead_ends,
    }))
}

fn analyze(a: AnalyzeArgs) -> anyhow::Result<ExitCode> {
    let mut o = String::new();
    let topo = load_topology(&a.topology)?;
    let text = crate::input::read_file(&a.lfts)
        .with_context(|| format!("E_ROUTE_IO: cannot read {}", a.lfts.display()))?;
    let dump = ibroute::parse_ibroute(&text)
        .map_err(|e| anyhow!("E_ROUTE_DUMP: {}: {e}", a.lfts.display()))?;
    let (lids, lfts) =
        ibroute::lfts_from_dump(&topo, &dump).map_err(|e| anyhow!("E_ROUTE_DUMP: {e}"))?;
    let input = RoutingInput::new(&topo, &lids, None).map_err(|e| anyhow!("E_ROUTE_INPUT: {e}"))?;
    let missing = input.num_switches() - lfts.switches.len().min(input.num_switches());
    if missing > 0 {
        eprintln!("smctl: route analyze: {missing} switch(es) of the topology are not in the dump");
    }
    // End ports cabled to a switch whose LIDs no dump entry names (for instance the last
    // LFT block, which ibroute skips when the top LID is a multiple of 64).
    let cabled_end_ports = topo
        .nodes()
        .filter(|(_, n)| !n.is_switch())
        .flat_map(|(_, n)| n.ports.iter().skip(1))
        .filter(|p| p.remote.is_some_and(|r| topo.node(r.node).is_switch()))
        .count();
    let without_lid = cabled_end_ports.saturating_sub(input.end_ports.len());
    if without_lid > 0 {
        eprintln!(
            "smctl: route analyze: {without_lid} end port(s) have no LID in the dump and are left out of the metrics"
        );
    }
    let t0 = Instant::now();
    let m = metrics::analyze(&input, &lfts, &MetricsOptions::default());
    let metrics_ms = ms(t0);
    let compare = match &a.compare_engine {
        None => None,
        Some(chain) => {
            let chain: Vec<&str> = chain.split(',').map(str::trim).collect();
            let ours = route_with_chain(
                &input,
                &chain,
                &EngineOptions {
                    accept_credit_loops: a.accept_credit_loops,
                    ..EngineOptions::default()
                },
                &Threads(1),
                1,
                None,
            )
            .map_err(|e| anyhow!("E_ROUTE_ENGINE: {e}"))?;
            // Entries the dump programs, how many of them ours sets differently, and the
            // used LIDs the dump leaves without a route.
            let (mut entries, mut differ, mut unrouted) = (0u64, 0u64, 0u64);
            for t in &lfts.switches {
                let Some(o) = ours.routing.lfts.by_guid(t.guid) else {
                    continue;
                };
                for lid in 1..=input.max_lid() {
                    if !input.dest(lid).is_used() {
                        continue;
                    }
                    if t.port(lid) == routing::NO_ROUTE {
                        unrouted += 1;
                    } else {
                        entries += 1;
                        differ += u64::from(t.port(lid) != o.port(lid));
                    }
                }
            }
            if let Some(path) = &a.dump_ours {
                let text = ibroute::format_ibroute(&topo, &input, &ours.routing.lfts);
                std::fs::write(path, text)
                    .with_context(|| format!("E_ROUTE_IO: cannot write {}", path.display()))?;
            }
            let mopts = MetricsOptions {
                vls: ours.routing.path_vls(),
                ..MetricsOptions::default()
            };
            let om = metrics::analyze(&input, &ours.routing.lfts, &mopts);
            Some((
                ours.routing.engine,
                entries,
                differ,
                unrouted,
                routing::changed_blocks(&lfts, &ours.routing.lfts),
                om,
            ))
        }
    };
    if a.json {
        let mut v = json!({
            "switches_in_dump": dump.len(),
            "switches_missing": missing,
            "end_ports_without_lid": without_lid,
            "max_lid": input.max_lid(),
            "metrics_ms": round1(metrics_ms),
            "max_link_load": m.max_link_load,
            "metrics": serde_json::to_value(&m)?,
        });
        if let Some((engine, entries, differ, unrouted, blocks, om)) = &compare {
            v["compare"] = json!({
                "engine": engine,
                "entries": entries,
                "entries_differing": differ,
                "entries_unrouted_in_dump": unrouted,
                "blocks_differing": blocks,
                "metrics": serde_json::to_value(om)?,
            });
        }
        outln!(o, "{}", serde_json::to_string_pretty(&v)?);
    } else {
        outln!(
            o,
            "dump of {} switches ({} missing), {} end ports, LIDs up to {}",
            dump.len(),
            missing,
            input.end_ports.len(),
            input.max_lid()
        );
        print_metrics(&mut o, &m);
        if let Some((engine, entries, differ, unrouted, blocks, om)) = &compare {
            outln!(
                o,
                "ours ({engine}) on the same LIDs: {differ} of the dump's {entries} entries differ ({unrouted} used LIDs have no route in the dump); {blocks} 64-LID blocks differ"
            );
            print_metrics(&mut o, om);
        }
    }
    emit(&o)
}

fn print_metrics(o: &mut String, m: &Metrics) {
    outln!(
        o,
        "pairs: {} routed of {} ({} unreachable); hops mean {:.2}, max {}; histogram {:?}",
        m.routed_pairs,
        m.ca_pairs,
        m.unreachable_pairs,
        m.mean_hops,
        m.max_hops,
        m.hop_histogram
    );
    outln!(
        o,
        "walks: {} checked, {} loops, {} dead ends ({} towards switch LIDs); longest {} switch hops (diameter {})",
        m.walks,
        m.loops,
        m.dead_ends,
        m.dead_ends_to_switches,
        m.max_switch_hops,
        m.diameter
    );
    let bound = match m.all_to_all.lower_bound {
        Some(b) if b > 0 => format!(
            " (fat-tree cut lower bound {b}: {:.3}x)",
            m.all_to_all.max_link_load as f64 / b as f64
        ),
        _ => String::new(),
    };
    outln!(
        o,
        "link load all-to-all: max {}, mean {:.1}{bound}",
        m.all_to_all.max_link_load,
        m.all_to_all.mean_link_load
    );
    outln!(
        o,
        "link load shift permutations: worst max {} over {} shifts (mean {:.2}), {} undelivered",
        m.shift.max_link_load,
        m.shift.shifts.len(),
        m.shift.mean_link_load,
        m.shift.undelivered
    );
    outln!(
        o,
        "channel dependency graph (switch LIDs included): {} channels, {} dependencies, VLs used {:?}: {}",
        m.cdg.channels,
        m.cdg.dependencies,
        m.cdg.vls_used,
        if m.cdg.has_cycle {
            "CYCLE (deadlock possible)"
        } else {
            "acyclic"
        }
    );
    for v in &m.cdg.per_vl {
        outln!(
            o,
            "  VL {}: {} dependencies, {}{}",
            v.vl,
            v.dependencies,
            if v.acyclic { "acyclic" } else { "CYCLE: " },
            v.cycle.join(" -> ")
        );
    }
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}
