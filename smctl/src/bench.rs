//! `smctl bench sweep`: one sm-core sweeper on the in-process simulated fabric, timed from
//! the first SMP to SUBNET UP, per phase, with SMP counts and peak memory.

use anyhow::{Context, anyhow};
use clap::{Args, Subcommand};
use fabric::{GenSpec, Topology, netfile};
use fabric_sim::{SimConfig, SimFabric};
use runner::Threads;
use sm_core::{Event, Sweeper, SweeperConfig, VTime};
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

/// Benchmarks.
#[derive(Subcommand)]
pub enum BenchCmd {
    /// Time one SM from nothing to SUBNET UP on the in-process simulator.
    Sweep(SweepArgs),
}

/// Arguments of `bench sweep`.
#[derive(Args)]
pub struct SweepArgs {
    /// Topology: a generator spec (ft2:36, ft3:36, torus:6x6x6, random:256) or a topology file.
    #[arg(long)]
    topology: String,
    /// Routing engine chain, comma separated (default ftree,updn,minhop).
    #[arg(long)]
    engine: Option<String>,
    /// Routing worker threads (default: available cores).
    #[arg(long)]
    workers: Option<usize>,
    /// Fabric-wide limit of outstanding SMPs.
    #[arg(long, default_value_t = 256)]
    window: usize,
    /// Outstanding SMPs per switch (VL15).
    #[arg(long, default_value_t = 4)]
    per_switch: u8,
    /// Virtual time the fabric runs on after the first response reaches the SM before the
    /// SM takes every response that arrived (0: each arrival wakes the SM).
    #[arg(long, default_value_t = 2_000)]
    coalesce_ns: u64,
    /// Simulator seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// After SUBNET UP, one counter sweep of the performance manager (every ACTIVE port's
    /// PerfMgt counters, as the master reads them), timed apart.
    #[arg(long)]
    perf: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

fn load(source: &str) -> anyhow::Result<Topology> {
    let path = Path::new(source);
    if path.exists() {
        let text = crate::input::read_file(path)
            .with_context(|| format!("E_TOPO_IO: cannot read {}", path.display()))?;
        return netfile::parse(&text).map_err(|e| {
            anyhow!(
                "E_TOPO_PARSE: {}:{}:{}: {}",
                path.display(),
                e.line,
                e.col,
                e.kind
            )
        });
    }
    let spec = source.parse::<GenSpec>().map_err(|e| {
        anyhow!("E_TOPO_ARGS: {source:?} is neither an existing file nor a valid spec ({e})")
    })?;
    spec.generate().map_err(|e| anyhow!("E_TOPO_ARGS: {e}"))
}

fn ms(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

/// Runs the benchmark.
pub fn run(cmd: BenchCmd) -> anyhow::Result<ExitCode> {
    let BenchCmd::Sweep(a) = cmd;
    let topo = load(&a.topology)?;
    let workers = a
        .workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let t_setup = Instant::now();
    let mut fab = SimFabric::new(
        &topo,
        SimConfig {
            seed: a.seed,
            log_sets: false,
            ..SimConfig::default()
        },
    )
    .map_err(|e| anyhow!("E_BENCH_SIM: {e}"))?;
    let sm_guid = topo
        .cas()
        .flat_map(|(_, n)| {
            n.port_numbers()
                .filter(|p| n.ports[p.0 as usize].remote.is_some())
                .map(|p| n.ports[p.0 as usize].guid)
                .collect::<Vec<_>>()
        })
        .next()
        .ok_or_else(|| anyhow!("E_BENCH_TOPO: the fabric has no cabled CA port for the SM"))?;
    let sm = fab
        .attach(sm_guid)
        .map_err(|e| anyhow!("E_BENCH_SIM: {e}"))?;
    let mut cfg = SweeperConfig {
        routing_shards: if workers > 1 { workers * 2 } else { 1 },
        window: a.window,
        per_switch_window: a.per_switch,
        ..SweeperConfig::default()
    };
    if let Some(e) = &a.engine {
        cfg.engines = e.split(',').map(|s| s.trim().to_string()).collect();
    }
    let mut sw = Sweeper::new(cfg).map_err(|e| anyhow!("E_BENCH_CONFIG: {e}"))?;
    let setup_ms = ms(t_setup.elapsed());

    let start = Instant::now();
    let mut now: VTime = 0;
    let (mut t_disc, mut t_lids, mut t_route_start, mut t_route_end, mut t_up) =
        (None, None, None, None, None);
    let mut engine = "";
    let mut refusals = Vec::new();
    let mut up_counters = None;
    let mut min_smps = 0u64;
    let mut disc = (0usize, 0usize, 0usize, 0u64, 0u64);
    let mut lft_blocks = 0usize;
    let mut done = false;
    let mut sim_time = std::time::Duration::ZERO;
    let mut sim_at_up = None;
    // SMP building (the sweeper's poll_transmit) timed apart from the fabric: the SMPs of
    // one turn are taken first, then sent at the same virtual time in the same order.
    let mut build_time = std::time::Duration::ZERO;
    let mut build_at_up = None;
    let mut batch = Vec::new();
    let mut turns = 0u64;
    while !done {
        turns += 1;
        let t0 = Instant::now();
        batch.extend(std::iter::from_fn(|| sw.poll_transmit()));
        build_time += t0.elapsed();
        for tx in batch.drain(..) {
            let r = if tx.dlid.is_permissive() {
                fab.send(now, sm, &tx.smp)
            } else {
                fab.send_lid(now, sm, tx.dlid, &tx.smp)
            };
            r.map_err(|e| anyhow!("E_BENCH_SIM: {e}"))?;
        }
        // The contract's loop, with the fabric stepped from event time to event time
        // without waking the sweeper until its timer is due or something reached the SM and
        // `coalesce_ns` of virtual time passed since: the SM then takes all that arrived
        // (an SM reads its queue in batches; 0 wakes it at the first arrival).
        let deadline = sw.poll_timeout();
        let mut horizon = deadline;
        let mut arrived = false;
        loop {
            match fab.next_event_time() {
                Some(t) if horizon.is_none_or(|h| t <= h) => {
                    now = now.max(t);
                    fab.run_until(now);
                    if !arrived && fab.pending(sm) > 0 {
                        arrived = true;
                        let h = now + a.coalesce_ns;
                        horizon = Some(deadline.map_or(h, |d| d.min(h)));
                    }
                }
                _ if arrived => break,
                _ => {
                    let d = deadline.ok_or_else(|| anyhow!("E_BENCH_STALL: nothing scheduled"))?;
                    now = now.max(d);
                    fab.run_until(now);
                    break;
                }
            }
        }
        sim_time += t0.elapsed();
        while let Some(r) = fab.poll_recv_full(sm) {
            sw.handle_mad(now, r.slid, r.smp);
        }
        for pass in 0..2 {
            if pass == 1 && matches!(sw.poll_timeout(), Some(t) if t <= now) {
                sw.handle_timeout(now);
            }
            while let Some(ev) = sw.poll_event() {
                match ev {
                    Event::DiscoveryDone {
                        nodes,
                        switches,
                        links,
                        smps,
                        min_smps,
                        ..
                    } => {
                        t_disc = Some(start.elapsed());
                        disc = (nodes, switches, links, smps, min_smps);
                    }
                    Event::LidsAssigned { .. } => t_lids = Some(start.elapsed()),
                    Event::RoutingNeeded(job) => {
                        t_route_start = Some(start.elapsed());
                        let r = job.run(&Threads(workers));
                        t_route_end = Some(start.elapsed());
                        sw.handle_routing_result(now, r);
                    }
                    Event::RoutingDone {
                        engine: e,
                        lft_blocks: b,
                        refusals: r,
                        ..
                    } => {
                        engine = e;
                        lft_blocks = b;
                        refusals = r;
                    }
                    Event::RoutingFailed(e) => return Err(anyhow!("E_BENCH_ROUTING: {e}")),
                    Event::SubnetUp { counters, .. } => {
                        t_up = Some(start.elapsed());
                        sim_at_up = Some(sim_time);
                        build_at_up = Some(build_time);
                        up_counters = Some(counters);
                    }
                    Event::HeavySweepComplete { min_smps: m, .. } => {
                        min_smps = m;
                        done = true;
                    }
                    _ => {}
                }
            }
        }
    }
    let t_up = t_up.ok_or_else(|| anyhow!("E_BENCH_NOT_UP: the sweep ended without SUBNET UP"))?;
    let perf = if a.perf {
        Some(perf_sweep(&mut fab, sm, &sw, now)?)
    } else {
        None
    };
    let c = up_counters.unwrap_or_default();
    let t_disc = t_disc.unwrap_or_default();
    let t_lids = t_lids.unwrap_or(t_disc);
    let t_rs = t_route_start.unwrap_or(t_lids);
    let t_re = t_route_end.unwrap_or(t_rs);
    let sim_up = sim_at_up.unwrap_or(sim_time);
    let build_up = build_at_up.unwrap_or(build_time);
    let fabric_up = sim_up.saturating_sub(build_up);
    let per_smp_us = |d: std::time::Duration| {
        let n = c.total().max(1) as f64;
        (d.as_secs_f64() * 1e6 / n * 1000.0).round() / 1000.0
    };
    let peak = runner::peak_rss_bytes();
    let by: serde_json::Map<String, serde_json::Value> = c
        .nonzero()
        .map(|(a, m, n)| (format!("{a}.{m}"), serde_json::json!(n)))
        .collect();
    let sim = &fab.accounting().counters;
    let report = serde_json::json!({
        "topology": a.topology,
        "nodes": disc.0,
        "switches": disc.1,
        "links": disc.2,
        "engine": engine,
        "refusals": refusals,
        "workers": workers,
        "setup_ms": setup_ms,
        "subnet_up_ms": ms(t_up),
        "discovery_ms": ms(t_disc),
        "lids_ms": ms(t_rs.saturating_sub(t_disc)),
        "routing_ms": ms(t_re.saturating_sub(t_rs)),
        "programming_ms": ms(t_up.saturating_sub(t_re)),
        "virtual_ms": now as f64 / 1e6,
        "sim_ms": ms(sim_up),
        "sim_fabric_ms": ms(fabric_up),
        "sim_build_ms": ms(build_up),
        "sim_us_per_smp": per_smp_us(sim_up),
        "sim_fabric_us_per_smp": per_smp_us(fabric_up),
        "sm_ms": ms(t_up.saturating_sub(sim_up).saturating_sub(t_re.saturating_sub(t_rs))),
        "smps_sent": c.total(),
        "smps_min": min_smps,
        "discovery_smps": disc.3,
        "discovery_smps_min": disc.4,
        "lft_blocks": lft_blocks,
        "smps_by_attr_method": by,
        "directed": c.directed,
        "lid_routed": c.lid_routed,
        "timeouts": c.timeouts,
        "sim_hops": sim.hops,
        "sim_dropped_vl15": sim.dropped_vl15,
        "turns": turns,
        "peak_rss_bytes": peak,
        "peak_rss_mb": peak.map(|b| (b as f64 / 1048576.0 * 10.0).round() / 10.0),
    });
    let mut report = report;
    if let Some(p) = &perf {
        report["perf"] = serde_json::json!({
            "ports": p.stats.ports, "failed": p.stats.failed, "mads": p.stats.mads,
            "clears": p.stats.clears, "virtual_ms": p.stats.duration as f64 / 1e6,
            "wall_ms": ms(p.wall), "us_per_mad": p.us_per_mad(),
        });
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "SUBNET UP in {:.1} ms (discovery {:.1}, lids {:.1}, routing {:.1} [{engine}], programming {:.1})",
            ms(t_up),
            ms(t_disc),
            ms(t_rs.saturating_sub(t_disc)),
            ms(t_re.saturating_sub(t_rs)),
            ms(t_up.saturating_sub(t_re)),
        );
        println!(
            "fabric: {} nodes, {} switches, {} links; setup {setup_ms:.1} ms",
            disc.0, disc.1, disc.2
        );
        println!(
            "time split: simulator (and SMP building) {:.1} ms (fabric {:.1}, building {:.1}), routing {:.1} ms, SM and driver {:.1} ms",
            ms(sim_up),
            ms(fabric_up),
            ms(build_up),
            ms(t_re.saturating_sub(t_rs)),
            ms(t_up
                .saturating_sub(sim_up)
                .saturating_sub(t_re.saturating_sub(t_rs)))
        );
        println!("SMPs: {} sent, minimum {min_smps}", c.total());
        for (a, m, n) in c.nonzero() {
            println!("  {a:<22} {m:<11} {n}");
        }
        if let Some(p) = peak {
            println!("peak RSS: {:.1} MB", p as f64 / 1048576.0);
        }
        if let Some(p) = &perf {
            println!(
                "counter sweep: {} ports read ({} given up), {} MADs, {} clears; {:.1} ms virtual, {:.1} ms wall ({:.2} us per MAD)",
                p.stats.ports,
                p.stats.failed,
                p.stats.mads,
                p.stats.clears,
                p.stats.duration as f64 / 1e6,
                ms(p.wall),
                p.us_per_mad()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One counter sweep's figures.
struct PerfRun {
    stats: sm_core::perf::PerfSweepStats,
    wall: std::time::Duration,
}

impl PerfRun {
    fn us_per_mad(&self) -> f64 {
        let n = self.stats.mads.max(1) as f64;
        (self.wall.as_secs_f64() * 1e6 / n * 1000.0).round() / 1000.0
    }
}

/// One counter sweep of the performance manager over the fabric the sweeper brought up:
/// its GMPs from the SM's port through the simulated fabric to every node's PMA and back.
fn perf_sweep(
    fab: &mut SimFabric,
    sm: fabric_sim::AttachId,
    sw: &Sweeper,
    mut now: VTime,
) -> anyhow::Result<PerfRun> {
    use sm_core::perf::{PerfConfig, PerfEvent, PerfManager};
    let start = Instant::now();
    let mut p = PerfManager::new(PerfConfig::default());
    p.set_fabric(now, sw.perf_targets(), true);
    loop {
        if p.poll_timeout().is_some_and(|t| t <= now) {
            p.handle_timeout(now);
        }
        while let Some(tx) = p.poll_transmit(now) {
            fab.send_gmp(now, sm, tx.dlid, fabric::PKey(0xFFFF), &tx.mad)
                .map_err(|e| anyhow!("E_BENCH_SIM: {e}"))?;
        }
        while let Some(g) = fab.poll_recv_gmp(sm) {
            p.handle_gmp(now, &g.mad);
        }
        while let Some(e) = p.poll_event() {
            if let PerfEvent::SweepDone(stats) = e {
                return Ok(PerfRun {
                    stats,
                    wall: start.elapsed(),
                });
            }
        }
        let next = [fab.next_event_time(), p.poll_timeout()]
            .into_iter()
            .flatten()
            .min()
            .ok_or_else(|| anyhow!("E_BENCH_STALL: the counter sweep has nothing scheduled"))?;
        now = now.max(next);
        fab.run_until(now);
    }
}
