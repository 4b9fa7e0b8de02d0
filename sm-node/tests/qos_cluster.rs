//! QoS in a three-replica cluster over fabric-simd (issue 19): with `[qos] enabled = true`
//! the master writes the SLtoVL and VLArb tables and records them in the replicated state
//! (every replica answers GetVlTables with them); ApplyQosPolicy keeps the partition
//! policy's rules (a text that does not parse is refused with its line and column, a stale
//! version is refused, neither changes anything) and a policy whose qos-setup changes the
//! hosts' tables rewrites only their blocks; after kill -9 of the master, the new master
//! (seeded from the log) writes no SLtoVL and no VLArb block on the unchanged fabric.
//!
//! Every wait is a failure bound only; the check that the new master wrote nothing waits for
//! the heavy sweep that would have written it (`LocalCluster::heavy_sweeps_since`), never for time to pass.

use proto::admin::{ApplyPolicyRequest, GetPolicyRequest, GetVlTablesRequest, TriggerSweepRequest};
use sm_node::cluster::harness::{LocalCluster, ca_ports};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const BOUND: Duration = Duration::from_secs(60);
const SL2VL: u16 = 0x17;
const VLARB: u16 = 0x18;

const HOSTS_SCOPE: &str = "\
port-groups
    port-group
        name: Hosts
        node-type: CA
    end-port-group
end-port-groups
qos-setup
    sl2vl-tables
        sl2vl-scope
            group: Hosts
            sl2vl-table: 1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1
        end-sl2vl-scope
    end-sl2vl-tables
end-qos-setup
qos-levels
    qos-level
        name: DEFAULT
        sl: 0
    end-qos-level
end-qos-levels
";

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Asks replica `id` for a heavy sweep and waits for it (the second HEAVY SWEEP COMPLETE in
/// its log after byte `from` when `seen` sweeps were already there).
async fn heavy_sweep(c: &LocalCluster, id: u64, from: u64) {
    let before = c.heavy_sweeps_since(id, from);
    c.admin(id)
        .unwrap()
        .trigger_sweep(TriggerSweepRequest { heavy: true })
        .await
        .unwrap();
    let t0 = Instant::now();
    while c.heavy_sweeps_since(id, from) <= before {
        assert!(
            t0.elapsed() < BOUND,
            "the requested heavy sweep never completed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[test]
fn qos_tables_survive_a_failover_and_follow_the_replicated_policy() {
    let d: PathBuf =
        std::env::temp_dir().join(format!("smnode-qos-cluster-{}", std::process::id()));
    let mut c =
        LocalCluster::new(Path::new(env!("CARGO_BIN_EXE_sm-node")), "ft2:8", 3, &d).unwrap();
    let cfg = d.join("qos.toml");
    std::fs::write(&cfg, "[qos]\nenabled = true\n").unwrap();
    c.common
        .extend(["--config".into(), cfg.to_str().unwrap().into()]);
    c.start_all().unwrap();
    let cas: BTreeSet<_> = ca_ports(&c.topo).iter().map(|x| x.0).collect();
    rt().block_on(async {
        let st = c.wait_serving(0, BOUND).await.unwrap();
        let leader = st.leader_id;
        c.settle(leader, BOUND).await.unwrap();
        let first = c.take_sets();
        // Blocks written, each once however often it was sent: under load a Set resent
        // after its timeout can be accepted twice (the same block, the same data).
        let blocks = |attr| {
            (first.iter().filter(|r| r.attr == attr))
                .map(|r| (r.node_guid, r.in_port, r.attr_mod))
                .collect::<BTreeSet<_>>()
                .len()
        };
        let (s, a) = (blocks(SL2VL), blocks(VLARB));
        assert!(s > 0 && a > 0, "QoS on: {s} SLtoVL and {a} VLArb Sets");
        // Every replica holds the record (read from a follower).
        let follower = (1..=3).find(|&i| i != leader).unwrap();
        let t = c
            .admin(follower)
            .unwrap()
            .get_vl_tables(GetVlTablesRequest::default())
            .await
            .unwrap()
            .into_inner();
        assert_eq!(t.blocks.len(), s + a, "recorded once per block written");
        // The audit reads every recorded block back from the fabric: all as recorded.
        let audit = c
            .admin(follower)
            .unwrap()
            .audit(proto::admin::AuditRequest::default())
            .await
            .unwrap()
            .into_inner();
        assert_eq!(audit.vl_blocks as usize, s + a, "every block read back");
        assert!(audit.vl_findings.is_empty(), "{:?}", audit.vl_findings);

        // ApplyQosPolicy: syntax error, stale version, then the policy.
        let mut admin = c.admin(follower).unwrap();
        let bad = admin
            .apply_qos_policy(ApplyPolicyRequest {
                text: "qos-levels\n  qos-level\n    name: x\n    sl: 99\n".into(),
                expected_version: 0,
                request_id: 0,
            })
            .await
            .unwrap_err();
        assert_eq!(bad.code(), tonic::Code::InvalidArgument, "{bad:?}");
        assert!(
            bad.message().contains("E_NODE_POLICY_SYNTAX"),
            "{}",
            bad.message()
        );
        let stale = admin
            .apply_qos_policy(ApplyPolicyRequest {
                text: HOSTS_SCOPE.into(),
                expected_version: 5,
                request_id: 0,
            })
            .await
            .unwrap_err();
        assert_eq!(stale.code(), tonic::Code::FailedPrecondition, "{stale:?}");
        let ok = admin
            .apply_qos_policy(ApplyPolicyRequest {
                text: HOSTS_SCOPE.into(),
                expected_version: 0,
                request_id: 0,
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(ok.version, 1);
        // The master restarts on the new policy: its sweep writes the hosts' SLtoVL only.
        let st = c.wait_programmed(BOUND).await.unwrap();
        let leader = st.leader_id;
        c.settle(leader, BOUND).await.unwrap();
        let sets = c.take_sets();
        let vl: Vec<_> = sets
            .iter()
            .filter(|r| r.attr == SL2VL || r.attr == VLARB)
            .collect();
        assert_eq!(vl.len(), cas.len(), "one SLtoVL block per host: {vl:?}");
        assert!(vl.iter().all(|r| r.attr == SL2VL && cas.contains(&r.node)));
        let p = admin
            .get_qos_policy(GetPolicyRequest { linearizable: true })
            .await
            .unwrap()
            .into_inner();
        assert_eq!((p.version, p.text.as_str()), (1, HOSTS_SCOPE));

        // kill -9 of the master: the new one writes no VL table.
        let (st, from) = c.kill9_leader(leader, BOUND).await.unwrap();
        let new = st.leader_id;
        c.settle(new, BOUND).await.unwrap();
        heavy_sweep(&c, new, from[(new - 1) as usize]).await;
        let sets = c.take_sets();
        let vl = sets
            .iter()
            .filter(|r| r.attr == SL2VL || r.attr == VLARB)
            .count();
        assert_eq!(vl, 0, "the new master rewrote {vl} VL table blocks");
    });
    drop(c);
    if std::env::var_os("SMNODE_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&d);
    }
}
