//! PortInfo (IBA 14.2.5.6, Table 150), all 64 bytes. Offsets follow libibmad fields.c
//! (`IB_PORT_*_F`, big-endian bit offsets) and opensm `ib_port_info_t`.

use super::{SmpAttribute, bits, place};
use crate::header::AttributeId;
use crate::wire::*;
use fabric::{Lid, PhysState, PortState};

/// PortInfo. Sub-byte fields are kept as raw integers of their spec width so that every
/// wire value (including reserved encodings) round-trips; typed views are methods.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct PortInfo {
    /// Bytes 0-7: M_Key.
    pub m_key: u64,
    /// Bytes 8-15: GidPrefix (subnet prefix).
    pub gid_prefix: u64,
    /// Bytes 16-17: LID (base LID of the port; switches: only port 0 has one).
    pub lid: Lid,
    /// Bytes 18-19: MasterSMLID.
    pub master_sm_lid: Lid,
    /// Bytes 20-23: CapabilityMask.
    pub capability_mask: u32,
    /// Bytes 24-25: DiagCode.
    pub diag_code: u16,
    /// Bytes 26-27: M_KeyLeasePeriod (seconds).
    pub m_key_lease_period: u16,
    /// Byte 28: LocalPortNum.
    pub local_port_num: u8,
    /// Byte 29: LinkWidthEnabled (bit mask: 1=1x, 2=4x, 4=8x, 8=12x, 16=2x; 0 no change, 255 = supported).
    pub link_width_enabled: u8,
    /// Byte 30: LinkWidthSupported.
    pub link_width_supported: u8,
    /// Byte 31: LinkWidthActive.
    pub link_width_active: u8,
    /// Byte 32 bits 7..4: LinkSpeedSupported (4 bits).
    pub link_speed_supported: u8,
    /// Byte 32 bits 3..0: PortState (4 bits); see [`PortInfo::state`].
    pub port_state: u8,
    /// Byte 33 bits 7..4: PortPhysicalState (4 bits); see [`PortInfo::phys_state`].
    pub port_phys_state: u8,
    /// Byte 33 bits 3..0: LinkDownDefaultState (4 bits).
    pub link_down_default_state: u8,
    /// Byte 34 bits 7..6: M_KeyProtectBits (2 bits).
    pub m_key_protect_bits: u8,
    /// Byte 34 bits 2..0: LMC (3 bits).
    pub lmc: u8,
    /// Byte 35 bits 7..4: LinkSpeedActive (4 bits).
    pub link_speed_active: u8,
    /// Byte 35 bits 3..0: LinkSpeedEnabled (4 bits).
    pub link_speed_enabled: u8,
    /// Byte 36 bits 7..4: NeighborMTU (4 bits: 1=256 .. 5=4096).
    pub neighbor_mtu: u8,
    /// Byte 36 bits 3..0: MasterSMSL (4 bits).
    pub master_sm_sl: u8,
    /// Byte 37 bits 7..4: VLCap (4 bits).
    pub vl_cap: u8,
    /// Byte 37 bits 3..0: InitType (4 bits).
    pub init_type: u8,
    /// Byte 38: VLHighLimit.
    pub vl_high_limit: u8,
    /// Byte 39: VLArbitrationHighCap.
    pub vl_arbitration_high_cap: u8,
    /// Byte 40: VLArbitrationLowCap.
    pub vl_arbitration_low_cap: u8,
    /// Byte 41 bits 7..4: InitTypeReply (4 bits).
    pub init_type_reply: u8,
    /// Byte 41 bits 3..0: MTUCap (4 bits).
    pub mtu_cap: u8,
    /// Byte 42 bits 7..5: VLStallCount (3 bits).
    pub vl_stall_count: u8,
    /// Byte 42 bits 4..0: HOQLife (5 bits).
    pub hoq_life: u8,
    /// Byte 43 bits 7..4: OperationalVLs (4 bits).
    pub operational_vls: u8,
    /// Byte 43 bit 3: PartitionEnforcementInbound.
    pub partition_enforcement_inbound: bool,
    /// Byte 43 bit 2: PartitionEnforcementOutbound.
    pub partition_enforcement_outbound: bool,
    /// Byte 43 bit 1: FilterRawInbound.
    pub filter_raw_inbound: bool,
    /// Byte 43 bit 0: FilterRawOutbound.
    pub filter_raw_outbound: bool,
    /// Bytes 44-45: M_KeyViolations.
    pub m_key_violations: u16,
    /// Bytes 46-47: P_KeyViolations.
    pub p_key_violations: u16,
    /// Bytes 48-49: Q_KeyViolations.
    pub q_key_violations: u16,
    /// Byte 50: GUIDCap.
    pub guid_cap: u8,
    /// Byte 51 bit 7: ClientReregister.
    pub client_reregister: bool,
    /// Byte 51 bits 6..5: MulticastPKeyTrapSuppressionEnabled (2 bits).
    pub multicast_pkey_trap_suppression_enabled: u8,
    /// Byte 51 bits 4..0: SubnetTimeOut (5 bits).
    pub subnet_timeout: u8,
    /// Byte 52 bits 4..0: RespTimeValue (5 bits; bits 7..5 reserved).
    pub resp_time_value: u8,
    /// Byte 53 bits 7..4: LocalPhyErrors (4 bits).
    pub local_phy_errors: u8,
    /// Byte 53 bits 3..0: OverrunErrors (4 bits).
    pub overrun_errors: u8,
    /// Bytes 54-55: MaxCreditHint.
    pub max_credit_hint: u16,
    /// Byte 56 bits 6..5: LinkSpeedExtActive2 (2 bits; IBA 1.7, reserved before;
    /// fields.c `IB_PORT_LINK_SPEED_EXT_ACTIVE_2_F` bit 449).
    pub link_speed_ext_active2: u8,
    /// Byte 56 bits 4..3: LinkSpeedExtSupported2 (2 bits; fields.c bit 451).
    pub link_speed_ext_supported2: u8,
    /// Byte 56 bits 2..0: LinkSpeedExtEnabled2 (3 bits; fields.c bit 453).
    pub link_speed_ext_enabled2: u8,
    /// Bytes 57-59: LinkRoundTripLatency (24 bits).
    pub link_round_trip_latency: u32,
    /// Bytes 60-61: CapabilityMask2.
    pub capability_mask2: u16,
    /// Byte 62 bits 7..4: LinkSpeedExtActive (4 bits).
    pub link_speed_ext_active: u8,
    /// Byte 62 bits 3..0: LinkSpeedExtSupported (4 bits).
    pub link_speed_ext_supported: u8,
    /// Byte 63 bits 4..0: LinkSpeedExtEnabled (5 bits; bits 7..5 reserved).
    pub link_speed_ext_enabled: u8,
}

impl PortInfo {
    /// LinkWidth bit: 1x.
    pub const WIDTH_1X: u8 = 0x01;
    /// LinkWidth bit: 4x.
    pub const WIDTH_4X: u8 = 0x02;
    /// LinkWidth bit: 8x.
    pub const WIDTH_8X: u8 = 0x04;
    /// LinkWidth bit: 12x.
    pub const WIDTH_12X: u8 = 0x08;
    /// LinkWidth bit: 2x.
    pub const WIDTH_2X: u8 = 0x10;
    /// LinkWidthEnabled 0xFF: set to LinkWidthSupported.
    pub const WIDTH_SET_TO_SUPPORTED: u8 = 0xFF;
    /// LinkSpeed bit: 2.5 Gb/s (SDR).
    pub const SPEED_SDR: u8 = 0x1;
    /// LinkSpeed bit: 5.0 Gb/s (DDR).
    pub const SPEED_DDR: u8 = 0x2;
    /// LinkSpeed bit: 10.0 Gb/s (QDR).
    pub const SPEED_QDR: u8 = 0x4;
    /// LinkSpeedEnabled 0xF: set to LinkSpeedSupported.
    pub const SPEED_SET_TO_SUPPORTED: u8 = 0xF;
    /// LinkSpeedExt bit: 14.0625 Gb/s (FDR).
    pub const SPEED_EXT_FDR: u8 = 0x1;
    /// LinkSpeedExt bit: 25.78125 Gb/s (EDR).
    pub const SPEED_EXT_EDR: u8 = 0x2;
    /// LinkSpeedExt bit: 53.125 Gb/s (HDR).
    pub const SPEED_EXT_HDR: u8 = 0x4;
    /// LinkSpeedExt bit: 106.25 Gb/s (NDR).
    pub const SPEED_EXT_NDR: u8 = 0x8;
    /// MTU code 1: 256 bytes.
    pub const MTU_256: u8 = 1;
    /// MTU code 2: 512 bytes.
    pub const MTU_512: u8 = 2;
    /// MTU code 3: 1024 bytes.
    pub const MTU_1024: u8 = 3;
    /// MTU code 4: 2048 bytes.
    pub const MTU_2048: u8 = 4;
    /// MTU code 5: 4096 bytes.
    pub const MTU_4096: u8 = 5;
    /// VLCap / OperationalVLs code 4: VL0-7.
    pub const VLS_0_7: u8 = 4;

    /// CapabilityMask bit 1: the port hosts a master SM (IsSM).
    pub const CAP_IS_SM: u32 = 1 << 1;
    /// CapabilityMask bit 2: IsNoticeSupported.
    pub const CAP_IS_NOTICE_SUPPORTED: u32 = 1 << 2;
    /// CapabilityMask bit 3: IsTrapSupported.
    pub const CAP_IS_TRAP_SUPPORTED: u32 = 1 << 3;
    /// CapabilityMask bit 5: IsAutomaticMigrationSupported.
    pub const CAP_IS_AUTOMATIC_MIGRATION_SUPPORTED: u32 = 1 << 5;
    /// CapabilityMask bit 6: IsSLMappingSupported.
    pub const CAP_IS_SL_MAPPING_SUPPORTED: u32 = 1 << 6;
    /// CapabilityMask bit 7: IsM_KeyNVRAM.
    pub const CAP_IS_MKEY_NVRAM: u32 = 1 << 7;
    /// CapabilityMask bit 8: IsP_KeyNVRAM.
    pub const CAP_IS_PKEY_NVRAM: u32 = 1 << 8;
    /// CapabilityMask bit 9: IsLEDInfoSupported.
    pub const CAP_IS_LED_INFO_SUPPORTED: u32 = 1 << 9;
    /// CapabilityMask bit 10: IsSMdisabled.
    pub const CAP_IS_SM_DISABLED: u32 = 1 << 10;
    /// CapabilityMask bit 11: IsSystemImageGUIDSupported.
    pub const CAP_IS_SYSTEM_IMAGE_GUID_SUPPORTED: u32 = 1 << 11;
    /// CapabilityMask bit 12: IsPKeySwitchExternalPortTrapSupported.
    pub const CAP_IS_PKEY_SWITCH_EXT_PORT_TRAP_SUPPORTED: u32 = 1 << 12;
    /// CapabilityMask bit 14: IsExtendedSpeedsSupported.
    pub const CAP_IS_EXTENDED_SPEEDS_SUPPORTED: u32 = 1 << 14;
    /// CapabilityMask bit 15: IsCapabilityMask2Supported.
    pub const CAP_IS_CAPABILITY_MASK2_SUPPORTED: u32 = 1 << 15;
    /// CapabilityMask bit 16: IsCommunicationManagementSupported.
    pub const CAP_IS_CM_SUPPORTED: u32 = 1 << 16;
    /// CapabilityMask bit 17: IsSNMPTunnelingSupported.
    pub const CAP_IS_SNMP_TUNNELING_SUPPORTED: u32 = 1 << 17;
    /// CapabilityMask bit 18: IsReinitSupported.
    pub const CAP_IS_REINIT_SUPPORTED: u32 = 1 << 18;
    /// CapabilityMask bit 19: IsDeviceManagementSupported.
    pub const CAP_IS_DEVICE_MANAGEMENT_SUPPORTED: u32 = 1 << 19;
    /// CapabilityMask bit 20: IsVendorClassSupported.
    pub const CAP_IS_VENDOR_CLASS_SUPPORTED: u32 = 1 << 20;
    /// CapabilityMask bit 21: IsDRNoticeSupported.
    pub const CAP_IS_DR_NOTICE_SUPPORTED: u32 = 1 << 21;
    /// CapabilityMask bit 22: IsCapabilityMaskNoticeSupported.
    pub const CAP_IS_CAPABILITY_MASK_NOTICE_SUPPORTED: u32 = 1 << 22;
    /// CapabilityMask bit 23: IsBootManagementSupported.
    pub const CAP_IS_BOOT_MANAGEMENT_SUPPORTED: u32 = 1 << 23;
    /// CapabilityMask bit 24: IsLinkRoundTripLatencySupported.
    pub const CAP_IS_LINK_ROUND_TRIP_LATENCY_SUPPORTED: u32 = 1 << 24;
    /// CapabilityMask bit 25: IsClientReregistrationSupported.
    pub const CAP_IS_CLIENT_REREGISTRATION_SUPPORTED: u32 = 1 << 25;
    /// CapabilityMask bit 26: IsOtherLocalChangesNoticeSupported.
    pub const CAP_IS_OTHER_LOCAL_CHANGES_NOTICE_SUPPORTED: u32 = 1 << 26;
    /// CapabilityMask bit 27: IsLinkSpeedWidthPairsTableSupported.
    pub const CAP_IS_LINK_SPEED_WIDTH_PAIRS_TABLE_SUPPORTED: u32 = 1 << 27;
    /// CapabilityMask bit 28: IsVendorSpecificMadsTableSupported.
    pub const CAP_IS_VENDOR_SPECIFIC_MADS_TABLE_SUPPORTED: u32 = 1 << 28;
    /// CapabilityMask bit 29: IsMcastPkeyTrapSuppressionSupported.
    pub const CAP_IS_MCAST_PKEY_TRAP_SUPPRESSION_SUPPORTED: u32 = 1 << 29;
    /// CapabilityMask bit 30: IsMulticastFDBTopSupported (switch port 0: the switch
    /// honours SwitchInfo.MulticastFDBTop and ignores MFT entries above it).
    pub const CAP_IS_MULTICAST_FDB_TOP_SUPPORTED: u32 = 1 << 30;
    /// CapabilityMask bit 31: IsHierarchyInfoSupported.
    pub const CAP_IS_HIERARCHY_INFO_SUPPORTED: u32 = 1 << 31;

    /// CapabilityMask2 bit 2: IsVirtualizationSupported (rdma-core libibmad iba_types.h
    /// `IB_PORT_CAP2_IS_VIRT_SUPPORTED` 0x0004): the port answers the virtualization
    /// attributes (`attr::virt`).
    pub const CAP2_IS_VIRTUALIZATION_SUPPORTED: u16 = 0x0004;

    /// PortState as a typed value (`None` for 5..=15, e.g. ActiveDefer).
    pub fn state(&self) -> Option<PortState> {
        PortState::from_wire(self.port_state)
    }

    /// Sets PortState.
    pub fn set_state(&mut self, s: PortState) {
        self.port_state = s.to_wire();
    }

    /// PortPhysicalState as a typed value (`None` for 8..=15).
    pub fn phys_state(&self) -> Option<PhysState> {
        PhysState::from_wire(self.port_phys_state)
    }

    /// Sets PortPhysicalState.
    pub fn set_phys_state(&mut self, s: PhysState) {
        self.port_phys_state = s.to_wire();
    }
}

impl SmpAttribute for PortInfo {
    const ID: AttributeId = AttributeId::PORT_INFO;
    const LEN: usize = 64;
    const NAME: &'static str = "PortInfo";

    fn decode(d: &[u8; 64]) -> PortInfo {
        PortInfo {
            m_key: get_u64(d, 0),
            gid_prefix: get_u64(d, 8),
            lid: Lid(get_u16(d, 16)),
            master_sm_lid: Lid(get_u16(d, 18)),
            capability_mask: get_u32(d, 20),
            diag_code: get_u16(d, 24),
            m_key_lease_period: get_u16(d, 26),
            local_port_num: d[28],
            link_width_enabled: d[29],
            link_width_supported: d[30],
            link_width_active: d[31],
            link_speed_supported: bits(d[32], 7, 4),
            port_state: bits(d[32], 3, 4),
            port_phys_state: bits(d[33], 7, 4),
            link_down_default_state: bits(d[33], 3, 4),
            m_key_protect_bits: bits(d[34], 7, 2),
            lmc: bits(d[34], 2, 3),
            link_speed_active: bits(d[35], 7, 4),
            link_speed_enabled: bits(d[35], 3, 4),
            neighbor_mtu: bits(d[36], 7, 4),
            master_sm_sl: bits(d[36], 3, 4),
            vl_cap: bits(d[37], 7, 4),
            init_type: bits(d[37], 3, 4),
            vl_high_limit: d[38],
            vl_arbitration_high_cap: d[39],
            vl_arbitration_low_cap: d[40],
            init_type_reply: bits(d[41], 7, 4),
            mtu_cap: bits(d[41], 3, 4),
            vl_stall_count: bits(d[42], 7, 3),
            hoq_life: bits(d[42], 4, 5),
            operational_vls: bits(d[43], 7, 4),
            partition_enforcement_inbound: bits(d[43], 3, 1) != 0,
            partition_enforcement_outbound: bits(d[43], 2, 1) != 0,
            filter_raw_inbound: bits(d[43], 1, 1) != 0,
            filter_raw_outbound: bits(d[43], 0, 1) != 0,
            m_key_violations: get_u16(d, 44),
            p_key_violations: get_u16(d, 46),
            q_key_violations: get_u16(d, 48),
            guid_cap: d[50],
            client_reregister: bits(d[51], 7, 1) != 0,
            multicast_pkey_trap_suppression_enabled: bits(d[51], 6, 2),
            subnet_timeout: bits(d[51], 4, 5),
            resp_time_value: bits(d[52], 4, 5),
            local_phy_errors: bits(d[53], 7, 4),
            overrun_errors: bits(d[53], 3, 4),
            max_credit_hint: get_u16(d, 54),
            link_speed_ext_active2: bits(d[56], 6, 2),
            link_speed_ext_supported2: bits(d[56], 4, 2),
            link_speed_ext_enabled2: bits(d[56], 2, 3),
            link_round_trip_latency: get_u24(d, 57),
            capability_mask2: get_u16(d, 60),
            link_speed_ext_active: bits(d[62], 7, 4),
            link_speed_ext_supported: bits(d[62], 3, 4),
            link_speed_ext_enabled: bits(d[63], 4, 5),
        }
    }

    fn encode(&self, d: &mut [u8; 64]) {
        put_u64(d, 0, self.m_key);
        put_u64(d, 8, self.gid_prefix);
        put_u16(d, 16, self.lid.0);
        put_u16(d, 18, self.master_sm_lid.0);
        put_u32(d, 20, self.capability_mask);
        put_u16(d, 24, self.diag_code);
        put_u16(d, 26, self.m_key_lease_period);
        d[28] = self.local_port_num;
        d[29] = self.link_width_enabled;
        d[30] = self.link_width_supported;
        d[31] = self.link_width_active;
        d[32] = place(self.link_speed_supported, 7, 4) | place(self.port_state, 3, 4);
        d[33] = place(self.port_phys_state, 7, 4) | place(self.link_down_default_state, 3, 4);
        d[34] = place(self.m_key_protect_bits, 7, 2) | place(self.lmc, 2, 3);
        d[35] = place(self.link_speed_active, 7, 4) | place(self.link_speed_enabled, 3, 4);
        d[36] = place(self.neighbor_mtu, 7, 4) | place(self.master_sm_sl, 3, 4);
        d[37] = place(self.vl_cap, 7, 4) | place(self.init_type, 3, 4);
        d[38] = self.vl_high_limit;
        d[39] = self.vl_arbitration_high_cap;
        d[40] = self.vl_arbitration_low_cap;
        d[41] = place(self.init_type_reply, 7, 4) | place(self.mtu_cap, 3, 4);
        d[42] = place(self.vl_stall_count, 7, 3) | place(self.hoq_life, 4, 5);
        d[43] = place(self.operational_vls, 7, 4)
            | place(self.partition_enforcement_inbound as u8, 3, 1)
            | place(self.partition_enforcement_outbound as u8, 2, 1)
            | place(self.filter_raw_inbound as u8, 1, 1)
            | place(self.filter_raw_outbound as u8, 0, 1);
        put_u16(d, 44, self.m_key_violations);
        put_u16(d, 46, self.p_key_violations);
        put_u16(d, 48, self.q_key_violations);
        d[50] = self.guid_cap;
        d[51] = place(self.client_reregister as u8, 7, 1)
            | place(self.multicast_pkey_trap_suppression_enabled, 6, 2)
            | place(self.subnet_timeout, 4, 5);
        d[52] = place(self.resp_time_value, 4, 5);
        d[53] = place(self.local_phy_errors, 7, 4) | place(self.overrun_errors, 3, 4);
        put_u16(d, 54, self.max_credit_hint);
        d[56] = place(self.link_speed_ext_active2, 6, 2)
            | place(self.link_speed_ext_supported2, 4, 2)
            | place(self.link_speed_ext_enabled2, 2, 3);
        put_u24(d, 57, self.link_round_trip_latency);
        put_u16(d, 60, self.capability_mask2);
        d[62] =
            place(self.link_speed_ext_active, 7, 4) | place(self.link_speed_ext_supported, 3, 4);
        d[63] = place(self.link_speed_ext_enabled, 4, 5);
    }
}
