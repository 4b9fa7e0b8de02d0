//! MCMemberRecord: create, join, leave and query multicast groups, with the membership
//! rules of IBA 15.2.5.17 and the P_Key rules of the partition policy:
//!
//! * a join names the joining port by PortGID; it must be the requester's own port unless
//!   ProxyJoin is set by a trusted requester;
//! * a group is created by a join to an MGID that does not exist (or an all-zero MGID: the
//!   SA assigns `ff1<scope>:a01b:<pkey>::<n>`) whose ComponentMask names Q_Key, P_Key, SL,
//!   FlowLabel and TClass, with FullMember in its JoinState;
//! * the joining port must hold the group's partition in its P_Key table; a limited member
//!   cannot create a group, and may join only a group that already has a member holding the
//!   partition as full member (else both ends would be limited and could not talk);
//! * a join to an existing group must agree with the group's Q_Key, P_Key, SL, TClass,
//!   FlowLabel, MTU and rate where its mask names them;
//! * MLIDs are given from 0xC000 upwards, the first free one;
//! * a leave (Delete) clears the JoinState bits it names; a port with none left is removed;
//!   a group without members is removed unless the partition policy created it.

use crate::db::{Group, Member, SaDb};
use crate::view::FabricView;
use fabric::Lid;
use mad::sa::{Gid, McMemberRecord, join_state, sa_status};

/// A group the partition policy creates (an IPoIB broadcast group).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PolicyGroup {
    /// MGID.
    pub mgid: Gid,
    /// P_Key (full bit set).
    pub pkey: u16,
    /// MTU code.
    pub mtu: u8,
    /// Rate code.
    pub rate: u8,
    /// SL.
    pub sl: u8,
    /// Scope.
    pub scope: u8,
    /// Q_Key.
    pub qkey: u32,
    /// TClass.
    pub tclass: u8,
    /// FlowLabel.
    pub flow_label: u32,
}

/// The policy's multicast groups, in policy order.
pub fn policy_groups(policy: &partitions::Policy) -> Vec<PolicyGroup> {
    policy
        .partitions
        .iter()
        .flat_map(|p| p.groups.iter())
        .map(|g| PolicyGroup {
            mgid: Gid(g.mgid),
            pkey: g.pkey.0 | 0x8000,
            mtu: g.mtu,
            rate: g.rate,
            sl: g.sl,
            scope: g.scope,
            qkey: g.q_key,
            tclass: g.tclass,
            flow_label: g.flow_label,
        })
        .collect()
}

/// Makes every policy group exist (new ones get the first free MLID, in order). Returns
/// true when the database changed.
pub fn ensure_policy_groups(db: &mut SaDb, groups: &[PolicyGroup], pkt_life: u8) -> bool {
    let mut changed = false;
    for g in groups {
        if let Some(e) = db.groups.get_mut(&g.mgid) {
            if !e.from_policy {
                e.from_policy = true;
                changed = true;
            }
            continue;
        }
        let Some(mlid) = db.free_mlid() else { break };
        db.groups.insert(
            g.mgid,
            Group {
                mgid: g.mgid,
                mlid,
                pkey: g.pkey,
                qkey: g.qkey,
                mtu: g.mtu,
                rate: g.rate,
                sl: g.sl,
                flow_label: g.flow_label,
                tclass: g.tclass,
                scope: g.scope,
                hop_limit: 0,
                pkt_life,
                from_policy: true,
                members: Default::default(),
            },
        );
        changed = true;
    }
    changed
}

/// The record of `g` as seen by member `port` (zero GID and JoinState for a group
/// listing without a member).
pub fn group_record(g: &Group, port: Option<(Gid, Member)>) -> McMemberRecord {
    let (port_gid, m) = port.unwrap_or_default();
    McMemberRecord {
        mgid: g.mgid,
        port_gid,
        q_key: g.qkey,
        mlid: g.mlid,
        mtu_selector: 2,
        mtu: g.mtu,
        tclass: g.tclass,
        pkey: g.pkey,
        rate_selector: 2,
        rate: g.rate,
        pkt_life_selector: 2,
        pkt_life: g.pkt_life,
        sl: g.sl,
        flow_label: g.flow_label,
        hop_limit: g.hop_limit,
        scope: g.scope,
        join_state: m.join_state,
        proxy_join: m.proxy_join,
    }
}

/// Every (group, member) record, and a member-less record for each group without members.
pub fn all_records(db: &SaDb) -> Vec<McMemberRecord> {
    let mut out = Vec::new();
    for g in db.groups.values() {
        if g.members.is_empty() {
            out.push(group_record(g, None));
        }
        for (gid, m) in &g.members {
            out.push(group_record(g, Some((*gid, *m))));
        }
    }
    out
}

/// The key the port holds for partition `pkey` (None: not a member).
fn port_key(pkeys: &[u16], pkey: u16) -> Option<u16> {
    let part = pkey & 0x7FFF;
    if pkeys.is_empty() {
        return (part == 0x7FFF).then_some(0xFFFF);
    }
    let mut best = None;
    for &k in pkeys {
        if k & 0x7FFF == part {
            if k & 0x8000 != 0 {
                return Some(k);
            }
            best = Some(k);
        }
    }
    best
}

/// The SA-assigned MGID for a create with a zero MGID.
fn assigned_mgid(db: &SaDb, scope: u8, pkey: u16) -> Gid {
    let mut n: u32 = 1;
    loop {
        let mut g = [0u8; 16];
        g[0] = 0xFF;
        g[1] = 0x10 | (scope & 0xF);
        g[2] = 0xA0;
        g[3] = 0x1B;
        g[4..6].copy_from_slice(&pkey.to_be_bytes());
        g[12..16].copy_from_slice(&n.to_be_bytes());
        let gid = Gid(g);
        if !db.groups.contains_key(&gid) {
            return gid;
        }
        n += 1;
    }
}

/// Components a create must name (IBA o15-0.1.x; OpenSM's required create mask).
const CREATE_MASK: u64 = McMemberRecord::CM_QKEY
    | McMemberRecord::CM_PKEY
    | McMemberRecord::CM_SL
    | McMemberRecord::CM_FLOW_LABEL
    | McMemberRecord::CM_TCLASS;

/// A join (Set MCMemberRecord) by the port at `requester`. Ok: the record to answer with
/// (the database is changed); Err: the SA status.
pub fn join(
    db: &mut SaDb,
    view: &FabricView,
    requester: Option<(usize, u8)>,
    trusted: bool,
    mask: u64,
    req: &McMemberRecord,
    pkt_life: u8,
) -> Result<McMemberRecord, u16> {
    if mask & McMemberRecord::CM_PORT_GID == 0 || mask & McMemberRecord::CM_JOIN_STATE == 0 {
        return Err(sa_status::REQ_INSUFFICIENT_COMPONENTS);
    }
    let js = req.join_state & 0xF;
    if js == 0 {
        return Err(sa_status::REQ_INVALID);
    }
    if req.port_gid.prefix() != view.subnet_prefix {
        return Err(sa_status::REQ_INVALID_GID);
    }
    let port_at = view
        .port_by_guid(fabric::Guid(req.port_gid.guid()))
        .ok_or(sa_status::REQ_INVALID_GID)?;
    let pkeys = view
        .port(port_at)
        .map(|p| p.pkeys.clone())
        .unwrap_or_default();
    // A join for another port (a proxy join) is taken from a port that shares a partition
    // with it, or from a trusted requester, as OpenSM takes it; the member then records
    // that it was joined by proxy (o15-0.1.2).
    let proxy = Some(port_at) != requester;
    if proxy && !trusted && !shares_partition(view, requester, &pkeys) {
        return Err(sa_status::REQ_INVALID);
    }
    let mgid = req.mgid;
    let exists = !mgid.is_zero() && db.groups.contains_key(&mgid);
    if !exists {
        // Create.
        if mask & CREATE_MASK != CREATE_MASK {
            return Err(sa_status::REQ_INSUFFICIENT_COMPONENTS);
        }
        if !mgid.is_zero() && !mgid_valid(&mgid) {
            return Err(sa_status::REQ_INVALID);
        }
        if js & join_state::FULL == 0 {
            return Err(sa_status::REQ_INVALID);
        }
        let key = port_key(&pkeys, req.pkey).ok_or(sa_status::REQ_INVALID)?;
        if key & 0x8000 == 0 {
            // A limited member cannot create a group.
            return Err(sa_status::REQ_INVALID);
        }
        let scope = if mgid.is_zero() {
            if mask & McMemberRecord::CM_SCOPE != 0 {
                req.scope
            } else {
                2
            }
        } else {
            mgid.mc_scope()
        };
        let mgid = if mgid.is_zero() {
            assigned_mgid(db, scope, req.pkey | 0x8000)
        } else {
            mgid
        };
        let (mtu, rate) = realizable(mask, req, view.port(port_at))?;
        let mlid = db.free_mlid().ok_or(sa_status::NO_RESOURCES)?;
        let mut g = Group {
            mgid,
            mlid,
            pkey: req.pkey | 0x8000,
            qkey: req.q_key,
            mtu,
            rate,
            sl: req.sl,
            flow_label: req.flow_label,
            tclass: req.tclass,
            scope,
            hop_limit: req.hop_limit,
            pkt_life,
            from_policy: false,
            members: Default::default(),
        };
        let m = Member {
            join_state: js,
            proxy_join: proxy,
        };
        g.members.insert(req.port_gid, m);
        let rec = group_record(&g, Some((req.port_gid, m)));
        db.groups.insert(mgid, g);
        return Ok(rec);
    }
    let g = db.groups.get(&mgid).ok_or(sa_status::REQ_INVALID)?;
    if let Some(m) = g.members.get(&req.port_gid)
        && !may_modify(view, requester, trusted, proxy, m, g.pkey)
    {
        return Err(sa_status::REQ_INVALID);
    }
    let disagree = (mask & McMemberRecord::CM_QKEY != 0 && req.q_key != g.qkey)
        || (mask & McMemberRecord::CM_PKEY != 0 && req.pkey & 0x7FFF != g.pkey & 0x7FFF)
        || (mask & McMemberRecord::CM_SL != 0 && req.sl != g.sl)
        || (mask & McMemberRecord::CM_TCLASS != 0 && req.tclass != g.tclass)
        || (mask & McMemberRecord::CM_FLOW_LABEL != 0 && req.flow_label != g.flow_label)
        || (mask & McMemberRecord::CM_MLID != 0 && req.mlid != g.mlid)
        || (mask & McMemberRecord::CM_MTU != 0
            && !selector_ok(
                g.mtu,
                req.mtu,
                mask_sel(mask, McMemberRecord::CM_MTU_SELECTOR, req.mtu_selector),
            ))
        || (mask & McMemberRecord::CM_RATE != 0
            && !rate_selector_ok(
                g.rate,
                req.rate,
                mask_sel(mask, McMemberRecord::CM_RATE_SELECTOR, req.rate_selector),
            ));
    if disagree {
        return Err(sa_status::REQ_INVALID);
    }
    let key = port_key(&pkeys, g.pkey).ok_or(sa_status::REQ_INVALID)?;
    if key & 0x8000 == 0 {
        // A limited member needs a full member of the partition in the group.
        let has_full = g.members.keys().any(|m| {
            view.port_by_guid(fabric::Guid(m.guid()))
                .and_then(|at| view.port(at))
                .and_then(|p| port_key(&p.pkeys, g.pkey))
                .is_some_and(|k| k & 0x8000 != 0)
        });
        if !has_full {
            return Err(sa_status::REQ_INVALID);
        }
    }
    let g = db.groups.get_mut(&mgid).ok_or(sa_status::REQ_INVALID)?;
    let m = g.members.entry(req.port_gid).or_insert(Member {
        join_state: 0,
        proxy_join: proxy,
    });
    m.join_state |= js;
    let m = *m;
    Ok(group_record(g, Some((req.port_gid, m))))
}

/// A requested MGID a group may be created with (IBA o15-0.1.6 and 14-a/b; the checks
/// OpenSM makes, `validate_requested_mgid`, answered ERR_REQ_INVALID as osmtest expects):
/// prefix 0xFF; IPoIB-signed MGIDs (0x401B, 0x601B) are taken as they are; otherwise the
/// reserved flag bits are zero and an SA-assigned signature (0xA01B) is not link-local.
fn mgid_valid(mgid: &Gid) -> bool {
    let g = &mgid.0;
    let signature = u16::from_be_bytes([g[2], g[3]]);
    if g[0] != 0xFF {
        return false;
    }
    if signature == 0x401B || signature == 0x601B {
        return true;
    }
    g[1] & 0xE0 == 0 && !(signature == 0xA01B && g[1] & 0x0F == 2)
}

/// The MTU and rate a new group gets from a create (IBA o15-0.2.3 leaves the values the SA
/// picks to the vendor; these are OpenSM's, `mgrp_request_is_realizable`): without a value
/// and its selector (or with selector 3), the requesting port's NeighborMTU (its MtuCap when
/// unknown) and the rate of its active link; "greater than" gives the port's value when it
/// exceeds the one asked for and is refused otherwise; "less than" gives the port's value
/// when the one asked for exceeds it, else the next smaller one; "exactly" the one asked
/// for. A result outside 256-4096 bytes or 2.5-1200 Gb/s is refused (REQ_INVALID).
fn realizable(
    mask: u64,
    req: &McMemberRecord,
    port: Option<&crate::view::ViewPort>,
) -> Result<(u8, u8), u16> {
    let given = |value, sel| mask & value != 0 && mask & sel != 0;
    let port_mtu = port.map_or(4, |p| match p.info.neighbor_mtu {
        0 => crate::path::port_mtu(p),
        n => n,
    });
    let mtu = if !given(McMemberRecord::CM_MTU, McMemberRecord::CM_MTU_SELECTOR)
        || req.mtu_selector == 3
    {
        port_mtu
    } else {
        let want = req.mtu;
        let mtu = match req.mtu_selector {
            0 if want >= port_mtu => return Err(sa_status::REQ_INVALID),
            0 => port_mtu,
            1 if want > port_mtu => port_mtu,
            1 => want.wrapping_sub(1),
            _ => want,
        };
        if !(1..=5).contains(&mtu) {
            return Err(sa_status::REQ_INVALID);
        }
        mtu
    };
    let port_rate = port.map_or(3, |p| crate::path::rate_code(crate::path::port_speed(p)));
    let rate = if !given(McMemberRecord::CM_RATE, McMemberRecord::CM_RATE_SELECTOR)
        || req.rate_selector == 3
    {
        port_rate
    } else {
        let (want, have) = (req.rate, port_rate);
        let (ws, hs) = (crate::path::rate_speed(want), crate::path::rate_speed(have));
        let rate = match req.rate_selector {
            0 if ws >= hs => return Err(sa_status::REQ_INVALID),
            0 => have,
            1 if ws > hs => have,
            1 => crate::path::rate_below(want).ok_or(sa_status::REQ_INVALID)?,
            _ => want,
        };
        if !(2..=24).contains(&rate) {
            return Err(sa_status::REQ_INVALID);
        }
        rate
    };
    Ok((mtu, rate))
}

/// Does the requesting port share a partition with a port holding `pkeys` (the same
/// partition number, not both limited members), as a proxy join needs?
fn shares_partition(view: &FabricView, requester: Option<(usize, u8)>, pkeys: &[u16]) -> bool {
    let Some(theirs) = requester.and_then(|r| view.port(r)) else {
        return false;
    };
    let default = [0xFFFF];
    let (a, b) = (
        if pkeys.is_empty() {
            &default[..]
        } else {
            pkeys
        },
        if theirs.pkeys.is_empty() {
            &default[..]
        } else {
            &theirs.pkeys[..]
        },
    );
    a.iter().any(|&k| {
        k & 0x7FFF != 0
            && b.iter()
                .any(|&l| l & 0x7FFF == k & 0x7FFF && (k | l) & 0x8000 != 0)
    })
}

/// May the request change the stored membership `m` (o15-0.1.2, OpenSM's
/// `validate_modify`)? Its own port, a trusted requester, or, for a member joined by proxy,
/// a requester in the group's partition.
fn may_modify(
    view: &FabricView,
    requester: Option<(usize, u8)>,
    trusted: bool,
    proxy: bool,
    m: &Member,
    group_pkey: u16,
) -> bool {
    if !proxy || trusted {
        return true;
    }
    m.proxy_join
        && requester
            .and_then(|r| view.port(r))
            .is_some_and(|p| port_key(&p.pkeys, group_pkey).is_some())
}

fn mask_sel(mask: u64, bit: u64, sel: u8) -> u8 {
    if mask & bit != 0 { sel } else { 2 }
}

fn selector_ok(have: u8, want: u8, sel: u8) -> bool {
    match sel {
        0 => have > want,
        1 => have < want,
        2 => have == want,
        _ => true,
    }
}

fn rate_selector_ok(have: u8, want: u8, sel: u8) -> bool {
    let (h, w) = (crate::path::rate_speed(have), crate::path::rate_speed(want));
    match sel {
        0 => h > w,
        1 => h < w,
        2 => have == want,
        _ => true,
    }
}

/// A leave (Delete MCMemberRecord). Ok: the record to answer with.
pub fn leave(
    db: &mut SaDb,
    view: &FabricView,
    requester: Option<(usize, u8)>,
    trusted: bool,
    mask: u64,
    req: &McMemberRecord,
) -> Result<McMemberRecord, u16> {
    if mask & McMemberRecord::CM_MGID == 0 || mask & McMemberRecord::CM_PORT_GID == 0 {
        return Err(sa_status::REQ_INSUFFICIENT_COMPONENTS);
    }
    let port_at = view.port_by_guid(fabric::Guid(req.port_gid.guid()));
    if port_at.is_none() {
        return Err(sa_status::REQ_DENIED);
    }
    let proxy = port_at != requester;
    let g = db.groups.get_mut(&req.mgid).ok_or(sa_status::REQ_INVALID)?;
    let gpkey = g.pkey;
    let m = g
        .members
        .get_mut(&req.port_gid)
        .ok_or(sa_status::REQ_INVALID)?;
    if !may_modify(view, requester, trusted, proxy, m, gpkey) {
        return Err(sa_status::REQ_INVALID);
    }
    let clear = if mask & McMemberRecord::CM_JOIN_STATE != 0 {
        req.join_state & 0xF
    } else {
        0xF
    };
    // o15-0.1.14: the JoinState bits a leave names must all be held by the member (and
    // name at least one), as OpenSM checks (`validate_delete`); else nothing changes.
    if mask & McMemberRecord::CM_JOIN_STATE != 0
        && (clear & m.join_state == 0 || clear & !m.join_state != 0)
    {
        return Err(sa_status::REQ_INVALID);
    }
    m.join_state &= !clear;
    let left = *m;
    // The answer carries the JoinState the member keeps (0: it left), as OpenSM's does and
    // osmtest checks (o15-0.1.14).
    let rec = group_record(g, Some((req.port_gid, left)));
    if left.join_state == 0 {
        g.members.remove(&req.port_gid);
    }
    if g.members.is_empty() && !g.from_policy {
        db.groups.remove(&req.mgid);
    }
    Ok(rec)
}

/// The groups as the sweeper's multicast programming needs them: MLID and member ports.
pub fn forwarding_groups(db: &SaDb) -> Vec<(Lid, Vec<fabric::Guid>)> {
    db.groups
        .values()
        .map(|g| {
            (
                g.mlid,
                g.members
                    .keys()
                    .map(|gid| fabric::Guid(gid.guid()))
                    .collect(),
            )
        })
        .collect()
}
