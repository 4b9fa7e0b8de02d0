//! SIGHUP in cluster mode: the replica's `--partitions` file, read again, is proposed as the
//! cluster's partition policy through the same path as `smctl partitions apply` (the
//! admin `ApplyPolicy` call of this replica, which checks the text, then proposes it here or
//! forwards it to the leader over `Peer.Forward`). Once committed, every replica holds it
//! and the master restarts its sweeper on it (see `raft_actor`), as after an
//! `smctl partitions apply`.
//!
//! A file that cannot be read or does not parse is logged as `E_NODE_POLICY_RELOAD` (every
//! syntax error with file:line:col) and nothing is proposed; a file equal to the policy in
//! force proposes nothing either. The call is made inside the process on behalf of whoever
//! could signal it, so the admin bearer tokens are not asked for.

use super::admin::AdminService;
use super::raft_actor::RaftActor;
use crate::auth::Auth;
use crate::config::{ConfigError, load_partitions, load_qos_policy};
use actix::Addr;
use proto::admin::sm_admin_server::SmAdmin;
use proto::admin::{ApplyPolicyRequest, GetPolicyRequest};
use std::path::Path;
use tonic::Request;

/// What a reload did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reloaded {
    /// The file equals the policy in force (this version): nothing proposed.
    Unchanged {
        /// Version in force.
        version: u64,
    },
    /// Committed as this version at this Raft index.
    Applied {
        /// New version in force.
        version: u64,
        /// Raft index of the entry.
        index: u64,
    },
}

/// Times a proposal is retried when another apply committed in between.
const RACE_RETRIES: usize = 3;

/// Reads `path` and proposes it as the cluster's policy on replica `id` (`qos`: as its QoS
/// policy, through ApplyQosPolicy). The error is the text of an `E_NODE_POLICY_RELOAD` log
/// line (without the code).
pub async fn reload_file(
    id: u64,
    raft: Addr<RaftActor>,
    path: &Path,
    qos: bool,
) -> Result<Reloaded, String> {
    let load = if qos {
        load_qos_policy
    } else {
        load_partitions
    };
    let text = load(path).map_err(|e| match e {
        ConfigError::Partitions { errors, .. } | ConfigError::QosPolicy { errors, .. } => {
            errors.lines().collect::<Vec<_>>().join("; ")
        }
        other => other.to_string(),
    })?;
    let svc = AdminService {
        id,
        raft,
        auth: Auth::new(None),
    };
    let mut last = String::new();
    for _ in 0..RACE_RETRIES {
        let get = Request::new(GetPolicyRequest {
            linearizable: false,
        });
        let cur = if qos {
            svc.get_qos_policy(get).await
        } else {
            svc.get_policy(get).await
        };
        let cur = cur.map_err(|s| s.message().to_string())?.into_inner();
        if cur.version != 0 && cur.text == text {
            return Ok(Reloaded::Unchanged {
                version: cur.version,
            });
        }
        let apply = Request::new(ApplyPolicyRequest {
            text: text.clone(),
            expected_version: cur.version,
            request_id: 0,
        });
        let applied = if qos {
            svc.apply_qos_policy(apply).await
        } else {
            svc.apply_policy(apply).await
        };
        match applied {
            Ok(r) => {
                let r = r.into_inner();
                for w in &r.warnings {
                    tracing::warn!("partitions reload from {}: {w}", path.display());
                }
                return Ok(Reloaded::Applied {
                    version: r.version,
                    index: r.index,
                });
            }
            // Another apply committed since this replica read the version: read again.
            Err(s) if s.message().contains("REPL-E004") => last = s.message().to_string(),
            Err(s) => return Err(format!("{}: {}", path.display(), s.message())),
        }
    }
    Err(format!("{}: {last}", path.display()))
}

/// SIGHUP on replica `id`: [`reload_file`] of `path` (None: no `--partitions`) and of the
/// QoS policy file `qos` (None: none configured), logged.
pub async fn on_hangup(id: u64, raft: Addr<RaftActor>, path: Option<&Path>, qos: Option<&Path>) {
    if let Some(q) = qos {
        match reload_file(id, raft.clone(), q, true).await {
            Ok(r) => tracing::info!("QoS policy file {}: {r:?}", q.display()),
            Err(e) => tracing::error!("E_NODE_POLICY_RELOAD: {e}; the QoS policy in force is kept"),
        }
    }
    let Some(path) = path else {
        tracing::info!("SIGHUP: no partitions file is configured; nothing to reload");
        return;
    };
    tracing::info!("SIGHUP: reading partitions from {}", path.display());
    match reload_file(id, raft, path, false).await {
        Ok(Reloaded::Unchanged { version }) => tracing::info!(
            "partitions file {} equals the policy in force (version {version}); nothing proposed",
            path.display()
        ),
        Ok(Reloaded::Applied { version, index }) => tracing::info!(
            "partitions reloaded from {}: policy version {version} committed at index {index}",
            path.display()
        ),
        Err(e) => tracing::error!("E_NODE_POLICY_RELOAD: {e}; the policy in force is kept"),
    }
}
