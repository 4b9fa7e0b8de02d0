//! The operator procedure for replacing a replica's disk (docs/replica-core.md): stop the
//! replica, give it an empty data directory, start it again (`--initial-cluster-state` left
//! at `existing`). It recovers its log from the leader without voting, then serves as
//! before; nothing acknowledged is lost and the fabric is not reprogrammed.

use proto::admin::{ApplyPolicyRequest, GetPolicyRequest};
use sm_node::cluster::harness::LocalCluster;
use std::path::PathBuf;
use std::time::Duration;

const BOUND: Duration = Duration::from_secs(60);

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_sm-node"))
}

#[test]
fn a_replica_on_a_new_disk_recovers_its_log_before_it_votes() {
    let d = std::env::temp_dir().join(format!("smnode-disk-{}", std::process::id()));
    let mut c = LocalCluster::new(&bin(), "ft2:8", 3, &d).unwrap();
    // Small snapshots, so the new disk is filled from a snapshot and entries.
    c.common
        .extend(["--snapshot-every".to_string(), "10".to_string()]);
    c.start_all().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let st = c.wait_serving(0, BOUND).await.unwrap();
        let leader = st.leader_id;
        let replaced = (1..=3).find(|i| *i != leader).unwrap();
        let mut a = c.admin(leader).unwrap();
        let mut text = String::new();
        for v in 0..25u64 {
            text = format!(
                "Default=0x7fff : ALL=full ;\nP{v}=0x{:04x} : ALL=full ;\n",
                2 + v
            );
            a.apply_policy(ApplyPolicyRequest {
                text: text.clone(),
                expected_version: v,
                request_id: 0,
            })
            .await
            .unwrap();
        }
        // Every acknowledged apply is committed at or below this index.
        let committed = c.status(leader).await.unwrap().commit_index;
        // The procedure: stop it, new (empty) disk, start it.
        c.kill9(replaced);
        c.start_on_new_disk(replaced).unwrap();
        // A follower's status carries the leader's policy version (`with_leader_figures`),
        // so wait on its own applied index: its local read below then sees all 25 applies.
        c.wait_status(replaced, BOUND, |s| {
            s.applied_index >= committed && s.leader_id != 0
        })
        .await
        .unwrap();
        let p = c
            .admin(replaced)
            .unwrap()
            .get_policy(GetPolicyRequest::default())
            .await
            .unwrap()
            .into_inner();
        assert_eq!(p.version, 25);
        assert_eq!(p.text, text);
        let log_of = |id: u64| std::fs::read_to_string(d.join(format!("replica{id}.log"))).unwrap();
        // Wait (bounded, by polls) for the recovery to end: an entry of the leader's term.
        let mut recovered = false;
        for _ in 0..600 {
            if log_of(replaced).contains("log recovered up to index") {
                recovered = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let log = log_of(replaced);
        assert!(
            log.contains("RCORE-W001"),
            "it knew it recovers a lost log:\n{log}"
        );
        assert!(recovered, "the recovery never ended:\n{log}");
        // It votes again: with the old leader stopped, the two others elect a new master.
        c.kill9(leader);
        let st = c.wait_serving(0, BOUND).await.unwrap();
        assert_ne!(st.leader_id, leader);
        assert_eq!(st.policy_version, 25, "an acknowledged policy was lost");
    });
    drop(c);
    let _ = std::fs::remove_dir_all(&d);
}
