//! One agent cycle: apply the tenant's limits, read usage, compare the P_Key view, and say so
//! in log lines with stable codes.

use crate::cgroup::{self, Applied, Usage};
use crate::drift::{self, Drift};
use crate::sysfs::{self, HostPort};
use crate::{AgentError, Roots};
use fabric::Guid;
use partitions::tenants::RdmaLimit;
use serde::Serialize;

/// Usage at or above this share of a limit is warned about (AGENT-W001).
pub const NEAR_LIMIT: f64 = 0.9;

/// The intent for one host port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortIntent {
    /// Port GUID.
    pub guid: Guid,
    /// Tenant of the port ("" = none).
    pub tenant: String,
    /// Intended P_Keys (membership bit included).
    pub pkeys: Vec<u16>,
    /// True when the SM knows the port (else there is no intent to compare with).
    pub known: bool,
}

/// A host's assignment.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Assignment {
    /// Tenant ("" = none).
    pub tenant: String,
    /// RDMA limits per device.
    pub limits: Vec<RdmaLimit>,
    /// Per port intent.
    pub ports: Vec<PortIntent>,
    /// Tenant set version it was computed from.
    pub tenants_version: u64,
}

impl From<proto::admin::GetTenantAssignmentReply> for Assignment {
    fn from(r: proto::admin::GetTenantAssignmentReply) -> Assignment {
        Assignment {
            tenant: r.tenant,
            limits: r
                .rdma
                .into_iter()
                .map(|l| RdmaLimit {
                    device: l.device,
                    hca_handle: l.hca_handle,
                    hca_object: l.hca_object,
                })
                .collect(),
            ports: r
                .ports
                .into_iter()
                .map(|p| PortIntent {
                    guid: Guid(p.port_guid),
                    tenant: p.tenant,
                    pkeys: p
                        .pkeys
                        .into_iter()
                        .filter_map(|k| u16::try_from(k).ok())
                        .collect(),
                    known: p.known,
                })
                .collect(),
            tenants_version: r.tenants_version,
        }
    }
}

/// Agent settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// Kernel tree roots.
    pub roots: Roots,
    /// Tenant cgroup path under the cgroup root; `{tenant}` is replaced by the tenant name.
    pub cgroup_path: String,
}

/// Usage of one device against its limits.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct UsageLine {
    /// The usage read.
    #[serde(flatten)]
    pub usage: Usage,
    /// hca_handle limit (None = max).
    pub hca_handle_max: Option<u32>,
    /// hca_object limit (None = max).
    pub hca_object_max: Option<u32>,
}

/// What a cycle did and found.
#[derive(Clone, Debug, PartialEq, Serialize, Default)]
pub struct Report {
    /// Tenant applied ("" = none).
    pub tenant: String,
    /// Tenant set version.
    pub tenants_version: u64,
    /// The rdma.max write (None: no tenant, or an error stopped it).
    pub applied: Option<Applied>,
    /// Usage per device (empty without a tenant cgroup).
    pub usage: Vec<UsageLine>,
    /// P_Key drift per port.
    pub drift: Vec<Drift>,
    /// Errors, each starting with its AGENT-Ennn code.
    pub errors: Vec<String>,
}

/// Severity of a log line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// Information.
    Info,
    /// Warning.
    Warn,
    /// Error.
    Error,
}

/// Runs one cycle for the host ports found in sysfs.
pub fn reconcile(cfg: &Config, ports: &[HostPort], a: &Assignment) -> Report {
    let mut r = Report {
        tenant: a.tenant.clone(),
        tenants_version: a.tenants_version,
        ..Report::default()
    };
    let tenants: std::collections::BTreeSet<&str> = a
        .ports
        .iter()
        .filter(|p| !p.tenant.is_empty())
        .map(|p| p.tenant.as_str())
        .collect();
    if tenants.len() > 1 {
        let e = AgentError::Assignment(format!(
            "the host's ports belong to several tenants ({}): no limits applied",
            tenants.into_iter().collect::<Vec<_>>().join(", ")
        ));
        r.errors.push(e.to_string());
    } else if !a.tenant.is_empty() {
        let dir = cgroup::cgroup_dir(&cfg.roots, &cfg.cgroup_path, &a.tenant);
        match cgroup::apply_limits(&cfg.roots, &dir, &a.limits) {
            Ok(applied) => r.applied = Some(applied),
            Err(e) => r.errors.push(e.to_string()),
        }
        match cgroup::read_usage(&dir) {
            Ok(usage) => {
                r.usage = usage
                    .into_iter()
                    .map(|u| {
                        let l = a.limits.iter().find(|l| l.device == u.device);
                        UsageLine {
                            hca_handle_max: l.and_then(|l| l.hca_handle),
                            hca_object_max: l.and_then(|l| l.hca_object),
                            usage: u,
                        }
                    })
                    .collect()
            }
            Err(e) => r.errors.push(e.to_string()),
        }
    }
    for hp in ports {
        let Some(intent) = a.ports.iter().find(|p| p.guid == hp.guid && p.known) else {
            continue;
        };
        match sysfs::pkey_view(&hp.dir) {
            Ok(view) => {
                if let Some(d) = drift::compare(hp.guid, &hp.device, hp.port, &view, &intent.pkeys)
                {
                    r.drift.push(d);
                }
            }
            Err(e) => r.errors.push(e.to_string()),
        }
    }
    r
}

fn near(used: u64, max: Option<u32>) -> bool {
    max.is_some_and(|m| used as f64 >= NEAR_LIMIT * f64::from(m))
}

fn keys(v: &[fabric::PKey]) -> String {
    v.iter()
        .map(|k| format!("{:#06x}", k.0))
        .collect::<Vec<_>>()
        .join(",")
}

impl Report {
    /// The cycle as log lines, each starting with its stable code.
    pub fn log_lines(&self) -> Vec<(Level, String)> {
        let mut out = Vec::new();
        if let Some(a) = &self.applied {
            if a.written.is_empty() {
                out.push((
                    Level::Info,
                    format!(
                        "AGENT-I001 tenant '{}' (tenants v{}): {} already holds the limits",
                        self.tenant,
                        self.tenants_version,
                        a.path.display()
                    ),
                ));
            } else {
                out.push((
                    Level::Info,
                    format!(
                        "AGENT-I002 tenant '{}' (tenants v{}): wrote {}: {}",
                        self.tenant,
                        self.tenants_version,
                        a.path.display(),
                        a.written.join(" | ")
                    ),
                ));
            }
        }
        for u in &self.usage {
            let lim = |m: Option<u32>| m.map_or_else(|| "max".to_string(), |v| v.to_string());
            let line = format!(
                "{} hca_handle={}/{} hca_object={}/{}",
                u.usage.device,
                u.usage.hca_handle,
                lim(u.hca_handle_max),
                u.usage.hca_object,
                lim(u.hca_object_max)
            );
            if near(u.usage.hca_handle, u.hca_handle_max)
                || near(u.usage.hca_object, u.hca_object_max)
            {
                out.push((
                    Level::Warn,
                    format!(
                        "AGENT-W001 tenant '{}' usage near its limit: {line}",
                        self.tenant
                    ),
                ));
            } else {
                out.push((
                    Level::Info,
                    format!("AGENT-I003 tenant '{}' usage: {line}", self.tenant),
                ));
            }
        }
        for d in &self.drift {
            out.push((
                if d.widens() { Level::Error } else { Level::Warn },
                format!(
                    "AGENT-W002 P_Key drift on {} port {} ({:#018x}): missing [{}] extra [{}]{}",
                    d.device,
                    d.port_num,
                    d.port.0,
                    keys(&d.missing),
                    keys(&d.extra),
                    if d.widens() {
                        " -- the port holds a full key it should not: it can reach more than intended"
                    } else {
                        ""
                    }
                ),
            ));
        }
        for e in &self.errors {
            out.push((Level::Error, e.clone()));
        }
        out
    }
}
