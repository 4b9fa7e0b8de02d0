//! Partitions the admin API manages by P_Key (issue 26; UFM's "pkeys"): a P_Key, a name, port
//! GUIDs (VF alias GUIDs allowed) each full or limited, and the `ipoib` / `indx0` flags. They
//! compile next to the tenants ([`super::compile_all`]): the operator's partitions.conf may
//! not define their P_Key or name, no tenant port may be a member (a tenant's isolation would
//! leak through it), and a partition holds at most [`MAX_API_MEMBERS`] GUIDs.

use super::{Resolver, TenantError, TenantWarning};
use fabric::Guid;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Most GUIDs one API partition holds (4,096: a 256-host cluster with 16 VFs per host).
pub const MAX_API_MEMBERS: usize = 4096;

/// A partition managed through the admin API by P_Key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ApiPartition {
    /// Partition number (1..=0x7ffe).
    #[serde(serialize_with = "crate::hexser::part")]
    pub pkey: u16,
    /// Name in the compiled policy ([`ApiPartition::default_name`] when none was given).
    pub name: String,
    /// Members: port GUID (or VF alias GUID) and full (true) or limited.
    pub members: Vec<(Guid, bool)>,
    /// Create the IPoIB broadcast group.
    pub ipoib: bool,
    /// Put the key at P_KeyTable index 0 (partitions.conf `indx0`).
    pub index0: bool,
}

impl ApiPartition {
    /// The name of a partition created without one: `pkey_` and the P_Key in 4 hex digits.
    pub fn default_name(pkey: u16) -> String {
        format!("pkey_{pkey:04x}")
    }
}

/// Validates a GUID named as a member: 0 is no port (TENANT-E015).
pub fn check_guid(owner: &str, g: Guid) -> Result<(), TenantError> {
    if g.0 == 0 {
        return Err(TenantError::InvalidGuid {
            owner: owner.to_string(),
        });
    }
    Ok(())
}

/// An API partition with its members resolved to physical ports (membership: full wins).
pub(super) struct ResolvedApi {
    pub ports: BTreeMap<Guid, bool>,
}

/// Resolves `p`'s members; `tenant_of` names the tenant owning a physical port.
pub(super) fn resolve(
    r: &mut Resolver<'_>,
    p: &ApiPartition,
    tenant_of: impl Fn(Guid) -> Option<String>,
) -> Result<ResolvedApi, TenantError> {
    if p.members.len() > MAX_API_MEMBERS {
        return Err(TenantError::TooManyMembers {
            name: p.name.clone(),
            count: p.members.len(),
            limit: MAX_API_MEMBERS,
        });
    }
    let mut ports = BTreeMap::new();
    for &(g, full) in &p.members {
        check_guid(&p.name, g)?;
        for pg in r.resolve(&p.name, &super::MemberRef::Port(g))? {
            if let Some(t) = tenant_of(pg) {
                if r.mode == super::Mode::Strict {
                    return Err(TenantError::TenantPortInPartition {
                        port: g,
                        partition: p.name.clone(),
                        tenant: t,
                    });
                }
                r.warnings.push(TenantWarning {
                    code: "TENANT-W009",
                    message: format!(
                        "port {g} of partition '{}' belongs to tenant '{t}': left out of the partition",
                        p.name
                    ),
                });
                continue;
            }
            *ports.entry(pg).or_insert(false) |= full;
        }
    }
    Ok(ResolvedApi { ports })
}

/// Appends the statement of one API partition.
pub(super) fn render(out: &mut String, p: &ApiPartition, r: &ResolvedApi) {
    let _ = writeln!(out, "# partition {} (admin API)", p.name);
    let _ = write!(
        out,
        "{}={:#06x}{}{} :",
        p.name,
        p.pkey,
        if p.ipoib { ",ipoib" } else { "" },
        if p.index0 { ",indx0" } else { "" }
    );
    if r.ports.is_empty() {
        out.push_str(" NONE ;\n");
        return;
    }
    out.push('\n');
    let items: Vec<(Guid, &str)> = r
        .ports
        .iter()
        .map(|(g, full)| (*g, if *full { "full" } else { "limited" }))
        .collect();
    super::member_list(out, &items);
    out.push_str(";\n");
}
