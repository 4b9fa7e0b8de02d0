//! Who may read the dashboard: the admin tokens (any role: read or admin), presented as an
//! `Authorization: Bearer T` header (scripts) or as the `qsm_token` cookie the dashboard sets
//! (HttpOnly, SameSite=Strict, Secure over HTTPS) when a browser opens `/?token=T` once.
//! With no tokens configured the admin API is open, and so is the dashboard.

use axum::http::HeaderMap;
use tonic::metadata::MetadataValue;

/// Name of the cookie.
pub const COOKIE: &str = "qsm_token";

/// Decodes `%XX` and `+` of a query value; None when malformed.
pub fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = s.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// The `token` parameter of a query string.
pub fn query_token(query: Option<&str>) -> Option<String> {
    query?
        .split('&')
        .find_map(|kv| kv.strip_prefix("token="))
        .and_then(percent_decode)
}

/// True for tokens that can travel in a cookie and a header unchanged.
pub fn cookie_safe(t: &str) -> bool {
    !t.is_empty()
        && t.len() <= 512
        && t.bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"-._~+/=:".contains(&c))
}

/// The token a request presents: the bearer header first, then the cookie.
pub fn presented(h: &HeaderMap) -> Option<String> {
    if let Some(v) = h.get("authorization").and_then(|v| v.to_str().ok())
        && let Some(t) = v.strip_prefix("Bearer ")
    {
        return Some(t.trim().to_string());
    }
    h.get_all("cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|kv| {
            kv.trim()
                .strip_prefix(&format!("{COOKIE}="))
                .map(str::to_string)
        })
}

/// A tonic request carrying `token` the way smctl sends it.
pub fn request<T>(inner: T, token: Option<&str>) -> tonic::Request<T> {
    let mut r = tonic::Request::new(inner);
    if let Some(t) = token
        && let Ok(v) = format!("Bearer {t}").parse::<MetadataValue<_>>()
    {
        r.metadata_mut().insert("authorization", v);
    }
    r
}

/// True when `token` may read (any configured role), or when the API is open.
pub fn may_read(auth: &crate::auth::Auth, token: Option<&str>) -> bool {
    auth.is_open() || auth.read(&request((), token)).is_ok()
}

/// The Set-Cookie value for `token`.
pub fn set_cookie(token: &str, secure: bool) -> String {
    format!(
        "{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/{}",
        if secure { "; Secure" } else { "" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::{Auth, Tokens};

    #[test]
    fn tokens_from_query_header_and_cookie() {
        assert_eq!(query_token(Some("a=1&token=ab%2Bc")), Some("ab+c".into()));
        assert_eq!(query_token(Some("token=%zz")), None);
        assert_eq!(query_token(None), None);
        let mut h = HeaderMap::new();
        h.insert("cookie", "x=1; qsm_token=tok1".parse().unwrap());
        assert_eq!(presented(&h).as_deref(), Some("tok1"));
        h.insert("authorization", "Bearer tok2".parse().unwrap());
        assert_eq!(presented(&h).as_deref(), Some("tok2"));
        assert!(cookie_safe("Ab0-._~+/=:"));
        assert!(!cookie_safe("a;b") && !cookie_safe("") && !cookie_safe("a b"));
        assert!(set_cookie("t", true).ends_with("; Secure"));
        assert!(set_cookie("t", false).contains("HttpOnly"));
    }

    #[test]
    fn read_and_admin_tokens_read_others_do_not() {
        let auth = Auth::new(Some(
            Tokens::parse_inline("read:read-0001,admin:admin-0001").unwrap(),
        ));
        assert!(may_read(&auth, Some("read-0001")));
        assert!(may_read(&auth, Some("admin-0001")));
        assert!(!may_read(&auth, Some("nope-nope-nope")));
        assert!(!may_read(&auth, None));
        assert!(may_read(&Auth::new(None), None));
    }
}
