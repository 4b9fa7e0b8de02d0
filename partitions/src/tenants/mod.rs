//! Tenants: the object a GPU cloud thinks in, compiled into the partition policy.
//!
//! A [`Tenant`] owns member ports (port GUIDs, or node descriptions resolved against the
//! fabric), has its own partition (every member a full member), may use shared storage
//! partitions ([`StoragePartition`]: storage servers full, tenant ports limited, the
//! hub-and-spoke layout) and carries per-device RDMA cgroup limits for the host agent.
//!
//! [`compile`] turns a [`TenantSet`] and the operator's partitions.conf into one partitions.conf
//! text: the operator's text unchanged, then generated statements. The generated Default
//! statement demotes every tenant port to a limited member of 0x7fff (so an operator's
//! `Default=0x7fff : ALL=full ;` does not put tenants together), unless the tenant says
//! `default_full` (the operator's explicit choice). With no operator file the compiled text
//! starts with `Default=0x7fff,ipoib : ALL=full ;`, which is what "no file" means, so ports
//! outside tenants keep their meaning.
//!
//! Conflicts are [`TenantError`]s with stable codes (`TENANT-Ennn`); [`Mode::Strict`] (a
//! change being accepted) refuses them all, [`Mode::Lenient`] (the master planning from an
//! already accepted set on a fabric that has changed since) drops what it cannot resolve
//! and fails closed: a port claimed by two tenants goes to neither. Warnings are
//! `TENANT-Wnnn`.
//!
//! [`reachability`] is the tenant-level audit: from P_KeyTables read back (never from the
//! file), which tenant's ports can exchange traffic with which, and through which partition.
//!
//! Pure like the rest of the crate: no IO, no clock, never panics on any input.

use crate::policy::{DEFAULT_PARTITION, EndPort, Policy};
use fabric::{Guid, NodeType, Topology};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

mod api;
mod error;
mod rdma;
mod reach;
pub use api::{ApiPartition, MAX_API_MEMBERS, check_guid};
pub use error::TenantError;
pub use rdma::RdmaLineError;
pub use reach::{Reach, reachability, tenants_leak};

/// Highest value the kernel accepts for an RDMA cgroup limit (S32_MAX).
pub const RDMA_LIMIT_MAX: u32 = i32::MAX as u32;
/// Longest RDMA device name the kernel knows (IB_DEVICE_NAME_MAX - 1).
pub const RDMA_DEVICE_NAME_MAX: usize = 63;
/// Longest tenant or storage partition name.
pub const NAME_MAX: usize = 64;

/// A member of a tenant or a storage partition.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum MemberRef {
    /// A port GUID (a CA port, or a VF's alias GUID when the directory knows it).
    Port(#[serde(serialize_with = "crate::hexser::guid")] Guid),
    /// A node description: every cabled CA port of the node(s) with exactly this description.
    Node(String),
}

impl std::fmt::Display for MemberRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MemberRef::Port(g) => write!(f, "{g}"),
            MemberRef::Node(d) => write!(f, "node '{d}'"),
        }
    }
}

/// RDMA cgroup limits of one device (`None` = `max`, no limit).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RdmaLimit {
    /// RDMA device name as in /sys/class/infiniband (e.g. `mlx5_0`).
    pub device: String,
    /// Maximum HCA handles.
    pub hca_handle: Option<u32>,
    /// Maximum HCA objects.
    pub hca_object: Option<u32>,
}

/// A tenant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Tenant {
    /// Name (also the name of its partition in the compiled policy).
    pub name: String,
    /// Its own partition number (1..=0x7ffe); every member holds it full.
    #[serde(serialize_with = "crate::hexser::part")]
    pub pkey: u16,
    /// Member ports.
    pub members: Vec<MemberRef>,
    /// Names of the storage partitions it uses (its ports join them limited).
    pub storage: Vec<String>,
    /// RDMA cgroup limits its hosts apply, per device.
    pub rdma: Vec<RdmaLimit>,
    /// Create the IPoIB broadcast group of its partition.
    pub ipoib: bool,
    /// Leave its ports full members of Default (the operator's explicit choice; tenants with
    /// this flag can reach each other through 0x7fff).
    pub default_full: bool,
}

/// A shared storage partition: servers are full members, tenant ports limited.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StoragePartition {
    /// Name.
    pub name: String,
    /// Partition number (1..=0x7ffe).
    #[serde(serialize_with = "crate::hexser::part")]
    pub pkey: u16,
    /// Storage server ports (full members).
    pub servers: Vec<MemberRef>,
    /// Create the IPoIB broadcast group.
    pub ipoib: bool,
}

/// Every tenant and storage partition.
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize)]
pub struct TenantSet {
    /// Tenants.
    pub tenants: Vec<Tenant>,
    /// Storage partitions.
    pub storage: Vec<StoragePartition>,
}

/// How unresolvable members and port conflicts are treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A change being accepted: every conflict is an error.
    Strict,
    /// Planning from an accepted set on today's fabric: unresolvable members are dropped and
    /// a port claimed twice goes to neither tenant (warnings say so).
    Lenient,
}

/// Where member references resolve: node descriptions to port GUIDs, VF alias GUIDs to the
/// physical port whose LID and P_KeyTable they share.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PortDirectory {
    /// Node description -> cabled CA port GUIDs.
    pub by_description: BTreeMap<String, Vec<Guid>>,
    /// Every end port GUID of the fabric.
    pub ports: BTreeSet<Guid>,
    /// VF alias GUID -> the PF port GUID it shares (shared-port SR-IOV).
    pub aliases: BTreeMap<Guid, Guid>,
}

impl PortDirectory {
    /// The directory of a topology: cabled CA and router ports by node description.
    pub fn from_topology(topo: &Topology) -> PortDirectory {
        let mut d = PortDirectory::default();
        for e in crate::plan::end_ports(topo) {
            d.ports.insert(e.port_guid);
            if e.node_type == NodeType::Switch {
                continue;
            }
            if let Some(id) = topo.node_by_guid(e.node_guid) {
                d.by_description
                    .entry(topo.node(id).description.clone())
                    .or_default()
                    .push(e.port_guid);
            }
        }
        d
    }

    /// Adds VF alias GUIDs (alias -> PF port GUID).
    pub fn with_aliases(mut self, aliases: impl IntoIterator<Item = (Guid, Guid)>) -> Self {
        self.aliases.extend(aliases);
        self
    }
}

/// A warning of [`compile`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TenantWarning {
    /// Stable code (`TENANT-Wnnn`).
    pub code: &'static str,
    /// Explanation.
    pub message: String,
}

/// A tenant with its members resolved to port GUIDs (physical ports).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ResolvedTenant {
    /// Name.
    pub name: String,
    /// Partition number.
    #[serde(serialize_with = "crate::hexser::part")]
    pub pkey: u16,
    /// Physical port GUIDs, sorted.
    #[serde(serialize_with = "crate::hexser::guids")]
    pub ports: Vec<Guid>,
    /// Storage partitions it uses, as (name, PKey).
    pub storage: Vec<(String, u16)>,
}

/// A storage partition with its servers resolved.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ResolvedStorage {
    /// Name.
    pub name: String,
    /// Partition number.
    #[serde(serialize_with = "crate::hexser::part")]
    pub pkey: u16,
    /// Server port GUIDs, sorted.
    #[serde(serialize_with = "crate::hexser::guids")]
    pub servers: Vec<Guid>,
}

/// The result of [`compile`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Compiled {
    /// The partitions.conf text the master plans from.
    pub text: String,
    /// Tenants, resolved.
    pub tenants: Vec<ResolvedTenant>,
    /// Storage partitions, resolved.
    pub storage: Vec<ResolvedStorage>,
    /// Warnings.
    pub warnings: Vec<TenantWarning>,
}

impl Compiled {
    /// The tenant a physical port belongs to.
    pub fn tenant_of(&self, port: Guid) -> Option<&ResolvedTenant> {
        self.tenants
            .iter()
            .find(|t| t.ports.binary_search(&port).is_ok())
    }
}

/// Validates a name: 1..=64 characters of `[A-Za-z0-9_.-]`, starting with a letter (a name
/// starting with a digit would read as a PKey in partitions.conf).
pub fn check_name(name: &str) -> Result<(), TenantError> {
    let bad = |why| {
        Err(TenantError::InvalidName {
            name: name.to_string(),
            why,
        })
    };
    if name.is_empty() {
        return bad("empty");
    }
    if name.len() > NAME_MAX {
        return bad("longer than 64 characters");
    }
    if !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return bad("must start with a letter");
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        return bad("only letters, digits, '_', '-' and '.' are allowed");
    }
    if name.eq_ignore_ascii_case("default") {
        return bad("'Default' is the default partition");
    }
    Ok(())
}

/// Validates an RDMA device name as the kernel would accept it in `rdma.max`.
pub fn check_device_name(device: &str) -> Result<(), String> {
    if device.is_empty() {
        return Err("empty device name".into());
    }
    if device.len() > RDMA_DEVICE_NAME_MAX {
        return Err(format!(
            "device name longer than {RDMA_DEVICE_NAME_MAX} bytes"
        ));
    }
    if device
        .chars()
        .any(|c| c.is_whitespace() || c == '/' || c == '=' || c.is_control())
    {
        return Err("device name contains whitespace, '/', '=' or a control character".into());
    }
    Ok(())
}

fn check_limits(t: &Tenant) -> Result<(), TenantError> {
    let mut seen = BTreeSet::new();
    for l in &t.rdma {
        let bad = |why: String| TenantError::BadRdmaLimit {
            tenant: t.name.clone(),
            device: l.device.clone(),
            why,
        };
        check_device_name(&l.device).map_err(bad)?;
        if !seen.insert(l.device.as_str()) {
            return Err(bad("device listed twice".into()));
        }
        for (what, v) in [("hca_handle", l.hca_handle), ("hca_object", l.hca_object)] {
            if let Some(v) = v
                && v > RDMA_LIMIT_MAX
            {
                return Err(bad(format!(
                    "{what}={v} exceeds the kernel's maximum {RDMA_LIMIT_MAX}"
                )));
            }
        }
    }
    Ok(())
}

fn check_pkey(name: &str, pkey: u16) -> Result<(), TenantError> {
    if pkey == 0 || pkey >= DEFAULT_PARTITION {
        return Err(TenantError::InvalidPKey {
            name: name.to_string(),
            pkey: u32::from(pkey),
        });
    }
    Ok(())
}

struct Resolver<'a> {
    dir: Option<&'a PortDirectory>,
    mode: Mode,
    warnings: Vec<TenantWarning>,
}

impl Resolver<'_> {
    /// Physical port GUIDs a reference names.
    fn resolve(&mut self, owner: &str, m: &MemberRef) -> Result<Vec<Guid>, TenantError> {
        let unknown = || TenantError::UnknownMember {
            owner: owner.to_string(),
            member: m.clone(),
        };
        match (m, self.dir) {
            (MemberRef::Port(g), Some(d)) => {
                if let Some(pf) = d.aliases.get(g) {
                    return Ok(vec![*pf]);
                }
                if !d.ports.contains(g) {
                    // A host may be powered off or not cabled yet: its GUID is kept.
                    self.warnings.push(TenantWarning {
                        code: "TENANT-W001",
                        message: format!(
                            "'{owner}' names port {g}, which is not in the fabric now"
                        ),
                    });
                }
                Ok(vec![*g])
            }
            (MemberRef::Port(g), None) => Ok(vec![*g]),
            (MemberRef::Node(desc), Some(d)) => match d.by_description.get(desc) {
                Some(ports) if !ports.is_empty() => Ok(ports.clone()),
                _ if self.mode == Mode::Strict => Err(unknown()),
                _ => {
                    self.warnings.push(TenantWarning {
                        code: "TENANT-W002",
                        message: format!(
                            "'{owner}' names node '{desc}', which is not in the fabric now: no port"
                        ),
                    });
                    Ok(Vec::new())
                }
            },
            (MemberRef::Node(desc), None) => {
                self.warnings.push(TenantWarning {
                    code: "TENANT-W003",
                    message: format!(
                        "'{owner}' names node '{desc}', but no fabric is known yet to resolve it"
                    ),
                });
                Ok(Vec::new())
            }
        }
    }
}

/// Compiles tenants and the operator's partitions.conf (None: no file) into one policy text.
/// `dir` resolves node descriptions and VF aliases (None: no fabric known yet). Same as
/// [`compile_with`] with no SM port known.
pub fn compile(
    set: &TenantSet,
    operator: Option<&str>,
    dir: Option<&PortDirectory>,
    mode: Mode,
) -> Result<Compiled, TenantError> {
    compile_with(set, operator, dir, &BTreeSet::new(), mode)
}

/// [`compile`] knowing the SM ports (every replica's port): an SM port is always a full
/// member of Default, so a tenant naming one is refused (TENANT-E014) or, leniently, loses it
/// (TENANT-W007).
pub fn compile_with(
    set: &TenantSet,
    operator: Option<&str>,
    dir: Option<&PortDirectory>,
    sm_ports: &BTreeSet<Guid>,
    mode: Mode,
) -> Result<Compiled, TenantError> {
    compile_all(set, &[], operator, dir, sm_ports, mode)
}

/// [`compile_with`] and the partitions the admin API manages by P_Key ([`ApiPartition`]),
/// rendered after the storage partitions. Their P_Keys and names share the tenants'
/// namespace and may not be the operator's; a tenant port in one is refused (TENANT-E017)
/// or, leniently, left out of it (TENANT-W009).
pub fn compile_all(
    set: &TenantSet,
    pkeys: &[ApiPartition],
    operator: Option<&str>,
    dir: Option<&PortDirectory>,
    sm_ports: &BTreeSet<Guid>,
    mode: Mode,
) -> Result<Compiled, TenantError> {
    // The operator's partitions, as the file defines them.
    let op_policy = match operator {
        Some(text) => {
            let file = crate::parse(text).map_err(|errs| TenantError::OperatorSyntax {
                count: errs.len(),
                first: errs.first().map(|e| e.to_string()).unwrap_or_default(),
            })?;
            Some(Policy::from_file(&file, crate::Options::default()).0)
        }
        None => None,
    };
    // Names and keys.
    let mut names: BTreeSet<&str> = BTreeSet::new();
    let mut keys: BTreeMap<u16, &str> = BTreeMap::new();
    let owners = set
        .tenants
        .iter()
        .map(|t| (t.name.as_str(), t.pkey))
        .chain(set.storage.iter().map(|s| (s.name.as_str(), s.pkey)))
        .chain(pkeys.iter().map(|p| (p.name.as_str(), p.pkey)));
    for (name, pkey) in owners {
        check_name(name)?;
        check_pkey(name, pkey)?;
        if !names.insert(name) {
            return Err(TenantError::DuplicateName(name.to_string()));
        }
        if let Some(a) = keys.insert(pkey, name) {
            return Err(TenantError::PKeyClash {
                pkey,
                a: a.to_string(),
                b: name.to_string(),
            });
        }
        if let Some(p) = &op_policy {
            if let Some(op) = p.partitions.iter().find(|p| p.pkey == pkey) {
                return Err(TenantError::OperatorPKey {
                    name: name.to_string(),
                    pkey,
                    operator: op.name.clone(),
                });
            }
            if p.partitions.iter().any(|p| p.name == name) {
                return Err(TenantError::OperatorName(name.to_string()));
            }
        }
    }
    for t in &set.tenants {
        check_limits(t)?;
        for s in &t.storage {
            if !set.storage.iter().any(|x| &x.name == s) {
                return Err(TenantError::UnknownStorage {
                    tenant: t.name.clone(),
                    storage: s.clone(),
                });
            }
        }
    }
    let mut r = Resolver {
        dir,
        mode,
        warnings: Vec::new(),
    };
    // Resolve every tenant's ports; find ports claimed twice.
    let mut owner_of: BTreeMap<Guid, usize> = BTreeMap::new();
    let mut contested: BTreeSet<Guid> = BTreeSet::new();
    let mut resolved: Vec<BTreeSet<Guid>> = Vec::with_capacity(set.tenants.len());
    for (i, t) in set.tenants.iter().enumerate() {
        let mut ports = BTreeSet::new();
        for m in &t.members {
            let is_alias =
                matches!(m, MemberRef::Port(g) if dir.is_some_and(|d| d.aliases.contains_key(g)));
            for g in r.resolve(&t.name, m)? {
                if sm_ports.contains(&g) {
                    if mode == Mode::Strict {
                        return Err(TenantError::SmPortInTenant {
                            port: g,
                            tenant: t.name.clone(),
                        });
                    }
                    r.warnings.push(TenantWarning {
                        code: "TENANT-W007",
                        message: format!(
                            "port {g} named by tenant '{}' is an SM port (always full in Default): left out of the tenant",
                            t.name
                        ),
                    });
                    continue;
                }
                ports.insert(g);
                match owner_of.get(&g) {
                    Some(&j) if j != i => {
                        if mode == Mode::Strict {
                            let (a, b) = (set.tenants[j].name.clone(), t.name.clone());
                            let shared = is_alias
                                || set.tenants[j].members.iter().any(|m| {
                                    matches!(m, MemberRef::Port(x) if dir.is_some_and(|d| d.aliases.contains_key(x)))
                                });
                            return Err(if shared {
                                TenantError::SharedPortAcrossTenants { pf: g, a, b }
                            } else {
                                TenantError::PortInTwoTenants { port: g, a, b }
                            });
                        }
                        contested.insert(g);
                    }
                    _ => {
                        owner_of.insert(g, i);
                    }
                }
            }
        }
        resolved.push(ports);
    }
    for g in &contested {
        r.warnings.push(TenantWarning {
            code: "TENANT-W004",
            message: format!(
                "port {g} is claimed by more than one tenant: it joins none of them (fail closed)"
            ),
        });
        for p in &mut resolved {
            p.remove(g);
        }
    }
    let mut storage_out = Vec::with_capacity(set.storage.len());
    for s in &set.storage {
        let mut servers = BTreeSet::new();
        for m in &s.servers {
            for g in r.resolve(&s.name, m)? {
                if let Some(&i) = owner_of.get(&g) {
                    if mode == Mode::Strict {
                        return Err(TenantError::ServerInTenant {
                            port: g,
                            storage: s.name.clone(),
                            tenant: set.tenants[i].name.clone(),
                        });
                    }
                    r.warnings.push(TenantWarning {
                        code: "TENANT-W005",
                        message: format!(
                            "port {g} is a server of '{}' and a member of tenant '{}': left out of the storage servers",
                            s.name, set.tenants[i].name
                        ),
                    });
                    continue;
                }
                servers.insert(g);
            }
        }
        storage_out.push(ResolvedStorage {
            name: s.name.clone(),
            pkey: s.pkey,
            servers: servers.into_iter().collect(),
        });
    }
    let mut api_out = Vec::with_capacity(pkeys.len());
    for p in pkeys {
        let tenant_of = |g: Guid| owner_of.get(&g).map(|&i| set.tenants[i].name.clone());
        api_out.push(api::resolve(&mut r, p, tenant_of)?);
    }
    let tenants_out: Vec<ResolvedTenant> = set
        .tenants
        .iter()
        .zip(&resolved)
        .map(|(t, ports)| ResolvedTenant {
            name: t.name.clone(),
            pkey: t.pkey,
            ports: ports.iter().copied().collect(),
            storage: t
                .storage
                .iter()
                .filter_map(|n| set.storage.iter().find(|s| &s.name == n))
                .map(|s| (s.name.clone(), s.pkey))
                .collect(),
        })
        .collect();
    for t in set.tenants.iter().filter(|t| t.default_full) {
        if set.tenants.len() > 1 {
            r.warnings.push(TenantWarning {
                code: "TENANT-W008",
                message: format!(
                    "tenant '{}' stays a full member of Default: it can reach every other tenant's ports there (they are limited members)",
                    t.name
                ),
            });
        }
    }
    let mut text = render(set, operator, &tenants_out, &storage_out);
    if set.tenants.is_empty() && set.storage.is_empty() && !pkeys.is_empty() {
        text.push_str(GENERATED_MARK);
        text.push('\n');
    }
    for (p, r) in pkeys.iter().zip(&api_out) {
        api::render(&mut text, p, r);
    }
    if let Some(w) = operator_joins(&text, &tenants_out) {
        r.warnings.extend(w);
    }
    Ok(Compiled {
        text,
        tenants: tenants_out,
        storage: storage_out,
        warnings: r.warnings,
    })
}

/// Header of the generated part of a compiled policy.
pub const GENERATED_MARK: &str =
    "# --- tenants: generated by Quorum SM from the replicated tenant set; do not edit ---";

fn member_list(out: &mut String, items: &[(Guid, &str)]) {
    for (i, (g, m)) in items.iter().enumerate() {
        let sep = if i + 1 == items.len() { "" } else { "," };
        let _ = writeln!(out, "    {:#018x}={m}{sep}", g.0);
    }
}

fn header(out: &mut String, name: &str, pkey: u16, ipoib: bool) {
    let _ = write!(
        out,
        "{name}={pkey:#06x}{} :",
        if ipoib { ",ipoib" } else { "" }
    );
}

fn render(
    set: &TenantSet,
    operator: Option<&str>,
    tenants: &[ResolvedTenant],
    storage: &[ResolvedStorage],
) -> String {
    let mut out = String::new();
    match operator {
        Some(t) => {
            out.push_str(t);
            if !t.is_empty() && !t.ends_with('\n') {
                out.push('\n');
            }
        }
        None => out.push_str("# no operator partitions.conf: every port is a full member of Default\nDefault=0x7fff,ipoib : ALL=full ;\n"),
    }
    if set.tenants.is_empty() && set.storage.is_empty() {
        return out;
    }
    out.push_str(GENERATED_MARK);
    out.push('\n');
    let mut default_items: Vec<(Guid, &str)> = Vec::new();
    for (t, rt) in set.tenants.iter().zip(tenants) {
        let m = if t.default_full { "full" } else { "limited" };
        default_items.extend(rt.ports.iter().map(|g| (*g, m)));
    }
    if !default_items.is_empty() {
        out.push_str("# tenant ports: limited in Default unless the tenant says default_full\n");
        out.push_str("Default=0x7fff :\n");
        member_list(&mut out, &default_items);
        out.push_str(";\n");
    }
    for (t, rt) in set.tenants.iter().zip(tenants) {
        let _ = writeln!(out, "# tenant {}", t.name);
        header(&mut out, &t.name, t.pkey, t.ipoib);
        let items: Vec<(Guid, &str)> = rt.ports.iter().map(|g| (*g, "full")).collect();
        if items.is_empty() {
            out.push_str(" NONE ;\n");
        } else {
            out.push('\n');
            member_list(&mut out, &items);
            out.push_str(";\n");
        }
    }
    for (s, rs) in set.storage.iter().zip(storage) {
        let _ = writeln!(
            out,
            "# storage {}: servers full, tenant ports limited",
            s.name
        );
        header(&mut out, &s.name, s.pkey, s.ipoib);
        let mut items: Vec<(Guid, &str)> = rs.servers.iter().map(|g| (*g, "full")).collect();
        for rt in tenants {
            if rt.storage.iter().any(|(n, _)| n == &s.name) {
                items.extend(rt.ports.iter().map(|g| (*g, "limited")));
            }
        }
        if items.is_empty() {
            out.push_str(" NONE ;\n");
        } else {
            out.push('\n');
            member_list(&mut out, &items);
            out.push_str(";\n");
        }
    }
    out
}

/// TENANT-W006: operator partitions (other than Default) that give ports of two different
/// tenants a common partition in which one of them is full (e.g. `ALL=full`).
fn operator_joins(text: &str, tenants: &[ResolvedTenant]) -> Option<Vec<TenantWarning>> {
    let file = crate::parse(text).ok()?;
    let policy = Policy::from_file(&file, crate::Options::default()).0;
    let ports: Vec<EndPort> = tenants
        .iter()
        .flat_map(|t| t.ports.iter())
        .map(|g| EndPort {
            node_guid: *g,
            port_guid: *g,
            port: 1,
            node_type: NodeType::Ca,
        })
        .collect();
    let members = policy.resolve(&ports);
    let tenant_of: BTreeMap<Guid, usize> = tenants
        .iter()
        .enumerate()
        .flat_map(|(i, t)| t.ports.iter().map(move |g| (*g, i)))
        .collect();
    let mut out = Vec::new();
    for (pi, p) in policy.partitions.iter().enumerate() {
        if p.pkey == DEFAULT_PARTITION || tenants.iter().any(|t| t.pkey == p.pkey) {
            continue;
        }
        // Per tenant: (holds any, holds full).
        let mut per: BTreeMap<usize, (bool, bool)> = BTreeMap::new();
        for m in &members {
            let h = m.held[pi];
            if let Some(&t) = tenant_of.get(&m.port.port_guid)
                && (h.full || h.limited)
            {
                let e = per.entry(t).or_default();
                e.0 = true;
                e.1 |= h.full;
            }
        }
        let full: Vec<usize> = per.iter().filter(|(_, v)| v.1).map(|(k, _)| *k).collect();
        if per.len() >= 2 && !full.is_empty() {
            let names: Vec<&str> = per.keys().map(|&i| tenants[i].name.as_str()).collect();
            out.push(TenantWarning {
                code: "TENANT-W006",
                message: format!(
                    "operator partition '{}' ({:#06x}) joins tenants {} (some as full members): they can reach each other through it",
                    p.name,
                    p.pkey,
                    names.join(", ")
                ),
            });
        }
    }
    Some(out)
}
