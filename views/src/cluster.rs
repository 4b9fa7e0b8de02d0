//! The cluster's status as operators read it: the small table `sm-node status` and
//! `sm-node demo` print ([`status_text`]), and the WatchEvents texts of what changed between
//! two status polls of one replica ([`status_events`]).

use proto::admin::{ClusterStatusReply, Role};
use std::fmt::Write as _;

/// A Unix time in ms as the time of day in UTC (`HH:MM:SS.mmm UTC`), `-` for 0.
pub fn ms_to_utc(ms: u64) -> String {
    if ms == 0 {
        return "-".into();
    }
    let s = ms / 1000;
    format!(
        "{:02}:{:02}:{:02}.{:03} UTC",
        (s / 3600) % 24,
        (s / 60) % 60,
        s % 60,
        ms % 1000
    )
}

/// A cluster status as a small table.
pub fn status_text(st: &ClusterStatusReply) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "cluster (as seen by replica {}): term {}, leader {}, commit index {}, applied {}",
        st.self_id, st.term, st.leader_id, st.commit_index, st.applied_index
    );
    for r in &st.replicas {
        let role = Role::try_from(r.role)
            .map(|x| x.as_str_name().trim_start_matches("ROLE_").to_lowercase())
            .unwrap_or_default();
        let _ = writeln!(
            o,
            "  replica {} at {:<16} {:<12} match {:>6} lag {}",
            r.id, r.peer_address, role, r.match_index, r.lag
        );
    }
    if let Some(m) = &st.master {
        let _ = writeln!(
            o,
            "  master: replica {} (term {}, port 0x{:016x})",
            m.replica_id, m.term, m.sm_port_guid
        );
    }
    let _ = writeln!(
        o,
        "  SUBNET UP at {}, last sweep at {}, policy version {} (tenants version {}, QoS version {}), intent pending: {}",
        ms_to_utc(st.subnet_up_unix_ms),
        ms_to_utc(st.last_sweep_unix_ms),
        st.policy_version,
        st.tenants_version,
        st.qos_version,
        st.intent_pending
    );
    let _ = writeln!(o, "  programmed: {}", programmed(st));
    if st.leader_figures {
        let _ = writeln!(
            o,
            "  (match, lag and sweep times as the leader, replica {}, reported them)",
            st.leader_id
        );
    }
    o
}

/// What the master's last heavy sweep programmed, against the versions in force.
fn programmed(st: &ClusterStatusReply) -> String {
    let Some(v) = &st.programmed else {
        return "nothing yet (no heavy sweep of this master)".to_string();
    };
    let (p, t, q) = (v.policy, v.tenants, v.qos);
    if st.in_force_programmed() {
        format!("the versions in force (policy {p}, tenants {t}, QoS {q})")
    } else {
        format!(
            "policy {p}, tenants {t}, QoS {q} (the versions in force are not on the fabric yet)"
        )
    }
}

/// A follower's status `own` with the figures only the leader knows taken from the
/// leader's answer `leader`: every replica's role, match index and lag (a follower's Raft
/// has no progress of its peers), when the master last swept and reached SUBNET UP, and the
/// newer of the two policy and tenant versions. What is this replica's own (its id, term,
/// commit and applied index, its priority and port) stays.
pub fn with_leader_figures(
    own: ClusterStatusReply,
    leader: &ClusterStatusReply,
) -> ClusterStatusReply {
    let replicas = own
        .replicas
        .iter()
        .map(|r| match leader.replicas.iter().find(|l| l.id == r.id) {
            Some(l) => proto::admin::ReplicaStatus {
                role: l.role,
                match_index: l.match_index,
                lag: l.lag,
                priority: if r.priority != 0 {
                    r.priority
                } else {
                    l.priority
                },
                port_guid: if r.port_guid != 0 {
                    r.port_guid
                } else {
                    l.port_guid
                },
                ..r.clone()
            },
            None => r.clone(),
        })
        .collect();
    ClusterStatusReply {
        replicas,
        last_sweep_unix_ms: own.last_sweep_unix_ms.max(leader.last_sweep_unix_ms),
        subnet_up_unix_ms: if own.subnet_up_unix_ms != 0 {
            own.subnet_up_unix_ms
        } else {
            leader.subnet_up_unix_ms
        },
        policy_version: own.policy_version.max(leader.policy_version),
        tenants_version: own.tenants_version.max(leader.tenants_version),
        qos_version: own.qos_version.max(leader.qos_version),
        programmed: leader.programmed,
        leader_figures: true,
        ..own
    }
}

/// The events (kind, text) a replica's status `st` gives after the previous poll `prev`
/// (None: the first poll); `last_leader` is the last leader seen (0: none yet), so a new
/// leader after another one reads as a failover.
pub fn status_events(
    prev: Option<&ClusterStatusReply>,
    last_leader: u64,
    st: &ClusterStatusReply,
) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let Some(p) = prev else {
        out.push((
            "leader",
            format!(
                "watching replica {}: leader {} term {} policy version {}",
                st.self_id, st.leader_id, st.term, st.policy_version
            ),
        ));
        return out;
    };
    if st.leader_id != p.leader_id {
        if st.leader_id == 0 {
            out.push((
                "leader",
                format!(
                    "no leader (term {}): replica {} lost leadership",
                    st.term, p.leader_id
                ),
            ));
        } else if last_leader != 0 && last_leader != st.leader_id {
            out.push((
                "failover",
                format!(
                    "failover: master moved from replica {last_leader} to replica {} (term {})",
                    st.leader_id, st.term
                ),
            ));
        } else {
            out.push((
                "leader",
                format!("replica {} is leader (term {})", st.leader_id, st.term),
            ));
        }
    }
    if st.policy_version != p.policy_version {
        out.push((
            "policy",
            format!(
                "partition policy version {} in force (was {})",
                st.policy_version, p.policy_version
            ),
        ));
    }
    if st.tenants_version != p.tenants_version {
        out.push((
            "policy",
            format!(
                "tenant set version {} in force (was {}): the effective partition policy changed",
                st.tenants_version, p.tenants_version
            ),
        ));
    }
    if st.qos_version != p.qos_version {
        out.push((
            "policy",
            format!(
                "QoS policy version {} in force (was {})",
                st.qos_version, p.qos_version
            ),
        ));
    }
    if st.subnet_up_unix_ms != p.subnet_up_unix_ms && st.subnet_up_unix_ms != 0 {
        out.push(("subnet", "SUBNET UP".to_string()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(leader_id: u64, term: u64) -> ClusterStatusReply {
        ClusterStatusReply {
            self_id: 2,
            leader_id,
            term,
            ..Default::default()
        }
    }

    #[test]
    fn times_of_day_in_utc() {
        assert_eq!(ms_to_utc(0), "-");
        assert_eq!(ms_to_utc(86_400_000 + 3_723_004), "01:02:03.004 UTC");
    }

    #[test]
    fn leader_changes_read_as_leader_lost_or_failover() {
        let first = status_events(None, 0, &st(1, 1));
        assert_eq!(
            first,
            vec![(
                "leader",
                "watching replica 2: leader 1 term 1 policy version 0".to_string()
            )]
        );
        let lost = status_events(Some(&st(1, 1)), 1, &st(0, 2));
        assert_eq!(
            lost[0].1,
            "no leader (term 2): replica 1 lost leadership".to_string()
        );
        let moved = status_events(Some(&st(0, 2)), 1, &st(3, 2));
        assert_eq!(moved[0].0, "failover");
        let same = status_events(Some(&st(0, 2)), 1, &st(1, 2));
        assert_eq!(same[0].1, "replica 1 is leader (term 2)");
        let mut up = st(1, 2);
        up.subnet_up_unix_ms = 5;
        up.policy_version = 4;
        let kinds: Vec<_> = status_events(Some(&st(1, 2)), 1, &up)
            .into_iter()
            .map(|e| e.0)
            .collect();
        assert_eq!(kinds, vec!["policy", "subnet"]);
    }

    #[test]
    fn the_status_table_names_roles_and_the_master() {
        let mut s = st(1, 3);
        s.replicas = vec![proto::admin::ReplicaStatus {
            id: 1,
            role: Role::Leader as i32,
            ..Default::default()
        }];
        let t = status_text(&s);
        assert!(t.starts_with("cluster (as seen by replica 2): term 3, leader 1"));
        assert!(t.contains(" leader "), "{t}");
        assert!(t.contains("SUBNET UP at -, last sweep at -"), "{t}");
    }

    #[test]
    fn a_follower_reports_the_leaders_progress_and_sweeps() {
        let rs = |id: u64, role: Role, m: u64, prio: u32| proto::admin::ReplicaStatus {
            id,
            role: role as i32,
            match_index: m,
            priority: prio,
            ..Default::default()
        };
        let mut own = st(1, 3);
        own.commit_index = 40;
        own.replicas = vec![
            rs(1, Role::Leader, 0, 0),
            rs(2, Role::Follower, 0, 5),
            rs(3, Role::Follower, 0, 0),
        ];
        let mut leader = st(1, 3);
        leader.self_id = 1;
        leader.commit_index = 42;
        leader.last_sweep_unix_ms = 1000;
        leader.subnet_up_unix_ms = 900;
        leader.tenants_version = 2;
        leader.programmed = Some(proto::admin::PolicyVersions {
            tenants: 1,
            ..Default::default()
        });
        leader.replicas = vec![
            rs(1, Role::Leader, 42, 7),
            rs(2, Role::Follower, 41, 0),
            rs(3, Role::Unreachable, 12, 0),
        ];
        let m = with_leader_figures(own, &leader);
        assert_eq!((m.self_id, m.commit_index), (2, 40));
        let got: Vec<_> = m
            .replicas
            .iter()
            .map(|r| (r.id, r.match_index, r.priority, r.role))
            .collect();
        assert_eq!(
            got,
            vec![
                (1, 42, 7, Role::Leader as i32),
                (2, 41, 5, Role::Follower as i32),
                (3, 12, 0, Role::Unreachable as i32)
            ]
        );
        assert_eq!((m.last_sweep_unix_ms, m.subnet_up_unix_ms), (1000, 900));
        assert_eq!(m.tenants_version, 2);
        let t = status_text(&m);
        assert!(t.contains("match     42"), "{t}");
        assert!(t.contains("tenants version 2"), "{t}");
        assert!(t.contains("as the leader, replica 1, reported them"), "{t}");
        assert!(
            t.contains("programmed: policy 0, tenants 1, QoS 0 (the versions in force are not"),
            "{t}"
        );
    }

    #[test]
    fn the_status_says_whether_the_policies_in_force_are_programmed() {
        let mut s = st(1, 3);
        assert!(status_text(&s).contains("programmed: nothing yet"));
        (s.policy_version, s.qos_version) = (3, 2);
        s.programmed = Some(proto::admin::PolicyVersions {
            policy: 3,
            tenants: 0,
            qos: 2,
        });
        let t = status_text(&s);
        assert!(
            t.contains("programmed: the versions in force (policy 3, tenants 0, QoS 2)"),
            "{t}"
        );
        s.qos_version = 3;
        assert!(
            status_text(&s).contains("QoS 2 (the versions in force are not on the fabric yet)")
        );
    }

    #[test]
    fn light_sweeps_make_no_event_and_tenant_edits_do() {
        let mut a = st(1, 2);
        a.last_sweep_unix_ms = 10;
        let mut b = a.clone();
        b.last_sweep_unix_ms = 20;
        assert!(status_events(Some(&a), 1, &b).is_empty());
        b.tenants_version = 1;
        let e = status_events(Some(&a), 1, &b);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].0, "policy");
        assert!(e[0].1.starts_with("tenant set version 1"), "{e:?}");
    }
}
