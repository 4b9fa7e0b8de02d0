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
        "  SUBNET UP at {}, last sweep at {}, policy version {}, intent pending: {}",
        ms_to_utc(st.subnet_up_unix_ms),
        ms_to_utc(st.last_sweep_unix_ms),
        st.policy_version,
        st.intent_pending
    );
    o
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
    if st.last_sweep_unix_ms != p.last_sweep_unix_ms && st.last_sweep_unix_ms != 0 {
        out.push((
            "sweep",
            "sweep complete on this replica (master)".to_string(),
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
}
