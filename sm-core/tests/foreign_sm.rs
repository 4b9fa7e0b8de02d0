//! Another SM on the fabric (IBA 14.4.1 priority rules): two independent sweepers attached
//! at two CA ports of one fabric-sim fabric, virtual time, deterministic. Who wrote what is
//! read from the simulator's accepted-Set log (by source port).

mod common;

use common::{ca_ports, topo};
use fabric::{Guid, Lid, NodeId, Topology};
use fabric_sim::{AttachId, Fault, SetRecord, SimConfig, SimFabric};
use mad::{AttributeId, LinearForwardingTable, Method, SmInfo, SmState, Smp};
use sm_core::{Event, Sweeper, SweeperConfig, VTime, route_inline};

const SEC: VTime = 1_000_000_000;
const MS: VTime = 1_000_000;
const LFT: u16 = 0x19;
const INTERVAL: VTime = 200 * MS;

struct Sm {
    at: AttachId,
    sw: Sweeper,
    alive: bool,
    /// (virtual time, event) of every event but RoutingNeeded.
    events: Vec<(VTime, Event)>,
}

/// A scripted SM port: answers every SMInfo Get and Set with `info` (status 0), never
/// changes state, never sends anything else (an SM that does not take a HANDOVER).
struct Stub {
    at: AttachId,
    info: SmInfo,
    /// (virtual time, request) of every SMInfo Set received.
    sets: Vec<(VTime, Smp)>,
}

struct Fabric {
    fab: SimFabric,
    now: VTime,
    sms: Vec<Sm>,
    stubs: Vec<Stub>,
}

fn cfg(priority: u8) -> SweeperConfig {
    SweeperConfig {
        sm_priority: priority,
        sweep_interval: INTERVAL,
        ..SweeperConfig::default()
    }
}

impl Fabric {
    fn new(t: &Topology) -> Fabric {
        let fab = SimFabric::new(
            t,
            SimConfig {
                seed: 11,
                ..SimConfig::default()
            },
        )
        .unwrap();
        Fabric {
            fab,
            now: 0,
            sms: Vec::new(),
            stubs: Vec::new(),
        }
    }

    fn add(&mut self, guid: Guid, cfg: SweeperConfig) -> usize {
        let at = self.fab.attach(guid).unwrap();
        // Its first heavy sweep is due at once (poll_timeout 0 <= now).
        let sw = Sweeper::new(cfg).unwrap();
        self.sms.push(Sm {
            at,
            sw,
            alive: true,
            events: Vec::new(),
        });
        self.sms.len() - 1
    }

    /// The SM process is gone: its attachment (and IsSM) too.
    fn kill(&mut self, i: usize) {
        self.sms[i].alive = false;
        self.fab.detach(self.sms[i].at).unwrap();
    }

    fn step(&mut self) -> bool {
        for sm in self.sms.iter_mut().filter(|s| s.alive) {
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
        for sm in self.sms.iter_mut().filter(|s| s.alive) {
            if let Some(t) = sm.sw.poll_timeout() {
                next = Some(next.map_or(t, |n| n.min(t)));
            }
        }
        let Some(next) = next else { return false };
        self.now = self.now.max(next);
        self.fab.run_until(self.now);
        let now = self.now;
        for st in &mut self.stubs {
            while let Some(r) = self.fab.poll_recv_full(st.at) {
                let q = r.smp;
                if q.is_response() || q.attr_id != AttributeId::SM_INFO {
                    continue;
                }
                if q.method == Method::SET {
                    st.sets.push((now, q.clone()));
                }
                let mut a = q.make_response();
                a.set_attr(&st.info);
                if a.is_directed() {
                    self.fab.send(now, st.at, &a).unwrap();
                } else {
                    self.fab.send_lid(now, st.at, r.slid, &a).unwrap();
                }
            }
        }
        for sm in self.sms.iter_mut().filter(|s| s.alive) {
            while let Some(r) = self.fab.poll_recv_full(sm.at) {
                sm.sw.handle_mad(now, r.slid, r.smp);
            }
            if matches!(sm.sw.poll_timeout(), Some(t) if t <= now) {
                sm.sw.handle_timeout(now);
            }
            while let Some(ev) = sm.sw.poll_event() {
                match ev {
                    Event::RoutingNeeded(job) => {
                        let r = route_inline(&job);
                        sm.sw.handle_routing_result(now, r);
                    }
                    other => {
                        assert!(sm.events.len() < 100_000, "event storm");
                        sm.events.push((now, other));
                    }
                }
            }
        }
        true
    }

    fn run(&mut self, limit: VTime, mut pred: impl FnMut(&Fabric) -> bool) -> bool {
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

    fn advance(&mut self, d: VTime) {
        let until = self.now + d;
        self.run(d, |f| f.now >= until);
    }

    fn first(&self, i: usize, pred: impl Fn(&Event) -> bool) -> Option<VTime> {
        self.sms[i]
            .events
            .iter()
            .find(|(_, e)| pred(e))
            .map(|(t, _)| *t)
    }

    fn wait_for(&mut self, i: usize, what: &str, pred: impl Fn(&Event) -> bool + Copy) -> VTime {
        let ok = self.run(30 * SEC, |f| f.first(i, pred).is_some());
        assert!(ok, "SM {i} never saw {what}; log:\n{}", self.log(i));
        self.first(i, pred).unwrap()
    }

    fn log(&self, i: usize) -> String {
        self.sms[i]
            .events
            .iter()
            .map(|(t, e)| format!("{:>8} ms {e}", t / MS))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Accepted Sets sent from `guid`'s port.
    fn sets_from(log: &[SetRecord], guid: Guid) -> Vec<&SetRecord> {
        log.iter().filter(|r| r.source == Some(guid)).collect()
    }
}

fn subnet_up(e: &Event) -> bool {
    matches!(e, Event::SubnetUp { .. })
}

fn stands_by(e: &Event) -> bool {
    matches!(e, Event::ForeignMaster { .. })
}

/// Two CA ports on different leaves of a 2-level fat tree.
fn two_ports(t: &Topology) -> (Guid, Guid) {
    let cas = ca_ports(t);
    (cas[0].2, cas[cas.len() - 1].2)
}

fn check_routes(f: &Fabric, t: &Topology) {
    for &(n, p, g) in &ca_ports(t) {
        let lid = f.fab.port_info(n, p).unwrap().lid;
        assert_ne!(lid.0, 0, "{g} has no LID");
        for (sid, _) in t.switches() {
            assert_ne!(f.fab.lft_entry(sid, lid).unwrap(), 0xFF, "no route to {g}");
        }
    }
}

/// (a) B outranks A. B masters first, then A starts: A stands by without a single Set and
/// polls B. Then both start at the same instant: both may program their first sweep (each
/// sees the other DISCOVERING), A notices B's MASTER at its next light sweep, stands by,
/// and sends no Set after that.
#[test]
fn lower_priority_sm_stands_by_and_writes_nothing() {
    let t = topo("ft2:4");
    let (ga, gb) = two_ports(&t);

    // B first.
    let mut f = Fabric::new(&t);
    let b = f.add(gb, cfg(10));
    f.wait_for(b, "SUBNET UP", subnet_up);
    f.fab.take_set_log();
    let a = f.add(ga, cfg(0));
    f.wait_for(a, "STANDBY", stands_by);
    assert_eq!(f.sms[a].sw.foreign_master(), Some((gb, 10)));
    assert_eq!(f.sms[a].sw.sm_state(), SmState::Standby);
    // Ten more sweep intervals: A keeps standing by, B keeps mastering.
    let polls_before = f.sms[a].sw.counters().sent[6][0];
    f.advance(10 * INTERVAL);
    let log = f.fab.take_set_log();
    assert!(
        Fabric::sets_from(&log, ga).is_empty(),
        "A wrote while B was master: {:?}",
        Fabric::sets_from(&log, ga)
    );
    assert_eq!(f.sms[a].sw.sm_state(), SmState::Standby);
    assert!(!f.sms[a].sw.is_subnet_up());
    let polls = f.sms[a].sw.counters().sent[6][0] - polls_before;
    assert!(
        (8..=12).contains(&polls),
        "A polls B once per interval: {polls} SMInfo Gets in 10 intervals"
    );
    assert_eq!(f.sms[b].sw.sm_state(), SmState::Master);
    // B's next heavy sweep (light sweeps ask only the SMs heavy sweeps found) sees A as
    // STANDBY, and B carries on.
    let now = f.now;
    f.sms[b].sw.request_sweep(now, true);
    let n = f.sms[b].events.len();
    let ok = f.run(30 * SEC, |f| {
        f.sms[b].events[n..]
            .iter()
            .any(|(_, e)| matches!(e, Event::HeavySweepComplete { .. }))
    });
    assert!(ok, "B's requested heavy sweep did not complete");
    assert!(f.sms[b].events[n..].iter().any(|(_, e)| matches!(e,
        Event::OtherSms(v) if v.iter().any(|r| r.port_guid == ga && r.state == Some(SmState::Standby))
    )));
    check_routes(&f, &t);

    // Both at once.
    let mut f = Fabric::new(&t);
    let a = f.add(ga, cfg(0));
    let b = f.add(gb, cfg(10));
    let yielded = f.wait_for(a, "STANDBY", stands_by);
    f.advance(10 * INTERVAL);
    let log = f.fab.take_set_log();
    let late: Vec<_> = Fabric::sets_from(&log, ga)
        .into_iter()
        .filter(|r| r.time > yielded)
        .collect();
    assert!(late.is_empty(), "A wrote after standing by: {late:?}");
    assert_eq!(f.sms[a].sw.sm_state(), SmState::Standby);
    assert_eq!(f.sms[b].sw.sm_state(), SmState::Master);
    assert!(f.sms[b].sw.foreign_master().is_none());
    // B's latest word is in force: every port names B's LID as master SM.
    let b_lid = f.sms[b].sw.sm_lid();
    for &(n, p, g) in &ca_ports(&t) {
        assert_eq!(f.fab.port_info(n, p).unwrap().master_sm_lid, b_lid, "{g}");
    }
    check_routes(&f, &t);
}

/// (b) A outranks B: A keeps mastering and programs; B stands by and writes nothing after.
#[test]
fn higher_priority_sm_keeps_master() {
    let t = topo("ft2:4");
    let (ga, gb) = two_ports(&t);
    let mut f = Fabric::new(&t);
    let a = f.add(ga, cfg(12));
    let b = f.add(gb, cfg(3));
    f.wait_for(a, "SUBNET UP", subnet_up);
    let yielded = f.wait_for(b, "STANDBY", stands_by);
    f.advance(10 * INTERVAL);
    assert_eq!(f.sms[a].sw.sm_state(), SmState::Master);
    assert!(f.sms[a].sw.foreign_master().is_none());
    assert_eq!(f.sms[b].sw.sm_state(), SmState::Standby);
    assert_eq!(f.sms[b].sw.foreign_master(), Some((ga, 12)));
    let log = f.fab.take_set_log();
    assert!(
        !Fabric::sets_from(&log, ga).is_empty(),
        "A programmed the fabric"
    );
    let late: Vec<_> = Fabric::sets_from(&log, gb)
        .into_iter()
        .filter(|r| r.time > yielded)
        .collect();
    assert!(late.is_empty(), "B wrote after standing by: {late:?}");
    let a_lid = f.sms[a].sw.sm_lid();
    for &(n, p, g) in &ca_ports(&t) {
        assert_eq!(f.fab.port_info(n, p).unwrap().master_sm_lid, a_lid, "{g}");
    }
    check_routes(&f, &t);
    // A is not confused by B: no ForeignMaster event on A at all.
    assert!(f.first(a, stands_by).is_none());
}

/// (c) The master disappears: the standby notices within its poll bound, sweeps as master,
/// programs, and rewrites no LFT block that already holds what it wants.
#[test]
fn standby_takes_over_when_master_goes_and_keeps_right_lft_blocks() {
    let t = topo("ft2:4");
    let (ga, gb) = two_ports(&t);
    let mut f = Fabric::new(&t);
    let b = f.add(gb, cfg(10));
    f.wait_for(b, "SUBNET UP", subnet_up);
    let a = f.add(ga, cfg(0));
    f.wait_for(a, "STANDBY", stands_by);
    f.advance(3 * INTERVAL);

    // Someone scribbles over LFT block 0 of the first CA's leaf switch (a rogue
    // directed-route Set from another CA port): the one block A must rewrite.
    let cas = ca_ports(&t);
    let mut smp = Smp::directed(
        Method::SET,
        0x77,
        AttributeId::LINEAR_FORWARDING_TABLE,
        0,
        &[cas[0].1],
    )
    .unwrap();
    smp.set_attr(&LinearForwardingTable { ports: [0xFF; 64] });
    let now = f.now;
    f.fab
        .inject(
            now,
            Fault::Rogue {
                port_guid: cas[1].2,
                dlid: Lid::PERMISSIVE,
                smp: Box::new(smp),
            },
        )
        .unwrap();
    f.advance(INTERVAL);

    // The LFTs B left, block by block.
    let switches: Vec<NodeId> = t.switches().map(|(id, _)| id).collect();
    let before: Vec<Vec<u8>> = switches.iter().map(|&s| f.fab.lft(s).unwrap()).collect();
    f.fab.take_set_log();
    let killed = f.now;
    f.kill(b);
    let gone = f.wait_for(a, "master gone", |e| {
        matches!(e, Event::ForeignMasterGone { .. })
    });
    // Bound: foreign_poll_misses (3) polls, one per interval, each given up after its
    // resends (timeout 20 ms x 9), plus the interval already running.
    let cfg = SweeperConfig::default();
    let bound = 4 * INTERVAL + 3 * (u64::from(cfg.retries) + 1) * cfg.timeout;
    assert!(
        gone - killed <= bound,
        "noticed after {} ms (bound {} ms)",
        (gone - killed) / MS,
        bound / MS
    );
    let up = f.wait_for(a, "SUBNET UP", subnet_up);
    assert!(up > gone);
    assert_eq!(f.sms[a].sw.sm_state(), SmState::Master);
    assert!(f.sms[a].sw.foreign_master().is_none());
    check_routes(&f, &t);
    let a_lid = f.sms[a].sw.sm_lid();
    for &(n, p, g) in &ca_ports(&t) {
        assert_eq!(f.fab.port_info(n, p).unwrap().master_sm_lid, a_lid, "{g}");
    }

    // Every LFT block A wrote differed from what B had left there.
    let log = f.fab.take_set_log();
    let lft_sets: Vec<_> = Fabric::sets_from(&log, ga)
        .into_iter()
        .filter(|r| r.attr == LFT)
        .collect();
    for r in &lft_sets {
        let k = switches.iter().position(|&s| s == r.node).unwrap();
        let lo = r.attr_mod as usize * 64;
        let old = &before[k][lo.min(before[k].len())..(lo + 64).min(before[k].len())];
        let new = f.fab.lft(r.node).unwrap();
        let new = &new[lo.min(new.len())..(lo + 64).min(new.len())];
        assert_ne!(old, new, "A rewrote a right LFT block: {r:?}");
    }
    let (read, kept) = f.sms[a]
        .events
        .iter()
        .find_map(|(_, e)| match e {
            Event::LftsChecked { read, kept } => Some((*read, *kept)),
            _ => None,
        })
        .expect("an LFT check after the foreign master");
    assert_eq!(read - kept, lft_sets.len(), "writes = blocks found wrong");
    assert_eq!(lft_sets.len(), 1, "only the scribbled block: {lft_sets:?}");
    assert_eq!(lft_sets[0].attr_mod, 0);
    // Quiet afterwards: light sweeps find nothing to do (the LinearFDBTop B left is what
    // A records), so no heavy sweep and no Set follows.
    let heavies = |f: &Fabric| {
        f.sms[a]
            .events
            .iter()
            .filter(|(_, e)| matches!(e, Event::HeavySweepStarted { .. }))
            .count()
    };
    let n = heavies(&f);
    f.advance(5 * INTERVAL);
    assert_eq!(heavies(&f), n, "{}", f.log(a));
    assert!(Fabric::sets_from(&f.fab.take_set_log(), ga).is_empty());
    println!(
        "takeover: noticed after {} ms, {read} LFT blocks read back, {kept} kept, {} written",
        (gone - killed) / MS,
        lft_sets.len()
    );
}

/// A foreign SM that stays DISCOVERING, or one of the SM's own cluster, changes nothing.
#[test]
fn peers_and_lower_sms_change_nothing() {
    let t = topo("ft2:4");
    let (ga, gb) = two_ports(&t);
    let mut f = Fabric::new(&t);
    // B outranks A but is listed as A's cluster peer: A never asks it.
    let a = f.add(
        ga,
        SweeperConfig {
            peer_sms: vec![gb],
            ..cfg(0)
        },
    );
    let b = f.add(gb, cfg(10));
    f.wait_for(a, "SUBNET UP", subnet_up);
    f.wait_for(b, "SUBNET UP", subnet_up);
    f.advance(5 * INTERVAL);
    assert!(f.first(a, stands_by).is_none(), "{}", f.log(a));
    assert!(
        !f.sms[a]
            .events
            .iter()
            .any(|(_, e)| matches!(e, Event::OtherSms(_)))
    );
    // The rules off: the same.
    let mut f = Fabric::new(&t);
    let a = f.add(
        ga,
        SweeperConfig {
            obey_foreign_sms: false,
            ..cfg(0)
        },
    );
    let _b = f.add(gb, cfg(10));
    f.wait_for(a, "SUBNET UP", subnet_up);
    f.advance(5 * INTERVAL);
    assert!(f.first(a, stands_by).is_none());
    assert_eq!(f.sms[a].sw.sm_state(), SmState::Master);
}

/// The SM_Key goes into an SMInfo answer only for an authenticated requester (its SMP
/// carries this SM's M_Key, any SMP while the M_Key is 0, or it presented the SM_Key):
/// OpenSM ignores an SM whose answer lacks its own key (default 1).
#[test]
fn sm_key_goes_only_to_authenticated_requesters() {
    for (m_key, smp_m_key, presented, want) in [
        (0, 0, 0, 1),
        (0xAB, 0, 0, 0),
        (0xAB, 0xAB, 0, 1),
        (0xAB, 0, 1, 1),
    ] {
        let mut sw = Sweeper::new(SweeperConfig {
            m_key,
            ..SweeperConfig::default()
        })
        .unwrap();
        assert_eq!(sw.config().sm_key, 1, "OpenSM's default SM_Key");
        let mut q = Smp::lid_get(7, AttributeId::SM_INFO, 0);
        q.m_key = smp_m_key;
        q.set_attr(&SmInfo {
            sm_key: presented,
            ..SmInfo::default()
        });
        sw.handle_mad(0, Lid(3), q);
        let tx = sw.poll_transmit().expect("an SMInfo answer");
        assert_eq!(tx.dlid, Lid(3));
        let a: SmInfo = tx.smp.attr().unwrap();
        assert_eq!(
            a.sm_key, want,
            "M_Key {m_key:#x}, SMP M_Key {smp_m_key:#x}, presented {presented}"
        );
    }
}

/// The followed master stops reporting MASTER (it stepped down: answers STANDBY), or hangs
/// (attached but silent: every poll times out): either way the standby sweeps as master.
#[test]
fn standby_takes_over_from_a_master_that_steps_down_or_hangs() {
    let t = topo("ft2:4");
    let (ga, gb) = two_ports(&t);
    for hang in [false, true] {
        let mut f = Fabric::new(&t);
        let b = f.add(gb, cfg(10));
        f.wait_for(b, "SUBNET UP", subnet_up);
        let a = f.add(ga, cfg(0));
        f.wait_for(a, "STANDBY", stands_by);
        if hang {
            // Still attached (IsSM set), never answers again: like SIGSTOP.
            f.sms[b].alive = false;
        } else {
            f.sms[b].sw.step_down();
        }
        let gone = f.wait_for(a, "master gone", |e| {
            matches!(e, Event::ForeignMasterGone { .. })
        });
        let ev = &f.sms[a].events.iter().find(|(t, _)| *t == gone).unwrap().1;
        match (hang, ev) {
            (
                false,
                Event::ForeignMasterGone {
                    state,
                    missed_polls,
                    ..
                },
            ) => {
                assert_eq!(*state, Some(SmState::Standby));
                assert_eq!(*missed_polls, 0);
            }
            (true, Event::ForeignMasterGone { missed_polls, .. }) => {
                assert_eq!(*missed_polls, SweeperConfig::default().foreign_poll_misses);
            }
            _ => unreachable!(),
        }
        f.wait_for(a, "SUBNET UP", subnet_up);
        assert_eq!(f.sms[a].sw.sm_state(), SmState::Master);
        check_routes(&f, &t);
        // The LFTs B left were right: none rewritten.
        let log = f.fab.take_set_log();
        assert!(
            !Fabric::sets_from(&log, ga).iter().any(|r| r.attr == LFT),
            "hang {hang}: A rewrote LFT blocks B left right"
        );
    }
}

fn count(f: &Fabric, i: usize, pred: impl Fn(&Event) -> bool) -> usize {
    f.sms[i].events.iter().filter(|(_, e)| pred(e)).count()
}

fn handover_event(e: &Event) -> bool {
    matches!(
        e,
        Event::HandoverSent { .. }
            | Event::HandoverTaken { .. }
            | Event::HandoverFailed { .. }
            | Event::HandoverReceived { .. }
            | Event::SmInfoSetRefused { .. }
            | Event::SmInfoSetApplied { .. }
    )
}

/// Handover (a): A masters at priority 0, B starts at priority 15. B, DISCOVERING, finds
/// A's MASTER and stands by although it outranks A (IBA 14.4), telling A with a trap 144;
/// A's heavy sweep finds B STANDBY and outranking, sends HANDOVER and writes nothing more;
/// B answers, ACKNOWLEDGEs and sweeps as master reading LFT blocks back (A's are right:
/// none rewritten); A stands by for B and sends no Set after the handover.
#[test]
fn master_hands_over_to_a_higher_standby() {
    let t = topo("ft2:4");
    let (ga, gb) = two_ports(&t);
    let mut f = Fabric::new(&t);
    let a = f.add(ga, cfg(0));
    f.wait_for(a, "SUBNET UP", subnet_up);
    f.advance(2 * INTERVAL);
    f.fab.take_set_log();
    let b_start = f.now;
    let b = f.add(gb, cfg(15));
    let b_standby = f.wait_for(b, "STANDBY", stands_by);
    assert_eq!(
        f.first(b, subnet_up),
        None,
        "B programmed before standing by"
    );
    let sent = f.wait_for(
        a,
        "HANDOVER sent",
        |e| matches!(e, Event::HandoverSent { guid, priority: 15 } if *guid == gb),
    );
    assert!(sent > b_standby);
    let got = f.wait_for(
        b,
        "HANDOVER received",
        |e| matches!(e, Event::HandoverReceived { guid, acknowledged: true } if *guid == ga),
    );
    let taken = f.wait_for(
        a,
        "handover taken",
        |e| matches!(e, Event::HandoverTaken { guid, acknowledged: true } if *guid == gb),
    );
    assert!(got >= sent && taken >= got);
    let up = f.wait_for(b, "SUBNET UP", subnet_up);
    assert!(up > got);
    f.advance(10 * INTERVAL);
    assert_eq!(f.sms[b].sw.sm_state(), SmState::Master);
    assert!(f.sms[b].sw.foreign_master().is_none());
    assert_eq!(f.sms[a].sw.sm_state(), SmState::Standby);
    assert_eq!(f.sms[a].sw.foreign_master(), Some((gb, 15)));
    // A sent no Set after the handover (A's HANDOVER itself is an SMInfo Set to B's SM,
    // not to an SMA: the simulator's log holds SMA Sets only), and none after B appeared.
    let log = f.fab.take_set_log();
    let from_a = Fabric::sets_from(&log, ga);
    assert!(from_a.is_empty(), "A wrote after B appeared: {from_a:?}");
    // B read the LFT blocks back and rewrote none (A left them right).
    assert!(
        !Fabric::sets_from(&log, gb).iter().any(|r| r.attr == LFT),
        "B rewrote LFT blocks"
    );
    let (read, kept) = f.sms[b]
        .events
        .iter()
        .find_map(|(_, e)| match e {
            Event::LftsChecked { read, kept } => Some((*read, *kept)),
            _ => None,
        })
        .expect("B's LFT check");
    assert!(read > 0);
    assert_eq!(read, kept);
    let b_lid = f.sms[b].sw.sm_lid();
    for &(n, p, g) in &ca_ports(&t) {
        assert_eq!(f.fab.port_info(n, p).unwrap().master_sm_lid, b_lid, "{g}");
    }
    check_routes(&f, &t);
    // Exactly one handover, no refusal, no second round.
    assert_eq!(count(&f, a, |e| matches!(e, Event::HandoverSent { .. })), 1);
    assert_eq!(
        count(&f, b, |e| matches!(e, Event::SmInfoSetRefused { .. })),
        0
    );
    assert_eq!(
        count(&f, a, |e| matches!(e, Event::SmInfoSetRefused { .. })),
        0
    );
    println!(
        "handover (virtual time): B stood by {} us after it started, A sent HANDOVER {} us later, B up {} us after it; B read back {read} LFT blocks, rewrote 0",
        (b_standby - b_start) / 1000,
        (sent - b_standby) / 1000,
        (up - got) / 1000
    );
}

/// Handover (b): the reverse start order. B (15) masters, A (0) starts and stands by for
/// it; nothing else happens: no HANDOVER either way, A sends no Set, B stays MASTER
/// through its next heavy sweep.
#[test]
fn lower_sm_stands_by_and_no_handover_follows() {
    let t = topo("ft2:4");
    let (ga, gb) = two_ports(&t);
    let mut f = Fabric::new(&t);
    let b = f.add(gb, cfg(15));
    f.wait_for(b, "SUBNET UP", subnet_up);
    f.fab.take_set_log();
    let a = f.add(ga, cfg(0));
    f.wait_for(a, "STANDBY", stands_by);
    f.advance(5 * INTERVAL);
    let now = f.now;
    f.sms[b].sw.request_sweep(now, true);
    f.advance(10 * INTERVAL);
    for i in [a, b] {
        assert_eq!(count(&f, i, handover_event), 0, "{}", f.log(i));
    }
    assert_eq!(f.sms[a].sw.sm_state(), SmState::Standby);
    assert_eq!(f.sms[b].sw.sm_state(), SmState::Master);
    assert!(Fabric::sets_from(&f.fab.take_set_log(), ga).is_empty());
}

/// Handover (c): a HANDOVER whose SM_Key is not the receiver's is refused. A (priority 0,
/// SM_Key 2) masters, B (priority 15, SM_Key 1) stands by; A's HANDOVER is answered with
/// an error status and changes nothing at B; A takes the error as the end of the
/// handover, returns to MASTER at once (before B's next poll), sweeps again and does not
/// hand over to B again.
#[test]
fn handover_with_a_wrong_sm_key_is_refused() {
    let t = topo("ft2:4");
    let (ga, gb) = two_ports(&t);
    let mut f = Fabric::new(&t);
    let a = f.add(
        ga,
        SweeperConfig {
            sm_key: 2,
            ..cfg(0)
        },
    );
    f.wait_for(a, "SUBNET UP", subnet_up);
    let b = f.add(gb, cfg(15));
    f.wait_for(b, "STANDBY", stands_by);
    f.wait_for(a, "HANDOVER sent", |e| {
        matches!(e, Event::HandoverSent { .. })
    });
    f.wait_for(
        b,
        "refusal",
        |e| matches!(e, Event::SmInfoSetRefused { guid, modifier: 1, .. } if *guid == ga),
    );
    f.wait_for(
        a,
        "handover failed",
        |e| matches!(e, Event::HandoverFailed { guid, polls: 0 } if *guid == gb),
    );
    f.advance(12 * INTERVAL);
    assert_eq!(
        f.sms[a].sw.sm_state(),
        SmState::Master,
        "{}\n----\n{}",
        f.log(a),
        f.log(b)
    );
    assert!(f.sms[a].sw.is_subnet_up());
    assert!(f.sms[a].sw.foreign_master().is_none());
    assert_eq!(f.sms[b].sw.sm_state(), SmState::Standby);
    assert_eq!(f.sms[b].sw.foreign_master(), Some((ga, 0)));
    assert_eq!(
        count(&f, b, |e| matches!(e, Event::HandoverReceived { .. })),
        0
    );
    assert_eq!(count(&f, a, |e| matches!(e, Event::HandoverSent { .. })), 1);
    assert!(f.first(b, subnet_up).is_none(), "B programmed");
    assert_eq!(
        count(&f, b, |e| matches!(e, Event::ForeignMasterGone { .. })),
        0,
        "B took A's STANDBY while handing over for a master stepping down"
    );
    check_routes(&f, &t);
}

/// Handover (d): no ACKNOWLEDGE. A masters; an SM at another port answers STANDBY,
/// priority 15, to everything (it takes the HANDOVER Set but never takes over). A sends
/// one HANDOVER (modifier 1, its own SMInfo: state MASTER, SM_Key 1), writes nothing while
/// it waits, polls it `foreign_poll_misses` times, says the handover failed, and sweeps
/// on as MASTER without handing over to it again.
#[test]
fn no_acknowledge_master_stays_master() {
    let t = topo("ft2:4");
    let (ga, gb) = two_ports(&t);
    let mut f = Fabric::new(&t);
    let a = f.add(ga, cfg(0));
    f.wait_for(a, "SUBNET UP", subnet_up);
    let at = f.fab.attach(gb).unwrap();
    f.stubs.push(Stub {
        at,
        info: SmInfo {
            guid: gb,
            sm_key: 1,
            act_count: 0,
            priority: 15,
            sm_state: SmState::Standby.to_wire(),
        },
        sets: Vec::new(),
    });
    let now = f.now;
    f.sms[a].sw.request_sweep(now, true);
    let sent = f.wait_for(a, "HANDOVER sent", |e| {
        matches!(e, Event::HandoverSent { .. })
    });
    f.fab.take_set_log();
    let failed = f.wait_for(
        a,
        "handover failed",
        |e| matches!(e, Event::HandoverFailed { guid, polls: 3 } if *guid == gb),
    );
    let waited = f.fab.take_set_log();
    assert!(
        Fabric::sets_from(&waited, ga).is_empty(),
        "A wrote while waiting for the handover: {waited:?}"
    );
    let misses = u64::from(SweeperConfig::default().foreign_poll_misses);
    assert!(failed - sent >= misses * INTERVAL && failed - sent <= (misses + 1) * INTERVAL);
    f.advance(10 * INTERVAL);
    assert_eq!(f.sms[a].sw.sm_state(), SmState::Master);
    assert!(f.sms[a].sw.foreign_master().is_none());
    assert_eq!(count(&f, a, |e| matches!(e, Event::HandoverSent { .. })), 1);
    assert_eq!(
        count(&f, a, |e| matches!(e, Event::HandoverTaken { .. })),
        0
    );
    // The one HANDOVER the stub got.
    let sets = &f.stubs[0].sets;
    assert_eq!(sets.len(), 1, "{sets:?}");
    let (_, q) = &sets[0];
    assert_eq!(q.attr_mod, SmInfo::MOD_HANDOVER);
    let p: SmInfo = q.attr().unwrap();
    assert_eq!(
        (p.guid, p.priority, p.state(), p.sm_key),
        (ga, 0, Some(SmState::Master), 1)
    );
    check_routes(&f, &t);
}

/// The checks on a SubnSet(SMInfo) reaching this SM's port, on a sweeper that has not
/// swept (DISCOVERING, standing by for nobody): status of the answer and the event.
#[test]
fn sm_info_set_checks() {
    const REFUSED: u16 = 0x1C;
    let set = |modifier: u32, state: SmState, sm_key: u64, m_key: u64| {
        let mut q = Smp::lid_get(9, AttributeId::SM_INFO, modifier);
        q.method = Method::SET;
        q.m_key = m_key;
        q.set_attr(&SmInfo {
            guid: Guid(0x77),
            sm_key,
            act_count: 1,
            priority: 3,
            sm_state: state.to_wire(),
        });
        q
    };
    // (config, request, answer status or None: no answer, what the event says)
    let on = SweeperConfig::default();
    let keyed = SweeperConfig {
        m_key: 0xAB,
        ..SweeperConfig::default()
    };
    let off = SweeperConfig {
        obey_foreign_sms: false,
        ..SweeperConfig::default()
    };
    type Case = (
        &'static str,
        SweeperConfig,
        Smp,
        Option<u16>,
        Option<&'static str>,
    );
    let cases: Vec<Case> = vec![
        (
            "HANDOVER from a MASTER while DISCOVERING: taken",
            on.clone(),
            set(1, SmState::Master, 1, 0),
            Some(0),
            Some("received HANDOVER from"),
        ),
        (
            "HANDOVER from a STANDBY",
            on.clone(),
            set(1, SmState::Standby, 1, 0),
            Some(REFUSED),
            Some("the sender is not MASTER"),
        ),
        (
            "HANDOVER with a wrong SM_Key",
            on.clone(),
            set(1, SmState::Master, 5, 0),
            Some(REFUSED),
            Some("its SM_Key is not ours"),
        ),
        (
            "ACKNOWLEDGE from a MASTER",
            on.clone(),
            set(2, SmState::Master, 1, 0),
            Some(REFUSED),
            Some("an ACKNOWLEDGE comes from a STANDBY SM"),
        ),
        (
            "ACKNOWLEDGE nobody waits for: like a Get",
            on.clone(),
            set(2, SmState::Standby, 1, 0),
            Some(0),
            None,
        ),
        (
            "DISCOVER from a master this SM does not follow",
            on.clone(),
            set(5, SmState::Master, 1, 0),
            Some(REFUSED),
            Some("not from the master this SM stands by for"),
        ),
        (
            "STANDBY while not NOT-ACTIVE",
            on.clone(),
            set(4, SmState::Master, 1, 0),
            Some(REFUSED),
            Some("only when NOT-ACTIVE"),
        ),
        (
            "M_Key set, Set without it: no answer",
            keyed.clone(),
            set(1, SmState::Master, 1, 0),
            None,
            None,
        ),
        (
            "M_Key set, Set with it: taken",
            keyed,
            set(1, SmState::Master, 1, 0xAB),
            Some(0),
            Some("received HANDOVER from"),
        ),
        (
            "rules off: like a Get",
            off,
            set(1, SmState::Master, 1, 0),
            Some(0),
            None,
        ),
    ];
    for (what, cfg, q, status, event) in cases {
        let mut sw = Sweeper::new(cfg).unwrap();
        sw.handle_mad(0, Lid(3), q);
        let answer = std::iter::from_fn(|| sw.poll_transmit())
            .find(|t| t.smp.attr_id == AttributeId::SM_INFO && t.smp.is_response());
        assert_eq!(answer.as_ref().map(|t| t.smp.status), status, "{what}");
        if let Some(t) = &answer {
            assert_eq!(t.dlid, Lid(3), "{what}");
        }
        let said: Vec<String> = std::iter::from_fn(|| sw.poll_event())
            .filter(handover_event)
            .map(|e| e.to_string())
            .collect();
        match event {
            Some(text) => assert!(
                said.len() == 1 && said[0].contains(text),
                "{what}: {said:?}"
            ),
            None => assert!(said.is_empty(), "{what}: {said:?}"),
        }
    }
}

/// DISABLE, STANDBY and DISCOVER from the followed master (SubnSet(SMInfo) as A would send
/// them, handed to B's sweeper): DISABLE makes B NOT-ACTIVE (no poll, nothing sent);
/// STANDBY makes it STANDBY polling A again; DISCOVER makes it sweep (DISCOVERING, then
/// it finds A's MASTER and stands by again without writing).
#[test]
fn disable_standby_discover_from_the_master() {
    let t = topo("ft2:4");
    let (ga, gb) = two_ports(&t);
    let mut f = Fabric::new(&t);
    let a = f.add(ga, cfg(10));
    f.wait_for(a, "SUBNET UP", subnet_up);
    let b = f.add(gb, cfg(0));
    f.wait_for(b, "STANDBY", stands_by);
    f.fab.take_set_log();
    let from_a = |modifier: u32| {
        let mut q = Smp::lid_get(0x55, AttributeId::SM_INFO, modifier);
        q.method = Method::SET;
        q.set_attr(&SmInfo {
            guid: ga,
            sm_key: 1,
            act_count: 1,
            priority: 10,
            sm_state: SmState::Master.to_wire(),
        });
        q
    };
    let applied = |f: &Fabric, m: u32| {
        count(
            f,
            b,
            |e| matches!(e, Event::SmInfoSetApplied { modifier, .. } if *modifier == m),
        )
    };
    let a_lid = f.sms[a].sw.sm_lid();
    // DISABLE: NOT-ACTIVE, and B sends nothing at all for 10 intervals.
    let now = f.now;
    f.sms[b]
        .sw
        .handle_mad(now, a_lid, from_a(SmInfo::MOD_DISABLE));
    f.advance(INTERVAL / 10);
    assert_eq!(applied(&f, SmInfo::MOD_DISABLE), 1, "{}", f.log(b));
    assert_eq!(f.sms[b].sw.sm_state(), SmState::NotActive);
    let sent = f.sms[b].sw.counters().total();
    f.advance(10 * INTERVAL);
    assert_eq!(
        f.sms[b].sw.counters().total(),
        sent,
        "NOT-ACTIVE B sent SMPs"
    );
    // STANDBY: polls A again.
    let now = f.now;
    f.sms[b]
        .sw
        .handle_mad(now, a_lid, from_a(SmInfo::MOD_STANDBY));
    f.advance(3 * INTERVAL);
    assert_eq!(applied(&f, SmInfo::MOD_STANDBY), 1, "{}", f.log(b));
    assert_eq!(f.sms[b].sw.sm_state(), SmState::Standby);
    assert_eq!(f.sms[b].sw.foreign_master(), Some((ga, 10)));
    assert!(f.sms[b].sw.counters().total() > sent + 1, "B polls A again");
    // DISCOVER: a heavy sweep, which finds A's MASTER: STANDBY again.
    let standbys = count(&f, b, stands_by);
    let now = f.now;
    f.sms[b]
        .sw
        .handle_mad(now, a_lid, from_a(SmInfo::MOD_DISCOVER));
    f.advance(3 * INTERVAL);
    assert_eq!(applied(&f, SmInfo::MOD_DISCOVER), 1, "{}", f.log(b));
    assert_eq!(count(&f, b, stands_by), standbys + 1, "{}", f.log(b));
    assert_eq!(f.sms[b].sw.sm_state(), SmState::Standby);
    assert!(Fabric::sets_from(&f.fab.take_set_log(), gb).is_empty());
    assert_eq!(f.sms[a].sw.sm_state(), SmState::Master);
}
