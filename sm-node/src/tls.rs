//! Security settings of a replica's gRPC listener (Peer + SmAdmin share it): TLS (rustls
//! through tonic, ring provider) for the server and for every client this process opens
//! (peer senders, leader forwarding), and the admin tokens.
//!
//! Configured from the environment, once per process, before serving ([`install_from_env`]):
//!
//! | variable | meaning |
//! |---|---|
//! | `SM_TLS_CERT`, `SM_TLS_KEY` | PEM certificate chain and key of this replica |
//! | `SM_TLS_CA` | PEM CA that signed the replicas' certificates (clients verify the server with it; the server requires client certificates signed by it) |
//! | `SM_TLS_DOMAIN` | name checked in the server certificate (default `localhost`) |
//! | `SM_TOKENS_FILE` / `SM_TOKENS` | admin tokens: file of `ROLE TOKEN` lines / `read:T,admin:T` |
//! | `SM_INSECURE_LOOPBACK=1` | explicitly allow plain HTTP/2 (loopback listen only) |
//!
//! Without TLS a non-loopback listen address is refused.

use crate::auth::{Auth, Tokens};
use std::net::SocketAddr;
use std::sync::OnceLock;
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity, ServerTlsConfig};

/// The process's security settings.
#[derive(Clone, Debug, Default)]
pub struct Security {
    /// Server TLS (None: plain).
    pub server: Option<ServerTlsConfig>,
    /// Client TLS for peers and forwarding (None: plain).
    pub client: Option<ClientTlsConfig>,
    /// Admin authentication.
    pub auth: Auth,
    /// Plain HTTP/2 was asked for explicitly.
    pub insecure_loopback: bool,
}

static SECURITY: OnceLock<Security> = OnceLock::new();

fn read(var: &str) -> Result<Option<Vec<u8>>, String> {
    match std::env::var_os(var) {
        None => Ok(None),
        Some(p) => std::fs::read(&p)
            .map(Some)
            .map_err(|e| format!("{var}={}: {e}", p.to_string_lossy())),
    }
}

/// Builds the settings from the environment (see the module doc).
pub fn from_env() -> Result<Security, String> {
    let cert = read("SM_TLS_CERT")?;
    let key = read("SM_TLS_KEY")?;
    let ca = read("SM_TLS_CA")?;
    let domain = std::env::var("SM_TLS_DOMAIN").unwrap_or_else(|_| "localhost".into());
    let (server, client) = match (cert, key) {
        (Some(c), Some(k)) => {
            let id = Identity::from_pem(&c, &k);
            let mut s = ServerTlsConfig::new().identity(id.clone());
            let mut cl = ClientTlsConfig::new().domain_name(domain).identity(id);
            if let Some(ca) = ca {
                let ca = Certificate::from_pem(ca);
                s = s.client_ca_root(ca.clone());
                cl = cl.ca_certificate(ca);
            }
            (Some(s), Some(cl))
        }
        (None, None) => (None, None),
        _ => return Err("SM_TLS_CERT and SM_TLS_KEY go together".into()),
    };
    let tokens = match (
        std::env::var_os("SM_TOKENS_FILE"),
        std::env::var("SM_TOKENS").ok(),
    ) {
        (Some(f), _) => {
            let text = std::fs::read_to_string(&f)
                .map_err(|e| format!("SM_TOKENS_FILE={}: {e}", f.to_string_lossy()))?;
            Some(Tokens::parse_file(&text).map_err(|e| format!("SM_TOKENS_FILE: {e}"))?)
        }
        (None, Some(s)) => Some(Tokens::parse_inline(&s).map_err(|e| format!("SM_TOKENS: {e}"))?),
        (None, None) => None,
    };
    Ok(Security {
        server,
        client,
        auth: Auth::new(tokens),
        insecure_loopback: std::env::var("SM_INSECURE_LOOPBACK").is_ok_and(|v| v == "1"),
    })
}

/// Checks the settings against the listen address and installs them for this process.
pub fn install(sec: Security, listen: SocketAddr) -> Result<(), String> {
    if sec.server.is_none() && !listen.ip().is_loopback() {
        return Err(format!(
            "E_NODE_TLS: refusing to serve {listen} without TLS (set SM_TLS_CERT/SM_TLS_KEY/SM_TLS_CA; plain HTTP/2 is for loopback only)"
        ));
    }
    if sec.server.is_none() && !sec.insecure_loopback {
        tracing::warn!(
            "E_NODE_TLS: serving {listen} without TLS; set SM_INSECURE_LOOPBACK=1 to say so, or configure TLS"
        );
    }
    SECURITY
        .set(sec)
        .map_err(|_| "E_NODE_TLS: security settings installed twice".to_string())
}

/// [`from_env`] then [`install`].
pub fn install_from_env(listen: SocketAddr) -> Result<(), String> {
    install(from_env()?, listen)
}

/// The installed settings (defaults: plain, open, when nothing was installed).
pub fn current() -> Security {
    SECURITY.get().cloned().unwrap_or_default()
}

/// An endpoint to `addr` (`host:port`) with this process's client TLS when configured.
pub fn endpoint(addr: &str) -> Result<Endpoint, tonic::transport::Error> {
    match SECURITY.get().and_then(|s| s.client.clone()) {
        Some(tls) => Endpoint::from_shared(format!("https://{addr}"))?.tls_config(tls),
        None => Endpoint::from_shared(format!("http://{addr}")),
    }
}

/// A server builder with this process's server TLS when configured.
pub fn server_builder() -> Result<tonic::transport::Server, tonic::transport::Error> {
    let b = tonic::transport::Server::builder();
    match SECURITY.get().and_then(|s| s.server.clone()) {
        Some(tls) => b.tls_config(tls),
        None => Ok(b),
    }
}
