//! The typed syntax tree of a partitions.conf file, as written (before semantics).

use fabric::Guid;
use serde::Serialize;
use std::fmt;

/// A 1-based line and column (columns count characters, not bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize)]
pub struct Pos {
    /// Line number, from 1.
    pub line: u32,
    /// Column, from 1.
    pub col: u32,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

/// A word exactly as written in the file, with where it starts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Word {
    /// The text, trimmed of surrounding blanks.
    pub text: String,
    /// Where the text starts.
    pub pos: Pos,
}

/// A whole parsed file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Default)]
pub struct PartitionFile {
    /// Partition definitions, in file order.
    pub statements: Vec<Statement>,
    /// Lines longer than OpenSM's line buffer reads in one piece (see [`crate::OPENSM_MAX_LINE`]).
    pub long_lines: Vec<LongLine>,
}

/// A line OpenSM would split in two (its `fgets` buffer is 4096 bytes, 4094 usable).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LongLine {
    /// Line number.
    pub line: u32,
    /// Length in bytes, without the newline.
    pub len: usize,
}

/// One `Header : members ;` definition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Statement {
    /// Where the definition starts.
    pub pos: Pos,
    /// The partition name, when given.
    pub name: Option<Word>,
    /// The `=PKey` value as written (all 16 bits), when given.
    pub pkey: Option<PKeySpec>,
    /// Header flags (`ipoib`, `indx0`, `defmember=`, multicast group parameters).
    pub flags: Vec<HeaderFlag>,
    /// Members and `mgid=` lines, in order.
    pub items: Vec<Item>,
    /// Where the terminating `;` is.
    pub end: Pos,
}

/// A PKey given in a header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PKeySpec {
    /// The 16-bit value as written; only the low 15 bits name the partition.
    pub value: u16,
    /// Where it is written.
    pub pos: Pos,
}

/// A header flag and how it was spelled.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HeaderFlag {
    /// What the flag means.
    pub kind: HeaderFlagKind,
    /// The flag name as written.
    pub word: Word,
    /// True when the name was an abbreviation OpenSM accepts by prefix match (e.g. `ip`).
    pub abbreviated: bool,
}

/// The meaning of a header flag.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum HeaderFlagKind {
    /// `ipoib`: create the IPoIB broadcast group.
    Ipoib,
    /// `indx0`: put this partition's key at P_KeyTable index 0.
    Indx0,
    /// `defmember=`: membership of members written without `=membership`.
    DefMember(MembershipSpec),
    /// A multicast group parameter.
    Group(GroupFlag),
}

/// A multicast group parameter (`mtu=`, `rate=`, `sl=`, `scope=`, `Q_Key=`, `TClass=`, `FlowLabel=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum GroupFlag {
    /// IBA MTU code (1=256 .. 5=4096).
    Mtu(u8),
    /// IBA rate code (2=2.5 Gb/s, 3=10 Gb/s, ...).
    Rate(u8),
    /// Service level 0..15.
    Sl(u8),
    /// Multicast scope nibble 1..15 (2 link-local, 5 site-local, 8 organization, 14 global).
    Scope(u8),
    /// Q_Key.
    QKey(u32),
    /// Traffic class.
    TClass(u8),
    /// 20-bit flow label.
    FlowLabel(u32),
}

/// A group flag on an `mgid=` line, with its spelling.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GroupFlagSpec {
    /// The parameter.
    pub flag: GroupFlag,
    /// The name as written.
    pub word: Word,
    /// True when the name was an abbreviation.
    pub abbreviated: bool,
}

/// An element of a member list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Item {
    /// A port specifier.
    Member(Member),
    /// An `mgid=` multicast group line.
    Mgid(MgidLine),
}

/// A port specifier: `target[=membership]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Member {
    /// Which ports.
    pub target: Target,
    /// The target as written.
    pub name: Word,
    /// True when a keyword was abbreviated (`A` for `ALL`, `S` for `SELF`).
    pub name_abbreviated: bool,
    /// The membership, when written; otherwise the statement's `defmember` applies.
    pub membership: Option<MembershipSpec>,
}

/// A membership word as written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MembershipSpec {
    /// What OpenSM makes of it.
    pub value: MemberWord,
    /// As written.
    pub word: Word,
    /// True when it was a strict prefix of the word (`f`, `lim`).
    pub abbreviated: bool,
}

/// Membership words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum MemberWord {
    /// `full`.
    Full,
    /// `limited`.
    Limited,
    /// `both` (full and limited; needs allow_both_pkeys).
    Both,
    /// Anything else: OpenSM silently takes it as limited.
    Unrecognized,
}

/// Which ports a specifier names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Target {
    /// One port by port GUID.
    Guid(Guid),
    /// Every end port.
    All,
    /// Every CA end port.
    AllCas,
    /// Every switch end port (port 0).
    AllSwitches,
    /// Every router end port.
    AllRouters,
    /// The SM's own port.
    SelfPort,
    /// No port.
    None,
}

/// `mgid=GID[,flag=value]*`: a multicast group pre-created in this partition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MgidLine {
    /// Where `mgid` is written.
    pub pos: Pos,
    /// The 16-byte MGID as written.
    pub mgid: [u8; 16],
    /// Its own parameters (overriding the partition's).
    pub flags: Vec<GroupFlagSpec>,
}
