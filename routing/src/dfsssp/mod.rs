//! `dfsssp`: deadlock-free single-source shortest-path routing for any topology, after
//! DFSSSP (Domke, Hoefler, Nagel: "Deadlock-Free Oblivious Routing for Arbitrary
//! Topologies", IPDPS 2011). Written from the paper's description, not from OpenSM's code.
//!
//! Two stages:
//! 1. **Balanced shortest paths** ([`paths`]): destinations in OpenSM's order
//!    ([`RoutingInput::routing_order`]), every used LID (end ports and switch LIDs), in
//!    units (a few LIDs of one destination switch share a tree). For each unit a
//!    shortest-path tree towards its switch under per-channel weights: every switch
//!    forwards to a neighbour one hop closer, the one with the least accumulated weight
//!    from there (a fixed hash of (LID, switch, port) on a tie). Paths stay minimal in
//!    hops; weights only choose among shortest paths. After a unit, every channel's weight
//!    grows by the number of end ports whose route crosses it, so later units avoid busy
//!    channels. Units go in fixed batches of [`paths::LANES`] lanes that see the weights
//!    of the batch's start plus their own increments: the lanes run in parallel, then the
//!    weights are updated, so the result is the same for any worker or shard count.
//!    Exception: switches without end ports (management traffic only) are routed on the
//!    shortest up*down* paths of the up/down orientation, which keeps fat trees (and any
//!    fabric whose host routes are up*down*) on one layer.
//! 2. **Layers** ([`layers`]): each (source switch, destination switch) pair gets one SL,
//!    its layer. A pair's path is the union of the routes from the source switch to every
//!    LID of the destination switch, on the pair's SL at every hop (SL n on VL n on every
//!    port, [`EngineSl2Vl::identity`]). Pairs are placed one by one, in a fixed order, on
//!    a layer whose channel dependency graph stays acyclic with the pair's dependencies
//!    added (incremental cycle detection with a dynamic topological order): first the
//!    layer of the pair's next switch towards the destination, where only the first hop's
//!    dependencies are new, else the lowest that fits. When more than
//!    [`EngineOptions::max_layers`] layers are needed the routes are recomputed with fewer
//!    LID groups per destination switch and ties to the lowest port ([`GROUP_STEPS`]:
//!    fewer distinct routes per pair, turning alike);
//!    after the last step the engine refuses with [`RoutingError::TooManyLayers`]
//!    (`ROUTE-E-LAYERS`).
//!
//! **Why it cannot deadlock.** A packet keeps its SL from source to destination and the
//! SL-to-VL tables map SL n to VL n on every port, so a packet of layer n only ever holds
//! and waits for buffers of VL n: the channel dependency graph over (channel, VL) vertices
//! is the disjoint union of the layers' graphs, with no edge between layers. Each layer's
//! graph holds exactly the dependencies of the pairs placed on it, and a pair is placed only
//! where the graph stays acyclic, so every layer's graph is acyclic and so is the union
//! (Dally and Seitz: an acyclic channel dependency graph means no credit loop). Every
//! switch injects (its port 0 sends GMPs) and is a pair's source, so the traffic of a
//! switch in the middle of another pair's path is its own pair, on its own SL, exactly as
//! [`crate::cdg::check`] follows it; that check still runs after routing
//! ([`crate::route_with_chain`]) and must agree.
//!
//! The SA answers a PathRecord between two end ports with the SL of their switches' pair
//! ([`Routing::path_sl`]). When one layer suffices (fat trees) the routing needs no VL of
//! its own and carries neither SLs nor SL-to-VL tables: the SA's SL and the QoS tables
//! stay free, as with min-hop, up/down and fat-tree.
//!
//! The hop table of the [`Routing`] holds plain shortest switch hops: every route to a
//! switch with end ports has exactly that length; routes to switches without end ports
//! (up*down*) may be longer. Incremental routing is not offered: every run is complete,
//! since the weights depend on every earlier destination.

pub mod layers;
pub mod paths;

use crate::engine::{Custom, Engine, EngineOptions, Executor, Plan, Routing};
use crate::error::RoutingError;
use crate::hops;
use crate::input::RoutingInput;
use crate::lft::Lfts;
use crate::sl::{EngineSl2Vl, PathSl};
use std::sync::Arc;

/// Layers allowed by default ([`EngineOptions::max_layers`]): VLs 0-7.
pub const DEFAULT_MAX_LAYERS: u8 = 8;
/// The most layers an SL can name.
pub const MAX_SLS: u8 = 16;

/// The DFSSSP-style engine (see the [module documentation](self)).
#[derive(Clone, Copy, Debug)]
pub struct Dfsssp {
    /// Layers (SLs = VLs) allowed; more needed is a refusal. Clamped to 1..=16.
    pub max_layers: u8,
}

impl Default for Dfsssp {
    fn default() -> Dfsssp {
        Dfsssp {
            max_layers: DEFAULT_MAX_LAYERS,
        }
    }
}

impl Dfsssp {
    /// The engine with the layer limit of `opts`.
    pub fn from_options(opts: &EngineOptions) -> Dfsssp {
        Dfsssp {
            max_layers: opts.max_layers,
        }
    }
}

/// What the dfsssp plan carries into [`route`].
#[derive(Clone, Debug)]
pub(crate) struct DfssspPlan {
    pub(crate) max_layers: u8,
}

impl Engine for Dfsssp {
    fn name(&self) -> &'static str {
        "dfsssp"
    }
    fn plan(&self, _input: &RoutingInput) -> Result<Plan, RoutingError> {
        Ok(Plan {
            name: "dfsssp",
            dirs: None,
            ftree: None,
            custom: Some(Custom::Dfsssp(DfssspPlan {
                max_layers: self.max_layers.clamp(1, MAX_SLS),
            })),
        })
    }
}

/// Routes tried in turn (see [`paths`]): (LID groups per destination switch, ties spread
/// by a hash). 4 groups with spread ties balance best; one group with ties to the lowest
/// port makes the routes of a switch pair one path that turns alike with its neighbours,
/// so fewer layers are needed (a 6x6x6 torus fits 8 layers only so).
pub const GROUP_STEPS: [(usize, bool); 2] = [(4, true), (1, false)];

/// Routes: plain shortest hop counts (sharded), balanced shortest-path trees per
/// destination (batched), then the layering of switch pairs onto SLs. When the layers do
/// not suffice, the routes are recomputed with fewer LID groups per destination switch
/// ([`GROUP_STEPS`]); the last attempt's refusal is the engine's.
pub(crate) fn route<X: Executor>(
    plan: &DfssspPlan,
    input: &RoutingInput,
    exec: &X,
    shards: usize,
) -> Result<Routing, RoutingError> {
    let hops = hops::plain_table(input, exec, shards)?;
    // The up/down orientation: the layering's starting order, and the up*down* routes of
    // switch-only destinations. A fabric up/down cannot orient (disconnected) gets plain
    // shortest routes everywhere and an index order.
    let dirs = crate::updn::find_roots(input, &[])
        .and_then(|roots| crate::updn::directions(input, &roots))
        .ok();
    let key: Vec<u32> = match &dirs {
        Some(d) => d.key.clone(),
        None => (0..input.num_switches() as u32).collect(),
    };
    let attempt = |&(groups, spread): &(usize, bool), last: bool| {
        let tables = paths::route_paths(input, &hops, dirs.as_ref(), groups, spread, exec);
        let l = layers::assign(
            input,
            &tables,
            &hops,
            &key,
            exec,
            shards,
            plan.max_layers,
            last,
        )?;
        Ok::<_, RoutingError>((tables, l))
    };
    let (&final_step, earlier) = GROUP_STEPS
        .split_last()
        .ok_or(RoutingError::TooManyLayers {
            engine: "dfsssp".to_string(),
            needed: 0,
            allowed: plan.max_layers,
        })?;
    let (tables, layering) = match earlier.iter().find_map(|step| attempt(step, false).ok()) {
        Some(done) => done,
        None => attempt(&final_step, true)?,
    };
    let guids: Vec<_> = input.switches.iter().map(|s| s.guid).collect();
    let n = guids.len();
    let layered = layering.sl.iter().any(|&sl| sl != 0);
    let mut path_sl = PathSl::new(&guids);
    for (k, &sl) in layering.sl.iter().enumerate() {
        if sl != 0 {
            path_sl.set(guids[k / n], guids[k % n], sl);
        }
    }
    let lfts = Lfts::from_tables(input, tables);
    Ok(Routing {
        engine: "dfsssp",
        lfts,
        hops,
        path_sl: layered.then(|| Arc::new(path_sl)),
        sl2vl: layered.then(|| Arc::new(EngineSl2Vl::identity())),
    })
}
