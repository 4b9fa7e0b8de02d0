//! The `ClusterStatus` reply, built from the replica core's view of the cluster, the
//! replicated state and what only this process knows (its own priority and port, when the
//! master last swept).

use fabric::Guid;
use proto::admin::{ClusterStatusReply, MasterInfo, ReplicaStatus, Role};
use replica::ReplicatedState;
use replica_core::{CoreStatus, PeerRole, PolicyVersions};

/// What this replica knows of itself besides the core.
#[derive(Clone, Copy, Debug)]
pub struct Own {
    /// Configured SM priority.
    pub priority: u8,
    /// Its fabric port.
    pub port_guid: Guid,
    /// When its master last completed a sweep (Unix ms, 0: never).
    pub last_sweep_unix_ms: u64,
    /// When its master first reached SUBNET UP (Unix ms, 0: never).
    pub subnet_up_unix_ms: u64,
    /// What its master's last completed heavy sweep programmed (None: none yet).
    pub programmed: Option<PolicyVersions>,
}

fn role(r: PeerRole) -> Role {
    match r {
        PeerRole::Leader => Role::Leader,
        PeerRole::Follower => Role::Follower,
        PeerRole::Candidate => Role::Candidate,
        PeerRole::PreCandidate => Role::PreCandidate,
        PeerRole::Unreachable => Role::Unreachable,
        PeerRole::Unknown => Role::Unspecified,
    }
}

/// The reply.
pub fn reply(st: &CoreStatus, state: &ReplicatedState, own: Own) -> ClusterStatusReply {
    let replicas = st
        .replicas
        .iter()
        .map(|p| {
            let is_self = p.id == st.self_id;
            ReplicaStatus {
                id: p.id,
                peer_address: p.address.clone(),
                admin_address: p.address.clone(),
                priority: if is_self { u32::from(own.priority) } else { 0 },
                port_guid: if is_self { own.port_guid.0 } else { 0 },
                role: role(p.role) as i32,
                match_index: p.match_index,
                voter: p.voter,
                lag: p.lag,
            }
        })
        .collect();
    ClusterStatusReply {
        self_id: st.self_id,
        term: st.term,
        leader_id: st.leader_id,
        commit_index: st.commit_index,
        applied_index: st.applied_index,
        replicas,
        master: state.master().map(|m| MasterInfo {
            term: m.term,
            replica_id: m.replica_id,
            sm_port_guid: m.sm_port_guid,
            sm_lid: m.sm_lid,
        }),
        last_sweep_unix_ms: own.last_sweep_unix_ms,
        subnet_up_unix_ms: own.subnet_up_unix_ms,
        policy_version: state.policy().version,
        intent_pending: state.pending_intent().is_some(),
        tenants_version: state.tenants().version,
        leader_figures: false,
        qos_version: state.qos_policy().version,
        programmed: own.programmed.map(|v| proto::admin::PolicyVersions {
            policy: v.partitions,
            tenants: v.tenants,
            qos: v.qos,
        }),
    }
}
