//! Three sm-node replicas as separate processes (this package's `sm-node` binary) on loopback,
//! over a fabric-simd server running on threads of this test (so the test reads the fabric's
//! accounting directly: accepted Sets by source port, LIDs, P_Key tables, delivery).
//!
//! Waits poll the replicas' ClusterStatus; every bound is a failure bound only.

use mad::AttributeId;
use proto::admin::{ApplyPolicyRequest, GetPolicyRequest, TransferMasterRequest};
use sm_node::clock::unix_ms;
use sm_node::cluster::harness::LocalCluster;
use std::path::PathBuf;
use std::time::{Duration, Instant};

const BOUND: Duration = Duration::from_secs(60);
const POLICY: &str = "Default=0x7fff : ALL=full ;\nStorage=0x0002 : ALL=full ;\n";

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_sm-node"))
}

fn dir(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("smnode-cluster-{name}-{}", std::process::id()))
}

/// Removes the test's directory unless SMNODE_KEEP is set (logs of every replica are there).
fn cleanup(d: &std::path::Path) {
    if std::env::var_os("SMNODE_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(d);
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn has_storage_pkey(c: &LocalCluster) -> bool {
    c.ca_pkeys()
        .iter()
        .all(|(_, t)| t.iter().any(|k| k.0 & 0x7fff == 0x0002))
}

fn lft_sets(sets: &[fabric_sim::SetRecord]) -> usize {
    sets.iter()
        .filter(|s| s.attr == AttributeId::LINEAR_FORWARDING_TABLE.0)
        .count()
}

/// Policy through a follower (forwarded), its errors, kill -9 of the master (new master
/// serving within 3 s, 0 LFT Sets, 0 LID changes, fabric delivering throughout, policy in
/// force), then a restart of all three that recovers everything from sled.
#[test]
fn three_replicas_policy_failover_and_restart() {
    let d = dir("failover");
    let mut c = LocalCluster::new(&bin(), "ft2:8", 3, &d).unwrap();
    c.start_all().unwrap();
    rt().block_on(async {
        let st = c.wait_serving(0, BOUND).await.unwrap();
        let leader = st.leader_id;
        assert!(c.undelivered().is_empty(), "SUBNET UP but CAs cannot talk");
        // Policy proposed to a follower: forwarded to the leader and committed.
        let follower = (1..=3).find(|i| *i != leader).unwrap();
        let mut a = c.admin(follower).unwrap();
        let r = a
            .apply_policy(ApplyPolicyRequest {
                text: POLICY.into(),
                expected_version: 0,
                request_id: 0,
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.version, 1);
        // A stale version and a bad text are refused with the right codes.
        let e = a
            .apply_policy(ApplyPolicyRequest {
                text: POLICY.into(),
                expected_version: 0,
                request_id: 0,
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::FailedPrecondition, "{e:?}");
        let e = a
            .apply_policy(ApplyPolicyRequest {
                text: "Broken=0x0003 ALL=full ;\n".into(),
                expected_version: 1,
                request_id: 0,
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");
        assert!(
            e.message().contains("1:"),
            "no line:col in {:?}",
            e.message()
        );
        for id in 1..=3 {
            c.wait_status(id, BOUND, |s| s.policy_version == 1)
                .await
                .unwrap();
        }
        // The master restarts on the new policy and programs it.
        let t0 = Instant::now();
        while !has_storage_pkey(&c) {
            assert!(t0.elapsed() < BOUND, "policy never programmed");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Let the master record its sweep (no intent pending, indices equal).
        c.wait_status(leader, BOUND, |s| {
            !s.intent_pending && s.last_sweep_unix_ms > 0 && s.applied_index == s.commit_index
        })
        .await
        .unwrap();
        let settled = c.status(leader).await.unwrap().commit_index;
        for id in 1..=3 {
            c.wait_status(id, BOUND, |s| s.applied_index >= settled)
                .await
                .unwrap();
        }
        let lids_before = c.ca_lids();
        c.take_sets();
        // kill -9 the master; watch delivery while the others take over.
        let kill_ms = unix_ms();
        c.kill9(leader);
        let start = Instant::now();
        let st = loop {
            assert!(c.undelivered().is_empty(), "the fabric stopped delivering");
            if let Ok(st) = c.wait_serving(kill_ms + 1, Duration::from_millis(50)).await {
                break st;
            }
            assert!(start.elapsed() < BOUND, "no new master");
        };
        // How long that took is `sm-node bench-cluster`'s measurement, not this test's.
        assert_ne!(st.leader_id, leader);
        let sets = c.take_sets();
        assert_eq!(lft_sets(&sets), 0, "LFT Sets after the takeover: {sets:?}");
        assert_eq!(c.ca_lids(), lids_before, "LIDs changed");
        assert!(has_storage_pkey(&c), "policy lost");
        assert!(c.undelivered().is_empty());
        let new_leader = st.leader_id;
        let mut a = c.admin(new_leader).unwrap();
        let p = a
            .get_policy(GetPolicyRequest::default())
            .await
            .unwrap()
            .into_inner();
        assert_eq!((p.version, p.text.as_str()), (1, POLICY));
        // The old master comes back as a follower and catches up.
        c.start(leader).unwrap();
        let commit = c.status(new_leader).await.unwrap().commit_index;
        c.wait_status(leader, BOUND, |s| {
            s.applied_index >= commit && s.leader_id == new_leader
        })
        .await
        .unwrap();
        // Restart all three: everything comes back from sled.
        c.wait_status(new_leader, BOUND, |s| {
            !s.intent_pending && s.applied_index == s.commit_index
        })
        .await
        .unwrap();
        for id in 1..=3 {
            c.kill9(id);
        }
        c.take_sets();
        let restart_ms = unix_ms();
        c.start_all().unwrap();
        let st = c.wait_serving(restart_ms, BOUND).await.unwrap();
        assert!(st.applied_index >= commit, "{st:?}");
        assert_eq!(st.policy_version, 1);
        let sets = c.take_sets();
        assert_eq!(lft_sets(&sets), 0, "LFT Sets after a full restart");
        assert_eq!(c.ca_lids(), lids_before, "LIDs changed across the restart");
        assert!(has_storage_pkey(&c));
        assert!(c.undelivered().is_empty());
    });
    drop(c);
    cleanup(&d);
}

/// A master paused with SIGSTOP and resumed after the new master's first Set gets none of
/// its Sets accepted by the fabric.
#[test]
fn paused_master_gets_no_set_accepted() {
    let d = dir("sigstop");
    let mut c = LocalCluster::new(&bin(), "ft2:8", 3, &d).unwrap();
    // Light sweeps every 200 ms: the resumed master has work queued the moment it wakes.
    c.common = vec![
        "--sweep-interval".into(),
        "0.2".into(),
        "--routing-workers".into(),
        "1".into(),
    ];
    c.start_all().unwrap();
    rt().block_on(async {
        let st = c.wait_serving(0, BOUND).await.unwrap();
        let old = st.leader_id;
        let old_port = c.replicas[(old - 1) as usize].port_guid;
        c.take_sets();
        let pause_ms = unix_ms();
        c.pause(old);
        // The new master serves and has written at least one Set.
        let mut new_sets = Vec::new();
        let t0 = Instant::now();
        let st = loop {
            new_sets.extend(c.take_sets());
            if let Ok(st) = c
                .wait_serving(pause_ms + 1, Duration::from_millis(50))
                .await
                && st.self_id != old
                && !new_sets.is_empty()
            {
                break st;
            }
            assert!(t0.elapsed() < BOUND, "no new master with a Set");
        };
        assert!(new_sets.iter().all(|s| s.source != Some(old_port)));
        // Resume the deposed master and ask it for a heavy sweep right away.
        c.resume(old);
        let mut a = c.admin(old).unwrap();
        let _ = a
            .trigger_sweep(proto::admin::TriggerSweepRequest { heavy: true })
            .await;
        // It learns the new term and follows.
        c.wait_status(old, BOUND, |s| {
            s.leader_id == st.self_id && s.term >= st.term
        })
        .await
        .unwrap();
        // Give it the time of a few of its light sweeps, measured by the new master's
        // progress, then look at every Set the fabric accepted since the pause.
        let mark = unix_ms();
        c.wait_serving(mark + 500, BOUND).await.unwrap();
        new_sets.extend(c.take_sets());
        let from_old: Vec<_> = new_sets
            .iter()
            .filter(|s| s.source == Some(old_port))
            .collect();
        assert!(
            from_old.is_empty(),
            "the deposed master's Sets were accepted: {from_old:?}"
        );
    });
    drop(c);
    cleanup(&d);
}

/// Leadership moves on request (TransferMaster) without LFT writes.
#[test]
fn transfer_master_writes_no_lft() {
    let d = dir("transfer");
    let mut c = LocalCluster::new(&bin(), "ft2:8", 3, &d).unwrap();
    c.start_all().unwrap();
    rt().block_on(async {
        let st = c.wait_serving(0, BOUND).await.unwrap();
        let old = st.leader_id;
        c.wait_status(old, BOUND, |s| {
            !s.intent_pending && s.applied_index == s.commit_index
        })
        .await
        .unwrap();
        let to = (1..=3).find(|i| *i != old).unwrap();
        c.take_sets();
        let t = unix_ms();
        let mut a = c.admin(to).unwrap(); // a follower forwards it to the leader
        let r = a
            .transfer_master(TransferMasterRequest { to_replica: to })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.leader_id, to);
        let st = c.wait_serving(t, BOUND).await.unwrap();
        assert_eq!(st.self_id, to);
        assert_eq!(lft_sets(&c.take_sets()), 0);
    });
    drop(c);
    cleanup(&d);
}

/// SM priority as a preference: the replica with the higher priority takes the master role
/// by transfer, and takes it back by transfer when it rejoins after a kill, without LFT
/// writes.
#[test]
fn higher_priority_replica_takes_leadership_back_by_transfer() {
    let d = dir("priority");
    let mut c = LocalCluster::new(&bin(), "ft2:8", 3, &d).unwrap();
    c.replicas[2].extra = vec!["--priority".into(), "9".into()];
    c.start_all().unwrap();
    rt().block_on(async {
        let up = |s: &proto::admin::ClusterStatusReply| {
            s.leader_id == s.self_id && s.subnet_up_unix_ms != 0 && !s.intent_pending
        };
        c.wait_status(3, BOUND, up).await.unwrap();
        let st = c
            .wait_status(3, BOUND, |s| up(s) && s.applied_index == s.commit_index)
            .await
            .unwrap();
        for id in 1..=2 {
            c.wait_status(id, BOUND, |s| s.applied_index >= st.commit_index)
                .await
                .unwrap();
        }
        let kill_ms = unix_ms();
        c.kill9(3);
        let st = c.wait_serving(kill_ms + 1, BOUND).await.unwrap();
        let interim = st.self_id;
        assert_ne!(interim, 3);
        let st = c
            .wait_status(interim, BOUND, |s| {
                up(s) && s.applied_index == s.commit_index
            })
            .await
            .unwrap();
        c.wait_status(6 - interim - 3, BOUND, |s| {
            s.applied_index >= st.commit_index
        })
        .await
        .unwrap();
        c.take_sets();
        let back_ms = unix_ms();
        c.start(3).unwrap();
        let st = c
            .wait_status(3, BOUND, |s| up(s) && s.last_sweep_unix_ms >= back_ms)
            .await
            .unwrap();
        assert!(st.term > 0);
        assert_eq!(
            lft_sets(&c.take_sets()),
            0,
            "LFT Sets after the transfer back"
        );
        let log = std::fs::read_to_string(d.join(format!("replica{interim}.log"))).unwrap();
        assert!(
            log.contains("replica 3 has priority 9 > 0: handing the master role over"),
            "leadership did not move by transfer"
        );
    });
    drop(c);
    cleanup(&d);
}

/// A follower that was down while the log was compacted past its last entry catches up from
/// the leader's snapshot (and then holds the same policy).
#[test]
fn lagging_follower_catches_up_from_a_snapshot() {
    let d = dir("snapshot");
    let mut c = LocalCluster::new(&bin(), "ft2:8", 3, &d).unwrap();
    c.common
        .extend(["--snapshot-every".to_string(), "20".to_string()]);
    c.start_all().unwrap();
    rt().block_on(async {
        let st = c.wait_serving(0, BOUND).await.unwrap();
        let leader = st.leader_id;
        let lagging = (1..=3).find(|i| *i != leader).unwrap();
        c.kill9(lagging);
        let mut a = c.admin(leader).unwrap();
        let mut text = String::new();
        for v in 0..60u64 {
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
        let commit = c.status(leader).await.unwrap().commit_index;
        c.start(lagging).unwrap();
        c.wait_status(lagging, BOUND, |s| {
            s.applied_index >= commit && s.policy_version == 60
        })
        .await
        .unwrap();
        let p = c
            .admin(lagging)
            .unwrap()
            .get_policy(GetPolicyRequest::default())
            .await
            .unwrap()
            .into_inner();
        assert_eq!(p.text, text);
        let log = std::fs::read_to_string(d.join(format!("replica{lagging}.log"))).unwrap();
        assert!(
            log.contains("applied a snapshot from the leader"),
            "caught up without a snapshot"
        );
    });
    drop(c);
    cleanup(&d);
}

/// SMInfo on each replica's port answers truthfully: MASTER on the leader's, STANDBY on the
/// others' (asked LID-routed by a client attached at another CA port).
#[test]
fn sminfo_answers_master_and_standby_truthfully() {
    use mad::{AttributeId, SmInfo, SmState, Smp};
    let d = dir("sminfo");
    let mut c = LocalCluster::new(&bin(), "ft2:8", 3, &d).unwrap();
    c.start_all().unwrap();
    let (leader, lids) = rt().block_on(async {
        let st = c.wait_serving(0, BOUND).await.unwrap();
        // Every follower has its standby attached once it knows the leader.
        for id in (1..=3).filter(|i| *i != st.leader_id) {
            c.wait_status(id, BOUND, |s| s.leader_id == st.leader_id)
                .await
                .unwrap();
        }
        let lids = c.ca_lids();
        (st.leader_id, lids)
    });
    let ports: Vec<_> = c.replicas.iter().map(|r| (r.id, r.port_guid)).collect();
    let client_port = sm_node::cluster::harness::ca_ports(&c.topo)[3].2;
    let socket = c.server.as_ref().unwrap().path().to_path_buf();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut cl = fabric_sim::client::SimClient::connect(&socket).unwrap();
        cl.attach(&format!("0x{:016x}", client_port.0)).unwrap();
        let mut answers = Vec::new();
        for (id, g) in ports {
            let lid = lids.iter().find(|(p, _)| *p == g).unwrap().1;
            // Ask until the standby is attached (a standby answers from its attach on).
            loop {
                cl.send(lid, &Smp::lid_get(id, AttributeId::SM_INFO, 0))
                    .unwrap();
                cl.flush().unwrap();
                let (_, _, smp) = cl.recv().unwrap();
                let info: SmInfo = smp.attr().unwrap();
                if smp.status == 0 {
                    answers.push((id, info.state()));
                    break;
                }
            }
        }
        let _ = tx.send(answers);
    });
    let answers = rx.recv_timeout(BOUND).expect("no SMInfo answers");
    for (id, state) in answers {
        let want = if id == leader {
            SmState::Master
        } else {
            SmState::Standby
        };
        assert_eq!(state, Some(want), "replica {id}");
    }
    drop(c);
    cleanup(&d);
}

/// SIGTERM on the master hands leadership to a caught-up follower before it exits; the
/// successor takes over without LFT writes.
#[test]
fn sigterm_on_the_master_hands_leadership_over_first() {
    let d = dir("sigterm");
    let mut c = LocalCluster::new(&bin(), "ft2:8", 3, &d).unwrap();
    c.start_all().unwrap();
    rt().block_on(async {
        let st = c.wait_serving(0, BOUND).await.unwrap();
        let old = st.leader_id;
        let st = c
            .wait_status(old, BOUND, |s| {
                !s.intent_pending && s.applied_index == s.commit_index
            })
            .await
            .unwrap();
        for id in 1..=3 {
            c.wait_status(id, BOUND, |s| s.applied_index >= st.commit_index)
                .await
                .unwrap();
        }
        c.take_sets();
        let t = unix_ms();
        // A graceful stop is a clean exit (within 3,000 polls, about a minute).
        let exit = c.terminate(old, 3000);
        assert!(
            exit.is_some_and(|e| e.success()),
            "replica {old} after SIGTERM: {exit:?}"
        );
        let st = c.wait_serving(t, BOUND).await.unwrap();
        assert_ne!(st.self_id, old);
        assert_eq!(lft_sets(&c.take_sets()), 0);
        let log = std::fs::read_to_string(d.join(format!("replica{old}.log"))).unwrap();
        assert!(
            log.contains(&format!(
                "graceful stop: handing leadership to replica {}",
                st.self_id
            )),
            "no transfer before exit"
        );
    });
    drop(c);
    cleanup(&d);
}

/// The performance manager's calls asked of a follower are answered by the master: a port's
/// counters read now (equal in their error counters to what the fabric's PMA holds), the
/// ports over thresholds, every link's health; a LID out of range and a bad threshold text
/// are refused with their codes.
#[test]
fn a_follower_forwards_counters_errors_and_link_health() {
    use proto::admin::{GetCountersRequest, GetErrorsRequest, GetLinkHealthRequest};
    let d = dir("perf-forward");
    let mut c = LocalCluster::new(&bin(), "ft2:8", 3, &d).unwrap();
    c.start_all().unwrap();
    rt().block_on(async {
        let st = c.wait_serving(0, BOUND).await.unwrap();
        let follower = (1..=3).find(|i| *i != st.leader_id).unwrap();
        let mut a = c.admin(follower).unwrap();
        let (guid, lid) = c.ca_lids()[3];
        let r = a
            .get_counters(GetCountersRequest {
                lid: u32::from(lid.0),
                port: 1,
                extended: false,
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.counters.len(), 21, "{r:?}");
        let fab = c.with_sim(|s| {
            let (node, port) = s.port_by_guid(guid).unwrap();
            s.port_counters(node, port).unwrap()
        });
        let got = |n: &str| r.counters.iter().find(|f| f.name == n).unwrap().value;
        assert_eq!(got("SymbolErrorCounter"), u64::from(fab.symbol_error));
        assert_eq!(got("PortRcvErrors"), u64::from(fab.rcv_errors));
        let h = a
            .get_link_health(GetLinkHealthRequest {})
            .await
            .unwrap()
            .into_inner();
        assert_eq!(h.links.len(), c.topo.num_links(), "every link");
        assert!(h.links.iter().all(|l| l.health == "ok"), "{h:?}");
        let e = a
            .get_errors(GetErrorsRequest::default())
            .await
            .unwrap()
            .into_inner();
        assert!(e.enabled && e.ports.is_empty(), "{e:?}");
        let bad = a
            .get_counters(GetCountersRequest {
                lid: 0xC000,
                port: 1,
                extended: false,
            })
            .await
            .unwrap_err();
        assert_eq!(bad.code(), tonic::Code::InvalidArgument);
        assert!(bad.message().starts_with("E_ADMIN_BAD_LID"), "{bad:?}");
        let bad = a
            .get_errors(GetErrorsRequest {
                thresholds: "SymbolErrorCounter=ten\n".into(),
            })
            .await
            .unwrap_err();
        assert_eq!(bad.code(), tonic::Code::InvalidArgument);
        assert!(bad.message().starts_with("SMC-E009"), "{bad:?}");
    });
    drop(c);
    cleanup(&d);
}
