//! `torus-2QoS`: dimension-order routing for tori and meshes with datelines, two VLs per
//! ring (OpenSM's torus-2QoS idea, without its configuration file).
//!
//! **Shape.** The coordinate system (dimensions, ring sizes, every switch's coordinates,
//! which ports go `+`/`-` in which dimension) is recognised from the switch graph alone
//! ([`recognise()`]): 1-D rings, 2-D and 3-D (up to 4-D) tori and meshes, ring sizes >= 3.
//! Rings of 4 are squares themselves (a 4x4x4 torus is the hypercube Q6), so the pairing
//! of their directions into dimensions is one of several equivalent ones; rings of 2 (one
//! link) are refused. A topology that is not a torus or mesh is refused with
//! [`RoutingError::NotATorus`] (`ROUTE-E-NOT-TORUS`) so a chain moves on.
//!
//! **Routes.** Dimension order: dimension 0, then 1, then 2; in each the shorter way round,
//! `+` on a tie (ring size k even, distance k/2). Every switch has an entry towards every
//! used LID, end ports and switch LIDs. Among parallel links to the same next switch the
//! least-loaded port (end-port destinations counted, lowest port on a tie) is taken.
//!
//! **Datelines.** In every wrapped dimension `d` the dateline is the link between
//! coordinates `k-1` and `0`. A (source switch, destination switch) pair's SL has bit `d`
//! set iff its dimension-`d` segment crosses the dateline. A switch output port in
//! dimension `d` maps SL `s` to VL `(s >> d) & 1`; host ports and mesh dimensions map every
//! SL to VL 0. Two VLs, SLs `0 .. 2^dims`.
//!
//! **Why no deadlock.** Along a path the dimension never decreases, and within one
//! dimension the path moves one way round one ring on one VL (the VL is the pair's SL bit
//! `d`, fixed for the whole segment, whichever switch injects). So a cycle of channel
//! dependencies would have to stay on one ring, one direction, one VL, and go all the way
//! round it. On VL 0 only segments that avoid the dateline link travel: their dependencies
//! form a line, which has no cycle. On VL 1 only segments that cross it travel, each at
//! most floor(k/2) hops long: the dependency from channel `m = floor(k/2) - 1` to channel
//! `m + 1` (channel `i` leaves coordinate `i` going `+`, the dateline is channel `k-1`)
//! would need a segment holding channels `m`, `m+1` and `k-1`, at least
//! `min(k - m, m + 3) > floor(k/2)` hops long, so no chain goes all the way round (the
//! `-` direction is the mirror image). Mesh dimensions are lines on VL 0.
//!
//! **A failed link.** A ring that lost one link is routed the other way round for exactly
//! the pairs whose segment used that link; their SL bit follows whether the new segment
//! crosses the dateline. Every other pair keeps its route and SL. On a ring missing a link
//! no dependency chain can go all the way round, whatever the segment lengths. Rings are
//! independent: several failed links are fine as long as no ring lost two. The
//! coordinate system is canonical (origin at the lowest GUID, orientation and dimension
//! order by GUIDs), so it does not move when a link fails. Two failed links in one ring, a
//! failed link in a mesh line, or a failed switch are refused with
//! [`RoutingError::TorusFaults`] (`ROUTE-E-TORUS-FAULTS`). A 1-D ring that lost a link is
//! a line: it is routed as a mesh (SL 0), so its pairs' SLs do change.
//!
//! The routing is plain arithmetic on coordinates; LFTs are computed per source switch
//! through the [`Executor`], so the result is identical for any shard count.

mod frames;
pub mod recognise;
pub mod route;

pub use recognise::{Shape, recognise};

use crate::engine::{Custom, Engine, Executor, Plan, Routing, ShardResult, merge, split};
use crate::error::RoutingError;
use crate::hops;
use crate::input::RoutingInput;
use std::sync::Arc;

/// The engine's name, OpenSM's.
pub const NAME: &str = "torus-2QoS";

/// Dimension-order routing with datelines for tori and meshes (see the module doc).
#[derive(Clone, Copy, Debug)]
pub struct Torus2Qos {
    /// Data VLs every switch-to-switch link operates ([`crate::EngineOptions::max_layers`]):
    /// a torus needs 2 (a dateline moves a path to VL 1); fewer is a refusal
    /// (`ROUTE-E-LAYERS`), a mesh needs 1.
    pub max_vls: u8,
}

impl Default for Torus2Qos {
    fn default() -> Torus2Qos {
        Torus2Qos {
            max_vls: crate::dfsssp::DEFAULT_MAX_LAYERS,
        }
    }
}

/// The plan: the recognised shape.
#[derive(Clone, Debug)]
pub(crate) struct TorusPlan {
    shape: Shape,
}

impl Engine for Torus2Qos {
    fn name(&self) -> &'static str {
        NAME
    }

    fn plan(&self, input: &RoutingInput) -> Result<Plan, RoutingError> {
        let shape = recognise(input)?;
        let needed = if shape.wrapped.iter().any(|&w| w) {
            2
        } else {
            1
        };
        if usize::from(self.max_vls) < needed {
            return Err(RoutingError::TooManyLayers {
                engine: NAME.to_string(),
                needed,
                allowed: self.max_vls,
            });
        }
        Ok(Plan {
            name: NAME,
            dirs: None,
            ftree: None,
            custom: Some(Custom::Torus(Box::new(TorusPlan { shape }))),
        })
    }
}

impl TorusPlan {
    /// LFTs per shard of source switches on `exec`; SLs, SL-to-VL tables and plain
    /// shortest hop counts alongside.
    pub(crate) fn route<X: Executor>(
        &self,
        input: &RoutingInput,
        exec: &X,
        shards: usize,
    ) -> Result<Routing, RoutingError> {
        let hops = hops::plain_table(input, exec, shards)?;
        let shards = split(input, shards);
        let results = exec.map(shards.len(), |i| ShardResult {
            switches: shards[i].switches.clone(),
            lfts: route::lfts(input, &self.shape, shards[i].switches.clone()),
        });
        Ok(Routing {
            engine: NAME,
            lfts: merge(input, results),
            hops,
            path_sl: Some(Arc::new(route::path_sl(input, &self.shape))),
            sl2vl: Some(Arc::new(route::sl2vl(input, &self.shape))),
        })
    }
}
