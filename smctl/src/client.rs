//! Connection to a replica's SmAdmin for the cluster commands: `--server`, `--token`,
//! `--ca`/`--cert`/`--key`, `--connect-timeout`, `--timeout` (or SMCTL_SERVER, SMCTL_TOKEN,
//! SMCTL_CA, SMCTL_CERT, SMCTL_KEY, SMCTL_CONNECT_TIMEOUT, SMCTL_TIMEOUT), the size limits
//! of what is sent and received, and the exit codes scripts rely on ([`EXIT_CODES`]).
//!
//! Timeouts: connecting (TCP, TLS, HTTP/2) is bounded by `--connect-timeout` (default
//! [`DEFAULT_CONNECT_TIMEOUT`]); every call by `--timeout` (default
//! [`DEFAULT_REQUEST_TIMEOUT`]; `smctl audit` and `smctl draw partitions` wait for a
//! read-back of the whole fabric: [`AUDIT_REQUEST_TIMEOUT`] unless `--timeout` is given).
//! A read that times out exits 3; a write that times out after it was sent may have been
//! committed and exits 7.

use clap::Args;
use proto::admin::sm_admin_client::SmAdminClient;
use std::process::ExitCode;
use std::sync::OnceLock;
use std::time::Duration;
use tonic::metadata::MetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};

/// Exit codes.
pub const EXIT_ERROR: u8 = 1;
/// No leader, no quorum, cannot connect, no answer within the timeout (nothing written).
pub const EXIT_UNAVAILABLE: u8 = 3;
/// Authentication or role.
pub const EXIT_PERMISSION: u8 = 4;
/// Unknown LID, replica, port.
pub const EXIT_NOT_FOUND: u8 = 5;
/// Stale version and other failed preconditions (a membership change the guard refuses).
pub const EXIT_PRECONDITION: u8 = 6;
/// A write whose outcome is unknown: it was sent (and possibly committed) but its answer did
/// not come back (server status ABORTED `E_NODE_COMMIT_UNKNOWN`, or smctl's own timeout or a
/// lost connection after the write was sent). Read the state before retrying.
pub const EXIT_COMMIT_UNKNOWN: u8 = 7;

/// The exit codes, as `smctl --help` shows them.
pub const EXIT_CODES: &str = "Exit codes: 0 ok; 1 error (bad input, a policy with errors, \
an isolation break); 2 usage; 3 unavailable (no leader or quorum, cannot connect, no answer \
within --connect-timeout/--timeout; nothing was written); 4 permission; 5 not found; \
6 precondition (stale version, membership change refused); 7 commit unknown (a write was \
sent and may have been committed, but its answer did not come back: read the state before \
retrying). A closed stdout (`| head`) ends smctl quietly by SIGPIPE (status 141 in a shell).";

/// Default bound on connecting to a replica.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Default bound on one call.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Default bound on a call that waits for the master's read-back of every P_KeyTable (the
/// server gives up on a read-back after 60 s).
pub const AUDIT_REQUEST_TIMEOUT: Duration = Duration::from_secs(90);

/// Largest request smctl sends (2 MiB, the admin server's `MAX_ADMIN_REQUEST`): a policy at
/// `partitions::MAX_POLICY_BYTES` fits with room to spare.
pub const MAX_REQUEST: usize = 2 << 20;
/// Largest answer smctl accepts (64 MiB, what a replica sends at most: the node listing of a
/// large fabric).
pub const MAX_REPLY: usize = 64 << 20;

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
    /// Seconds to wait for a connection to the replica (TCP, TLS, HTTP/2); default 5.
    #[arg(long, global = true, env = "SMCTL_CONNECT_TIMEOUT", value_parser = parse_secs)]
    pub connect_timeout: Option<Duration>,
    /// Seconds to wait for each answer; default 30 (90 for `audit` and `draw partitions`).
    #[arg(long, global = true, env = "SMCTL_TIMEOUT", value_parser = parse_secs)]
    pub timeout: Option<Duration>,
}

/// A duration in seconds: `30`, `2.5`, `500ms`, `5s`.
pub fn parse_secs(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (num, scale) = if let Some(ms) = t.strip_suffix("ms") {
        (ms, 1e-3)
    } else {
        (t.strip_suffix('s').unwrap_or(t), 1.0)
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v * scale <= 86_400.0 => {
            Ok(Duration::from_secs_f64(v * scale))
        }
        _ => Err(format!(
            "'{s}' is not a duration: seconds above 0 and at most a day (30, 2.5, 500ms)"
        )),
    }
}

static CONN: OnceLock<ConnArgs> = OnceLock::new();

/// The per-command default of the request timeout (set before connecting).
static COMMAND_TIMEOUT: OnceLock<Duration> = OnceLock::new();

/// This command waits longer by default than [`DEFAULT_REQUEST_TIMEOUT`] (`--timeout` still
/// wins).
pub fn set_command_timeout(d: Duration) {
    let _ = COMMAND_TIMEOUT.set(d);
}

/// The bound on connecting.
pub fn connect_timeout() -> Duration {
    conn().connect_timeout.unwrap_or(DEFAULT_CONNECT_TIMEOUT)
}

/// The bound on each call.
pub fn request_timeout() -> Duration {
    conn().timeout.unwrap_or_else(|| {
        COMMAND_TIMEOUT
            .get()
            .copied()
            .unwrap_or(DEFAULT_REQUEST_TIMEOUT)
    })
}

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

/// True when an error of type `E` is in `s`'s source chain (tonic made `s` from a local
/// error; a status the replica answered has no source).
fn caused_by<E: std::error::Error + 'static>(s: &tonic::Status) -> bool {
    let mut e: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(s);
    while let Some(x) = e {
        if x.is::<E>() {
            return true;
        }
        e = x.source();
    }
    false
}

/// Maps the status of a read (or of a call that writes nothing to the log) to an error with
/// the documented exit code: smctl's own timeout and a lost connection are 3.
pub fn status_err(s: tonic::Status) -> anyhow::Error {
    use tonic::Code;
    if caused_by::<tonic::TimeoutExpired>(&s) {
        return cmd_error(
            EXIT_UNAVAILABLE,
            format!(
                "no answer from {} within {:?} (--timeout / SMCTL_TIMEOUT)",
                conn().server.unwrap_or_default(),
                request_timeout()
            ),
        );
    }
    if std::error::Error::source(&s).is_some() {
        return cmd_error(
            EXIT_UNAVAILABLE,
            format!(
                "the connection to {} failed: {:?}: {}",
                conn().server.unwrap_or_default(),
                s.code(),
                s.message()
            ),
        );
    }
    let code = match s.code() {
        Code::Unavailable | Code::DeadlineExceeded => EXIT_UNAVAILABLE,
        Code::Unauthenticated | Code::PermissionDenied => EXIT_PERMISSION,
        Code::NotFound => EXIT_NOT_FOUND,
        Code::FailedPrecondition => EXIT_PRECONDITION,
        Code::Aborted => EXIT_COMMIT_UNKNOWN,
        _ => EXIT_ERROR,
    };
    cmd_error(code, format!("{:?}: {}", s.code(), s.message()))
}

/// Maps the status of a write (ApplyPolicy, SetTenant, DeleteTenant, ChangeMembership): as
/// [`status_err`], except that smctl's own timeout or a connection lost after the request
/// was sent leaves the outcome unknown (exit 7); a connection never made is 3.
pub fn write_err(s: tonic::Status) -> anyhow::Error {
    let local = std::error::Error::source(&s).is_some();
    if !local || caused_by::<tonic::ConnectError>(&s) {
        return status_err(s);
    }
    let why = if caused_by::<tonic::TimeoutExpired>(&s) {
        format!(
            "no answer within {:?} (--timeout / SMCTL_TIMEOUT)",
            request_timeout()
        )
    } else {
        format!("the connection failed: {:?}: {}", s.code(), s.message())
    };
    cmd_error(
        EXIT_COMMIT_UNKNOWN,
        format!(
            "E_SMCTL_COMMIT_UNKNOWN: the write was sent to {} but {why}; it may have been committed: read the state before retrying",
            conn().server.unwrap_or_default()
        ),
    )
}

fn cmd_error(code: u8, msg: String) -> anyhow::Error {
    anyhow::Error::new(CmdError { code, msg })
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

/// Connects to the replica at `server` (HOST:PORT) with the global TLS and token flags,
/// within `--connect-timeout`; every call on the client is bounded by `--timeout`.
pub async fn connect_to(server: &str) -> anyhow::Result<Client> {
    let c = conn();
    let pem = |p: &std::path::Path| {
        crate::input::read_bytes(p, crate::input::MAX_PEM_BYTES, "MAX_PEM_BYTES")
    };
    let ep = match &c.ca {
        Some(ca) => {
            let mut tls = ClientTlsConfig::new()
                .domain_name(c.tls_domain.clone())
                .ca_certificate(Certificate::from_pem(pem(ca)?));
            if let (Some(cert), Some(key)) = (&c.cert, &c.key) {
                tls = tls.identity(Identity::from_pem(pem(cert)?, pem(key)?));
            }
            Endpoint::from_shared(format!("https://{server}"))?.tls_config(tls)?
        }
        None => Endpoint::from_shared(format!("http://{server}"))?,
    };
    let limit = connect_timeout();
    let ep = ep.connect_timeout(limit).timeout(request_timeout());
    let ch = match tokio::time::timeout(limit, ep.connect()).await {
        Ok(Ok(ch)) => ch,
        Ok(Err(e)) => {
            return Err(cmd_error(
                EXIT_UNAVAILABLE,
                format!(
                    "cannot connect to {server}: {e} ({:?})",
                    std::error::Error::source(&e)
                ),
            ));
        }
        Err(_) => {
            return Err(cmd_error(
                EXIT_UNAVAILABLE,
                format!(
                    "cannot connect to {server}: no connection within {limit:?} (--connect-timeout / SMCTL_CONNECT_TIMEOUT)"
                ),
            ));
        }
    };
    let tok = match &c.token {
        Some(t) => Some(
            format!("Bearer {t}")
                .parse()
                .map_err(|_| anyhow::anyhow!("--token is not ASCII"))?,
        ),
        None => None,
    };
    Ok(SmAdminClient::with_interceptor(ch, Bearer(tok))
        .max_decoding_message_size(MAX_REPLY)
        .max_encoding_message_size(MAX_REQUEST))
}

/// A tokio runtime for one command.
pub fn block_on<F: std::future::Future>(f: F) -> anyhow::Result<F::Output> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(f))
}
