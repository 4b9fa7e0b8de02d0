//! Directed-route forwarding (IBA 14.2.2, rules C14-9 for outbound and C14-13 for
//! returning SMPs) as a pure step function, shared by the simulator (every node's SMI) and
//! the SM (its own port's SMI).
//!
//! The model: an SMP reaches a node's SMI either from the wire on a port, or locally (the
//! node's SM originated a request, or its SMA built a response). [`dr_step`] applies the
//! rules, updates the hop pointer and ReturnPath in place, and says what happens next.
//!
//! Walk of a 3-hop route S -a-> N1 -b-> N2 -c-> N3 (arrival ports x1, x2, x3):
//!
//! | where | rule | hop pointer | effect |
//! |---|---|---|---|
//! | S, local | C14-9:1 | 0 → 1 | send out InitialPath\[1\] = a |
//! | N1, from x1 | C14-9:2 | 1 → 2 | ReturnPath\[1\] = x1, send out InitialPath\[2\] = b |
//! | N2, from x2 | C14-9:2 | 2 → 3 | ReturnPath\[2\] = x2, send out c |
//! | N3, from x3 | C14-9:3 | 3 → 4 | ReturnPath\[3\] = x3, deliver to the SMA |
//! | N3, local response (D=1) | C14-13:1 | 4 → 3 | send out ReturnPath\[3\] = x3 |
//! | N2, from c | C14-13:2 | 3 → 2 | send out ReturnPath\[2\] = x2 |
//! | N1, from b | C14-13:2 | 2 → 1 | send out ReturnPath\[1\] = x1 |
//! | S, from a | C14-13:3 | 1 → 0 | DrSLID permissive: deliver to the SM |
//!
//! Mixed mode (DrSLID and/or DrDLID not permissive): the SM sends the request as an
//! ordinary LID-routed packet (LRH DLID = the LID of the first node of the directed part;
//! the SM's own node does not apply [`dr_step`] to it, the LID is not in the SMP). That
//! node receives it from the wire with hop pointer 0 (C14-9:1) and starts the directed
//! part with InitialPath\[1\] = its own output port; the last
//! node of the directed part (a switch) LID-routes it to DrDLID (C14-9:3), where it arrives
//! with hop pointer = hop count + 1 (C14-9:4). The responder sends the response back
//! LID-routed to the request's LRH source (the last directed switch) with the hop pointer
//! left at hop count + 1; that switch applies C14-13:1 from the wire. At the first node
//! of the directed part, hop pointer 1 with DrSLID not permissive means LID-routing to
//! DrSLID (C14-13:3), where the SM's node receives it with hop pointer 0 (C14-13:4).
//!
//! Checked against the published behaviour of linux drivers/infiniband/core/smi.c
//! (`smi_handle_dr_smp_recv/send`), which cites the same rule numbers.
//! Our reading where that code and the rules leave room: forwarding out of a port (from
//! the wire) needs a switch; a locally generated SMP may leave by LID routing from any
//! node; an output port must be 1..=NumPorts.

use crate::Smp;
use fabric::{Lid, NodeType};

/// The receiving node as DR forwarding sees it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct DrNode {
    /// True for a switch (only switches forward; CAs and routers are end nodes here).
    pub is_switch: bool,
    /// Number of physical ports (NodeInfo.NumPorts).
    pub num_ports: u8,
}

impl DrNode {
    /// A switch with `num_ports` external ports.
    pub fn switch(num_ports: u8) -> DrNode {
        DrNode {
            is_switch: true,
            num_ports,
        }
    }

    /// A channel adapter (or router) with `num_ports` ports.
    pub fn ca(num_ports: u8) -> DrNode {
        DrNode {
            is_switch: false,
            num_ports,
        }
    }

    /// From a node type and port count.
    pub fn new(node_type: NodeType, num_ports: u8) -> DrNode {
        DrNode {
            is_switch: node_type == NodeType::Switch,
            num_ports,
        }
    }

    fn valid_port(self, p: u8) -> bool {
        p >= 1 && p <= self.num_ports
    }
}

/// Where the SMP comes from at this node.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum DrIngress {
    /// Generated here: a request from this node's SM, or a response from its SMA.
    Local,
    /// Received from the wire on this port.
    Port(u8),
}

/// What the node does with the SMP after [`dr_step`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum DrAction {
    /// Hand it to this node: the SMA when D=0 (a request at its target), the SM when D=1
    /// (a response back at its origin).
    Deliver,
    /// Send it out of this port as a directed hop (LRH DLID permissive).
    Forward(u8),
    /// Send it LID-routed towards this LID (DrDLID outbound, DrSLID returning) using the
    /// forwarding tables; the destination applies [`dr_step`] again on arrival.
    LidRoute(Lid),
    /// Mixed-mode responder (C14-13:1 with DrDLID not permissive): send the response
    /// LID-routed to the LRH source LID of the request, i.e. the last switch of the directed
    /// part, hop pointer unchanged.
    LidRouteToRequester,
    /// Discard it.
    Drop(DrDropReason),
}

/// Why an SMP was discarded.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum DrDropReason {
    /// Not a directed-route SMP (class 0x01).
    NotDirected,
    /// Hop count above 63.
    HopCountTooLarge,
    /// Hop pointer outside what the rules allow (C14-9:5, C14-13:5), or inconsistent with
    /// where the SMP came from.
    BadHopPointer,
    /// The path names port 0 or a port above NumPorts.
    BadPort(u8),
    /// A non-switch was asked to forward (C14-9:2, C14-13:2, C14-9:3/C14-13:3 LID part).
    NotASwitch,
}

fn out_port(node: DrNode, p: u8) -> DrAction {
    if node.valid_port(p) {
        DrAction::Forward(p)
    } else {
        DrAction::Drop(DrDropReason::BadPort(p))
    }
}

/// Applies IBA directed-route processing to `smp` at `node`, coming from `from`.
/// Updates `hop_pointer` and `return_path` in place and returns the next step.
pub fn dr_step(smp: &mut Smp, node: DrNode, from: DrIngress) -> DrAction {
    if !smp.is_directed() {
        return DrAction::Drop(DrDropReason::NotDirected);
    }
    if smp.hop_count > crate::smp::MAX_HOPS {
        return DrAction::Drop(DrDropReason::HopCountTooLarge);
    }
    if smp.direction {
        returning(smp, node, from)
    } else {
        outbound(smp, node, from)
    }
}

/// D = 0 (IBA 14.2.2.2, C14-9).
fn outbound(smp: &mut Smp, node: DrNode, from: DrIngress) -> DrAction {
    let hp = smp.hop_pointer;
    let hc = smp.hop_count;
    let idx = usize::from(hp);
    if hc != 0 && hp == 0 {
        // C14-9:1: start of the directed part. Either the SM's own node sends it, or, in
        // mixed mode (DrSLID not permissive), a switch received it LID-routed.
        let allowed = match from {
            DrIngress::Local => true,
            DrIngress::Port(_) => node.is_switch && !smp.dr_slid.is_permissive(),
        };
        if !allowed {
            return DrAction::Drop(if node.is_switch {
                DrDropReason::BadHopPointer
            } else {
                DrDropReason::NotASwitch
            });
        }
        smp.hop_pointer = 1;
        return out_port(node, smp.initial_path[1]);
    }
    if hp != 0 && hp < hc {
        // C14-9:2: intermediate hop, switches only. ReturnPath[hp] = arrival port,
        // increment, send out InitialPath[hp + 1].
        let DrIngress::Port(in_port) = from else {
            return DrAction::Drop(DrDropReason::BadHopPointer);
        };
        if !node.is_switch {
            return DrAction::Drop(DrDropReason::NotASwitch);
        }
        smp.return_path[idx] = in_port;
        smp.hop_pointer = hp + 1;
        return out_port(node, smp.initial_path[idx + 1]);
    }
    if hp == hc {
        // C14-9:3: end of the directed part. ReturnPath[hp] = arrival port (when there
        // was a hop), increment; DrDLID permissive: this is the target; otherwise a switch
        // LID-routes it to DrDLID.
        if let (true, DrIngress::Port(in_port)) = (hc != 0, from) {
            smp.return_path[idx] = in_port;
        }
        smp.hop_pointer = hp + 1;
        if smp.dr_dlid.is_permissive() {
            return DrAction::Deliver;
        }
        if node.is_switch || from == DrIngress::Local {
            return DrAction::LidRoute(smp.dr_dlid);
        }
        return DrAction::Drop(DrDropReason::NotASwitch);
    }
    if u16::from(hp) == u16::from(hc) + 1 {
        // C14-9:4: arrived LID-routed at DrDLID after the directed part: the target.
        return DrAction::Deliver;
    }
    // C14-9:5.
    DrAction::Drop(DrDropReason::BadHopPointer)
}

/// D = 1 (IBA 14.2.2.4, C14-13).
fn returning(smp: &mut Smp, node: DrNode, from: DrIngress) -> DrAction {
    let hp = smp.hop_pointer;
    let hc = smp.hop_count;
    if hc != 0 && u16::from(hp) == u16::from(hc) + 1 {
        // C14-13:1: the response starts its directed walk back. At a responder reached
        // by LID routing (DrDLID not permissive) it first goes LID-routed back to the last
        // directed switch, which applies this rule on arrival.
        match from {
            DrIngress::Local if !smp.dr_dlid.is_permissive() => {
                return DrAction::LidRouteToRequester;
            }
            DrIngress::Local => {}
            DrIngress::Port(_) => {
                if smp.dr_dlid.is_permissive() {
                    return DrAction::Drop(DrDropReason::BadHopPointer);
                }
                if !node.is_switch {
                    return DrAction::Drop(DrDropReason::NotASwitch);
                }
            }
        }
        smp.hop_pointer = hp - 1;
        return out_port(node, smp.return_path[usize::from(hp - 1)]);
    }
    if (2..=hc).contains(&hp) {
        // C14-13:2: intermediate hop, switches only: decrement, send out ReturnPath[hp].
        let DrIngress::Port(_) = from else {
            return DrAction::Drop(DrDropReason::BadHopPointer);
        };
        if !node.is_switch {
            return DrAction::Drop(DrDropReason::NotASwitch);
        }
        smp.hop_pointer = hp - 1;
        return out_port(node, smp.return_path[usize::from(hp - 1)]);
    }
    if hp == 1 {
        // C14-13:3: end of the directed part of the way back: decrement; DrSLID
        // permissive: this is the SM's node; otherwise a switch LID-routes it to DrSLID.
        smp.hop_pointer = 0;
        if smp.dr_slid.is_permissive() {
            return DrAction::Deliver;
        }
        if node.is_switch || from == DrIngress::Local {
            return DrAction::LidRoute(smp.dr_slid);
        }
        return DrAction::Drop(DrDropReason::NotASwitch);
    }
    if hp == 0 {
        // C14-13:4: arrived LID-routed at DrSLID: the SM's node.
        return match from {
            DrIngress::Port(_) => DrAction::Deliver,
            DrIngress::Local => DrAction::Drop(DrDropReason::BadHopPointer),
        };
    }
    // C14-13:5.
    DrAction::Drop(DrDropReason::BadHopPointer)
}
