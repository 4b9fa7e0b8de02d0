//! Tenant RPCs under TLS and tokens (certificates made here with rcgen, no key committed):
//! a read token lists tenants and gets assignments but cannot set or delete (PERMISSION_DENIED),
//! an admin token can; no token is UNAUTHENTICATED; the host agent connects with the CA, its
//! client certificate and a read token.

mod pki;

use pki::{client, pki, with_token, write};
use proto::admin::*;
use proto::state::{self, tenant_member};
use sm_node::cluster::harness::{LocalCluster, ca_ports};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tonic::Code;

const BOUND: Duration = Duration::from_secs(60);
const READ: &str = "tenant-read-token-1";
const ADMIN: &str = "tenant-admin-token-2";

#[test]
fn tenant_rpcs_need_their_roles_and_the_agent_speaks_tls() {
    let d = std::env::temp_dir().join(format!("smnode-tenants-tls-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let p = pki();
    let (cert, key, ca) = (
        write(&d, "cert.pem", &p.cert_pem),
        write(&d, "key.pem", &p.key_pem),
        write(&d, "ca.pem", &p.ca_pem),
    );
    // The replica inherits this process's environment. SAFETY: set before any other thread
    // of this test binary exists (its only test, first statements).
    unsafe {
        std::env::set_var("SM_TLS_CERT", &cert);
        std::env::set_var("SM_TLS_KEY", &key);
        std::env::set_var("SM_TLS_CA", &ca);
        std::env::set_var("SM_TOKENS", format!("read:{READ},admin:{ADMIN}"));
    }
    let mut c = LocalCluster::new(
        &PathBuf::from(env!("CARGO_BIN_EXE_sm-node")),
        "ft2:8",
        1,
        &d.join("cluster"),
    )
    .unwrap();
    c.start_all().unwrap();
    let addr = c.replicas[0].addr.clone();
    let host = ca_ports(&c.topo)[4].2;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let start = Instant::now();
        let mut a = loop {
            assert!(start.elapsed() < BOUND, "no serving replica over TLS");
            if let Ok(mut cl) = client(&addr, &p, &p.ca_pem).await
                && let Ok(s) = cl
                    .cluster_status(with_token(READ, ClusterStatusRequest::default()))
                    .await
                && s.into_inner().subnet_up_unix_ms != 0
            {
                break cl;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let set = SetTenantRequest {
            tenant: Some(state::Tenant {
                name: "red".into(),
                pkey: 0x101,
                members: vec![state::TenantMember {
                    kind: Some(tenant_member::Kind::PortGuid(host.0)),
                }],
                rdma: vec![state::RdmaLimit {
                    device: "mlx5_0".into(),
                    hca_handle: Some(2),
                    hca_object: None,
                }],
                ..Default::default()
            }),
            ..Default::default()
        };
        let e = a.set_tenant(set.clone()).await.unwrap_err();
        assert_eq!(e.code(), Code::Unauthenticated, "{e:?}");
        let e = a
            .set_tenant(with_token(READ, set.clone()))
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
        let r = a
            .set_tenant(with_token(ADMIN, set))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.version, 1);
        let e = a
            .delete_tenant(with_token(
                READ,
                DeleteTenantRequest {
                    name: "red".into(),
                    ..Default::default()
                },
            ))
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
        let e = a
            .list_tenants(ListTenantsRequest::default())
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::Unauthenticated, "{e:?}");
        let l = a
            .list_tenants(with_token(READ, ListTenantsRequest::default()))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(l.tenants.unwrap().tenants.len(), 1);

        // The agent: TLS with its client certificate and the read token.
        let conn = sm_agent::client::Conn {
            server: addr.clone(),
            token: Some(READ.into()),
            ca: Some(ca.clone()),
            tls_domain: "localhost".into(),
            identity: Some((cert.clone(), key.clone())),
        };
        let r = sm_agent::client::fetch(&conn, &[host.0]).await.unwrap();
        assert_eq!(r.tenant, "red");
        assert_eq!(r.rdma[0].hca_handle, Some(2));
        // Without a token the agent reports AGENT-E001.
        let e = sm_agent::client::fetch(
            &sm_agent::client::Conn {
                token: None,
                ..conn.clone()
            },
            &[host.0],
        )
        .await
        .unwrap_err();
        assert_eq!(e.code(), "AGENT-E001", "{e}");
        // Plain text is refused.
        let e = sm_agent::client::fetch(
            &sm_agent::client::Conn {
                ca: None,
                identity: None,
                ..conn
            },
            &[host.0],
        )
        .await
        .unwrap_err();
        assert_eq!(e.code(), "AGENT-E001", "{e}");
    });
    drop(c);
    let _ = std::fs::remove_dir_all(&d);
}
