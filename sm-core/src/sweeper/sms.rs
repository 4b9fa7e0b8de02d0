//! Other SMs on the fabric (see `crate::foreign`): the SMInfo query after discovery, the
//! light sweep's queries, standing by and polling a master, and the LFT read-back after a
//! foreign master went away.

use super::{Phase, Sweeper};
use crate::events::{Event, SweepReason};
use crate::foreign::{
    Followed, ForeignSms, MasterPoll, QueryOutcome, RemoteSm, hands_over, obeys_foreign_sms,
};
use crate::io::{Op, Req};
use fabric::Guid;
use mad::{LinearForwardingTable, SmInfo, SmState, Smp, SmpAttribute};

impl Sweeper {
    /// The SMs found at other ports by the last heavy sweep (their SMInfo answers).
    pub fn remote_sms(&self) -> &[RemoteSm] {
        self.sms.remote()
    }

    /// The foreign master this SM stands by for (its port GUID and priority), if any.
    pub fn foreign_master(&self) -> Option<(Guid, u8)> {
        self.sms.master().map(|m| (m.guid, m.priority))
    }

    /// True while this SM stands by for a foreign master, waits for the SM it handed
    /// over to, or is NOT-ACTIVE (sends nothing but polls, SMInfo answers and handover
    /// messages).
    pub(super) fn standing_by(&self) -> bool {
        self.sms.standing_by()
    }

    /// Forgets everything about other SMs (the driver changed the role).
    pub(super) fn forget_foreign(&mut self) {
        self.sms = ForeignSms::default();
    }

    /// This SM's (priority, port GUID) for the ranking.
    pub(super) fn own_rank(&self) -> (u8, Guid) {
        let guid = self
            .disc
            .sm_port_guid()
            .or(self.cfg.sm_port_guid)
            .unwrap_or(Guid(0));
        (self.cfg.sm_priority, guid)
    }

    /// Discovery finished: SMInfo Gets to every other SM port found, or straight on to
    /// the pre-routing steps when there is none (or the rules are off).
    pub(super) fn after_discovery(&mut self) {
        if self.sms.begin_query() {
            // A sweep ran while handing over: this SM sweeps as one coming out of STANDBY.
            self.state = SmState::Discovering;
        }
        if !obeys_foreign_sms(&self.cfg) {
            self.pre_routing(Phase::Discovering);
            return;
        }
        let targets = ForeignSms::query_targets(&self.disc, &self.cfg.peer_sms);
        if targets.is_empty() {
            self.proceed_after_query();
            return;
        }
        self.phase = Phase::SmInfo;
        for (node, p) in targets {
            self.disc.count_min();
            self.push(Op::SmInfoGet, node, p, 0);
        }
    }

    /// Light sweep of a master: the SMs the last heavy sweep found are asked again
    /// (OpenSM's master does the same), so a MASTER that outranks this one and came up at
    /// the same time is noticed within one sweep interval.
    pub(super) fn light_query_sms(&mut self) {
        if !obeys_foreign_sms(&self.cfg) {
            return;
        }
        // Only at nodes the last discovery reached: one that did not (the SM's own link went
        // down since the query) has no path to send on.
        for (node, p) in self.sms.light_targets() {
            if self.disc.seen(node) {
                self.push(Op::SmInfoGet, node, p, 0);
            }
        }
    }

    /// An SMInfo answer.
    pub(super) fn on_sm_info(&mut self, req: Req, info: SmInfo) {
        self.ack_if_owed(req.node, req.port, &info);
        // IBA 14.4.1: an SM with another SM_Key takes no part in the mastership decisions
        // (a poll's answer is the followed master's: judged as it is).
        let keyed = info.sm_key != 0 && self.cfg.sm_key != 0 && info.sm_key != self.cfg.sm_key;
        if keyed && !self.sms.polling() {
            self.events.push_back(Event::SmKeyIgnored {
                guid: info.guid,
                lid: self.disc.reported_lid(req.node, req.port),
                priority: info.priority,
                state: info.state(),
            });
            return;
        }
        if !self.sms.polling()
            && self.state == SmState::Master
            && info.state() == Some(SmState::Master)
            && !self.sms.handed_over_by(info.guid)
        {
            let (prio, guid) = self.own_rank();
            if !crate::foreign::outranks(info.priority, info.guid, prio, guid) {
                self.events.push_back(Event::RogueMaster {
                    guid: info.guid,
                    lid: self.disc.reported_lid(req.node, req.port),
                    priority: info.priority,
                });
            }
        }
        if self.phase == Phase::Light {
            let master = self.state == SmState::Master;
            let hand = hands_over(&self.cfg);
            if self.sms.light_answer(&info, self.own_rank(), master, hand) {
                self.light.changed();
            }
            return;
        }
        self.sms.answer(req.node, req.port, info);
    }

    /// The SMInfo phase has nothing left in flight.
    pub(super) fn finish_sm_info(&mut self) {
        if self.sms.polling() {
            self.finish_poll();
            return;
        }
        if !self.sms.remote().is_empty() {
            self.events
                .push_back(Event::OtherSms(self.sms.remote().to_vec()));
        }
        for (r, node, port) in self.sms.first_seen() {
            self.events.push_back(Event::UnknownSm {
                guid: r.port_guid,
                lid: self.disc.reported_lid(node, port),
                priority: r.priority,
                state: r.state,
            });
        }
        let master = self.state == SmState::Master;
        match self
            .sms
            .finish_query(self.own_rank(), master, hands_over(&self.cfg))
        {
            QueryOutcome::Proceed => self.proceed_after_query(),
            QueryOutcome::Handover(f) => {
                self.sms.watch_found(self.own_rank());
                self.send_handover(f);
            }
            QueryOutcome::Standby { master, notify } => {
                self.sms.watch_found(self.own_rank());
                self.enter_standby(master);
                if notify {
                    // It should hand over to this SM: tell it this SM is here (OpenSM's
                    // standby sends the same trap).
                    self.notify_master(master);
                }
            }
        }
    }

    /// Nothing found stops this SM: on to the pre-routing steps, unless this discovery
    /// lost reads and either missed an SM the last query saw able to take the fabric, or
    /// this SM has not brought the subnet up yet (a takeover: traps sent while no master
    /// ran reached nobody, so an SM that appeared meanwhile is only found by a discovery).
    /// Such an SM may be there, unseen, and its MASTER would write alongside this one: this
    /// sweep writes nothing and another starts at once, at most
    /// [`crate::foreign::HOLD_SWEEPS`] in a row (a dirty sweep brings no SUBNET UP anyway).
    fn proceed_after_query(&mut self) {
        if self.sched.is_dirty()
            && let Some(missed) = self.sms.hold(!self.subnet_up)
        {
            self.events.push_back(Event::SweepHeld { missed });
            self.sched.request_heavy(SweepReason::LossyDiscovery);
            self.finish_heavy();
            return;
        }
        self.sms.watch_found(self.own_rank());
        self.pre_routing(Phase::Discovering);
    }

    /// Stands by for `f`: nothing of this sweep is written.
    pub(super) fn enter_standby(&mut self, f: Followed) {
        self.sms.follow(f);
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
        self.sched.drop_heavy();
        self.sched.heavy_ended();
        self.sched
            .set_next(Some(self.now + self.cfg.sweep_interval));
    }

    /// A poll of the followed master is due.
    pub(super) fn start_poll(&mut self) {
        let Some(f) = self.sms.start_poll() else {
            return;
        };
        self.phase = Phase::SmInfo;
        self.push(Op::SmInfoGet, f.node, f.port, 0);
    }

    /// A poll ended (answered, refused or given up).
    fn finish_poll(&mut self) {
        let (answer, pending) = self.sms.end_poll();
        self.phase = Phase::Idle;
        if let Some(a) = pending {
            self.act_on_set(a);
            return;
        }
        if self.sms.handing().is_some() {
            self.finish_handover_poll(answer);
            return;
        }
        let Some(f) = self.sms.master() else {
            self.schedule_next();
            return;
        };
        let misses = self.cfg.foreign_poll_misses;
        match self.sms.master_polled(f, answer, self.own_rank(), misses) {
            MasterPoll::Still { notify } => {
                if notify {
                    self.notify_master(f);
                }
                self.sched
                    .set_next(Some(self.now + self.cfg.sweep_interval));
            }
            MasterPoll::Gone {
                master,
                state,
                missed,
            } => {
                self.events.push_back(Event::ForeignMasterGone {
                    guid: master.guid,
                    state,
                    missed_polls: missed,
                });
                self.state = SmState::Discovering;
                self.start_heavy(SweepReason::MasterGone);
            }
        }
    }

    /// Routing planned its LFT blocks: after taking over from a foreign master, read those
    /// blocks back first. Returns true when reads were queued (the check runs).
    pub(super) fn start_lft_check(&mut self) -> bool {
        if !self.sms.begin_lft_check(self.prog.lft_todo().len()) {
            return false;
        }
        self.phase = Phase::LftCheck;
        let todo = self.prog.lft_todo().to_vec();
        for (node, b) in todo {
            self.push(Op::LftGet, node, 0, b);
        }
        true
    }

    /// A block read back: equal to what the routing wants?
    pub(super) fn on_lft_block(&mut self, req: Req, smp: &Smp) {
        let got = LinearForwardingTable::decode(&smp.data);
        if self.phase == Phase::Light {
            self.on_audit_block(req.node, req.arg, &got);
            return;
        }
        if self
            .prog
            .lft_block_matches(&self.disc, req.node, req.arg, &got)
            == Some(true)
        {
            self.sms.lft_block_same(req.node, req.arg);
        }
    }

    /// The read-back ended: only blocks that differ (or could not be read) are written.
    pub(super) fn finish_lft_check(&mut self) {
        let (same, read) = self.sms.end_lft_check();
        self.prog.keep_lft_blocks(&same);
        self.events.push_back(Event::LftsChecked {
            read,
            kept: same.len(),
        });
        if self.gate() {
            return;
        }
        self.phase = Phase::Programming(0);
        self.next_stage(0);
    }
}
