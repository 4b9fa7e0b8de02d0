//! The router against a backend that records the admin calls: the plugin's request shapes
//! become exactly one ChangeGuids each, credentials are checked (401), errors keep their
//! status. The replay against a real replica is sm-node's `tests/ufm_api.rs`.

use super::*;
use proto::admin::change_guids_request::{Op, Target};
use proto::state::{ApiMember, ApiPartition, Tenants};
use std::sync::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[derive(Default)]
struct Recorder {
    calls: Mutex<Vec<(ChangeGuidsRequest, Option<String>)>>,
}

impl Backend for Recorder {
    async fn change_guids(
        &self,
        r: tonic::Request<ChangeGuidsRequest>,
    ) -> Result<ChangeGuidsReply, Status> {
        let auth = r
            .metadata()
            .get("authorization")
            .map(|v| v.to_str().unwrap().to_string());
        let r = r.into_inner();
        if r.guids.contains(&0xbad) {
            return Err(Status::invalid_argument("TENANT-E017: refused"));
        }
        self.calls.lock().unwrap().push((r, auth));
        Ok(ChangeGuidsReply {
            version: 1,
            index: 1,
            warnings: vec![],
        })
    }
    async fn list_tenants(
        &self,
        _: tonic::Request<ListTenantsRequest>,
    ) -> Result<ListTenantsReply, Status> {
        Ok(ListTenantsReply {
            tenants: Some(Tenants {
                pkeys: vec![ApiPartition {
                    pkey: 5,
                    members: vec![ApiMember {
                        guid: 0x020000000000003e,
                        limited: false,
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            }),
            ..Default::default()
        })
    }
}

/// One HTTP/1.1 exchange: (status, body).
async fn http(addr: std::net::SocketAddr, head: &str, body: &str) -> (u16, String) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "{head}\r\nHost: ufm\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    let status = out[9..12].parse().unwrap();
    let body = out.split_once("\r\n\r\n").unwrap().1.to_string();
    (status, body)
}

const BASIC: &str = "Authorization: Basic YWRtaW46MTIzNDU2"; // admin:123456
const JSONT: &str = "Content-Type: application/json; charset=utf-8";

#[tokio::test(flavor = "current_thread")]
async fn plugin_shapes_map_to_one_change_each_and_credentials_are_checked() {
    let rec = Arc::new(Recorder::default());
    let access = Access {
        username: "admin".into(),
        password: "123456".into(),
        tokens: vec!["tok-abcdef".into()],
        admin_token: Some("admintoken".into()),
    };
    let app = router(rec.clone(), access);
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(l, app).await });

    let add = r#"{"pkey": "0x000A", "index0": true, "ip_over_ib": true, "membership": "full", "guids": ["1122334455667788"]}"#;
    let (st, _) = http(
        addr,
        &format!("POST /ufmRest/resources/pkeys HTTP/1.1\r\n{BASIC}\r\n{JSONT}"),
        add,
    )
    .await;
    assert_eq!(st, 200);
    let rm = r#"{"pkey": "0x000A", "guids": ["1122334455667788"]}"#;
    let (st, _) = http(
        addr,
        &format!("POST /ufmRest/actions/remove_guids_from_pkey HTTP/1.1\r\n{BASIC}\r\n{JSONT}"),
        rm,
    )
    .await;
    assert_eq!(st, 200);
    let (st, _) = http(
        addr,
        "DELETE /ufmRestV3/resources/pkeys/0xa HTTP/1.1\r\nAuthorization: Basic tok-abcdef",
        "",
    )
    .await;
    assert_eq!(st, 200);
    {
        let calls = rec.calls.lock().unwrap();
        let ops: Vec<_> = calls
            .iter()
            .map(|(r, _)| (r.op, r.target.clone(), r.guids.clone()))
            .collect();
        assert_eq!(
            ops,
            vec![
                (
                    Op::Add as i32,
                    Some(Target::Pkey(0xa)),
                    vec![0x1122334455667788]
                ),
                (
                    Op::Remove as i32,
                    Some(Target::Pkey(0xa)),
                    vec![0x1122334455667788]
                ),
                (Op::DeletePkey as i32, Some(Target::Pkey(0xa)), vec![]),
            ]
        );
        assert!(calls[0].0.ipoib && calls[0].0.index0 && !calls[0].0.limited);
        assert!(
            calls
                .iter()
                .all(|(_, a)| a.as_deref() == Some("Bearer admintoken"))
        );
    }
    // The listing the plugin reads (guids without separators).
    let (st, body) = http(
        addr,
        &format!("GET /ufmRest/resources/pkeys/?guids_data=true HTTP/1.1\r\n{BASIC}"),
        "",
    )
    .await;
    assert_eq!(st, 200);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["0x5"]["guids"][0]["guid"], "020000000000003e", "{body}");
    let (st, _) = http(
        addr,
        &format!("GET /ufmRest/app/ufm_version HTTP/1.1\r\n{BASIC}"),
        "",
    )
    .await;
    assert_eq!(st, 200);
    // Refusals: wrong password, no credentials, a password on the token routes, a token on
    // the basic routes: 401 and no call.
    let n = rec.calls.lock().unwrap().len();
    for head in [
        "POST /ufmRest/resources/pkeys HTTP/1.1\r\nAuthorization: Basic YWRtaW46d3Jvbmc=",
        "POST /ufmRest/resources/pkeys HTTP/1.1\r\nX-No: auth",
        "POST /ufmRestV3/resources/pkeys HTTP/1.1\r\nAuthorization: Basic YWRtaW46MTIzNDU2",
        "POST /ufmRest/resources/pkeys HTTP/1.1\r\nAuthorization: Basic tok-abcdef",
        "GET /ufmRest/app/ufm_version HTTP/1.1\r\nX-No: auth",
    ] {
        let (st, _) = http(addr, head, add).await;
        assert_eq!(st, 401, "{head}");
    }
    assert_eq!(rec.calls.lock().unwrap().len(), n);
    // Bad bodies are 400 before any call; an admin refusal keeps its message.
    for body in [
        r#"{"pkey": "0x12345", "guids": []}"#,
        r#"{"pkey": "0xa", "guids": ["nothex"]}"#,
        "{",
    ] {
        let (st, b) = http(
            addr,
            &format!("POST /ufmRest/resources/pkeys HTTP/1.1\r\n{BASIC}"),
            body,
        )
        .await;
        assert_eq!(st, 400, "{b}");
    }
    assert_eq!(rec.calls.lock().unwrap().len(), n);
    let (st, b) = http(
        addr,
        &format!("POST /ufmRest/resources/pkeys HTTP/1.1\r\n{BASIC}"),
        r#"{"pkey":"0xa","guids":["bad"]}"#,
    )
    .await;
    assert_eq!((st, b.contains("TENANT-E017")), (400, true), "{b}");
    let (st, _) = http(
        addr,
        &format!("GET /ufmRest/resources/pkeys/0x6 HTTP/1.1\r\n{BASIC}"),
        "",
    )
    .await;
    assert_eq!(st, 404);
}
