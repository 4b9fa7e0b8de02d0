//! Fabric reads of the admin API (SmInfo, nodes, ports, routes, trace), computed from the
//! replicated state (LIDs, programmed LFTs and P_Key tables, master record) and the
//! master's discovered topology. Pure functions: the daemon's service decides where they
//! run; an unknown LID, port or a LID that is not a switch is an [`AdminError`].

use super::AdminError;
use crate::{NO_ROUTE, ReplicatedState};
use fabric::{Guid, NodeId, NodeType, PortNum, PortRef, Topology};
use proto::admin::*;
use std::collections::BTreeMap;

/// Name of a node type as the API spells it.
pub fn type_name(t: NodeType) -> &'static str {
    match t {
        NodeType::Ca => "ca",
        NodeType::Switch => "switch",
        NodeType::Router => "router",
    }
}

/// LID index: every LID of every LMC range -> (port GUID, base, lmc).
pub fn lid_index(st: &ReplicatedState) -> BTreeMap<u16, (Guid, u16, u8)> {
    let mut m = BTreeMap::new();
    for (g, a) in st.guid2lid() {
        let n = 1u32 << a.lmc;
        for off in 0..n {
            let lid = u32::from(a.base.0) + off;
            if lid <= 0xBFFF {
                m.insert(lid as u16, (*g, a.base.0, a.lmc));
            }
        }
    }
    m
}

/// The node and port owning a port GUID (a switch: port 0).
fn node_of_port_guid(t: &Topology, g: Guid) -> Option<(NodeId, u8)> {
    for (id, n) in t.nodes() {
        if n.is_switch() && n.ports[0].guid == g {
            return Some((id, 0));
        }
        if n.node_guid == g && n.is_switch() {
            return Some((id, 0));
        }
        for pn in n.port_numbers() {
            if n.ports[pn.0 as usize].guid == g && !n.is_switch() {
                return Some((id, pn.0));
            }
        }
    }
    None
}

/// The node owning a LID, with the port the LID belongs to.
pub fn node_of_lid(st: &ReplicatedState, t: &Topology, lid: u16) -> Option<(NodeId, u8)> {
    let idx = lid_index(st);
    let (g, _, _) = idx.get(&lid)?;
    node_of_port_guid(t, *g)
}

fn base_lid(st: &ReplicatedState, g: Guid) -> (u16, u8) {
    st.lid_of(g).map_or((0, 0), |a| (a.base.0, a.lmc))
}

fn node_lid(st: &ReplicatedState, t: &Topology, id: NodeId) -> u16 {
    let n = t.node(id);
    if n.is_switch() {
        return base_lid(st, n.ports[0].guid).0;
    }
    n.port_numbers()
        .map(|p| base_lid(st, n.ports[p.0 as usize].guid).0)
        .find(|l| *l != 0)
        .unwrap_or(0)
}

/// SmInfo from the master record.
pub fn sm_info(st: &ReplicatedState, priority_if_master: Option<u8>) -> SmInfoReply {
    let m = st.master();
    let sm_guid = m.map_or(0, |m| m.sm_port_guid);
    let sm_lid = if sm_guid != 0 {
        base_lid(st, Guid(sm_guid)).0 as u32
    } else {
        0
    };
    SmInfoReply {
        sm_guid,
        sm_lid: if sm_lid == 0 {
            m.map_or(0, |m| m.sm_lid)
        } else {
            sm_lid
        },
        priority: priority_if_master.map_or(0, u32::from),
        state: if m.is_some() { 3 } else { 0 },
        state_name: if m.is_some() {
            "SMINFO_MASTER".into()
        } else {
            "SMINFO_NOTACTIVE".into()
        },
        activity_count: st.applied_index(),
        term: m.map_or(0, |m| m.term),
        replica_id: m.map_or(0, |m| m.replica_id),
    }
}

fn width_name(lanes: u8) -> String {
    format!("{lanes}x")
}

/// Nodes, filtered.
pub fn list_nodes(st: &ReplicatedState, t: &Topology, req: &ListNodesRequest) -> ListNodesReply {
    let mut nodes = Vec::new();
    for (id, n) in t.nodes() {
        let ty = type_name(n.node_type);
        if !req.node_type.is_empty() && !req.node_type.eq_ignore_ascii_case(ty) {
            continue;
        }
        if !req.name_contains.is_empty() && !n.description.contains(&req.name_contains) {
            continue;
        }
        if req.guid != 0
            && n.node_guid.0 != req.guid
            && !n.ports.iter().any(|p| p.guid.0 == req.guid)
        {
            continue;
        }
        let links = n
            .port_numbers()
            .filter_map(|pn| {
                let p = &n.ports[pn.0 as usize];
                let r = p.remote?;
                let rn = t.node(r.node);
                Some(PortLink {
                    port: u32::from(pn.0),
                    port_guid: p.guid.0,
                    width: width_name(p.width.lanes()),
                    speed: p.speed.name().to_string(),
                    remote_node_guid: rn.node_guid.0,
                    remote_port: u32::from(r.port.0),
                    remote_description: rn.description.clone(),
                })
            })
            .collect();
        nodes.push(NodeEntry {
            node_type: ty.into(),
            node_guid: n.node_guid.0,
            description: n.description.clone(),
            num_ports: u32::from(n.num_ports()),
            lid: u32::from(node_lid(st, t, id)),
            links,
        });
    }
    ListNodesReply {
        nodes,
        applied_index: st.applied_index(),
    }
}

fn unknown_lid(lid: u32) -> AdminError {
    AdminError::NoLid(lid)
}

/// One port.
pub fn get_port(
    st: &ReplicatedState,
    t: &Topology,
    req: &GetPortRequest,
) -> Result<GetPortReply, AdminError> {
    let lid = u16::try_from(req.lid).map_err(|_| unknown_lid(req.lid))?;
    let (id, own_port) = node_of_lid(st, t, lid).ok_or_else(|| unknown_lid(req.lid))?;
    let n = t.node(id);
    let pn = u8::try_from(req.port).ok().filter(|p| *p <= n.num_ports());
    let Some(pn) = pn else {
        return Err(AdminError::NoPort {
            node_guid: n.node_guid.0,
            description: n.description.clone(),
            num_ports: n.num_ports(),
            port: req.port,
        });
    };
    if !n.is_switch() && pn == 0 {
        return Err(AdminError::CaPortZero { lid, own_port });
    }
    let p = &n.ports[pn as usize];
    let lid_guid = if n.is_switch() {
        n.ports[0].guid
    } else {
        p.guid
    };
    let (base, lmc) = base_lid(st, lid_guid);
    let remote = p
        .remote
        .map(|r| (t.node(r.node).node_guid.0, u32::from(r.port.0)));
    let cabled = remote.is_some() || pn == 0;
    let master_sm_lid = st
        .port_info(n.node_guid, PortNum(pn))
        .and_then(|pi| pi.master_sm_lid)
        .unwrap_or_else(|| sm_info(st, None).sm_lid);
    Ok(GetPortReply {
        node_guid: n.node_guid.0,
        node_description: n.description.clone(),
        node_type: type_name(n.node_type).into(),
        port: u32::from(pn),
        port_guid: p.guid.0,
        lid: u32::from(base),
        lmc: u32::from(lmc),
        link_width: if remote.is_some() {
            width_name(p.width.lanes())
        } else {
            String::new()
        },
        link_speed: if remote.is_some() {
            p.speed.name().to_string()
        } else {
            String::new()
        },
        port_state: if cabled { "Active" } else { "Down" }.into(),
        remote_node_guid: remote.map_or(0, |r| r.0),
        remote_port: remote.map_or(0, |r| r.1),
        master_sm_lid,
        pkeys: st
            .pkey_table(n.node_guid, PortNum(pn))
            .map(|k| k.iter().map(|k| u32::from(*k)).collect())
            .unwrap_or_default(),
        source: "replicated".into(),
        ..GetPortReply::default()
    })
}

/// A switch's LFT.
pub fn get_route(
    st: &ReplicatedState,
    t: &Topology,
    req: &GetRouteRequest,
) -> Result<GetRouteReply, AdminError> {
    let lid = u16::try_from(req.lid).map_err(|_| unknown_lid(req.lid))?;
    let (id, _) = node_of_lid(st, t, lid).ok_or_else(|| unknown_lid(req.lid))?;
    let n = t.node(id);
    if !n.is_switch() {
        return Err(AdminError::NotSwitch {
            lid,
            description: n.description.clone(),
            node_guid: n.node_guid.0,
        });
    }
    let lft = st.lft(n.node_guid).unwrap_or(&[]);
    let idx = lid_index(st);
    let mut entries = Vec::new();
    let mut top = 0;
    for (d, port) in lft.iter().enumerate() {
        if *port == NO_ROUTE || d == 0 {
            continue;
        }
        top = d as u32;
        let dest = idx
            .get(&(d as u16))
            .and_then(|(g, _, _)| node_of_port_guid(t, *g))
            .map(|(nid, _)| t.node(nid).description.clone())
            .unwrap_or_default();
        entries.push(RouteEntry {
            dlid: d as u32,
            out_port: u32::from(*port),
            dest,
        });
    }
    Ok(GetRouteReply {
        switch_guid: n.node_guid.0,
        description: n.description.clone(),
        lid: u32::from(base_lid(st, n.ports[0].guid).0),
        entries,
        top,
    })
}

/// The path from `slid` to `dlid` through the programmed LFTs.
pub fn trace(
    st: &ReplicatedState,
    t: &Topology,
    req: &TracePathRequest,
) -> Result<TracePathReply, AdminError> {
    let slid = u16::try_from(req.slid).map_err(|_| unknown_lid(req.slid))?;
    let dlid = u16::try_from(req.dlid).map_err(|_| unknown_lid(req.dlid))?;
    let (src, sport) = node_of_lid(st, t, slid).ok_or_else(|| unknown_lid(req.slid))?;
    let (dst, _) = node_of_lid(st, t, dlid).ok_or_else(|| unknown_lid(req.dlid))?;
    let hop = |id: NodeId, in_port: u8, out_port: u8| {
        let n = t.node(id);
        Hop {
            node_guid: n.node_guid.0,
            description: n.description.clone(),
            node_type: type_name(n.node_type).into(),
            lid: u32::from(node_lid(st, t, id)),
            in_port: u32::from(in_port),
            out_port: u32::from(out_port),
        }
    };
    let mut hops = Vec::new();
    let mut cur = src;
    let mut in_port = 0u8;
    if !t.node(src).is_switch() {
        // A CA leaves by the port owning the source LID.
        hops.push(hop(src, 0, sport));
        match t.remote(PortRef::new(src, sport)) {
            Some(r) => {
                cur = r.node;
                in_port = r.port.0;
            }
            None => {
                return Ok(TracePathReply {
                    hops,
                    complete: false,
                    problem: format!("source port {sport} is not cabled"),
                });
            }
        }
    }
    for _ in 0..64 {
        let n = t.node(cur);
        if cur == dst {
            hops.push(hop(cur, in_port, 0));
            return Ok(TracePathReply {
                hops,
                complete: true,
                problem: String::new(),
            });
        }
        if !n.is_switch() {
            hops.push(hop(cur, in_port, 0));
            return Ok(TracePathReply {
                hops,
                complete: false,
                problem: format!("reached {} which is not the destination", n.description),
            });
        }
        let out = st
            .lft(n.node_guid)
            .and_then(|l| l.get(dlid as usize).copied())
            .unwrap_or(NO_ROUTE);
        if out == NO_ROUTE || out == 0 {
            hops.push(hop(cur, in_port, 0));
            return Ok(TracePathReply {
                hops,
                complete: false,
                problem: format!(
                    "switch {} ({:#018x}) has no route to LID {dlid}",
                    n.description, n.node_guid.0
                ),
            });
        }
        hops.push(hop(cur, in_port, out));
        match t.remote(PortRef::new(cur, out)) {
            Some(r) => {
                cur = r.node;
                in_port = r.port.0;
            }
            None => {
                return Ok(TracePathReply {
                    hops,
                    complete: false,
                    problem: format!("port {out} of {} is not cabled", n.description),
                });
            }
        }
    }
    Ok(TracePathReply {
        hops,
        complete: false,
        problem: "loop: more than 64 hops".into(),
    })
}

/// The VL table blocks as programmed: every node's, or `node`'s (0: every node).
pub fn vl_tables(st: &ReplicatedState, node: u64) -> GetVlTablesReply {
    GetVlTablesReply {
        blocks: crate::vl::to_proto(st.vl_tables())
            .into_iter()
            .filter(|b| node == 0 || b.node_guid == node)
            .collect(),
    }
}
