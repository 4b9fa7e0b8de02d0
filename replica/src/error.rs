//! Why a command was refused at apply, and why a snapshot could not be restored.

use fabric::Guid;
use thiserror::Error;

/// A command refused at apply. Refusal is deterministic (every replica refuses the same entry
/// the same way) and leaves the state unchanged apart from the applied index.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ApplyError {
    /// The command has no `kind`.
    #[error("REPL-E001 empty command (no kind set)")]
    EmptyCommand,
    /// The entry is at or below the applied index (replayed after a restart).
    #[error("REPL-E002 entry {index} is not after the applied index {applied}")]
    AlreadyApplied {
        /// The entry's index.
        index: u64,
        /// The state's applied index.
        applied: u64,
    },
    /// The partition policy text has syntax errors.
    #[error("REPL-E003 policy syntax error at {line}:{col}: {message} ({count} error(s))")]
    PolicySyntax {
        /// Line of the first error, from 1.
        line: u32,
        /// Column of the first error, from 1.
        col: u32,
        /// The first error (code and text).
        message: String,
        /// Number of syntax errors.
        count: usize,
    },
    /// ApplyPolicy's expected version is not the version in force.
    #[error("REPL-E004 stale policy version: expected {expected}, current is {current}")]
    StaleVersion {
        /// What the proposer expected.
        expected: u64,
        /// What is in force.
        current: u64,
    },
    /// An intent created for another term than the entry's.
    #[error("REPL-E005 intent {id} names term {intent_term} but its entry is of term {entry_term}")]
    IntentTermMismatch {
        /// The intent id.
        id: u64,
        /// The term the intent names.
        intent_term: u64,
        /// The Raft term of the entry.
        entry_term: u64,
    },
    /// BeginIntent while a sealed intent is not done.
    #[error("REPL-E006 intent {pending} is sealed and not done; finish or abort it first")]
    IntentBusy {
        /// The pending intent's id.
        pending: u64,
    },
    /// The command names an intent that is not the open one.
    #[error("REPL-E007 no intent {id} (open intent: {open:?})")]
    NoSuchIntent {
        /// The id named.
        id: u64,
        /// The open intent's id, if any.
        open: Option<u64>,
    },
    /// A chunk out of order.
    #[error("REPL-E008 intent {id}: chunk {got} received, {expected} expected")]
    ChunkOutOfOrder {
        /// The intent id.
        id: u64,
        /// The next sequence number.
        expected: u32,
        /// The one received.
        got: u32,
    },
    /// A chunk or seal for an intent already sealed.
    #[error("REPL-E009 intent {id} is already sealed")]
    AlreadySealed {
        /// The intent id.
        id: u64,
    },
    /// SealIntent's chunk count differs from the chunks received.
    #[error("REPL-E010 intent {id}: seal says {declared} chunks, {received} received")]
    ChunkCountMismatch {
        /// The intent id.
        id: u64,
        /// Chunks declared by the seal.
        declared: u32,
        /// Chunks received.
        received: u32,
    },
    /// IntentDone for an intent that was never sealed (it cannot have been programmed).
    #[error("REPL-E011 intent {id} is not sealed")]
    NotSealed {
        /// The intent id.
        id: u64,
    },
    /// An LFT block that is not 64 bytes or beyond the unicast range.
    #[error(
        "REPL-E012 switch {switch}: LFT block {block} has {len} bytes (64 wanted, block <= 767)"
    )]
    BadLftBlock {
        /// The switch.
        switch: Guid,
        /// Block number.
        block: u32,
        /// Payload length.
        len: usize,
    },
    /// An MFT block that is not 32 masks of 16 bits, or beyond block 511 / position 15.
    #[error(
        "REPL-E302 switch {switch}: MFT block {block} position {position} is malformed ({len} masks)"
    )]
    BadMftBlock {
        /// The switch.
        switch: Guid,
        /// Position.
        position: u32,
        /// Block number.
        block: u32,
        /// Number of masks.
        len: usize,
    },
    /// A VL table block of an unknown attribute, a wrong data length or a modifier out of
    /// range.
    #[error(
        "REPL-E303 node {node}: VL table block attr {attr} modifier {modifier:#x} is malformed ({len} bytes)"
    )]
    BadVlBlock {
        /// The node.
        node: Guid,
        /// 1 SLtoVL, 2 VLArb.
        attr: u32,
        /// Attribute modifier.
        modifier: u32,
        /// Data length.
        len: usize,
    },
    /// A vport write whose data is not 64 bytes or whose vport index is above 65535.
    #[error("REPL-E304 port {port}: vport write at index {index} is malformed ({len} bytes)")]
    BadVportWrite {
        /// The physical port.
        port: Guid,
        /// Vport index.
        index: u32,
        /// Data length.
        len: usize,
    },
    /// A P_Key block that is not 32 keys, a key above 0xffff, or a block beyond 2047.
    #[error("REPL-E013 node {node} port {port}: P_Key block {block} is malformed ({len} keys)")]
    BadPKeyBlock {
        /// The node.
        node: Guid,
        /// The port.
        port: u32,
        /// Block number.
        block: u32,
        /// Number of keys.
        len: usize,
    },
    /// A port number above 254.
    #[error("REPL-E014 node {node}: port {port} out of range")]
    BadPort {
        /// The node.
        node: Guid,
        /// The port.
        port: u32,
    },
    /// A master record older than the one in force.
    #[error(
        "REPL-E015 master record of term {term} is older than the current one (term {current})"
    )]
    StaleMaster {
        /// The record's term.
        term: u64,
        /// The current record's term.
        current: u64,
    },
    /// A LID entry outside the unicast range or an LMC above 7.
    #[error("REPL-E016 port {port_guid}: invalid LID {lid} / LMC {lmc}")]
    BadLid {
        /// The port GUID.
        port_guid: Guid,
        /// The base LID.
        lid: u32,
        /// The LMC.
        lmc: u32,
    },
    /// A topology whose links name missing nodes or ports.
    #[error("REPL-E017 invalid topology: {0}")]
    BadTopology(String),
    /// A configuration with out-of-range fields or duplicate replica ids.
    #[error("REPL-E018 invalid configuration: {0}")]
    BadConfig(String),
    /// A SetSaState whose SA state a master could not load (see `sa::validate`).
    #[error("REPL-E301 invalid SA state: {0}")]
    BadSaState(String),
    /// SetTenants' version is not the tenant set version in force.
    #[error("REPL-E201 stale tenants version: expected {expected}, current is {current}")]
    StaleTenants {
        /// What the proposer read.
        expected: u64,
        /// What is in force.
        current: u64,
    },
    /// A tenant set that does not convert (member without a kind, PKey above 16 bits).
    #[error("REPL-E202 malformed tenant set: {0}")]
    BadTenants(String),
    /// A tenant set (or a policy) that does not compile: the tenant conflict, with its code.
    #[error("{0}")]
    Tenants(partitions::tenants::TenantError),
}

impl ApplyError {
    /// The stable code (`REPL-Ennn`).
    pub fn code(&self) -> &'static str {
        match self {
            ApplyError::EmptyCommand => "REPL-E001",
            ApplyError::AlreadyApplied { .. } => "REPL-E002",
            ApplyError::PolicySyntax { .. } => "REPL-E003",
            ApplyError::StaleVersion { .. } => "REPL-E004",
            ApplyError::IntentTermMismatch { .. } => "REPL-E005",
            ApplyError::IntentBusy { .. } => "REPL-E006",
            ApplyError::NoSuchIntent { .. } => "REPL-E007",
            ApplyError::ChunkOutOfOrder { .. } => "REPL-E008",
            ApplyError::AlreadySealed { .. } => "REPL-E009",
            ApplyError::ChunkCountMismatch { .. } => "REPL-E010",
            ApplyError::NotSealed { .. } => "REPL-E011",
            ApplyError::BadLftBlock { .. } => "REPL-E012",
            ApplyError::BadPKeyBlock { .. } => "REPL-E013",
            ApplyError::BadPort { .. } => "REPL-E014",
            ApplyError::StaleMaster { .. } => "REPL-E015",
            ApplyError::BadLid { .. } => "REPL-E016",
            ApplyError::BadTopology(_) => "REPL-E017",
            ApplyError::BadConfig(_) => "REPL-E018",
            ApplyError::BadSaState(_) => "REPL-E301",
            ApplyError::StaleTenants { .. } => "REPL-E201",
            ApplyError::BadTenants(_) => "REPL-E202",
            ApplyError::BadMftBlock { .. } => "REPL-E302",
            ApplyError::BadVlBlock { .. } => "REPL-E303",
            ApplyError::BadVportWrite { .. } => "REPL-E304",
            ApplyError::Tenants(e) => e.code(),
        }
    }
}

/// A snapshot that cannot be restored.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RestoreError {
    /// Not a valid StateSnapshot message.
    #[error("REPL-E101 snapshot does not decode: {0}")]
    Decode(String),
    /// A snapshot format this build does not know.
    #[error("REPL-E102 snapshot format {0} is not supported (1 is)")]
    Format(u32),
    /// Decoded, but its contents break an invariant of the state.
    #[error("REPL-E103 snapshot is inconsistent: {0}")]
    Invalid(String),
}
