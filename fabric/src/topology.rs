//! The topology graph: nodes with numbered ports, and the links between ports.
//!
//! Nodes live in a `Vec` addressed by [`NodeId`]; each node keeps `num_ports + 1` port
//! slots so that `ports[n]` is port number `n` (slot 0 is a switch's management port
//! and is unused on a CA or router). A link is stored on both of its ends.

use crate::types::{Guid, NodeType, PortNum};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use thiserror::Error;

/// Index of a node inside one [`Topology`].
#[derive(
    Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default, Serialize, Deserialize,
)]
pub struct NodeId(pub u32);

impl NodeId {
    /// The index as a usize.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// One end of a link: a node and one of its port numbers.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
pub struct PortRef {
    /// The node.
    pub node: NodeId,
    /// The port number on that node.
    pub port: PortNum,
}

impl PortRef {
    /// Shorthand constructor.
    pub fn new(node: NodeId, port: u8) -> PortRef {
        PortRef {
            node,
            port: PortNum(port),
        }
    }
}

/// Active link width in lanes, as ibnetdiscover prints it (1x, 4x, 8x, 12x, 2x).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub enum LinkWidth {
    /// 1 lane.
    X1,
    /// 2 lanes.
    X2,
    /// 4 lanes (the default).
    X4,
    /// 8 lanes.
    X8,
    /// 12 lanes.
    X12,
}

impl LinkWidth {
    /// Number of lanes.
    pub fn lanes(self) -> u8 {
        match self {
            LinkWidth::X1 => 1,
            LinkWidth::X2 => 2,
            LinkWidth::X4 => 4,
            LinkWidth::X8 => 8,
            LinkWidth::X12 => 12,
        }
    }

    /// From a lane count.
    pub fn from_lanes(n: u8) -> Option<LinkWidth> {
        Some(match n {
            1 => LinkWidth::X1,
            2 => LinkWidth::X2,
            4 => LinkWidth::X4,
            8 => LinkWidth::X8,
            12 => LinkWidth::X12,
            _ => return None,
        })
    }

    /// PortInfo LinkWidthActive bit (1x=1, 4x=2, 8x=4, 12x=8, 2x=16).
    pub fn to_wire(self) -> u8 {
        match self {
            LinkWidth::X1 => 1,
            LinkWidth::X4 => 2,
            LinkWidth::X8 => 4,
            LinkWidth::X12 => 8,
            LinkWidth::X2 => 16,
        }
    }

    /// From a PortInfo LinkWidthActive bit.
    pub fn from_wire(v: u8) -> Option<LinkWidth> {
        Some(match v {
            1 => LinkWidth::X1,
            2 => LinkWidth::X4,
            4 => LinkWidth::X8,
            8 => LinkWidth::X12,
            16 => LinkWidth::X2,
            _ => return None,
        })
    }
}

/// Active link speed per lane, as ibnetdiscover prints it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub enum LinkSpeed {
    /// 2.5 Gb/s.
    Sdr,
    /// 5 Gb/s.
    Ddr,
    /// 10 Gb/s.
    Qdr,
    /// 14 Gb/s (extended speeds).
    Fdr,
    /// 25 Gb/s (extended speeds).
    Edr,
    /// 50 Gb/s (extended speeds).
    Hdr,
    /// 100 Gb/s (extended speeds).
    Ndr,
}

impl LinkSpeed {
    /// The name ibnetdiscover prints.
    pub fn name(self) -> &'static str {
        match self {
            LinkSpeed::Sdr => "SDR",
            LinkSpeed::Ddr => "DDR",
            LinkSpeed::Qdr => "QDR",
            LinkSpeed::Fdr => "FDR",
            LinkSpeed::Edr => "EDR",
            LinkSpeed::Hdr => "HDR",
            LinkSpeed::Ndr => "NDR",
        }
    }

    /// Parses the name ibnetdiscover prints.
    pub fn from_name(s: &str) -> Option<LinkSpeed> {
        Some(match s {
            "SDR" => LinkSpeed::Sdr,
            "DDR" => LinkSpeed::Ddr,
            "QDR" => LinkSpeed::Qdr,
            "FDR" => LinkSpeed::Fdr,
            "EDR" => LinkSpeed::Edr,
            "HDR" => LinkSpeed::Hdr,
            "NDR" => LinkSpeed::Ndr,
            _ => return None,
        })
    }
}

/// One port slot of a node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Port {
    /// Port GUID. A switch's ports all report the node's port-0 GUID; a CA port has its own.
    pub guid: Guid,
    /// The port at the other end of the link, if cabled.
    pub remote: Option<PortRef>,
    /// Link width of the cable on this port.
    pub width: LinkWidth,
    /// Link speed of the cable on this port.
    pub speed: LinkSpeed,
}

/// A node: switch, CA or router.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    /// Switch, CA or router.
    pub node_type: NodeType,
    /// NodeInfo.NodeGUID.
    pub node_guid: Guid,
    /// NodeInfo.SystemImageGUID.
    pub sys_image_guid: Guid,
    /// NodeInfo.VendorID (24 bits).
    pub vendor_id: u32,
    /// NodeInfo.DeviceID.
    pub device_id: u16,
    /// NodeDescription (at most 64 bytes on the wire).
    pub description: String,
    /// `num_ports + 1` slots; `ports[n]` is port number n.
    pub ports: Vec<Port>,
}

impl Node {
    /// NodeInfo.NumPorts: the number of physical ports (port 0 not counted).
    pub fn num_ports(&self) -> u8 {
        // Invariant: ports.len() is num_ports + 1 and num_ports <= 254 (checked in add_node).
        (self.ports.len() - 1) as u8
    }

    /// The port slot for a port number, if the node has that port.
    pub fn port(&self, port: PortNum) -> Option<&Port> {
        if self.node_type != NodeType::Switch && port.0 == 0 {
            return None;
        }
        self.ports.get(port.0 as usize)
    }

    /// True for switches.
    pub fn is_switch(&self) -> bool {
        self.node_type == NodeType::Switch
    }

    /// Physical port numbers that exist on this node (1..=num_ports).
    pub fn port_numbers(&self) -> impl Iterator<Item = PortNum> + '_ {
        (1..self.ports.len()).map(|p| PortNum(p as u8))
    }
}

/// Errors building or changing a topology.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum TopologyError {
    /// Two nodes with the same node GUID.
    #[error("duplicate node GUID {0}")]
    DuplicateGuid(Guid),
    /// A node must have 1..=254 ports.
    #[error("node {guid} has {ports} ports; a node has 1 to 254")]
    BadPortCount {
        /// The node GUID.
        guid: Guid,
        /// The port count asked for.
        ports: u16,
    },
    /// A port number the node does not have.
    #[error("node {guid} has no port {port}")]
    NoSuchPort {
        /// The node GUID.
        guid: Guid,
        /// The port number.
        port: u8,
    },
    /// The node id is not in this topology.
    #[error("no node with id {0}")]
    NoSuchNode(u32),
    /// A port that is already cabled to something else.
    #[error("port {port} of node {guid} is already linked")]
    PortInUse {
        /// The node GUID.
        guid: Guid,
        /// The port number.
        port: u8,
    },
    /// A port linked to itself.
    #[error("port {port} of node {guid} cannot be linked to itself")]
    SelfLink {
        /// The node GUID.
        guid: Guid,
        /// The port number.
        port: u8,
    },
}

/// A subnet's physical graph.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Topology {
    nodes: Vec<Node>,
    #[serde(skip)]
    by_guid: HashMap<Guid, NodeId>,
}

impl PartialEq for Topology {
    fn eq(&self, other: &Topology) -> bool {
        self.nodes == other.nodes
    }
}
impl Eq for Topology {}

impl Topology {
    /// An empty topology.
    pub fn new() -> Topology {
        Topology::default()
    }

    /// Adds a node with `num_ports` physical ports. Port GUIDs follow the convention ibsim
    /// uses: a switch's ports share the node GUID; CA/router port n has GUID node_guid + n.
    /// Links are added afterwards with [`Topology::connect`].
    pub fn add_node(
        &mut self,
        node_type: NodeType,
        num_ports: u16,
        node_guid: Guid,
        description: impl Into<String>,
    ) -> Result<NodeId, TopologyError> {
        if num_ports == 0 || num_ports > 254 {
            return Err(TopologyError::BadPortCount {
                guid: node_guid,
                ports: num_ports,
            });
        }
        if self.by_guid.contains_key(&node_guid) {
            return Err(TopologyError::DuplicateGuid(node_guid));
        }
        let id = NodeId(self.nodes.len() as u32);
        let ports = (0..=num_ports)
            .map(|n| Port {
                guid: match node_type {
                    NodeType::Switch => node_guid,
                    _ => Guid(node_guid.0.wrapping_add(n as u64)),
                },
                remote: None,
                width: LinkWidth::X4,
                speed: LinkSpeed::Sdr,
            })
            .collect();
        self.nodes.push(Node {
            node_type,
            node_guid,
            sys_image_guid: node_guid,
            vendor_id: 0,
            device_id: 0,
            description: description.into(),
            ports,
        });
        self.by_guid.insert(node_guid, id);
        Ok(id)
    }

    fn check_port(&self, p: PortRef) -> Result<(), TopologyError> {
        let node = self
            .nodes
            .get(p.node.index())
            .ok_or(TopologyError::NoSuchNode(p.node.0))?;
        if p.port.0 == 0 || p.port.0 as usize >= node.ports.len() {
            return Err(TopologyError::NoSuchPort {
                guid: node.node_guid,
                port: p.port.0,
            });
        }
        Ok(())
    }

    /// Cables two ports together. Both must exist and be free.
    pub fn connect(&mut self, a: PortRef, b: PortRef) -> Result<(), TopologyError> {
        self.check_port(a)?;
        self.check_port(b)?;
        if a == b {
            return Err(TopologyError::SelfLink {
                guid: self.nodes[a.node.index()].node_guid,
                port: a.port.0,
            });
        }
        for p in [a, b] {
            let node = &self.nodes[p.node.index()];
            if node.ports[p.port.0 as usize].remote.is_some() {
                return Err(TopologyError::PortInUse {
                    guid: node.node_guid,
                    port: p.port.0,
                });
            }
        }
        self.nodes[a.node.index()].ports[a.port.0 as usize].remote = Some(b);
        self.nodes[b.node.index()].ports[b.port.0 as usize].remote = Some(a);
        Ok(())
    }

    /// Sets the width and speed of the link on `p` (both ends when cabled).
    pub fn set_link_attrs(
        &mut self,
        p: PortRef,
        width: LinkWidth,
        speed: LinkSpeed,
    ) -> Result<(), TopologyError> {
        self.check_port(p)?;
        let remote = self.nodes[p.node.index()].ports[p.port.0 as usize].remote;
        for q in std::iter::once(p).chain(remote) {
            let port = &mut self.nodes[q.node.index()].ports[q.port.0 as usize];
            port.width = width;
            port.speed = speed;
        }
        Ok(())
    }

    /// Removes the link on `p`, returning the port it was cabled to.
    pub fn disconnect(&mut self, p: PortRef) -> Option<PortRef> {
        self.check_port(p).ok()?;
        let remote = self.nodes[p.node.index()].ports[p.port.0 as usize]
            .remote
            .take()?;
        self.nodes[remote.node.index()].ports[remote.port.0 as usize].remote = None;
        Some(remote)
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True when there are no nodes.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// A node by id. Panics on an id from another topology (a programming error).
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }

    /// A node by id, or None.
    pub fn get(&self, id: NodeId) -> Option<&Node> {
        self.nodes.get(id.index())
    }

    /// Mutable access to a node's descriptive fields (GUIDs are fixed once added).
    pub fn set_description(&mut self, id: NodeId, description: impl Into<String>) {
        if let Some(n) = self.nodes.get_mut(id.index()) {
            n.description = description.into();
        }
    }

    /// Sets the system image GUID, vendor and device ids of a node.
    pub fn set_identity(
        &mut self,
        id: NodeId,
        sys_image_guid: Guid,
        vendor_id: u32,
        device_id: u16,
    ) {
        if let Some(n) = self.nodes.get_mut(id.index()) {
            n.sys_image_guid = sys_image_guid;
            n.vendor_id = vendor_id & 0x00FF_FFFF;
            n.device_id = device_id;
        }
    }

    /// Overrides the GUID of one CA/router port (switch ports always share the node GUID).
    pub fn set_port_guid(&mut self, p: PortRef, guid: Guid) -> Result<(), TopologyError> {
        self.check_port(p)?;
        let node = &mut self.nodes[p.node.index()];
        if node.node_type != NodeType::Switch {
            node.ports[p.port.0 as usize].guid = guid;
        }
        Ok(())
    }

    /// All nodes with their ids, in id order.
    pub fn nodes(&self) -> impl Iterator<Item = (NodeId, &Node)> + '_ {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (NodeId(i as u32), n))
    }

    /// Switches with their ids, in id order.
    pub fn switches(&self) -> impl Iterator<Item = (NodeId, &Node)> + '_ {
        self.nodes()
            .filter(|(_, n)| n.node_type == NodeType::Switch)
    }

    /// Channel adapters with their ids, in id order.
    pub fn cas(&self) -> impl Iterator<Item = (NodeId, &Node)> + '_ {
        self.nodes().filter(|(_, n)| n.node_type == NodeType::Ca)
    }

    /// The node with this node GUID.
    pub fn node_by_guid(&self, guid: Guid) -> Option<NodeId> {
        self.by_guid.get(&guid).copied()
    }

    /// The port at the far end of the link on `p`.
    pub fn remote(&self, p: PortRef) -> Option<PortRef> {
        self.nodes
            .get(p.node.index())?
            .ports
            .get(p.port.0 as usize)?
            .remote
    }

    /// Every link once, as (lower end, higher end) ordered by (node id, port).
    pub fn links(&self) -> impl Iterator<Item = (PortRef, PortRef)> + '_ {
        self.nodes().flat_map(|(id, n)| {
            n.ports.iter().enumerate().filter_map(move |(pn, port)| {
                let here = PortRef::new(id, pn as u8);
                match port.remote {
                    Some(r) if here < r => Some((here, r)),
                    _ => None,
                }
            })
        })
    }

    /// Number of links.
    pub fn num_links(&self) -> usize {
        self.links().count()
    }

    /// Rebuilds the GUID index (needed after deserialising with serde).
    pub fn reindex(&mut self) -> Result<(), TopologyError> {
        self.by_guid.clear();
        for (i, n) in self.nodes.iter().enumerate() {
            if self.by_guid.insert(n.node_guid, NodeId(i as u32)).is_some() {
                return Err(TopologyError::DuplicateGuid(n.node_guid));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_and_link() {
        let mut t = Topology::new();
        let sw = t
            .add_node(NodeType::Switch, 8, Guid(0x200000), "sw")
            .unwrap();
        let ca = t.add_node(NodeType::Ca, 2, Guid(0x100000), "ca").unwrap();
        t.connect(PortRef::new(sw, 1), PortRef::new(ca, 1)).unwrap();
        assert_eq!(t.remote(PortRef::new(ca, 1)), Some(PortRef::new(sw, 1)));
        assert_eq!(t.node(ca).ports[1].guid, Guid(0x100001));
        assert_eq!(t.node(sw).ports[3].guid, Guid(0x200000));
        assert_eq!(t.num_links(), 1);
        assert_eq!(
            t.connect(PortRef::new(sw, 1), PortRef::new(ca, 2)),
            Err(TopologyError::PortInUse {
                guid: Guid(0x200000),
                port: 1
            })
        );
        assert!(t.connect(PortRef::new(sw, 9), PortRef::new(ca, 2)).is_err());
        assert!(t.add_node(NodeType::Ca, 1, Guid(0x100000), "dup").is_err());
        assert_eq!(t.disconnect(PortRef::new(sw, 1)), Some(PortRef::new(ca, 1)));
        assert_eq!(t.num_links(), 0);
    }
}
