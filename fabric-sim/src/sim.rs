//! [`SimFabric`]: the in-process handle — attach SMs, send and receive SMPs, advance
//! virtual time, inject faults, read accounting.

use crate::VTime;
use crate::accounting::Accounting;
use crate::config::SimConfig;
use crate::error::SimError;
use crate::faults::Fault;
use crate::queue::EventQueue;
use crate::state::{NONE, State};
use fabric::rng::SplitMix64;
use fabric::{Guid, Lid, NodeId, PortState, Topology};
use mad::{PortInfo, SlToVlTable, Smp, VlArbitrationTable};
use std::collections::{HashMap, VecDeque};

/// An SM attached at a CA port (like ibsim's SIM_HOST).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct AttachId(pub u32);

/// A MAD handed to an attached SM, with its LRH addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Received {
    /// Virtual time of arrival.
    pub time: VTime,
    /// LRH source LID (0xFFFF for a purely directed-route SMP).
    pub slid: Lid,
    /// LRH destination LID (0xFFFF for a purely directed-route SMP).
    pub dlid: Lid,
    /// The SMP: a response, a trap, or a request addressed to the SM (SMInfo).
    pub smp: Smp,
}

/// An SMP in flight with its LRH fields.
#[derive(Clone, Debug, Default)]
pub(crate) struct Packet {
    pub smp: Smp,
    /// LRH source LID.
    pub slid: Lid,
    /// LRH destination LID (meaningful while `lid_leg`).
    pub dlid: Lid,
    /// True while the packet travels LID-routed (class 0x01, or the LID part of a
    /// mixed-mode directed-route SMP).
    pub lid_leg: bool,
    /// Origin index in the accounting (NONE when unknown).
    pub origin: u32,
    /// Links crossed so far; a packet crossing more than [`MAX_LINK_HOPS`] is dropped
    /// (a LID routing loop; real switches drop it on head-of-queue lifetime).
    pub hops: u16,
}

/// Links a packet may cross before it is considered looping.
pub(crate) const MAX_LINK_HOPS: u16 = 255;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(crate) enum EvKind {
    /// A packet arrives from the wire at a port.
    Arrive { port: u32, slot: u32 },
    /// A packet generated at a node (SMA response, trap) leaves through the node's SMI;
    /// `port` is the port the request came in on (CA: the port it leaves by).
    Depart { port: u32, slot: u32 },
    /// M_Key lease timer of a port.
    LeaseCheck { port: u32 },
    /// A link finishes training (both ends come up in INIT).
    LinkTrain { port: u32 },
    /// A scheduled fault.
    Fault { idx: u32 },
    /// A GMP reaches the port it was routed to.
    GmpArrive { slot: u32 },
    /// Repeat trap number `n` (TID = trap base + n) unless repressed.
    TrapRepeat { n: u32 },
    /// Vports of a port held Down by the SM may retrain ([`crate::vport`]).
    VPortTrain { port: u32 },
}

#[derive(PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(crate) struct Ev {
    pub time: VTime,
    pub seq: u64,
    pub kind: EvKind,
}

pub(crate) struct AttachSt {
    pub port: u32,
    pub queue: VecDeque<Received>,
    pub gmp_queue: VecDeque<crate::gmp::ReceivedGmp>,
    pub active: bool,
    pub origin: u32,
}

/// The simulated fabric (sans-IO core). See the crate documentation.
pub struct SimFabric {
    pub(crate) cfg: SimConfig,
    pub(crate) st: State,
    pub(crate) queue: EventQueue,
    pub(crate) seq: u64,
    pub(crate) now: VTime,
    pub(crate) slots: Vec<Packet>,
    pub(crate) free: Vec<u32>,
    pub(crate) attaches: Vec<AttachSt>,
    pub(crate) rng: SplitMix64,
    pub(crate) loss_prob: f64,
    pub(crate) dup_prob: f64,
    pub(crate) extra_delay_ns: u64,
    pub(crate) acct: Accounting,
    pub(crate) scheduled: Vec<Option<Fault>>,
    pub(crate) sl2vl: HashMap<(u32, u32), SlToVlTable>,
    pub(crate) vlarb: HashMap<(u32, u32), VlArbitrationTable>,
    pub(crate) trap_tid: u64,
    /// GMPs in flight: (receiving port index, SL, the MAD), free slots are None.
    pub(crate) gmps: Vec<Option<(u32, u8, crate::gmp::ReceivedGmp)>>,
    pub(crate) gmp_free: Vec<u32>,
    /// Traps waiting for TrapRepress: n -> (management port, trap SMP, repeats left).
    pub(crate) pending_traps: HashMap<u32, (u32, Smp, u32)>,
    /// Performance counters of every port ([`crate::perf`]).
    pub(crate) perf: crate::perf::Perf,
}

impl SimFabric {
    /// Loads a topology: every cabled port comes up INIT / LinkUp, no LIDs, empty LFTs,
    /// default P_Key tables, M_Key 0.
    pub fn new(topo: &Topology, cfg: SimConfig) -> Result<SimFabric, SimError> {
        let n_ports: usize = topo.nodes().map(|(_, n)| n.ports.len()).sum();
        if n_ports >= NONE as usize {
            return Err(SimError::TooLarge(format!("{n_ports} ports")));
        }
        let st = State::build(topo, &cfg);
        let acct = Accounting::new(st.nodes.len());
        let perf = crate::perf::Perf::new(st.ports.len(), cfg.seed);
        Ok(SimFabric {
            rng: SplitMix64::new(cfg.seed),
            cfg,
            st,
            queue: EventQueue::default(),
            seq: 0,
            now: 0,
            slots: Vec::new(),
            free: Vec::new(),
            attaches: Vec::new(),
            loss_prob: 0.0,
            dup_prob: 0.0,
            extra_delay_ns: 0,
            acct,
            scheduled: Vec::new(),
            sl2vl: HashMap::new(),
            vlarb: HashMap::new(),
            trap_tid: crate::portstate::TRAP_TID_BASE,
            gmps: Vec::new(),
            gmp_free: Vec::new(),
            pending_traps: HashMap::new(),
            perf,
        })
    }

    /// The configuration in force.
    pub fn config(&self) -> &SimConfig {
        &self.cfg
    }

    /// Current virtual time (the time of the last processed event or send).
    pub fn now(&self) -> VTime {
        self.now
    }

    /// Attaches an SM at a CA port (by port GUID). Sets CapabilityMask.IsSM on that port,
    /// as the kernel does when an SM opens QP0.
    pub fn attach(&mut self, port_guid: Guid) -> Result<AttachId, SimError> {
        self.attach_as(port_guid, true)
    }

    /// Attaches a non-SM client (for example an SA client exchanging GMPs) at a CA port:
    /// like [`SimFabric::attach`] but IsSM stays clear.
    pub fn attach_client(&mut self, port_guid: Guid) -> Result<AttachId, SimError> {
        self.attach_as(port_guid, false)
    }

    fn attach_as(&mut self, port_guid: Guid, is_sm: bool) -> Result<AttachId, SimError> {
        let &port = self
            .st
            .by_port_guid
            .get(&port_guid)
            .ok_or(SimError::NoSuchPort(port_guid))?;
        let p = &self.st.ports[port as usize];
        if self.st.nodes[p.node as usize].sw != NONE {
            return Err(SimError::NotAnEndPort(port_guid));
        }
        if p.attach != NONE {
            return Err(SimError::AlreadyAttached(port_guid));
        }
        let id = self.attaches.len() as u32;
        let origin = self.acct.origin_of(port_guid);
        self.attaches.push(AttachSt {
            port,
            queue: VecDeque::new(),
            gmp_queue: VecDeque::new(),
            active: true,
            origin,
        });
        self.st.ports[port as usize].attach = id;
        if is_sm {
            // The SMA traps the change (144) to the master, as an HCA's does when an SM
            // registers on its port: that is how a master learns of a new SM at a port it
            // has already swept.
            let mask = self.st.cold[port as usize].info.capability_mask | PortInfo::CAP_IS_SM;
            self.change_capability(port, mask, self.now);
        }
        Ok(AttachId(id))
    }

    /// Detaches an SM: clears IsSM (trap 144 to the master, as on attach), drops its queue.
    /// Later MADs for that port are dropped.
    pub fn detach(&mut self, sm: AttachId) -> Result<(), SimError> {
        let a = self.attach_mut(sm)?;
        a.active = false;
        a.queue.clear();
        a.gmp_queue.clear();
        let port = a.port;
        self.st.ports[port as usize].attach = NONE;
        let mask = self.st.cold[port as usize].info.capability_mask & !PortInfo::CAP_IS_SM;
        self.change_capability(port, mask, self.now);
        Ok(())
    }

    pub(crate) fn attach_mut(&mut self, sm: AttachId) -> Result<&mut AttachSt, SimError> {
        match self.attaches.get_mut(sm.0 as usize) {
            Some(a) if a.active => Ok(a),
            _ => Err(SimError::NoSuchAttach(sm.0)),
        }
    }

    /// The port GUID an SM is attached at.
    pub fn attach_port_guid(&self, sm: AttachId) -> Option<Guid> {
        let a = self.attaches.get(sm.0 as usize).filter(|a| a.active)?;
        Some(self.st.ports[a.port as usize].guid)
    }

    /// The node and port number an SM is attached at.
    pub fn attach_point(&self, sm: AttachId) -> Option<(NodeId, u8)> {
        let a = self.attaches.get(sm.0 as usize).filter(|a| a.active)?;
        let p = &self.st.ports[a.port as usize];
        Some((NodeId(p.node), p.num))
    }

    /// Sends a directed-route SMP (purely directed: DrSLID = DrDLID = 0xFFFF, or a
    /// response the SM gives to a directed-route request it received) at `now`.
    /// Mixed-mode requests and LID-routed SMPs go through [`SimFabric::send_lid`].
    pub fn send(&mut self, now: VTime, sm: AttachId, smp: &Smp) -> Result<(), SimError> {
        if !smp.is_directed() {
            return Err(SimError::NeedsDestination);
        }
        self.send_inner(now, sm, Lid::PERMISSIVE, smp, false)
    }

    /// Sends an SMP LID-routed to `dlid` at `now`: a LID-routed SMP (class 0x01), or a
    /// mixed-mode directed-route SMP whose first directed node has LID `dlid`.
    pub fn send_lid(
        &mut self,
        now: VTime,
        sm: AttachId,
        dlid: Lid,
        smp: &Smp,
    ) -> Result<(), SimError> {
        self.send_inner(now, sm, dlid, smp, true)
    }

    /// Byte-level entry for the socket server: `dlid` 0xFFFF sends a directed-route SMP
    /// like [`SimFabric::send`], anything else like [`SimFabric::send_lid`].
    pub fn send_bytes(
        &mut self,
        now: VTime,
        sm: AttachId,
        dlid: Lid,
        bytes: &[u8; 256],
    ) -> Result<(), SimError> {
        let smp = Smp::decode(bytes).map_err(|e| SimError::BadSmp(e.to_string()))?;
        if dlid.is_permissive() {
            self.send(now, sm, &smp)
        } else {
            self.send_lid(now, sm, dlid, &smp)
        }
    }

    fn send_inner(
        &mut self,
        now: VTime,
        sm: AttachId,
        dlid: Lid,
        smp: &Smp,
        lid_leg: bool,
    ) -> Result<(), SimError> {
        let a = self.attach_mut(sm)?;
        let (port, origin) = (a.port, a.origin);
        self.run_until(now);
        let now = self.now;
        self.acct.counters.sent += 1;
        let slid = self.st.source_lid(port);
        let slot = self.alloc(Packet {
            smp: smp.clone(),
            slid,
            dlid,
            lid_leg,
            origin,
            hops: 0,
        });
        self.originate(port, slot, now);
        Ok(())
    }

    /// Time of the next pending event, if any.
    pub fn next_event_time(&self) -> Option<VTime> {
        self.queue.peek_time()
    }

    /// Processes every event due at or before `now`, then sets the clock to `now`
    /// (never backwards).
    pub fn run_until(&mut self, now: VTime) {
        while let Some(e) = self.queue.pop_due(now) {
            self.now = self.now.max(e.time);
            self.acct.counters.events += 1;
            self.dispatch(e.kind, e.time);
        }
        self.now = self.now.max(now);
    }

    /// Runs until no event is pending or `limit` virtual time is reached; returns the time
    /// reached.
    pub fn run_until_idle(&mut self, limit: VTime) -> VTime {
        while let Some(t) = self.next_event_time() {
            if t > limit {
                break;
            }
            self.run_until(t);
        }
        self.now
    }

    /// The next MAD delivered to this SM: (arrival time, SMP).
    pub fn poll_recv(&mut self, sm: AttachId) -> Option<(VTime, Smp)> {
        self.poll_recv_full(sm).map(|r| (r.time, r.smp))
    }

    /// The next MAD delivered to this SM, with its LRH source and destination LIDs (an SM
    /// answering a LID-routed request sends the response to `slid`).
    pub fn poll_recv_full(&mut self, sm: AttachId) -> Option<Received> {
        self.attaches.get_mut(sm.0 as usize)?.queue.pop_front()
    }

    /// Byte-level receive for the socket server: (time, LRH SLID, the 256 bytes).
    pub fn poll_recv_bytes(&mut self, sm: AttachId) -> Option<(VTime, Lid, [u8; 256])> {
        self.poll_recv_full(sm)
            .map(|r| (r.time, r.slid, r.smp.encode()))
    }

    /// Number of MADs waiting for this SM.
    pub fn pending(&self, sm: AttachId) -> usize {
        self.attaches
            .get(sm.0 as usize)
            .map_or(0, |a| a.queue.len())
    }

    /// Accounting so far.
    pub fn accounting(&self) -> &Accounting {
        &self.acct
    }

    /// Takes the accepted-Set log, leaving it empty.
    pub fn take_set_log(&mut self) -> Vec<crate::SetRecord> {
        std::mem::take(&mut self.acct.set_log)
    }

    /// Takes the hop trace (see `SimConfig::trace`), leaving it empty.
    pub fn take_trace(&mut self) -> Vec<crate::TraceHop> {
        std::mem::take(&mut self.acct.trace)
    }

    // ----- inspection (tests, control requests) -----

    /// Number of nodes.
    pub fn num_nodes(&self) -> usize {
        self.st.nodes.len()
    }

    /// The node with this node GUID.
    pub fn node_by_guid(&self, guid: Guid) -> Option<NodeId> {
        self.st.by_node_guid.get(&guid).map(|&i| NodeId(i))
    }

    /// The node and port number of a port GUID (CA ports; switch GUIDs give port 0).
    pub fn port_by_guid(&self, guid: Guid) -> Option<(NodeId, u8)> {
        let &i = self.st.by_port_guid.get(&guid)?;
        let p = &self.st.ports[i as usize];
        Some((NodeId(p.node), p.num))
    }

    /// Finds a node by NodeDescription text, node GUID or port GUID (`0x...`), or
    /// `name[port]`-less forms; returns the node and, for a port GUID, the port.
    pub fn find(&self, name: &str) -> Option<(NodeId, Option<u8>)> {
        let t = name.trim();
        if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
            let g = Guid(u64::from_str_radix(hex, 16).ok()?);
            if let Some(n) = self.node_by_guid(g) {
                return Some((n, None));
            }
            return self.port_by_guid(g).map(|(n, p)| (n, Some(p)));
        }
        self.st
            .descs
            .iter()
            .position(|d| d.text() == t)
            .map(|i| (NodeId(i as u32), None))
    }

    /// GUID of port `port` of `node`.
    pub fn port_guid(&self, node: NodeId, port: u8) -> Result<Guid, SimError> {
        let i = self.port_index(node, port)?;
        Ok(self.st.ports[i as usize].guid)
    }

    /// Node GUID.
    pub fn node_guid(&self, node: NodeId) -> Result<Guid, SimError> {
        self.st
            .nodes
            .get(node.index())
            .map(|n| n.node_guid)
            .ok_or(SimError::NoSuchNode(node))
    }

    pub(crate) fn port_index(&self, node: NodeId, port: u8) -> Result<u32, SimError> {
        let n = self
            .st
            .nodes
            .get(node.index())
            .ok_or(SimError::NoSuchNode(node))?;
        if port > n.num_ports || (port == 0 && n.sw == NONE) {
            return Err(SimError::BadPort { node, port });
        }
        Ok(n.port_base + u32::from(port))
    }

    /// Logical state of a port.
    pub fn port_state(&self, node: NodeId, port: u8) -> Result<PortState, SimError> {
        let i = self.port_index(node, port)?;
        Ok(self.st.ports[i as usize].state)
    }

    /// The PortInfo an SMA would return for this port (M_Key shown).
    pub fn port_info(&self, node: NodeId, port: u8) -> Result<PortInfo, SimError> {
        let i = self.port_index(node, port)?;
        Ok(self.port_info_view(i, port, false))
    }

    /// LFT entry of a switch for `lid` (0xFF when unprogrammed).
    pub fn lft_entry(&self, node: NodeId, lid: Lid) -> Result<u8, SimError> {
        let sw = self.switch_state(node)?;
        Ok(sw.lft.get(usize::from(lid.0)).copied().unwrap_or(0xFF))
    }

    /// A switch's LFT for LIDs 0..=LinearFDBTop (0xFF where unprogrammed).
    pub fn lft(&self, node: NodeId) -> Result<Vec<u8>, SimError> {
        let sw = self.switch_state(node)?;
        Ok((0..=usize::from(sw.lft_top))
            .map(|l| sw.lft.get(l).copied().unwrap_or(0xFF))
            .collect())
    }

    /// The state of switch `node`.
    fn switch_state(&self, node: NodeId) -> Result<&crate::state::SwitchState, SimError> {
        let n = self
            .st
            .nodes
            .get(node.index())
            .ok_or(SimError::NoSuchNode(node))?;
        if n.sw == NONE {
            return Err(SimError::NotASwitch(node));
        }
        Ok(&self.st.switches[n.sw as usize])
    }

    /// A switch's SwitchInfo.MulticastFDBTop.
    pub fn multicast_fdb_top(&self, node: NodeId) -> Result<u16, SimError> {
        Ok(self.switch_state(node)?.mft_top)
    }

    /// A port's whole P_KeyTable (PartitionCap entries; the power-up table is 0xFFFF then
    /// zeros).
    pub fn pkey_table(&self, node: NodeId, port: u8) -> Result<Vec<fabric::PKey>, SimError> {
        let i = self.port_index(node, port)?;
        let cap = if self.is_switch(node) {
            self.cfg.switch_partition_cap
        } else {
            self.cfg.ca_partition_cap
        };
        Ok((0..usize::from(cap))
            .map(|k| self.st.pkey_at(i, k))
            .collect())
    }

    /// SwitchInfo.PortStateChange of a switch.
    pub fn port_state_change(&self, node: NodeId) -> Result<bool, SimError> {
        Ok(self.switch_state(node)?.port_state_change)
    }

    /// True while the node is present (not removed by a fault).
    pub fn node_present(&self, node: NodeId) -> bool {
        self.st.nodes.get(node.index()).is_some_and(|n| n.present)
    }

    // ----- internals shared by the other modules -----

    #[inline]
    pub(crate) fn alloc(&mut self, p: Packet) -> u32 {
        if let Some(s) = self.free.pop() {
            self.slots[s as usize] = p;
            s
        } else {
            self.slots.push(p);
            (self.slots.len() - 1) as u32
        }
    }

    #[inline]
    pub(crate) fn release(&mut self, slot: u32) {
        self.free.push(slot);
    }

    #[inline]
    pub(crate) fn push(&mut self, time: VTime, kind: EvKind) {
        self.seq += 1;
        self.queue.push(time, self.seq, kind);
    }

    fn dispatch(&mut self, kind: EvKind, t: VTime) {
        match kind {
            EvKind::Arrive { port, slot } => self.arrive(port, slot, t),
            EvKind::Depart { port, slot } => self.originate(port, slot, t),
            EvKind::LeaseCheck { port } => self.lease_check(port, t),
            EvKind::LinkTrain { port } => self.link_train(port, t),
            EvKind::GmpArrive { slot } => self.gmp_arrive(slot, t),
            EvKind::TrapRepeat { n } => self.trap_repeat(n, t),
            EvKind::VPortTrain { port } => self.vports_follow(port, t),
            EvKind::Fault { idx } => {
                if let Some(f) = self.scheduled.get_mut(idx as usize).and_then(Option::take) {
                    // A scheduled fault naming a bad node was validated when scheduled.
                    let _ = self.apply_fault(t, f);
                }
            }
        }
    }
}

impl SimFabric {
    /// True when the node is a switch.
    pub fn is_switch(&self, node: NodeId) -> bool {
        self.st
            .nodes
            .get(node.index())
            .is_some_and(|n| n.sw != NONE)
    }
}
