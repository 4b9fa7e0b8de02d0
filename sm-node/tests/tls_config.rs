//! The admin API's transport security settings: plaintext only on loopback with the explicit
//! flag; certificate files read and named in errors.

use sm_node::config::AdminSecurity;
use sm_node::tls::{Security, check, from_config};
use std::net::SocketAddr;
fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

#[test]
fn plaintext_needs_the_explicit_flag_and_a_loopback_address() {
    let plain = Security::default();
    let e = check(&plain, addr("127.0.0.1:7000")).unwrap();
    assert!(e.starts_with("E_NODE_TLS_PLAINTEXT"), "{e}");
    assert!(
        e.contains("insecure-loopback = true") && e.contains("tls-cert"),
        "{e}"
    );
    let dev = Security {
        insecure_loopback: true,
        ..Security::default()
    };
    assert_eq!(check(&dev, addr("127.0.0.1:7000")), None);
    assert_eq!(check(&dev, addr("[::1]:7000")), None);
    let e = check(&dev, addr("10.0.0.1:7000")).unwrap();
    assert!(
        e.starts_with("E_NODE_TLS_PLAINTEXT") && e.contains("tls-ca"),
        "{e}"
    );
    let e = check(&dev, addr("0.0.0.0:7000")).unwrap();
    assert!(e.starts_with("E_NODE_TLS_PLAINTEXT"), "{e}");
}

#[test]
fn config_files_are_read_and_named_in_errors() {
    let cfg = AdminSecurity {
        tls_cert: Some("/nonexistent/quorum-cert.pem".into()),
        tls_key: Some("/nonexistent/quorum-key.pem".into()),
        ..AdminSecurity::default()
    };
    // Only when the environment does not override (tests of this crate never set it).
    if std::env::var_os("SM_TLS_CERT").is_none() {
        let e = from_config(&cfg).unwrap_err();
        assert!(
            e.contains("[admin] tls-cert=/nonexistent/quorum-cert.pem"),
            "{e}"
        );
    }
    let half = AdminSecurity {
        tls_cert: None,
        tls_key: Some("/nonexistent/k".into()),
        ..AdminSecurity::default()
    };
    if std::env::var_os("SM_TLS_KEY").is_none() && std::env::var_os("SM_TLS_CERT").is_none() {
        assert!(from_config(&half).is_err());
    }
    let dev = AdminSecurity {
        insecure_loopback: Some(true),
        ..AdminSecurity::default()
    };
    if std::env::var_os("SM_INSECURE_LOOPBACK").is_none() {
        assert!(from_config(&dev).unwrap().insecure_loopback);
        assert!(
            !from_config(&AdminSecurity::default())
                .unwrap()
                .insecure_loopback
        );
    }
}
