//! HTTPS for a replica's HTTP services (the dashboard, the UFM-compatible API): the
//! replica's certificate chain and key (the admin listener's settings, the `SM_TLS_CERT` /
//! `SM_TLS_KEY` environment first), served with rustls (ring); no client certificate is
//! asked (browsers present the admin tokens, UFM clients their credentials).

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls;
use tokio_rustls::server::TlsStream;

/// Slowest TLS handshake waited for.
const HANDSHAKE: Duration = Duration::from_secs(5);

fn path(var: &str, cfg: Option<&Path>) -> Option<std::path::PathBuf> {
    std::env::var_os(var)
        .map(std::path::PathBuf::from)
        .or_else(|| cfg.map(Path::to_path_buf))
}

/// The acceptor when a certificate and key are configured (None: plain).
pub fn acceptor(cert: Option<&Path>, key: Option<&Path>) -> Result<Option<TlsAcceptor>, String> {
    let (Some(cert), Some(key)) = (path("SM_TLS_CERT", cert), path("SM_TLS_KEY", key)) else {
        return Ok(None);
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&cert)
        .map_err(|e| format!("{}: {e}", cert.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}: {e}", cert.display()))?;
    let key = PrivateKeyDer::from_pem_file(&key).map_err(|e| format!("{}: {e}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| e.to_string())?;
    Ok(Some(TlsAcceptor::from(Arc::new(config))))
}

/// A TCP listener whose connections are TLS sessions. Handshakes run concurrently (one
/// task each, bounded by [`HANDSHAKE`]), so a slow or silent client delays nobody; failed
/// handshakes are logged and dropped.
pub struct TlsListener {
    local: std::net::SocketAddr,
    rx: tokio::sync::mpsc::Receiver<(TlsStream<TcpStream>, std::net::SocketAddr)>,
    accept_task: tokio::task::JoinHandle<()>,
}

impl TlsListener {
    /// Wraps `tcp` (spawns the accept task on the current runtime).
    pub fn new(tcp: TcpListener, acc: TlsAcceptor) -> TlsListener {
        let local = tcp
            .local_addr()
            .unwrap_or_else(|_| std::net::SocketAddr::from(([0, 0, 0, 0], 0)));
        let (tx, rx) = tokio::sync::mpsc::channel(64);
        let accept_task = tokio::spawn(async move {
            loop {
                let (s, peer) = match tcp.accept().await {
                    Ok(x) => x,
                    Err(e) => {
                        tracing::warn!("E_HTTPS_ACCEPT: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let (hs_acc, hs_tx) = (acc.clone(), tx.clone());
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE, hs_acc.accept(s)).await {
                        Ok(Ok(t)) => {
                            let _ = hs_tx.send((t, peer)).await;
                        }
                        Ok(Err(e)) => tracing::debug!("TLS handshake from {peer}: {e}"),
                        Err(_) => tracing::debug!("TLS handshake from {peer}: timed out"),
                    }
                });
                if tx.is_closed() {
                    return;
                }
            }
        });
        TlsListener {
            local,
            rx,
            accept_task,
        }
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.accept_task.abort();
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.rx.recv().await {
            Some(x) => x,
            // The accept task ended (it only does when this listener is dropped).
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, KeyPair};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn https_round_trip_and_no_tls_without_a_certificate() {
        assert!(acceptor(None, None).unwrap().is_none());
        let dir = std::env::temp_dir().join(format!("ufm-api-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(vec!["localhost".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let (cp, kp) = (dir.join("cert.pem"), dir.join("key.pem"));
        std::fs::write(&cp, cert.pem()).unwrap();
        std::fs::write(&kp, key.serialize_pem()).unwrap();
        let acc = acceptor(Some(&cp), Some(&kp))
            .unwrap()
            .expect("TLS configured");
        // A key file that is not PEM is an error, not a panic.
        std::fs::write(&kp, "not a key").unwrap();
        assert!(acceptor(Some(&cp), Some(&kp)).is_err());

        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = tcp.local_addr().unwrap();
            let app = axum::Router::new().route("/", axum::routing::get(|| async { "over tls" }));
            let server = tokio::spawn(async move {
                axum::serve(TlsListener::new(tcp, acc), app).await.unwrap();
            });
            // A client that speaks plain HTTP is dropped, and one that says nothing
            // delays nobody: the server keeps serving.
            let mut plain = TcpStream::connect(addr).await.unwrap();
            plain.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
            let _silent = TcpStream::connect(addr).await.unwrap();
            let mut roots = rustls::RootCertStore::empty();
            roots.add(cert.der().clone()).unwrap();
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let cc = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_root_certificates(roots)
                .with_no_client_auth();
            let conn = tokio_rustls::TlsConnector::from(Arc::new(cc));
            let tcp = TcpStream::connect(addr).await.unwrap();
            let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
            let mut tls = conn.connect(name, tcp).await.unwrap();
            tls.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                .await
                .unwrap();
            let mut out = Vec::new();
            tls.read_to_end(&mut out).await.unwrap_or_default();
            let text = String::from_utf8_lossy(&out);
            assert!(text.starts_with("HTTP/1.1 200"), "{text}");
            assert!(text.ends_with("over tls"), "{text}");
            server.abort();
        });
        let _ = std::fs::remove_dir_all(&dir);
    }
}
