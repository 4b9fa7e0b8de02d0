//! Diagnostics with stable codes: what [`crate::check`] reports about a file.
//!
//! Codes: `PART-E1xx` are syntax errors (see [`crate::parser::ParseErrorKind::code`]);
//! `PART-Wnnn` are warnings and `PART-Ennn` errors found by semantics, lints and planning.

use crate::ast::Pos;
use serde::Serialize;
use std::fmt;

/// Warning or error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Severity {
    /// Probably not what was meant, but isolation and function hold.
    Warning,
    /// Isolation or function breaks: `check` exits non-zero and `plan` refuses.
    Error,
}

/// Every lint the crate can emit, with its stable code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum LintCode {
    /// PART-W001: the file has no rule for the Default partition: every port but the SM's is limited there.
    NoDefaultRule,
    /// PART-W002: a partition with no full member: nobody in it can talk.
    NoFullMember,
    /// PART-E003: an ipoib partition whose members are all limited: IPoIB cannot work (RFC 4391).
    IpoibAllLimited,
    /// PART-E004: a membership word OpenSM does not recognise, silently taken as limited.
    UnrecognizedMembership,
    /// PART-W005: an abbreviated keyword, flag or membership word (OpenSM matches prefixes).
    Abbreviation,
    /// PART-W006: a PKey written with bit 15 set, or one partition number under two names.
    PKeyAlias,
    /// PART-W007: a PKey generated automatically (no `=PKey`): its value depends on file order.
    AutoPKey,
    /// PART-E008: a port's P_KeyTable cannot hold all its keys; the excess is dropped.
    TableOverflow,
    /// PART-E009: a switch port's enforcement table is too small: OpenSM silently clears enforcement.
    EnforcementOverflow,
    /// PART-W010: a port GUID that is not an end port of the topology.
    UnknownGuid,
    /// PART-E011: a line longer than OpenSM reads in one piece (it would split it).
    LongLine,
    /// PART-E012: `both` without allow_both_pkeys (OpenSM makes it full).
    BothNotAllowed,
    /// PART-W013: a rule would demote the SM port in Default; it stays full (documented behaviour).
    SmPortDemoted,
    /// PART-W014: multicast parameters on a partition that creates no group.
    GroupFlagsUnused,
    /// PART-W015: a file with no definitions (OpenSM would fall back to ALL=full).
    EmptyFile,
    /// PART-W016: `sl=` while QoS is off: OpenSM forces SL 0.
    SlWithoutQos,
    /// PART-E017: an IP `mgid=` group OpenSM refuses (PKey, rate or MTU mismatch).
    BadIpGroup,
    /// PART-W018: SELF used but the SM port GUID is not known.
    SelfUnknown,
    /// PART-W019: a partition with no member ports (OpenSM deletes it and its groups).
    EmptyPartition,
    /// PART-W020: a numeric GUID or PKey written in octal (leading 0).
    OctalNumber,
    /// PART-E021: a text larger than [`crate::MAX_POLICY_BYTES`] (not parsed).
    TooLarge,
    /// PART-E022: more partitions than [`crate::MAX_PARTITIONS`] (not planned).
    TooManyPartitions,
}

impl LintCode {
    /// The stable code.
    pub fn code(self) -> &'static str {
        match self {
            LintCode::NoDefaultRule => "PART-W001",
            LintCode::NoFullMember => "PART-W002",
            LintCode::IpoibAllLimited => "PART-E003",
            LintCode::UnrecognizedMembership => "PART-E004",
            LintCode::Abbreviation => "PART-W005",
            LintCode::PKeyAlias => "PART-W006",
            LintCode::AutoPKey => "PART-W007",
            LintCode::TableOverflow => "PART-E008",
            LintCode::EnforcementOverflow => "PART-E009",
            LintCode::UnknownGuid => "PART-W010",
            LintCode::LongLine => "PART-E011",
            LintCode::BothNotAllowed => "PART-E012",
            LintCode::SmPortDemoted => "PART-W013",
            LintCode::GroupFlagsUnused => "PART-W014",
            LintCode::EmptyFile => "PART-W015",
            LintCode::SlWithoutQos => "PART-W016",
            LintCode::BadIpGroup => "PART-E017",
            LintCode::SelfUnknown => "PART-W018",
            LintCode::EmptyPartition => "PART-W019",
            LintCode::OctalNumber => "PART-W020",
            LintCode::TooLarge => "PART-E021",
            LintCode::TooManyPartitions => "PART-E022",
        }
    }

    /// Warning or error.
    pub fn severity(self) -> Severity {
        if self.code().starts_with("PART-E") {
            Severity::Error
        } else {
            Severity::Warning
        }
    }
}

/// One diagnostic.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Lint {
    /// What.
    pub code: LintCode,
    /// Where in the file, when it comes from the file.
    pub pos: Option<Pos>,
    /// Human explanation.
    pub message: String,
}

impl Lint {
    /// Builds a lint.
    pub fn new(code: LintCode, pos: Option<Pos>, message: impl Into<String>) -> Lint {
        Lint {
            code,
            pos,
            message: message.into(),
        }
    }

    /// Severity of its code.
    pub fn severity(&self) -> Severity {
        self.code.severity()
    }
}

impl fmt::Display for Lint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sev = match self.severity() {
            Severity::Warning => "warning",
            Severity::Error => "error",
        };
        match self.pos {
            Some(p) => write!(f, "{p}: {sev} {}: {}", self.code.code(), self.message),
            None => write!(f, "-: {sev} {}: {}", self.code.code(), self.message),
        }
    }
}
