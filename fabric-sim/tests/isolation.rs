//! P_Key isolation cases (DOMAIN.md): full<->limited delivered, limited<->limited
//! dropped, different partitions dropped, SMPs exempt, switch enforcement at ingress.

mod common;

use common::*;
use fabric::{Lid, PKey};
use fabric_sim::{Delivery, DropReason, SimConfig};
use mad::{NodeInfo, PKeyTable, Smp, SmpAttribute};

fn table(keys: &[u16]) -> PKeyTable {
    let mut t = PKeyTable::default();
    for (i, k) in keys.iter().enumerate() {
        t.keys[i] = PKey(*k);
    }
    t
}

/// H1 (SM) default full; H2 full 0x8001; H3 and H4 limited 0x0001; H5 full 0x8002.
fn partitioned() -> Small {
    let mut s = small(SimConfig::default());
    s.bring_up();
    for (i, keys) in [
        (2usize, &[0x8001u16][..]),
        (3, &[0x0001]),
        (4, &[0x0001]),
        (5, &[0x8002]),
    ] {
        let (st, back) = dr_set(&mut s.fab, s.sm, H_PATHS[i - 1], 0, &table(keys)).unwrap();
        assert_eq!(st, 0);
        assert_eq!(back.keys[0], PKey(keys[0]));
        assert_eq!(back.keys[1], PKey(0));
    }
    s
}

#[test]
fn full_and_limited_members_talk_both_ways() {
    let mut s = partitioned();
    assert_eq!(
        s.fab.deliver(s.hg(2), Lid(3), PKey(0x8001)),
        Delivery::Delivered {
            dst_port: s.hg(3),
            hops: 3
        }
    );
    assert!(s.fab.deliver(s.hg(3), Lid(2), PKey(0x0001)).is_delivered());
    assert!(s.fab.deliver(s.hg(4), Lid(2), PKey(0x0001)).is_delivered());
}

#[test]
fn limited_members_cannot_talk_to_each_other() {
    let mut s = partitioned();
    assert_eq!(
        s.fab.deliver(s.hg(3), Lid(4), PKey(0x0001)),
        Delivery::Dropped(DropReason::DestinationPKey {
            node: s.h[3],
            port: 1
        })
    );
    assert_eq!(
        s.fab.deliver(s.hg(4), Lid(3), PKey(0x0001)),
        Delivery::Dropped(DropReason::DestinationPKey {
            node: s.h[2],
            port: 1
        })
    );
    // The receiving port counts the violation.
    assert_eq!(s.fab.port_info(s.h[2], 1).unwrap().p_key_violations, 1);
    // A limited member cannot claim full membership: the key is not in its table.
    assert_eq!(
        s.fab.deliver(s.hg(3), Lid(2), PKey(0x8001)),
        Delivery::Dropped(DropReason::SourcePKey)
    );
}

#[test]
fn different_partitions_are_isolated() {
    let mut s = partitioned();
    assert_eq!(
        s.fab.deliver(s.hg(2), Lid(5), PKey(0x8001)),
        Delivery::Dropped(DropReason::DestinationPKey {
            node: s.h[4],
            port: 1
        })
    );
    assert!(!s.fab.deliver(s.hg(5), Lid(2), PKey(0x8002)).is_delivered());
    // The default partition is gone from H2..H5: H1 (0xFFFF) reaches none of them.
    for h in 2..=5 {
        assert!(
            !s.fab
                .deliver(s.hg(1), Lid(h as u16), PKey(0xFFFF))
                .is_delivered()
        );
    }
}

#[test]
fn smps_are_exempt_from_pkey_checks() {
    let mut s = partitioned();
    // Data from H1 to H3 is dropped (no common partition)...
    assert!(!s.fab.deliver(s.hg(1), Lid(3), PKey(0xFFFF)).is_delivered());
    // ...but the SM's LID-routed SMP to H3 is answered.
    let q = Smp::lid_get(tid(), NodeInfo::ID, 0);
    let r = lid(&mut s.fab, s.sm, 3, &q).expect("SMP answered");
    assert_eq!(
        NodeInfo::decode(&r.data).node_guid,
        s.fab.node_guid(s.h[2]).unwrap()
    );
    // The SMP path between two limited members is open too.
    assert!(s.fab.deliver_smp(s.hg(3), Lid(4)).is_delivered());
    assert!(!s.fab.deliver(s.hg(3), Lid(4), PKey(0x0001)).is_delivered());
}

#[test]
fn switch_enforcement_drops_at_the_ingress_port() {
    let mut s = partitioned();
    // A compromised H4 holds partition 2's full key, though the SM put it in partition
    // 1 only; S2 port 2 (facing H4) carries H4's real membership.
    let (st, _) = dr_set(&mut s.fab, s.sm, H_PATHS[3], 0, &table(&[0x0001, 0x8002])).unwrap();
    assert_eq!(st, 0);
    let (st, _) = dr_set(
        &mut s.fab,
        s.sm,
        S2_PATH,
        PKeyTable::modifier(2, 0),
        &table(&[0x0001]),
    )
    .unwrap();
    assert_eq!(st, 0);
    // Without enforcement H4 reaches H5.
    assert!(s.fab.deliver(s.hg(4), Lid(5), PKey(0x8002)).is_delivered());
    // Inbound enforcement on S2 port 2.
    let st = modify_port_info(&mut s.fab, s.sm, S2_PATH, 2, |pi| {
        pi.port_state = 0;
        pi.port_phys_state = 0;
        pi.partition_enforcement_inbound = true;
    });
    assert_eq!(st, 0);
    assert_eq!(
        s.fab.deliver(s.hg(4), Lid(5), PKey(0x8002)),
        Delivery::Dropped(DropReason::SwitchInbound {
            node: s.s2,
            port: 2
        })
    );
    assert_eq!(s.fab.port_info(s.s2, 2).unwrap().p_key_violations, 1);
    // Its legitimate traffic still passes the switch.
    assert!(s.fab.deliver(s.hg(4), Lid(2), PKey(0x0001)).is_delivered());
    // Outbound enforcement on S1 port 4 (facing H5, partition 2 only) stops partition 1.
    let (st, _) = dr_set(
        &mut s.fab,
        s.sm,
        S1_PATH,
        PKeyTable::modifier(4, 0),
        &table(&[0x8002]),
    )
    .unwrap();
    assert_eq!(st, 0);
    let st = modify_port_info(&mut s.fab, s.sm, S1_PATH, 4, |pi| {
        pi.port_state = 0;
        pi.port_phys_state = 0;
        pi.partition_enforcement_outbound = true;
    });
    assert_eq!(st, 0);
    assert_eq!(
        s.fab.deliver(s.hg(2), Lid(5), PKey(0x8001)),
        Delivery::Dropped(DropReason::SwitchOutbound {
            node: s.s1,
            port: 4
        })
    );
    // SMPs still pass enforcing ports.
    assert!(s.fab.deliver_smp(s.hg(4), Lid(5)).is_delivered());
}
