//! Moving SMPs: directed-route steps with the shared [`mad::dr_step`], LID routing
//! through programmed LFTs, link transmission with latency, serialisation, VL15 bounds
//! and the loss/duplicate/delay faults, and hand-off to SMAs and attached SMs.

use crate::VTime;
use crate::accounting::{TraceHop, TraceKind};
use crate::perf::{E_VL15_DROPPED, E_XMIT_DISCARDS};
use crate::sim::{EvKind, Packet, Received, SimFabric};
use crate::state::NONE;
use fabric::{Lid, NodeId, PortState};
use mad::{AttributeId, DrAction, DrIngress, DrNode, Method, dr_step};

impl SimFabric {
    #[inline]
    fn dr_node(&self, node: u32) -> DrNode {
        let n = &self.st.nodes[node as usize];
        DrNode {
            is_switch: n.sw != NONE,
            num_ports: n.num_ports,
        }
    }

    #[inline]
    pub(crate) fn trace(&mut self, kind: TraceKind, port: u32, slot: u32, t: VTime) {
        if !self.cfg.trace {
            return;
        }
        let p = &self.st.ports[port as usize];
        let smp = &self.slots[slot as usize].smp;
        self.acct.trace.push(TraceHop {
            time: t,
            kind,
            node: NodeId(p.node),
            port: p.num,
            tid: smp.tid,
            hop_pointer: smp.hop_pointer,
            direction: smp.direction,
            return_path: smp.return_path,
        });
    }

    #[inline]
    pub(crate) fn drop_packet(&mut self, port: u32, slot: u32, t: VTime) {
        self.trace(TraceKind::Drop, port, slot, t);
        self.release(slot);
    }

    /// A packet generated at the node owning `port` leaves through the node's SMI: an SM
    /// send (port = the attach point), an SMA response (port = where the request came
    /// in) or a trap (port = the management port).
    pub(crate) fn originate(&mut self, port: u32, slot: u32, t: VTime) {
        let node = self.st.ports[port as usize].node;
        if !self.st.nodes[node as usize].present {
            self.acct.counters.dropped_link_down += 1;
            self.drop_packet(port, slot, t);
            return;
        }
        if self.slots[slot as usize].lid_leg {
            self.lid_from_node(port, slot, t);
        } else {
            let dn = self.dr_node(node);
            let act = dr_step(&mut self.slots[slot as usize].smp, dn, DrIngress::Local);
            self.after_dr(port, slot, act, t, true);
        }
    }

    /// A packet arrives from the wire on `port`.
    pub(crate) fn arrive(&mut self, port: u32, slot: u32, t: VTime) {
        let p = &self.st.ports[port as usize];
        let node = p.node;
        if !self.st.nodes[node as usize].present || !p.link_up {
            self.acct.counters.dropped_link_down += 1;
            self.drop_packet(port, slot, t);
            return;
        }
        let p = &mut self.st.ports[port as usize];
        let (state, num) = (p.state, p.num);
        if p.count_rcv() {
            self.perf.carry(port, 1);
        }
        if self.perf.any_error_rate() && self.perf.rcv_error(port) {
            self.perf.add_error(port, crate::perf::E_RCV_ERRORS, 1);
            self.acct.counters.dropped_rcv_error += 1;
            self.drop_packet(port, slot, t);
            return;
        }
        if self.slots[slot as usize].lid_leg {
            self.trace(TraceKind::Arrive, port, slot, t);
            if state != PortState::Active {
                self.acct.counters.dropped_not_active += 1;
                self.drop_packet(port, slot, t);
                return;
            }
            let dlid = self.slots[slot as usize].dlid;
            if self.st.owns_lid(port, dlid) {
                self.lid_arrived(port, slot, t);
            } else if self.st.nodes[node as usize].sw != NONE {
                self.lid_switch_forward(node, port, slot, t);
            } else {
                self.acct.counters.dropped_bad_dlid += 1;
                self.drop_packet(port, slot, t);
            }
        } else {
            let dn = self.dr_node(node);
            let act = dr_step(&mut self.slots[slot as usize].smp, dn, DrIngress::Port(num));
            self.trace(TraceKind::Arrive, port, slot, t);
            self.after_dr(port, slot, act, t, false);
        }
    }

    /// Acts on the result of a directed-route step at the node owning `port`.
    fn after_dr(&mut self, port: u32, slot: u32, act: DrAction, t: VTime, local: bool) {
        let p = &self.st.ports[port as usize];
        let node = p.node;
        match act {
            DrAction::Forward(out) => {
                let is_switch = self.st.nodes[node as usize].sw != NONE;
                if local && !is_switch && out != p.num {
                    // A CA sends only out of the port the SMP was posted on (linux smi.c).
                    self.acct.counters.dropped_dr += 1;
                    self.drop_packet(port, slot, t);
                    return;
                }
                let egress = self.st.pidx(node, out);
                self.transmit(egress, slot, t, false);
            }
            DrAction::Deliver => self.deliver_local(port, slot, t),
            DrAction::LidRoute(lid) => {
                let slid = self.st.source_lid(port);
                let pk = &mut self.slots[slot as usize];
                pk.dlid = lid;
                pk.slid = slid;
                pk.lid_leg = true;
                self.lid_from_node(port, slot, t);
            }
            DrAction::LidRouteToRequester => {
                let slid = self.st.source_lid(port);
                let pk = &mut self.slots[slot as usize];
                pk.dlid = pk.slid;
                pk.slid = slid;
                pk.lid_leg = true;
                self.lid_from_node(port, slot, t);
            }
            DrAction::Drop(_) => {
                self.acct.counters.dropped_dr += 1;
                self.drop_packet(port, slot, t);
            }
        }
    }

    /// A LID-routed packet generated at the node owning `port` (or turned LID-routed there).
    fn lid_from_node(&mut self, port: u32, slot: u32, t: VTime) {
        let dlid = self.slots[slot as usize].dlid;
        let node = self.st.ports[port as usize].node;
        if self.st.owns_lid(port, dlid) {
            self.lid_arrived(port, slot, t);
            return;
        }
        if self.st.nodes[node as usize].sw != NONE {
            self.lid_switch_forward(node, port, slot, t);
        } else {
            self.transmit(port, slot, t, true);
        }
    }

    /// A switch forwards a LID-routed packet through its LFT.
    fn lid_switch_forward(&mut self, node: u32, port: u32, slot: u32, t: VTime) {
        let n = &self.st.nodes[node as usize];
        let dlid = self.slots[slot as usize].dlid;
        match self.st.switches[n.sw as usize].route(dlid) {
            Some(out) if out != 0 && out <= n.num_ports => {
                let egress = n.port_base + u32::from(out);
                self.transmit(egress, slot, t, true);
            }
            _ => {
                self.acct.counters.dropped_no_route += 1;
                self.perf.add_error(port, crate::perf::E_SWITCH_RELAY, 1);
                self.drop_packet(port, slot, t);
            }
        }
    }

    /// A LID-routed packet reached the node that owns its DLID (arrival port `port`).
    fn lid_arrived(&mut self, port: u32, slot: u32, t: VTime) {
        let pk = &mut self.slots[slot as usize];
        if pk.smp.is_directed() {
            // Mixed mode: the directed part starts (C14-9:1), ends (C14-9:4) or the
            // response continues (C14-13:1, C14-13:4) here.
            pk.lid_leg = false;
            let p = &self.st.ports[port as usize];
            let (node, num) = (p.node, p.num);
            let dn = self.dr_node(node);
            let act = dr_step(&mut self.slots[slot as usize].smp, dn, DrIngress::Port(num));
            // Keep the LRH SLID of the request for LidRouteToRequester.
            self.slots[slot as usize].lid_leg = false;
            self.after_dr(port, slot, act, t, false);
        } else {
            self.deliver_local(port, slot, t);
        }
    }

    /// The packet is for this node's management: SMA (requests) or the attached SM
    /// (responses, traps, SMInfo requests when an SM is attached at the port).
    fn deliver_local(&mut self, port: u32, slot: u32, t: VTime) {
        let smp = &self.slots[slot as usize].smp;
        let m = smp.method;
        let to_sm = m.is_response()
            || m == Method::TRAP
            || m == Method::REPORT
            || (smp.attr_id == AttributeId::SM_INFO && self.st.ports[port as usize].attach != NONE);
        if to_sm {
            self.hand_to_sm(port, slot, t);
        } else {
            self.trace(TraceKind::ToSma, port, slot, t);
            self.sma_request(port, slot, t);
        }
    }

    /// Hands a packet to the SM attached at `port`.
    fn hand_to_sm(&mut self, port: u32, slot: u32, t: VTime) {
        let a = self.st.ports[port as usize].attach;
        if a == NONE {
            self.acct.counters.dropped_no_sm += 1;
            self.drop_packet(port, slot, t);
            return;
        }
        self.trace(TraceKind::ToSm, port, slot, t);
        let pk = std::mem::take(&mut self.slots[slot as usize]);
        self.release(slot);
        let (slid, dlid) = if pk.lid_leg || !pk.smp.is_directed() {
            (pk.slid, pk.dlid)
        } else {
            (Lid::PERMISSIVE, Lid::PERMISSIVE)
        };
        self.acct.counters.delivered_to_sm += 1;
        self.attaches[a as usize].queue.push_back(Received {
            time: t,
            slid,
            dlid,
            smp: pk.smp,
        });
    }

    /// Sends a packet out of `egress` at `t`: link checks, VL15 bound on switch ports,
    /// serialisation, latency and the random faults.
    pub(crate) fn transmit(&mut self, egress: u32, slot: u32, t: VTime, lid_routed: bool) {
        let p = &self.st.ports[egress as usize];
        if !p.link_up || p.cable == NONE {
            self.acct.counters.dropped_link_down += 1;
            self.perf.add_error(egress, E_XMIT_DISCARDS, 1);
            self.drop_packet(egress, slot, t);
            return;
        }
        if lid_routed && p.state != PortState::Active {
            self.acct.counters.dropped_not_active += 1;
            self.perf.add_error(egress, E_XMIT_DISCARDS, 1);
            self.drop_packet(egress, slot, t);
            return;
        }
        let wire = self.cfg.wire_time_ns.max(1);
        let is_switch = self.st.nodes[p.node as usize].sw != NONE;
        if is_switch && p.busy_until > t {
            let queued = (p.busy_until - t).div_ceil(wire);
            if queued >= u64::from(self.cfg.vl15_depth) {
                self.acct.counters.dropped_vl15 += 1;
                self.perf.add_error(egress, E_VL15_DROPPED, 1);
                self.drop_packet(egress, slot, t);
                return;
            }
        }
        let pk = &mut self.slots[slot as usize];
        pk.hops += 1;
        if pk.hops > crate::sim::MAX_LINK_HOPS {
            self.acct.counters.dropped_loop += 1;
            self.drop_packet(egress, slot, t);
            return;
        }
        let p = &mut self.st.ports[egress as usize];
        let depart = t.max(p.busy_until);
        let remote = p.cable;
        p.busy_until = depart + wire;
        if p.count_xmit() {
            self.perf.carry(egress, 0);
        }
        if depart > t {
            self.perf.add_wait(egress, (depart - t).div_ceil(wire));
        }
        self.trace(TraceKind::Transmit, egress, slot, t);
        self.acct.counters.hops += 1;
        if self.loss_prob > 0.0 && self.rng.chance(self.loss_prob) {
            self.acct.counters.dropped_loss += 1;
            self.release(slot);
            return;
        }
        let arrival = depart + self.cfg.hop_latency_ns + self.extra_delay_ns;
        if self.dup_prob > 0.0 && self.rng.chance(self.dup_prob) {
            let copy: Packet = self.slots[slot as usize].clone();
            let s2 = self.alloc(copy);
            self.acct.counters.duplicated += 1;
            self.count_xmit(egress);
            self.push(
                arrival + wire,
                EvKind::Arrive {
                    port: remote,
                    slot: s2,
                },
            );
        }
        self.push(arrival, EvKind::Arrive { port: remote, slot });
    }
}
