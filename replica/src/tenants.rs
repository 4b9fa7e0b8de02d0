//! Tenants in the replicated state: the SetTenants rule, conversions between the protobuf
//! form and [`partitions::tenants::TenantSet`], and the effective partition policy (tenants
//! compiled with the operator's partitions.conf) the master plans from.
//!
//! Rules (deterministic, every replica decides the same):
//! * SetTenants is a compare-and-set: `Tenants.version` in the command must equal the version
//!   in force, else REPL-E201.
//! * The set must convert (REPL-E202: a member without a kind, a PKey above 0xffff) and must
//!   compile in [`Mode::Strict`] with the operator policy in force and the recorded topology
//!   (TENANT-Ennn codes); otherwise it is refused and nothing changes.
//! * An ApplyPolicy whose text conflicts with the tenants in force (a tenant PKey or name the
//!   new file defines) is refused with the tenant code; unresolvable members do not refuse a
//!   policy (checked in [`Mode::Lenient`]).

use partitions::tenants::{
    self, ApiPartition, Compiled, MemberRef, Mode, PortDirectory, RdmaLimit, StoragePartition,
    Tenant, TenantSet,
};
use proto::state::{self as ps, Tenants, tenant_member};

use crate::apply::Effect;
use crate::convert::topology_from_proto;
use crate::error::ApplyError;
use crate::state::ReplicatedState;
use fabric::Guid;
use std::collections::BTreeSet;

/// The protobuf tenant set as the compiler's [`TenantSet`].
pub fn tenant_set_from_proto(t: &Tenants) -> Result<TenantSet, String> {
    let members = |owner: &str, v: &[ps::TenantMember]| -> Result<Vec<MemberRef>, String> {
        v.iter()
            .map(|m| match &m.kind {
                Some(tenant_member::Kind::PortGuid(g)) => Ok(MemberRef::Port(Guid(*g))),
                Some(tenant_member::Kind::NodeDescription(d)) => Ok(MemberRef::Node(d.clone())),
                None => Err(format!(
                    "'{owner}' has a member with neither GUID nor description"
                )),
            })
            .collect()
    };
    let pkey = |owner: &str, p: u32| -> Result<u16, String> {
        u16::try_from(p).map_err(|_| format!("'{owner}' has PKey {p:#x} (16 bits at most)"))
    };
    let mut set = TenantSet::default();
    for x in &t.tenants {
        set.tenants.push(Tenant {
            name: x.name.clone(),
            pkey: pkey(&x.name, x.pkey)?,
            members: members(&x.name, &x.members)?,
            storage: x.storage.clone(),
            rdma: x
                .rdma
                .iter()
                .map(|l| RdmaLimit {
                    device: l.device.clone(),
                    hca_handle: l.hca_handle,
                    hca_object: l.hca_object,
                })
                .collect(),
            ipoib: x.ipoib,
            default_full: x.default_full,
        });
    }
    for s in &t.storage {
        set.storage.push(StoragePartition {
            name: s.name.clone(),
            pkey: pkey(&s.name, s.pkey)?,
            servers: members(&s.name, &s.servers)?,
            ipoib: s.ipoib,
        });
    }
    Ok(set)
}

/// The API-managed partitions of a protobuf tenant set (a P_Key above 16 bits is refused;
/// a partition without a name gets [`ApiPartition::default_name`]).
pub fn api_partitions_from_proto(t: &Tenants) -> Result<Vec<ApiPartition>, String> {
    t.pkeys
        .iter()
        .map(|p| {
            let pkey = u16::try_from(p.pkey)
                .map_err(|_| format!("partition {:#x}: PKey above 16 bits", p.pkey))?;
            Ok(ApiPartition {
                pkey,
                name: if p.name.is_empty() {
                    ApiPartition::default_name(pkey)
                } else {
                    p.name.clone()
                },
                members: p
                    .members
                    .iter()
                    .map(|m| (Guid(m.guid), !m.limited))
                    .collect(),
                ipoib: p.ipoib,
                index0: p.index0,
            })
        })
        .collect()
}

/// The protobuf form of a member reference.
pub fn member_to_proto(m: &MemberRef) -> ps::TenantMember {
    ps::TenantMember {
        kind: Some(match m {
            MemberRef::Port(g) => tenant_member::Kind::PortGuid(g.0),
            MemberRef::Node(d) => tenant_member::Kind::NodeDescription(d.clone()),
        }),
    }
}

/// The port directory of a replicated topology (None when empty or when it does not convert).
pub fn directory_of(topology: &ps::Topology) -> Option<PortDirectory> {
    if topology.nodes.is_empty() {
        return None;
    }
    topology_from_proto(topology)
        .ok()
        .map(|t| PortDirectory::from_topology(&t))
}

/// True when the set defines no tenant, storage partition or API partition.
pub fn is_empty(t: &Tenants) -> bool {
    t.tenants.is_empty() && t.storage.is_empty() && t.pkeys.is_empty()
}

/// The SM ports of a cluster: every configured replica's port and the master's.
pub fn sm_ports_of(
    config: &ps::ClusterConfig,
    master: Option<&ps::MasterRecord>,
) -> BTreeSet<Guid> {
    config
        .replicas
        .iter()
        .map(|r| r.port_guid)
        .chain(master.map(|m| m.sm_port_guid))
        .filter(|g| *g != 0)
        .map(Guid)
        .collect()
}

/// Compiles a tenant set with an operator policy text on a replicated topology, refusing
/// (strict) or dropping (lenient) SM ports named by tenants. Strict is what SetTenants
/// accepts; lenient is what the master plans from.
pub fn compile_on(
    t: &Tenants,
    operator: Option<&str>,
    topology: &ps::Topology,
    sm_ports: &BTreeSet<Guid>,
    mode: Mode,
) -> Result<Compiled, ApplyError> {
    let set = tenant_set_from_proto(t).map_err(ApplyError::BadTenants)?;
    let pkeys = api_partitions_from_proto(t).map_err(ApplyError::BadTenants)?;
    tenants::compile_all(
        &set,
        &pkeys,
        operator,
        directory_of(topology).as_ref(),
        sm_ports,
        mode,
    )
    .map_err(ApplyError::Tenants)
}

impl ReplicatedState {
    /// The port directory of the recorded topology (None before any topology, or when the
    /// recorded one does not convert).
    pub fn port_directory(&self) -> Option<PortDirectory> {
        directory_of(&self.topology)
    }

    /// The SM ports of this cluster (configured replicas and the master).
    pub fn sm_ports(&self) -> BTreeSet<Guid> {
        sm_ports_of(&self.config, self.master.as_ref())
    }

    /// The operator's policy text in force (None before the first ApplyPolicy).
    fn operator_text(&self) -> Option<&str> {
        (self.policy.version > 0).then_some(self.policy.text.as_str())
    }

    /// The tenants in force compiled with the operator policy in force and the recorded
    /// topology, leniently (what the master plans from). Never fails on a state built by
    /// [`ReplicatedState::apply`] (both SetTenants and ApplyPolicy check it).
    pub fn compiled_tenants(&self) -> Result<Compiled, String> {
        compile_on(
            &self.tenants,
            self.operator_text(),
            &self.topology,
            &self.sm_ports(),
            Mode::Lenient,
        )
        .map_err(|e| e.to_string())
    }

    /// The partition policy text the master plans from: the operator's text when no tenant or
    /// storage partition is defined (None before any policy: OpenSM's "no file"), otherwise the
    /// tenants compiled with it ([`ReplicatedState::compiled_tenants`]).
    pub fn effective_policy_text(&self) -> Result<Option<String>, String> {
        if is_empty(&self.tenants) {
            return Ok(self.operator_text().map(str::to_string));
        }
        self.compiled_tenants().map(|c| Some(c.text))
    }

    pub(crate) fn set_tenants(&mut self, t: &Tenants) -> Result<Effect, ApplyError> {
        if t.version != self.tenants.version {
            return Err(ApplyError::StaleTenants {
                expected: t.version,
                current: self.tenants.version,
            });
        }
        compile_on(
            t,
            self.operator_text(),
            &self.topology,
            &self.sm_ports(),
            Mode::Strict,
        )?;
        let mut new = t.clone();
        new.version = self.tenants.version + 1;
        self.tenants = new;
        Ok(Effect::TenantsSet {
            version: self.tenants.version,
        })
    }

    /// Checks a new operator policy text against the tenants in force.
    pub(crate) fn check_policy_with_tenants(&self, text: &str) -> Result<(), ApplyError> {
        if is_empty(&self.tenants) {
            return Ok(());
        }
        compile_on(
            &self.tenants,
            Some(text),
            &self.topology,
            &self.sm_ports(),
            Mode::Lenient,
        )
        .map(|_| ())
    }
}

impl ReplicatedState {
    /// True when some tenant or storage member is named by node description (its ports then
    /// depend on the recorded topology).
    pub fn tenants_use_descriptions(&self) -> bool {
        let by_desc =
            |m: &ps::TenantMember| matches!(m.kind, Some(tenant_member::Kind::NodeDescription(_)));
        self.tenants
            .tenants
            .iter()
            .any(|t| t.members.iter().any(by_desc))
            || self
                .tenants
                .storage
                .iter()
                .any(|s| s.servers.iter().any(by_desc))
    }
}
