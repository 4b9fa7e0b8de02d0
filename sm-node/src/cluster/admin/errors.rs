//! Every mapping of the admin service from a domain error or a refusal to a gRPC status, in
//! one place: the raft actor's mailbox, the replica's refusals ([`ProposeError`], by call),
//! the admin answers' [`AdminError`] and the refusal codes a committed-but-refused
//! ApplyPolicy or SetTenants comes back with. Messages are the errors' own texts.
//!
//! Writes: a refusal before anything was proposed (not the leader, no leader, raft refused the
//! proposal, a forwarded call whose connection to the leader could not be made) is
//! UNAVAILABLE; a write that was proposed, or sent to the leader, and whose outcome did not
//! come back (no answer within the deadline, the answer dropped by the replica, the
//! connection lost after the request was sent) may have been committed: ABORTED with
//! `E_NODE_COMMIT_UNKNOWN` ([`commit_unknown`]), never UNAVAILABLE.

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

/// Code of a write whose outcome is unknown (it may have been committed).
pub const COMMIT_UNKNOWN: &str = "E_NODE_COMMIT_UNKNOWN";

/// ABORTED `E_NODE_COMMIT_UNKNOWN`: the write was proposed (or sent to the leader) and its
/// outcome did not come back; it may have been committed. Read the state before retrying.
pub(crate) fn commit_unknown(why: &str) -> Status {
    Status::aborted(format!(
        "{COMMIT_UNKNOWN}: {why}; the write may have been committed: read the state (e.g. \
         `smctl partitions show`, `smctl tenants list`, `smctl cluster`) before retrying"
    ))
}

/// True when an error of type `E` is in `s`'s source chain (a status tonic made from a local
/// error; a status the server answered has no source).
fn caused_by<E: std::error::Error + 'static>(s: &Status) -> bool {
    let mut e: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(s);
    while let Some(x) = e {
        if x.is::<E>() {
            return true;
        }
        e = x.source();
    }
    false
}

/// The status of a write forwarded to the leader at `leader` that failed: the leader's own
/// answer unchanged (the error the server saw); no connection to it (nothing was sent)
/// UNAVAILABLE; any other local failure (timeout, connection lost) after the request went
/// out: commit unknown.
pub(crate) fn forwarded_write_failure(s: Status, leader: &str) -> Status {
    if std::error::Error::source(&s).is_none() {
        return s;
    }
    if caused_by::<tonic::ConnectError>(&s) {
        return Status::unavailable(format!(
            "E_NODE_FORWARD: cannot reach the leader at {leader} (nothing was sent): {}",
            s.message()
        ));
    }
    commit_unknown(&format!(
        "forwarded to the leader at {leader}, which did not answer ({:?}: {})",
        s.code(),
        s.message()
    ))
}

/// The status of a read (or a call that changes no replicated state) forwarded to the leader
/// at `leader` that failed: the leader's own answer unchanged, a local transport failure
/// UNAVAILABLE (never tonic's bare `Unknown: transport error`).
pub(crate) fn forwarded_read_failure(s: Status, leader: &str) -> Status {
    if std::error::Error::source(&s).is_none() {
        return s;
    }
    Status::unavailable(format!(
        "E_NODE_FORWARD: the leader at {leader} did not answer: {:?}: {}",
        s.code(),
        s.message()
    ))
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
/// that does not compile and an input over its limit (`E_ADMIN_LIMIT`); FAILED_PRECONDITION
/// for a text that conflicts with the tenants in force and a host split between tenants;
/// INTERNAL when the tenant view cannot be derived.
pub(crate) fn admin_status(e: AdminError) -> Status {
    let msg = e.to_string();
    match e {
        AdminError::NoLid(_)
        | AdminError::NoPort { .. }
        | AdminError::CaPortZero { .. }
        | AdminError::NotSwitch { .. }
        | AdminError::TenantUnknown { .. }
        | AdminError::PKeyUnknown(_) => Status::not_found(msg),
        AdminError::PolicySyntax { .. }
        | AdminError::Policy(_)
        | AdminError::TenantsRefused(_)
        | AdminError::BadChange(_)
        | AdminError::Limit { .. } => Status::invalid_argument(msg),
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
            "{msg} (run `smctl partitions show` or `smctl qos show` and retry with the version in force)"
        )),
        "REPL-E003" => Status::invalid_argument(format!("{msg} (at {}:{})", a.line, a.col)),
        // The text conflicts with the tenants in force (a tenant's PKey or name).
        c if c.starts_with("TENANT-E") => Status::failed_precondition(a.message.clone()),
        _ => Status::internal(msg),
    }
}

/// A policy text `smctl partitions check` calls an error (the same check: syntax, the
/// limits, error lints, and at the master the ports' PartitionCap): INVALID_ARGUMENT naming
/// the first error and their count; nothing was proposed.
pub(crate) fn policy_invalid(r: &proto::admin::ValidatePolicyReply) -> Status {
    let errors: Vec<_> = r
        .diagnostics
        .iter()
        .filter(|d| d.severity == "error")
        .collect();
    let first = errors.first().map_or_else(String::new, |d| {
        format!("; first: {} {}:{}: {}", d.code, d.line, d.col, d.message)
    });
    Status::invalid_argument(format!(
        "E_NODE_POLICY_REFUSED: the policy has {} error(s){first}; nothing was proposed (every \
         diagnostic: smctl partitions check FILE --server)",
        errors.len()
    ))
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

/// An Explain the master refused: a LID or GUID naming no port it found is NOT_FOUND, a
/// port the node does not have INVALID_ARGUMENT (the texts carry SMC-E011 / SMC-E012).
pub(crate) fn explain_status(e: sm_core::SmError) -> Status {
    match e {
        sm_core::SmError::ExplainUnknown { .. } => Status::not_found(e.to_string()),
        sm_core::SmError::ExplainPort { .. } => Status::invalid_argument(e.to_string()),
        other => Status::internal(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Code;

    #[test]
    fn forwarded_failures_keep_the_leaders_answer_and_split_local_ones() {
        // The leader's own answer (no source): unchanged.
        let s = forwarded_write_failure(Status::invalid_argument("PART-E008 x"), "l:1");
        assert_eq!(
            (s.code(), s.message()),
            (Code::InvalidArgument, "PART-E008 x")
        );
        // No connection: nothing was sent.
        let mut c = Status::unavailable("connect");
        c.set_source(std::sync::Arc::new(tonic::ConnectError("refused".into())));
        let s = forwarded_write_failure(c, "l:1");
        assert_eq!(s.code(), Code::Unavailable);
        assert!(
            s.message().starts_with("E_NODE_FORWARD: cannot reach"),
            "{s:?}"
        );
        // A timeout (or any local failure) after the request went out: commit unknown.
        let mut t = Status::cancelled("Timeout expired");
        t.set_source(std::sync::Arc::new(tonic::TimeoutExpired(())));
        let s = forwarded_write_failure(t, "l:1");
        assert_eq!(s.code(), Code::Aborted);
        assert!(s.message().starts_with(COMMIT_UNKNOWN), "{s:?}");
        let mut t = Status::unknown("transport error");
        t.set_source(std::sync::Arc::new(tonic::TimeoutExpired(())));
        let s = forwarded_read_failure(t, "l:1");
        assert_eq!(s.code(), Code::Unavailable);
    }

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
        let limit = AdminError::Limit {
            what: "x",
            size: 2,
            limit: 1,
            name: "MAX_X",
        };
        assert_eq!(admin_status(limit).code(), Code::InvalidArgument);
        let stale = tenant_refusal("REPL-E201", "stale");
        assert_eq!(stale.code(), Code::FailedPrecondition);
        assert!(
            stale
                .message()
                .ends_with("retry with the version in force)")
        );
    }

    #[test]
    fn explain_refusals_are_not_found_and_invalid_argument() {
        let unknown = sm_core::SmError::ExplainUnknown {
            target: "LID 9".into(),
            sweep: 3,
            hint: "h".into(),
        };
        let s = explain_status(unknown);
        assert_eq!(s.code(), Code::NotFound);
        assert!(s.message().starts_with("SMC-E011 LID 9 "));
        let port = sm_core::SmError::ExplainPort {
            node: fabric::Guid(1),
            port: 9,
            nports: 2,
        };
        assert_eq!(explain_status(port).code(), Code::InvalidArgument);
    }
}
