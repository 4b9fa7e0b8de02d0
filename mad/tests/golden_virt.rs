//! Golden byte vectors of the virtualization attributes, written by hand from the public
//! NVIDIA encodings (the IBA text of these attributes was not available): adb =
//! ibis `packets_layouts.h` (`0xN.b` = bit b of the big-endian dword at byte N), ib_types.h =
//! NVIDIA OpenSM `include/iba/ib_types.h`. Every expected byte names its source.

use fabric::{Guid, Lid, PKey, PortState};
use mad::attr::{split_vport_block_modifier, vport_block_modifier, vport_modifier};
use mad::{
    AttributeId, NodeDescription, PortInfo, Smp, SmpAttribute, VNodeDescription, VNodeInfo,
    VPortGuidInfo, VPortInfo, VPortPKeyTable, VPortState, VirtualizationInfo,
};

#[test]
fn attribute_ids_are_the_vendor_range_ones() {
    // ib_types.h IB_MAD_ATTR_VIRTUALIZATION_INFO .. IB_MAD_ATTR_V_PKEY_TABLE.
    assert_eq!(VirtualizationInfo::ID, AttributeId(0xFFB0));
    assert_eq!(VPortInfo::ID, AttributeId(0xFFB1));
    assert_eq!(VNodeInfo::ID, AttributeId(0xFFB2));
    assert_eq!(VPortState::ID, AttributeId(0xFFB3));
    assert_eq!(VNodeDescription::ID, AttributeId(0xFFB4));
    assert_eq!(VPortGuidInfo::ID, AttributeId(0xFFB5));
    assert_eq!(VPortPKeyTable::ID, AttributeId(0xFFB6));
    // rdma-core iba_types.h IB_PORT_CAP2_IS_VIRT_SUPPORTED.
    assert_eq!(PortInfo::CAP2_IS_VIRTUALIZATION_SUPPORTED, 0x0004);
}

#[test]
fn virtualization_info_golden() {
    #[rustfmt::skip]
    let mut wire = [0u8; 64];
    wire[..8].copy_from_slice(&[
        0x00, 0x3f, // bytes 0-1: VPortCap = 63 — adb 0x0.16-0x0.31 vport_cap
        0x00, 0x05, // bytes 2-3: VPortIndexTop = 5 — adb 0x0.0-0x0.15 vport_index_top
        0xa0, // byte 4: VirtualizationEnable (0x4.31) + VPortStateChange (0x4.29); VClientReregister (0x4.30) clear
        0x00, // byte 5: reserved (ib_types.h resvd1)
        0x02, // byte 6: VirtualizationRevision = 2 — adb 0x4.8-0x4.15
        0x00, // byte 7: CapabilityMask — adb 0x4.0-0x4.7
    ]);
    let vi = VirtualizationInfo::decode(&wire);
    assert_eq!(vi.vport_cap, 63);
    assert_eq!(vi.vport_index_top, 5);
    assert!(vi.virtualization_enable);
    assert!(!vi.vclient_reregister);
    assert!(vi.vport_state_change);
    assert_eq!(vi.virtualization_revision, 2);
    assert_eq!(vi.capability_mask, 0);
    assert_eq!(vi.to_data(), wire);
    // VClientReregister alone is 0x40 (ib_types.h IB_VIRTUALIZATION_INFO_VCLIENT_REREGISTER_BIT).
    let rereg = VirtualizationInfo {
        vclient_reregister: true,
        capability_mask: 0x81,
        ..VirtualizationInfo::default()
    };
    assert_eq!(&rereg.to_data()[4..8], &[0x40, 0, 0, 0x81]);
    // Reserved bits (byte 4 bits 4..0, byte 5, bytes 8..) are dropped.
    let mut dirty = wire;
    dirty[4] |= 0x1f;
    dirty[5] = 0xff;
    dirty[63] = 0xff;
    assert_eq!(VirtualizationInfo::decode(&dirty).to_data(), wire);
}

#[test]
fn vport_info_golden() {
    #[rustfmt::skip]
    let mut wire = [0u8; 64];
    wire[..28].copy_from_slice(&[
        0x4c, // byte 0: state 4 (Active) bits 7..4, ClientReregister bit 3, LIDRequired bit 2 — ib_types.h shifts 4/3/2
        0x08, // byte 1: GUIDCap = 8 — ib_types.h guid_cap
        0x00, 0x21, // bytes 2-3: CapabilityMask = IsSM | IsCM — ib_types.h cap_mask
        0x00, 0x07, // bytes 4-5: P_KeyViolations = 7
        0x01, 0x02, // bytes 6-7: Q_KeyViolations = 0x0102
        0x00, 0x42, // bytes 8-9: VPortLID = 0x42
        0x00, 0x03, // bytes 10-11: LIDByVPortIndex = 3
        0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x10, 0x05, // bytes 12-19: PortGUID
        0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, // bytes 20-27: PortProfile
    ]);
    let vp = VPortInfo::decode(&wire);
    assert_eq!(vp.vport_state, 4);
    assert_eq!(vp.state(), Some(PortState::Active));
    assert!(vp.client_reregister);
    assert!(vp.lid_required);
    assert_eq!(vp.guid_cap, 8);
    assert_eq!(
        vp.capability_mask,
        VPortInfo::CAP_IS_SM | VPortInfo::CAP_IS_CM_SUPPORTED
    );
    assert_eq!(vp.p_key_violations, 7);
    assert_eq!(vp.q_key_violations, 0x0102);
    assert_eq!(vp.vport_lid, Lid(0x42));
    assert_eq!(vp.lid_by_vport_index, 3);
    assert_eq!(vp.port_guid, Guid(0x0002_c903_0000_1005));
    assert_eq!(vp.port_profile, 0x1122_3344_5566_7788);
    assert_eq!(vp.to_data(), wire);

    let mut down = VPortInfo::default();
    down.set_state(PortState::Init);
    assert_eq!(down.to_data()[0], 0x20, "Init (2) in the high nibble");
    let lid_req = VPortInfo {
        lid_required: true,
        ..VPortInfo::default()
    };
    assert_eq!(lid_req.to_data()[0], 0x04);
    // Bits 1..0 of byte 0 and bytes 28.. are reserved.
    let mut dirty = wire;
    dirty[0] |= 0x03;
    dirty[28] = 0xff;
    assert_eq!(VPortInfo::decode(&dirty).to_data(), wire);
    assert_eq!(VPortInfo::modifier(9), 9);
    assert_eq!(VPortInfo::split_modifier(0x0001_0009), 9);
}

#[test]
fn vnode_info_golden() {
    #[rustfmt::skip]
    let mut wire = [0u8; 64];
    wire[..12].copy_from_slice(&[
        0x00, 0x40, // bytes 0-1: PartitionCap = 64 — ib_types.h partition_cap
        0x01, // byte 2: LocalPortNum — local_port_num
        0x01, // byte 3: NumPorts — num_ports
        0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x20,
        0x00, // bytes 4-11: VNodeGUID — vnode_guid
    ]);
    let vn = VNodeInfo::decode(&wire);
    assert_eq!(
        vn,
        VNodeInfo {
            partition_cap: 64,
            local_port_num: 1,
            num_ports: 1,
            vnode_guid: Guid(0x0002_c903_0000_2000),
        }
    );
    assert_eq!(vn.to_data(), wire);
    assert_eq!(VNodeInfo::modifier(2), 2);
}

#[test]
fn vport_state_golden() {
    let mut wire = [0u8; 64];
    wire[0] = 0x41; // vport 0 Active (high nibble, adb 0x0.28), vport 1 Down (low nibble)
    wire[1] = 0x23; // vport 2 Init, vport 3 Armed
    wire[63] = 0x04; // vport 127 Active, low nibble of the last byte
    let vs = VPortState::decode(&wire);
    assert_eq!(vs.state(0), Some(PortState::Active));
    assert_eq!(vs.state(1), Some(PortState::Down));
    assert_eq!(vs.state(2), Some(PortState::Init));
    assert_eq!(vs.state(3), Some(PortState::Armed));
    assert_eq!(vs.state(126), Some(PortState::NoChange));
    assert_eq!(vs.state(127), Some(PortState::Active));
    assert_eq!(vs.state(128), None);
    assert_eq!(vs.to_data(), wire);
    assert_eq!(VPortState::locate(0), (0, 0));
    assert_eq!(VPortState::locate(127), (0, 127));
    assert_eq!(VPortState::locate(130), (1, 2));
    assert_eq!(VPortState::modifier(1), 1);
    assert_eq!(VPortState::split_modifier(1), 1);
}

#[test]
fn vnode_description_golden() {
    let d = VNodeDescription {
        desc: NodeDescription::from_text("vm-7 mlx5_3"),
    };
    let wire = d.to_data();
    assert_eq!(&wire[..11], b"vm-7 mlx5_3");
    assert!(wire[11..].iter().all(|&b| b == 0));
    assert_eq!(VNodeDescription::decode(&wire).desc.text(), "vm-7 mlx5_3");
    assert_eq!(VNodeDescription::modifier(4), 4);
}

#[test]
fn vport_guid_info_and_pkey_table_golden() {
    let mut g = VPortGuidInfo::default();
    g.guids[0] = Guid(0x0002_c903_0000_1005);
    g.guids[7] = Guid(0x0102_0304_0506_0708);
    let wire = g.to_data();
    assert_eq!(
        &wire[..8],
        &[0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x10, 0x05]
    );
    assert_eq!(&wire[56..], &[1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(VPortGuidInfo::decode(&wire), g);

    let mut p = VPortPKeyTable::default();
    p.keys[0] = PKey::DEFAULT_FULL;
    p.keys[31] = PKey(0x8123);
    let wire = p.to_data();
    assert_eq!(&wire[..2], &[0xff, 0xff]);
    assert_eq!(&wire[62..], &[0x81, 0x23]);
    assert_eq!(VPortPKeyTable::decode(&wire), p);

    // Modifier: vport index in bits 31..16, block in bits 15..0.
    assert_eq!(VPortGuidInfo::modifier(3, 1), 0x0003_0001);
    assert_eq!(VPortPKeyTable::modifier(0xffff, 2), 0xffff_0002);
    assert_eq!(VPortPKeyTable::split_modifier(0xffff_0002), (0xffff, 2));
    assert_eq!(VPortGuidInfo::split_modifier(0x0003_0001), (3, 1));
    assert_eq!(vport_block_modifier(7, 9), 0x0007_0009);
    assert_eq!(split_vport_block_modifier(0x0007_0009), (7, 9));
    assert_eq!(vport_modifier(0x1234), 0x1234);
}

#[test]
fn vport_info_rides_in_an_smp() {
    let vp = VPortInfo {
        vport_state: 2,
        lid_required: true,
        vport_lid: Lid(0x77),
        port_guid: Guid(0x10),
        ..VPortInfo::default()
    };
    let smp = Smp::lid_set(5, VPortInfo::modifier(3), &vp);
    let w = smp.encode();
    assert_eq!(&w[16..18], &[0xff, 0xb1], "AttributeID 0xFFB1");
    assert_eq!(&w[20..24], &[0, 0, 0, 3], "AttributeModifier = vport index");
    assert_eq!(w[64], 0x24, "data byte 0: state 2, LIDRequired");
    let back = Smp::decode(&w).unwrap();
    assert_eq!(back.attr::<VPortInfo>().unwrap(), vp);
    assert!(back.attr::<VPortState>().is_err());
}
