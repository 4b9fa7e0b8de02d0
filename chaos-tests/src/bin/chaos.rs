//! `chaos`: run the chaos tests by hand.
//!
//! * `chaos sim --schedules 10000 --seed S`: seeded schedules S, S+1, ... on the
//!   deterministic simulation; stops at the first violation, shrinks it and prints the seed
//!   and the shortest schedule (exit 1). `--trace` prints one schedule's events.
//! * `chaos process --kills 100 --seed S`: three sm-node processes on fabric-simd with
//!   proxies between them; prints the summary table with the failover-time distribution
//!   and counts a failover slower than `--failover-bound-ms` (default 15 s) as a violation.
//!   Timing lives here, not in the tests.

use anyhow::{Context, bail};
use chaos_tests::sim::{self, RunStats, Schedule, Variant};
use clap::{Parser, Subcommand, ValueEnum};
use std::collections::BTreeMap;
use std::time::Instant;

#[derive(Parser)]
#[command(name = "chaos", about = "Chaos tests of a Quorum SM cluster")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Clone, Copy, ValueEnum)]
enum VariantArg {
    /// The real fencing rules.
    Correct,
    /// A deliberately broken driver (no lease, a deposed master keeps writing).
    Unfenced,
}

#[derive(Subcommand)]
enum Cmd {
    /// Deterministic whole-cluster simulation.
    Sim {
        /// Number of schedules.
        #[arg(long, default_value_t = 1000)]
        schedules: u64,
        /// First seed (schedule i uses seed + i).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Driver variant.
        #[arg(long, value_enum, default_value_t = VariantArg::Correct)]
        variant: VariantArg,
        /// Print the trace of the schedule of --seed and stop.
        #[arg(long)]
        trace: bool,
        /// Go on after a violation, counting violations by invariant (no shrinking).
        #[arg(long)]
        keep_going: bool,
        /// Stop on a violation matching an open finding too (default: count it).
        #[arg(long)]
        strict: bool,
    },
    /// Process level: fabric-simd + three sm-node processes.
    Process {
        /// Master kills to inject.
        #[arg(long, default_value_t = 10)]
        kills: u32,
        /// Seed of the schedule.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// sm-node binary (default: next to this one).
        #[arg(long)]
        sm_node: Option<std::path::PathBuf>,
        /// Working directory (default: a fresh one under the system temp dir).
        #[arg(long)]
        dir: Option<std::path::PathBuf>,
        /// Admin API clients reading and compare-and-setting the policy throughout; their
        /// history is checked for linearizability.
        #[arg(long, default_value_t = 0)]
        clients: u64,
        /// The broken variant: the clients read without ReadIndex (must be caught).
        #[arg(long)]
        stale_reads: bool,
        /// Disk faults among the round faults (full disk, flipped byte, lost disk; each
        /// replica's data directory on a tmpfs of its own: needs root).
        #[arg(long)]
        disk_faults: bool,
        /// A failover slower than this (ms) is a violation; 0: no bound.
        #[arg(long, default_value_t = 15_000)]
        failover_bound_ms: u64,
    },
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().cmd {
        Cmd::Sim {
            schedules,
            seed,
            variant,
            trace,
            keep_going,
            strict,
        } => {
            let variant = match variant {
                VariantArg::Correct => Variant::Correct,
                VariantArg::Unfenced => Variant::Unfenced,
            };
            if trace {
                return trace_one(seed, variant);
            }
            run_sim(schedules, seed, variant, keep_going, strict)
        }
        Cmd::Process {
            kills,
            seed,
            sm_node,
            dir,
            clients,
            stale_reads,
            disk_faults,
            failover_bound_ms,
        } => {
            let bin = match sm_node {
                Some(b) => b,
                None => std::env::current_exe()?
                    .parent()
                    .context("no directory for this binary")?
                    .join("sm-node"),
            };
            let dir = dir.unwrap_or_else(|| {
                std::env::temp_dir().join(format!("chaos-process-{}", std::process::id()))
            });
            let report = chaos_tests::process::run(&chaos_tests::process::Options {
                sm_node: bin,
                dir,
                kills,
                seed,
                clients,
                stale_reads,
                disk_faults,
                failover_bound: (failover_bound_ms > 0)
                    .then(|| std::time::Duration::from_millis(failover_bound_ms)),
                ..Default::default()
            })?;
            println!("{report}");
            if !report.violations.is_empty() {
                bail!("{} invariant violation(s)", report.violations.len());
            }
            Ok(())
        }
    }
}

fn trace_one(seed: u64, variant: Variant) -> anyhow::Result<()> {
    let s = Schedule::generate(seed);
    print!("{s}");
    let (r, lines) = sim::run_traced(&s, variant);
    for l in lines {
        println!("{l}");
    }
    match r {
        Ok(st) => {
            println!("OK {st:?}");
            Ok(())
        }
        Err(f) => bail!("{f}"),
    }
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

fn run_sim(
    n: u64,
    seed: u64,
    variant: Variant,
    keep_going: bool,
    strict: bool,
) -> anyhow::Result<()> {
    let start = Instant::now();
    let mut total = RunStats::default();
    let mut fail_by: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut ok = 0u64;
    let mut known: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    let add = |t: &mut RunStats, st: &RunStats| {
        t.actions += st.actions;
        t.steps += st.steps;
        t.crashes += st.crashes;
        t.restarts += st.restarts;
        t.pauses += st.pauses;
        t.partitions += st.partitions;
        t.net_faults += st.net_faults;
        t.fabric_faults += st.fabric_faults;
        t.policies_proposed += st.policies_proposed;
        t.reads += st.reads;
        t.transfers += st.transfers;
        t.graceful_stops += st.graceful_stops;
        t.membership_changes += st.membership_changes;
        t.group_joins += st.group_joins;
        t.disk_wipes += st.disk_wipes;
        t.mft_sets += st.mft_sets;
        t.quiet_mft_sets += st.quiet_mft_sets;
        t.masters += st.masters;
        t.failovers += st.failovers;
        t.failover_ns.extend(&st.failover_ns);
        t.quiet_takeovers += st.quiet_takeovers;
        t.sets += st.sets;
        t.checks += st.checks;
        t.foreign_sms += st.foreign_sms;
        t.foreign_master_sets += st.foreign_master_sets;
        t.rogue_sets += st.rogue_sets;
    };
    if keep_going {
        for s in seed..seed + n {
            match sim::run(&Schedule::generate(s), variant) {
                Ok(st) => {
                    ok += 1;
                    add(&mut total, &st);
                }
                Err(f) => {
                    let code = f
                        .violation
                        .what
                        .split(':')
                        .next()
                        .unwrap_or("")
                        .split_whitespace()
                        .take(8)
                        .collect::<Vec<_>>()
                        .join(" ");
                    eprintln!("seed {s}: {}", f.violation);
                    let e = fail_by.entry(code).or_insert((0, s));
                    e.0 += 1;
                }
            }
        }
    } else {
        match sim::batch(seed..seed + n, variant, !strict, |_, st| {
            add(&mut total, st);
        }) {
            Ok(sum) => {
                ok = sum.passed;
                for (k, s) in sum.known {
                    let e = known.entry(k.code()).or_insert((0, s));
                    e.0 += 1;
                }
            }
            Err(f) => {
                println!("shrunk to {} actions:", f.schedule.steps.len());
                bail!("{f}");
            }
        }
    }
    let el = start.elapsed();
    let mut fo = total.failover_ns.clone();
    fo.sort_unstable();
    let pick = |q: f64| fo.get(((fo.len() as f64 - 1.0) * q) as usize).copied();
    println!("| simulation ({variant:?}) | value |");
    println!("|---|---|");
    println!("| schedules run | {} (seeds {seed}..{}) |", n, seed + n - 1);
    println!("| schedules passed | {ok} |");
    println!(
        "| wall time | {:.1} s ({:.2} ms per schedule) |",
        el.as_secs_f64(),
        el.as_secs_f64() * 1e3 / n as f64
    );
    println!("| actions | {} |", total.actions);
    println!(
        "| faults: kill -9 / restart / SIGSTOP / partition / network chaos / fabric | {} / {} / {} / {} / {} / {} |",
        total.crashes,
        total.restarts,
        total.pauses,
        total.partitions,
        total.net_faults,
        total.fabric_faults
    );
    println!("| client policy proposals | {} |", total.policies_proposed);
    println!(
        "| linearizable reads checked / transfers / graceful stops / voters removed / group joins / disks replaced | {} / {} / {} / {} / {} / {} |",
        total.reads,
        total.transfers,
        total.graceful_stops,
        total.membership_changes,
        total.group_joins,
        total.disk_wipes
    );
    println!("| masters started | {} |", total.masters);
    println!("| faults hitting the master | {} |", total.failovers);
    if let (Some(a), Some(m), Some(b)) = (pick(0.0), pick(0.5), pick(1.0)) {
        println!(
            "| failover to SUBNET UP (virtual) min / median / p99 / max | {:.0} / {:.0} / {:.0} / {:.0} ms |",
            ms(a),
            ms(m),
            ms(pick(0.99).unwrap_or(b)),
            ms(b)
        );
    }
    println!(
        "| quiet takeovers watched (no LFT write allowed) | {} |",
        total.quiet_takeovers
    );
    println!(
        "| Sets accepted by the fabric (MFT Sets; MFT Sets in quiet takeovers) | {} ({}; {}) |",
        total.sets, total.mft_sets, total.quiet_mft_sets
    );
    println!(
        "| foreign SMs started / their Sets as MASTER accepted / rogue Sets accepted | {} / {} / {} |",
        total.foreign_sms, total.foreign_master_sets, total.rogue_sets
    );
    println!("| simulation steps | {} |", total.steps);
    println!("| invariant checks | {} |", total.checks);
    for (code, (count, first)) in &known {
        println!(
            "| failures from open finding {code} (counted, not stopping) | {count} (first seed {first}) |"
        );
    }
    for (code, (count, first)) in &fail_by {
        println!("| violations {code} | {count} (first seed {first}) |");
    }
    if !fail_by.is_empty() {
        bail!("{} schedules failed", n - ok);
    }
    Ok(())
}
