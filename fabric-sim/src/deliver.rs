//! The data-packet delivery check: walks a packet from a source end port to a
//! destination LID through the programmed LFTs, applying the HCA P_Key checks at source
//! and destination, switch partition enforcement, port ACTIVE checks and, per output
//! port, the packet's VL from its SL ([`crate::vl`]). SMPs are exempt from key checks
//! and ride VL15 without consulting SLtoVL ([`SimFabric::deliver_smp`]).

use crate::sim::SimFabric;
use crate::state::NONE;
use fabric::{Guid, Lid, NodeId, PKey, PortState};
use serde::{Deserialize, Serialize};

/// Why a data packet did not arrive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DropReason {
    /// No end port has the source GUID.
    NoSuchSource,
    /// The source port is not ACTIVE (or its node is removed).
    SourceNotActive,
    /// The source port's P_KeyTable does not hold the key (an HCA sends only with keys
    /// in its table).
    SourcePKey,
    /// A link on the path is down or uncabled.
    LinkDown {
        /// Node sending.
        node: NodeId,
        /// Port.
        port: u8,
    },
    /// A port on the path is not ACTIVE.
    NotActive {
        /// Node.
        node: NodeId,
        /// Port.
        port: u8,
    },
    /// The switch's LFT has no valid entry for the LID (0xFF, above LinearFDBTop, or a
    /// port that does not exist).
    NoRoute {
        /// Switch.
        node: NodeId,
    },
    /// Switch inbound partition enforcement dropped it at the ingress port.
    SwitchInbound {
        /// Switch.
        node: NodeId,
        /// Ingress port.
        port: u8,
    },
    /// Switch outbound partition enforcement dropped it at the egress port.
    SwitchOutbound {
        /// Switch.
        node: NodeId,
        /// Egress port.
        port: u8,
    },
    /// The destination port's P_KeyTable has no entry matching the key.
    DestinationPKey {
        /// Node.
        node: NodeId,
        /// Port.
        port: u8,
    },
    /// The packet reached a CA port that does not own the DLID.
    WrongDestination {
        /// Node.
        node: NodeId,
        /// Port.
        port: u8,
    },
    /// A node on the path is removed.
    NodeAbsent {
        /// Node.
        node: NodeId,
    },
    /// More than 64 hops: a routing loop.
    Loop,
    /// A GMP reached its port, but no SM or client is attached there.
    NoReceiver,
    /// A GMP was lost by the random loss fault.
    Lost,
    /// The packet's SL maps to VL15 on this output port (SLtoVLMappingTable): VL15 is
    /// for subnet management only, so a data packet mapped there is dropped.
    SlToVl15 {
        /// Node sending.
        node: NodeId,
        /// Output port.
        port: u8,
    },
    /// The receiving port's error rate ([`SimFabric::set_port_error_rate`]) struck: the
    /// packet arrived in error and was dropped (counted in that port's PortRcvErrors).
    RcvError {
        /// Node receiving.
        node: NodeId,
        /// Input port.
        port: u8,
    },
    /// The packet's SL maps to a VL at or beyond the output port's OperationalVLs.
    VlNotOperational {
        /// Node sending.
        node: NodeId,
        /// Output port.
        port: u8,
        /// The VL the SLtoVLMappingTable gave.
        vl: u8,
    },
    /// The sending or receiving vport is not ACTIVE ([`SimFabric::deliver_vport`]).
    VPortNotActive {
        /// The vport's GUID.
        vport: Guid,
    },
    /// The receiving vport's P_Key table has no entry matching the key (counted in its
    /// VPortInfo.P_KeyViolations).
    VPortPKey {
        /// The vport's GUID.
        vport: Guid,
    },
    /// No vport or CA port has this GUID, or a packet's DGID names no function of the port
    /// it reached.
    NoSuchVPort {
        /// The GUID.
        guid: Guid,
    },
    /// The destination has no LID yet (a LIDRequired vport the SM gave none, or a port
    /// without a LID).
    NoLid {
        /// The destination's GUID.
        guid: Guid,
    },
}

/// Which functions of the end ports send and receive: the source port itself or one of its
/// vports, and the GRH DGID the packet carries (None: no GRH).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Ends {
    /// Vport index at the source port (None: the port itself).
    pub src_vport: Option<u16>,
    /// The destination GUID in the GRH.
    pub dgid: Option<Guid>,
}

/// Result of [`SimFabric::deliver`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Delivery {
    /// Arrived at this end port after `hops` links.
    Delivered {
        /// GUID of the receiving port (a switch's GUID for its port 0).
        dst_port: Guid,
        /// Links crossed.
        hops: u8,
    },
    /// Dropped.
    Dropped(DropReason),
}

impl Delivery {
    /// True when delivered.
    pub fn is_delivered(&self) -> bool {
        matches!(self, Delivery::Delivered { .. })
    }
}

/// Switch enforcement compares the partition only (a switch port facing a limited
/// member carries that member's keys, and its traffic to full members must pass).
fn switch_key_ok(sim: &SimFabric, port: u32, key: PKey) -> bool {
    let p = &sim.st.cold[port as usize];
    if p.pkeys.is_empty() {
        return key.partition() == PKey::DEFAULT_FULL.partition();
    }
    !key.is_invalid()
        && p.pkeys
            .iter()
            .any(|k| !k.is_invalid() && k.partition() == key.partition())
}

impl SimFabric {
    /// Would a data packet from end port `src_port_guid` with P_Key `pkey` reach
    /// `dst_lid`? Sent on SL 0 ([`SimFabric::deliver_sl`]). Counts P_Key violations on
    /// the port that drops it, and the packet in the per-VL accounting.
    pub fn deliver(&mut self, src_port_guid: Guid, dst_lid: Lid, pkey: PKey) -> Delivery {
        self.deliver_sl(src_port_guid, dst_lid, pkey, 0)
    }

    /// [`SimFabric::deliver`] for a packet on service level `sl` (only its low 4 bits
    /// are used, as the LRH carries 4): at every output port the SLtoVLMappingTable
    /// gives the VL, and a VL of 15 or beyond the port's OperationalVLs drops it.
    pub fn deliver_sl(
        &mut self,
        src_port_guid: Guid,
        dst_lid: Lid,
        pkey: PKey,
        sl: u8,
    ) -> Delivery {
        self.walk(src_port_guid, dst_lid, Some(pkey), Some(sl & 0xF))
    }

    /// The same walk for a LID-routed SMP: SMPs are exempt from P_Key checks and ride
    /// VL15 whatever the SLtoVL tables say.
    pub fn deliver_smp(&mut self, src_port_guid: Guid, dst_lid: Lid) -> Delivery {
        self.walk(src_port_guid, dst_lid, None, None)
    }

    fn walk(&mut self, src: Guid, dst: Lid, key: Option<PKey>, sl: Option<u8>) -> Delivery {
        let Some(&src_port) = self.st.by_port_guid.get(&src) else {
            return Delivery::Dropped(DropReason::NoSuchSource);
        };
        match self.walk_from(src_port, dst, key, sl) {
            Ok((port, hops)) => Delivery::Delivered {
                dst_port: self.st.ports[port as usize].guid,
                hops,
            },
            Err(r) => Delivery::Dropped(r),
        }
    }

    /// Walks a packet from end port index `src_port` to `dst` and keeps the books: the
    /// P_Key violation of a port that drops it for its key, and (data packets, `sl` set)
    /// the per-VL counts. Ok((receiving port index, links crossed)) or why it is dropped.
    pub(crate) fn walk_from(
        &mut self,
        src_port: u32,
        dst: Lid,
        key: Option<PKey>,
        sl: Option<u8>,
    ) -> Result<(u32, u8), DropReason> {
        self.walk_from_ends(src_port, dst, key, sl, Ends::default())
    }

    /// [`SimFabric::walk_from`] between the functions `ends` names.
    pub(crate) fn walk_from_ends(
        &mut self,
        src_port: u32,
        dst: Lid,
        key: Option<PKey>,
        sl: Option<u8>,
        ends: Ends,
    ) -> Result<(u32, u8), DropReason> {
        let mut path = WalkPath::new();
        let mut r = self.trace_walk_ends(src_port, dst, key, sl, ends, &mut path);
        if self.perf.any_error_rate() {
            self.rcv_errors_on(&mut path, &mut r);
        }
        self.count_walk(src_port, &path, &r);
        if sl.is_some() {
            self.count_vls(&path, &r);
        }
        r.map_err(|(reason, violation)| {
            if let Some(p) = violation {
                let i = &mut self.st.cold[p as usize].info;
                i.p_key_violations = i.p_key_violations.saturating_add(1);
            }
            if let DropReason::VPortPKey { vport } = reason
                && let Some(&(p, i)) = self.st.virt.by_guid.get(&vport)
                && let Some(v) = self.st.virt.vport_mut(p, i)
            {
                v.p_key_violations = v.p_key_violations.saturating_add(1);
            }
            reason
        })
    }

    /// True when the last link of a walk's path delivered the packet to the port at its
    /// far end (false when the walk stopped there because that end is not ACTIVE or its
    /// node is removed: the packet was never sent on that link).
    fn last_hop_received(&self, path: &WalkPath, r: &WalkResult) -> bool {
        let Some(&(e, _)) = path.hops().last() else {
            return true;
        };
        match r {
            Err((DropReason::NodeAbsent { .. }, _)) => false,
            Err((DropReason::NotActive { node, port }, _)) => {
                let far = &self.st.ports[self.st.ports[e as usize].cable as usize];
                !(far.node == node.0 && far.num == *port)
            }
            _ => true,
        }
    }

    /// The receive error rates along a walk: the first receiving port whose rate strikes
    /// ends the walk there with [`DropReason::RcvError`].
    fn rcv_errors_on(&mut self, path: &mut WalkPath, r: &mut WalkResult) {
        let received = self.last_hop_received(path, r);
        let n = path.hops().len();
        for i in 0..n {
            if i + 1 == n && !received {
                return;
            }
            let ing = self.st.ports[path.hops()[i].0 as usize].cable;
            if self.perf.rcv_error(ing) {
                path.truncate(i + 1);
                let p = &self.st.ports[ing as usize];
                let (node, port) = (NodeId(p.node), p.num);
                *r = Err((DropReason::RcvError { node, port }, None));
                return;
            }
        }
    }

    /// The performance counters of one walk ([`crate::perf`]): every link crossed counts
    /// a packet sent and received, and the drop its error counter.
    fn count_walk(&mut self, src: u32, path: &WalkPath, r: &WalkResult) {
        use crate::perf::{
            E_RCV_CONSTRAINT, E_RCV_ERRORS, E_SWITCH_RELAY, E_XMIT_CONSTRAINT, E_XMIT_DISCARDS,
        };
        let hops = path.hops();
        let received = self.last_hop_received(path, r);
        for (i, &(e, _)) in hops.iter().enumerate() {
            if i + 1 == hops.len() && !received {
                self.perf.add_error(e, E_XMIT_DISCARDS, 1);
                break;
            }
            self.count_xmit(e);
            self.count_rcv(self.st.ports[e as usize].cable);
        }
        let Err((reason, _)) = r else { return };
        // The port the packet entered the node where it stopped by (a source switch: 0).
        let ingress = hops
            .last()
            .map_or(src, |&(e, _)| self.st.ports[e as usize].cable);
        let at = |node: NodeId, port: u8| self.st.pidx(node.0, port);
        let (port, counter) = match *reason {
            DropReason::LinkDown { node, port } | DropReason::NotActive { node, port }
                if received =>
            {
                (at(node, port), E_XMIT_DISCARDS)
            }
            DropReason::SwitchOutbound { node, port } => (at(node, port), E_XMIT_CONSTRAINT),
            DropReason::SwitchInbound { node, port } => (at(node, port), E_RCV_CONSTRAINT),
            DropReason::RcvError { node, port } => (at(node, port), E_RCV_ERRORS),
            DropReason::NoRoute { .. } => (ingress, E_SWITCH_RELAY),
            DropReason::SlToVl15 { node, .. } | DropReason::VlNotOperational { node, .. }
                if self.is_switch(node) =>
            {
                (ingress, E_SWITCH_RELAY)
            }
            _ => return,
        };
        self.perf.add_error(port, counter, 1);
    }

    /// The walk itself, changing nothing: records every link crossed in `path` (output
    /// port index, VL; VL15 for an SMP) and returns Ok((receiving port index, links
    /// crossed)) or Err((reason, port whose P_KeyViolations the drop counts)). `key` None
    /// is an SMP (no P_Key checks); `sl` None rides VL15 without SLtoVL.
    pub(crate) fn trace_walk(
        &self,
        src_port: u32,
        dst: Lid,
        key: Option<PKey>,
        sl: Option<u8>,
        path: &mut WalkPath,
    ) -> WalkResult {
        self.trace_walk_ends(src_port, dst, key, sl, Ends::default(), path)
    }

    /// [`SimFabric::trace_walk`] between the functions `ends` names: a source vport sends
    /// with its own state and table, and at a CA destination the receiving function (the
    /// port, or the vport its DLID or DGID names) is checked.
    fn trace_walk_ends(
        &self,
        src_port: u32,
        dst: Lid,
        key: Option<PKey>,
        sl: Option<u8>,
        ends: Ends,
        path: &mut WalkPath,
    ) -> WalkResult {
        use DropReason::*;
        let sp = &self.st.ports[src_port as usize];
        let sn = &self.st.nodes[sp.node as usize];
        if !sn.present || sp.state != PortState::Active {
            return Err((SourceNotActive, None));
        }
        if let Some(v) = ends.src_vport {
            self.vport_send(src_port, v, key).map_err(|r| (r, None))?;
        } else if let Some(k) = key
            && !self.st.table_contains(src_port, k)
        {
            return Err((SourcePKey, None));
        }
        if self.st.owns_lid(src_port, dst) {
            // Looped back by the HCA: only another function of the port checks the packet.
            let f = self
                .receiving_function(src_port, dst, ends.dgid)
                .map_err(|r| (r, None))?;
            if f != ends.src_vport {
                return self.receive_at(src_port, dst, key, ends.dgid, 0);
            }
            return Ok((src_port, 0));
        }
        let mut egress = if sn.sw != NONE {
            match self.st.switches[sn.sw as usize].route(dst) {
                Some(o) if o != 0 && o <= sn.num_ports => sn.port_base + u32::from(o),
                _ => {
                    let node = NodeId(sp.node);
                    return Err((NoRoute { node }, None));
                }
            }
        } else {
            src_port
        };
        // The port the packet entered the current node by (a switch source: port 0).
        let mut in_num: u8 = 0;
        let mut hops: u8 = 0;
        loop {
            let e = &self.st.ports[egress as usize];
            let (enode, enum_) = (NodeId(e.node), e.num);
            if !e.link_up || e.cable == NONE {
                let r = LinkDown {
                    node: enode,
                    port: enum_,
                };
                return Err((r, None));
            }
            if e.state != PortState::Active {
                let r = NotActive {
                    node: enode,
                    port: enum_,
                };
                return Err((r, None));
            }
            let e_switch = self.st.nodes[e.node as usize].sw != NONE;
            if let (true, Some(k)) = (
                e_switch
                    && self.st.cold[egress as usize]
                        .info
                        .partition_enforcement_outbound,
                key,
            ) && !switch_key_ok(self, egress, k)
            {
                let r = SwitchOutbound {
                    node: enode,
                    port: enum_,
                };
                return Err((r, Some(egress)));
            }
            let vl = match sl {
                Some(sl) => self.egress_vl(egress, in_num, sl).map_err(|r| (r, None))?,
                None => crate::vl::VL15,
            };
            path.push(egress, vl);
            let ing = e.cable;
            let ip = &self.st.ports[ing as usize];
            let (inode, inum) = (ip.node, ip.num);
            let n = &self.st.nodes[inode as usize];
            if !n.present {
                let node = NodeId(inode);
                return Err((NodeAbsent { node }, None));
            }
            if ip.state != PortState::Active {
                let r = NotActive {
                    node: NodeId(inode),
                    port: inum,
                };
                return Err((r, None));
            }
            hops += 1;
            if hops > MAX_WALK_LINKS {
                return Err((Loop, None));
            }
            if n.sw != NONE {
                if let (true, Some(k)) = (
                    self.st.cold[ing as usize]
                        .info
                        .partition_enforcement_inbound,
                    key,
                ) && !switch_key_ok(self, ing, k)
                {
                    let r = SwitchInbound {
                        node: NodeId(inode),
                        port: inum,
                    };
                    return Err((r, Some(ing)));
                }
                if self.st.owns_lid(ing, dst) {
                    let p0 = n.port_base;
                    if let Some(k) = key
                        && !self.st.table_matches(p0, k)
                    {
                        let r = DestinationPKey {
                            node: NodeId(inode),
                            port: 0,
                        };
                        return Err((r, Some(p0)));
                    }
                    return Ok((p0, hops));
                }
                match self.st.switches[n.sw as usize].route(dst) {
                    Some(o) if o != 0 && o <= n.num_ports => {
                        egress = n.port_base + u32::from(o);
                        in_num = inum;
                    }
                    _ => {
                        let node = NodeId(inode);
                        return Err((NoRoute { node }, None));
                    }
                }
            } else {
                return self.receive_at(ing, dst, key, ends.dgid, hops);
            }
        }
    }

    /// A packet for `dst` (GRH DGID `dgid`) reaches CA port `ing` after `hops` links: the
    /// port must own the DLID, and the receiving function (the port, or the vport the DLID
    /// or DGID names) accept it.
    fn receive_at(
        &self,
        ing: u32,
        dst: Lid,
        key: Option<PKey>,
        dgid: Option<Guid>,
        hops: u8,
    ) -> WalkResult {
        let ip = &self.st.ports[ing as usize];
        let (node, port) = (NodeId(ip.node), ip.num);
        if !self.st.owns_lid(ing, dst) {
            return Err((DropReason::WrongDestination { node, port }, None));
        }
        match self.receiving_function(ing, dst, dgid) {
            Err(r) => Err((r, None)),
            Ok(Some(v)) => match self.vport_receive(ing, v, key) {
                Ok(()) => Ok((ing, hops)),
                Err(r) => Err((r, None)),
            },
            Ok(None) => match key {
                Some(k) if !self.st.table_matches(ing, k) => {
                    Err((DropReason::DestinationPKey { node, port }, Some(ing)))
                }
                _ => Ok((ing, hops)),
            },
        }
    }
}

/// What a walk gives: Ok((receiving port index, links crossed)) or Err((why it was
/// dropped, the port whose P_KeyViolations the drop counts)).
pub(crate) type WalkResult = Result<(u32, u8), (DropReason, Option<u32>)>;

/// Links a walk may cross; more is a routing loop.
const MAX_WALK_LINKS: u8 = 64;

/// The links one walk crossed, on the stack (the delivery check never allocates):
/// (output port index, VL), in order.
pub(crate) struct WalkPath {
    hops: [(u32, u8); MAX_WALK_LINKS as usize + 1],
    len: usize,
}

impl WalkPath {
    pub(crate) fn new() -> WalkPath {
        WalkPath {
            hops: [(0, 0); MAX_WALK_LINKS as usize + 1],
            len: 0,
        }
    }

    fn push(&mut self, port: u32, vl: u8) {
        // The walk stops after MAX_WALK_LINKS + 1 pushes (Loop), so this never drops one.
        if let Some(slot) = self.hops.get_mut(self.len) {
            *slot = (port, vl);
            self.len += 1;
        }
    }

    /// Keeps the first `len` links.
    fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// The links crossed: (output port index, VL).
    pub(crate) fn hops(&self) -> &[(u32, u8)] {
        &self.hops[..self.len]
    }
}
