//! [`CoreStatus`]: the cluster as this replica sees it (the admin API builds its reply from
//! it).

use crate::core::ReplicaCore;
use raft::StateRole;
use storage::RaftLog;

/// What a replica is, as seen from this one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeerRole {
    /// Raft leader.
    Leader,
    /// Following (this replica, or a peer the leader heard from recently).
    Follower,
    /// Campaigning.
    Candidate,
    /// Pre-vote campaign.
    PreCandidate,
    /// The leader has not heard from it recently.
    Unreachable,
    /// Not known from here (a follower knows little of its peers).
    Unknown,
}

/// One replica in [`CoreStatus`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerView {
    /// Raft id.
    pub id: u64,
    /// Address from the configuration.
    pub address: String,
    /// Its role as seen from here.
    pub role: PeerRole,
    /// Highest log index known to be on it (self: last index; others: only the leader knows,
    /// else 0).
    pub match_index: u64,
    /// Entries it lags behind the commit index (0 when unknown).
    pub lag: u64,
    /// A voter of the current membership.
    pub voter: bool,
}

/// The cluster as this replica sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreStatus {
    /// This replica.
    pub self_id: u64,
    /// Current term.
    pub term: u64,
    /// Known leader (0: none).
    pub leader_id: u64,
    /// Commit index.
    pub commit_index: u64,
    /// Applied index.
    pub applied_index: u64,
    /// Every configured replica.
    pub replicas: Vec<PeerView>,
}

impl<S: RaftLog + Clone> ReplicaCore<S> {
    /// The cluster as this replica sees it.
    pub fn status(&self) -> CoreStatus {
        let raft = &self.raw.raft;
        let leader = raft.state == StateRole::Leader;
        let commit = raft.raft_log.committed;
        let replicas = self
            .cfg
            .peers
            .iter()
            .map(|(id, addr)| {
                let is_self = *id == self.cfg.id;
                let pr = if leader { raft.prs().get(*id) } else { None };
                let role = if is_self {
                    match raft.state {
                        StateRole::Leader => PeerRole::Leader,
                        StateRole::Follower => PeerRole::Follower,
                        StateRole::Candidate => PeerRole::Candidate,
                        StateRole::PreCandidate => PeerRole::PreCandidate,
                    }
                } else if *id == raft.leader_id {
                    PeerRole::Leader
                } else {
                    match pr {
                        Some(p) if p.recent_active => PeerRole::Follower,
                        Some(_) => PeerRole::Unreachable,
                        None => PeerRole::Unknown,
                    }
                };
                let matched = if is_self {
                    raft.raft_log.last_index()
                } else {
                    pr.map_or(0, |p| p.matched)
                };
                let known = leader || is_self;
                PeerView {
                    id: *id,
                    address: addr.clone(),
                    role,
                    match_index: if known { matched } else { 0 },
                    lag: if known {
                        commit.saturating_sub(matched)
                    } else {
                        0
                    },
                    voter: raft.prs().conf().voters().contains(*id),
                }
            })
            .collect();
        CoreStatus {
            self_id: self.cfg.id,
            term: raft.term,
            leader_id: raft.leader_id,
            commit_index: commit,
            applied_index: self.state.applied_index(),
            replicas,
        }
    }
}
