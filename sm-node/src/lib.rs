//! `sm-node` — the Quorum SM daemon and the `smctl` operator CLI.
//!
//! This crate is glue: it owns IO (files, sockets, the fabric transports), threads and
//! clocks, and drives the pure crates (`mad`, `fabric`, `routing`, `partitions`). It must
//! never hold SM logic that belongs in a sans-IO crate, where it could not be tested on
//! virtual time.

pub mod mem;
