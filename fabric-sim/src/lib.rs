//! `fabric-sim` — a simulated InfiniBand fabric that behaves like real switches and HCAs
//! closely enough that an SM correct here is correct on hardware.
//!
//! The core, [`SimFabric`], is a sans-IO discrete-event state machine: it loads any
//! [`fabric::Topology`], gives every node a Subnet Management Agent (SMA) answering Get/Set of
//! the SMP attributes, forwards directed-route SMPs hop by hop with the shared
//! [`mad::dr_step`] rule, LID-routes SMPs and data packets through each switch's programmed
//! LFT, runs the IBA port state machine (INIT -> ARMED -> ACTIVE), checks M_Keys, P_Keys
//! and switch partition enforcement, sends traps 128/144/256, injects seeded faults and
//! keeps accounting. Time is virtual ([`VTime`], nanoseconds), driven by an event queue
//! ordered by (time, sequence), so a seed gives the same run every time.
//!
//! The core must never do IO, read a clock, spawn a thread or use unseeded randomness.
//! The only IO parts are [`protocol`] (framing over `Read`/`Write`), [`server`] (the
//! Unix-socket server behind the `fabric-simd` binary, threads allowed) and [`client`]
//! (a blocking client for that socket). See `PROTOCOL.md` for the wire protocol.

mod accounting;
mod config;
mod deliver;
mod error;
mod faults;
mod forward;
mod portstate;
mod sim;
mod sma;
mod state;

pub mod client;
pub mod control;
pub mod protocol;
pub mod server;

pub use accounting::{Accounting, Counters, SetRecord, TraceHop, TraceKind};
pub use config::SimConfig;
pub use deliver::{Delivery, DropReason};
pub use error::SimError;
pub use faults::Fault;
pub use sim::{AttachId, Received, SimFabric};

/// Virtual time in nanoseconds since the fabric was created.
pub type VTime = u64;
