//! Round trips of every attribute, both SMP forms, the MAD/SA/RMPP headers and the Notice
//! details: table-driven cases and proptest properties. Every defined bit must survive
//! decode -> encode; reserved bits (listed by hand per attribute below) must come back 0.

use fabric::{Guid, Lid, PKey, PhysState, PortState};
use mad::{
    AttributeId, GuidInfo, LinearForwardingTable, MadHeader, Method, MgmtClass,
    MulticastForwardingTable, NodeDescription, NodeInfo, Notice, NoticeDetails, PKeyTable,
    PortInfo, ProducerType, RmppHeader, SaMad, SlToVlTable, SmInfo, Smp, SmpAttribute, SwitchInfo,
    VNodeDescription, VNodeInfo, VPortGuidInfo, VPortInfo, VPortPKeyTable, VPortState,
    VirtualizationInfo, VlArbEntry, VlArbitrationTable,
};
use proptest::prelude::*;

/// The defined-bit mask of each attribute, written by hand from the layouts (1 = defined).
fn expected_mask(id: AttributeId) -> [u8; 64] {
    let mut m = [0xffu8; 64];
    match id {
        AttributeId::NODE_INFO => m[40..].fill(0), // NodeInfo is 40 bytes
        AttributeId::PORT_INFO => {
            m[34] = 0xc7; // bits 274-276 reserved
            m[52] = 0x1f; // bits 416-418 reserved
            m[56] = 0x7f; // bit 448 reserved
            m[63] = 0x1f; // bits 504-506 reserved
        }
        AttributeId::SWITCH_INFO => {
            m[16] = 0xf8; // bits 133-135 reserved
            m[17] = 0; // reserved
            m[20..].fill(0); // SwitchInfo ends at byte 19
        }
        AttributeId::SM_INFO => m[21..].fill(0),
        AttributeId::SL_TO_VL_TABLE => m[8..].fill(0),
        AttributeId::VL_ARBITRATION_TABLE => {
            for i in 0..32 {
                m[2 * i] = 0x0f; // VL in bits 3..0, bits 7..4 reserved
            }
        }
        AttributeId::VIRTUALIZATION_INFO => {
            m[4] = 0xe0; // bits 7..5 defined, 4..0 reserved
            m[5] = 0; // reserved (ib_types.h resvd1)
            m[8..].fill(0); // reserved (ib_types.h resvd2)
        }
        AttributeId::VPORT_INFO => {
            m[0] = 0xfc; // state 7..4, rereg 3, LIDRequired 2; bits 1..0 reserved
            m[28..].fill(0); // reserved (ib_types.h resvd2)
        }
        AttributeId::VNODE_INFO => m[12..].fill(0), // reserved (ib_types.h resvd)
        // NodeDescription, LFT, MFT, P_KeyTable, GUIDInfo, Notice, VPortState,
        // VNodeDescription, VPortGUIDInfo, VPortP_KeyTable: every bit defined
        _ => {}
    }
    m
}

fn check_bytes<T: SmpAttribute + PartialEq + std::fmt::Debug>(b: &[u8; 64]) {
    let v = T::decode(b);
    let e = v.to_data();
    let mask = expected_mask(T::ID);
    for i in 0..64 {
        assert_eq!(e[i], b[i] & mask[i], "{} byte {i}", T::NAME);
    }
    assert_eq!(T::decode(&e), v, "{} decode(encode(x)) == x", T::NAME);
    // The slice forms agree with the array forms.
    let mut out = vec![0u8; T::LEN];
    v.encode_slice(&mut out).unwrap();
    assert_eq!(&out[..], &e[..T::LEN]);
    assert_eq!(T::decode_slice(&out).unwrap(), v);
    assert!(T::decode_slice(&out[..T::LEN - 1]).is_err());
}

fn check_value<T: SmpAttribute + PartialEq + std::fmt::Debug>(v: &T) {
    let e = v.to_data();
    assert_eq!(&T::decode(&e), v, "{}", T::NAME);
    check_bytes::<T>(&e);
}

fn check_all_bytes(b: &[u8; 64]) {
    check_bytes::<NodeInfo>(b);
    check_bytes::<NodeDescription>(b);
    check_bytes::<PortInfo>(b);
    check_bytes::<SwitchInfo>(b);
    check_bytes::<LinearForwardingTable>(b);
    check_bytes::<MulticastForwardingTable>(b);
    check_bytes::<PKeyTable>(b);
    check_bytes::<SmInfo>(b);
    check_bytes::<GuidInfo>(b);
    check_bytes::<SlToVlTable>(b);
    check_bytes::<VlArbitrationTable>(b);
    check_bytes::<Notice>(b);
    check_bytes::<VirtualizationInfo>(b);
    check_bytes::<VPortInfo>(b);
    check_bytes::<VNodeInfo>(b);
    check_bytes::<VPortState>(b);
    check_bytes::<VNodeDescription>(b);
    check_bytes::<VPortGuidInfo>(b);
    check_bytes::<VPortPKeyTable>(b);
}

#[test]
fn masks_match_the_layouts() {
    // Decoding all-ones then encoding yields exactly the defined bits: no field overlaps
    // another or a reserved range, and none is missing.
    check_all_bytes(&[0xff; 64]);
    check_all_bytes(&[0x00; 64]);
    check_all_bytes(&[0xa5; 64]);
    check_all_bytes(&[0x5a; 64]);
}

#[test]
fn table_driven_attribute_cases() {
    check_value(&NodeInfo::default());
    check_value(&NodeInfo {
        base_version: 1,
        class_version: 1,
        node_type: 1,
        num_ports: 2,
        system_image_guid: Guid(0x0002_c903_0000_1000),
        node_guid: Guid(0x0002_c903_0000_1000),
        port_guid: Guid(0x0002_c903_0000_1001),
        partition_cap: 128,
        device_id: 0x1017,
        revision: 0,
        local_port_num: 1,
        vendor_id: 0x0002c9,
    });
    check_value(&NodeInfo {
        node_type: 9, // undefined type stays as it is
        vendor_id: 0x00ff_ffff,
        ..NodeInfo::default()
    });
    check_value(&NodeDescription::from_text("MF0;sw-leaf-01:MQM8700/U1"));
    check_value(&NodeDescription::from_text(&"x".repeat(80)));
    let mut pi = PortInfo {
        lid: Lid(0xbfff),
        lmc: 7,
        port_state: 5, // ActiveDefer: not a fabric PortState, still round-trips
        port_phys_state: 15,
        ..PortInfo::default()
    };
    check_value(&pi);
    assert_eq!(PortInfo::decode(&pi.to_data()).state(), None);
    pi.set_state(PortState::Armed);
    pi.set_phys_state(PhysState::Polling);
    check_value(&pi);
    check_value(&PortInfo {
        m_key: u64::MAX,
        gid_prefix: 0xfec0_0000_0000_0000,
        capability_mask: u32::MAX,
        link_round_trip_latency: 0x00ff_ffff,
        subnet_timeout: 31,
        resp_time_value: 31,
        hoq_life: 31,
        vl_stall_count: 7,
        link_speed_ext_enabled: 31,
        client_reregister: true,
        ..PortInfo::default()
    });
    check_value(&SwitchInfo {
        linear_fdb_cap: 49152,
        linear_fdb_top: 13284,
        life_time_value: 31,
        port_state_change: true,
        ..SwitchInfo::default()
    });
    check_value(&LinearForwardingTable::default());
    check_value(&LinearForwardingTable { ports: [7; 64] });
    let mut mft = MulticastForwardingTable::default();
    mft.port_masks[0] = 0x8001;
    mft.port_masks[31] = 0xffff;
    check_value(&mft);
    assert_eq!(MulticastForwardingTable::modifier(2, 0x1ff), 0x2000_01ff);
    assert_eq!(
        MulticastForwardingTable::split_modifier(0x2000_01ff),
        (2, 0x1ff)
    );
    let mut pk = PKeyTable::default();
    pk.keys[0] = PKey::DEFAULT_FULL;
    pk.keys[5] = PKey(0x8005);
    check_value(&pk);
    check_value(&SmInfo {
        guid: Guid(1),
        sm_key: 2,
        act_count: 3,
        priority: 15,
        sm_state: 2,
    });
    let mut gi = GuidInfo::default();
    gi.guids[0] = Guid(0x0002_c903_0000_1001);
    gi.guids[7] = Guid(u64::MAX);
    check_value(&gi);
    let mut sl = SlToVlTable::default();
    for (i, v) in sl.vl.iter_mut().enumerate() {
        *v = (i % 8) as u8;
    }
    sl.vl[15] = 15;
    check_value(&sl);
    assert_eq!(sl.to_data()[0], 0x01, "SL0 high nibble, SL1 low nibble");
    let mut va = VlArbitrationTable::default();
    va.entries[0] = VlArbEntry { vl: 0, weight: 255 };
    va.entries[31] = VlArbEntry { vl: 7, weight: 4 };
    check_value(&va);
    assert_eq!(
        VlArbitrationTable::modifier(VlArbitrationTable::HIGH_0_31, 5),
        0x0003_0005
    );
    check_value(&Notice::generic(
        Notice::TYPE_SECURITY,
        ProducerType::CA,
        257,
        Lid(3),
        &NoticeDetails::BadKey {
            lid1: Lid(3),
            lid2: Lid(4),
            key: 0x8001,
            sl: 2,
            qp1: 0x00ab_cdef,
            qp2: 1,
            gid1: [1; 16],
            gid2: [2; 16],
        },
    ));
    check_value(&Notice {
        is_generic: false,
        notice_type: 0x7f,
        producer_type_or_vendor_id: 0x0002c9,
        trap_number_or_device_id: 0x1234,
        toggle: true,
        count: 0x7fff,
        ..Notice::default()
    });
}

#[test]
fn table_driven_virtualization_cases() {
    check_value(&VirtualizationInfo::default());
    check_value(&VirtualizationInfo {
        vport_cap: u16::MAX,
        vport_index_top: 0x1234,
        virtualization_enable: true,
        vclient_reregister: true,
        vport_state_change: true,
        virtualization_revision: 0xff,
        capability_mask: 0xff,
    });
    check_value(&VPortInfo {
        vport_state: 15, // undefined state value still round-trips
        client_reregister: true,
        lid_required: true,
        guid_cap: 0xff,
        capability_mask: u16::MAX,
        p_key_violations: u16::MAX,
        q_key_violations: 1,
        vport_lid: Lid(0xbfff),
        lid_by_vport_index: u16::MAX,
        port_guid: Guid(u64::MAX),
        port_profile: u64::MAX,
    });
    check_value(&VNodeInfo {
        partition_cap: u16::MAX,
        local_port_num: 0xff,
        num_ports: 0xff,
        vnode_guid: Guid(u64::MAX),
    });
    let mut vs = VPortState::default();
    for (i, s) in vs.states.iter_mut().enumerate() {
        *s = (i % 16) as u8;
    }
    check_value(&vs);
    check_value(&VNodeDescription {
        desc: NodeDescription::from_text("vnode"),
    });
    check_value(&VPortGuidInfo {
        guids: [Guid(0x0102_0304_0506_0708); 8],
    });
    check_value(&VPortPKeyTable {
        keys: [PKey(0x7fff); 32],
    });
}

/// One typed-details case per trap the SM handles.
fn details_cases() -> Vec<(u16, NoticeDetails)> {
    vec![
        (64, NoticeDetails::Gid { gid: [0xfe; 16] }),
        (67, NoticeDetails::Gid { gid: [0xff; 16] }),
        (128, NoticeDetails::LinkStateChange { lid: Lid(5) }),
        (
            129,
            NoticeDetails::PortError {
                lid: Lid(6),
                port: 3,
            },
        ),
        (
            131,
            NoticeDetails::PortError {
                lid: Lid(6),
                port: 36,
            },
        ),
        (
            144,
            NoticeDetails::CapabilityChange {
                lid: Lid(9),
                other_local_changes: true,
                capability_mask: 0x0050_c048,
                change_flags: 0x003f,
                capability_mask2: 0x30,
            },
        ),
        (
            145,
            NoticeDetails::SystemImageGuidChange {
                lid: Lid(10),
                system_image_guid: Guid(0x0002_c903_0000_0042),
            },
        ),
        (
            256,
            NoticeDetails::BadMKey {
                lid: Lid(11),
                dr_slid: Lid(0xffff),
                method: 2,
                attr_id: 0x15,
                attr_mod: 1,
                m_key: 0xdead_beef,
                dr_notice: true,
                dr_path_truncated: false,
                dr_hop_count: 63,
                dr_return_path: [4; 30],
            },
        ),
        (
            258,
            NoticeDetails::BadKey {
                lid1: Lid(1),
                lid2: Lid(2),
                key: 0x8001_0000,
                sl: 15,
                qp1: 0x00ff_ffff,
                qp2: 0x0012_3456,
                gid1: [3; 16],
                gid2: [4; 16],
            },
        ),
        (
            259,
            NoticeDetails::SwitchPKeyViolation {
                data_valid: 0x0007,
                lid1: Lid(1),
                lid2: Lid(2),
                pkey: PKey(0x8002),
                sl: 1,
                qp1: 2,
                qp2: 3,
                gid1: [5; 16],
                gid2: [6; 16],
                switch_lid: Lid(12),
                port: 17,
            },
        ),
        (300, NoticeDetails::Other([9; 54])),
    ]
}

#[test]
fn notice_details_cases() {
    for (trap, d) in details_cases() {
        let raw = d.encode();
        assert_eq!(NoticeDetails::decode(trap, &raw), d, "trap {trap}");
        let n = Notice::generic(Notice::TYPE_INFO, ProducerType::SWITCH, trap, Lid(1), &d);
        let back = Notice::decode(&n.to_data());
        assert_eq!(back.details(), d, "trap {trap} through the Notice");
        assert_eq!(back.trap_number(), Some(trap));
        // The 80-byte SA form carries IssuerGID too.
        let mut full = n;
        full.issuer_gid = [0xfe; 16];
        assert_eq!(Notice::decode_full(&full.encode_full()), full);
    }
    // Vendor notices are never typed.
    let mut v = Notice::generic(
        0,
        ProducerType::CA,
        128,
        Lid(1),
        &NoticeDetails::Other([1; 54]),
    );
    v.is_generic = false;
    assert_eq!(v.details(), NoticeDetails::Other([1; 54]));
}

fn smp_cases() -> Vec<Smp> {
    let mut v = vec![
        Smp::lid_get(1, AttributeId::NODE_INFO, 0),
        Smp::lid_get(u64::MAX, AttributeId::PORT_INFO, 36).with_m_key(0x1122_3344_5566_7788),
        Smp::lid_set(2, 0x0005_0001, &PKeyTable::default()),
        Smp::dr_get(3, AttributeId::NODE_DESCRIPTION, 0, &[]).unwrap(),
        Smp::dr_get(4, AttributeId::SWITCH_INFO, 0, &[1, 2, 3, 4, 5]).unwrap(),
        Smp::dr_get(5, AttributeId::NODE_INFO, 0, &[255; 63]).unwrap(),
        Smp::dr_set(6, 1, &[1, 17], &PortInfo::default())
            .unwrap()
            .with_dr_lids(Lid(1), Lid(0x0203)),
    ];
    let mut resp = Smp::dr_get(7, AttributeId::SM_INFO, 0, &[3, 3])
        .unwrap()
        .make_response();
    resp.hop_pointer = 3;
    resp.return_path[1] = 9;
    resp.return_path[2] = 10;
    resp.status = 0x7fff;
    v.push(resp);
    let mut lresp = Smp::lid_get(8, AttributeId::SM_INFO, 0).make_response();
    lresp.status = 0xffff;
    v.push(lresp);
    v
}

#[test]
fn table_driven_smp_cases() {
    for smp in smp_cases() {
        let w = smp.encode();
        assert_eq!(Smp::decode(&w).unwrap(), smp);
        assert_eq!(Smp::decode_slice(&w).unwrap(), smp);
        assert!(Smp::decode_slice(&w[..255]).is_err());
        let mut long = w.to_vec();
        long.push(0);
        assert!(Smp::decode_slice(&long).is_err());
        let h = MadHeader::decode(&w).unwrap();
        assert_eq!(h, smp.header());
        assert_eq!(h.tid, smp.tid);
        assert_eq!(h.attr_id, smp.attr_id);
    }
    assert_eq!(
        Smp::dr_get(1, AttributeId::NODE_INFO, 0, &[1; 64]),
        Err(mad::MadError::PathTooLong { len: 64 })
    );
    let mut w = Smp::lid_get(1, AttributeId::NODE_INFO, 0).encode();
    w[1] = 0x03;
    assert!(matches!(
        Smp::decode(&w),
        Err(mad::MadError::WrongClass { class: 3, .. })
    ));
    // Attribute helpers check the attribute id.
    let smp = Smp::lid_get(1, AttributeId::NODE_INFO, 0);
    assert_eq!(
        smp.attr::<PortInfo>(),
        Err(mad::MadError::AttributeMismatch {
            expected: 0x15,
            found: 0x11
        })
    );
    // Methods.
    assert_eq!(Method::GET.response(), Method::GET_RESP);
    assert_eq!(Method::SET.response(), Method::GET_RESP);
    assert_eq!(Method::GET_TABLE.response(), Method::GET_TABLE_RESP);
    assert_eq!(Method::REPORT.response(), Method::REPORT_RESP);
    assert_eq!(Method::DELETE.response(), Method::DELETE_RESP);
    assert!(Method::TRAP_REPRESS.0 == 0x07 && !Method::TRAP.is_response());
    // Trap / TrapRepress (IBA 13.4.6.2: the SM answers a Trap with TrapRepress, 0x07).
    let notice = Notice::generic(
        Notice::TYPE_URGENT,
        ProducerType::SWITCH,
        128,
        Lid(4),
        &NoticeDetails::LinkStateChange { lid: Lid(4) },
    );
    let trap = Smp::trap(77, &notice);
    let w = trap.encode();
    assert_eq!((w[1], w[3]), (0x01, 0x05));
    assert_eq!(&w[16..18], &[0x00, 0x02]);
    let back = Smp::decode(&w).unwrap();
    assert_eq!(back.attr::<Notice>().unwrap(), notice);
    let repress = back.make_response();
    assert_eq!(repress.method, Method::TRAP_REPRESS);
    assert_eq!(repress.tid, 77);
    let busy = Smp::lid_get(1, AttributeId::NODE_INFO, 0)
        .make_response()
        .with_status(mad::MadStatus::BUSY);
    assert_eq!(&busy.encode()[4..6], &[0, 1]);
    assert!(!busy.mad_status().is_ok());
    assert_eq!(mad::MadStatus::INVALID_FIELD.code(), 7);
}

/// Clears the reserved bytes of a 256-byte SMP image the way encode does.
fn smp_reserved_cleared(b: &[u8; 256]) -> [u8; 256] {
    let mut e = *b;
    e[18] = 0;
    e[19] = 0;
    if b[1] == 0x81 {
        e[36..64].fill(0);
    } else {
        e[6] = 0;
        e[7] = 0;
        e[32..64].fill(0);
        e[128..].fill(0);
    }
    e
}

fn arr64() -> impl Strategy<Value = [u8; 64]> {
    prop::collection::vec(any::<u8>(), 64).prop_map(|v| v.try_into().unwrap())
}

fn arr256() -> impl Strategy<Value = [u8; 256]> {
    prop::collection::vec(any::<u8>(), 256).prop_map(|v| v.try_into().unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn every_attribute_round_trips(b in arr64()) {
        check_all_bytes(&b);
    }

    #[test]
    fn smp_round_trips(mut b in arr256(), dr in any::<bool>(), hops in 0u8..=63) {
        b[1] = if dr { 0x81 } else { 0x01 };
        if dr {
            b[7] = hops;
        }
        let smp = Smp::decode(&b).unwrap();
        let e = smp.encode();
        prop_assert_eq!(&e[..], &smp_reserved_cleared(&b)[..]);
        prop_assert_eq!(Smp::decode(&e).unwrap(), smp);
    }

    #[test]
    fn smp_decode_rejects_or_accepts_without_panic(b in arr256()) {
        match Smp::decode(&b) {
            Ok(smp) => {
                prop_assert!(smp.class.is_smp());
                prop_assert!(!smp.is_directed() || smp.hop_count <= 63);
            }
            Err(_) => prop_assert!(!MgmtClass(b[1]).is_smp() || (b[1] == 0x81 && b[7] > 63)),
        }
    }

    #[test]
    fn mad_header_round_trips_exactly(b in prop::collection::vec(any::<u8>(), 24)) {
        let h = MadHeader::decode(&b).unwrap();
        let mut out = [0u8; 24];
        h.encode(&mut out).unwrap();
        prop_assert_eq!(&out[..], &b[..]);
    }

    #[test]
    fn rmpp_round_trips_exactly(b in prop::collection::vec(any::<u8>(), 12)) {
        let a: [u8; 12] = b.clone().try_into().unwrap();
        let r = RmppHeader::decode_array(&a);
        let mut out = [0u8; 12];
        r.encode_array(&mut out);
        prop_assert_eq!(&out[..], &b[..]);
    }

    #[test]
    fn sa_mad_round_trips(mut b in arr256()) {
        b[1] = 0x03;
        let m = SaMad::decode(&b).unwrap();
        let mut expect = b;
        expect[46] = 0;
        expect[47] = 0;
        prop_assert_eq!(&m.encode()[..], &expect[..]);
        prop_assert_eq!(SaMad::decode(&m.encode()).unwrap(), m);
    }

    #[test]
    fn notice_full_round_trips_exactly(b in prop::collection::vec(any::<u8>(), 80)) {
        let a: [u8; 80] = b.clone().try_into().unwrap();
        prop_assert_eq!(&Notice::decode_full(&a).encode_full()[..], &b[..]);
    }

    #[test]
    fn notice_details_are_idempotent(
        trap in prop::sample::select(vec![64u16, 65, 66, 67, 128, 129, 130, 131, 144, 145, 256, 257, 258, 259, 1000]),
        b in prop::collection::vec(any::<u8>(), 54),
    ) {
        let a: [u8; 54] = b.try_into().unwrap();
        let d = NoticeDetails::decode(trap, &a);
        let e = d.encode();
        prop_assert_eq!(NoticeDetails::decode(trap, &e), d);
        // Every byte the view keeps equals the input byte.
        let mask = NoticeDetails::decode(trap, &[0xff; 54]).encode();
        for i in 0..54 {
            prop_assert_eq!(e[i], a[i] & mask[i]);
        }
    }
}

#[test]
fn sa_records_walk_by_attribute_offset() {
    // Three 40-byte NodeInfos at a stride of 6 * 8 = 48 bytes, then padding.
    let mut payload = vec![0u8; 48 * 3 + 20];
    for i in 0..3u8 {
        let ni = NodeInfo {
            num_ports: i + 1,
            ..NodeInfo::default()
        };
        ni.encode_slice(&mut payload[48 * usize::from(i)..])
            .unwrap();
    }
    let recs: Vec<NodeInfo> = mad::sa_records(&payload, 6, NodeInfo::LEN)
        .unwrap()
        .map(|r| NodeInfo::decode_slice(r).unwrap())
        .collect();
    assert_eq!(
        recs.iter().map(|n| n.num_ports).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    assert_eq!(mad::sa_records(&payload, 0, 40).unwrap().count(), 0);
    assert_eq!(
        mad::sa_records(&payload, 4, 40).map(|_| ()),
        Err(mad::MadError::BadAttributeLength {
            what: "SA record (AttributeOffset * 8)",
            len: 40,
            max: 32
        })
    );
}

#[test]
fn sa_records_terminate_for_zero_length_records() {
    let payload = [0u8; 200];
    assert_eq!(mad::sa_records(&payload, 1, 0).unwrap().count(), 25);
    assert_eq!(mad::sa_records(&[], 1, 0).unwrap().count(), 0);
    assert_eq!(mad::sa_records(&payload, 25, 200).unwrap().count(), 1);
}
