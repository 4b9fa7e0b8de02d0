//! `sm-node` — the Quorum SM daemon (the operator CLI is its own crate, `smctl`, which
//! reaches a daemon through the admin API only).
//!
//! This crate is glue: it owns IO (files, sockets, the fabric transports), threads and
//! clocks, and drives the pure crates (`mad`, `fabric`, `routing`, `partitions`,
//! `sm-core`, `replica`, `sa`, `views`). It must never hold SM logic that belongs in a
//! sans-IO crate, where it could not be tested on virtual time: the admin API's answers are
//! `replica::admin`'s, the SA server is `sa::SaServer`, the dashboard's data and texts are
//! `views`'.
//!
//! Actors (actix): [`master::MasterActor`] drives sm-core's sweeper over a
//! [`transport::Transport`]; [`pool::RoutingPool`] routes on a `SyncArbiter` thread
//! ([`pool::RoutingWorker`]) through routing's fallback chain, shards on scoped threads. Transports: the in-process simulator
//! ([`transport::sim`]) and the `fabric-simd` socket ([`transport::simd`]).

pub mod auth;
pub mod clock;
pub mod cluster;
pub mod config;
pub mod daemon;
pub mod dashboard;
pub mod error;
pub mod fence;
pub mod master;
pub mod metrics;
pub use sm_core::milestone;
pub mod pool;
pub mod propose;
pub mod sa_service;
pub mod sa_view;
pub mod store;
pub mod tls;
pub mod transport;

pub use error::NodeError;
