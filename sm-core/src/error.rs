//! The crate's error type.

use fabric::Guid;

/// Errors of sm-core's fallible entry points.
#[derive(Debug, thiserror::Error)]
pub enum SmError {
    /// The partitions.conf text does not parse (the whole file is rejected).
    #[error("SMC-E001 partitions policy rejected: {0}")]
    Partitions(#[from] partitions::PartitionsError),
    /// A guid2lid file line is malformed.
    #[error("SMC-E002 guid2lid line {line}: {why}")]
    Guid2Lid {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        why: String,
    },
    /// Routing failed (every engine of the chain refused, or the input was inconsistent).
    #[error("SMC-E003 routing failed: {0}")]
    Routing(#[from] routing::RoutingError),
    /// The discovered topology could not be assembled.
    #[error("SMC-E004 topology assembly failed: {0}")]
    Topology(#[from] fabric::TopologyError),
    /// The unicast LID space is exhausted.
    #[error("SMC-E005 no free unicast LID block for port {0}")]
    LidSpaceExhausted(Guid),
    /// A configuration value is out of range.
    #[error("SMC-E006 bad configuration: {0}")]
    Config(String),
    /// A P_KeyTable read-back cannot run now.
    #[error("SMC-E007 P_KeyTable read-back refused: {0}")]
    Readback(String),
    /// The fabric's end ports need more unicast LIDs than one subnet has: it cannot be
    /// addressed at all (refused before any LID is given out).
    #[error(
        "SMC-E008 fabric needs {needed} LIDs (LMC {lmc}) but a subnet has {available}: {ports} end ports, split it into subnets or lower the LMC"
    )]
    FabricNeedsTooManyLids {
        /// Unicast LIDs the end ports need (2^LMC per CA port, one per switch).
        needed: u64,
        /// The highest LMC asked for.
        lmc: u8,
        /// Unicast LIDs in one subnet (0x0001-0xBFFF: 49,151).
        available: u64,
        /// End ports asking for LIDs.
        ports: usize,
    },
    /// An error thresholds text (ibqueryerrors' `error_thresholds` format) is malformed.
    #[error("SMC-E009 error thresholds line {line}: {why}")]
    Thresholds {
        /// 1-based line (0: the text as a whole).
        line: usize,
        /// What is wrong.
        why: String,
    },
    /// A counter query of the performance manager cannot be made.
    #[error("SMC-E010 counter query refused: {0}")]
    PerfQuery(String),
    /// `explain`: the LID or GUID names no port the master found.
    #[error("SMC-E011 {target} is not a port this master found (last heavy sweep {sweep}): {hint}")]
    ExplainUnknown {
        /// What was asked for (`LID 12`, `GUID 0x…`, with the port when given).
        target: String,
        /// The last heavy sweep.
        sweep: u64,
        /// What it may be and what to do.
        hint: String,
    },
    /// `explain`: the node has no such port.
    #[error("SMC-E012 node {node} has ports 0..={nports}, not port {port}")]
    ExplainPort {
        /// Node GUID.
        node: Guid,
        /// The port asked for.
        port: u8,
        /// Its number of ports.
        nports: u8,
    },
}
