//! Every mapping of the admin service from a domain error or a refusal to a gRPC status, in
//! one place: the raft actor's mailbox, the replica's refusals ([`ProposeError`], by call),
//! the admin answers' [`AdminError`] and the refusal codes a committed-but-refused
//! ApplyPolicy or SetTenants comes back with. Messages are the errors' own texts.

use super::super::raft_actor::ProposeError;
use proto::state::ApplyResult;
use replica::admin::AdminError;
use tonic::Status;

/// The raft actor's mailbox is gone.
pub(crate) fn actor_err(e: actix::MailboxError) -> Status {
    Status::unavailable(format!("E_NODE_ACTOR: raft actor: {e}"))
}

/// The admin call a replica-side refusal answers.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Call {
    Propose,
    ReadIndex,
    Transfer,
    Membership,
}

/// The one mapping from the replica's refusals to gRPC statuses: NotLeader is UNAVAILABLE
/// with the leader's address; a stopping replica UNAVAILABLE; what raft or the request
/// itself refused, by call: a proposal or read UNAVAILABLE, a transfer to an unknown
/// replica NOT_FOUND, a membership change FAILED_PRECONDITION.
pub(crate) fn status_of(e: ProposeError, call: Call) -> Status {
    match e {
        ProposeError::NotLeader {
            leader_id,
            leader_address,
        } => not_leader_status(leader_id, &leader_address),
        ProposeError::Stopping => Status::unavailable(e.to_string()),
        ProposeError::Failed(m) => match call {
            Call::Propose => Status::unavailable(format!("E_NODE_PROPOSE: {m}")),
            Call::ReadIndex => Status::unavailable(format!("E_NODE_READ_INDEX: {m}")),
            Call::Transfer => Status::not_found(format!("E_NODE_TRANSFER: {m}")),
            Call::Membership => Status::failed_precondition(format!("E_NODE_MEMBERSHIP: {m}")),
        },
    }
}

/// UNAVAILABLE without a leader, or naming the leader.
pub(crate) fn not_leader_status(leader_id: u64, addr: &str) -> Status {
    if leader_id == 0 {
        Status::unavailable("E_NODE_NO_LEADER: no leader known (no quorum?)")
    } else {
        Status::unavailable(format!(
            "E_NODE_NOT_LEADER: leader is replica {leader_id} at {addr}"
        ))
    }
}

/// The status of an admin answer's error: NOT_FOUND for an unknown LID, port, switch or
/// tenant name; INVALID_ARGUMENT for a policy that does not parse or load and a tenant set
/// that does not compile; FAILED_PRECONDITION for a text that conflicts with the tenants in
/// force and a host split between tenants; INTERNAL when the tenant view cannot be derived.
pub(crate) fn admin_status(e: AdminError) -> Status {
    let msg = e.to_string();
    match e {
        AdminError::NoLid(_)
        | AdminError::NoPort { .. }
        | AdminError::CaPortZero { .. }
        | AdminError::NotSwitch { .. }
        | AdminError::TenantUnknown { .. } => Status::not_found(msg),
        AdminError::PolicySyntax { .. } | AdminError::Policy(_) | AdminError::TenantsRefused(_) => {
            Status::invalid_argument(msg)
        }
        AdminError::TenantsConflict(_) | AdminError::TenantSplit { .. } => {
            Status::failed_precondition(msg)
        }
        AdminError::Derive(_) => Status::internal(msg),
    }
}

/// An ApplyPolicy the log refused: a stale version FAILED_PRECONDITION, a syntax error
/// INVALID_ARGUMENT at line:col, a text taking a tenant's PKey or name FAILED_PRECONDITION.
pub(crate) fn policy_refusal(a: &ApplyResult) -> Status {
    let msg = format!("{}: {}", a.code, a.message);
    match a.code.as_str() {
        "REPL-E004" => Status::failed_precondition(format!(
            "{msg} (run `smctl partitions show` and retry with the version in force)"
        )),
        "REPL-E003" => Status::invalid_argument(format!("{msg} (at {}:{})", a.line, a.col)),
        // The text conflicts with the tenants in force (a tenant's PKey or name).
        c if c.starts_with("TENANT-E") => Status::failed_precondition(a.message.clone()),
        _ => Status::internal(msg),
    }
}

/// A SetTenants the log (or the version check before it) refused: a stale version
/// FAILED_PRECONDITION, a set that does not compile or convert INVALID_ARGUMENT.
pub(crate) fn tenant_refusal(code: &str, message: &str) -> Status {
    let msg = format!("{code}: {message}");
    if code == "REPL-E201" {
        Status::failed_precondition(format!(
            "{msg} (run `smctl tenants list` and retry with the version in force)"
        ))
    } else if code.starts_with("TENANT-E") || code == "REPL-E202" {
        Status::invalid_argument(message.to_string())
    } else {
        Status::internal(msg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Code;

    #[test]
    fn admin_errors_keep_their_codes_and_texts() {
        let s = admin_status(AdminError::NoLid(9));
        assert_eq!(s.code(), Code::NotFound);
        assert!(
            s.message()
                .starts_with("E_ADMIN_NO_LID: no port has LID 9 ")
        );
        let split = AdminError::TenantSplit {
            first: "a".into(),
            second: "b".into(),
        };
        assert_eq!(admin_status(split).code(), Code::FailedPrecondition);
        let syntax = replica::admin::policy::syntax_error("x").unwrap();
        assert_eq!(admin_status(syntax).code(), Code::InvalidArgument);
        let stale = tenant_refusal("REPL-E201", "stale");
        assert_eq!(stale.code(), Code::FailedPrecondition);
        assert!(
            stale
                .message()
                .ends_with("retry with the version in force)")
        );
    }
}
