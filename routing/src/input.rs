//! The routing input: LID assignments and the dense, index-based view of a topology that
//! every engine works on.

use crate::error::RoutingError;
use fabric::{Guid, Lid, NodeId, NodeType, PortRef, Topology};
use std::collections::BTreeMap;

/// Marker for "none" in dense u32 indices.
pub(crate) const NONE: u32 = u32::MAX;

/// The LIDs of one port: `2^lmc` consecutive LIDs starting at `base`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortLids {
    /// The base LID (aligned to `2^lmc`).
    pub base: Lid,
    /// LID mask control, 0..=7.
    pub lmc: u8,
}

impl PortLids {
    /// Number of LIDs the port owns.
    pub fn count(self) -> u32 {
        1u32 << self.lmc
    }
}

/// LIDs per port: a switch's LID sits on its port 0, an end port's on its port number.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LidAssignment {
    ports: BTreeMap<PortRef, PortLids>,
}

impl LidAssignment {
    /// An empty assignment.
    pub fn new() -> LidAssignment {
        LidAssignment::default()
    }

    /// Gives `port` the LIDs `base .. base + 2^lmc`. Checks the range is unicast and the base
    /// aligned; overlaps are checked when a [`RoutingInput`] is built.
    pub fn set(&mut self, port: PortRef, base: Lid, lmc: u8) -> Result<(), RoutingError> {
        let bad = |why: &str| RoutingError::BadLid {
            port,
            why: why.to_string(),
        };
        if lmc > 7 {
            return Err(bad("LMC above 7"));
        }
        let count = 1u32 << lmc;
        if !base.is_unicast() || base.0 as u32 + count - 1 > Lid::UNICAST_MAX.0 as u32 {
            return Err(bad("LIDs outside the unicast range"));
        }
        if base.0 as u32 & (count - 1) != 0 {
            return Err(bad("base LID not aligned to 2^LMC"));
        }
        self.ports.insert(port, PortLids { base, lmc });
        Ok(())
    }

    /// The LIDs of a port.
    pub fn get(&self, port: PortRef) -> Option<PortLids> {
        self.ports.get(&port).copied()
    }

    /// Every assigned port in (node, port) order.
    pub fn iter(&self) -> impl Iterator<Item = (PortRef, PortLids)> + '_ {
        self.ports.iter().map(|(p, l)| (*p, *l))
    }

    /// The highest LID assigned (0 when empty).
    pub fn max_lid(&self) -> u16 {
        self.ports
            .values()
            .map(|l| l.base.0 + (l.count() as u16 - 1))
            .max()
            .unwrap_or(0)
    }
}

/// A deterministic offline LID assignment, for tools and tests (the SM's LID manager builds
/// the real one): nodes in [`NodeId`] order starting at LID 1; a switch gets one LID on port
/// 0 (LMC 0); every cabled CA or router port gets `2^lmc` LIDs whose base is the next
/// multiple of `2^lmc`. Uncabled end ports get none.
pub fn assign_lids_sequential(topo: &Topology, lmc: u8) -> Result<LidAssignment, RoutingError> {
    let mut a = LidAssignment::new();
    let mut next: u32 = 1;
    let step = 1u32 << lmc.min(7);
    for (id, node) in topo.nodes() {
        if node.is_switch() {
            if next > Lid::UNICAST_MAX.0 as u32 {
                return Err(RoutingError::LidSpaceExhausted);
            }
            a.set(PortRef::new(id, 0), Lid(next as u16), 0)?;
            next += 1;
        } else {
            for pn in node.port_numbers() {
                if node.ports[pn.0 as usize].remote.is_none() {
                    continue;
                }
                next = next.div_ceil(step) * step;
                if next + step - 1 > Lid::UNICAST_MAX.0 as u32 {
                    return Err(RoutingError::LidSpaceExhausted);
                }
                a.set(PortRef::new(id, pn.0), Lid(next as u16), lmc)?;
                next += step;
            }
        }
    }
    Ok(a)
}

/// OpenSM's destination order; see [`RoutingInput::routing_order`].
fn routing_order(switches: &[SwitchInfo], end_ports: &[EndPort]) -> Vec<u16> {
    let n = switches.len();
    // End ports are grouped by switch, in port order: find each switch's range.
    let mut first = vec![end_ports.len(); n + 1];
    let mut count = vec![0usize; n];
    for (i, e) in end_ports.iter().enumerate().rev() {
        first[e.switch as usize] = i;
        count[e.switch as usize] += 1;
    }
    let mut by_load: Vec<usize> = (0..n).collect();
    // OpenSM keeps switches in a map keyed by the GUID in network byte order, compared as a
    // native integer: on the little-endian hosts it runs on, that is byte-swapped order.
    by_load.sort_by_key(|&s| (std::cmp::Reverse(count[s]), switches[s].guid.0.swap_bytes()));
    // (base LID, number of LIDs) per port, in order.
    let mut ports: Vec<(u16, u32)> = Vec::with_capacity(end_ports.len() + n);
    for &s in &by_load {
        for e in &end_ports[first[s]..first[s] + count[s]] {
            ports.push((e.lids.base.0, e.lids.count()));
        }
    }
    let mut sw_by_guid: Vec<usize> = (0..n).filter(|&s| switches[s].lid.0 != 0).collect();
    sw_by_guid.sort_by_key(|&s| switches[s].guid.0.swap_bytes());
    for s in sw_by_guid {
        ports.push((switches[s].lid.0, 1));
    }
    let max_count = ports.iter().map(|p| p.1).max().unwrap_or(1);
    let mut order = Vec::new();
    for k in 0..max_count {
        for &(base, c) in &ports {
            if k < c {
                order.push(base + k as u16);
            }
        }
    }
    order
}

/// A switch in the dense view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SwitchInfo {
    /// The node in the topology.
    pub node: NodeId,
    /// Node GUID.
    pub guid: Guid,
    /// The switch's LID (port 0), or `Lid(0)` when it has none.
    pub lid: Lid,
    /// Number of physical ports.
    pub num_ports: u8,
}

/// A CA or router port cabled to a switch: a routing destination.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndPort {
    /// The port in the topology.
    pub port: PortRef,
    /// Port GUID.
    pub guid: Guid,
    /// Its LIDs.
    pub lids: PortLids,
    /// Dense index of the switch it is cabled to.
    pub switch: u32,
    /// The switch port it is cabled to.
    pub switch_port: u8,
}

/// What a switch port is cabled to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    /// Nothing (or port 0).
    None,
    /// Another switch (dense index) and its port.
    Switch {
        /// Dense switch index.
        sw: u32,
        /// Remote port number.
        port: u8,
    },
    /// An end port (index into [`RoutingInput::end_ports`]).
    End(u32),
    /// A CA or router port that has no LID.
    Unaddressed,
}

/// Where a LID leads: the switch that delivers it and the port it leaves that switch on
/// (0 for the switch's own LID).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dest {
    /// Dense switch index, or u32::MAX when the LID is unused.
    pub switch: u32,
    /// Output port at that switch (0 = the switch itself).
    pub port: u8,
    /// End port index, or u32::MAX for a switch LID or an unused LID.
    pub end: u32,
}

impl Dest {
    const UNUSED: Dest = Dest {
        switch: NONE,
        port: 0,
        end: NONE,
    };

    /// True when some port owns this LID.
    pub fn is_used(&self) -> bool {
        self.switch != NONE
    }
}

/// The dense, index-based input every engine reads: switches `0..S` in node-id order,
/// their ports, the switch graph, end ports in (switch, port) order and a LID -> destination
/// table.
#[derive(Clone, Debug)]
pub struct RoutingInput {
    /// Switches in node-id order; their position is the dense switch index.
    pub switches: Vec<SwitchInfo>,
    /// End ports cabled to a switch, in (switch index, switch port) order.
    pub end_ports: Vec<EndPort>,
    /// `port_start[s]` is the offset of switch s's port 0 in `peers`; ports are contiguous.
    port_start: Vec<u32>,
    peers: Vec<Peer>,
    /// CSR of distinct neighbour switches (sorted), for breadth-first searches.
    nbr_start: Vec<u32>,
    nbrs: Vec<u32>,
    /// Indexed by LID, `0..=max_lid`.
    lid_dest: Vec<Dest>,
    /// Used LIDs in OpenSM's routing order (see [`RoutingInput::routing_order`]).
    dest_order: Vec<u16>,
    /// The SM's own port, when known. Carried for engines and callers that need it; the
    /// three engines here route every end port alike, the SM's included.
    pub sm_port: Option<PortRef>,
}

impl RoutingInput {
    /// Builds the dense view from a topology and its LID assignment. Ports in `lids` that do
    /// not exist are an error; switches without a LID are routed through but not to.
    pub fn new(
        topo: &Topology,
        lids: &LidAssignment,
        sm_port: Option<PortRef>,
    ) -> Result<RoutingInput, RoutingError> {
        let mut sw_index = vec![NONE; topo.len()];
        let mut switches = Vec::new();
        for (id, node) in topo.switches() {
            sw_index[id.index()] = switches.len() as u32;
            switches.push(SwitchInfo {
                node: id,
                guid: node.node_guid,
                lid: lids
                    .get(PortRef::new(id, 0))
                    .map(|l| l.base)
                    .unwrap_or(Lid(0)),
                num_ports: node.num_ports(),
            });
        }
        for (p, _) in lids.iter() {
            let ok = topo.get(p.node).is_some_and(|n| {
                (p.port.0 as usize) < n.ports.len() && (n.is_switch() || p.port.0 > 0)
            });
            if !ok {
                return Err(RoutingError::NoSuchPort(p));
            }
        }
        let mut port_start = Vec::with_capacity(switches.len() + 1);
        let mut peers = Vec::new();
        let mut end_ports = Vec::new();
        let mut nbr_start = Vec::with_capacity(switches.len() + 1);
        let mut nbrs = Vec::new();
        for (si, sw) in switches.iter().enumerate() {
            port_start.push(peers.len() as u32);
            nbr_start.push(nbrs.len() as u32);
            let node = topo.node(sw.node);
            let first_nbr = nbrs.len();
            for (pn, port) in node.ports.iter().enumerate() {
                let peer = match (pn, port.remote) {
                    (0, _) | (_, None) => Peer::None,
                    (_, Some(r)) => {
                        let rn = topo.node(r.node);
                        if rn.node_type == NodeType::Switch {
                            let rs = sw_index[r.node.index()];
                            nbrs.push(rs);
                            Peer::Switch {
                                sw: rs,
                                port: r.port.0,
                            }
                        } else if let Some(l) = lids.get(r) {
                            end_ports.push(EndPort {
                                port: r,
                                guid: rn.ports[r.port.0 as usize].guid,
                                lids: l,
                                switch: si as u32,
                                switch_port: pn as u8,
                            });
                            Peer::End(end_ports.len() as u32 - 1)
                        } else {
                            Peer::Unaddressed
                        }
                    }
                };
                peers.push(peer);
            }
            nbrs[first_nbr..].sort_unstable();
            let mut w = first_nbr;
            for r in first_nbr..nbrs.len() {
                if r == first_nbr || nbrs[r] != nbrs[w - 1] {
                    nbrs[w] = nbrs[r];
                    w += 1;
                }
            }
            nbrs.truncate(w);
        }
        port_start.push(peers.len() as u32);
        nbr_start.push(nbrs.len() as u32);

        let max_lid = lids.max_lid() as usize;
        let mut lid_dest = vec![Dest::UNUSED; max_lid + 1];
        let mut owner: Vec<Option<PortRef>> = vec![None; max_lid + 1];
        let mut claim = |lid: usize, d: Dest, p: PortRef| -> Result<(), RoutingError> {
            if let Some(a) = owner[lid] {
                return Err(RoutingError::LidConflict {
                    lid: Lid(lid as u16),
                    a,
                    b: p,
                });
            }
            owner[lid] = Some(p);
            lid_dest[lid] = d;
            Ok(())
        };
        for (si, sw) in switches.iter().enumerate() {
            if sw.lid.0 != 0 {
                let d = Dest {
                    switch: si as u32,
                    port: 0,
                    end: NONE,
                };
                // Enhanced switch port 0 may own 2^LMC LIDs; all lead to port 0.
                let count = lids
                    .get(PortRef::new(sw.node, 0))
                    .map_or(1, |l| l.count() as usize);
                for k in 0..count {
                    claim(sw.lid.0 as usize + k, d, PortRef::new(sw.node, 0))?;
                }
            }
        }
        for (ei, ep) in end_ports.iter().enumerate() {
            let d = Dest {
                switch: ep.switch,
                port: ep.switch_port,
                end: ei as u32,
            };
            for k in 0..ep.lids.count() {
                claim(ep.lids.base.0 as usize + k as usize, d, ep.port)?;
            }
        }
        // End ports with LIDs that are not cabled to a switch still own their LIDs.
        for (p, l) in lids.iter() {
            let n = topo.node(p.node);
            if n.is_switch() || owner.get(l.base.0 as usize) == Some(&Some(p)) {
                continue;
            }
            for k in 0..l.count() {
                let lid = l.base.0 as usize + k as usize;
                if let Some(a) = owner[lid] {
                    return Err(RoutingError::LidConflict {
                        lid: Lid(lid as u16),
                        a,
                        b: p,
                    });
                }
                owner[lid] = Some(p);
            }
        }
        let dest_order = routing_order(&switches, &end_ports);
        Ok(RoutingInput {
            switches,
            end_ports,
            port_start,
            peers,
            nbr_start,
            nbrs,
            lid_dest,
            dest_order,
            sm_port,
        })
    }

    /// The same fabric with its switches in node GUID order (end ports in the matching
    /// (switch, port) order): what an engine whose result must not depend on the order in
    /// which the switches were discovered routes on (a new master discovers from its own
    /// port). `None` when the switches are in GUID order already.
    pub fn by_guid(&self) -> Option<RoutingInput> {
        let n = self.switches.len();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&s| (self.switches[s].guid, s));
        if order.iter().enumerate().all(|(i, &s)| i == s) {
            return None;
        }
        let mut inv = vec![0u32; n];
        for (new, &old) in order.iter().enumerate() {
            inv[old] = new as u32;
        }
        let switches: Vec<SwitchInfo> = order.iter().map(|&o| self.switches[o].clone()).collect();
        let mut end_of = vec![NONE; self.end_ports.len()];
        let mut end_ports = Vec::with_capacity(self.end_ports.len());
        let mut port_start = Vec::with_capacity(n + 1);
        let mut peers = Vec::with_capacity(self.peers.len());
        let mut nbr_start = Vec::with_capacity(n + 1);
        let mut nbrs = Vec::with_capacity(self.nbrs.len());
        for (new, &old) in order.iter().enumerate() {
            port_start.push(peers.len() as u32);
            nbr_start.push(nbrs.len() as u32);
            for peer in self.ports(old) {
                peers.push(match *peer {
                    Peer::Switch { sw, port } => Peer::Switch {
                        sw: inv[sw as usize],
                        port,
                    },
                    Peer::End(e) => {
                        end_of[e as usize] = end_ports.len() as u32;
                        let mut ep = self.end_ports[e as usize].clone();
                        ep.switch = new as u32;
                        end_ports.push(ep);
                        Peer::End(end_of[e as usize])
                    }
                    other => other,
                });
            }
            let first = nbrs.len();
            nbrs.extend(self.neighbours(old).iter().map(|&m| inv[m as usize]));
            nbrs[first..].sort_unstable();
        }
        port_start.push(peers.len() as u32);
        nbr_start.push(nbrs.len() as u32);
        let lid_dest = self
            .lid_dest
            .iter()
            .map(|d| {
                if !d.is_used() {
                    return *d;
                }
                Dest {
                    switch: inv[d.switch as usize],
                    port: d.port,
                    end: if d.end == NONE {
                        NONE
                    } else {
                        end_of[d.end as usize]
                    },
                }
            })
            .collect();
        let dest_order = routing_order(&switches, &end_ports);
        Some(RoutingInput {
            switches,
            end_ports,
            port_start,
            peers,
            nbr_start,
            nbrs,
            lid_dest,
            dest_order,
            sm_port: self.sm_port,
        })
    }

    /// Number of switches.
    pub fn num_switches(&self) -> usize {
        self.switches.len()
    }

    /// The highest LID in use (0 when none); LFTs have `max_lid + 1` entries.
    pub fn max_lid(&self) -> u16 {
        (self.lid_dest.len() - 1) as u16
    }

    /// Every routed LID in the order engines route them, OpenSM's (3.3, no
    /// guid_routing_order_file): the end ports of each switch in port order, switches taken
    /// by decreasing number of end ports, then in OpenSM's switch-map order (GUIDs in network
    /// byte order compared as little-endian integers, i.e. byte-swapped); then the switches'
    /// own LIDs in that same map order.
    /// With LMC > 0 the list is walked once per LID offset: every port's base LID first,
    /// then every port's base + 1, and so on.
    pub fn routing_order(&self) -> &[u16] {
        &self.dest_order
    }

    /// Where a LID leads.
    pub fn dest(&self, lid: u16) -> Dest {
        self.lid_dest
            .get(lid as usize)
            .copied()
            .unwrap_or(Dest::UNUSED)
    }

    /// The LID -> destination table, indexed by LID.
    pub fn dests(&self) -> &[Dest] {
        &self.lid_dest
    }

    /// The peers of switch `s`, indexed by port number (slot 0 is the management port).
    pub fn ports(&self, s: usize) -> &[Peer] {
        &self.peers[self.port_start[s] as usize..self.port_start[s + 1] as usize]
    }

    /// Global channel index of (switch, port): unique over every switch port.
    pub fn channel(&self, s: usize, port: u8) -> usize {
        self.port_start[s] as usize + port as usize
    }

    /// Total number of switch port slots (channels), for per-channel arrays.
    pub fn num_channels(&self) -> usize {
        self.peers.len()
    }

    /// Distinct neighbour switches of `s`, sorted.
    pub fn neighbours(&self, s: usize) -> &[u32] {
        &self.nbrs[self.nbr_start[s] as usize..self.nbr_start[s + 1] as usize]
    }

    /// The largest port count of any switch.
    pub fn max_ports(&self) -> u8 {
        self.switches.iter().map(|s| s.num_ports).max().unwrap_or(0)
    }

    /// Dense index of the switch with this GUID (linear search; not for hot paths).
    pub fn switch_by_guid(&self, guid: Guid) -> Option<usize> {
        self.switches.iter().position(|s| s.guid == guid)
    }

    /// Number of end ports cabled to each switch.
    pub fn end_ports_per_switch(&self) -> Vec<u32> {
        let mut v = vec![0u32; self.switches.len()];
        for e in &self.end_ports {
            v[e.switch as usize] += 1;
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabric::{Guid, NodeType};

    fn tiny() -> (Topology, NodeId, NodeId, NodeId) {
        let mut t = Topology::new();
        let sw = t.add_node(NodeType::Switch, 4, Guid(0x100), "sw").unwrap();
        let a = t.add_node(NodeType::Ca, 2, Guid(0x200), "a").unwrap();
        let b = t.add_node(NodeType::Ca, 1, Guid(0x300), "b").unwrap();
        t.connect(PortRef::new(sw, 1), PortRef::new(a, 1)).unwrap();
        t.connect(PortRef::new(sw, 3), PortRef::new(b, 1)).unwrap();
        (t, sw, a, b)
    }

    #[test]
    fn sequential_lids_are_aligned_and_skip_uncabled_ports() {
        let (t, sw, a, b) = tiny();
        let l = assign_lids_sequential(&t, 2).unwrap();
        assert_eq!(
            l.get(PortRef::new(sw, 0)),
            Some(PortLids {
                base: Lid(1),
                lmc: 0
            })
        );
        assert_eq!(
            l.get(PortRef::new(a, 1)),
            Some(PortLids {
                base: Lid(4),
                lmc: 2
            })
        );
        assert_eq!(l.get(PortRef::new(a, 2)), None);
        assert_eq!(
            l.get(PortRef::new(b, 1)),
            Some(PortLids {
                base: Lid(8),
                lmc: 2
            })
        );
        assert_eq!(l.max_lid(), 11);
        let inp = RoutingInput::new(&t, &l, None).unwrap();
        assert_eq!(inp.max_lid(), 11);
        assert_eq!(inp.dest(1).port, 0);
        assert_eq!(inp.dest(5).port, 1);
        assert_eq!(inp.dest(11).port, 3);
        assert!(!inp.dest(2).is_used());
        assert!(!inp.dest(12).is_used());
        assert_eq!(inp.ports(0)[1], Peer::End(0));
        assert_eq!(inp.ports(0)[2], Peer::None);
    }

    #[test]
    fn bad_assignments_are_rejected() {
        let (t, sw, a, b) = tiny();
        let mut l = LidAssignment::new();
        assert!(l.set(PortRef::new(a, 1), Lid(6), 2).is_err(), "unaligned");
        assert!(l.set(PortRef::new(a, 1), Lid(0), 0).is_err(), "LID 0");
        assert!(
            l.set(PortRef::new(a, 1), Lid(0xBFFE), 2).is_err(),
            "past unicast"
        );
        assert!(l.set(PortRef::new(a, 1), Lid(8), 8).is_err(), "LMC 8");
        l.set(PortRef::new(sw, 0), Lid(1), 0).unwrap();
        l.set(PortRef::new(a, 1), Lid(4), 2).unwrap();
        l.set(PortRef::new(b, 1), Lid(5), 0).unwrap();
        assert!(matches!(
            RoutingInput::new(&t, &l, None),
            Err(RoutingError::LidConflict { lid: Lid(5), .. })
        ));
        let mut l = LidAssignment::new();
        l.set(PortRef::new(NodeId(9), 1), Lid(4), 0).unwrap();
        assert!(matches!(
            RoutingInput::new(&t, &l, None),
            Err(RoutingError::NoSuchPort(_))
        ));
    }
}
