//! The admin API's answers computed from the replicated state, as pure functions: fabric
//! reads ([`query`]: SmInfo, nodes, one port, a switch's LFT, a path trace) and partition
//! reads ([`policy`]: validate, diff, plan, audit) against the master's discovered topology,
//! and the tenant reads and writes ([`tenants`]). They take a [`crate::ReplicatedState`] and
//! values, and return the admin API's prost messages (`proto` without gRPC) or an
//! [`AdminError`].
//!
//! The daemon decides where each one runs (this replica, the leader or the master), and maps
//! [`AdminError`] to a gRPC status in one place (sm-node's `cluster::admin::errors`): the
//! error's text is exactly the status message a client sees, so codes and messages live here
//! and nowhere else.

pub mod guids;
pub mod membership;
pub mod policy;
pub mod qos;
pub mod query;
pub mod tenants;

use crate::ApplyError;

/// Why an admin read or a tenant change is refused. The text (`Display`) starts with a stable
/// code ([`AdminError::code`]) and is the message clients see.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// No port has this LID (or it is above the unicast range).
    #[error("E_ADMIN_NO_LID: no port has LID {0} (see `smctl nodes` for the LIDs in use)")]
    NoLid(u32),
    /// The node has no such port.
    #[error(
        "E_ADMIN_NO_PORT: node {node_guid:#018x} ({description}) has ports 0..={num_ports}, not {port}"
    )]
    NoPort {
        /// The node's GUID.
        node_guid: u64,
        /// Its description.
        description: String,
        /// Its number of ports.
        num_ports: u8,
        /// The port asked for.
        port: u32,
    },
    /// Port 0 of a CA.
    #[error("E_ADMIN_NO_PORT: a CA has no port 0 (LID {lid} is port {own_port})")]
    CaPortZero {
        /// The LID asked for.
        lid: u16,
        /// The CA port owning it.
        own_port: u8,
    },
    /// A route asked of a node that is not a switch.
    #[error("E_ADMIN_NOT_SWITCH: LID {lid} is {description} ({node_guid:#018x}), not a switch")]
    NotSwitch {
        /// The LID asked for.
        lid: u16,
        /// The node's description.
        description: String,
        /// The node's GUID.
        node_guid: u64,
    },
    /// A policy text that does not parse (nothing was changed).
    #[error(
        "E_NODE_POLICY_SYNTAX: line {line}:{col}: {first} ({count} error(s); nothing was changed)"
    )]
    PolicySyntax {
        /// Line of the first error, from 1.
        line: u32,
        /// Column of the first error, from 1.
        col: u32,
        /// The first error.
        first: String,
        /// Number of syntax errors.
        count: usize,
    },
    /// The text planned does not compile with the tenants in force (a tenant's PKey or name).
    #[error("{0}")]
    TenantsConflict(ApplyError),
    /// The policy text, with the tenants compiled in, does not load.
    #[error("{0}")]
    Policy(partitions::PartitionsError),
    /// A host whose ports belong to two tenants.
    #[error("E_NODE_TENANT_SPLIT: the host's ports belong to tenants '{first}' and '{second}'")]
    TenantSplit {
        /// The tenant of an earlier port.
        first: String,
        /// The tenant of a later one.
        second: String,
    },
    /// A delete of a name the set does not have.
    #[error("E_NODE_TENANT_UNKNOWN: no {} named '{name}'", kind_name(*.storage))]
    TenantUnknown {
        /// The name.
        name: String,
        /// A storage partition was named, not a tenant.
        storage: bool,
    },
    /// An API partition (by P_Key) the set does not have.
    #[error("E_NODE_PKEY_UNKNOWN: no API-managed partition has P_Key {0:#06x}")]
    PKeyUnknown(u16),
    /// A ChangeGuids call that does not say what to change.
    #[error("E_ADMIN_CHANGE: {0}; nothing was changed")]
    BadChange(&'static str),
    /// A tenant set that does not compile strictly (what apply would refuse).
    #[error("{0}")]
    TenantsRefused(ApplyError),
    /// The tenant view in force could not be derived.
    #[error("E_NODE_TENANTS: {0}")]
    Derive(String),
    /// An input larger than its limit (nothing was changed).
    #[error("E_ADMIN_LIMIT: {what} is {size}; the limit is {limit} ({name}); nothing was changed")]
    Limit {
        /// What is too large ("the policy text (bytes)", ...).
        what: &'static str,
        /// Its size.
        size: usize,
        /// The limit.
        limit: usize,
        /// The constant that sets it.
        name: &'static str,
    },
}

fn kind_name(storage: bool) -> &'static str {
    if storage {
        "storage partition"
    } else {
        "tenant"
    }
}

impl AdminError {
    /// The stable code the text starts with (for the wrapped refusals, theirs:
    /// `TENANT-Ennn` or `REPL-Ennn`).
    pub fn code(&self) -> &'static str {
        match self {
            AdminError::NoLid(_) => "E_ADMIN_NO_LID",
            AdminError::NoPort { .. } | AdminError::CaPortZero { .. } => "E_ADMIN_NO_PORT",
            AdminError::NotSwitch { .. } => "E_ADMIN_NOT_SWITCH",
            AdminError::PolicySyntax { .. } | AdminError::Policy(_) => "E_NODE_POLICY_SYNTAX",
            AdminError::TenantsConflict(e) | AdminError::TenantsRefused(e) => e.code(),
            AdminError::TenantSplit { .. } => "E_NODE_TENANT_SPLIT",
            AdminError::TenantUnknown { .. } => "E_NODE_TENANT_UNKNOWN",
            AdminError::PKeyUnknown(_) => "E_NODE_PKEY_UNKNOWN",
            AdminError::BadChange(_) => "E_ADMIN_CHANGE",
            AdminError::Derive(_) => "E_NODE_TENANTS",
            AdminError::Limit { .. } => "E_ADMIN_LIMIT",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_what_clients_saw_before_the_move() {
        let cases = [
            (
                AdminError::NoLid(999),
                "E_ADMIN_NO_LID: no port has LID 999 (see `smctl nodes` for the LIDs in use)",
            ),
            (
                AdminError::NoPort {
                    node_guid: 0x10,
                    description: "h1".into(),
                    num_ports: 1,
                    port: 5,
                },
                "E_ADMIN_NO_PORT: node 0x0000000000000010 (h1) has ports 0..=1, not 5",
            ),
            (
                AdminError::CaPortZero {
                    lid: 3,
                    own_port: 1,
                },
                "E_ADMIN_NO_PORT: a CA has no port 0 (LID 3 is port 1)",
            ),
            (
                AdminError::NotSwitch {
                    lid: 3,
                    description: "h1".into(),
                    node_guid: 0x10,
                },
                "E_ADMIN_NOT_SWITCH: LID 3 is h1 (0x0000000000000010), not a switch",
            ),
            (
                AdminError::TenantSplit {
                    first: "red".into(),
                    second: "blue".into(),
                },
                "E_NODE_TENANT_SPLIT: the host's ports belong to tenants 'red' and 'blue'",
            ),
            (
                AdminError::TenantUnknown {
                    name: "nfs".into(),
                    storage: true,
                },
                "E_NODE_TENANT_UNKNOWN: no storage partition named 'nfs'",
            ),
            (AdminError::Derive("x".into()), "E_NODE_TENANTS: x"),
            (
                AdminError::Limit {
                    what: "the policy text (bytes)",
                    size: 2,
                    limit: 1,
                    name: "MAX_POLICY_BYTES",
                },
                "E_ADMIN_LIMIT: the policy text (bytes) is 2; the limit is 1 (MAX_POLICY_BYTES); nothing was changed",
            ),
        ];
        for (e, text) in cases {
            assert_eq!(e.to_string(), text);
            assert!(text.starts_with(e.code()), "{text}");
        }
    }

    #[test]
    fn a_syntax_error_names_its_first_position_and_count() {
        let e = policy::syntax_error("Default=0x7fff : ALL=full ;\nbad line\n").unwrap();
        let t = e.to_string();
        assert!(t.starts_with("E_NODE_POLICY_SYNTAX: line 2:"), "{t}");
        assert!(t.ends_with("error(s); nothing was changed)"), "{t}");
        assert!(policy::syntax_error("Default=0x7fff : ALL=full ;\n").is_none());
    }
}
