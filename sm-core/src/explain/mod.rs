//! `explain` (issue 21): why a port is not ACTIVE, or cannot talk, from what the master read
//! — PortInfo as the last heavy sweep read it, the peer's, the requests the sweeper gave up
//! on, the P_Keys the planner could not place — and, when given, the performance manager's
//! counters; with the operator's next step. [`crate::Sweeper::explain`] is the entry point.
//!
//! A pure function of the sweeper's state: it sends nothing, reads no clock and changes
//! nothing. Every explanation names one [`Cause`] with a stable code (`EXPLAIN-…`), the facts
//! it rests on (what was read, when) and one next step. What the master cannot know it says:
//! the GUID of a VF is not a port the master finds (a VF has no SM access), so it is
//! explained as a VF of its PF port only when it is known: a vport of a
//! virtualization-capable port, an alias GUID set through the SA (the sweeper hands both
//! in), or aliases the caller hands in ([`ExplainInputs::vf_aliases`]); otherwise the
//! unknown GUID is an error whose text says what a VF would mean.

mod facts;
mod reason;
mod resolve;
mod troubles;

pub(crate) use reason::View;
pub(crate) use troubles::{Dropped, Troubles, Why, dropped_keys};

pub use facts::{phys_state_name, port_state_name};

use crate::perf::PerfManager;
use fabric::{Guid, Lid};
use std::collections::BTreeMap;
use std::fmt;

/// The port to explain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExplainTarget {
    /// The end port answering to this LID (a switch's LID: its port 0), or, with a port
    /// number, that port of the same node.
    Lid(Lid, Option<u8>),
    /// A node GUID (its port given, else a switch's port 0 or the CA port the SM reached)
    /// or a port GUID (a switch's: the port given, else port 0).
    Guid(Guid, Option<u8>),
}

impl fmt::Display for ExplainTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (what, port) = match self {
            ExplainTarget::Lid(l, p) => (format!("LID {}", l.0), p),
            ExplainTarget::Guid(g, p) => (format!("GUID {g}"), p),
        };
        match port {
            Some(p) => write!(f, "{what} port {p}"),
            None => f.write_str(&what),
        }
    }
}

/// What explains the port's state. Each has a stable code (see `docs/explain.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Cause {
    /// ACTIVE and nothing wrong (EXPLAIN-OK).
    Healthy,
    /// ACTIVE, but an error counter over its threshold grows or LinkDownedCounter grows
    /// (the link flaps) (EXPLAIN-LINK-DEGRADED).
    LinkDegraded,
    /// Down, no signal from the other end: PortPhysicalState Polling or Sleep; or the
    /// node is no longer reached and its last peer reads so (EXPLAIN-PHYS-DOWN).
    PhysDown,
    /// Down, the port is disabled (PortPhysicalState Disabled) (EXPLAIN-PHYS-DISABLED).
    PhysDisabled,
    /// Down, the link trains or recovers (PortConfigurationTraining, LinkErrorRecovery,
    /// PhyTest) (EXPLAIN-PHYS-TRAINING).
    PhysTraining,
    /// The node or port was not reached by the last heavy sweep, and its last peer does not
    /// say why (EXPLAIN-NOT-REACHED).
    NotReached,
    /// INIT (or stuck before ACTIVE): the SM's requests to it get no answer
    /// (EXPLAIN-NO-ANSWER).
    NoAnswer,
    /// INIT: the node holds an M_Key this SM does not have, with protection on, so it
    /// refuses the SM's Sets (EXPLAIN-MKEY).
    MKeyMismatch,
    /// INIT or ARMED: the SMA refused the SM's Set with an error status
    /// (EXPLAIN-SET-REFUSED).
    SetRefused,
    /// ARMED, waiting for its neighbour: a link goes ACTIVE only once both ends are ARMED,
    /// and the peer is INIT or Down for its own reason (EXPLAIN-ARMED-PEER).
    ArmedWaitingPeer,
    /// INIT or ARMED with nothing wrong known: the SM has not brought it up yet (a sweep
    /// under way, the next heavy sweep, or another SM is master) (EXPLAIN-PENDING).
    Pending,
    /// The GUID is a VF's alias GUID: no SM access of its own (EXPLAIN-VF).
    VfAlias,
    /// ACTIVE, but a P_Key its partitions need is not in its P_KeyTable: the planner could
    /// not place it (PartitionCap too small) (EXPLAIN-PKEY-MISSING).
    PKeyMissing,
    /// ACTIVE, but the P_KeyTable it should hold was not written (a Set failed): what it
    /// holds is unknown (EXPLAIN-PKEY-NOT-WRITTEN).
    PKeyNotWritten,
}

impl Cause {
    /// Every cause, in the order of `docs/explain.md`.
    pub const ALL: [Cause; 14] = [
        Cause::Healthy,
        Cause::LinkDegraded,
        Cause::PhysDown,
        Cause::PhysDisabled,
        Cause::PhysTraining,
        Cause::NotReached,
        Cause::NoAnswer,
        Cause::MKeyMismatch,
        Cause::SetRefused,
        Cause::ArmedWaitingPeer,
        Cause::Pending,
        Cause::VfAlias,
        Cause::PKeyMissing,
        Cause::PKeyNotWritten,
    ];

    /// The stable code.
    pub fn code(self) -> &'static str {
        match self {
            Cause::Healthy => "EXPLAIN-OK",
            Cause::LinkDegraded => "EXPLAIN-LINK-DEGRADED",
            Cause::PhysDown => "EXPLAIN-PHYS-DOWN",
            Cause::PhysDisabled => "EXPLAIN-PHYS-DISABLED",
            Cause::PhysTraining => "EXPLAIN-PHYS-TRAINING",
            Cause::NotReached => "EXPLAIN-NOT-REACHED",
            Cause::NoAnswer => "EXPLAIN-NO-ANSWER",
            Cause::MKeyMismatch => "EXPLAIN-MKEY",
            Cause::SetRefused => "EXPLAIN-SET-REFUSED",
            Cause::ArmedWaitingPeer => "EXPLAIN-ARMED-PEER",
            Cause::Pending => "EXPLAIN-PENDING",
            Cause::VfAlias => "EXPLAIN-VF",
            Cause::PKeyMissing => "EXPLAIN-PKEY-MISSING",
            Cause::PKeyNotWritten => "EXPLAIN-PKEY-NOT-WRITTEN",
        }
    }

    /// The cause of a code (None for an unknown one).
    pub fn from_code(code: &str) -> Option<Cause> {
        Cause::ALL.into_iter().find(|c| c.code() == code)
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// The other end of the port's link, as the sweeper last saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExplainPeer {
    /// Node GUID.
    pub node_guid: Guid,
    /// NodeDescription.
    pub desc: String,
    /// Port number.
    pub port: u8,
    /// PortInfo.PortState as last read (0: never read).
    pub state: u8,
    /// PortInfo.PortPhysicalState as last read.
    pub phys_state: u8,
    /// The heavy sweep that last found the link (older than the last sweep: the link was
    /// not found since).
    pub sweep: u64,
    /// Why the peer is in its state, when that explains this port's (ARMED waiting).
    pub cause: Option<Cause>,
}

/// Why a port is in its state, and what to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Explanation {
    /// Node GUID.
    pub node_guid: Guid,
    /// NodeDescription.
    pub desc: String,
    /// A switch.
    pub is_switch: bool,
    /// Port number.
    pub port: u8,
    /// Port GUID (a switch's for every port).
    pub port_guid: Guid,
    /// Its LID (a switch's: port 0's; 0: none).
    pub lid: Lid,
    /// PortInfo.PortState as the last heavy sweep read it (1 Down, 2 Init, 3 Armed,
    /// 4 Active); 0 when that sweep did not read it (1 when its last peer reads Down: a link
    /// is Down at both ends). An older reading is among the facts.
    pub state: u8,
    /// PortInfo.PortPhysicalState likewise (2 Polling, 3 Disabled, 5 LinkUp, ...; 0: not
    /// known now).
    pub phys_state: u8,
    /// The heavy sweep PortInfo was read in (0: never).
    pub read_sweep: u64,
    /// The last heavy sweep.
    pub sweep: u64,
    /// The other end of its link, when known.
    pub peer: Option<ExplainPeer>,
    /// The cause.
    pub cause: Cause,
    /// The verdict in one line.
    pub summary: String,
    /// What it rests on: PortInfo fields, requests given up, counters.
    pub facts: Vec<String>,
    /// What the operator does next.
    pub next_step: String,
}

/// What `explain` takes besides the sweeper's own state.
#[derive(Clone, Copy, Debug, Default)]
pub struct ExplainInputs<'a> {
    /// The master's performance manager (counters, link health), when it runs.
    pub perf: Option<&'a PerfManager>,
    /// VF alias GUID -> the PF port GUID it shares (shared-port SR-IOV, or a vport), when
    /// known ([`crate::Sweeper::explain`] hands in the vports and SA aliases it knows).
    pub vf_aliases: Option<&'a BTreeMap<Guid, Guid>>,
}
