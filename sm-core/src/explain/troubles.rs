//! [`Troubles`]: what the sweeper keeps for `explain` that no other sub-state keeps — the
//! requests it gave up on, per port (a Set or Get unanswered after every retry, or answered
//! with an error status), and the P_Keys the partition planner could not place in a port's
//! table (PartitionCap too small).
//!
//! Plain records, written where the sweeper already learns the fact (a request given up, a
//! plan made); nothing here sends, reads a clock or changes what is programmed. A record is
//! dropped when the same kind of request to the same port is answered later.

use crate::discovery::Discovery;
use crate::io::{Op, Req};
use crate::state::NONE;
use fabric::Guid;
use std::collections::HashMap;

/// Keys a plan could not place, by (node GUID, port), with their partition's name.
pub(crate) type Dropped = HashMap<(Guid, u8), Vec<(u16, String)>>;

/// The keys `plan` could not place (PartitionCap too small), by port.
pub(crate) fn dropped_keys(plan: &partitions::Plan) -> Dropped {
    let name = |k: u16| {
        plan.partitions
            .iter()
            .find(|p| p.pkey == k & 0x7FFF)
            .map(|p| p.name.clone())
            .unwrap_or_default()
    };
    plan.ports
        .iter()
        .filter(|pp| !pp.dropped.is_empty())
        .map(|pp| {
            let keys = pp.dropped.iter().map(|k| (k.0, name(k.0))).collect();
            ((pp.port.node_guid, pp.port.port), keys)
        })
        .collect()
}

/// The kind of a request given up, as an operator reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Asked {
    /// NodeInfo Get one hop out of this port (discovery's probe of its peer).
    Probe,
    /// PortInfo Get.
    PortInfoGet,
    /// NodeDescription or SwitchInfo Get.
    NodeGet,
    /// PortInfo Set of programming stage 1 (fields), 3 (ARMED) or 4 (ACTIVE).
    PortInfoSet(u8),
    /// PortInfo Set rotating the M_Key.
    RekeySet,
    /// P_KeyTable block Set.
    PKeySet,
    /// LFT block or SwitchInfo Set.
    SwitchSet,
}

impl Asked {
    /// The request's name in an explanation.
    pub fn name(self) -> &'static str {
        match self {
            Asked::Probe => "NodeInfo Get (probe of the peer)",
            Asked::PortInfoGet => "PortInfo Get",
            Asked::NodeGet => "NodeDescription/SwitchInfo Get",
            Asked::PortInfoSet(1) => "PortInfo Set (LID, MasterSMLID, M_Key fields)",
            Asked::PortInfoSet(3) => "PortInfo Set (to ARMED)",
            Asked::PortInfoSet(4) => "PortInfo Set (to ACTIVE)",
            Asked::PortInfoSet(_) => "PortInfo Set",
            Asked::RekeySet => "PortInfo Set (M_Key rotation)",
            Asked::PKeySet => "P_KeyTable Set",
            Asked::SwitchSet => "LFT/SwitchInfo Set",
        }
    }

    /// A Set (as opposed to a Get).
    pub fn is_set(self) -> bool {
        matches!(
            self,
            Asked::PortInfoSet(_) | Asked::RekeySet | Asked::PKeySet | Asked::SwitchSet
        )
    }

    fn same_kind(self, other: Asked) -> bool {
        std::mem::discriminant(&self) == std::mem::discriminant(&other)
    }
}

/// Why a request was given up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Why {
    /// No answer after every retry.
    NoAnswer,
    /// Answered with this MAD status (e.g. 0x1C: invalid field, the SMA refused the value).
    Status(u16),
    /// It could not be sent (no directed route of this sweep reaches the port any more).
    NotSent,
}

/// A request given up on a port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Failure {
    /// The heavy sweep it was given up in.
    pub sweep: u64,
    pub asked: Asked,
    pub why: Why,
    /// Sends of it (the first one and the retries).
    pub sends: u8,
    /// Requests given up on this port since the last one answered.
    pub count: u32,
}

/// The sweeper's record for `explain` (see the module documentation).
#[derive(Debug, Default)]
pub(crate) struct Troubles {
    /// By (node index, port).
    failed: HashMap<(u32, u8), Failure>,
    /// P_Keys the planner dropped for lack of room, by (node GUID, port), with the name of
    /// their partition; from the last plan.
    dropped: Dropped,
}

/// What a request is about: its kind and the (node, port) it is recorded on. None for
/// requests `explain` does not use (multicast, VL tables, read-backs, other SMs).
fn subject(req: &Req) -> Option<(Asked, u32, u8)> {
    if req.node == NONE {
        return None;
    }
    let asked = match req.op {
        Op::Probe => Asked::Probe,
        Op::PortInfoGet => Asked::PortInfoGet,
        Op::NodeDesc | Op::SwitchInfoGet => return Some((Asked::NodeGet, req.node, 0)),
        Op::PortInfoSet => Asked::PortInfoSet(req.arg as u8),
        Op::RekeySet => Asked::RekeySet,
        Op::PKeySet => Asked::PKeySet,
        Op::LftSet | Op::SwitchInfoSet | Op::SwitchInfoRecheck => {
            return Some((Asked::SwitchSet, req.node, 0));
        }
        _ => return None,
    };
    Some((asked, req.node, req.port))
}

impl Troubles {
    /// `req` was given up.
    pub fn failed(&mut self, disc: &Discovery, req: &Req, why: Why) {
        let Some((asked, node, port)) = subject(req) else {
            return;
        };
        let count = self.failed.get(&(node, port)).map_or(0, |f| f.count) + 1;
        self.failed.insert(
            (node, port),
            Failure {
                sweep: disc.sweep(),
                asked,
                why,
                sends: req.tries.saturating_add(1),
                count,
            },
        );
    }

    /// `req` was answered: a record of the same kind on its port is dropped.
    pub fn answered(&mut self, req: &Req) {
        if self.failed.is_empty() {
            return;
        }
        let Some((asked, node, port)) = subject(req) else {
            return;
        };
        if self
            .failed
            .get(&(node, port))
            .is_some_and(|f| f.asked.same_kind(asked))
        {
            self.failed.remove(&(node, port));
        }
    }

    /// The last request given up on `(node, port)`.
    pub fn failure(&self, node: u32, port: u8) -> Option<&Failure> {
        self.failed.get(&(node, port))
    }

    /// The P_Keys the last plan dropped, by (node GUID, port) with their partition names.
    pub fn set_dropped(&mut self, dropped: Dropped) {
        self.dropped = dropped;
    }

    /// The P_Keys the last plan could not place in `(node, port)`'s table.
    pub fn dropped(&self, node: Guid, port: u8) -> &[(u16, String)] {
        self.dropped.get(&(node, port)).map_or(&[], Vec::as_slice)
    }
}
