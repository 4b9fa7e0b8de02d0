//! Conflicts that stop a tenant set from compiling, with stable codes.

use super::MemberRef;
use fabric::Guid;

/// A conflict that stops a tenant set from compiling.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TenantError {
    /// TENANT-E001.
    #[error("TENANT-E001: invalid name '{name}': {why}")]
    InvalidName {
        /// The name.
        name: String,
        /// What is wrong.
        why: &'static str,
    },
    /// TENANT-E002.
    #[error(
        "TENANT-E002: name '{0}' is used twice (tenants and storage partitions share one namespace)"
    )]
    DuplicateName(String),
    /// TENANT-E003.
    #[error(
        "TENANT-E003: '{name}' has PKey {pkey:#06x}: a tenant or storage PKey must be 0x0001..=0x7ffe"
    )]
    InvalidPKey {
        /// Owner.
        name: String,
        /// The value given.
        pkey: u32,
    },
    /// TENANT-E004.
    #[error("TENANT-E004: PKey {pkey:#06x} is claimed by both '{a}' and '{b}'")]
    PKeyClash {
        /// Partition number.
        pkey: u16,
        /// First owner.
        a: String,
        /// Second owner.
        b: String,
    },
    /// TENANT-E005.
    #[error(
        "TENANT-E005: '{name}' uses PKey {pkey:#06x}, which the operator's partitions.conf defines as '{operator}'"
    )]
    OperatorPKey {
        /// Tenant or storage partition.
        name: String,
        /// Partition number.
        pkey: u16,
        /// The operator's partition name.
        operator: String,
    },
    /// TENANT-E006.
    #[error("TENANT-E006: '{0}' is also a partition name in the operator's partitions.conf")]
    OperatorName(String),
    /// TENANT-E007.
    #[error("TENANT-E007: port {port} is a member of both tenant '{a}' and tenant '{b}'")]
    PortInTwoTenants {
        /// Port GUID.
        port: Guid,
        /// First tenant.
        a: String,
        /// Second tenant.
        b: String,
    },
    /// TENANT-E008.
    #[error("TENANT-E008: '{owner}' names {member}, which is not in the fabric")]
    UnknownMember {
        /// Tenant or storage partition.
        owner: String,
        /// The reference.
        member: MemberRef,
    },
    /// TENANT-E009.
    #[error(
        "TENANT-E009: tenant '{tenant}' uses storage partition '{storage}', which does not exist"
    )]
    UnknownStorage {
        /// Tenant.
        tenant: String,
        /// Missing storage partition.
        storage: String,
    },
    /// TENANT-E010.
    #[error(
        "TENANT-E010: port {port} is a server of storage partition '{storage}' and a member of tenant '{tenant}'"
    )]
    ServerInTenant {
        /// Port GUID.
        port: Guid,
        /// Storage partition.
        storage: String,
        /// Tenant.
        tenant: String,
    },
    /// TENANT-E011.
    #[error("TENANT-E011: tenant '{tenant}': RDMA limit for device '{device}': {why}")]
    BadRdmaLimit {
        /// Tenant.
        tenant: String,
        /// Device.
        device: String,
        /// What is wrong.
        why: String,
    },
    /// TENANT-E012.
    #[error(
        "TENANT-E012: the operator's partitions.conf does not parse ({count} error(s); first: {first})"
    )]
    OperatorSyntax {
        /// Number of syntax errors.
        count: usize,
        /// The first one.
        first: String,
    },
    /// TENANT-E013.
    #[error(
        "TENANT-E013: VF/PF ports sharing physical port {pf} are named by tenants '{a}' and '{b}': the fabric cannot separate them (one LID, one P_KeyTable)"
    )]
    SharedPortAcrossTenants {
        /// The physical port.
        pf: Guid,
        /// First tenant.
        a: String,
        /// Second tenant.
        b: String,
    },
    /// TENANT-E014.
    #[error(
        "TENANT-E014: port {port} named by tenant '{tenant}' is an SM port: the SM's port is always a full member of Default, so it would reach every other tenant"
    )]
    SmPortInTenant {
        /// The SM port.
        port: Guid,
        /// Tenant.
        tenant: String,
    },
    /// TENANT-E015.
    #[error("TENANT-E015: '{owner}' names GUID 0, which is no port")]
    InvalidGuid {
        /// Tenant or partition.
        owner: String,
    },
    /// TENANT-E016.
    #[error(
        "TENANT-E016: partition '{name}' would hold {count} GUIDs, more than {limit} (MAX_API_MEMBERS)"
    )]
    TooManyMembers {
        /// The partition.
        name: String,
        /// GUIDs it would hold.
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// TENANT-E017.
    #[error(
        "TENANT-E017: port {port} of partition '{partition}' is a member of tenant '{tenant}': a tenant's ports join no API partition (remove it from the tenant first)"
    )]
    TenantPortInPartition {
        /// The GUID named.
        port: Guid,
        /// The API partition.
        partition: String,
        /// The tenant.
        tenant: String,
    },
}

impl TenantError {
    /// The stable code (`TENANT-Ennn`).
    pub fn code(&self) -> &'static str {
        match self {
            TenantError::InvalidName { .. } => "TENANT-E001",
            TenantError::DuplicateName(_) => "TENANT-E002",
            TenantError::InvalidPKey { .. } => "TENANT-E003",
            TenantError::PKeyClash { .. } => "TENANT-E004",
            TenantError::OperatorPKey { .. } => "TENANT-E005",
            TenantError::OperatorName(_) => "TENANT-E006",
            TenantError::PortInTwoTenants { .. } => "TENANT-E007",
            TenantError::UnknownMember { .. } => "TENANT-E008",
            TenantError::UnknownStorage { .. } => "TENANT-E009",
            TenantError::ServerInTenant { .. } => "TENANT-E010",
            TenantError::BadRdmaLimit { .. } => "TENANT-E011",
            TenantError::OperatorSyntax { .. } => "TENANT-E012",
            TenantError::SharedPortAcrossTenants { .. } => "TENANT-E013",
            TenantError::SmPortInTenant { .. } => "TENANT-E014",
            TenantError::InvalidGuid { .. } => "TENANT-E015",
            TenantError::TooManyMembers { .. } => "TENANT-E016",
            TenantError::TenantPortInPartition { .. } => "TENANT-E017",
        }
    }
}
