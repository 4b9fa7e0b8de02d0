//! A Raft cluster's master next to a foreign SM (IBA 14.4.1 rules, the cluster as one SM):
//! the cluster's master is a gated sweeper (`gate_programming`, intents committed at once by
//! the harness as a leader with a quorum does) that names its replicas' SM ports
//! (`peer_sms`); a standby replica is a `Role::Standby` sweeper (SMInfo STANDBY, nothing
//! sent); the foreign SM is a single-replica sweeper. fabric-sim, virtual time,
//! deterministic; who wrote what is read from the simulator's accepted-Set log.

mod common;
mod foreign_common;

use common::{ca_ports, topo};
use fabric::{Guid, NodeId, Topology};
use foreign_common::*;
use mad::{AttributeId, Method, SmState};
use sm_core::{Event, Role, SweeperConfig};

/// The cluster master's configuration (priority `priority`, replicas at `peers`).
fn master_cfg(priority: u8, peers: &[Guid]) -> SweeperConfig {
    SweeperConfig {
        gate_programming: true,
        intent_id_base: 7 << 32,
        peer_sms: peers.to_vec(),
        ..cfg(priority)
    }
}

/// A standby replica's configuration (what `replica_core::start::configure_standby` sets).
fn standby_cfg(priority: u8, port: Guid) -> SweeperConfig {
    SweeperConfig {
        role: Role::Standby,
        sm_port_guid: Some(port),
        ..cfg(priority)
    }
}

/// Three CA ports on the fabric: the foreign SM's, the cluster master's, a standby replica's.
fn three_ports(t: &Topology) -> (Guid, Guid, Guid) {
    let cas = ca_ports(t);
    (cas[0].2, cas[cas.len() - 1].2, cas[cas.len() / 2].2)
}

fn sm_info_gets(f: &Fabric, i: usize) -> u64 {
    f.sms[i]
        .sw
        .counters()
        .get(AttributeId::SM_INFO, Method::GET)
}

/// A foreign MASTER that outranks the cluster: the cluster's master stands by (no intent,
/// no Set from any replica) and polls it once per interval; when the leadership moves the
/// new master's first sweep finds it again before any Set; when it goes, the master takes
/// over, reads the LFT blocks back and writes none that was right.
#[test]
fn cluster_stands_by_for_a_higher_foreign_master_and_takes_over_with_read_back() {
    let t = topo("ft2:4");
    let (gf, ga, gc) = three_ports(&t);
    let mut f = Fabric::new(&t);
    let foreign = f.add(gf, cfg(15));
    f.wait_for(foreign, "SUBNET UP", subnet_up);
    f.fab.take_set_log();
    let standby = f.add(gc, standby_cfg(0, gc));
    let a = f.add(ga, master_cfg(0, &[ga, gc]));
    f.wait_for(a, "STANDBY", stands_by);
    assert_eq!(f.sms[a].sw.foreign_master(), Some((gf, 15)));
    assert_eq!(f.sms[a].sw.sm_state(), SmState::Standby);
    // The replica is never queried as a foreign SM.
    assert!(f.sms[a].events.iter().all(|(_, e)| match e {
        Event::OtherSms(v) => v.iter().all(|r| r.port_guid != gc),
        _ => true,
    }));
    let polls_before = sm_info_gets(&f, a);
    f.advance(10 * INTERVAL);
    let polls = sm_info_gets(&f, a) - polls_before;
    assert!((8..=12).contains(&polls), "{polls} polls in 10 intervals");
    let log = f.fab.take_set_log();
    assert!(Fabric::sets_from(&log, ga).is_empty(), "master wrote");
    assert!(Fabric::sets_from(&log, gc).is_empty(), "standby wrote");
    assert!(f.sms[a].intents.is_empty(), "intent while standing by");
    assert_eq!(f.sms[standby].sw.sm_state(), SmState::Standby);

    // The leadership moves to the replica at gc: the old master steps down, a fresh
    // master sweeper starts there (as a driver does), finds the foreign master at its
    // first sweep and stands by before any Set.
    f.sms[a].sw.step_down();
    f.kill(standby);
    let b = f.add(gc, master_cfg(0, &[ga, gc]));
    f.wait_for(b, "STANDBY", stands_by);
    f.advance(3 * INTERVAL);
    let log = f.fab.take_set_log();
    assert!(Fabric::sets_from(&log, gc).is_empty(), "new master wrote");
    assert!(Fabric::sets_from(&log, ga).is_empty(), "old master wrote");
    assert!(f.sms[b].intents.is_empty());
    assert_eq!(f.sms[a].sw.sm_state(), SmState::Standby);

    // The foreign master goes: the new master takes over with the read-back.
    let switches: Vec<NodeId> = t.switches().map(|(id, _)| id).collect();
    let before: Vec<Vec<u8>> = switches.iter().map(|&s| f.fab.lft(s).unwrap()).collect();
    let killed = f.now;
    f.kill(foreign);
    let gone = f.wait_for(b, "master gone", |e| {
        matches!(e, Event::ForeignMasterGone { .. })
    });
    let up = f.wait_for(b, "SUBNET UP", subnet_up);
    assert!(up > gone);
    assert_eq!(f.sms[b].sw.sm_state(), SmState::Master);
    assert!(
        !f.sms[b].intents.is_empty(),
        "programming went through an intent"
    );
    check_routes(&f, &t);
    let log = f.fab.take_set_log();
    let lft_sets = f.assert_only_wrong_lft_blocks(&log, gc, &switches, &before);
    let (read, kept) = f.lfts_checked(b);
    assert_eq!(read - kept, lft_sets.len());
    assert!(Fabric::sets_from(&log, ga).is_empty(), "old master wrote");
    println!(
        "cluster takeover: noticed after {} ms, SUBNET UP after {} ms, {read} LFT blocks read back, {kept} kept, {} written",
        (gone - killed) / MS,
        (up - killed) / MS,
        lft_sets.len()
    );
}

/// A foreign SM the cluster outranks, started next to it, finds the master's MASTER and the
/// standby replica's STANDBY (one master) and stands by; the cluster keeps mastering and
/// sends it no HANDOVER. A foreign STANDBY that outranks the cluster gets no HANDOVER either
/// (Raft chooses which replica masters).
#[test]
fn lower_foreign_sm_is_told_the_cluster_masters() {
    let t = topo("ft2:4");
    let (gf, ga, gc) = three_ports(&t);
    let mut f = Fabric::new(&t);
    let _standby = f.add(gc, standby_cfg(10, gc));
    let a = f.add(ga, master_cfg(10, &[ga, gc]));
    f.wait_for(a, "SUBNET UP", subnet_up);
    let foreign = f.add(gf, cfg(0));
    f.wait_for(foreign, "STANDBY", stands_by);
    assert_eq!(f.sms[foreign].sw.foreign_master(), Some((ga, 10)));
    let others = f.sms[foreign]
        .events
        .iter()
        .find_map(|(_, e)| match e {
            Event::OtherSms(v) => Some(v.clone()),
            _ => None,
        })
        .expect("the foreign SM's query");
    let masters = others
        .iter()
        .filter(|r| r.state == Some(SmState::Master))
        .count();
    assert_eq!(masters, 1, "one MASTER answer: {others:?}");
    assert!(
        others
            .iter()
            .any(|r| r.port_guid == gc && r.state == Some(SmState::Standby))
    );
    f.fab.take_set_log();
    f.advance(10 * INTERVAL);
    assert!(Fabric::sets_from(&f.fab.take_set_log(), gf).is_empty());
    assert_eq!(f.sms[a].sw.sm_state(), SmState::Master);
    assert!(
        !f.sms[a]
            .events
            .iter()
            .any(|(_, e)| matches!(e, Event::HandoverSent { .. }))
    );

    // A foreign STANDBY that outranks the cluster: the cluster carries on as master.
    let mut f = Fabric::new(&t);
    let a = f.add(ga, master_cfg(0, &[ga, gc]));
    f.wait_for(a, "SUBNET UP", subnet_up);
    let foreign = f.add(gf, cfg(15));
    f.wait_for(foreign, "STANDBY", stands_by);
    let now = f.now;
    f.sms[a].sw.request_sweep(now, true);
    f.advance(10 * INTERVAL);
    assert_eq!(f.sms[a].sw.sm_state(), SmState::Master, "{}", f.log(a));
    assert!(
        !f.sms[a]
            .events
            .iter()
            .any(|(_, e)| matches!(e, Event::HandoverSent { .. }))
    );
}

/// Without `peer_sms` a gated master keeps the old behaviour: the rules are off (it would
/// otherwise query its own replicas).
#[test]
fn cluster_without_peer_list_ignores_other_sms() {
    let t = topo("ft2:4");
    let (gf, ga, _) = three_ports(&t);
    let mut f = Fabric::new(&t);
    let foreign = f.add(gf, cfg(15));
    f.wait_for(foreign, "SUBNET UP", subnet_up);
    let a = f.add(ga, master_cfg(0, &[]));
    f.wait_for(a, "SUBNET UP", subnet_up);
    assert!(f.first(a, stands_by).is_none());
}

/// IBA 14.4.1: an SM whose SMInfo carries another SM_Key takes no part in the mastership
/// decisions: a higher MASTER with another key does not make this SM stand by, and it is
/// reported with its port GUID and LID.
#[test]
fn sm_with_another_sm_key_is_ignored_and_reported() {
    let t = topo("ft2:4");
    let (gf, ga, gc) = three_ports(&t);
    let mut f = Fabric::new(&t);
    let foreign = f.add(
        gf,
        SweeperConfig {
            sm_key: 0x55,
            ..cfg(15)
        },
    );
    f.wait_for(foreign, "SUBNET UP", subnet_up);
    let f_lid = f.sms[foreign].sw.sm_lid();
    let a = f.add(ga, master_cfg(0, &[ga, gc]));
    let at = f.wait_for(a, "SM_Key report", |e| {
        matches!(e, Event::SmKeyIgnored { .. })
    });
    let (guid, lid, text) = f.sms[a]
        .events
        .iter()
        .filter(|(t, _)| *t == at)
        .find_map(|(_, e)| match e {
            Event::SmKeyIgnored { guid, lid, .. } => Some((*guid, *lid, e.to_string())),
            _ => None,
        })
        .unwrap();
    assert_eq!((guid, lid), (gf, f_lid));
    assert!(text.contains("answers another SM_Key"), "{text}");
    f.wait_for(a, "SUBNET UP", subnet_up);
    assert!(f.first(a, stands_by).is_none(), "{}", f.log(a));
}

/// Trap 144 (IsSM set) from a port ours swept: a replica peer's port asks for nothing (peers
/// are never queried), another SM's port asks for a full heavy sweep that queries it before
/// anything is written.
#[test]
fn an_is_sm_trap_sweeps_for_a_foreign_sm_not_for_a_peer() {
    let t = topo("ft2:4");
    let (gf, ga, gc) = three_ports(&t);
    let mut f = Fabric::new(&t);
    let master = f.add(ga, master_cfg(5, &[ga, gc]));
    f.wait_for(master, "SUBNET UP", subnet_up);
    f.advance(INTERVAL / 10);
    let trap144_sweeps = |f: &Fabric| {
        count(f, master, |e| {
            matches!(
                e,
                Event::HeavySweepStarted {
                    reason: sm_core::SweepReason::Trap(144),
                    ..
                }
            )
        })
    };
    let traps = |f: &Fabric| count(f, master, |e| matches!(e, Event::Trap { number: 144, .. }));
    // A standby replica registers at its port.
    f.add(gc, standby_cfg(5, gc));
    f.advance(INTERVAL / 10);
    assert_eq!(traps(&f), 1, "{}", f.log(master));
    assert_eq!(trap144_sweeps(&f), 0, "{}", f.log(master));
    // A foreign SM registers (lower priority, so nothing else changes): one full sweep, and
    // the master asks it.
    let gets = sm_info_gets(&f, master);
    f.add(gf, cfg(1));
    f.advance(INTERVAL / 10);
    assert_eq!(traps(&f), 2, "{}", f.log(master));
    assert_eq!(trap144_sweeps(&f), 1, "{}", f.log(master));
    assert!(sm_info_gets(&f, master) > gets, "{}", f.log(master));
}
