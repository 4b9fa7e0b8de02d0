//! The size limits of the admin API, each a named constant: what a request may carry, and
//! where each other limit lives. Every refusal names its constant and changes nothing.
//!
//! | input | limit | where | refusal |
//! |---|---|---|---|
//! | any SmAdmin request | [`MAX_ADMIN_REQUEST`] (2 MiB) | the gRPC server (and smctl) | OUT_OF_RANGE, tonic's "decoded message length too large" |
//! | a policy text (ApplyPolicy, ValidatePolicy, DiffPolicy, PlanPolicy) | `partitions::MAX_POLICY_BYTES` (1 MiB) | `replica::admin::policy::check_size`, `partitions::check` (PART-E021) | INVALID_ARGUMENT `E_ADMIN_LIMIT` |
//! | partitions in one policy | `partitions::MAX_PARTITIONS` (4,096) | `partitions::check` (PART-E022) | INVALID_ARGUMENT `E_NODE_POLICY_REFUSED` |
//! | tenants and storage partitions in the set | `replica::admin::tenants::MAX_TENANTS` (2,048) | `replica::admin::tenants::precheck` | INVALID_ARGUMENT `E_ADMIN_LIMIT` |
//! | the tenant set, encoded | `replica::admin::tenants::MAX_TENANT_SET_BYTES` (1 MiB) | same | INVALID_ARGUMENT `E_ADMIN_LIMIT` |
//! | a dashboard request (URI and headers) | `crate::dashboard::server::MAX_REQUEST_HEAD` (16 KiB); no body | the dashboard | HTTP 431 / 413 `E_DASH_REQUEST` |
//!
//! Answers are bounded by the peer transport's `MAX_MESSAGE` (64 MiB: a listing of a large
//! fabric), not by this.

/// Largest SmAdmin request the server decodes (2 MiB): a policy text at its limit
/// (`partitions::MAX_POLICY_BYTES`, 1 MiB) or a tenant at the set's limit, with room for the
/// message around it. A larger request is refused by the gRPC layer before any handler runs.
pub const MAX_ADMIN_REQUEST: usize = 2 << 20;
