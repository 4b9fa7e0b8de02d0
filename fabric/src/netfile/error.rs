//! Parse errors of the topology file format.

use crate::topology::TopologyError;
use crate::types::Guid;
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
    /// A port line that belongs to no node record (after a blank line, or after all of the
    /// node's ports were listed); ibsim would silently ignore it.
    #[error(
        "port line outside a node record: a blank line or the node's port count ended the record before it"
    )]
    PortOutsideRecord,
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
