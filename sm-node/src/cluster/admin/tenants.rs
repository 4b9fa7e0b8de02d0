//! Tenant RPCs of `SmAdmin` (issue 12): ListTenants, SetTenant, DeleteTenant (admin role,
//! proposed as a whole-set compare-and-set `SetTenants` command, forwarded to the leader like
//! the other writes) and GetTenantAssignment (what a host agent applies). What they compute
//! is `replica::admin::tenants`; this is where it runs, the process's cache of the derived
//! view, the proposal and its retries.
//!
//! Reads answer from this replica's applied state, or at the leader when `linearizable` asks
//! for it. Writes read the set in force, change it, check locally that it compiles (a refused
//! set never reaches the log) and propose it with the version read; without an
//! `expected_version` a race with another write is retried (3 attempts).
//!
//! Status codes: INVALID_ARGUMENT with the `TENANT-Ennn` code for a set that does not compile
//! and `E_ADMIN_LIMIT` for a set over `MAX_TENANTS` / `MAX_TENANT_SET_BYTES`,
//! FAILED_PRECONDITION (`REPL-E201`) for a stale `expected_version`, NOT_FOUND for a delete of
//! an unknown name, ABORTED `E_NODE_COMMIT_UNKNOWN` for a write whose outcome did not come
//! back (never retried: it may have been committed) (see [`super::errors`]).

use super::errors::{
    admin_status, forwarded_read_failure, forwarded_write_failure, tenant_refusal,
};
use super::{AdminService, forwarded};
use proto::admin::*;
use proto::state::{Command, command::Kind};
use replica::admin::tenants::{
    Change, Derived, View, assignment, changed, derive, fingerprint, list, precheck,
};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tonic::{Request, Response, Status};

/// Attempts of a write without `expected_version` that races with another write.
const WRITE_ATTEMPTS: usize = 3;

/// The last derived view of this process.
static CACHE: Mutex<Option<(u64, Arc<Derived>)>> = Mutex::new(None);

fn cached(key: u64) -> Option<Arc<Derived>> {
    let c = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    c.as_ref()
        .filter(|(k, _)| *k == key)
        .map(|(_, d)| d.clone())
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
            let view = self.read(|v| View::of(v.state)).await?;
            let cur = view.tenants().clone();
            let checked = match changed(&cur, &change) {
                Ok((new, notes)) => tokio::task::spawn_blocking(move || {
                    let w = precheck(&view, &new).map_err(admin_status)?;
                    Ok::<_, Status>((new, [notes, w].concat()))
                })
                .await
                .map_err(|e| Status::internal(format!("E_NODE_TENANTS: {e}")))?,
                Err(e) => Err(admin_status(e)),
            };
            if let Some(e) = expected
                && e != cur.version
            {
                return Err(tenant_refusal(
                    "REPL-E201",
                    &format!(
                        "stale tenants version: expected {e}, current is {}",
                        cur.version
                    ),
                ));
            }
            let (new, warnings) = checked?;
            if new == cur && matches!(change, Change::Guids(_)) {
                return Ok((cur.version, 0, warnings)); // nothing to change: nothing proposed
            }
            let cmd = Command {
                request_id,
                kind: Some(Kind::SetTenants(new)),
            };
            let a = self.propose(cmd).await?;
            if a.accepted {
                // Compare-and-set at cur.version: the new set is the next version.
                return Ok((cur.version + 1, a.index, warnings));
            }
            last = tenant_refusal(&a.code, &a.message);
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

    /// The derived view of this replica's applied state: from the cache when its fingerprint
    /// matches, else cloned out of the Raft actor and derived on a blocking thread.
    async fn derived(&self) -> Result<Arc<Derived>, Status> {
        let (key, hit) = self
            .read(|v| {
                let key = fingerprint(v.state);
                match cached(key) {
                    Some(d) => (key, Ok(d)),
                    None => (key, Err(View::of(v.state))),
                }
            })
            .await?;
        let view = match hit {
            Ok(d) => return Ok(d),
            Err(view) => view,
        };
        let d = tokio::task::spawn_blocking(move || derive(view))
            .await
            .map_err(|e| Status::internal(format!("E_NODE_TENANTS: {e}")))?
            .map_err(admin_status)?;
        let d = Arc::new(d);
        *CACHE.lock().unwrap_or_else(|p| p.into_inner()) = Some((key, d.clone()));
        Ok(d)
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
            let (mut c, addr) = self
                .must_forward(&req, "no leader with a valid lease for a linearizable read")
                .await?;
            return c
                .list_tenants(forwarded(&req, *req.get_ref()))
                .await
                .map_err(|s| forwarded_read_failure(s, &addr));
        }
        Ok(Response::new(list(&*self.derived().await?)))
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
            let (mut c, addr) = self
                .must_forward(&req, "no leader with a valid lease for a linearizable read")
                .await?;
            return c
                .get_tenant_assignment(forwarded(&req, req.get_ref().clone()))
                .await
                .map_err(|s| forwarded_read_failure(s, &addr));
        }
        let r = req.into_inner();
        let d = self.derived().await?;
        Ok(Response::new(assignment(&d, &r).map_err(admin_status)?))
    }

    pub(super) async fn set_tenant_impl(
        &self,
        req: Request<SetTenantRequest>,
    ) -> Result<Response<SetTenantReply>, Status> {
        self.auth.admin(&req, "SetTenant")?;
        if req.get_ref().tenant.is_none() && req.get_ref().storage.is_empty() {
            return Err(Status::invalid_argument(
                "E_NODE_TENANT_EMPTY: neither a tenant nor a storage partition given",
            ));
        }
        // The tenant set is read, changed and proposed at the leader (after a ReadIndex
        // round): a follower's applied state may lag behind a write it just forwarded.
        if self.needs_leader(true).await? {
            let (mut c, addr) = self.leader_for_write(&req).await?;
            let r = req.get_ref().clone();
            return c
                .set_tenant(super::forwarded(&req, r))
                .await
                .map_err(|s| forwarded_write_failure(s, &addr));
        }
        let r = req.into_inner();
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
        if self.needs_leader(true).await? {
            let (mut c, addr) = self.leader_for_write(&req).await?;
            let r = req.get_ref().clone();
            return c
                .delete_tenant(super::forwarded(&req, r))
                .await
                .map_err(|s| forwarded_write_failure(s, &addr));
        }
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

    pub(super) async fn change_guids_impl(
        &self,
        req: Request<ChangeGuidsRequest>,
    ) -> Result<Response<ChangeGuidsReply>, Status> {
        self.auth.admin(&req, "ChangeGuids")?;
        if self.needs_leader(true).await? {
            let (mut c, addr) = self.leader_for_write(&req).await?;
            let r = req.get_ref().clone();
            return c
                .change_guids(super::forwarded(&req, r))
                .await
                .map_err(|s| forwarded_write_failure(s, &addr));
        }
        let r = req.into_inner();
        let (expected, id) = (r.expected_version, r.request_id);
        let (version, index, warnings) = self.write_tenants(Change::Guids(r), expected, id).await?;
        Ok(Response::new(ChangeGuidsReply {
            version,
            index,
            warnings,
        }))
    }
}
