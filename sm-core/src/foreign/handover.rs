//! SubnSet(SMInfo): HANDOVER / ACKNOWLEDGE between a master and a standby that outranks it,
//! and the DISABLE / STANDBY / DISCOVER modifiers (IBA 14.4, checked against OpenSM 3.3.23's
//! `osm_sminfo_rcv.c`, `osm_sm_state_mgr.c` and `osm_state_mgr.c`).
//!
//! Master side: a heavy sweep as MASTER that finds (no MASTER outranking this SM and) a
//! STANDBY SM that outranks it sends that SM a SubnSet(SMInfo) with AttributeModifier
//! HANDOVER (1), its own SMInfo (state MASTER, its SM_Key) as payload, and stops: nothing
//! of the sweep is written, no light sweep, trap or multicast pass follows
//! ([`crate::Event::HandoverSent`]), and its SMInfo answers say STANDBY (as OpenSM's do once it
//! sent HANDOVER: the new master, finding no other MASTER, programs at once instead of
//! waiting for a handover from this one). Every sweep interval an SMInfo Get polls that SM. The handover
//! is done when that SM's ACKNOWLEDGE (2) arrives, or a poll finds it MASTER (OpenSM takes
//! over without sending ACKNOWLEDGE): [`crate::Event::HandoverTaken`], then this SM stands by for
//! it ([`crate::Event::ForeignMaster`]). When the Set is refused or given up (at once), or
//! `foreign_poll_misses` polls find it anything but MASTER, the handover failed
//! ([`crate::Event::HandoverFailed`]): this SM returns to MASTER, sweeps again (SUBNET UP once
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
//! ([`crate::Event::SmInfoSetRefused`]).
//! * HANDOVER from the master this SM stands by for, or from any MASTER while this SM is
//!   DISCOVERING or MASTER (OpenSM takes it in those states too): this SM's state becomes
//!   MASTER, it sends ACKNOWLEDGE to the sender once an SMInfo answer of the sender reports
//!   STANDBY (payload state STANDBY: OpenSM's legality check wants that of an ACKNOWLEDGE;
//!   OpenSM refuses one that arrives before it left MASTER, which it does only after its
//!   HANDOVER went out: [`crate::Event::AcknowledgeSent`]), and runs a heavy
//!   sweep whose programming reads back every LFT block first and writes only those that
//!   differ ([`crate::Event::HandoverReceived`]).
//! * ACKNOWLEDGE from the SM this master handed over to: the handover is done. From anyone
//!   else: answered like a Get (OpenSM ignores it as well).
//! * DISCOVER from the followed master: DISCOVERING, and a heavy sweep as after the master
//!   went away. DISABLE from the followed master: NOT-ACTIVE, no poll, no sweep. STANDBY
//!   while NOT-ACTIVE: STANDBY, polling the sender ([`crate::Event::SmInfoSetApplied`]).
//!
//! With the rules off (`obey_foreign_sms` false, or a Raft cluster's gated master) and on a
//! cluster standby replica every SMInfo Set is answered like a Get.

use super::{Followed, ForeignSms, obeys_foreign_sms, outranks};
use crate::config::{Role, SweeperConfig};
use crate::discovery::Discovery;
use fabric::Guid;
use mad::{SmInfo, SmState, Smp};

/// MAD status of a refused Set: "invalid value in attribute or modifier" (code 7).
pub(crate) const STATUS_INVALID_VALUE: u16 = 7 << 2;

/// A HANDOVER this master sent.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Handing {
    /// The SM handed over to.
    pub to: Followed,
    /// Polls made since.
    pub polls: u8,
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

/// What a poll of the SM handed over to found.
#[derive(Clone, Copy, Debug)]
pub(crate) enum HandoverPoll {
    /// It reports MASTER: it took over.
    Taken,
    /// It did not take over (the Set failed, or too many polls).
    Failed,
    /// Not yet: poll again.
    Wait,
}

impl ForeignSms {
    /// Checks a SubnSet(SMInfo) that reached this SM's port. `quiet_phase`: the sweeper is
    /// idle (standing by with only polls running, or nothing running).
    pub fn check_set(
        &self,
        disc: &Discovery,
        cfg: &SweeperConfig,
        quiet_phase: bool,
        smp: &Smp,
    ) -> SetVerdict {
        let modifier = smp.attr_mod;
        if !obeys_foreign_sms(cfg)
            || cfg.role != Role::Master
            || !(SmInfo::MOD_HANDOVER..=SmInfo::MOD_DISCOVER).contains(&modifier)
        {
            return SetVerdict::AsGet;
        }
        // M_Key authentication of a Set (OpenSM: ERR 2F1B, no answer).
        if cfg.m_key != 0 && smp.m_key != cfg.m_key {
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
        if cfg.sm_key != 0 && info.sm_key != cfg.sm_key {
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
        let followed = self.master.filter(|f| f.guid == info.guid);
        // Standing by with only polls running (a heavy sweep requested meanwhile ends the
        // wait at its discovery).
        let quiet = quiet_phase || self.polling;
        const NOT_FOLLOWED: &str = "not from the master this SM stands by for";
        match modifier {
            SmInfo::MOD_HANDOVER => {
                if self.handing.is_some() {
                    refuse("this SM is handing over itself")
                } else if self.disabled {
                    refuse("this SM is NOT-ACTIVE")
                } else if let Some(f) = followed {
                    SetVerdict::Act(SetAction::HandedOver(f))
                } else if self.master.is_some() {
                    refuse(NOT_FOLLOWED)
                } else {
                    SetVerdict::Act(SetAction::HandedOverBy(info.guid))
                }
            }
            SmInfo::MOD_ACKNOWLEDGE => match self.handing {
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
                if !self.disabled {
                    return refuse("STANDBY is taken only when NOT-ACTIVE");
                }
                match self.locate(disc, info.guid) {
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

    /// An accepted Set is acted on at once, unless a poll is in flight: then it waits for
    /// the poll's end (returned by [`ForeignSms::end_poll`]) and None is returned.
    pub fn defer_set(&mut self, a: SetAction) -> Option<SetAction> {
        if self.polling {
            self.pending = Some(a);
            return None;
        }
        Some(a)
    }

    /// DISABLE: NOT-ACTIVE, no master followed.
    pub fn disable(&mut self) {
        self.master = None;
        self.disabled = true;
    }

    /// STANDBY while NOT-ACTIVE: active again.
    pub fn enable(&mut self) {
        self.disabled = false;
    }

    /// A HANDOVER from `guid` was taken: its MASTER answers in the next queries are
    /// expected, and the next programming reads LFT blocks back first.
    pub fn taken_over(&mut self, guid: Guid) {
        self.handed_by = Some(guid);
        self.handed_queries = 0;
        self.verify_lfts = true;
    }

    /// A HANDOVER from `guid` was taken: the ACKNOWLEDGE goes out once it reports STANDBY.
    pub fn owe_ack(&mut self, guid: Guid) {
        self.ack_owed = Some(guid);
    }

    /// Is the ACKNOWLEDGE owed to `guid`?
    pub fn ack_owed_to(&self, guid: Guid) -> bool {
        self.ack_owed == Some(guid)
    }

    /// The ACKNOWLEDGE owed went out.
    pub fn ack_sent(&mut self) {
        self.ack_owed = None;
    }

    /// The best STANDBY SM the last query found that outranks this one (rank `own`) and
    /// has not failed a handover since it last reported another state.
    pub(super) fn handover_target(&self, own: (u8, Guid)) -> Option<Followed> {
        self.best_standby(Some(own))
    }

    /// The best STANDBY SM the last query found, whatever its rank (a master that stops
    /// hands over to it), that has not failed a handover since it last reported another
    /// state.
    pub fn stop_target(&self) -> Option<Followed> {
        self.best_standby(None)
    }

    /// The best STANDBY SM of the last query not refused, above rank `above` when given.
    fn best_standby(&self, above: Option<(u8, Guid)>) -> Option<Followed> {
        let mut best: Option<Followed> = None;
        for (r, &(node, port)) in self.found.iter().zip(&self.found_at) {
            if r.state != Some(SmState::Standby)
                || above.is_some_and(|(prio, guid)| !outranks(r.priority, r.port_guid, prio, guid))
                || self.refused.contains(&r.port_guid)
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

    /// A HANDOVER to `f` is being sent.
    pub fn start_handing(&mut self, f: Followed) {
        self.handing = Some(Handing {
            to: f,
            polls: 0,
            set_failed: false,
        });
    }

    /// The handover under way, if any.
    pub fn handing(&self) -> Option<Handing> {
        self.handing
    }

    /// The handover is over (taken or failed): the one that was under way.
    pub fn take_handing(&mut self) -> Option<Handing> {
        self.handing.take()
    }

    /// The handover failed: over, and that SM is handed over to no more while it reports
    /// STANDBY. Returns the one that was under way.
    pub fn handover_failed(&mut self) -> Option<Handing> {
        let h = self.handing.take()?;
        self.refused.push(h.to.guid);
        Some(h)
    }

    /// A poll of the SM handed over to ended with `answer` (`misses`: polls after which it
    /// failed).
    /// None when no handover is under way.
    pub fn handover_polled(&mut self, answer: Option<SmInfo>, misses: u8) -> Option<HandoverPoll> {
        let mut h = self.handing?;
        if answer.is_some_and(|a| a.guid == h.to.guid && a.state() == Some(SmState::Master)) {
            return Some(HandoverPoll::Taken);
        }
        h.polls = h.polls.saturating_add(1);
        self.handing = Some(h);
        Some(if h.set_failed || h.polls >= misses.max(1) {
            HandoverPoll::Failed
        } else {
            HandoverPoll::Wait
        })
    }

    /// The HANDOVER Set to `(node, port)` was refused or given up. Returns true when the
    /// handover under way is the one (the wait then ends, unless a poll is in flight).
    pub fn handover_set_failed(&mut self, node: u32, port: u8) -> bool {
        match self.handing.as_mut() {
            Some(h) if (h.to.node, h.to.port) == (node, port) => {
                h.set_failed = true;
                true
            }
            _ => false,
        }
    }

    /// (node, port) of the SM port `guid`: from the last SMInfo query, else any port of
    /// that GUID with a known path.
    pub fn locate(&self, disc: &Discovery, guid: Guid) -> Option<(u32, u8)> {
        if let Some(k) = self.found.iter().position(|r| r.port_guid == guid) {
            return self.found_at.get(k).copied();
        }
        disc.end_port_with_path(guid)
    }
}

/// The payload of a handover message this SM (`guid`, `priority`) sends with modifier
/// `modifier`: its own SMInfo, with state MASTER in a HANDOVER and STANDBY in an
/// ACKNOWLEDGE (what OpenSM's legality check wants of each), and its SM_Key.
pub(crate) fn set_payload(
    modifier: u32,
    guid: Guid,
    priority: u8,
    sm_key: u64,
    act_count: u32,
) -> [u8; 64] {
    let state = if modifier == SmInfo::MOD_ACKNOWLEDGE {
        SmState::Standby
    } else {
        SmState::Master
    };
    let info = SmInfo {
        guid,
        sm_key,
        act_count,
        priority,
        sm_state: state.to_wire(),
    };
    let mut smp = Smp::default();
    smp.set_attr(&info);
    smp.data
}
