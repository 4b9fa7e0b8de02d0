//! The text `ibroute <switch lid>` prints (infiniband-diags), read and written, so that
//! LFTs read from a fabric (for example as OpenSM programmed them) can be measured with
//! [`crate::metrics`], and ours can be compared with them.
//!
//! Per switch: a header `Unicast lids [0x0-0xN] of switch Lid L guid 0xG (desc):`, two
//! column-title lines, one line per valid LID `0xLLLL PPP : (Type portguid 0xG: 'desc')`, and
//! `K valid lids dumped`. Dumps of several switches are simply concatenated; any other line
//! (shell prompts, `[rc=0]`) is ignored.

use crate::error::RoutingError;
use crate::input::{LidAssignment, RoutingInput};
use crate::lft::{Lfts, NO_ROUTE, SwitchLft};
use fabric::{Guid, Lid, NodeType, PortRef, Topology};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// One LFT entry of a dump.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DumpEntry {
    /// Destination LID.
    pub lid: Lid,
    /// Output port.
    pub port: u8,
    /// Port GUID of the destination, when printed.
    pub port_guid: Option<Guid>,
}

/// One switch's dumped table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DumpedSwitch {
    /// The switch's LID (from the header).
    pub lid: Lid,
    /// The switch's GUID (from the header).
    pub guid: Guid,
    /// Valid entries in the order printed.
    pub entries: Vec<DumpEntry>,
}

fn parse_hex_u64(s: &str) -> Option<u64> {
    u64::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok()
}

fn perr(line: usize, why: &str) -> RoutingError {
    RoutingError::Parse {
        line,
        why: why.to_string(),
    }
}

/// Parses concatenated `ibroute` outputs. Never panics on arbitrary text.
pub fn parse_ibroute(text: &str) -> Result<Vec<DumpedSwitch>, RoutingError> {
    let mut out: Vec<DumpedSwitch> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let ln = i + 1;
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("Unicast lids") {
            // "[0x0-0x6] of switch Lid 2 guid 0x0000000000200000 (Switch1):"
            let after_lid = rest
                .split_once("switch Lid")
                .ok_or_else(|| perr(ln, "header without 'switch Lid'"))?
                .1;
            let mut words = after_lid.split_whitespace();
            let lid: u16 = words
                .next()
                .and_then(|w| w.parse().ok())
                .ok_or_else(|| perr(ln, "bad switch LID"))?;
            if words.next() != Some("guid") {
                return Err(perr(ln, "header without 'guid'"));
            }
            let guid = words
                .next()
                .and_then(parse_hex_u64)
                .ok_or_else(|| perr(ln, "bad switch GUID"))?;
            out.push(DumpedSwitch {
                lid: Lid(lid),
                guid: Guid(guid),
                entries: Vec::new(),
            });
        } else if t.starts_with("0x") {
            let sw = out
                .last_mut()
                .ok_or_else(|| perr(ln, "LFT entry before any switch header"))?;
            let mut words = t.split_whitespace();
            let lid = words
                .next()
                .and_then(parse_hex_u64)
                .filter(|&v| v <= 0xFFFF)
                .ok_or_else(|| perr(ln, "bad LID"))?;
            let port: u8 = words
                .next()
                .and_then(|w| w.parse().ok())
                .ok_or_else(|| perr(ln, "bad port"))?;
            // "(Type portguid 0x..: 'desc')" or, for LMC LIDs, "(path #2 out of 4: portguid 0x..)".
            let port_guid = t
                .split_once("portguid")
                .map(|(_, r)| {
                    r.trim_start()
                        .split(|c: char| !(c.is_ascii_hexdigit() || c == 'x'))
                        .next()
                        .unwrap_or("")
                })
                .and_then(parse_hex_u64)
                .map(Guid);
            sw.entries.push(DumpEntry {
                lid: Lid(lid as u16),
                port,
                port_guid,
            });
        }
    }
    Ok(out)
}

/// Rebuilds the LID assignment and the LFTs from a dump of every switch of `topo`: switch
/// LIDs from the headers, end-port LIDs from the port GUIDs of the entries (base = lowest
/// LID seen, LMC from the count). Entries naming unknown ports are kept in the tables but
/// give no LID.
pub fn lfts_from_dump(
    topo: &Topology,
    dump: &[DumpedSwitch],
) -> Result<(LidAssignment, Lfts), RoutingError> {
    let mut port_by_guid: HashMap<Guid, PortRef> = HashMap::new();
    for (id, node) in topo.nodes() {
        if node.is_switch() {
            continue;
        }
        for pn in node.port_numbers() {
            port_by_guid.insert(node.ports[pn.0 as usize].guid, PortRef::new(id, pn.0));
        }
    }
    let mut lids = LidAssignment::new();
    let mut seen: BTreeMap<PortRef, BTreeSet<u16>> = BTreeMap::new();
    let mut max_lid = 0u16;
    for sw in dump {
        let node = topo
            .node_by_guid(sw.guid)
            .filter(|&n| topo.node(n).is_switch())
            .ok_or(RoutingError::UnknownSwitch(sw.guid))?;
        lids.set(PortRef::new(node, 0), sw.lid, 0)?;
        max_lid = max_lid.max(sw.lid.0);
        for e in &sw.entries {
            max_lid = max_lid.max(e.lid.0);
            if let Some(p) = e.port_guid.and_then(|g| port_by_guid.get(&g)) {
                seen.entry(*p).or_default().insert(e.lid.0);
            }
        }
    }
    for (p, set) in seen {
        let (Some(&lo), Some(&hi)) = (set.first(), set.last()) else {
            continue;
        };
        let count = (hi - lo) as u32 + 1;
        let lmc = count.next_power_of_two().trailing_zeros() as u8;
        lids.set(p, Lid(lo), lmc)?;
    }
    let lfts = Lfts {
        switches: dump
            .iter()
            .map(|sw| {
                let mut ports = vec![NO_ROUTE; max_lid as usize + 1];
                for e in &sw.entries {
                    ports[e.lid.0 as usize] = e.port;
                }
                SwitchLft {
                    guid: sw.guid,
                    lid: sw.lid,
                    ports,
                }
            })
            .collect(),
    };
    Ok((lids, lfts))
}

fn type_name(t: NodeType) -> &'static str {
    match t {
        NodeType::Ca => "Channel Adapter",
        NodeType::Switch => "Switch",
        NodeType::Router => "Router",
    }
}

/// Writes `lfts` the way `ibroute` prints each switch, all switches concatenated.
pub fn format_ibroute(topo: &Topology, input: &RoutingInput, lfts: &Lfts) -> String {
    use std::fmt::Write;
    // LID -> (type, port guid, description, path index, paths)
    type Info<'a> = Option<(NodeType, Guid, &'a str, u32, u32)>;
    let mut info: Vec<Info> = vec![None; input.max_lid() as usize + 1];
    for sw in &input.switches {
        if sw.lid.0 != 0 {
            info[sw.lid.0 as usize] = Some((
                NodeType::Switch,
                sw.guid,
                &topo.node(sw.node).description,
                0,
                1,
            ));
        }
    }
    for ep in &input.end_ports {
        let node = topo.node(ep.port.node);
        for k in 0..ep.lids.count() {
            info[ep.lids.base.0 as usize + k as usize] = Some((
                node.node_type,
                ep.guid,
                &node.description,
                k,
                ep.lids.count(),
            ));
        }
    }
    let mut s = String::new();
    for t in &lfts.switches {
        let desc = input
            .switch_by_guid(t.guid)
            .map(|i| topo.node(input.switches[i].node).description.as_str())
            .unwrap_or("");
        let top = t.ports.len().saturating_sub(1);
        let _ = writeln!(
            s,
            "Unicast lids [0x0-0x{top:x}] of switch Lid {} guid 0x{:016x} ({desc}):",
            t.lid.0, t.guid.0
        );
        let _ = writeln!(s, "  Lid  Out   Destination");
        let _ = writeln!(s, "       Port     Info ");
        let mut valid = 0;
        for (lid, &p) in t.ports.iter().enumerate() {
            if lid == 0 || p == NO_ROUTE {
                continue;
            }
            valid += 1;
            match info.get(lid).copied().flatten() {
                Some((_, g, _, k, n)) if k > 0 => {
                    let _ = writeln!(
                        s,
                        "0x{lid:04x} {p:03} : (path #{} out of {n}: portguid 0x{:016x})",
                        k + 1,
                        g.0
                    );
                }
                Some((ty, g, d, _, _)) => {
                    let _ = writeln!(
                        s,
                        "0x{lid:04x} {p:03} : ({} portguid 0x{:016x}: '{d}')",
                        type_name(ty),
                        g.0
                    );
                }
                None => {
                    let _ = writeln!(s, "0x{lid:04x} {p:03} : (unknown node and type)");
                }
            }
        }
        let _ = writeln!(s, "{valid} valid lids dumped ");
    }
    s
}
