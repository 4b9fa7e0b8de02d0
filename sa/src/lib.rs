//! `sa` — the Subnet Administrator (IBA chapter 15) as a pure state machine.
//!
//! [`SaEngine`] answers SA requests (Get, GetTable, GetMulti, Set, Delete; ComponentMasks
//! honoured) from a read-only [`FabricView`] (nodes, ports with PortInfo, links, switches with
//! LFTs, P_Key tables, the SM) and its database ([`SaDb`]: multicast groups and members,
//! ServiceRecords, InformInfo subscriptions). Requests that change the database say so
//! ([`Handled::changed`]): the glue proposes [`SaEngine::state`] (a `proto::state::SaState`)
//! to Raft and answers after commit; a new master calls [`SaEngine::load`] with the
//! replicated state and answers exactly as the old one did. Port changes become Notice 64/65
//! Reports ([`SaEngine::port_changes`]). Table answers larger than one MAD go out through
//! [`RmppSender`]; [`SaClient`] and [`Transaction`] are the requesting side (with
//! [`RmppReceiver`]). [`SaServer`] is the engine as a master serves it on the SM's port:
//! GMPs in, answers, RMPP segments and proposals of the SA state out, log lines as values.
//!
//! This crate must never do IO, read a clock (time comes in as [`VTime`] arguments:
//! nanoseconds for RMPP timers, milliseconds for service leases), spawn a thread or use
//! unseeded randomness; decoding any request never panics.

mod client;
mod db;
mod engine;
mod error;
pub mod guidinfo;
pub mod mcast;
pub mod path;
mod records;
pub mod rmpp;
pub mod server;
mod service;
mod view;

pub use client::{SaClient, SaResponse, Step, Transaction};
pub use db::{Group, Member, SaDb, Service, Subscription};
pub use engine::{AliasTable, Handled, MAX_PATH_PAIRS, Reply, Request, SaConfig, SaEngine};
pub use error::SaError;
pub use mcast::{PolicyGroup, policy_groups};
pub use rmpp::{RmppConfig, RmppReceiver, RmppSender, SenderState};
pub use server::{SaAction, SaServer};
pub use service::Outgoing;
pub use view::{FabricView, MftBlocks, SmSelf, ViewInput, ViewNode, ViewPort, ViewVport};

/// Time as the caller gives it (no clock is read here).
pub type VTime = u64;
