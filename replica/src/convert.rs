//! Conversions between [`fabric::Topology`] and the compact replicated [`proto::state::Topology`].

use fabric::{
    Guid, LinkSpeed, LinkWidth, NodeId, NodeType, PortNum, PortRef, Topology, TopologyError,
};
use proto::state::{TopoLink, TopoNode, Topology as ProtoTopology};

const SPEEDS: [LinkSpeed; 7] = [
    LinkSpeed::Sdr,
    LinkSpeed::Ddr,
    LinkSpeed::Qdr,
    LinkSpeed::Fdr,
    LinkSpeed::Edr,
    LinkSpeed::Hdr,
    LinkSpeed::Ndr,
];

/// The compact replicated form of a topology (node order and link order kept).
pub fn topology_to_proto(t: &Topology) -> ProtoTopology {
    let nodes = t
        .nodes()
        .map(|(_, n)| {
            let switch = n.node_type == NodeType::Switch;
            TopoNode {
                node_guid: n.node_guid.0,
                sys_image_guid: n.sys_image_guid.0,
                node_type: u32::from(n.node_type.to_wire()),
                description: n.description.clone(),
                num_ports: u32::from(n.num_ports()),
                vendor_id: n.vendor_id,
                device_id: u32::from(n.device_id),
                port_guids: if switch {
                    Vec::new()
                } else {
                    n.ports.iter().skip(1).map(|p| p.guid.0).collect()
                },
                port0_guid: if switch { n.ports[0].guid.0 } else { 0 },
            }
        })
        .collect();
    let links = t
        .links()
        .map(|(a, b)| {
            let port = &t.node(a.node).ports[a.port.0 as usize];
            TopoLink {
                a_node: a.node.0,
                a_port: u32::from(a.port.0),
                b_node: b.node.0,
                b_port: u32::from(b.port.0),
                width: u32::from(port.width.lanes()),
                speed: SPEEDS.iter().position(|s| *s == port.speed).unwrap_or(0) as u32,
            }
        })
        .collect();
    ProtoTopology { nodes, links }
}

/// Errors turning a replicated topology back into a [`Topology`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConvertError {
    /// A node type that is not CA, switch or router.
    #[error("node {0}: unknown node type {1}")]
    NodeType(Guid, u32),
    /// A field out of range.
    #[error("node {0}: {1}")]
    Field(Guid, String),
    /// A link port number above 255.
    #[error("link names port {0}")]
    LinkPort(u32),
    /// The graph is inconsistent.
    #[error(transparent)]
    Topology(#[from] TopologyError),
}

/// Rebuilds a [`Topology`] from its replicated form. A switch's port-0 GUID is always its
/// node GUID in [`Topology`] (the convention it enforces); a different `port0_guid` is lost.
pub fn topology_from_proto(p: &ProtoTopology) -> Result<Topology, ConvertError> {
    let mut t = Topology::new();
    for n in &p.nodes {
        let guid = Guid(n.node_guid);
        let ty = u8::try_from(n.node_type)
            .ok()
            .and_then(NodeType::from_wire)
            .ok_or(ConvertError::NodeType(guid, n.node_type))?;
        let ports = u16::try_from(n.num_ports)
            .map_err(|_| ConvertError::Field(guid, format!("{} ports", n.num_ports)))?;
        let device = u16::try_from(n.device_id)
            .map_err(|_| ConvertError::Field(guid, format!("device id {}", n.device_id)))?;
        let id = t.add_node(ty, ports, guid, n.description.clone())?;
        t.set_identity(id, Guid(n.sys_image_guid), n.vendor_id, device);
        if ty != NodeType::Switch {
            for (i, g) in n.port_guids.iter().enumerate().take(usize::from(ports)) {
                t.set_port_guid(PortRef::new(id, i as u8 + 1), Guid(*g))?;
            }
        }
    }
    for l in &p.links {
        let pr = |node: u32, port: u32| -> Result<PortRef, ConvertError> {
            let port = u8::try_from(port).map_err(|_| ConvertError::LinkPort(port))?;
            Ok(PortRef {
                node: NodeId(node),
                port: PortNum(port),
            })
        };
        let a = pr(l.a_node, l.a_port)?;
        let b = pr(l.b_node, l.b_port)?;
        t.connect(a, b)?;
        let width = u8::try_from(l.width)
            .ok()
            .and_then(LinkWidth::from_lanes)
            .unwrap_or(LinkWidth::X4);
        let speed = SPEEDS
            .get(l.speed as usize)
            .copied()
            .unwrap_or(LinkSpeed::Sdr);
        t.set_link_attrs(a, width, speed)?;
    }
    Ok(t)
}
