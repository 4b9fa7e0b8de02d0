//! Security settings of a replica's gRPC listener (Peer + SmAdmin share it): TLS (rustls
//! through tonic, ring provider) for the server and for every client this process opens
//! (peer senders, leader forwarding), and the admin tokens.
//!
//! Configured once per process, before serving ([`install_from_config`]), from the node
//! configuration's `[admin]` table and flags ([`crate::config::AdminSecurity`]), each key
//! overridden by its environment variable when that is set:
//!
//! | `[admin]` key / flag | variable | meaning |
//! |---|---|---|
//! | `tls-cert`, `tls-key` | `SM_TLS_CERT`, `SM_TLS_KEY` | PEM certificate chain and key of this replica |
//! | `tls-ca` | `SM_TLS_CA` | PEM CA that signed the replicas' certificates (clients verify the server with it; the server requires client certificates signed by it) |
//! | `tls-domain` | `SM_TLS_DOMAIN` | name checked in the server certificate (default `localhost`) |
//! | `tokens-file` | `SM_TOKENS_FILE` / `SM_TOKENS` | admin tokens: file of `ROLE TOKEN` lines / `read:T,admin:T` |
//! | `insecure-loopback` | `SM_INSECURE_LOOPBACK=1` | explicitly allow plain HTTP/2 (loopback listen only) |
//!
//! Plain HTTP/2 is refused (`E_NODE_TLS_PLAINTEXT`) unless insecure-loopback is set
//! explicitly AND the listen address is a loopback address; the error names what to
//! configure.

use crate::auth::{Auth, Tokens};
use crate::config::AdminSecurity;
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

/// Reads the file named by `var` when set, else by the `[admin]` key `key` (`path`).
fn read(var: &str, key: &str, path: Option<&std::path::Path>) -> Result<Option<Vec<u8>>, String> {
    let (what, p) = match std::env::var_os(var) {
        Some(p) => (var.to_string(), std::path::PathBuf::from(p)),
        None => match path {
            Some(p) => (format!("[admin] {key}"), p.to_path_buf()),
            None => return Ok(None),
        },
    };
    std::fs::read(&p)
        .map(Some)
        .map_err(|e| format!("{what}={}: {e}", p.display()))
}

/// Builds the settings from the `[admin]` configuration, each key overridden by its
/// environment variable (see the module doc).
pub fn from_config(cfg: &AdminSecurity) -> Result<Security, String> {
    let cert = read("SM_TLS_CERT", "tls-cert", cfg.tls_cert.as_deref())?;
    let key = read("SM_TLS_KEY", "tls-key", cfg.tls_key.as_deref())?;
    let ca = read("SM_TLS_CA", "tls-ca", cfg.tls_ca.as_deref())?;
    let domain = std::env::var("SM_TLS_DOMAIN")
        .ok()
        .or_else(|| cfg.tls_domain.clone())
        .unwrap_or_else(|| "localhost".into());
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
        _ => {
            return Err("tls-cert and tls-key (SM_TLS_CERT and SM_TLS_KEY) go together".into());
        }
    };
    let tokens_file = std::env::var_os("SM_TOKENS_FILE")
        .map(|f| ("SM_TOKENS_FILE".to_string(), std::path::PathBuf::from(f)))
        .or_else(|| {
            cfg.tokens_file
                .clone()
                .map(|p| ("[admin] tokens-file".to_string(), p))
        });
    let tokens = match (tokens_file, std::env::var("SM_TOKENS").ok()) {
        (Some((what, f)), _) => {
            let text =
                std::fs::read_to_string(&f).map_err(|e| format!("{what}={}: {e}", f.display()))?;
            Some(Tokens::parse_file(&text).map_err(|e| format!("{what}: {e}"))?)
        }
        (None, Some(s)) => Some(Tokens::parse_inline(&s).map_err(|e| format!("SM_TOKENS: {e}"))?),
        (None, None) => None,
    };
    let insecure_loopback = match std::env::var("SM_INSECURE_LOOPBACK") {
        Ok(v) => v == "1" || v == "true",
        Err(_) => cfg.insecure_loopback.unwrap_or(false),
    };
    Ok(Security {
        server,
        client,
        auth: Auth::new(tokens),
        insecure_loopback,
    })
}

/// Why `sec` may not serve on `listen` (None: it may). Plain HTTP/2 needs
/// insecure-loopback set explicitly and a loopback listen address.
pub fn check(sec: &Security, listen: SocketAddr) -> Option<String> {
    if sec.server.is_some() {
        return None;
    }
    if !listen.ip().is_loopback() {
        return Some(format!(
            "E_NODE_TLS_PLAINTEXT: refusing to serve {listen} without TLS: set [admin] tls-cert, tls-key and tls-ca in the config file (or --tls-cert/--tls-key/--tls-ca); plain HTTP/2 is allowed only on a loopback address with [admin] insecure-loopback = true"
        ));
    }
    if !sec.insecure_loopback {
        return Some(format!(
            "E_NODE_TLS_PLAINTEXT: refusing to serve {listen} without TLS: configure [admin] tls-cert, tls-key and tls-ca (or --tls-cert/--tls-key/--tls-ca), or, for development on this loopback address only, set [admin] insecure-loopback = true (or --insecure-loopback)"
        ));
    }
    None
}

/// Checks the settings against the listen address ([`check`]) and installs them for this
/// process.
pub fn install(sec: Security, listen: SocketAddr) -> Result<(), String> {
    if let Some(e) = check(&sec, listen) {
        return Err(e);
    }
    if sec.server.is_none() {
        tracing::warn!(
            "E_NODE_TLS_INSECURE: serving {listen} in plain HTTP/2 (insecure-loopback, development only)"
        );
    }
    if sec.auth.is_open() {
        tracing::warn!(
            "E_NODE_AUTH_OPEN: no admin tokens configured ([admin] tokens-file): every admin call is allowed"
        );
    }
    SECURITY
        .set(sec)
        .map_err(|_| "E_NODE_TLS: security settings installed twice".to_string())
}

/// [`from_config`] then [`install`].
pub fn install_from_config(cfg: &AdminSecurity, listen: SocketAddr) -> Result<(), String> {
    install(from_config(cfg)?, listen)
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
