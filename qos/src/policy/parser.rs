//! The policy text to raw blocks (names not yet resolved). Every error is collected with
//! its position; a bad line is skipped and parsing goes on, so one run reports them all.

use super::ast::RuleOrigin;
use super::ast::{MatchRule, NodeTypeSel, NumRange, PortGroup, PortSel, QosLevel};
use super::lexer::{Line, lines, split_list, unquote};
pub(crate) use super::values::{
    number, pkey_ranges, port_name, port_sel, ranges, sl2vl, strings, vlarb,
};
use crate::MAX_ITEMS;
use crate::error::{Pos, QosError};
use crate::tables::{VLARB_TABLE_LEN, VlArb};

/// The blocks of the grammar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Block {
    PortGroups,
    PortGroup,
    QosSetup,
    VlarbTables,
    VlarbScope,
    Sl2vlTables,
    Sl2vlScope,
    QosLevels,
    QosLevel,
    MatchRules,
    MatchRule,
    Ulps,
}

const BLOCKS: [Block; 12] = [
    Block::PortGroups,
    Block::PortGroup,
    Block::QosSetup,
    Block::VlarbTables,
    Block::VlarbScope,
    Block::Sl2vlTables,
    Block::Sl2vlScope,
    Block::QosLevels,
    Block::QosLevel,
    Block::MatchRules,
    Block::MatchRule,
    Block::Ulps,
];

impl Block {
    pub(crate) fn keyword(self) -> &'static str {
        match self {
            Block::PortGroups => "port-groups",
            Block::PortGroup => "port-group",
            Block::QosSetup => "qos-setup",
            Block::VlarbTables => "vlarb-tables",
            Block::VlarbScope => "vlarb-scope",
            Block::Sl2vlTables => "sl2vl-tables",
            Block::Sl2vlScope => "sl2vl-scope",
            Block::QosLevels => "qos-levels",
            Block::QosLevel => "qos-level",
            Block::MatchRules => "qos-match-rules",
            Block::MatchRule => "qos-match-rule",
            Block::Ulps => "qos-ulps",
        }
    }

    /// The block it opens in (None: at the top).
    fn parent(self) -> Option<Block> {
        match self {
            Block::PortGroup => Some(Block::PortGroups),
            Block::VlarbTables | Block::Sl2vlTables => Some(Block::QosSetup),
            Block::VlarbScope => Some(Block::VlarbTables),
            Block::Sl2vlScope => Some(Block::Sl2vlTables),
            Block::QosLevel => Some(Block::QosLevels),
            Block::MatchRule => Some(Block::MatchRules),
            _ => None,
        }
    }

    /// What may appear inside, for messages.
    fn expected(self) -> String {
        let children: Vec<&str> = BLOCKS
            .iter()
            .filter(|b| b.parent() == Some(self))
            .map(|b| b.keyword())
            .collect();
        let mut s = if children.is_empty() {
            match self {
                Block::Ulps => "a rule `ulp[, qualifier values] : level`".to_string(),
                _ => "`key: value`".to_string(),
            }
        } else {
            children
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(" or ")
        };
        s.push_str(&format!(" or `end-{}`", self.keyword()));
        s
    }
}

/// A reference to a QoS level from a rule: a name, or a qos-ulps SL.
#[derive(Clone, Debug)]
pub(crate) enum LevelRef {
    Name(String, Pos),
    Sl(u8, Pos),
}

/// A group criterion before resolution.
#[derive(Clone, Debug)]
pub(crate) enum RawGroupRef {
    Name(String, Pos),
    Guids(Vec<NumRange>),
}

#[derive(Debug, Default)]
pub(crate) struct RawVlarb {
    pub pos: Pos,
    pub groups: Vec<(String, Pos)>,
    pub high: Option<[VlArb; VLARB_TABLE_LEN]>,
    pub low: Option<[VlArb; VLARB_TABLE_LEN]>,
    pub limit: Option<u8>,
}

#[derive(Debug)]
pub(crate) struct RawSl2vl {
    pub pos: Pos,
    pub groups: Vec<(String, Pos)>,
    pub from: PortSel,
    pub to: PortSel,
    pub table: Option<[u8; 16]>,
}

#[derive(Debug)]
pub(crate) struct RawLevel {
    pub level: QosLevel,
}

#[derive(Debug)]
pub(crate) struct RawRule {
    pub pos: Pos,
    pub origin: RuleOrigin,
    pub use_: Option<String>,
    pub classes: Vec<NumRange>,
    pub source: Vec<RawGroupRef>,
    pub destination: Vec<RawGroupRef>,
    pub either: Vec<RawGroupRef>,
    pub service_ids: Vec<NumRange>,
    pub pkeys: Vec<NumRange>,
    pub level: Option<LevelRef>,
}

impl RawRule {
    fn new(pos: Pos, origin: RuleOrigin) -> RawRule {
        RawRule {
            pos,
            origin,
            use_: None,
            classes: Vec::new(),
            source: Vec::new(),
            destination: Vec::new(),
            either: Vec::new(),
            service_ids: Vec::new(),
            pkeys: Vec::new(),
            level: None,
        }
    }
}

/// What the parser gives the resolver.
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    pub groups: Vec<PortGroup>,
    pub vlarb: Vec<RawVlarb>,
    pub sl2vl: Vec<RawSl2vl>,
    pub levels: Vec<RawLevel>,
    pub rules: Vec<RawRule>,
    pub ulps: Vec<RawRule>,
    pub ulp_default: Option<LevelRef>,
    pub errors: Vec<QosError>,
}

/// The block being filled.
enum Current {
    None,
    Group(Box<PortGroup>),
    Vlarb(Box<RawVlarb>),
    Sl2vl(Box<RawSl2vl>),
    Level(Box<RawLevel>),
    Rule(Box<RawRule>),
}

struct Parser {
    out: Parsed,
    stack: Vec<(Block, Pos)>,
    current: Current,
    /// Single-valued fields seen in the current block.
    seen: Vec<(&'static str, Pos)>,
    /// What already hit [`MAX_ITEMS`] (reported once).
    full: Vec<&'static str>,
}

/// Parses a policy text into raw blocks and errors.
pub(crate) fn parse(text: &str) -> Parsed {
    let mut p = Parser {
        out: Parsed::default(),
        stack: Vec::new(),
        current: Current::None,
        seen: Vec::new(),
        full: Vec::new(),
    };
    for line in lines(text) {
        p.line(&line);
    }
    for (b, pos) in p.stack.drain(..) {
        p.out.errors.push(QosError::Unclosed {
            pos,
            block: b.keyword(),
        });
    }
    p.out
}

fn syntax(pos: Pos, msg: impl Into<String>) -> QosError {
    QosError::Syntax {
        pos,
        msg: msg.into(),
    }
}

fn bad(pos: Pos, key: &str, msg: impl Into<String>) -> QosError {
    QosError::BadValue {
        pos,
        key: key.to_string(),
        msg: msg.into(),
    }
}

impl Parser {
    fn err(&mut self, e: QosError) {
        self.out.errors.push(e);
    }

    fn top(&self) -> Option<Block> {
        self.stack.last().map(|(b, _)| *b)
    }

    fn line(&mut self, line: &Line<'_>) {
        let text = line.text;
        let pos = line.pos();
        for b in BLOCKS {
            if text == b.keyword() {
                return self.open(b, pos);
            }
            if text.strip_prefix("end-") == Some(b.keyword()) {
                return self.close(b, pos);
            }
        }
        let lower = text.to_ascii_lowercase();
        if BLOCKS
            .iter()
            .any(|b| lower == b.keyword() || lower.strip_prefix("end-") == Some(b.keyword()))
        {
            return self.err(syntax(
                pos,
                format!("`{text}`: keywords are lower case (`{lower}`)"),
            ));
        }
        match self.top() {
            None => self.err(syntax(
                pos,
                format!(
                    "`{text}` outside any section (expected `port-groups`, `qos-setup`, `qos-levels`, `qos-match-rules` or `qos-ulps`)"
                ),
            )),
            Some(Block::Ulps) => self.ulp(line),
            Some(
                b @ (Block::PortGroup
                | Block::VlarbScope
                | Block::Sl2vlScope
                | Block::QosLevel
                | Block::MatchRule),
            ) => self.field(b, line),
            Some(b) => self.err(syntax(
                pos,
                format!("`{text}` in `{}`: expected {}", b.keyword(), b.expected()),
            )),
        }
    }

    fn open(&mut self, b: Block, pos: Pos) {
        if b.parent() != self.top() {
            let where_ = match self.top() {
                None => "at the top level".to_string(),
                Some(t) => format!("inside `{}`", t.keyword()),
            };
            let want = match b.parent() {
                None => "at the top level".to_string(),
                Some(p) => format!("inside `{}`", p.keyword()),
            };
            return self.err(syntax(
                pos,
                format!("`{}` {where_}: it belongs {want}", b.keyword()),
            ));
        }
        self.stack.push((b, pos));
        self.seen.clear();
        self.current = match b {
            Block::PortGroup => Current::Group(Box::new(PortGroup {
                pos,
                ..PortGroup::default()
            })),
            Block::VlarbScope => Current::Vlarb(Box::new(RawVlarb {
                pos,
                ..RawVlarb::default()
            })),
            Block::Sl2vlScope => Current::Sl2vl(Box::new(RawSl2vl {
                pos,
                groups: Vec::new(),
                from: PortSel::All,
                to: PortSel::All,
                table: None,
            })),
            Block::QosLevel => Current::Level(Box::new(RawLevel {
                level: QosLevel {
                    name: String::new(),
                    pos,
                    use_: None,
                    sl: 0,
                    mtu_limit: None,
                    rate_limit: None,
                    packet_life: None,
                    path_bits: Vec::new(),
                    pkeys: Vec::new(),
                    generated: false,
                },
            })),
            Block::MatchRule => Current::Rule(Box::new(RawRule::new(pos, RuleOrigin::MatchRule))),
            _ => Current::None,
        };
    }

    /// True when there is still room for one more `what` (else reports it once).
    fn room(&mut self, what: &'static str, len: usize, pos: Pos) -> bool {
        if len < MAX_ITEMS {
            return true;
        }
        if !self.full.contains(&what) {
            self.full.push(what);
            self.err(QosError::TooMany {
                pos,
                what,
                limit: MAX_ITEMS,
            });
        }
        false
    }

    fn close(&mut self, b: Block, pos: Pos) {
        if self.top() != Some(b) {
            let msg = match self.top() {
                None => format!("`end-{}` without `{}`", b.keyword(), b.keyword()),
                Some(t) => format!(
                    "`end-{}` inside `{}` (expected `end-{}`)",
                    b.keyword(),
                    t.keyword(),
                    t.keyword()
                ),
            };
            return self.err(syntax(pos, msg));
        }
        self.stack.pop();
        match std::mem::replace(&mut self.current, Current::None) {
            Current::None => {}
            Current::Group(g) => {
                if !self.given("name") {
                    self.err(QosError::MissingField {
                        pos: g.pos,
                        block: "port-group",
                        field: "name",
                    });
                } else if self.room("port groups", self.out.groups.len(), g.pos) {
                    self.out.groups.push(*g);
                }
            }
            Current::Vlarb(s) => {
                let n = self.out.vlarb.len() + self.out.sl2vl.len();
                if !self.given("group") {
                    self.err(QosError::MissingField {
                        pos: s.pos,
                        block: "vlarb-scope",
                        field: "group",
                    });
                } else if self.room("qos-setup scopes", n, s.pos) {
                    self.out.vlarb.push(*s);
                }
            }
            Current::Sl2vl(s) => {
                let n = self.out.vlarb.len() + self.out.sl2vl.len();
                if !self.given("group") {
                    self.err(QosError::MissingField {
                        pos: s.pos,
                        block: "sl2vl-scope",
                        field: "group",
                    });
                }
                if !self.given("sl2vl-table") {
                    self.err(QosError::MissingField {
                        pos: s.pos,
                        block: "sl2vl-scope",
                        field: "sl2vl-table",
                    });
                }
                if !s.groups.is_empty()
                    && s.table.is_some()
                    && self.room("qos-setup scopes", n, s.pos)
                {
                    self.out.sl2vl.push(*s);
                }
            }
            Current::Level(l) => {
                let lpos = l.level.pos;
                if !self.given("name") {
                    self.err(QosError::MissingField {
                        pos: lpos,
                        block: "qos-level",
                        field: "name",
                    });
                }
                if !self.given("sl") {
                    self.err(QosError::MissingField {
                        pos: lpos,
                        block: "qos-level",
                        field: "sl",
                    });
                }
                if self.given("name")
                    && self.given("sl")
                    && self.room("qos-levels", self.out.levels.len(), lpos)
                {
                    self.out.levels.push(*l);
                }
            }
            Current::Rule(r) => {
                if !self.given("qos-level-name") {
                    self.err(QosError::MissingField {
                        pos: r.pos,
                        block: "qos-match-rule",
                        field: "qos-level-name",
                    });
                } else if self.room(
                    "match rules",
                    self.out.rules.len() + self.out.ulps.len(),
                    r.pos,
                ) {
                    self.out.rules.push(*r);
                }
            }
        }
        self.seen.clear();
    }

    /// Whether a field was given in the current block (even with a bad value: its error is
    /// already reported, so no "missing" error follows).
    fn given(&self, field: &str) -> bool {
        self.seen.iter().any(|(f, _)| *f == field)
    }

    /// Records a single-valued field; false (and an error) when it was given before.
    fn once(&mut self, field: &'static str, block: Block, pos: Pos) -> bool {
        if let Some((_, first)) = self.seen.iter().find(|(f, _)| *f == field) {
            let first = *first;
            self.err(QosError::Repeated {
                pos,
                field: field.to_string(),
                block: block.keyword(),
                first,
            });
            return false;
        }
        self.seen.push((field, pos));
        true
    }

    fn field(&mut self, block: Block, line: &Line<'_>) {
        let Some((k, v)) = line.text.split_once(':') else {
            return self.err(syntax(
                line.pos(),
                format!(
                    "`{}` in `{}`: expected {}",
                    line.text,
                    block.keyword(),
                    block.expected()
                ),
            ));
        };
        let key = k.trim();
        let kpos = line.pos();
        let voff = line.offset_of(v) + (v.len() - v.trim_start().len());
        let value = v.trim();
        let vpos = line.pos_at(voff);
        if let Err(e) = self.field_value(block, line, key, kpos, value, vpos) {
            self.err(e);
        }
    }

    fn field_value(
        &mut self,
        block: Block,
        line: &Line<'_>,
        key: &str,
        kpos: Pos,
        value: &str,
        vpos: Pos,
    ) -> Result<(), QosError> {
        if value.is_empty() {
            return Err(bad(vpos, key, "empty value"));
        }
        let single = |s: &str| -> Result<String, QosError> {
            let t = unquote(s).trim();
            if t.is_empty() {
                return Err(bad(vpos, key, "empty value"));
            }
            if t.contains(',') && !s.starts_with('"') {
                return Err(bad(vpos, key, "one name expected, not a list"));
            }
            Ok(t.to_string())
        };
        if matches!(key, "across" | "across-to" | "across-from")
            && matches!(block, Block::VlarbScope | Block::Sl2vlScope)
        {
            return Err(QosError::Unsupported {
                pos: kpos,
                what: key.to_string(),
                why: "tables per link between groups are not applied by this SM; use `group:` (and `from:`/`to:` port numbers in an sl2vl-scope)".to_string(),
            });
        }
        let field: &'static str = match (block, key) {
            (_, "name") => "name",
            (_, "use") => "use",
            (Block::QosLevel, "sl") => "sl",
            (Block::QosLevel, "mtu-limit") => "mtu-limit",
            (Block::QosLevel, "rate-limit") => "rate-limit",
            (Block::QosLevel, "packet-life") => "packet-life",
            (Block::VlarbScope, "vlarb-high") => "vlarb-high",
            (Block::VlarbScope, "vlarb-low") => "vlarb-low",
            (Block::VlarbScope, "vl-high-limit") => "vl-high-limit",
            (Block::Sl2vlScope, "sl2vl-table") | (Block::Sl2vlScope, "sl2vl") => "sl2vl-table",
            (Block::Sl2vlScope, "from") => "from",
            (Block::Sl2vlScope, "to") => "to",
            (Block::MatchRule, "qos-level-name") => "qos-level-name",
            _ => "",
        };
        if key == "group" {
            self.seen.push(("group", kpos));
        }
        let single_valued = !field.is_empty();
        if single_valued && !self.once(field, block, kpos) {
            return Ok(());
        }
        let mut cur = std::mem::replace(&mut self.current, Current::None);
        let r = apply_to(&mut cur, block, line, key, value, vpos, &single);
        self.current = cur;
        r
    }

    fn ulp(&mut self, line: &Line<'_>) {
        match super::ulps::parse_ulp(line) {
            Ok(super::ulps::UlpLine::Default(level)) => {
                if self.out.ulp_default.is_some() {
                    self.err(QosError::Repeated {
                        pos: line.pos(),
                        field: "default".to_string(),
                        block: "qos-ulps",
                        first: self.ulp_default_pos(),
                    });
                } else {
                    self.out.ulp_default = Some(level);
                }
            }
            Ok(super::ulps::UlpLine::Rule(r)) => {
                let n = self.out.rules.len() + self.out.ulps.len();
                if self.room("match rules", n, r.pos) {
                    self.out.ulps.push(*r);
                }
            }
            Err(e) => self.err(e),
        }
    }

    fn ulp_default_pos(&self) -> Pos {
        match &self.out.ulp_default {
            Some(LevelRef::Name(_, p)) | Some(LevelRef::Sl(_, p)) => *p,
            None => Pos::default(),
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn apply_to(
    cur: &mut Current,
    block: Block,
    line: &Line<'_>,
    key: &str,
    value: &str,
    vpos: Pos,
    single: &dyn Fn(&str) -> Result<String, QosError>,
) -> Result<(), QosError> {
    let unknown = || {
        syntax(
            line.pos(),
            format!("unknown key `{key}` in `{}`", block.keyword()),
        )
    };
    match cur {
        Current::Group(g) => match key {
            "name" => g.name = single(value)?,
            "use" => g.use_ = Some(unquote(value).to_string()),
            "port-guid" => g.port_guids.extend(ranges(line, key, value, u64::MAX)?),
            "port-name" => {
                for it in split_list(line, value) {
                    g.port_names.push(port_name(line, key, it)?);
                }
            }
            "pkey" => g.pkeys.extend(pkey_ranges(line, key, value)?),
            "partition" => g
                .partitions
                .extend(strings(line, key, value)?.into_iter().map(|(s, _)| s)),
            "node-type" => {
                for it in split_list(line, value) {
                    let t = match it.text.to_ascii_uppercase().as_str() {
                        "CA" => NodeTypeSel::Ca,
                        "SWITCH" => NodeTypeSel::Switch,
                        "ROUTER" => NodeTypeSel::Router,
                        "ALL" => NodeTypeSel::All,
                        "SELF" => NodeTypeSel::SelfPort,
                        _ => {
                            return Err(bad(
                                line.pos_at(it.off),
                                key,
                                format!("`{}`: expected CA, SWITCH, ROUTER, ALL or SELF", it.text),
                            ));
                        }
                    };
                    g.node_types.push(t);
                }
            }
            _ => return Err(unknown()),
        },
        Current::Vlarb(s) => match key {
            "group" => s.groups.extend(strings(line, key, value)?),
            "vlarb-high" => s.high = Some(vlarb(line, key, value)?),
            "vlarb-low" => s.low = Some(vlarb(line, key, value)?),
            "vl-high-limit" => s.limit = Some(number(vpos, key, value, 0, 255)? as u8),
            _ => return Err(unknown()),
        },
        Current::Sl2vl(s) => match key {
            "group" => s.groups.extend(strings(line, key, value)?),
            "from" => s.from = port_sel(line, key, value)?,
            "to" => s.to = port_sel(line, key, value)?,
            "sl2vl-table" | "sl2vl" => s.table = Some(sl2vl(line, key, value)?),
            _ => return Err(unknown()),
        },
        Current::Level(l) => {
            let lv = &mut l.level;
            match key {
                "name" => {
                    lv.name = single(value)?;
                }
                "use" => lv.use_ = Some(unquote(value).to_string()),
                "sl" => {
                    lv.sl = number(vpos, key, value, 0, 15)? as u8;
                }
                "mtu-limit" => lv.mtu_limit = Some(number(vpos, key, value, 1, 5)? as u8),
                "rate-limit" => lv.rate_limit = Some(number(vpos, key, value, 2, 24)? as u8),
                "packet-life" => lv.packet_life = Some(number(vpos, key, value, 0, 63)? as u8),
                "path-bits" => lv.path_bits.extend(ranges(line, key, value, 127)?),
                "pkey" => lv.pkeys.extend(pkey_ranges(line, key, value)?),
                _ => return Err(unknown()),
            }
        }
        Current::Rule(r) => match key {
            "use" => r.use_ = Some(unquote(value).to_string()),
            "qos-class" => r.classes.extend(ranges(line, key, value, 0xFFF)?),
            "source" => r.source.extend(
                strings(line, key, value)?
                    .into_iter()
                    .map(|(s, p)| RawGroupRef::Name(s, p)),
            ),
            "destination" => r.destination.extend(
                strings(line, key, value)?
                    .into_iter()
                    .map(|(s, p)| RawGroupRef::Name(s, p)),
            ),
            "service-id" => r.service_ids.extend(ranges(line, key, value, u64::MAX)?),
            "pkey" => r.pkeys.extend(pkey_ranges(line, key, value)?),
            "qos-level-name" => r.level = Some(LevelRef::Name(single(value)?, vpos)),
            _ => return Err(unknown()),
        },
        Current::None => return Err(unknown()),
    }
    Ok(())
}

/// Converts a resolved raw rule (used by the resolver).
pub(crate) fn rule_shell(r: &RawRule, level: usize) -> MatchRule {
    MatchRule {
        pos: r.pos,
        origin: r.origin,
        use_: r.use_.clone(),
        qos_classes: r.classes.clone(),
        source: Vec::new(),
        destination: Vec::new(),
        either: Vec::new(),
        service_ids: r.service_ids.clone(),
        pkeys: r.pkeys.clone(),
        level,
    }
}

pub(crate) fn new_ulp_rule(pos: Pos) -> RawRule {
    RawRule::new(pos, RuleOrigin::Ulp)
}
