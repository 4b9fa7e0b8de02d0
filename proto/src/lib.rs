//! `proto` — the only crate of Quorum SM that knows protobuf and gRPC types.
//!
//! * [`state`] (`proto/state.proto`): the replicated state and the [`state::Command`]s that
//!   change it (configuration, partition policy, topology, LIDs, programmed LFTs / P_Key
//!   tables and MFTs, programming intents, master record, tenants, SA state: multicast groups,
//!   services, subscriptions), and the snapshot message [`state::StateSnapshot`].
//! * [`peer`] (`proto/peer.proto`): the replica-to-replica service `Peer` — Raft messages as
//!   opaque bytes (raft-rs `eraftpb` encoded by the caller with protobuf 2.28) and the
//!   forwarding of client writes to the leader.
//! * [`admin`] (`proto/admin.proto`): the operator service `SmAdmin` (first version).
//!
//! Feature `grpc` (default) adds the tonic clients and servers (`peer::peer_client`,
//! `peer::peer_server`, `admin::sm_admin_client`, `admin::sm_admin_server`). With
//! `default-features = false` only the prost messages are built and tonic is not a dependency,
//! so pure crates can use the messages.
//!
//! This crate must never hold logic beyond generated code and trivial helpers: no IO, no
//! state machine, no knowledge of raft-rs's types.

#![allow(clippy::large_enum_variant, clippy::doc_lazy_continuation)]

/// Generated code, nested as the protobuf packages are (cross-package references need it).
#[allow(missing_docs)]
pub mod quorum {
    /// `quorum.state.v1`.
    pub mod state {
        /// Version 1.
        pub mod v1 {
            include!(concat!(env!("OUT_DIR"), "/quorum.state.v1.rs"));
        }
    }
    /// `quorum.peer.v1`.
    pub mod peer {
        /// Version 1.
        pub mod v1 {
            include!(concat!(env!("OUT_DIR"), "/quorum.peer.v1.rs"));
        }
    }
    /// `quorum.admin.v1`.
    pub mod admin {
        /// Version 1.
        pub mod v1 {
            include!(concat!(env!("OUT_DIR"), "/quorum.admin.v1.rs"));

            impl ClusterStatusReply {
                /// The policy versions in force at the answering replica.
                pub fn in_force(&self) -> PolicyVersions {
                    PolicyVersions {
                        policy: self.policy_version,
                        tenants: self.tenants_version,
                        qos: self.qos_version,
                    }
                }

                /// True when the master's last heavy sweep programmed the versions in force.
                pub fn in_force_programmed(&self) -> bool {
                    self.programmed == Some(self.in_force())
                }
            }

            impl Role {
                /// The name operators read (`leader`, `pre-candidate`, `-` when unknown) of
                /// a wire value; values this build does not know read as `-`.
                pub fn label(wire: i32) -> &'static str {
                    match Role::try_from(wire).unwrap_or(Role::Unspecified) {
                        Role::Leader => "leader",
                        Role::Follower => "follower",
                        Role::Candidate => "candidate",
                        Role::PreCandidate => "pre-candidate",
                        Role::Unreachable => "unreachable",
                        Role::Unspecified => "-",
                    }
                }
            }
        }
    }
}

/// Operator service (`quorum.admin.v1`).
pub use quorum::admin::v1 as admin;
/// Replica-to-replica service (`quorum.peer.v1`).
pub use quorum::peer::v1 as peer;
/// Replicated state and commands (`quorum.state.v1`).
pub use quorum::state::v1 as state;

pub use prost::Message;

#[cfg(test)]
mod tests;
