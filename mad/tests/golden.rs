//! Golden byte vectors derived by hand from the published layouts. Each expected byte
//! carries a comment naming where its offset comes from: the IBA section, the libibmad
//! fields.c field (bit offset, width; BITSOFFS bit offsets count from the most significant
//! bit of byte 0) and/or the opensm ib_types.h struct member.

use fabric::{Guid, Lid, PKey, PhysState, PortState};
use mad::{
    AttributeId, LinearForwardingTable, MadStatus, Method, MgmtClass, NodeInfo, Notice,
    NoticeDetails, PKeyTable, PortInfo, ProducerType, RmppHeader, SaMad, SmInfo, Smp, SmpAttribute,
    SwitchInfo,
};

#[test]
fn node_info_golden() {
    let ni = NodeInfo {
        base_version: 1,
        class_version: 1,
        node_type: 2,
        num_ports: 36,
        system_image_guid: Guid(0x0002_c903_00a1_b2c3),
        node_guid: Guid(0x0002_c903_00a1_b2c4),
        port_guid: Guid(0x0002_c903_00a1_b2c5),
        partition_cap: 8,
        device_id: 0xc738,
        revision: 0x0000_00a1,
        local_port_num: 0,
        vendor_id: 0x0002c9,
    };
    #[rustfmt::skip]
    let expected: [u8; 40] = [
        0x01, // byte 0: BaseVersion — IBA 14.2.5.3 Table 146 / fields.c IB_NODE_BASE_VERS_F BITSOFFS(0, 8)
        0x01, // byte 1: ClassVersion — IB_NODE_CLASS_VERS_F BITSOFFS(8, 8)
        0x02, // byte 2: NodeType (2 = switch) — IB_NODE_TYPE_F BITSOFFS(16, 8)
        0x24, // byte 3: NumPorts = 36 — IB_NODE_NPORTS_F BITSOFFS(24, 8)
        0x00, 0x02, 0xc9, 0x03, 0x00, 0xa1, 0xb2, 0xc3, // bytes 4-11: SystemImageGUID — IB_NODE_SYSTEM_GUID_F (32, 64)
        0x00, 0x02, 0xc9, 0x03, 0x00, 0xa1, 0xb2, 0xc4, // bytes 12-19: NodeGUID — IB_NODE_GUID_F (96, 64)
        0x00, 0x02, 0xc9, 0x03, 0x00, 0xa1, 0xb2, 0xc5, // bytes 20-27: PortGUID — IB_NODE_PORT_GUID_F (160, 64)
        0x00, 0x08, // bytes 28-29: PartitionCap — IB_NODE_PARTITION_CAP_F BITSOFFS(224, 16)
        0xc7, 0x38, // bytes 30-31: DeviceID — IB_NODE_DEVID_F BITSOFFS(240, 16)
        0x00, 0x00, 0x00, 0xa1, // bytes 32-35: Revision — IB_NODE_REVISION_F (256, 32)
        0x00, // byte 36: LocalPortNum — IB_NODE_LOCAL_PORT_F BITSOFFS(288, 8)
        0x00, 0x02, 0xc9, // bytes 37-39: VendorID (24 bits) — IB_NODE_VENDORID_F BITSOFFS(296, 24)
    ];
    let data = ni.to_data();
    assert_eq!(&data[..40], &expected[..]);
    assert!(
        data[40..].iter().all(|&b| b == 0),
        "bytes 40-63 are past NodeInfo"
    );
    assert_eq!(NodeInfo::decode(&data), ni);
    assert!(ni.is_switch());
}

#[test]
fn port_info_golden() {
    let pi = PortInfo {
        m_key: 0x0102_0304_0506_0708,
        gid_prefix: 0xfe80_0000_0000_0000,
        lid: Lid(0x0011),
        master_sm_lid: Lid(0x0001),
        capability_mask: 0x0250_c04a,
        diag_code: 0x1234,
        m_key_lease_period: 0x0ff9,
        local_port_num: 1,
        link_width_enabled: 0x02,
        link_width_supported: 0x1f,
        link_width_active: 0x02,
        link_speed_supported: 0x7,
        port_state: PortState::Active.to_wire(),
        port_phys_state: PhysState::LinkUp.to_wire(),
        link_down_default_state: 2,
        m_key_protect_bits: 2,
        lmc: 3,
        link_speed_active: 0x1,
        link_speed_enabled: 0xf,
        neighbor_mtu: 4,
        master_sm_sl: 0xa,
        vl_cap: 4,
        init_type: 0x3,
        vl_high_limit: 0x10,
        vl_arbitration_high_cap: 8,
        vl_arbitration_low_cap: 8,
        init_type_reply: 0x9,
        mtu_cap: 5,
        vl_stall_count: 7,
        hoq_life: 0x13,
        operational_vls: 4,
        partition_enforcement_inbound: true,
        partition_enforcement_outbound: true,
        filter_raw_inbound: false,
        filter_raw_outbound: true,
        m_key_violations: 0x0102,
        p_key_violations: 0x0304,
        q_key_violations: 0x0506,
        guid_cap: 32,
        client_reregister: true,
        multicast_pkey_trap_suppression_enabled: 2,
        subnet_timeout: 0x12,
        resp_time_value: 0x11,
        local_phy_errors: 0xc,
        overrun_errors: 0x3,
        max_credit_hint: 0x0708,
        link_speed_ext_active2: 1,
        link_speed_ext_supported2: 3,
        link_speed_ext_enabled2: 5,
        link_round_trip_latency: 0x0a0b0c,
        capability_mask2: 0x0030,
        link_speed_ext_active: 1,
        link_speed_ext_supported: 3,
        link_speed_ext_enabled: 0x1e,
    };
    #[rustfmt::skip]
    let expected: [u8; 64] = [
        // IBA 14.2.5.6 Table 150; libibmad fields.c IB_PORT_*_F; opensm ib_port_info_t.
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // 0-7: M_Key — IB_PORT_MKEY_F (0, 64)
        0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // 8-15: GidPrefix — IB_PORT_GID_PREFIX_F (64, 64)
        0x00, 0x11, // 16-17: LID — IB_PORT_LID_F BITSOFFS(128, 16)
        0x00, 0x01, // 18-19: MasterSMLID — IB_PORT_SMLID_F BITSOFFS(144, 16)
        0x02, 0x50, 0xc0, 0x4a, // 20-23: CapabilityMask — IB_PORT_CAPMASK_F (160, 32)
        0x12, 0x34, // 24-25: DiagCode — IB_PORT_DIAG_F BITSOFFS(192, 16)
        0x0f, 0xf9, // 26-27: M_KeyLeasePeriod — IB_PORT_MKEY_LEASE_F BITSOFFS(208, 16)
        0x01, // 28: LocalPortNum — IB_PORT_LOCAL_PORT_F BITSOFFS(224, 8)
        0x02, // 29: LinkWidthEnabled (4x) — IB_PORT_LINK_WIDTH_ENABLED_F BITSOFFS(232, 8)
        0x1f, // 30: LinkWidthSupported — BITSOFFS(240, 8)
        0x02, // 31: LinkWidthActive — BITSOFFS(248, 8)
        0x74, // 32: LinkSpeedSupported 0x7 (bits 256-259) | PortState 4 Active (260-263) — ib_port_info_t.state_info1
        0x52, // 33: PortPhysicalState 5 LinkUp (264-267) | LinkDownDefaultState 2 (268-271) — state_info2
        0x83, // 34: M_KeyProtectBits 2 (272-273) | reserved (274-276) | LMC 3 (277-279) — mkey_lmc
        0x1f, // 35: LinkSpeedActive 1 (280-283) | LinkSpeedEnabled 0xf (284-287) — link_speed
        0x4a, // 36: NeighborMTU 4 (288-291) | MasterSMSL 0xa (292-295) — mtu_smsl
        0x43, // 37: VLCap 4 (296-299) | InitType 3 (300-303) — vl_cap
        0x10, // 38: VLHighLimit — BITSOFFS(304, 8)
        0x08, // 39: VLArbitrationHighCap — BITSOFFS(312, 8)
        0x08, // 40: VLArbitrationLowCap — BITSOFFS(320, 8)
        0x95, // 41: InitTypeReply 9 (328-331) | MTUCap 5 (332-335) — mtu_cap
        0xf3, // 42: VLStallCount 7 (336-338) | HOQLife 0x13 (339-343) — vl_stall_life
        0x4d, // 43: OperationalVLs 4 (344-347) | PartEnfIn 1 (348) | PartEnfOut 1 (349) | FilterRawIn 0 (350) | FilterRawOut 1 (351) — vl_enforce
        0x01, 0x02, // 44-45: M_KeyViolations — BITSOFFS(352, 16)
        0x03, 0x04, // 46-47: P_KeyViolations — BITSOFFS(368, 16)
        0x05, 0x06, // 48-49: Q_KeyViolations — BITSOFFS(384, 16)
        0x20, // 50: GUIDCap — BITSOFFS(400, 8)
        0xd2, // 51: ClientReregister 1 (408) | MulticastPKeyTrapSuppressionEnabled 2 (409-410) | SubnetTimeOut 0x12 (411-415)
        0x11, // 52: reserved (416-418) | RespTimeValue 0x11 (419-423)
        0xc3, // 53: LocalPhyErrors 0xc (424-427) | OverrunErrors 3 (428-431)
        0x07, 0x08, // 54-55: MaxCreditHint — BITSOFFS(432, 16)
        0x3d, // 56: reserved (448) | LinkSpeedExtActive2 1 (449-450) | ExtSupported2 3 (451-452) | ExtEnabled2 5 (453-455)
        0x0a, 0x0b, 0x0c, // 57-59: LinkRoundTripLatency — IB_PORT_LINK_ROUND_TRIP_F BITSOFFS(456, 24)
        0x00, 0x30, // 60-61: CapabilityMask2 — IB_PORT_CAPMASK2_F BITSOFFS(480, 16)
        0x13, // 62: LinkSpeedExtActive 1 (496-499) | LinkSpeedExtSupported 3 (500-503)
        0x1e, // 63: reserved (504-506) | LinkSpeedExtEnabled 0x1e (507-511)
    ];
    assert_eq!(pi.to_data(), expected);
    assert_eq!(PortInfo::decode(&expected), pi);
    assert_eq!(pi.state(), Some(PortState::Active));
    assert_eq!(pi.phys_state(), Some(PhysState::LinkUp));
}

#[test]
fn switch_info_golden() {
    let si = SwitchInfo {
        linear_fdb_cap: 0xc000,
        random_fdb_cap: 0,
        multicast_fdb_cap: 0x0400,
        linear_fdb_top: 0x02bd,
        default_port: 0,
        default_multicast_primary_port: 0xff,
        default_multicast_not_primary_port: 1,
        life_time_value: 18,
        port_state_change: true,
        optimized_sl_to_vl_mapping_programming: 2,
        lids_per_port: 0,
        partition_enforcement_cap: 0x0020,
        inbound_enforcement_cap: true,
        outbound_enforcement_cap: true,
        filter_raw_inbound_cap: true,
        filter_raw_outbound_cap: false,
        enhanced_port0: true,
        multicast_fdb_top: 0xc01f,
    };
    #[rustfmt::skip]
    let expected: [u8; 20] = [
        // IBA 14.2.5.4 Table 147; libibmad fields.c IB_SW_*_F; opensm ib_switch_info_t.
        0xc0, 0x00, // 0-1: LinearFDBCap — IB_SW_LINEAR_FDB_CAP_F BITSOFFS(0, 16)
        0x00, 0x00, // 2-3: RandomFDBCap — BITSOFFS(16, 16)
        0x04, 0x00, // 4-5: MulticastFDBCap — BITSOFFS(32, 16)
        0x02, 0xbd, // 6-7: LinearFDBTop = 701 — IB_SW_LINEAR_FDB_TOP_F BITSOFFS(48, 16)
        0x00, // 8: DefaultPort — BITSOFFS(64, 8)
        0xff, // 9: DefaultMulticastPrimaryPort — BITSOFFS(72, 8)
        0x01, // 10: DefaultMulticastNotPrimaryPort — BITSOFFS(80, 8)
        0x96, // 11: LifeTimeValue 18 (88-92) | PortStateChange 1 (93, opensm IB_SWITCH_PSC 0x04) | OptimizedSLtoVL 2 (94-95)
        0x00, 0x00, // 12-13: LIDsPerPort — BITSOFFS(96, 16)
        0x00, 0x20, // 14-15: PartitionEnforcementCap — BITSOFFS(112, 16)
        0xe8, // 16: InboundEnfCap 1 (128) | OutboundEnfCap 1 (129) | FilterRawInCap 1 (130) | FilterRawOutCap 0 (131) | EnhancedPort0 1 (132)
        0x00, // 17: reserved
        0xc0, 0x1f, // 18-19: MulticastFDBTop — IB_SW_MCAST_FDB_TOP_F BITSOFFS(144, 16)
    ];
    let data = si.to_data();
    assert_eq!(&data[..20], &expected[..]);
    assert!(data[20..].iter().all(|&b| b == 0));
    assert_eq!(SwitchInfo::decode(&data), si);
}

#[test]
fn lft_block_set_smp_golden() {
    // LID-routed Set of LFT block 2 (LIDs 128..=191) to the switch at some LID.
    let mut lft = LinearForwardingTable::default();
    for (i, p) in lft.ports.iter_mut().enumerate().take(60) {
        *p = (i % 36) as u8 + 1;
    }
    let smp = Smp::lid_set(0x0000_0001_0000_00aa, 2, &lft).with_m_key(0);
    let wire = smp.encode();
    #[rustfmt::skip]
    let header: [u8; 24] = [
        // IBA 13.4.2 common MAD header / linux struct ib_mad_hdr / fields.c IB_MAD_*_F.
        0x01, // 0: BaseVersion
        0x01, // 1: MgmtClass 0x01 LID-routed SMP (linux IB_MGMT_CLASS_SUBN_LID_ROUTED)
        0x01, // 2: ClassVersion
        0x02, // 3: R=0 | Method Set 0x02
        0x00, 0x00, // 4-5: Status
        0x00, 0x00, // 6-7: ClassSpecific (reserved for LID-routed)
        0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0xaa, // 8-15: TransactionID
        0x00, 0x19, // 16-17: AttributeID LinearForwardingTable 0x0019 (IB_SMP_ATTR_LINEAR_FORWARD_TABLE)
        0x00, 0x00, // 18-19: reserved
        0x00, 0x00, 0x00, 0x02, // 20-23: AttributeModifier = block 2 (IBA 14.2.5.10)
    ];
    assert_eq!(&wire[..24], &header[..]);
    assert_eq!(&wire[24..32], &[0u8; 8], "24-31: M_Key (IBA 14.2.1.1)");
    assert_eq!(
        &wire[32..64],
        &[0u8; 32],
        "32-63: reserved in a LID-routed SMP"
    );
    // 64-127: SMP data = 64 one-byte port entries, entry i for LID 64*2 + i
    // (fields.c IB_LINEAR_FORW_TBL_F (0, 512)).
    let mut data = [0xffu8; 64];
    for (i, p) in data.iter_mut().enumerate().take(60) {
        *p = (i % 36) as u8 + 1;
    }
    assert_eq!(&wire[64..128], &data[..]);
    assert_eq!(wire[64 + 35], 36);
    assert_eq!(wire[64 + 36], 1);
    assert_eq!(wire[64 + 60], 0xff, "no path");
    assert_eq!(
        &wire[128..],
        &[0u8; 128][..],
        "128-255: reserved in a LID-routed SMP"
    );
    assert_eq!(LinearForwardingTable::block_of(Lid(191)), 2);
    assert_eq!(LinearForwardingTable::index_of(Lid(191)), 63);
    let back = Smp::decode(&wire).unwrap();
    assert_eq!(back, smp);
    assert_eq!(back.attr::<LinearForwardingTable>().unwrap(), lft);
}

#[test]
fn pkey_table_block_golden() {
    let mut t = PKeyTable::default();
    t.keys[0] = PKey(0xffff);
    t.keys[1] = PKey(0x8001);
    t.keys[2] = PKey(0x0002);
    t.keys[31] = PKey(0x7fff);
    #[rustfmt::skip]
    let mut expected = [0u8; 64];
    // IBA 14.2.5.7 Table 152: 32 P_Key entries of 16 bits, entry i at bytes 2i..2i+1
    // (opensm ib_pkey_table_t pkey_entry[32], big-endian).
    expected[0] = 0xff;
    expected[1] = 0xff; // entry 0: 0xFFFF default partition, full
    expected[2] = 0x80;
    expected[3] = 0x01; // entry 1: 0x8001 partition 1, full (bit 15)
    expected[4] = 0x00;
    expected[5] = 0x02; // entry 2: 0x0002 partition 2, limited
    expected[62] = 0x7f;
    expected[63] = 0xff; // entry 31: 0x7FFF default, limited
    assert_eq!(t.to_data(), expected);
    assert_eq!(PKeyTable::decode(&expected), t);
    // Modifier: block in bits 15..0, switch port in bits 23..16 (IBA 14.2.5.7).
    assert_eq!(PKeyTable::modifier(5, 1), 0x0005_0001);
    assert_eq!(PKeyTable::split_modifier(0x0005_0001), (5, 1));
    let smp = Smp::lid_set(9, PKeyTable::modifier(5, 0), &t);
    let wire = smp.encode();
    assert_eq!(
        &wire[16..18],
        &[0x00, 0x16],
        "AttributeID P_KeyTable 0x0016"
    );
    assert_eq!(
        &wire[20..24],
        &[0x00, 0x05, 0x00, 0x00],
        "modifier port 5 block 0"
    );
    assert_eq!(&wire[64..128], &expected[..]);
}

/// A directed-route Get(NodeInfo) along the 3-hop path 1,3,1, written out by hand.
fn dr_three_hop_expected() -> [u8; 256] {
    let mut e = [0u8; 256];
    // Common header (IBA 13.4.2) with the directed-route class-specific fields
    // (IBA 14.2.1.2 Figure 159; fields.c IB_DRSMP_*_F; linux struct ib_smp).
    e[0] = 0x01; // BaseVersion
    e[1] = 0x81; // MgmtClass: directed-route SMP (IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE)
    e[2] = 0x01; // ClassVersion
    e[3] = 0x01; // Method Get
    e[4] = 0x00; // D bit (bit 15 of status, IB_DRSMP_DIRECTION_F) = 0 outbound | status
    e[5] = 0x00; //   status low byte
    e[6] = 0x00; // HopPointer (IB_DRSMP_HOPPTR_F, byte 6) = 0
    e[7] = 0x03; // HopCount (IB_DRSMP_HOPCNT_F, byte 7) = 3
    e[14] = 0x01; // TransactionID 0x0000000000000123 (bytes 8-15)
    e[15] = 0x23;
    e[16] = 0x00; // AttributeID NodeInfo 0x0011 (bytes 16-17)
    e[17] = 0x11;
    // 20-23 AttributeModifier 0; 24-31 M_Key 0 (IB_MAD_MKEY_F (192, 64)).
    e[32] = 0xff; // DrSLID 0xFFFF permissive (IB_DRSMP_DRSLID_F, bytes 32-33)
    e[33] = 0xff;
    e[34] = 0xff; // DrDLID 0xFFFF permissive (IB_DRSMP_DRDLID_F, bytes 34-35)
    e[35] = 0xff;
    // 36-63 reserved; 64-127 SMP data (zero in a Get).
    // InitialPath (IB_DRSMP_PATH_F (1024, 512) = bytes 128-191): entry 0 unused.
    e[129] = 1; // hop 1: out of port 1
    e[130] = 3; // hop 2: out of port 3
    e[131] = 1; // hop 3: out of port 1
    // ReturnPath (IB_DRSMP_RPATH_F (1536, 512) = bytes 192-255): empty outbound.
    e
}

#[test]
fn dr_smp_three_hop_golden() {
    let smp = Smp::dr_get(0x123, AttributeId::NODE_INFO, 0, &[1, 3, 1]).unwrap();
    assert_eq!(smp.encode(), dr_three_hop_expected());
    let back = Smp::decode(&dr_three_hop_expected()).unwrap();
    assert_eq!(back, smp);
    assert_eq!(back.path(), &[1, 3, 1]);
    assert!(back.is_directed());
    assert_eq!(back.class, MgmtClass::SUBN_DIRECTED_ROUTE);

    // The response at the target after the walk (D=1, hop pointer 4, ReturnPath filled),
    // with a status code: D shares bytes 4-5 with the 15-bit status.
    let mut resp = back.make_response();
    resp.hop_pointer = 4;
    resp.return_path[1..4].copy_from_slice(&[3, 3, 1]);
    resp.status = MadStatus::METHOD_ATTR_UNSUPPORTED.0;
    let w = resp.encode();
    assert_eq!(w[3], 0x81, "GetResp: R bit | Get");
    assert_eq!(&w[4..6], &[0x80, 0x0c], "D=1 | status 0x000C");
    assert_eq!(w[6], 4, "hop pointer");
    assert_eq!(w[7], 3, "hop count");
    assert_eq!(&w[129..132], &[1, 3, 1], "InitialPath kept");
    assert_eq!(&w[193..196], &[3, 3, 1], "ReturnPath[1..=3]");
    let r = Smp::decode(&w).unwrap();
    assert!(r.direction);
    assert_eq!(r.status, 0x000c);
}

#[test]
fn sm_info_golden() {
    let s = SmInfo {
        guid: Guid(0x0002_c903_0000_0001),
        sm_key: 0x0000_0000_0000_0001,
        act_count: 0x0102_0304,
        priority: 15,
        sm_state: 3,
    };
    #[rustfmt::skip]
    let expected: [u8; 21] = [
        // IBA 14.2.5.13 Table 159; fields.c IB_SMINFO_*_F; opensm ib_sm_info_t.
        0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x00, 0x01, // 0-7: GUID — IB_SMINFO_GUID_F (0, 64)
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, // 8-15: SM_Key — IB_SMINFO_KEY_F (64, 64)
        0x01, 0x02, 0x03, 0x04, // 16-19: ActCount — IB_SMINFO_ACT_F (128, 32)
        0xf3, // 20: Priority 15 (160-163) | SMState 3 master (164-167)
    ];
    assert_eq!(&s.to_data()[..21], &expected[..]);
    assert_eq!(s.state(), Some(mad::SmState::Master));
}

#[test]
fn notice_trap_128_golden() {
    let n = Notice::generic(
        Notice::TYPE_URGENT,
        ProducerType::SWITCH,
        128,
        Lid(0x0002),
        &NoticeDetails::LinkStateChange { lid: Lid(0x0002) },
    );
    let d = n.to_data();
    // opensm ib_mad_notice_attr_t / fields.c IB_NOTICE_*_F.
    assert_eq!(d[0], 0x81, "IsGeneric (bit 0) | Type 1 urgent (bits 1-7)");
    assert_eq!(
        &d[1..4],
        &[0, 0, 2],
        "ProducerType switch (BITSOFFS(8, 24))"
    );
    assert_eq!(&d[4..6], &[0x00, 0x80], "TrapNumber 128 (BITSOFFS(32, 16))");
    assert_eq!(&d[6..8], &[0x00, 0x02], "IssuerLID (BITSOFFS(48, 16))");
    assert_eq!(&d[8..10], &[0, 0], "toggle | count");
    assert_eq!(
        &d[10..12],
        &[0x00, 0x02],
        "ntc_128.sw_lid (IB_NOTICE_DATA_LID_F BITSOFFS(80, 16))"
    );
    assert_eq!(
        Notice::decode(&d).details(),
        NoticeDetails::LinkStateChange { lid: Lid(2) }
    );
    // Trap 144: LID at notice bytes 12-13 (IB_NOTICE_DATA_144_LID_F BITSOFFS(96, 16)),
    // CapabilityMask at 16-19 (IB_NOTICE_DATA_144_CAPMASK_F (128, 32)).
    let n = Notice::generic(
        Notice::TYPE_INFO,
        ProducerType::CA,
        144,
        Lid(7),
        &NoticeDetails::CapabilityChange {
            lid: Lid(7),
            other_local_changes: true,
            capability_mask: 0x0250_c04a,
            change_flags: 0x0001,
            capability_mask2: 0x0030,
        },
    );
    let d = n.to_data();
    assert_eq!(&d[12..14], &[0, 7]);
    assert_eq!(d[15], 1);
    assert_eq!(&d[16..20], &[0x02, 0x50, 0xc0, 0x4a]);
    assert_eq!(&d[20..22], &[0, 1]);
    assert_eq!(&d[22..24], &[0, 0x30]);
}

#[test]
fn sa_header_golden() {
    let mut m = SaMad::default();
    m.header.mad.method = Method::GET_TABLE_RESP;
    m.header.mad.tid = 0x42;
    m.header.mad.attr_id = AttributeId::SA_NODE_RECORD;
    m.header.rmpp = RmppHeader {
        version: 1,
        rmpp_type: RmppHeader::TYPE_DATA,
        resp_time: 0x1f,
        flags: RmppHeader::FLAG_ACTIVE | RmppHeader::FLAG_FIRST | RmppHeader::FLAG_LAST,
        status: 0,
        data1: 1,
        data2: 0x0000_0098,
    };
    m.header.sm_key = 0x0000_0000_0000_0001;
    m.header.attr_offset = 0x000e;
    m.header.comp_mask = 0x0000_0000_0000_0010;
    let w = m.encode();
    // IBA 15.2.1.1 / fields.c IB_SA_* / IB_SA_RMPP_*.
    assert_eq!(
        &w[0..4],
        &[0x01, 0x03, 0x02, 0x92],
        "base 1, class SA 0x03, version 2, GetTableResp"
    );
    assert_eq!(w[24], 1, "RMPPVersion (IB_SA_RMPP_VERS_F byte 24)");
    assert_eq!(w[25], 1, "RMPPType DATA (byte 25)");
    assert_eq!(
        w[26], 0xff,
        "RRespTime 0x1f (bits 7..3) | flags Active|First|Last (bits 2..0)"
    );
    assert_eq!(w[27], 0, "RMPPStatus");
    assert_eq!(&w[28..32], &[0, 0, 0, 1], "SegmentNumber (Data1)");
    assert_eq!(&w[32..36], &[0, 0, 0, 0x98], "PayloadLength (Data2)");
    assert_eq!(
        &w[36..44],
        &[0, 0, 0, 0, 0, 0, 0, 1],
        "SM_Key (IB_SA_MKEY_F (288, 64))"
    );
    assert_eq!(
        &w[44..46],
        &[0, 0x0e],
        "AttributeOffset (IB_SA_ATTROFFS_F, bytes 44-45)"
    );
    assert_eq!(
        &w[48..56],
        &[0, 0, 0, 0, 0, 0, 0, 0x10],
        "ComponentMask (IB_SA_COMPMASK_F (384, 64))"
    );
    assert_eq!(SaMad::decode(&w).unwrap(), m);
}
