//! Routes of the dashboard. Every page and API call is read-only and goes through this
//! replica's `SmAdmin` service in process, with the caller's token, so the admin API's
//! authorization and answers are exactly what the page shows.

use super::access;
use crate::cluster::admin::AdminService;
use axum::Router;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use proto::admin::sm_admin_server::SmAdmin;
use proto::admin::{
    AuditRequest, ClusterStatusRequest, GetLinkHealthReply, GetLinkHealthRequest, ListNodesReply,
    ListNodesRequest, ListTenantsRequest, SmInfoReply, SmInfoRequest,
};
use std::sync::{Arc, Mutex};
use tokio::sync::broadcast;
use views::dashboard::{PageEvent, Recent, Samples};

const INDEX: &str = include_str!("index.html");
const APP_JS: &str = include_str!("app.js");

/// Largest drawing (edges after collapsing hosts and bundling parallel links) the dashboard
/// draws.
pub const MAX_LAYOUT_EDGES: usize = 1500;

/// Width of the fabric picture, px (a 1400 px window less the page's margins).
const PAGE_WIDTH: u32 = 1320;

/// Largest request head the dashboard takes (16 KiB: the request line and every header,
/// name and value): its pages and API calls are GETs carrying at most a token and a cookie.
/// A larger one is refused with 431 and no request may carry a body (413): nothing here
/// reads one.
pub const MAX_REQUEST_HEAD: usize = 16 * 1024;

/// The refusal of a request over the limits, None when it is within them.
fn over_limits<B>(req: &axum::http::Request<B>) -> Option<Response> {
    let head = req.method().as_str().len()
        + req.uri().to_string().len()
        + req
            .headers()
            .iter()
            .map(|(k, v)| k.as_str().len() + v.len() + 4)
            .sum::<usize>();
    if head > MAX_REQUEST_HEAD {
        return Some(
            (
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                format!(
                    "E_DASH_REQUEST: the request line and headers are {head} bytes; the limit is {MAX_REQUEST_HEAD} (MAX_REQUEST_HEAD)\n"
                ),
            )
                .into_response(),
        );
    }
    let length = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .map(|v| v.to_str().ok().and_then(|t| t.trim().parse::<u64>().ok()));
    let body = req.headers().contains_key(header::TRANSFER_ENCODING)
        || matches!(length, Some(None))
        || matches!(length, Some(Some(n)) if n > 0);
    if body {
        return Some(
            (
                StatusCode::PAYLOAD_TOO_LARGE,
                "E_DASH_REQUEST: the dashboard takes no request body (its pages and API calls are GETs)\n",
            )
                .into_response(),
        );
    }
    None
}

async fn limits(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    match over_limits(&req) {
        Some(refused) => refused,
        None => next.run(req).await,
    }
}

/// Shared state of the routes.
pub struct Dash {
    /// This replica's admin service.
    pub svc: AdminService,
    /// This replica's Raft actor (the event source).
    pub svc_raft: actix::Addr<crate::cluster::raft_actor::RaftActor>,
    /// Metric samples.
    pub samples: Mutex<Samples>,
    /// Recent events.
    pub recent: Mutex<Recent>,
    /// New events for open pages.
    pub events: broadcast::Sender<PageEvent>,
    /// Last fabric picture, by (applied index of the listing, master SM GUID).
    pub fabric_cache: Mutex<Option<(FabricKey, String)>>,
    /// Served over TLS (cookies get `Secure`).
    pub secure: bool,
}

type D = State<Arc<Dash>>;

fn deny() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "E_DASH_AUTH: this dashboard needs a read or admin token: open /?token=TOKEN once (it is kept in an HttpOnly cookie), or send Authorization: Bearer TOKEN\n",
    )
        .into_response()
}

fn status_err(s: tonic::Status) -> Response {
    let code = match s.code() {
        tonic::Code::Unauthenticated | tonic::Code::PermissionDenied => StatusCode::FORBIDDEN,
        tonic::Code::NotFound => StatusCode::NOT_FOUND,
        _ => StatusCode::SERVICE_UNAVAILABLE,
    };
    (code, format!("{:?}: {}\n", s.code(), s.message())).into_response()
}

/// The token of a request when it may read.
/// A refused request (401).
struct Denied;

impl IntoResponse for Denied {
    fn into_response(self) -> Response {
        deny()
    }
}

fn allowed(_d: &Dash, h: &HeaderMap) -> Result<Option<String>, Denied> {
    let tok = access::presented(h);
    if access::may_read(&crate::tls::current().auth, tok.as_deref()) {
        Ok(tok)
    } else {
        Err(Denied)
    }
}

fn json(v: serde_json::Value) -> Response {
    (
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        v.to_string(),
    )
        .into_response()
}

fn svg(text: String) -> Response {
    (
        [
            (header::CONTENT_TYPE, "image/svg+xml"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        text,
    )
        .into_response()
}

async fn index(State(d): D, RawQuery(q): RawQuery, h: HeaderMap) -> Response {
    if let Some(t) = access::query_token(q.as_deref()) {
        if !access::cookie_safe(&t) || !access::may_read(&crate::tls::current().auth, Some(&t)) {
            return deny();
        }
        let mut r = (StatusCode::SEE_OTHER, [(header::LOCATION, "/")]).into_response();
        if let Ok(v) = HeaderValue::from_str(&access::set_cookie(&t, d.secure)) {
            r.headers_mut().insert(header::SET_COOKIE, v);
        }
        return r;
    }
    if let Err(r) = allowed(&d, &h) {
        return r.into_response();
    }
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], INDEX).into_response()
}

async fn app_js(State(d): D, h: HeaderMap) -> Response {
    if let Err(r) = allowed(&d, &h) {
        return r.into_response();
    }
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        APP_JS,
    )
        .into_response()
}

/// The fabric's nodes as the admin API lists them (an error answer as the response).
async fn list_nodes(d: &Dash, t: Option<&str>) -> Result<ListNodesReply, Response> {
    d.svc
        .list_nodes(access::request(ListNodesRequest::default(), t))
        .await
        .map(|r| r.into_inner())
        .map_err(status_err)
}

/// What the cached picture was drawn from: the applied index, the master, the links that
/// are not ok.
pub type FabricKey = (u64, u64, Vec<(String, String)>);

/// The master's link health, when its performance manager answers.
async fn link_health(d: &Dash, t: Option<&str>) -> Option<GetLinkHealthReply> {
    d.svc
        .get_link_health(access::request(GetLinkHealthRequest {}, t))
        .await
        .ok()
        .map(|r| r.into_inner())
}

/// The master's SMInfo, when one answers.
async fn sm_info(d: &Dash, t: Option<&str>) -> Option<SmInfoReply> {
    d.svc
        .sm_info(access::request(SmInfoRequest::default(), t))
        .await
        .ok()
        .map(|r| r.into_inner())
}

async fn status(State(d): D, h: HeaderMap) -> Response {
    let tok = match allowed(&d, &h) {
        Ok(t) => t,
        Err(r) => return r.into_response(),
    };
    let t = tok.as_deref();
    let st = match d
        .svc
        .cluster_status(access::request(ClusterStatusRequest::default(), t))
        .await
    {
        Ok(r) => r.into_inner(),
        Err(e) => return status_err(e),
    };
    let sm = sm_info(&d, t).await;
    let nodes = match list_nodes(&d, t).await {
        Ok(n) => n,
        Err(r) => return r,
    };
    let links = link_health(&d, t).await;
    let recent = d.recent.lock().map(|r| r.all()).unwrap_or_default();
    let rogue = views::dashboard::rogue_alarms(&recent, crate::clock::unix_ms());
    json(views::dashboard::status_json(
        &st,
        sm.as_ref(),
        &nodes,
        links.as_ref(),
        rogue,
    ))
}

async fn fabric_svg(State(d): D, h: HeaderMap) -> Response {
    let tok = match allowed(&d, &h) {
        Ok(t) => t,
        Err(r) => return r.into_response(),
    };
    let t = tok.as_deref();
    let nodes = match list_nodes(&d, t).await {
        Ok(n) => n,
        Err(r) => return r,
    };
    let sm = sm_info(&d, t).await;
    let health = link_health(&d, t).await;
    // Links not ok change the picture (their colour) without a new applied index.
    let not_ok: Vec<(String, String)> = health
        .iter()
        .flat_map(|h| &h.links)
        .filter(|l| l.health != "ok")
        .map(|l| (format!("{:?}{:?}", l.a, l.b), l.health.clone()))
        .collect();
    let key = (
        nodes.applied_index,
        sm.as_ref().map_or(0, |s| s.sm_guid),
        not_ok,
    );
    if let Ok(c) = d.fabric_cache.lock()
        && let Some((k, text)) = c.as_ref()
        && *k == key
    {
        return svg(text.clone());
    }
    // Drawn off the async workers (a replica also runs the SM) at the page's width, rows
    // per tier (`views::tiers_svg`), and refused past a size no page can show.
    let r = tokio::task::spawn_blocking(move || {
        let mut m = views::model::from_list_nodes(&nodes, sm.as_ref());
        if let Some(h) = &health {
            views::model::apply_health(&mut m, h);
        }
        // Compact on a page: more than two hosts of a leaf become one box.
        let o = views::DrawOptions {
            max_hosts_per_leaf: 2,
            ..views::DrawOptions::default()
        };
        views::arrange(&m, &o).map(|dr| {
            if dr.edges.len() > MAX_LAYOUT_EDGES {
                Err(dr)
            } else {
                Ok(views::tiers_svg(&dr, PAGE_WIDTH))
            }
        })
    })
    .await;
    match r {
        Ok(Ok(Ok(text))) => {
            if let Ok(mut c) = d.fabric_cache.lock() {
                *c = Some((key, text.clone()));
            }
            svg(text)
        }
        Ok(Ok(Err(dr))) => (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "E_DASH_VIEW: {} switches, {} hosts, {} links: too large to lay out here ({} edges, limit {MAX_LAYOUT_EDGES}); use `smctl draw fabric --format dot`\n",
                dr.switches,
                dr.hosts,
                dr.links,
                dr.edges.len()
            ),
        )
            .into_response(),
        Ok(Err(e)) => (StatusCode::NOT_FOUND, format!("E_DASH_VIEW: {e}\n")).into_response(),
        Err(e) => {
            (StatusCode::INTERNAL_SERVER_ERROR, format!("E_DASH_VIEW: {e}\n")).into_response()
        }
    }
}

async fn tenants(State(d): D, h: HeaderMap) -> Response {
    let tok = match allowed(&d, &h) {
        Ok(t) => t,
        Err(r) => return r.into_response(),
    };
    match d
        .svc
        .list_tenants(access::request(
            ListTenantsRequest::default(),
            tok.as_deref(),
        ))
        .await
    {
        Ok(r) => json(views::dashboard::tenants_json(r.get_ref())),
        Err(e) => status_err(e),
    }
}

async fn audit_svg(State(d): D, h: HeaderMap) -> Response {
    let tok = match allowed(&d, &h) {
        Ok(t) => t,
        Err(r) => return r.into_response(),
    };
    match d
        .svc
        .audit(access::request(AuditRequest::default(), tok.as_deref()))
        .await
    {
        Ok(r) => {
            let r = r.into_inner();
            match views::Reachability::from_audit_json(&r.report_json) {
                Ok(m) => svg(views::matrix_svg(
                    &m,
                    &format!(
                        "Reachability: {} port tables read back by replica {} in {} ms",
                        r.ports, r.read_by_replica, r.read_ms
                    ),
                )),
                Err(e) => (StatusCode::BAD_GATEWAY, format!("E_DASH_VIEW: {e}\n")).into_response(),
            }
        }
        Err(e) => status_err(e),
    }
}

async fn audit_progress(State(d): D, h: HeaderMap) -> Response {
    let tok = match allowed(&d, &h) {
        Ok(t) => t,
        Err(r) => return r.into_response(),
    };
    match d
        .svc
        .audit_progress(access::request(
            proto::admin::AuditProgressRequest {},
            tok.as_deref(),
        ))
        .await
    {
        Ok(r) => {
            let r = r.into_inner();
            json(serde_json::json!({
                "running": r.running, "ports_done": r.ports_done,
                "ports_total": r.ports_total, "replica": r.replica,
            }))
        }
        Err(e) => status_err(e),
    }
}

async fn metrics(State(d): D, h: HeaderMap) -> Response {
    if let Err(r) = allowed(&d, &h) {
        return r.into_response();
    }
    let s = d.samples.lock().map(|s| s.all()).unwrap_or_default();
    json(serde_json::json!({ "samples": s }))
}

async fn events(State(d): D, h: HeaderMap) -> Response {
    if let Err(r) = allowed(&d, &h) {
        return r.into_response();
    }
    // Subscribe before reading the history so that nothing falls between the two.
    let rx = d.events.subscribe();
    let history = d.recent.lock().map(|r| r.all()).unwrap_or_default();
    let to_sse = |e: &PageEvent| {
        SseEvent::default()
            .event("event")
            .data(serde_json::to_string(e).unwrap_or_default())
    };
    let first: Vec<Result<SseEvent, std::convert::Infallible>> =
        history.iter().map(|e| Ok(to_sse(e))).collect();
    let live = futures_util::stream::unfold(rx, move |mut rx| async move {
        loop {
            match rx.recv().await {
                Ok(e) => return Some((Ok(to_sse(&e)), rx)),
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    });
    let stream = futures_util::StreamExt::chain(futures_util::stream::iter(first), live);
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// The router.
pub fn router(d: Arc<Dash>) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/app.js", get(app_js))
        .route("/api/status", get(status))
        .route("/api/fabric.svg", get(fabric_svg))
        .route("/api/tenants", get(tenants))
        .route("/api/audit.svg", get(audit_svg))
        .route("/api/audit-progress", get(audit_progress))
        .route("/api/metrics", get(metrics))
        .route("/api/events", get(events))
        .layer(axum::middleware::from_fn(limits))
        .with_state(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(uri: &str, headers: &[(&str, &str)]) -> axum::http::Request<()> {
        let mut b = axum::http::Request::get(uri);
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap()
    }

    #[test]
    fn request_heads_and_bodies_over_the_limits_are_refused() {
        assert!(over_limits(&get("/api/status", &[("cookie", "t=abc")])).is_none());
        let big = "x".repeat(MAX_REQUEST_HEAD);
        let r = over_limits(&get("/api/status", &[("x-pad", &big)])).unwrap();
        assert_eq!(r.status(), StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
        let q = format!("/?token={big}");
        let r = over_limits(&get(&q, &[])).unwrap();
        assert_eq!(r.status(), StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
        let r = over_limits(&get("/", &[("content-length", "10")])).unwrap();
        assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
        let r = over_limits(&get("/", &[("transfer-encoding", "chunked")])).unwrap();
        assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
        assert!(over_limits(&get("/", &[("content-length", "0")])).is_none());
    }
}
