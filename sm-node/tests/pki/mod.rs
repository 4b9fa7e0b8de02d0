//! Test PKI shared by the TLS tests: a CA and a certificate for localhost/127.0.0.1 signed by
//! it (rcgen), and a helper that writes PEM files.
#![allow(dead_code)]

use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use std::path::{Path, PathBuf};

/// PEM texts of a CA and of one leaf certificate with its key.
pub struct Pki {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

/// A CA and a certificate for localhost/127.0.0.1 signed by it.
pub fn pki() -> Pki {
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_key = KeyPair::generate().unwrap();
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let leaf =
        CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = leaf.signed_by(&key, &issuer).unwrap();
    Pki {
        ca_pem: ca_cert.pem(),
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    }
}

/// Writes `text` to `dir/name` and returns the path.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// An admin client over TLS to `addr`, trusting `ca_pem` and presenting `p`'s certificate.
pub async fn client(
    addr: &str,
    p: &Pki,
    ca_pem: &str,
) -> Result<proto::admin::sm_admin_client::SmAdminClient<tonic::transport::Channel>, String> {
    use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};
    let tls = ClientTlsConfig::new()
        .domain_name("localhost")
        .ca_certificate(Certificate::from_pem(ca_pem))
        .identity(Identity::from_pem(&p.cert_pem, &p.key_pem));
    let ch = Endpoint::from_shared(format!("https://{addr}"))
        .unwrap()
        .tls_config(tls)
        .unwrap()
        .connect_timeout(std::time::Duration::from_secs(2))
        .connect()
        .await
        .map_err(|e| format!("{e:?}"))?;
    Ok(proto::admin::sm_admin_client::SmAdminClient::new(ch))
}

/// `m` with `authorization: Bearer t`.
pub fn with_token<T>(t: &str, m: T) -> tonic::Request<T> {
    let mut r = tonic::Request::new(m);
    r.metadata_mut()
        .insert("authorization", format!("Bearer {t}").parse().unwrap());
    r
}
