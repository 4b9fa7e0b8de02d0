//! The multicast delivery check: a data packet sent by an end port to a multicast LID is
//! replicated by every switch to the ports its MulticastForwardingTable entry for the MLID
//! names (never back out of the port it came in on), with the same checks as unicast
//! ([`SimFabric::deliver`]): the sender's P_Key table must hold the key, every link on the
//! way must be up with both ends ACTIVE, switch partition enforcement applies at ingress and
//! egress, and a receiving port's P_KeyTable must match the key. Each copy rides the VL its
//! output port's SLtoVL table gives for the packet's SL ([`crate::vl`]), with the same VL
//! drops as unicast. A switch whose MulticastFDBTop is set (non-zero; 0xBFFF: no entry)
//! forwards nothing for MLIDs above it.

use crate::deliver::DropReason;
use crate::perf::{
    E_RCV_CONSTRAINT, E_RCV_ERRORS, E_SWITCH_RELAY, E_XMIT_CONSTRAINT, E_XMIT_DISCARDS,
};
use crate::sim::SimFabric;
use crate::state::NONE;
use fabric::{Guid, Lid, NodeId, PKey, PortState};
use std::collections::{BTreeMap, VecDeque};

/// First multicast LID.
const MLID_BASE: u16 = 0xC000;

/// Result of [`SimFabric::deliver_mcast`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct McastDelivery {
    /// Copies received per port GUID (a switch's GUID for its management port 0).
    pub received: BTreeMap<Guid, u32>,
    /// Copies dropped on the way, with the reason.
    pub dropped: Vec<DropReason>,
    /// Switches kept replicating past the bound (a forwarding loop): the walk was cut.
    pub looped: bool,
}

impl McastDelivery {
    /// Ports that received at least one copy.
    pub fn receivers(&self) -> impl Iterator<Item = Guid> + '_ {
        self.received.keys().copied()
    }

    /// True when every receiver got exactly one copy and nothing looped.
    pub fn exactly_once(&self) -> bool {
        !self.looped && self.received.values().all(|&n| n == 1)
    }
}

/// Switch enforcement compares the partition only (as for unicast).
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
    /// Which end ports receive a copy of a data packet that end port `src_port_guid` sends
    /// to multicast LID `mlid` with P_Key `pkey`, through the programmed MFTs. Counts
    /// P_Key violations where copies are dropped for their key.
    /// Sent on SL 0 ([`SimFabric::deliver_mcast_sl`]).
    pub fn deliver_mcast(&mut self, src_port_guid: Guid, mlid: Lid, pkey: PKey) -> McastDelivery {
        self.deliver_mcast_sl(src_port_guid, mlid, pkey, 0)
    }

    /// [`SimFabric::deliver_mcast`] on service level `sl` (low 4 bits): every copy rides
    /// the VL the SLtoVL table of its output port gives (input port, output port on a
    /// switch), with the VL15 and OperationalVLs drops of [`SimFabric::deliver_sl`].
    pub fn deliver_mcast_sl(
        &mut self,
        src_port_guid: Guid,
        mlid: Lid,
        pkey: PKey,
        sl: u8,
    ) -> McastDelivery {
        let sl = sl & 0xF;
        let mut out = McastDelivery::default();
        let Some(&src) = self.st.by_port_guid.get(&src_port_guid) else {
            out.dropped.push(DropReason::NoSuchSource);
            return out;
        };
        let sp = &self.st.ports[src as usize];
        if !self.st.nodes[sp.node as usize].present || sp.state != PortState::Active {
            out.dropped.push(DropReason::SourceNotActive);
            return out;
        }
        if !self.st.table_contains(src, pkey) {
            out.dropped.push(DropReason::SourcePKey);
            return out;
        }
        if mlid.0 < MLID_BASE || mlid.is_permissive() {
            return out;
        }
        // (switch port index the copy enters on) — a switch's own port 0 for a switch source.
        let mut q: VecDeque<u32> = VecDeque::new();
        let src_node = &self.st.nodes[sp.node as usize];
        if src_node.sw != NONE {
            q.push_back(src_node.port_base);
        } else if let Some((i, vl)) = self.mcast_cross(src, 0, sl, pkey, &mut out) {
            self.mcast_arrive(i, vl, pkey, &mut q, &mut out);
        }
        // Each switch port may take a copy in once per switch on a loop-free tree; more
        // than that many switch entries means the tables loop.
        let bound = self.st.switches.len().max(1) * 4;
        let mut entries = 0usize;
        while let Some(ing) = q.pop_front() {
            entries += 1;
            if entries > bound {
                out.looped = true;
                break;
            }
            let ip = &self.st.ports[ing as usize];
            let node = ip.node;
            let in_num = ip.num;
            let n = &self.st.nodes[node as usize];
            let (base, nports, sw) = (n.port_base, n.num_ports, n.sw);
            let s = &self.st.switches[sw as usize];
            if s.mft_top != 0 && mlid.0 > s.mft_top {
                continue;
            }
            let off = mlid.0 - MLID_BASE;
            let (block, entry) = (u32::from(off / 32), usize::from(off % 32));
            let mut ports: Vec<u8> = Vec::new();
            for pos in 0..=(nports / 16) {
                let key = (u32::from(pos) << 28) | block;
                let Some(t) = s.mft.get(&key) else { continue };
                let m = t.port_masks[entry];
                for b in 0..16u8 {
                    if m & (1 << b) != 0 {
                        let p = pos * 16 + b;
                        if p <= nports && p != in_num {
                            ports.push(p);
                        }
                    }
                }
            }
            for p in ports {
                let egress = base + u32::from(p);
                if p == 0 {
                    if self.st.table_matches(egress, pkey) {
                        *out.received
                            .entry(self.st.ports[egress as usize].guid)
                            .or_insert(0) += 1;
                    } else {
                        self.mcast_violation(egress);
                        out.dropped.push(DropReason::DestinationPKey {
                            node: NodeId(node),
                            port: 0,
                        });
                    }
                    continue;
                }
                if let Some((i, vl)) = self.mcast_cross(egress, in_num, sl, pkey, &mut out) {
                    self.mcast_arrive(i, vl, pkey, &mut q, &mut out);
                }
            }
        }
        out
    }

    fn mcast_violation(&mut self, port: u32) {
        let i = &mut self.st.cold[port as usize].info;
        i.p_key_violations = i.p_key_violations.saturating_add(1);
    }

    /// Sends a copy on `sl` out of `egress` (entered its node by `in_num`) across its
    /// link: the port index it arrives at and its VL, or None (the drop recorded).
    fn mcast_cross(
        &mut self,
        egress: u32,
        in_num: u8,
        sl: u8,
        key: PKey,
        out: &mut McastDelivery,
    ) -> Option<(u32, u8)> {
        let e = &self.st.ports[egress as usize];
        let (enode, enum_) = (NodeId(e.node), e.num);
        if !e.link_up || e.cable == NONE {
            self.perf.add_error(egress, E_XMIT_DISCARDS, 1);
            out.dropped.push(DropReason::LinkDown {
                node: enode,
                port: enum_,
            });
            return None;
        }
        if e.state != PortState::Active {
            self.perf.add_error(egress, E_XMIT_DISCARDS, 1);
            out.dropped.push(DropReason::NotActive {
                node: enode,
                port: enum_,
            });
            return None;
        }
        let e_switch = self.st.nodes[e.node as usize].sw != NONE;
        if e_switch
            && self.st.cold[egress as usize]
                .info
                .partition_enforcement_outbound
            && !switch_key_ok(self, egress, key)
        {
            self.mcast_violation(egress);
            self.perf.add_error(egress, E_XMIT_CONSTRAINT, 1);
            out.dropped.push(DropReason::SwitchOutbound {
                node: enode,
                port: enum_,
            });
            return None;
        }
        let vl = match self.egress_vl(egress, in_num, sl) {
            Ok(vl) => vl,
            Err(r) => {
                if e_switch {
                    let relay = self.st.pidx(enode.0, in_num);
                    self.perf.add_error(relay, E_SWITCH_RELAY, 1);
                }
                self.count_vl_drop(&r);
                out.dropped.push(r);
                return None;
            }
        };
        self.count_vl_xmit(egress, vl);
        let e = &self.st.ports[egress as usize];
        let ing = e.cable;
        let ip = &self.st.ports[ing as usize];
        let n = &self.st.nodes[ip.node as usize];
        let (inode, inum) = (NodeId(ip.node), ip.num);
        if !n.present || ip.state != PortState::Active {
            self.perf.add_error(egress, E_XMIT_DISCARDS, 1);
            out.dropped.push(if n.present {
                DropReason::NotActive {
                    node: inode,
                    port: inum,
                }
            } else {
                DropReason::NodeAbsent { node: inode }
            });
            return None;
        }
        self.count_mcast(egress, ing);
        if self.perf.any_error_rate() && self.perf.rcv_error(ing) {
            self.perf.add_error(ing, E_RCV_ERRORS, 1);
            out.dropped.push(DropReason::RcvError {
                node: inode,
                port: inum,
            });
            return None;
        }
        Some((ing, vl))
    }

    /// A copy arrived at port `ing`: a switch queues it for replication (after inbound
    /// enforcement), an end port receives it (after its P_Key check).
    fn mcast_arrive(
        &mut self,
        ing: u32,
        vl: u8,
        key: PKey,
        q: &mut VecDeque<u32>,
        out: &mut McastDelivery,
    ) {
        let ip = &self.st.ports[ing as usize];
        let (node, num) = (ip.node, ip.num);
        if self.st.nodes[node as usize].sw != NONE {
            if self.st.cold[ing as usize]
                .info
                .partition_enforcement_inbound
                && !switch_key_ok(self, ing, key)
            {
                self.mcast_violation(ing);
                self.perf.add_error(ing, E_RCV_CONSTRAINT, 1);
                out.dropped.push(DropReason::SwitchInbound {
                    node: NodeId(node),
                    port: num,
                });
                return;
            }
            q.push_back(ing);
        } else if self.st.table_matches(ing, key) {
            *out.received.entry(ip.guid).or_insert(0) += 1;
            self.count_vl_delivered(ing, vl);
        } else {
            self.mcast_violation(ing);
            out.dropped.push(DropReason::DestinationPKey {
                node: NodeId(node),
                port: num,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SimConfig;
    use fabric::{NodeType, PortRef, Topology};
    use mad::MulticastForwardingTable;

    /// Two switches joined by two parallel links (ports 1, 2), CAs a, b on switch 1 (ports
    /// 3, 4) and c on switch 2 (port 3); every cabled port ACTIVE.
    fn fabric() -> (SimFabric, [Guid; 3]) {
        let mut t = Topology::new();
        let s1 = t.add_node(NodeType::Switch, 8, Guid(0x100), "s1").unwrap();
        let s2 = t.add_node(NodeType::Switch, 8, Guid(0x200), "s2").unwrap();
        t.connect(PortRef::new(s1, 1), PortRef::new(s2, 1)).unwrap();
        t.connect(PortRef::new(s1, 2), PortRef::new(s2, 2)).unwrap();
        let mut cas = [Guid(0); 3];
        for (k, (sw, p)) in [(s1, 3), (s1, 4), (s2, 3)].into_iter().enumerate() {
            let g = Guid(0x1000 * (k as u64 + 1));
            let ca = t.add_node(NodeType::Ca, 1, g, "ca").unwrap();
            t.connect(PortRef::new(ca, 1), PortRef::new(sw, p)).unwrap();
            cas[k] = Guid(g.0 + 1);
        }
        let mut sim = SimFabric::new(&t, SimConfig::default()).unwrap();
        for p in &mut sim.st.ports {
            if p.cable != NONE {
                p.state = PortState::Active;
            }
        }
        (sim, cas)
    }

    fn program(sim: &mut SimFabric, sw: usize, mlid: u16, ports: &[u8]) {
        let off = mlid - MLID_BASE;
        let key = MulticastForwardingTable::modifier(0, off / 32);
        let t = sim.st.switches[sw].mft.entry(key).or_default();
        for &p in ports {
            t.port_masks[usize::from(off % 32)] |= 1 << p;
        }
    }

    #[test]
    fn a_tree_delivers_once_to_every_other_member() {
        let (mut sim, [a, b, c]) = fabric();
        program(&mut sim, 0, 0xC005, &[1, 3, 4]);
        program(&mut sim, 1, 0xC005, &[1, 3]);
        for (src, others) in [(a, [b, c]), (b, [a, c]), (c, [a, b])] {
            let d = sim.deliver_mcast(src, Lid(0xC005), PKey::DEFAULT_FULL);
            assert!(d.exactly_once() && d.dropped.is_empty(), "{d:?}");
            assert_eq!(d.receivers().collect::<Vec<_>>(), {
                let mut o = others.to_vec();
                o.sort();
                o
            });
        }
        // Every copy counts as multicast on both ends of the links it crossed: a sent one
        // and received b's and c's; s1 sent a's and b's towards s2 and received c's.
        let ext = |n: u32, p: u8| sim.port_counters_extended(NodeId(n), p).unwrap();
        let x = ext(2, 1);
        assert_eq!((x.multicast_xmit_pkts, x.multicast_rcv_pkts), (1, 2));
        assert_eq!((x.unicast_xmit_pkts, x.unicast_rcv_pkts), (0, 0));
        let x = ext(0, 1);
        assert_eq!((x.multicast_xmit_pkts, x.multicast_rcv_pkts), (2, 1));
        assert_eq!((x.xmit_pkts, x.rcv_pkts), (2, 1));
        // Another MLID of the same block reaches nobody.
        let d = sim.deliver_mcast(a, Lid(0xC006), PKey::DEFAULT_FULL);
        assert!(d.received.is_empty());
    }

    #[test]
    fn copies_ride_the_vl_of_their_output_port() {
        use mad::SlToVlTable;
        let (mut sim, [a, b, c]) = fabric();
        program(&mut sim, 0, 0xC002, &[1, 3, 4]);
        program(&mut sim, 1, 0xC002, &[1, 3]);
        // s2 (node 1) maps SL 4 from port 1 to port 3 onto VL15: c loses its copy; s1
        // maps it to VL 2 towards b (3 -> 4).
        let base1 = sim.st.nodes[1].port_base;
        let mut t = SlToVlTable::default();
        t.vl[4] = 15;
        sim.sl2vl.insert((base1, SlToVlTable::modifier(1, 3)), t);
        let base0 = sim.st.nodes[0].port_base;
        t.vl[4] = 2;
        sim.sl2vl.insert((base0, SlToVlTable::modifier(3, 4)), t);
        let d = sim.deliver_mcast_sl(a, Lid(0xC002), PKey::DEFAULT_FULL, 4);
        assert_eq!(d.receivers().collect::<Vec<_>>(), vec![b]);
        let s2 = NodeId(1);
        assert_eq!(d.dropped, vec![DropReason::SlToVl15 { node: s2, port: 3 }]);
        let acct = sim.accounting();
        let bn = NodeId(sim.st.ports[sim.st.by_port_guid[&b] as usize].node);
        assert_eq!(acct.vl_counters(NodeId(0), 4, 2).xmit, 1);
        assert_eq!(acct.vl_counters(bn, 1, 2).delivered, 1);
        assert_eq!(acct.vl_counters(s2, 3, 15).dropped_vl15, 1);
        // SL 0 still reaches both (the reset table: SL 0 -> VL 0).
        let d = sim.deliver_mcast(a, Lid(0xC002), PKey::DEFAULT_FULL);
        assert_eq!(d.receivers().count(), 2);
        let _ = c;
    }

    #[test]
    fn parallel_links_in_the_masks_loop_and_duplicate() {
        let (mut sim, [a, _, c]) = fabric();
        program(&mut sim, 0, 0xC000, &[1, 2, 3]);
        program(&mut sim, 1, 0xC000, &[1, 2, 3]);
        let d = sim.deliver_mcast(a, Lid(0xC000), PKey::DEFAULT_FULL);
        assert!(d.looped, "{d:?}");
        assert!(d.received[&c] > 1);
        assert!(!d.exactly_once());
    }

    #[test]
    fn p_keys_are_enforced_like_unicast() {
        let (mut sim, [a, b, c]) = fabric();
        program(&mut sim, 0, 0xC001, &[1, 3, 4]);
        program(&mut sim, 1, 0xC001, &[1, 3]);
        // b holds only partition 2: a copy with the default key is dropped there.
        let bi = sim.st.by_port_guid[&b];
        sim.st.cold[bi as usize].pkeys = vec![PKey(0x8002)];
        let d = sim.deliver_mcast(a, Lid(0xC001), PKey::DEFAULT_FULL);
        assert_eq!(d.receivers().collect::<Vec<_>>(), vec![c]);
        assert_eq!(d.dropped.len(), 1);
        assert!(sim.st.cold[bi as usize].info.p_key_violations > 0);
        // b cannot send with a key it does not hold.
        let d = sim.deliver_mcast(b, Lid(0xC001), PKey::DEFAULT_FULL);
        assert_eq!(d.dropped, vec![DropReason::SourcePKey]);
        assert!(d.received.is_empty());
    }
}
