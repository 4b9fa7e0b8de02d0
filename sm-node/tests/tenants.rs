//! Tenants end to end on a 3-replica cluster over the simulated fabric (fabric-simd):
//! the operator's policy puts every port in Default as a full member (the dangerous case);
//! a storage hub and two tenants are set through a follower; refused changes keep the
//! version; the master reprograms; then, on the simulator's data path, each tenant's hosts
//! deliver to each other and to storage and never to the other tenant with any key they
//! hold (Default included); the tenant audit over the tables read back agrees; `smctl tenants
//! list --json` shows the set; the host agent gets its assignment from the cluster, writes the
//! tenant cgroup's rdma.max in the kernel's format and sees no P_Key drift on a host view
//! copied from the fabric, then drift once the view is tampered with.

mod common;

use fabric::{Guid, Lid, PKey};
use fabric_sim::client::SimClient;
use partitions::tenants::{MemberRef, Mode, PortDirectory, reachability, tenants_leak};
use proto::admin::*;
use proto::state::{self, tenant_member};
use serde_json::{Value, json};
use sm_agent::reconcile::{Assignment, Config, reconcile};
use sm_agent::{Roots, client as agent_client, sysfs};
use sm_node::cluster::harness::LocalCluster;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tonic::Code;

const BOUND: Duration = Duration::from_secs(60);
const OPERATOR: &str = "Default=0x7fff,ipoib : ALL=full ;\n";

fn dir(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("smnode-tenants-{name}-{}", std::process::id()))
}

fn port(g: Guid) -> state::TenantMember {
    state::TenantMember {
        kind: Some(tenant_member::Kind::PortGuid(g.0)),
    }
}

fn node(d: &str) -> state::TenantMember {
    state::TenantMember {
        kind: Some(tenant_member::Kind::NodeDescription(d.into())),
    }
}

fn tenant(name: &str, pkey: u32, members: Vec<state::TenantMember>) -> state::Tenant {
    state::Tenant {
        name: name.into(),
        pkey,
        members,
        storage: vec!["nfs".into()],
        rdma: vec![state::RdmaLimit {
            device: "mlx5_0".into(),
            hca_handle: Some(2),
            hca_object: Some(2000),
        }],
        ipoib: true,
        default_full: false,
    }
}

/// Data-path checks through fabric-simd's control socket: (src, dst LID, key) -> delivered.
fn deliver_many(sock: &Path, pairs: &[(Guid, Lid, u16)]) -> Vec<bool> {
    let mut c = SimClient::connect(sock).expect("fabric-simd socket");
    let req = json!({
        "op": "deliver_many",
        "pairs": pairs.iter().map(|(g, l, k)| json!([format!("{:#x}", g.0), l.0, k])).collect::<Vec<_>>(),
    });
    let r = c.control(&req).expect("deliver_many");
    let out: Vec<bool> = r["deliveries"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .map(|d| d.get("Delivered").is_some())
        .collect();
    assert_eq!(out.len(), pairs.len(), "{r}");
    out
}

/// A host tree for the agent: the port's P_Key view copied from `keys`, an empty rdma.max.
fn host_tree(root: &Path, guid: Guid, keys: &[u16]) {
    let _ = std::fs::remove_dir_all(root);
    let p = root.join("sys/class/infiniband/mlx5_0/ports/1");
    std::fs::create_dir_all(p.join("gids")).unwrap();
    std::fs::create_dir_all(p.join("pkeys")).unwrap();
    let g = guid.0.to_be_bytes();
    std::fs::write(
        p.join("gids/0"),
        format!(
            "fe80:0000:0000:0000:{:02x}{:02x}:{:02x}{:02x}:{:02x}{:02x}:{:02x}{:02x}\n",
            g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7]
        ),
    )
    .unwrap();
    std::fs::write(p.join("link_layer"), "InfiniBand\n").unwrap();
    for i in 0..16 {
        let k = keys.get(i).copied().unwrap_or(0);
        std::fs::write(p.join(format!("pkeys/{i}")), format!("0x{k:04x}\n")).unwrap();
    }
    let cg = root.join("sys/fs/cgroup/tenants/red");
    std::fs::create_dir_all(&cg).unwrap();
    std::fs::write(cg.join("rdma.max"), "").unwrap();
    std::fs::write(
        cg.join("rdma.current"),
        "mlx5_0 hca_handle=1 hca_object=20\n",
    )
    .unwrap();
}

#[test]
fn two_tenants_and_a_storage_hub_on_the_simulator() {
    let smctl_bin = common::smctl::bin();
    let d = dir("e2e");
    let mut c = LocalCluster::new(
        &PathBuf::from(env!("CARGO_BIN_EXE_sm-node")),
        "ft2:8",
        3,
        &d,
    )
    .unwrap();
    c.start_all().unwrap();
    let sock = d.join("simd.sock");
    let cas = sm_node::cluster::harness::ca_ports(&c.topo);
    assert!(cas.len() >= 10, "{} CA ports", cas.len());
    // cas[0..3] are the replicas' ports. Storage server, tenants red and blue, one outsider.
    let storage = cas[3].2;
    let red = [cas[4].2, cas[5].2];
    let red_node = c.topo.node(cas[5].0).description.clone();
    let blue = [cas[6].2, cas[7].2];
    let outsider = cas[8].2;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let st = c.wait_serving(0, BOUND).await.unwrap();
        let leader = st.leader_id;
        let follower = (1..=3).find(|i| *i != leader).unwrap();
        c.wait_status(follower, BOUND, |s| {
            s.leader_id == leader && s.master.is_some()
        })
        .await
        .unwrap();
        let mut fa = c.admin(follower).unwrap();
        fa.apply_policy(ApplyPolicyRequest {
            text: OPERATOR.into(),
            expected_version: 0,
            request_id: 0,
        })
        .await
        .unwrap();
        // Without tenants the operator's ALL=full joins every host: red reaches blue.
        c.wait_programmed(BOUND).await.unwrap();
        let lids: BTreeMap<Guid, Lid> = c.ca_lids().into_iter().collect();
        assert_eq!(
            deliver_many(&sock, &[(red[0], lids[&blue[0]], 0xffff)]),
            vec![true]
        );

        // Storage, then the two tenants, through a follower; red names one host by node
        // description (resolved on the replicated topology).
        let r = fa
            .set_tenant(SetTenantRequest {
                tenant: None,
                storage: vec![state::StoragePartition {
                    name: "nfs".into(),
                    pkey: 0x200,
                    servers: vec![port(storage)],
                    ipoib: false,
                }],
                expected_version: Some(0),
                request_id: 0,
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.version, 1);
        let r = fa
            .set_tenant(SetTenantRequest {
                tenant: Some(tenant("red", 0x101, vec![port(red[0]), node(&red_node)])),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.version, 2, "{r:?}");
        let r = fa
            .set_tenant(SetTenantRequest {
                tenant: Some(tenant("blue", 0x102, vec![port(blue[0]), port(blue[1])])),
                expected_version: Some(2),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.version, 3);
        // Applied on the leader when the call returns: the master restarts after this.

        // Refused changes: PKey clash, a port in two tenants, a stale version, an unknown
        // delete. The version stays 3.
        let e = fa
            .set_tenant(SetTenantRequest {
                tenant: Some(tenant("green", 0x101, vec![port(outsider)])),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument);
        assert!(e.message().contains("TENANT-E004"), "{e:?}");
        let e = fa
            .set_tenant(SetTenantRequest {
                tenant: Some(tenant("green", 0x103, vec![port(blue[0])])),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert!(e.message().contains("TENANT-E007"), "{e:?}");
        let e = fa
            .set_tenant(SetTenantRequest {
                tenant: Some(tenant("green", 0x103, vec![port(outsider)])),
                expected_version: Some(1),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
        // An operator policy taking a tenant's PKey is refused too.
        let e = fa
            .apply_policy(ApplyPolicyRequest {
                text: format!("{OPERATOR}Legacy=0x0102 : ALL=full ;\n"),
                expected_version: 1,
                request_id: 0,
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
        assert!(e.message().contains("TENANT-E005"), "{e:?}");
        let e = fa
            .delete_tenant(DeleteTenantRequest {
                name: "nobody".into(),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::NotFound);
        let l = fa
            .list_tenants(ListTenantsRequest { linearizable: true })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(l.tenants.as_ref().unwrap().version, 3);
        let red_ports: Vec<u64> = l
            .resolved
            .iter()
            .find(|t| t.name == "red")
            .unwrap()
            .ports
            .clone();
        assert_eq!(red_ports, {
            let mut v = vec![red[0].0, red[1].0];
            v.sort();
            v
        });
        assert!(l.effective_policy.starts_with(OPERATOR));

        // The master restarted on the new set: wait for a sweep after the last change.
        c.wait_programmed(BOUND).await.unwrap();
        // Tables as programmed in the fabric.
        let tables: BTreeMap<Guid, Vec<PKey>> = c
            .ca_pkeys()
            .into_iter()
            .map(|(g, t)| (g, t.into_iter().filter(|k| !k.is_invalid()).collect()))
            .collect();
        for g in red {
            let k = &tables[&g];
            assert!(
                k.contains(&PKey(0x8101)) && k.contains(&PKey(0x0200)) && k.contains(&PKey(0x7fff)),
                "red {g}: {k:?}"
            );
            assert!(!k.contains(&PKey(0xffff)), "red {g} full in Default: {k:?}");
        }
        assert!(tables[&outsider].contains(&PKey(0xffff)));
        let lids: BTreeMap<Guid, Lid> = c.ca_lids().into_iter().collect();

        // Data path: inside each tenant and to/from storage, yes.
        let mut want_yes = Vec::new();
        for (t, key) in [(red, 0x8101u16), (blue, 0x8102)] {
            want_yes.push((t[0], lids[&t[1]], key));
            want_yes.push((t[1], lids[&t[0]], key));
            for h in t {
                want_yes.push((h, lids[&storage], 0x0200));
                want_yes.push((storage, lids[&h], 0x8200));
            }
        }
        let got = deliver_many(&sock, &want_yes);
        for (p, ok) in want_yes.iter().zip(&got) {
            assert!(ok, "must deliver: {p:?}");
        }
        // Across tenants, never: every key either side holds, both directions.
        let mut want_no = Vec::new();
        for a in red {
            for b in blue {
                for (x, y) in [(a, b), (b, a)] {
                    for k in tables[&x].iter().chain(&tables[&y]) {
                        want_no.push((x, lids[&y], k.0));
                    }
                    want_no.push((x, lids[&y], 0xffff));
                    want_no.push((x, lids[&y], 0x7fff));
                }
            }
        }
        let got = deliver_many(&sock, &want_no);
        for (p, ok) in want_no.iter().zip(&got) {
            assert!(!ok, "must not deliver across tenants: {p:?}");
        }

        // The cluster's own audit (tables read back by the master) plans with the tenants.
        let au = fa
            .audit(AuditRequest::default())
            .await
            .unwrap()
            .into_inner();
        assert!(!au.has_errors, "{:?}", au.findings);
        // The tenant audit over the tables read back agrees.
        let set = replica::tenants::tenant_set_from_proto(l.tenants.as_ref().unwrap()).unwrap();
        let dirs = PortDirectory::from_topology(&c.topo);
        let compiled =
            partitions::tenants::compile(&set, Some(OPERATOR), Some(&dirs), Mode::Strict).unwrap();
        assert!(
            set.tenants[0]
                .members
                .contains(&MemberRef::Node(red_node.clone()))
        );
        let reach = reachability(&compiled, &tables);
        assert!(tenants_leak(&reach).is_empty(), "{reach:?}");
        assert!(
            reach
                .iter()
                .any(|r| r.a == "storage:nfs" && r.b == "tenant:red" && r.via.contains(&0x0200)),
            "{reach:?}"
        );

        // smctl shows the set.
        let out = std::process::Command::new(smctl_bin)
            .args(["--server", &c.replicas[(follower - 1) as usize].addr])
            .args(["tenants", "list", "--json"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["version"], 3);
        assert_eq!(v["tenants"][0]["name"], "red");
        assert_eq!(
            v["tenants"][0]["rdma"][0],
            "mlx5_0 hca_handle=2 hca_object=2000"
        );

        // The host agent of red[0]: assignment from a follower, host view copied from the
        // fabric, limits written, no drift; then a tampered view drifts.
        let conn = agent_client::Conn {
            server: c.replicas[(follower - 1) as usize].addr.clone(),
            ..Default::default()
        };
        let a = agent_client::fetch(&conn, &[red[0].0]).await.unwrap();
        assert_eq!(a.tenant, "red");
        let mut intended = a.ports[0].pkeys.clone();
        intended.sort();
        assert_eq!(intended, vec![0x0200, 0x7fff, 0x8101]);
        let host = d.join("host");
        let view: Vec<u16> = tables[&red[0]].iter().map(|k| k.0).collect();
        host_tree(&host, red[0], &view);
        let roots = Roots {
            sysfs: host.join("sys"),
            cgroup: host.join("sys/fs/cgroup"),
        };
        let cfg = Config {
            roots: roots.clone(),
            cgroup_path: "tenants/{tenant}".into(),
        };
        let ports = sysfs::host_ports(&roots).unwrap();
        let rep = reconcile(&cfg, &ports, &Assignment::from(a.clone()));
        assert!(rep.errors.is_empty() && rep.drift.is_empty(), "{rep:?}");
        assert_eq!(
            std::fs::read_to_string(host.join("sys/fs/cgroup/tenants/red/rdma.max")).unwrap(),
            "mlx5_0 hca_handle=2 hca_object=2000\n"
        );
        host_tree(&host, red[0], &[0xffff, 0x8101, 0x0200]);
        let rep = reconcile(&cfg, &ports, &Assignment::from(a));
        assert_eq!(rep.drift.len(), 1, "{rep:?}");
        assert!(rep.drift[0].widens());

        // Deleting blue: its ports leave the tenant set.
        let r = fa
            .delete_tenant(DeleteTenantRequest {
                name: "blue".into(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.version, 4);
        // The agent reads the follower, which applies the deletion on its own time: its
        // answer names the tenants version it was computed from (failed once under a loaded
        // full suite when read at once).
        let mut a = agent_client::fetch(&conn, &[blue[0].0]).await.unwrap();
        for _ in 0..400 {
            if a.tenants_version >= r.version {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
            a = agent_client::fetch(&conn, &[blue[0].0]).await.unwrap();
        }
        assert_eq!(
            a.tenants_version, r.version,
            "the follower never applied the deletion"
        );
        assert_eq!(a.tenant, "");

        // The smctl write commands, end to end.
        let server = c.replicas[(follower - 1) as usize].addr.clone();
        let smctl = |args: &[&str]| {
            let out = std::process::Command::new(smctl_bin)
                .args(["--server", &server, "tenants"])
                .args(args)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "smctl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).to_string()
        };
        let out = smctl(&[
            "set-storage",
            "backup",
            "--pkey",
            "0x300",
            "--storage-server",
            &format!("{:#x}", outsider.0),
        ]);
        assert!(out.contains("tenant set version 5"), "{out}");
        let out = smctl(&[
            "set",
            "green",
            "--pkey",
            "0x103",
            "--member",
            &format!("{:#x}", blue[0].0),
            "--storage",
            "backup",
            "--rdma",
            "mlx5_0 hca_object=100",
            "--expected-version",
            "5",
        ]);
        assert!(out.contains("tenant set version 6"), "{out}");
        let v: Value = serde_json::from_str(&smctl(&["show", "green", "--json"])).unwrap();
        assert_eq!(v["rdma"][0], "mlx5_0 hca_handle=max hca_object=100");
        let out = smctl(&["delete", "green"]);
        assert!(out.contains("version 7"), "{out}");
        let out = smctl(&["delete", "backup", "--storage"]);
        assert!(out.contains("version 8"), "{out}");
        let v: Value = serde_json::from_str(&smctl(&[
            "assignment",
            &format!("{:#x}", red[0].0),
            "--json",
        ]))
        .unwrap();
        assert_eq!(v["tenant"], "red");
        assert_eq!(
            v["ports"][0]["pkeys"],
            json!(["0x0200", "0x7fff", "0x8101"])
        );
    });
    drop(c);
    let _ = std::fs::remove_dir_all(&d);
}
