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
use mad::{AttributeId, LinearForwardingTable, Method, Smp};
use sm_core::Event;
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
