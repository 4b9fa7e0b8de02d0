//! [`Readback`] owns the requests waiting and the one running (targets, tables read so
//! far, what did not answer). It never sends (the sweeper queues the Gets it asks for)
//! and never writes anything to the fabric or to what the sweeper believes.
//!
//! P_KeyTable read-back: on request, the master reads every managed P_KeyTable back from
//! the fabric (Gets only, never a Set) so that an isolation audit can compare what the
//! ports really hold with what the policy intends.
//!
//! What is read, per port of the last completed discovery:
//! * every CA (and router) port reached in that discovery: every block its node's
//!   NodeInfo.PartitionCap covers;
//! * each switch's management port 0: the blocks NodeInfo.PartitionCap covers;
//! * each switch external port facing an end port: PortInfo first (the partition
//!   enforcement bits as they are now); only when inbound or outbound enforcement is on, the
//!   blocks SwitchInfo.PartitionEnforcementCap covers.
//!
//! With QoS on, every SLtoVL and VLArb block the sweeper knows it programmed is read back
//! too (one Get per block), so the audit can compare the VL tables the ports hold with the
//! recorded ones.
//!
//! The Gets share the sweeper's outstanding window (per-switch and fabric-wide limits),
//! go LID-routed when the sweeper uses LID routes (with the usual directed-route retry),
//! are resent `retries` times, and end in one [`crate::Event::PKeyReadback`] listing every
//! table read and the ports that did not answer. A request made while a heavy sweep runs
//! starts when that sweep completes (tables are not read halfway through programming);
//! requests queue one behind the other. A heavy sweep that starts while a read-back is
//! under way invalidates directed routes: ports not reached LID-routed then count as not
//! answered.

use crate::VTime;
use crate::counters::Counters;
use crate::discovery::Discovery;
use crate::io::Req;
use crate::state::NONE;
use fabric::{Guid, Lid};
use mad::{AttributeId, Method, PKeyTable, PortInfo, Smp, SmpAttribute};
use std::collections::{HashMap, VecDeque};

/// Identifies one read-back request.
pub type ReadbackId = u64;

/// `Req::arg` of a PortInfo Get (enforcement bits of a switch port); any other value is a
/// P_KeyTable block number.
pub(crate) const PORT_INFO: u16 = u16::MAX;

/// A read-back Get to queue: (node, port, `Req::arg`).
pub(crate) type Get = (u32, u8, u16);

/// One VL table block as read back: (node GUID, attribute, modifier as recorded, the data;
/// None when the Get was not answered).
pub type VlReading = (Guid, crate::VlAttr, u32, Option<Vec<u8>>);

/// One port's table as read from the fabric.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortTable {
    /// Node GUID.
    pub node: Guid,
    /// Port number (0: a switch's management port).
    pub port: u8,
    /// The node is a switch.
    pub is_switch: bool,
    /// LID the port (or its switch) answers to (0 when it has none).
    pub lid: Lid,
    /// Entries the port's capability covers (PartitionCap or PartitionEnforcementCap).
    pub capacity: u16,
    /// Entries in index order (`capacity` of them, 0x0000 = invalid slot); empty for a
    /// switch external port whose enforcement is off (its table was not read).
    pub pkeys: Vec<u16>,
    /// PortInfo.PartitionEnforcementInbound as read now (switch external ports only).
    pub enforce_in: Option<bool>,
    /// PortInfo.PartitionEnforcementOutbound as read now (switch external ports only).
    pub enforce_out: Option<bool>,
}

/// The result of one read-back ([`crate::Event::PKeyReadback`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadbackReport {
    /// The request's id.
    pub id: ReadbackId,
    /// The heavy sweep whose discovery chose the ports.
    pub sweep: u64,
    /// Every table read, in (node GUID, port) order.
    pub tables: Vec<PortTable>,
    /// Ports (node GUID, port) that did not answer every Get after all retries.
    pub unanswered: Vec<(Guid, u8)>,
    /// Every SLtoVL / VLArb block read back: (node GUID, attribute, modifier as recorded,
    /// the data; None when the Get was not answered), in key order.
    pub vl: Vec<VlReading>,
    /// SMPs sent by the whole sweeper while the read-back ran (its own Gets and resends,
    /// plus whatever else ran at the same time).
    pub smps: u64,
    /// When it was requested and when it started and finished (sweeper time).
    pub requested: VTime,
    /// Start (after a running heavy sweep completed).
    pub started: VTime,
    /// End.
    pub finished: VTime,
}

#[derive(Debug)]
struct Target {
    node: u32,
    port: u8,
    capacity: u16,
    keys: Vec<u16>,
    enforce: Option<(bool, bool)>,
    pending: u32,
    failed: bool,
}

#[derive(Debug)]
struct Active {
    id: ReadbackId,
    requested: VTime,
    started: VTime,
    sweep: u64,
    targets: Vec<Target>,
    by_port: HashMap<(u32, u8), usize>,
    done: usize,
    counters: Counters,
    /// VL table blocks to read: (node, attr, modifier) -> data once read (None: pending
    /// or not answered), and whether the Get is still out.
    vl: VlReads,
}

/// VL blocks of a read-back: (node, attr, modifier) -> (data once read, Get still out).
type VlReads = std::collections::BTreeMap<(u32, crate::VlAttr, u32), (Option<Vec<u8>>, bool)>;

/// The sweeper's read-back bookkeeping.
#[derive(Debug, Default)]
pub(crate) struct Readback {
    next_id: ReadbackId,
    waiting: VecDeque<(ReadbackId, VTime)>,
    active: Option<Active>,
}

fn blocks(capacity: u16) -> u16 {
    capacity.div_ceil(PKeyTable::ENTRIES as u16).max(1)
}

impl Readback {
    /// Queues a request made at `now`; returns its id.
    pub fn request(&mut self, now: VTime) -> ReadbackId {
        self.next_id += 1;
        let id = self.next_id;
        self.waiting.push_back((id, now));
        id
    }

    /// Progress of the running read-back: (id, ports finished, ports to read).
    pub fn progress(&self) -> Option<(ReadbackId, usize, usize)> {
        self.active
            .as_ref()
            .map(|a| (a.id, a.done, a.targets.len()))
    }

    /// Starts the next queued read-back when none runs, on the ports of the last completed
    /// discovery. Returns the Gets to queue first (None: nothing started).
    pub fn start_next(
        &mut self,
        disc: &Discovery,
        now: VTime,
        counters: Counters,
        vl: &crate::VlTables,
    ) -> Option<Vec<Get>> {
        if self.active.is_some() {
            return None;
        }
        let (id, requested) = self.waiting.pop_front()?;
        let sweep = disc.sweep();
        let mut targets = Vec::new();
        for (i, n) in disc.nodes().iter().enumerate() {
            if n.seen != sweep {
                continue;
            }
            if n.is_switch {
                targets.push(Target::new(i as u32, 0, n.info.partition_cap));
                let ecap = disc.switch(n.sw).info.partition_enforcement_cap;
                for p in 1..=n.nports {
                    let port = disc.port(n.port_index(p));
                    if port.remote_sweep != sweep || port.remote == NONE {
                        continue;
                    }
                    if disc.node(port.remote).is_switch {
                        continue;
                    }
                    let mut t = Target::new(i as u32, p, ecap);
                    t.enforce = Some((false, false));
                    targets.push(t);
                }
            } else {
                for p in 1..=n.nports {
                    if disc.path_sweep(n.port_index(p)) == sweep {
                        targets.push(Target::new(i as u32, p, n.info.partition_cap));
                    }
                }
            }
        }
        let by_port = targets
            .iter()
            .enumerate()
            .map(|(k, t)| ((t.node, t.port), k))
            .collect();
        let mut active = Active {
            id,
            requested,
            started: now,
            sweep,
            targets,
            by_port,
            done: 0,
            counters,
            vl: vl
                .keys()
                .filter_map(|&(g, attr, m)| {
                    let n = disc.find(g).filter(|&n| disc.seen(n))?;
                    Some(((n, attr, m), (None, true)))
                })
                .collect(),
        };
        // What to send first: PortInfo for a switch port facing an end port (its table only
        // when enforcement is on), the table blocks for every other port.
        let mut gets = Vec::new();
        for t in &mut active.targets {
            if t.enforce.is_some() {
                t.pending += 1;
                gets.push((t.node, t.port, PORT_INFO));
            } else {
                t.block_gets(&mut gets);
            }
        }
        self.active = Some(active);
        Some(gets)
    }

    /// Method, attribute and modifier of a read-back request.
    pub fn attr(disc: &Discovery, req: &Req) -> (Method, AttributeId, u32) {
        if req.arg == PORT_INFO {
            (Method::GET, AttributeId::PORT_INFO, u32::from(req.port))
        } else {
            let switch = disc
                .nodes()
                .get(req.node as usize)
                .is_some_and(|n| n.is_switch);
            // A CA's SMA applies the table to the port the SMP arrives on (port field 0).
            let port = if switch { req.port } else { 0 };
            (
                Method::GET,
                AttributeId::P_KEY_TABLE,
                PKeyTable::modifier(port, req.arg),
            )
        }
    }

    /// The VL table Gets of the running read-back: (node, attr, modifier).
    pub fn vl_gets(&self) -> Vec<(u32, crate::VlAttr, u32)> {
        self.active
            .as_ref()
            .map(|a| a.vl.keys().copied().collect())
            .unwrap_or_default()
    }

    /// A VL table Get was answered (`data`) or given up (None).
    pub fn vl_read(&mut self, key: (u32, crate::VlAttr, u32), data: Option<Vec<u8>>) {
        if let Some(e) = self.active.as_mut().and_then(|a| a.vl.get_mut(&key)) {
            *e = (data, false);
        }
    }

    /// The target a read-back request belongs to (None: not the running read-back's).
    pub fn target_of(&self, req: &Req) -> Option<usize> {
        self.active
            .as_ref()?
            .by_port
            .get(&(req.node, req.port))
            .copied()
    }

    /// The enforcement bits of target `k` were read: its table blocks are read too when
    /// inbound or outbound enforcement is on. Returns those Gets.
    pub fn enforcement_read(&mut self, k: usize, info: &PortInfo) -> Vec<Get> {
        let (i, o) = (
            info.partition_enforcement_inbound,
            info.partition_enforcement_outbound,
        );
        let mut gets = Vec::new();
        if let Some(a) = self.active.as_mut() {
            let t = &mut a.targets[k];
            t.enforce = Some((i, o));
            if i || o {
                t.block_gets(&mut gets);
            }
        }
        gets
    }

    /// P_KeyTable block `block` of target `k` was read.
    pub fn block_read(&mut self, k: usize, block: u16, smp: &Smp) {
        let t = PKeyTable::decode(&smp.data);
        if let Some(a) = self.active.as_mut() {
            let tg = &mut a.targets[k];
            let lo = usize::from(block) * PKeyTable::ENTRIES;
            let cap = usize::from(tg.capacity.max(1));
            if tg.keys.len() < cap {
                tg.keys.resize(cap, 0);
            }
            for (j, key) in t.keys.iter().enumerate() {
                if let Some(e) = tg.keys.get_mut(lo + j) {
                    *e = key.0;
                }
            }
        }
    }

    /// A Get of target `k` was answered (or given up: `failed`).
    pub fn request_done(&mut self, k: usize, failed: bool) {
        let Some(a) = self.active.as_mut() else {
            return;
        };
        let t = &mut a.targets[k];
        t.failed |= failed;
        t.pending = t.pending.saturating_sub(1);
        if t.pending == 0 {
            a.done += 1;
        }
    }

    /// The report of the running read-back once every Get was answered or given up (it is
    /// then over). `counters`: the sweeper's now.
    pub fn finish_if_done(
        &mut self,
        disc: &Discovery,
        now: VTime,
        counters: &Counters,
    ) -> Option<ReadbackReport> {
        let all = self.active.as_ref().is_some_and(|a| {
            a.targets.iter().all(|t| t.pending == 0) && a.vl.values().all(|v| !v.1)
        });
        if !all {
            return None;
        }
        let a = self.active.take()?;
        let mut tables = Vec::new();
        let mut unanswered = Vec::new();
        for t in a.targets {
            let n = disc.node(t.node);
            if t.failed {
                unanswered.push((n.guid, t.port));
                continue;
            }
            let lid = disc.port(disc.route_port(t.node, t.port)).info.lid;
            tables.push(PortTable {
                node: n.guid,
                port: t.port,
                is_switch: n.is_switch,
                lid,
                capacity: t.capacity,
                pkeys: t.keys,
                enforce_in: t.enforce.map(|e| e.0),
                enforce_out: t.enforce.map(|e| e.1),
            });
        }
        tables.sort_by_key(|t| (t.node, t.port));
        unanswered.sort();
        let vl =
            a.vl.into_iter()
                .map(|((n, attr, m), (d, _))| (disc.node(n).guid, attr, m, d))
                .collect();
        Some(ReadbackReport {
            id: a.id,
            sweep: a.sweep,
            tables,
            unanswered,
            vl,
            smps: counters.since(&a.counters).total(),
            requested: a.requested,
            started: a.started,
            finished: now,
        })
    }
}

impl Target {
    fn new(node: u32, port: u8, capacity: u16) -> Target {
        Target {
            node,
            port,
            capacity,
            keys: Vec::new(),
            enforce: None,
            pending: 0,
            failed: false,
        }
    }

    /// The Gets of every table block this target's capacity covers (counted pending).
    fn block_gets(&mut self, gets: &mut Vec<Get>) {
        for b in 0..blocks(self.capacity) {
            self.pending += 1;
            gets.push((self.node, self.port, b));
        }
    }
}
