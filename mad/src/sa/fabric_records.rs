//! SA records that wrap SMP attributes (IBA 15.2.5.2-15.2.5.11): NodeRecord, PortInfoRecord,
//! LinkRecord, SMInfoRecord, SwitchInfoRecord, LinearForwardingTableRecord and
//! P_KeyTableRecord. Layouts: opensm `ib_node_record_t`, `ib_portinfo_record_t`,
//! `ib_link_record_t`, `ib_sminfo_record_t`, `ib_switch_info_record_t`, `ib_lft_record_t`,
//! `ib_pkey_table_record_t`; ComponentMask bits: opensm `IB_NR_/IB_PIR_/IB_LR_/IB_SMIR_/
//! IB_SWIR_/IB_LFTR_/IB_PKEY_COMPMASK_*`.

use super::record::{CompField, SaRecord, cf};
use crate::attr::{
    LinearForwardingTable, NodeDescription, NodeInfo, PKeyTable, PortInfo, SmInfo, SmpAttribute,
    SwitchInfo,
};
use crate::header::AttributeId;
use crate::sa::SA_DATA_LEN;
use crate::wire::*;
use fabric::Lid;

/// Reads an SMP attribute embedded at byte `off` of a record.
pub(crate) fn extract<A: SmpAttribute>(b: &[u8; SA_DATA_LEN], off: usize) -> A {
    let mut d = [0u8; 64];
    let n = A::LEN.min(SA_DATA_LEN.saturating_sub(off));
    d[..n].copy_from_slice(&b[off..off + n]);
    A::decode(&d)
}

/// Writes an SMP attribute at byte `off` of a record (its [`SmpAttribute::LEN`] bytes).
pub(crate) fn embed<A: SmpAttribute>(b: &mut [u8; SA_DATA_LEN], off: usize, a: &A) {
    let d = a.to_data();
    let n = A::LEN.min(SA_DATA_LEN.saturating_sub(off));
    b[off..off + n].copy_from_slice(&d[..n]);
}

/// NodeRecord (attribute 0x0011), 108 bytes padded to 112: LID, NodeInfo, NodeDescription.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct NodeRecord {
    /// Bytes 0-1: LID (a switch's port 0 LID, a CA port's base LID).
    pub lid: Lid,
    /// Bytes 4-43: NodeInfo.
    pub node_info: NodeInfo,
    /// Bytes 44-107: NodeDescription.
    pub node_desc: NodeDescription,
}

const NODE_FIELDS: &[CompField] = &[
    cf(0, "LID", 0, 7, 16),
    cf(2, "BaseVersion", 4, 7, 8),
    cf(3, "ClassVersion", 5, 7, 8),
    cf(4, "NodeType", 6, 7, 8),
    cf(5, "NumPorts", 7, 7, 8),
    cf(6, "SystemImageGUID", 8, 7, 64),
    cf(7, "NodeGUID", 16, 7, 64),
    cf(8, "PortGUID", 24, 7, 64),
    cf(9, "PartitionCap", 32, 7, 16),
    cf(10, "DeviceID", 34, 7, 16),
    cf(11, "Revision", 36, 7, 32),
    cf(12, "LocalPortNum", 40, 7, 8),
    cf(13, "VendorID", 41, 7, 24),
    cf(14, "NodeDescription", 44, 7, 512),
];

impl SaRecord for NodeRecord {
    const ID: AttributeId = AttributeId::SA_NODE_RECORD;
    const LEN: usize = 112;
    const NAME: &'static str = "NodeRecord";
    const FIELDS: &'static [CompField] = NODE_FIELDS;

    fn decode_data(b: &[u8; SA_DATA_LEN]) -> NodeRecord {
        NodeRecord {
            lid: Lid(get_u16(b, 0)),
            node_info: extract(b, 4),
            node_desc: extract(b, 44),
        }
    }

    fn encode_data(&self, b: &mut [u8; SA_DATA_LEN]) {
        b.fill(0);
        put_u16(b, 0, self.lid.0);
        embed(b, 4, &self.node_info);
        embed(b, 44, &self.node_desc);
    }
}

/// PortInfoRecord (attribute 0x0012), 68 bytes padded to 72: EndportLID, PortNum, Options,
/// PortInfo.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct PortInfoRecord {
    /// Bytes 0-1: LID of the port (a switch's port 0 LID for its ports).
    pub lid: Lid,
    /// Byte 2: port number.
    pub port_num: u8,
    /// Byte 3: Options (IBA 1.3; opensm `options`).
    pub options: u8,
    /// Bytes 4-67: PortInfo.
    pub port_info: PortInfo,
}

const PORT_INFO_FIELDS: &[CompField] = &[
    cf(0, "EndportLID", 0, 7, 16),
    cf(1, "PortNum", 2, 7, 8),
    cf(2, "Options", 3, 7, 8),
    cf(3, "M_Key", 4, 7, 64),
    cf(4, "GidPrefix", 12, 7, 64),
    cf(5, "LID", 20, 7, 16),
    cf(6, "MasterSMLID", 22, 7, 16),
    cf(7, "CapabilityMask", 24, 7, 32),
    cf(8, "DiagCode", 28, 7, 16),
    cf(9, "M_KeyLeasePeriod", 30, 7, 16),
    cf(10, "LocalPortNum", 32, 7, 8),
    cf(11, "LinkWidthEnabled", 33, 7, 8),
    cf(12, "LinkWidthSupported", 34, 7, 8),
    cf(13, "LinkWidthActive", 35, 7, 8),
    cf(14, "LinkSpeedSupported", 36, 7, 4),
    cf(15, "PortState", 36, 3, 4),
    cf(16, "PortPhysicalState", 37, 7, 4),
    cf(17, "LinkDownDefaultState", 37, 3, 4),
    cf(18, "M_KeyProtectBits", 38, 7, 2),
    cf(20, "LMC", 38, 2, 3),
    cf(21, "LinkSpeedActive", 39, 7, 4),
    cf(22, "LinkSpeedEnabled", 39, 3, 4),
    cf(23, "NeighborMTU", 40, 7, 4),
    cf(24, "MasterSMSL", 40, 3, 4),
    cf(25, "VLCap", 41, 7, 4),
    cf(26, "InitType", 41, 3, 4),
    cf(27, "VLHighLimit", 42, 7, 8),
    cf(28, "VLArbitrationHighCap", 43, 7, 8),
    cf(29, "VLArbitrationLowCap", 44, 7, 8),
    cf(30, "InitTypeReply", 45, 7, 4),
    cf(31, "MTUCap", 45, 3, 4),
    cf(32, "VLStallCount", 46, 7, 3),
    cf(33, "HOQLife", 46, 4, 5),
    cf(34, "OperationalVLs", 47, 7, 4),
    cf(35, "PartitionEnforcementInbound", 47, 3, 1),
    cf(36, "PartitionEnforcementOutbound", 47, 2, 1),
    cf(37, "FilterRawInbound", 47, 1, 1),
    cf(38, "FilterRawOutbound", 47, 0, 1),
    cf(39, "M_KeyViolations", 48, 7, 16),
    cf(40, "P_KeyViolations", 50, 7, 16),
    cf(41, "Q_KeyViolations", 52, 7, 16),
    cf(42, "GUIDCap", 54, 7, 8),
    cf(43, "ClientReregister", 55, 7, 1),
    cf(45, "SubnetTimeOut", 55, 4, 5),
    cf(47, "RespTimeValue", 56, 4, 5),
    cf(48, "LocalPhyErrors", 57, 7, 4),
    cf(49, "OverrunErrors", 57, 3, 4),
    cf(50, "MaxCreditHint", 58, 7, 16),
    cf(52, "LinkRoundTripLatency", 61, 7, 24),
    cf(53, "CapabilityMask2", 64, 7, 16),
];

impl SaRecord for PortInfoRecord {
    const ID: AttributeId = AttributeId::SA_PORT_INFO_RECORD;
    const LEN: usize = 72;
    const NAME: &'static str = "PortInfoRecord";
    const FIELDS: &'static [CompField] = PORT_INFO_FIELDS;

    fn decode_data(b: &[u8; SA_DATA_LEN]) -> PortInfoRecord {
        PortInfoRecord {
            lid: Lid(get_u16(b, 0)),
            port_num: b[2],
            options: b[3],
            port_info: extract(b, 4),
        }
    }

    fn encode_data(&self, b: &mut [u8; SA_DATA_LEN]) {
        b.fill(0);
        put_u16(b, 0, self.lid.0);
        b[2] = self.port_num;
        b[3] = self.options;
        embed(b, 4, &self.port_info);
    }
}

/// LinkRecord (attribute 0x0020), 8 bytes: one direction of a physical link.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct LinkRecord {
    /// Bytes 0-1: FromLID.
    pub from_lid: Lid,
    /// Byte 2: FromPort.
    pub from_port: u8,
    /// Byte 3: ToPort.
    pub to_port: u8,
    /// Bytes 4-5: ToLID.
    pub to_lid: Lid,
}

const LINK_FIELDS: &[CompField] = &[
    cf(0, "FromLID", 0, 7, 16),
    cf(1, "FromPort", 2, 7, 8),
    cf(2, "ToPort", 3, 7, 8),
    cf(3, "ToLID", 4, 7, 16),
];

impl SaRecord for LinkRecord {
    const ID: AttributeId = AttributeId::SA_LINK_RECORD;
    const LEN: usize = 8;
    const NAME: &'static str = "LinkRecord";
    const FIELDS: &'static [CompField] = LINK_FIELDS;

    fn decode_data(b: &[u8; SA_DATA_LEN]) -> LinkRecord {
        LinkRecord {
            from_lid: Lid(get_u16(b, 0)),
            from_port: b[2],
            to_port: b[3],
            to_lid: Lid(get_u16(b, 4)),
        }
    }

    fn encode_data(&self, b: &mut [u8; SA_DATA_LEN]) {
        b.fill(0);
        put_u16(b, 0, self.from_lid.0);
        b[2] = self.from_port;
        b[3] = self.to_port;
        put_u16(b, 4, self.to_lid.0);
    }
}

/// SMInfoRecord (attribute 0x0018), 25 bytes padded to 32: LID and SMInfo.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct SmInfoRecord {
    /// Bytes 0-1: LID of the SM's port.
    pub lid: Lid,
    /// Bytes 4-24: SMInfo.
    pub sm_info: SmInfo,
}

const SM_INFO_FIELDS: &[CompField] = &[
    cf(0, "LID", 0, 7, 16),
    cf(2, "GUID", 4, 7, 64),
    cf(3, "SM_Key", 12, 7, 64),
    cf(4, "ActCount", 20, 7, 32),
    cf(5, "Priority", 24, 7, 4),
    cf(6, "SMState", 24, 3, 4),
];

impl SaRecord for SmInfoRecord {
    const ID: AttributeId = AttributeId::SA_SM_INFO_RECORD;
    const LEN: usize = 32;
    const NAME: &'static str = "SMInfoRecord";
    const FIELDS: &'static [CompField] = SM_INFO_FIELDS;

    fn decode_data(b: &[u8; SA_DATA_LEN]) -> SmInfoRecord {
        SmInfoRecord {
            lid: Lid(get_u16(b, 0)),
            sm_info: extract(b, 4),
        }
    }

    fn encode_data(&self, b: &mut [u8; SA_DATA_LEN]) {
        b.fill(0);
        put_u16(b, 0, self.lid.0);
        embed(b, 4, &self.sm_info);
    }
}

/// SwitchInfoRecord (attribute 0x0014), 24 bytes: LID and SwitchInfo.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct SwitchInfoRecord {
    /// Bytes 0-1: the switch's LID.
    pub lid: Lid,
    /// Bytes 4-23: SwitchInfo.
    pub switch_info: SwitchInfo,
}

const SWITCH_INFO_FIELDS: &[CompField] = &[cf(0, "LID", 0, 7, 16)];

impl SaRecord for SwitchInfoRecord {
    const ID: AttributeId = AttributeId::SA_SWITCH_INFO_RECORD;
    const LEN: usize = 24;
    const NAME: &'static str = "SwitchInfoRecord";
    const FIELDS: &'static [CompField] = SWITCH_INFO_FIELDS;

    fn decode_data(b: &[u8; SA_DATA_LEN]) -> SwitchInfoRecord {
        SwitchInfoRecord {
            lid: Lid(get_u16(b, 0)),
            switch_info: extract(b, 4),
        }
    }

    fn encode_data(&self, b: &mut [u8; SA_DATA_LEN]) {
        b.fill(0);
        put_u16(b, 0, self.lid.0);
        embed(b, 4, &self.switch_info);
    }
}

/// LinearForwardingTableRecord (attribute 0x0015), 72 bytes: LID, block, 64 entries.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct LftRecord {
    /// Bytes 0-1: the switch's LID.
    pub lid: Lid,
    /// Bytes 2-3: block number.
    pub block: u16,
    /// Bytes 8-71: the block.
    pub lft: LinearForwardingTable,
}

const LFT_FIELDS: &[CompField] = &[cf(0, "LID", 0, 7, 16), cf(1, "BlockNum", 2, 7, 16)];

impl SaRecord for LftRecord {
    const ID: AttributeId = AttributeId::SA_LFT_RECORD;
    const LEN: usize = 72;
    const NAME: &'static str = "LinearForwardingTableRecord";
    const FIELDS: &'static [CompField] = LFT_FIELDS;

    fn decode_data(b: &[u8; SA_DATA_LEN]) -> LftRecord {
        LftRecord {
            lid: Lid(get_u16(b, 0)),
            block: get_u16(b, 2),
            lft: extract(b, 8),
        }
    }

    fn encode_data(&self, b: &mut [u8; SA_DATA_LEN]) {
        b.fill(0);
        put_u16(b, 0, self.lid.0);
        put_u16(b, 2, self.block);
        embed(b, 8, &self.lft);
    }
}

/// P_KeyTableRecord (attribute 0x0033), 72 bytes: LID, block, port, 32 keys.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct PKeyTableRecord {
    /// Bytes 0-1: LID (a CA port's LID, a switch's port 0 LID).
    pub lid: Lid,
    /// Bytes 2-3: block number, carried little-endian as OpenSM writes it in its answers
    /// and saquery prints it (`block_num` in host order on x86), not big-endian as IBA
    /// 15.2.5.11 lays the field out (a big-endian 1 prints as block 256). OpenSM reads a
    /// request's BlockNum big-endian (saquery sends it so): the SA engine does the same.
    pub block: u16,
    /// Byte 4: port number (switches; reserved for CAs).
    pub port_num: u8,
    /// Bytes 8-71: the block.
    pub table: PKeyTable,
}

const PKEY_FIELDS: &[CompField] = &[
    cf(0, "LID", 0, 7, 16),
    cf(1, "BlockNum", 2, 7, 16),
    cf(2, "PortNum", 4, 7, 8),
];

impl SaRecord for PKeyTableRecord {
    const ID: AttributeId = AttributeId::SA_P_KEY_TABLE_RECORD;
    const LEN: usize = 72;
    const NAME: &'static str = "P_KeyTableRecord";
    const FIELDS: &'static [CompField] = PKEY_FIELDS;

    fn decode_data(b: &[u8; SA_DATA_LEN]) -> PKeyTableRecord {
        PKeyTableRecord {
            lid: Lid(get_u16(b, 0)),
            block: u16::from_le_bytes([b[2], b[3]]),
            port_num: b[4],
            table: extract(b, 8),
        }
    }

    fn encode_data(&self, b: &mut [u8; SA_DATA_LEN]) {
        b.fill(0);
        put_u16(b, 0, self.lid.0);
        b[2..4].copy_from_slice(&self.block.to_le_bytes());
        b[4] = self.port_num;
        embed(b, 8, &self.table);
    }
}
