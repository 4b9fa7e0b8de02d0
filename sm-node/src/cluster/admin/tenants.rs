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
use partitions::tenants::{self, Compiled, Mode};
use proto::admin::*;
use proto::state::{self, Command, Tenants, command::Kind};
use replica::ReplicatedState;
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tonic::{Request, Response, Status};

/// Attempts of a write without `expected_version` that races with another write.
const WRITE_ATTEMPTS: usize = 3;

/// What the tenant reads need from the state, cloned out of the Raft actor when the cache
/// misses.
struct View {
    tenants: Tenants,
    operator: Option<String>,
    policy_version: u64,
    topology: state::Topology,
    sm_port_guid: Option<u64>,
    sm_ports: std::collections::BTreeSet<Guid>,
}

impl View {
    fn of(st: &ReplicatedState) -> View {
        let p = st.policy();
        View {
            tenants: st.tenants().clone(),
            operator: (p.version > 0).then(|| p.text.clone()),
            policy_version: p.version,
            topology: st.topology().clone(),
            sm_port_guid: st.master().map(|m| m.sm_port_guid),
            sm_ports: st.sm_ports(),
        }
    }
}

/// Everything derived from a [`View`]: computed once per distinct view, shared by every read
/// (a fabric's agents poll GetTenantAssignment; each answer is lookups, not a compile).
struct Derived {
    view: View,
    compiled: Compiled,
    effective: Option<String>,
    policy: Policy,
    ends: HashMap<u64, EndPort>,
}

/// A fingerprint of the inputs of [`Derived`], cheap enough to take in the Raft actor on every
/// read (no clone; a hash over the tenant set, the policy text and the topology's GUIDs,
/// descriptions and links).
fn fingerprint(st: &ReplicatedState) -> u64 {
    let mut h = DefaultHasher::new();
    let t = st.tenants();
    t.version.hash(&mut h);
    for x in &t.tenants {
        (&x.name, x.pkey, &x.storage, x.ipoib, x.default_full).hash(&mut h);
        for m in &x.members {
            hash_member(m, &mut h);
        }
        for l in &x.rdma {
            (&l.device, l.hca_handle, l.hca_object).hash(&mut h);
        }
    }
    for x in &t.storage {
        (&x.name, x.pkey, x.ipoib).hash(&mut h);
        for m in &x.servers {
            hash_member(m, &mut h);
        }
    }
    (st.policy().version, &st.policy().text).hash(&mut h);
    st.master().map(|m| m.sm_port_guid).hash(&mut h);
    for r in &st.config().replicas {
        r.port_guid.hash(&mut h);
    }
    let topo = st.topology();
    for n in &topo.nodes {
        (n.node_guid, n.node_type, &n.description, &n.port_guids).hash(&mut h);
    }
    for l in &topo.links {
        (l.a_node, l.a_port, l.b_node, l.b_port).hash(&mut h);
    }
    h.finish()
}

fn hash_member(m: &state::TenantMember, h: &mut DefaultHasher) {
    match &m.kind {
        Some(state::tenant_member::Kind::PortGuid(g)) => (1u8, *g).hash(h),
        Some(state::tenant_member::Kind::NodeDescription(d)) => (2u8, d).hash(h),
        None => 0u8.hash(h),
    }
}

/// The last derived view of this process.
static CACHE: Mutex<Option<(u64, Arc<Derived>)>> = Mutex::new(None);

fn cached(key: u64) -> Option<Arc<Derived>> {
    let c = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    c.as_ref()
        .filter(|(k, _)| *k == key)
        .map(|(_, d)| d.clone())
}

fn derive(view: View) -> Result<Derived, String> {
    let compiled = replica::tenants::compile_on(
        &view.tenants,
        view.operator.as_deref(),
        &view.topology,
        &view.sm_ports,
        Mode::Lenient,
    )
    .map_err(|e| e.to_string())?;
    let effective = if replica::tenants::is_empty(&view.tenants) {
        view.operator.clone()
    } else {
        Some(compiled.text.clone())
    };
    let options = partitions::Options {
        sm_port_guid: view.sm_port_guid.map(Guid),
        ..partitions::Options::default()
    };
    let policy = match &effective {
        Some(t) => partitions::load(t, options).map_err(|e| e.to_string())?,
        None => Policy::no_file(options),
    };
    let mut ends = HashMap::new();
    for n in &view.topology.nodes {
        let Some(node_type) = u8::try_from(n.node_type).ok().and_then(NodeType::from_wire) else {
            continue;
        };
        for (i, g) in n.port_guids.iter().enumerate() {
            if let Ok(port) = u8::try_from(i + 1) {
                ends.insert(
                    *g,
                    EndPort {
                        node_guid: Guid(n.node_guid),
                        port_guid: Guid(*g),
                        port,
                        node_type,
                    },
                );
            }
        }
    }
    Ok(Derived {
        view,
        compiled,
        effective,
        policy,
        ends,
    })
}

/// ListTenants from a derived view.
fn list(d: &Derived) -> ListTenantsReply {
    let c = &d.compiled;
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
    ListTenantsReply {
        tenants: Some(d.view.tenants.clone()),
        resolved,
        warnings: c
            .warnings
            .iter()
            .map(|w| format!("{} {}", w.code, w.message))
            .collect(),
        effective_policy: d.effective.clone().unwrap_or_default(),
    }
}

/// GetTenantAssignment from a derived view.
fn assignment(
    d: &Derived,
    r: &GetTenantAssignmentRequest,
) -> Result<GetTenantAssignmentReply, Status> {
    let c = &d.compiled;
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
        let ep = d.ends.get(&g).copied();
        let mut pkeys = Vec::new();
        if let Some(ep) = ep {
            let m = d.policy.resolve_port(ep);
            for (i, h) in m.held.iter().enumerate() {
                let base = d.policy.partitions[i].pkey;
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
        .and_then(|t| d.view.tenants.tenants.iter().find(|x| x.name == t.name))
        .map(|t| t.rdma.clone())
        .unwrap_or_default();
    Ok(GetTenantAssignmentReply {
        tenant: tenant.map(|t| t.name.clone()).unwrap_or_default(),
        pkey: tenant.map_or(0, |t| u32::from(t.pkey)),
        rdma,
        ports,
        tenants_version: d.view.tenants.version,
        policy_version: d.view.policy_version,
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

/// Compiles `new` strictly against the view (what apply will check); the warnings.
fn precheck(view: &View, new: &Tenants) -> Result<Vec<String>, Status> {
    let c = replica::tenants::compile_on(
        new,
        view.operator.as_deref(),
        &view.topology,
        &view.sm_ports,
        Mode::Strict,
    )
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
            let view = self.read(|v| View::of(v.state)).await?;
            let cur = view.tenants.clone();
            let checked = match changed(&cur, &change) {
                Ok(new) => tokio::task::spawn_blocking(move || {
                    let w = precheck(&view, &new)?;
                    Ok::<_, Status>((new, w))
                })
                .await
                .map_err(|e| Status::internal(format!("E_NODE_TENANTS: {e}")))?,
                Err(e) => Err(e),
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
            .map_err(|e| Status::internal(format!("E_NODE_TENANTS: {e}")))?;
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
            let mut c = self
                .must_forward(&req, "no leader with a valid lease for a linearizable read")
                .await?;
            return c.list_tenants(forwarded(&req, *req.get_ref())).await;
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
            let mut c = self
                .must_forward(&req, "no leader with a valid lease for a linearizable read")
                .await?;
            return c
                .get_tenant_assignment(forwarded(&req, req.get_ref().clone()))
                .await;
        }
        let r = req.into_inner();
        Ok(Response::new(assignment(&*self.derived().await?, &r)?))
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
            let mut c = self.must_forward(&req, "no leader").await?;
            let r = req.get_ref().clone();
            return c.set_tenant(super::forwarded(&req, r)).await;
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
            let mut c = self.must_forward(&req, "no leader").await?;
            let r = req.get_ref().clone();
            return c.delete_tenant(super::forwarded(&req, r)).await;
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabric::{NodeType, PortRef, Topology};
    use proto::state::{StoragePartition, Tenant, TenantMember, tenant_member};

    fn member(g: u64) -> TenantMember {
        TenantMember {
            kind: Some(tenant_member::Kind::PortGuid(g)),
        }
    }

    /// Hosts h0..h3 on one switch (port GUID 0x100001 + 3*i); storage h0, red h1, blue h2.
    fn state() -> ReplicatedState {
        let mut t = Topology::new();
        let sw = t
            .add_node(NodeType::Switch, 8, Guid(0x200000), "sw")
            .unwrap();
        for i in 0..4u64 {
            let h = t
                .add_node(NodeType::Ca, 1, Guid(0x100000 + 3 * i), format!("h{i}"))
                .unwrap();
            t.connect(PortRef::new(sw, i as u8 + 1), PortRef::new(h, 1))
                .unwrap();
        }
        let tenants = Tenants {
            tenants: vec![
                Tenant {
                    name: "red".into(),
                    pkey: 0x101,
                    members: vec![member(0x100004)],
                    storage: vec!["nfs".into()],
                    rdma: vec![state::RdmaLimit {
                        device: "mlx5_0".into(),
                        hca_handle: Some(2),
                        hca_object: None,
                    }],
                    ..Default::default()
                },
                Tenant {
                    name: "blue".into(),
                    pkey: 0x102,
                    members: vec![member(0x100007)],
                    ..Default::default()
                },
            ],
            storage: vec![StoragePartition {
                name: "nfs".into(),
                pkey: 0x200,
                servers: vec![member(0x100001)],
                ipoib: false,
            }],
            version: 0,
        };
        let mut st = ReplicatedState::new();
        let cmds = [
            Kind::ApplyPolicy(state::ApplyPolicy {
                text: "Default=0x7fff : ALL=full ;\n".into(),
                expected_version: 0,
            }),
            Kind::SetTopology(replica::topology_to_proto(&t)),
            Kind::SetTenants(tenants),
        ];
        for (i, k) in cmds.into_iter().enumerate() {
            let o = st.apply(
                i as u64 + 1,
                1,
                &Command {
                    request_id: 0,
                    kind: Some(k),
                },
            );
            assert!(o.is_accepted(), "{:?}", o.result);
        }
        st
    }

    #[test]
    fn assignment_gives_tenant_limits_and_intended_keys() {
        let st = state();
        let d = derive(View::of(&st)).unwrap();
        let a = assignment(
            &d,
            &GetTenantAssignmentRequest {
                port_guids: vec![0x100004, 0xdead],
                linearizable: false,
            },
        )
        .unwrap();
        assert_eq!((a.tenant.as_str(), a.pkey), ("red", 0x101));
        assert_eq!(a.rdma.len(), 1);
        assert_eq!(a.ports[0].pkeys, vec![0x0200, 0x7fff, 0x8101]);
        assert!(a.ports[0].known && !a.ports[1].known);
        let e = assignment(
            &d,
            &GetTenantAssignmentRequest {
                port_guids: vec![0x100004, 0x100007],
                linearizable: false,
            },
        )
        .unwrap_err();
        assert!(e.message().contains("E_NODE_TENANT_SPLIT"), "{e:?}");
        // An outsider: full Default as the operator wrote.
        let a = assignment(
            &d,
            &GetTenantAssignmentRequest {
                port_guids: vec![0x10000a],
                linearizable: false,
            },
        )
        .unwrap();
        assert_eq!(
            (a.tenant.as_str(), a.ports[0].pkeys.clone()),
            ("", vec![0xffff])
        );
        let l = list(&d);
        assert_eq!(l.resolved.len(), 3);
        assert!(l.effective_policy.contains("red=0x0101"));
    }

    #[test]
    fn fingerprint_follows_every_input() {
        let st = state();
        let k = fingerprint(&st);
        assert_eq!(k, fingerprint(&state()));
        let mut st2 = state();
        let o = st2.apply(
            10,
            1,
            &Command {
                request_id: 0,
                kind: Some(Kind::ApplyPolicy(state::ApplyPolicy {
                    text: "Default=0x7fff : ALL=limited ;\n".into(),
                    expected_version: 1,
                })),
            },
        );
        assert!(o.is_accepted());
        assert_ne!(k, fingerprint(&st2));
    }

    #[test]
    fn changes_replace_add_and_delete_by_name() {
        let cur = state().tenants().clone();
        let t = Tenant {
            name: "blue".into(),
            pkey: 0x105,
            ..Default::default()
        };
        let n = changed(&cur, &Change::Set(Some(t), vec![])).unwrap();
        assert_eq!(n.tenants.len(), 2);
        assert_eq!(n.tenants[1].pkey, 0x105);
        let n = changed(
            &cur,
            &Change::Delete {
                name: "nfs".into(),
                storage: true,
            },
        )
        .unwrap();
        assert!(n.storage.is_empty());
        let e = changed(
            &cur,
            &Change::Delete {
                name: "nfs".into(),
                storage: false,
            },
        )
        .unwrap_err();
        assert_eq!(e.code(), tonic::Code::NotFound);
        // Deleting nfs while tenants use it does not compile.
        let n = changed(
            &cur,
            &Change::Delete {
                name: "nfs".into(),
                storage: true,
            },
        )
        .unwrap();
        let e = precheck(&View::of(&state()), &n).unwrap_err();
        assert!(e.message().contains("TENANT-E009"), "{e:?}");
    }
}
