//! The `/metrics` listener: plain HTTP (axum), OpenMetrics text when the scraper asks for
//! it (`Accept: application/openmetrics-text`, as Prometheus does), else the Prometheus
//! text format 0.0.4.

use super::{Format, mark_served, render};
use crate::cluster::raft_actor::RaftActor;
use actix::Addr;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::net::SocketAddr;

/// Serves `GET /metrics` (on the current tokio runtime) at `listen` (the `metrics-listen`
/// key or flag), else at `SM_METRICS_LISTEN` when set; with `SM_METRICS_PORT_PLUS_ID=1` the
/// environment's port is increased by the replica id (several replicas on one host sharing
/// an environment). `port_counters` (`metrics-port-counters`) keeps the per-port families.
/// Answers the address served (None: not served).
pub fn spawn(
    raft: Addr<RaftActor>,
    id: u64,
    listen: Option<SocketAddr>,
    port_counters: bool,
) -> Result<Option<SocketAddr>, String> {
    let addr = match (listen, std::env::var("SM_METRICS_LISTEN")) {
        (Some(a), _) => a,
        (None, Err(_)) => return Ok(None),
        (None, Ok(addr)) => {
            let mut a: SocketAddr = addr
                .parse()
                .map_err(|e| format!("SM_METRICS_LISTEN={addr}: {e}"))?;
            if std::env::var("SM_METRICS_PORT_PLUS_ID").is_ok_and(|v| v == "1") {
                a.set_port(a.port().saturating_add(id as u16));
            }
            a
        }
    };
    let std_l = std::net::TcpListener::bind(addr).map_err(|e| format!("bind {addr}: {e}"))?;
    std_l.set_nonblocking(true).map_err(|e| e.to_string())?;
    let local = std_l.local_addr().map_err(|e| e.to_string())?;
    let l = tokio::net::TcpListener::from_std(std_l).map_err(|e| e.to_string())?;
    mark_served(port_counters);
    let app = axum::Router::new()
        .route("/metrics", axum::routing::get(metrics))
        .with_state(raft);
    tracing::info!(
        "metrics on http://{local}/metrics (per-port families {})",
        if port_counters { "on" } else { "off" }
    );
    tokio::spawn(async move {
        if let Err(e) = axum::serve(l, app).await {
            tracing::error!("E_NODE_METRICS: the metrics listener on {local} ended: {e}");
        }
    });
    Ok(Some(local))
}

/// The format a scraper asked for.
pub fn negotiate(accept: Option<&str>) -> Format {
    match accept {
        Some(a) if a.contains("application/openmetrics-text") => Format::OpenMetrics,
        _ => Format::Prometheus,
    }
}

async fn metrics(State(raft): State<Addr<RaftActor>>, h: HeaderMap) -> Response {
    let format = negotiate(h.get(header::ACCEPT).and_then(|v| v.to_str().ok()));
    let body = render(&raft, format).await;
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, format.content_type())],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openmetrics_only_when_asked_for() {
        assert_eq!(negotiate(None), Format::Prometheus);
        assert_eq!(negotiate(Some("*/*")), Format::Prometheus);
        assert_eq!(
            negotiate(Some("text/plain;version=0.0.4")),
            Format::Prometheus
        );
        // What Prometheus sends.
        let prom = "application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2";
        assert_eq!(negotiate(Some(prom)), Format::OpenMetrics);
    }
}
