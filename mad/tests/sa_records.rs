//! SA records: round trips on arbitrary bytes, golden bytes derived by hand from opensm
//! `ib_types.h` (struct members named in the comments), and ComponentMask matching.

use fabric::{Guid, Lid, PKey};
use mad::sa::{
    ClassPortInfo, Gid, InformInfo, InformInfoRecord, LftRecord, LinkRecord, McMemberRecord,
    MultiPathRecord, NodeRecord, PKeyTableRecord, PathRecord, PortInfoRecord, SaRecord,
    ServiceRecord, SlToVlRecord, SmInfoRecord, SwitchInfoRecord, VlArbRecord, comp_match,
    record_matches,
};
use mad::sa::{GuidInfoRecord, MftRecord};
use mad::{Method, NodeDescription, NodeInfo, PKeyTable, SaMad, SmInfo, SmpAttribute};
use mad::{MulticastForwardingTable, SlToVlTable, VlArbitrationTable};
use proptest::prelude::*;

/// decode(bytes) re-encodes to `bytes` with undefined bits cleared, decodes to the same
/// value again, and every record decodes from exactly LEN bytes.
fn round_trip<R: SaRecord>(bytes: &[u8; 200]) {
    let v = R::decode_data(bytes);
    let e = v.to_data();
    let mask = R::decode_data(&[0xFF; 200]).to_data();
    for i in 0..200 {
        assert_eq!(e[i], bytes[i] & mask[i], "{} byte {i}", R::NAME);
    }
    assert_eq!(R::decode_data(&e), v, "{}", R::NAME);
    assert_eq!(R::decode(&bytes[..R::LEN]).as_ref(), Ok(&v));
    assert!(R::decode(&bytes[..R::LEN - 1]).is_err());
    assert_eq!(R::LEN % 8, if R::NAME == "InformInfo" { 4 } else { 0 });
    // Every ComponentMask field lies inside the record.
    for f in R::FIELDS {
        assert!(
            usize::from(f.bit_off) + usize::from(f.width) <= R::LEN * 8,
            "{} {}",
            R::NAME,
            f.name
        );
    }
}

proptest! {
    #[test]
    fn every_record_round_trips(v in proptest::collection::vec(any::<u8>(), 200)) {
        let mut b = [0u8; 200];
        b.copy_from_slice(&v);
        round_trip::<NodeRecord>(&b);
        round_trip::<PortInfoRecord>(&b);
        round_trip::<LinkRecord>(&b);
        round_trip::<SmInfoRecord>(&b);
        round_trip::<SwitchInfoRecord>(&b);
        round_trip::<LftRecord>(&b);
        round_trip::<PKeyTableRecord>(&b);
        round_trip::<PathRecord>(&b);
        round_trip::<MultiPathRecord>(&b);
        round_trip::<McMemberRecord>(&b);
        round_trip::<ServiceRecord>(&b);
        round_trip::<ClassPortInfo>(&b);
        round_trip::<InformInfo>(&b);
        round_trip::<InformInfoRecord>(&b);
        round_trip::<GuidInfoRecord>(&b);
        round_trip::<SlToVlRecord>(&b);
        round_trip::<VlArbRecord>(&b);
        round_trip::<MftRecord>(&b);
    }
}

#[test]
fn path_record_reserved_bits_are_not_kept() {
    // PathRecord reserved: byte 44 bits 6..4, bytes 58-63.
    let m = PathRecord::decode_data(&[0xFF; 200]).to_data();
    assert_eq!(m[44], 0x8F);
    assert_eq!(&m[58..64], &[0; 6]);
    assert_eq!(&m[0..44], &[0xFF; 44][..]);
}

fn gid(prefix: u64, guid: u64) -> Gid {
    Gid::new(prefix, guid)
}

#[test]
fn path_record_golden() {
    let pr = PathRecord {
        service_id: 0x0102_0304_0506_0708,
        dgid: gid(0xfe80_0000_0000_0000, 0x0002_c903_0000_0002),
        sgid: gid(0xfe80_0000_0000_0000, 0x0002_c903_0000_0001),
        dlid: Lid(0x0005),
        slid: Lid(0x0003),
        raw_traffic: false,
        flow_label: 0x12345,
        hop_limit: 0x40,
        tclass: 0x11,
        reversible: true,
        numb_path: 1,
        pkey: 0xFFFF,
        qos_class: 0xABC,
        sl: 0x5,
        mtu_selector: 2,
        mtu: 4,
        rate_selector: 2,
        rate: 3,
        pkt_life_selector: 2,
        pkt_life: 0x12,
        preference: 0,
    };
    let b = pr.to_bytes();
    assert_eq!(b.len(), 64);
    // service_id (ib_path_rec_t bytes 0-7)
    assert_eq!(&b[0..8], &[1, 2, 3, 4, 5, 6, 7, 8]);
    // dgid (8-23), sgid (24-39)
    assert_eq!(&b[8..10], &[0xfe, 0x80]);
    assert_eq!(&b[16..24], &[0x00, 0x02, 0xc9, 0x03, 0, 0, 0, 2]);
    assert_eq!(&b[32..40], &[0x00, 0x02, 0xc9, 0x03, 0, 0, 0, 1]);
    // dlid (40-41), slid (42-43)
    assert_eq!(&b[40..44], &[0x00, 0x05, 0x00, 0x03]);
    // hop_flow_raw (44-47): raw 0, 3 reserved, flow 0x12345, hop 0x40
    assert_eq!(&b[44..48], &[0x01, 0x23, 0x45, 0x40]);
    // tclass (48), num_path (49): reversible bit 7
    assert_eq!(&b[48..50], &[0x11, 0x81]);
    // pkey (50-51), qos_class_sl (52-53)
    assert_eq!(&b[50..54], &[0xFF, 0xFF, 0xAB, 0xC5]);
    // mtu (54), rate (55), pkt_life (56): selector in bits 7..6
    assert_eq!(&b[54..58], &[0x84, 0x83, 0x92, 0x00]);
    assert_eq!(PathRecord::decode(&b), Ok(pr));
}

#[test]
fn mc_member_record_golden() {
    let m = McMemberRecord {
        mgid: Gid::ipoib_broadcast(2, 0x7FFF),
        port_gid: gid(0xfe80_0000_0000_0000, 0x11),
        q_key: 0x0000_0B1B,
        mlid: Lid(0xC000),
        mtu_selector: 2,
        mtu: 4,
        tclass: 0,
        pkey: 0xFFFF,
        rate_selector: 2,
        rate: 3,
        pkt_life_selector: 2,
        pkt_life: 0x12,
        sl: 0,
        flow_label: 0,
        hop_limit: 0,
        scope: 2,
        join_state: 1,
        proxy_join: false,
    };
    let b = m.to_bytes();
    assert_eq!(b.len(), 56);
    // IPoIB broadcast MGID ff12:401b:ffff::ffff:ffff (RFC 4391 §4)
    assert_eq!(
        &b[0..16],
        &[
            0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff
        ]
    );
    assert_eq!(m.mgid.to_string(), "ff12:401b:ffff:0:0:0:ffff:ffff");
    // qkey (32-35), mlid (36-37), mtu (38), tclass (39), pkey (40-41), rate (42), life (43)
    assert_eq!(
        &b[32..44],
        &[
            0, 0, 0x0b, 0x1b, 0xc0, 0x00, 0x84, 0x00, 0xff, 0xff, 0x83, 0x92
        ]
    );
    // scope_state (48): scope 2 in bits 7..4, join state FullMember
    assert_eq!(b[48], 0x21);
    assert_eq!(McMemberRecord::decode(&b), Ok(m));
}

#[test]
fn pkey_table_record_golden() {
    let mut t = PKeyTable::default();
    t.keys[0] = PKey(0xFFFF);
    t.keys[1] = PKey(0x8001);
    let r = PKeyTableRecord {
        lid: Lid(0x0012),
        block: 1,
        port_num: 3,
        table: t,
    };
    let b = r.to_bytes();
    // ib_pkey_table_record_t: lid 0-1, block_num 2-3 (host order, as OpenSM sends it),
    // port_num 4, reserved 5-7, table 8-71
    assert_eq!(
        &b[0..12],
        &[
            0x00, 0x12, 0x01, 0x00, 0x03, 0, 0, 0, 0xff, 0xff, 0x80, 0x01
        ]
    );
    assert_eq!(b.len(), 72);
}

#[test]
fn node_record_golden() {
    let r = NodeRecord {
        lid: Lid(7),
        node_info: NodeInfo {
            base_version: 1,
            class_version: 1,
            node_type: 1,
            num_ports: 2,
            node_guid: Guid(0x0002_c903_0000_0010),
            port_guid: Guid(0x0002_c903_0000_0011),
            local_port_num: 1,
            vendor_id: 0x0002c9,
            ..NodeInfo::default()
        },
        node_desc: NodeDescription::from_text("H1 HCA-1"),
    };
    let b = r.to_bytes();
    // ib_node_record_t: lid 0-1, resv 2-3, node_info 4-43, node_desc 44-107, pad 108-111
    assert_eq!(&b[0..8], &[0, 7, 0, 0, 1, 1, 1, 2]);
    assert_eq!(&b[16..24], &[0x00, 0x02, 0xc9, 0x03, 0, 0, 0, 0x10]);
    assert_eq!(&b[40..44], &[0x01, 0x00, 0x02, 0xc9]);
    assert_eq!(&b[44..52], b"H1 HCA-1");
    assert_eq!(NodeRecord::attr_offset(), 14);
}

#[test]
fn sm_info_and_inform_golden() {
    let r = SmInfoRecord {
        lid: Lid(1),
        sm_info: SmInfo {
            guid: Guid(0x10),
            sm_key: 0,
            act_count: 0x22,
            priority: 15,
            sm_state: 3,
        },
    };
    let b = r.to_bytes();
    // ib_sminfo_record_t: lid 0-1, resv 2-3, guid 4-11, sm_key 12-19, act_count 20-23,
    // pri_state 24 (priority bits 7..4, state bits 3..0)
    assert_eq!(&b[20..25], &[0, 0, 0, 0x22, 0xF3]);
    assert_eq!(SmInfoRecord::attr_offset(), 4);

    let ii = InformInfo {
        gid: Gid::default(),
        lid_range_begin: Lid(0xFFFF),
        lid_range_end: Lid(0),
        is_generic: 1,
        subscribe: 1,
        trap_type: 0xFFFF,
        trap_number: 64,
        qpn: 0x00_0001,
        resp_time_value: 18,
        producer_type: 0xFF_FFFF,
    };
    let b = ii.to_bytes();
    // ib_inform_info_t: gid 0-15, lid_range_begin 16-17, end 18-19, reserved1 20-21,
    // is_generic 22, subscribe 23, trap_type 24-25, trap_num 26-27, qpn_resp_time_val 28-31
    // (QPN bits 31..8, RespTimeValue bits 4..0), reserved2 32, node_type 33-35
    assert_eq!(
        &b[16..36],
        &[
            0xff, 0xff, 0, 0, 0, 0, 1, 1, 0xff, 0xff, 0, 64, 0, 0, 1, 18, 0, 0xff, 0xff, 0xff
        ]
    );
    let rec = InformInfoRecord {
        subscriber_gid: gid(0xfe80_0000_0000_0000, 5),
        enumeration: 2,
        inform_info: ii,
    };
    let rb = rec.to_bytes();
    // ib_inform_info_record_t: subscriber_gid 0-15, enum 16-17, reserved 18-23, inform 24-59
    assert_eq!(&rb[16..18], &[0, 2]);
    assert_eq!(&rb[24 + 16..60], &b[16..36]);
}

#[test]
fn service_record_golden() {
    let mut s = ServiceRecord {
        id: 0x1000_0000_0000_0001,
        gid: gid(0xfe80_0000_0000_0000, 9),
        pkey: 0xFFFF,
        lease: 60,
        ..ServiceRecord::default()
    };
    s.set_name("storage");
    s.data16[7] = 0xBEEF;
    s.data64[1] = 0x0102_0304_0506_0708;
    let b = s.to_bytes();
    assert_eq!(b.len(), 176);
    // ib_service_record_t: service_id 0-7, gid 8-23, pkey 24-25, resv 26-27, lease 28-31,
    // key 32-47, name 48-111, data8 112-127, data16 128-143, data32 144-159, data64 160-175
    assert_eq!(&b[24..32], &[0xff, 0xff, 0, 0, 0, 0, 0, 60]);
    assert_eq!(&b[48..55], b"storage");
    assert_eq!(&b[142..144], &[0xbe, 0xef]);
    assert_eq!(&b[168..176], &[1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(s.name_text(), "storage");
}

#[test]
fn class_port_info_golden() {
    let c = ClassPortInfo {
        base_version: 1,
        class_version: 2,
        capability_mask: 0x0602,
        capability_mask2: 0,
        resp_time_value: 18,
        ..ClassPortInfo::default()
    };
    let b = c.to_bytes();
    // base_ver 0, class_ver 1, cap_mask 2-3, cap_mask2_resp_time 4-7 (resp time bits 4..0)
    assert_eq!(&b[0..8], &[1, 2, 0x06, 0x02, 0, 0, 0, 18]);
}

#[test]
fn link_record_golden() {
    let l = LinkRecord {
        from_lid: Lid(2),
        from_port: 3,
        to_port: 1,
        to_lid: Lid(9),
    };
    assert_eq!(l.to_bytes(), vec![0, 2, 3, 1, 0, 9, 0, 0]);
}

#[test]
fn component_mask_selects_fields() {
    let a = PathRecord {
        slid: Lid(3),
        dlid: Lid(5),
        pkey: 0x8001,
        sl: 2,
        ..PathRecord::default()
    };
    let mut b = a;
    b.dlid = Lid(6);
    assert!(record_matches(PathRecord::CM_SLID, &a, &b));
    assert!(!record_matches(
        PathRecord::CM_SLID | PathRecord::CM_DLID,
        &a,
        &b
    ));
    assert!(record_matches(
        PathRecord::CM_PKEY | PathRecord::CM_SL,
        &a,
        &b
    ));
    b.sl = 3;
    assert!(!record_matches(PathRecord::CM_SL, &a, &b));
    // Bits the table does not name (reserved) never exclude.
    assert!(record_matches(1 << 7, &a, &b));

    // Sub-byte fields: LMC of PortInfoRecord (bit 20) vs PortState (bit 15).
    let mut p = PortInfoRecord::default();
    p.port_info.lmc = 2;
    let mut q = p;
    q.port_info.port_state = 4;
    assert!(record_matches(1 << 20, &p, &q));
    assert!(!record_matches(1 << 15, &p, &q));

    // A NodeDescription (bit 14) compared in full.
    let n1 = NodeRecord {
        node_desc: NodeDescription::from_text("sw1"),
        ..NodeRecord::default()
    };
    let n2 = NodeRecord {
        node_desc: NodeDescription::from_text("sw2"),
        ..NodeRecord::default()
    };
    assert!(!record_matches(1 << 14, &n1, &n2));
    assert!(comp_match(NodeRecord::FIELDS, 0, &[1], &[2]));
}

#[test]
fn multipath_gid_lists() {
    let mut m = MultiPathRecord {
        sgid_count: 2,
        dgid_count: 1,
        ..MultiPathRecord::default()
    };
    m.gids[0] = gid(1, 1);
    m.gids[1] = gid(1, 2);
    m.gids[2] = gid(1, 3);
    assert_eq!(m.sgids(), &[gid(1, 1), gid(1, 2)]);
    assert_eq!(m.dgids(), &[gid(1, 3)]);
    m.sgid_count = 200;
    assert_eq!(m.sgids().len(), 11);
    assert!(m.dgids().is_empty());
    m.service_id = 0xAA00_0000_0000_00BB;
    let b = m.to_bytes();
    assert_eq!(b[13], 0xAA);
    assert_eq!(b[23], 0xBB);
}

#[test]
fn sa_mad_request_and_response() {
    let pr = PathRecord {
        slid: Lid(1),
        ..PathRecord::default()
    };
    let req = SaMad::request(
        Method::GET_TABLE,
        PathRecord::ID,
        0x55,
        PathRecord::CM_SLID,
        pr.to_data(),
    );
    let enc = req.encode();
    assert_eq!(enc[1], 0x03);
    assert_eq!(enc[2], 2);
    assert_eq!(enc[3], 0x12);
    assert_eq!(&enc[16..18], &[0x00, 0x35]);
    assert_eq!(&enc[48..56], &[0, 0, 0, 0, 0, 0, 0, 0x20]);
    let resp = req.response();
    assert_eq!(resp.header.mad.method, Method::GET_TABLE_RESP);
    assert_eq!(resp.header.mad.tid, 0x55);
    assert_eq!(resp.header.comp_mask, PathRecord::CM_SLID);
}

#[test]
fn ipoib_mgid_uses_the_full_key() {
    let g = Gid::ipoib_broadcast(5, 0x0001);
    assert_eq!(g.to_string(), "ff15:401b:8001:0:0:0:ffff:ffff");
    assert!(g.is_multicast());
    assert_eq!(g.mc_scope(), 5);
    assert_eq!(PKeyTable::LEN, 64);
}

#[test]
fn sl_to_vl_record_golden() {
    let mut vl = [0u8; 16];
    for (sl, v) in vl.iter_mut().enumerate() {
        *v = (sl % 8) as u8;
    }
    let r = SlToVlRecord {
        lid: Lid(0x0102),
        in_port: 3,
        out_port: 7,
        table: SlToVlTable { vl },
    };
    let b = r.to_bytes();
    // ib_slvl_table_record_t: lid 0-1, in_port_num 2, out_port_num 3, resv 4-7, slvl_tbl
    // 8-15 (SL0 in the high nibble of byte 8).
    assert_eq!(
        b,
        [
            1, 2, 3, 7, 0, 0, 0, 0, 0x01, 0x23, 0x45, 0x67, 0x01, 0x23, 0x45, 0x67
        ]
    );
    assert_eq!(SlToVlRecord::attr_offset(), 2);
    let q = SlToVlRecord {
        lid: Lid(0x0102),
        out_port: 7,
        ..Default::default()
    };
    // LID (bit 0) and OutputPortNum (bit 2) match; InputPortNum (bit 1) does not.
    assert!(record_matches(0b101, &q, &r));
    assert!(!record_matches(0b111, &q, &r));
}

#[test]
fn vl_arb_record_golden() {
    let mut t = VlArbitrationTable::default();
    t.entries[0].vl = 1;
    t.entries[0].weight = 0x40;
    t.entries[31].vl = 0xF;
    t.entries[31].weight = 0xFF;
    let r = VlArbRecord {
        lid: Lid(0x0005),
        port: 2,
        block: VlArbitrationTable::HIGH_0_31 as u8,
        table: t,
    };
    let b = r.to_bytes();
    // ib_vl_arb_table_record_t: lid 0-1, port_num 2, block_num 3, reserved 4-7, vl_arb_tbl
    // 8-71 (entry i: VL in the low nibble of byte 8+2i, weight at 9+2i).
    assert_eq!(&b[..10], &[0, 5, 2, 3, 0, 0, 0, 0, 0x01, 0x40]);
    assert_eq!(&b[70..], &[0x0F, 0xFF]);
    assert_eq!(b.len(), 72);
    let q = VlArbRecord {
        block: 3,
        ..Default::default()
    };
    assert!(record_matches(0b100, &q, &r));
    assert!(!record_matches(0b110, &q, &r));
}

#[test]
fn mft_record_golden() {
    let mut t = MulticastForwardingTable::default();
    t.port_masks[0] = 0x0006;
    t.port_masks[31] = 0x8001;
    let r = MftRecord {
        lid: Lid(0x0010),
        position: 1,
        block: 0x1FF,
        table: t,
    };
    let b = r.to_bytes();
    // ib_mft_record_t: lid 0-1, position_block_num 2-3 (position bits 15-12, block bits
    // 8-0), resv0 4-7, mft 8-71.
    assert_eq!(&b[..10], &[0x00, 0x10, 0x11, 0xFF, 0, 0, 0, 0, 0x00, 0x06]);
    assert_eq!(&b[70..], &[0x80, 0x01]);
    // The 3 reserved bits between Position and BlockNum are not kept.
    let mut d = [0u8; 200];
    d[2] = 0x1E;
    d[3] = 0x02;
    let back = MftRecord::decode_data(&d);
    assert_eq!((back.position, back.block), (1, 2));
    assert_eq!(&back.to_data()[2..4], &[0x10, 0x02]);
    // Position (bit 1) and BlockNum (bit 3) select their bits only.
    let q = MftRecord {
        position: 1,
        block: 0x1FF,
        ..Default::default()
    };
    assert!(record_matches(0b1010, &q, &r));
    assert!(!record_matches(0b1011, &q, &r));
    let q2 = MftRecord {
        position: 1,
        block: 0x0FF,
        ..Default::default()
    };
    assert!(!record_matches(0b1000, &q2, &r));
    assert!(record_matches(0b0010, &q2, &r));
}
