//! The read-only operator dashboard served by every replica on a second port
//! (`--dashboard-listen`). It draws through `views::model`, as `smctl draw` does.
//!
//! Security is the admin API's: HTTPS with the replica's certificate and key (the `[admin]`
//! `tls-cert`/`tls-key` settings or `SM_TLS_CERT`/`SM_TLS_KEY`; browsers are not asked for a
//! client certificate), plain HTTP only with insecure-loopback on a loopback address, and the
//! admin tokens (read or admin role) — see [`access`]. Pages: cluster status, fabric summary
//! and picture, tenants and the reachability matrix, live events (Server-Sent Events from the
//! same source WatchEvents uses) and metric sparklines. One static HTML page and a small
//! vanilla script, embedded in the binary: no build step.
//!
//! Errors reaching operators: `E_DASH_TLS` (certificate/key), `E_DASH_LISTEN`,
//! `E_DASH_AUTH` (HTTP 401), `E_DASH_VIEW` (a picture that cannot be drawn), `E_DASH_REQUEST`
//! (a request head over `server::MAX_REQUEST_HEAD`, 431, or a request with a body, 413).

pub mod access;
pub mod server;

use crate::cluster::admin::AdminService;
use crate::cluster::raft_actor::{GetClusterStatus, RaftActor};
use crate::config::AdminSecurity;
use actix::Addr;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Feeds the sample ring (every second) and the recent events (from WatchEvents' source).
fn spawn_feeders(d: Arc<server::Dash>, raft: Addr<RaftActor>) {
    let dd = d.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tick.tick().await;
            let Ok(st) = raft.send(GetClusterStatus).await else {
                return;
            };
            if let Ok(mut s) = dd.samples.lock() {
                s.push(crate::clock::unix_ms(), &st);
            }
        }
    });
    tokio::spawn(async move {
        // The source WatchEvents uses, read by the replica itself; each page is authorized
        // when it subscribes (`/api/events`).
        let mut rx = crate::cluster::admin::watch::spawn(d.svc_raft.clone(), Vec::new());
        while let Some(e) = rx.recv().await {
            if !views::dashboard::in_feed(&e) {
                continue;
            }
            let p = match d.recent.lock() {
                Ok(mut r) => r.push(&e),
                Err(_) => return,
            };
            if let Ok(mut s) = d.samples.lock() {
                s.count_event();
            }
            let _ = d.events.send(p);
        }
    });
}

/// Serves the dashboard of replica `id` on `listen` until `shutdown` resolves.
pub async fn serve(
    id: u64,
    listen: SocketAddr,
    raft: Addr<RaftActor>,
    cfg: AdminSecurity,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), crate::NodeError> {
    let app = |secure| {
        let (etx, _) = tokio::sync::broadcast::channel(256);
        let d = Arc::new(server::Dash {
            svc: AdminService::new(id, raft.clone()),
            svc_raft: raft.clone(),
            samples: Mutex::new(views::dashboard::Samples::default()),
            recent: Mutex::new(views::dashboard::Recent::default()),
            events: etx,
            fabric_cache: Mutex::new(None),
            secure,
        });
        spawn_feeders(d.clone(), raft.clone());
        server::router(d)
    };
    tracing::info!("replica {id} dashboard on {listen}");
    serve_http(listen, app, &cfg, "E_DASH", shutdown).await
}

/// Serves the UFM-compatible PKey API (crate `ufm-api`) of replica `id` until `shutdown`.
pub async fn serve_ufm(
    id: u64,
    raft: Addr<RaftActor>,
    u: crate::config::UfmConfig,
    cfg: AdminSecurity,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), crate::NodeError> {
    let (pw, tok, adm) = (
        &u.password_file,
        u.token_file.as_deref(),
        u.admin_token_file.as_deref(),
    );
    let access = ufm_api::Access::load(&u.username, pw, tok, adm)
        .map_err(|e| crate::NodeError::Cluster(e.to_string()))?;
    let app = |_| ufm_api::router(Arc::new(AdminService::new(id, raft)), access);
    tracing::info!("replica {id} UFM-compatible PKey API on {}", u.listen);
    serve_http(u.listen, app, &cfg, "E_UFM", shutdown).await
}

/// Serves `app(secure)` on `listen` until `shutdown` resolves: HTTPS with the admin API's
/// certificate, plain HTTP only where the admin API allows it; errors `{what}_TLS`,
/// `{what}_TLS_PLAINTEXT`, `{what}_LISTEN`.
async fn serve_http(
    listen: SocketAddr,
    app: impl FnOnce(bool) -> axum::Router,
    cfg: &AdminSecurity,
    what: &str,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), crate::NodeError> {
    let err = |m: String| crate::NodeError::Cluster(m);
    let tls = ufm_api::https::acceptor(cfg.tls_cert.as_deref(), cfg.tls_key.as_deref())
        .map_err(|e| err(format!("{what}_TLS: {e}")))?;
    let sec = crate::tls::current();
    if tls.is_none()
        && let Some(e) = crate::tls::check(&sec, listen)
    {
        return Err(err(
            e.replace("E_NODE_TLS_PLAINTEXT", &format!("{what}_TLS_PLAINTEXT"))
        ));
    }
    let app = app(tls.is_some());
    let tcp = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| err(format!("{what}_LISTEN: {listen}: {e}")))?;
    let r = match tls {
        Some(acc) => {
            axum::serve(ufm_api::https::TlsListener::new(tcp, acc), app)
                .with_graceful_shutdown(shutdown)
                .await
        }
        None => axum::serve(tcp, app).with_graceful_shutdown(shutdown).await,
    };
    r.map_err(|e| err(format!("{what}_LISTEN: {listen}: {e}")))
}
