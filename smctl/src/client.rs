//! Connection to a replica's SmAdmin for the cluster commands: `--server`, `--token`,
//! `--ca`/`--cert`/`--key` (or SMCTL_SERVER, SMCTL_TOKEN, SMCTL_CA, SMCTL_CERT, SMCTL_KEY),
//! and the exit codes scripts rely on.
//!
//! Exit codes: 0 ok, 1 error, 2 usage, 3 unavailable (no leader/quorum, cannot connect),
//! 4 permission (no token, wrong token, read token on a write), 5 not found (unknown LID,
//! replica), 6 precondition (stale policy version).

use clap::Args;
use proto::admin::sm_admin_client::SmAdminClient;
use std::process::ExitCode;
use std::sync::OnceLock;
use tonic::metadata::MetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};

/// Exit codes.
pub const EXIT_ERROR: u8 = 1;
/// No leader, no quorum, cannot connect.
pub const EXIT_UNAVAILABLE: u8 = 3;
/// Authentication or role.
pub const EXIT_PERMISSION: u8 = 4;
/// Unknown LID, replica, port.
pub const EXIT_NOT_FOUND: u8 = 5;
/// Stale version and other failed preconditions.
pub const EXIT_PRECONDITION: u8 = 6;

/// Where and how to reach a replica (global flags of smctl).
#[derive(Args, Clone, Debug, Default)]
pub struct ConnArgs {
    /// Replica admin address HOST:PORT (cluster commands).
    #[arg(long, global = true, env = "SMCTL_SERVER")]
    pub server: Option<String>,
    /// Bearer token (read or admin role).
    #[arg(long, global = true, env = "SMCTL_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// PEM CA that signed the replicas' certificates: use TLS.
    #[arg(long, global = true, env = "SMCTL_CA")]
    pub ca: Option<std::path::PathBuf>,
    /// PEM client certificate (replicas configured with SM_TLS_CA require one).
    #[arg(long, global = true, env = "SMCTL_CERT")]
    pub cert: Option<std::path::PathBuf>,
    /// PEM client key.
    #[arg(long, global = true, env = "SMCTL_KEY")]
    pub key: Option<std::path::PathBuf>,
    /// Name expected in the replica's certificate.
    #[arg(long, global = true, default_value = "localhost")]
    pub tls_domain: String,
}

static CONN: OnceLock<ConnArgs> = OnceLock::new();

/// Records the global flags.
pub fn set(c: ConnArgs) {
    let _ = CONN.set(c);
}

/// The global flags.
pub fn conn() -> ConnArgs {
    CONN.get().cloned().unwrap_or_default()
}

/// True when `--server` was given (cluster mode for commands that also work offline).
pub fn server_given() -> bool {
    conn().server.is_some()
}

/// An error with its exit code.
#[derive(Debug)]
pub struct CmdError {
    /// Exit code.
    pub code: u8,
    /// Message.
    pub msg: String,
}

impl std::fmt::Display for CmdError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.msg)
    }
}

impl std::error::Error for CmdError {}

/// Maps a gRPC status to an error with the documented exit code.
pub fn status_err(s: tonic::Status) -> anyhow::Error {
    use tonic::Code;
    let code = match s.code() {
        Code::Unavailable | Code::DeadlineExceeded => EXIT_UNAVAILABLE,
        Code::Unauthenticated | Code::PermissionDenied => EXIT_PERMISSION,
        Code::NotFound => EXIT_NOT_FOUND,
        Code::FailedPrecondition => EXIT_PRECONDITION,
        _ => EXIT_ERROR,
    };
    anyhow::Error::new(CmdError {
        code,
        msg: format!("{:?}: {}", s.code(), s.message()),
    })
}

/// The exit code of an error returned by a command.
pub fn exit_code_of(e: &anyhow::Error) -> ExitCode {
    ExitCode::from(e.downcast_ref::<CmdError>().map_or(EXIT_ERROR, |c| c.code))
}

/// Adds the bearer token to every call.
#[derive(Clone)]
pub struct Bearer(Option<MetadataValue<tonic::metadata::Ascii>>);

impl tonic::service::Interceptor for Bearer {
    fn call(&mut self, mut r: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(v) = &self.0 {
            r.metadata_mut().insert("authorization", v.clone());
        }
        Ok(r)
    }
}

/// The client type.
pub type Client = SmAdminClient<InterceptedService<Channel, Bearer>>;

/// Connects to `--server`.
pub async fn connect() -> anyhow::Result<Client> {
    let server = conn().server.clone().ok_or_else(|| {
        anyhow::Error::new(CmdError {
            code: 2,
            msg: "this command needs --server HOST:PORT (or SMCTL_SERVER)".into(),
        })
    })?;
    connect_to(&server).await
}

/// Connects to the replica at `server` (HOST:PORT) with the global TLS and token flags.
pub async fn connect_to(server: &str) -> anyhow::Result<Client> {
    let c = conn();
    let ep = match &c.ca {
        Some(ca) => {
            let mut tls = ClientTlsConfig::new()
                .domain_name(c.tls_domain.clone())
                .ca_certificate(Certificate::from_pem(std::fs::read(ca)?));
            if let (Some(cert), Some(key)) = (&c.cert, &c.key) {
                tls = tls.identity(Identity::from_pem(
                    std::fs::read(cert)?,
                    std::fs::read(key)?,
                ));
            }
            Endpoint::from_shared(format!("https://{server}"))?.tls_config(tls)?
        }
        None => Endpoint::from_shared(format!("http://{server}"))?,
    };
    let ch = ep
        .connect_timeout(std::time::Duration::from_secs(3))
        .connect()
        .await
        .map_err(|e| {
            anyhow::Error::new(CmdError {
                code: EXIT_UNAVAILABLE,
                msg: format!(
                    "cannot connect to {server}: {e} ({:?})",
                    std::error::Error::source(&e)
                ),
            })
        })?;
    let tok = match &c.token {
        Some(t) => Some(
            format!("Bearer {t}")
                .parse()
                .map_err(|_| anyhow::anyhow!("--token is not ASCII"))?,
        ),
        None => None,
    };
    Ok(SmAdminClient::with_interceptor(ch, Bearer(tok)).max_decoding_message_size(64 << 20))
}

/// A tokio runtime for one command.
pub fn block_on<F: std::future::Future>(f: F) -> anyhow::Result<F::Output> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(f))
}
