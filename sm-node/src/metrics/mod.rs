//! Prometheus metrics of a replica: the registry is the `sm-metrics` crate (one per process,
//! every family in docs/metrics.md); this module serves it on a small HTTP listener
//! (`metrics-listen`, `GET /metrics`, see [`spawn`]) and reads the Raft figures at scrape
//! time ([`render`]). Glue only.

mod http;

pub use http::spawn;
pub use sm_metrics::*;

use crate::cluster::raft_actor::{GetClusterStatus, RaftActor};
use actix::Addr;

/// The metrics text of this replica now: the Raft gauges read from `raft`, then the registry.
pub async fn render(raft: &Addr<RaftActor>, format: Format) -> String {
    if let Ok(st) = raft.send(GetClusterStatus).await {
        set_raft(RaftFigures {
            term: st.term,
            commit_index: st.commit_index,
            applied_index: st.applied_index,
            leader_id: st.leader_id,
            self_id: st.self_id,
            policy_version: st.policy_version,
        });
    }
    encode(format)
}
