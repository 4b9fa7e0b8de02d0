//! Golden vectors captured from real tools on this machine: ibsim 0.10 simulating
//! /usr/share/doc/ibsim-utils/net-examples/net.2sw2path4hca after one OpenSM 3.3.23 sweep,
//! read with infiniband-diags smpdump (data areas; requests from `smpdump -d -d -d`, which
//! prints the 256 bytes libibmad encoded). The fields asserted are what smpquery printed
//! for the same attributes.

mod common;
use common::{hex, hex_arr};

use fabric::{Guid, Lid, NodeType, PhysState, PortState};
use mad::{
    AttributeId, LinearForwardingTable, NodeDescription, NodeInfo, PKeyTable, PortInfo, Smp,
    SmpAttribute, SwitchInfo,
};

/// Asserts that decoding then encoding returns the captured bytes exactly.
fn round_trips<T: SmpAttribute>(data: &[u8; 64]) -> T {
    let v = T::decode(data);
    assert_eq!(
        &v.to_data(),
        data,
        "{} re-encodes to the captured bytes",
        T::NAME
    );
    v
}

#[test]
fn switch_node_info_from_ibsim() {
    // smpdump -D 0,1 0x11   (Switch1 seen from Hca1 port 1)
    let d: [u8; 64] = hex_arr(
        "0101 0208 0000 0000 0020 0000 0000 0000
         0020 0000 0000 0000 0020 0000 0008 0000
         0000 00a1 0100 0000 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000",
    );
    let ni: NodeInfo = round_trips(&d);
    assert_eq!(ni.kind(), Some(NodeType::Switch));
    assert_eq!(ni.num_ports, 8);
    assert_eq!(ni.system_image_guid, Guid(0x20_0000));
    assert_eq!(ni.node_guid, Guid(0x20_0000));
    assert_eq!(ni.port_guid, Guid(0x20_0000));
    assert_eq!(ni.partition_cap, 8);
    assert_eq!(ni.revision, 0xa1);
    assert_eq!(ni.local_port_num, 1);
    assert_eq!(ni.vendor_id, 0);
}

#[test]
fn ca_node_info_three_hops_from_ibsim() {
    // smpdump -D 0,1,3,1 0x11   (Hca2 behind Switch1 -> Switch2)
    let d: [u8; 64] = hex_arr(
        "0101 0102 0000 0000 0010 0003 0000 0000
         0010 0003 0000 0000 0010 0004 0040 0000
         0000 00a1 0100 0000 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000",
    );
    let ni: NodeInfo = round_trips(&d);
    assert_eq!(ni.kind(), Some(NodeType::Ca));
    assert_eq!(ni.num_ports, 2);
    assert_eq!(ni.node_guid, Guid(0x0010_0003));
    assert_eq!(ni.port_guid, Guid(0x0010_0004));
    assert_eq!(ni.partition_cap, 64);
    assert_eq!(ni.local_port_num, 1);
}

#[test]
fn switch_info_from_ibsim() {
    // smpdump -D 0,1 0x12; smpquery printed LinearFdbCap 30720, McastFdbCap 1024,
    // LinearFdbTop 6, LifeTime 18, PartEnforceCap 64, FilterRawInbound 1, FilterRawOutbound 1.
    let d: [u8; 64] = hex_arr(
        "7800 0000 0400 0006 0000 0090 0000 0040
         3000 0000 0000 0000 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000",
    );
    let si: SwitchInfo = round_trips(&d);
    assert_eq!(si.linear_fdb_cap, 30720);
    assert_eq!(si.random_fdb_cap, 0);
    assert_eq!(si.multicast_fdb_cap, 1024);
    assert_eq!(si.linear_fdb_top, 6);
    assert_eq!(si.default_port, 0);
    assert_eq!(si.life_time_value, 18);
    assert!(!si.port_state_change);
    assert_eq!(si.optimized_sl_to_vl_mapping_programming, 0);
    assert_eq!(si.lids_per_port, 0);
    assert_eq!(si.partition_enforcement_cap, 64);
    assert!(!si.inbound_enforcement_cap);
    assert!(!si.outbound_enforcement_cap);
    assert!(si.filter_raw_inbound_cap);
    assert!(si.filter_raw_outbound_cap);
    assert!(!si.enhanced_port0);
    assert_eq!(si.multicast_fdb_top, 0);
}

#[test]
fn ca_port_info_from_ibsim() {
    // smpdump -D 0 0x15 1   (Hca1 port 1, after OpenSM: LID 1, SM LID 1)
    let d: [u8; 64] = hex_arr(
        "0000 0000 0000 0000 fe80 0000 0000 0000
         0001 0001 0050 c048 0000 0ff9 0102 1f02
         7452 0011 4040 0008 0804 e040 0000 0000
         0000 201f 0000 0000 0000 0000 0030 0000",
    );
    let pi: PortInfo = round_trips(&d);
    assert_eq!(pi.gid_prefix, 0xfe80_0000_0000_0000);
    assert_eq!(pi.lid, Lid(1));
    assert_eq!(pi.master_sm_lid, Lid(1));
    assert_eq!(pi.capability_mask, 0x0050_c048);
    assert_eq!(pi.diag_code, 0);
    assert_eq!(pi.m_key_lease_period, 4089);
    assert_eq!(pi.local_port_num, 1);
    assert_eq!(pi.link_width_enabled, 2, "4X");
    assert_eq!(pi.link_width_supported, 0x1f, "1X or 4X or 8X or 12X or 2X");
    assert_eq!(pi.link_width_active, 2);
    assert_eq!(pi.link_speed_supported, 7, "2.5 or 5.0 or 10.0 Gbps");
    assert_eq!(pi.state(), Some(PortState::Active));
    assert_eq!(pi.phys_state(), Some(PhysState::LinkUp));
    assert_eq!(pi.link_down_default_state, 2, "Polling");
    assert_eq!(pi.m_key_protect_bits, 0);
    assert_eq!(pi.lmc, 0);
    assert_eq!(pi.link_speed_active, 1);
    assert_eq!(pi.link_speed_enabled, 1);
    assert_eq!(pi.neighbor_mtu, 4, "2048");
    assert_eq!(pi.master_sm_sl, 0);
    assert_eq!(pi.vl_cap, 4, "VL0-7");
    assert_eq!(pi.vl_high_limit, 0);
    assert_eq!(pi.vl_arbitration_high_cap, 8);
    assert_eq!(pi.vl_arbitration_low_cap, 8);
    assert_eq!(pi.mtu_cap, 4);
    assert_eq!(pi.vl_stall_count, 7);
    assert_eq!(pi.hoq_life, 0);
    assert_eq!(pi.operational_vls, 4);
    assert!(!pi.partition_enforcement_inbound && !pi.partition_enforcement_outbound);
    assert_eq!(pi.guid_cap, 32);
    assert!(!pi.client_reregister);
    assert_eq!(pi.subnet_timeout, 31);
    assert_eq!(pi.resp_time_value, 0);
    assert_eq!(pi.capability_mask2, 0x30);
    assert_eq!(pi.link_speed_ext_active, 0);
}

#[test]
fn switch_port_info_from_ibsim() {
    // smpdump -D 0,1 0x15 3   (Switch1 port 3; HoqLife 18, LocalPort 1 = arrival port)
    let d: [u8; 64] = hex_arr(
        "0000 0000 0000 0000 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0000 0102 1f02
         7452 0011 4040 0008 0804 f240 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000",
    );
    let pi: PortInfo = round_trips(&d);
    assert_eq!(pi.lid, Lid(0));
    assert_eq!(pi.local_port_num, 1);
    assert_eq!(pi.vl_stall_count, 7);
    assert_eq!(pi.hoq_life, 18);
    assert_eq!(pi.state(), Some(PortState::Active));
}

#[test]
fn lft_block_from_ibsim() {
    // smpdump -D 0,1 0x19 0   (Switch1 LFT block 0 as OpenSM programmed it)
    let d: [u8; 64] = hex_arr(
        "ff01 0003 0302 05ff ffff ffff ffff ffff
         ffff ffff ffff ffff ffff ffff ffff ffff
         ffff ffff ffff ffff ffff ffff ffff ffff
         ffff ffff ffff ffff ffff ffff ffff ffff",
    );
    let lft: LinearForwardingTable = round_trips(&d);
    assert_eq!(lft.ports[0], LinearForwardingTable::NO_PATH, "LID 0");
    assert_eq!(lft.ports[1], 1, "LID 1 (Hca1) out of port 1");
    assert_eq!(lft.ports[2], 0, "LID 2 is Switch1 itself: port 0");
    assert_eq!(&lft.ports[3..7], &[3, 3, 2, 5]);
    assert!(lft.ports[7..].iter().all(|&p| p == 0xff));
}

#[test]
fn pkey_block_from_ibsim() {
    // smpdump -D 0 0x16 0   (Hca1 port 1: default partition full, rest empty)
    let d: [u8; 64] = hex_arr(
        "ffff 0000 0000 0000 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000",
    );
    let t: PKeyTable = round_trips(&d);
    assert_eq!(t.keys[0], fabric::PKey::DEFAULT_FULL);
    assert!(t.keys[1..].iter().all(|k| k.0 == 0));
}

#[test]
fn node_description_from_ibsim() {
    // smpdump -D 0,1 0x10
    let d: [u8; 64] = hex_arr(
        "5377 6974 6368 3100 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000",
    );
    let nd: NodeDescription = round_trips(&d);
    assert_eq!(nd.text(), "Switch1");
    assert_eq!(NodeDescription::from_text("Switch1"), nd);
}

#[test]
fn dr_request_three_hops_matches_libibmad() {
    // smpdump -d -d -d -D 0,1,3,1 0x11: the 256 bytes libibmad built ("before send").
    let captured = hex("0181 0101 0000 0003 0000 0000 0000 0123
         0011 0000 0000 0000 0000 0000 0000 0000
         ffff ffff 0000 0000 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000
         0001 0301 0000 0000 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000");
    let ours = Smp::dr_get(0x123, AttributeId::NODE_INFO, 0, &[1, 3, 1]).unwrap();
    assert_eq!(&ours.encode()[..], &captured[..]);
    let decoded = Smp::decode_slice(&captured).unwrap();
    assert_eq!(decoded.hop_count, 3);
    assert_eq!(decoded.path(), &[1, 3, 1]);
    assert!(decoded.dr_slid.is_permissive() && decoded.dr_dlid.is_permissive());
}

#[test]
fn lid_routed_request_matches_libibmad() {
    // smpdump -d -d -d 2 0x15 3: LID-routed Get(PortInfo, port 3) to LID 2.
    let captured = hex("0101 0101 0000 0000 0000 0000 0000 0123
         0015 0000 0000 0003 0000 0000 0000 0000");
    let ours = Smp::lid_get(0x123, AttributeId::PORT_INFO, 3).encode();
    assert_eq!(&ours[..32], &captured[..]);
    assert!(ours[32..].iter().all(|&b| b == 0));
}

#[test]
fn sa_request_matches_libibmad() {
    // saquery -d -d -d --smkey 1 NR: the SA GetTable(NodeRecord) request it built
    // ("SA Request:"), with SM_Key 1 at bytes 36-43 and no RMPP, offset or mask.
    let captured: [u8; 256] = hex_arr(
        "0103 0212 0000 0000 0000 0000 154d 4638
         0011 0000 0000 0000 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0001 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000
         0000 0000 0000 0000 0000 0000 0000 0000",
    );
    let mut ours = mad::SaMad::default();
    ours.header.mad.method = mad::Method::GET_TABLE;
    ours.header.mad.tid = 0x154d_4638;
    ours.header.mad.attr_id = AttributeId::SA_NODE_RECORD;
    ours.header.sm_key = 1;
    assert_eq!(ours.encode(), captured);
    let back = mad::SaMad::decode(&captured).unwrap();
    assert_eq!(back, ours);
    assert!(!back.header.rmpp.is_active());
}
