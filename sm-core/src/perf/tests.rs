//! The manager against scripted answers: window, rate limit, resends, ClassPortInfo before
//! the extended reads, clears, alarms, health and live queries. (The manager against the
//! simulated fabric's PMA is in `sm-core/tests/perf_sim.rs`.)

use super::*;
use mad::perf::{ClassPortInfo, Counter, PerfAttribute};

const MS: VTime = 1_000_000;

fn target(g: u64, port: u8, lid: u16, peer: Option<(u64, u8)>) -> PerfTarget {
    PerfTarget {
        node_guid: Guid(g),
        desc: format!("n{g}"),
        is_switch: false,
        lid: Lid(lid),
        port,
        state: 4,
        phys: 5,
        peer: peer.map(|(g, p)| Peer {
            node_guid: Guid(g),
            port: p,
            desc: format!("n{g}"),
        }),
    }
}

/// Two CAs linked to each other (ports 1).
fn pair() -> Vec<PerfTarget> {
    vec![target(1, 1, 1, Some((2, 1))), target(2, 1, 2, Some((1, 1)))]
}

fn answer<T: PerfAttribute>(tx: &PerfTransmit, attr: &T) -> [u8; 256] {
    let req = PerfMad::decode(&tx.mad).unwrap();
    let mut r = req.response();
    r.set_attr(attr);
    r.encode()
}

fn cpi(mask: u16) -> ClassPortInfo {
    let mut c = ClassPortInfo::default();
    c.info.capability_mask = mask;
    c
}

fn drain(m: &mut PerfManager, now: VTime) -> Vec<PerfTransmit> {
    let mut out = Vec::new();
    while let Some(t) = m.poll_transmit(now) {
        out.push(t);
    }
    out
}

fn events(m: &mut PerfManager) -> Vec<PerfEvent> {
    std::iter::from_fn(|| m.poll_event()).collect()
}

fn attr_of(t: &PerfTransmit) -> mad::AttributeId {
    PerfMad::decode(&t.mad).unwrap().header.attr_id
}

#[test]
fn sweep_reads_cpi_then_counters_and_alarms_once() {
    let mut m = PerfManager::new(PerfConfig {
        rate_per_sec: 1_000_000_000,
        ..PerfConfig::default()
    });
    m.set_fabric(0, pair(), true);
    assert_eq!(m.poll_timeout(), Some(0));
    m.handle_timeout(0);
    let tx = drain(&mut m, 0);
    assert_eq!(tx.len(), 2);
    assert!(tx.iter().all(|t| attr_of(t) == ClassPortInfo::ID));
    for t in &tx {
        assert!(m.handle_gmp(1, &answer(t, &cpi(0))));
    }
    let tx = drain(&mut m, 1);
    assert_eq!(tx.len(), 2);
    for t in &tx {
        let mut pc = PortCounters {
            port_select: 1,
            ..PortCounters::default()
        };
        if t.dlid == Lid(2) {
            pc.symbol_error = 11;
        }
        assert!(m.handle_gmp(2, &answer(t, &pc)));
    }
    let ev = events(&mut m);
    let alarms: Vec<_> = ev
        .iter()
        .filter_map(|e| match e {
            PerfEvent::Alarm(a) => Some(a),
            _ => None,
        })
        .collect();
    assert_eq!(alarms.len(), 1, "{ev:?}");
    assert_eq!(
        (
            alarms[0].node_guid,
            alarms[0].counter,
            alarms[0].value,
            alarms[0].threshold
        ),
        (Guid(2), Counter::SymbolError, 11, 10)
    );
    assert_eq!(alarms[0].peer.as_ref().map(|p| p.node_guid), Some(Guid(1)));
    let done = ev.iter().find_map(|e| match e {
        PerfEvent::SweepDone(s) => Some(*s),
        _ => None,
    });
    assert_eq!(done.map(|s| (s.ports, s.failed, s.mads)), Some((2, 0, 4)));
    assert_eq!(m.errors(&Thresholds::default()).len(), 1);
    // The next sweep one interval after the first started; the same value: no new alarm,
    // and the link is ok again (nothing grows).
    assert_eq!(m.poll_timeout(), Some(180 * SEC));
    m.handle_timeout(180 * SEC);
    for t in drain(&mut m, 180 * SEC) {
        assert_eq!(attr_of(&t), PortCounters::ID, "ClassPortInfo is read once");
        let mut pc = PortCounters {
            port_select: 1,
            ..PortCounters::default()
        };
        if t.dlid == Lid(2) {
            pc.symbol_error = 11;
        }
        m.handle_gmp(180 * SEC + 1, &answer(&t, &pc));
    }
    let ev = events(&mut m);
    assert!(
        !ev.iter().any(|e| matches!(e, PerfEvent::Alarm(_))),
        "{ev:?}"
    );
    assert_eq!(m.links()[0].health, Health::Ok);
}

#[test]
fn window_and_rate_limit_hold() {
    let ports: Vec<_> = (1..=50u64).map(|g| target(g, 1, g as u16, None)).collect();
    let mut m = PerfManager::new(PerfConfig {
        max_outstanding: 8,
        rate_per_sec: 100,
        ..PerfConfig::default()
    });
    m.set_fabric(0, ports, true);
    m.handle_timeout(0);
    // One per 10 ms at most.
    assert_eq!(drain(&mut m, 0).len(), 1);
    assert_eq!(m.poll_timeout(), Some(10 * MS));
    let mut now = 0;
    let mut sent = 1;
    while sent < 8 {
        now += 10 * MS;
        assert_eq!(drain(&mut m, now).len(), 1);
        sent += 1;
    }
    now += 100 * MS;
    assert_eq!(drain(&mut m, now).len(), 0, "window of 8 full");
}

#[test]
fn resends_then_gives_up_and_extended_counters_are_read() {
    let mut m = PerfManager::new(PerfConfig {
        rate_per_sec: 1_000_000_000,
        ..PerfConfig::default()
    });
    m.set_fabric(0, vec![target(1, 1, 1, None), target(2, 1, 2, None)], true);
    m.handle_timeout(0);
    let tx = drain(&mut m, 0);
    // Node 1 answers with the extended counters; node 2 never answers.
    let t1 = tx.iter().find(|t| t.dlid == Lid(1)).unwrap();
    m.handle_gmp(1, &answer(t1, &cpi(ClassPortInfo::CAP_EXTENDED_WIDTH)));
    let pc = drain(&mut m, 1);
    assert_eq!(pc.len(), 1);
    m.handle_gmp(
        2,
        &answer(
            &pc[0],
            &PortCounters {
                port_select: 1,
                ..Default::default()
            },
        ),
    );
    let pce = drain(&mut m, 2);
    assert_eq!(attr_of(&pce[0]), PortCountersExtended::ID);
    m.handle_gmp(
        3,
        &answer(
            &pce[0],
            &PortCountersExtended {
                port_select: 1,
                xmit_data: 1 << 40,
                ..Default::default()
            },
        ),
    );
    assert_eq!(
        m.port(Guid(1), 1)
            .unwrap()
            .last
            .unwrap()
            .value(Counter::XmitData),
        1 << 40
    );
    // Node 2: its ClassPortInfo is resent twice, then its port is read without extended
    // counters and also not answered: 3 sends each, then failed.
    let mut now = 0;
    let mut sends = 0;
    while m.last_sweep().is_none() {
        now = m.poll_timeout().unwrap();
        m.handle_timeout(now);
        sends += drain(&mut m, now).len();
    }
    assert_eq!(sends, 2 + 3);
    let (s, _) = m.last_sweep().unwrap();
    assert_eq!((s.ports, s.failed), (1, 1));
    assert!(now >= 5 * PerfConfig::default().timeout);
}

#[test]
fn near_max_counters_are_cleared_and_resets_count_from_zero() {
    let mut m = PerfManager::new(PerfConfig {
        rate_per_sec: 1_000_000_000,
        ..PerfConfig::default()
    });
    m.set_fabric(0, vec![target(1, 1, 1, None)], true);
    m.handle_timeout(0);
    let c = drain(&mut m, 0);
    m.handle_gmp(1, &answer(&c[0], &cpi(0)));
    let p = drain(&mut m, 1);
    let near = PortCounters {
        port_select: 1,
        xmit_data: u32::MAX - 5,
        ..Default::default()
    };
    m.handle_gmp(2, &answer(&p[0], &near));
    let clear = drain(&mut m, 2);
    let req = PerfMad::decode(&clear[0].mad).unwrap();
    assert_eq!(req.header.method, mad::Method::SET);
    let sel = req.attr::<PortCounters>().unwrap();
    assert_eq!((sel.port_select, sel.counter_select), (1, 0xFFFF));
    let after = PortCounters {
        port_select: 1,
        ..Default::default()
    };
    m.handle_gmp(3, &answer(&clear[0], &after));
    let r = m.port(Guid(1), 1).unwrap();
    assert_eq!((r.clears, r.last.unwrap().pc.xmit_data), (1, 0));
    assert!(m.last_sweep().is_some());
}

#[test]
fn links_go_down_and_live_queries_answer() {
    let mut m = PerfManager::new(PerfConfig {
        enabled: false,
        ..PerfConfig::default()
    });
    m.set_fabric(0, pair(), true);
    assert_eq!(m.poll_timeout(), None, "disabled: no sweep");
    assert_eq!(m.links().len(), 1);
    assert!(events(&mut m).is_empty(), "an ok link is no news");
    let mut down = pair();
    down[1].state = 2;
    m.set_fabric(1, down, true);
    let ev = events(&mut m);
    assert!(
        matches!(&ev[..], [PerfEvent::Health(l)] if l.health == Health::Down && l.why.contains("Init")),
        "{ev:?}"
    );
    m.set_fabric(2, vec![target(1, 1, 1, None)], true);
    assert_eq!(m.links()[0].health, Health::Down);
    assert!(m.links()[0].why.contains("gone"));

    assert!(m.query(Lid(0xC000), 1, false).is_err());
    let id = m.query(Lid(1), 1, false).unwrap();
    let t = drain(&mut m, 3);
    m.handle_gmp(
        4,
        &answer(
            &t[0],
            &PortCounters {
                port_select: 1,
                rcv_errors: 7,
                ..Default::default()
            },
        ),
    );
    let ev = events(&mut m);
    let PerfEvent::QueryDone { id: got, result } = &ev[0] else {
        panic!("{ev:?}")
    };
    assert_eq!(*got, id);
    assert_eq!(result.as_ref().unwrap().pc.unwrap().rcv_errors, 7);
    // Not ours: another class, or a request.
    assert!(!m.handle_gmp(5, &[0u8; 256]));
}
