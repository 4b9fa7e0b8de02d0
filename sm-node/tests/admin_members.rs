//! Membership and linearizable reads on process clusters:
//! * a 4th replica (configured as a peer, not an initial voter) joins through ChangeMembership
//!   on a follower, catches up and serves; `smctl members remove 4` removes it, and with it
//!   gone and one more follower killed the two remaining voters of three still commit (with
//!   4 still a voter, 2 of 4 would be no quorum);
//! * linearizable reads go through a ReadIndex round: read-your-writes across replicas, and a
//!   leader cut off from its followers refuses a linearizable read (UNAVAILABLE) while it
//!   still answers a plain one from its applied state.

mod common;

use proto::admin::*;
use sm_node::cluster::harness::LocalCluster;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tonic::Code;

const BOUND: Duration = Duration::from_secs(60);

fn dir(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("smnode-members-{name}-{}", std::process::id()))
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn policy(n: u16) -> String {
    format!("Default=0x7fff : ALL=full ;\nP{n}=0x{n:04x} : ALL=full ;\n")
}

fn voter(s: &ClusterStatusReply, id: u64) -> bool {
    s.replicas.iter().any(|r| r.id == id && r.voter)
}

#[test]
fn a_fourth_replica_joins_and_leaves() {
    let smctl_bin = common::smctl::bin();
    let d = dir("join");
    let mut c = LocalCluster::new(
        &PathBuf::from(env!("CARGO_BIN_EXE_sm-node")),
        "ft2:8",
        4,
        &d,
    )
    .unwrap();
    c.common
        .extend(["--voters".to_string(), "1,2,3".to_string()]);
    for id in 1..=3 {
        c.start(id).unwrap();
    }
    let addr4 = c.replicas[3].addr.clone();
    rt().block_on(async {
        let st = c.wait_serving(0, BOUND).await.unwrap();
        let leader = st.leader_id;
        assert!((1..=3).all(|i| voter(&st, i)) && !voter(&st, 4), "{st:?}");
        let follower = (1..=3).find(|i| *i != leader).unwrap();
        let other = (1..=3).find(|i| *i != leader && *i != follower).unwrap();
        c.wait_status(follower, BOUND, |s| s.leader_id == leader)
            .await
            .unwrap();

        // Replica 4 starts as a non-voter and is added through a follower.
        c.start(4).unwrap();
        let mut fa = c.admin(follower).unwrap();
        let r = fa
            .change_membership(ChangeMembershipRequest {
                id: 4,
                add: true,
                force: false,
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.leader_id, leader);
        let st = c
            .wait_status(leader, BOUND, |s| {
                voter(s, 4)
                    && s.replicas
                        .iter()
                        .any(|r| r.id == 4 && r.match_index >= s.commit_index)
            })
            .await
            .unwrap();
        assert!((1..=4).all(|i| voter(&st, i)), "{st:?}");
        // A write through the new replica commits (forwarded to the leader) and the new
        // replica applies it.
        let mut a4 = c.admin(4).unwrap();
        let v = a4
            .apply_policy(ApplyPolicyRequest {
                text: policy(2),
                expected_version: 0,
                request_id: 0,
            })
            .await
            .unwrap()
            .into_inner()
            .version;
        c.wait_status(4, BOUND, |s| {
            s.policy_version == v && s.leader_id == leader && voter(s, 4)
        })
        .await
        .unwrap();

        // Removed with smctl (through replica 4 itself, forwarded to the leader).
        let out = std::process::Command::new(smctl_bin)
            .args(["--server", &addr4, "members", "remove", "4"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "smctl members remove: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("remove replica 4"), "{text}");
        c.wait_status(leader, BOUND, |s| !voter(s, 4) && voter(s, other))
            .await
            .unwrap();
        // With 4 gone and one more follower killed, 2 of 3 voters still commit.
        c.kill9(4);
        c.kill9(other);
        let mut la = c.admin(leader).unwrap();
        let t0 = Instant::now();
        let v2 = loop {
            match la
                .apply_policy(ApplyPolicyRequest {
                    text: policy(3),
                    expected_version: v,
                    request_id: 0,
                })
                .await
            {
                Ok(r) => break r.into_inner().version,
                Err(e) => {
                    assert!(t0.elapsed() < BOUND, "no commit with 2 of 3 voters: {e:?}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        };
        assert_eq!(v2, v + 1);
    });
    drop(c);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn linearizable_reads_confirm_leadership() {
    let d = dir("lin");
    let mut c = LocalCluster::new(
        &PathBuf::from(env!("CARGO_BIN_EXE_sm-node")),
        "ft2:8",
        3,
        &d,
    )
    .unwrap();
    c.start_all().unwrap();
    rt().block_on(async {
        let st = c.wait_serving(0, BOUND).await.unwrap();
        let leader = st.leader_id;
        let f1 = (1..=3).find(|i| *i != leader).unwrap();
        let f2 = (1..=3).find(|i| *i != leader && *i != f1).unwrap();
        for id in [f1, f2] {
            c.wait_status(id, BOUND, |s| s.leader_id == leader)
                .await
                .unwrap();
        }
        // Read-your-writes across replicas: written through f1, read linearizably on f2
        // (forwarded to the leader, which confirms with ReadIndex) and on the leader.
        let mut a1 = c.admin(f1).unwrap();
        let v = a1
            .apply_policy(ApplyPolicyRequest {
                text: policy(5),
                expected_version: 0,
                request_id: 0,
            })
            .await
            .unwrap()
            .into_inner()
            .version;
        for id in [f2, leader] {
            let g = c
                .admin(id)
                .unwrap()
                .get_policy(GetPolicyRequest { linearizable: true })
                .await
                .unwrap()
                .into_inner();
            assert_eq!(g.version, v, "replica {id}");
            assert_eq!(g.text, policy(5));
        }
        let s = c
            .admin(f2)
            .unwrap()
            .sm_info(SmInfoRequest { linearizable: true })
            .await
            .unwrap()
            .into_inner();
        assert_ne!(s.sm_lid, 0);
        c.wait_programmed(BOUND).await.unwrap();

        // Cut the leader off: both followers killed. A plain read is still answered from
        // the applied state; a linearizable one is refused (no quorum confirms the
        // leadership), even while the old lease would still be running.
        let mut la = c.admin(leader).unwrap();
        c.kill9(f1);
        c.kill9(f2);
        let e = la
            .get_policy(GetPolicyRequest { linearizable: true })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::Unavailable, "{e:?}");
        let g = la
            .get_policy(GetPolicyRequest {
                linearizable: false,
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(g.version, v);
    });
    drop(c);
    let _ = std::fs::remove_dir_all(&d);
}
