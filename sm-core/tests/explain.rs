//! `explain` (issue 21): each cause produced on the simulated fabric and explained from
//! what the sweeper read — a pulled cable (with the flaps the counters saw), a port disabled
//! by someone else, an M_Key the SM does not hold (the CA stays Init), the switch port Armed
//! waiting for that CA, a VF alias GUID, a P_Key that does not fit the table, a healthy
//! port, and unknown targets.

mod common;
use common::*;
use fabric::{Guid, Lid, NodeId, PortRef, Topology};
use fabric_sim::virt::VirtModel;
use fabric_sim::{Fault, SimConfig, SimFabric};
use mad::perf::{ClassPortInfo, PerfAttribute, PerfMad, PortCounters};
use mad::{PortInfo, Smp};
use sm_core::perf::{PerfConfig, PerfManager};
use sm_core::{Cause, ExplainInputs, ExplainTarget, SmError, SweeperConfig, VTime};
use std::collections::BTreeMap;

const SEC: VTime = 1_000_000_000;
const FOREIGN_KEY: u64 = 0x0bad_cafe_0000_0001;

fn cfg() -> SweeperConfig {
    SweeperConfig {
        sweep_interval: 100_000_000,
        ..SweeperConfig::default()
    }
}

/// The switch port (node, port) facing CA port `(n, p)`.
fn facing(t: &Topology, n: NodeId, p: u8) -> (NodeId, u8) {
    let r = t.remote(PortRef::new(n, p)).unwrap();
    (r.node, r.port.0)
}

fn guid_of(t: &Topology, n: NodeId) -> Guid {
    t.node(n).node_guid
}

/// One counter sweep of `perf` at `now`, every port answering LinkDownedCounter
/// `downed(lid, port)` (ClassPortInfo without the extended counters).
fn perf_sweep(perf: &mut PerfManager, now: VTime, downed: impl Fn(Lid, u8) -> u8) {
    perf.handle_timeout(now);
    for _ in 0..8 {
        let tx: Vec<_> = std::iter::from_fn(|| perf.poll_transmit(now)).collect();
        if tx.is_empty() {
            break;
        }
        for t in tx {
            let req = PerfMad::decode(&t.mad).unwrap();
            let mut r = req.response();
            if req.header.attr_id == ClassPortInfo::ID {
                r.set_attr(&ClassPortInfo::default());
            } else {
                let q: PortCounters = req.attr().unwrap();
                r.set_attr(&PortCounters {
                    port_select: q.port_select,
                    link_downed: downed(t.dlid, q.port_select),
                    ..PortCounters::default()
                });
            }
            assert!(perf.handle_gmp(now, &r.encode()));
        }
    }
}

/// A perf manager over the harness's last heavy sweep, with two counter sweeps 180 s
/// apart: LinkDownedCounter 0, then `downed(lid, port)`.
fn perf_of(h: &Harness, downed: impl Fn(Lid, u8) -> u8) -> PerfManager {
    let mut perf = PerfManager::new(PerfConfig {
        rate_per_sec: 1_000_000_000,
        ..PerfConfig::default()
    });
    perf.set_fabric(h.now, h.sw.perf_targets(), true);
    perf_sweep(&mut perf, h.now, |_, _| 0);
    perf_sweep(&mut perf, h.now + 180 * SEC, downed);
    perf
}

#[test]
fn pulled_cable_is_phys_down_at_both_ends_and_flaps_are_named() {
    let t = topo("ft2:4");
    let mut h = Harness::new(&t, cfg(), 31);
    h.subnet_up();
    h.heavy_done();
    let (n, p, port_guid) = ca_ports(&t)[3];
    let (sw, sp) = facing(&t, n, p);
    let sw_lid = h.lid_of(sw, 0);
    // The counters saw the link go down 3 times between two readings.
    let perf = perf_of(&h, |lid, port| u8::from(lid == sw_lid && port == sp) * 3);
    h.fab
        .inject(h.now, Fault::LinkDown { node: n, port: p })
        .unwrap();
    assert!(h.heavy_done(), "the trap brings a heavy sweep");

    let e =
        h.sw.explain(ExplainTarget::Lid(sw_lid, Some(sp)), Some(&perf))
            .unwrap();
    assert_eq!(e.cause, Cause::PhysDown, "{e:#?}");
    assert_eq!((e.state, e.phys_state), (1, 2), "Down / Polling");
    assert_eq!(e.node_guid, guid_of(&t, sw));
    assert!(e.summary.contains("no signal from the other end"), "{e:#?}");
    let peer = e.peer.as_ref().expect("the last peer is named");
    assert_eq!((peer.node_guid, peer.port), (guid_of(&t, n), p));
    assert!(
        peer.sweep < e.sweep,
        "the link was last found before the last sweep"
    );
    assert!(
        e.facts
            .iter()
            .any(|f| f.contains("LinkDownedCounter grew by 3")),
        "{e:#?}"
    );
    assert!(e.next_step.contains("the link flaps"), "{e:#?}");

    // The CA end, by its port GUID: not reached, and its last peer reads Down.
    let c =
        h.sw.explain(ExplainTarget::Guid(port_guid, None), None)
            .unwrap();
    assert_eq!(c.cause, Cause::PhysDown, "{c:#?}");
    assert_eq!((c.node_guid, c.port, c.state), (guid_of(&t, n), p, 1));
    assert!(
        c.facts
            .iter()
            .any(|f| f.contains("not reached by the last heavy sweep"))
    );
    assert!(
        c.facts.iter().any(|f| f.contains("reads PortState Down")),
        "{c:#?}"
    );
}

#[test]
fn port_disabled_by_another_tool_is_phys_disabled() {
    let t = topo("ft2:4");
    let mut h = Harness::new(&t, cfg(), 32);
    h.subnet_up();
    h.heavy_done();
    let cas = ca_ports(&t);
    let (n, p, rogue) = cas[2];
    let (sw, _) = facing(&t, n, p);
    // Another SM (no M_Key in force) disables the leaf's port facing cas[3], directed one
    // hop out of cas[2].
    let (n3, p3, _) = cas[3];
    let (sw3, sp3) = facing(&t, n3, p3);
    assert_eq!(sw3, sw, "cas[2] and cas[3] share a leaf");
    let mut pi: PortInfo = h.fab.port_info(sw, sp3).unwrap();
    pi.port_state = 1;
    pi.port_phys_state = 3;
    let smp = Smp::dr_set(0x99, u32::from(sp3), &[p], &pi).unwrap();
    let rogue_fault = Fault::Rogue {
        port_guid: rogue,
        dlid: Lid::PERMISSIVE,
        smp: Box::new(smp),
    };
    h.fab.inject(h.now, rogue_fault).unwrap();
    // A Set of the SM's kind raises no trap at that switch: a heavy sweep is asked for.
    h.sw.request_sweep(h.now, true);
    assert!(h.heavy_done());
    assert_eq!(h.fab.port_info(sw, sp3).unwrap().port_phys_state, 3);
    let e =
        h.sw.explain(ExplainTarget::Guid(guid_of(&t, sw), Some(sp3)), None)
            .unwrap();
    assert_eq!(e.cause, Cause::PhysDisabled, "{e:#?}");
    assert_eq!((e.state, e.phys_state), (1, 3));
    assert!(e.next_step.contains("enable the port"), "{e:#?}");
}

/// A fabric whose CA port `victim` holds FOREIGN_KEY at protect bits 1 before the SM starts
/// (set by a directed-route Set from the port itself, hop 0), with the harness on it.
fn m_key_locked(t: &Topology, victim: Guid, seed: u64) -> Harness {
    let mut fab = SimFabric::new(
        t,
        SimConfig {
            seed,
            ..SimConfig::default()
        },
    )
    .unwrap();
    let (n, p) = fab.port_by_guid(victim).unwrap();
    let mut pi = fab.port_info(n, p).unwrap();
    pi.port_state = 0;
    pi.port_phys_state = 0;
    pi.m_key = FOREIGN_KEY;
    pi.m_key_protect_bits = 1;
    pi.m_key_lease_period = 0;
    let smp = Smp::dr_set(0x42, u32::from(p), &[], &pi).unwrap();
    fab.inject(
        0,
        Fault::Rogue {
            port_guid: victim,
            dlid: Lid::PERMISSIVE,
            smp: Box::new(smp),
        },
    )
    .unwrap();
    fab.run_until_idle(SEC);
    assert_eq!(fab.port_info(n, p).unwrap().m_key, FOREIGN_KEY);
    Harness::with_fabric(fab, t, cfg())
}

#[test]
fn foreign_m_key_keeps_the_ca_in_init_and_is_named() {
    let t = topo("ft2:4");
    let (n, p, victim) = ca_ports(&t)[3];
    let mut h = m_key_locked(&t, victim, 33);
    assert!(h.heavy_done());
    assert_eq!(
        h.fab.port_state(n, p).unwrap(),
        fabric::PortState::Init,
        "the SM's Sets are refused"
    );
    let e =
        h.sw.explain(ExplainTarget::Guid(victim, None), None)
            .unwrap();
    assert_eq!(e.cause, Cause::MKeyMismatch, "{e:#?}");
    assert_eq!((e.port, e.state, e.phys_state), (p, 2, 5), "Init / LinkUp");
    assert!(
        e.facts
            .iter()
            .any(|f| f.contains("M_Key protect bits 1") && f.contains("reads as 0")),
        "{e:#?}"
    );
    assert!(
        e.facts
            .iter()
            .any(|f| f.contains("PortInfo Set") && f.contains("got no answer")),
        "{e:#?}"
    );
    assert!(e.next_step.contains("M_Key"));
    // The key itself is a secret: never printed.
    let text = format!("{e:?}");
    assert!(!text.contains("bad_cafe") && !text.contains("badcafe"));
}

#[test]
fn switch_port_armed_waits_for_its_m_key_locked_neighbour() {
    let t = topo("ft2:4");
    let (n, p, victim) = ca_ports(&t)[3];
    let (sw, sp) = facing(&t, n, p);
    let mut h = m_key_locked(&t, victim, 34);
    assert!(h.heavy_done());
    assert_eq!(h.fab.port_state(sw, sp).unwrap(), fabric::PortState::Armed);
    let sw_lid = h.lid_of(sw, 0);
    let e =
        h.sw.explain(ExplainTarget::Lid(sw_lid, Some(sp)), None)
            .unwrap();
    assert_eq!(e.cause, Cause::ArmedWaitingPeer, "{e:#?}");
    assert_eq!(e.state, 3);
    let peer = e.peer.as_ref().unwrap();
    assert_eq!(
        (peer.node_guid, peer.port, peer.state),
        (guid_of(&t, n), p, 2)
    );
    assert_eq!(
        peer.cause,
        Some(Cause::MKeyMismatch),
        "the peer's reason is named"
    );
    assert!(e.summary.contains("EXPLAIN-MKEY"), "{e:#?}");
    assert!(e.next_step.starts_with("fix the peer first"), "{e:#?}");
}

#[test]
fn vf_alias_guid_is_explained_as_a_vf_of_its_pf_or_honestly_unknown() {
    let t = topo("ft2:4");
    let mut h = Harness::new(&t, cfg(), 35);
    h.subnet_up();
    h.heavy_done();
    let (n, p, pf) = ca_ports(&t)[2];
    let alias = Guid(0x0002_c903_00ab_0001);
    let mut virt = VirtModel::new();
    virt.add_vf(&mut h.fab, pf, alias, "vm-a").unwrap();
    // What the master knows: the sweeper reads no GUIDInfo, so the alias is not a port it
    // found; the error says what a VF would mean.
    match h.sw.explain(ExplainTarget::Guid(alias, None), None) {
        Err(e @ SmError::ExplainUnknown { .. }) => {
            let m = e.to_string();
            assert!(m.starts_with("SMC-E011"), "{m}");
            assert!(m.contains("if it is a VF") && m.contains("keep the PF driver on the host"));
        }
        other => panic!("{other:?}"),
    }
    // With the aliases handed in (what `PortDirectory::with_aliases` takes), it is a VF.
    let aliases: BTreeMap<Guid, Guid> = virt.aliases().collect();
    let inputs = ExplainInputs {
        perf: None,
        vf_aliases: Some(&aliases),
    };
    let e =
        h.sw.explain_with(ExplainTarget::Guid(alias, None), &inputs)
            .unwrap();
    assert_eq!(e.cause, Cause::VfAlias, "{e:#?}");
    assert_eq!((e.port_guid, e.port, e.state), (pf, p, 4));
    assert_eq!(e.lid, h.lid_of(n, p));
    assert!(
        e.summary.contains(&format!("is a VF of port {pf}")) && e.summary.contains("Active"),
        "{e:#?}"
    );
    assert!(e.facts.iter().any(|f| f.contains("no QP0 of its own")));
    assert!(e.next_step.starts_with("keep the PF driver on the host"));
}

#[test]
fn p_key_that_does_not_fit_partition_cap_is_missing() {
    let t = topo("ft2:4");
    let (_, _, victim) = ca_ports(&t)[3];
    let (_, _, other) = ca_ports(&t)[2];
    // 32 partitions besides Default on a CA with 32 P_KeyTable entries: one does not fit.
    let mut text = "Default=0x7fff : ALL=full ;\n".to_string();
    for k in 1..=32u16 {
        text.push_str(&format!("P{k}=0x{k:04x} : {victim}=full, {other}=full ;\n"));
    }
    let fab = SimFabric::new(
        &t,
        SimConfig {
            seed: 36,
            ca_partition_cap: 32,
            ..SimConfig::default()
        },
    )
    .unwrap();
    let mut h = Harness::with_fabric(
        fab,
        &t,
        SweeperConfig {
            partitions_conf: Some(text),
            ..cfg()
        },
    );
    h.subnet_up();
    h.heavy_done();
    let e =
        h.sw.explain(ExplainTarget::Guid(victim, None), None)
            .unwrap();
    assert_eq!(e.cause, Cause::PKeyMissing, "{e:#?}");
    assert_eq!(e.state, 4, "Active");
    assert!(e.summary.contains("(P"), "the partition is named: {e:#?}");
    assert!(
        e.facts
            .iter()
            .any(|f| f.contains("NodeInfo.PartitionCap 32") && f.contains("gives this port 33")),
        "{e:#?}"
    );
    assert!(e.next_step.contains("PART-E008"));
    // A port with room holds all its keys.
    let (_, _, fine) = ca_ports(&t)[0];
    let ok = h.sw.explain(ExplainTarget::Guid(fine, None), None).unwrap();
    assert_eq!(ok.cause, Cause::Healthy, "{ok:#?}");
}

#[test]
fn healthy_port_says_so_with_lid_peer_and_link_health() {
    let t = topo("ft2:4");
    let mut h = Harness::new(&t, cfg(), 37);
    h.subnet_up();
    h.heavy_done();
    let (n, p, _) = ca_ports(&t)[1];
    let (sw, sp) = facing(&t, n, p);
    let perf = perf_of(&h, |_, _| 0);
    let lid = h.lid_of(n, p);
    let e =
        h.sw.explain(ExplainTarget::Lid(lid, None), Some(&perf))
            .unwrap();
    assert_eq!(e.cause, Cause::Healthy, "{e:#?}");
    assert_eq!(
        (e.node_guid, e.port, e.lid, e.state, e.phys_state),
        (guid_of(&t, n), p, lid, 4, 5)
    );
    let peer = e.peer.as_ref().unwrap();
    assert_eq!(
        (peer.node_guid, peer.port, peer.state),
        (guid_of(&t, sw), sp, 4)
    );
    assert!(e.summary.starts_with("Active: nothing wrong"), "{e:#?}");
    assert!(e.summary.contains(&format!("LID {}", lid.0)) && e.summary.contains("link ok"));
    assert!(e.facts.iter().any(|f| f == "link health: ok"), "{e:#?}");
    // A switch by its node GUID: port 0, always Active.
    let s =
        h.sw.explain(ExplainTarget::Guid(guid_of(&t, sw), None), None)
            .unwrap();
    assert_eq!(
        (s.port, s.cause, s.lid),
        (0, Cause::Healthy, h.lid_of(sw, 0))
    );
}

#[test]
fn unknown_lid_guid_and_port_are_typed_errors() {
    let t = topo("ft2:4");
    let mut h = Harness::new(&t, cfg(), 38);
    h.subnet_up();
    let e = h.sw.explain(ExplainTarget::Lid(Lid(0x0999), None), None);
    assert!(
        matches!(&e, Err(SmError::ExplainUnknown { target, .. }) if target == "LID 2457"),
        "{e:?}"
    );
    let e =
        h.sw.explain(ExplainTarget::Guid(Guid(0xdead), Some(1)), None)
            .unwrap_err();
    assert!(e.to_string().starts_with("SMC-E011 GUID"), "{e}");
    let (n, _, _) = ca_ports(&t)[0];
    let e =
        h.sw.explain(ExplainTarget::Guid(guid_of(&t, n), Some(9)), None)
            .unwrap_err();
    assert!(matches!(e, SmError::ExplainPort { port: 9, .. }), "{e:?}");
    assert!(e.to_string().starts_with("SMC-E012"));
    // Every cause has a distinct stable code.
    let codes: std::collections::BTreeSet<_> = Cause::ALL.iter().map(|c| c.code()).collect();
    assert_eq!(codes.len(), Cause::ALL.len());
    assert!(
        Cause::ALL
            .iter()
            .all(|c| Cause::from_code(c.code()) == Some(*c))
    );
}
