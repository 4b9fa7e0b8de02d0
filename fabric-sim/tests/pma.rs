//! The Performance Management Agent of every node, queried as a performance manager does:
//! ClassPortInfo, PortCounters and PortCountersExtended Get and Set decoded with
//! `mad::perf`, per port and AllPortSelect on a switch, and the IBA statuses of bad
//! PortSelects, unknown attributes, methods and versions.

mod common;

use common::perf::*;
use common::*;
use fabric::{Lid, PKey};
use fabric_sim::{PACKET_WORDS, SimFabric};
use mad::perf::{ALL_PORTS, ClassPortInfo, Counter, PerfMad, PortCounters, PortCountersExtended};
use mad::{AttributeId, MadStatus, Method};

/// CounterSelect bits of PortCounters (IBA 16.1.3.5).
const SEL_XMIT_PKTS: u16 = 1 << 14;
const SEL_RCV_PKTS: u16 = 1 << 15;

#[test]
fn class_port_info_says_what_is_modelled() {
    let mut s = up();
    for (dlid, cap) in [(S1_LID, 0x1300u16), (3, 0x1200)] {
        let r = pma(
            &mut s,
            dlid,
            &PerfMad::request(Method::GET, tid(), AttributeId::CLASS_PORT_INFO, 0),
        );
        assert_eq!(r.mad_status(), MadStatus::OK);
        let cpi = r.attr::<ClassPortInfo>().unwrap();
        assert_eq!(cpi.capability_mask(), cap);
        assert_eq!((cpi.info.base_version, cpi.info.class_version), (1, 1));
        assert_eq!(cpi.info.resp_time_value, 0x12);
        assert!(cpi.extended_width() && cpi.port_xmit_wait() && !cpi.qp1_dropped());
        assert_eq!(cpi.all_port_select(), dlid == S1_LID);
    }
    assert_eq!(s.fab.accounting().counters.pma_requests, 2);
    assert_eq!(s.fab.accounting().counters.pma_responses, 2);
}

#[test]
fn set_clears_what_counter_select_names() {
    let mut s = up();
    let s1 = s.s1;
    for _ in 0..5 {
        assert!(s.fab.deliver(s.hg(2), Lid(5), PKey(0xFFFF)).is_delivered());
    }
    s.fab
        .inject_port_errors(s1, 2, Counter::SymbolError, 7)
        .unwrap();
    // S1 port 2 (towards H2): the SM's queries to S1 do not cross it.
    let pc = get_pc(&mut s, S1_LID, 2);
    let rcv = pc.rcv_pkts;
    assert!(rcv >= 5);
    assert_eq!(pc.symbol_error, 7);
    // Set clears the packet counters only; the answer holds the values after clearing
    // and echoes the selects.
    let q = PortCounters {
        port_select: 2,
        counter_select: SEL_XMIT_PKTS | SEL_RCV_PKTS,
        ..PortCounters::default()
    };
    let r = pma(&mut s, S1_LID, &PerfMad::set(tid(), 0, &q));
    assert_eq!(r.mad_status(), MadStatus::OK);
    let a = r.attr::<PortCounters>().unwrap();
    assert_eq!((a.xmit_pkts, a.rcv_pkts), (0, 0));
    assert_eq!(a.rcv_data, rcv * PACKET_WORDS as u32);
    assert_eq!(a.symbol_error, 7);
    assert_eq!((a.port_select, a.counter_select), (2, q.counter_select));
    // PortCountersExtended keeps counting: its own Set clears it.
    let ext = get_ext(&mut s, S1_LID, 2);
    assert_eq!(ext.rcv_pkts, u64::from(rcv));
    let q = PortCountersExtended {
        port_select: 2,
        counter_select: 0x00FF,
        ..PortCountersExtended::default()
    };
    let r = pma(&mut s, S1_LID, &PerfMad::set(tid(), 0, &q));
    assert_eq!(r.mad_status(), MadStatus::OK);
    assert_eq!(
        r.attr::<PortCountersExtended>().unwrap(),
        PortCountersExtended {
            port_select: 2,
            counter_select: 0x00FF,
            ..PortCountersExtended::default()
        }
    );
    // New traffic counts from zero in both.
    assert!(s.fab.deliver(s.hg(5), Lid(2), PKey(0xFFFF)).is_delivered());
    let pc = s.fab.port_counters(s1, 2).unwrap();
    assert_eq!((pc.xmit_pkts, pc.rcv_pkts), (1, 0));
    assert_eq!(
        pc.rcv_data,
        rcv * PACKET_WORDS as u32,
        "RcvData not selected"
    );
    assert_eq!(s.fab.port_counters_extended(s1, 2).unwrap().xmit_pkts, 1);
    // AllPortSelect: a Set clears every port; the answer is the (zero) sum.
    let q = PortCounters {
        port_select: ALL_PORTS,
        counter_select: 0xFFFF,
        counter_select2: 1,
        ..PortCounters::default()
    };
    let r = pma(&mut s, S1_LID, &PerfMad::set(tid(), 0, &q));
    let a = r.attr::<PortCounters>().unwrap();
    assert_eq!(
        a,
        PortCounters {
            port_select: ALL_PORTS,
            counter_select: 0xFFFF,
            counter_select2: 1,
            ..PortCounters::default()
        }
    );
    for p in 1..=8 {
        let pc = s.fab.port_counters(s1, p).unwrap();
        // Only the answer to the Set has crossed S1 since (out of port 1).
        let expect_x = u32::from(p == 1);
        assert_eq!(
            (pc.xmit_pkts, pc.rcv_pkts, pc.symbol_error),
            (expect_x, 0, 0)
        );
    }
}

#[test]
fn bad_requests_get_the_iba_status() {
    let mut s = up();
    let pc_get = |port: u8| {
        PerfMad::get(
            tid(),
            0,
            &PortCounters {
                port_select: port,
                ..PortCounters::default()
            },
        )
    };
    let ext_get = |port: u8| {
        PerfMad::get(
            tid(),
            0,
            &PortCountersExtended {
                port_select: port,
                ..PortCountersExtended::default()
            },
        )
    };
    let invalid = MadStatus::INVALID_FIELD;
    // S1 has 8 ports: 9 is no port, 0 is its base port 0; H3's only port is 1 and a CA
    // has no AllPortSelect.
    for (dlid, req) in [
        (S1_LID, pc_get(9)),
        (S1_LID, pc_get(0)),
        (S1_LID, ext_get(200)),
        (3, pc_get(2)),
        (3, pc_get(ALL_PORTS)),
        (3, ext_get(0)),
    ] {
        let r = pma(&mut s, dlid, &req);
        assert_eq!(r.mad_status(), invalid, "{:?}", req.data[1]);
        assert_eq!(
            r.data, req.data,
            "an error answer carries the request's data"
        );
    }
    // An attribute the PMA does not implement (PortSamplesControl 0x0010), Set of
    // ClassPortInfo, a method other than Get/Set, a class version it does not speak.
    let unsup = PerfMad::request(Method::GET, tid(), AttributeId(0x0010), 0);
    assert_eq!(
        pma(&mut s, S1_LID, &unsup).mad_status(),
        MadStatus::METHOD_ATTR_UNSUPPORTED
    );
    let cpi_set = PerfMad::set(tid(), 0, &ClassPortInfo::default());
    assert_eq!(
        pma(&mut s, 3, &cpi_set).mad_status(),
        MadStatus::METHOD_ATTR_UNSUPPORTED
    );
    let mut table = pc_get(1);
    table.header.method = Method::GET_TABLE;
    assert_eq!(
        pma(&mut s, 3, &table).mad_status(),
        MadStatus::METHOD_UNSUPPORTED
    );
    let mut v2 = pc_get(1);
    v2.header.class_version = 2;
    assert_eq!(pma(&mut s, 3, &v2).mad_status(), MadStatus::BAD_VERSION);
}

#[test]
fn a_switch_pma_answers_for_each_port_and_for_all() {
    let mut s = up();
    let s1 = s.s1;
    let read = |f: &SimFabric, p: u8| f.port_counters(s1, p).unwrap();
    let before: Vec<PortCounters> = (0..=8).map(|p| read(&s.fab, p)).collect();
    // Distinct traffic on each of S1's ports.
    for (src, dlid, n) in [(2, 5, 3), (5, 3, 4), (2, 4, 2)] {
        for _ in 0..n {
            assert!(
                s.fab
                    .deliver(s.hg(src), Lid(dlid), PKey(0xFFFF))
                    .is_delivered()
            );
        }
    }
    let d = |p: usize, f: fn(&PortCounters) -> u32, s: &Small| {
        f(&read(&s.fab, p as u8)) - f(&before[p])
    };
    assert_eq!(d(2, |c| c.rcv_pkts, &s), 5);
    assert_eq!(d(4, |c| c.rcv_pkts, &s), 4);
    assert_eq!(d(4, |c| c.xmit_pkts, &s), 3);
    assert_eq!(d(3, |c| c.xmit_pkts, &s), 6);
    s.fab
        .inject_port_errors(s1, 4, Counter::XmitDiscards, 2)
        .unwrap();
    for p in 1..=8u8 {
        // Read the API before the query: the query itself crosses port 1.
        let direct = s.fab.port_counters(s1, p).unwrap();
        let direct_ext = s.fab.port_counters_extended(s1, p).unwrap();
        let got = get_pc(&mut s, S1_LID, p);
        let mut want = direct;
        want.port_select = p;
        if p == 1 {
            want.rcv_pkts += 1;
            want.rcv_data += PACKET_WORDS as u32;
        }
        assert_eq!(got, want, "port {p}");
        let ext = get_ext(&mut s, S1_LID, p);
        assert_eq!(ext.rcv_pkts, direct_ext.rcv_pkts + 2 * u64::from(p == 1));
    }
    // AllPortSelect sums ports 1..=8; the query's own request has arrived (port 1), its
    // answer leaves after the sum.
    let now: Vec<PortCounters> = (1..=8).map(|p| read(&s.fab, p)).collect();
    let all = get_pc(&mut s, S1_LID, ALL_PORTS);
    let total = |f: fn(&PortCounters) -> u32| now.iter().map(f).sum::<u32>();
    assert_eq!(all.xmit_pkts, total(|c| c.xmit_pkts));
    assert_eq!(all.rcv_pkts, total(|c| c.rcv_pkts) + 1);
    assert_eq!(all.xmit_data, total(|c| c.xmit_data));
    assert_eq!(all.xmit_discards, 2);
    assert_eq!(all.port_select, ALL_PORTS);
    let xd: u64 = (1..=8)
        .map(|p| s.fab.port_counters_extended(s1, p).unwrap().xmit_data)
        .sum();
    let ext = get_ext(&mut s, S1_LID, ALL_PORTS);
    assert_eq!(ext.xmit_data, xd);
    assert_eq!(ext.unicast_xmit_pkts, ext.xmit_pkts);
}
