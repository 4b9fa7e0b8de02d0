//! Issue 26's must-show on three sm-node processes over fabric-simd (ft2:8, two
//! virtualization-capable HCAs of 4 vports each): every vport reaches ACTIVE with its own
//! LID; a vport GUID added to a tenant through the admin API (ChangeGuids, the ib-kubernetes
//! flow) is in the vport's P_Key table after the next heavy sweep, and out of it after the
//! next one once removed; delivery between vports only inside the tenant; kill -9 of the
//! master keeps every vport LID and the new master writes no LFT block.
//!
//! Every wait is a failure bound only: the checks wait for the sweep that would have
//! changed the tables (`LocalCluster::heavy_sweeps_since`), never for time to pass.

use fabric::{Guid, Lid, PKey, PortState};
use fabric_sim::{VirtSpec, vport_guid};
use proto::admin::{ChangeGuidsRequest, SetTenantRequest, change_guids_request};
use proto::state;
use sm_node::cluster::harness::{LocalCluster, ca_ports};
use std::path::PathBuf;
use std::time::{Duration, Instant};

const BOUND: Duration = Duration::from_secs(60);
const LFT: u16 = 0x19;

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_sm-node"))
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn vport_keys(c: &LocalCluster, g: Guid) -> Vec<PKey> {
    c.with_sim(|s| s.vport(g).map(|v| v.pkeys).unwrap_or_default())
}

fn vport_lids(c: &LocalCluster, vports: &[Guid]) -> Vec<(PortState, Lid)> {
    c.with_sim(|s| {
        vports
            .iter()
            .map(|g| {
                let v = s.vport(*g).unwrap();
                (v.state, v.lid)
            })
            .collect()
    })
}

/// Waits until the leader `id` completed `n` heavy sweeps since log offset `from`.
async fn sweeps(c: &LocalCluster, id: u64, from: u64, n: usize, what: &str) {
    let t0 = Instant::now();
    while c.heavy_sweeps_since(id, from) < n {
        assert!(t0.elapsed() < BOUND, "{what}: no heavy sweep completed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[test]
fn vports_come_up_take_tenant_guids_in_one_sweep_and_survive_a_master_kill() {
    let d = std::env::temp_dir().join(format!("smnode-vports-{}", std::process::id()));
    let mut c = LocalCluster::new(&bin(), "ft2:8", 3, &d).unwrap();
    let cas = ca_ports(&c.topo);
    let mut vports = Vec::new();
    for &(_, _, pf) in &cas[4..6] {
        c.with_sim(|s| s.enable_virtualization(pf, VirtSpec::uniform(pf, 4, true)))
            .unwrap();
        vports.extend((1..=4).map(|i| vport_guid(pf, i)));
    }
    c.start_all().unwrap();
    rt().block_on(async {
        let st = c.wait_serving(0, BOUND).await.unwrap();
        let leader = st.leader_id;
        let t0 = Instant::now();
        while vport_lids(&c, &vports)
            .iter()
            .any(|(s, _)| *s != PortState::Active)
        {
            assert!(t0.elapsed() < BOUND, "{:?}", vport_lids(&c, &vports));
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let lids = vport_lids(&c, &vports);
        let mut distinct: Vec<Lid> = lids.iter().map(|x| x.1).collect();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), 8, "every vport its own LID: {lids:?}");

        // A tenant with one vport of each HCA; then a pod's VF GUID added, and removed.
        let mut admin = c.admin(leader).unwrap();
        let member = |g: Guid| state::TenantMember {
            kind: Some(state::tenant_member::Kind::PortGuid(g.0)),
        };
        admin
            .set_tenant(SetTenantRequest {
                tenant: Some(state::Tenant {
                    name: "pods".into(),
                    pkey: 0x0010,
                    members: vec![member(vports[0]), member(vports[4])],
                    ..state::Tenant::default()
                }),
                ..SetTenantRequest::default()
            })
            .await
            .unwrap();
        let key = PKey(0x8010);
        let t0 = Instant::now();
        while !vport_keys(&c, vports[0]).contains(&key) {
            assert!(t0.elapsed() < BOUND, "the tenant never reached its vports");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        c.settle(leader, BOUND).await.unwrap();
        let pod = vports[5];
        assert!(!vport_keys(&c, pod).contains(&key));
        for (op, want) in [
            (change_guids_request::Op::Add, true),
            (change_guids_request::Op::Remove, false),
        ] {
            c.settle(leader, BOUND).await.unwrap();
            let from = c.log_len(leader);
            admin
                .change_guids(ChangeGuidsRequest {
                    op: op as i32,
                    target: Some(change_guids_request::Target::Tenant("pods".into())),
                    guids: vec![pod.0],
                    ..ChangeGuidsRequest::default()
                })
                .await
                .unwrap();
            // The policy change asks for one heavy sweep: its end has the table changed.
            sweeps(&c, leader, from, 1, "after ChangeGuids").await;
            assert_eq!(
                vport_keys(&c, pod).contains(&key),
                want,
                "{op:?}: the vport's table after one sweep"
            );
            let d = c.with_sim(|s| s.deliver_vport(vports[0], pod, key));
            assert_eq!(d.is_delivered(), want, "{op:?}: {d:?}");
        }
        // Outside the tenant: nothing between the tenant's vports and the others.
        let d = c.with_sim(|s| s.deliver_vport(vports[0], vports[2], key));
        assert!(!d.is_delivered(), "{d:?}");

        // kill -9 of the master.
        c.settle(leader, BOUND).await.unwrap();
        c.take_sets();
        let (st, from) = c.kill9_leader(leader, BOUND).await.unwrap();
        let new = st.leader_id;
        c.wait_status(new, BOUND, |s| {
            !s.intent_pending && s.applied_index == s.commit_index
        })
        .await
        .unwrap();
        let from_new = from[(new - 1) as usize];
        c.admin(new)
            .unwrap()
            .trigger_sweep(proto::admin::TriggerSweepRequest { heavy: true })
            .await
            .unwrap();
        sweeps(&c, new, from_new, 2, "the new master").await;
        let sets = c.take_sets();
        let lft = sets.iter().filter(|s| s.attr == LFT).count();
        assert_eq!(lft, 0, "the new master rewrote {lft} LFT blocks");
        assert_eq!(vport_lids(&c, &vports), lids, "a vport LID moved");
    });
}
