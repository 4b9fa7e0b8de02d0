//! Parser for ibsim / ibnetdiscover topology files. See the module docs of
//! [`crate::netfile`] for the accepted syntax and its semantics.

use super::error::{ParseError, ParseErrorKind};
use super::lex::Cur;
use super::link::{
    DEFAULT_ENABLES, Enables, active_speed, active_width, apply_connection_comment, apply_options,
};
use crate::topology::{PortRef, Topology, TopologyError};
use crate::types::{Guid, NodeType};
use std::collections::HashMap;

/// Parses an ibsim or ibnetdiscover topology file into a [`Topology`].
///
/// Nodes get [`NodeId`](crate::NodeId)s in file order. Never panics, whatever the input.
pub fn parse(text: &str) -> Result<Topology, ParseError> {
    let mut p = Parser::default();
    for (i, raw) in text.split('\n').enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let lineno = u32::try_from(i + 1).unwrap_or(u32::MAX);
        p.line(lineno, line)?;
    }
    p.finish()
}

struct Remote<'a> {
    name: &'a str,
    port: u8,
    line: u32,
    name_col: u32,
    port_col: u32,
}

struct Slot<'a> {
    remote: Option<Remote<'a>>,
    en: Enables,
}

struct PNode<'a> {
    name: &'a str,
    first: usize,
    num_ports: u8,
}

struct Record {
    node: usize,
    remaining: u16,
}

const CA: usize = 0;
const SWITCH: usize = 1;
const ROUTER: usize = 2;

struct Parser<'a> {
    topo: Topology,
    nodes: Vec<PNode<'a>>,
    slots: Vec<Slot<'a>>,
    /// Slot indices in the order their port lines appear.
    listed: Vec<usize>,
    names: HashMap<&'a str, usize>,
    record: Option<Record>,
    abs_guid: [u64; 3],
    next_guid: [u64; 3],
    vendid: u32,
    devid: u16,
    sysimgguid: u64,
    defaults: Enables,
}

impl Default for Parser<'_> {
    fn default() -> Self {
        Parser {
            topo: Topology::new(),
            nodes: Vec::new(),
            slots: Vec::new(),
            listed: Vec::new(),
            names: HashMap::new(),
            record: None,
            abs_guid: [0x100000, 0x200000, 0],
            next_guid: [0x100000, 0x200000, 0],
            vendid: 0,
            devid: 0,
            sysimgguid: 0,
            defaults: DEFAULT_ENABLES,
        }
    }
}

impl<'a> Parser<'a> {
    fn line(&mut self, lineno: u32, line: &'a str) -> Result<(), ParseError> {
        if let Some(rec) = &mut self.record {
            if line.starts_with('#') {
                return Ok(());
            }
            if line.starts_with('[') {
                let node = rec.node;
                rec.remaining -= 1;
                if rec.remaining == 0 {
                    self.record = None;
                }
                return self.port_line(node, Cur::new(line, lineno, 0));
            }
            let node = rec.node;
            self.record = None;
            let cur = Cur::new(line, lineno, 0);
            if line.starts_with('@') {
                return Err(cur.err(ParseErrorKind::Unsupported("@alias port lines")));
            }
            if line.trim().is_empty() {
                return Ok(());
            }
            return Err(cur.err(ParseErrorKind::RecordInterrupted(
                self.nodes[node].name.to_string(),
            )));
        }

        let cur = Cur::new(line, lineno, 0);
        let kw = |k: &str| line.starts_with(k);
        if kw("Switch") {
            self.header(NodeType::Switch, Cur::new(line, lineno, 6))
        } else if kw("Hca") {
            self.header(NodeType::Ca, Cur::new(line, lineno, 3))
        } else if kw("Ca") || kw("Rt") {
            let t = if kw("Ca") {
                NodeType::Ca
            } else {
                NodeType::Router
            };
            self.header(t, Cur::new(line, lineno, 2))
        } else if kw("switchguid") {
            self.guid_base(SWITCH, cur)
        } else if kw("hcaguids") || kw("caguid") {
            self.guid_base(CA, cur)
        } else if kw("rtguid") {
            self.guid_base(ROUTER, cur)
        } else if kw("vendid") {
            self.vendid = (self.setting(cur)? & 0x00FF_FFFF) as u32;
            Ok(())
        } else if kw("devid") {
            self.devid = self.setting(cur)? as u16;
            Ok(())
        } else if kw("sysimgguid") {
            self.sysimgguid = self.setting(cur)?;
            Ok(())
        } else if kw("width") {
            let v = self.setting(cur)?;
            self.defaults.width = check_range(v, 1, 31, "width=", &cur)?;
            Ok(())
        } else if kw("speed") {
            let v = self.setting(cur)?;
            self.defaults.speed = check_range(v, 1, 7, "speed=", &cur)?;
            Ok(())
        } else if kw("extspeed") {
            let v = self.setting(cur)?;
            self.defaults.ext = check_range(v, 0, 15, "extspeed=", &cur)?;
            Ok(())
        } else if kw("module") {
            Err(cur.err(ParseErrorKind::Unsupported(
                "module (node name prefix) lines",
            )))
        } else if kw("include") {
            Err(cur.err(ParseErrorKind::Unsupported("include lines")))
        } else if kw("pdebug") {
            Ok(())
        } else if kw("[") || kw("@") {
            Err(cur.err(ParseErrorKind::PortOutsideRecord))
        } else if kw("do") {
            Err(cur.err(ParseErrorKind::Unsupported("do (console command) lines")))
        } else if line.trim().is_empty()
            || kw("#")
            || kw("Chassis")
            || kw("Hostname:")
            || kw("Non-Chassis Nodes")
        {
            // Comments, blank lines and ibnetdiscover -g chassis annotations.
            Ok(())
        } else {
            Err(cur.err(ParseErrorKind::UnexpectedLine))
        }
    }

    /// The value of a `key=value` line.
    fn setting(&self, mut cur: Cur<'a>) -> Result<u64, ParseError> {
        match cur.rest().find('=') {
            Some(eq) => {
                cur.pos += eq + 1;
                cur.c_number("a number after '='")
            }
            None => Err(cur.err_at(cur.line.len(), ParseErrorKind::Expected("'='"))),
        }
    }

    fn guid_base(&mut self, t: usize, mut cur: Cur<'a>) -> Result<(), ParseError> {
        let rest = cur.rest();
        let Some(at) = rest.find(['=', '+']) else {
            return Err(cur.err_at(cur.line.len(), ParseErrorKind::Expected("'=' or '+'")));
        };
        let relative = rest.as_bytes()[at] == b'+';
        cur.pos += at + 1;
        let v = cur.c_number("a GUID")?;
        if relative {
            self.next_guid[t] = self.abs_guid[t].wrapping_add(v);
        } else {
            self.abs_guid[t] = v;
            self.next_guid[t] = v;
        }
        Ok(())
    }

    fn header(&mut self, node_type: NodeType, mut cur: Cur<'a>) -> Result<(), ParseError> {
        cur.skip_ws();
        let count_pos = cur.pos;
        let count = cur.c_number("a port count")?;
        if !(1..=254).contains(&count) {
            return Err(cur.err_at(count_pos, ParseErrorKind::BadPortCount(count)));
        }
        let num_ports = count as u8;
        cur.skip_ws();
        let (name, name_pos) = cur.quoted("a quoted node name")?;
        check_name(name).map_err(|reason| {
            cur.err_at(
                name_pos,
                ParseErrorKind::BadName {
                    name: name.to_string(),
                    reason,
                },
            )
        })?;
        if self.names.contains_key(name) {
            return Err(cur.err_at(name_pos, ParseErrorKind::DuplicateName(name.to_string())));
        }
        let description = header_description(cur.rest()).unwrap_or("");
        let description = if description.is_empty() {
            name
        } else {
            description
        };

        let t = match node_type {
            NodeType::Ca => CA,
            NodeType::Switch => SWITCH,
            NodeType::Router => ROUTER,
        };
        let guid = self.next_guid[t];
        self.next_guid[t] = match node_type {
            NodeType::Switch => guid.wrapping_add(1),
            _ => guid.wrapping_add(u64::from(num_ports) + 1),
        };
        let id = self
            .topo
            .add_node(node_type, u16::from(num_ports), Guid(guid), description)
            .map_err(|e| {
                let kind = match e {
                    TopologyError::DuplicateGuid(g) => ParseErrorKind::DuplicateGuid(g),
                    other => ParseErrorKind::Topology(other),
                };
                cur.err_at(0, kind)
            })?;
        let sys = if self.sysimgguid != 0 {
            self.sysimgguid
        } else {
            guid
        };
        self.topo
            .set_identity(id, Guid(sys), self.vendid, self.devid);
        // As in ibsim: vendid and sysimgguid apply to one node, devid stays.
        self.vendid = 0;
        self.sysimgguid = 0;

        let idx = self.nodes.len();
        self.names.insert(name, idx);
        self.nodes.push(PNode {
            name,
            first: self.slots.len(),
            num_ports,
        });
        let en = self.defaults;
        self.slots
            .extend((0..num_ports).map(|_| Slot { remote: None, en }));
        self.record = Some(Record {
            node: idx,
            remaining: u16::from(num_ports),
        });
        Ok(())
    }

    fn port_line(&mut self, node: usize, mut cur: Cur<'a>) -> Result<(), ParseError> {
        let (node_name, first, num_ports) = {
            let n = &self.nodes[node];
            (n.name, n.first, n.num_ports)
        };
        let node_type = self.topo.node(crate::NodeId(node as u32)).node_type;
        cur.expect(b'[', "'['")?;
        cur.skip_ws();
        let port_pos = cur.pos;
        let port = cur.decimal("a port number")?;
        if port == 0 || port > u64::from(num_ports) {
            return Err(cur.err_at(
                port_pos,
                ParseErrorKind::PortOutOfRange {
                    node: node_name.to_string(),
                    port,
                    num_ports,
                },
            ));
        }
        let port = port as u8;
        cur.expect(b']', "']'")?;
        cur.skip_ext();
        cur.skip_ws();
        if cur.eat(b'(') {
            let guid = cur.hex("a port GUID in hex")?;
            cur.expect(b')', "')'")?;
            if node_type != NodeType::Switch {
                let id = crate::NodeId(node as u32);
                self.topo
                    .set_port_guid(PortRef::new(id, port), Guid(guid))
                    .map_err(|e| cur.err(ParseErrorKind::Topology(e)))?;
            }
            cur.skip_ws();
        }
        let (remote, remote_pos) = cur.quoted("a quoted remote node name")?;
        let mut remote_port = 1u64;
        let mut remote_port_pos = cur.pos;
        if cur.eat(b'[') {
            cur.skip_ws();
            remote_port_pos = cur.pos;
            remote_port = cur.decimal("a remote port number")?;
            cur.expect(b']', "']'")?;
        }
        if remote_port == 0 || remote_port > 254 {
            return Err(cur.err_at(
                remote_port_pos,
                ParseErrorKind::PortOutOfRange {
                    node: remote.to_string(),
                    port: remote_port,
                    num_ports: 254,
                },
            ));
        }
        cur.skip_ext();
        let rest_start = cur.pos;
        cur.skip_ws();
        if cur.eat(b'(') {
            // The remote port's GUID; ibsim ignores it and so do we.
            cur.hex("a port GUID in hex")?;
            cur.expect(b')', "')'")?;
        }

        let slot_idx = first + usize::from(port) - 1;
        if self.slots[slot_idx].remote.is_some() {
            return Err(cur.err_at(
                port_pos,
                ParseErrorKind::DuplicatePort {
                    node: node_name.to_string(),
                    port,
                },
            ));
        }
        let mut en = self.slots[slot_idx].en;
        let rest = &cur.line[rest_start..];
        apply_options(rest, &mut en).map_err(|(off, kind)| cur.err_at(rest_start + off, kind))?;
        // ibsim reads this comment on switch and CA lines only; we read it on router lines
        // too, since it states the real link (the writer adds w=/s=/e= to router lines so
        // that ibsim agrees).
        apply_connection_comment(rest, &mut en);
        let slot = &mut self.slots[slot_idx];
        slot.en = en;
        slot.remote = Some(Remote {
            name: remote,
            port: remote_port as u8,
            line: cur.lineno,
            name_col: cur.col_at(remote_pos),
            port_col: cur.col_at(remote_port_pos),
        });
        self.listed.push(slot_idx);
        Ok(())
    }

    fn finish(mut self) -> Result<Topology, ParseError> {
        // Owner (node index) of each slot, for error messages and linking.
        let mut owner = vec![0usize; self.slots.len()];
        for (i, n) in self.nodes.iter().enumerate() {
            owner[n.first..n.first + usize::from(n.num_ports)].fill(i);
        }
        for &s in &self.listed {
            let i = owner[s];
            let me = &self.nodes[i];
            let port = (s - me.first + 1) as u8;
            let Some(r) = &self.slots[s].remote else {
                continue;
            };
            let at = |col: u32, kind: ParseErrorKind| ParseError {
                line: r.line,
                col,
                kind,
            };
            let &j = self
                .names
                .get(r.name)
                .ok_or_else(|| at(r.name_col, ParseErrorKind::UnknownNode(r.name.to_string())))?;
            let other = &self.nodes[j];
            if r.port > other.num_ports {
                return Err(at(
                    r.port_col,
                    ParseErrorKind::PortOutOfRange {
                        node: other.name.to_string(),
                        port: u64::from(r.port),
                        num_ports: other.num_ports,
                    },
                ));
            }
            let t = other.first + usize::from(r.port) - 1;
            if t == s {
                return Err(at(
                    r.name_col,
                    ParseErrorKind::SelfLink {
                        node: me.name.to_string(),
                        port,
                    },
                ));
            }
            let back = self.slots[t].remote.as_ref();
            let consistent = back.is_some_and(|b| b.name == me.name && b.port == port);
            if !consistent {
                return Err(at(
                    r.name_col,
                    ParseErrorKind::InconsistentLink {
                        node: me.name.to_string(),
                        port,
                        remote: other.name.to_string(),
                        remote_port: r.port,
                        remote_says: back.map(|b| (b.name.to_string(), b.port)),
                    },
                ));
            }
            if s < t {
                let (a, b) = (self.slots[s].en, self.slots[t].en);
                let mismatch = |what| {
                    at(
                        r.name_col,
                        ParseErrorKind::LinkMismatch {
                            node: me.name.to_string(),
                            port,
                            remote: other.name.to_string(),
                            remote_port: r.port,
                            what,
                        },
                    )
                };
                let width = active_width(a, b).ok_or_else(|| mismatch("width"))?;
                let speed = active_speed(a, b).ok_or_else(|| mismatch("speed"))?;
                let pa = PortRef::new(crate::NodeId(i as u32), port);
                let pb = PortRef::new(crate::NodeId(j as u32), r.port);
                self.topo
                    .connect(pa, pb)
                    .and_then(|()| self.topo.set_link_attrs(pa, width, speed))
                    .map_err(|e| at(r.name_col, ParseErrorKind::Topology(e)))?;
            }
        }
        Ok(self.topo)
    }
}

fn check_range(
    v: u64,
    lo: u64,
    hi: u64,
    option: &'static str,
    cur: &Cur,
) -> Result<u8, ParseError> {
    if (lo..=hi).contains(&v) {
        Ok(v as u8)
    } else {
        Err(cur.err(ParseErrorKind::BadValue { option, value: v }))
    }
}

fn check_name(name: &str) -> Result<(), &'static str> {
    if name.contains(['#', '@']) {
        Err("'#' and '@' are reserved")
    } else if name.len() > 64 {
        Err("longer than 64 bytes")
    } else {
        Ok(())
    }
}

/// The NodeDescription carried by a header's `# ...` comment (ibsim's rules): a quoted
/// string, or the unquoted text up to " enhanced port ", " base port ", " lid " or " lmc ".
fn header_description(rest: &str) -> Option<&str> {
    let hash = rest.find('#')?;
    let s = rest[hash + 1..].trim_start_matches([' ', '\t']);
    if let Some(q) = s.strip_prefix('"') {
        return Some(match q.find('"') {
            Some(e) => &q[..e],
            None => q,
        });
    }
    for cut in [" enhanced port ", " base port ", " lid ", " lmc "] {
        if let Some(e) = s.find(cut) {
            return Some(&s[..e]);
        }
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions() {
        assert_eq!(
            header_description("\t\t# \"Switch1\" base port 0 lid 2 lmc 0"),
            Some("Switch1")
        );
        assert_eq!(
            header_description(" # desc for h1 lid 3"),
            Some("desc for h1")
        );
        assert_eq!(header_description(""), None);
    }
}
