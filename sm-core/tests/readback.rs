//! P_KeyTable read-back: the tables read equal what the simulated fabric holds, nothing is
//! written while reading, a table changed behind the SM's back shows up in the read-back
//! (while the SM's own record still says what it programmed), a request made during a heavy
//! sweep waits for it, and a port that stops answering is listed as unanswered.

mod common;

use common::{Harness, ca_ports, topo};
use fabric::{NodeId, PKey, Topology};
use fabric_sim::Fault;
use mad::Smp;
use sm_core::{Event, ReadbackReport, SweeperConfig};

const LIMIT: u64 = 60_000_000_000;

/// Two tenants of two CA ports each (the SM's own port in neither) and the default
/// partition limited for everyone else.
fn policy(t: &Topology) -> String {
    let cas = ca_ports(t);
    format!(
        "Default=0x7fff : ALL=full ;\nA=0x0001 : {}=full, {}=full ;\nB=0x0002 : {}=full, {}=limited ;\n",
        cas[1].2, cas[2].2, cas[3].2, cas[4].2
    )
}

fn harness(t: &Topology, seed: u64) -> Harness {
    let cfg = SweeperConfig {
        partitions_conf: Some(policy(t)),
        // Light sweeps out of the way (0 would mean one every instant).
        sweep_interval: 1_000 * sm_core::MS * 1_000,
        ..SweeperConfig::default()
    };
    let mut h = Harness::new(t, cfg, seed);
    h.subnet_up();
    if !h
        .events
        .iter()
        .any(|e| matches!(e, Event::HeavySweepComplete { .. }))
    {
        assert!(h.heavy_done());
    }
    h
}

fn readback(h: &mut Harness) -> ReadbackReport {
    let id = h.sw.request_pkey_readback(h.now).unwrap();
    let start = h.events.len();
    assert!(
        h.run_until(LIMIT, |e| matches!(e, Event::PKeyReadback(r) if r.id == id)),
        "no read-back; log:\n{}",
        h.log.join("\n")
    );
    h.events[start..]
        .iter()
        .find_map(|e| match e {
            Event::PKeyReadback(r) if r.id == id => Some((**r).clone()),
            _ => None,
        })
        .unwrap()
}

fn keys_in_fabric(h: &Harness, n: NodeId, p: u8, len: usize) -> Vec<u16> {
    let mut v: Vec<u16> = h
        .fab
        .pkey_table(n, p)
        .unwrap()
        .iter()
        .map(|k| k.0)
        .collect();
    v.resize(len, 0);
    v
}

#[test]
fn readback_matches_the_fabric_and_writes_nothing() {
    let t = topo("ft2:8");
    let mut h = harness(&t, 31);
    h.fab.take_set_log();
    let r = readback(&mut h);
    assert!(h.fab.take_set_log().is_empty(), "a read-back sent a Set");
    assert!(r.unanswered.is_empty(), "{:?}", r.unanswered);
    // Every cabled CA port, every switch port 0 and every switch port facing a CA.
    let cas = ca_ports(&t);
    let switches = t.switches().count();
    let ca_facing = cas.len();
    let ca_tables: Vec<_> = r.tables.iter().filter(|x| !x.is_switch).collect();
    assert_eq!(ca_tables.len(), cas.len());
    assert_eq!(r.tables.len(), cas.len() + switches + ca_facing);
    for x in &r.tables {
        let n = t.node_by_guid(x.node).unwrap();
        if x.is_switch && x.port != 0 {
            // Enforcement is on under the default part_enforce both: the table was read.
            assert_eq!((x.enforce_in, x.enforce_out), (Some(true), Some(true)));
        }
        assert_eq!(x.pkeys.len(), usize::from(x.capacity), "{x:?}");
        assert_eq!(
            x.pkeys,
            keys_in_fabric(&h, n, x.port, x.pkeys.len()),
            "{x:?}"
        );
    }
    // The tenants' keys are there (not only the default one).
    let a1 = r
        .tables
        .iter()
        .find(|x| x.node == t.node(cas[1].0).node_guid && x.port == cas[1].1)
        .unwrap();
    assert!(a1.pkeys.contains(&0x8001), "{a1:?}");
    assert!(r.smps >= r.tables.len() as u64);
    assert!(r.finished >= r.started && r.started >= r.requested);
}

#[test]
fn a_table_changed_behind_the_sms_back_shows_up() {
    let t = topo("ft2:8");
    let mut h = harness(&t, 32);
    let cas = ca_ports(&t);
    // A rogue host (M_Key 0 protects nothing here) puts tenant B's full key into a tenant A
    // port's table.
    let (vn, vp, _) = cas[1];
    let victim_guid = t.node(vn).node_guid;
    let lid = h.lid_of(vn, vp);
    let mut table = mad::PKeyTable::default();
    for (k, e) in keys_in_fabric(&h, vn, vp, 32).iter().enumerate() {
        table.keys[k] = PKey(*e);
    }
    let free = table.keys.iter().position(|k| k.0 == 0).unwrap();
    table.keys[free] = PKey(0x8002);
    let smp = Smp::lid_set(0x77, mad::PKeyTable::modifier(0, 0), &table);
    h.fab
        .inject(
            h.now,
            Fault::Rogue {
                port_guid: cas[5].2,
                dlid: lid,
                smp: Box::new(smp),
            },
        )
        .unwrap();
    h.fab.run_until(h.now + 10_000_000);
    h.now += 10_000_000;
    assert!(keys_in_fabric(&h, vn, vp, 32).contains(&0x8002));
    let r = readback(&mut h);
    let got = r
        .tables
        .iter()
        .find(|x| x.node == victim_guid && x.port == vp)
        .unwrap();
    assert!(got.pkeys.contains(&0x8002), "read-back misses the change");
    // What the SM believes it programmed is unchanged: only the read-back sees the leak.
    let known = h.sw.pkey_tables();
    assert!(!known[&(victim_guid, vp)].contains(&0x8002));
}

#[test]
fn a_request_during_a_heavy_sweep_waits_for_it() {
    let t = topo("ft2:8");
    let mut h = harness(&t, 33);
    h.sw.request_sweep(h.now, true);
    let id = h.sw.request_pkey_readback(h.now).unwrap();
    assert!(h.sw.readback_progress().is_none(), "started mid-sweep");
    let start = h.events.len();
    assert!(h.run_until(LIMIT, |e| matches!(e, Event::PKeyReadback(r) if r.id == id)));
    let ev = &h.events[start..];
    let done = ev
        .iter()
        .position(|e| matches!(e, Event::HeavySweepComplete { .. }))
        .unwrap();
    let rb = ev
        .iter()
        .position(|e| matches!(e, Event::PKeyReadback(_)))
        .unwrap();
    assert!(done < rb, "read-back finished before the sweep did");
    // Two requests queue: both are answered, in order, with distinct ids.
    let a = h.sw.request_pkey_readback(h.now).unwrap();
    let b = h.sw.request_pkey_readback(h.now).unwrap();
    assert_ne!(a, b);
    let start = h.events.len();
    assert!(h.run_until(LIMIT, |e| matches!(e, Event::PKeyReadback(r) if r.id == b)));
    let ids: Vec<u64> = h.events[start..]
        .iter()
        .filter_map(|e| match e {
            Event::PKeyReadback(r) => Some(r.id),
            _ => None,
        })
        .collect();
    assert_eq!(ids, vec![a, b]);
}

#[test]
fn a_port_that_stops_answering_is_listed() {
    let t = topo("ft2:8");
    let mut h = harness(&t, 34);
    let cas = ca_ports(&t);
    let (vn, _, _) = cas[6];
    h.fab.inject(h.now, Fault::RemoveNode { node: vn }).unwrap();
    let id = h.sw.request_pkey_readback(h.now).unwrap();
    let (_, done0, total) = h.sw.readback_progress().unwrap();
    assert_eq!(id, 1);
    assert!(done0 < total);
    let r = readback_wait(&mut h, id);
    let g = t.node(vn).node_guid;
    assert!(r.unanswered.iter().any(|&(n, _)| n == g), "{r:?}");
    assert!(r.tables.iter().all(|x| x.node != g));
    assert!(r.tables.len() > 10);
}

fn readback_wait(h: &mut Harness, id: u64) -> ReadbackReport {
    let start = h.events.len();
    assert!(h.run_until(LIMIT, |e| matches!(e, Event::PKeyReadback(r) if r.id == id)));
    h.events[start..]
        .iter()
        .find_map(|e| match e {
            Event::PKeyReadback(r) if r.id == id => Some((**r).clone()),
            _ => None,
        })
        .unwrap()
}

#[test]
fn lost_mads_are_resent_and_every_table_is_read() {
    let t = topo("ft2:8");
    let mut h = harness(&t, 35);
    let clean = readback(&mut h);
    let timeouts = h.sw.counters().timeouts;
    h.fab.inject(h.now, Fault::Loss { prob: 0.03 }).unwrap();
    let r = readback(&mut h);
    assert!(
        h.sw.counters().timeouts > timeouts,
        "no SMP was lost: the test proves nothing"
    );
    assert!(r.unanswered.is_empty(), "{:?}", r.unanswered);
    assert_eq!(r.tables, clean.tables, "resends read the same tables");
    assert!(r.smps > clean.smps, "resends are counted");
}
