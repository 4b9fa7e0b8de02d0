//! Virtual lanes ([`Lanes`]): the SLtoVLMappingTable and VLArbitrationTable blocks every
//! port should hold, what the ports are known to hold, and the blocks being written. It
//! never sends and never decides when a stage runs (the sweeper queues the Sets it plans).
//!
//! * QoS off (`SweeperConfig::qos` None, OpenSM's `qos FALSE`): no VL table is planned or
//!   written; OperationalVLs are still negotiated at bring-up (`want::op_vls`).
//! * QoS on: every heavy sweep computes the wanted blocks from the QoS options and the QoS
//!   policy in force (`want`), diffs them against what is known, and writes only the
//!   changed blocks, in stage 2 with the LFTs (in a cluster, as part of the sweep's
//!   intent). What is known: blocks written by this sweeper, or seeded on takeover
//!   ([`crate::SweeperConfig::known_vl_tables`], from the replicated state). A block not
//!   known is written (the IBA leaves a table's content after reset unspecified); a node
//!   that lost its tables (a switch whose LFT is found lost, a CA never configured since
//!   reset) loses what is known of them, and a failed Set makes its block unknown.

pub(crate) mod want;

use crate::discovery::Discovery;
use crate::io::{Op, Req};
use fabric::Guid;
use mad::{SlToVlTable, SmpAttribute, VlArbitrationTable};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// Which VL table attribute a block is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum VlAttr {
    /// SLtoVLMappingTable (modifier `in << 8 | out` on a switch, 0 on a CA).
    SlToVl,
    /// VLArbitrationTable (modifier `block << 16 | port`, block 1-4).
    VlArb,
}

impl VlAttr {
    /// The attribute's data length in an SMP.
    pub fn data_len(self) -> usize {
        match self {
            VlAttr::SlToVl => SlToVlTable::LEN,
            VlAttr::VlArb => VlArbitrationTable::LEN,
        }
    }
}

/// VL table blocks by (node GUID, attribute, attribute modifier): the attribute's data
/// (8 bytes for SLtoVL, 64 for VLArb). On a CA the modifier's port field names the port
/// (see [`modifier`]).
pub type VlTables = BTreeMap<(Guid, VlAttr, u32), Vec<u8>>;

/// One VL table block to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VlBlockWrite {
    /// Node GUID.
    pub node: Guid,
    /// Attribute.
    pub attr: VlAttr,
    /// Attribute modifier.
    pub modifier: u32,
    /// The attribute's data.
    pub data: Vec<u8>,
}

impl VlBlockWrite {
    /// The port the block belongs to (the output port of an SLtoVL pair).
    pub fn port(&self) -> u8 {
        (self.modifier & 0xFF) as u8
    }
}

/// A VL table Set to queue: (op, node, port, arg).
pub(crate) type VlSet = (Op, u32, u8, u16);

/// The request (port, arg) that writes a block: SLtoVL `port` = output, `arg` = input;
/// VLArb `port` = port, `arg` = block.
fn req_of(attr: VlAttr, modifier: u32) -> (Op, u8, u16) {
    match attr {
        VlAttr::SlToVl => (
            Op::SlToVlSet,
            (modifier & 0xFF) as u8,
            ((modifier >> 8) & 0xFF) as u16,
        ),
        VlAttr::VlArb => (
            Op::VlArbSet,
            (modifier & 0xFF) as u8,
            (modifier >> 16) as u16,
        ),
    }
}

/// The read-back Get (op, port, arg) of a block.
pub(crate) fn get_of(attr: VlAttr, modifier: u32) -> (Op, u8, u16) {
    let (op, port, arg) = req_of(attr, modifier);
    let get = if op == Op::SlToVlSet {
        Op::SlToVlGet
    } else {
        Op::VlArbGet
    };
    (get, port, arg)
}

/// The (attribute, modifier as recorded) a request writes or reads.
pub(crate) fn key_of(req: &Req) -> (VlAttr, u32) {
    match req.op {
        Op::SlToVlSet | Op::SlToVlGet => (
            VlAttr::SlToVl,
            u32::from(req.arg) << 8 | u32::from(req.port),
        ),
        _ => (
            VlAttr::VlArb,
            u32::from(req.arg) << 16 | u32::from(req.port),
        ),
    }
}

/// The attribute modifier a VL table Set carries. The records name a CA port in the
/// modifier's port field (a CA has one table per port); on the wire a CA's modifier has 0
/// there: its SMA applies the attribute to the port the SMP arrives at (IBA 14.2.5.8-9,
/// as OpenSM sends it).
pub(crate) fn modifier(req: &Req, is_switch: bool) -> u32 {
    let m = key_of(req).1;
    if is_switch { m } else { m & !0xFF }
}

/// The sweeper's virtual-lane state.
#[derive(Debug, Default)]
pub(crate) struct Lanes {
    /// Blocks the ports are known to hold.
    known: VlTables,
    /// Blocks whose content is unknown (a Set failed): always written.
    unknown: BTreeSet<(Guid, VlAttr, u32)>,
    /// Blocks being written: (node index, attr, modifier) -> data.
    writing: HashMap<(u32, VlAttr, u32), Vec<u8>>,
    /// The writes planned by the current sweep (for the intent), in key order.
    planned: Vec<VlBlockWrite>,
    /// Nodes (GUID, port) a VL Set failed on in the current sweep.
    failed: Vec<(Guid, u8)>,
    /// The QoS policy in force (its qos-setup scopes choose tables).
    policy: Option<Arc<qos::Policy>>,
}

impl Lanes {
    /// `known`: the blocks the ports are known to hold (a takeover).
    pub fn new(known: Option<&VlTables>, policy: Option<Arc<qos::Policy>>) -> Lanes {
        Lanes {
            known: known.cloned().unwrap_or_default(),
            policy,
            ..Lanes::default()
        }
    }

    /// The QoS policy in force.
    pub fn policy(&self) -> Option<&qos::Policy> {
        self.policy.as_deref()
    }

    /// Replaces the QoS policy (planned from the next heavy sweep on).
    pub fn set_policy(&mut self, policy: Option<Arc<qos::Policy>>) {
        self.policy = policy;
    }

    /// The same, shared.
    pub fn policy_shared(&self) -> Option<Arc<qos::Policy>> {
        self.policy.clone()
    }

    /// The blocks the ports are known to hold.
    pub fn known(&self) -> &VlTables {
        &self.known
    }

    /// Plans a heavy sweep's writes: `want` is every block the ports of this sweep should
    /// hold. `lost`: nodes whose tables are back to their reset content.
    pub fn plan(&mut self, disc: &Discovery, want: VlTables, lost: &[Guid]) {
        self.writing.clear();
        self.planned.clear();
        self.failed.clear();
        for g in lost {
            let keys: Vec<_> = self
                .known
                .range((*g, VlAttr::SlToVl, 0)..=(*g, VlAttr::VlArb, u32::MAX))
                .map(|(k, _)| *k)
                .collect();
            for k in keys {
                self.known.remove(&k);
            }
        }
        for (key, data) in want {
            let (g, attr, modifier) = key;
            let Some(node) = disc.find(g).filter(|&n| disc.seen(n)) else {
                continue;
            };
            if self.known.get(&key) == Some(&data) && !self.unknown.contains(&key) {
                continue;
            }
            self.writing.insert((node, attr, modifier), data.clone());
            self.planned.push(VlBlockWrite {
                node: g,
                attr,
                modifier,
                data,
            });
        }
    }

    /// The blocks planned (for the intent being built).
    pub fn planned(&self) -> &[VlBlockWrite] {
        &self.planned
    }

    /// The Sets (op, node, port, arg) of the planned writes, in order.
    pub fn queued(&self) -> Vec<VlSet> {
        let mut todo: Vec<(u32, VlAttr, u32)> = self.writing.keys().copied().collect();
        todo.sort_unstable();
        todo.into_iter()
            .map(|(node, attr, m)| {
                let (op, port, arg) = req_of(attr, m);
                (op, node, port, arg)
            })
            .collect()
    }

    /// Re-apply of a previous master's VL blocks: what each block is to hold, and the Sets
    /// to queue; blocks of nodes not reached are returned (node GUID, port).
    pub fn reapply(
        &mut self,
        disc: &Discovery,
        blocks: &[VlBlockWrite],
    ) -> (Vec<VlSet>, Vec<(Guid, u8)>) {
        let mut sets = Vec::new();
        let mut unreached = Vec::new();
        for w in blocks {
            match disc.find(w.node).filter(|&n| disc.seen(n)) {
                Some(node) => {
                    self.writing
                        .insert((node, w.attr, w.modifier), w.data.clone());
                    let (op, port, arg) = req_of(w.attr, w.modifier);
                    sets.push((op, node, port, arg));
                }
                None => {
                    self.known.remove(&(w.node, w.attr, w.modifier));
                    self.unknown.insert((w.node, w.attr, w.modifier));
                    unreached.push((w.node, w.port()));
                }
            }
        }
        (sets, unreached)
    }

    /// Writes the data of a VL table Set; None when the block is no longer being written.
    pub fn fill(&self, req: &Req, data: &mut [u8; 64]) -> Option<()> {
        let (attr, m) = key_of(req);
        let d = self.writing.get(&(req.node, attr, m))?;
        data.fill(0);
        data[..d.len()].copy_from_slice(d);
        Some(())
    }

    /// A VL table Set was answered: the block is known.
    pub fn done(&mut self, node: Guid, req: &Req) {
        let (attr, m) = key_of(req);
        if let Some(d) = self.writing.remove(&(req.node, attr, m)) {
            self.unknown.remove(&(node, attr, m));
            self.known.insert((node, attr, m), d);
        }
    }

    /// A VL table Set was given up: the block is unknown.
    pub fn failed(&mut self, node: Guid, req: &Req) {
        let (attr, m) = key_of(req);
        self.writing.remove(&(req.node, attr, m));
        self.known.remove(&(node, attr, m));
        self.unknown.insert((node, attr, m));
        self.failed.push((node, req.port));
    }

    /// The sweep's planned blocks are not known to be written (its intent was not
    /// committed): they become unknown.
    pub fn forget_planned(&mut self) {
        for w in std::mem::take(&mut self.planned) {
            let key = (w.node, w.attr, w.modifier);
            self.known.remove(&key);
            self.unknown.insert(key);
        }
        self.writing.clear();
    }

    /// Ports a VL Set failed on since the last call.
    pub fn take_failed(&mut self) -> Vec<(Guid, u8)> {
        std::mem::take(&mut self.failed)
    }
}

/// Parses a QoS policy for the sweeper: the first error (with its position) is the
/// [`crate::SmError::Config`].
pub(crate) fn parse_policy(text: &str) -> Result<Arc<qos::Policy>, crate::SmError> {
    qos::Policy::parse(text).map(Arc::new).map_err(|errs| {
        crate::SmError::Config(format!(
            "QoS policy: {}",
            errs.first().map(|e| e.to_string()).unwrap_or_default()
        ))
    })
}

/// The data of an SLtoVL block holding `vl` per SL.
pub fn sl2vl_data(vl: [u8; 16]) -> Vec<u8> {
    let mut d = [0u8; 64];
    SlToVlTable { vl }.encode(&mut d);
    d[..SlToVlTable::LEN].to_vec()
}

/// The data of a VLArb block.
pub fn vlarb_data(t: &VlArbitrationTable) -> Vec<u8> {
    let mut d = [0u8; 64];
    t.encode(&mut d);
    d.to_vec()
}

/// SLtoVL tables by (node GUID, output port): (input port, table).
pub type Sl2VlByPort = HashMap<(Guid, u8), Vec<(u8, SlToVlTable)>>;
/// VLArb blocks by (node GUID, port): (block, table).
pub type VlArbByPort = HashMap<(Guid, u8), Vec<(u8, VlArbitrationTable)>>;

/// The blocks of `t` by port, as the SA lists them (a CA's SLtoVL under input port 0).
pub fn tables_by_port(t: &VlTables) -> (Sl2VlByPort, VlArbByPort) {
    let (mut sl2vl, mut vlarb) = (Sl2VlByPort::new(), VlArbByPort::new());
    for ((g, attr, m), data) in t {
        let mut d = [0u8; 64];
        let n = data.len().min(64);
        d[..n].copy_from_slice(&data[..n]);
        let port = (m & 0xFF) as u8;
        match attr {
            VlAttr::SlToVl => sl2vl
                .entry((*g, port))
                .or_default()
                .push((((m >> 8) & 0xFF) as u8, SlToVlTable::decode(&d))),
            VlAttr::VlArb => vlarb
                .entry((*g, port))
                .or_default()
                .push(((m >> 16) as u8, VlArbitrationTable::decode(&d))),
        }
    }
    (sl2vl, vlarb)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(op: Op, port: u8, arg: u16) -> Req {
        Req::new(op, 3, port, arg, false)
    }

    #[test]
    fn requests_carry_the_modifier_exactly() {
        let (op, port, arg) = req_of(VlAttr::SlToVl, 7 << 8 | 12);
        assert_eq!((op, port, arg), (Op::SlToVlSet, 12, 7));
        assert_eq!(modifier(&req(op, port, arg), true), 0x070C);
        assert_eq!(modifier(&req(op, port, arg), false), 0x0700);
        let (op, port, arg) = req_of(VlAttr::VlArb, 3 << 16 | 5);
        assert_eq!((op, port, arg), (Op::VlArbSet, 5, 3));
        assert_eq!(modifier(&req(op, port, arg), true), 0x0003_0005);
        assert_eq!(modifier(&req(op, port, arg), false), 0x0003_0000);
    }

    #[test]
    fn sl2vl_data_is_the_attribute_bytes() {
        let mut vl = [0u8; 16];
        for (sl, v) in vl.iter_mut().enumerate() {
            *v = (sl % 4) as u8;
        }
        vl[15] = 15;
        assert_eq!(
            sl2vl_data(vl),
            vec![0x01, 0x23, 0x01, 0x23, 0x01, 0x23, 0x01, 0x2F]
        );
    }
}
