//! SM priority as a preference: while this replica leads, every half second it asks the
//! other replicas for their priority and port GUID (their own entry of `ClusterStatus`) and
//! hands them to the replica core, which decides (`ReplicaCore::consider_priorities`): a
//! healthy, caught-up replica whose priority is higher than its own takes leadership (among
//! several, the highest priority, ties to the lower port GUID). Equal priorities never move
//! leadership, so a cluster of equals does not churn.

use super::raft_actor::{ConsiderPriorities, GetClusterStatus, RaftActor};
use actix::Addr;
use fabric::Guid;
use proto::admin::ClusterStatusRequest;
use proto::admin::sm_admin_client::SmAdminClient;
use std::time::Duration;

/// How often the leader looks.
pub const PERIOD: Duration = Duration::from_millis(500);

/// Starts the preference loop on the current tokio runtime.
pub fn spawn(raft: Addr<RaftActor>) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(PERIOD);
        loop {
            tick.tick().await;
            let Ok(st) = raft.send(GetClusterStatus).await else {
                return; // the actor is gone
            };
            if st.leader_id != st.self_id {
                continue;
            }
            let mut peers = Vec::new();
            for r in st.replicas.iter().filter(|r| r.id != st.self_id) {
                // Healthy and caught up in the leader's view.
                if r.match_index == 0 || r.lag != 0 {
                    continue;
                }
                let Ok(ch) = super::net::channel(&r.admin_address) else {
                    continue;
                };
                let mut c = SmAdminClient::new(ch);
                let fut = c.cluster_status(ClusterStatusRequest::default());
                let Ok(Ok(rep)) = tokio::time::timeout(Duration::from_millis(300), fut).await
                else {
                    continue;
                };
                let rep = rep.into_inner();
                if let Some(own) = rep.replicas.iter().find(|x| x.id == rep.self_id) {
                    let p = u8::try_from(own.priority).unwrap_or(u8::MAX);
                    peers.push((r.id, p, Guid(own.port_guid)));
                }
            }
            if !peers.is_empty() && raft.send(ConsiderPriorities(peers)).await.is_err() {
                return;
            }
        }
    });
}
