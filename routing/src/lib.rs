//! `routing` — Quorum SM's unicast routing: pure functions from a [`RoutingInput`]
//! (switches with numbered ports, links, end ports with LIDs and LMC, the SM's port) to one
//! linear forwarding table per switch ([`Lfts`]) plus the hop counts used.
//!
//! Engines ([`Engine`]): `minhop` ([`MinHop`]), `updn` ([`UpDown`]), `ftree`
//! ([`FatTree`]), `torus-2QoS` ([`Torus2Qos`]: dimension-order routing with datelines on
//! tori and meshes, see [`torus`]) and `dfsssp` ([`Dfsssp`]: balanced shortest paths on any
//! topology, credit loops broken by layering the paths onto VLs, each switch pair's SL in
//! [`Routing::path_sl`] for the SA), chosen by name with an OpenSM-style fallback chain
//! ([`route_with_chain`]). The work is sharded ([`split`], [`Plan::compute_hops`],
//! [`Plan::compute`], [`merge`]) so workers compute parts independently with a bit-identical
//! result for any worker count; [`route`] is the sequential reference driver and
//! [`route_incremental`] keeps still-valid entries of previous tables. [`metrics`] measures
//! route quality (hops, link loads, channel-dependency cycles, loops) and [`ibroute`] reads
//! and writes the text `ibroute` prints, so OpenSM's tables can be measured the same way.
//!
//! This crate is pure: it must never do IO, read a clock, spawn a thread or use unseeded
//! randomness. Parallelism belongs to the caller, through [`Executor`].

pub mod cdg;
pub mod dfsssp;
pub mod engine;
pub mod error;
pub mod ftree;
pub mod ftree_balance;
pub mod hops;
pub mod ibroute;
pub mod input;
pub mod lft;
pub mod mcast;
pub mod metrics;
mod select;
pub mod sl;
pub mod torus;
pub mod updn;

pub use cdg::{CdgReport, PathVls, VlCdg};
pub use dfsssp::Dfsssp;
pub use engine::{
    ChainOutcome, Engine, EngineOptions, Executor, FatTree, Hints, MinHop, Plan, Routing,
    Sequential, Shard, ShardResult, UpDown, engine_by_name, merge, route, route_incremental,
    route_on, route_plan, route_with_chain, split,
};
pub use error::{Refusal, RoutingError};
pub use hops::{HopShard, HopTable};
pub use input::{
    Dest, EndPort, LidAssignment, Peer, PortLids, RoutingInput, SwitchInfo, assign_lids_sequential,
};
pub use lft::{BLOCK_LIDS, Lfts, NO_ROUTE, SwitchLft, changed_blocks};
pub use sl::{EngineSl2Vl, PathSl, SlVlTable};
pub use torus::Torus2Qos;
