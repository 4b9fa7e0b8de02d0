//! The tenant reads and writes of the admin API (issue 12) as pure functions over the
//! replicated state: ListTenants and GetTenantAssignment from a [`Derived`] view (the tenant
//! set compiled with the operator's policy on the recorded topology, computed once per
//! distinct [`View`], keyed by its [`fingerprint`]), and SetTenant / DeleteTenant as a
//! [`Change`] applied to the set in force ([`changed`]) and checked the way apply will check
//! it ([`precheck`]). The daemon reads the state, caches, proposes and retries.
//!
//! Errors: [`AdminError::TenantSplit`] (a host whose ports belong to two tenants),
//! [`AdminError::TenantUnknown`] (a delete of an unknown name), [`AdminError::TenantsRefused`]
//! (a set that does not compile, with its `TENANT-Ennn` code), [`AdminError::Derive`].

use super::AdminError;
use crate::ReplicatedState;
use fabric::{Guid, Membership, NodeType, PKey};
use partitions::policy::{EndPort, Policy};
use partitions::tenants::{self, Compiled, Mode};
use proto::admin::*;
use proto::state::{self, Tenants};
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{DefaultHasher, Hash, Hasher};

/// Most tenants and storage partitions a tenant set holds (2,048): each is a partition of
/// the compiled policy (with the operator's, at most `partitions::MAX_PARTITIONS`), and every
/// write compiles the whole set on the topology.
pub const MAX_TENANTS: usize = 2048;

/// Largest tenant set, protobuf-encoded (1 MiB): the whole set is one log entry per write
/// and is kept in every replica's state.
pub const MAX_TENANT_SET_BYTES: usize = 1 << 20;

/// [`AdminError::Limit`] when `set` has more than [`MAX_TENANTS`] tenants and storage
/// partitions or encodes to more than [`MAX_TENANT_SET_BYTES`].
pub fn check_limits(set: &Tenants) -> Result<(), AdminError> {
    let n = set.tenants.len() + set.storage.len() + set.pkeys.len();
    if n > MAX_TENANTS {
        return Err(AdminError::Limit {
            what: "the tenant set (tenants, storage and API partitions)",
            size: n,
            limit: MAX_TENANTS,
            name: "MAX_TENANTS",
        });
    }
    let bytes = prost::Message::encoded_len(set);
    if bytes > MAX_TENANT_SET_BYTES {
        return Err(AdminError::Limit {
            what: "the tenant set, encoded (bytes)",
            size: bytes,
            limit: MAX_TENANT_SET_BYTES,
            name: "MAX_TENANT_SET_BYTES",
        });
    }
    Ok(())
}

/// What the tenant reads and writes need from the state, cloned out of it (the daemon does
/// so in its Raft actor when its cache misses).
pub struct View {
    tenants: Tenants,
    operator: Option<String>,
    policy_version: u64,
    topology: state::Topology,
    sm_port_guid: Option<u64>,
    sm_ports: BTreeSet<Guid>,
}

impl View {
    /// The view of `st`.
    pub fn of(st: &ReplicatedState) -> View {
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

    /// The tenant set in force.
    pub fn tenants(&self) -> &Tenants {
        &self.tenants
    }
}

/// Everything derived from a [`View`]: computed once per distinct view, shared by every read
/// (a fabric's agents poll GetTenantAssignment; each answer is lookups, not a compile).
pub struct Derived {
    view: View,
    compiled: Compiled,
    effective: Option<String>,
    policy: Policy,
    ends: BTreeMap<u64, EndPort>,
}

/// A fingerprint of the inputs of [`Derived`], cheap enough to take in the Raft actor on every
/// read (no clone; a hash over the tenant set, the policy text and the topology's GUIDs,
/// descriptions and links).
pub fn fingerprint(st: &ReplicatedState) -> u64 {
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
    for p in &t.pkeys {
        (p.pkey, &p.name, p.ipoib, p.index0).hash(&mut h);
        for m in &p.members {
            (m.guid, m.limited).hash(&mut h);
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

/// Compiles the view (lenient, as the master plans) and indexes its end ports.
pub fn derive(view: View) -> Result<Derived, AdminError> {
    let compiled = crate::tenants::compile_on(
        &view.tenants,
        view.operator.as_deref(),
        &view.topology,
        &view.sm_ports,
        Mode::Lenient,
    )
    .map_err(|e| AdminError::Derive(e.to_string()))?;
    let effective = if crate::tenants::is_empty(&view.tenants) {
        view.operator.clone()
    } else {
        Some(compiled.text.clone())
    };
    let options = partitions::Options {
        sm_port_guid: view.sm_port_guid.map(Guid),
        ..partitions::Options::default()
    };
    let policy = match &effective {
        Some(t) => partitions::load(t, options).map_err(|e| AdminError::Derive(e.to_string()))?,
        None => Policy::no_file(options),
    };
    let mut ends = BTreeMap::new();
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
pub fn list(d: &Derived) -> ListTenantsReply {
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
pub fn assignment(
    d: &Derived,
    r: &GetTenantAssignmentRequest,
) -> Result<GetTenantAssignmentReply, AdminError> {
    let c = &d.compiled;
    let mut ports = Vec::with_capacity(r.port_guids.len());
    let mut tenant: Option<&tenants::ResolvedTenant> = None;
    for &g in &r.port_guids {
        let t = c.tenant_of(Guid(g));
        if let (Some(a), Some(b)) = (tenant, t)
            && a.name != b.name
        {
            return Err(AdminError::TenantSplit {
                first: a.name.clone(),
                second: b.name.clone(),
            });
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
pub enum Change {
    /// ChangeGuids (issue 26): see [`super::guids::change_guids`].
    Guids(ChangeGuidsRequest),
    /// SetTenant: a tenant and storage partitions, each replacing the one of its name.
    Set(Option<state::Tenant>, Vec<state::StoragePartition>),
    /// DeleteTenant: the tenant (or, with `storage`, the storage partition) named.
    Delete {
        /// Its name.
        name: String,
        /// A storage partition, not a tenant.
        storage: bool,
    },
}

/// Applies `change` to `cur`; the new set (version = the one read) and notes for the reply
/// (GUIDs a ChangeGuids moved out of other tenants or partitions).
pub fn changed(cur: &Tenants, change: &Change) -> Result<(Tenants, Vec<String>), AdminError> {
    let mut new = cur.clone();
    match change {
        Change::Guids(r) => return super::guids::change_guids(cur, r),
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
                return Err(AdminError::TenantUnknown {
                    name: name.clone(),
                    storage: *storage,
                });
            }
        }
    }
    Ok((new, Vec::new()))
}

/// Compiles `new` strictly against the view (what apply will check); the warnings.
pub fn precheck(view: &View, new: &Tenants) -> Result<Vec<String>, AdminError> {
    check_limits(new)?;
    let c = crate::tenants::compile_on(
        new,
        view.operator.as_deref(),
        &view.topology,
        &view.sm_ports,
        Mode::Strict,
    )
    .map_err(AdminError::TenantsRefused)?;
    Ok(c.warnings
        .iter()
        .map(|w| format!("{} {}", w.code, w.message))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabric::{NodeType, PortRef, Topology};
    use proto::state::{
        Command, StoragePartition, Tenant, TenantMember, command::Kind, tenant_member,
    };

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
            pkeys: Vec::new(),
        };
        let mut st = ReplicatedState::new();
        let cmds = [
            Kind::ApplyPolicy(state::ApplyPolicy {
                text: "Default=0x7fff : ALL=full ;\n".into(),
                expected_version: 0,
            }),
            Kind::SetTopology(crate::topology_to_proto(&t)),
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
        assert!(e.to_string().starts_with("E_NODE_TENANT_SPLIT: "), "{e:?}");
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
        let (n, _) = changed(&cur, &Change::Set(Some(t), vec![])).unwrap();
        assert_eq!(n.tenants.len(), 2);
        assert_eq!(n.tenants[1].pkey, 0x105);
        let (n, _) = changed(
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
        assert_eq!(e.code(), "E_NODE_TENANT_UNKNOWN");
        assert_eq!(
            e.to_string(),
            "E_NODE_TENANT_UNKNOWN: no tenant named 'nfs'"
        );
        // Deleting nfs while tenants use it does not compile.
        let (n, _) = changed(
            &cur,
            &Change::Delete {
                name: "nfs".into(),
                storage: true,
            },
        )
        .unwrap();
        let e = precheck(&View::of(&state()), &n).unwrap_err();
        assert_eq!(e.code(), "TENANT-E009", "{e:?}");
    }

    #[test]
    fn sets_over_the_limits_are_refused_before_compiling() {
        let view = View::of(&state());
        let tenant = |i: usize| Tenant {
            name: format!("t{i}"),
            pkey: 0x1000 + i as u32,
            ..Default::default()
        };
        let mut set = Tenants {
            tenants: (0..=MAX_TENANTS).map(tenant).collect(),
            ..Default::default()
        };
        let e = precheck(&view, &set).unwrap_err();
        assert_eq!(e.code(), "E_ADMIN_LIMIT");
        assert!(e.to_string().contains("(MAX_TENANTS)"), "{e}");
        set.tenants.truncate(MAX_TENANTS);
        assert!(check_limits(&set).is_ok());
        // One tenant whose storage list alone is larger than the encoded limit.
        let mut big = tenant(0);
        big.storage = vec!["x".repeat(1024); MAX_TENANT_SET_BYTES / 1024 + 1];
        let set = Tenants {
            tenants: vec![big],
            ..Default::default()
        };
        let e = precheck(&view, &set).unwrap_err();
        assert!(e.to_string().contains("(MAX_TENANT_SET_BYTES)"), "{e}");
    }
}
