//! Two (or more) independent sweepers attached at CA ports of one fabric-sim fabric,
//! virtual time, deterministic, plus scripted SM ports; who wrote what is read from the
//! simulator's accepted-Set log (by source port). Shared by `foreign_sm` and
//! `foreign_handover`.
#![allow(dead_code)]

use crate::common::ca_ports;
use fabric::{Guid, NodeId, Topology};
use fabric_sim::{AttachId, SetRecord, SimConfig, SimFabric};
use mad::{AttributeId, Method, SmInfo, SmState, Smp};
use sm_core::{Event, IntentEvent, Sweeper, SweeperConfig, VTime, route_inline};

pub const SEC: VTime = 1_000_000_000;
pub const MS: VTime = 1_000_000;
pub const LFT: u16 = 0x19;
pub const INTERVAL: VTime = 200 * MS;

pub struct Sm {
    pub at: AttachId,
    pub sw: Sweeper,
    pub alive: bool,
    /// (virtual time, event) of every event but RoutingNeeded.
    pub events: Vec<(VTime, Event)>,
    /// (virtual time, id) of every intent a gated (cluster) master asked to commit; the
    /// harness commits each at once, as a Raft leader with a quorum does.
    pub intents: Vec<(VTime, u64)>,
}

/// A scripted SM port: answers every SMInfo Get and Set with `info` (status 0), never
/// changes state, never sends anything else (an SM that does not take a HANDOVER).
pub struct Stub {
    pub at: AttachId,
    pub info: SmInfo,
    /// (virtual time, request) of every SMInfo Set received.
    pub sets: Vec<(VTime, Smp)>,
}

pub struct Fabric {
    pub fab: SimFabric,
    pub now: VTime,
    pub sms: Vec<Sm>,
    pub stubs: Vec<Stub>,
}

pub fn cfg(priority: u8) -> SweeperConfig {
    SweeperConfig {
        sm_priority: priority,
        sweep_interval: INTERVAL,
        ..SweeperConfig::default()
    }
}

impl Fabric {
    pub fn new(t: &Topology) -> Fabric {
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

    pub fn add(&mut self, guid: Guid, cfg: SweeperConfig) -> usize {
        let at = self.fab.attach(guid).unwrap();
        // Its first heavy sweep is due at once (poll_timeout 0 <= now).
        let sw = Sweeper::new(cfg).unwrap();
        self.sms.push(Sm {
            at,
            sw,
            alive: true,
            events: Vec::new(),
            intents: Vec::new(),
        });
        self.sms.len() - 1
    }

    /// The SM process is gone: its attachment (and IsSM) too.
    pub fn kill(&mut self, i: usize) {
        self.sms[i].alive = false;
        self.fab.detach(self.sms[i].at).unwrap();
    }

    pub fn step(&mut self) -> bool {
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
            while let Some(ie) = sm.sw.poll_intent() {
                if let IntentEvent::Program(i) = ie {
                    sm.intents.push((now, i.id));
                    sm.sw.handle_intent_committed(now, i.id);
                }
            }
        }
        true
    }

    pub fn run(&mut self, limit: VTime, mut pred: impl FnMut(&Fabric) -> bool) -> bool {
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

    pub fn advance(&mut self, d: VTime) {
        let until = self.now + d;
        self.run(d, |f| f.now >= until);
    }

    pub fn first(&self, i: usize, pred: impl Fn(&Event) -> bool) -> Option<VTime> {
        self.sms[i]
            .events
            .iter()
            .find(|(_, e)| pred(e))
            .map(|(t, _)| *t)
    }

    pub fn wait_for(
        &mut self,
        i: usize,
        what: &str,
        pred: impl Fn(&Event) -> bool + Copy,
    ) -> VTime {
        let ok = self.run(30 * SEC, |f| f.first(i, pred).is_some());
        assert!(ok, "SM {i} never saw {what}; log:\n{}", self.log(i));
        self.first(i, pred).unwrap()
    }

    pub fn log(&self, i: usize) -> String {
        self.sms[i]
            .events
            .iter()
            .map(|(t, e)| format!("{:>8} ms {e}", t / MS))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Accepted Sets sent from `guid`'s port.
    pub fn sets_from(log: &[SetRecord], guid: Guid) -> Vec<&SetRecord> {
        log.iter().filter(|r| r.source == Some(guid)).collect()
    }
}

pub fn subnet_up(e: &Event) -> bool {
    matches!(e, Event::SubnetUp { .. })
}

pub fn stands_by(e: &Event) -> bool {
    matches!(e, Event::ForeignMaster { .. })
}

/// Two CA ports on different leaves of a 2-level fat tree.
pub fn two_ports(t: &Topology) -> (Guid, Guid) {
    let cas = ca_ports(t);
    (cas[0].2, cas[cas.len() - 1].2)
}

pub fn check_routes(f: &Fabric, t: &Topology) {
    for &(n, p, g) in &ca_ports(t) {
        let lid = f.fab.port_info(n, p).unwrap().lid;
        assert_ne!(lid.0, 0, "{g} has no LID");
        for (sid, _) in t.switches() {
            assert_ne!(f.fab.lft_entry(sid, lid).unwrap(), 0xFF, "no route to {g}");
        }
    }
}

pub fn count(f: &Fabric, i: usize, pred: impl Fn(&Event) -> bool) -> usize {
    f.sms[i].events.iter().filter(|(_, e)| pred(e)).count()
}

pub fn handover_event(e: &Event) -> bool {
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

impl Fabric {
    /// A scripted SM at port `guid` answering SMInfo with `priority`, `state` and SM_Key 1.
    pub fn add_stub(&mut self, guid: Guid, priority: u8, state: SmState) {
        let at = self.fab.attach(guid).unwrap();
        self.stubs.push(Stub {
            at,
            info: SmInfo {
                guid,
                sm_key: 1,
                act_count: 0,
                priority,
                sm_state: state.to_wire(),
            },
            sets: Vec::new(),
        });
    }

    /// Asserts that every LFT block SM `by` wrote (in `log`) differed from the switch's
    /// table `before` (the tables of `switches`, in order): none that was right rewritten.
    /// Returns the LFT Sets it wrote.
    pub fn assert_only_wrong_lft_blocks<'a>(
        &self,
        log: &'a [SetRecord],
        by: Guid,
        switches: &[NodeId],
        before: &[Vec<u8>],
    ) -> Vec<&'a SetRecord> {
        let lft_sets: Vec<_> = Fabric::sets_from(log, by)
            .into_iter()
            .filter(|r| r.attr == LFT)
            .collect();
        for r in &lft_sets {
            let k = switches.iter().position(|&s| s == r.node).unwrap();
            let lo = r.attr_mod as usize * 64;
            let old = &before[k][lo.min(before[k].len())..(lo + 64).min(before[k].len())];
            let new = self.fab.lft(r.node).unwrap();
            let new = &new[lo.min(new.len())..(lo + 64).min(new.len())];
            assert_ne!(old, new, "a right LFT block was rewritten: {r:?}");
        }
        lft_sets
    }

    /// SM `i`'s first LFT check after a foreign master: (blocks read, blocks kept).
    pub fn lfts_checked(&self, i: usize) -> (usize, usize) {
        self.sms[i]
            .events
            .iter()
            .find_map(|(_, e)| match e {
                Event::LftsChecked { read, kept } => Some((*read, *kept)),
                _ => None,
            })
            .expect("an LFT check after the foreign master")
    }
}
