//! The 24-byte common MAD header (IBA 13.4.2; libibmad fields.c `IB_MAD_*_F`; linux
//! `struct ib_mad_hdr`) and the constants that name its fields.

use crate::MadError;
use crate::wire::*;

/// Management class (byte 1 of every MAD).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct MgmtClass(pub u8);

impl MgmtClass {
    /// LID-routed subnet management (SMP), IBA 14.2.1.1.
    pub const SUBN_LID_ROUTED: MgmtClass = MgmtClass(0x01);
    /// Directed-route subnet management (SMP), IBA 14.2.1.2.
    pub const SUBN_DIRECTED_ROUTE: MgmtClass = MgmtClass(0x81);
    /// Subnet administration (SA), IBA 15.2.1.
    pub const SUBN_ADM: MgmtClass = MgmtClass(0x03);
    /// Performance management.
    pub const PERF_MGMT: MgmtClass = MgmtClass(0x04);
    /// Baseboard management.
    pub const BM: MgmtClass = MgmtClass(0x05);
    /// Device management.
    pub const DEV_MGMT: MgmtClass = MgmtClass(0x06);
    /// Communication management.
    pub const CM: MgmtClass = MgmtClass(0x07);
    /// SNMP tunnelling.
    pub const SNMP: MgmtClass = MgmtClass(0x08);
    /// Congestion control.
    pub const CONG_MGMT: MgmtClass = MgmtClass(0x21);

    /// True for the two SMP classes.
    pub fn is_smp(self) -> bool {
        self == Self::SUBN_LID_ROUTED || self == Self::SUBN_DIRECTED_ROUTE
    }
}

/// Method (byte 3; bit 7 is the R "response" bit).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct Method(pub u8);

impl Method {
    /// Get (request an attribute).
    pub const GET: Method = Method(0x01);
    /// Set (write an attribute).
    pub const SET: Method = Method(0x02);
    /// Send (datagram, no response).
    pub const SEND: Method = Method(0x03);
    /// Trap (unsolicited notice to the SM).
    pub const TRAP: Method = Method(0x05);
    /// Report (SA forwards a notice to a subscriber).
    pub const REPORT: Method = Method(0x06);
    /// TrapRepress (SM tells the SMA to stop repeating a trap).
    pub const TRAP_REPRESS: Method = Method(0x07);
    /// GetTable (SA).
    pub const GET_TABLE: Method = Method(0x12);
    /// GetTraceTable (SA).
    pub const GET_TRACE_TABLE: Method = Method(0x13);
    /// GetMulti (SA).
    pub const GET_MULTI: Method = Method(0x14);
    /// Delete (SA).
    pub const DELETE: Method = Method(0x15);
    /// Response to Get and Set.
    pub const GET_RESP: Method = Method(0x81);
    /// Response to Report.
    pub const REPORT_RESP: Method = Method(0x86);
    /// Response to GetTable.
    pub const GET_TABLE_RESP: Method = Method(0x92);
    /// Response to GetTraceTable.
    pub const GET_TRACE_TABLE_RESP: Method = Method(0x93);
    /// Response to GetMulti.
    pub const GET_MULTI_RESP: Method = Method(0x94);
    /// Response to Delete.
    pub const DELETE_RESP: Method = Method(0x95);

    /// The R bit.
    pub const RESPONSE_BIT: u8 = 0x80;

    /// True when the R bit is set.
    pub fn is_response(self) -> bool {
        self.0 & Self::RESPONSE_BIT != 0
    }

    /// The response method for a request method. Get and Set both answer with GetResp
    /// (IBA 13.4.5); a Trap is answered with TrapRepress (0x07, IBA 13.4.6.2); every other
    /// request answers with its own code plus the R bit.
    pub fn response(self) -> Method {
        match self {
            Method::GET | Method::SET => Method::GET_RESP,
            Method::TRAP => Method::TRAP_REPRESS,
            Method(m) => Method(m | Self::RESPONSE_BIT),
        }
    }
}

/// MAD status (bytes 4-5; IBA 13.4.7 Table 110). For directed-route SMPs only the low 15
/// bits are status; bit 15 is the D bit, kept separately in [`crate::Smp::direction`].
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct MadStatus(pub u16);

impl MadStatus {
    /// Success.
    pub const OK: MadStatus = MadStatus(0x0000);
    /// Bit 0: busy, the requester should retry later.
    pub const BUSY: MadStatus = MadStatus(0x0001);
    /// Bit 1: redirection required (ClassPortInfo holds where).
    pub const REDIRECT: MadStatus = MadStatus(0x0002);
    /// Code 1 in bits 4..2: bad base or class version.
    pub const BAD_VERSION: MadStatus = MadStatus(0x0004);
    /// Code 2: method not supported.
    pub const METHOD_UNSUPPORTED: MadStatus = MadStatus(0x0008);
    /// Code 3: method/attribute combination not supported.
    pub const METHOD_ATTR_UNSUPPORTED: MadStatus = MadStatus(0x000C);
    /// Code 7: one or more fields of the attribute or the modifier hold an invalid value.
    pub const INVALID_FIELD: MadStatus = MadStatus(0x001C);
    /// Mask of the class-independent code field (bits 4..2).
    pub const CODE_MASK: u16 = 0x001C;
    /// Mask of the class-specific part (bits 15..8).
    pub const CLASS_MASK: u16 = 0xFF00;

    /// True when no error code, busy or redirect bit is set.
    pub fn is_ok(self) -> bool {
        self.0 & 0x00FF == 0 && self.0 & Self::CLASS_MASK == 0
    }

    /// The 3-bit class-independent code (bits 4..2).
    pub fn code(self) -> u8 {
        ((self.0 & Self::CODE_MASK) >> 2) as u8
    }
}

/// Attribute identifier (bytes 16-17). Constants cover every SMP attribute the SM uses
/// (IBA 14.2.5, Table 145; linux ib_smi.h `IB_SMP_ATTR_*`) and the SA attributes (IBA 15.2.5,
/// Table 207) under `SA_`, and the PerfMgt attributes (IBA 16.1.2) under `PERF_`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct AttributeId(pub u16);

impl AttributeId {
    /// ClassPortInfo (every class).
    pub const CLASS_PORT_INFO: AttributeId = AttributeId(0x0001);
    /// Notice (traps).
    pub const NOTICE: AttributeId = AttributeId(0x0002);
    /// InformInfo (SA subscriptions).
    pub const INFORM_INFO: AttributeId = AttributeId(0x0003);
    /// NodeDescription.
    pub const NODE_DESCRIPTION: AttributeId = AttributeId(0x0010);
    /// NodeInfo.
    pub const NODE_INFO: AttributeId = AttributeId(0x0011);
    /// SwitchInfo.
    pub const SWITCH_INFO: AttributeId = AttributeId(0x0012);
    /// GUIDInfo.
    pub const GUID_INFO: AttributeId = AttributeId(0x0014);
    /// PortInfo.
    pub const PORT_INFO: AttributeId = AttributeId(0x0015);
    /// P_KeyTable.
    pub const P_KEY_TABLE: AttributeId = AttributeId(0x0016);
    /// SLtoVLMappingTable.
    pub const SL_TO_VL_TABLE: AttributeId = AttributeId(0x0017);
    /// VLArbitrationTable.
    pub const VL_ARBITRATION_TABLE: AttributeId = AttributeId(0x0018);
    /// LinearForwardingTable.
    pub const LINEAR_FORWARDING_TABLE: AttributeId = AttributeId(0x0019);
    /// RandomForwardingTable.
    pub const RANDOM_FORWARDING_TABLE: AttributeId = AttributeId(0x001A);
    /// MulticastForwardingTable.
    pub const MULTICAST_FORWARDING_TABLE: AttributeId = AttributeId(0x001B);
    /// LinkSpeedWidthPairsTable.
    pub const LINK_SPEED_WIDTH_PAIRS_TABLE: AttributeId = AttributeId(0x001C);
    /// VendorMADTable.
    pub const VENDOR_MAD_TABLE: AttributeId = AttributeId(0x001D);
    /// SMInfo.
    pub const SM_INFO: AttributeId = AttributeId(0x0020);
    /// VendorDiag.
    pub const VENDOR_DIAG: AttributeId = AttributeId(0x0030);
    /// LedInfo.
    pub const LED_INFO: AttributeId = AttributeId(0x0031);
    /// PortInfoExtended.
    pub const PORT_INFO_EXTENDED: AttributeId = AttributeId(0x0033);
    /// VirtualizationInfo (vendor range; NVIDIA OpenSM ib_types.h
    /// `IB_MAD_ATTR_VIRTUALIZATION_INFO`). Layouts: `attr::virt`.
    pub const VIRTUALIZATION_INFO: AttributeId = AttributeId(0xFFB0);
    /// VPortInfo (`IB_MAD_ATTR_VPORT_INFO`).
    pub const VPORT_INFO: AttributeId = AttributeId(0xFFB1);
    /// VNodeInfo (`IB_MAD_ATTR_VNODE_INFO`).
    pub const VNODE_INFO: AttributeId = AttributeId(0xFFB2);
    /// VPortState (`IB_MAD_ATTR_VPORT_STATE`).
    pub const VPORT_STATE: AttributeId = AttributeId(0xFFB3);
    /// VNodeDescription (`IB_MAD_ATTR_VNODE_DESC`).
    pub const VNODE_DESCRIPTION: AttributeId = AttributeId(0xFFB4);
    /// VPortGUIDInfo (`IB_MAD_ATTR_VPORT_GUID_INFO`).
    pub const VPORT_GUID_INFO: AttributeId = AttributeId(0xFFB5);
    /// VPortP_KeyTable (`IB_MAD_ATTR_V_PKEY_TABLE`).
    pub const VPORT_P_KEY_TABLE: AttributeId = AttributeId(0xFFB6);

    /// PerfMgt PortCounters (IBA 16.1.3.5; same value as SwitchInfo, other class).
    pub const PERF_PORT_COUNTERS: AttributeId = AttributeId(0x0012);
    /// PerfMgt PortCountersExtended (IBA 16.1.4.11; same value as VendorMADTable).
    pub const PERF_PORT_COUNTERS_EXTENDED: AttributeId = AttributeId(0x001D);

    /// SA NodeRecord.
    pub const SA_NODE_RECORD: AttributeId = AttributeId(0x0011);
    /// SA PortInfoRecord.
    pub const SA_PORT_INFO_RECORD: AttributeId = AttributeId(0x0012);
    /// SA SLtoVLMappingTableRecord.
    pub const SA_SL_TO_VL_RECORD: AttributeId = AttributeId(0x0013);
    /// SA SwitchInfoRecord.
    pub const SA_SWITCH_INFO_RECORD: AttributeId = AttributeId(0x0014);
    /// SA LinearForwardingTableRecord.
    pub const SA_LFT_RECORD: AttributeId = AttributeId(0x0015);
    /// SA RandomForwardingTableRecord.
    pub const SA_RFT_RECORD: AttributeId = AttributeId(0x0016);
    /// SA MulticastForwardingTableRecord.
    pub const SA_MFT_RECORD: AttributeId = AttributeId(0x0017);
    /// SA SMInfoRecord.
    pub const SA_SM_INFO_RECORD: AttributeId = AttributeId(0x0018);
    /// SA LinkRecord.
    pub const SA_LINK_RECORD: AttributeId = AttributeId(0x0020);
    /// SA GuidInfoRecord.
    pub const SA_GUID_INFO_RECORD: AttributeId = AttributeId(0x0030);
    /// SA ServiceRecord.
    pub const SA_SERVICE_RECORD: AttributeId = AttributeId(0x0031);
    /// SA P_KeyTableRecord.
    pub const SA_P_KEY_TABLE_RECORD: AttributeId = AttributeId(0x0033);
    /// SA PathRecord.
    pub const SA_PATH_RECORD: AttributeId = AttributeId(0x0035);
    /// SA VLArbitrationTableRecord.
    pub const SA_VL_ARBITRATION_RECORD: AttributeId = AttributeId(0x0036);
    /// SA MCMemberRecord.
    pub const SA_MC_MEMBER_RECORD: AttributeId = AttributeId(0x0038);
    /// SA TraceRecord.
    pub const SA_TRACE_RECORD: AttributeId = AttributeId(0x0039);
    /// SA MultiPathRecord.
    pub const SA_MULTI_PATH_RECORD: AttributeId = AttributeId(0x003A);
    /// SA ServiceAssociationRecord.
    pub const SA_SERVICE_ASSOCIATION_RECORD: AttributeId = AttributeId(0x003B);
    /// SA InformInfoRecord.
    pub const SA_INFORM_INFO_RECORD: AttributeId = AttributeId(0x00F3);
}

/// The 24-byte common MAD header, as it is on the wire (IBA 13.4.2 Figure 145):
///
/// | bytes | field |
/// |---|---|
/// | 0 | BaseVersion |
/// | 1 | MgmtClass |
/// | 2 | ClassVersion |
/// | 3 | R bit (7) + Method (6..0) |
/// | 4-5 | Status |
/// | 6-7 | ClassSpecific (directed-route SMP: byte 6 hop pointer, byte 7 hop count) |
/// | 8-15 | TransactionID |
/// | 16-17 | AttributeID |
/// | 18-19 | Reserved |
/// | 20-23 | AttributeModifier |
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct MadHeader {
    /// Byte 0: base version (1).
    pub base_version: u8,
    /// Byte 1: management class.
    pub mgmt_class: MgmtClass,
    /// Byte 2: class version (1 for SMP, 2 for SA).
    pub class_version: u8,
    /// Byte 3: method including the R bit.
    pub method: Method,
    /// Bytes 4-5: status, all 16 bits (for DR SMPs bit 15 is the D bit).
    pub status: u16,
    /// Bytes 6-7: class specific (DR SMP: hop pointer << 8 | hop count).
    pub class_specific: u16,
    /// Bytes 8-15: transaction id.
    pub tid: u64,
    /// Bytes 16-17: attribute id.
    pub attr_id: AttributeId,
    /// Bytes 18-19: reserved; kept so that decoding then encoding returns the same bytes.
    pub reserved: u16,
    /// Bytes 20-23: attribute modifier.
    pub attr_mod: u32,
}

impl MadHeader {
    /// Length on the wire.
    pub const LEN: usize = 24;
    /// MAD base version this crate speaks.
    pub const BASE_VERSION: u8 = 1;

    /// Decodes the first 24 bytes of `buf`.
    pub fn decode(buf: &[u8]) -> Result<MadHeader, MadError> {
        let b: &[u8; 24] = prefix(buf, "MAD header")?;
        Ok(MadHeader::decode_array(b))
    }

    /// Decodes a 24-byte array (every bit pattern is a valid header).
    pub fn decode_array(b: &[u8; 24]) -> MadHeader {
        MadHeader {
            base_version: b[0],
            mgmt_class: MgmtClass(b[1]),
            class_version: b[2],
            method: Method(b[3]),
            status: get_u16(b, 4),
            class_specific: get_u16(b, 6),
            tid: get_u64(b, 8),
            attr_id: AttributeId(get_u16(b, 16)),
            reserved: get_u16(b, 18),
            attr_mod: get_u32(b, 20),
        }
    }

    /// Encodes into a 24-byte array.
    pub fn encode_array(&self, b: &mut [u8; 24]) {
        b[0] = self.base_version;
        b[1] = self.mgmt_class.0;
        b[2] = self.class_version;
        b[3] = self.method.0;
        put_u16(b, 4, self.status);
        put_u16(b, 6, self.class_specific);
        put_u64(b, 8, self.tid);
        put_u16(b, 16, self.attr_id.0);
        put_u16(b, 18, self.reserved);
        put_u32(b, 20, self.attr_mod);
    }

    /// Encodes into the first 24 bytes of `buf`.
    pub fn encode(&self, buf: &mut [u8]) -> Result<(), MadError> {
        let got = buf.len();
        let b: &mut [u8; 24] =
            buf.get_mut(..24)
                .and_then(|p| p.try_into().ok())
                .ok_or(MadError::Truncated {
                    what: "MAD header output",
                    needed: 24,
                    got,
                })?;
        self.encode_array(b);
        Ok(())
    }
}

/// Reads the 24-byte header of a 256-byte MAD.
pub(crate) fn header_of(b: &[u8; 256]) -> MadHeader {
    MadHeader::decode_array(&get_arr::<256, 24>(b, 0))
}
