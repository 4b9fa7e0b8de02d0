//! LID routing through hand-programmed LFTs, the port state machine, and ACTIVE checks.

mod common;

use common::*;
use fabric::{Lid, PKey, PortState};
use fabric_sim::{Delivery, DropReason, SimConfig};
use mad::{LinearForwardingTable, NodeInfo, PortInfo, Smp, SmpAttribute, SwitchInfo};

#[test]
fn lid_routed_delivery_follows_the_programmed_lfts() {
    let mut s = small(SimConfig::default());
    s.bring_up();
    // H1 -> H3: S1 port 3 -> S2 port 1: three links.
    assert_eq!(
        s.fab.deliver(s.hg(1), Lid(3), PKey::DEFAULT_FULL),
        Delivery::Delivered {
            dst_port: s.hg(3),
            hops: 3
        }
    );
    assert_eq!(
        s.fab.deliver(s.hg(4), Lid(2), PKey::DEFAULT_FULL),
        Delivery::Delivered {
            dst_port: s.hg(2),
            hops: 3
        }
    );
    assert_eq!(
        s.fab.deliver(s.hg(2), Lid(5), PKey::DEFAULT_FULL),
        Delivery::Delivered {
            dst_port: s.hg(5),
            hops: 2
        }
    );
    // A switch's own LID reaches its port 0.
    assert_eq!(
        s.fab.deliver(s.hg(3), Lid(S1_LID), PKey::DEFAULT_FULL),
        Delivery::Delivered {
            dst_port: s.fab.port_guid(s.s1, 0).unwrap(),
            hops: 2
        }
    );
    // LID-routed SMPs follow the same tables: NodeInfo of LID 3 and LID 11 (S2).
    let q = Smp::lid_get(tid(), NodeInfo::ID, 0);
    let r = lid(&mut s.fab, s.sm, 3, &q).expect("answer from LID 3");
    assert_eq!(r.status, 0);
    let ni = NodeInfo::decode(&r.data);
    assert_eq!(ni.node_guid, s.fab.node_guid(s.h[2]).unwrap());
    let q = Smp::lid_get(tid(), NodeInfo::ID, 0);
    let r = lid(&mut s.fab, s.sm, S2_LID, &q).expect("answer from S2");
    let ni = NodeInfo::decode(&r.data);
    assert_eq!(ni.node_guid, s.fab.node_guid(s.s2).unwrap());
    assert_eq!(ni.local_port_num, 3, "arrived on S2 port 3");
}

#[test]
fn a_misprogrammed_entry_sends_the_packet_where_the_table_says() {
    let mut s = small(SimConfig::default());
    s.bring_up();
    // S1 sends LID 3 to port 2 (H2) instead of port 3.
    let (mut a, _) = small_lfts();
    a[3] = 2;
    let (st, _) = dr_set(
        &mut s.fab,
        s.sm,
        S1_PATH,
        0,
        &LinearForwardingTable { ports: a },
    )
    .unwrap();
    assert_eq!(st, 0);
    assert_eq!(s.fab.lft_entry(s.s1, Lid(3)).unwrap(), 2);
    assert_eq!(
        s.fab.deliver(s.hg(1), Lid(3), PKey::DEFAULT_FULL),
        Delivery::Dropped(DropReason::WrongDestination {
            node: s.h[1],
            port: 1
        })
    );
}

#[test]
fn an_incomplete_table_drops() {
    let mut s = small(SimConfig::default());
    s.bring_up();
    // Unprogram LID 4 on S2.
    let (_, mut b) = small_lfts();
    b[4] = 0xFF;
    let (st, _) = dr_set(
        &mut s.fab,
        s.sm,
        S2_PATH,
        0,
        &LinearForwardingTable { ports: b },
    )
    .unwrap();
    assert_eq!(st, 0);
    assert_eq!(
        s.fab.deliver(s.hg(1), Lid(4), PKey::DEFAULT_FULL),
        Delivery::Dropped(DropReason::NoRoute { node: s.s2 })
    );
    let before = s.fab.accounting().counters.dropped_no_route;
    let q = Smp::lid_get(tid(), NodeInfo::ID, 0);
    assert!(lid(&mut s.fab, s.sm, 4, &q).is_none());
    assert_eq!(s.fab.accounting().counters.dropped_no_route, before + 1);
    // LID 3 still works.
    assert!(
        s.fab
            .deliver(s.hg(1), Lid(3), PKey::DEFAULT_FULL)
            .is_delivered()
    );
    // Entries above LinearFDBTop drop too: lower S1's top to 3.
    let (_, mut si) = dr_get::<SwitchInfo>(&mut s.fab, s.sm, S1_PATH, 0).unwrap();
    si.linear_fdb_top = 3;
    let (st, _) = dr_set(&mut s.fab, s.sm, S1_PATH, 0, &si).unwrap();
    assert_eq!(st, 0);
    assert!(
        s.fab
            .deliver(s.hg(2), Lid(3), PKey::DEFAULT_FULL)
            .is_delivered()
    );
    assert_eq!(
        s.fab.deliver(s.hg(2), Lid(5), PKey::DEFAULT_FULL),
        Delivery::Dropped(DropReason::NoRoute { node: s.s1 })
    );
    // A switch with tables never written drops everything LID-routed.
    let mut fresh = small(SimConfig::default());
    fresh.program();
    fresh.activate();
    let (_, mut si) = dr_get::<SwitchInfo>(&mut fresh.fab, fresh.sm, S2_PATH, 0).unwrap();
    si.linear_fdb_top = 0;
    dr_set(&mut fresh.fab, fresh.sm, S2_PATH, 0, &si).unwrap();
    assert_eq!(
        fresh.fab.deliver(fresh.hg(1), Lid(3), PKey::DEFAULT_FULL),
        Delivery::Dropped(DropReason::NoRoute { node: fresh.s2 })
    );
}

#[test]
fn ports_not_active_forward_no_lid_routed_traffic_but_pass_dr() {
    let mut s = small(SimConfig::default());
    s.program();
    // Everything is INIT: LID routing drops at the source port...
    assert_eq!(
        s.fab.deliver(s.hg(1), Lid(3), PKey::DEFAULT_FULL),
        Delivery::Dropped(DropReason::SourceNotActive)
    );
    let q = Smp::lid_get(tid(), NodeInfo::ID, 0);
    assert!(lid(&mut s.fab, s.sm, 3, &q).is_none());
    assert!(s.fab.accounting().counters.dropped_not_active > 0);
    // ...while directed route works on INIT links.
    assert!(dr_get::<NodeInfo>(&mut s.fab, s.sm, H_PATHS[2], 0).is_some());
    s.activate();
    assert!(
        s.fab
            .deliver(s.hg(1), Lid(3), PKey::DEFAULT_FULL)
            .is_delivered()
    );
    assert!(!s.fab.port_state_change(s.s2).unwrap());
    // The SM sets S2 port 1 Down: the link goes down at both ends and retrains to INIT,
    // so LID traffic through it stops; the retrain makes S2 flag PortStateChange and
    // send trap 128.
    let now = s.fab.now();
    let q = {
        let (_, mut pi) = dr_get::<PortInfo>(&mut s.fab, s.sm, S2_PATH, 1).unwrap();
        pi.port_state = 1;
        pi.port_phys_state = 0;
        Smp::dr_set(tid(), 1, S2_PATH, &pi).unwrap()
    };
    s.fab.send(now, s.sm, &q).unwrap();
    s.fab.run_until(now + 100_000);
    assert_eq!(s.fab.port_state(s.s2, 1).unwrap(), PortState::Down);
    assert_eq!(s.fab.port_state(s.h[2], 1).unwrap(), PortState::Down);
    assert!(
        !s.fab
            .deliver(s.hg(1), Lid(3), PKey::DEFAULT_FULL)
            .is_delivered()
    );
    // The SM's own Set does not flag S2 (the far end is a CA).
    assert!(!s.fab.port_state_change(s.s2).unwrap());
    settle(&mut s.fab);
    assert_eq!(s.fab.port_state(s.s2, 1).unwrap(), PortState::Init);
    assert_eq!(s.fab.port_state(s.h[2], 1).unwrap(), PortState::Init);
    assert!(
        !s.fab
            .deliver(s.hg(1), Lid(3), PKey::DEFAULT_FULL)
            .is_delivered()
    );
    assert!(s.fab.port_state_change(s.s2).unwrap());
    let mut traps = Vec::new();
    for r in others(&mut s.fab, s.sm) {
        if r.smp.method == mad::Method::TRAP {
            traps.push(r);
        }
    }
    assert_eq!(
        traps.len(),
        1,
        "the retrain (Down -> INIT), not the SM's own Down"
    );
    for r in &traps {
        assert_eq!(r.slid, Lid(S2_LID));
        let n = mad::Notice::decode(&r.smp.data);
        assert_eq!(n.trap_number(), Some(128));
        assert_eq!(n.issuer_lid, Lid(S2_LID));
    }
    // The SM clears PortStateChange by writing 1.
    let (_, mut si) = dr_get::<SwitchInfo>(&mut s.fab, s.sm, S2_PATH, 0).unwrap();
    assert!(si.port_state_change);
    si.port_state_change = true;
    let (st, back) = dr_set(&mut s.fab, s.sm, S2_PATH, 0, &si).unwrap();
    assert_eq!(st, 0);
    assert!(!back.port_state_change);
    assert!(!s.fab.port_state_change(s.s2).unwrap());
}

#[test]
fn port_state_machine_follows_the_legal_order() {
    let mut s = small(SimConfig::default());
    s.program();
    let (fab, sm) = (&mut s.fab, s.sm);
    assert_eq!(fab.port_state(s.h[2], 1).unwrap(), PortState::Init);
    let pi = fab.port_info(s.h[2], 1).unwrap();
    assert_eq!(pi.port_phys_state, 5, "LinkUp");
    // INIT -> ACTIVE directly is illegal: 0x1C and no change.
    assert_eq!(set_port_state(fab, sm, H_PATHS[2], 1, 4), 0x1C);
    assert_eq!(fab.port_state(s.h[2], 1).unwrap(), PortState::Init);
    // Setting INIT is never legal.
    assert_eq!(set_port_state(fab, sm, H_PATHS[2], 1, 2), 0x1C);
    // An illegal Set changes no other field either.
    let st = modify_port_info(fab, sm, H_PATHS[2], 1, |pi| {
        pi.port_state = 4;
        pi.port_phys_state = 0;
        pi.lid = Lid(99);
    });
    assert_eq!(st, 0x1C);
    assert_eq!(fab.port_info(s.h[2], 1).unwrap().lid, Lid(3));
    // INIT -> ARMED -> ACTIVE.
    assert_eq!(set_port_state(fab, sm, H_PATHS[2], 1, 3), 0);
    assert_eq!(fab.port_state(s.h[2], 1).unwrap(), PortState::Armed);
    // ACTIVE needs the other end (S2 port 1) ARMED or ACTIVE first.
    assert_eq!(set_port_state(fab, sm, H_PATHS[2], 1, 4), 0x1C);
    assert_eq!(fab.port_state(s.h[2], 1).unwrap(), PortState::Armed);
    assert_eq!(set_port_state(fab, sm, S2_PATH, 1, 3), 0);
    assert_eq!(set_port_state(fab, sm, H_PATHS[2], 1, 4), 0);
    assert_eq!(fab.port_state(s.h[2], 1).unwrap(), PortState::Active);
    // ACTIVE -> ARMED is illegal.
    assert_eq!(set_port_state(fab, sm, H_PATHS[2], 1, 3), 0x1C);
    assert_eq!(fab.port_state(s.h[2], 1).unwrap(), PortState::Active);
    // The Set response carries the current PortInfo.
    let (st, pi) = dr_get::<PortInfo>(fab, sm, H_PATHS[2], 1).unwrap();
    assert_eq!(st, 0);
    assert_eq!(pi.port_state, 4);
    assert_eq!(pi.local_port_num, 1);
}

#[test]
fn switch_port0_carries_the_lid_and_pkey_tables_default_to_ffff() {
    let mut s = small(SimConfig::default());
    s.program();
    let (st, pi) = dr_get::<PortInfo>(&mut s.fab, s.sm, S2_PATH, 0).unwrap();
    assert_eq!(st, 0);
    assert_eq!(pi.lid, Lid(S2_LID));
    assert_eq!(pi.local_port_num, 3);
    assert_eq!(pi.port_state, 4, "switch port 0 is always Active");
    let (st, pi) = dr_get::<PortInfo>(&mut s.fab, s.sm, H_PATHS[3], 0).unwrap();
    assert_eq!(st, 0);
    assert_eq!(pi.lid, Lid(4), "CA port carries its own LID");
    let (st, pk) = dr_get::<mad::PKeyTable>(&mut s.fab, s.sm, H_PATHS[3], 0).unwrap();
    assert_eq!(st, 0);
    assert_eq!(pk.keys[0], PKey(0xFFFF));
    assert!(pk.keys[1..].iter().all(|k| k.0 == 0));
    let ni = dr_get::<NodeInfo>(&mut s.fab, s.sm, H_PATHS[3], 0)
        .unwrap()
        .1;
    assert_eq!(ni.partition_cap, 128);
    let si = dr_get::<SwitchInfo>(&mut s.fab, s.sm, S1_PATH, 0)
        .unwrap()
        .1;
    assert_eq!(si.linear_fdb_cap, 49152);
    assert_eq!(si.partition_enforcement_cap, 32);
    assert!(si.inbound_enforcement_cap && si.outbound_enforcement_cap);
}

#[test]
fn a_routing_loop_is_cut() {
    let mut s = small(SimConfig::default());
    s.bring_up();
    // S2 sends LID 3 back to S1, which sends it to S2: a loop.
    let (_, mut b) = small_lfts();
    b[3] = 3;
    let (st, _) = dr_set(
        &mut s.fab,
        s.sm,
        S2_PATH,
        0,
        &LinearForwardingTable { ports: b },
    )
    .unwrap();
    assert_eq!(st, 0);
    assert_eq!(
        s.fab.deliver(s.hg(1), Lid(3), PKey::DEFAULT_FULL),
        Delivery::Dropped(DropReason::Loop)
    );
    let q = Smp::lid_get(tid(), NodeInfo::ID, 0);
    assert!(lid(&mut s.fab, s.sm, 3, &q).is_none());
    assert_eq!(s.fab.accounting().counters.dropped_loop, 1);
    assert_eq!(s.fab.next_event_time(), None);
}

#[test]
fn a_down_set_flags_only_the_far_switch_until_the_link_retrains() {
    let mut s = small(SimConfig::default());
    s.bring_up();
    let q = {
        let (_, mut pi) = dr_get::<PortInfo>(&mut s.fab, s.sm, S1_PATH, 3).unwrap();
        pi.port_state = 1;
        pi.port_phys_state = 0;
        Smp::dr_set(tid(), 3, S1_PATH, &pi).unwrap()
    };
    let now = s.fab.now();
    s.fab.send(now, s.sm, &q).unwrap();
    s.fab.run_until(now + 100_000);
    assert_eq!(s.fab.port_state(s.s1, 3).unwrap(), PortState::Down);
    assert_eq!(s.fab.port_state(s.s2, 3).unwrap(), PortState::Down);
    assert!(
        !s.fab.port_state_change(s.s1).unwrap(),
        "SubnSet: no local flag"
    );
    assert!(
        s.fab.port_state_change(s.s2).unwrap(),
        "the far switch saw the link drop"
    );
    settle(&mut s.fab);
    assert!(
        s.fab.port_state_change(s.s1).unwrap(),
        "retrained: Down -> INIT"
    );
}
