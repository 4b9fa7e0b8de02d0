//! A UFM-compatible PKey HTTP API (issue 26), so that ib-kubernetes' UFM plugin (and other
//! UFM PKey clients) can point at Quorum SM unchanged: an axum [`Router`] whose every call
//! is exactly one admin API call ([`Backend`]: `ChangeGuids` for the writes, `ListTenants`
//! for the reads), so the membership change has one implementation (`replica::admin::guids`).
//!
//! Routes (each under `/ufmRest` with HTTP basic auth, and under `/ufmRestV3` with UFM's
//! token auth, `Authorization: Basic <token>`):
//! * `GET /app/ufm_version`: the plugin's connection check.
//! * `GET /resources/pkeys[/]` (`?guids_data=true` adds the GUIDs) and
//!   `GET /resources/pkeys/<pkey>`: the API partitions and the tenants (see [`wire::listing`]).
//! * `POST /resources/pkeys[/]` and `POST /resources/pkeys/add`: ChangeGuids ADD.
//! * `POST /actions/remove_guids_from_pkey`: ChangeGuids REMOVE.
//! * `DELETE /resources/pkeys/<pkey>`: ChangeGuids DELETE_PKEY.
//!
//! Status codes: 200 with a JSON body; 400 for a body that does not parse or a change the
//! admin API refuses as invalid (`{"error": "TENANT-Ennn: ..."}`), 401 without valid
//! credentials (`WWW-Authenticate: Basic`), 404 for an unknown P_Key or route, 409 for a
//! stale version, 503 without a leader; the admin API's message is the body's `error`.
//! Bodies are limited to [`MAX_BODY`] bytes.
//!
//! [`https`] is the HTTPS listener a replica's HTTP services share (this API and the
//! dashboard).

pub mod https;
pub mod wire;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use proto::admin::sm_admin_server::SmAdmin;
use proto::admin::{ChangeGuidsReply, ChangeGuidsRequest, ListTenantsReply, ListTenantsRequest};
use serde_json::json;
use std::future::Future;
use std::sync::Arc;
use tonic::{Code, Status};

/// Largest request body (256 KiB: a call names at most 1,024 GUIDs of ~20 bytes each).
pub const MAX_BODY: usize = 256 * 1024;

/// Errors of this crate, with stable codes.
#[derive(Debug, thiserror::Error)]
pub enum UfmError {
    /// A P_Key that is not a hex number of at most 16 bits.
    #[error("E_UFM_PKEY: '{0}' is not a P_Key (hex, at most 0xffff)")]
    BadPKey(String),
    /// A GUID that is not at most 16 hex digits.
    #[error("E_UFM_GUID: '{0}' is not a GUID (at most 16 hex digits)")]
    BadGuid(String),
    /// A membership other than full or limited.
    #[error("E_UFM_MEMBERSHIP: '{0}' is not a membership (full or limited)")]
    BadMembership(String),
    /// A body that is not the JSON the call takes.
    #[error("E_UFM_BODY: {0}")]
    BadBody(String),
    /// A credentials file that cannot be read or is empty.
    #[error("E_UFM_CONFIG: {0}")]
    Config(String),
}

/// The admin calls the API makes: `SmAdmin` itself (the replica's service, in process).
pub trait Backend: Send + Sync + 'static {
    /// ChangeGuids.
    fn change_guids(
        &self,
        r: tonic::Request<ChangeGuidsRequest>,
    ) -> impl Future<Output = Result<ChangeGuidsReply, Status>> + Send;
    /// ListTenants.
    fn list_tenants(
        &self,
        r: tonic::Request<ListTenantsRequest>,
    ) -> impl Future<Output = Result<ListTenantsReply, Status>> + Send;
}

impl<T: SmAdmin> Backend for T {
    async fn change_guids(
        &self,
        r: tonic::Request<ChangeGuidsRequest>,
    ) -> Result<ChangeGuidsReply, Status> {
        SmAdmin::change_guids(self, r).await.map(|r| r.into_inner())
    }
    async fn list_tenants(
        &self,
        r: tonic::Request<ListTenantsRequest>,
    ) -> Result<ListTenantsReply, Status> {
        SmAdmin::list_tenants(self, r).await.map(|r| r.into_inner())
    }
}

/// Who may call, and how the API presents itself to the admin API.
#[derive(Clone, Default)]
pub struct Access {
    /// Basic auth user name (`/ufmRest`).
    pub username: String,
    /// Basic auth password.
    pub password: String,
    /// Tokens accepted on `/ufmRestV3` (none: token auth off).
    pub tokens: Vec<String>,
    /// Bearer token presented to the admin API (needed when it has tokens configured).
    pub admin_token: Option<String>,
}

fn read_secret(p: &std::path::Path) -> Result<String, UfmError> {
    let t = std::fs::read_to_string(p)
        .map_err(|e| UfmError::Config(format!("{}: {e}", p.display())))?;
    let t = t.trim().to_string();
    if t.is_empty() {
        return Err(UfmError::Config(format!("{}: empty", p.display())));
    }
    Ok(t)
}

impl Access {
    /// Reads the password file (the whole file, trimmed), the token file
    /// (one token per line, `#` comments) and the admin token file.
    pub fn load(
        username: &str,
        password_file: &std::path::Path,
        token_file: Option<&std::path::Path>,
        admin_token_file: Option<&std::path::Path>,
    ) -> Result<Access, UfmError> {
        if username.is_empty() {
            return Err(UfmError::Config("empty user name".into()));
        }
        let tokens = match token_file {
            Some(p) => read_secret(p)?
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(str::to_string)
                .collect(),
            None => Vec::new(),
        };
        Ok(Access {
            username: username.to_string(),
            password: read_secret(password_file)?,
            tokens,
            admin_token: admin_token_file.map(read_secret).transpose()?,
        })
    }
}

fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// True when the request's credentials are valid for the route family.
fn authorized(acc: &Access, h: &HeaderMap, token_auth: bool) -> bool {
    let Some(v) = h
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
        .map(str::trim)
    else {
        return false;
    };
    if token_auth {
        return acc.tokens.iter().any(|t| ct_eq(t.as_bytes(), v.as_bytes()));
    }
    let Ok(raw) = base64::engine::general_purpose::STANDARD.decode(v) else {
        return false;
    };
    let want = format!("{}:{}", acc.username, acc.password);
    !acc.password.is_empty() && ct_eq(&raw, want.as_bytes())
}

struct Api<B> {
    backend: Arc<B>,
    access: Access,
}

type S<B> = State<Arc<Api<B>>>;

fn error(code: StatusCode, msg: impl std::fmt::Display) -> Response {
    (code, axum::Json(json!({ "error": msg.to_string() }))).into_response()
}

fn status_response(s: Status) -> Response {
    let code = match s.code() {
        Code::InvalidArgument | Code::OutOfRange => StatusCode::BAD_REQUEST,
        Code::NotFound => StatusCode::NOT_FOUND,
        Code::FailedPrecondition | Code::AlreadyExists => StatusCode::CONFLICT,
        Code::Unauthenticated => StatusCode::UNAUTHORIZED,
        Code::PermissionDenied => StatusCode::FORBIDDEN,
        Code::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    error(code, s.message())
}

impl<B: Backend> Api<B> {
    fn request<T>(&self, inner: T) -> tonic::Request<T> {
        let mut r = tonic::Request::new(inner);
        if let Some(t) = &self.access.admin_token
            && let Ok(v) = format!("Bearer {t}").parse()
        {
            r.metadata_mut().insert("authorization", v);
        }
        r
    }

    async fn change(&self, r: Result<ChangeGuidsRequest, UfmError>) -> Response {
        let r = match r {
            Ok(r) => r,
            Err(e) => return error(StatusCode::BAD_REQUEST, e),
        };
        match self.backend.change_guids(self.request(r)).await {
            Ok(a) => {
                axum::Json(json!({ "version": a.version, "warnings": a.warnings })).into_response()
            }
            Err(s) => status_response(s),
        }
    }

    async fn list(&self, query: Option<String>, only: Option<&str>) -> Response {
        let only = match only.map(wire::parse_pkey).transpose() {
            Ok(o) => o,
            Err(e) => return error(StatusCode::BAD_REQUEST, e),
        };
        let guids_data = query
            .unwrap_or_default()
            .split('&')
            .any(|kv| kv.eq_ignore_ascii_case("guids_data=true"));
        let l = match self
            .backend
            .list_tenants(self.request(ListTenantsRequest { linearizable: true }))
            .await
        {
            Ok(l) => l,
            Err(s) => return status_response(s),
        };
        let map = wire::listing(&l.tenants.unwrap_or_default(), guids_data, only);
        match only {
            Some(p) => match map.into_iter().next() {
                Some((_, v)) => axum::Json(v).into_response(),
                None => error(
                    StatusCode::NOT_FOUND,
                    format!("E_NODE_PKEY_UNKNOWN: no partition has P_Key {p:#06x}"),
                ),
            },
            None => axum::Json(map).into_response(),
        }
    }
}

fn json_body<T: serde::de::DeserializeOwned>(b: &Bytes) -> Result<T, UfmError> {
    serde_json::from_slice(b).map_err(|e| UfmError::BadBody(e.to_string()))
}

async fn version() -> Response {
    let v = concat!(
        "Quorum SM ",
        env!("CARGO_PKG_VERSION"),
        " (UFM-compatible PKey API)"
    );
    axum::Json(json!({ "ufm_release_version": v })).into_response()
}

async fn list_all<B: Backend>(State(a): S<B>, RawQuery(q): RawQuery) -> Response {
    a.list(q, None).await
}

async fn list_one<B: Backend>(
    State(a): S<B>,
    Path(pkey): Path<String>,
    RawQuery(q): RawQuery,
) -> Response {
    a.list(q, Some(&pkey)).await
}

async fn add<B: Backend>(State(a): S<B>, b: Bytes) -> Response {
    let r = json_body(&b).and_then(|b| wire::add_request(&b));
    a.change(r).await
}

async fn remove<B: Backend>(State(a): S<B>, b: Bytes) -> Response {
    let r = json_body(&b).and_then(|b| wire::remove_request(&b));
    a.change(r).await
}

async fn delete<B: Backend>(State(a): S<B>, Path(pkey): Path<String>) -> Response {
    a.change(wire::delete_request(&pkey)).await
}

fn routes<B: Backend>() -> Router<Arc<Api<B>>> {
    Router::new()
        .route("/app/ufm_version", get(version))
        .route("/resources/pkeys", get(list_all::<B>).post(add::<B>))
        .route("/resources/pkeys/", get(list_all::<B>).post(add::<B>))
        .route("/resources/pkeys/add", post(add::<B>))
        .route(
            "/resources/pkeys/{pkey}",
            get(list_one::<B>).delete(delete::<B>),
        )
        .route("/actions/remove_guids_from_pkey", post(remove::<B>))
}

/// The API over `backend`, checking `access`.
pub fn router<B: Backend>(backend: Arc<B>, access: Access) -> Router {
    let api = Arc::new(Api { backend, access });
    let guard = |token_auth: bool| {
        let api = api.clone();
        axum::middleware::from_fn(
            move |req: axum::extract::Request, next: axum::middleware::Next| {
                let ok = authorized(&api.access, req.headers(), token_auth);
                async move {
                    if ok {
                        next.run(req).await
                    } else {
                        let mut r = error(
                            StatusCode::UNAUTHORIZED,
                            "E_UFM_AUTH: missing or wrong credentials",
                        );
                        r.headers_mut().insert(
                            header::WWW_AUTHENTICATE,
                            header::HeaderValue::from_static("Basic realm=\"ufm\""),
                        );
                        r
                    }
                }
            },
        )
    };
    Router::new()
        .nest("/ufmRest", routes::<B>().layer(guard(false)))
        .nest("/ufmRestV3", routes::<B>().layer(guard(true)))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(api)
}

#[cfg(test)]
mod tests;
