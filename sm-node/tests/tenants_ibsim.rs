//! Tenants on the real fabric path: one `sm-node` replica (a one-voter Raft cluster) under
//! umad2sim on ibsim's net.2sw2path4hca; the operator's policy is `ALL=full`; a storage hub
//! (Hca4) and two tenants (Hca2, Hca3) are set through the admin API; then `smpquery PKeys`
//! on each host reads what the SM programmed: each tenant's own key full, storage limited,
//! Default limited (never 0xffff), the storage server full in storage and Default; the tenant
//! audit over those tables finds no leak between tenants; and the host agent's intent for Hca2
//! matches the table smpquery reads (no drift). When ibsim or the diags are not installed the
//! test fails under `CI=true` and prints `SKIPPED: ...` otherwise (testenv).

#[path = "ibsim_common/mod.rs"]
mod ibsim_common;

use fabric::{Guid, PKey};
use ibsim_common::*;
use partitions::tenants::{Mode, PortDirectory, reachability, tenants_leak};
use proto::admin::sm_admin_client::SmAdminClient;
use proto::admin::*;
use proto::state::{self, tenant_member};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};
use umad::testing::{Ibsim, NET_2SW2PATH4HCA};

/// The replica, killed by PID on drop (before the ibsim).
struct Replica(Child);

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

const OPERATOR: &str = "Default=0x7fff : ALL=full ;\n";

fn member(g: Guid) -> state::TenantMember {
    state::TenantMember {
        kind: Some(tenant_member::Kind::PortGuid(g.0)),
    }
}

fn tenant(name: &str, pkey: u32, g: Guid) -> state::Tenant {
    state::Tenant {
        name: name.into(),
        pkey,
        members: vec![member(g)],
        storage: vec!["nfs".into()],
        ..Default::default()
    }
}

fn keys(sim: &Ibsim, lid: u32) -> Vec<u16> {
    let mut v: Vec<u16> = parse_pkeys(&tool(
        sim,
        "Hca4",
        "smpquery",
        &["PKeys", &lid.to_string(), "1"],
    ))
    .into_iter()
    .map(|(_, k)| k)
    .collect();
    v.sort_unstable();
    v
}

#[test]
fn tenants_programmed_on_ibsim_as_smpquery_reads_them() {
    if !ready("tenants_programmed_on_ibsim_as_smpquery_reads_them", &[]) {
        return;
    }
    let sim = Ibsim::start(Path::new(NET_2SW2PATH4HCA), &[]).expect("ibsim");
    let port = 24000 + (std::process::id() % 4000) as u16;
    let dir = sim.dir().join("r1");
    std::fs::create_dir_all(&dir).unwrap();
    let log = std::fs::File::create(dir.join("log")).unwrap();
    let _replica = Replica(
        sim.client(env!("CARGO_BIN_EXE_sm-node"), Some("Hca1"))
            .current_dir(&dir)
            .args([
                "--id",
                "1",
                "--peers",
                &format!("1=127.0.0.1:{port}"),
                "--initial-cluster-state",
                "new",
                "--data-dir",
            ])
            .arg(dir.join("data"))
            .args([
                "--fabric",
                "umad:/dev/infiniband/umad0",
                "--sweep-interval",
                "0",
                "--insecure-loopback",
            ])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn sm-node"),
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let topo = fabric::netfile::parse(&{
        // ibnetdiscover needs the SM to have brought the fabric up only for LIDs; GUIDs are
        // there from the start.
        tool(&sim, "Hca4", "ibnetdiscover", &[])
    })
    .unwrap();
    let guid_of = |name: &str| {
        topo.nodes()
            .find(|(_, n)| n.description == name)
            .map(|(_, n)| n.ports[1].guid)
            .unwrap_or_else(|| panic!("{name} not in the fabric"))
    };
    let (storage, red, blue) = (guid_of("Hca4"), guid_of("Hca2"), guid_of("Hca3"));
    rt.block_on(async {
        let end = Instant::now() + SM_DEADLINE;
        let mut a = loop {
            assert!(
                Instant::now() < end,
                "no serving replica; log in {}",
                dir.display()
            );
            if let Ok(ch) =
                tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
                    .unwrap()
                    .connect()
                    .await
            {
                let mut c = SmAdminClient::new(ch);
                if let Ok(s) = c.cluster_status(ClusterStatusRequest::default()).await
                    && s.into_inner().subnet_up_unix_ms != 0
                {
                    break c;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        // LIDs before any change (they never change; the master restarts on each change).
        let lids: BTreeMap<u64, u32> = a
            .list_nodes(ListNodesRequest::default())
            .await
            .unwrap()
            .into_inner()
            .nodes
            .iter()
            .filter(|n| n.node_type == "ca")
            .map(|n| (n.node_guid, n.lid))
            .collect();
        a.apply_policy(ApplyPolicyRequest {
            text: OPERATOR.into(),
            expected_version: 0,
            request_id: 0,
        })
        .await
        .unwrap();
        a.set_tenant(SetTenantRequest {
            storage: vec![state::StoragePartition {
                name: "nfs".into(),
                pkey: 0x200,
                servers: vec![member(storage)],
                ipoib: false,
            }],
            ..Default::default()
        })
        .await
        .unwrap();
        for t in [tenant("red", 0x101, red), tenant("blue", 0x102, blue)] {
            a.set_tenant(SetTenantRequest {
                tenant: Some(t),
                ..Default::default()
            })
            .await
            .unwrap();
        }
        let lid_of = |g: Guid| {
            let node = topo
                .nodes()
                .find(|(_, n)| n.ports.get(1).is_some_and(|p| p.guid == g))
                .map(|(_, n)| n.node_guid.0)
                .unwrap();
            lids[&node]
        };
        // The master restarts on each change and reprograms: poll the real table.
        let end = Instant::now() + SM_DEADLINE;
        loop {
            let k = keys(&sim, lid_of(blue));
            if k.contains(&0x8102) {
                break;
            }
            assert!(Instant::now() < end, "blue never got 0x8102: {k:x?}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let mut tables: BTreeMap<Guid, Vec<PKey>> = BTreeMap::new();
        for g in [storage, red, blue, guid_of("Hca1")] {
            tables.insert(g, keys(&sim, lid_of(g)).into_iter().map(PKey).collect());
        }
        let k = |g: Guid| tables[&g].iter().map(|k| k.0).collect::<Vec<u16>>();
        assert_eq!(k(red), vec![0x0200, 0x7fff, 0x8101]);
        assert_eq!(k(blue), vec![0x0200, 0x7fff, 0x8102]);
        assert_eq!(k(storage), vec![0x8200, 0xffff]);
        assert_eq!(k(guid_of("Hca1")), vec![0xffff]);
        // The tenant audit over what smpquery read.
        let l = a
            .list_tenants(ListTenantsRequest::default())
            .await
            .unwrap()
            .into_inner();
        let set = replica::tenants::tenant_set_from_proto(l.tenants.as_ref().unwrap()).unwrap();
        let c = partitions::tenants::compile(
            &set,
            Some(OPERATOR),
            Some(&PortDirectory::from_topology(&topo)),
            Mode::Strict,
        )
        .unwrap();
        let reach = reachability(&c, &tables);
        assert!(tenants_leak(&reach).is_empty(), "{reach:?}");
        assert!(
            reach
                .iter()
                .any(|r| r.a == "storage:nfs" && r.b == "tenant:blue" && r.via.contains(&0x0200)),
            "{reach:?}"
        );
        // The agent's intent for Hca2 is what the port holds.
        let asg = a
            .get_tenant_assignment(GetTenantAssignmentRequest {
                port_guids: vec![red.0],
                linearizable: false,
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(asg.tenant, "red");
        let view: Vec<(usize, PKey)> = tables[&red].iter().copied().enumerate().collect();
        assert_eq!(
            sm_agent::drift::compare(
                red,
                "ibsim",
                1,
                &view,
                &asg.ports[0]
                    .pkeys
                    .iter()
                    .map(|k| *k as u16)
                    .collect::<Vec<_>>()
            ),
            None
        );
    });
}
