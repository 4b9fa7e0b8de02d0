//! End to end on the simulated fabric: SUBNET UP, programming, delivery and isolation.

mod common;
use common::*;
use fabric::PKey;
use sm_core::{Event, SweeperConfig};

fn all_full(_: fabric::Guid, _: fabric::Guid) -> Option<PKey> {
    Some(PKey(0xFFFF))
}

#[test]
fn ft2_radix8_comes_up_and_every_pair_delivers() {
    let t = topo("ft2:8");
    let mut h = Harness::new(&t, SweeperConfig::default(), 1);
    h.subnet_up();
    h.check_programmed(&t);
    let (ok, _) = h.check_delivery(&t, 1, all_full, PKey(0xFFFF));
    assert!(ok > 0);
    // Milestones in order.
    let kinds: Vec<&str> = h
        .events
        .iter()
        .map(|e| match e {
            Event::HeavySweepStarted { .. } => "start",
            Event::DiscoveryDone { .. } => "disc",
            Event::LidsAssigned { .. } => "lids",
            Event::RoutingDone { .. } => "routing",
            Event::ProgrammingDone { .. } => "prog",
            Event::SubnetUp { .. } => "up",
            Event::HeavySweepComplete { .. } => "done",
            _ => "other",
        })
        .collect();
    assert_eq!(
        &kinds[..7],
        ["start", "disc", "lids", "routing", "prog", "up", "done"]
    );
    match &h.events[1] {
        Event::DiscoveryDone {
            nodes, switches, ..
        } => {
            assert_eq!(*nodes, t.len());
            assert_eq!(*switches, t.switches().count());
        }
        e => panic!("{e:?}"),
    }
    assert!(h.log.iter().any(|l| l.starts_with("SUBNET UP")));
    eprintln!("{}", h.log.join("\n"));
}
