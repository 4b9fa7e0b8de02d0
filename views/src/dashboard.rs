//! What the operator dashboard shows, from admin API replies: what it keeps in memory (a
//! ring buffer of metric samples, one a second, taken from the replica's cluster status, for
//! the sparklines; the recent events from the source WatchEvents uses, fanned out to every
//! open page), and the JSON of its status and tenants pages ([`status_json`],
//! [`tenants_json`]). The daemon's dashboard server asks, times and serves.

use proto::admin::{
    ClusterStatusReply, Event, GetLinkHealthReply, ListNodesReply, ListTenantsReply, Role,
    SmInfoReply,
};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::VecDeque;

/// Samples kept (10 minutes at one a second).
pub const SAMPLES: usize = 600;
/// Events kept for pages that open later.
pub const EVENTS: usize = 100;

/// One metric sample.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Sample {
    /// Unix time, ms.
    pub unix_ms: u64,
    /// Raft term.
    pub term: u64,
    /// Commit index.
    pub commit_index: u64,
    /// Entries committed since the previous sample.
    pub commits: u64,
    /// Largest replica lag the answering replica knows.
    pub max_lag: u64,
    /// Leader id (0: none).
    pub leader_id: u64,
    /// Events seen since the previous sample.
    pub events: u64,
}

/// Ring buffer of samples.
#[derive(Debug, Default)]
pub struct Samples {
    ring: VecDeque<Sample>,
    events_since: u64,
}

impl Samples {
    /// Counts one event into the next sample.
    pub fn count_event(&mut self) {
        self.events_since += 1;
    }

    /// Adds a sample from a status read at `unix_ms`.
    pub fn push(&mut self, unix_ms: u64, st: &ClusterStatusReply) {
        let prev = self.ring.back().map_or(st.commit_index, |s| s.commit_index);
        let s = Sample {
            unix_ms,
            term: st.term,
            commit_index: st.commit_index,
            commits: st.commit_index.saturating_sub(prev),
            max_lag: st.replicas.iter().map(|r| r.lag).max().unwrap_or(0),
            leader_id: st.leader_id,
            events: std::mem::take(&mut self.events_since),
        };
        if self.ring.len() == SAMPLES {
            self.ring.pop_front();
        }
        self.ring.push_back(s);
    }

    /// Samples, oldest first.
    pub fn all(&self) -> Vec<Sample> {
        self.ring.iter().cloned().collect()
    }
}

/// An event as the page receives it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PageEvent {
    /// Sequence number on this replica (the page skips what it already has).
    pub seq: u64,
    /// Unix time, ms.
    pub unix_ms: u64,
    /// Kind (sweep, trap, port, leader, failover, policy, subnet).
    pub kind: String,
    /// Text.
    pub text: String,
    /// Term.
    pub term: u64,
    /// Leader id.
    pub leader_id: u64,
}

/// Recent events.
#[derive(Debug, Default)]
pub struct Recent {
    ring: VecDeque<PageEvent>,
    next: u64,
}

impl Recent {
    /// Records an event and returns it numbered.
    pub fn push(&mut self, e: &Event) -> PageEvent {
        self.next += 1;
        let p = PageEvent {
            seq: self.next,
            unix_ms: e.unix_ms,
            kind: e.kind.clone(),
            text: e.text.clone(),
            term: e.term,
            leader_id: e.leader_id,
        };
        if self.ring.len() == EVENTS {
            self.ring.pop_front();
        }
        self.ring.push_back(p.clone());
        p
    }

    /// Events, oldest first.
    pub fn all(&self) -> Vec<PageEvent> {
        self.ring.iter().cloned().collect()
    }
}

/// The WatchEvents text of a light sweep (`sweep` kind).
pub fn light_sweep_text(smps: u64, changed: bool) -> String {
    format!("light sweep complete: {smps} SMPs, changes seen: {changed}")
}

/// Whether the dashboard's event feed shows `e`: every event but a light sweep that saw
/// no change (one every sweep interval would flood the feed; a change shows as the heavy
/// sweep that follows).
pub fn in_feed(e: &Event) -> bool {
    !(e.kind == "sweep" && e.text.starts_with("light sweep") && e.text.ends_with("false"))
}

/// An alarm on the status page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Alarm {
    /// Replica concerned (0: the cluster).
    pub replica: u64,
    /// What is wrong, for the operator.
    pub text: String,
}

/// The alarms of a cluster status: no leader (nothing is programmed), and every replica
/// the leader cannot reach (dead, stopped or cut off: one more loss stops the cluster).
/// A follower's status carries the leader's view of the replicas when it could ask it
/// ([`crate::cluster::with_leader_figures`]); without it, a follower cannot tell.
pub fn alarms(st: &ClusterStatusReply) -> Vec<Alarm> {
    let mut out = Vec::new();
    if st.leader_id == 0 {
        out.push(Alarm {
            replica: 0,
            text: format!(
                "no leader seen by replica {} (term {}): no master SM, nothing is programmed",
                st.self_id, st.term
            ),
        });
    }
    for r in &st.replicas {
        if r.role == Role::Unreachable as i32 {
            out.push(Alarm {
                replica: r.id,
                text: format!(
                    "replica {} ({}) does not answer the leader: dead, stopped or cut off (match index {}, lag {})",
                    r.id, r.peer_address, r.match_index, r.lag
                ),
            });
        }
    }
    out
}

/// How long a rogue-SM alarm (WatchEvents kind `rogue`) stays on the status page.
pub const ROGUE_ALARM_MS: u64 = 10 * 60 * 1000;

/// An alarm per rogue-SM event of the last [`ROGUE_ALARM_MS`] before `now_ms` (another SM
/// acting behind the master's back: the text names its port GUID and LID), newest first,
/// at most 10.
pub fn rogue_alarms(recent: &[PageEvent], now_ms: u64) -> Vec<Alarm> {
    (recent.iter().rev())
        .filter(|e| e.kind == "rogue" && now_ms.saturating_sub(e.unix_ms) <= ROGUE_ALARM_MS)
        .take(10)
        .map(|e| Alarm {
            replica: 0,
            text: format!("another SM: {}", e.text),
        })
        .collect()
}

/// An alarm per link the performance manager sees degraded or down (the master's link
/// health; ok links are no alarm).
pub fn link_alarms(h: &GetLinkHealthReply) -> Vec<Alarm> {
    h.links
        .iter()
        .filter(|l| l.health != "ok")
        .map(|l| {
            let a = l.a.clone().unwrap_or_default();
            let b = l.b.clone().unwrap_or_default();
            Alarm {
                replica: 0,
                text: format!(
                    "link {:#018x}[{}] \"{}\" <-> {:#018x}[{}] \"{}\" {}: {}",
                    a.node_guid,
                    a.port,
                    a.description,
                    b.node_guid,
                    b.port,
                    b.description,
                    l.health,
                    l.why
                ),
            }
        })
        .collect()
}

/// The status page: the cluster as this replica sees it, the master's SMInfo when one
/// answers, and the fabric's counts from ListNodes.
pub fn status_json(
    st: &ClusterStatusReply,
    sm: Option<&SmInfoReply>,
    nodes: &ListNodesReply,
    health: Option<&GetLinkHealthReply>,
    rogue: Vec<Alarm>,
) -> Value {
    let mut alarms = alarms(st);
    alarms.extend(rogue);
    alarms.extend(health.map(link_alarms).unwrap_or_default());
    let count = |h: &str| health.map(|l| l.links.iter().filter(|r| r.health == h).count());
    let switches = nodes
        .nodes
        .iter()
        .filter(|n| n.node_type == "switch")
        .count();
    let links: usize = nodes.nodes.iter().map(|n| n.links.len()).sum::<usize>() / 2;
    json!({
        "self_id": st.self_id,
        "term": st.term,
        "leader_id": st.leader_id,
        "commit_index": st.commit_index,
        "applied_index": st.applied_index,
        "last_sweep_unix_ms": st.last_sweep_unix_ms,
        "subnet_up_unix_ms": st.subnet_up_unix_ms,
        "policy_version": st.policy_version,
        "tenants_version": st.tenants_version,
        "leader_figures": st.leader_figures,
        "intent_pending": st.intent_pending,
        "alarms": alarms,
        "link_health": health.map(|_| json!({
            "ok": count("ok"), "degraded": count("degraded"), "down": count("down"),
        })),
        "replicas": st.replicas.iter().map(|r| json!({
            "id": r.id, "admin_address": r.admin_address, "priority": r.priority,
            "role": Role::label(r.role), "match_index": r.match_index, "lag": r.lag,
            "voter": r.voter,
        })).collect::<Vec<_>>(),
        "sm": sm.map(|s| json!({
            "sm_guid": format!("{:#018x}", s.sm_guid), "sm_lid": s.sm_lid,
            "state": s.state_name, "priority": s.priority, "term": s.term,
            "replica_id": s.replica_id, "activity_count": s.activity_count,
        })),
        "fabric": {
            "nodes": nodes.nodes.len(),
            "switches": switches,
            "hosts": nodes.nodes.len() - switches,
            "links": links,
        },
    })
}

/// The tenants page: the set's version, each resolved tenant and storage partition, and the
/// compile warnings.
pub fn tenants_json(r: &ListTenantsReply) -> Value {
    json!({
        "version": r.tenants.as_ref().map_or(0, |t| t.version),
        "resolved": r.resolved.iter().map(|t| json!({
            "name": t.name, "pkey": format!("{:#06x}", t.pkey), "kind": t.kind,
            "ports": t.ports.len(),
        })).collect::<Vec<_>>(),
        "warnings": r.warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::admin::ReplicaStatus;

    #[test]
    fn samples_ring_counts_commits_lag_and_events() {
        let mut s = Samples::default();
        let st = |commit: u64, lag: u64| ClusterStatusReply {
            commit_index: commit,
            replicas: vec![
                ReplicaStatus {
                    lag,
                    ..Default::default()
                },
                ReplicaStatus::default(),
            ],
            ..Default::default()
        };
        s.push(1, &st(10, 0));
        s.count_event();
        s.count_event();
        s.push(2, &st(15, 3));
        let all = s.all();
        assert_eq!((all[0].commits, all[1].commits), (0, 5));
        assert_eq!((all[1].max_lag, all[1].events, all[0].events), (3, 2, 0));
        for i in 0..SAMPLES as u64 {
            s.push(3 + i, &st(20 + i, 0));
        }
        let all = s.all();
        assert_eq!(all.len(), SAMPLES);
        assert_eq!(all[0].unix_ms, 3);
    }

    #[test]
    fn a_dead_replica_and_no_leader_are_alarms() {
        let r = |id: u64, role: Role| ReplicaStatus {
            id,
            role: role as i32,
            peer_address: format!("127.0.0.1:710{id}"),
            ..Default::default()
        };
        let mut st = ClusterStatusReply {
            self_id: 1,
            leader_id: 1,
            term: 4,
            replicas: vec![r(1, Role::Leader), r(2, Role::Follower)],
            ..Default::default()
        };
        assert!(alarms(&st).is_empty());
        st.replicas.push(r(3, Role::Unreachable));
        let a = alarms(&st);
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].replica, 3);
        assert!(
            a[0].text
                .starts_with("replica 3 (127.0.0.1:7103) does not answer")
        );
        st.leader_id = 0;
        assert_eq!(alarms(&st).len(), 2);
        let j = status_json(&st, None, &ListNodesReply::default(), None, Vec::new());
        assert_eq!(j["alarms"].as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn rogue_events_of_the_last_ten_minutes_are_alarms() {
        let ev = |seq, kind: &str, unix_ms| PageEvent {
            seq,
            unix_ms,
            kind: kind.into(),
            text: format!("E_NODE_ROGUE: event {seq}"),
            term: 1,
            leader_id: 1,
        };
        let now = 100 * ROGUE_ALARM_MS;
        let recent = [
            ev(1, "rogue", now - ROGUE_ALARM_MS - 1),
            ev(2, "sweep", now - 5),
            ev(3, "rogue", now - ROGUE_ALARM_MS),
            ev(4, "rogue", now),
        ];
        let a = rogue_alarms(&recent, now);
        let texts: Vec<&str> = a.iter().map(|x| x.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "another SM: E_NODE_ROGUE: event 4",
                "another SM: E_NODE_ROGUE: event 3"
            ]
        );
        let st = ClusterStatusReply {
            leader_id: 1,
            ..Default::default()
        };
        let j = status_json(&st, None, &ListNodesReply::default(), None, a);
        assert_eq!(j["alarms"].as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn quiet_light_sweeps_stay_out_of_the_feed() {
        let ev = |kind: &str, text: String| Event {
            kind: kind.into(),
            text,
            ..Default::default()
        };
        assert!(!in_feed(&ev("sweep", light_sweep_text(54, false))));
        assert!(in_feed(&ev("sweep", light_sweep_text(54, true))));
        assert!(in_feed(&ev("sweep", "heavy sweep 3 complete".into())));
        assert!(in_feed(&ev("trap", "trap 128 received".into())));
    }

    #[test]
    fn recent_events_are_numbered_and_bounded() {
        let mut r = Recent::default();
        for i in 0..(EVENTS as u64 + 5) {
            let p = r.push(&Event {
                unix_ms: i,
                kind: "sweep".into(),
                ..Default::default()
            });
            assert_eq!(p.seq, i + 1);
        }
        let all = r.all();
        assert_eq!(all.len(), EVENTS);
        assert_eq!(all[0].seq, 6);
    }
}
