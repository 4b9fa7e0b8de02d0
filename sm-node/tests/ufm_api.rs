//! The UFM-compatible PKey API (issue 26) on a 3-replica process cluster over fabric-simd,
//! replayed with ib-kubernetes' UFM plugin request shapes (pkg/sm/plugins/ufm/ufm.go and
//! pkg/drivers/http/client.go: basic auth, `Content-Type: application/json; charset=utf-8`,
//! the exact JSON bodies) against a follower's endpoint. The same sequence made with
//! ChangeGuids over gRPC on another P_Key gives the same memberships (state, assignments and
//! the P_Key tables the master programs); refusals (0x7fff, the operator's P_Key, a tenant's
//! port, bad credentials) change nothing; a GUID reused by a tenant leaves the partitions.

mod common;

use fabric::{Guid, PKey};
use proto::admin::change_guids_request::{Op, Target};
use proto::admin::*;
use proto::state;
use serde_json::Value;
use sm_node::cluster::harness::LocalCluster;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tonic::Code;

const BOUND: Duration = Duration::from_secs(60);
const OPERATOR: &str = "Default=0x7fff,ipoib : ALL=full ;\nops=0x0300 : ALL=full ;\n";
const PASSWORD: &str = "ufm-password-123";
const TOKEN: &str = "ufm-token-abcdef";

/// One HTTP/1.1 exchange as the plugin's Go client makes it: (status, body).
async fn http(addr: &str, method: &str, path: &str, auth: &str, body: &str) -> (u16, String) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: Go-http-client/1.1\r\n{auth}Content-Type: application/json; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    let status = out[9..12].parse().unwrap();
    (status, out.split_once("\r\n\r\n").unwrap().1.to_string())
}

/// The basic auth header Go's `SetBasicAuth` writes.
fn basic(user: &str, pass: &str) -> String {
    use base64::Engine as _;
    let b = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
    format!("Authorization: Basic {b}\r\n")
}

/// `ibUtils.GUIDToString`: hex without separators, lower case (net.HardwareAddr).
fn guid_str(g: Guid) -> String {
    format!("{:016x}", g.0)
}

/// The plugin's AddGuidsToPKey body, byte for byte.
fn add_body(pkey: u16, guids: &[Guid]) -> String {
    let list: Vec<String> = guids
        .iter()
        .map(|g| format!("{:?}", guid_str(*g)))
        .collect();
    format!(
        r#"{{"pkey": "0x{pkey:04X}", "index0": true, "ip_over_ib": true, "membership": "full", "guids": [{}]}}"#,
        list.join(",")
    )
}

/// The plugin's RemoveGuidsFromPKey body.
fn remove_body(pkey: u16, guids: &[Guid]) -> String {
    let list: Vec<String> = guids
        .iter()
        .map(|g| format!("{:?}", guid_str(*g)))
        .collect();
    format!(
        r#"{{"pkey": "0x{pkey:04X}", "guids": [{}]}}"#,
        list.join(",")
    )
}

fn change(op: Op, pkey: u32, guids: &[Guid]) -> ChangeGuidsRequest {
    ChangeGuidsRequest {
        op: op as i32,
        target: Some(Target::Pkey(pkey)),
        guids: guids.iter().map(|g| g.0).collect(),
        ipoib: true,
        index0: true,
        ..Default::default()
    }
}

/// A partition's (guid, limited) members and its ipoib and index0 flags.
type Members = (Vec<(u64, bool)>, bool, bool);

/// The members and flags of partition `pkey`.
fn members(t: &state::Tenants, pkey: u32) -> Option<Members> {
    let p = t.pkeys.iter().find(|p| p.pkey == pkey)?;
    let m = p.members.iter().map(|m| (m.guid, m.limited)).collect();
    Some((m, p.ipoib, p.index0))
}

#[test]
fn ufm_plugin_calls_give_the_memberships_of_the_grpc_calls() {
    let d = std::env::temp_dir().join(format!("smnode-ufm-{}", std::process::id()));
    let mut c = LocalCluster::new(
        &PathBuf::from(env!("CARGO_BIN_EXE_sm-node")),
        "ft2:8",
        3,
        &d,
    )
    .unwrap();
    let (pw, tok) = (d.join("ufm-password"), d.join("ufm-tokens"));
    std::fs::write(&pw, format!("{PASSWORD}\n")).unwrap();
    std::fs::write(&tok, format!("# UFM tokens\n{TOKEN}\n")).unwrap();
    let held: Vec<std::net::TcpListener> = (0..3)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let ufm: Vec<String> = held
        .iter()
        .map(|l| l.local_addr().unwrap().to_string())
        .collect();
    drop(held);
    for (r, addr) in c.replicas.iter_mut().zip(&ufm) {
        r.extra = vec![
            "--ufm-listen".into(),
            addr.clone(),
            "--ufm-password-file".into(),
            pw.display().to_string(),
            "--ufm-token-file".into(),
            tok.display().to_string(),
        ];
    }
    c.start_all().unwrap();
    let cas = sm_node::cluster::harness::ca_ports(&c.topo);
    // cas[0..3] are the replicas' ports; red's member, then the pods' ports; one VF alias
    // GUID that is in no fabric (a pod on a host not cabled yet keeps its GUID).
    let (red, a, b) = (cas[4].2, cas[5].2, cas[6].2);
    let vf = Guid(0x0200_00ff_fe00_0a01);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let st = c.wait_serving(0, BOUND).await.unwrap();
        let follower = (1..=3).find(|i| *i != st.leader_id).unwrap();
        c.wait_status(follower, BOUND, |s| s.leader_id == st.leader_id)
            .await
            .unwrap();
        let mut fa = c.admin(follower).unwrap();
        let at = ufm[(follower - 1) as usize].clone();
        let auth = basic("admin", PASSWORD);
        fa.apply_policy(ApplyPolicyRequest {
            text: OPERATOR.into(),
            expected_version: 0,
            request_id: 0,
        })
        .await
        .unwrap();
        fa.set_tenant(SetTenantRequest {
            tenant: Some(state::Tenant {
                name: "red".into(),
                pkey: 0x101,
                members: vec![state::TenantMember {
                    kind: Some(state::tenant_member::Kind::PortGuid(red.0)),
                }],
                ..Default::default()
            }),
            ..Default::default()
        })
        .await
        .unwrap();

        // Validate(): the version call.
        let (s, _) = http(&at, "GET", "/ufmRest/app/ufm_version", &auth, "").await;
        assert_eq!(s, 200);
        // Pod a, b and a VF come up in network 0x000A; b goes away.
        let (s, body) = http(
            &at,
            "POST",
            "/ufmRest/resources/pkeys",
            &auth,
            &add_body(0xa, &[a, b, vf]),
        )
        .await;
        assert_eq!(s, 200, "{body}");
        let rm = remove_body(0xa, &[b]);
        let (s, body) = http(
            &at,
            "POST",
            "/ufmRest/actions/remove_guids_from_pkey",
            &auth,
            &rm,
        )
        .await;
        assert_eq!(s, 200, "{body}");
        // The same through gRPC on 0x000B.
        fa.change_guids(change(Op::Add, 0xb, &[a, b, vf]))
            .await
            .unwrap();
        fa.change_guids(change(Op::Remove, 0xb, &[b]))
            .await
            .unwrap();

        let l = fa
            .list_tenants(ListTenantsRequest { linearizable: true })
            .await
            .unwrap()
            .into_inner();
        let t = l.tenants.clone().unwrap();
        let want = (vec![(a.0, false), (vf.0, false)], true, true);
        assert_eq!(members(&t, 0xa), Some(want.clone()));
        assert_eq!(members(&t, 0xb), Some(want));
        let version = t.version;
        // ListGuidsInUse(): every GUID in use, by P_Key, as the plugin parses it.
        let (s, body) = http(
            &at,
            "GET",
            "/ufmRest/resources/pkeys/?guids_data=true",
            &auth,
            "",
        )
        .await;
        assert_eq!(s, 200);
        let v: BTreeMap<String, Value> = serde_json::from_str(&body).unwrap();
        let in_use = |k: &str| -> Vec<String> {
            v[k]["guids"]
                .as_array()
                .unwrap()
                .iter()
                .map(|g| g["guid"].as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(in_use("0xa"), vec![guid_str(a), guid_str(vf)]);
        assert_eq!(in_use("0xa"), in_use("0xb"));
        assert_eq!(in_use("0x101"), vec![guid_str(red)]);
        // Host assignments: a holds both keys, b neither.
        let asg = fa
            .get_tenant_assignment(GetTenantAssignmentRequest {
                port_guids: vec![a.0],
                linearizable: true,
            })
            .await
            .unwrap()
            .into_inner();
        assert!(asg.ports[0].pkeys.contains(&0x800a) && asg.ports[0].pkeys.contains(&0x800b));
        // Programmed within the next sweep.
        c.wait_programmed(BOUND).await.unwrap();
        let tables: BTreeMap<Guid, Vec<PKey>> = c.ca_pkeys().into_iter().collect();
        for k in [0x800a, 0x800b] {
            assert!(tables[&a].contains(&PKey(k)), "{:?}", tables[&a]);
            assert!(!tables[&b].contains(&PKey(k)), "{:?}", tables[&b]);
        }
        // index0: one of them is at index 0 of a's table (the last indx0 statement wins).
        assert!([PKey(0x800a), PKey(0x800b)].contains(&tables[&a][0]));

        // Refusals change nothing: 0x7fff, the operator's P_Key, a tenant's port, a body the
        // plugin never sends, bad or missing credentials, a password on the token routes.
        for (pkey, g, code) in [
            (0x7fff, a, "TENANT-E003"),
            (0x300, a, "TENANT-E005"),
            (0xa, red, "TENANT-E017"),
        ] {
            let (s, body) = http(
                &at,
                "POST",
                "/ufmRest/resources/pkeys",
                &auth,
                &add_body(pkey, &[g]),
            )
            .await;
            assert_eq!(s, 400, "{body}");
            assert!(body.contains(code), "{body}");
            let e = fa
                .change_guids(change(Op::Add, u32::from(pkey), &[g]))
                .await
                .unwrap_err();
            assert_eq!(e.code(), Code::InvalidArgument);
            assert!(e.message().contains(code), "{e:?}");
        }
        let bad = [
            basic("admin", "wrong"),
            basic("root", PASSWORD),
            String::new(),
            format!("Authorization: Basic {TOKEN}\r\n"),
        ];
        for h in &bad {
            let (s, _) = http(
                &at,
                "POST",
                "/ufmRest/resources/pkeys",
                h,
                &add_body(0xa, &[b]),
            )
            .await;
            assert_eq!(s, 401);
        }
        let (s, _) = http(
            &at,
            "POST",
            "/ufmRestV3/resources/pkeys",
            &auth,
            &add_body(0xa, &[b]),
        )
        .await;
        assert_eq!(s, 401);
        let t = fa
            .list_tenants(ListTenantsRequest { linearizable: true })
            .await
            .unwrap()
            .into_inner()
            .tenants
            .unwrap();
        assert_eq!(t.version, version);
        // Token auth (UFM's /ufmRestV3 with the token as the Basic credential) reads.
        let (s, _) = http(
            &at,
            "GET",
            "/ufmRestV3/resources/pkeys/0xa",
            &format!("Authorization: Basic {TOKEN}\r\n"),
            "",
        )
        .await;
        assert_eq!(s, 200);

        // Pod a's GUID is reused by tenant red (its P_Key through the UFM call): it leaves
        // both partitions in the same change.
        let (s, body) = http(
            &at,
            "POST",
            "/ufmRest/resources/pkeys",
            &auth,
            &add_body(0x101, &[a]),
        )
        .await;
        assert_eq!(s, 200, "{body}");
        assert!(
            body.contains("left partition 0x000a") && body.contains("left partition 0x000b"),
            "{body}"
        );
        let t = fa
            .list_tenants(ListTenantsRequest { linearizable: true })
            .await
            .unwrap()
            .into_inner()
            .tenants
            .unwrap();
        assert_eq!(members(&t, 0xa).unwrap().0, members(&t, 0xb).unwrap().0);
        assert_eq!(members(&t, 0xa).unwrap().0, vec![(vf.0, false)]);
        // smctl makes the same calls: a GUID into 0x000C, then the listing.
        let smctl = |args: &[&str]| {
            let out = std::process::Command::new(common::smctl::bin())
                .args(["--server", &c.replicas[(follower - 1) as usize].addr])
                .args(args)
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{args:?}: {err}");
            String::from_utf8_lossy(&out.stdout).to_string()
        };
        let g = format!("{:#x}", b.0);
        let out = smctl(&["pkey", "add-guid", "0xc", &g, "--limited", "--name", "pods"]);
        assert!(out.contains("note: partition 0x000c created"), "{out}");
        let out = smctl(&["tenants", "add-guid", "red", &g]);
        assert!(out.contains("left partition 0x000c"), "{out}");
        let v: Value = serde_json::from_str(&smctl(&["pkey", "list", "--json"])).unwrap();
        let c_part = v["pkeys"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["pkey"] == "0x000c");
        assert_eq!(c_part.unwrap()["guids"], serde_json::json!([]), "{v}");
        smctl(&["tenants", "remove-guid", "red", &g]);
        smctl(&["pkey", "delete", "0xc"]);
        // Deleting the networks: DELETE over UFM, DELETE_PKEY over gRPC; twice is NOT_FOUND.
        let (s, _) = http(&at, "DELETE", "/ufmRest/resources/pkeys/0xa", &auth, "").await;
        assert_eq!(s, 200);
        fa.change_guids(change(Op::DeletePkey, 0xb, &[]))
            .await
            .unwrap();
        let (s, _) = http(&at, "DELETE", "/ufmRest/resources/pkeys/0xb", &auth, "").await;
        assert_eq!(s, 404);
        let e = fa
            .change_guids(change(Op::DeletePkey, 0xa, &[]))
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::NotFound);
        let (s, body) = http(
            &at,
            "GET",
            "/ufmRest/resources/pkeys?guids_data=true",
            &auth,
            "",
        )
        .await;
        assert_eq!(s, 200);
        let v: BTreeMap<String, Value> = serde_json::from_str(&body).unwrap();
        assert_eq!(v.keys().collect::<Vec<_>>(), vec!["0x101"], "{body}");
    });
    drop(c);
    let _ = std::fs::remove_dir_all(&d);
}
