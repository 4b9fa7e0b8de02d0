//! Rogue writes behind the master's back: a light sweep's LFT audit reads a few LFT blocks
//! back every interval; a block a rogue SM changed raises an alarm (event and milestone
//! naming the switch and its LID) within one sweep interval, and the heavy sweep that
//! follows rewrites it. fabric-sim, virtual time, deterministic.

mod common;
mod foreign_common;

use common::{ca_ports, topo};
use fabric::{Lid, NodeId, PKey};
use fabric_sim::Fault;
use foreign_common::*;
use mad::{AttributeId, LinearForwardingTable, Method, PKeyTable, SmState, Smp};
use sm_core::Event;
use sm_core::SweeperConfig;
use sm_core::milestone::MilestoneKind;

#[test]
fn rogue_lft_write_raises_an_alarm_within_one_sweep_and_is_rewritten() {
    let t = topo("ft2:4");
    let (ga, _) = two_ports(&t);
    let mut f = Fabric::new(&t);
    let a = f.add(ga, cfg(0));
    f.wait_for(a, "SUBNET UP", subnet_up);
    f.advance(2 * INTERVAL);
    let switches: Vec<NodeId> = t.switches().map(|(id, _)| id).collect();
    let before: Vec<Vec<u8>> = switches.iter().map(|&s| f.fab.lft(s).unwrap()).collect();
    f.fab.take_set_log();

    // A rogue SM at another CA port writes LFT block 0 of its leaf switch.
    let cas = ca_ports(&t);
    let mut smp = Smp::directed(
        Method::SET,
        0x77,
        AttributeId::LINEAR_FORWARDING_TABLE,
        0,
        &[cas[1].1],
    )
    .unwrap();
    smp.set_attr(&LinearForwardingTable { ports: [0xFF; 64] });
    let at = f.now;
    f.fab
        .inject(
            at,
            Fault::Rogue {
                port_guid: cas[1].2,
                dlid: Lid::PERMISSIVE,
                smp: Box::new(smp),
            },
        )
        .unwrap();
    f.advance(MS);
    let hit: Vec<usize> = (0..switches.len())
        .filter(|&k| f.fab.lft(switches[k]).unwrap() != before[k])
        .collect();
    assert_eq!(hit.len(), 1, "the rogue write changed one switch");
    let k = hit[0];

    let alarm = f.wait_for(a, "LFT drift", |e| matches!(e, Event::LftDrift { .. }));
    assert!(
        alarm - at <= INTERVAL + 100 * MS,
        "alarm {} ms after the rogue write (interval {} ms)",
        (alarm - at) / MS,
        INTERVAL / MS
    );
    let (text, block) = f.sms[a]
        .events
        .iter()
        .find_map(|(_, e)| match e {
            Event::LftDrift { block, lid, .. } => {
                assert_ne!(lid.0, 0, "the alarm names the switch's LID");
                Some((e.to_string(), *block))
            }
            _ => None,
        })
        .unwrap();
    assert_eq!(block, 0);
    let ev = f.sms[a]
        .events
        .iter()
        .find(|(_, e)| matches!(e, Event::LftDrift { .. }))
        .map(|(_, e)| MilestoneKind::from_event(e))
        .unwrap();
    assert!(matches!(ev, Some(MilestoneKind::Rogue { .. })), "{ev:?}");
    let ok = f.run(10 * INTERVAL, |f| {
        f.fab.lft(switches[k]).unwrap() == before[k]
    });
    assert!(ok, "the block was not rewritten; log:\n{}", f.log(a));
    let fixed = f.now;
    let log = f.fab.take_set_log();
    let lft: Vec<_> = Fabric::sets_from(&log, ga)
        .into_iter()
        .filter(|r| r.attr == LFT)
        .collect();
    assert!(
        lft.iter().any(|r| r.node == switches[k] && r.attr_mod == 0),
        "{lft:?}"
    );
    check_routes(&f, &t);
    println!(
        "{text}: alarm {} ms after the write, rewritten after {} ms ({} LFT Sets)",
        (alarm - at) / MS,
        (fixed - at) / MS,
        lft.len()
    );
}

/// A lower-priority SM that answers MASTER (it lies about its state, or does not yield)
/// next to a cluster master: the master carries on and raises a rogue alarm naming its
/// port GUID and LID, at its heavy sweeps and at each light sweep that asks it again.
#[test]
fn lower_sm_claiming_master_raises_a_rogue_alarm() {
    let t = topo("ft2:4");
    let cas = ca_ports(&t);
    let (ga, gl) = (cas[cas.len() - 1].2, cas[0].2);
    let mut f = Fabric::new(&t);
    f.add_stub(gl, 0, SmState::Master);
    let a = f.add(ga, cluster_master(ga));
    // Known limit (IBA 14.4): DISCOVERING, A finds a MASTER and stands by whatever the
    // priorities, telling it with a trap 144 that A outranks it; a liar that never hands
    // over keeps A standing by. The alarm is checked on a master: a second fabric where
    // the liar appears after A is up.
    f.wait_for(a, "STANDBY", stands_by);
    f.advance(5 * INTERVAL);
    assert_eq!(f.sms[a].sw.sm_state(), SmState::Standby);
    let mut f = Fabric::new(&t);
    let a = f.add(ga, cluster_master(ga));
    f.wait_for(a, "SUBNET UP", subnet_up);
    let lid = f.fab.port_info(cas[0].0, cas[0].1).unwrap().lid;
    f.add_stub(gl, 0, SmState::Master);
    let now = f.now;
    f.sms[a].sw.request_sweep(now, true);
    f.wait_for(
        a,
        "rogue master",
        |e| matches!(e, Event::RogueMaster { guid, lid: l, priority: 0 } if *guid == gl && *l == lid),
    );
    f.advance(3 * INTERVAL);
    assert_eq!(f.sms[a].sw.sm_state(), SmState::Master);
    assert!(f.sms[a].sw.foreign_master().is_none());
    let ev = f.sms[a]
        .events
        .iter()
        .find(|(_, e)| matches!(e, Event::RogueMaster { .. }))
        .map(|(_, e)| (e.to_string(), MilestoneKind::from_event(e)))
        .unwrap();
    assert!(matches!(ev.1, Some(MilestoneKind::Rogue { .. })), "{ev:?}");
    println!("{}", ev.0);
}

/// A P_KeyTable block changed behind the master's back (a rogue SM writes a CA port's
/// table): the light sweeps' P_Key audit raises an alarm naming the port GUID and LID
/// within one pass over the programmed blocks, and the heavy sweep that follows writes the
/// table back.
#[test]
fn rogue_pkey_write_raises_an_alarm_within_one_audit_pass_and_is_rewritten() {
    let t = topo("ft2:4");
    let (ga, _) = two_ports(&t);
    let cas = ca_ports(&t);
    let (tn, tp, tg) = cas[1];
    let policy = format!(
        "Default=0x7fff : ALL=full ;\nA=0x0001 : {}=full, {}=full ;\n",
        cas[1].2, cas[2].2
    );
    let mut f = Fabric::new(&t);
    let a = f.add(
        ga,
        SweeperConfig {
            partitions_conf: Some(policy),
            ..cfg(0)
        },
    );
    f.wait_for(a, "SUBNET UP", subnet_up);
    f.advance(2 * INTERVAL);
    let before = f.fab.pkey_table(tn, tp).unwrap();
    assert!(before.iter().any(|k| k.0 & 0x7FFF == 1), "{before:?}");
    f.fab.take_set_log();

    // A rogue SM at that port wipes block 0 of its own table (directed route, 0 hops).
    let mut smp = Smp::directed(
        Method::SET,
        0x78,
        AttributeId::P_KEY_TABLE,
        PKeyTable::modifier(0, 0),
        &[],
    )
    .unwrap();
    smp.set_attr(&PKeyTable {
        keys: [PKey(0); 32],
    });
    let at = f.now;
    f.fab
        .inject(
            at,
            Fault::Rogue {
                port_guid: tg,
                dlid: Lid::PERMISSIVE,
                smp: Box::new(smp),
            },
        )
        .unwrap();
    f.advance(MS);
    assert_ne!(f.fab.pkey_table(tn, tp).unwrap(), before, "the rogue write");

    let alarm = f.wait_for(a, "P_Key drift", |e| matches!(e, Event::PKeyDrift { .. }));
    // The audit reads 8 blocks per interval, walking every programmed block: ft2:4's
    // ports hold about 40, covered in 5 intervals.
    assert!(
        alarm - at <= 6 * INTERVAL,
        "alarm {} ms after the rogue write (interval {} ms)",
        (alarm - at) / MS,
        INTERVAL / MS
    );
    let lid = f.fab.port_info(tn, tp).unwrap().lid;
    let (text, kind) = f.sms[a]
        .events
        .iter()
        .find_map(|(_, e)| match e {
            Event::PKeyDrift {
                port_guid,
                lid: l,
                block,
                ..
            } => {
                assert_eq!((*port_guid, *l, *block), (tg, lid, 0), "{e}");
                Some((e.to_string(), MilestoneKind::from_event(e)))
            }
            _ => None,
        })
        .unwrap();
    assert!(
        matches!(kind, Some(MilestoneKind::Rogue { .. })),
        "{kind:?}"
    );
    let ok = f.run(10 * INTERVAL, |f| {
        f.fab.pkey_table(tn, tp).unwrap() == before
    });
    assert!(ok, "the table was not rewritten; log:\n{}", f.log(a));
    let fixed = f.now;
    let log = f.fab.take_set_log();
    let pkey_sets = Fabric::sets_from(&log, ga)
        .into_iter()
        .filter(|r| r.attr == AttributeId::P_KEY_TABLE.0)
        .count();
    assert!(pkey_sets >= 1);
    println!(
        "{text}: alarm {} ms after the write, rewritten after {} ms ({pkey_sets} P_KeyTable Sets)",
        (alarm - at) / MS,
        (fixed - at) / MS
    );
    // Then a quiet fabric: the audit finds nothing more and nothing is written.
    f.advance(2 * INTERVAL);
    f.fab.take_set_log();
    f.advance(10 * INTERVAL);
    let drifts = count(&f, a, |e| matches!(e, Event::PKeyDrift { .. }));
    assert_eq!(drifts, 1, "{}", f.log(a));
    assert!(Fabric::sets_from(&f.fab.take_set_log(), ga).is_empty());
}

/// An SM at a port that is not the cluster's answering SMInfo (here a STANDBY): the master
/// raises one alarm naming its port GUID and LID, however many sweeps find it again.
#[test]
fn unknown_sm_raises_one_alarm() {
    let t = topo("ft2:4");
    let cas = ca_ports(&t);
    let (ga, gs) = (cas[cas.len() - 1].2, cas[0].2);
    let mut f = Fabric::new(&t);
    let a = f.add(ga, cluster_master(ga));
    f.wait_for(a, "SUBNET UP", subnet_up);
    f.add_stub(gs, 3, SmState::Standby);
    let lid = f.fab.port_info(cas[0].0, cas[0].1).unwrap().lid;
    for _ in 0..3 {
        let now = f.now;
        f.sms[a].sw.request_sweep(now, true);
        f.advance(2 * INTERVAL);
    }
    let unknown: Vec<String> = f.sms[a]
        .events
        .iter()
        .filter(|(_, e)| {
            matches!(e, Event::UnknownSm { guid, lid: l, priority: 3, .. } if *guid == gs && *l == lid)
        })
        .map(|(_, e)| e.to_string())
        .collect();
    assert_eq!(unknown.len(), 1, "{}", f.log(a));
    let kind = f.sms[a]
        .events
        .iter()
        .find(|(_, e)| matches!(e, Event::UnknownSm { .. }))
        .and_then(|(_, e)| MilestoneKind::from_event(e));
    assert!(
        matches!(kind, Some(MilestoneKind::Rogue { .. })),
        "{kind:?}"
    );
    assert_eq!(f.sms[a].sw.sm_state(), SmState::Master);
    println!("{}", unknown[0]);
}

/// A cluster's master configuration (priority 10, gated programming) whose replica port is
/// `ga` alone.
fn cluster_master(ga: fabric::Guid) -> SweeperConfig {
    SweeperConfig {
        gate_programming: true,
        peer_sms: vec![ga],
        ..cfg(10)
    }
}
