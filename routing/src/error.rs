//! The crate's one error type.

use fabric::{Guid, Lid, PortRef};
use thiserror::Error;

/// Why routing could not be done, or why an engine refused a topology.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum RoutingError {
    /// No engine of that name (known: minhop, updn, ftree, torus-2QoS, dfsssp).
    #[error("unknown routing engine {0:?} (known: minhop, updn, ftree, torus-2QoS, dfsssp)")]
    UnknownEngine(String),
    /// The fat-tree engine refuses a topology that is not a fat tree.
    #[error("not a fat tree: {why}")]
    NotAFatTree {
        /// What breaks the fat-tree shape.
        why: String,
    },
    /// The torus engine refuses a topology it cannot recognise as a torus or mesh.
    #[error("ROUTE-E-NOT-TORUS: not a torus or mesh: {why}")]
    NotATorus {
        /// What breaks the torus shape.
        why: String,
    },
    /// A torus or mesh with failures the torus engine cannot route around (two failed
    /// links in one ring, a failed link in a mesh line, a failed switch).
    #[error("ROUTE-E-TORUS-FAULTS: torus with unroutable failures: {why}")]
    TorusFaults {
        /// Which failures.
        why: String,
    },
    /// Up/down found no root switch (no switch, or roots given that are not switches).
    #[error("no root switch for up/down routing")]
    NoRoots,
    /// A root GUID given to up/down is not a switch of this topology.
    #[error("root {0} is not a switch of this topology")]
    RootNotFound(Guid),
    /// Some switches cannot be reached from the others (up/down and fat-tree need one fabric).
    #[error("fabric is disconnected: {unreachable} switch(es) unreachable from switch {from}")]
    Disconnected {
        /// Switches not reached.
        unreachable: usize,
        /// GUID of the switch the search started from.
        from: Guid,
    },
    /// A path would need more switch hops than the hop tables hold.
    #[error("a shortest path needs more than {max} switch hops")]
    DiameterTooLarge {
        /// The limit.
        max: u8,
    },
    /// Two ports were given overlapping LIDs.
    #[error("LID {lid} assigned to both {a:?} and {b:?}")]
    LidConflict {
        /// The LID.
        lid: Lid,
        /// One port.
        a: PortRef,
        /// The other port.
        b: PortRef,
    },
    /// A LID range outside the unicast space, an LMC above 7, or an unaligned base.
    #[error("bad LID assignment for {port:?}: {why}")]
    BadLid {
        /// The port.
        port: PortRef,
        /// What is wrong.
        why: String,
    },
    /// The unicast LID space (0x0001-0xBFFF) is exhausted.
    #[error("unicast LID space exhausted")]
    LidSpaceExhausted,
    /// A port in the LID assignment is not in the topology.
    #[error("LID assignment names {0:?}, which is not in the topology")]
    NoSuchPort(PortRef),
    /// An `ibroute` dump line that cannot be read.
    #[error("ibroute dump line {line}: {why}")]
    Parse {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        why: String,
    },
    /// A dumped switch GUID that is not a switch of the topology.
    #[error("switch {0} of the dump is not a switch of the topology")]
    UnknownSwitch(Guid),
    /// The engine's tables have a cycle in the channel dependency graph of a VL (a credit
    /// loop: the fabric can deadlock). Refused by default; see
    /// [`crate::EngineOptions::accept_credit_loops`].
    #[error("ROUTE-E-CDG: {engine} routes have a credit loop on VL {vl} ({len} channels: {cycle})")]
    CreditLoop {
        /// The engine.
        engine: String,
        /// The VL whose dependency graph has the cycle.
        vl: u8,
        /// Channels in the cycle.
        len: usize,
        /// The cycle, `SWITCH_GUID:PORT` channels joined by `->` (at most 8 shown).
        cycle: String,
    },
    /// A layered engine (dfsssp) needs more VL layers than allowed to keep every layer's
    /// channel dependency graph acyclic; see [`crate::EngineOptions::max_layers`].
    #[error(
        "ROUTE-E-LAYERS: {engine} needs {} VL layers to break every credit loop, {allowed} allowed",
        if *.needed > 16 { "more than 16".to_string() } else { .needed.to_string() }
    )]
    TooManyLayers {
        /// The engine.
        engine: String,
        /// Layers its (greedy) layering needed; 17 stands for "more than 16" (SLs are 4 bits).
        needed: usize,
        /// Layers allowed.
        allowed: u8,
    },
    /// Every engine of a chain refused; the reasons in chain order.
    #[error("every routing engine refused: {}", .0.iter().map(|r| format!("{}: {}", r.engine, r.reason)).collect::<Vec<_>>().join("; "))]
    AllRefused(Vec<Refusal>),
}

impl RoutingError {
    /// The stable code of this error, for logs and operators to grep.
    pub fn code(&self) -> &'static str {
        match self {
            RoutingError::UnknownEngine(_) => "ROUTE-E-ENGINE",
            RoutingError::NotAFatTree { .. } => "ROUTE-E-NOT-FTREE",
            RoutingError::NotATorus { .. } => "ROUTE-E-NOT-TORUS",
            RoutingError::TorusFaults { .. } => "ROUTE-E-TORUS-FAULTS",
            RoutingError::NoRoots => "ROUTE-E-NO-ROOTS",
            RoutingError::RootNotFound(_) => "ROUTE-E-ROOT",
            RoutingError::Disconnected { .. } => "ROUTE-E-DISCONNECTED",
            RoutingError::DiameterTooLarge { .. } => "ROUTE-E-DIAMETER",
            RoutingError::LidConflict { .. } => "ROUTE-E-LID-CONFLICT",
            RoutingError::BadLid { .. } => "ROUTE-E-BAD-LID",
            RoutingError::LidSpaceExhausted => "ROUTE-E-LID-SPACE",
            RoutingError::NoSuchPort(_) => "ROUTE-E-NO-PORT",
            RoutingError::Parse { .. } => "ROUTE-E-PARSE",
            RoutingError::UnknownSwitch(_) => "ROUTE-E-UNKNOWN-SWITCH",
            RoutingError::CreditLoop { .. } => "ROUTE-E-CDG",
            RoutingError::TooManyLayers { .. } => "ROUTE-E-LAYERS",
            RoutingError::AllRefused(_) => "ROUTE-E-ALL-REFUSED",
        }
    }
}

/// One engine's refusal inside a fallback chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The engine name.
    pub engine: String,
    /// Why it refused.
    pub reason: RoutingError,
}
