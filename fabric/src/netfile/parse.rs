//! Parser for ibsim / ibnetdiscover topology files. See the module docs of
//! [`crate::netfile`] for the accepted syntax and its semantics.

use crate::topology::{LinkSpeed, LinkWidth, PortRef, Topology, TopologyError};
use crate::types::{Guid, NodeType};
use std::collections::HashMap;
use thiserror::Error;

/// A parse error, with the 1-based line and column (in characters) where it was found.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("line {line}:{col}: {kind}")]
pub struct ParseError {
    /// 1-based line number.
    pub line: u32,
    /// 1-based column, counted in characters.
    pub col: u32,
    /// What is wrong.
    pub kind: ParseErrorKind,
}

/// What is wrong in a topology file.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ParseErrorKind {
    /// A token is missing.
    #[error("expected {0}")]
    Expected(&'static str),
    /// A number that does not parse or overflows.
    #[error("invalid number \"{0}\"")]
    BadNumber(String),
    /// A node header with a port count outside 1..=254.
    #[error("a node has 1 to 254 ports, not {0}")]
    BadPortCount(u64),
    /// A node name that ibsim would reject or truncate.
    #[error("invalid node name \"{name}\": {reason}")]
    BadName {
        /// The name.
        name: String,
        /// Why.
        reason: &'static str,
    },
    /// Two node headers with the same quoted name.
    #[error("duplicate node name \"{0}\"")]
    DuplicateName(String),
    /// Two nodes with the same node GUID.
    #[error("duplicate node GUID {0}")]
    DuplicateGuid(Guid),
    /// A port number the node does not have.
    #[error("port {port} out of range: \"{node}\" has ports 1 to {num_ports}")]
    PortOutOfRange {
        /// The node's name.
        node: String,
        /// The port number found.
        port: u64,
        /// The node's port count.
        num_ports: u8,
    },
    /// The same port listed twice in one node record.
    #[error("port {port} of \"{node}\" is listed twice")]
    DuplicatePort {
        /// The node's name.
        node: String,
        /// The port number.
        port: u8,
    },
    /// A port line names a node that has no header in the file.
    #[error("unknown node \"{0}\"")]
    UnknownNode(String),
    /// A port cabled to itself.
    #[error("port {port} of \"{node}\" is linked to itself")]
    SelfLink {
        /// The node's name.
        node: String,
        /// The port number.
        port: u8,
    },
    /// The two ends of a link disagree (or the far end does not list the link).
    #[error(
        "inconsistent link: \"{node}\"[{port}] says \"{remote}\"[{remote_port}], but \"{remote}\"[{remote_port}] {}",
        says(remote_says)
    )]
    InconsistentLink {
        /// This end's node name.
        node: String,
        /// This end's port.
        port: u8,
        /// The node this end names.
        remote: String,
        /// The port this end names.
        remote_port: u8,
        /// What the named port lists instead: `None` when it lists nothing.
        remote_says: Option<(String, u8)>,
    },
    /// The two ends of a link enable no common width or speed (ibsim aborts on this).
    #[error(
        "link \"{node}\"[{port}] - \"{remote}\"[{remote_port}]: the ends enable no common {what}"
    )]
    LinkMismatch {
        /// This end's node name.
        node: String,
        /// This end's port.
        port: u8,
        /// The other end's node name.
        remote: String,
        /// The other end's port.
        remote_port: u8,
        /// "width" or "speed".
        what: &'static str,
    },
    /// A port option (`w=`, `s=`, `e=`) or a setting line with a value out of range.
    #[error("invalid value {value} for {option}")]
    BadValue {
        /// The option or setting name.
        option: &'static str,
        /// The value found.
        value: u64,
    },
    /// A construct ibsim knows but this parser does not model.
    #[error("{0} are not supported")]
    Unsupported(&'static str),
    /// A line that is none of the known kinds.
    #[error(
        "unexpected text: expected a node header (Switch, Ca, Hca, Rt), a setting (vendid=, devid=, \
         sysimgguid=, switchguid=, caguid=, rtguid=, width=, speed=, extspeed=), a comment or a blank line"
    )]
    UnexpectedLine,
    /// A non-port line directly after a node's port lines (ibsim would silently skip it).
    #[error(
        "this line ends the port list of \"{0}\" without a blank line; ibsim would skip it, insert a blank line before it"
    )]
    RecordInterrupted(String),
    /// The topology graph refused a node or link.
    #[error("{0}")]
    Topology(TopologyError),
}

fn says(s: &Option<(String, u8)>) -> String {
    match s {
        Some((n, p)) => format!("says \"{n}\"[{p}]"),
        None => "lists no link".to_string(),
    }
}

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

/// Enabled width/speed masks of one port (PortInfo wire bits).
#[derive(Clone, Copy, Debug)]
struct Enables {
    width: u8,
    speed: u8,
    ext: u8,
}

const DEFAULT_ENABLES: Enables = Enables {
    width: 2, // 4x
    speed: 1, // SDR
    ext: 0,
};

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

/// A cursor over one line, tracking the byte offset for column reporting.
#[derive(Clone, Copy)]
struct Cur<'a> {
    line: &'a str,
    lineno: u32,
    pos: usize,
}

impl<'a> Cur<'a> {
    fn new(line: &'a str, lineno: u32, pos: usize) -> Cur<'a> {
        Cur { line, lineno, pos }
    }

    fn rest(&self) -> &'a str {
        self.line.get(self.pos..).unwrap_or("")
    }

    fn col_at(&self, pos: usize) -> u32 {
        let prefix = self.line.get(..pos).unwrap_or(self.line);
        u32::try_from(prefix.chars().count() + 1).unwrap_or(u32::MAX)
    }

    fn err_at(&self, pos: usize, kind: ParseErrorKind) -> ParseError {
        ParseError {
            line: self.lineno,
            col: self.col_at(pos),
            kind,
        }
    }

    fn err(&self, kind: ParseErrorKind) -> ParseError {
        self.err_at(self.pos, kind)
    }

    fn peek(&self) -> Option<u8> {
        self.line.as_bytes().get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\x0b' | b'\x0c')) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, b: u8, what: &'static str) -> Result<(), ParseError> {
        if self.eat(b) {
            Ok(())
        } else {
            Err(self.err(ParseErrorKind::Expected(what)))
        }
    }

    /// A C `strtoull(.., 0)` number: `0x` hex, leading-0 octal, else decimal.
    fn c_number(&mut self, what: &'static str) -> Result<u64, ParseError> {
        let start = self.pos;
        let (v, len) = c_number(self.rest()).map_err(|e| match e {
            NumError::Missing => self.err(ParseErrorKind::Expected(what)),
            NumError::Overflow(len) => self.err(ParseErrorKind::BadNumber(
                self.rest().get(..len).unwrap_or("").to_string(),
            )),
        })?;
        self.pos = start + len;
        Ok(v)
    }

    /// Plain hex digits (no prefix), as ibnetdiscover prints port GUIDs in parentheses.
    fn hex(&mut self, what: &'static str) -> Result<u64, ParseError> {
        let rest = self.rest().as_bytes();
        let len = rest.iter().take_while(|b| b.is_ascii_hexdigit()).count();
        if len == 0 {
            return Err(self.err(ParseErrorKind::Expected(what)));
        }
        let digits = &self.rest()[..len];
        let v = u64::from_str_radix(digits, 16)
            .map_err(|_| self.err(ParseErrorKind::BadNumber(digits.to_string())))?;
        self.pos += len;
        Ok(v)
    }

    /// Decimal digits.
    fn decimal(&mut self, what: &'static str) -> Result<u64, ParseError> {
        let rest = self.rest().as_bytes();
        let len = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if len == 0 {
            return Err(self.err(ParseErrorKind::Expected(what)));
        }
        let digits = &self.rest()[..len];
        let v = digits
            .parse::<u64>()
            .map_err(|_| self.err(ParseErrorKind::BadNumber(digits.to_string())))?;
        self.pos += len;
        Ok(v)
    }

    /// A `"quoted"` string; returns it and the byte offset of its first character.
    fn quoted(&mut self, what: &'static str) -> Result<(&'a str, usize), ParseError> {
        if !self.eat(b'"') {
            return Err(self.err(ParseErrorKind::Expected(what)));
        }
        let start = self.pos;
        let rest = self.rest();
        match rest.find('"') {
            Some(end) => {
                self.pos += end + 1;
                Ok((&rest[..end], start))
            }
            None => Err(self.err_at(self.line.len(), ParseErrorKind::Expected("closing '\"'"))),
        }
    }

    /// Skips an ibnetdiscover `[ext N]` external-port annotation if present.
    fn skip_ext(&mut self) {
        if self.rest().starts_with("[ext") {
            match self.rest().find(']') {
                Some(end) => self.pos += end + 1,
                None => self.pos = self.line.len(),
            }
        }
    }
}

enum NumError {
    Missing,
    Overflow(usize),
}

/// Parses a C `strtoull(s, _, 0)`-style unsigned number at the start of `s` (leading
/// whitespace allowed); returns the value and the number of bytes consumed.
fn c_number(s: &str) -> Result<(u64, usize), NumError> {
    let b = s.as_bytes();
    let mut i = b.iter().take_while(|c| matches!(c, b' ' | b'\t')).count();
    if b.get(i) == Some(&b'+') {
        i += 1;
    }
    let (radix, start) = if b.get(i) == Some(&b'0')
        && matches!(b.get(i + 1), Some(b'x' | b'X'))
        && b.get(i + 2).is_some_and(|c| c.is_ascii_hexdigit())
    {
        (16, i + 2)
    } else if b.get(i) == Some(&b'0') {
        (8, i)
    } else {
        (10, i)
    };
    let len = b[start.min(b.len())..]
        .iter()
        .take_while(|c| (**c as char).is_digit(radix))
        .count();
    if len == 0 {
        return Err(NumError::Missing);
    }
    let digits = &s[start..start + len];
    u64::from_str_radix(digits, radix)
        .map(|v| (v, start + len))
        .map_err(|_| NumError::Overflow(start + len))
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
        } else if kw("do") {
            Err(cur.err(ParseErrorKind::Unsupported("do (console command) lines")))
        } else if line.trim().is_empty() || kw("#") || kw("Chassis") || kw("Hostname:") {
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

/// Applies ibsim port options `w=`, `s=`, `e=` found in `rest` (outside quotes). Returns the
/// byte offset and error of a bad value.
fn apply_options(rest: &str, en: &mut Enables) -> Result<(), (usize, ParseErrorKind)> {
    let b = rest.as_bytes();
    let mut in_quote = false;
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'"' => in_quote = !in_quote,
            b'=' if !in_quote => {
                let Some(letter) = b[..i].iter().rev().find(|c| c.is_ascii_alphabetic()) else {
                    continue;
                };
                let value = match c_number(&rest[i + 1..]) {
                    Ok((v, _)) => v,
                    Err(NumError::Missing) => 0,
                    Err(NumError::Overflow(_)) => u64::MAX,
                };
                let bad = |option| Err((i + 1, ParseErrorKind::BadValue { option, value }));
                match letter {
                    b'w' => {
                        if !(1..=31).contains(&value) {
                            return bad("port option w=");
                        }
                        en.width = value as u8;
                    }
                    b's' => {
                        if value > 7 {
                            return bad("port option s=");
                        }
                        // 0 means QDR, as in ibsim >= 0.11.
                        en.speed = if value == 0 { 4 } else { value as u8 };
                    }
                    b'e' => {
                        if value > 15 {
                            return bad("port option e=");
                        }
                        en.ext = value as u8;
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Applies the ibnetdiscover `lid N <width>x<speed>` comment: the first "lid" after the
/// last double quote of the line. Unparseable text is ignored, as ibsim does.
fn apply_connection_comment(rest: &str, en: &mut Enables) {
    let tail_start = rest.rfind('"').map_or(0, |q| q + 1);
    let tail = &rest[tail_start..];
    let Some(at) = tail.find("lid") else {
        return;
    };
    let mut c = Cur::new(&tail[at + 3..], 0, 0);
    c.skip_ws();
    if c.eat(b'-') {
        c.skip_ws();
    }
    if c.decimal("").is_err() {
        return;
    }
    c.skip_ws();
    let Ok(width) = c.decimal("") else {
        return;
    };
    if !c.eat(b'x') {
        return;
    }
    let token_len = c
        .rest()
        .bytes()
        .take_while(|b| !b.is_ascii_whitespace())
        .count()
        .min(9);
    let speed = &c.rest()[..token_len];
    match width {
        12 => en.width = 1 | 2 | 8,
        8 => en.width = 4,
        4 => en.width = 1 | 2,
        2 => en.width = 16,
        1 => en.width = 1,
        _ => {}
    }
    match speed {
        "SDR" => en.speed = 1,
        "DDR" => en.speed = 1 | 2,
        "QDR" | "FDR10" => en.speed = 7,
        "FDR" => {
            en.speed = 7;
            en.ext = 1;
        }
        "EDR" => {
            en.speed = 7;
            en.ext = 3;
        }
        "HDR" => {
            en.speed = 7;
            en.ext = 7;
        }
        "NDR" => {
            en.speed = 7;
            en.ext = 15;
        }
        _ => {}
    }
}

fn active_width(a: Enables, b: Enables) -> Option<LinkWidth> {
    let c = a.width & b.width;
    [
        (8, LinkWidth::X12),
        (4, LinkWidth::X8),
        (2, LinkWidth::X4),
        (16, LinkWidth::X2),
        (1, LinkWidth::X1),
    ]
    .into_iter()
    .find(|(bit, _)| c & bit != 0)
    .map(|(_, w)| w)
}

fn active_speed(a: Enables, b: Enables) -> Option<LinkSpeed> {
    let base = a.speed & b.speed;
    let base = [
        (4, LinkSpeed::Qdr),
        (2, LinkSpeed::Ddr),
        (1, LinkSpeed::Sdr),
    ]
    .into_iter()
    .find(|(bit, _)| base & bit != 0)
    .map(|(_, s)| s)?;
    let ext = a.ext & b.ext;
    Some(
        [
            (8, LinkSpeed::Ndr),
            (4, LinkSpeed::Hdr),
            (2, LinkSpeed::Edr),
            (1, LinkSpeed::Fdr),
        ]
        .into_iter()
        .find(|(bit, _)| ext & bit != 0)
        .map_or(base, |(_, s)| s),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_numbers() {
        assert!(matches!(c_number("0x200000(200000)"), Ok((0x200000, 8))));
        assert!(matches!(c_number("17"), Ok((17, 2))));
        assert!(matches!(c_number("010"), Ok((8, 3))));
        assert!(matches!(c_number("0"), Ok((0, 1))));
        assert!(matches!(c_number(" 0x"), Ok((0, 2))));
        assert!(matches!(c_number("x"), Err(NumError::Missing)));
        assert!(matches!(
            c_number("0x1ffffffffffffffff"),
            Err(NumError::Overflow(_))
        ));
    }

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

    #[test]
    fn connection_comment() {
        let mut en = DEFAULT_ENABLES;
        apply_connection_comment("[1]\t\t# lid 5 lmc 0 \"Switch1\" lid 2 12xEDR", &mut en);
        assert_eq!(en.width, 11);
        assert_eq!(en.ext, 3);
        assert_eq!(active_width(en, en), Some(LinkWidth::X12));
        assert_eq!(active_speed(en, en), Some(LinkSpeed::Edr));
        assert_eq!(active_speed(en, DEFAULT_ENABLES), Some(LinkSpeed::Sdr));
        assert_eq!(active_width(en, DEFAULT_ENABLES), Some(LinkWidth::X4));
    }
}
