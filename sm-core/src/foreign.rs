//! Other SMs on the fabric: the IBA 14.4.1 priority rules, with SMInfo HANDOVER /
//! ACKNOWLEDGE (see [`handover`]).
//!
//! * After a heavy sweep's discovery (Gets only, nothing written yet) every discovered port
//!   whose PortInfo.CapabilityMask has IsSM, other than this SM's own port and the ports of
//!   its own cluster ([`crate::SweeperConfig::peer_sms`]), gets an SMInfo Get (directed
//!   route, in the same window with the same resends as every other Get). What they answer
//!   is kept ([`Sweeper::remote_sms`]) and reported ([`Event::OtherSms`]).
//! * A remote SM answering MASTER ends the sweep before anything is written when this SM
//!   is DISCOVERING (its first sweep, or a takeover sweep), whatever the priorities (IBA
//!   14.4: a discovering SM that finds a master becomes STANDBY; OpenSM does), or when it is
//!   MASTER and the other outranks it ([`outranks`]: higher priority, or equal priority and
//!   the smaller port GUID). This SM's SMInfo state becomes STANDBY, [`Event::ForeignMaster`]
//!   tells the driver, no Set, light sweep, multicast pass or trap handling follows, and
//!   every sweep interval one SMInfo Get polls that master (IBA: a standby polls the
//!   master). When this SM outranks that master it expects a HANDOVER from it and tells it
//!   so with a trap 144 (as OpenSM's standby does), at once and every
//!   [`NOTIFY_EVERY_POLLS`] polls.
//! * When the polled master answers anything but MASTER, or `foreign_poll_misses` polls in
//!   a row go unanswered, [`Event::ForeignMasterGone`] and
//!   a heavy sweep as master follow (state DISCOVERING, then MASTER at SUBNET UP, as at
//!   start). Its programming first reads back every LFT block it is about to write
//!   (LinearForwardingTable Get) and writes only the blocks that differ
//!   ([`Event::LftsChecked`]): tables the other master left are kept where they already say
//!   the right thing.
//! * A remote SM in DISCOVERING or NOT-ACTIVE, or a MASTER found by this SM's sweep as
//!   master that it outranks, changes nothing: this SM carries on (the other one reads this
//!   SM's SMInfo and should hand over; OpenSM does).
//! * A master that finds a STANDBY SM outranking it hands over to it (see [`handover`]).
//! * A master's light sweeps ask the SMs its last heavy sweep found again (OpenSM's master
//!   does too): one now MASTER that outranks it, one now STANDBY that outranks it (a
//!   handover is due), or one that was MASTER or DISCOVERING (it may have written) and has
//!   yielded since, means a heavy sweep.
//!
//! The rules are off for a Raft cluster's master (`gate_programming`), whose replicas are
//! the other SMs it would find; [`crate::SweeperConfig::peer_sms`] names such peers for a
//! driver that knows their port GUIDs.
//!
//! Not built: a graceful stop that hands over to a standby; foreign SMs next to a Raft
//! cluster (the rules with `gate_programming` on: SMInfo Sets are then answered like a Get).

mod handover;

pub(crate) use handover::SetVerdict;

use crate::events::{Event, SweepReason};
use crate::io::{Op, Req};
use crate::sweeper::{Phase, Sweeper};
use fabric::Guid;
use mad::{LinearForwardingTable, PortInfo, SmInfo, SmState, SmpAttribute};

/// An SM found at another port of the fabric (from its SMInfo answer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemoteSm {
    /// Port GUID the SM answered for (SMInfo.GUID).
    pub port_guid: Guid,
    /// SMInfo.Priority (0..=15).
    pub priority: u8,
    /// SMInfo.SMState (None: a value the IBA does not define).
    pub state: Option<SmState>,
    /// SMInfo.ActCount.
    pub act_count: u32,
}

/// While standing by for a master this SM outranks, a trap 144 reminds that master every
/// this many polls (after the first at standby).
pub const NOTIFY_EVERY_POLLS: u32 = 5;

/// SMInfo queries after a HANDOVER in which the SM that handed over may still answer MASTER.
const HANDED_QUERIES: u8 = 3;

/// IBA 14.4.1 ranking: does the SM `(a_priority, a_guid)` outrank `(b_priority, b_guid)`?
/// The higher priority wins; equal priorities go to the smaller port GUID. An SM does not
/// outrank itself.
pub fn outranks(a_priority: u8, a_guid: Guid, b_priority: u8, b_guid: Guid) -> bool {
    a_priority > b_priority || (a_priority == b_priority && a_guid < b_guid)
}

/// The master this SM stands by for.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Followed {
    node: u32,
    port: u8,
    guid: Guid,
    priority: u8,
}

/// Foreign-SM bookkeeping of a sweeper.
#[derive(Debug, Default)]
pub(crate) struct ForeignState {
    /// Answers of the last query (one heavy sweep's SMInfo Gets).
    found: Vec<RemoteSm>,
    /// Where each queried SM sits (node, port), in `found`'s order of answers.
    found_at: Vec<(u32, u8)>,
    /// Standing by for this master.
    master: Option<Followed>,
    /// The running SMInfo phase is a poll of `master` (not a post-discovery query).
    polling: bool,
    /// The poll's answer.
    poll_answer: Option<SmInfo>,
    /// Polls in a row without an answer.
    missed: u8,
    /// The next programming reads back the LFT blocks it would write first.
    verify_lfts: bool,
    /// LFT blocks (switch node, block) read back equal to what the routing wants.
    lft_same: Vec<(u32, u16)>,
    /// LFT blocks read back in the running check.
    lft_read: usize,
    /// A HANDOVER sent by this master, waiting for the other SM to take over.
    handing: Option<handover::Handing>,
    /// A SubnSet(SMInfo) that arrived while a poll was in flight, acted on when it ends.
    pending: Option<handover::SetAction>,
    /// SMs that did not take a HANDOVER: not handed over to again while they report
    /// STANDBY.
    refused: Vec<Guid>,
    /// The SM that handed over to this one: its MASTER answers in the next queries are
    /// ignored (it becomes STANDBY when the ACKNOWLEDGE reaches it; see HANDED_QUERIES).
    handed_by: Option<Guid>,
    /// SMInfo queries since the HANDOVER in which `handed_by` still answered MASTER.
    handed_queries: u8,
    /// A HANDOVER taken before its sender's port was discovered: ACKNOWLEDGE owed.
    ack_owed: Option<Guid>,
    /// NOT-ACTIVE after a DISABLE: nothing sent until a STANDBY Set.
    disabled: bool,
    /// Polls of the followed master since standing by.
    polls_made: u32,
}

impl Sweeper {
    /// The SMs found at other ports by the last heavy sweep (their SMInfo answers).
    pub fn remote_sms(&self) -> &[RemoteSm] {
        &self.foreign.found
    }

    /// The foreign master this SM stands by for (its port GUID and priority), if any.
    pub fn foreign_master(&self) -> Option<(Guid, u8)> {
        self.foreign.master.map(|m| (m.guid, m.priority))
    }

    /// True while this SM stands by for a foreign master, waits for the SM it handed
    /// over to, or is NOT-ACTIVE (sends nothing but polls, SMInfo answers and handover
    /// messages).
    pub(crate) fn standing_by(&self) -> bool {
        self.foreign.master.is_some() || self.foreign.handing.is_some() || self.foreign.disabled
    }

    /// Forgets everything about other SMs (the driver changed the role).
    pub(crate) fn forget_foreign(&mut self) {
        self.foreign = ForeignState::default();
    }

    /// Are the rules on? Off for a Raft cluster's master (`gate_programming`): every other
    /// SM port it finds is one of its own replicas, which Raft fences, and a paused or
    /// partitioned replica would hold up every sweep by a full round of SMInfo resends.
    fn obeys_foreign_sms(&self) -> bool {
        self.cfg.obey_foreign_sms && !self.cfg.gate_programming
    }

    /// This SM's (priority, port GUID) for the ranking.
    fn own_rank(&self) -> (u8, Guid) {
        let guid = self
            .disc
            .sm_port_guid()
            .or(self.cfg.sm_port_guid)
            .unwrap_or(Guid(0));
        (self.cfg.sm_priority, guid)
    }

    /// Discovery finished: SMInfo Gets to every other SM port found, or straight on to
    /// the pre-routing steps when there is none (or the rules are off).
    pub(crate) fn after_discovery(&mut self) {
        self.foreign.master = None;
        if self.foreign.handing.take().is_some() {
            // A sweep ran while handing over: this SM sweeps as one coming out of STANDBY.
            self.state = SmState::Discovering;
        }
        self.foreign.pending = None;
        self.foreign.polling = false;
        self.foreign.found.clear();
        self.foreign.found_at.clear();
        if !self.obeys_foreign_sms() {
            self.pre_routing(Phase::Discovering);
            return;
        }
        let sweep = self.disc.sweep();
        // A switch's SM sits behind port 0; a CA's at each port reached.
        let targets: Vec<(u32, u8)> = self
            .disc
            .end_ports_seen()
            .filter(|&(i, p, n, port)| {
                port.info_sweep == sweep
                    && port.info.capability_mask & PortInfo::CAP_IS_SM != 0
                    && (n.is_switch || port.path_sweep == sweep)
                    && !(i == self.disc.local() && p == self.disc.local_port())
                    && !self.cfg.peer_sms.contains(&port.guid)
            })
            .map(|(i, p, _, _)| (i, p))
            .collect();
        if targets.is_empty() {
            self.pre_routing(Phase::Discovering);
            return;
        }
        self.phase = Phase::SmInfo;
        self.send_owed_ack();
        for (node, p) in targets {
            self.disc.count_min();
            self.push(Op::SmInfoGet, node, p, 0);
        }
    }

    /// Light sweep of a master: the SMs the last heavy sweep found are asked again
    /// (OpenSM's master does the same), so a MASTER that outranks this one and came up at
    /// the same time is noticed within one sweep interval.
    pub(crate) fn light_query_sms(&mut self) {
        if !self.obeys_foreign_sms() {
            return;
        }
        let targets = self.foreign.found_at.clone();
        for (node, p) in targets {
            self.push(Op::SmInfoGet, node, p, 0);
        }
    }

    /// An SMInfo answer.
    pub(crate) fn on_sm_info(&mut self, req: Req, info: SmInfo) {
        if self.phase == Phase::Light {
            let (prio, guid) = self.own_rank();
            let active =
                |s: Option<SmState>| matches!(s, Some(SmState::Master | SmState::Discovering));
            let was = self
                .foreign
                .found
                .iter()
                .find(|r| r.port_guid == info.guid)
                .map(|r| r.state);
            let higher = outranks(info.priority, info.guid, prio, guid);
            if info.state() != Some(SmState::Standby) {
                self.foreign.refused.retain(|g| *g != info.guid);
            }
            if info.state() == Some(SmState::Master) && higher {
                // The heavy sweep this starts stands by after its discovery.
                self.light_changed = true;
            } else if info.state() == Some(SmState::Standby)
                && higher
                && self.state == SmState::Master
                && !self.foreign.refused.contains(&info.guid)
            {
                // A handover is due: the heavy sweep this starts sends it.
                self.light_changed = true;
            } else if was.is_some_and(active) && !active(info.state()) {
                // It was sweeping (and may have written: MasterSMLID, tables) and has
                // yielded since: a heavy sweep puts back what this master wants.
                self.light_changed = true;
            }
            return;
        }
        if self.foreign.polling {
            self.foreign.poll_answer = Some(info);
            return;
        }
        if info.state() != Some(SmState::Standby) {
            self.foreign.refused.retain(|g| *g != info.guid);
        }
        self.foreign.found.push(RemoteSm {
            port_guid: info.guid,
            priority: info.priority,
            state: info.state(),
            act_count: info.act_count,
        });
        self.foreign.found_at.push((req.node, req.port));
    }

    /// The SMInfo phase has nothing left in flight.
    pub(crate) fn finish_sm_info(&mut self) {
        if self.foreign.polling {
            self.finish_poll();
            return;
        }
        if !self.foreign.found.is_empty() {
            self.events
                .push_back(Event::OtherSms(self.foreign.found.clone()));
        }
        let (prio, guid) = self.own_rank();
        // The SM that just handed over may still answer MASTER for a while (a query sent
        // before the HANDOVER arrived, or before the ACKNOWLEDGE reached it): it counts as
        // the STANDBY it becomes for up to HANDED_QUERIES queries, then a MASTER is one.
        if let Some(h) = self.foreign.handed_by {
            match self.foreign.found.iter_mut().find(|r| r.port_guid == h) {
                Some(r)
                    if r.state == Some(SmState::Master)
                        && self.foreign.handed_queries < HANDED_QUERIES =>
                {
                    r.state = Some(SmState::Standby);
                    self.foreign.handed_queries += 1;
                }
                _ => {
                    self.foreign.handed_by = None;
                    self.foreign.handed_queries = 0;
                }
            }
        }
        // DISCOVERING: any MASTER makes this SM stand by (IBA 14.4; OpenSM does). MASTER:
        // only one that outranks it; a lower one is expected to hand over.
        let master = self.state == SmState::Master;
        let mut best: Option<(usize, &RemoteSm)> = None;
        for (k, r) in self.foreign.found.iter().enumerate() {
            if r.state != Some(SmState::Master)
                || (master && !outranks(r.priority, r.port_guid, prio, guid))
            {
                continue;
            }
            if best.is_none_or(|(_, b)| outranks(r.priority, r.port_guid, b.priority, b.port_guid))
            {
                best = Some((k, r));
            }
        }
        let Some((k, r)) = best else {
            if master && let Some(f) = self.handover_target() {
                self.send_handover(f);
                return;
            }
            self.pre_routing(Phase::Discovering);
            return;
        };
        let (node, port) = self.foreign.found_at[k];
        let f = Followed {
            node,
            port,
            guid: r.port_guid,
            priority: r.priority,
        };
        self.enter_standby(f);
        if outranks(prio, guid, f.priority, f.guid) {
            // It should hand over to this SM: tell it this SM is here (OpenSM's standby
            // sends the same trap).
            self.notify_master(f);
        }
    }

    /// Stands by for `f`: nothing of this sweep is written.
    fn enter_standby(&mut self, f: Followed) {
        self.foreign.master = Some(f);
        self.foreign.missed = 0;
        self.foreign.polls_made = 0;
        self.stop_writing();
        self.events.push_back(Event::ForeignMaster {
            guid: f.guid,
            priority: f.priority,
        });
    }

    /// SMInfo STANDBY, the sweep under way dropped before anything is written, the next
    /// look (a poll) one interval from now.
    pub(super) fn stop_writing(&mut self) {
        self.state = SmState::Standby;
        self.subnet_up = false;
        self.io.set_lid_ok(false);
        self.phase = Phase::Idle;
        self.heavy_pending = None;
        self.first_sweep_done = true;
        self.next_light = Some(self.now + self.cfg.sweep_interval);
    }

    /// A poll of the followed master is due.
    pub(crate) fn start_poll(&mut self) {
        let Some(f) = self.foreign.master.or(self.foreign.handing.map(|h| h.to)) else {
            return;
        };
        self.phase = Phase::SmInfo;
        self.foreign.polling = true;
        self.foreign.poll_answer = None;
        self.push(Op::SmInfoGet, f.node, f.port, 0);
    }

    /// A poll ended (answered, refused or given up).
    fn finish_poll(&mut self) {
        self.foreign.polling = false;
        self.phase = Phase::Idle;
        let answer = self.foreign.poll_answer.take();
        if let Some(a) = self.foreign.pending.take() {
            self.act_on_set(a);
            return;
        }
        if self.foreign.handing.is_some() {
            self.finish_handover_poll(answer);
            return;
        }
        let Some(f) = self.foreign.master else {
            self.schedule_next();
            return;
        };
        let (prio, guid) = self.own_rank();
        let gone = match answer {
            Some(a) => {
                self.foreign.missed = 0;
                let still = a.state() == Some(SmState::Master) && a.guid == f.guid;
                self.foreign.polls_made += 1;
                if still
                    && outranks(prio, guid, a.priority, a.guid)
                    && self.foreign.polls_made.is_multiple_of(NOTIFY_EVERY_POLLS)
                {
                    self.notify_master(f);
                }
                (!still).then_some(a.state())
            }
            None => {
                self.foreign.missed = self.foreign.missed.saturating_add(1);
                (self.foreign.missed >= self.cfg.foreign_poll_misses.max(1)).then_some(None)
            }
        };
        match gone {
            None => self.next_light = Some(self.now + self.cfg.sweep_interval),
            Some(state) => {
                self.events.push_back(Event::ForeignMasterGone {
                    guid: f.guid,
                    state,
                    missed_polls: self.foreign.missed,
                });
                self.foreign.master = None;
                self.foreign.missed = 0;
                self.foreign.verify_lfts = true;
                self.state = SmState::Discovering;
                self.start_heavy(SweepReason::MasterGone);
            }
        }
    }

    /// Routing planned `lft_todo`: after taking over from a foreign master, read those
    /// blocks back first. Returns true when reads were queued (the check runs).
    pub(crate) fn start_lft_check(&mut self) -> bool {
        if !std::mem::take(&mut self.foreign.verify_lfts) || self.prog.lft_todo().is_empty() {
            return false;
        }
        self.foreign.lft_same.clear();
        self.foreign.lft_read = self.prog.lft_todo().len();
        self.phase = Phase::LftCheck;
        let todo = self.prog.lft_todo().to_vec();
        for (node, b) in todo {
            self.push(Op::LftGet, node, 0, b);
        }
        true
    }

    /// A block read back: equal to what the routing wants?
    pub(crate) fn on_lft_block(&mut self, req: Req, smp: &mad::Smp) {
        let got = LinearForwardingTable::decode(&smp.data);
        if self
            .prog
            .lft_block_matches(&self.disc, req.node, req.arg, &got)
            == Some(true)
        {
            self.foreign.lft_same.push((req.node, req.arg));
        }
    }

    /// The read-back ended: only blocks that differ (or could not be read) are written.
    pub(crate) fn finish_lft_check(&mut self) {
        let same = std::mem::take(&mut self.foreign.lft_same);
        self.prog.keep_lft_blocks(&same);
        self.events.push_back(Event::LftsChecked {
            read: self.foreign.lft_read,
            kept: same.len(),
        });
        if self.gate() {
            return;
        }
        self.phase = Phase::Programming(0);
        self.next_stage(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranking_follows_priority_then_smaller_guid() {
        // Higher priority wins whatever the GUIDs.
        assert!(outranks(15, Guid(9), 0, Guid(1)));
        assert!(!outranks(0, Guid(1), 15, Guid(9)));
        // Equal priority: the smaller GUID wins.
        assert!(outranks(5, Guid(1), 5, Guid(2)));
        assert!(!outranks(5, Guid(2), 5, Guid(1)));
        // Nobody outranks itself; the relation is antisymmetric.
        assert!(!outranks(7, Guid(3), 7, Guid(3)));
        for (a, b) in [(0u8, 15u8), (3, 3), (15, 15), (8, 2)] {
            for (g, h) in [(1u64, 2u64), (2, 1), (5, 5)] {
                let x = outranks(a, Guid(g), b, Guid(h));
                let y = outranks(b, Guid(h), a, Guid(g));
                assert!(!(x && y), "both outrank: {a}/{g} {b}/{h}");
                if (a, g) != (b, h) {
                    assert!(x || y, "neither outranks: {a}/{g} {b}/{h}");
                }
            }
        }
    }
}
