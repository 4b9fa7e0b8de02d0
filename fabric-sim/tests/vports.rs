//! Virtualization-capable HCAs (issue 26): the SMA's answers to the virtualization
//! attributes, the vport state machine, M_Key, vport LIDs routed through switches, and the
//! delivery rules between vports. The small fabric of `common`: H3 (on S2 port 1, LID 3)
//! and H4 (S2 port 2, LID 4) get vports; the SM sits at H1 (S1 port 1).

mod common;

use common::*;
use fabric::{Guid, Lid, PKey, PortState};
use fabric_sim::{
    Delivery, DropReason, Fault, SimConfig, SimError, VPortSpec, VirtSpec, vport_guid,
};
use mad::{
    MadStatus, NodeInfo, PKeyTable, PortInfo, Smp, SmpAttribute, SwitchInfo, VNodeDescription,
    VNodeInfo, VPortGuidInfo, VPortInfo, VPortPKeyTable, VPortState, VirtualizationInfo,
};

const UNSUP: u16 = MadStatus::METHOD_ATTR_UNSUPPORTED.0;
const INVALID: u16 = MadStatus::INVALID_FIELD.0;
const H3: &[u8] = &[1, 3, 1];
const H4: &[u8] = &[1, 3, 2];
/// Vport LIDs of H3 vports 1 and 2.
const V1_LID: u16 = 20;
const V2_LID: u16 = 21;

/// H3 with vports 1, 2 (LIDRequired) and 3 (shares a LID), VPortCap 4.
fn h3_spec(s: &Small) -> VirtSpec {
    let pf = s.hg(3);
    VirtSpec {
        vport_cap: 4,
        vports: vec![
            VPortSpec::new(vport_guid(pf, 1), true),
            VPortSpec::new(vport_guid(pf, 2), true),
            VPortSpec::new(vport_guid(pf, 3), false),
        ],
    }
}

fn virtualized() -> Small {
    let mut s = small(SimConfig::default());
    let spec = h3_spec(&s);
    s.fab.enable_virtualization(s.hg(3), spec).unwrap();
    s
}

fn v(s: &Small, i: u16) -> Guid {
    vport_guid(s.hg(3), i)
}

fn vstate(s: &Small, i: u16) -> PortState {
    s.fab.vport(v(s, i)).unwrap().state
}

fn get<T: SmpAttribute>(s: &mut Small, path: &[u8], m: u32) -> (u16, T) {
    dr_get::<T>(&mut s.fab, s.sm, path, m).expect("answered")
}

fn set<T: SmpAttribute>(s: &mut Small, path: &[u8], m: u32, val: &T) -> (u16, T) {
    dr_set(&mut s.fab, s.sm, path, m, val).expect("answered")
}

/// Sets VirtualizationEnable on H3.
fn enable(s: &mut Small) {
    let (st, mut vi) = get::<VirtualizationInfo>(s, H3, 0);
    assert_eq!(st, 0);
    vi.virtualization_enable = true;
    let (st, back) = set(s, H3, 0, &vi);
    assert_eq!(st, 0);
    assert!(back.virtualization_enable);
}

/// Sets vport `i` of H3 to `state` (wire value), everything else as read.
fn set_vstate(s: &mut Small, i: u16, state: PortState) -> u16 {
    let (st, mut vp) = get::<VPortInfo>(s, H3, VPortInfo::modifier(i));
    assert_eq!(st, 0);
    vp.set_state(state);
    set(s, H3, VPortInfo::modifier(i), &vp).0
}

/// Writes one P_Key block of vport `i` of the port at `path`.
fn set_vkeys(s: &mut Small, path: &[u8], i: u16, keys: &[u16]) {
    let mut t = VPortPKeyTable::default();
    for (e, k) in t.keys.iter_mut().zip(keys) {
        *e = PKey(*k);
    }
    let (st, back) = set(s, path, VPortPKeyTable::modifier(i, 0), &t);
    assert_eq!(st, 0);
    assert_eq!(back, t);
}

#[test]
fn capability_mask2_and_sma_answers() {
    let mut s = virtualized();
    let (st, pi) = get::<PortInfo>(&mut s, H3, 1);
    assert_eq!(st, 0);
    assert_eq!(
        pi.capability_mask2 & PortInfo::CAP2_IS_VIRTUALIZATION_SUPPORTED,
        0x0004
    );
    assert_ne!(
        pi.capability_mask & PortInfo::CAP_IS_CAPABILITY_MASK2_SUPPORTED,
        0
    );
    let (_, plain) = get::<PortInfo>(&mut s, H4, 1);
    assert_eq!(plain.capability_mask2 & 0x0004, 0, "H4 is not virtualized");

    let (st, vi) = get::<VirtualizationInfo>(&mut s, H3, 0);
    assert_eq!(st, 0);
    assert_eq!(
        (vi.vport_cap, vi.vport_index_top, vi.virtualization_enable),
        (4, 3, false)
    );
    assert_eq!(vi.virtualization_revision, 1);
    assert_eq!(get::<VirtualizationInfo>(&mut s, H3, 1).0, INVALID);
    assert_eq!(get::<VirtualizationInfo>(&mut s, H4, 0).0, UNSUP);
    assert_eq!(get::<VirtualizationInfo>(&mut s, S2_PATH, 0).0, UNSUP);

    let (st, vp) = get::<VPortInfo>(&mut s, H3, VPortInfo::modifier(1));
    assert_eq!(st, 0);
    assert_eq!(vp.port_guid, v(&s, 1));
    assert!(vp.lid_required);
    assert_eq!(vp.state(), Some(PortState::Down));
    assert_eq!(vp.guid_cap, 8);
    let (_, vp3) = get::<VPortInfo>(&mut s, H3, VPortInfo::modifier(3));
    assert!(!vp3.lid_required);
    // Vport 0 is the PF.
    let (_, vp0) = get::<VPortInfo>(&mut s, H3, 0);
    assert_eq!(vp0.port_guid, s.hg(3));
    assert_eq!(vp0.state(), Some(PortState::Init));
    // Index 4 is within VPortCap but not created: Down, no GUID; 5 is beyond the cap.
    let (st, vp4) = get::<VPortInfo>(&mut s, H3, 4);
    assert_eq!(
        (st, vp4.port_guid, vp4.state()),
        (0, Guid(0), Some(PortState::Down))
    );
    assert_eq!(get::<VPortInfo>(&mut s, H3, 5).0, INVALID);
    assert_eq!(get::<VPortInfo>(&mut s, H3, 0x0001_0001).0, INVALID);

    let (st, vn) = get::<VNodeInfo>(&mut s, H3, VNodeInfo::modifier(2));
    assert_eq!(st, 0);
    assert_eq!(vn.vnode_guid, VPortSpec::new(v(&s, 2), true).vnode_guid);
    assert_eq!((vn.num_ports, vn.local_port_num), (1, 1));
    let (_, vn0) = get::<VNodeInfo>(&mut s, H3, 0);
    assert_eq!(vn0.vnode_guid, s.fab.node_guid(s.h[2]).unwrap());
    let (st, vd) = get::<VNodeDescription>(&mut s, H3, VNodeDescription::modifier(1));
    assert_eq!(st, 0);
    assert_eq!(vd.desc.text(), format!("vport {}", v(&s, 1)));
    assert_eq!(get::<VNodeDescription>(&mut s, H3, 0).1.desc.text(), "H3");

    let (st, vs) = get::<VPortState>(&mut s, H3, VPortState::modifier(0));
    assert_eq!(st, 0);
    assert_eq!(vs.state(0), Some(PortState::Init), "vport 0 = the PF");
    for i in 1..=4 {
        assert_eq!(vs.state(i), Some(PortState::Down));
    }
    assert_eq!(vs.states[5], 0, "beyond VPortCap");
    assert_eq!(get::<VPortState>(&mut s, H3, 1).0, INVALID);
    // Read-only attributes refuse Set.
    assert_eq!(set(&mut s, H3, 0, &vs).0, UNSUP);
    assert_eq!(set(&mut s, H3, 1, &vn).0, UNSUP);
    assert_eq!(set(&mut s, H3, 1, &vd).0, UNSUP);
}

#[test]
fn vport_state_machine() {
    let mut s = virtualized();
    s.bring_up();
    // Before VirtualizationEnable every vport stays Down.
    assert_eq!(vstate(&s, 1), PortState::Down);
    assert_eq!(set_vstate(&mut s, 1, PortState::Armed), INVALID);
    enable(&mut s);
    for i in 1..=3 {
        assert_eq!(vstate(&s, i), PortState::Init);
    }
    let (_, vi) = get::<VirtualizationInfo>(&mut s, H3, 0);
    assert!(vi.vport_state_change, "Down -> Init flags VPortStateChange");
    // Writing 1 clears it.
    let (st, back) = set(&mut s, H3, 0, &vi);
    assert_eq!((st, back.vport_state_change), (0, false));

    // Init -> Active, Set of Init, undefined states: refused, nothing changes.
    assert_eq!(set_vstate(&mut s, 1, PortState::Active), INVALID);
    assert_eq!(set_vstate(&mut s, 1, PortState::Init), INVALID);
    let (_, mut bad) = get::<VPortInfo>(&mut s, H3, 1);
    bad.vport_state = 7;
    bad.vport_lid = Lid(99);
    assert_eq!(set(&mut s, H3, 1, &bad).0, INVALID);
    assert_eq!(
        s.fab.vport(v(&s, 1)).unwrap().lid,
        Lid(0),
        "refused Set changed nothing"
    );
    assert_eq!(vstate(&s, 1), PortState::Init);
    // Init -> Armed -> Active by the SM's Sets; no VPortStateChange for them.
    assert_eq!(set_vstate(&mut s, 1, PortState::Armed), 0);
    assert_eq!(vstate(&s, 1), PortState::Armed);
    assert_eq!(set_vstate(&mut s, 1, PortState::Active), 0);
    assert_eq!(vstate(&s, 1), PortState::Active);
    assert_eq!(
        set_vstate(&mut s, 1, PortState::Armed),
        INVALID,
        "Active -> Armed"
    );
    assert!(
        !s.fab
            .virtualization_info(s.hg(3))
            .unwrap()
            .vport_state_change
    );
    let (_, vs) = get::<VPortState>(&mut s, H3, 0);
    assert_eq!(vs.state(1), Some(PortState::Active));
    assert_eq!(vs.state(2), Some(PortState::Init));
    // Vport 0 is managed through PortInfo.
    assert_eq!(set_vstate(&mut s, 0, PortState::Armed), INVALID);

    // The SM sets it Down: Down at once, back to Init after the retrain time.
    let (_, mut vp) = get::<VPortInfo>(&mut s, H3, 1);
    vp.set_state(PortState::Down);
    let q = Smp::dr_set(tid(), 1, H3, &vp).unwrap();
    let t0 = s.fab.now();
    s.fab.send(t0, s.sm, &q).unwrap();
    let retrain = s.fab.config().retrain_ns;
    s.fab.run_until(t0 + retrain / 2);
    let r = s.fab.poll_recv(s.sm).expect("Set answered").1;
    assert_eq!(
        (r.status, VPortInfo::decode(&r.data).state()),
        (0, Some(PortState::Down))
    );
    assert_eq!(vstate(&s, 1), PortState::Down);
    settle(&mut s.fab);
    assert_eq!(vstate(&s, 1), PortState::Init);
    assert!(
        s.fab
            .virtualization_info(s.hg(3))
            .unwrap()
            .vport_state_change
    );

    // The PF's link goes down: every vport Down; it retrains to Init: vports Init again.
    for i in [1, 2] {
        assert_eq!(set_vstate(&mut s, i, PortState::Armed), 0);
    }
    let now = s.fab.now();
    s.fab
        .inject(
            now,
            Fault::LinkDown {
                node: s.h[2],
                port: 1,
            },
        )
        .unwrap();
    for i in 1..=3 {
        assert_eq!(vstate(&s, i), PortState::Down);
    }
    let now = s.fab.now();
    s.fab
        .inject(
            now,
            Fault::LinkUp {
                node: s.h[2],
                port: 1,
            },
        )
        .unwrap();
    settle(&mut s.fab);
    assert_eq!(s.fab.port_state(s.h[2], 1).unwrap(), PortState::Init);
    for i in 1..=3 {
        assert_eq!(vstate(&s, i), PortState::Init);
    }
    // PF only Armed: a vport cannot go Active yet.
    assert_eq!(set_port_state(&mut s.fab, s.sm, H3, 1, 3), 0);
    assert_eq!(set_port_state(&mut s.fab, s.sm, S2_PATH, 1, 3), 0);
    assert_eq!(set_vstate(&mut s, 2, PortState::Armed), 0);
    assert_eq!(set_vstate(&mut s, 2, PortState::Active), INVALID);
    assert_eq!(set_port_state(&mut s.fab, s.sm, H3, 1, 4), 0);
    assert_eq!(set_vstate(&mut s, 2, PortState::Active), 0);

    // The host disables vport 3: Down, VPortIndexTop drops to 2; enabled again: Init.
    s.fab.set_vport_enabled(v(&s, 3), false).unwrap();
    assert_eq!(vstate(&s, 3), PortState::Down);
    let (_, vi) = get::<VirtualizationInfo>(&mut s, H3, 0);
    assert_eq!(vi.vport_index_top, 2);
    s.fab.set_vport_enabled(v(&s, 3), true).unwrap();
    assert_eq!(vstate(&s, 3), PortState::Init);
    assert_eq!(
        s.fab.set_vport_enabled(Guid(0xdead), true),
        Err(SimError::NoSuchVPort(Guid(0xdead)))
    );
    // The SM clears VirtualizationEnable: every vport Down.
    let (_, mut vi) = get::<VirtualizationInfo>(&mut s, H3, 0);
    vi.virtualization_enable = false;
    assert_eq!(set(&mut s, H3, 0, &vi).0, 0);
    assert!((1..=3).all(|i| vstate(&s, i) == PortState::Down));
}

#[test]
fn m_key_guards_the_virtualization_attributes() {
    const KEY: u64 = 0x00C0_FFEE;
    let mut s = virtualized();
    s.bring_up();
    let st = modify_port_info(&mut s.fab, s.sm, H3, 1, |pi| {
        pi.m_key = KEY;
        pi.m_key_protect_bits = 2;
        pi.port_state = 0;
        pi.port_phys_state = 0;
    });
    assert_eq!(st, 0);
    let before = s.fab.port_info(s.h[2], 1).unwrap().m_key_violations;
    // Protect level 2: a Get or Set without the key is not answered and changes nothing.
    assert!(dr_get::<VPortInfo>(&mut s.fab, s.sm, H3, 1).is_none());
    let vi = VirtualizationInfo {
        virtualization_enable: true,
        ..VirtualizationInfo::default()
    };
    assert!(dr_set(&mut s.fab, s.sm, H3, 0, &vi).is_none());
    assert!(
        !s.fab
            .virtualization_info(s.hg(3))
            .unwrap()
            .virtualization_enable
    );
    assert_eq!(
        s.fab.port_info(s.h[2], 1).unwrap().m_key_violations,
        before + 2
    );
    // With the key: answered and applied.
    let (st, back) = dr_set_key(&mut s.fab, s.sm, H3, 0, &vi, KEY).unwrap();
    assert_eq!((st, back.virtualization_enable), (0, true));
    let (st, vp) = dr_get_key::<VPortInfo>(&mut s.fab, s.sm, H3, 1, KEY).unwrap();
    assert_eq!((st, vp.state()), (0, Some(PortState::Init)));
}

#[test]
fn vport_guid_and_pkey_tables() {
    let mut s = virtualized();
    let (st, g) = get::<VPortGuidInfo>(&mut s, H3, VPortGuidInfo::modifier(2, 0));
    assert_eq!(st, 0);
    assert_eq!(g.guids[0], v(&s, 2));
    let mut w = g;
    w.guids[0] = Guid(0x1); // read only
    w.guids[1] = Guid(0x0c00_0000_0000_0001);
    let (st, back) = set(&mut s, H3, VPortGuidInfo::modifier(2, 0), &w);
    assert_eq!(st, 0);
    assert_eq!(back.guids[0], v(&s, 2));
    assert_eq!(back.guids[1], Guid(0x0c00_0000_0000_0001));
    assert_eq!(
        s.fab.vport(v(&s, 2)).unwrap().alias_guids,
        vec![Guid(0x0c00_0000_0000_0001)]
    );
    assert_eq!(
        get::<VPortGuidInfo>(&mut s, H3, VPortGuidInfo::modifier(2, 1)).0,
        INVALID
    );
    assert_eq!(
        get::<VPortGuidInfo>(&mut s, H3, VPortGuidInfo::modifier(5, 0)).0,
        INVALID
    );
    // Vport 0's GUID table is the PF's GUIDInfo.
    let (_, g0) = get::<VPortGuidInfo>(&mut s, H3, VPortGuidInfo::modifier(0, 0));
    assert_eq!(g0.guids[0], s.hg(3));

    // Each vport has its own P_Key table; the power-up table is 0xFFFF at index 0.
    let (st, t) = get::<VPortPKeyTable>(&mut s, H3, VPortPKeyTable::modifier(1, 0));
    assert_eq!((st, t.keys[0], t.keys[1]), (0, PKey::DEFAULT_FULL, PKey(0)));
    set_vkeys(&mut s, H3, 1, &[0x8001, 0x0002]);
    assert_eq!(
        s.fab.vport(v(&s, 1)).unwrap().pkeys,
        vec![PKey(0x8001), PKey(0x0002)]
    );
    assert_eq!(
        s.fab.vport(v(&s, 2)).unwrap().pkeys,
        vec![PKey::DEFAULT_FULL]
    );
    // The last block within PartitionCap (128 entries: blocks 0..=3), then beyond it.
    let cap_blocks = s.fab.config().ca_partition_cap / 32;
    let m = VPortPKeyTable::modifier(1, cap_blocks - 1);
    assert_eq!(get::<VPortPKeyTable>(&mut s, H3, m).0, 0);
    let m = VPortPKeyTable::modifier(1, cap_blocks);
    assert_eq!(get::<VPortPKeyTable>(&mut s, H3, m).0, INVALID);
    assert_eq!(set(&mut s, H3, m, &VPortPKeyTable::default()).0, INVALID);
    // Vport 0's table is the PF's P_KeyTable.
    set_vkeys(&mut s, H3, 0, &[0xffff, 0x8003]);
    let (_, pf) = get::<PKeyTable>(&mut s, H3, 0);
    assert_eq!(pf.keys[1], PKey(0x8003));
}

/// Brings the fabric up, enables virtualization on H3, gives vports 1 and 2 LIDs 20 and
/// 21, routes them in S1 and S2 and activates every vport. Key tables: vport 1 {0x8001},
/// vport 2 {0x8002}, vport 3 {0x8001}; H3 itself keeps the default table.
fn vports_up(route: bool) -> Small {
    let mut s = virtualized();
    s.bring_up();
    enable(&mut s);
    for (i, l) in [(1u16, V1_LID), (2, V2_LID)] {
        let (_, mut vp) = get::<VPortInfo>(&mut s, H3, VPortInfo::modifier(i));
        vp.vport_lid = Lid(l);
        vp.vport_state = 0;
        assert_eq!(set(&mut s, H3, VPortInfo::modifier(i), &vp).0, 0);
    }
    if route {
        let (mut a, mut b) = small_lfts();
        a[usize::from(V1_LID)] = 3;
        a[usize::from(V2_LID)] = 3;
        b[usize::from(V1_LID)] = 1;
        b[usize::from(V2_LID)] = 1;
        for (path, t) in [(S1_PATH, a), (S2_PATH, b)] {
            let (_, mut si) = get::<SwitchInfo>(&mut s, path, 0);
            si.linear_fdb_top = 63;
            assert_eq!(set(&mut s, path, 0, &si).0, 0);
            let lft = mad::LinearForwardingTable { ports: t };
            assert_eq!(set(&mut s, path, 0, &lft).0, 0);
        }
    }
    set_vkeys(&mut s, H3, 1, &[0x8001]);
    set_vkeys(&mut s, H3, 2, &[0x8002]);
    set_vkeys(&mut s, H3, 3, &[0x8001]);
    for i in 1..=3 {
        assert_eq!(set_vstate(&mut s, i, PortState::Armed), 0);
        assert_eq!(set_vstate(&mut s, i, PortState::Active), 0);
    }
    s
}

#[test]
fn vport_lid_is_routed_through_the_switches() {
    // Without LFT entries for the vport LID the packet has no route at S1.
    let mut s = vports_up(false);
    let v1 = v(&s, 1);
    assert_eq!(s.fab.vport(v1).unwrap().effective_lid, Lid(V1_LID));
    let set_h1 = |s: &mut Small| {
        let t = PKeyTable {
            keys: std::array::from_fn(|i| match i {
                0 => PKey::DEFAULT_FULL,
                1 => PKey(0x8001),
                _ => PKey(0),
            }),
        };
        assert_eq!(set(s, &[], 0, &t).0, 0);
    };
    set_h1(&mut s);
    assert_eq!(
        s.fab.deliver_vport(s.hg(1), v1, PKey(0x8001)),
        Delivery::Dropped(DropReason::NoRoute { node: s.s1 })
    );
    let mut s = vports_up(true);
    set_h1(&mut s);
    // H1 -> S1 -> S2 -> H3, received by vport 1.
    assert_eq!(
        s.fab.deliver_vport(s.hg(1), v1, PKey(0x8001)),
        Delivery::Delivered {
            dst_port: v1,
            hops: 3
        }
    );
    // A plain packet to LID 20 reaches H3's port and is checked against vport 1's table.
    assert!(
        s.fab
            .deliver(s.hg(1), Lid(V1_LID), PKey(0x8001))
            .is_delivered()
    );
    assert_eq!(
        s.fab.deliver(s.hg(1), Lid(V1_LID), PKey(0xffff)),
        Delivery::Dropped(DropReason::VPortPKey { vport: v1 })
    );
    assert_eq!(s.fab.vport(v1).unwrap().p_key_violations, 1);
    let (_, vp) = get::<VPortInfo>(&mut s, H3, 1);
    assert_eq!(vp.p_key_violations, 1, "counted in VPortInfo");
    // An SMP to the vport's LID reaches the PF's SMA (the HCA owns the LID).
    let q = Smp::lid_get(tid(), NodeInfo::ID, 0);
    let r = lid(&mut s.fab, s.sm, V1_LID, &q).expect("answered");
    assert_eq!(NodeInfo::decode(&r.data).port_guid, s.hg(3));
}

#[test]
fn delivery_rules_between_vports() {
    let mut s = vports_up(true);
    let (v1, v2, v3) = (v(&s, 1), v(&s, 2), v(&s, 3));
    // Same PF, same partition: looped back by the HCA.
    assert_eq!(
        s.fab.deliver_vport(v1, v3, PKey(0x8001)),
        Delivery::Delivered {
            dst_port: v3,
            hops: 0
        }
    );
    // Different partitions: the sender holds no such key, or the receiver refuses it.
    assert_eq!(
        s.fab.deliver_vport(v1, v2, PKey(0x8002)),
        Delivery::Dropped(DropReason::SourcePKey)
    );
    assert_eq!(
        s.fab.deliver_vport(v1, v2, PKey(0x8001)),
        Delivery::Dropped(DropReason::VPortPKey { vport: v2 })
    );
    // Vport 3 has no LID of its own: the PF's LID and a GRH naming it.
    assert_eq!(s.fab.vport(v3).unwrap().effective_lid, Lid(3));
    let (_, mut vp3) = get::<VPortInfo>(&mut s, H3, 3);
    vp3.vport_state = 0;
    vp3.lid_by_vport_index = 2; // a LIDRequired vport: allowed
    assert_eq!(set(&mut s, H3, 3, &vp3).0, 0);
    assert_eq!(s.fab.vport(v3).unwrap().effective_lid, Lid(V2_LID));
    vp3.lid_by_vport_index = 3; // itself, without a LID: refused
    assert_eq!(set(&mut s, H3, 3, &vp3).0, INVALID);
    assert_eq!(s.fab.vport(v3).unwrap().lid_by_vport_index, 2);

    // Across the fabric: H4 with two vports sharing its LID.
    let pf4 = s.hg(4);
    s.fab
        .enable_virtualization(pf4, VirtSpec::uniform(pf4, 2, false))
        .unwrap();
    let (w1, w2) = (vport_guid(pf4, 1), vport_guid(pf4, 2));
    let (_, mut vi) = get::<VirtualizationInfo>(&mut s, H4, 0);
    vi.virtualization_enable = true;
    assert_eq!(set(&mut s, H4, 0, &vi).0, 0);
    set_vkeys(&mut s, H4, 1, &[0x8001]);
    set_vkeys(&mut s, H4, 2, &[0x8002]);
    // Not Active yet: it neither sends nor receives.
    assert_eq!(
        s.fab.deliver_vport(w1, v1, PKey(0x8001)),
        Delivery::Dropped(DropReason::VPortNotActive { vport: w1 })
    );
    assert_eq!(
        s.fab.deliver_vport(v1, w1, PKey(0x8001)),
        Delivery::Dropped(DropReason::VPortNotActive { vport: w1 })
    );
    for i in [1u32, 2] {
        for st in [PortState::Armed, PortState::Active] {
            let (_, mut vp) = get::<VPortInfo>(&mut s, H4, i);
            vp.set_state(st);
            assert_eq!(set(&mut s, H4, i, &vp).0, 0);
        }
    }
    // H4 vport 1 -> H3 vport 1 (own LID) and -> H3 vport 3 (GRH), both partition 0x8001.
    assert_eq!(
        s.fab.deliver_vport(w1, v1, PKey(0x8001)),
        Delivery::Delivered {
            dst_port: v1,
            hops: 2
        }
    );
    assert!(s.fab.deliver_vport(v3, w1, PKey(0x8001)).is_delivered());
    // Tenant isolation: H4 vport 2 (0x8002) reaches H3 vport 2 only.
    assert!(s.fab.deliver_vport(w2, v2, PKey(0x8002)).is_delivered());
    assert_eq!(
        s.fab.deliver_vport(w2, v1, PKey(0x8002)),
        Delivery::Dropped(DropReason::VPortPKey { vport: v1 })
    );
    // Unknown GUIDs.
    assert_eq!(
        s.fab.deliver_vport(Guid(0xbad), v1, PKey(0x8001)),
        Delivery::Dropped(DropReason::NoSuchVPort { guid: Guid(0xbad) })
    );
    // A LIDRequired vport without a LID cannot be addressed.
    let (_, mut vp2) = get::<VPortInfo>(&mut s, H3, 2);
    vp2.vport_state = 0;
    vp2.vport_lid = Lid(0);
    assert_eq!(set(&mut s, H3, 2, &vp2).0, 0);
    assert_eq!(
        s.fab.deliver_vport(w2, v2, PKey(0x8002)),
        Delivery::Dropped(DropReason::NoLid { guid: v2 })
    );
    // Multicast / permissive vport LIDs are refused.
    vp2.vport_lid = Lid(0xC001);
    assert_eq!(set(&mut s, H3, 2, &vp2).0, INVALID);
}

#[test]
fn enabling_virtualization_at_run_time_sends_trap_144() {
    let mut s = small(SimConfig::default());
    s.bring_up();
    let _ = others(&mut s.fab, s.sm);
    let pf = s.hg(3);
    s.fab
        .enable_virtualization(pf, VirtSpec::uniform(pf, 2, true))
        .unwrap();
    settle(&mut s.fab);
    let traps: Vec<mad::NoticeDetails> = others(&mut s.fab, s.sm)
        .into_iter()
        .filter(|r| r.smp.method == mad::Method::TRAP)
        .map(|r| mad::Notice::decode(&r.smp.data))
        .filter(|n| n.trap_number() == Some(144))
        .map(|n| n.details())
        .collect();
    let [
        mad::NoticeDetails::CapabilityChange {
            lid,
            capability_mask,
            capability_mask2,
            ..
        },
    ] = traps[..]
    else {
        panic!("one trap 144 expected, got {traps:?}");
    };
    assert_eq!(lid, Lid(3));
    assert_ne!(
        capability_mask & PortInfo::CAP_IS_CAPABILITY_MASK2_SUPPORTED,
        0
    );
    assert_eq!(
        capability_mask2 & PortInfo::CAP2_IS_VIRTUALIZATION_SUPPORTED,
        0x0004
    );
}

#[test]
fn enable_virtualization_refusals_and_power_cycle() {
    let mut s = small(SimConfig::default());
    let pf = s.hg(3);
    let sw_guid = s.fab.port_guid(s.s1, 0).unwrap();
    assert_eq!(
        s.fab
            .enable_virtualization(sw_guid, VirtSpec::uniform(sw_guid, 1, true)),
        Err(SimError::NotAnEndPort(sw_guid))
    );
    let too_many = VirtSpec {
        vport_cap: 1,
        ..VirtSpec::uniform(pf, 2, true)
    };
    assert!(matches!(
        s.fab.enable_virtualization(pf, too_many),
        Err(SimError::Virtualization(..))
    ));
    let clash = VirtSpec {
        vport_cap: 1,
        vports: vec![VPortSpec::new(s.hg(2), false)],
    };
    assert!(matches!(
        s.fab.enable_virtualization(pf, clash),
        Err(SimError::Virtualization(..))
    ));
    s.fab
        .enable_virtualization(pf, VirtSpec::uniform(pf, 2, true))
        .unwrap();
    assert!(matches!(
        s.fab
            .enable_virtualization(pf, VirtSpec::uniform(pf, 1, true)),
        Err(SimError::Virtualization(..))
    ));
    let pf4 = s.hg(4);
    let reuse = VirtSpec {
        vport_cap: 1,
        vports: vec![VPortSpec::new(vport_guid(pf, 1), false)],
    };
    assert!(matches!(
        s.fab.enable_virtualization(pf4, reuse),
        Err(SimError::Virtualization(..))
    ));
    // Deterministic GUIDs: distinct per PF and index, the same every time.
    assert_ne!(vport_guid(pf, 1), vport_guid(pf, 2));
    assert_ne!(vport_guid(pf, 1), vport_guid(pf4, 1));
    assert_eq!(vport_guid(pf, 1), vport_guid(pf, 1));

    // A power cycle forgets VirtualizationEnable and the vports' LIDs and tables.
    s.bring_up();
    enable(&mut s);
    let (_, mut vp) = get::<VPortInfo>(&mut s, H3, 1);
    vp.vport_lid = Lid(V1_LID);
    vp.vport_state = 0;
    assert_eq!(set(&mut s, H3, 1, &vp).0, 0);
    set_vkeys(&mut s, H3, 1, &[0x8001]);
    let now = s.fab.now();
    s.fab
        .inject(now, Fault::RemoveNode { node: s.h[2] })
        .unwrap();
    assert_eq!(vstate(&s, 1), PortState::Down);
    let now = s.fab.now();
    s.fab
        .inject(now, Fault::ReturnNode { node: s.h[2] })
        .unwrap();
    settle(&mut s.fab);
    let view = s.fab.vport(v(&s, 1)).unwrap();
    assert_eq!(
        (view.state, view.lid, view.pkeys.clone()),
        (PortState::Down, Lid(0), vec![PKey::DEFAULT_FULL])
    );
    assert!(!s.fab.virtualization_info(pf).unwrap().virtualization_enable);
    assert!(s.fab.vports_of(pf).iter().all(|v| v.lid == Lid(0)));
}

#[test]
fn control_protocol_drives_vports() {
    use fabric_sim::control::handle;
    let mut s = small(SimConfig::default());
    let r = handle(
        &mut s.fab,
        0,
        r#"{"op":"enable_virtualization","port":"H3","vports":2,"lid_required":true}"#,
    );
    assert_eq!(r["ok"], true, "{r}");
    let pf = s.hg(3);
    assert_eq!(
        r["vports"][1]["guid"],
        format!("{:#018x}", vport_guid(pf, 2).0)
    );
    assert_eq!(r["vports"][0]["state"], PortState::Down.to_wire());
    let r = handle(&mut s.fab, 0, r#"{"op":"vports","port":"H3"}"#);
    assert_eq!(r["vports"].as_array().unwrap().len(), 2);
    let g = format!("{:#018x}", vport_guid(pf, 1).0);
    let r = handle(
        &mut s.fab,
        0,
        &format!(r#"{{"op":"vport_enabled","vport":"{g}","enabled":false}}"#),
    );
    assert_eq!(r["ok"], true, "{r}");
    assert!(!s.fab.vport(vport_guid(pf, 1)).unwrap().enabled);
    let r = handle(
        &mut s.fab,
        0,
        &format!(r#"{{"op":"deliver_vport","src":"H1","dst":"{g}","pkey":65535}}"#),
    );
    assert_eq!(r["ok"], true, "{r}");
    assert!(r["delivery"]["Dropped"].is_object(), "{r}");
    let r = handle(
        &mut s.fab,
        0,
        r#"{"op":"enable_virtualization","port":"H3","vports":1}"#,
    );
    assert_eq!(r["ok"], false);
    assert!(r["error"].as_str().unwrap().contains("SIM-E018"), "{r}");
}
