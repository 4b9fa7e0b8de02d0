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
//! The Gets share the sweeper's outstanding window (per-switch and fabric-wide limits),
//! go LID-routed when the sweeper uses LID routes (with the usual directed-route retry),
//! are resent `retries` times, and end in one [`crate::Event::PKeyReadback`] listing every
//! table read and the ports that did not answer. A request made while a heavy sweep runs
//! starts when that sweep completes (tables are not read halfway through programming);
//! requests queue one behind the other. A heavy sweep that starts while a read-back is
//! under way invalidates directed routes: ports not reached LID-routed then count as not
//! answered.

use crate::counters::Counters;
use crate::io::{Op, Req};
use crate::state::NONE;
use crate::sweeper::{Phase, Sweeper};
use crate::{SmError, VTime};
use fabric::{Guid, Lid};
use mad::{AttributeId, Method, PKeyTable, PortInfo, SmpAttribute};
use std::collections::{HashMap, VecDeque};

/// Identifies one read-back request.
pub type ReadbackId = u64;

/// `Req::arg` of a PortInfo Get (enforcement bits of a switch port); any other value is a
/// P_KeyTable block number.
const PORT_INFO: u16 = u16::MAX;

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
}

/// The sweeper's read-back bookkeeping.
#[derive(Debug, Default)]
pub(crate) struct Readbacks {
    next_id: ReadbackId,
    waiting: VecDeque<(ReadbackId, VTime)>,
    active: Option<Active>,
}

fn blocks(capacity: u16) -> u16 {
    capacity.div_ceil(PKeyTable::ENTRIES as u16).max(1)
}

impl Sweeper {
    /// Asks for every managed P_KeyTable to be read back from the fabric now (see the
    /// module documentation of what is read). Returns the id the
    /// [`crate::Event::PKeyReadback`] will carry. Fails on a standby sweeper; a request made
    /// before the first heavy sweep completed waits for it.
    pub fn request_pkey_readback(&mut self, now: VTime) -> Result<ReadbackId, SmError> {
        self.now = self.now.max(now);
        if self.cfg.role == crate::Role::Standby {
            return Err(SmError::Readback("a standby SM sends no SMPs".into()));
        }
        self.readback.next_id += 1;
        let id = self.readback.next_id;
        self.readback.waiting.push_back((id, self.now));
        self.start_waiting_readback();
        Ok(id)
    }

    /// Progress of the running read-back: (id, ports finished, ports to read).
    pub fn readback_progress(&self) -> Option<(ReadbackId, usize, usize)> {
        self.readback
            .active
            .as_ref()
            .map(|a| (a.id, a.done, a.targets.len()))
    }

    /// Starts the next queued read-back when none runs and no heavy sweep is under way.
    pub(crate) fn start_waiting_readback(&mut self) {
        let heavy = matches!(
            self.phase,
            Phase::Discovering
                | Phase::Lids
                | Phase::Routing
                | Phase::Programming(_)
                | Phase::Rekey
                | Phase::Reapply
                | Phase::AwaitIntent
        );
        if self.readback.active.is_some() || !self.first_sweep_done || heavy {
            return;
        }
        let Some((id, requested)) = self.readback.waiting.pop_front() else {
            return;
        };
        let sweep = self.disc.sweep();
        let mut targets = Vec::new();
        for (i, n) in self.disc.nodes().iter().enumerate() {
            if n.seen != sweep {
                continue;
            }
            if n.is_switch {
                targets.push(Target::new(i as u32, 0, n.info.partition_cap));
                let ecap = self.disc.switch(n.sw).info.partition_enforcement_cap;
                for p in 1..=n.nports {
                    let port = self.disc.port(n.port_index(p));
                    if port.remote_sweep != sweep || port.remote == NONE {
                        continue;
                    }
                    if self.disc.node(port.remote).is_switch {
                        continue;
                    }
                    let mut t = Target::new(i as u32, p, ecap);
                    t.enforce = Some((false, false));
                    targets.push(t);
                }
            } else {
                for p in 1..=n.nports {
                    if self.disc.port(n.port_index(p)).path_sweep == sweep {
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
        // What to send first: PortInfo for a switch port facing an end port (its table only
        // when enforcement is on), the table blocks for every other port.
        let first: Vec<(u32, u8, bool)> = targets
            .iter()
            .map(|t| (t.node, t.port, t.enforce.is_some()))
            .collect();
        self.readback.active = Some(Active {
            id,
            requested,
            started: self.now,
            sweep,
            targets,
            by_port,
            done: 0,
            counters: *self.io.counters(),
        });
        for (k, (node, port, switch_ext)) in first.into_iter().enumerate() {
            if switch_ext {
                self.push_readback(k, node, port, PORT_INFO);
            } else {
                self.push_blocks(k);
            }
        }
        self.finish_readback_if_done();
    }

    fn push_blocks(&mut self, k: usize) {
        let Some(t) = self.readback.active.as_ref().map(|a| &a.targets[k]) else {
            return;
        };
        let (node, port, cap) = (t.node, t.port, t.capacity);
        for b in 0..blocks(cap) {
            self.push_readback(k, node, port, b);
        }
    }

    fn push_readback(&mut self, k: usize, node: u32, port: u8, arg: u16) {
        let lid_routed = self.cfg.lid_routed_programming
            && self.io.lid_routes()
            && self.disc.target_lid(node, port).0 != 0;
        let req = Req {
            op: Op::ReadBack,
            node,
            port,
            arg,
            tries: 0,
            lid_routed,
            key: 0,
        };
        if let Some(a) = self.readback.active.as_mut() {
            a.targets[k].pending += 1;
        }
        let g = self.disc.gate_of(&req);
        self.io.push(g, req);
    }

    /// Method, attribute and modifier of a read-back request.
    pub(crate) fn readback_attr(&self, req: &Req) -> (Method, AttributeId, u32) {
        if req.arg == PORT_INFO {
            (Method::GET, AttributeId::PORT_INFO, u32::from(req.port))
        } else {
            let switch = self
                .disc
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

    fn target_of(&self, req: &Req) -> Option<usize> {
        self.readback
            .active
            .as_ref()?
            .by_port
            .get(&(req.node, req.port))
            .copied()
    }

    /// A read-back Get answered.
    pub(crate) fn on_readback_reply(&mut self, req: Req, smp: &mad::Smp) {
        let Some(k) = self.target_of(&req) else {
            return;
        };
        if req.arg == PORT_INFO {
            let info = PortInfo::decode(&smp.data);
            self.note_key(&req, &info);
            let (i, o) = (
                info.partition_enforcement_inbound,
                info.partition_enforcement_outbound,
            );
            if let Some(a) = self.readback.active.as_mut() {
                a.targets[k].enforce = Some((i, o));
            }
            if i || o {
                self.push_blocks(k);
            }
        } else {
            let t = PKeyTable::decode(&smp.data);
            if let Some(a) = self.readback.active.as_mut() {
                let tg = &mut a.targets[k];
                let lo = usize::from(req.arg) * PKeyTable::ENTRIES;
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
        self.readback_request_done(k, false);
    }

    /// A read-back Get given up after every retry (or that could not be built).
    pub(crate) fn on_readback_failed(&mut self, req: Req) {
        if let Some(k) = self.target_of(&req) {
            self.readback_request_done(k, true);
        }
    }

    fn readback_request_done(&mut self, k: usize, failed: bool) {
        let Some(a) = self.readback.active.as_mut() else {
            return;
        };
        let t = &mut a.targets[k];
        t.failed |= failed;
        t.pending = t.pending.saturating_sub(1);
        if t.pending == 0 {
            a.done += 1;
        }
        self.finish_readback_if_done();
    }

    fn finish_readback_if_done(&mut self) {
        let all = self
            .readback
            .active
            .as_ref()
            .is_some_and(|a| a.targets.iter().all(|t| t.pending == 0));
        if !all {
            return;
        }
        let Some(a) = self.readback.active.take() else {
            return;
        };
        let mut tables = Vec::new();
        let mut unanswered = Vec::new();
        for t in a.targets {
            let n = self.disc.node(t.node);
            if t.failed {
                unanswered.push((n.guid, t.port));
                continue;
            }
            let lid = self
                .disc
                .port(self.disc.route_port(t.node, t.port))
                .info
                .lid;
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
        let report = ReadbackReport {
            id: a.id,
            sweep: a.sweep,
            tables,
            unanswered,
            smps: self.io.counters().since(&a.counters).total(),
            requested: a.requested,
            started: a.started,
            finished: self.now,
        };
        self.events
            .push_back(crate::Event::PKeyReadback(Box::new(report)));
        self.start_waiting_readback();
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
}
