//! `replica` — the replicated state machine of a Quorum SM cluster.
//!
//! Every replica applies the same committed Raft entries, each one [`proto::state::Command`],
//! to a [`ReplicatedState`]: cluster configuration, partition policy (text, version, parsed
//! form, bounded history), topology, guid -> LID map, each switch's LFT and each port's
//! P_KeyTable and PortInfo as programmed, the pending programming intent, the master record,
//! tenants (see [`tenants`]) and SA state (multicast groups, services, subscriptions;
//! checked on apply). [`ReplicatedState::apply`] is deterministic: the same
//! log gives bit-identical state (and identical [`ReplicatedState::snapshot_bytes`]) on every
//! replica, and a refused command changes nothing but the applied index.
//!
//! Commands (`Command.kind`): `noop`, `set_config`, `apply_policy` (refused on a stale
//! `expected_version` or a syntax error, with line:col), `set_topology`, `update_lids`,
//! `begin_intent` / `intent_chunk` / `seal_intent` / `intent_done` / `abort_intent` (see
//! [`intent`] for the rules and [`split_intent`] for chunking), `set_master`, `set_tenants`,
//! `set_sa_state`.
//!
//! [`admin`] answers the admin API from the state (fabric and partition reads, tenant reads
//! and writes) with typed [`admin::AdminError`]s; the daemon maps them to gRPC statuses.
//!
//! This crate is pure: it must never do IO, read a clock, spawn a thread, use randomness or
//! depend on tonic, raft-rs or sled. Decoding a snapshot never panics.

pub mod admin;
mod apply;
pub mod convert;
mod error;
pub mod intent;
pub mod mft;
mod sa;
mod snapshot;
mod state;
pub mod tenants;
pub mod vl;

pub use apply::{ApplyOutcome, Effect};
pub use convert::{ConvertError, topology_from_proto, topology_to_proto};
pub use error::{ApplyError, RestoreError};
pub use intent::{DEFAULT_MAX_COMMAND_BYTES, DoneStats, split_intent};
pub use snapshot::SNAPSHOT_FORMAT;
pub use state::{
    DEDUP_WINDOW, LFT_BLOCK, LidAssignment, MAX_LFT_BLOCK, MAX_PKEY_BLOCK, NO_ROUTE, PKEY_BLOCK,
    POLICY_HISTORY, ReplicatedState,
};

#[cfg(test)]
mod tests;
