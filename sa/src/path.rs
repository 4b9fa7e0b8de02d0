//! PathRecord and MultiPathRecord answers: the route a packet from one end port to another
//! takes through the LFTs, its MTU and rate (the smallest link on it), the P_Key both ends
//! share (refused when they share none or both are limited members) and the partition's SL.

use crate::view::{FabricView, ViewPort};
use fabric::Lid;
use mad::LinearForwardingTable;
use mad::sa::{Gid, MultiPathRecord, PathRecord, selector};

/// Rate codes (IBA Table 205) with their speed in 100 Mb/s units.
const RATES: &[(u8, u32)] = &[
    (2, 25),
    (5, 50),
    (3, 100),
    (11, 140),
    (6, 200),
    (15, 250),
    (19, 280),
    (4, 300),
    (7, 400),
    (20, 500),
    (12, 560),
    (8, 600),
    (9, 800),
    (16, 1000),
    (13, 1120),
    (10, 1200),
    (14, 1680),
    (17, 2000),
    (18, 3000),
    (21, 4000),
    (22, 6000),
];

/// Speed of a rate code (100 Mb/s units), 0 for an unknown code.
pub fn rate_speed(code: u8) -> u32 {
    RATES.iter().find(|r| r.0 == code).map_or(0, |r| r.1)
}

/// The largest rate code not faster than `speed`.
pub fn rate_code(speed: u32) -> u8 {
    RATES.iter().rfind(|r| r.1 <= speed).map_or(2, |r| r.0)
}

/// The next slower rate code than `code` (None: none slower, or an unknown code).
pub fn rate_below(code: u8) -> Option<u8> {
    let i = RATES.iter().position(|r| r.0 == code)?;
    i.checked_sub(1).map(|j| RATES[j].0)
}

/// The speed of a port's active link, 100 Mb/s units (width x lane speed).
pub(crate) fn port_speed(p: &ViewPort) -> u32 {
    let lanes = match p.info.link_width_active {
        1 => 1,
        2 => 4,
        4 => 8,
        8 => 12,
        16 => 2,
        _ => 4,
    };
    let lane = match p.info.link_speed_active {
        1 => 25,
        2 => 50,
        4 => 100,
        _ => 25,
    };
    lanes * lane
}

/// The MTU a port counts for on a path: its MtuCap, as OpenSM takes it for every port of
/// the path (`pr_rcv_get_path_parms`); NeighborMTU only when MtuCap is unknown (0). A
/// switch's port 0 has no neighbour (ibsim reports NeighborMTU 256 there): its MtuCap is
/// what a path ending at it carries.
pub(crate) fn port_mtu(p: &ViewPort) -> u8 {
    match (p.info.mtu_cap, p.info.neighbor_mtu) {
        (0, 0) => 4,
        (0, n) => n,
        (c, _) => c,
    }
}

/// What a walk through the fabric found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    /// Links crossed.
    pub hops: u8,
    /// MTU code of the smallest link.
    pub mtu: u8,
    /// Speed of the slowest link, 100 Mb/s units.
    pub speed: u32,
}

/// Follows the LFTs from end port `from` to `dlid`. None when a switch has no route, a link
/// is missing or the walk exceeds 64 links.
pub fn walk(view: &FabricView, from: (usize, u8), dlid: Lid) -> Option<Route> {
    let src = view.port(from)?;
    let mut route = Route {
        hops: 0,
        mtu: port_mtu(src),
        speed: port_speed(src),
    };
    if view.port_by_lid(dlid) == Some(from) {
        return Some(route);
    }
    let mut node = from.0;
    if !view.nodes.get(node)?.is_switch() {
        let (n, p) = src.remote?;
        let peer = view.port((n, p))?;
        route.hops += 1;
        route.mtu = route.mtu.min(port_mtu(peer));
        route.speed = route.speed.min(port_speed(peer));
        node = n;
        if !view.nodes.get(node)?.is_switch() {
            return view
                .arrived((n, p), view.port_by_lid(dlid))
                .then_some(route);
        }
    }
    for _ in 0..64 {
        let sw = view.nodes.get(node)?;
        if let Some(at) = view.port_by_lid(dlid).filter(|x| x.0 == node) {
            // The path ends at this switch's port 0: its MTU and rate count too.
            if let Some(p0) = view.port(at) {
                route.mtu = route.mtu.min(port_mtu(p0));
                route.speed = route.speed.min(port_speed(p0));
            }
            return Some(route);
        }
        let out = sw.lft_port(dlid);
        if out == LinearForwardingTable::NO_PATH || out == 0 {
            return None;
        }
        let egress = view.port((node, out))?;
        let (n, p) = egress.remote?;
        let peer = view.port((n, p))?;
        route.hops += 1;
        route.mtu = route.mtu.min(port_mtu(egress)).min(port_mtu(peer));
        route.speed = route.speed.min(port_speed(egress)).min(port_speed(peer));
        if !view.nodes.get(n)?.is_switch() {
            return view
                .arrived((n, p), view.port_by_lid(dlid))
                .then_some(route);
        }
        node = n;
    }
    None
}

/// The key of `src`'s table to use towards `dst`: the first entry (in `src`'s table order)
/// whose partition `dst` also holds with at least one of the two a full member; restricted
/// to partition `want` when given. An empty table counts as the default partition, full.
pub fn common_pkey(src: &[u16], dst: &[u16], want: Option<u16>) -> Option<u16> {
    const DEFAULT: &[u16] = &[0xFFFF];
    let src = if src.is_empty() { DEFAULT } else { src };
    let dst = if dst.is_empty() { DEFAULT } else { dst };
    src.iter().copied().find(|&s| {
        let part = s & 0x7FFF;
        part != 0
            && want.is_none_or(|w| w & 0x7FFF == part)
            && dst
                .iter()
                .any(|&d| d & 0x7FFF == part && (s & 0x8000 != 0 || d & 0x8000 != 0))
    })
}

/// Applies a selector to an MTU (codes ordered 1 < 2 < ... < 5).
fn select_mtu(have: u8, sel: u8, want: u8) -> Option<u8> {
    match sel {
        selector::EXACTLY => (have >= want).then_some(want),
        selector::GREATER => (have > want).then_some(have),
        selector::LESS => (want > 1).then(|| have.min(want - 1)),
        _ => Some(have),
    }
}

/// Applies a selector to a rate (ordered by speed).
fn select_rate(have: u32, sel: u8, want: u8) -> Option<u8> {
    let w = rate_speed(want);
    match sel {
        selector::EXACTLY => (have >= w && w > 0).then_some(want),
        selector::GREATER => (have > w).then(|| rate_code(have)),
        selector::LESS => {
            let below = RATES.iter().rfind(|r| r.1 < w && r.1 <= have)?;
            Some(below.0)
        }
        _ => Some(rate_code(have)),
    }
}

/// The constraints of a request on the answer.
#[derive(Clone, Copy, Debug, Default)]
pub struct PathQuery {
    /// Wanted P_Key (partition).
    pub pkey: Option<u16>,
    /// Wanted SL.
    pub sl: Option<u8>,
    /// MTU selector and value.
    pub mtu: Option<(u8, u8)>,
    /// Rate selector and value.
    pub rate: Option<(u8, u8)>,
    /// Only reversible paths.
    pub reversible: bool,
    /// PacketLifeTime the SA reports for a path that leaves the port.
    pub pkt_life: u8,
    /// ServiceID asked for (the QoS policy's ULP and match rules look at it).
    pub service_id: Option<u64>,
    /// QoSClass asked for (the QoS policy's match rules).
    pub qos_class: Option<u16>,
}

/// What the QoS policy's port groups may name of an end port of the view.
fn with_facts<R>(
    view: &FabricView,
    at: (usize, u8),
    f: impl FnOnce(&qos::PortFacts<'_>) -> R,
) -> Option<R> {
    let n = view.nodes.get(at.0)?;
    let p = view.port(at)?;
    let desc = n.desc.text();
    let pkeys: Vec<fabric::PKey> = p.pkeys.iter().map(|&k| fabric::PKey(k)).collect();
    let parts: Vec<&str> = p
        .pkeys
        .iter()
        .filter_map(|k| view.partition_names.get(&(k & 0x7FFF)).map(String::as_str))
        .collect();
    let facts = qos::PortFacts {
        node_guid: n.info.node_guid,
        port_guid: p.guid,
        port_num: at.1,
        node_type: fabric::NodeType::from_wire(n.info.node_type)?,
        node_desc: &desc,
        pkeys: &pkeys,
        partitions: &parts,
        is_sm_port: p.guid == view.sm.port_guid,
    };
    Some(f(&facts))
}

/// The switch an end port hangs off: its own node for a switch's port 0, the peer's node for
/// a CA port (None: not cabled).
fn switch_of(view: &FabricView, at: (usize, u8)) -> Option<fabric::Guid> {
    let n = view.nodes.get(at.0)?;
    if n.is_switch() {
        return Some(n.info.node_guid);
    }
    let (peer, _) = view.port(at)?.remote?;
    view.nodes
        .get(peer)
        .filter(|p| p.is_switch())
        .map(|p| p.info.node_guid)
}

/// The SL of a path: the routing engine's for the switch pair when it requires one, else the
/// QoS policy's level for it when one matches, else its partition's.
fn path_sl(view: &FabricView, s: (usize, u8), d: (usize, u8), pkey: u16, q: &PathQuery) -> u8 {
    if let Some(sl) = view.path_sl.as_deref().and_then(|p| {
        let (a, b) = (switch_of(view, s)?, switch_of(view, d)?);
        p.get(a, b)
    }) {
        return sl;
    }
    let by_policy = view.qos_policy.as_deref().and_then(|pol| {
        with_facts(view, s, |src| {
            with_facts(view, d, |dst| {
                pol.level_for_path(&qos::PathQuery {
                    source: src,
                    destination: dst,
                    pkey: Some(fabric::PKey(pkey)),
                    service_id: q.service_id,
                    qos_class: q.qos_class,
                })
                .map(|l| l.sl)
            })
        })
        .flatten()
        .flatten()
    });
    by_policy.unwrap_or_else(|| {
        view.partition_sl
            .get(&(pkey & 0x7FFF))
            .copied()
            .unwrap_or(0)
    })
}

/// The path record from end port `s` (using LID `slid`) to end port `d` (LID `dlid`), or
/// None when there is none under `q`.
pub fn path_record(
    view: &FabricView,
    s: (usize, u8),
    slid: Lid,
    d: (usize, u8),
    dlid: Lid,
    q: &PathQuery,
) -> Option<PathRecord> {
    let sp = view.port(s)?;
    let dp = view.port(d)?;
    let fwd = walk(view, s, dlid)?;
    let rev = walk(view, d, slid);
    if q.reversible && rev.is_none() {
        return None;
    }
    let pkey = common_pkey(&sp.pkeys, &dp.pkeys, q.pkey)?;
    let sl = path_sl(view, s, d, pkey, q);
    if q.sl.is_some_and(|w| w != sl) {
        return None;
    }
    let mtu = match q.mtu {
        Some((sel, v)) => select_mtu(fwd.mtu, sel, v)?,
        None => fwd.mtu,
    };
    let rate = match q.rate {
        Some((sel, v)) => select_rate(fwd.speed, sel, v)?,
        None => rate_code(fwd.speed),
    };
    Some(PathRecord {
        service_id: 0,
        dgid: view.gid_of(dp),
        sgid: view.gid_of(sp),
        dlid,
        slid,
        raw_traffic: false,
        flow_label: 0,
        hop_limit: 0,
        tclass: 0,
        reversible: rev.is_some(),
        numb_path: 0,
        pkey,
        qos_class: 0,
        sl,
        mtu_selector: selector::EXACTLY,
        mtu,
        rate_selector: selector::EXACTLY,
        rate,
        pkt_life_selector: selector::EXACTLY,
        pkt_life: if fwd.hops == 0 { 0 } else { q.pkt_life },
        preference: 0,
    })
}

/// One end of a path: the port (node index, port number) and the LID used.
pub type End = ((usize, u8), Lid);

/// Ends of a path query: (port, LID) pairs named by a GID, a LID, or every end port.
pub fn ends(view: &FabricView, gid: Option<Gid>, lid: Option<Lid>) -> Result<Vec<End>, u16> {
    if let Some(g) = gid {
        if g.prefix() != view.subnet_prefix {
            return Err(mad::sa::sa_status::REQ_INVALID_GID);
        }
        let at = view
            .port_by_guid(fabric::Guid(g.guid()))
            .ok_or(mad::sa::sa_status::REQ_INVALID_GID)?;
        let base = view.port(at).map(|p| p.lid).unwrap_or_default();
        let l = match lid {
            Some(l) if view.port_by_lid(l) == Some(at) => l,
            Some(_) => return Ok(Vec::new()),
            None => base,
        };
        return Ok(vec![(at, l)]);
    }
    if let Some(l) = lid {
        return Ok(view.port_by_lid(l).map(|at| (at, l)).into_iter().collect());
    }
    Ok(view
        .end_ports()
        .filter(|(_, p)| p.lid.0 != 0)
        .map(|(n, p)| ((n, p.num), p.lid))
        .collect())
}

/// The PathRecords a MultiPathRecord request asks for (every SGID x DGID pair, at most
/// NumbPath when it is not 0).
pub fn multipath(view: &FabricView, m: &MultiPathRecord, q: &PathQuery) -> Vec<PathRecord> {
    let mut out = Vec::new();
    let limit = if m.numb_path == 0 {
        usize::MAX
    } else {
        usize::from(m.numb_path)
    };
    for s in m.sgids() {
        let Ok(src) = ends(view, Some(*s), None) else {
            continue;
        };
        for d in m.dgids() {
            let Ok(dst) = ends(view, Some(*d), None) else {
                continue;
            };
            for &(sa, sl) in &src {
                for &(da, dl) in &dst {
                    if out.len() >= limit {
                        return out;
                    }
                    if let Some(p) = path_record(view, sa, sl, da, dl, q) {
                        out.push(p);
                    }
                }
            }
        }
    }
    out
}
