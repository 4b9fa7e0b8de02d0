//! The crate's one error type, [`QosError`], with stable greppable codes `QOS-E001`...
//!
//! Option errors name the key (and the entry of a list); policy errors carry the 1-based
//! line and column of the text they are about.

use std::fmt;

/// A 1-based line and column in a policy text (columns count characters).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Pos {
    /// Line, from 1.
    pub line: u32,
    /// Column, from 1, in characters.
    pub col: u32,
}

impl Pos {
    /// A position.
    pub const fn new(line: u32, col: u32) -> Pos {
        Pos { line, col }
    }
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

/// Everything the crate refuses, each with a stable code.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QosError {
    /// QOS-E001: an option key that is not one of OpenSM's QoS keys.
    #[error(
        "QOS-E001: unknown QoS option `{key}` (known: qos, qos_policy_file, qos[_ca|_sw0|_swe|_rtr]_{{max_vls,high_limit,vlarb_high,vlarb_low,sl2vl}})"
    )]
    UnknownOption {
        /// The key as given.
        key: String,
    },
    /// QOS-E002: an option value that does not parse or is out of range.
    #[error("QOS-E002: option `{key}`, entry {index} `{entry}`: {reason}")]
    BadOptionValue {
        /// The key.
        key: String,
        /// 1-based entry in a comma list (1 for a single value).
        index: usize,
        /// The offending entry text.
        entry: String,
        /// What is wrong and what is allowed.
        reason: String,
    },
    /// QOS-E003: a policy text larger than [`crate::MAX_POLICY_BYTES`]; not parsed.
    #[error("QOS-E003 {pos}: the policy is {size} bytes, more than the limit of {limit} bytes")]
    TooLarge {
        /// Always 1:1.
        pos: Pos,
        /// Size of the text.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// QOS-E004: more port groups, levels, rules or scopes than [`crate::MAX_ITEMS`].
    #[error("QOS-E004 {pos}: more than {limit} {what}")]
    TooMany {
        /// Where the first item over the limit starts.
        pos: Pos,
        /// What was counted.
        what: &'static str,
        /// The limit.
        limit: usize,
    },
    /// QOS-E005: a line that is not what the enclosing block allows.
    #[error("QOS-E005 {pos}: syntax error: {msg}")]
    Syntax {
        /// Where.
        pos: Pos,
        /// What was expected.
        msg: String,
    },
    /// QOS-E006: OpenSM grammar we deliberately do not support (`across`, `across-to`,
    /// `across-from`).
    #[error("QOS-E006 {pos}: `{what}` is not supported: {why}")]
    Unsupported {
        /// Where.
        pos: Pos,
        /// The keyword.
        what: String,
        /// Why, and what to write instead.
        why: String,
    },
    /// QOS-E007: a malformed or out-of-range value.
    #[error("QOS-E007 {pos}: `{key}`: {msg}")]
    BadValue {
        /// Where the offending value starts.
        pos: Pos,
        /// The key whose value it is.
        key: String,
        /// What is wrong and what is allowed.
        msg: String,
    },
    /// QOS-E008: two port groups or two qos-levels with the same name (case-insensitive).
    #[error("QOS-E008 {pos}: duplicate {what} name `{name}` (first defined at {first})")]
    Duplicate {
        /// Where the second definition is.
        pos: Pos,
        /// `port-group` or `qos-level`.
        what: &'static str,
        /// The name.
        name: String,
        /// Where the first one is.
        first: Pos,
    },
    /// QOS-E009: a reference to a port group or qos-level that is not defined.
    #[error("QOS-E009 {pos}: unknown {what} `{name}`")]
    UnknownReference {
        /// Where the reference is.
        pos: Pos,
        /// `port-group` or `qos-level`.
        what: &'static str,
        /// The name referred to.
        name: String,
    },
    /// QOS-E010: a block without a field it must have.
    #[error("QOS-E010 {pos}: `{block}` has no `{field}`")]
    MissingField {
        /// Where the block starts.
        pos: Pos,
        /// The block keyword.
        block: &'static str,
        /// The missing field.
        field: &'static str,
    },
    /// QOS-E011: a field that may appear once appears again in the same block.
    #[error("QOS-E011 {pos}: `{field}` given twice in one `{block}` (first at {first})")]
    Repeated {
        /// Where the repetition is.
        pos: Pos,
        /// The field.
        field: String,
        /// The block keyword.
        block: &'static str,
        /// The first occurrence.
        first: Pos,
    },
    /// QOS-E012: rules or levels exist but no default level does (a qos-level named
    /// `default` or a qos-ulps `default:` rule).
    #[error(
        "QOS-E012 {pos}: no default QoS level: add a qos-level named `default` or `default: SL` in qos-ulps"
    )]
    NoDefaultLevel {
        /// 1:1.
        pos: Pos,
    },
    /// QOS-E013: the text ended inside a block.
    #[error("QOS-E013 {pos}: `{block}` opened here is never closed (expected `end-{block}`)")]
    Unclosed {
        /// Where the block was opened.
        pos: Pos,
        /// The block keyword.
        block: &'static str,
    },
}

impl QosError {
    /// The stable code (`QOS-E001`...).
    pub fn code(&self) -> &'static str {
        match self {
            QosError::UnknownOption { .. } => "QOS-E001",
            QosError::BadOptionValue { .. } => "QOS-E002",
            QosError::TooLarge { .. } => "QOS-E003",
            QosError::TooMany { .. } => "QOS-E004",
            QosError::Syntax { .. } => "QOS-E005",
            QosError::Unsupported { .. } => "QOS-E006",
            QosError::BadValue { .. } => "QOS-E007",
            QosError::Duplicate { .. } => "QOS-E008",
            QosError::UnknownReference { .. } => "QOS-E009",
            QosError::MissingField { .. } => "QOS-E010",
            QosError::Repeated { .. } => "QOS-E011",
            QosError::NoDefaultLevel { .. } => "QOS-E012",
            QosError::Unclosed { .. } => "QOS-E013",
        }
    }

    /// The position in the policy text, for policy errors (None for option errors).
    pub fn pos(&self) -> Option<Pos> {
        match self {
            QosError::UnknownOption { .. } | QosError::BadOptionValue { .. } => None,
            QosError::TooLarge { pos, .. }
            | QosError::TooMany { pos, .. }
            | QosError::Syntax { pos, .. }
            | QosError::Unsupported { pos, .. }
            | QosError::BadValue { pos, .. }
            | QosError::Duplicate { pos, .. }
            | QosError::UnknownReference { pos, .. }
            | QosError::MissingField { pos, .. }
            | QosError::Repeated { pos, .. }
            | QosError::NoDefaultLevel { pos }
            | QosError::Unclosed { pos, .. } => Some(*pos),
        }
    }
}
