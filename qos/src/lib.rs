//! `qos` — Quality of Service for Quorum SM, OpenSM-compatible: the SL2VL and VL
//! arbitration tables OpenSM derives from its `qos_*` options ([`options`], [`tables`]),
//! and OpenSM's QoS policy file (qos-policy.conf: port groups, qos-setup, QoS levels,
//! match rules, qos-ulps) parsed into a checked [`Policy`] ([`policy`]) with pure matching
//! for the SA (the QoS level, hence the SL, of a path query) and for sm-core (the tables of
//! a port), plus lints ([`lints`]).
//!
//! This crate is pure: it must never do IO, read a clock, spawn a thread or panic on any
//! input; a policy text with any error is rejected whole (never a partial policy), and it
//! never falls back silently to a default table. Errors are [`QosError`] with stable codes
//! `QOS-E001`...; warnings are `QOS-W001`....
//!
//! # Where we depart from OpenSM, and why
//!
//! * Option strings are parsed strictly: OpenSM's `strtoul` parsing takes `16:4` as VL 1
//!   (`vl % 15`), ignores junk and short SL2VL lists; here they are errors naming the key
//!   and the entry (QOS-E002). Numbers with a leading zero (octal to OpenSM) are refused.
//! * `qos-setup` is applied (OpenSM parses and ignores it): a port in a scope's group gets
//!   the scope's tables instead of the option-derived ones, first matching scope wins.
//!   `across`, `across-to`, `across-from` are refused (QOS-E006).
//! * qos-ulps `any, source-target-port-guid` matches when the source *or* the destination
//!   is listed, as OpenSM's documentation says (its code requires both).
//! * A qos-ulps rule may name a qos-level instead of an SL (`sdp : Storage`).
//! * `port-name:` keeps the blanks of a node description (OpenSM's lexer drops them, so
//!   `vs1 HCA-1/P1` never matches there).
//! * A file with only port groups and qos-setup needs no default level (OpenSM refuses any
//!   file without one).

pub mod error;
pub mod lints;
mod num;
pub mod options;
pub mod policy;
pub mod tables;

pub use error::{Pos, QosError};
pub use lints::{Lint, LintCode, lints};
pub use options::{KindOptions, QosOptions, format_sl2vl, format_vlarb, parse_sl2vl, parse_vlarb};
pub use policy::{PathQuery, Policy, PortFacts, QosLevel};
pub use tables::{
    PortKind, QosTables, TableConfig, VLARB_BLOCK_LEN, VLARB_TABLE_LEN, VlArb, has_vlarb, op_vls,
    vl_mask,
};

/// The largest policy text parsed (1 MiB); larger is QOS-E003.
pub const MAX_POLICY_BYTES: usize = 1 << 20;

/// The most port groups, qos-levels, rules (match rules and qos-ulps together) and
/// qos-setup scopes each a policy may have; more is QOS-E004.
pub const MAX_ITEMS: usize = 4096;
