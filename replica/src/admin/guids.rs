//! ChangeGuids (issue 26): GUIDs added to or removed from one tenant or one API-managed
//! partition (by P_Key) in one change of the tenant set, the ib-kubernetes flow (pod created:
//! its VF GUID added; pod gone: removed). Pure: the daemon reads the set, calls
//! [`change_guids`], prechecks the result as apply will ([`super::tenants::precheck`]) and
//! proposes it as one compare-and-set SetTenants; the UFM-compatible HTTP API (crate
//! `ufm-api`) maps each of its calls to exactly one ChangeGuids.
//!
//! Semantics:
//! * ADD to a tenant: each GUID leaves every other tenant and every API partition in the same
//!   change (a reused GUID never keeps an old membership); the notes say which.
//! * ADD to a P_Key: the tenant owning that P_Key gets the GUIDs as above (full only);
//!   otherwise the API partition (created when absent, with `name`, `ipoib`, `index0`) gets
//!   them with the membership asked for (a member's membership is updated). A GUID that is a
//!   tenant member is refused by the compile (TENANT-E017). UFM allows a GUID in several
//!   partitions, and so does this.
//! * REMOVE: the GUIDs leave the target; absent GUIDs and an absent partition are no-ops.
//! * DELETE_PKEY: the API partition goes with its members (E_NODE_PKEY_UNKNOWN when absent).
//!
//! Refused before anything is proposed: no target (E_ADMIN_CHANGE), more than
//! [`MAX_GUIDS_PER_CALL`] GUIDs (E_ADMIN_LIMIT), GUID 0 (TENANT-E015), a P_Key outside
//! 0x0001..=0x7ffe (TENANT-E003), an unknown tenant (E_NODE_TENANT_UNKNOWN); the rest
//! (operator P_Keys, clashes, limits per partition) is the strict compile's.

use super::AdminError;
use crate::ApplyError;
use partitions::tenants::{ApiPartition, TenantError, check_guid};
use proto::admin::change_guids_request::{Op, Target};
use proto::admin::{ChangeGuidsRequest, change_guids_request};
use proto::state::{ApiMember, Tenants, tenant_member};

/// Most GUIDs one ChangeGuids call names (1,024).
pub const MAX_GUIDS_PER_CALL: usize = 1024;

fn refused(e: TenantError) -> AdminError {
    AdminError::TenantsRefused(ApplyError::Tenants(e))
}

fn is_port(m: &proto::state::TenantMember, g: u64) -> bool {
    matches!(m.kind, Some(tenant_member::Kind::PortGuid(x)) if x == g)
}

/// Applies a ChangeGuids request to `cur`: the new set (version = the one read) and notes.
pub fn change_guids(
    cur: &Tenants,
    r: &ChangeGuidsRequest,
) -> Result<(Tenants, Vec<String>), AdminError> {
    if r.guids.len() > MAX_GUIDS_PER_CALL {
        return Err(AdminError::Limit {
            what: "the GUIDs of one ChangeGuids call",
            size: r.guids.len(),
            limit: MAX_GUIDS_PER_CALL,
            name: "MAX_GUIDS_PER_CALL",
        });
    }
    let op = Op::try_from(r.op).map_err(|_| AdminError::BadChange("unknown op"))?;
    let mut new = cur.clone();
    let mut notes = Vec::new();
    let tenant = match &r.target {
        None => {
            return Err(AdminError::BadChange(
                "neither a tenant nor a P_Key is named",
            ));
        }
        Some(Target::Tenant(name)) => name.clone(),
        Some(Target::Pkey(p)) => {
            let pkey = u16::try_from(*p)
                .ok()
                .filter(|k| *k != 0 && *k < 0x7fff)
                .ok_or_else(|| {
                    refused(TenantError::InvalidPKey {
                        name: format!("{p:#x}"),
                        pkey: *p,
                    })
                })?;
            match cur.tenants.iter().find(|t| t.pkey == *p) {
                Some(_) if op == Op::DeletePkey => {
                    return Err(AdminError::BadChange(
                        "the P_Key is a tenant's: DeleteTenant removes a tenant",
                    ));
                }
                Some(_) if r.limited => {
                    return Err(AdminError::BadChange(
                        "the P_Key is a tenant's, whose members are full members",
                    ));
                }
                Some(t) => t.name.clone(),
                None => {
                    partition_change(&mut new, &mut notes, op, pkey, r)?;
                    return Ok((new, notes));
                }
            }
        }
    };
    for &g in &r.guids {
        check_guid(&tenant, fabric::Guid(g)).map_err(refused)?;
    }
    let Some(ti) = new.tenants.iter().position(|t| t.name == tenant) else {
        return Err(AdminError::TenantUnknown {
            name: tenant,
            storage: false,
        });
    };
    match op {
        Op::Add => {
            for &g in &r.guids {
                for (i, t) in new.tenants.iter_mut().enumerate() {
                    let before = t.members.len();
                    if i != ti {
                        t.members.retain(|m| !is_port(m, g));
                    }
                    if t.members.len() != before {
                        notes.push(format!("GUID {g:#018x} moved from tenant '{}'", t.name));
                    }
                }
                for p in &mut new.pkeys {
                    let before = p.members.len();
                    p.members.retain(|m| m.guid != g);
                    if p.members.len() != before {
                        notes.push(format!(
                            "GUID {g:#018x} left partition {:#06x} (now in tenant '{tenant}')",
                            p.pkey
                        ));
                    }
                }
                let t = &mut new.tenants[ti];
                if !t.members.iter().any(|m| is_port(m, g)) {
                    t.members.push(crate::tenants::member_to_proto(
                        &partitions::tenants::MemberRef::Port(fabric::Guid(g)),
                    ));
                }
            }
        }
        Op::Remove => {
            let t = &mut new.tenants[ti];
            t.members
                .retain(|m| !r.guids.iter().any(|&g| is_port(m, g)));
        }
        Op::DeletePkey => {
            return Err(AdminError::BadChange(
                "DELETE_PKEY names a partition by P_Key, not a tenant",
            ));
        }
    }
    Ok((new, notes))
}

fn partition_change(
    new: &mut Tenants,
    notes: &mut Vec<String>,
    op: Op,
    pkey: u16,
    r: &ChangeGuidsRequest,
) -> Result<(), AdminError> {
    let name = ApiPartition::default_name(pkey);
    for &g in &r.guids {
        check_guid(&name, fabric::Guid(g)).map_err(refused)?;
    }
    let at = new.pkeys.iter().position(|p| p.pkey == u32::from(pkey));
    match (op, at) {
        (Op::Add, _) => {
            let i = at.unwrap_or_else(|| {
                notes.push(format!("partition {pkey:#06x} created"));
                new.pkeys.push(proto::state::ApiPartition {
                    pkey: u32::from(pkey),
                    name: r.name.clone(),
                    members: Vec::new(),
                    ipoib: r.ipoib,
                    index0: r.index0,
                });
                new.pkeys.len() - 1
            });
            let p = &mut new.pkeys[i];
            for &g in &r.guids {
                match p.members.iter_mut().find(|m| m.guid == g) {
                    Some(m) => m.limited = r.limited,
                    None => p.members.push(ApiMember {
                        guid: g,
                        limited: r.limited,
                    }),
                }
            }
        }
        (Op::Remove, Some(i)) => {
            new.pkeys[i].members.retain(|m| !r.guids.contains(&m.guid));
        }
        (Op::Remove, None) => {}
        (Op::DeletePkey, Some(i)) => {
            new.pkeys.remove(i);
        }
        (Op::DeletePkey, None) => return Err(AdminError::PKeyUnknown(pkey)),
    }
    Ok(())
}

/// A ChangeGuids request (the shape smctl and the UFM API build).
pub fn request(
    op: Op,
    target: change_guids_request::Target,
    guids: Vec<u64>,
) -> ChangeGuidsRequest {
    ChangeGuidsRequest {
        op: op as i32,
        target: Some(target),
        guids,
        ..ChangeGuidsRequest::default()
    }
}

#[cfg(test)]
#[path = "guids_tests.rs"]
mod tests;
