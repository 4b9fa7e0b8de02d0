//! Bearer tokens for the admin API: two roles, `read` and `admin` (admin may also read).
//!
//! Tokens come from a file (one `ROLE TOKEN` per line, `#` comments) or inline
//! (`read:TOKEN,admin:TOKEN`). No token -> UNAUTHENTICATED; a read token on a write ->
//! PERMISSION_DENIED. Tokens are compared in constant time.

use std::collections::BTreeMap;
use std::sync::Arc;
use tonic::{Request, Status};

/// A role.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// Reads only.
    Read,
    /// Reads and writes.
    Admin,
}

/// Known tokens.
#[derive(Clone, Debug, Default)]
pub struct Tokens {
    by_token: BTreeMap<String, Role>,
}

fn role_of(s: &str) -> Result<Role, String> {
    match s {
        "read" => Ok(Role::Read),
        "admin" => Ok(Role::Admin),
        _ => Err(format!("unknown role {s:?} (read or admin)")),
    }
}

impl Tokens {
    /// Parses a tokens file's text: `ROLE TOKEN` per line.
    pub fn parse_file(text: &str) -> Result<Tokens, String> {
        let mut t = Tokens::default();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut w = line.split_whitespace();
            let (Some(role), Some(tok), None) = (w.next(), w.next(), w.next()) else {
                return Err(format!("line {}: expected `ROLE TOKEN`", i + 1));
            };
            t.insert(
                role_of(role).map_err(|e| format!("line {}: {e}", i + 1))?,
                tok,
            )?;
        }
        Ok(t)
    }

    /// Parses `read:TOKEN,admin:TOKEN`.
    pub fn parse_inline(s: &str) -> Result<Tokens, String> {
        let mut t = Tokens::default();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (role, tok) = part
                .split_once(':')
                .ok_or_else(|| format!("{part:?}: expected ROLE:TOKEN"))?;
            t.insert(role_of(role)?, tok)?;
        }
        Ok(t)
    }

    fn insert(&mut self, role: Role, tok: &str) -> Result<(), String> {
        if tok.len() < 8 {
            return Err("a token must have at least 8 characters".into());
        }
        self.by_token.insert(tok.to_string(), role);
        Ok(())
    }

    /// True when no token is configured (authentication off: only allowed with
    /// insecure loopback).
    pub fn is_empty(&self) -> bool {
        self.by_token.is_empty()
    }

    /// The role of a presented token.
    pub fn role(&self, presented: &str) -> Option<Role> {
        let mut found = None;
        for (tok, role) in &self.by_token {
            if ct_eq(tok.as_bytes(), presented.as_bytes()) {
                found = Some(*role);
            }
        }
        found
    }
}

fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Checks a request's `authorization: Bearer TOKEN` header; `None` tokens = open.
#[derive(Clone, Debug, Default)]
pub struct Auth {
    tokens: Option<Arc<Tokens>>,
}

impl Auth {
    /// Authentication with these tokens (None: everything open, development only).
    pub fn new(tokens: Option<Tokens>) -> Auth {
        Auth {
            tokens: tokens.map(Arc::new),
        }
    }

    /// True when no token is configured (every call allowed).
    pub fn is_open(&self) -> bool {
        self.tokens.is_none()
    }

    /// The role of a request, or UNAUTHENTICATED.
    pub fn role<T>(&self, req: &Request<T>) -> Result<Role, Status> {
        let Some(tokens) = &self.tokens else {
            return Ok(Role::Admin);
        };
        let h = req
            .metadata()
            .get("authorization")
            .ok_or_else(|| {
                Status::unauthenticated(
                    "E_AUTH_NO_TOKEN: this call needs `authorization: Bearer TOKEN` (smctl --token)",
                )
            })?
            .to_str()
            .map_err(|_| Status::unauthenticated("E_AUTH_BAD_HEADER: authorization is not ASCII"))?;
        let tok = h
            .strip_prefix("Bearer ")
            .ok_or_else(|| Status::unauthenticated("E_AUTH_BAD_HEADER: expected `Bearer TOKEN`"))?;
        tokens
            .role(tok.trim())
            .ok_or_else(|| Status::unauthenticated("E_AUTH_UNKNOWN_TOKEN: token not recognised"))
    }

    /// Requires the read role (any valid token).
    pub fn read<T>(&self, req: &Request<T>) -> Result<(), Status> {
        self.role(req).map(|_| ())
    }

    /// Requires the admin role.
    pub fn admin<T>(&self, req: &Request<T>, what: &str) -> Result<(), Status> {
        match self.role(req)? {
            Role::Admin => Ok(()),
            Role::Read => Err(Status::permission_denied(format!(
                "E_AUTH_ROLE: {what} needs an admin token; this token has the read role"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_parse_and_roles() {
        let t = Tokens::parse_file("# c\nread rrrrrrrr\nadmin aaaaaaaa\n").unwrap();
        assert_eq!(t.role("rrrrrrrr"), Some(Role::Read));
        assert_eq!(t.role("aaaaaaaa"), Some(Role::Admin));
        assert_eq!(t.role("aaaaaaab"), None);
        assert!(Tokens::parse_file("root xxxxxxxx").is_err());
        assert!(Tokens::parse_inline("read:short").is_err());
        let i = Tokens::parse_inline("read:rrrrrrrr,admin:aaaaaaaa").unwrap();
        assert_eq!(i.role("rrrrrrrr"), Some(Role::Read));
    }

    #[test]
    fn header_checks() {
        let a = Auth::new(Some(
            Tokens::parse_inline("read:rrrrrrrr,admin:aaaaaaaa").unwrap(),
        ));
        let mut r = Request::new(());
        assert_eq!(a.read(&r).unwrap_err().code(), tonic::Code::Unauthenticated);
        r.metadata_mut()
            .insert("authorization", "Bearer rrrrrrrr".parse().unwrap());
        assert!(a.read(&r).is_ok());
        assert_eq!(
            a.admin(&r, "x").unwrap_err().code(),
            tonic::Code::PermissionDenied
        );
        r.metadata_mut()
            .insert("authorization", "Bearer aaaaaaaa".parse().unwrap());
        assert!(a.admin(&r, "x").is_ok());
    }
}
