//! Rogue writes behind the master's back: a light sweep's LFT audit reads a few LFT blocks
//! back every interval; a block a rogue SM changed raises an alarm (event and milestone
//! naming the switch and its LID) within one sweep interval, and the heavy sweep that
//! follows rewrites it. fabric-sim, virtual time, deterministic.

mod common;
mod foreign_common;

use common::{ca_ports, topo};
use fabric::{Lid, NodeId};
use fabric_sim::Fault;
use foreign_common::*;
use mad::{AttributeId, LinearForwardingTable, Method, SmInfo, SmState, Smp};
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
    let at = f.fab.attach(gl).unwrap();
    f.stubs.push(Stub {
        at,
        info: SmInfo {
            guid: gl,
            sm_key: 1,
            act_count: 0,
            priority: 0,
            sm_state: SmState::Master.to_wire(),
        },
        sets: Vec::new(),
    });
    let a = f.add(
        ga,
        SweeperConfig {
            gate_programming: true,
            peer_sms: vec![ga],
            ..cfg(10)
        },
    );
    // Known limit (IBA 14.4): DISCOVERING, A finds a MASTER and stands by whatever the
    // priorities, telling it with a trap 144 that A outranks it; a liar that never hands
    // over keeps A standing by. The alarm is checked on a master: a second fabric where
    // the liar appears after A is up.
    f.wait_for(a, "STANDBY", stands_by);
    f.advance(5 * INTERVAL);
    assert_eq!(f.sms[a].sw.sm_state(), SmState::Standby);
    let mut f = Fabric::new(&t);
    let a = f.add(
        ga,
        SweeperConfig {
            gate_programming: true,
            peer_sms: vec![ga],
            ..cfg(10)
        },
    );
    f.wait_for(a, "SUBNET UP", subnet_up);
    let lid = f.fab.port_info(cas[0].0, cas[0].1).unwrap().lid;
    let at = f.fab.attach(gl).unwrap();
    f.stubs.push(Stub {
        at,
        info: SmInfo {
            guid: gl,
            sm_key: 1,
            act_count: 0,
            priority: 0,
            sm_state: SmState::Master.to_wire(),
        },
        sets: Vec::new(),
    });
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
