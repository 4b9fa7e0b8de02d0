//! The membership guard: whether `smctl members add|remove` may change the voters, decided
//! on the leader's view of the cluster before anything is proposed (the admin API in sm-node
//! runs it on the leader and maps a refusal to NOT_FOUND or FAILED_PRECONDITION).
//!
//! On the leader's `ClusterStatus` (`replicas[].voter` and `role`, from the replica core's
//! `CoreStatus`):
//! * a replica that is not configured (`--peers`): `E_NODE_MEMBERSHIP_UNKNOWN`;
//! * adding a voter, removing a non-voter: `E_NODE_MEMBERSHIP_ALREADY_VOTER` /
//!   `E_NODE_MEMBERSHIP_NOT_VOTER` (nothing to change);
//! * removing the only voter: `E_NODE_MEMBERSHIP_LAST_VOTER`, even with `force` (raft-rs
//!   would refuse it when applying — "removed all voters" — after the caller was told it was
//!   proposed);
//! * removing a voter when fewer than a majority of the configured replicas would be healthy
//!   voters afterwards: `E_NODE_MEMBERSHIP_QUORUM` unless `force`. Healthy: the leader itself,
//!   and the voters the leader has heard from within the last election timeout (raft-rs's
//!   `recent_active`, role FOLLOWER in the leader's status), which lags by up to one election
//!   timeout (a replica that just died still counts as healthy).
//!
//! A change proposed while another is not applied yet is refused by the replica core itself.

use proto::admin::{ClusterStatusReply, Role};

/// Why the guard refuses a change (nothing was proposed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Not a configured replica.
    Unknown {
        /// The id asked for.
        id: u64,
        /// The configured replicas.
        configured: Vec<u64>,
    },
    /// Adding a replica that is a voter already.
    AlreadyVoter(u64),
    /// Removing a replica that is not a voter.
    NotVoter(u64),
    /// Removing the only voter.
    LastVoter(u64),
    /// Removing a voter would leave fewer than a majority of the configured replicas healthy.
    Quorum {
        /// The replica to remove.
        id: u64,
        /// Healthy voters left after the removal.
        healthy_after: usize,
        /// Configured replicas.
        configured: usize,
        /// A majority of them.
        majority: usize,
    },
}

impl Refusal {
    /// The stable code.
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::Unknown { .. } => "E_NODE_MEMBERSHIP_UNKNOWN",
            Refusal::AlreadyVoter(_) => "E_NODE_MEMBERSHIP_ALREADY_VOTER",
            Refusal::NotVoter(_) => "E_NODE_MEMBERSHIP_NOT_VOTER",
            Refusal::LastVoter(_) => "E_NODE_MEMBERSHIP_LAST_VOTER",
            Refusal::Quorum { .. } => "E_NODE_MEMBERSHIP_QUORUM",
        }
    }

    /// The message the client gets, starting with the code.
    pub fn message(&self) -> String {
        let code = self.code();
        match self {
            Refusal::Unknown { id, configured } => format!(
                "{code}: replica {id} is not configured (the configured replicas are {configured:?}); nothing was proposed"
            ),
            Refusal::AlreadyVoter(id) => {
                format!("{code}: replica {id} is a voter already; nothing was proposed")
            }
            Refusal::NotVoter(id) => {
                format!("{code}: replica {id} is not a voter; nothing was proposed")
            }
            Refusal::LastVoter(id) => format!(
                "{code}: replica {id} is the only voter: removing it would leave the cluster without any (refused even with --force); nothing was proposed"
            ),
            Refusal::Quorum {
                id,
                healthy_after,
                configured,
                majority,
            } => format!(
                "{code}: removing replica {id} leaves {healthy_after} healthy voter(s) of {configured} configured replicas (a majority is {majority}): one more failure stops every write; nothing was proposed (`smctl members remove {id} --force` removes it anyway)"
            ),
        }
    }

    /// True for a replica that is not configured (the admin API answers NOT_FOUND; every
    /// other refusal is FAILED_PRECONDITION).
    pub fn is_unknown(&self) -> bool {
        matches!(self, Refusal::Unknown { .. })
    }
}

/// True when the leader counts `r` healthy: itself, or a follower it heard from recently.
fn healthy(r: &proto::admin::ReplicaStatus) -> bool {
    r.role == Role::Leader as i32 || r.role == Role::Follower as i32
}

/// Decides a change on the leader's status `st` (see the module docs).
pub fn guard(st: &ClusterStatusReply, id: u64, add: bool, force: bool) -> Result<(), Refusal> {
    let Some(target) = st.replicas.iter().find(|r| r.id == id) else {
        return Err(Refusal::Unknown {
            id,
            configured: st.replicas.iter().map(|r| r.id).collect(),
        });
    };
    if add {
        return if target.voter {
            Err(Refusal::AlreadyVoter(id))
        } else {
            Ok(())
        };
    }
    if !target.voter {
        return Err(Refusal::NotVoter(id));
    }
    let others: Vec<_> = st
        .replicas
        .iter()
        .filter(|r| r.voter && r.id != id)
        .collect();
    if others.is_empty() {
        return Err(Refusal::LastVoter(id));
    }
    let configured = st.replicas.len();
    let majority = configured / 2 + 1;
    let healthy_after = others.iter().filter(|r| healthy(r)).count();
    if healthy_after < majority && !force {
        return Err(Refusal::Quorum {
            id,
            healthy_after,
            configured,
            majority,
        });
    }
    Ok(())
}

/// The voters of `st`, sorted.
pub fn voters(st: &ClusterStatusReply) -> Vec<u64> {
    let mut v: Vec<u64> = st
        .replicas
        .iter()
        .filter(|r| r.voter)
        .map(|r| r.id)
        .collect();
    v.sort_unstable();
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::admin::ReplicaStatus;

    fn status(reps: &[(u64, bool, Role)]) -> ClusterStatusReply {
        ClusterStatusReply {
            self_id: 1,
            leader_id: 1,
            replicas: reps
                .iter()
                .map(|&(id, voter, role)| ReplicaStatus {
                    id,
                    voter,
                    role: role as i32,
                    ..ReplicaStatus::default()
                })
                .collect(),
            ..ClusterStatusReply::default()
        }
    }

    #[test]
    fn removals_keep_a_healthy_majority_unless_forced_and_never_the_last_voter() {
        use Role::{Follower, Leader, Unreachable, Unspecified};
        let all = status(&[(1, true, Leader), (2, true, Follower), (3, true, Follower)]);
        assert_eq!(guard(&all, 3, false, false), Ok(()));
        // 2 of 3 voters, both healthy: removing one leaves 1 < 2.
        let two = status(&[
            (1, true, Leader),
            (2, true, Follower),
            (3, false, Unspecified),
        ]);
        let q = guard(&two, 2, false, false).unwrap_err();
        assert_eq!(
            q,
            Refusal::Quorum {
                id: 2,
                healthy_after: 1,
                configured: 3,
                majority: 2
            }
        );
        assert!(!q.is_unknown());
        assert!(q.message().starts_with("E_NODE_MEMBERSHIP_QUORUM: "));
        assert_eq!(guard(&two, 2, false, true), Ok(()));
        assert_eq!(guard(&two, 1, false, true), Ok(()));
        // The only voter: never.
        let one = status(&[
            (1, true, Leader),
            (2, false, Unspecified),
            (3, false, Unspecified),
        ]);
        for force in [false, true] {
            let e = guard(&one, 1, false, force).unwrap_err();
            assert_eq!(e, Refusal::LastVoter(1));
            assert!(e.message().starts_with("E_NODE_MEMBERSHIP_LAST_VOTER: "));
        }
        // An unreachable voter is not healthy: removing a healthy one leaves 1 of 3.
        let sick = status(&[
            (1, true, Leader),
            (2, true, Unreachable),
            (3, true, Follower),
        ]);
        assert!(matches!(
            guard(&sick, 3, false, false),
            Err(Refusal::Quorum { .. })
        ));
        assert_eq!(guard(&sick, 2, false, false), Ok(()));
        // Nothing to change, or not configured.
        assert_eq!(guard(&all, 2, true, false), Err(Refusal::AlreadyVoter(2)));
        assert_eq!(guard(&two, 3, false, false), Err(Refusal::NotVoter(3)));
        assert_eq!(guard(&two, 3, true, false), Ok(()));
        let e = guard(&all, 9, true, false).unwrap_err();
        assert!(e.is_unknown());
    }
}
