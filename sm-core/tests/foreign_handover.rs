//! SMInfo HANDOVER / ACKNOWLEDGE and the other SubnSet(SMInfo) modifiers (IBA 14.4) between
//! two sweepers (or a sweeper and a scripted SM port) on one fabric-sim fabric, virtual
//! time, deterministic.

mod common;
mod foreign_common;

use common::{ca_ports, topo};
use fabric::{Guid, Lid};
use foreign_common::*;
use mad::{AttributeId, Method, SmInfo, SmState, Smp};
use sm_core::{Event, Sweeper, SweeperConfig};

/// Handover (a): A masters at priority 0, B starts at priority 15. B, DISCOVERING, finds
/// A's MASTER and stands by although it outranks A (IBA 14.4), telling A with a trap 144;
/// A's heavy sweep finds B STANDBY and outranking, sends HANDOVER and writes nothing more;
/// B answers, ACKNOWLEDGEs and sweeps as master reading LFT blocks back (A's are right:
/// none rewritten); A stands by for B and sends no Set after the handover.
#[test]
fn master_hands_over_to_a_higher_standby() {
    let t = topo("ft2:4");
    let (ga, gb) = two_ports(&t);
    let mut f = Fabric::new(&t);
    let a = f.add(ga, cfg(0));
    f.wait_for(a, "SUBNET UP", subnet_up);
    f.advance(2 * INTERVAL);
    f.fab.take_set_log();
    let b_start = f.now;
    let b = f.add(gb, cfg(15));
    let b_standby = f.wait_for(b, "STANDBY", stands_by);
    assert_eq!(
        f.first(b, subnet_up),
        None,
        "B programmed before standing by"
    );
    let sent = f.wait_for(
        a,
        "HANDOVER sent",
        |e| matches!(e, Event::HandoverSent { guid, priority: 15 } if *guid == gb),
    );
    assert!(sent > b_standby);
    let got = f.wait_for(
        b,
        "HANDOVER received",
        |e| matches!(e, Event::HandoverReceived { guid } if *guid == ga),
    );
    let acked = f.wait_for(
        b,
        "ACKNOWLEDGE sent",
        |e| matches!(e, Event::AcknowledgeSent { guid } if *guid == ga),
    );
    let taken = f.wait_for(
        a,
        "handover taken",
        |e| matches!(e, Event::HandoverTaken { guid, acknowledged: true } if *guid == gb),
    );
    assert!(got >= sent && acked >= got && taken >= acked);
    let up = f.wait_for(b, "SUBNET UP", subnet_up);
    assert!(up > got);
    f.advance(10 * INTERVAL);
    assert_eq!(f.sms[b].sw.sm_state(), SmState::Master);
    assert!(f.sms[b].sw.foreign_master().is_none());
    assert_eq!(f.sms[a].sw.sm_state(), SmState::Standby);
    assert_eq!(f.sms[a].sw.foreign_master(), Some((gb, 15)));
    // A sent no Set after the handover (A's HANDOVER itself is an SMInfo Set to B's SM,
    // not to an SMA: the simulator's log holds SMA Sets only), and none after B appeared.
    let log = f.fab.take_set_log();
    let from_a = Fabric::sets_from(&log, ga);
    assert!(from_a.is_empty(), "A wrote after B appeared: {from_a:?}");
    // B read the LFT blocks back and rewrote none (A left them right).
    assert!(
        !Fabric::sets_from(&log, gb).iter().any(|r| r.attr == LFT),
        "B rewrote LFT blocks"
    );
    let (read, kept) = f.sms[b]
        .events
        .iter()
        .find_map(|(_, e)| match e {
            Event::LftsChecked { read, kept } => Some((*read, *kept)),
            _ => None,
        })
        .expect("B's LFT check");
    assert!(read > 0);
    assert_eq!(read, kept);
    let b_lid = f.sms[b].sw.sm_lid();
    for &(n, p, g) in &ca_ports(&t) {
        assert_eq!(f.fab.port_info(n, p).unwrap().master_sm_lid, b_lid, "{g}");
    }
    check_routes(&f, &t);
    // Exactly one handover, no refusal, no second round.
    assert_eq!(count(&f, a, |e| matches!(e, Event::HandoverSent { .. })), 1);
    assert_eq!(
        count(&f, b, |e| matches!(e, Event::SmInfoSetRefused { .. })),
        0
    );
    assert_eq!(
        count(&f, a, |e| matches!(e, Event::SmInfoSetRefused { .. })),
        0
    );
    println!(
        "handover (virtual time): B stood by {} us after it started, A sent HANDOVER {} us later, B up {} us after it; B read back {read} LFT blocks, rewrote 0",
        (b_standby - b_start) / 1000,
        (sent - b_standby) / 1000,
        (up - got) / 1000
    );
}

/// Handover (b): the reverse start order. B (15) masters, A (0) starts and stands by for
/// it; nothing else happens: no HANDOVER either way, A sends no Set, B stays MASTER
/// through its next heavy sweep.
#[test]
fn lower_sm_stands_by_and_no_handover_follows() {
    let t = topo("ft2:4");
    let (ga, gb) = two_ports(&t);
    let mut f = Fabric::new(&t);
    let b = f.add(gb, cfg(15));
    f.wait_for(b, "SUBNET UP", subnet_up);
    f.fab.take_set_log();
    let a = f.add(ga, cfg(0));
    f.wait_for(a, "STANDBY", stands_by);
    f.advance(5 * INTERVAL);
    let now = f.now;
    f.sms[b].sw.request_sweep(now, true);
    f.advance(10 * INTERVAL);
    for i in [a, b] {
        assert_eq!(count(&f, i, handover_event), 0, "{}", f.log(i));
    }
    assert_eq!(f.sms[a].sw.sm_state(), SmState::Standby);
    assert_eq!(f.sms[b].sw.sm_state(), SmState::Master);
    assert!(Fabric::sets_from(&f.fab.take_set_log(), ga).is_empty());
}

/// Handover (c): SMs with different SM_Keys take no part in each other's mastership
/// decisions (IBA 14.4.1; OpenSM ignores such an SM too). A (priority 0, SM_Key 2)
/// masters, B (priority 15, SM_Key 1) starts: neither follows nor hands over to the other,
/// each reports the other (port GUID and LID). A HANDOVER carrying another SM_Key is
/// refused (`set_checks`).
#[test]
fn sms_with_different_sm_keys_ignore_each_other() {
    let t = topo("ft2:4");
    let (ga, gb) = two_ports(&t);
    let mut f = Fabric::new(&t);
    let a = f.add(
        ga,
        SweeperConfig {
            sm_key: 2,
            ..cfg(0)
        },
    );
    f.wait_for(a, "SUBNET UP", subnet_up);
    let b = f.add(gb, cfg(15));
    f.wait_for(
        b,
        "A ignored",
        |e| matches!(e, Event::SmKeyIgnored { guid, .. } if *guid == ga),
    );
    f.wait_for(b, "SUBNET UP", subnet_up);
    let now = f.now;
    f.sms[a].sw.request_sweep(now, true);
    f.wait_for(
        a,
        "B ignored",
        |e| matches!(e, Event::SmKeyIgnored { guid, .. } if *guid == gb),
    );
    f.advance(5 * INTERVAL);
    assert_eq!(f.sms[a].sw.sm_state(), SmState::Master, "{}", f.log(a));
    assert!(f.sms[a].sw.foreign_master().is_none());
    assert!(f.sms[b].sw.foreign_master().is_none());
    for i in [a, b] {
        assert_eq!(count(&f, i, |e| matches!(e, Event::HandoverSent { .. })), 0);
        assert!(f.first(i, stands_by).is_none(), "{}", f.log(i));
    }
}

/// Handover (d): no ACKNOWLEDGE. A masters; an SM at another port answers STANDBY,
/// priority 15, to everything (it takes the HANDOVER Set but never takes over). A sends
/// one HANDOVER (modifier 1, its own SMInfo: state MASTER, SM_Key 1), writes nothing while
/// it waits, polls it `foreign_poll_misses` times, says the handover failed, and sweeps
/// on as MASTER without handing over to it again.
#[test]
fn no_acknowledge_master_stays_master() {
    let t = topo("ft2:4");
    let (ga, gb) = two_ports(&t);
    let mut f = Fabric::new(&t);
    let a = f.add(ga, cfg(0));
    f.wait_for(a, "SUBNET UP", subnet_up);
    f.add_stub(gb, 15, SmState::Standby);
    let now = f.now;
    f.sms[a].sw.request_sweep(now, true);
    let sent = f.wait_for(a, "HANDOVER sent", |e| {
        matches!(e, Event::HandoverSent { .. })
    });
    f.fab.take_set_log();
    let failed = f.wait_for(
        a,
        "handover failed",
        |e| matches!(e, Event::HandoverFailed { guid, polls: 3 } if *guid == gb),
    );
    let waited = f.fab.take_set_log();
    assert!(
        Fabric::sets_from(&waited, ga).is_empty(),
        "A wrote while waiting for the handover: {waited:?}"
    );
    let misses = u64::from(SweeperConfig::default().foreign_poll_misses);
    assert!(failed - sent >= misses * INTERVAL && failed - sent <= (misses + 1) * INTERVAL);
    f.advance(10 * INTERVAL);
    assert_eq!(f.sms[a].sw.sm_state(), SmState::Master);
    assert!(f.sms[a].sw.foreign_master().is_none());
    assert_eq!(count(&f, a, |e| matches!(e, Event::HandoverSent { .. })), 1);
    assert_eq!(
        count(&f, a, |e| matches!(e, Event::HandoverTaken { .. })),
        0
    );
    // The one HANDOVER the stub got.
    let sets = &f.stubs[0].sets;
    assert_eq!(sets.len(), 1, "{sets:?}");
    let (_, q) = &sets[0];
    assert_eq!(q.attr_mod, SmInfo::MOD_HANDOVER);
    let p: SmInfo = q.attr().unwrap();
    assert_eq!(
        (p.guid, p.priority, p.state(), p.sm_key),
        (ga, 0, Some(SmState::Master), 1)
    );
    check_routes(&f, &t);
}

/// The checks on a SubnSet(SMInfo) reaching this SM's port, on a sweeper that has not
/// swept (DISCOVERING, standing by for nobody): status of the answer and the event.
#[test]
fn sm_info_set_checks() {
    const REFUSED: u16 = 0x1C;
    let set = |modifier: u32, state: SmState, sm_key: u64, m_key: u64| {
        let mut q = Smp::lid_get(9, AttributeId::SM_INFO, modifier);
        q.method = Method::SET;
        q.m_key = m_key;
        q.set_attr(&SmInfo {
            guid: Guid(0x77),
            sm_key,
            act_count: 1,
            priority: 3,
            sm_state: state.to_wire(),
        });
        q
    };
    // (config, request, answer status or None: no answer, what the event says)
    let on = SweeperConfig::default();
    let keyed = SweeperConfig {
        m_key: 0xAB,
        ..SweeperConfig::default()
    };
    let off = SweeperConfig {
        obey_foreign_sms: false,
        ..SweeperConfig::default()
    };
    type Case = (
        &'static str,
        SweeperConfig,
        Smp,
        Option<u16>,
        Option<&'static str>,
    );
    let cases: Vec<Case> = vec![
        (
            "HANDOVER from a MASTER while DISCOVERING: taken",
            on.clone(),
            set(1, SmState::Master, 1, 0),
            Some(0),
            Some("received HANDOVER from"),
        ),
        (
            "HANDOVER from a STANDBY",
            on.clone(),
            set(1, SmState::Standby, 1, 0),
            Some(REFUSED),
            Some("the sender is not MASTER"),
        ),
        (
            "HANDOVER with a wrong SM_Key",
            on.clone(),
            set(1, SmState::Master, 5, 0),
            Some(REFUSED),
            Some("its SM_Key is not ours"),
        ),
        (
            "ACKNOWLEDGE from a MASTER",
            on.clone(),
            set(2, SmState::Master, 1, 0),
            Some(REFUSED),
            Some("an ACKNOWLEDGE comes from a STANDBY SM"),
        ),
        (
            "ACKNOWLEDGE nobody waits for: like a Get",
            on.clone(),
            set(2, SmState::Standby, 1, 0),
            Some(0),
            None,
        ),
        (
            "DISCOVER from a master this SM does not follow",
            on.clone(),
            set(5, SmState::Master, 1, 0),
            Some(REFUSED),
            Some("not from the master this SM stands by for"),
        ),
        (
            "STANDBY while not NOT-ACTIVE",
            on.clone(),
            set(4, SmState::Master, 1, 0),
            Some(REFUSED),
            Some("only when NOT-ACTIVE"),
        ),
        (
            "M_Key set, Set without it: no answer",
            keyed.clone(),
            set(1, SmState::Master, 1, 0),
            None,
            None,
        ),
        (
            "M_Key set, Set with it: taken",
            keyed,
            set(1, SmState::Master, 1, 0xAB),
            Some(0),
            Some("received HANDOVER from"),
        ),
        (
            "rules off: like a Get",
            off,
            set(1, SmState::Master, 1, 0),
            Some(0),
            None,
        ),
    ];
    for (what, cfg, q, status, event) in cases {
        let mut sw = Sweeper::new(cfg).unwrap();
        sw.handle_mad(0, Lid(3), q);
        let answer = std::iter::from_fn(|| sw.poll_transmit())
            .find(|t| t.smp.attr_id == AttributeId::SM_INFO && t.smp.is_response());
        assert_eq!(answer.as_ref().map(|t| t.smp.status), status, "{what}");
        if let Some(t) = &answer {
            assert_eq!(t.dlid, Lid(3), "{what}");
        }
        let said: Vec<String> = std::iter::from_fn(|| sw.poll_event())
            .filter(handover_event)
            .map(|e| e.to_string())
            .collect();
        match event {
            Some(text) => assert!(
                said.len() == 1 && said[0].contains(text),
                "{what}: {said:?}"
            ),
            None => assert!(said.is_empty(), "{what}: {said:?}"),
        }
    }
}

/// DISABLE, STANDBY and DISCOVER from the followed master (SubnSet(SMInfo) as A would send
/// them, handed to B's sweeper): DISABLE makes B NOT-ACTIVE (no poll, nothing sent);
/// STANDBY makes it STANDBY polling A again; DISCOVER makes it sweep (DISCOVERING, then
/// it finds A's MASTER and stands by again without writing).
#[test]
fn disable_standby_discover_from_the_master() {
    let t = topo("ft2:4");
    let (ga, gb) = two_ports(&t);
    let mut f = Fabric::new(&t);
    let a = f.add(ga, cfg(10));
    f.wait_for(a, "SUBNET UP", subnet_up);
    let b = f.add(gb, cfg(0));
    f.wait_for(b, "STANDBY", stands_by);
    f.fab.take_set_log();
    let from_a = |modifier: u32| {
        let mut q = Smp::lid_get(0x55, AttributeId::SM_INFO, modifier);
        q.method = Method::SET;
        q.set_attr(&SmInfo {
            guid: ga,
            sm_key: 1,
            act_count: 1,
            priority: 10,
            sm_state: SmState::Master.to_wire(),
        });
        q
    };
    let applied = |f: &Fabric, m: u32| {
        count(
            f,
            b,
            |e| matches!(e, Event::SmInfoSetApplied { modifier, .. } if *modifier == m),
        )
    };
    let a_lid = f.sms[a].sw.sm_lid();
    // DISABLE: NOT-ACTIVE, and B sends nothing at all for 10 intervals.
    let now = f.now;
    f.sms[b]
        .sw
        .handle_mad(now, a_lid, from_a(SmInfo::MOD_DISABLE));
    f.advance(INTERVAL / 10);
    assert_eq!(applied(&f, SmInfo::MOD_DISABLE), 1, "{}", f.log(b));
    assert_eq!(f.sms[b].sw.sm_state(), SmState::NotActive);
    // Its answers to A's SMInfo Gets aside (an SM answers them in every state, as
    // OpenSM's does; A knows B from the trap 144 of B's IsSM and asks it every light sweep).
    let asked = |f: &Fabric| {
        let c = f.sms[b].sw.counters();
        c.total() - c.get(AttributeId::SM_INFO, Method::GET_RESP)
    };
    let sent = asked(&f);
    f.advance(10 * INTERVAL);
    assert_eq!(asked(&f), sent, "NOT-ACTIVE B sent SMPs");
    // STANDBY: polls A again.
    let now = f.now;
    f.sms[b]
        .sw
        .handle_mad(now, a_lid, from_a(SmInfo::MOD_STANDBY));
    f.advance(3 * INTERVAL);
    assert_eq!(applied(&f, SmInfo::MOD_STANDBY), 1, "{}", f.log(b));
    assert_eq!(f.sms[b].sw.sm_state(), SmState::Standby);
    assert_eq!(f.sms[b].sw.foreign_master(), Some((ga, 10)));
    assert!(asked(&f) > sent + 1, "B polls A again");
    // DISCOVER: a heavy sweep, which finds A's MASTER: STANDBY again.
    let standbys = count(&f, b, stands_by);
    let now = f.now;
    f.sms[b]
        .sw
        .handle_mad(now, a_lid, from_a(SmInfo::MOD_DISCOVER));
    f.advance(3 * INTERVAL);
    assert_eq!(applied(&f, SmInfo::MOD_DISCOVER), 1, "{}", f.log(b));
    assert_eq!(count(&f, b, stands_by), standbys + 1, "{}", f.log(b));
    assert_eq!(f.sms[b].sw.sm_state(), SmState::Standby);
    assert!(Fabric::sets_from(&f.fab.take_set_log(), gb).is_empty());
    assert_eq!(f.sms[a].sw.sm_state(), SmState::Master);
}

/// A HANDOVER that reaches B while its first discovery runs, from a master that goes on
/// answering MASTER for a while (OpenSM may answer a query sent before the HANDOVER, or
/// before the ACKNOWLEDGE reached it): B takes it and masters; it neither stands by for the
/// SM that handed over nor waits for it.
#[test]
fn handover_taken_mid_discovery_from_a_master_still_answering_master() {
    let t = topo("ft2:4");
    let (ga, gb) = two_ports(&t);
    let mut f = Fabric::new(&t);
    let at = f.fab.attach(ga).unwrap();
    let info = SmInfo {
        guid: ga,
        sm_key: 1,
        act_count: 1,
        priority: 0,
        sm_state: SmState::Master.to_wire(),
    };
    f.stubs.push(Stub {
        at,
        info,
        sets: Vec::new(),
    });
    let b = f.add(gb, cfg(15));
    let mut q = Smp::lid_get(0x55, AttributeId::SM_INFO, SmInfo::MOD_HANDOVER);
    q.method = Method::SET;
    q.set_attr(&info);
    let now = f.now;
    f.sms[b].sw.handle_mad(now, fabric::Lid(0), q);
    f.wait_for(b, "SUBNET UP", subnet_up);
    assert_eq!(count(&f, b, stands_by), 0, "{}", f.log(b));
    assert_eq!(
        count(&f, b, |e| matches!(e, Event::HandoverReceived { .. })),
        1
    );
    assert_eq!(f.sms[b].sw.sm_state(), SmState::Master);
    check_routes(&f, &t);
}

/// Graceful stop (issue 23, item 5): B masters at priority 15, A stands by at priority 0.
/// B is told to stop: it hands over to A although A ranks lower (the fabric keeps a
/// master), A takes over and ACKNOWLEDGEs, reading B's LFT blocks back (none rewritten);
/// B is NOT-ACTIVE until its daemon exits and sends no Set after. A master with no standby
/// known does not try.
#[test]
fn a_stopping_master_hands_over_to_the_best_standby() {
    let t = topo("ft2:4");
    let (ga, gb) = two_ports(&t);
    let mut f = Fabric::new(&t);
    let b = f.add(gb, cfg(15));
    f.wait_for(b, "SUBNET UP", subnet_up);
    let now = f.now;
    assert!(
        !f.sms[b].sw.hand_over_to_stop(now),
        "no standby known: nothing to hand over to"
    );
    let a = f.add(ga, cfg(0));
    f.wait_for(a, "STANDBY", stands_by);
    // B's next heavy sweep queries the SMs and finds A STANDBY.
    let now = f.now;
    f.sms[b].sw.request_sweep(now, true);
    f.advance(3 * INTERVAL);
    f.fab.take_set_log();
    let now = f.now;
    assert!(f.sms[b].sw.hand_over_to_stop(now));
    f.wait_for(
        b,
        "handover taken",
        |e| matches!(e, Event::HandoverTaken { guid, acknowledged: true } if *guid == ga),
    );
    f.wait_for(a, "SUBNET UP", subnet_up);
    f.advance(5 * INTERVAL);
    assert_eq!(f.sms[a].sw.sm_state(), SmState::Master);
    assert_eq!(
        f.sms[b].sw.sm_state(),
        SmState::NotActive,
        "B, stopping, is NOT-ACTIVE until its daemon exits: A does not hand back"
    );
    let log = f.fab.take_set_log();
    assert!(
        Fabric::sets_from(&log, gb).is_empty(),
        "B wrote after its stop"
    );
    assert!(
        !Fabric::sets_from(&log, ga).iter().any(|r| r.attr == LFT),
        "A rewrote LFT blocks B left right"
    );
    check_routes(&f, &t);
}
