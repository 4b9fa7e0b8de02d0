//! The admin API on a 3-replica process cluster (plain loopback, no tokens): every read RPC
//! answered by a follower and by the leader, apply through a follower, a stale version and a
//! malformed policy refused with their codes (the malformed one changing nothing: version
//! unchanged, no Set in fabric-simd's accounting), sweep and transfer through a follower,
//! WatchEvents delivering the failover when the master is killed, and Explain answered by
//! the master.

use proto::admin::sm_admin_client::SmAdminClient;
use proto::admin::*;
use sm_node::cluster::harness::LocalCluster;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tonic::Code;
use tonic::transport::Channel;

const BOUND: Duration = Duration::from_secs(60);
const POLICY: &str = "Default=0x7fff : ALL=full ;\nStorage=0x0002 : ALL=full ;\n";

fn dir(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("smnode-admin-{name}-{}", std::process::id()))
}

/// Every read RPC against one replica; returns the CA LIDs it saw.
async fn all_reads(a: &mut SmAdminClient<Channel>, who: &str) {
    let si = a
        .sm_info(SmInfoRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert_eq!(si.state, 3, "{who}: {si:?}");
    assert_ne!(si.sm_guid, 0, "{who}");
    assert_ne!(si.sm_lid, 0, "{who}: {si:?}");
    let cs = a
        .cluster_status(ClusterStatusRequest { linearizable: true })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(cs.replicas.len(), 3, "{who}");
    let nodes = a
        .list_nodes(ListNodesRequest::default())
        .await
        .unwrap()
        .into_inner()
        .nodes;
    let switches: Vec<_> = nodes.iter().filter(|n| n.node_type == "switch").collect();
    let cas: Vec<_> = nodes.iter().filter(|n| n.node_type == "ca").collect();
    assert!(!switches.is_empty() && cas.len() >= 2, "{who}: {nodes:?}");
    let only_sw = a
        .list_nodes(ListNodesRequest {
            node_type: "switch".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .nodes;
    assert_eq!(only_sw.len(), switches.len(), "{who}");
    let by_guid = a
        .list_nodes(ListNodesRequest {
            guid: cas[0].node_guid,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .nodes;
    assert_eq!(by_guid.len(), 1, "{who}");
    let (ca0, ca1) = (cas[0], cas[cas.len() - 1]);
    assert!(ca0.lid != 0 && ca1.lid != 0, "{who}");
    let port = ca0.links[0].port;
    let p = a
        .get_port(GetPortRequest {
            linearizable: false,
            lid: ca0.lid,
            port,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(p.node_guid, ca0.node_guid, "{who}");
    assert_eq!(p.lid, ca0.lid, "{who}");
    assert_eq!(p.port_state, "Active");
    // PortInfo as the master read it: every decoded field, when and by whom.
    let field = |n: &str| {
        p.port_info
            .iter()
            .find(|f| f.name == n)
            .map(|f| f.value.clone())
            .unwrap_or_default()
    };
    assert_eq!(p.port_info.len(), 54, "{who}: {:?}", p.port_info);
    assert_eq!(field("Lid"), ca0.lid.to_string(), "{who}");
    assert_eq!(field("LinkState"), "Active", "{who}");
    assert_eq!(field("LocalPort"), port.to_string(), "{who}");
    assert_eq!(field("Mkey"), "<hidden>", "{who}");
    assert!(p.read_sweep >= 1 && p.read_unix_ms > 0, "{who}: {p:?}");
    assert_ne!(p.read_by_replica, 0, "{who}");
    let e = a
        .get_port(GetPortRequest {
            linearizable: false,
            lid: 0xbfff,
            port: 1,
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound, "{who}: {e:?}");
    let sw = switches[0];
    let r = a
        .get_route(GetRouteRequest {
            linearizable: false,
            lid: sw.lid,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.switch_guid, sw.node_guid, "{who}");
    assert!(r.entries.iter().any(|e| e.dlid == ca1.lid), "{who}: {r:?}");
    let t = a
        .trace_path(TracePathRequest {
            linearizable: false,
            slid: ca0.lid,
            dlid: ca1.lid,
        })
        .await
        .unwrap()
        .into_inner();
    assert!(t.complete, "{who}: {t:?}");
    assert_eq!(t.hops.first().unwrap().node_guid, ca0.node_guid);
    assert_eq!(t.hops.last().unwrap().node_guid, ca1.node_guid);
    assert!(t.hops.len() >= 3, "{who}: {t:?}");
    let v = a
        .validate_policy(ValidatePolicyRequest {
            text: POLICY.into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(v.ok, "{who}: {v:?}");
    let bad = a
        .validate_policy(ValidatePolicyRequest {
            text: "Default=0x7fff : ALL=full\n".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(
        !bad.ok && bad.diagnostics.iter().any(|d| d.line >= 1),
        "{who}: {bad:?}"
    );
    let d = a
        .diff_policy(DiffPolicyRequest {
            linearizable: false,
            text: POLICY.into(),
        })
        .await
        .unwrap()
        .into_inner();
    let _ = d.changes.len() + d.unchanged as usize;
    let pl = a
        .plan_policy(PlanPolicyRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert!(
        pl.ports.iter().any(|p| p.node_guid == ca0.node_guid),
        "{who}"
    );
    let au = a.audit(AuditRequest::default()).await.unwrap().into_inner();
    assert_eq!(au.source, "fabric", "{who}");
    assert!(
        au.read_unix_ms > 0 && au.read_by_replica != 0,
        "{who}: {au:?}"
    );
    assert!(au.unanswered.is_empty(), "{who}: {:?}", au.unanswered);
    assert!(
        au.ports > 0 && au.smps >= u64::from(au.ports),
        "{who}: {au:?}"
    );
    // No read-back runs between audits; the master answers (a follower forwards).
    let pr = a
        .audit_progress(AuditProgressRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(!pr.running && pr.replica != 0, "{who}: {pr:?}");
    // Explain (issue 21 item 7): the master answers (a follower forwards).
    let ex = a
        .explain(ExplainRequest {
            lid: ca0.lid,
            guid: 0,
            port: None,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(ex.cause_code, "EXPLAIN-OK", "{who}: {ex:?}");
    assert_eq!(
        (ex.node_guid, ex.lid, ex.state),
        (ca0.node_guid, ca0.lid, 4)
    );
    assert!(ex.peer.is_some() && ex.replica != 0, "{who}: {ex:?}");
    let e = a
        .explain(ExplainRequest {
            lid: 0,
            guid: 0xdead,
            port: None,
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound, "{who}: {e:?}");
    assert!(e.message().starts_with("SMC-E011"), "{who}: {e:?}");
    let g = a
        .get_policy(GetPolicyRequest { linearizable: true })
        .await
        .unwrap()
        .into_inner();
    let _ = g.version;
}

/// A rogue host (CA port 6, not a replica's) that learned the M_Key adds `key` to CA port
/// 4's P_KeyTable and to its switch port's table through Sets the SM never sent; returns
/// the CA's port GUID.
async fn tamper(c: &LocalCluster, key: u16) -> fabric::Guid {
    use fabric_sim::Fault;
    let cas = sm_node::cluster::harness::ca_ports(&c.topo);
    let (vn, vp, vg) = cas[4];
    let rogue = cas[6].2;
    let remote = c.topo.remote(fabric::PortRef::new(vn, vp)).unwrap();
    let (sw, sp) = (remote.node, remote.port.0);
    c.with_sim(|s| {
        let mut sets = Vec::new();
        // (node, port, the port whose LID addresses it, attribute modifier)
        for (node, port, lid_port, modifier) in [
            (vn, vp, vp, mad::PKeyTable::modifier(0, 0)),
            (sw, sp, 0, mad::PKeyTable::modifier(sp, 0)),
        ] {
            let lid = s.port_info(node, lid_port);
            let mut t = mad::PKeyTable::default();
            let keys = s.pkey_table(node, port).unwrap();
            for (k, e) in keys.iter().take(32).enumerate() {
                t.keys[k] = *e;
            }
            let free = t.keys.iter().position(|k| k.0 == 0).unwrap();
            t.keys[free] = fabric::PKey(key);
            let mut smp = mad::Smp::lid_set(0x5eed, modifier, &t);
            // The rogue knows the term's M_Key (read behind the SM's back).
            let info = lid.unwrap();
            smp.m_key = info.m_key;
            sets.push((info.lid, smp));
        }
        for (dlid, smp) in sets {
            let now = s.now();
            s.inject(
                now,
                Fault::Rogue {
                    port_guid: rogue,
                    dlid,
                    smp: Box::new(smp),
                },
            )
            .unwrap();
        }
    });
    let start = Instant::now();
    loop {
        let done = c.with_sim(|s| {
            [(vn, vp), (sw, sp)]
                .iter()
                .all(|&(n, p)| s.pkey_table(n, p).unwrap().iter().any(|k| k.0 == key))
        });
        if done {
            return vg;
        }
        assert!(start.elapsed() < BOUND, "the rogue Sets never landed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[test]
fn admin_api_on_three_replicas() {
    let d = dir("api");
    let mut c = LocalCluster::new(
        &PathBuf::from(env!("CARGO_BIN_EXE_sm-node")),
        "ft2:8",
        3,
        &d,
    )
    .unwrap();
    c.start_all().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let st = c.wait_serving(0, BOUND).await.unwrap();
        let leader = st.leader_id;
        let follower = (1..=3).find(|i| *i != leader).unwrap();
        let other = (1..=3).find(|i| *i != leader && *i != follower).unwrap();
        // Followers know the leader (and apply the master record) before we ask them.
        for id in [follower, other] {
            c.wait_status(id, BOUND, |s| s.leader_id == leader && s.master.is_some())
                .await
                .unwrap();
        }
        let mut la = c.admin(leader).unwrap();
        let mut fa = c.admin(follower).unwrap();
        all_reads(&mut la, "leader").await;
        all_reads(&mut fa, "follower").await;

        // Diff against the tables in force names the CA tables Storage changes.
        let diff = fa
            .diff_policy(DiffPolicyRequest {
                linearizable: true,
                text: POLICY.into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert!(
            diff.changes.iter().any(|t| t.proposed.contains(&0x8002)),
            "{diff:?}"
        );

        // Apply on a follower commits through the leader; a linearizable read sees it.
        let r = fa
            .apply_policy(ApplyPolicyRequest {
                text: POLICY.into(),
                expected_version: 0,
                request_id: 0,
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.version, 1);
        let g = fa
            .get_policy(GetPolicyRequest { linearizable: true })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(g.version, 1);
        assert_eq!(g.text, POLICY);
        // Stale version: FAILED_PRECONDITION.
        let e = fa
            .apply_policy(ApplyPolicyRequest {
                text: POLICY.into(),
                expected_version: 0,
                request_id: 0,
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");

        // Let the master finish programming the new policy, then clear the Set log.
        c.wait_programmed(BOUND).await.unwrap();
        let _ = c.take_sets();
        // Malformed: INVALID_ARGUMENT with line:col, version unchanged, no Set sent.
        for a in [&mut fa, &mut la] {
            let e = a
                .apply_policy(ApplyPolicyRequest {
                    text: "Default=0x7fff : ALL=full ;\nBroken=0x0003 : ALL=full\n".into(),
                    expected_version: 1,
                    request_id: 0,
                })
                .await
                .unwrap_err();
            assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
            assert!(
                e.message().contains("line 2:") || e.message().contains("line 3:"),
                "{}",
                e.message()
            );
        }
        let g = la
            .get_policy(GetPolicyRequest { linearizable: true })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(g.version, 1);
        let sets = c.take_sets();
        assert!(sets.is_empty(), "a refused policy sent Sets: {sets:?}");

        // Audit reads the fabric: clean now; then a rogue host puts a key the policy does not
        // give into a CA port and its switch port (behind the SM's back) and the audit, on
        // the follower and on the leader, reports the leak. Reading sends no Set.
        let au = fa
            .audit(AuditRequest::default())
            .await
            .unwrap()
            .into_inner();
        assert!(!au.has_errors, "{:?}", au.findings);
        assert_eq!(au.read_by_replica, leader);
        let victim = tamper(&c, 0x8009).await;
        let _ = c.take_sets();
        for a in [&mut fa, &mut la] {
            let au = a.audit(AuditRequest::default()).await.unwrap().into_inner();
            assert!(au.has_errors, "{:?}", au.findings);
            assert!(
                au.findings
                    .iter()
                    .any(|f| f.starts_with("AUDIT-E002") && f.contains(&victim.to_string())),
                "{:?}",
                au.findings
            );
        }
        let sets = c.take_sets();
        assert!(sets.is_empty(), "the audit sent Sets: {sets:?}");

        // Sweep through a follower reaches the master.
        let s = fa
            .trigger_sweep(TriggerSweepRequest { heavy: false })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(s.master_id, leader);

        // Watch on `other`, transfer mastership to `follower` through `other`, then kill
        // the new master: the watcher sees the failover.
        let mut oa = c.admin(other).unwrap();
        let mut events = oa
            .watch_events(WatchEventsRequest::default())
            .await
            .unwrap()
            .into_inner();
        let tr = oa
            .transfer_master(TransferMasterRequest {
                to_replica: follower,
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(tr.leader_id, follower);
        c.wait_status(other, BOUND, |s| s.leader_id == follower)
            .await
            .unwrap();
        c.kill9(follower);
        let start = Instant::now();
        let mut seen = Vec::new();
        loop {
            assert!(start.elapsed() < BOUND, "no failover event; saw {seen:?}");
            let ev = tokio::time::timeout(BOUND, events.message())
                .await
                .expect("event stream stalled")
                .unwrap()
                .expect("stream ended");
            seen.push(format!("{} {}", ev.kind, ev.text));
            if ev.kind == "failover" && ev.leader_id != follower && ev.leader_id != 0 {
                break;
            }
        }
    });
    // Stop the replicas and the fabric before removing its socket's directory.
    drop(c);
    if std::env::var_os("SMNODE_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&d);
    }
}
