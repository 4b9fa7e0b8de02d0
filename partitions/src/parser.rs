//! The partitions.conf parser.
//!
//! It follows the structure of OpenSM's own reader (osm_prtn_config.c) so that a file means
//! here what it means to OpenSM, but it is strict where OpenSM is silent:
//!
//! * The file is read line by line; `#` starts a comment to the end of the line.
//! * A definition is `Header : members ;`. The header (name, `=PKey`, flags) must sit on one
//!   line together with its `:`, as OpenSM requires; members may span lines. A line break
//!   separates members like a comma does (OpenSM splits each line on its own).
//! * `mgid=GID[,flag=value]*` takes the rest of its line (up to `;`).
//! * Keywords, flag names and membership words may be abbreviated by prefix, as OpenSM
//!   matches them with `strncmp(word, keyword, strlen(word))`; the tree records it so that
//!   lints can warn. An empty word is an error here (OpenSM would read `x=` as `x=full`).
//! * Every error carries line:col; any error rejects the whole file. OpenSM instead logs
//!   "PARSE ERROR", throws away everything and silently falls back to `Default=0x7fff:ALL=full`.

use crate::ast::*;
use fabric::Guid;
use std::fmt;

/// One syntax error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// Where.
    pub pos: Pos,
    /// What.
    pub kind: ParseErrorKind,
}

/// Kinds of syntax errors, each with a stable code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParseErrorKind {
    /// A definition whose first line has no `:` before `;` or the end of the line.
    MissingColon,
    /// A definition never terminated by `;`.
    MissingSemicolon,
    /// The PKey is not a number.
    BadPKey(String),
    /// The PKey does not fit 16 bits.
    PKeyOutOfRange(String),
    /// The PKey names partition 0 (0x0000 / 0x8000), which is invalid.
    PKeyZero,
    /// `,` with no flag name.
    EmptyFlag,
    /// A header flag name OpenSM does not know.
    UnknownFlag(String),
    /// A flag that needs `=value` has none.
    FlagNeedsValue(String),
    /// `ipoib` or `indx0` given a value.
    FlagTakesNoValue(String),
    /// A flag value out of range or not a number.
    BadFlagValue {
        /// Flag name.
        flag: String,
        /// Value as written.
        value: String,
        /// What is allowed.
        expected: &'static str,
    },
    /// `=` with nothing after it.
    EmptyMembership,
    /// A port specifier that is neither a keyword nor a GUID.
    BadPortGuid(String),
    /// Port GUID 0.
    ZeroGuid,
    /// `=membership` with no port before it.
    MembershipWithoutPort,
    /// The mgid is not an IPv6-style GID.
    BadMgid(String),
    /// The mgid does not start with 0xff.
    MgidNotMulticast(String),
    /// `mgid` with no `=GID`.
    MgidNeedsValue,
    /// A flag on an mgid line OpenSM does not know.
    UnknownGroupFlag(String),
}

impl ParseErrorKind {
    /// The stable error code.
    pub fn code(&self) -> &'static str {
        match self {
            ParseErrorKind::MissingColon => "PART-E101",
            ParseErrorKind::MissingSemicolon => "PART-E102",
            ParseErrorKind::BadPKey(_) => "PART-E103",
            ParseErrorKind::PKeyOutOfRange(_) => "PART-E104",
            ParseErrorKind::PKeyZero => "PART-E105",
            ParseErrorKind::EmptyFlag => "PART-E106",
            ParseErrorKind::UnknownFlag(_) => "PART-E107",
            ParseErrorKind::FlagNeedsValue(_) => "PART-E108",
            ParseErrorKind::FlagTakesNoValue(_) => "PART-E109",
            ParseErrorKind::BadFlagValue { .. } => "PART-E110",
            ParseErrorKind::EmptyMembership => "PART-E111",
            ParseErrorKind::BadPortGuid(_) => "PART-E112",
            ParseErrorKind::ZeroGuid => "PART-E113",
            ParseErrorKind::MembershipWithoutPort => "PART-E114",
            ParseErrorKind::BadMgid(_) => "PART-E115",
            ParseErrorKind::MgidNotMulticast(_) => "PART-E116",
            ParseErrorKind::MgidNeedsValue => "PART-E117",
            ParseErrorKind::UnknownGroupFlag(_) => "PART-E118",
        }
    }
}

impl fmt::Display for ParseErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseErrorKind::MissingColon => write!(
                f,
                "partition header without ':' on its line (the header and its ':' must share a line)"
            ),
            ParseErrorKind::MissingSemicolon => {
                write!(f, "partition definition is not terminated by ';'")
            }
            ParseErrorKind::BadPKey(s) => write!(f, "PKey '{s}' is not a number"),
            ParseErrorKind::PKeyOutOfRange(s) => write!(f, "PKey '{s}' does not fit in 16 bits"),
            ParseErrorKind::PKeyZero => write!(
                f,
                "PKey names partition 0x0000, which is invalid (OpenSM would silently auto-generate a key)"
            ),
            ParseErrorKind::EmptyFlag => write!(f, "empty partition flag"),
            ParseErrorKind::UnknownFlag(s) => write!(
                f,
                "unknown partition flag '{s}' (expected ipoib, indx0, defmember, mtu, rate, sl, scope, Q_Key, TClass, FlowLabel)"
            ),
            ParseErrorKind::FlagNeedsValue(s) => write!(f, "flag '{s}' needs '=value'"),
            ParseErrorKind::FlagTakesNoValue(s) => write!(f, "flag '{s}' takes no value"),
            ParseErrorKind::BadFlagValue {
                flag,
                value,
                expected,
            } => write!(f, "bad value '{value}' for '{flag}': expected {expected}"),
            ParseErrorKind::EmptyMembership => write!(
                f,
                "empty membership after '=' (OpenSM would read it as full)"
            ),
            ParseErrorKind::BadPortGuid(s) => write!(
                f,
                "'{s}' is not a port GUID nor one of ALL, ALL_CAS, ALL_SWITCHES, ALL_ROUTERS, SELF, NONE"
            ),
            ParseErrorKind::ZeroGuid => write!(f, "port GUID 0 is invalid"),
            ParseErrorKind::MembershipWithoutPort => write!(f, "membership given without a port"),
            ParseErrorKind::BadMgid(s) => write!(f, "mgid '{s}' is not a GID"),
            ParseErrorKind::MgidNotMulticast(s) => {
                write!(f, "mgid '{s}' is not a multicast GID (must start with ff)")
            }
            ParseErrorKind::MgidNeedsValue => write!(f, "'mgid' needs '=GID'"),
            ParseErrorKind::UnknownGroupFlag(s) => write!(
                f,
                "unknown multicast group flag '{s}' (expected mtu, rate, sl, scope, Q_Key, TClass, FlowLabel)"
            ),
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: {}", self.pos, self.kind.code(), self.kind)
    }
}

/// OpenSM reads lines with `fgets` into a 4096-byte buffer of which 4094 bytes hold text and
/// newline: a line of 4094 or more bytes (without its newline) is split into two lines.
pub const OPENSM_MAX_LINE: usize = 4093;

/// Parses a whole partitions.conf text. Any error rejects the file; all errors found are
/// returned (after an error the parser resumes at the next `;`).
pub fn parse(src: &str) -> Result<PartitionFile, Vec<ParseError>> {
    let mut p = Parser::default();
    for (i, raw) in src.split('\n').enumerate() {
        let line_no = (i + 1) as u32;
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        if raw.len() > OPENSM_MAX_LINE {
            p.file.long_lines.push(LongLine {
                line: line_no,
                len: raw.len(),
            });
        }
        let text = match raw.find('#') {
            Some(i) => &raw[..i],
            None => raw,
        };
        p.line(line_no, text);
    }
    match std::mem::replace(&mut p.state, State::Idle) {
        State::Members(stmt) => p.errors.push(ParseError {
            pos: stmt.pos,
            kind: ParseErrorKind::MissingSemicolon,
        }),
        State::Skipping | State::Idle => {}
    }
    if p.errors.is_empty() {
        Ok(p.file)
    } else {
        Err(p.errors)
    }
}

#[derive(Default)]
enum State {
    #[default]
    Idle,
    Members(Box<Statement>),
    Skipping,
}

#[derive(Default)]
struct Parser {
    file: PartitionFile,
    errors: Vec<ParseError>,
    state: State,
}

/// A slice of one line with the byte offset where it starts.
#[derive(Clone, Copy)]
struct Seg<'a> {
    line: u32,
    full: &'a str,
    start: usize,
    text: &'a str,
}

impl<'a> Seg<'a> {
    fn new(line: u32, full: &'a str, start: usize, end: usize) -> Seg<'a> {
        Seg {
            line,
            full,
            start,
            text: &full[start..end],
        }
    }
    fn pos_at(&self, off: usize) -> Pos {
        let byte = (self.start + off).min(self.full.len());
        let col = self.full[..byte].chars().count() as u32 + 1;
        Pos {
            line: self.line,
            col,
        }
    }
    /// Trimmed sub-slice and its position.
    fn trimmed(&self) -> (String, Pos) {
        let lead = self.text.len() - self.text.trim_start().len();
        (self.text.trim().to_string(), self.pos_at(lead))
    }
    fn sub(&self, from: usize, to: usize) -> Seg<'a> {
        Seg::new(self.line, self.full, self.start + from, self.start + to)
    }
    /// Splits on `,` into sub-segments.
    fn split_commas(&self) -> Vec<Seg<'a>> {
        let mut out = Vec::new();
        let mut from = 0;
        for (i, c) in self.text.char_indices() {
            if c == ',' {
                out.push(self.sub(from, i));
                from = i + 1;
            }
        }
        out.push(self.sub(from, self.text.len()));
        out
    }
    /// Splits at the first `=` into (name, Some(value)).
    fn split_eq(&self) -> (Seg<'a>, Option<Seg<'a>>) {
        match self.text.find('=') {
            Some(i) => (self.sub(0, i), Some(self.sub(i + 1, self.text.len()))),
            None => (*self, None),
        }
    }
}

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t' || c == '\r'
}

impl Parser {
    fn err(&mut self, pos: Pos, kind: ParseErrorKind) {
        self.errors.push(ParseError { pos, kind });
    }

    fn line(&mut self, line_no: u32, text: &str) {
        let mut pos = 0usize;
        loop {
            let rest = &text[pos..];
            let semi = rest.find(';').map(|i| pos + i);
            let seg_end = semi.unwrap_or(text.len());
            match std::mem::replace(&mut self.state, State::Idle) {
                State::Skipping => match semi {
                    Some(s) => {
                        pos = s + 1;
                        continue;
                    }
                    None => {
                        self.state = State::Skipping;
                        return;
                    }
                },
                State::Idle => {
                    let lead = rest.len() - rest.trim_start_matches(is_blank).len();
                    pos += lead;
                    if pos >= text.len() {
                        return;
                    }
                    let seg = Seg::new(line_no, text, pos, seg_end);
                    let start_pos = seg.pos_at(0);
                    match seg.text.find(':') {
                        None => {
                            self.err(start_pos, ParseErrorKind::MissingColon);
                            match semi {
                                Some(s) => {
                                    pos = s + 1;
                                    continue;
                                }
                                None => {
                                    self.state = State::Skipping;
                                    return;
                                }
                            }
                        }
                        Some(colon) => {
                            let header = seg.sub(0, colon);
                            let mut stmt = Statement {
                                pos: start_pos,
                                name: None,
                                pkey: None,
                                flags: Vec::new(),
                                items: Vec::new(),
                                end: start_pos,
                            };
                            let ok = self.header(header, &mut stmt);
                            let members = seg.sub(colon + 1, seg.text.len());
                            let ok = self.members(members, &mut stmt) && ok;
                            pos = seg.start + colon + 1;
                            self.after_members(ok, stmt, semi, line_no, text, &mut pos);
                            if semi.is_none() {
                                return;
                            }
                        }
                    }
                }
                State::Members(mut stmt) => {
                    let seg = Seg::new(line_no, text, pos, seg_end);
                    let ok = self.members(seg, &mut stmt);
                    self.after_members(ok, *stmt, semi, line_no, text, &mut pos);
                    if semi.is_none() {
                        return;
                    }
                }
            }
        }
    }

    fn after_members(
        &mut self,
        ok: bool,
        mut stmt: Statement,
        semi: Option<usize>,
        line_no: u32,
        text: &str,
        pos: &mut usize,
    ) {
        match (ok, semi) {
            (false, Some(s)) => {
                *pos = s + 1;
                self.state = State::Idle;
            }
            (false, None) => self.state = State::Skipping,
            (true, Some(s)) => {
                stmt.end = Seg::new(line_no, text, s, s).pos_at(0);
                self.file.statements.push(stmt);
                *pos = s + 1;
                self.state = State::Idle;
            }
            (true, None) => self.state = State::Members(Box::new(stmt)),
        }
    }

    fn header(&mut self, header: Seg<'_>, stmt: &mut Statement) -> bool {
        let mut ok = true;
        let pieces = header.split_commas();
        let (name_seg, id_seg) = pieces[0].split_eq();
        let (name, name_pos) = name_seg.trimmed();
        let mut id = id_seg.map(|s| s.trimmed());
        let mut name = if name.is_empty() {
            None
        } else {
            Some(Word {
                text: name,
                pos: name_pos,
            })
        };
        // OpenSM: a header starting with a digit and no '=' is a PKey without a name.
        if id.is_none()
            && name
                .as_ref()
                .is_some_and(|n| n.text.starts_with(|c: char| c.is_ascii_digit()))
        {
            id = name.take().map(|w| (w.text, w.pos));
        }
        stmt.name = name;
        if let Some((text, pos)) = id {
            match parse_c_number(&text) {
                None => {
                    self.err(pos, ParseErrorKind::BadPKey(text));
                    ok = false;
                }
                Some(v) if v > 0xFFFF => {
                    self.err(pos, ParseErrorKind::PKeyOutOfRange(text));
                    ok = false;
                }
                Some(v) if v & 0x7FFF == 0 => {
                    self.err(pos, ParseErrorKind::PKeyZero);
                    ok = false;
                }
                Some(v) => {
                    stmt.pkey = Some(PKeySpec {
                        value: v as u16,
                        pos,
                    })
                }
            }
        }
        for piece in &pieces[1..] {
            match self.header_flag(*piece) {
                Some(f) => stmt.flags.push(f),
                None => ok = false,
            }
        }
        ok
    }

    fn header_flag(&mut self, piece: Seg<'_>) -> Option<HeaderFlag> {
        let (name_seg, val_seg) = piece.split_eq();
        let (name, pos) = name_seg.trimmed();
        let val = val_seg.map(|s| s.trimmed());
        if name.is_empty() {
            self.err(pos, ParseErrorKind::EmptyFlag);
            return None;
        }
        let word = Word {
            text: name.clone(),
            pos,
        };
        if name == "indx0" {
            return self.no_value(&name, val).map(|_| HeaderFlag {
                kind: HeaderFlagKind::Indx0,
                word,
                abbreviated: false,
            });
        }
        if let Some((canon, abbreviated)) = match_prefix(&name, GROUP_FLAGS) {
            let flag = self.group_value(canon, &name, pos, val)?;
            return Some(HeaderFlag {
                kind: HeaderFlagKind::Group(flag),
                word,
                abbreviated,
            });
        }
        match match_prefix(&name, &["ipoib", "defmember"]) {
            Some(("ipoib", abbreviated)) => self.no_value(&name, val).map(|_| HeaderFlag {
                kind: HeaderFlagKind::Ipoib,
                word,
                abbreviated,
            }),
            Some((_, abbreviated)) => {
                let Some((v, vpos)) = val else {
                    self.err(pos, ParseErrorKind::FlagNeedsValue(name));
                    return None;
                };
                let spec = self.membership(v, vpos)?;
                Some(HeaderFlag {
                    kind: HeaderFlagKind::DefMember(spec),
                    word,
                    abbreviated,
                })
            }
            None => {
                self.err(pos, ParseErrorKind::UnknownFlag(name));
                None
            }
        }
    }

    fn no_value(&mut self, name: &str, val: Option<(String, Pos)>) -> Option<()> {
        match val {
            Some((_, vpos)) => {
                self.err(vpos, ParseErrorKind::FlagTakesNoValue(name.to_string()));
                None
            }
            None => Some(()),
        }
    }

    fn group_value(
        &mut self,
        canon: &str,
        name: &str,
        pos: Pos,
        val: Option<(String, Pos)>,
    ) -> Option<GroupFlag> {
        let Some((v, vpos)) = val else {
            self.err(pos, ParseErrorKind::FlagNeedsValue(name.to_string()));
            return None;
        };
        let n = parse_c_number(&v);
        let (flag, expected) = match canon {
            "mtu" => (
                n.filter(|n| (1..=5).contains(n))
                    .map(|n| GroupFlag::Mtu(n as u8)),
                "an MTU code 1..5 (1=256 .. 5=4096)",
            ),
            "rate" => (
                n.filter(|n| (2..=22).contains(n))
                    .map(|n| GroupFlag::Rate(n as u8)),
                "a rate code 2..22 (3 = 10 Gb/s)",
            ),
            "sl" => (
                n.filter(|n| *n <= 15).map(|n| GroupFlag::Sl(n as u8)),
                "a service level 0..15",
            ),
            "scope" => (
                n.filter(|n| (1..=15).contains(n))
                    .map(|n| GroupFlag::Scope(n as u8)),
                "a scope 1..15 (2 = link local)",
            ),
            "Q_Key" => (
                n.filter(|n| *n <= 0xFFFF_FFFF)
                    .map(|n| GroupFlag::QKey(n as u32)),
                "a 32-bit Q_Key",
            ),
            "TClass" => (
                n.filter(|n| *n <= 0xFF).map(|n| GroupFlag::TClass(n as u8)),
                "a traffic class 0..255",
            ),
            _ => (
                n.filter(|n| *n <= 0xF_FFFF)
                    .map(|n| GroupFlag::FlowLabel(n as u32)),
                "a flow label 0..0xfffff",
            ),
        };
        if flag.is_none() {
            self.err(
                vpos,
                ParseErrorKind::BadFlagValue {
                    flag: name.to_string(),
                    value: v,
                    expected,
                },
            );
        }
        flag
    }

    fn membership(&mut self, text: String, pos: Pos) -> Option<MembershipSpec> {
        if text.is_empty() {
            self.err(pos, ParseErrorKind::EmptyMembership);
            return None;
        }
        // OpenSM's order: full, both, then limited; anything else is limited with a warning.
        let (value, abbreviated) = match match_prefix(&text, &["full", "both", "limited"]) {
            Some(("full", a)) => (MemberWord::Full, a),
            Some(("both", a)) => (MemberWord::Both, a),
            Some((_, a)) => (MemberWord::Limited, a),
            None => (MemberWord::Unrecognized, false),
        };
        Some(MembershipSpec {
            value,
            word: Word { text, pos },
            abbreviated,
        })
    }

    /// Parses members from one line's segment. Returns false on error.
    fn members(&mut self, seg: Seg<'_>, stmt: &mut Statement) -> bool {
        let pieces = seg.split_commas();
        let mut i = 0;
        while i < pieces.len() {
            let piece = pieces[i];
            i += 1;
            let (name_seg, val_seg) = piece.split_eq();
            let (name, pos) = name_seg.trimmed();
            let val = val_seg.map(|s| s.trimmed());
            if name.is_empty() {
                if let Some((_, vpos)) = val {
                    self.err(vpos, ParseErrorKind::MembershipWithoutPort);
                    return false;
                }
                continue;
            }
            if name == "mgid" {
                let Some((gid, gpos)) = val else {
                    self.err(pos, ParseErrorKind::MgidNeedsValue);
                    return false;
                };
                let Some(line) = self.mgid_line(pos, gid, gpos, &pieces[i..]) else {
                    return false;
                };
                stmt.items.push(Item::Mgid(line));
                return true;
            }
            let Some((target, abbreviated)) = self.target(&name, pos) else {
                return false;
            };
            let membership = match val {
                Some((v, vpos)) => match self.membership(v, vpos) {
                    Some(m) => Some(m),
                    None => return false,
                },
                None => None,
            };
            stmt.items.push(Item::Member(Member {
                target,
                name: Word { text: name, pos },
                name_abbreviated: abbreviated,
                membership,
            }));
        }
        true
    }

    fn target(&mut self, name: &str, pos: Pos) -> Option<(Target, bool)> {
        if name.starts_with(|c: char| c.is_ascii_digit()) {
            return match parse_c_number(name) {
                Some(0) => {
                    self.err(pos, ParseErrorKind::ZeroGuid);
                    None
                }
                Some(g) => Some((Target::Guid(Guid(g)), false)),
                None => {
                    self.err(pos, ParseErrorKind::BadPortGuid(name.to_string()));
                    None
                }
            };
        }
        let keywords = [
            "NONE",
            "ALL",
            "ALL_CAS",
            "ALL_SWITCHES",
            "ALL_ROUTERS",
            "SELF",
        ];
        match match_prefix(name, &keywords) {
            Some((kw, abbreviated)) => {
                let t = match kw {
                    "NONE" => Target::None,
                    "ALL" => Target::All,
                    "ALL_CAS" => Target::AllCas,
                    "ALL_SWITCHES" => Target::AllSwitches,
                    "ALL_ROUTERS" => Target::AllRouters,
                    _ => Target::SelfPort,
                };
                Some((t, abbreviated))
            }
            None => {
                self.err(pos, ParseErrorKind::BadPortGuid(name.to_string()));
                None
            }
        }
    }

    fn mgid_line(
        &mut self,
        pos: Pos,
        gid: String,
        gpos: Pos,
        rest: &[Seg<'_>],
    ) -> Option<MgidLine> {
        let addr: std::net::Ipv6Addr = match gid.parse() {
            Ok(a) => a,
            Err(_) => {
                self.err(gpos, ParseErrorKind::BadMgid(gid));
                return None;
            }
        };
        let mgid = addr.octets();
        if mgid[0] != 0xff {
            self.err(gpos, ParseErrorKind::MgidNotMulticast(gid));
            return None;
        }
        let mut flags = Vec::new();
        for piece in rest {
            let (name_seg, val_seg) = piece.split_eq();
            let (name, fpos) = name_seg.trimmed();
            let val = val_seg.map(|s| s.trimmed());
            if name.is_empty() && val.is_none() {
                continue;
            }
            let Some((canon, abbreviated)) = match_prefix(&name, GROUP_FLAGS) else {
                self.err(fpos, ParseErrorKind::UnknownGroupFlag(name));
                return None;
            };
            let flag = self.group_value(canon, &name, fpos, val)?;
            flags.push(GroupFlagSpec {
                flag,
                word: Word {
                    text: name,
                    pos: fpos,
                },
                abbreviated,
            });
        }
        Some(MgidLine { pos, mgid, flags })
    }
}

/// Group flags in the order OpenSM tries them (which decides what an abbreviation means).
const GROUP_FLAGS: &[&str] = &["mtu", "rate", "scope", "Q_Key", "TClass", "sl", "FlowLabel"];

/// OpenSM's `strncmp(word, keyword, strlen(word)) == 0`: the first keyword `word` is a
/// prefix of. Returns the keyword and whether `word` was a strict prefix. Empty words match
/// nothing here.
fn match_prefix<'k>(word: &str, keywords: &[&'k str]) -> Option<(&'k str, bool)> {
    if word.is_empty() {
        return None;
    }
    keywords
        .iter()
        .find(|k| k.starts_with(word))
        .map(|k| (*k, k.len() != word.len()))
}

/// `strtoul(s, &end, 0)` requiring the whole string: `0x` hex, leading `0` octal, else
/// decimal. No sign, no blanks.
pub fn parse_c_number(s: &str) -> Option<u64> {
    let (digits, radix) = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (h, 16)
    } else if s.len() > 1 && s.starts_with('0') {
        (&s[1..], 8)
    } else {
        (s, 10)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}
