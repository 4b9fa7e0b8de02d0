//! SubnSet(SMInfo) and the handover between SMs (see `crate::foreign::handover`): Sets
//! checked and acted on, HANDOVER sent and followed up, ACKNOWLEDGE sent, traps 144 to a
//! master this SM outranks.

use super::{Phase, Sweeper};
use crate::events::{Event, SweepReason};
use crate::foreign::handover::set_payload;
use crate::foreign::{Followed, HandoverPoll, SetAction, SetVerdict};
use crate::io::{Op, Req, Transmit};
use crate::state::NONE;
use fabric::Guid;
use mad::{AttributeId, Method, Notice, NoticeDetails, ProducerType, SmInfo, SmState, Smp};

impl Sweeper {
    /// Checks a SubnSet(SMInfo) that reached this SM's port.
    pub(super) fn check_sm_info_set(&self, smp: &Smp) -> SetVerdict {
        let quiet_phase = self.phase == Phase::Idle;
        self.sms.check_set(&self.disc, &self.cfg, quiet_phase, smp)
    }

    /// Acts on a checked Set (after its answer was queued).
    pub(super) fn apply_sm_info_set(&mut self, v: SetVerdict) {
        match v {
            SetVerdict::AsGet | SetVerdict::Ignore => {}
            SetVerdict::Refuse {
                guid,
                modifier,
                reason,
            } => self.events.push_back(Event::SmInfoSetRefused {
                guid,
                modifier,
                reason,
            }),
            SetVerdict::Act(a) => {
                if let Some(a) = self.sms.defer_set(a) {
                    self.act_on_set(a);
                }
            }
        }
    }

    /// An accepted Set takes effect (no poll in flight).
    pub(super) fn act_on_set(&mut self, a: SetAction) {
        match a {
            SetAction::HandedOver(f) => {
                self.sms.unfollow();
                self.taken_over(f.guid);
            }
            SetAction::HandedOverBy(guid) => self.taken_over(guid),
            SetAction::Acknowledged => self.handover_taken(true),
            SetAction::Discover(f) => {
                self.sms.unfollow();
                self.sms.verify_lfts();
                self.state = SmState::Discovering;
                self.events.push_back(Event::SmInfoSetApplied {
                    guid: f.guid,
                    modifier: SmInfo::MOD_DISCOVER,
                    state: SmState::Discovering,
                });
                self.sched.request_heavy(SweepReason::MasterGone);
                if self.phase == Phase::Idle {
                    self.start_pending_heavy();
                }
            }
            SetAction::Disable(guid) => {
                self.sms.disable();
                self.state = SmState::NotActive;
                self.subnet_up = false;
                self.sched.set_next(None);
                self.sched.drop_heavy();
                self.events.push_back(Event::SmInfoSetApplied {
                    guid,
                    modifier: SmInfo::MOD_DISABLE,
                    state: SmState::NotActive,
                });
            }
            SetAction::Standby(f) => {
                self.sms.enable();
                self.events.push_back(Event::SmInfoSetApplied {
                    guid: f.guid,
                    modifier: SmInfo::MOD_STANDBY,
                    state: SmState::Standby,
                });
                self.enter_standby(f);
            }
        }
    }

    /// A HANDOVER was taken: MASTER, and a heavy sweep that reads LFT blocks back before
    /// writing them. The ACKNOWLEDGE is owed until an SMInfo answer of the sender reports
    /// STANDBY ([`Self::ack_if_owed`]): OpenSM's master moves to STANDBY only after its
    /// HANDOVER went out, and refuses an ACKNOWLEDGE that reaches it before (ERR 2F07).
    fn taken_over(&mut self, guid: Guid) {
        self.sms.taken_over(guid);
        self.sms.owe_ack(guid);
        self.state = SmState::Master;
        self.events.push_back(Event::HandoverReceived { guid });
        self.sched.request_heavy(SweepReason::Handover);
        if self.phase == Phase::Idle {
            self.start_pending_heavy();
        }
    }

    /// An SMInfo answer from `(node, port)`: when it is the SM that handed over to this one
    /// and it reports STANDBY, the ACKNOWLEDGE owed goes out, once, outside the window (the
    /// sweeps forget every path; its answer is counted as stale).
    pub(super) fn ack_if_owed(&mut self, node: u32, port: u8, info: &SmInfo) {
        // It has left MASTER: STANDBY, or NOT-ACTIVE when it handed over to stop.
        let left = matches!(info.state(), Some(SmState::Standby | SmState::NotActive));
        if !left || !self.sms.ack_owed_to(info.guid) {
            return;
        }
        let req = Req::new(
            Op::SmInfoSet,
            node,
            port,
            SmInfo::MOD_ACKNOWLEDGE as u16,
            false,
        );
        let tid = self.io.own_tid(self.cfg.tid_high);
        if let Some(t) = self.build(&req, tid) {
            self.io.send(t);
            self.sms.ack_sent();
            self.events
                .push_back(Event::AcknowledgeSent { guid: info.guid });
        }
    }

    /// A graceful stop of a master (the daemon's SIGTERM): HANDOVER to the best STANDBY SM
    /// the last query found, whatever its priority, so the fabric keeps a master when this
    /// one exits. True when a HANDOVER went out: the daemon waits for
    /// [`Event::HandoverTaken`] or [`Event::HandoverFailed`] (bounded by the polls), then
    /// stops; after a failed one this SM does not sweep again. From the HANDOVER on this SM
    /// answers NOT-ACTIVE. False: not master, or no standby known.
    pub fn hand_over_to_stop(&mut self, now: crate::VTime) -> bool {
        self.clock(now);
        if self.state != SmState::Master || self.sms.handing().is_some() {
            return false;
        }
        let Some(f) = self.sms.stop_target() else {
            return false;
        };
        self.stopping = true;
        self.send_handover(f);
        // It answers NOT-ACTIVE from now on: the new master must not find a STANDBY that
        // outranks it and hand the fabric back (OpenSM hands over to any higher SM that is
        // not NOT-ACTIVE). The HANDOVER itself carries MASTER.
        self.state = SmState::NotActive;
        true
    }

    /// Sends HANDOVER to `f` and waits (nothing of this sweep is written).
    pub(super) fn send_handover(&mut self, f: Followed) {
        self.sms.start_handing(f);
        self.push(Op::SmInfoSet, f.node, f.port, SmInfo::MOD_HANDOVER as u16);
        self.stop_writing();
        self.events.push_back(Event::HandoverSent {
            guid: f.guid,
            priority: f.priority,
        });
    }

    /// A poll of the SM handed over to ended.
    pub(super) fn finish_handover_poll(&mut self, answer: Option<SmInfo>) {
        match self
            .sms
            .handover_polled(answer, self.cfg.foreign_poll_misses)
        {
            None => {}
            Some(HandoverPoll::Taken) => self.handover_taken(false),
            Some(HandoverPoll::Failed) => self.handover_failed(),
            Some(HandoverPoll::Wait) => {
                self.sched
                    .set_next(Some(self.now + self.cfg.sweep_interval));
            }
        }
    }

    /// The SM handed over to did not take over: MASTER again, a heavy sweep.
    fn handover_failed(&mut self) {
        let Some(h) = self.sms.handover_failed() else {
            return;
        };
        self.state = SmState::Master;
        self.events.push_back(Event::HandoverFailed {
            guid: h.to.guid,
            polls: h.polls,
        });
        if self.stopping {
            // Stopping: no sweep; the daemon stops this SM now.
            return;
        }
        self.start_heavy(SweepReason::HandoverFailed);
    }

    /// The SM handed over to took over: stand by for it.
    fn handover_taken(&mut self, acknowledged: bool) {
        let Some(h) = self.sms.take_handing() else {
            return;
        };
        self.events.push_back(Event::HandoverTaken {
            guid: h.to.guid,
            acknowledged,
        });
        if self.stopping {
            // Stopping: NOT-ACTIVE until the daemon stops it (a new master's query must
            // not find a STANDBY that outranks it and hand the fabric back).
            self.sms.disable();
            self.state = SmState::NotActive;
            self.subnet_up = false;
            self.sched.set_next(None);
            self.sched.drop_heavy();
            return;
        }
        self.enter_standby(h.to);
    }

    /// A handover message (Set, `req.arg` = modifier) was refused or given up. A refused
    /// or unanswered HANDOVER ends the wait at once (at the end of a poll in flight):
    /// this SM answers STANDBY meanwhile, and its standby would take that for a master
    /// stepping down.
    pub(super) fn sm_info_set_failed(&mut self, req: Req) {
        if u32::from(req.arg) != SmInfo::MOD_HANDOVER {
            return;
        }
        if self.sms.handover_set_failed(req.node, req.port)
            && !self.sms.polling()
            && self.phase == Phase::Idle
        {
            self.handover_failed();
        }
    }

    /// The payload of a handover message this SM sends (`req.arg` = modifier).
    pub(super) fn fill_sm_info_set(&self, req: &Req, data: &mut [u8; 64]) {
        let (priority, guid) = self.own_rank();
        *data = set_payload(
            u32::from(req.arg),
            guid,
            priority,
            self.cfg.sm_key,
            self.act_count(),
        );
    }

    /// A trap 144 (LID-routed, from this SM's port) to the master `f`: this SM is here and
    /// outranks it (OpenSM's standby sends the same; a master sweeps on it).
    pub(super) fn notify_master(&mut self, f: Followed) {
        if self.disc.local() == NONE {
            return;
        }
        let is_switch = self.disc.node(self.disc.local()).is_switch;
        let own = self.disc.sm_port().info;
        let (lid, cap) = (own.lid, own.capability_mask);
        let at = self
            .disc
            .port(self.disc.route_port(f.node, f.port))
            .info
            .lid;
        let dlid = if at.0 != 0 { at } else { own.master_sm_lid };
        if lid.0 == 0 || dlid.0 == 0 {
            return;
        }
        let producer = if is_switch {
            ProducerType::SWITCH
        } else {
            ProducerType::CA
        };
        let notice = Notice::generic(
            Notice::TYPE_INFO,
            producer,
            144,
            lid,
            &NoticeDetails::CapabilityChange {
                lid,
                other_local_changes: false,
                capability_mask: cap,
                change_flags: 0,
                capability_mask2: 0,
            },
        );
        let tid = self.io.own_tid(self.cfg.tid_high);
        let mut smp = Smp::lid_routed(Method::TRAP, tid, AttributeId::NOTICE, 0);
        smp.set_attr(&notice);
        self.io.send(Transmit { dlid, smp });
    }
}
