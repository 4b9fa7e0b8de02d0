//! NodeInfo (IBA 14.2.5.3) and NodeDescription (IBA 14.2.5.2).

use super::SmpAttribute;
use crate::header::AttributeId;
use crate::wire::*;
use fabric::{Guid, NodeType};

/// NodeInfo, 40 bytes (libibmad fields.c `IB_NODE_*_F`; opensm `ib_node_info_t`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct NodeInfo {
    /// Byte 0: BaseVersion.
    pub base_version: u8,
    /// Byte 1: ClassVersion.
    pub class_version: u8,
    /// Byte 2: NodeType wire value (1 CA, 2 switch, 3 router); see [`NodeInfo::kind`].
    pub node_type: u8,
    /// Byte 3: NumPorts (physical ports).
    pub num_ports: u8,
    /// Bytes 4-11: SystemImageGUID.
    pub system_image_guid: Guid,
    /// Bytes 12-19: NodeGUID.
    pub node_guid: Guid,
    /// Bytes 20-27: PortGUID (of the port the SMP arrived on; switches: port 0).
    pub port_guid: Guid,
    /// Bytes 28-29: PartitionCap (P_KeyTable entries).
    pub partition_cap: u16,
    /// Bytes 30-31: DeviceID.
    pub device_id: u16,
    /// Bytes 32-35: Revision.
    pub revision: u32,
    /// Byte 36: LocalPortNum (port the SMP arrived on).
    pub local_port_num: u8,
    /// Bytes 37-39: VendorID (24 bits).
    pub vendor_id: u32,
}

impl NodeInfo {
    /// The node type, or `None` for a value the spec does not define.
    pub fn kind(&self) -> Option<NodeType> {
        NodeType::from_wire(self.node_type)
    }

    /// True for a switch.
    pub fn is_switch(&self) -> bool {
        self.node_type == NodeType::Switch.to_wire()
    }
}

impl SmpAttribute for NodeInfo {
    const ID: AttributeId = AttributeId::NODE_INFO;
    const LEN: usize = 40;
    const NAME: &'static str = "NodeInfo";

    fn decode(d: &[u8; 64]) -> NodeInfo {
        NodeInfo {
            base_version: d[0],
            class_version: d[1],
            node_type: d[2],
            num_ports: d[3],
            system_image_guid: Guid(get_u64(d, 4)),
            node_guid: Guid(get_u64(d, 12)),
            port_guid: Guid(get_u64(d, 20)),
            partition_cap: get_u16(d, 28),
            device_id: get_u16(d, 30),
            revision: get_u32(d, 32),
            local_port_num: d[36],
            vendor_id: get_u24(d, 37),
        }
    }

    fn encode(&self, d: &mut [u8; 64]) {
        d.fill(0);
        d[0] = self.base_version;
        d[1] = self.class_version;
        d[2] = self.node_type;
        d[3] = self.num_ports;
        put_u64(d, 4, self.system_image_guid.0);
        put_u64(d, 12, self.node_guid.0);
        put_u64(d, 20, self.port_guid.0);
        put_u16(d, 28, self.partition_cap);
        put_u16(d, 30, self.device_id);
        put_u32(d, 32, self.revision);
        d[36] = self.local_port_num;
        put_u24(d, 37, self.vendor_id);
    }
}

/// NodeDescription: 64 bytes of text, NUL padded (IBA 14.2.5.2).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct NodeDescription {
    /// The raw 64 bytes as on the wire.
    pub bytes: [u8; 64],
}

impl Default for NodeDescription {
    fn default() -> NodeDescription {
        NodeDescription { bytes: [0; 64] }
    }
}

impl NodeDescription {
    /// Builds a description from text, truncated to 64 bytes (at a character boundary)
    /// and NUL padded.
    pub fn from_text(s: &str) -> NodeDescription {
        let mut end = s.len().min(64);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        let mut bytes = [0u8; 64];
        bytes[..end].copy_from_slice(&s.as_bytes()[..end]);
        NodeDescription { bytes }
    }

    /// The text up to the first NUL, with invalid UTF-8 replaced.
    pub fn text(&self) -> String {
        let end = self.bytes.iter().position(|&b| b == 0).unwrap_or(64);
        String::from_utf8_lossy(&self.bytes[..end]).into_owned()
    }
}

impl SmpAttribute for NodeDescription {
    const ID: AttributeId = AttributeId::NODE_DESCRIPTION;
    const LEN: usize = 64;
    const NAME: &'static str = "NodeDescription";

    fn decode(d: &[u8; 64]) -> NodeDescription {
        NodeDescription { bytes: *d }
    }

    fn encode(&self, d: &mut [u8; 64]) {
        *d = self.bytes;
    }
}
