//! Engines, the shard/compute/merge pipeline, and the reference drivers.
//!
//! Routing runs in two sharded phases over a [`Plan`] the engine builds:
//! 1. hop tables: [`Plan::compute_hops`] per shard of *destination* switches (one BFS each),
//!    merged by [`Plan::merge_hops`];
//! 2. forwarding tables: [`Plan::compute`] per shard of *source* switches. Each switch's LFT
//!    is computed on its own, destinations in OpenSM's order
//!    ([`RoutingInput::routing_order`]), with that switch's own per-port counters (as OpenSM's per-switch counters do), so the merged
//!    result ([`merge`]) is the same bit for bit whatever the number of shards or workers.

use crate::cdg::{self, CdgReport, PathVls, VlCdg};
use crate::dfsssp::{Dfsssp, DfssspPlan};
use crate::error::{Refusal, RoutingError};
use crate::ftree::{self, FtreePlan};
use crate::ftree_balance::Balance;
use crate::hops::{self, Directions, HopShard, HopTable};
use crate::input::RoutingInput;
use crate::lft::{Lfts, SwitchLft, changed_blocks};
use crate::select;
use fabric::Guid;
use std::collections::HashMap;
use std::ops::Range;

/// A routing engine: checks that a topology fits and builds the plan the shared pipeline runs.
pub trait Engine: Send + Sync {
    /// The OpenSM-style name ("minhop", "updn", "ftree", "dfsssp").
    fn name(&self) -> &'static str;
    /// Builds the plan, or refuses the topology with a typed reason.
    fn plan(&self, input: &RoutingInput) -> Result<Plan, RoutingError>;
}

/// Min-hop: every shortest path is allowed; among equal-hop output ports a switch takes the
/// one that carries the fewest end-port destinations so far (lowest port on a tie),
/// destinations in OpenSM's order ([`RoutingInput::routing_order`]); routes to switch LIDs
/// are not counted. With LMC > 0 the LIDs of one port prefer next switches its other LIDs do
/// not use, and ties rotate from the port the previous LID took. On the same LIDs the
/// tables equal OpenSM 3.3.23's minhop entry for entry (tested on ibsim).
#[derive(Clone, Copy, Debug, Default)]
pub struct MinHop;

/// Up/down: switches ranked from roots (given or detected, see [`crate::updn`]); only
/// up*down* paths, the shortest such, balanced like min-hop. Deadlock-free on any topology.
#[derive(Clone, Debug, Default)]
pub struct UpDown {
    /// Root switch GUIDs; empty = detect automatically.
    pub roots: Vec<Guid>,
}

/// Fat-tree: detects levels, refuses non-fat-trees, routes so that shift permutations are
/// contention-free on a complete fat tree (see [`crate::ftree`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct FatTree;

/// Options for engines chosen by name.
#[derive(Clone, Debug)]
pub struct EngineOptions {
    /// Root GUIDs for up/down (empty = automatic).
    pub updn_roots: Vec<Guid>,
    /// Accept a routing whose channel dependency graph has a cycle (a possible deadlock)
    /// instead of refusing it and trying the next engine of the chain; the outcome then
    /// carries a warning. Off by default.
    pub accept_credit_loops: bool,
    /// Layers (SLs, mapped one to one onto VLs) a layered engine (dfsssp) may use to break
    /// credit loops; more needed is a refusal (`ROUTE-E-LAYERS`). Default 8: data VLs 0-7,
    /// what most HCAs and switches operate. At most 16 (SLs are 4 bits).
    pub max_layers: u8,
}

impl Default for EngineOptions {
    fn default() -> EngineOptions {
        EngineOptions {
            updn_roots: Vec::new(),
            accept_credit_loops: false,
            max_layers: crate::dfsssp::DEFAULT_MAX_LAYERS,
        }
    }
}

/// The engine with an OpenSM name.
pub fn engine_by_name(name: &str, opts: &EngineOptions) -> Result<Box<dyn Engine>, RoutingError> {
    match name {
        "minhop" => Ok(Box::new(MinHop)),
        "updn" => Ok(Box::new(UpDown {
            roots: opts.updn_roots.clone(),
        })),
        "ftree" => Ok(Box::new(FatTree)),
        crate::torus::NAME => Ok(Box::new(crate::torus::Torus2Qos {
            max_vls: opts.max_layers,
        })),
        "dfsssp" => Ok(Box::new(Dfsssp {
            max_layers: opts.max_layers,
        })),
        other => Err(RoutingError::UnknownEngine(other.to_string())),
    }
}

impl Engine for MinHop {
    fn name(&self) -> &'static str {
        "minhop"
    }
    fn plan(&self, _input: &RoutingInput) -> Result<Plan, RoutingError> {
        Ok(Plan {
            name: "minhop",
            dirs: None,
            ftree: None,
            custom: None,
        })
    }
}

impl Engine for UpDown {
    fn name(&self) -> &'static str {
        "updn"
    }
    fn plan(&self, input: &RoutingInput) -> Result<Plan, RoutingError> {
        let roots = crate::updn::find_roots(input, &self.roots)?;
        let dirs = crate::updn::directions(input, &roots)?;
        Ok(Plan {
            name: "updn",
            dirs: Some(dirs),
            ftree: None,
            custom: None,
        })
    }
}

impl Engine for FatTree {
    fn name(&self) -> &'static str {
        "ftree"
    }
    fn plan(&self, input: &RoutingInput) -> Result<Plan, RoutingError> {
        let (ft, dirs) = ftree::plan(input)?;
        Ok(Plan {
            name: "ftree",
            dirs: Some(dirs),
            ftree: Some(ft),
            custom: None,
        })
    }
}

/// What an engine decided before the sharded phases: path rule and tie-break state.
#[derive(Clone, Debug)]
pub struct Plan {
    pub(crate) name: &'static str,
    /// None: any shortest path (min-hop); Some: up*down* paths only.
    pub(crate) dirs: Option<Directions>,
    pub(crate) ftree: Option<FtreePlan>,
    /// Engines with their own algorithm instead of the hop-table / selection phases.
    pub(crate) custom: Option<Custom>,
}

/// The plans of engines that compute their tables with their own algorithm rather than the
/// shared hop-table and port-selection phases. Each variant routes through
/// [`Custom::route`], must give the same result for any executor and shard count, and
/// returns its hop table as plain shortest switch hops when its paths are shortest.
#[derive(Clone, Debug)]
pub(crate) enum Custom {
    /// Dimension-order routing with datelines ([`crate::torus`]).
    Torus(Box<crate::torus::TorusPlan>),
    /// Balanced shortest paths layered onto VLs ([`crate::dfsssp`]).
    Dfsssp(DfssspPlan),
}

impl Custom {
    fn route<X: Executor>(
        &self,
        input: &RoutingInput,
        exec: &X,
        shards: usize,
        _prev: Option<&Lfts>,
    ) -> Result<Routing, RoutingError> {
        match self {
            Custom::Torus(t) => t.route(input, exec, shards),
            // Always a full computation: weights depend on every earlier destination, so
            // keeping old entries would change the balance and the layering.
            // On the switches in GUID order: the tables and SLs must not depend on the
            // order of discovery (a new master discovers from its own port and must find
            // the same routing, writing nothing).
            Custom::Dfsssp(p) => match input.by_guid() {
                None => crate::dfsssp::route(p, input, exec, shards),
                Some(canon) => {
                    let mut r = crate::dfsssp::route(p, &canon, exec, shards)?;
                    let mut by_guid: HashMap<Guid, SwitchLft> =
                        r.lfts.switches.drain(..).map(|s| (s.guid, s)).collect();
                    r.lfts.switches = input
                        .switches
                        .iter()
                        .filter_map(|s| by_guid.remove(&s.guid))
                        .collect();
                    r.hops = hops::plain_table(input, exec, shards)?;
                    Ok(r)
                }
            },
        }
    }
}

/// A unit of work: a contiguous range of switch indices (destination switches in phase 1,
/// source switches in phase 2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shard {
    /// Dense switch indices covered.
    pub switches: Range<usize>,
}

/// Phase-2 result: the LFTs of a range of source switches.
#[derive(Clone, Debug)]
pub struct ShardResult {
    /// Source switches covered.
    pub switches: Range<usize>,
    /// One LFT per switch of the range, in order.
    pub lfts: Vec<Vec<u8>>,
}

/// Previous LFTs to keep where still valid (incremental routing), matched by switch GUID.
#[derive(Clone, Debug)]
pub struct Hints<'a> {
    per_switch: Vec<Option<&'a [u8]>>,
}

impl<'a> Hints<'a> {
    /// Matches `prev` to the switches of `input` by GUID. LIDs are assumed unchanged.
    pub fn new(input: &RoutingInput, prev: &'a Lfts) -> Hints<'a> {
        let by_guid: HashMap<Guid, &'a [u8]> = prev
            .switches
            .iter()
            .map(|s| (s.guid, s.ports.as_slice()))
            .collect();
        Hints {
            per_switch: input
                .switches
                .iter()
                .map(|s| by_guid.get(&s.guid).copied())
                .collect(),
        }
    }

    /// The previous table of switch `s`, if it had one.
    pub(crate) fn table(&self, s: usize) -> Option<&'a [u8]> {
        self.per_switch.get(s).copied().flatten()
    }
}

/// Splits the switches into `n` contiguous shards of near-equal size (at least one shard,
/// at most one per switch). The same shards serve both phases.
pub fn split(input: &RoutingInput, n: usize) -> Vec<Shard> {
    let s = input.num_switches();
    let n = n.clamp(1, s.max(1));
    (0..n)
        .map(|i| Shard {
            switches: (i * s / n)..((i + 1) * s / n),
        })
        .collect()
}

impl Plan {
    /// The engine that made this plan.
    pub fn engine(&self) -> &'static str {
        self.name
    }

    /// Phase 1 for one shard of destination switches.
    pub fn compute_hops(&self, input: &RoutingInput, shard: &Shard) -> HopShard {
        hops::compute_hop_shard(input, self.dirs.as_ref(), shard.switches.clone())
    }

    /// Merges every phase-1 shard into the hop table.
    pub fn merge_hops(
        &self,
        input: &RoutingInput,
        shards: Vec<HopShard>,
    ) -> Result<HopTable, RoutingError> {
        hops::merge_hop_shards(input.num_switches(), shards)
    }

    /// Between the phases, once: the fat-tree engine's balanced choices for destinations
    /// on degraded leaves ([`crate::ftree_balance`]); None for other engines and complete
    /// trees.
    pub fn balance(
        &self,
        input: &RoutingInput,
        hops: &HopTable,
        hints: Option<&Hints<'_>>,
    ) -> Option<Balance> {
        crate::ftree_balance::balance(self, input, hops, hints)
    }

    /// Phase 2 for one shard of source switches. With `hints`, an entry of the previous LFT
    /// is kept whenever its port is still one this engine may choose (valid and minimal).
    /// `balance` is [`Plan::balance`]'s result.
    pub fn compute(
        &self,
        input: &RoutingInput,
        hops: &HopTable,
        shard: &Shard,
        hints: Option<&Hints<'_>>,
        balance: Option<&Balance>,
    ) -> ShardResult {
        select::compute_lfts(self, input, hops, shard.switches.clone(), hints, balance)
    }
}

/// Assembles phase-2 results (any order) into one LFT per switch.
pub fn merge(input: &RoutingInput, mut results: Vec<ShardResult>) -> Lfts {
    results.sort_by_key(|r| r.switches.start);
    Lfts::from_tables(input, results.into_iter().flat_map(|r| r.lfts))
}

/// Runs independent jobs; the crate's own [`Sequential`] runs them in order on the caller's
/// thread, binaries plug in thread pools or actors.
pub trait Executor {
    /// Runs `f(0) .. f(jobs - 1)` and returns their results in job order.
    fn map<R: Send, F: Fn(usize) -> R + Sync>(&self, jobs: usize, f: F) -> Vec<R>;
}

/// The reference executor: one job after another on the calling thread.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sequential;

impl Executor for Sequential {
    fn map<R: Send, F: Fn(usize) -> R + Sync>(&self, jobs: usize, f: F) -> Vec<R> {
        (0..jobs).map(f).collect()
    }
}

/// The result of routing.
#[derive(Clone, Debug)]
pub struct Routing {
    /// The engine that produced it.
    pub engine: &'static str,
    /// One LFT per switch.
    pub lfts: Lfts,
    /// Switch-to-switch hop counts the engine used.
    pub hops: HopTable,
    /// The SL each (source switch, destination switch) pair must use (engines that layer
    /// paths onto VLs); None: SL free (min-hop, up/down, fat-tree).
    pub path_sl: Option<std::sync::Arc<crate::PathSl>>,
    /// The SL-to-VL tables `path_sl` relies on (set together with it).
    pub sl2vl: Option<std::sync::Arc<crate::EngineSl2Vl>>,
}

impl Routing {
    /// How the deadlock check must place paths on VLs for this routing.
    pub fn path_vls(&self) -> PathVls {
        match (&self.path_sl, &self.sl2vl) {
            (Some(sl), Some(map)) => PathVls::Layered {
                sl: sl.clone(),
                sl2vl: map.clone(),
            },
            (Some(sl), None) => PathVls::Layered {
                sl: sl.clone(),
                sl2vl: std::sync::Arc::new(crate::EngineSl2Vl::identity()),
            },
            _ => PathVls::default(),
        }
    }
}

/// Routes with one engine through the sharded pipeline on `exec`, `shards` shards per phase.
pub fn route_on<X: Executor>(
    input: &RoutingInput,
    engine: &dyn Engine,
    exec: &X,
    shards: usize,
    prev: Option<&Lfts>,
) -> Result<Routing, RoutingError> {
    let plan = engine.plan(input)?;
    route_plan(input, &plan, exec, shards, prev)
}

/// Runs both phases of an already built plan.
pub fn route_plan<X: Executor>(
    input: &RoutingInput,
    plan: &Plan,
    exec: &X,
    shards: usize,
    prev: Option<&Lfts>,
) -> Result<Routing, RoutingError> {
    if let Some(c) = &plan.custom {
        return c.route(input, exec, shards, prev);
    }
    let shards = split(input, shards);
    let hop_shards = exec.map(shards.len(), |i| plan.compute_hops(input, &shards[i]));
    let hops = plan.merge_hops(input, hop_shards)?;
    let hints = prev.map(|p| Hints::new(input, p));
    let balance = plan.balance(input, &hops, hints.as_ref());
    let results = exec.map(shards.len(), |i| {
        plan.compute(input, &hops, &shards[i], hints.as_ref(), balance.as_ref())
    });
    Ok(Routing {
        engine: plan.name,
        lfts: merge(input, results),
        hops,
        path_sl: None,
        sl2vl: None,
    })
}

/// The thread-free reference driver: one engine, one shard, sequential.
pub fn route(input: &RoutingInput, engine: &dyn Engine) -> Result<Routing, RoutingError> {
    route_on(input, engine, &Sequential, 1, None)
}

/// Incremental routing: keeps every entry of `prev` that is still valid and minimal for
/// the engine, recomputes the rest; returns the routing and the number of 64-LID blocks
/// that differ from `prev`.
pub fn route_incremental<X: Executor>(
    input: &RoutingInput,
    engine: &dyn Engine,
    exec: &X,
    shards: usize,
    prev: &Lfts,
) -> Result<(Routing, usize), RoutingError> {
    let r = route_on(input, engine, exec, shards, Some(prev))?;
    let changed = changed_blocks(prev, &r.lfts);
    Ok((r, changed))
}

/// The result of a fallback chain: the routing and why each earlier engine refused.
#[derive(Clone, Debug)]
pub struct ChainOutcome {
    /// The routing of the first engine that accepted.
    pub routing: Routing,
    /// Refusals of the engines tried before it, in order.
    pub refusals: Vec<Refusal>,
    /// The deadlock check of the accepted routing (per VL, switch LIDs included).
    pub cdg: CdgReport,
    /// Warnings (`ROUTE-W-CDG`: a routing with a credit loop accepted on request).
    pub warnings: Vec<String>,
}

/// Tries engines in order (like OpenSM's `-R ftree,updn,minhop`) and returns the first that
/// accepts, with the reasons of those that refused. An unknown name is an error at once.
///
/// Every routing is checked for credit loops ([`crate::cdg::check`]: the channel dependency
/// graph of each VL, routes to switch LIDs included). A routing with a cycle is refused
/// ([`RoutingError::CreditLoop`], `ROUTE-E-CDG`) and the chain moves on, unless
/// [`EngineOptions::accept_credit_loops`] is set: then it is kept with a `ROUTE-W-CDG`
/// warning.
pub fn route_with_chain<X: Executor>(
    input: &RoutingInput,
    names: &[&str],
    opts: &EngineOptions,
    exec: &X,
    shards: usize,
    prev: Option<&Lfts>,
) -> Result<ChainOutcome, RoutingError> {
    let engines = names
        .iter()
        .map(|n| engine_by_name(n, opts))
        .collect::<Result<Vec<_>, _>>()?;
    let mut refusals = Vec::new();
    for e in engines {
        let routed = route_on(input, e.as_ref(), exec, shards, prev).and_then(|routing| {
            let cdg = cdg::check_on(input, &routing.lfts, &routing.path_vls(), exec, shards);
            match cdg.first_cycle() {
                None => Ok((routing, cdg, Vec::new())),
                Some(v) => {
                    let err = credit_loop(e.name(), v);
                    if opts.accept_credit_loops {
                        let warning = format!("ROUTE-W-CDG: accepted on request: {err}");
                        Ok((routing, cdg, vec![warning]))
                    } else {
                        Err(err)
                    }
                }
            }
        });
        match routed {
            Ok((routing, cdg, warnings)) => {
                return Ok(ChainOutcome {
                    routing,
                    refusals,
                    cdg,
                    warnings,
                });
            }
            Err(reason) => refusals.push(Refusal {
                engine: e.name().to_string(),
                reason,
            }),
        }
    }
    Err(RoutingError::AllRefused(refusals))
}

fn credit_loop(engine: &str, v: &VlCdg) -> RoutingError {
    let mut cycle: Vec<&str> = v.cycle.iter().take(8).map(String::as_str).collect();
    if v.cycle.len() > 8 {
        cycle.push("...");
    }
    RoutingError::CreditLoop {
        engine: engine.to_string(),
        vl: v.vl,
        len: v.cycle.len(),
        cycle: cycle.join(" -> "),
    }
}
