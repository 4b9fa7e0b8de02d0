//! Deterministic whole-cluster simulation: a [`Schedule`] from a seed, run by a [`World`] on
//! virtual time with the invariants checked after every step, then [`World::settle`]'s
//! convergence checks; a failing schedule is shrunk ([`shrink`]) to the fewest actions that
//! still fail.

pub mod check;
pub mod findings;
pub mod foreign;
pub mod net;
pub mod node;
pub mod reach;
pub mod schedule;
mod settle;
pub mod vports;
pub mod world;

pub use check::{Checker, Violation};
pub use schedule::{Action, Schedule, Step};
pub use world::World;

use sm_core::VTime;

/// Which driver runs the replicas.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// The real rules: Sets only within the lease, the master stops on stepping down,
    /// programming waits for the intent's commit.
    Correct,
    /// A deliberately broken driver for proving the checker: no lease, a deposed master
    /// keeps running, intents are taken as committed without the quorum.
    Unfenced,
}

/// What one run did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunStats {
    /// Schedule actions applied.
    pub actions: u64,
    /// Simulation steps.
    pub steps: u64,
    /// Replicas killed.
    pub crashes: u64,
    /// Replicas restarted.
    pub restarts: u64,
    /// Replicas paused.
    pub pauses: u64,
    /// Replicas cut off.
    pub partitions: u64,
    /// Network chaos settings applied.
    pub net_faults: u64,
    /// Link flaps, switch reboots and MAD-loss windows.
    pub fabric_faults: u64,
    /// Client policy proposals.
    pub policies_proposed: u64,
    /// Linearizable reads answered (each checked against the acknowledged writes).
    pub reads: u64,
    /// Leadership transfers asked for.
    pub transfers: u64,
    /// Graceful stops (SIGTERM) asked for.
    pub graceful_stops: u64,
    /// Voters removed.
    pub membership_changes: u64,
    /// Multicast group changes committed through the master's SA.
    pub group_joins: u64,
    /// Disks replaced (a replica restarting on an empty log).
    pub disk_wipes: u64,
    /// MulticastForwardingTable Sets the fabric accepted.
    pub mft_sets: u64,
    /// MulticastForwardingTable Sets accepted during quiet takeovers (their first heavy
    /// sweep on an unchanged fabric: a master seeded with the MFTs as programmed writes
    /// none).
    pub quiet_mft_sets: u64,
    /// Masters started.
    pub masters: u64,
    /// Faults that hit the replica holding the master.
    pub failovers: u64,
    /// Master hit -> another replica's master at SUBNET UP, virtual ns.
    pub failover_ns: Vec<VTime>,
    /// Takeovers found quiet (unchanged topology) and watched for LFT writes.
    pub quiet_takeovers: u64,
    /// Sets the fabric accepted.
    pub sets: u64,
    /// Convergence time after the faults, virtual ns.
    pub settle_ns: VTime,
    /// Invariant evaluations.
    pub checks: u64,
    /// Foreign SMs started.
    pub foreign_sms: u64,
    /// Sets of an honest foreign SM as MASTER the fabric accepted.
    pub foreign_master_sets: u64,
    /// Rogue Sets (a lying foreign SM's) the fabric accepted.
    pub rogue_sets: u64,
    /// Vport LIDs found moved at a master's SUBNET UP (see `World::vports`).
    pub vport_lid_changes: u64,
    /// LinearForwardingTable Sets accepted during quiet takeovers.
    pub quiet_lft_sets: u64,
}

/// A failed run.
#[derive(Clone, Debug)]
pub struct Failure {
    /// The schedule.
    pub schedule: Schedule,
    /// The first violation.
    pub violation: Violation,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "INVARIANT VIOLATED (seed {}): {}\n{}",
            self.schedule.seed, self.violation, self.schedule
        )
    }
}

/// Runs `s` with `variant`: its actions at their times, then healing and the convergence
/// checks.
pub fn run(s: &Schedule, variant: Variant) -> Result<RunStats, Failure> {
    run_inner(s, variant, false).0
}

/// [`run`] keeping a trace of actions, leaders, masters and sweeper events.
pub fn run_traced(s: &Schedule, variant: Variant) -> (Result<RunStats, Failure>, Vec<String>) {
    run_inner(s, variant, true)
}

fn run_inner(
    s: &Schedule,
    variant: Variant,
    trace: bool,
) -> (Result<RunStats, Failure>, Vec<String>) {
    let mut w = match World::new(&s.topology, s.seed, variant) {
        Ok(w) => w,
        Err(e) => {
            let f = Failure {
                schedule: s.clone(),
                violation: Violation {
                    at: 0,
                    what: format!("INV-SETUP {e}"),
                },
            };
            return (Err(f), Vec::new());
        }
    };
    if trace {
        w.enable_trace();
    }
    let r = drive(&mut w, s);
    (r, w.take_trace())
}

fn drive(w: &mut World, s: &Schedule) -> Result<RunStats, Failure> {
    let fail = |violation: Violation| Failure {
        schedule: s.clone(),
        violation,
    };
    // The cluster comes up first: a leader, a master, SUBNET UP.
    w.run_until(3_000 * world::MS).map_err(fail)?;
    for step in &s.steps {
        let t = w.now + VTime::from(step.after_ms) * world::MS;
        w.run_until(t).map_err(fail)?;
        w.act(&step.action).map_err(|e| {
            fail(Violation {
                at: w.now,
                what: format!("INV-SETUP action {}: {e}", step.action),
            })
        })?;
        w.stats.actions += 1;
    }
    w.settle().map_err(fail)?;
    w.stats.checks = w.checker.checks;
    Ok(w.stats.clone())
}

/// The invariant code of a violation (`INV-FENCE`, `INV-SETTLE`, ...).
pub fn code(v: &Violation) -> &str {
    v.what.split_whitespace().next().unwrap_or("")
}

/// Drops actions from a failing schedule while it still fails on the same invariant;
/// returns the shortest failure found.
pub fn shrink(f: Failure, variant: Variant) -> Failure {
    let mut best = f;
    loop {
        let mut smaller = None;
        for i in 0..best.schedule.steps.len() {
            let s = best.schedule.without(i);
            if let Err(f) = run(&s, variant)
                && code(&f.violation) == code(&best.violation)
            {
                smaller = Some(f);
                break;
            }
        }
        match smaller {
            Some(f) => best = f,
            None => return best,
        }
    }
}

/// What a batch found besides passing schedules.
#[derive(Clone, Debug, Default)]
pub struct BatchSummary {
    /// Schedules run.
    pub run: u64,
    /// Schedules that held every invariant.
    pub passed: u64,
    /// Failures matching an open defect: (finding, seed).
    pub known: Vec<(findings::Finding, u64)>,
}

/// Runs `seeds`; a failure matching an open [`findings::Finding`] is counted when
/// `tolerate_known`, any other stops the batch and is returned shrunk.
pub fn batch(
    seeds: impl Iterator<Item = u64>,
    variant: Variant,
    tolerate_known: bool,
    mut each: impl FnMut(u64, &RunStats),
) -> Result<BatchSummary, Box<Failure>> {
    let mut sum = BatchSummary::default();
    for seed in seeds {
        sum.run += 1;
        match run(&Schedule::generate(seed), variant) {
            Ok(st) => {
                sum.passed += 1;
                each(seed, &st);
            }
            Err(f) => match findings::classify(&f) {
                Some(k) if tolerate_known => sum.known.push((k, seed)),
                _ => return Err(Box::new(shrink(f, variant))),
            },
        }
    }
    Ok(sum)
}
