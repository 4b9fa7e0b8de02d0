//! Admin API security on a 3-replica process cluster with TLS (certificates made here with
//! rcgen; no key is committed) and bearer tokens: no token cannot read, a read token
//! cannot apply, sweep or transfer, an admin token can; a client trusting another CA
//! cannot connect, nor can a plain-text client.

mod pki;

use pki::{client, pki, with_token, write};
use proto::admin::sm_admin_client::SmAdminClient;
use proto::admin::*;
use sm_node::cluster::harness::LocalCluster;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tonic::Code;
use tonic::transport::Endpoint;

const BOUND: Duration = Duration::from_secs(60);
const READ: &str = "read-token-0123";
const ADMIN: &str = "admin-token-4567";

#[test]
fn tokens_roles_and_tls() {
    let d = std::env::temp_dir().join(format!("smnode-admin-sec-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let p = pki();
    let other = pki();
    // The replicas inherit this process's environment. SAFETY: set before any other thread
    // of this test binary exists (its only test, first statements).
    unsafe {
        std::env::set_var("SM_TLS_CERT", write(&d, "cert.pem", &p.cert_pem));
        std::env::set_var("SM_TLS_KEY", write(&d, "key.pem", &p.key_pem));
        std::env::set_var("SM_TLS_CA", write(&d, "ca.pem", &p.ca_pem));
        std::env::set_var("SM_TOKENS", format!("read:{READ},admin:{ADMIN}"));
    }
    let mut c = LocalCluster::new(
        &PathBuf::from(env!("CARGO_BIN_EXE_sm-node")),
        "ft2:8",
        3,
        &d.join("cluster"),
    )
    .unwrap();
    c.start_all().unwrap();
    let addrs: Vec<String> = c.replicas.iter().map(|r| r.addr.clone()).collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // Wait for a leader whose subnet is up, asking over TLS with the read token.
        let start = Instant::now();
        let (leader, addr) = loop {
            assert!(start.elapsed() < BOUND, "no serving master over TLS");
            let mut found = None;
            for a in &addrs {
                if let Ok(mut cl) = client(a, &p, &p.ca_pem).await
                    && let Ok(s) = cl
                        .cluster_status(with_token(READ, ClusterStatusRequest::default()))
                        .await
                {
                    let s = s.into_inner();
                    if s.leader_id == s.self_id && s.subnet_up_unix_ms != 0 {
                        found = Some((s.self_id, a.clone()));
                    }
                }
            }
            if let Some(f) = found {
                break f;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let follower_addr = addrs.iter().find(|a| **a != addr).unwrap().clone();
        let mut la = client(&addr, &p, &p.ca_pem).await.unwrap();
        let mut fa = client(&follower_addr, &p, &p.ca_pem).await.unwrap();
        // No token: UNAUTHENTICATED on a read.
        for cl in [&mut la, &mut fa] {
            let e = cl
                .cluster_status(ClusterStatusRequest::default())
                .await
                .unwrap_err();
            assert_eq!(e.code(), Code::Unauthenticated, "{e:?}");
            let e = cl
                .get_policy(with_token(
                    "not-a-token-at-all",
                    GetPolicyRequest::default(),
                ))
                .await
                .unwrap_err();
            assert_eq!(e.code(), Code::Unauthenticated, "{e:?}");
            // A read token reads but cannot write.
            cl.get_policy(with_token(READ, GetPolicyRequest::default()))
                .await
                .unwrap();
            let e = cl
                .apply_policy(with_token(
                    READ,
                    ApplyPolicyRequest {
                        text: "Default=0x7fff : ALL=full ;\n".into(),
                        expected_version: 0,
                        request_id: 0,
                    },
                ))
                .await
                .unwrap_err();
            assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
            let e = cl
                .trigger_sweep(with_token(READ, TriggerSweepRequest { heavy: true }))
                .await
                .unwrap_err();
            assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
            let e = cl
                .transfer_master(with_token(READ, TransferMasterRequest { to_replica: 1 }))
                .await
                .unwrap_err();
            assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
            let e = cl
                .change_membership(with_token(
                    READ,
                    ChangeMembershipRequest {
                        id: 9,
                        add: true,
                        force: false,
                    },
                ))
                .await
                .unwrap_err();
            assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
        }
        // The policy is unchanged by all of that.
        let g = la
            .get_policy(with_token(READ, GetPolicyRequest { linearizable: true }))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(g.version, 0);
        // An admin token writes, through the follower (forwarded over TLS to the leader).
        let r = fa
            .apply_policy(with_token(
                ADMIN,
                ApplyPolicyRequest {
                    text: "Default=0x7fff : ALL=full ;\n".into(),
                    expected_version: 0,
                    request_id: 0,
                },
            ))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.version, 1);
        // On a loaded machine the leadership may move meanwhile: until the new leader's
        // master runs, a sweep request is refused as UNAVAILABLE ("the master is starting"),
        // which a client retries; the answer names the master that took it.
        let start = Instant::now();
        let s = loop {
            match fa
                .trigger_sweep(with_token(ADMIN, TriggerSweepRequest { heavy: false }))
                .await
            {
                Ok(r) => break r.into_inner(),
                Err(e) if e.code() == Code::Unavailable && e.message().contains("starting") => {
                    assert!(start.elapsed() < BOUND, "the master never ran again: {e:?}");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => panic!("{e:?}"),
            }
        };
        let now_leader = fa
            .cluster_status(with_token(READ, ClusterStatusRequest::default()))
            .await
            .unwrap()
            .into_inner()
            .leader_id;
        assert!(s.master_id == leader || s.master_id == now_leader, "{s:?}");
        // A client trusting another CA fails the handshake; so does plain text.
        let bad = client(&addr, &other, &other.ca_pem).await;
        match bad {
            Err(_) => {}
            Ok(mut cl) => {
                let e = cl
                    .cluster_status(with_token(READ, ClusterStatusRequest::default()))
                    .await
                    .unwrap_err();
                assert_eq!(e.code(), Code::Unavailable, "{e:?}");
            }
        }
        let plain = Endpoint::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect_timeout(Duration::from_secs(2))
            .connect()
            .await;
        if let Ok(ch) = plain {
            let e = SmAdminClient::new(ch)
                .cluster_status(with_token(READ, ClusterStatusRequest::default()))
                .await
                .unwrap_err();
            assert_ne!(e.code(), Code::Ok);
        }
    });
    // Stop the replicas and the fabric before removing its socket's directory.
    drop(c);
    if std::env::var_os("SMNODE_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&d);
    }
}
