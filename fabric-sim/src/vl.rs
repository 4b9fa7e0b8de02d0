//! Virtual lanes for data packets: the VL a packet rides on each link, from its SL and the
//! SLtoVLMappingTable the SMA stores, and the two IBA drops (a data packet mapped to VL15,
//! a VL at or beyond the output port's OperationalVLs).
//!
//! * The table consulted is the output node's: on a switch the one for (input port,
//!   output port), attribute modifier `in << 8 | out` (a packet a switch originates
//!   enters by port 0); on a CA the sending port's table (modifier 0).
//! * A table the SM never wrote holds `SimConfig::sl2vl_reset` (ibsim's reset table by
//!   default), and an SMA Get reports the same.
//! * SMPs ride VL15 and never consult SLtoVL; they are not counted per VL.
//! * The VL check is made at the output port only: both ends of a link are expected to
//!   run the same OperationalVLs, and a mismatch shows up at whichever end sends.

use crate::SimFabric;
use crate::accounting::VlCounters;
use crate::deliver::{DropReason, WalkPath};
use crate::error::SimError;
use crate::state::NONE;
use fabric::{Guid, Lid, NodeId};
use mad::SlToVlTable;
use serde::{Deserialize, Serialize};

/// The management VL.
pub(crate) const VL15: u8 = 15;

/// Data VLs a PortInfo.OperationalVLs (or VLCap) code enables: 1 = VL0, 2 = VL0-1,
/// 3 = VL0-3, 4 = VL0-7, 5 = VL0-14; 0 and the reserved codes 6..=15 enable none.
pub fn data_vls(code: u8) -> u8 {
    match code {
        1 => 1,
        2 => 2,
        3 => 4,
        4 => 8,
        5 => 15,
        _ => 0,
    }
}

/// One link a data packet crosses, as [`SimFabric::vl_path`] reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VlHop {
    /// The sending node.
    pub node: NodeId,
    /// Its node GUID.
    pub node_guid: Guid,
    /// The output port.
    pub port: u8,
    /// The VL the packet rides on that link.
    pub vl: u8,
}

impl SimFabric {
    /// The SLtoVLMappingTable in force for a packet leaving by port index `egress` after
    /// entering its node by port `in_num` (ignored on a CA).
    pub(crate) fn sl2vl_table(&self, egress: u32, in_num: u8) -> SlToVlTable {
        let p = &self.st.ports[egress as usize];
        let n = &self.st.nodes[p.node as usize];
        let key = if n.sw != NONE {
            (n.port_base, SlToVlTable::modifier(in_num, p.num))
        } else {
            (egress, 0)
        };
        self.sl2vl
            .get(&key)
            .copied()
            .unwrap_or_else(|| self.sl2vl_reset_table())
    }

    /// The table a port holds until the SM writes it.
    pub(crate) fn sl2vl_reset_table(&self) -> SlToVlTable {
        let mut t = SlToVlTable {
            vl: self.cfg.sl2vl_reset,
        };
        for v in &mut t.vl {
            *v &= 0xF;
        }
        t
    }

    /// The VL of a data packet on SL `sl` leaving by `egress` (entered by `in_num`), or
    /// the drop: VL15, or a VL the output port does not run.
    pub(crate) fn egress_vl(&self, egress: u32, in_num: u8, sl: u8) -> Result<u8, DropReason> {
        let vl = self.sl2vl_table(egress, in_num).vl[usize::from(sl & 0xF)] & 0xF;
        let p = &self.st.ports[egress as usize];
        let (node, port) = (NodeId(p.node), p.num);
        if vl == VL15 {
            return Err(DropReason::SlToVl15 { node, port });
        }
        if vl >= data_vls(self.st.cold[egress as usize].info.operational_vls) {
            return Err(DropReason::VlNotOperational { node, port, vl });
        }
        Ok(vl)
    }

    /// Per-VL books of one data-packet walk: every link crossed counts at its output port,
    /// the destination counts the delivery on the VL of the last link, a VL drop counts
    /// at the port that dropped it.
    pub(crate) fn count_vls(
        &mut self,
        path: &WalkPath,
        result: &Result<(u32, u8), (DropReason, Option<u32>)>,
    ) {
        for &(port, vl) in path.hops() {
            self.count_vl_xmit(port, vl);
        }
        match result {
            Ok((_, hops)) if *hops > 0 => {
                if let Some(&(last, vl)) = path.hops().last() {
                    let ing = self.st.ports[last as usize].cable;
                    if ing != NONE {
                        self.count_vl_delivered(ing, vl);
                    }
                }
            }
            Err((r, _)) => self.count_vl_drop(r),
            _ => {}
        }
    }

    /// A data packet left by port index `port` on `vl`.
    pub(crate) fn count_vl_xmit(&mut self, port: u32, vl: u8) {
        let p = &self.st.ports[port as usize];
        let (node, num) = (p.node, p.num);
        self.acct.vl_entry(node, num, vl).xmit += 1;
    }

    /// A data packet reached its destination, port index `port`, on `vl`.
    pub(crate) fn count_vl_delivered(&mut self, port: u32, vl: u8) {
        let p = &self.st.ports[port as usize];
        let (node, num) = (p.node, p.num);
        self.acct.vl_entry(node, num, vl).delivered += 1;
    }

    /// Counts a drop when it is one of the VL drops (other reasons count elsewhere).
    pub(crate) fn count_vl_drop(&mut self, r: &DropReason) {
        match *r {
            DropReason::SlToVl15 { node, port } => {
                self.acct.counters.data_dropped_vl15 += 1;
                self.acct.vl_entry(node.0, port, VL15).dropped_vl15 += 1;
            }
            DropReason::VlNotOperational { node, port, vl } => {
                self.acct.counters.data_dropped_vl_not_operational += 1;
                let c: &mut VlCounters = self.acct.vl_entry(node.0, port, vl);
                c.dropped_not_operational += 1;
            }
            _ => {}
        }
    }

    /// The end port (CA port, or switch port 0) that owns `lid`; the lowest port index
    /// when several claim it.
    fn end_port_of_lid(&self, lid: Lid) -> Option<u32> {
        self.st.nodes.iter().find_map(|n| {
            if !n.present {
                return None;
            }
            let ports = if n.sw != NONE {
                n.port_base..=n.port_base
            } else {
                n.port_base + 1..=n.port_base + u32::from(n.num_ports)
            };
            ports.into_iter().find(|&p| self.st.owns_lid(p, lid))
        })
    }

    /// The VL a data packet from the end port with LID `src_lid` to `dst_lid` on service
    /// level `sl` rides on every link, in order: (sending node, output port, VL). Routed
    /// through the programmed LFTs with the link, port state and VL rules of
    /// [`SimFabric::deliver_sl`] but without P_Key checks; changes and counts nothing.
    /// Empty when the source port owns `dst_lid`.
    pub fn vl_path(&self, src_lid: Lid, dst_lid: Lid, sl: u8) -> Result<Vec<VlHop>, SimError> {
        if sl > 15 {
            return Err(SimError::BadSl(sl));
        }
        let src = self
            .end_port_of_lid(src_lid)
            .ok_or(SimError::NoSuchLid(src_lid))?;
        let mut path = WalkPath::new();
        self.trace_walk(src, dst_lid, None, Some(sl), &mut path)
            .map_err(|(r, _)| SimError::Dropped(r))?;
        Ok(path
            .hops()
            .iter()
            .map(|&(port, vl)| {
                let p = &self.st.ports[port as usize];
                VlHop {
                    node: NodeId(p.node),
                    node_guid: self.st.nodes[p.node as usize].node_guid,
                    port: p.num,
                    vl,
                }
            })
            .collect())
    }

    /// The SLtoVLMappingTable in force on `node` for packets entering by `in_port` and
    /// leaving by `out_port` (a CA: its port `out_port`'s table; `in_port` ignored), as
    /// the SMA stores it or the reset table.
    pub fn sl2vl(&self, node: NodeId, in_port: u8, out_port: u8) -> Result<SlToVlTable, SimError> {
        let n = self
            .st
            .nodes
            .get(node.index())
            .ok_or(SimError::NoSuchNode(node))?;
        let is_switch = n.sw != NONE;
        let bad = |port| SimError::BadPort { node, port };
        if out_port > n.num_ports || (!is_switch && out_port == 0) {
            return Err(bad(out_port));
        }
        if is_switch && in_port > n.num_ports {
            return Err(bad(in_port));
        }
        Ok(self.sl2vl_table(n.port_base + u32::from(out_port), in_port))
    }

    /// Forgets the SLtoVL and VLArbitration tables of a node's ports (power cycle).
    pub(crate) fn reset_vl_tables(&mut self, node: u32) {
        let n = &self.st.nodes[node as usize];
        let range = n.port_base..=n.port_base + u32::from(n.num_ports);
        self.sl2vl.retain(|(p, _), _| !range.contains(p));
        self.vlarb.retain(|(p, _), _| !range.contains(p));
    }
}
