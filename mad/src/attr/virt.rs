//! The IB virtualization attributes (vports of a virtualization-capable CA port):
//! VirtualizationInfo (0xFFB0), VPortInfo (0xFFB1), VNodeInfo (0xFFB2), VPortState (0xFFB3),
//! VNodeDescription (0xFFB4), VPortGUIDInfo (0xFFB5) and VPortP_KeyTable (0xFFB6).
//!
//! The specification text of these attributes was not available to us. The layouts below
//! are taken, field by field, from two public encodings by NVIDIA:
//!
//! - "adb": the ibis/ibdiagnet packet layouts generated from `packets.adb`
//!   (`ibis/packets/packets_layouts.h`, structs `SMP_VirtualizationInfo` and
//!   `SMP_VPortState`). An adb position `0x4.31` is bit 31 of the big-endian dword at byte 4,
//!   i.e. the most significant bit of byte 4.
//! - "ib_types.h": NVIDIA's OpenSM `include/iba/ib_types.h` (packed structs
//!   `ib_virtualization_info_t`, `ib_vport_info_t`, `ib_vnode_info_t`, `ib_vport_state_t`, the
//!   `IB_VPORT_INFO_*` / `IB_VIRTUALIZATION_INFO_*` shift macros and the `IB_MAD_ATTR_V*`
//!   attribute ids). Its field comments number bits from the most significant bit (IBA
//!   style: "bit 0" = 0x80); its macros give the same positions as shifts.
//!
//! Attribute modifiers: VPortState takes the block number (128 vports per block, ibis
//! `SMPVPortStateMadGetByLid(lid, block_num, ..)`); VPortInfo, VNodeInfo and
//! VNodeDescription take the vport index (ibis `..MadGetByLid(lid, vport_num, ..)`);
//! VPortGUIDInfo and VPortP_KeyTable take a vport index and a block (ibis
//! `SMPVPortGUIDInfoMadGetByDirect(dr, vport_num, block_num, ..)`,
//! `SMPVPortPKeyTblMadGetByLid(lid, vport_num, block_num, ..)`). The public headers name
//! those two parameters but not their bit positions; this crate puts the vport index in
//! bits 31..16 and the block in bits 15..0 ([`vport_block_modifier`]), the one layout that
//! holds a 16-bit VPortCap index and a 16-bit block.
//!
//! Reserved bits decode to nothing and encode as zero; every defined bit round-trips.

use super::{GuidInfo, NodeDescription, PKeyTable, SmpAttribute, bits, place};
use crate::header::AttributeId;
use crate::wire::*;
use fabric::{Guid, Lid, PKey, PortState};

/// The attribute modifier addressing `block` of vport `vport_index` (VPortGUIDInfo,
/// VPortP_KeyTable): vport index in bits 31..16, block in bits 15..0.
pub fn vport_block_modifier(vport_index: u16, block: u16) -> u32 {
    (u32::from(vport_index) << 16) | u32::from(block)
}

/// Splits a [`vport_block_modifier`] into (vport index, block).
pub fn split_vport_block_modifier(attr_mod: u32) -> (u16, u16) {
    ((attr_mod >> 16) as u16, (attr_mod & 0xFFFF) as u16)
}

/// The attribute modifier addressing vport `vport_index` (VPortInfo, VNodeInfo,
/// VNodeDescription): the index in bits 15..0, bits 31..16 zero.
pub fn vport_modifier(vport_index: u16) -> u32 {
    u32::from(vport_index)
}

/// VirtualizationInfo (0xFFB0), one per virtualization-capable CA port. adb
/// `SMP_VirtualizationInfo` (64 bytes); ib_types.h `ib_virtualization_info_t`. Modifier 0.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct VirtualizationInfo {
    /// Bytes 0-1: VPortCap, the highest vport index the port supports (adb `0x0.16-0x0.31`
    /// `vport_cap`; ib_types.h `vport_cap`). Read only.
    pub vport_cap: u16,
    /// Bytes 2-3: VPortIndexTop, the highest vport index with VPortInfo enabled (adb
    /// `0x0.0-0x0.15` `vport_index_top`; ib_types.h `vport_index_top`). Read only.
    pub vport_index_top: u16,
    /// Byte 4 bit 7: VirtualizationEnable (adb `0x4.31`; ib_types.h `virt_enable_rereg`
    /// shift 7). Clear: vport 0 is the physical port and tracks its PortState.
    pub virtualization_enable: bool,
    /// Byte 4 bit 6: VClientReregister, the SM asks clients on every vport to re-register
    /// their SA subscriptions (adb `0x4.30`; ib_types.h shift 6).
    pub vclient_reregister: bool,
    /// Byte 4 bit 5: VPortStateChange, set by the SMA when a vport changed state, cleared by
    /// the SM writing 1, as SwitchInfo's PortStateChange (adb `0x4.29`; ib_types.h shift 5).
    pub vport_state_change: bool,
    /// Byte 6: VirtualizationRevision of the SMA (adb `0x4.8-0x4.15`; ib_types.h
    /// `virt_revision`). Byte 5 is reserved (ib_types.h `resvd1`).
    pub virtualization_revision: u8,
    /// Byte 7: CapabilityMask, optional virtualization capabilities (adb `0x4.0-0x4.7`, all
    /// bits reserved so far; ib_types.h `cap_mask`).
    pub capability_mask: u8,
}

impl VirtualizationInfo {
    /// The modifier (always 0).
    pub const MODIFIER: u32 = 0;
}

impl SmpAttribute for VirtualizationInfo {
    const ID: AttributeId = AttributeId::VIRTUALIZATION_INFO;
    const LEN: usize = 64;
    const NAME: &'static str = "VirtualizationInfo";

    fn decode(d: &[u8; 64]) -> VirtualizationInfo {
        VirtualizationInfo {
            vport_cap: get_u16(d, 0),
            vport_index_top: get_u16(d, 2),
            virtualization_enable: bits(d[4], 7, 1) != 0,
            vclient_reregister: bits(d[4], 6, 1) != 0,
            vport_state_change: bits(d[4], 5, 1) != 0,
            virtualization_revision: d[6],
            capability_mask: d[7],
        }
    }

    fn encode(&self, d: &mut [u8; 64]) {
        d.fill(0);
        put_u16(d, 0, self.vport_cap);
        put_u16(d, 2, self.vport_index_top);
        d[4] = place(self.virtualization_enable as u8, 7, 1)
            | place(self.vclient_reregister as u8, 6, 1)
            | place(self.vport_state_change as u8, 5, 1);
        d[6] = self.virtualization_revision;
        d[7] = self.capability_mask;
    }
}

/// VPortInfo (0xFFB1) of one vport; modifier = vport index ([`vport_modifier`]).
/// ib_types.h `ib_vport_info_t` (packed, 64 bytes; bytes 28-63 reserved).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct VPortInfo {
    /// Byte 0 bits 7..4: VPortState (4 bits, PortState encoding; ib_types.h `state_rereg`,
    /// `IB_VPORT_INFO_STATE_MASK` 0xF0, shift 4). See [`VPortInfo::state`].
    pub vport_state: u8,
    /// Byte 0 bit 3: VClientReregister of this vport (ib_types.h
    /// `IB_VPORT_INFO_CLIENT_REREGISTER_SHIFT` 3).
    pub client_reregister: bool,
    /// Byte 0 bit 2: LIDRequired, the vport needs a LID of its own (ib_types.h
    /// `IB_VPORT_INFO_LID_REQUIRED_SHIFT` 2). Bits 1..0 are reserved. Read only.
    pub lid_required: bool,
    /// Byte 1: GUIDCap, entries of this vport's VPortGUIDInfo (ib_types.h `guid_cap`).
    pub guid_cap: u8,
    /// Bytes 2-3: CapabilityMask of the vport (ib_types.h `cap_mask`; bits `CAP_*`).
    pub capability_mask: u16,
    /// Bytes 4-5: P_KeyViolations counted at this vport (ib_types.h `p_key_violations`).
    pub p_key_violations: u16,
    /// Bytes 6-7: Q_KeyViolations counted at this vport (ib_types.h `q_key_violations`).
    pub q_key_violations: u16,
    /// Bytes 8-9: VPortLID, the LID the SM assigned to this vport when LIDRequired
    /// (ib_types.h `vport_lid`).
    pub vport_lid: Lid,
    /// Bytes 10-11: LIDByVPortIndex, the index of the vport whose LID this vport uses when
    /// it has none of its own (ib_types.h `lid_by_vport_index`).
    pub lid_by_vport_index: u16,
    /// Bytes 12-19: PortGUID of the vport itself (ib_types.h `port_guid`).
    pub port_guid: Guid,
    /// Bytes 20-27: PortProfile of the vport (ib_types.h `port_profile`).
    pub port_profile: u64,
}

impl VPortInfo {
    /// CapabilityMask bit 0: IsCommunicationManagementSupported (ib_types.h 0x0001).
    pub const CAP_IS_CM_SUPPORTED: u16 = 0x0001;
    /// CapabilityMask bit 1: IsSNMPTunnelingSupported (0x0002).
    pub const CAP_IS_SNMP_TUNNELING_SUPPORTED: u16 = 0x0002;
    /// CapabilityMask bit 2: IsDeviceManagementSupported (0x0004).
    pub const CAP_IS_DEVICE_MANAGEMENT_SUPPORTED: u16 = 0x0004;
    /// CapabilityMask bit 3: IsVendorClassSupported (0x0008).
    pub const CAP_IS_VENDOR_CLASS_SUPPORTED: u16 = 0x0008;
    /// CapabilityMask bit 4: IsBootManagementSupported (0x0010).
    pub const CAP_IS_BOOT_MANAGEMENT_SUPPORTED: u16 = 0x0010;
    /// CapabilityMask bit 5: IsSM (0x0020).
    pub const CAP_IS_SM: u16 = 0x0020;
    /// CapabilityMask bit 6: IsSMDisabled (0x0040).
    pub const CAP_IS_SM_DISABLED: u16 = 0x0040;

    /// The modifier addressing vport `vport_index`.
    pub fn modifier(vport_index: u16) -> u32 {
        vport_modifier(vport_index)
    }

    /// The vport index a modifier addresses (bits 15..0).
    pub fn split_modifier(attr_mod: u32) -> u16 {
        (attr_mod & 0xFFFF) as u16
    }

    /// VPortState as a typed value (`None` for 5..=15).
    pub fn state(&self) -> Option<PortState> {
        PortState::from_wire(self.vport_state)
    }

    /// Sets VPortState.
    pub fn set_state(&mut self, s: PortState) {
        self.vport_state = s.to_wire();
    }
}

impl SmpAttribute for VPortInfo {
    const ID: AttributeId = AttributeId::VPORT_INFO;
    const LEN: usize = 64;
    const NAME: &'static str = "VPortInfo";

    fn decode(d: &[u8; 64]) -> VPortInfo {
        VPortInfo {
            vport_state: bits(d[0], 7, 4),
            client_reregister: bits(d[0], 3, 1) != 0,
            lid_required: bits(d[0], 2, 1) != 0,
            guid_cap: d[1],
            capability_mask: get_u16(d, 2),
            p_key_violations: get_u16(d, 4),
            q_key_violations: get_u16(d, 6),
            vport_lid: Lid(get_u16(d, 8)),
            lid_by_vport_index: get_u16(d, 10),
            port_guid: Guid(get_u64(d, 12)),
            port_profile: get_u64(d, 20),
        }
    }

    fn encode(&self, d: &mut [u8; 64]) {
        d.fill(0);
        d[0] = place(self.vport_state, 7, 4)
            | place(self.client_reregister as u8, 3, 1)
            | place(self.lid_required as u8, 2, 1);
        d[1] = self.guid_cap;
        put_u16(d, 2, self.capability_mask);
        put_u16(d, 4, self.p_key_violations);
        put_u16(d, 6, self.q_key_violations);
        put_u16(d, 8, self.vport_lid.0);
        put_u16(d, 10, self.lid_by_vport_index);
        put_u64(d, 12, self.port_guid.0);
        put_u64(d, 20, self.port_profile);
    }
}

/// VNodeInfo (0xFFB2) of the virtual node a vport belongs to; modifier = vport index.
/// ib_types.h `ib_vnode_info_t` (packed, 64 bytes; bytes 12-63 reserved).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct VNodeInfo {
    /// Bytes 0-1: PartitionCap, P_Key table entries of the vnode (ib_types.h
    /// `partition_cap`).
    pub partition_cap: u16,
    /// Byte 2: LocalPortNum, the vnode port that received the SMP (`local_port_num`).
    pub local_port_num: u8,
    /// Byte 3: NumPorts, vports on this vnode (`num_ports`).
    pub num_ports: u8,
    /// Bytes 4-11: VNodeGUID (`vnode_guid`).
    pub vnode_guid: Guid,
}

impl VNodeInfo {
    /// The modifier addressing the vnode of vport `vport_index`.
    pub fn modifier(vport_index: u16) -> u32 {
        vport_modifier(vport_index)
    }
}

impl SmpAttribute for VNodeInfo {
    const ID: AttributeId = AttributeId::VNODE_INFO;
    const LEN: usize = 64;
    const NAME: &'static str = "VNodeInfo";

    fn decode(d: &[u8; 64]) -> VNodeInfo {
        VNodeInfo {
            partition_cap: get_u16(d, 0),
            local_port_num: d[2],
            num_ports: d[3],
            vnode_guid: Guid(get_u64(d, 4)),
        }
    }

    fn encode(&self, d: &mut [u8; 64]) {
        d.fill(0);
        put_u16(d, 0, self.partition_cap);
        d[2] = self.local_port_num;
        d[3] = self.num_ports;
        put_u64(d, 4, self.vnode_guid.0);
    }
}

/// VPortState (0xFFB3): the state of 128 vports, 4 bits each, vport `128*block + 2k` in the
/// high nibble of byte k and `128*block + 2k + 1` in its low nibble (adb `SMP_VPortState`
/// `vport_state[128]` at `0x0.28`; ib_types.h `ib_vport_state_t`, even state shift 4).
/// Modifier = block ([`VPortState::modifier`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct VPortState {
    /// PortState wire value of each vport of the block (low 4 bits used).
    pub states: [u8; 128],
}

impl Default for VPortState {
    fn default() -> VPortState {
        VPortState { states: [0; 128] }
    }
}

impl VPortState {
    /// Vports per block.
    pub const ENTRIES: usize = 128;

    /// The modifier addressing `block` (vports 128*block ..).
    pub fn modifier(block: u16) -> u32 {
        u32::from(block)
    }

    /// The block number a modifier addresses.
    pub fn split_modifier(attr_mod: u32) -> u16 {
        (attr_mod & 0xFFFF) as u16
    }

    /// The block holding vport `vport_index` and its entry in that block.
    pub fn locate(vport_index: u16) -> (u16, usize) {
        (
            vport_index / Self::ENTRIES as u16,
            usize::from(vport_index) % Self::ENTRIES,
        )
    }

    /// The typed state of entry `i` (`None` for an undefined value or `i >= 128`).
    pub fn state(&self, i: usize) -> Option<PortState> {
        self.states.get(i).and_then(|&s| PortState::from_wire(s))
    }
}

impl SmpAttribute for VPortState {
    const ID: AttributeId = AttributeId::VPORT_STATE;
    const LEN: usize = 64;
    const NAME: &'static str = "VPortState";

    fn decode(d: &[u8; 64]) -> VPortState {
        let mut states = [0u8; 128];
        for (pair, &byte) in states.chunks_exact_mut(2).zip(d.iter()) {
            pair[0] = bits(byte, 7, 4);
            pair[1] = bits(byte, 3, 4);
        }
        VPortState { states }
    }

    fn encode(&self, d: &mut [u8; 64]) {
        for (byte, pair) in d.iter_mut().zip(self.states.chunks_exact(2)) {
            *byte = place(pair[0], 7, 4) | place(pair[1], 3, 4);
        }
    }
}

/// VNodeDescription (0xFFB4): the NodeDescription text of a vport's vnode, 64 bytes as
/// NodeDescription (ibis reads it into `SMP_NodeDesc`); modifier = vport index.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct VNodeDescription {
    /// The description, in NodeDescription's format.
    pub desc: NodeDescription,
}

impl VNodeDescription {
    /// The modifier addressing the vnode of vport `vport_index`.
    pub fn modifier(vport_index: u16) -> u32 {
        vport_modifier(vport_index)
    }
}

impl SmpAttribute for VNodeDescription {
    const ID: AttributeId = AttributeId::VNODE_DESCRIPTION;
    const LEN: usize = 64;
    const NAME: &'static str = "VNodeDescription";

    fn decode(d: &[u8; 64]) -> VNodeDescription {
        VNodeDescription {
            desc: NodeDescription::decode(d),
        }
    }

    fn encode(&self, d: &mut [u8; 64]) {
        self.desc.encode(d);
    }
}

/// One 8-entry block of a vport's GUID table (0xFFB5), the payload of GUIDInfo;
/// modifier = [`vport_block_modifier`]. Entry 0 of block 0 is the vport's own GUID.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct VPortGuidInfo {
    /// The 8 GUIDs, entry i at index 8*block + i.
    pub guids: [Guid; 8],
}

impl VPortGuidInfo {
    /// Entries per block.
    pub const ENTRIES: usize = 8;

    /// The modifier addressing `block` of vport `vport_index`.
    pub fn modifier(vport_index: u16, block: u16) -> u32 {
        vport_block_modifier(vport_index, block)
    }

    /// Splits a modifier into (vport index, block).
    pub fn split_modifier(attr_mod: u32) -> (u16, u16) {
        split_vport_block_modifier(attr_mod)
    }
}

impl SmpAttribute for VPortGuidInfo {
    const ID: AttributeId = AttributeId::VPORT_GUID_INFO;
    const LEN: usize = 64;
    const NAME: &'static str = "VPortGUIDInfo";

    fn decode(d: &[u8; 64]) -> VPortGuidInfo {
        VPortGuidInfo {
            guids: GuidInfo::decode(d).guids,
        }
    }

    fn encode(&self, d: &mut [u8; 64]) {
        GuidInfo { guids: self.guids }.encode(d);
    }
}

/// One 32-entry block of a vport's P_Key table (0xFFB6), the payload of P_KeyTable;
/// modifier = [`vport_block_modifier`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct VPortPKeyTable {
    /// The 32 keys, entry i at index 32*block + i.
    pub keys: [PKey; 32],
}

impl VPortPKeyTable {
    /// Entries per block.
    pub const ENTRIES: usize = 32;

    /// The modifier addressing `block` of vport `vport_index`.
    pub fn modifier(vport_index: u16, block: u16) -> u32 {
        vport_block_modifier(vport_index, block)
    }

    /// Splits a modifier into (vport index, block).
    pub fn split_modifier(attr_mod: u32) -> (u16, u16) {
        split_vport_block_modifier(attr_mod)
    }
}

impl SmpAttribute for VPortPKeyTable {
    const ID: AttributeId = AttributeId::VPORT_P_KEY_TABLE;
    const LEN: usize = 64;
    const NAME: &'static str = "VPortP_KeyTable";

    fn decode(d: &[u8; 64]) -> VPortPKeyTable {
        VPortPKeyTable {
            keys: PKeyTable::decode(d).keys,
        }
    }

    fn encode(&self, d: &mut [u8; 64]) {
        PKeyTable { keys: self.keys }.encode(d);
    }
}
