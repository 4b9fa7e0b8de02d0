//! Tenant RPCs of `SmAdmin` (issue 12): ListTenants, SetTenant, DeleteTenant (admin role,
//! proposed as a whole-set compare-and-set `SetTenants` command, forwarded to the leader like
//! the other writes) and GetTenantAssignment (what a host agent applies).
//!
//! Reads answer from this replica's applied state, or at the leader when `linearizable` asks
//! for it. Writes read the set in force, change it, check locally that it compiles (a refused
//! set never reaches the log) and propose it with the version read; without an
//! `expected_version` a race with another write is retried (3 attempts).
//!
//! Status codes: INVALID_ARGUMENT with the `TENANT-Ennn` code for a set that does not compile,
//! FAILED_PRECONDITION (`REPL-E201`) for a stale `expected_version`, NOT_FOUND for a delete of
//! an unknown name.

use super::{AdminService, forwarded};
use fabric::{Guid, Membership, NodeType, PKey};
use partitions::policy::{EndPort, Policy};
use partitions::tenants::{self, Mode};
use proto::admin::*;
use proto::state::{self, Command, Tenants, command::Kind};
use replica::ReplicatedState;
use replica::tenants::tenant_set_from_proto;
use std::time::Duration;
use tonic::{Request, Response, Status};

/// Attempts of a write without `expected_version` that races with another write.
const WRITE_ATTEMPTS: usize = 3;

/// ListTenants from a state.
pub fn list(st: &ReplicatedState) -> Result<ListTenantsReply, Status> {
    let c = st
        .compiled_tenants()
        .map_err(|e| Status::internal(format!("E_NODE_TENANTS: {e}")))?;
    let mut resolved: Vec<ResolvedTenant> = c
        .tenants
        .iter()
        .map(|t| ResolvedTenant {
            name: t.name.clone(),
            pkey: u32::from(t.pkey),
            kind: "tenant".into(),
            ports: t.ports.iter().map(|g| g.0).collect(),
        })
        .collect();
    resolved.extend(c.storage.iter().map(|s| ResolvedTenant {
        name: s.name.clone(),
        pkey: u32::from(s.pkey),
        kind: "storage".into(),
        ports: s.servers.iter().map(|g| g.0).collect(),
    }));
    Ok(ListTenantsReply {
        tenants: Some(st.tenants().clone()),
        resolved,
        warnings: c
            .warnings
            .iter()
            .map(|w| format!("{} {}", w.code, w.message))
            .collect(),
        effective_policy: st
            .effective_policy_text()
            .map_err(|e| Status::internal(format!("E_NODE_TENANTS: {e}")))?
            .unwrap_or_default(),
    })
}

/// The end port of a port GUID in the replicated topology.
fn end_port(st: &ReplicatedState, g: u64) -> Option<EndPort> {
    st.topology().nodes.iter().find_map(|n| {
        let i = n.port_guids.iter().position(|p| *p == g)?;
        Some(EndPort {
            node_guid: Guid(n.node_guid),
            port_guid: Guid(g),
            port: u8::try_from(i + 1).ok()?,
            node_type: u8::try_from(n.node_type)
                .ok()
                .and_then(NodeType::from_wire)?,
        })
    })
}

/// GetTenantAssignment from a state.
pub fn assignment(
    st: &ReplicatedState,
    r: &GetTenantAssignmentRequest,
) -> Result<GetTenantAssignmentReply, Status> {
    let internal = |e: String| Status::internal(format!("E_NODE_TENANTS: {e}"));
    let c = st.compiled_tenants().map_err(internal)?;
    let text = st.effective_policy_text().map_err(internal)?;
    let options = partitions::Options {
        sm_port_guid: st.master().map(|m| Guid(m.sm_port_guid)),
        ..partitions::Options::default()
    };
    let policy = match &text {
        Some(t) => partitions::load(t, options).map_err(|e| internal(e.to_string()))?,
        None => Policy::no_file(options),
    };
    let mut ports = Vec::with_capacity(r.port_guids.len());
    let mut tenant: Option<&tenants::ResolvedTenant> = None;
    for &g in &r.port_guids {
        let t = c.tenant_of(Guid(g));
        if let (Some(a), Some(b)) = (tenant, t)
            && a.name != b.name
        {
            return Err(Status::failed_precondition(format!(
                "E_NODE_TENANT_SPLIT: the host's ports belong to tenants '{}' and '{}'",
                a.name, b.name
            )));
        }
        tenant = tenant.or(t);
        let ep = end_port(st, g);
        let mut pkeys = Vec::new();
        if let Some(ep) = ep {
            let m = policy.resolve_port(ep);
            for (i, h) in m.held.iter().enumerate() {
                let base = policy.partitions[i].pkey;
                if h.full {
                    pkeys.push(u32::from(PKey::new(base, Membership::Full).0));
                }
                if h.limited {
                    pkeys.push(u32::from(PKey::new(base, Membership::Limited).0));
                }
            }
            pkeys.sort_unstable();
        }
        ports.push(PortAssignment {
            port_guid: g,
            tenant: t.map(|t| t.name.clone()).unwrap_or_default(),
            pkeys,
            known: ep.is_some(),
        });
    }
    let rdma = tenant
        .and_then(|t| st.tenants().tenants.iter().find(|x| x.name == t.name))
        .map(|t| t.rdma.clone())
        .unwrap_or_default();
    Ok(GetTenantAssignmentReply {
        tenant: tenant.map(|t| t.name.clone()).unwrap_or_default(),
        pkey: tenant.map_or(0, |t| u32::from(t.pkey)),
        rdma,
        ports,
        tenants_version: st.tenants().version,
        policy_version: st.policy().version,
    })
}

/// A change of the tenant set.
enum Change {
    Set(Option<state::Tenant>, Vec<state::StoragePartition>),
    Delete { name: String, storage: bool },
}

/// Applies `change` to `cur`; the new set (version = the one read) or a status.
fn changed(cur: &Tenants, change: &Change) -> Result<Tenants, Status> {
    let mut new = cur.clone();
    match change {
        Change::Set(t, storage) => {
            if let Some(t) = t {
                match new.tenants.iter_mut().find(|x| x.name == t.name) {
                    Some(x) => *x = t.clone(),
                    None => new.tenants.push(t.clone()),
                }
            }
            for s in storage {
                match new.storage.iter_mut().find(|x| x.name == s.name) {
                    Some(x) => *x = s.clone(),
                    None => new.storage.push(s.clone()),
                }
            }
        }
        Change::Delete { name, storage } => {
            let before = (new.tenants.len(), new.storage.len());
            if *storage {
                new.storage.retain(|s| &s.name != name);
            } else {
                new.tenants.retain(|t| &t.name != name);
            }
            if before == (new.tenants.len(), new.storage.len()) {
                return Err(Status::not_found(format!(
                    "E_NODE_TENANT_UNKNOWN: no {} named '{name}'",
                    if *storage {
                        "storage partition"
                    } else {
                        "tenant"
                    }
                )));
            }
        }
    }
    Ok(new)
}

/// Compiles `new` strictly against `st` (what apply will check) and returns the warnings.
fn precheck(st: &ReplicatedState, new: &Tenants) -> Result<Vec<String>, Status> {
    let set = tenant_set_from_proto(new)
        .map_err(|e| Status::invalid_argument(format!("REPL-E202: {e}")))?;
    let op = (st.policy().version > 0).then_some(st.policy().text.as_str());
    let c = tenants::compile(&set, op, st.port_directory().as_ref(), Mode::Strict)
        .map_err(|e| Status::invalid_argument(e.to_string()))?;
    Ok(c.warnings
        .iter()
        .map(|w| format!("{} {}", w.code, w.message))
        .collect())
}

fn refusal(code: &str, message: &str) -> Status {
    let msg = format!("{code}: {message}");
    if code == "REPL-E201" {
        Status::failed_precondition(format!(
            "{msg} (run `smctl tenants list` and retry with the version in force)"
        ))
    } else if code.starts_with("TENANT-E") || code == "REPL-E202" {
        Status::invalid_argument(message.to_string())
    } else {
        Status::internal(msg)
    }
}

impl AdminService {
    /// Reads, changes, prechecks and proposes; (version, index, warnings).
    async fn write_tenants(
        &self,
        change: Change,
        expected: Option<u64>,
        request_id: u64,
    ) -> Result<(u64, u64, Vec<String>), Status> {
        let attempts = if expected.is_some() {
            1
        } else {
            WRITE_ATTEMPTS
        };
        let mut last = Status::internal("E_NODE_TENANTS: no attempt");
        for attempt in 0..attempts {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            let (cur, checked) = {
                let change = match &change {
                    Change::Set(t, s) => Change::Set(t.clone(), s.clone()),
                    Change::Delete { name, storage } => Change::Delete {
                        name: name.clone(),
                        storage: *storage,
                    },
                };
                self.read(move |v| {
                    let cur = v.state.tenants().clone();
                    let checked = changed(&cur, &change).and_then(|mut new| {
                        new.version = cur.version;
                        let w = precheck(v.state, &new)?;
                        Ok((new, w))
                    });
                    (cur, checked)
                })
                .await?
            };
            if let Some(e) = expected
                && e != cur.version
            {
                return Err(refusal(
                    "REPL-E201",
                    &format!(
                        "stale tenants version: expected {e}, current is {}",
                        cur.version
                    ),
                ));
            }
            let (new, warnings) = checked?;
            let cmd = Command {
                request_id,
                kind: Some(Kind::SetTenants(new)),
            };
            let a = self.propose(cmd).await?;
            if a.accepted {
                // Compare-and-set at cur.version: the new set is the next version.
                return Ok((cur.version + 1, a.index, warnings));
            }
            last = refusal(&a.code, &a.message);
            if a.code != "REPL-E201" {
                break;
            }
        }
        Err(last)
    }

    /// True when a read must be answered by the leader.
    async fn tenant_read_at_leader(&self, linearizable: bool) -> Result<bool, Status> {
        self.needs_leader(linearizable).await
    }

    pub(super) async fn list_tenants_impl(
        &self,
        req: Request<ListTenantsRequest>,
    ) -> Result<Response<ListTenantsReply>, Status> {
        self.auth.read(&req)?;
        if self
            .tenant_read_at_leader(req.get_ref().linearizable)
            .await?
        {
            let mut c = self
                .must_forward(&req, "no leader with a valid lease for a linearizable read")
                .await?;
            return c.list_tenants(forwarded(&req, *req.get_ref())).await;
        }
        Ok(Response::new(self.read(|v| list(v.state)).await??))
    }

    pub(super) async fn get_tenant_assignment_impl(
        &self,
        req: Request<GetTenantAssignmentRequest>,
    ) -> Result<Response<GetTenantAssignmentReply>, Status> {
        self.auth.read(&req)?;
        if self
            .tenant_read_at_leader(req.get_ref().linearizable)
            .await?
        {
            let mut c = self
                .must_forward(&req, "no leader with a valid lease for a linearizable read")
                .await?;
            return c
                .get_tenant_assignment(forwarded(&req, req.get_ref().clone()))
                .await;
        }
        let r = req.into_inner();
        Ok(Response::new(
            self.read(move |v| assignment(v.state, &r)).await??,
        ))
    }

    pub(super) async fn set_tenant_impl(
        &self,
        req: Request<SetTenantRequest>,
    ) -> Result<Response<SetTenantReply>, Status> {
        self.auth.admin(&req, "SetTenant")?;
        let r = req.into_inner();
        if r.tenant.is_none() && r.storage.is_empty() {
            return Err(Status::invalid_argument(
                "E_NODE_TENANT_EMPTY: neither a tenant nor a storage partition given",
            ));
        }
        let (version, index, warnings) = self
            .write_tenants(
                Change::Set(r.tenant, r.storage),
                r.expected_version,
                r.request_id,
            )
            .await?;
        Ok(Response::new(SetTenantReply {
            version,
            index,
            warnings,
        }))
    }

    pub(super) async fn delete_tenant_impl(
        &self,
        req: Request<DeleteTenantRequest>,
    ) -> Result<Response<DeleteTenantReply>, Status> {
        self.auth.admin(&req, "DeleteTenant")?;
        let r = req.into_inner();
        let (version, index, _) = self
            .write_tenants(
                Change::Delete {
                    name: r.name,
                    storage: r.storage,
                },
                r.expected_version,
                r.request_id,
            )
            .await?;
        Ok(Response::new(DeleteTenantReply { version, index }))
    }
}
