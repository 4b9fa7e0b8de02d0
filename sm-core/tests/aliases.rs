//! Alias GUIDs (what GUIDInfoRecord Sets make) programmed into the ports' GUIDInfo on the
//! simulator: written once, read back by every heavy sweep, rewritten only when they
//! differ; a new sweeper handed the same aliases (a takeover) writes nothing.

mod common;

use common::*;
use fabric::{Guid, Lid};
use mad::{AttributeId, GuidInfo, Method, Smp, SmpAttribute};
use sm_core::SweeperConfig;
use std::collections::BTreeMap;

const GUID_INFO: u16 = 0x0014;

/// GUIDInfo block 0 of the port at `lid`, read over the fabric.
fn read_block(h: &mut Harness, lid: Lid) -> [Guid; 8] {
    let smp = Smp::lid_routed(Method::GET, 0x7700_0001, AttributeId::GUID_INFO, 0);
    h.fab.send_lid(h.now, h.sm, lid, &smp).unwrap();
    let end = h.now + 1_000_000_000;
    h.fab.run_until(end);
    while let Some(r) = h.fab.poll_recv_full(h.sm) {
        if r.smp.tid == 0x7700_0001 {
            return GuidInfo::decode(&r.smp.data).guids;
        }
        h.sw.handle_mad(h.now, r.slid, r.smp);
    }
    panic!("no GUIDInfo answer from LID {lid}");
}

#[test]
fn aliases_are_written_once_and_kept_across_a_takeover() {
    let t = topo("ft2:4");
    let cfg = SweeperConfig::default();
    let mut h = Harness::new(&t, cfg.clone(), 3);
    h.subnet_up();
    h.settle(5_000_000_000);
    let (n, p, target) = ca_ports(&t)[2];
    let lid = h.lid_of(n, p);
    let mut table = BTreeMap::new();
    table.insert(
        target,
        BTreeMap::from([(1u16, Guid(0x0014_0500_0000_0001)), (3, Guid(0xA3))]),
    );
    h.fab.take_set_log();
    h.sw.set_alias_guids(h.now, &table);
    assert!(h.heavy_done());
    h.settle(5_000_000_000);
    let log = h.fab.take_set_log();
    assert_eq!(count_sets_of(&log, GUID_INFO), 1, "one block written");
    let b = read_block(&mut h, lid);
    assert_eq!(b[1], Guid(0x0014_0500_0000_0001));
    assert_eq!(b[3], Guid(0xA3));

    // Another heavy sweep: block read back, nothing written.
    h.sw.request_sweep(h.now, true);
    assert!(h.heavy_done());
    h.settle(5_000_000_000);
    assert_eq!(count_sets_of(&h.fab.take_set_log(), GUID_INFO), 0);

    // A new sweeper on the same fabric (a takeover, seeded with the LIDs and tables) handed
    // the same aliases writes no GUIDInfo block.
    let mut cfg2 = cfg;
    cfg2.guid2lid = h.sw.guid2lid().clone();
    cfg2.known_lfts = h.sw.lfts().cloned().map(std::sync::Arc::new);
    cfg2.known_pkeys = Some(std::sync::Arc::new(h.sw.pkey_tables()));
    h.fab.detach(h.sm).unwrap();
    let fab = std::mem::replace(
        &mut h.fab,
        fabric_sim::SimFabric::new(&t, fabric_sim::SimConfig::default()).unwrap(),
    );
    let mut h2 = Harness::with_fabric(fab, &t, cfg2);
    h2.now = h.now;
    h2.sw.set_alias_guids(h2.now, &table);
    h2.subnet_up();
    h2.settle(5_000_000_000);
    assert_eq!(count_sets_of(&h2.fab.take_set_log(), GUID_INFO), 0);

    // The aliases go: the block is cleared, once.
    h2.sw.set_alias_guids(h2.now, &BTreeMap::new());
    assert!(h2.heavy_done());
    h2.settle(5_000_000_000);
    assert_eq!(count_sets_of(&h2.fab.take_set_log(), GUID_INFO), 1);
    let b = read_block(&mut h2, lid);
    assert!(b[1..].iter().all(|g| g.0 == 0), "{b:?}");
}
