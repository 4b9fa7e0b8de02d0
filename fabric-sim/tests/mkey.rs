//! M_Key protection: wrong-key Sets rejected and counted with trap 256, Gets per
//! protect level, the lease, and the accepted-Set log.

mod common;

use common::*;
use fabric::Lid;
use fabric_sim::SimConfig;
use mad::{LinearForwardingTable, Method, Notice, NoticeDetails, PortInfo, Smp, SmpAttribute};

const KEY: u64 = 0x0123_4567_89AB_CDEF;
const WRONG: u64 = 0x1111;

/// Protects H3's port with KEY at `level`, lease `lease` seconds.
fn protect(s: &mut Small, level: u8, lease: u16) {
    let (st, _) = dr_get::<PortInfo>(&mut s.fab, s.sm, H_PATHS[2], 1).unwrap();
    assert_eq!(st, 0);
    let mut pi = s.fab.port_info(s.h[2], 1).unwrap();
    pi.port_state = 0;
    pi.port_phys_state = 0;
    pi.m_key = KEY;
    pi.m_key_protect_bits = level;
    pi.m_key_lease_period = lease;
    let cur = s.fab.port_info(s.h[2], 1).unwrap().m_key;
    let (st, back) = dr_set_key(&mut s.fab, s.sm, H_PATHS[2], 1, &pi, cur).unwrap();
    assert_eq!(st, 0);
    assert_eq!(back.m_key, KEY);
    assert_eq!(back.m_key_protect_bits, level);
}

fn traps_256(s: &mut Small) -> Vec<NoticeDetails> {
    let mut v = Vec::new();
    for r in others(&mut s.fab, s.sm) {
        if r.smp.method == Method::TRAP {
            let n = Notice::decode(&r.smp.data);
            if n.trap_number() == Some(256) {
                v.push(n.details());
            }
        }
    }
    v
}

#[test]
fn wrong_key_set_is_rejected_counted_and_trapped() {
    let mut s = small(SimConfig::default());
    s.bring_up();
    protect(&mut s, 1, 0);
    s.fab.take_set_log();
    let before = s.fab.accounting().counters.m_key_violations;
    let mut pi = s.fab.port_info(s.h[2], 1).unwrap();
    pi.port_state = 0;
    pi.port_phys_state = 0;
    pi.lid = Lid(77);
    // Wrong key: no answer, nothing changed.
    assert!(dr_set_key(&mut s.fab, s.sm, H_PATHS[2], 1, &pi, WRONG).is_none());
    assert_eq!(s.fab.port_info(s.h[2], 1).unwrap().lid, Lid(3));
    assert_eq!(s.fab.accounting().counters.m_key_violations, before + 1);
    assert_eq!(s.fab.port_info(s.h[2], 1).unwrap().m_key_violations, 1);
    assert!(
        s.fab.take_set_log().is_empty(),
        "rejected Sets are not logged"
    );
    // Trap 256 reached the SM (MasterSMLID = 1) with the offending key.
    let traps = traps_256(&mut s);
    assert_eq!(traps.len(), 1);
    match traps[0] {
        NoticeDetails::BadMKey {
            lid,
            m_key,
            method,
            attr_id,
            dr_notice,
            dr_hop_count,
            ..
        } => {
            assert_eq!(lid, Lid(3));
            assert_eq!(m_key, WRONG);
            assert_eq!(method, Method::SET.0);
            assert_eq!(attr_id, PortInfo::ID.0);
            assert!(dr_notice);
            assert_eq!(dr_hop_count, 3);
        }
        other => panic!("unexpected details {other:?}"),
    }
    // The right key works, and the Set is logged with its source.
    let (st, back) = dr_set_key(&mut s.fab, s.sm, H_PATHS[2], 1, &pi, KEY).unwrap();
    assert_eq!(st, 0);
    assert_eq!(back.lid, Lid(77));
    let log = s.fab.take_set_log();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].node, s.h[2]);
    assert_eq!(log[0].attr, PortInfo::ID.0);
    assert_eq!(log[0].attr_mod, 1);
    assert_eq!(log[0].source, Some(s.hg(1)));
}

#[test]
fn get_behaves_per_protect_level() {
    for level in 0..=3u8 {
        let mut s = small(SimConfig::default());
        s.bring_up();
        protect(&mut s, level, 0);
        let wrong = dr_get_key::<PortInfo>(&mut s.fab, s.sm, H_PATHS[2], 1, WRONG);
        match level {
            0 => {
                let (st, pi) = wrong.expect("level 0 answers");
                assert_eq!(st, 0);
                assert_eq!(pi.m_key, KEY, "level 0 shows the key");
            }
            1 => {
                let (st, pi) = wrong.expect("level 1 answers");
                assert_eq!(st, 0);
                assert_eq!(pi.m_key, 0, "level 1 hides the key");
                assert_eq!(pi.lid, Lid(3));
            }
            _ => {
                assert!(wrong.is_none(), "level {level} does not answer");
                assert_eq!(s.fab.port_info(s.h[2], 1).unwrap().m_key_violations, 1);
                assert_eq!(traps_256(&mut s).len(), 1);
            }
        }
        // Other attributes are protected the same way.
        let q = Smp::dr_get(tid(), mad::NodeInfo::ID, 0, H_PATHS[2])
            .unwrap()
            .with_m_key(WRONG);
        assert_eq!(dr(&mut s.fab, s.sm, &q).is_some(), level < 2);
        // The right key always gets the full answer.
        let (st, pi) = dr_get_key::<PortInfo>(&mut s.fab, s.sm, H_PATHS[2], 1, KEY).unwrap();
        assert_eq!(st, 0);
        assert_eq!(pi.m_key, KEY);
    }
}

#[test]
fn lease_expiry_clears_the_protect_bits() {
    let mut s = small(SimConfig::default());
    s.bring_up();
    protect(&mut s, 2, 1);
    assert!(dr_get_key::<PortInfo>(&mut s.fab, s.sm, H_PATHS[2], 1, WRONG).is_none());
    // dr() settles up to 10 s of virtual time: the 1 s lease has expired by now.
    assert_eq!(s.fab.port_info(s.h[2], 1).unwrap().m_key_protect_bits, 0);
    let (st, pi) = dr_get_key::<PortInfo>(&mut s.fab, s.sm, H_PATHS[2], 1, WRONG).unwrap();
    assert_eq!(st, 0);
    assert_eq!(pi.m_key, KEY, "after the lease anyone can read the key");
}

#[test]
fn a_valid_key_stops_the_lease() {
    let mut s = small(SimConfig::default());
    s.bring_up();
    protect(&mut s, 2, 1);
    let now = s.fab.now();
    let q = Smp::dr_get(tid(), PortInfo::ID, 1, H_PATHS[2])
        .unwrap()
        .with_m_key(WRONG);
    s.fab.send(now, s.sm, &q).unwrap();
    s.fab.run_until(now + 500_000_000);
    let q = Smp::dr_get(tid(), PortInfo::ID, 1, H_PATHS[2])
        .unwrap()
        .with_m_key(KEY);
    s.fab.send(s.fab.now(), s.sm, &q).unwrap();
    settle(&mut s.fab);
    assert_eq!(s.fab.port_info(s.h[2], 1).unwrap().m_key_protect_bits, 2);
}

#[test]
fn switch_port0_m_key_protects_the_whole_switch() {
    let mut s = small(SimConfig::default());
    s.bring_up();
    let st = modify_port_info(&mut s.fab, s.sm, S2_PATH, 0, |pi| {
        pi.port_state = 0;
        pi.port_phys_state = 0;
        pi.m_key = KEY;
        pi.m_key_protect_bits = 1;
    });
    assert_eq!(st, 0);
    let (_, lft) = small_lfts();
    let t = LinearForwardingTable { ports: lft };
    assert!(dr_set_key(&mut s.fab, s.sm, S2_PATH, 0, &t, WRONG).is_none());
    assert_eq!(s.fab.port_info(s.s2, 0).unwrap().m_key_violations, 1);
    assert_eq!(traps_256(&mut s).len(), 1);
    // Arriving through any port, the Set with the right key is accepted.
    let (st, _) = dr_set_key(&mut s.fab, s.sm, S2_PATH, 0, &t, KEY).unwrap();
    assert_eq!(st, 0);
    // External ports report port 0's key.
    let (_, pi) = dr_get_key::<PortInfo>(&mut s.fab, s.sm, S2_PATH, 2, KEY).unwrap();
    assert_eq!(pi.m_key, KEY);
}

/// A switch's key is checked from a copy in its node record (fabric-sim `SimNode::mkey`):
/// the lease, a valid key stopping it, its expiry and a reboot act on a switch exactly
/// as on a CA port (test builds also assert the copy equals the port's at every check).
#[test]
fn a_switch_key_follows_its_lease_and_a_reboot() {
    let mut s = small(SimConfig::default());
    s.bring_up();
    let st = modify_port_info(&mut s.fab, s.sm, S2_PATH, 0, |pi| {
        pi.port_state = 0;
        pi.port_phys_state = 0;
        pi.m_key = KEY;
        pi.m_key_protect_bits = 2;
        pi.m_key_lease_period = 1;
    });
    assert_eq!(st, 0);
    // A wrong key starts the lease; the right key within it stops it.
    let now = s.fab.now();
    let q = Smp::dr_get(tid(), PortInfo::ID, 0, S2_PATH)
        .unwrap()
        .with_m_key(WRONG);
    s.fab.send(now, s.sm, &q).unwrap();
    s.fab.run_until(now + 500_000_000);
    let q = Smp::dr_get(tid(), PortInfo::ID, 0, S2_PATH)
        .unwrap()
        .with_m_key(KEY);
    s.fab.send(s.fab.now(), s.sm, &q).unwrap();
    settle(&mut s.fab);
    assert_eq!(s.fab.port_info(s.s2, 0).unwrap().m_key_protect_bits, 2);
    let (_, lft) = small_lfts();
    let t = LinearForwardingTable { ports: lft };
    assert!(dr_set_key(&mut s.fab, s.sm, S2_PATH, 0, &t, WRONG).is_none());
    // dr() settles up to 10 s: the lease started by that Set has run out.
    assert_eq!(s.fab.port_info(s.s2, 0).unwrap().m_key_protect_bits, 0);
    let (st, pi) = dr_get_key::<PortInfo>(&mut s.fab, s.sm, S2_PATH, 0, WRONG).unwrap();
    assert_eq!((st, pi.m_key), (0, KEY));
    // A reboot clears the key: any key is accepted again.
    s.fab
        .inject(s.fab.now(), fabric_sim::Fault::RebootSwitch { node: s.s2 })
        .unwrap();
    settle(&mut s.fab);
    assert_eq!(s.fab.port_info(s.s2, 0).unwrap().m_key, 0);
    let (st, _) = dr_set_key(&mut s.fab, s.sm, S2_PATH, 0, &t, WRONG).unwrap();
    assert_eq!(st, 0);
}
