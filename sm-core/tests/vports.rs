//! IB virtualization on the simulator (issue 26): ft2:8 with two virtualization-capable
//! HCAs of 4 vports each. Every vport reaches ACTIVE with its own LID, routed as its
//! physical port; delivery between vports only inside a partition; a vport GUID added to or
//! removed from a partition changes the P_Key tables in one sweep; a new master seeded from
//! the replicated tables keeps every vport LID and writes no LFT block.

mod common;

use common::*;
use fabric::{Guid, Lid, PKey, PortState, Topology};
use fabric_sim::{SimConfig, SimFabric, VirtSpec, vport_guid};
use sm_core::SweeperConfig;

const LFT: u16 = 0x0019;
const VPORT_INFO: u16 = 0xFFB1;
const VPORT_PKEYS: u16 = 0xFFB6;

/// ft2:8 with the 5th and 6th CA ports virtualization-capable, 4 vports each (each needs
/// its own LID). Returns the fabric and the vport GUIDs per physical port.
fn fabric(t: &Topology, seed: u64) -> (SimFabric, Vec<Vec<Guid>>) {
    let mut fab = SimFabric::new(
        t,
        SimConfig {
            seed,
            ..SimConfig::default()
        },
    )
    .unwrap();
    let cas = ca_ports(t);
    let mut vports = Vec::new();
    for &(_, _, pf) in &cas[4..6] {
        fab.enable_virtualization(pf, VirtSpec::uniform(pf, 4, true))
            .unwrap();
        vports.push((1..=4).map(|i| vport_guid(pf, i)).collect());
    }
    (fab, vports)
}

/// Tenant A: vports 0 and 1 of the first HCA and vport 0 of the second; tenant B: vports 2
/// and 3 of the first and vport 1 of the second. `extra_a` joins A too.
fn policy(v: &[Vec<Guid>], extra_a: Option<Guid>) -> String {
    let a: Vec<String> = [v[0][0], v[0][1], v[1][0]]
        .iter()
        .chain(extra_a.iter())
        .map(|g| format!("{g}=full"))
        .collect();
    let b: Vec<String> = [v[0][2], v[0][3], v[1][1]]
        .iter()
        .map(|g| format!("{g}=full"))
        .collect();
    format!(
        "Default=0x7fff : ALL=full ;\nTenantA=0x0010 : {} ;\nTenantB=0x0020 : {} ;\n",
        a.join(", "),
        b.join(", ")
    )
}

fn up(seed: u64) -> (Topology, Harness, Vec<Vec<Guid>>) {
    let t = topo("ft2:8");
    let (fab, v) = fabric(&t, seed);
    let cfg = SweeperConfig {
        partitions_conf: Some(policy(&v, None)),
        ..SweeperConfig::default()
    };
    let mut h = Harness::with_fabric(fab, &t, cfg);
    h.subnet_up();
    h.settle(10_000_000_000);
    (t, h, v)
}

#[test]
fn every_vport_reaches_active_with_its_own_lid_routed_as_its_port() {
    let (t, h, v) = up(5);
    let cas = ca_ports(&t);
    let mut seen = std::collections::BTreeSet::new();
    for (k, &(n, p, _)) in cas[4..6].iter().enumerate() {
        let pf_lid = h.lid_of(n, p);
        for g in &v[k] {
            let vp = h.fab.vport(*g).expect("a vport");
            assert_eq!(vp.state, PortState::Active, "{g}: {vp:?}");
            assert!(vp.lid.is_unicast() && vp.lid != pf_lid, "{g}: {vp:?}");
            assert!(seen.insert(vp.lid), "LID {} given twice", vp.lid);
            assert_eq!(h.sw.guid2lid().get(*g), Some((vp.lid, vp.lid)));
            for (sid, _) in t.switches() {
                assert_eq!(
                    h.fab.lft_entry(sid, vp.lid).unwrap(),
                    h.fab.lft_entry(sid, pf_lid).unwrap(),
                    "vport LID {} not routed as its port's {pf_lid}",
                    vp.lid
                );
            }
        }
    }
    assert!(
        h.log
            .iter()
            .any(|l| l.contains("2 capable ports, 8 vports, 8 ACTIVE")),
        "{}",
        h.log.join("\n")
    );
}

#[test]
fn delivery_between_vports_only_inside_a_partition() {
    let (_, mut h, v) = up(6);
    let a = PKey(0x8010);
    let b = PKey(0x8020);
    // Inside A, across the two HCAs and on one HCA.
    for (s, d) in [(v[0][0], v[1][0]), (v[0][0], v[0][1]), (v[1][0], v[0][1])] {
        let r = h.fab.deliver_vport(s, d, a);
        assert!(r.is_delivered(), "{s} -> {d}: {r:?}");
    }
    // Inside B.
    let r = h.fab.deliver_vport(v[0][2], v[1][1], b);
    assert!(r.is_delivered(), "{r:?}");
    // Across: A to B with either key, on one HCA and across HCAs.
    for (s, d) in [(v[0][0], v[0][2]), (v[1][0], v[0][3]), (v[0][1], v[1][1])] {
        for k in [a, b] {
            let r = h.fab.deliver_vport(s, d, k);
            assert!(!r.is_delivered(), "{s} -> {d} with {k} must not deliver");
        }
    }
}

#[test]
fn a_vport_added_to_and_removed_from_a_partition_changes_its_table_in_one_sweep() {
    let (_, mut h, v) = up(7);
    let newcomer = v[1][2];
    let a = PKey(0x8010);
    assert!(!h.fab.deliver_vport(v[0][0], newcomer, a).is_delivered());
    h.fab.take_set_log();
    h.sw.set_policy(h.now, Some(policy(&v, Some(newcomer))))
        .unwrap();
    assert!(h.heavy_done());
    h.settle(5_000_000_000);
    let log = h.fab.take_set_log();
    assert_eq!(
        count_sets_of(&log, VPORT_PKEYS),
        1,
        "only the newcomer's table"
    );
    assert_eq!(count_sets_of(&log, LFT), 0);
    let keys = h.fab.vport(newcomer).unwrap().pkeys;
    assert!(keys.contains(&a), "{keys:?}");
    assert!(h.fab.deliver_vport(v[0][0], newcomer, a).is_delivered());
    // Removed again (the pod is gone): its table loses the key in the next sweep.
    h.sw.set_policy(h.now, Some(policy(&v, None))).unwrap();
    assert!(h.heavy_done());
    h.settle(5_000_000_000);
    assert_eq!(count_sets_of(&h.fab.take_set_log(), VPORT_PKEYS), 1);
    assert!(!h.fab.vport(newcomer).unwrap().pkeys.contains(&a));
    assert!(!h.fab.deliver_vport(v[0][0], newcomer, a).is_delivered());
}

#[test]
fn a_new_master_keeps_every_vport_lid_and_writes_no_lft_block() {
    let (t, mut h, v) = up(8);
    let lids: Vec<Lid> = v
        .iter()
        .flatten()
        .map(|g| h.fab.vport(*g).unwrap().lid)
        .collect();
    // The new master: seeded from what the old one recorded (guid2lid, LFTs, P_Keys), as
    // a replica taking over is from the replicated state.
    let mut cfg = h.sw.config().clone();
    cfg.guid2lid = h.sw.guid2lid().clone();
    cfg.known_lfts = h.sw.lfts().cloned().map(std::sync::Arc::new);
    cfg.known_pkeys = Some(std::sync::Arc::new(h.sw.pkey_tables()));
    h.fab.detach(h.sm).unwrap();
    h.fab.take_set_log();
    let fab = std::mem::replace(
        &mut h.fab,
        SimFabric::new(&t, SimConfig::default()).unwrap(),
    );
    let mut h2 = Harness::with_fabric(fab, &t, cfg);
    h2.now = h.now;
    h2.subnet_up();
    h2.settle(5_000_000_000);
    let log = h2.fab.take_set_log();
    assert_eq!(count_sets_of(&log, LFT), 0, "a takeover rewrote LFT blocks");
    assert_eq!(count_sets_of(&log, VPORT_INFO), 0);
    assert_eq!(count_sets_of(&log, VPORT_PKEYS), 0);
    let after: Vec<Lid> = v
        .iter()
        .flatten()
        .map(|g| h2.fab.vport(*g).unwrap().lid)
        .collect();
    assert_eq!(after, lids);
}
