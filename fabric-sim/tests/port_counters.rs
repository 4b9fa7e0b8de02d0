//! The port counters every packet path keeps, as the PMA reports them: packet and word
//! counts on every port of a path (data, SMPs, GMPs), saturation with the extended
//! counters counting on, LinkDowned on faults, where drops count, injection, the seeded
//! receive error rate, and the control requests.

mod common;

use common::perf::*;
use common::*;
use fabric::{Lid, PKey};
use fabric_sim::{Delivery, DropReason, Fault, PACKET_WORDS, SimConfig, control};
use mad::perf::{Counter, PerfMad, PortCounters};
use mad::{NodeInfo, SmpAttribute};
use std::collections::BTreeMap;

/// CounterSelect bit of PortXmitData (IBA 16.1.3.5).
const SEL_XMIT_DATA: u16 = 1 << 12;

#[test]
fn packets_and_words_count_on_every_port_of_the_path() {
    let mut s = up();
    let (s1, s2, h) = (s.s1, s.s2, s.h.clone());
    // A data packet H2 -> H4: H2[1] -> S1[2], S1[3] -> S2[3], S2[2] -> H4[1].
    let before = snapshot(&s.fab);
    assert!(s.fab.deliver(s.hg(2), Lid(4), PKey(0xFFFF)).is_delivered());
    let want: BTreeMap<_, _> = [
        ((h[1], 1), pk(1, 0)),
        ((s1, 2), pk(0, 1)),
        ((s1, 3), pk(1, 0)),
        ((s2, 3), pk(0, 1)),
        ((s2, 2), pk(1, 0)),
        ((h[3], 1), pk(0, 1)),
    ]
    .into();
    assert_eq!(diff(&before, &snapshot(&s.fab)), want);

    // A directed-route SMP to S2 and its answer: H1[1] - S1[1], S1[3] - S2[3] both ways.
    let before = snapshot(&s.fab);
    let (st, _) = dr_get::<NodeInfo>(&mut s.fab, s.sm, S2_PATH, 0).unwrap();
    assert_eq!(st, 0);
    let both = pk(1, 1);
    let want: BTreeMap<_, _> = [
        ((h[0], 1), both),
        ((s1, 1), both),
        ((s1, 3), both),
        ((s2, 3), both),
    ]
    .into();
    assert_eq!(diff(&before, &snapshot(&s.fab)), want);

    // A LID-routed SMP to H4 and back: three links each way.
    let before = snapshot(&s.fab);
    let q = mad::Smp::lid_get(tid(), NodeInfo::ID, 0);
    assert!(lid(&mut s.fab, s.sm, 4, &q).is_some());
    let mut want = want.clone();
    want.insert((s2, 2), both);
    want.insert((h[3], 1), both);
    assert_eq!(diff(&before, &snapshot(&s.fab)), want);

    // A PMA query (a GMP) to S2 and its answer cross the same two links each way; the
    // answer reports the counts the query itself added on the way in.
    let before = snapshot(&s.fab);
    let pc = get_pc(&mut s, S2_LID, 3);
    let after = snapshot(&s.fab);
    let want: BTreeMap<_, _> = [
        ((h[0], 1), both),
        ((s1, 1), both),
        ((s1, 3), both),
        ((s2, 3), both),
    ]
    .into();
    assert_eq!(diff(&before, &after), want);
    let at_query = before[&(s2, 3)];
    assert_eq!(u64::from(pc.rcv_pkts), at_query[1] + 1);
    assert_eq!(u64::from(pc.xmit_pkts), at_query[0]);
    assert_eq!(u64::from(pc.rcv_data), (at_query[1] + 1) * PACKET_WORDS);
    // The 32-bit counters agree with the extended ones until one is cleared.
    let now = s.fab.port_counters(s2, 3).unwrap();
    let ext = s.fab.port_counters_extended(s2, 3).unwrap();
    assert_eq!(
        (u64::from(now.xmit_pkts), u64::from(now.rcv_data)),
        (ext.xmit_pkts, ext.rcv_data)
    );
    // Nothing multicast: every packet is unicast.
    assert_eq!(ext.unicast_rcv_pkts, ext.rcv_pkts);
    assert_eq!(ext.multicast_rcv_pkts, 0);
}

#[test]
fn counters_saturate_and_the_extended_ones_keep_counting() {
    let mut s = up();
    let (s1, h2) = (s.s1, s.h[1]);
    // 16-bit, 8-bit and 4-bit counters stop at all ones.
    for (c, n) in [
        (Counter::SymbolError, 0xFFF0u64),
        (Counter::SymbolError, 0x20),
        (Counter::LinkDowned, 300),
        (Counter::LocalLinkIntegrityErrors, 16),
        (Counter::RcvErrors, u64::MAX),
    ] {
        s.fab.inject_port_errors(s1, 2, c, n).unwrap();
    }
    let pc = get_pc(&mut s, S1_LID, 2);
    assert_eq!(pc.symbol_error, 0xFFFF);
    assert_eq!(pc.link_downed, 0xFF);
    assert_eq!(pc.local_link_integrity_errors, 0xF);
    assert_eq!(pc.rcv_errors, 0xFFFF);
    let sat: Vec<Counter> = pc.saturated().collect();
    assert_eq!(
        sat,
        [
            Counter::SymbolError,
            Counter::LinkDowned,
            Counter::RcvErrors,
            Counter::LocalLinkIntegrityErrors
        ]
    );
    // PortXmitData close to 2^32 - 1: ten packets later the 32-bit counter is stuck at
    // all ones while PortCountersExtended.PortXmitData counts on.
    let before = s.fab.port_counters_extended(h2, 1).unwrap();
    let start = u64::from(u32::MAX) - 100 - before.xmit_data;
    s.fab
        .inject_port_errors(h2, 1, Counter::XmitData, start)
        .unwrap();
    assert_eq!(
        s.fab.port_counters(h2, 1).unwrap().xmit_data,
        u32::MAX - 100
    );
    for _ in 0..10 {
        assert!(s.fab.deliver(s.hg(2), Lid(4), PKey(0xFFFF)).is_delivered());
    }
    let pc = get_pc(&mut s, 2, 1);
    assert_eq!(pc.xmit_data, u32::MAX);
    assert!(pc.is_saturated(Counter::XmitData));
    assert_eq!(u64::from(pc.xmit_pkts), before.xmit_pkts + 10);
    let ext = get_ext(&mut s, 2, 1);
    assert_eq!(
        ext.xmit_data,
        u64::from(u32::MAX) - 100 + 10 * PACKET_WORDS + PACKET_WORDS,
        "ten packets and the PortCounters answer"
    );
    assert!(!ext.is_saturated(mad::perf::ExtCounter::XmitData));
    // Clearing PortXmitData restarts it below saturation.
    let q = PortCounters {
        port_select: 1,
        counter_select: SEL_XMIT_DATA,
        ..PortCounters::default()
    };
    let a = pma(&mut s, 2, &PerfMad::set(tid(), 0, &q))
        .attr::<PortCounters>()
        .unwrap();
    assert_eq!(a.xmit_data, 0);
}

#[test]
fn a_link_going_down_counts_link_downed_at_both_ends() {
    let mut s = up();
    let (s1, s2, h2) = (s.s1, s.s2, s.h[1]);
    let now = s.fab.now();
    s.fab
        .inject(now, Fault::LinkDown { node: s1, port: 2 })
        .unwrap();
    assert_eq!(s.fab.port_counters(s1, 2).unwrap().link_downed, 1);
    assert_eq!(s.fab.port_counters(h2, 1).unwrap().link_downed, 1);
    // Down again while down: nothing more.
    s.fab
        .inject(now, Fault::LinkDown { node: h2, port: 1 })
        .unwrap();
    assert_eq!(s.fab.port_counters(s1, 2).unwrap().link_downed, 1);
    // Plugged back, it trains to INIT; the next unplug counts again.
    s.fab
        .inject(now, Fault::LinkUp { node: s1, port: 2 })
        .unwrap();
    settle(&mut s.fab);
    let now = s.fab.now();
    s.fab
        .inject(now, Fault::LinkDown { node: h2, port: 1 })
        .unwrap();
    assert_eq!(s.fab.port_counters(s1, 2).unwrap().link_downed, 2);
    assert_eq!(s.fab.port_counters(h2, 1).unwrap().link_downed, 2);
    // A switch reboot downs its links: its neighbours count, its own counters restart
    // from zero (power cycle).
    s.fab
        .inject_port_errors(s2, 3, Counter::SymbolError, 3)
        .unwrap();
    s.fab.inject(now, Fault::RebootSwitch { node: s2 }).unwrap();
    assert_eq!(s.fab.port_counters(s1, 3).unwrap().link_downed, 1);
    assert_eq!(s.fab.port_counters(s.h[2], 1).unwrap().link_downed, 1);
    assert_eq!(s.fab.port_counters(s2, 3).unwrap(), PortCounters::default());
    assert_eq!(s.fab.port_counters_extended(s2, 3).unwrap().rcv_pkts, 0);
    // A port the SM sets Down is not a link error.
    let mut t = small(SimConfig::default());
    t.bring_up();
    assert_eq!(set_port_state(&mut t.fab, t.sm, S1_PATH, 2, 1), 0);
    assert_eq!(t.fab.port_counters(t.s1, 2).unwrap().link_downed, 0);
    assert_eq!(t.fab.port_counters(t.h[1], 1).unwrap().link_downed, 0);
}

#[test]
fn drops_count_where_iba_says() {
    let mut s = up();
    let (s1, s2) = (s.s1, s.s2);
    // No LFT entry for LID 7 at S1: a relay error at the port it came in by.
    assert_eq!(
        s.fab.deliver(s.hg(2), Lid(7), PKey(0xFFFF)),
        Delivery::Dropped(DropReason::NoRoute { node: s1 })
    );
    assert_eq!(
        s.fab.port_counters(s1, 2).unwrap().rcv_switch_relay_errors,
        1
    );
    // H4's link down: S2 discards what it should send there.
    let now = s.fab.now();
    s.fab
        .inject(now, Fault::LinkDown { node: s2, port: 2 })
        .unwrap();
    let before = s.fab.port_counters(s2, 2).unwrap();
    assert!(!s.fab.deliver(s.hg(2), Lid(4), PKey(0xFFFF)).is_delivered());
    let pc = s.fab.port_counters(s2, 2).unwrap();
    assert_eq!((pc.xmit_discards, pc.xmit_pkts), (1, before.xmit_pkts));
    assert_eq!(
        s.fab.port_counters(s2, 3).unwrap().rcv_pkts,
        s.fab.port_counters(s1, 3).unwrap().xmit_pkts,
        "the link before the drop carried it"
    );
    // A key H3 does not hold: received, P_KeyViolations only.
    let before = s.fab.port_counters(s.h[2], 1).unwrap();
    let mut keys = mad::PKeyTable::default();
    keys.keys[0] = PKey(0x8001);
    keys.keys[1] = PKey(0xFFFF);
    dr_set(&mut s.fab, s.sm, H_PATHS[1], 0, &keys).unwrap();
    assert!(!s.fab.deliver(s.hg(2), Lid(3), PKey(0x8001)).is_delivered());
    let after = s.fab.port_counters(s.h[2], 1).unwrap();
    assert_eq!(after.rcv_pkts, before.rcv_pkts + 1);
    assert_eq!(after.rcv_errors, 0);
}

#[test]
fn the_error_rate_drops_arrivals_and_counts_rcv_errors() {
    let mut s = up();
    let s2 = s.s2;
    s.fab.set_port_error_rate(s2, Some(3), 1.0).unwrap();
    let (in_before, out_before) = (
        s.fab.port_counters(s2, 3).unwrap(),
        s.fab.port_counters(s2, 1).unwrap(),
    );
    assert_eq!(
        s.fab.deliver(s.hg(2), Lid(3), PKey(0xFFFF)),
        Delivery::Dropped(DropReason::RcvError { node: s2, port: 3 })
    );
    let pc = s.fab.port_counters(s2, 3).unwrap();
    assert_eq!(
        (pc.rcv_errors, pc.rcv_pkts),
        (1, in_before.rcv_pkts + 1),
        "received in error: PortRcvPkts counts it too"
    );
    assert_eq!(
        s.fab.port_counters(s2, 1).unwrap(),
        out_before,
        "not forwarded"
    );
    // SMPs too: no answer from S2.
    assert!(dr_get::<NodeInfo>(&mut s.fab, s.sm, S2_PATH, 0).is_none());
    assert_eq!(s.fab.accounting().counters.dropped_rcv_error, 1);
    assert_eq!(s.fab.port_counters(s2, 3).unwrap().rcv_errors, 2);
    // Half the packets, the same ones for the same seed.
    let run = |seed: u64| {
        let mut s = small(SimConfig {
            seed,
            ..SimConfig::default()
        });
        s.bring_up();
        s.fab.set_port_error_rate(s.s2, None, 0.5).unwrap();
        let v: Vec<bool> = (0..64)
            .map(|_| s.fab.deliver(s.hg(2), Lid(3), PKey(0xFFFF)).is_delivered())
            .collect();
        let errs = s.fab.port_counters(s.s2, 3).unwrap().rcv_errors;
        (v, errs)
    };
    let (a, errs) = run(9);
    assert_eq!(run(9), (a.clone(), errs));
    let ok = a.iter().filter(|d| **d).count();
    assert!((16..=48).contains(&ok), "{ok} of 64 delivered");
    assert_eq!(usize::from(errs), 64 - ok);
    // Rate 0 turns it off.
    s.fab.set_port_error_rate(s2, Some(3), 0.0).unwrap();
    assert!(s.fab.deliver(s.hg(2), Lid(3), PKey(0xFFFF)).is_delivered());
    assert!(s.fab.set_port_error_rate(s2, Some(3), 1.5).is_err());
}

#[test]
fn control_requests_inject_and_read_counters() {
    let mut s = up();
    let now = s.fab.now();
    let v = control::handle(
        &mut s.fab,
        now,
        r#"{"op":"port_errors","node":"S1","port":2,"counter":"SymbolErrorCounter","n":5}"#,
    );
    assert_eq!(v["ok"], true, "{v}");
    let v = control::handle(
        &mut s.fab,
        now,
        r#"{"op":"port_errors","node":"S1","port":2,"counter":"portrcverrors"}"#,
    );
    assert_eq!(v["ok"], true, "{v}");
    let v = control::handle(
        &mut s.fab,
        now,
        r#"{"op":"port_counters","node":"S1","port":2}"#,
    );
    assert_eq!(v["counters"]["SymbolErrorCounter"], 5, "{v}");
    assert_eq!(v["counters"]["PortRcvErrors"], 1, "{v}");
    assert!(v["extended"]["PortXmitData"].is_u64());
    let bad = control::handle(
        &mut s.fab,
        now,
        r#"{"op":"port_errors","node":"S1","port":2,"counter":"Nope"}"#,
    );
    assert_eq!(bad["ok"], false);
    assert!(
        bad["error"]
            .as_str()
            .unwrap()
            .contains("SymbolErrorCounter")
    );
    let qp1 = control::handle(
        &mut s.fab,
        now,
        r#"{"op":"port_errors","node":"S1","port":2,"counter":"QP1Dropped"}"#,
    );
    assert!(qp1["error"].as_str().unwrap().contains("SIM-E017"), "{qp1}");
    // An error rate on every port of H3, then scheduled off.
    let v = control::handle(
        &mut s.fab,
        now,
        r#"{"op":"error_rate","node":"H3","prob":1.0}"#,
    );
    assert_eq!(v["ok"], true, "{v}");
    assert!(!s.fab.deliver(s.hg(2), Lid(3), PKey(0xFFFF)).is_delivered());
    let off = format!(
        r#"{{"op":"at","time":{},"fault":{{"op":"error_rate","node":"H3","port":1,"prob":0}}}}"#,
        now + 1000
    );
    assert_eq!(control::handle(&mut s.fab, now, &off)["ok"], true);
    s.fab.run_until(now + 2000);
    assert!(s.fab.deliver(s.hg(2), Lid(3), PKey(0xFFFF)).is_delivered());
    let bad = control::handle(
        &mut s.fab,
        now,
        r#"{"op":"error_rate","node":"H3","port":1,"prob":2}"#,
    );
    assert_eq!(bad["ok"], false);
}
