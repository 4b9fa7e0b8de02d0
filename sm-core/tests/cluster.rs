//! A Raft cluster's master as the sweeper sees it: intent-first programming, fencing,
//! step-down, standby SMInfo, per-term M_Key rotation, and takeovers on fabric-sim with
//! several SMs attached (virtual time, deterministic).

mod common;

use common::{ca_ports, topo};
use fabric::{Guid, Lid, NodeId, Topology};
use fabric_sim::{AttachId, SetRecord, SimConfig, SimFabric};
use mad::{AttributeId, Method, SmInfo, SmState, Smp};
use routing::{Lfts, NO_ROUTE, SwitchLft};
use sm_core::{
    Event, Intent, IntentEvent, PKeyTables, Phase, Role, Sweeper, SweeperConfig, VTime,
    route_inline,
};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

const LFT: u16 = 0x19;
const PKEY: u16 = 0x16;
const PORT_INFO: u16 = 0x15;
const KEY_A: u64 = 0xA1A1_0000_0000_0001;
const KEY_B: u64 = 0xB2B2_0000_0000_0002;
const SEC: VTime = 1_000_000_000;
const MS: VTime = 1_000_000;

/// One SM attached to the shared fabric.
struct Sm {
    at: AttachId,
    sw: Sweeper,
    /// Driven by the loop (false: paused, like SIGSTOP).
    driven: bool,
    /// Commit every intent at once (the test plays the Raft log).
    auto_commit: bool,
    /// Extend the write lease by this much at every step (a leader whose quorum answers).
    lease: Option<VTime>,
    events: Vec<Event>,
    intents: Vec<IntentEvent>,
}

/// Several SMs on one fabric.
struct Cluster {
    fab: SimFabric,
    now: VTime,
    sms: Vec<Sm>,
}

const POLICY: &str = "Default=0x7fff : ALL=full ;\nX=0x0001 : ALL=full ;\n";

fn gated(m_key: u64, prev: Vec<u64>) -> SweeperConfig {
    SweeperConfig {
        partitions_conf: Some(POLICY.into()),
        m_key,
        m_key_prev: prev,
        m_key_protect_bits: 1,
        gate_programming: true,
        sweep_interval: 200_000_000,
        ..SweeperConfig::default()
    }
}

impl Cluster {
    fn new(t: &Topology, seed: u64) -> Cluster {
        let fab = SimFabric::new(
            t,
            SimConfig {
                seed,
                ..SimConfig::default()
            },
        )
        .unwrap();
        Cluster {
            fab,
            now: 0,
            sms: Vec::new(),
        }
    }

    /// Attaches an SM at `guid`; returns its index.
    fn add(&mut self, guid: Guid, cfg: SweeperConfig) -> usize {
        let at = self.fab.attach(guid).unwrap();
        let sw = Sweeper::new(cfg).unwrap();
        self.sms.push(Sm {
            at,
            sw,
            driven: true,
            auto_commit: true,
            lease: None,
            events: Vec::new(),
            intents: Vec::new(),
        });
        self.sms.len() - 1
    }

    /// kill -9: the SM is gone, its attachment too.
    fn kill(&mut self, i: usize) {
        self.sms[i].driven = false;
        self.fab.detach(self.sms[i].at).unwrap();
    }

    fn step(&mut self) -> bool {
        for sm in self.sms.iter_mut().filter(|s| s.driven) {
            if let Some(l) = sm.lease {
                sm.sw.set_lease(Some(self.now + l));
            }
            while let Some(tx) = sm.sw.poll_transmit_at(self.now) {
                if tx.dlid.is_permissive() {
                    self.fab.send(self.now, sm.at, &tx.smp).unwrap();
                } else {
                    self.fab
                        .send_lid(self.now, sm.at, tx.dlid, &tx.smp)
                        .unwrap();
                }
            }
        }
        let mut next = self.fab.next_event_time();
        for sm in self.sms.iter_mut().filter(|s| s.driven) {
            if let Some(t) = sm.sw.poll_timeout() {
                next = Some(next.map_or(t, |n| n.min(t)));
            }
        }
        let Some(next) = next else { return false };
        self.now = self.now.max(next);
        self.fab.run_until(self.now);
        let now = self.now;
        for sm in self.sms.iter_mut().filter(|s| s.driven) {
            while let Some(r) = self.fab.poll_recv_full(sm.at) {
                sm.sw.handle_mad(now, r.slid, r.smp);
            }
            if matches!(sm.sw.poll_timeout(), Some(t) if t <= now) {
                sm.sw.handle_timeout(now);
            }
            loop {
                let mut any = false;
                while let Some(ev) = sm.sw.poll_event() {
                    any = true;
                    match ev {
                        Event::RoutingNeeded(job) => {
                            let r = route_inline(&job);
                            sm.sw.handle_routing_result(now, r);
                        }
                        other => {
                            assert!(sm.events.len() < 100_000, "event storm");
                            sm.events.push(other)
                        }
                    }
                }
                while let Some(ie) = sm.sw.poll_intent() {
                    any = true;
                    if let (true, IntentEvent::Program(it)) = (sm.auto_commit, &ie) {
                        let id = it.id;
                        sm.intents.push(ie);
                        sm.sw.handle_intent_committed(now, id);
                    } else {
                        sm.intents.push(ie);
                    }
                }
                if !any {
                    break;
                }
            }
        }
        true
    }

    /// Steps until `pred` holds or `limit` of virtual time passes.
    fn run(&mut self, limit: VTime, mut pred: impl FnMut(&Cluster) -> bool) -> bool {
        let end = self.now + limit;
        while self.now <= end {
            if pred(self) {
                return true;
            }
            if !self.step() {
                break;
            }
        }
        pred(self)
    }

    /// Lets `d` of virtual time pass (the fabric runs, driven SMs too).
    fn advance(&mut self, d: VTime) {
        let until = self.now + d;
        self.run(d, |c| c.now >= until);
        self.now = self.now.max(until);
        self.fab.run_until(self.now);
    }

    fn subnet_up(&mut self, i: usize) {
        let ok = self.run(30 * SEC, |c| {
            c.sms[i]
                .events
                .iter()
                .any(|e| matches!(e, Event::SubnetUp { .. }))
        });
        assert!(ok, "SM {i} never reached SUBNET UP");
    }

    fn heavy_done(&mut self, i: usize) {
        let n = self.sms[i].events.len();
        let ok = self.run(30 * SEC, |c| {
            c.sms[i].events[n..]
                .iter()
                .any(|e| matches!(e, Event::HeavySweepComplete { .. }))
        });
        assert!(ok, "SM {i}: no heavy sweep completed");
    }
}

/// Every end port (switch port 0, cabled CA ports) with its PortInfo.
fn end_ports(c: &Cluster, t: &Topology) -> Vec<(NodeId, u8, mad::PortInfo)> {
    let mut v = Vec::new();
    for (id, _) in t.switches() {
        v.push((id, 0, c.fab.port_info(id, 0).unwrap()));
    }
    for (n, p, _) in ca_ports(t) {
        v.push((n, p, c.fab.port_info(n, p).unwrap()));
    }
    v
}

/// What a replicated state holds after applying an SM's committed intents (each one's
/// IntentDone committed): LFTs and P_Key tables in whole blocks.
fn replicated(sm: &Sm) -> (Lfts, PKeyTables) {
    let mut lfts: BTreeMap<Guid, Vec<u8>> = BTreeMap::new();
    let mut pkeys = PKeyTables::new();
    for it in program_of(sm) {
        let done = sm.intents.iter().any(|e| {
            matches!(e, IntentEvent::Done { id, failed_switches, failed_ports, .. }
                if *id == it.id && failed_switches.is_empty() && failed_ports.is_empty())
        });
        assert!(done, "intent {} not done cleanly", it.id);
        for b in &it.lft_blocks {
            let t = lfts.entry(b.switch).or_default();
            let lo = usize::from(b.block) * 64;
            if t.len() < lo + 64 {
                t.resize(lo + 64, NO_ROUTE);
            }
            t[lo..lo + 64].copy_from_slice(&b.ports);
        }
        for b in &it.pkey_blocks {
            let t = pkeys.entry((b.node, b.port)).or_default();
            let lo = usize::from(b.block) * 32;
            if t.len() < lo + 32 {
                t.resize(lo + 32, 0);
            }
            t[lo..lo + 32].copy_from_slice(&b.keys);
        }
    }
    let lfts = Lfts {
        switches: lfts
            .into_iter()
            .map(|(guid, ports)| SwitchLft {
                guid,
                lid: Lid(0),
                ports,
            })
            .collect(),
    };
    (lfts, pkeys)
}

fn sets_from(log: &[SetRecord], src: Guid, attr: u16) -> Vec<&SetRecord> {
    log.iter()
        .filter(|r| r.source == Some(src) && r.attr == attr)
        .collect()
}

fn program_of(sm: &Sm) -> Vec<&Intent> {
    sm.intents
        .iter()
        .filter_map(|e| match e {
            IntentEvent::Program(i) => Some(i),
            IntentEvent::Done { .. } => None,
        })
        .collect()
}

fn checked_up(c: &Cluster, t: &Topology) {
    for (n, p, g) in ca_ports(t) {
        let lid = c.fab.port_info(n, p).unwrap().lid;
        assert_ne!(lid.0, 0, "{g} has no LID");
        for (s, _) in t.switches() {
            assert_ne!(c.fab.lft_entry(s, lid).unwrap(), 0xFF, "no route to {g}");
        }
    }
}

#[test]
fn gated_sweep_sends_no_set_before_the_intent_is_committed() {
    let t = topo("ft2:8");
    let cas = ca_ports(&t);
    let mut c = Cluster::new(&t, 1);
    let a = c.add(cas[0].2, gated(KEY_A, vec![]));
    c.sms[a].auto_commit = false;
    assert!(c.run(10 * SEC, |c| !c.sms[a].intents.is_empty()));
    // Let virtual time run well past any timeout: still nothing written.
    c.advance(SEC);
    assert_eq!(c.sms[a].sw.phase(), Phase::AwaitIntent);
    assert!(c.fab.take_set_log().is_empty(), "a Set left before commit");
    let it = match &c.sms[a].intents[0] {
        IntentEvent::Program(i) => i.clone(),
        other => panic!("expected an intent, got {other:?}"),
    };
    assert!(!it.lft_blocks.is_empty());
    let written_pkeys = it.pkey_blocks.iter().filter(|b| !b.assumed).count();
    assert!(written_pkeys > 0 && written_pkeys < it.pkey_blocks.len());
    assert_eq!(it.port_changes.len(), t.switches().count() + cas.len());
    for pc in &it.port_changes {
        let (lo, _) = c.sms[a].sw.guid2lid().get(pc.port_guid).unwrap();
        assert_eq!(lo, pc.lid, "port change and guid2lid disagree");
        assert_eq!(pc.m_key, KEY_A);
    }
    // A wrong id is ignored; the right one releases the Sets.
    c.sms[a].sw.handle_intent_committed(c.now, it.id + 1);
    assert_eq!(c.sms[a].sw.phase(), Phase::AwaitIntent);
    c.sms[a].sw.handle_intent_committed(c.now, it.id);
    c.sms[a].auto_commit = true;
    c.subnet_up(a);
    let log = c.fab.take_set_log();
    // Exactly the intent's LFT and P_Key blocks were written.
    let written: BTreeSet<(Guid, u32)> = sets_from(&log, cas[0].2, LFT)
        .iter()
        .map(|r| (r.node_guid, r.attr_mod))
        .collect();
    let planned: BTreeSet<(Guid, u32)> = it
        .lft_blocks
        .iter()
        .map(|b| (b.switch, u32::from(b.block)))
        .collect();
    assert_eq!(written, planned);
    assert_eq!(sets_from(&log, cas[0].2, PKEY).len(), written_pkeys);
    let done = c.sms[a]
        .intents
        .iter()
        .find(|e| matches!(e, IntentEvent::Done { .. }))
        .expect("no IntentDone");
    assert_eq!(
        done,
        &IntentEvent::Done {
            id: it.id,
            failed_switches: vec![],
            failed_ports: vec![],
            lft_blocks: it.lft_blocks.len() as u64,
            pkey_blocks: written_pkeys as u64,
        }
    );
    // A quiet heavy sweep has nothing to commit: no intent, no Set.
    let n = c.sms[a].intents.len();
    c.sms[a].sw.request_sweep(c.now, true);
    c.heavy_done(a);
    assert_eq!(c.sms[a].intents.len(), n, "a quiet sweep emitted an intent");
    assert!(c.fab.take_set_log().is_empty());
}

#[test]
fn fenced_sweeper_holds_its_sets_and_sends_them_when_unfenced() {
    let t = topo("ft2:8");
    let cas = ca_ports(&t);
    let mut c = Cluster::new(&t, 2);
    let a = c.add(cas[0].2, SweeperConfig::default());
    c.sms[a].sw.set_fenced(true);
    assert!(c.run(10 * SEC, |c| matches!(
        c.sms[a].sw.phase(),
        Phase::Programming(_)
    )));
    let gets = c.sms[a]
        .sw
        .counters()
        .get(AttributeId::NODE_INFO, Method::GET);
    assert!(gets > 0, "discovery (Gets) runs while fenced");
    c.advance(SEC);
    assert!(matches!(c.sms[a].sw.phase(), Phase::Programming(_)));
    assert!(c.fab.take_set_log().is_empty(), "a Set left while fenced");
    c.sms[a].sw.set_fenced(false);
    c.subnet_up(a);
    assert!(!c.fab.take_set_log().is_empty());
    checked_up(&c, &t);
}

#[test]
fn step_down_drops_every_queued_set_and_answers_standby() {
    let t = topo("ft2:8");
    let cas = ca_ports(&t);
    let mut c = Cluster::new(&t, 3);
    let cfg = SweeperConfig {
        sm_priority: 9,
        partitions_conf: Some(POLICY.into()),
        ..SweeperConfig::default()
    };
    let a = c.add(cas[0].2, cfg);
    c.sms[a].sw.set_fenced(true);
    assert!(c.run(10 * SEC, |c| matches!(
        c.sms[a].sw.phase(),
        Phase::Programming(_)
    )));
    c.sms[a].sw.step_down();
    c.sms[a].sw.set_fenced(false);
    assert_eq!(c.sms[a].sw.role(), Role::Standby);
    assert_eq!(c.sms[a].sw.sm_state(), SmState::Standby);
    assert!(c.sms[a].sw.poll_transmit().is_none());
    c.advance(2 * SEC);
    assert!(c.fab.take_set_log().is_empty(), "a dropped Set was sent");
    assert_eq!(c.sms[a].sw.phase(), Phase::Idle);
    // SMInfo on its port (directed, one hop: the port itself) answers STANDBY.
    let q = Smp::directed(Method::GET, 0x99, AttributeId::SM_INFO, 0, &[]).unwrap();
    // As the fabric hands a request for its port to the SM.
    c.sms[a].sw.handle_mad(c.now, Lid(0), q);
    let r = c.sms[a].sw.poll_transmit().expect("SMInfo answer");
    let i: SmInfo = r.smp.attr().unwrap();
    assert_eq!(i.state(), Some(SmState::Standby));
    assert_eq!(i.priority, 9);
    assert_eq!(i.guid, cas[0].2);
    assert!(c.sms[a].sw.poll_transmit().is_none());
    // Made master again: nothing it had planned is taken as written.
    c.sms[a].sw.set_role(c.now, Role::Master);
    c.subnet_up(a);
    checked_up(&c, &t);
    for (n, p, g) in &cas {
        let keys = c.fab.pkey_table(*n, *p).unwrap();
        assert!(
            keys.iter().any(|k| k.0 == 0x8001),
            "{g}: P_Key table not written after the step-down"
        );
    }
}

#[test]
fn standby_answers_sminfo_on_the_fabric_and_sends_nothing_else() {
    let t = topo("ft2:8");
    let cas = ca_ports(&t);
    let mut c = Cluster::new(&t, 4);
    let a = c.add(
        cas[0].2,
        SweeperConfig {
            sm_priority: 5,
            ..SweeperConfig::default()
        },
    );
    c.subnet_up(a);
    let b = c.add(
        cas[4].2,
        SweeperConfig {
            role: Role::Standby,
            sm_priority: 11,
            sm_port_guid: Some(cas[4].2),
            ..SweeperConfig::default()
        },
    );
    let asker = c.fab.attach(cas[6].2).unwrap();
    let mut answers = Vec::new();
    for (k, who) in [a, b].into_iter().enumerate() {
        let (n, p) = (cas[[0, 4][k]].0, cas[[0, 4][k]].1);
        let lid = c.fab.port_info(n, p).unwrap().lid;
        let q = Smp::lid_get(0x70 + k as u64, AttributeId::SM_INFO, 0);
        c.fab.send_lid(c.now, asker, lid, &q).unwrap();
        let ok = c.run(SEC, |c| c.fab.pending(asker) > 0);
        assert!(ok, "SM {who} did not answer SMInfo");
        let (_, r) = c.fab.poll_recv(asker).unwrap();
        answers.push(r.attr::<SmInfo>().unwrap());
    }
    assert_eq!(answers[0].state(), Some(SmState::Master));
    assert_eq!(answers[0].priority, 5);
    assert_eq!(answers[0].guid, cas[0].2);
    assert_eq!(answers[1].state(), Some(SmState::Standby));
    assert_eq!(answers[1].priority, 11);
    assert_eq!(answers[1].guid, cas[4].2);
    let sent = c.sms[b].sw.counters();
    assert_eq!(sent.get(AttributeId::SM_INFO, Method::GET_RESP), 1);
    assert_eq!(
        sent.directed + sent.lid_routed,
        1,
        "a standby sends only its SMInfo answers"
    );
}

/// A (gated, key A) brings the fabric up and is killed; B takes over with what the
/// replicated state holds.
fn takeover(spec: &str, b_prev: Vec<u64>) {
    let t = topo(spec);
    let cas = ca_ports(&t);
    let mut c = Cluster::new(&t, 5);
    let a = c.add(cas[0].2, gated(KEY_A, vec![]));
    c.subnet_up(a);
    let before: Vec<(NodeId, u8, Lid)> = end_ports(&c, &t)
        .into_iter()
        .map(|(n, p, i)| (n, p, i.lid))
        .collect();
    for (_, _, i) in end_ports(&c, &t) {
        assert_eq!(i.m_key, KEY_A);
    }
    // What the log holds: guid2lid, LFTs (in whole blocks), P_Key tables, the master
    // record (key A); no pending intent (A's IntentDone was committed).
    let guid2lid = c.sms[a].sw.guid2lid().clone();
    let (lfts, pkeys) = replicated(&c.sms[a]);
    assert!(matches!(
        c.sms[a].intents.last(),
        Some(IntentEvent::Done { .. })
    ));
    c.kill(a);
    c.fab.take_set_log();
    let b_guid = cas[5].2;
    let cfg = SweeperConfig {
        guid2lid,
        known_lfts: Some(Arc::new(lfts)),
        known_pkeys: Some(Arc::new(pkeys)),
        reregister_on_takeover: false,
        intent_id_base: 2 << 32,
        ..gated(KEY_B, b_prev)
    };
    let b = c.add(b_guid, cfg);
    c.subnet_up(b);
    assert_eq!(c.sms[b].sw.ports_on_old_keys(), 0);
    let log = c.fab.take_set_log();
    assert!(
        sets_from(&log, b_guid, LFT).is_empty(),
        "takeover wrote LFTs"
    );
    assert!(
        sets_from(&log, b_guid, PKEY).is_empty(),
        "takeover wrote P_Keys"
    );
    assert!(
        program_of(&c.sms[b]).is_empty(),
        "nothing replicated changed: no intent"
    );
    // One PortInfo Set per end port (the rotation, which also points MasterSMLID at B).
    let ports = end_ports(&c, &t);
    assert_eq!(sets_from(&log, b_guid, PORT_INFO).len(), ports.len());
    let b_lid = c.sms[b].sw.sm_lid();
    assert_eq!(b_lid, c.fab.port_info(cas[5].0, cas[5].1).unwrap().lid);
    for (n, p, i) in &ports {
        assert_eq!(i.master_sm_lid, b_lid, "{n:?}/{p} MasterSMLID");
        assert_eq!(i.m_key, KEY_B, "{n:?}/{p} M_Key not rotated");
        assert_eq!(i.m_key_protect_bits, 1);
        let g = c.fab.node_guid(*n).unwrap();
        assert_eq!(c.sms[b].sw.m_key_in_force(g, *p), Some(KEY_B));
    }
    let after: Vec<(NodeId, u8, Lid)> = ports.iter().map(|(n, p, i)| (*n, *p, i.lid)).collect();
    assert_eq!(before, after, "a LID changed");
    assert!(c.sms[b].events.iter().any(|e| matches!(
        e,
        Event::LidsAssigned {
            changed: 0,
            new: 0,
            ..
        }
    )));
    checked_up(&c, &t);
    // Quiet afterwards.
    c.sms[b].sw.request_sweep(c.now, true);
    c.heavy_done(b);
    assert!(c.fab.take_set_log().is_empty());
}

#[test]
fn takeover_on_ft2_writes_no_table_keeps_lids_and_rotates_m_key() {
    takeover("ft2:8", vec![KEY_A]);
}

#[test]
fn takeover_on_ft3_writes_no_table_keeps_lids_and_rotates_m_key() {
    takeover("ft3:4", vec![KEY_A]);
}

#[test]
fn takeover_finds_the_key_in_force_among_stale_candidates() {
    // The record's key list starts with a key no port holds (a term whose master never
    // rotated anything): the hidden read moves every port on to key A.
    takeover("ft2:8", vec![0x5555, KEY_A]);
}

#[test]
fn paused_master_gets_nothing_accepted_and_its_intent_is_reapplied() {
    let t = topo("ft2:8");
    let cas = ca_ports(&t);
    let mut c = Cluster::new(&t, 6);
    let a_guid = cas[0].2;
    // A small window, so that A has Sets queued (not only in flight) when paused.
    let cfg = SweeperConfig {
        window: 2,
        ..gated(KEY_A, vec![])
    };
    let a = c.add(a_guid, cfg);
    // A commits its first intent and starts writing LFT blocks; it is paused (SIGSTOP)
    // with Sets still queued.
    assert!(c.run(10 * SEC, |c| {
        sets_from(c.fab.accounting().set_log.as_slice(), a_guid, LFT).len() >= 3
    }));
    c.sms[a].driven = false;
    assert!(matches!(c.sms[a].sw.phase(), Phase::Programming(_)));
    let it = program_of(&c.sms[a])[0].clone();
    assert!(
        !c.sms[a]
            .intents
            .iter()
            .any(|e| matches!(e, IntentEvent::Done { .. })),
        "A must be paused mid-intent"
    );
    c.advance(300 * MS);
    let a_written = sets_from(c.fab.accounting().set_log.as_slice(), a_guid, LFT).len();
    assert!(
        a_written < it.lft_blocks.len(),
        "A finished before the pause"
    );
    // B: guid2lid (committed before the intent), no programmed tables yet, A's sealed
    // intent pending, A's key in the master record.
    let b_guid = cas[5].2;
    let cfg = SweeperConfig {
        guid2lid: c.sms[a].sw.guid2lid().clone(),
        pending_intent: Some(it.clone()),
        reregister_on_takeover: false,
        intent_id_base: 2 << 32,
        ..gated(KEY_B, vec![KEY_A])
    };
    let b = c.add(b_guid, cfg);
    let b_start = c.now;
    c.subnet_up(b);
    // B re-applied exactly A's blocks and reported the intent done.
    let log = c.fab.accounting().set_log.clone();
    let b_lft: Vec<(Guid, u32)> = sets_from(&log, b_guid, LFT)
        .iter()
        .map(|r| (r.node_guid, r.attr_mod))
        .collect();
    let mut want: Vec<(Guid, u32)> = it
        .lft_blocks
        .iter()
        .map(|w| (w.switch, u32::from(w.block)))
        .collect();
    let mut got = b_lft.clone();
    want.sort_unstable();
    got.sort_unstable();
    assert_eq!(got, want, "B must write exactly the intent's LFT blocks");
    assert_eq!(sets_from(&log, b_guid, PKEY).len(), it.pkey_blocks.len());
    let done = c.sms[b]
        .intents
        .iter()
        .find_map(|e| match e {
            IntentEvent::Done {
                id,
                failed_switches,
                failed_ports,
                ..
            } => Some((*id, failed_switches.len(), failed_ports.len())),
            IntentEvent::Program(_) => None,
        })
        .expect("B reported no IntentDone");
    assert_eq!(done, (it.id, 0, 0));
    checked_up(&c, &t);
    let b_first_set = sets_from(&log, b_guid, PORT_INFO)
        .iter()
        .chain(sets_from(&log, b_guid, LFT).iter())
        .map(|r| r.time)
        .min()
        .unwrap();
    assert!(b_first_set >= b_start);
    // Resume A: whatever it had queued, and everything it tries after, is refused.
    c.sms[a].driven = true;
    let resumed = c.now;
    let drops = c.fab.accounting().counters.dropped_m_key;
    let violations = c.fab.accounting().counters.m_key_violations;
    let a_sent = c.sms[a].sw.counters().directed + c.sms[a].sw.counters().lid_routed;
    c.advance(3 * SEC);
    let log = c.fab.accounting().set_log.clone();
    let late: Vec<&SetRecord> = log
        .iter()
        .filter(|r| r.source == Some(a_guid) && r.time >= b_first_set)
        .collect();
    assert!(
        late.is_empty(),
        "A's Sets accepted after B's term began: {late:?}"
    );
    assert!(
        c.fab.accounting().counters.dropped_m_key > drops,
        "A sent nothing after resuming"
    );
    assert!(c.now > resumed);
    // Each refused SMP of A is one violation (and one trap 256 to B, repressed with the
    // right key: a repress with a wrong one would be refused and trapped again, forever).
    let a_sent = c.sms[a].sw.counters().directed + c.sms[a].sw.counters().lid_routed - a_sent;
    let v = c.fab.accounting().counters.m_key_violations - violations;
    assert!(
        v > 0 && v <= a_sent,
        "{v} violations for {a_sent} SMPs of A"
    );
    checked_up(&c, &t);
    for (_, _, i) in end_ports(&c, &t) {
        assert_eq!(i.m_key, KEY_B);
        assert_eq!(i.master_sm_lid, c.sms[b].sw.sm_lid());
    }
}

#[test]
fn paused_master_resumed_at_the_new_masters_first_set_is_held_by_its_lease() {
    let t = topo("ft2:8");
    let cas = ca_ports(&t);
    let mut c = Cluster::new(&t, 7);
    let a_guid = cas[0].2;
    let cfg = SweeperConfig {
        window: 2,
        ..gated(KEY_A, vec![])
    };
    let a = c.add(a_guid, cfg);
    c.sms[a].lease = Some(150 * MS);
    assert!(c.run(10 * SEC, |c| {
        sets_from(c.fab.accounting().set_log.as_slice(), a_guid, LFT).len() >= 3
    }));
    // SIGSTOP: A's quorum no longer answers it, so its lease is never extended again.
    c.sms[a].driven = false;
    assert!(matches!(c.sms[a].sw.phase(), Phase::Programming(_)));
    c.sms[a].lease = None;
    let it = program_of(&c.sms[a])[0].clone();
    let b_guid = cas[5].2;
    let cfg = SweeperConfig {
        guid2lid: c.sms[a].sw.guid2lid().clone(),
        pending_intent: Some(it),
        reregister_on_takeover: false,
        intent_id_base: 2 << 32,
        ..gated(KEY_B, vec![KEY_A])
    };
    // B is elected an election timeout later.
    c.advance(300 * MS);
    let b = c.add(b_guid, cfg);
    c.sms[b].lease = Some(150 * MS);
    assert!(c.run(10 * SEC, |c| {
        c.fab
            .accounting()
            .set_log
            .iter()
            .any(|r| r.source == Some(b_guid))
    }));
    let first = c
        .fab
        .accounting()
        .set_log
        .iter()
        .find(|r| r.source == Some(b_guid))
        .map(|r| r.time)
        .unwrap();
    // SIGCONT right after B's first Set, while B's rotation is still under way.
    c.sms[a].driven = true;
    let sets = |sw: &Sweeper| sw.counters().sent.iter().map(|row| row[1]).sum::<u64>();
    let a_sets = sets(&c.sms[a].sw);
    c.subnet_up(b);
    c.advance(3 * SEC);
    assert!(!c.sms[a].sw.may_write());
    let after = sets(&c.sms[a].sw);
    assert_eq!(after, a_sets, "A sent a Set past its lease");
    let log = c.fab.accounting().set_log.clone();
    let late = log
        .iter()
        .filter(|r| r.source == Some(a_guid) && r.time >= first)
        .count();
    assert_eq!(late, 0, "A's Sets accepted after B's first Set");
    checked_up(&c, &t);
}

/// The intent of a large fabric takes the Raft log long enough that the write lease lapses
/// before the commit reaches the master (ft3:36: ~30 log entries). The lease comes back on
/// the driver's side (a quorum's acknowledgement), which calls the sweeper only at the
/// times it names: while Sets wait for the lease it must name one, or they wait for ever.
#[test]
fn sets_held_by_a_lapsed_lease_leave_once_it_is_extended() {
    let t = topo("ft2:8");
    let cas = ca_ports(&t);
    let mut c = Cluster::new(&t, 1);
    let a = c.add(cas[0].2, gated(KEY_A, vec![]));
    c.sms[a].auto_commit = false;
    c.sms[a].lease = Some(200 * MS);
    assert!(c.run(10 * SEC, |c| !c.sms[a].intents.is_empty()));
    let id = match &c.sms[a].intents[0] {
        IntentEvent::Program(i) => i.id,
        other => panic!("expected an intent, got {other:?}"),
    };
    // The lease lapses while the intent is being replicated; then it is committed.
    c.sms[a].lease = None;
    let lapsed = c.now;
    c.sms[a].sw.set_lease(Some(lapsed));
    c.advance(SEC);
    c.sms[a].sw.handle_intent_committed(c.now, id);
    assert!(
        c.sms[a].sw.poll_transmit_at(c.now).is_none(),
        "a Set left without a lease"
    );
    assert!(c.fab.take_set_log().is_empty());
    // The driver extends its lease object but calls the sweeper only at its deadline.
    let due = c.sms[a].sw.poll_timeout();
    assert!(
        due.is_some_and(|t| t <= c.now + 10 * MS),
        "queued Sets held by the lease name no time to look again: {due:?}"
    );
    c.sms[a].sw.set_lease(Some(c.now + 10 * SEC));
    c.sms[a].lease = Some(200 * MS);
    c.sms[a].auto_commit = true;
    c.subnet_up(a);
}
