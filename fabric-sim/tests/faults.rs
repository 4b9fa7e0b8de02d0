//! Seeded and scripted faults: loss, duplication, delay, link down/up, switch reboot,
//! node removal/return, rogue senders, VL15 bounds, scheduling, determinism.

mod common;

use common::*;
use fabric::{Guid, Lid, PKey, PortState};
use fabric_sim::{Fault, SimConfig, SimFabric, VTime};
use mad::{NodeInfo, PortInfo, Smp, SmpAttribute, SwitchInfo};

/// Sends `n` DR NodeInfo Gets to H3 and H4 alternately, runs to idle, returns the
/// (time, tid) of every response in arrival order.
fn burst(fab: &mut SimFabric, sm: fabric_sim::AttachId, n: u64) -> Vec<(VTime, u64)> {
    for i in 0..n {
        let path = if i % 2 == 0 { H_PATHS[2] } else { H_PATHS[3] };
        let q = Smp::dr_get(1000 + i, NodeInfo::ID, 0, path).unwrap();
        let now = fab.now() + 50;
        fab.send(now, sm, &q).unwrap();
    }
    settle(fab);
    let mut v = Vec::new();
    while let Some((t, r)) = fab.poll_recv(sm) {
        v.push((t, r.tid));
    }
    v
}

#[test]
fn runs_are_deterministic_for_a_seed() {
    let run = |seed: u64| {
        let mut s = small(SimConfig {
            seed,
            ..SimConfig::default()
        });
        s.fab.inject(0, Fault::Loss { prob: 0.2 }).unwrap();
        s.fab.inject(0, Fault::Duplicate { prob: 0.2 }).unwrap();
        let got = burst(&mut s.fab, s.sm, 400);
        (got, s.fab.accounting().counters.clone())
    };
    let (a, ca) = run(7);
    let (b, cb) = run(7);
    assert_eq!(a, b);
    assert_eq!(ca, cb);
    assert!(ca.dropped_loss > 0 && ca.duplicated > 0);
    let (c, _) = run(8);
    assert_ne!(a, c, "another seed gives another run");
}

#[test]
fn loss_duplicate_and_delay() {
    // A deep VL15 buffer so that the duplicate storm below is not cut by VL15 drops.
    let mut s = small(SimConfig {
        vl15_depth: 1000,
        ..SimConfig::default()
    });
    let clean = burst(&mut s.fab, s.sm, 10);
    assert_eq!(clean.len(), 10);
    s.fab
        .inject(s.fab.now(), Fault::Loss { prob: 1.0 })
        .unwrap();
    assert!(burst(&mut s.fab, s.sm, 10).is_empty());
    s.fab
        .inject(s.fab.now(), Fault::Loss { prob: 0.0 })
        .unwrap();
    s.fab
        .inject(s.fab.now(), Fault::Duplicate { prob: 1.0 })
        .unwrap();
    let dup = burst(&mut s.fab, s.sm, 2);
    // Every hop doubles: 3 hops out and 3 back give 64 copies of each answer.
    assert_eq!(dup.len(), 2 * 64);
    s.fab
        .inject(s.fab.now(), Fault::Duplicate { prob: 0.0 })
        .unwrap();
    // Delay: a 3-hop round trip (6 link crossings) takes 6 x 10 us longer.
    let t0 = s.fab.now();
    let q = Smp::dr_get(tid(), NodeInfo::ID, 0, H_PATHS[2]).unwrap();
    s.fab.send(t0, s.sm, &q).unwrap();
    settle(&mut s.fab);
    let (t1, _) = s.fab.poll_recv(s.sm).unwrap();
    s.fab
        .inject(s.fab.now(), Fault::Delay { ns: 10_000 })
        .unwrap();
    let t2 = s.fab.now();
    let q = Smp::dr_get(tid(), NodeInfo::ID, 0, H_PATHS[2]).unwrap();
    s.fab.send(t2, s.sm, &q).unwrap();
    settle(&mut s.fab);
    let (t3, _) = s.fab.poll_recv(s.sm).unwrap();
    assert_eq!((t3 - t2) - (t1 - t0), 6 * 10_000);
    assert!(s.fab.inject(0, Fault::Loss { prob: 1.5 }).is_err());
}

#[test]
fn link_down_and_up() {
    let mut s = small(SimConfig::default());
    s.bring_up();
    s.fab
        .inject(
            s.fab.now(),
            Fault::LinkDown {
                node: s.s1,
                port: 3,
            },
        )
        .unwrap();
    assert_eq!(s.fab.port_state(s.s1, 3).unwrap(), PortState::Down);
    assert_eq!(s.fab.port_state(s.s2, 3).unwrap(), PortState::Down);
    assert!(s.fab.port_state_change(s.s1).unwrap());
    assert!(s.fab.port_state_change(s.s2).unwrap());
    assert!(dr_get::<NodeInfo>(&mut s.fab, s.sm, S2_PATH, 0).is_none());
    assert!(!s.fab.deliver(s.hg(1), Lid(3), PKey(0xFFFF)).is_delivered());
    // S1's trap 128 reached the SM; S2's could not (its only way to the SM is down).
    let traps: Vec<_> = others(&mut s.fab, s.sm)
        .into_iter()
        .filter(|r| r.smp.method == mad::Method::TRAP)
        .collect();
    assert_eq!(traps.len(), 1);
    assert_eq!(traps[0].slid, Lid(S1_LID));
    assert_eq!(
        s.fab.port_info(s.s1, 3).unwrap().port_phys_state,
        2,
        "Polling"
    );
    // Still down after a long time: the cable is out.
    settle(&mut s.fab);
    assert_eq!(s.fab.port_state(s.s1, 3).unwrap(), PortState::Down);
    s.fab
        .inject(
            s.fab.now(),
            Fault::LinkUp {
                node: s.s2,
                port: 3,
            },
        )
        .unwrap();
    settle(&mut s.fab);
    assert_eq!(s.fab.port_state(s.s1, 3).unwrap(), PortState::Init);
    assert_eq!(s.fab.port_state(s.s2, 3).unwrap(), PortState::Init);
    let (_, ni) = dr_get::<NodeInfo>(&mut s.fab, s.sm, S2_PATH, 0).unwrap();
    assert_eq!(ni.node_guid, s.fab.node_guid(s.s2).unwrap());
    // LID traffic needs the SM to activate the link again.
    assert!(!s.fab.deliver(s.hg(1), Lid(3), PKey(0xFFFF)).is_delivered());
    for st in [3, 4] {
        assert_eq!(set_port_state(&mut s.fab, s.sm, S1_PATH, 3, st), 0);
        assert_eq!(set_port_state(&mut s.fab, s.sm, S2_PATH, 3, st), 0);
    }
    assert!(s.fab.deliver(s.hg(1), Lid(3), PKey(0xFFFF)).is_delivered());
}

#[test]
fn switch_reboot_loses_lft_lid_and_pkeys() {
    let mut s = small(SimConfig::default());
    s.bring_up();
    let mut t = mad::PKeyTable::default();
    t.keys[0] = PKey(0x8001);
    dr_set(
        &mut s.fab,
        s.sm,
        S2_PATH,
        mad::PKeyTable::modifier(1, 0),
        &t,
    )
    .unwrap();
    assert!(s.fab.deliver(s.hg(1), Lid(3), PKey(0xFFFF)).is_delivered());
    s.fab
        .inject(s.fab.now(), Fault::RebootSwitch { node: s.s2 })
        .unwrap();
    assert_eq!(s.fab.port_state(s.h[2], 1).unwrap(), PortState::Down);
    settle(&mut s.fab);
    assert_eq!(s.fab.port_state(s.s2, 1).unwrap(), PortState::Init);
    assert_eq!(s.fab.lft_entry(s.s2, Lid(3)).unwrap(), 0xFF);
    let (_, pi) = dr_get::<PortInfo>(&mut s.fab, s.sm, S2_PATH, 0).unwrap();
    assert_eq!(pi.lid, Lid(0));
    assert_eq!(pi.master_sm_lid, Lid(0));
    let (_, si) = dr_get::<SwitchInfo>(&mut s.fab, s.sm, S2_PATH, 0).unwrap();
    assert_eq!(si.linear_fdb_top, 0);
    let (_, pk) =
        dr_get::<mad::PKeyTable>(&mut s.fab, s.sm, S2_PATH, mad::PKeyTable::modifier(1, 0))
            .unwrap();
    assert_eq!(pk.keys[0], PKey(0xFFFF));
    assert!(!s.fab.deliver(s.hg(1), Lid(3), PKey(0xFFFF)).is_delivered());
}

#[test]
fn node_removal_and_return() {
    let mut s = small(SimConfig::default());
    s.bring_up();
    s.fab
        .inject(s.fab.now(), Fault::RemoveNode { node: s.h[2] })
        .unwrap();
    assert!(!s.fab.node_present(s.h[2]));
    assert_eq!(s.fab.port_state(s.s2, 1).unwrap(), PortState::Down);
    assert!(dr_get::<NodeInfo>(&mut s.fab, s.sm, H_PATHS[2], 0).is_none());
    settle(&mut s.fab);
    assert_eq!(s.fab.port_state(s.s2, 1).unwrap(), PortState::Down);
    s.fab
        .inject(s.fab.now(), Fault::ReturnNode { node: s.h[2] })
        .unwrap();
    settle(&mut s.fab);
    assert_eq!(s.fab.port_state(s.s2, 1).unwrap(), PortState::Init);
    let (_, pi) = dr_get::<PortInfo>(&mut s.fab, s.sm, H_PATHS[2], 1).unwrap();
    assert_eq!(pi.lid, Lid(0), "comes back unconfigured");
    assert_eq!(pi.port_state, 2);
}

#[test]
fn rogue_sender_sets_are_logged_with_their_source_and_m_key_stops_them() {
    let mut s = small(SimConfig::default());
    s.bring_up();
    s.fab.take_set_log();
    let rogue = s.hg(5);
    // From H5: S1 port 3 -> S2 port 1 -> H3.
    let mut pi = s.fab.port_info(s.h[2], 1).unwrap();
    pi.port_state = 0;
    pi.port_phys_state = 0;
    pi.master_sm_lid = Lid(5);
    let q = Smp::dr_set(tid(), 1, &[1, 3, 1], &pi).unwrap();
    s.fab
        .inject(
            s.fab.now(),
            Fault::Rogue {
                port_guid: rogue,
                dlid: Lid::PERMISSIVE,
                smp: Box::new(q),
            },
        )
        .unwrap();
    settle(&mut s.fab);
    assert_eq!(s.fab.port_info(s.h[2], 1).unwrap().master_sm_lid, Lid(5));
    let log = s.fab.take_set_log();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].source, Some(rogue));
    assert_eq!(log[0].node, s.h[2]);
    assert_eq!(s.fab.accounting().per_source().get(&rogue), Some(&1));
    // With an M_Key (protect 1) the same Set is refused; the trap goes to H3's
    // MasterSMLID, which the SM restores first.
    let st = modify_port_info(&mut s.fab, s.sm, H_PATHS[2], 1, |p| {
        p.port_state = 0;
        p.port_phys_state = 0;
        p.master_sm_lid = Lid(1);
        p.m_key = 0xFEED;
        p.m_key_protect_bits = 1;
    });
    assert_eq!(st, 0);
    let q = Smp::dr_set(tid(), 1, &[1, 3, 1], &pi).unwrap();
    s.fab
        .inject(
            s.fab.now(),
            Fault::Rogue {
                port_guid: rogue,
                dlid: Lid::PERMISSIVE,
                smp: Box::new(q),
            },
        )
        .unwrap();
    settle(&mut s.fab);
    assert_eq!(s.fab.port_info(s.h[2], 1).unwrap().master_sm_lid, Lid(1));
    let log = s.fab.take_set_log();
    assert_eq!(log.len(), 1, "only the SM's Set");
    assert_eq!(log[0].source, Some(s.hg(1)));
    let traps = others(&mut s.fab, s.sm)
        .into_iter()
        .filter(|r| {
            r.smp.method == mad::Method::TRAP
                && mad::Notice::decode(&r.smp.data).trap_number() == Some(256)
        })
        .count();
    assert_eq!(traps, 1);
}

#[test]
fn scheduled_faults_fire_at_their_time() {
    let mut s = small(SimConfig::default());
    s.fab
        .schedule(
            5_000_000,
            Fault::LinkDown {
                node: s.s1,
                port: 2,
            },
        )
        .unwrap();
    s.fab.run_until(4_999_999);
    assert_eq!(s.fab.port_state(s.s1, 2).unwrap(), PortState::Init);
    s.fab.run_until(5_000_000);
    assert_eq!(s.fab.port_state(s.s1, 2).unwrap(), PortState::Down);
    assert!(
        s.fab
            .schedule(0, Fault::RebootSwitch { node: s.h[0] })
            .is_err()
    );
}

#[test]
fn vl15_buffer_of_a_switch_port_is_bounded() {
    let run = |depth: u32| {
        let mut s = small(SimConfig {
            vl15_depth: depth,
            wire_time_ns: 1_000,
            ..SimConfig::default()
        });
        let sm2 = s.fab.attach(s.hg(2)).unwrap();
        // H1 and H2 each send 5 Gets to S2 at once: their SMPs meet at S1's port 3.
        for i in 0..5u64 {
            let q = Smp::dr_get(100 + i, NodeInfo::ID, 0, &[1, 3]).unwrap();
            s.fab.send(0, s.sm, &q).unwrap();
            let q = Smp::dr_get(200 + i, NodeInfo::ID, 0, &[1, 3]).unwrap();
            s.fab.send(0, sm2, &q).unwrap();
        }
        settle(&mut s.fab);
        let mut got = 0;
        while s.fab.poll_recv(s.sm).is_some() {
            got += 1;
        }
        while s.fab.poll_recv(sm2).is_some() {
            got += 1;
        }
        (got, s.fab.accounting().counters.dropped_vl15)
    };
    assert_eq!(run(1), (5, 5));
    assert_eq!(run(16), (10, 0));
}

#[test]
fn attach_rules() {
    let mut s = small(SimConfig::default());
    assert!(s.fab.attach(s.hg(1)).is_err(), "H1 already has an SM");
    assert!(s.fab.attach(Guid(0xDEAD)).is_err());
    let sw = s.fab.port_guid(s.s1, 0).unwrap();
    assert!(s.fab.attach(sw).is_err(), "SMs attach at CA ports");
    let q = Smp::lid_get(1, NodeInfo::ID, 0);
    assert!(
        s.fab.send(0, s.sm, &q).is_err(),
        "LID-routed needs send_lid"
    );
    s.fab.detach(s.sm).unwrap();
    assert!(
        s.fab
            .send(0, s.sm, &Smp::dr_get(1, NodeInfo::ID, 0, &[]).unwrap())
            .is_err()
    );
    assert!(s.fab.attach(s.hg(1)).is_ok());
}

#[test]
fn seeded_random_flaps_are_reproducible() {
    let plan = |seed: u64| {
        let mut s = small(SimConfig::default());
        let flaps = s
            .fab
            .schedule_random_flaps(seed, 5, 1_000_000, 2_000_000, 100_000);
        settle(&mut s.fab);
        (flaps, s.fab.accounting().counters.clone())
    };
    let (a, ca) = plan(3);
    let (b, cb) = plan(3);
    assert_eq!(a, b);
    assert_eq!(ca, cb);
    assert_eq!(a.len(), 5);
    assert!(a.iter().all(|(t, _, _)| (1_000_000..2_000_000).contains(t)));
    let (c, _) = plan(4);
    assert_ne!(a, c);
    // Every flapped link is back up (INIT) once the plan has run.
    let mut s = small(SimConfig::default());
    let flaps = s
        .fab
        .schedule_random_flaps(3, 5, 1_000_000, 2_000_000, 100_000);
    settle(&mut s.fab);
    for (_, node, port) in flaps {
        assert_eq!(s.fab.port_state(node, port).unwrap(), PortState::Init);
    }
}
