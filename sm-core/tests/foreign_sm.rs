//! Another SM on the fabric (IBA 14.4.1 priority rules): two independent sweepers attached
//! at two CA ports of one fabric-sim fabric, virtual time, deterministic. Who wrote what is
//! read from the simulator's accepted-Set log (by source port).

mod common;
mod foreign_common;

use common::{ca_ports, topo};
use fabric::{Lid, NodeId};
use fabric_sim::Fault;
use foreign_common::*;
use mad::{AttributeId, LinearForwardingTable, Method, SmInfo, SmState, Smp};
use sm_core::{Event, Sweeper, SweeperConfig};

/// (a) B outranks A. B masters first, then A starts: A stands by without a single Set and
/// polls B. Then both start at the same instant: both may program their first sweep (each
/// sees the other DISCOVERING), A notices B's MASTER at its next light sweep, stands by,
/// and sends no Set after that.
#[test]
fn lower_priority_sm_stands_by_and_writes_nothing() {
    let t = topo("ft2:4");
    let (ga, gb) = two_ports(&t);

    // B first.
    let mut f = Fabric::new(&t);
    let b = f.add(gb, cfg(10));
    f.wait_for(b, "SUBNET UP", subnet_up);
    f.fab.take_set_log();
    let a = f.add(ga, cfg(0));
    f.wait_for(a, "STANDBY", stands_by);
    assert_eq!(f.sms[a].sw.foreign_master(), Some((gb, 10)));
    assert_eq!(f.sms[a].sw.sm_state(), SmState::Standby);
    // Ten more sweep intervals: A keeps standing by, B keeps mastering.
    let polls_before = f.sms[a]
        .sw
        .counters()
        .get(mad::AttributeId::SM_INFO, mad::Method::GET);
    f.advance(10 * INTERVAL);
    let log = f.fab.take_set_log();
    assert!(
        Fabric::sets_from(&log, ga).is_empty(),
        "A wrote while B was master: {:?}",
        Fabric::sets_from(&log, ga)
    );
    assert_eq!(f.sms[a].sw.sm_state(), SmState::Standby);
    assert!(!f.sms[a].sw.is_subnet_up());
    let polls = f.sms[a]
        .sw
        .counters()
        .get(mad::AttributeId::SM_INFO, mad::Method::GET)
        - polls_before;
    assert!(
        (8..=12).contains(&polls),
        "A polls B once per interval: {polls} SMInfo Gets in 10 intervals"
    );
    assert_eq!(f.sms[b].sw.sm_state(), SmState::Master);
    // B's next heavy sweep (light sweeps ask only the SMs heavy sweeps found) sees A as
    // STANDBY, and B carries on.
    let now = f.now;
    f.sms[b].sw.request_sweep(now, true);
    let n = f.sms[b].events.len();
    let ok = f.run(30 * SEC, |f| {
        f.sms[b].events[n..]
            .iter()
            .any(|(_, e)| matches!(e, Event::HeavySweepComplete { .. }))
    });
    assert!(ok, "B's requested heavy sweep did not complete");
    assert!(f.sms[b].events[n..].iter().any(|(_, e)| matches!(e,
        Event::OtherSms(v) if v.iter().any(|r| r.port_guid == ga && r.state == Some(SmState::Standby))
    )));
    check_routes(&f, &t);

    // Both at once.
    let mut f = Fabric::new(&t);
    let a = f.add(ga, cfg(0));
    let b = f.add(gb, cfg(10));
    let yielded = f.wait_for(a, "STANDBY", stands_by);
    f.advance(10 * INTERVAL);
    let log = f.fab.take_set_log();
    let late: Vec<_> = Fabric::sets_from(&log, ga)
        .into_iter()
        .filter(|r| r.time > yielded)
        .collect();
    assert!(late.is_empty(), "A wrote after standing by: {late:?}");
    assert_eq!(f.sms[a].sw.sm_state(), SmState::Standby);
    assert_eq!(f.sms[b].sw.sm_state(), SmState::Master);
    assert!(f.sms[b].sw.foreign_master().is_none());
    // B's latest word is in force: every port names B's LID as master SM.
    let b_lid = f.sms[b].sw.sm_lid();
    for &(n, p, g) in &ca_ports(&t) {
        assert_eq!(f.fab.port_info(n, p).unwrap().master_sm_lid, b_lid, "{g}");
    }
    check_routes(&f, &t);
}

/// (b) A outranks B: A keeps mastering and programs; B stands by and writes nothing after.
#[test]
fn higher_priority_sm_keeps_master() {
    let t = topo("ft2:4");
    let (ga, gb) = two_ports(&t);
    let mut f = Fabric::new(&t);
    let a = f.add(ga, cfg(12));
    let b = f.add(gb, cfg(3));
    f.wait_for(a, "SUBNET UP", subnet_up);
    let yielded = f.wait_for(b, "STANDBY", stands_by);
    f.advance(10 * INTERVAL);
    assert_eq!(f.sms[a].sw.sm_state(), SmState::Master);
    assert!(f.sms[a].sw.foreign_master().is_none());
    assert_eq!(f.sms[b].sw.sm_state(), SmState::Standby);
    assert_eq!(f.sms[b].sw.foreign_master(), Some((ga, 12)));
    let log = f.fab.take_set_log();
    assert!(
        !Fabric::sets_from(&log, ga).is_empty(),
        "A programmed the fabric"
    );
    let late: Vec<_> = Fabric::sets_from(&log, gb)
        .into_iter()
        .filter(|r| r.time > yielded)
        .collect();
    assert!(late.is_empty(), "B wrote after standing by: {late:?}");
    let a_lid = f.sms[a].sw.sm_lid();
    for &(n, p, g) in &ca_ports(&t) {
        assert_eq!(f.fab.port_info(n, p).unwrap().master_sm_lid, a_lid, "{g}");
    }
    check_routes(&f, &t);
    // A is not confused by B: no ForeignMaster event on A at all.
    assert!(f.first(a, stands_by).is_none());
}

/// (c) The master disappears: the standby notices within its poll bound, sweeps as master,
/// programs, and rewrites no LFT block that already holds what it wants.
#[test]
fn standby_takes_over_when_master_goes_and_keeps_right_lft_blocks() {
    let t = topo("ft2:4");
    let (ga, gb) = two_ports(&t);
    let mut f = Fabric::new(&t);
    let b = f.add(gb, cfg(10));
    f.wait_for(b, "SUBNET UP", subnet_up);
    let a = f.add(ga, cfg(0));
    f.wait_for(a, "STANDBY", stands_by);
    f.advance(3 * INTERVAL);

    // B goes. Then someone scribbles over LFT block 0 of the first CA's leaf switch (a
    // rogue directed-route Set from another CA port): the one block A must rewrite (B,
    // alive, would find it with its audit and rewrite it first).
    let killed = f.now;
    f.kill(b);
    let cas = ca_ports(&t);
    let mut smp = Smp::directed(
        Method::SET,
        0x77,
        AttributeId::LINEAR_FORWARDING_TABLE,
        0,
        &[cas[0].1],
    )
    .unwrap();
    smp.set_attr(&LinearForwardingTable { ports: [0xFF; 64] });
    let now = f.now;
    f.fab
        .inject(
            now,
            Fault::Rogue {
                port_guid: cas[1].2,
                dlid: Lid::PERMISSIVE,
                smp: Box::new(smp),
            },
        )
        .unwrap();
    f.advance(MS);

    // The LFTs B left (scribble included), block by block.
    let switches: Vec<NodeId> = t.switches().map(|(id, _)| id).collect();
    let before: Vec<Vec<u8>> = switches.iter().map(|&s| f.fab.lft(s).unwrap()).collect();
    f.fab.take_set_log();
    let gone = f.wait_for(a, "master gone", |e| {
        matches!(e, Event::ForeignMasterGone { .. })
    });
    // Bound: foreign_poll_misses (3) polls, one per interval, each given up after its
    // resends (timeout 20 ms x 9), plus the interval already running.
    let cfg = SweeperConfig::default();
    let bound = 4 * INTERVAL + 3 * (u64::from(cfg.retries) + 1) * cfg.timeout;
    assert!(
        gone - killed <= bound,
        "noticed after {} ms (bound {} ms)",
        (gone - killed) / MS,
        bound / MS
    );
    let up = f.wait_for(a, "SUBNET UP", subnet_up);
    assert!(up > gone);
    assert_eq!(f.sms[a].sw.sm_state(), SmState::Master);
    assert!(f.sms[a].sw.foreign_master().is_none());
    check_routes(&f, &t);
    let a_lid = f.sms[a].sw.sm_lid();
    for &(n, p, g) in &ca_ports(&t) {
        assert_eq!(f.fab.port_info(n, p).unwrap().master_sm_lid, a_lid, "{g}");
    }

    // Every LFT block A wrote differed from what B had left there.
    let log = f.fab.take_set_log();
    let lft_sets = f.assert_only_wrong_lft_blocks(&log, ga, &switches, &before);
    let (read, kept) = f.lfts_checked(a);
    assert_eq!(read - kept, lft_sets.len(), "writes = blocks found wrong");
    assert_eq!(lft_sets.len(), 1, "only the scribbled block: {lft_sets:?}");
    assert_eq!(lft_sets[0].attr_mod, 0);
    // Quiet afterwards: light sweeps find nothing to do (the LinearFDBTop B left is what
    // A records), so no heavy sweep and no Set follows.
    let heavies = |f: &Fabric| {
        f.sms[a]
            .events
            .iter()
            .filter(|(_, e)| matches!(e, Event::HeavySweepStarted { .. }))
            .count()
    };
    let n = heavies(&f);
    f.advance(5 * INTERVAL);
    assert_eq!(heavies(&f), n, "{}", f.log(a));
    assert!(Fabric::sets_from(&f.fab.take_set_log(), ga).is_empty());
    println!(
        "takeover: noticed after {} ms, {read} LFT blocks read back, {kept} kept, {} written",
        (gone - killed) / MS,
        lft_sets.len()
    );
}

/// A foreign SM that stays DISCOVERING, or one of the SM's own cluster, changes nothing.
#[test]
fn peers_and_lower_sms_change_nothing() {
    let t = topo("ft2:4");
    let (ga, gb) = two_ports(&t);
    let mut f = Fabric::new(&t);
    // B outranks A but is listed as A's cluster peer: A never asks it.
    let a = f.add(
        ga,
        SweeperConfig {
            peer_sms: vec![gb],
            ..cfg(0)
        },
    );
    let b = f.add(gb, cfg(10));
    f.wait_for(a, "SUBNET UP", subnet_up);
    // A is MASTER once its discovery is done (IBA 14.4.1): B, discovering, finds a MASTER
    // and stands by whatever its priority.
    f.wait_for(b, "STANDBY", stands_by);
    f.advance(5 * INTERVAL);
    assert!(f.first(a, stands_by).is_none(), "{}", f.log(a));
    assert!(
        !f.sms[a]
            .events
            .iter()
            .any(|(_, e)| matches!(e, Event::OtherSms(_)))
    );
    // The rules off: the same.
    let mut f = Fabric::new(&t);
    let a = f.add(
        ga,
        SweeperConfig {
            obey_foreign_sms: false,
            ..cfg(0)
        },
    );
    let _b = f.add(gb, cfg(10));
    f.wait_for(a, "SUBNET UP", subnet_up);
    f.advance(5 * INTERVAL);
    assert!(f.first(a, stands_by).is_none());
    assert_eq!(f.sms[a].sw.sm_state(), SmState::Master);
}

/// The SM_Key goes into an SMInfo answer only for an authenticated requester (its SMP
/// carries this SM's M_Key, any SMP while the M_Key is 0, or it presented the SM_Key):
/// OpenSM ignores an SM whose answer lacks its own key (default 1).
#[test]
fn sm_key_goes_only_to_authenticated_requesters() {
    for (m_key, smp_m_key, presented, want) in [
        (0, 0, 0, 1),
        (0xAB, 0, 0, 0),
        (0xAB, 0xAB, 0, 1),
        (0xAB, 0, 1, 1),
    ] {
        let mut sw = Sweeper::new(SweeperConfig {
            m_key,
            ..SweeperConfig::default()
        })
        .unwrap();
        assert_eq!(sw.config().sm_key, 1, "OpenSM's default SM_Key");
        let mut q = Smp::lid_get(7, AttributeId::SM_INFO, 0);
        q.m_key = smp_m_key;
        q.set_attr(&SmInfo {
            sm_key: presented,
            ..SmInfo::default()
        });
        sw.handle_mad(0, Lid(3), q);
        let tx = sw.poll_transmit().expect("an SMInfo answer");
        assert_eq!(tx.dlid, Lid(3));
        let a: SmInfo = tx.smp.attr().unwrap();
        assert_eq!(
            a.sm_key, want,
            "M_Key {m_key:#x}, SMP M_Key {smp_m_key:#x}, presented {presented}"
        );
    }
}

/// The followed master stops reporting MASTER (it stepped down: answers STANDBY), or hangs
/// (attached but silent: every poll times out): either way the standby sweeps as master.
#[test]
fn standby_takes_over_from_a_master_that_steps_down_or_hangs() {
    let t = topo("ft2:4");
    let (ga, gb) = two_ports(&t);
    for hang in [false, true] {
        let mut f = Fabric::new(&t);
        let b = f.add(gb, cfg(10));
        f.wait_for(b, "SUBNET UP", subnet_up);
        let a = f.add(ga, cfg(0));
        f.wait_for(a, "STANDBY", stands_by);
        if hang {
            // Still attached (IsSM set), never answers again: like SIGSTOP.
            f.sms[b].alive = false;
        } else {
            f.sms[b].sw.step_down();
        }
        let gone = f.wait_for(a, "master gone", |e| {
            matches!(e, Event::ForeignMasterGone { .. })
        });
        let ev = &f.sms[a].events.iter().find(|(t, _)| *t == gone).unwrap().1;
        match (hang, ev) {
            (
                false,
                Event::ForeignMasterGone {
                    state,
                    missed_polls,
                    ..
                },
            ) => {
                assert_eq!(*state, Some(SmState::Standby));
                assert_eq!(*missed_polls, 0);
            }
            (true, Event::ForeignMasterGone { missed_polls, .. }) => {
                assert_eq!(*missed_polls, SweeperConfig::default().foreign_poll_misses);
            }
            _ => unreachable!(),
        }
        f.wait_for(a, "SUBNET UP", subnet_up);
        assert_eq!(f.sms[a].sw.sm_state(), SmState::Master);
        check_routes(&f, &t);
        // The LFTs B left were right: none rewritten.
        let log = f.fab.take_set_log();
        assert!(
            !Fabric::sets_from(&log, ga).iter().any(|r| r.attr == LFT),
            "hang {hang}: A rewrote LFT blocks B left right"
        );
    }
}
