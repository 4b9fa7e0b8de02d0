//! ServiceRecords (register with a lease in SA milliseconds, delete, query) and InformInfo
//! subscriptions with the Notice 64/65 Reports they cause.

use crate::db::{SaDb, Service, Subscription};
use crate::view::FabricView;
use fabric::Lid;
use mad::sa::{Gid, InformInfo, InformInfoRecord, SaMad, ServiceRecord, sa_status};
use mad::{AttributeId, Method, Notice, NoticeDetails, ProducerType};

/// True when the service `s` is the same registration as `r` (ServiceID, GID, P_Key).
fn same(s: &ServiceRecord, r: &ServiceRecord) -> bool {
    s.id == r.id && s.gid == r.gid && s.pkey == r.pkey
}

/// The services whose lease has not ended at `now_ms`.
pub fn live(db: &SaDb, now_ms: u64) -> Vec<ServiceRecord> {
    db.services
        .iter()
        .filter(|s| s.expires_ms.is_none_or(|e| e > now_ms))
        .map(|s| s.record)
        .collect()
}

/// Drops services whose lease ended; true when any did.
pub fn expire(db: &mut SaDb, now_ms: u64) -> bool {
    let before = db.services.len();
    db.services
        .retain(|s| s.expires_ms.is_none_or(|e| e > now_ms));
    db.services.len() != before
}

/// Registers (or renews) a service for the port at `requester`.
pub fn register(
    db: &mut SaDb,
    view: &FabricView,
    requester: Option<(usize, u8)>,
    trusted: bool,
    mask: u64,
    r: &ServiceRecord,
    now_ms: u64,
) -> Result<ServiceRecord, u16> {
    // ServiceID and ServiceGID name the service; ServiceP_Key may be left out, and a
    // ServiceLease left out is infinite (as OpenSM: osmtest registers so).
    let need = ServiceRecord::CM_ID | ServiceRecord::CM_GID;
    if mask & need != need {
        return Err(sa_status::REQ_INSUFFICIENT_COMPONENTS);
    }
    let mut r = *r;
    if mask & ServiceRecord::CM_LEASE == 0 {
        r.lease = ServiceRecord::INFINITE_LEASE;
    }
    let r = &r;
    // The port is named by the GID's interface id alone, as OpenSM names it
    // (`osm_get_port_by_alias_guid`): osmtest sends a prefix in host byte order.
    let at = view
        .port_by_guid(fabric::Guid(r.gid.guid()))
        .ok_or(sa_status::REQ_INVALID_GID)?;
    if Some(at) != requester && !trusted {
        return Err(sa_status::REQ_DENIED);
    }
    let expires_ms = (r.lease != ServiceRecord::INFINITE_LEASE)
        .then(|| now_ms.saturating_add(u64::from(r.lease) * 1000));
    expire(db, now_ms);
    match db.services.iter_mut().find(|s| same(&s.record, r)) {
        Some(s) => {
            s.record = *r;
            s.expires_ms = expires_ms;
        }
        None => db.services.push(Service {
            record: *r,
            expires_ms,
        }),
    }
    Ok(*r)
}

/// Deletes the services matching `r` under `mask` that the requester may delete.
pub fn delete(
    db: &mut SaDb,
    view: &FabricView,
    requester: Option<(usize, u8)>,
    trusted: bool,
    mask: u64,
    r: &ServiceRecord,
    now_ms: u64,
) -> Result<ServiceRecord, u16> {
    expire(db, now_ms);
    let owner_ok =
        |s: &ServiceRecord| trusted || view.port_by_guid(fabric::Guid(s.gid.guid())) == requester;
    let pos = db
        .services
        .iter()
        .position(|s| mad::sa::record_matches(mask, r, &s.record) && owner_ok(&s.record))
        .ok_or(sa_status::NO_RECORDS)?;
    Ok(db.services.remove(pos).record)
}

/// Subscribes or unsubscribes (InformInfo Set) for the subscriber at `slid`.
pub fn inform(
    db: &mut SaDb,
    view: &FabricView,
    slid: Lid,
    ii: &InformInfo,
) -> Result<InformInfo, u16> {
    let at = view.port_by_lid(slid).ok_or(sa_status::REQ_INVALID)?;
    let port = view.port(at).ok_or(sa_status::REQ_INVALID)?;
    let gid = view.gid_of(port);
    if ii.subscribe == 1 {
        if db
            .informs
            .iter()
            .any(|s| s.subscriber_gid == gid && s.inform == *ii)
        {
            return Ok(*ii);
        }
        let enum_id = (0..=u16::MAX)
            .find(|e| {
                !db.informs
                    .iter()
                    .any(|s| s.subscriber_gid == gid && s.enum_id == *e)
            })
            .ok_or(sa_status::NO_RESOURCES)?;
        db.informs.push(Subscription {
            subscriber_gid: gid,
            subscriber_lid: port.lid,
            enum_id,
            inform: *ii,
        });
        Ok(*ii)
    } else {
        let mut want = *ii;
        want.subscribe = 1;
        let before = db.informs.len();
        db.informs
            .retain(|s| !(s.subscriber_gid == gid && s.inform == want));
        if db.informs.len() == before {
            return Err(sa_status::REQ_INVALID);
        }
        Ok(*ii)
    }
}

/// InformInfoRecords of the subscriptions.
pub fn inform_records(db: &SaDb) -> Vec<InformInfoRecord> {
    db.informs
        .iter()
        .map(|s| InformInfoRecord {
            subscriber_gid: s.subscriber_gid,
            enumeration: s.enum_id,
            inform_info: s.inform,
        })
        .collect()
}

/// A Report to send: where and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outgoing {
    /// Destination LID.
    pub dlid: Lid,
    /// Destination QP (from the subscription).
    pub dqpn: u32,
    /// The MAD.
    pub mad: SaMad,
}

/// Reports of Notice 64 (GID in service) for `ports_in` and 65 (out of service) for
/// `ports_out` to every subscriber that asked for them. `tid` numbers the Reports.
pub fn notices(
    db: &SaDb,
    view: &FabricView,
    ports_in: &[(Gid, Lid)],
    ports_out: &[(Gid, Lid)],
    tid: &mut u64,
) -> Vec<Outgoing> {
    let mut out = Vec::new();
    for (trap, ports) in [(64u16, ports_in), (65u16, ports_out)] {
        for &(gid, lid) in ports {
            for s in &db.informs {
                let ii = &s.inform;
                if !ii.wants(
                    trap,
                    Notice::TYPE_SUBNET_MGMT,
                    ProducerType::CLASS_MANAGER.0,
                ) && !ii.wants(trap, Notice::TYPE_INFO, ProducerType::CLASS_MANAGER.0)
                {
                    continue;
                }
                let in_range = if !ii.gid.is_zero() {
                    ii.gid == gid
                } else if ii.lid_range_begin.0 == 0xFFFF {
                    true
                } else {
                    let end = ii.lid_range_end.0.max(ii.lid_range_begin.0);
                    (ii.lid_range_begin.0..=end).contains(&lid.0)
                };
                if !in_range {
                    continue;
                }
                let mut n = Notice::generic(
                    Notice::TYPE_SUBNET_MGMT,
                    ProducerType::CLASS_MANAGER,
                    trap,
                    view.sm.lid,
                    &NoticeDetails::Gid { gid: gid.0 },
                );
                n.issuer_gid = Gid::new(view.subnet_prefix, view.sm.port_guid.0).0;
                let mut data = [0u8; mad::sa::SA_DATA_LEN];
                data[..Notice::FULL_LEN].copy_from_slice(&n.encode_full());
                *tid += 1;
                let mad = SaMad::request(Method::REPORT, AttributeId::NOTICE, *tid, 0, data);
                out.push(Outgoing {
                    dlid: s.subscriber_lid,
                    dqpn: ii.qpn,
                    mad,
                });
            }
        }
    }
    out
}

/// The records the SA serves for a Get/GetTable of ServiceRecords (live ones).
pub fn records(db: &SaDb, now_ms: u64) -> Vec<ServiceRecord> {
    live(db, now_ms)
}
