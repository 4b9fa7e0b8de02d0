//! `smctl sweep --heavy` on a process cluster: asked through a follower, it follows the
//! master until the heavy sweep completes and prints when; a light sweep only asks.

mod common;

use sm_node::cluster::harness::LocalCluster;
use std::path::PathBuf;
use std::time::Duration;

const BOUND: Duration = Duration::from_secs(60);

#[test]
fn heavy_sweep_is_followed_to_completion() {
    let smctl_bin = common::smctl::bin();
    let d = std::env::temp_dir().join(format!("smnode-smctl-sweep-{}", std::process::id()));
    let mut c = LocalCluster::new(
        &PathBuf::from(env!("CARGO_BIN_EXE_sm-node")),
        "ft2:8",
        3,
        &d,
    )
    .unwrap();
    c.start_all().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let st = rt.block_on(c.wait_serving(0, BOUND)).unwrap();
    let leader = st.leader_id;
    let master_status = |c: &LocalCluster| {
        rt.block_on(async {
            let mut a = c.admin(leader).unwrap();
            a.cluster_status(proto::admin::ClusterStatusRequest::default())
                .await
                .unwrap()
                .into_inner()
        })
    };
    let before = master_status(&c).last_sweep_unix_ms;
    let follower = c
        .replicas
        .iter()
        .find(|r| r.id != leader)
        .unwrap()
        .addr
        .clone();
    let smctl = |args: &[&str]| {
        std::process::Command::new(smctl_bin)
            .args(["--server", &follower])
            .args(args)
            .output()
            .unwrap()
    };
    let out = smctl(&["sweep", "--heavy"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(&format!(
            "heavy sweep requested from the master (replica {leader})"
        )),
        "{text}"
    );
    assert!(text.contains("heavy sweep complete at"), "{text}");
    // When smctl says complete, the master's own record has moved past the request.
    assert!(master_status(&c).last_sweep_unix_ms > before);

    let out = smctl(&["sweep"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("light sweep requested"), "{text}");
    assert!(!text.contains("complete"), "{text}");
    drop(c);
    let _ = std::fs::remove_dir_all(&d);
}
