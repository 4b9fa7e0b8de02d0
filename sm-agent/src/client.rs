//! The admin API as the agent uses it: one `GetTenantAssignment` per cycle.

use crate::AgentError;
use proto::admin::sm_admin_client::SmAdminClient;
use proto::admin::{GetTenantAssignmentReply, GetTenantAssignmentRequest};
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};

/// Largest assignment answer the agent accepts (1 MiB: a host's ports, their keys and its
/// tenant's limits are a few hundred bytes).
pub const MAX_REPLY: usize = 1 << 20;

/// How to reach the cluster.
#[derive(Clone, Debug, Default)]
pub struct Conn {
    /// `host:port` of any replica's admin endpoint.
    pub server: String,
    /// Bearer token (the read role is enough).
    pub token: Option<String>,
    /// CA certificate (PEM) for TLS; None = plain HTTP/2 (loopback only).
    pub ca: Option<std::path::PathBuf>,
    /// TLS server name.
    pub tls_domain: String,
    /// Client certificate and key (PEM) when the cluster asks for mutual TLS.
    pub identity: Option<(std::path::PathBuf, std::path::PathBuf)>,
}

/// Asks for the assignment of `ports`.
pub async fn fetch(conn: &Conn, ports: &[u64]) -> Result<GetTenantAssignmentReply, AgentError> {
    let api = |e: String| AgentError::Api(format!("{}: {e}", conn.server));
    let ep = match &conn.ca {
        Some(ca) => {
            let pem = std::fs::read(ca).map_err(|e| api(format!("CA {}: {e}", ca.display())))?;
            let mut tls = ClientTlsConfig::new()
                .domain_name(conn.tls_domain.clone())
                .ca_certificate(Certificate::from_pem(pem));
            if let Some((cert, key)) = &conn.identity {
                let read = |p: &std::path::PathBuf| {
                    std::fs::read(p).map_err(|e| api(format!("{}: {e}", p.display())))
                };
                tls = tls.identity(Identity::from_pem(read(cert)?, read(key)?));
            }
            Endpoint::from_shared(format!("https://{}", conn.server))
                .and_then(|e| e.tls_config(tls))
                .map_err(|e| api(e.to_string()))?
        }
        None => Endpoint::from_shared(format!("http://{}", conn.server))
            .map_err(|e| api(e.to_string()))?,
    };
    let ch = ep
        .connect_timeout(std::time::Duration::from_secs(3))
        .timeout(std::time::Duration::from_secs(10))
        .connect()
        .await
        .map_err(|e| api(format!("connect: {e}")))?;
    let mut c = SmAdminClient::new(ch).max_decoding_message_size(MAX_REPLY);
    let mut req = tonic::Request::new(GetTenantAssignmentRequest {
        port_guids: ports.to_vec(),
        linearizable: false,
    });
    if let Some(t) = &conn.token {
        let v = format!("Bearer {t}")
            .parse()
            .map_err(|_| api("token is not ASCII".into()))?;
        req.metadata_mut().insert("authorization", v);
    }
    c.get_tenant_assignment(req)
        .await
        .map(tonic::Response::into_inner)
        .map_err(|s| {
            if s.message().contains("E_NODE_TENANT_SPLIT") {
                AgentError::Assignment(s.message().to_string())
            } else {
                api(format!("{:?}: {}", s.code(), s.message()))
            }
        })
}
