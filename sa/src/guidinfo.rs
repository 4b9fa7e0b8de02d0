//! GUIDInfoRecord Set and Delete: alias GUIDs clients ask for on their ports, taken as
//! OpenSM takes them (osm_sa_guidinfo_record.c):
//!
//! * Both need LID and BlockNum in the component mask (`REQ_INSUFFICIENT_COMPONENTS`); the
//!   port is the end port with that LID (`NO_RECORDS` otherwise) and must share a partition
//!   with the requester (otherwise no answer at all, as OpenSM); a block at or above
//!   GUIDCap / 8 is `NO_RECORDS`; naming index 0 of block 0 (the port GUID, read only) is
//!   `REQ_INVALID`.
//! * Set: each index the mask names (GIDn) takes the GUID given; a zero GUID keeps the
//!   alias the index holds, else the one the SA assigned to that port and index before
//!   (kept for good), else a new SA-assigned GUID (`0x001405` in the top 24 bits, the
//!   configured byte, a counter). A GUID already in use (a port GUID, or an alias elsewhere)
//!   comes back 0 in the answer and changes nothing.
//! * Delete: every index named loses its alias; `REQ_DENIED` (nothing removed) when one of
//!   them is a member of a multicast group.
//! * The answer is the block as it now is.
//!
//! The aliases live in the replicated SA state; the master programs them into the ports'
//! GUIDInfo (sm-core) and PathRecords resolve them to their port.

use crate::db::SaDb;
use crate::view::FabricView;
use fabric::Guid;
use mad::sa::{GuidInfoRecord, sa_status};

/// ComponentMask bits of GUIDInfoRecord: LID, BlockNum, then GID0..GID7 from bit 4.
pub const COMP_LID: u64 = 1 << 0;
/// BlockNum.
pub const COMP_BLOCK: u64 = 1 << 1;
/// GID0 (GIDn is `COMP_GID0 << n`).
pub const COMP_GID0: u64 = 1 << 4;

/// The vendor id in SA-assigned alias GUIDs (OpenSM's OSM_VENDOR_ID_OPENIB).
pub const ASSIGNED_VENDOR: u64 = 0x00_1405;

/// Why a Set/Delete is not answered with a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// An SA status.
    Status(u16),
    /// No answer at all (the requester shares no partition with the port).
    Silent,
}

fn target(
    view: &FabricView,
    requester: Option<(usize, u8)>,
    mask: u64,
    rec: &GuidInfoRecord,
) -> Result<((usize, u8), Guid, u16), Refused> {
    if mask & (COMP_LID | COMP_BLOCK) != COMP_LID | COMP_BLOCK {
        return Err(Refused::Status(sa_status::REQ_INSUFFICIENT_COMPONENTS));
    }
    let at = view
        .port_by_lid(rec.lid)
        .ok_or(Refused::Status(sa_status::NO_RECORDS))?;
    let port = view
        .port(at)
        .ok_or(Refused::Status(sa_status::NO_RECORDS))?;
    let theirs = requester.and_then(|r| view.port(r));
    if theirs.is_none_or(|t| crate::path::common_pkey(&t.pkeys, &port.pkeys, None).is_none()) {
        return Err(Refused::Silent);
    }
    let cap = u16::from(port.info.guid_cap).max(1);
    if u16::from(rec.block) >= cap.div_ceil(8) {
        return Err(Refused::Status(sa_status::NO_RECORDS));
    }
    if rec.block == 0 && mask & COMP_GID0 != 0 {
        return Err(Refused::Status(sa_status::REQ_INVALID));
    }
    Ok((at, port.guid, cap))
}

/// The indexes of `block` a mask names, below the port's GUIDCap.
fn named(mask: u64, block: u8, cap: u16) -> impl Iterator<Item = u16> {
    let first = u16::from(block) * 8;
    (first..(first + 8).min(cap)).filter(move |i| mask & (COMP_GID0 << (i % 8)) != 0)
}

/// The record of `block` of `port` as it now is.
pub fn block_record(db: &SaDb, rec: &GuidInfoRecord, port: Guid) -> GuidInfoRecord {
    let mut out = GuidInfoRecord {
        lid: rec.lid,
        block: rec.block,
        guids: [0; 8],
    };
    if rec.block == 0 {
        out.guids[0] = port.0;
    }
    if let Some(t) = db.aliases.get(&port) {
        for (i, g) in t.range(u16::from(rec.block) * 8..u16::from(rec.block) * 8 + 8) {
            out.guids[usize::from(i % 8)] = g.0;
        }
    }
    out
}

fn in_use(db: &SaDb, view: &FabricView, g: Guid) -> bool {
    view.port_by_guid(g).is_some() || db.alias_port(g).is_some()
}

/// GUIDInfoRecord Set. `assigned_byte` is OpenSM's `sm_assigned_guid`.
pub fn set(
    db: &mut SaDb,
    view: &FabricView,
    requester: Option<(usize, u8)>,
    mask: u64,
    rec: &GuidInfoRecord,
    assigned_byte: u8,
) -> Result<GuidInfoRecord, Refused> {
    let (_, port, cap) = target(view, requester, mask, rec)?;
    let mut answer_zero = Vec::new();
    for i in named(mask, rec.block, cap) {
        let mut g = Guid(rec.guids[usize::from(i % 8)]);
        if g.0 == 0 {
            if db.aliases.get(&port).and_then(|t| t.get(&i)).is_some() {
                continue;
            }
            g = match db.assigned.get(&(port, i)) {
                Some(&a) => a,
                None => {
                    let Some(a) = next_assigned(db, view, assigned_byte) else {
                        return Err(Refused::Status(sa_status::NO_RESOURCES));
                    };
                    db.assigned.insert((port, i), a);
                    a
                }
            };
        }
        let here = db.aliases.get(&port).and_then(|t| t.get(&i)) == Some(&g);
        if here {
            continue;
        }
        if in_use(db, view, g) {
            answer_zero.push(i);
            continue;
        }
        db.aliases.entry(port).or_default().insert(i, g);
    }
    let mut out = block_record(db, rec, port);
    for i in answer_zero {
        out.guids[usize::from(i % 8)] = 0;
    }
    Ok(out)
}

fn next_assigned(db: &mut SaDb, view: &FabricView, byte: u8) -> Option<Guid> {
    for _ in 0..1000 {
        db.assigned_counter = db.assigned_counter.checked_add(1)?;
        let g = Guid(
            (ASSIGNED_VENDOR << 40) | (u64::from(byte) << 32) | u64::from(db.assigned_counter),
        );
        if !in_use(db, view, g) {
            return Some(g);
        }
    }
    None
}

/// GUIDInfoRecord Delete.
pub fn delete(
    db: &mut SaDb,
    view: &FabricView,
    requester: Option<(usize, u8)>,
    mask: u64,
    rec: &GuidInfoRecord,
) -> Result<GuidInfoRecord, Refused> {
    let (_, port, cap) = target(view, requester, mask, rec)?;
    let gone: Vec<(u16, Guid)> = named(mask, rec.block, cap)
        .filter_map(|i| {
            let g = *db.aliases.get(&port)?.get(&i)?;
            Some((i, g))
        })
        .collect();
    let prefix = view.subnet_prefix;
    let joined = |g: Guid| {
        let gid = mad::sa::Gid::new(prefix, g.0);
        db.groups.values().any(|grp| grp.members.contains_key(&gid))
    };
    if gone.iter().any(|&(_, g)| joined(g)) {
        return Err(Refused::Status(sa_status::REQ_DENIED));
    }
    if let Some(t) = db.aliases.get_mut(&port) {
        for (i, _) in &gone {
            t.remove(i);
        }
        if t.is_empty() {
            db.aliases.remove(&port);
        }
    }
    Ok(block_record(db, rec, port))
}

/// Every alias GUID with its end port's GUID.
pub fn alias_map(db: &SaDb) -> std::collections::BTreeMap<Guid, Guid> {
    db.aliases
        .iter()
        .flat_map(|(p, t)| t.values().map(move |a| (*a, *p)))
        .collect()
}
