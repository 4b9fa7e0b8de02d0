//! SubnSet(SMInfo): HANDOVER / ACKNOWLEDGE between a master and a standby that outranks it,
//! and the DISABLE / STANDBY / DISCOVER modifiers (IBA 14.4, checked against OpenSM 3.3.23's
//! `osm_sminfo_rcv.c`, `osm_sm_state_mgr.c` and `osm_state_mgr.c`).
//!
//! Master side: a heavy sweep as MASTER that finds (no MASTER outranking this SM and) a
//! STANDBY SM that outranks it sends that SM a SubnSet(SMInfo) with AttributeModifier
//! HANDOVER (1), its own SMInfo (state MASTER, its SM_Key) as payload, and stops: nothing
//! of the sweep is written, no light sweep, trap or multicast pass follows
//! ([`Event::HandoverSent`]), and its SMInfo answers say STANDBY (as OpenSM's do once it
//! sent HANDOVER: the new master, finding no other MASTER, programs at once instead of
//! waiting for a handover from this one). Every sweep interval an SMInfo Get polls that SM. The handover
//! is done when that SM's ACKNOWLEDGE (2) arrives, or a poll finds it MASTER (OpenSM takes
//! over without sending ACKNOWLEDGE): [`Event::HandoverTaken`], then this SM stands by for
//! it ([`Event::ForeignMaster`]). When the Set is refused or given up (at once), or
//! `foreign_poll_misses` polls find it anything but MASTER, the handover failed
//! ([`Event::HandoverFailed`]): this SM returns to MASTER, sweeps again (SUBNET UP once
//! more), and hands over to that SM no more while it reports STANDBY. (OpenSM's master goes STANDBY as soon as the
//! HANDOVER is sent; waiting for the other SM keeps the fabric with one master if it never
//! takes over.)
//!
//! Receiving side (requests on this SM's port, answered first, then acted on). As in
//! OpenSM: with an M_Key set on this SM, a Set without it gets no answer at all; the
//! payload's state must be MASTER (STANDBY for ACKNOWLEDGE). As IBA wants and OpenSM does
//! for every SMInfo it reads: the payload's SM_Key must be this SM's (when not 0). A Set
//! failing a check, or not legal in this SM's state, is refused: answered with status
//! "invalid attribute value" (OpenSM answers status 7 too), nothing changes
//! ([`Event::SmInfoSetRefused`]).
//! * HANDOVER from the master this SM stands by for, or from any MASTER while this SM is
//!   DISCOVERING or MASTER (OpenSM takes it in those states too): this SM's state becomes
//!   MASTER, it sends ACKNOWLEDGE to the sender (payload state STANDBY: OpenSM's legality
//!   check wants that of an ACKNOWLEDGE; when the sender's port is not discovered yet,
//!   after the discovery that finds it: [`Event::AcknowledgeSent`]), and runs a heavy
//!   sweep whose programming reads back every LFT block first and writes only those that
//!   differ ([`Event::HandoverReceived`]).
//! * ACKNOWLEDGE from the SM this master handed over to: the handover is done. From anyone
//!   else: answered like a Get (OpenSM ignores it as well).
//! * DISCOVER from the followed master: DISCOVERING, and a heavy sweep as after the master
//!   went away. DISABLE from the followed master: NOT-ACTIVE, no poll, no sweep. STANDBY
//!   while NOT-ACTIVE: STANDBY, polling the sender ([`Event::SmInfoSetApplied`]).
//!
//! With the rules off (`obey_foreign_sms` false, or a Raft cluster's gated master) and on a
//! cluster standby replica every SMInfo Set is answered like a Get.

use super::{Followed, outranks};
use crate::config::Role;
use crate::events::{Event, SweepReason};
use crate::io::{Op, Req, Transmit};
use crate::state::NONE;
use crate::sweeper::{Phase, Sweeper};
use fabric::Guid;
use mad::{AttributeId, Method, Notice, NoticeDetails, ProducerType, SmInfo, SmState, Smp};

/// MAD status of a refused Set: "invalid value in attribute or modifier" (code 7).
pub(crate) const STATUS_INVALID_VALUE: u16 = 7 << 2;

/// A HANDOVER this master sent.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Handing {
    pub(super) to: Followed,
    /// Polls made since.
    polls: u8,
    /// The Set was refused (error status) or never answered.
    set_failed: bool,
}

/// What a checked SubnSet(SMInfo) asks of this SM.
#[derive(Clone, Copy, Debug)]
pub(crate) enum SetVerdict {
    /// Answered like a Get; nothing changes.
    AsGet,
    /// Not answered (M_Key authentication failed).
    Ignore,
    /// Answered with [`STATUS_INVALID_VALUE`]; nothing changes.
    Refuse {
        guid: Guid,
        modifier: u32,
        reason: &'static str,
    },
    /// Answered, then acted on.
    Act(SetAction),
}

/// What an accepted SubnSet(SMInfo) does.
#[derive(Clone, Copy, Debug)]
pub(crate) enum SetAction {
    /// HANDOVER from the master this SM stands by for.
    HandedOver(Followed),
    /// HANDOVER from a MASTER while this SM is DISCOVERING or MASTER.
    HandedOverBy(Guid),
    /// ACKNOWLEDGE from the SM this master handed over to.
    Acknowledged,
    /// DISCOVER from the followed master.
    Discover(Followed),
    /// DISABLE from the followed master.
    Disable(Guid),
    /// STANDBY while NOT-ACTIVE.
    Standby(Followed),
}

impl SetVerdict {
    /// The MAD status of the answer.
    pub(crate) fn status(&self) -> u16 {
        match self {
            SetVerdict::Refuse { .. } => STATUS_INVALID_VALUE,
            _ => 0,
        }
    }
}

impl Sweeper {
    /// Checks a SubnSet(SMInfo) that reached this SM's port.
    pub(crate) fn check_sm_info_set(&self, smp: &Smp) -> SetVerdict {
        let modifier = smp.attr_mod;
        if !self.obeys_foreign_sms()
            || self.cfg.role != Role::Master
            || !(SmInfo::MOD_HANDOVER..=SmInfo::MOD_DISCOVER).contains(&modifier)
        {
            return SetVerdict::AsGet;
        }
        // M_Key authentication of a Set (OpenSM: ERR 2F1B, no answer).
        if self.cfg.m_key != 0 && smp.m_key != self.cfg.m_key {
            return SetVerdict::Ignore;
        }
        let Ok(info) = smp.attr::<SmInfo>() else {
            return SetVerdict::AsGet;
        };
        let refuse = |reason| SetVerdict::Refuse {
            guid: info.guid,
            modifier,
            reason,
        };
        if self.cfg.sm_key != 0 && info.sm_key != self.cfg.sm_key {
            return refuse("its SM_Key is not ours");
        }
        let ack = modifier == SmInfo::MOD_ACKNOWLEDGE;
        let sender = if ack {
            SmState::Standby
        } else {
            SmState::Master
        };
        if info.state() != Some(sender) {
            return refuse(if ack {
                "an ACKNOWLEDGE comes from a STANDBY SM"
            } else {
                "the sender is not MASTER"
            });
        }
        let followed = self.foreign.master.filter(|f| f.guid == info.guid);
        // Standing by with only polls running (a heavy sweep requested meanwhile ends the
        // wait at its discovery).
        let quiet = self.phase == Phase::Idle || self.foreign.polling;
        const NOT_FOLLOWED: &str = "not from the master this SM stands by for";
        match modifier {
            SmInfo::MOD_HANDOVER => {
                if self.foreign.handing.is_some() {
                    refuse("this SM is handing over itself")
                } else if self.foreign.disabled {
                    refuse("this SM is NOT-ACTIVE")
                } else if let Some(f) = followed {
                    SetVerdict::Act(SetAction::HandedOver(f))
                } else if self.foreign.master.is_some() {
                    refuse(NOT_FOLLOWED)
                } else {
                    SetVerdict::Act(SetAction::HandedOverBy(info.guid))
                }
            }
            SmInfo::MOD_ACKNOWLEDGE => match self.foreign.handing {
                Some(h) if h.to.guid == info.guid && quiet => {
                    SetVerdict::Act(SetAction::Acknowledged)
                }
                _ => SetVerdict::AsGet,
            },
            SmInfo::MOD_DISCOVER => followed.map_or(refuse(NOT_FOLLOWED), |f| {
                SetVerdict::Act(SetAction::Discover(f))
            }),
            SmInfo::MOD_DISABLE if !quiet => refuse("this SM is sweeping"),
            SmInfo::MOD_DISABLE => followed.map_or(refuse(NOT_FOLLOWED), |f| {
                SetVerdict::Act(SetAction::Disable(f.guid))
            }),
            _ => {
                if !self.foreign.disabled {
                    return refuse("STANDBY is taken only when NOT-ACTIVE");
                }
                match self.locate(info.guid) {
                    Some((node, port)) => SetVerdict::Act(SetAction::Standby(Followed {
                        node,
                        port,
                        guid: info.guid,
                        priority: info.priority,
                    })),
                    None => refuse("the sender's port is not known"),
                }
            }
        }
    }

    /// Acts on a checked Set (after its answer was queued).
    pub(crate) fn apply_sm_info_set(&mut self, v: SetVerdict) {
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
            SetVerdict::Act(a) if self.foreign.polling => self.foreign.pending = Some(a),
            SetVerdict::Act(a) => self.act_on_set(a),
        }
    }

    /// An accepted Set takes effect (no poll in flight).
    pub(super) fn act_on_set(&mut self, a: SetAction) {
        match a {
            SetAction::HandedOver(f) => {
                self.foreign.master = None;
                self.taken_over(f.guid, Some((f.node, f.port)));
            }
            SetAction::HandedOverBy(guid) => {
                let at = self.locate(guid);
                self.taken_over(guid, at);
            }
            SetAction::Acknowledged => self.handover_taken(true),
            SetAction::Discover(f) => {
                self.foreign.master = None;
                self.foreign.verify_lfts = true;
                self.state = SmState::Discovering;
                self.events.push_back(Event::SmInfoSetApplied {
                    guid: f.guid,
                    modifier: SmInfo::MOD_DISCOVER,
                    state: SmState::Discovering,
                });
                self.heavy_pending.get_or_insert(SweepReason::MasterGone);
                if self.phase == Phase::Idle {
                    self.start_pending_heavy();
                }
            }
            SetAction::Disable(guid) => {
                self.foreign.master = None;
                self.foreign.disabled = true;
                self.state = SmState::NotActive;
                self.subnet_up = false;
                self.next_light = None;
                self.heavy_pending = None;
                self.events.push_back(Event::SmInfoSetApplied {
                    guid,
                    modifier: SmInfo::MOD_DISABLE,
                    state: SmState::NotActive,
                });
            }
            SetAction::Standby(f) => {
                self.foreign.disabled = false;
                self.events.push_back(Event::SmInfoSetApplied {
                    guid: f.guid,
                    modifier: SmInfo::MOD_STANDBY,
                    state: SmState::Standby,
                });
                self.enter_standby(f);
            }
        }
    }

    /// A HANDOVER was taken: MASTER, ACKNOWLEDGE to the sender at `at`, and a heavy sweep
    /// that reads LFT blocks back before writing them.
    fn taken_over(&mut self, guid: Guid, at: Option<(u32, u8)>) {
        self.foreign.handed_by = Some(guid);
        self.foreign.handed_queries = 0;
        self.foreign.verify_lfts = true;
        self.state = SmState::Master;
        // Sent at once, once (the heavy sweep that follows forgets every path; OpenSM sends
        // no ACKNOWLEDGE at all): its answer is counted as stale.
        let sent = at.is_some_and(|(node, port)| {
            let req = Req {
                op: Op::SmInfoSet,
                node,
                port,
                arg: SmInfo::MOD_ACKNOWLEDGE as u16,
                tries: 0,
                lid_routed: false,
                key: 0,
            };
            let tid = self.own_tid();
            match self.build(&req, tid) {
                Some(t) => {
                    self.io.send(t);
                    true
                }
                None => false,
            }
        });
        if !sent {
            self.foreign.ack_owed = Some(guid);
        }
        self.events.push_back(Event::HandoverReceived {
            guid,
            acknowledged: sent,
        });
        self.heavy_pending.get_or_insert(SweepReason::Handover);
        if self.phase == Phase::Idle {
            self.start_pending_heavy();
        }
    }

    /// Discovery found the ports: the ACKNOWLEDGE owed for a HANDOVER whose sender's port
    /// was not known goes out with the SMInfo Gets.
    pub(super) fn send_owed_ack(&mut self) {
        let Some(guid) = self.foreign.ack_owed.take() else {
            return;
        };
        if let Some((node, port)) = self.locate(guid) {
            self.push(Op::SmInfoSet, node, port, SmInfo::MOD_ACKNOWLEDGE as u16);
            self.events.push_back(Event::AcknowledgeSent { guid });
        }
    }

    /// The best STANDBY SM the last query found that outranks this one (and has not
    /// failed a handover since it last reported another state).
    pub(super) fn handover_target(&self) -> Option<Followed> {
        let (prio, guid) = self.own_rank();
        let mut best: Option<Followed> = None;
        for (r, &(node, port)) in self.foreign.found.iter().zip(&self.foreign.found_at) {
            if r.state != Some(SmState::Standby)
                || !outranks(r.priority, r.port_guid, prio, guid)
                || self.foreign.refused.contains(&r.port_guid)
            {
                continue;
            }
            if best.is_none_or(|b| outranks(r.priority, r.port_guid, b.priority, b.guid)) {
                best = Some(Followed {
                    node,
                    port,
                    guid: r.port_guid,
                    priority: r.priority,
                });
            }
        }
        best
    }

    /// Sends HANDOVER to `f` and waits (nothing of this sweep is written).
    pub(super) fn send_handover(&mut self, f: Followed) {
        self.foreign.handing = Some(Handing {
            to: f,
            polls: 0,
            set_failed: false,
        });
        self.push(Op::SmInfoSet, f.node, f.port, SmInfo::MOD_HANDOVER as u16);
        self.stop_writing();
        self.events.push_back(Event::HandoverSent {
            guid: f.guid,
            priority: f.priority,
        });
    }

    /// A poll of the SM handed over to ended.
    pub(super) fn finish_handover_poll(&mut self, answer: Option<SmInfo>) {
        let Some(mut h) = self.foreign.handing else {
            return;
        };
        if answer.is_some_and(|a| a.guid == h.to.guid && a.state() == Some(SmState::Master)) {
            self.handover_taken(false);
            return;
        }
        h.polls = h.polls.saturating_add(1);
        self.foreign.handing = Some(h);
        if h.set_failed || h.polls >= self.cfg.foreign_poll_misses.max(1) {
            self.handover_failed();
        } else {
            self.next_light = Some(self.now + self.cfg.sweep_interval);
        }
    }

    /// The SM handed over to did not take over: MASTER again, a heavy sweep.
    fn handover_failed(&mut self) {
        let Some(h) = self.foreign.handing.take() else {
            return;
        };
        self.foreign.refused.push(h.to.guid);
        self.state = SmState::Master;
        self.events.push_back(Event::HandoverFailed {
            guid: h.to.guid,
            polls: h.polls,
        });
        self.start_heavy(SweepReason::HandoverFailed);
    }

    /// The SM handed over to took over: stand by for it.
    fn handover_taken(&mut self, acknowledged: bool) {
        let Some(h) = self.foreign.handing.take() else {
            return;
        };
        self.events.push_back(Event::HandoverTaken {
            guid: h.to.guid,
            acknowledged,
        });
        self.enter_standby(h.to);
    }

    /// A handover message (Set, `req.arg` = modifier) was refused or given up. A refused
    /// or unanswered HANDOVER ends the wait at once (at the end of a poll in flight):
    /// this SM answers STANDBY meanwhile, and its standby would take that for a master
    /// stepping down.
    pub(crate) fn sm_info_set_failed(&mut self, req: Req) {
        if u32::from(req.arg) != SmInfo::MOD_HANDOVER {
            return;
        }
        if let Some(h) = self.foreign.handing.as_mut()
            && (h.to.node, h.to.port) == (req.node, req.port)
        {
            h.set_failed = true;
            if !self.foreign.polling && self.phase == Phase::Idle {
                self.handover_failed();
            }
        }
    }

    /// The payload of a handover message this SM sends (`req.arg` = modifier): its own
    /// SMInfo, with state MASTER in a HANDOVER and STANDBY in an ACKNOWLEDGE (what
    /// OpenSM's legality check wants of each), and its SM_Key.
    pub(crate) fn fill_sm_info_set(&self, req: &Req, data: &mut [u8; 64]) {
        let state = if u32::from(req.arg) == SmInfo::MOD_ACKNOWLEDGE {
            SmState::Standby
        } else {
            SmState::Master
        };
        let (priority, guid) = self.own_rank();
        let info = SmInfo {
            guid,
            sm_key: self.cfg.sm_key,
            act_count: self.act_count,
            priority,
            sm_state: state.to_wire(),
        };
        let mut smp = Smp::default();
        smp.set_attr(&info);
        *data = smp.data;
    }

    /// A trap 144 (LID-routed, from this SM's port) to the master `f`: this SM is here and
    /// outranks it (OpenSM's standby sends the same; a master sweeps on it).
    pub(super) fn notify_master(&mut self, f: Followed) {
        if self.disc.local() == NONE {
            return;
        }
        let n = self.disc.node(self.disc.local());
        let own = self.disc.port(n.port_index(self.disc.local_port())).info;
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
        let producer = if n.is_switch {
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
        let tid = self.own_tid();
        let mut smp = Smp::lid_routed(Method::TRAP, tid, AttributeId::NOTICE, 0);
        smp.set_attr(&notice);
        self.io.send(Transmit { dlid, smp });
    }

    fn own_tid(&mut self) -> u64 {
        self.io.own_tid(self.cfg.tid_high)
    }

    /// (node, port) of the SM port `guid`: from the last SMInfo query, else any port of
    /// that GUID with a known path.
    pub(super) fn locate(&self, guid: Guid) -> Option<(u32, u8)> {
        if let Some(k) = self.foreign.found.iter().position(|r| r.port_guid == guid) {
            return self.foreign.found_at.get(k).copied();
        }
        self.disc.end_port_with_path(guid)
    }
}
