//! [`ForeignSms`] owns what is known of the other SMs (the last query's answers, the master
//! followed, the poll, the handover under way, the LFT check after a takeover) and makes
//! the rule decisions on it. It never sends and never changes this SM's state, phase or
//! schedule: the sweeper acts on what it decides.
//!
//! Other SMs on the fabric: the IBA 14.4.1 priority rules, with SMInfo HANDOVER /
//! ACKNOWLEDGE (see [`handover`]).
//!
//! * After a heavy sweep's discovery (Gets only, nothing written yet) every discovered port
//!   whose PortInfo.CapabilityMask has IsSM, other than this SM's own port and the ports of
//!   its own cluster ([`crate::SweeperConfig::peer_sms`]), gets an SMInfo Get (directed
//!   route, in the same window with the same resends as every other Get). What they answer
//!   is kept ([`crate::Sweeper::remote_sms`]) and reported ([`crate::Event::OtherSms`]).
//! * A remote SM answering MASTER ends the sweep before anything is written when this SM
//!   is DISCOVERING (its first sweep, or a takeover sweep), whatever the priorities (IBA
//!   14.4: a discovering SM that finds a master becomes STANDBY; OpenSM does), or when it is
//!   MASTER and the other outranks it ([`outranks`]: higher priority, or equal priority and
//!   the smaller port GUID). This SM's SMInfo state becomes STANDBY, [`crate::Event::ForeignMaster`]
//!   tells the driver, no Set, light sweep, multicast pass or trap handling follows, and
//!   every sweep interval one SMInfo Get polls that master (IBA: a standby polls the
//!   master). When this SM outranks that master it expects a HANDOVER from it and tells it
//!   so with a trap 144 (as OpenSM's standby does), at once and every
//!   [`NOTIFY_EVERY_POLLS`] polls.
//! * When the polled master answers anything but MASTER, or `foreign_poll_misses` polls in
//!   a row go unanswered, [`crate::Event::ForeignMasterGone`] and
//!   a heavy sweep as master follow (state DISCOVERING, then MASTER at SUBNET UP, as at
//!   start). Its programming first reads back every LFT block it is about to write
//!   (LinearForwardingTable Get) and writes only the blocks that differ
//!   ([`crate::Event::LftsChecked`]): tables the other master left are kept where they already say
//!   the right thing.
//! * While this SM is DISCOVERING and no MASTER answered, a DISCOVERING or STANDBY SM
//!   that outranks it makes it stand by as for a master (OpenSM does): its poll finds no
//!   MASTER and the heavy sweep that follows asks again, so it writes only once no higher
//!   SM is sweeping or standing by, or after [`YIELD_QUERIES`] queries in a row found the
//!   same higher SM not mastering (one that never masters is not waited for).
//! * A remote SM in DISCOVERING or NOT-ACTIVE that does not outrank a DISCOVERING SM, any
//!   SM in DISCOVERING or NOT-ACTIVE next to a MASTER, or a MASTER found by this SM's sweep
//!   as master that it outranks, changes nothing: this SM carries on (the other one reads this
//!   SM's SMInfo and should hand over; OpenSM does).
//! * A master that finds a STANDBY SM outranking it hands over to it (see [`handover`]).
//! * A master's light sweeps ask the SMs its last heavy sweep found again (OpenSM's master
//!   does too): one now MASTER that outranks it, one now STANDBY that outranks it (a
//!   handover is due), or one that was MASTER or DISCOVERING (it may have written) and has
//!   yielded since, means a heavy sweep.
//!
//! A Raft cluster's master (`gate_programming`) obeys the rules as the cluster's one SM
//! when its driver names the replicas' SM ports ([`crate::SweeperConfig::peer_sms`]; never
//! queried, as a standby replica answers STANDBY and sends nothing): it stands by for a
//! foreign MASTER that outranks it (no intent, no Set), polls it, takes over with the LFT
//! read-back, and takes a HANDOVER; it sends none ([`hands_over`]: Raft picks the replica
//! that masters). Without `peer_sms` the rules are off for it.
//!
//! Not built: a graceful stop that hands over to a standby.

pub(crate) mod handover;

pub(crate) use handover::{Handing, HandoverPoll, SetAction, SetVerdict};

use crate::config::SweeperConfig;
use crate::discovery::Discovery;
use fabric::Guid;
use mad::{PortInfo, SmInfo, SmState};

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

/// The master this SM stands by for (or hands over to).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Followed {
    pub node: u32,
    pub port: u8,
    pub guid: Guid,
    pub priority: u8,
}

/// What the end of a post-discovery SMInfo query calls for.
#[derive(Clone, Copy, Debug)]
pub(crate) enum QueryOutcome {
    /// Nothing to obey: on to the pre-routing steps.
    Proceed,
    /// Stand by for this master; `notify`: this SM outranks it (trap 144 to it).
    Standby { master: Followed, notify: bool },
    /// Hand over to this STANDBY SM that outranks this master.
    Handover(Followed),
}

/// What a poll of the followed master found.
#[derive(Clone, Copy, Debug)]
pub(crate) enum MasterPoll {
    /// Still MASTER (or one more poll missed); `notify`: remind it with a trap 144.
    Still { notify: bool },
    /// Gone: what it answered last (None: undefined, or it stopped answering) and the
    /// polls in a row it missed. No longer followed.
    Gone {
        master: Followed,
        state: Option<SmState>,
        missed: u8,
    },
}

/// Foreign-SM bookkeeping of a sweeper (see the module documentation).
#[derive(Debug, Default)]
pub(crate) struct ForeignSms {
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
    handing: Option<Handing>,
    /// A SubnSet(SMInfo) that arrived while a poll was in flight, acted on when it ends.
    pending: Option<SetAction>,
    /// SMs that did not take a HANDOVER: not handed over to again while they report
    /// STANDBY.
    refused: Vec<Guid>,
    /// The SM that handed over to this one: its MASTER answers in the next queries are
    /// ignored (it becomes STANDBY when the ACKNOWLEDGE reaches it; see HANDED_QUERIES).
    handed_by: Option<Guid>,
    /// SMInfo queries since the HANDOVER in which `handed_by` still answered MASTER.
    handed_queries: u8,
    /// A HANDOVER taken: ACKNOWLEDGE owed until its sender reports STANDBY.
    ack_owed: Option<Guid>,
    /// NOT-ACTIVE after a DISABLE: nothing sent until a STANDBY Set.
    disabled: bool,
    /// Polls of the followed master since standing by.
    polls_made: u32,
    /// Port GUIDs of the SMs already reported as unknown ([`crate::Event::UnknownSm`]),
    /// at most [`MAX_REPORTED`].
    reported: Vec<Guid>,
    /// The higher DISCOVERING / STANDBY SM this SM yielded to, and in how many queries in
    /// a row (bounded by [`YIELD_QUERIES`]: one that never masters is not waited for).
    yielded: Option<(Guid, u8)>,
    /// The SMs the last query ended with that could take the fabric (MASTER, or outranking
    /// this one): a discovery that loses reads and misses one of them writes nothing.
    watched: Vec<Guid>,
    /// Heavy sweeps in a row held back (at most [`HOLD_SWEEPS`]; see
    /// [`ForeignSms::hold`]).
    held: u8,
}

/// Heavy sweeps in a row whose discovery lost reads that write nothing (see
/// [`ForeignSms::hold`]); the next one goes on with what it found (the SM may really be
/// gone, and the loss last).
pub(crate) const HOLD_SWEEPS: u8 = 3;

/// Queries in a row in which a DISCOVERING SM yields to the same higher SM that does not
/// master; the next one sweeps as master.
const YIELD_QUERIES: u8 = 3;

/// SMs remembered as reported (a fabric with more reports the newest again).
const MAX_REPORTED: usize = 1024;

/// Are the rules on? For a Raft cluster's master (`gate_programming`) only when the
/// driver names its replicas' SM ports ([`SweeperConfig::peer_sms`]): they are never
/// queried (Raft fences them; a paused replica would hold up every sweep by a full round
/// of SMInfo resends), so every SM it queries is a foreign one and the cluster obeys the
/// rules as one SM.
pub(crate) fn obeys_foreign_sms(cfg: &SweeperConfig) -> bool {
    cfg.obey_foreign_sms && (!cfg.gate_programming || !cfg.peer_sms.is_empty())
}

/// May this master send HANDOVER to a STANDBY SM that outranks it? Not a Raft cluster's
/// master: which replica masters is Raft's choice (priorities included), and a replica
/// missing from [`SweeperConfig::peer_sms`] answers STANDBY but never takes a HANDOVER.
pub(crate) fn hands_over(cfg: &SweeperConfig) -> bool {
    !cfg.gate_programming
}

impl ForeignSms {
    /// The SMs found at other ports by the last heavy sweep (their SMInfo answers).
    pub fn remote(&self) -> &[RemoteSm] {
        &self.found
    }

    /// The foreign master this SM stands by for.
    pub fn master(&self) -> Option<Followed> {
        self.master
    }

    /// True while this SM stands by for a foreign master, waits for the SM it handed
    /// over to, or is NOT-ACTIVE (sends nothing but polls, SMInfo answers and handover
    /// messages).
    pub fn standing_by(&self) -> bool {
        self.master.is_some() || self.handing.is_some() || self.disabled
    }

    /// Did `guid` hand over to this SM recently (its MASTER answers are then expected)?
    pub fn handed_over_by(&self, guid: Guid) -> bool {
        self.handed_by == Some(guid)
    }

    /// A poll of the followed master (or of the SM handed over to) is in flight.
    pub fn polling(&self) -> bool {
        self.polling
    }

    /// A discovery finished: the next query starts afresh (no master followed, no poll).
    /// Returns true when a handover was under way (this SM then sweeps as one coming out
    /// of STANDBY).
    pub fn begin_query(&mut self) -> bool {
        self.master = None;
        let was_handing = self.handing.take().is_some();
        self.pending = None;
        self.polling = false;
        self.found.clear();
        self.found_at.clear();
        was_handing
    }

    /// The ports with an SM other than this one's and its cluster's (`peers`) in this
    /// sweep's discovery: a switch's SM sits behind port 0, a CA's at each port reached.
    pub fn query_targets(disc: &Discovery, peers: &[Guid]) -> Vec<(u32, u8)> {
        let sweep = disc.sweep();
        let (local, local_port) = (disc.local(), disc.local_port());
        disc.end_ports_seen()
            .filter(|&(i, p, n, port)| {
                port.info_sweep == sweep
                    && port.info.capability_mask & PortInfo::CAP_IS_SM != 0
                    && (n.is_switch || disc.path_sweep(n.port_index(p)) == sweep)
                    && !(i == local && p == local_port)
                    && !peers.contains(&port.guid)
            })
            .map(|(i, p, _, _)| (i, p))
            .collect()
    }

    /// The SMs of the last query not reported before, with where they sit (node, port);
    /// they count as reported from now on.
    pub fn first_seen(&mut self) -> Vec<(RemoteSm, u32, u8)> {
        let mut out = Vec::new();
        for (r, &(node, port)) in self.found.iter().zip(&self.found_at) {
            if !self.reported.contains(&r.port_guid) {
                if self.reported.len() >= MAX_REPORTED {
                    self.reported.remove(0);
                }
                self.reported.push(r.port_guid);
                out.push((*r, node, port));
            }
        }
        out
    }

    /// The SMs the last heavy sweep found, asked again by a master's light sweep.
    pub fn light_targets(&self) -> Vec<(u32, u8)> {
        self.found_at.clone()
    }

    /// An SMInfo answer during a light sweep of this SM (rank `own`; `master`: this SM is
    /// MASTER). Returns true when it calls for a heavy sweep.
    /// `hand_over`: a HANDOVER may be sent ([`hands_over`]).
    pub fn light_answer(
        &mut self,
        info: &SmInfo,
        own: (u8, Guid),
        master: bool,
        hand_over: bool,
    ) -> bool {
        let (prio, guid) = own;
        let active = |s: Option<SmState>| matches!(s, Some(SmState::Master | SmState::Discovering));
        let was = self
            .found
            .iter()
            .find(|r| r.port_guid == info.guid)
            .map(|r| r.state);
        let higher = outranks(info.priority, info.guid, prio, guid);
        if info.state() != Some(SmState::Standby) {
            self.refused.retain(|g| *g != info.guid);
        }
        if info.state() == Some(SmState::Master) && higher {
            // The heavy sweep this starts stands by after its discovery.
            true
        } else if info.state() == Some(SmState::Standby)
            && higher
            && master
            && hand_over
            && !self.refused.contains(&info.guid)
        {
            // A handover is due: the heavy sweep this starts sends it.
            true
        } else {
            // It was sweeping (and may have written: MasterSMLID, tables) and has yielded
            // since: a heavy sweep puts back what this master wants.
            was.is_some_and(active) && !active(info.state())
        }
    }

    /// An SMInfo answer of the SM at `(node, port)` outside a light sweep: a poll's answer,
    /// or one of the post-discovery query.
    pub fn answer(&mut self, node: u32, port: u8, info: SmInfo) {
        if self.polling {
            self.poll_answer = Some(info);
            return;
        }
        if info.state() != Some(SmState::Standby) {
            self.refused.retain(|g| *g != info.guid);
        }
        self.found.push(RemoteSm {
            port_guid: info.guid,
            priority: info.priority,
            state: info.state(),
            act_count: info.act_count,
        });
        self.found_at.push((node, port));
    }

    /// The post-discovery query ended (this SM: rank `own`; `master`: it is MASTER;
    /// `hand_over`: a HANDOVER may be sent, [`hands_over`]).
    pub fn finish_query(&mut self, own: (u8, Guid), master: bool, hand_over: bool) -> QueryOutcome {
        let (prio, guid) = own;
        // The SM that just handed over may still answer MASTER for a while (a query sent
        // before the HANDOVER arrived, or before the ACKNOWLEDGE reached it): it counts as
        // the STANDBY it becomes for up to HANDED_QUERIES queries, then a MASTER is one.
        if let Some(h) = self.handed_by {
            match self.found.iter_mut().find(|r| r.port_guid == h) {
                Some(r)
                    if r.state == Some(SmState::Master) && self.handed_queries < HANDED_QUERIES =>
                {
                    r.state = Some(SmState::Standby);
                    self.handed_queries += 1;
                }
                _ => {
                    self.handed_by = None;
                    self.handed_queries = 0;
                }
            }
        }
        // DISCOVERING: any MASTER makes this SM stand by (IBA 14.4; OpenSM does). MASTER:
        // only one that outranks it; a lower one is expected to hand over.
        let mut best: Option<(usize, &RemoteSm)> = None;
        for (k, r) in self.found.iter().enumerate() {
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
        // DISCOVERING: with no MASTER, a DISCOVERING or STANDBY SM that outranks this one
        // makes it stand by too (OpenSM's `smi_rcv_process_get_sm`: "the remote is a higher
        // sm - need to stop sweeping"), so two SMs sweeping at once do not both write: the
        // higher one masters, this one polls it and sweeps again when it does not.
        if best.is_some() {
            self.yielded = None;
        } else if !master {
            let spent =
                |g: Guid| matches!(self.yielded, Some((y, n)) if y == g && n >= YIELD_QUERIES);
            for (k, r) in self.found.iter().enumerate() {
                if matches!(r.state, Some(SmState::Discovering | SmState::Standby))
                    && outranks(r.priority, r.port_guid, prio, guid)
                    && !spent(r.port_guid)
                    && best.is_none_or(|(_, b)| {
                        outranks(r.priority, r.port_guid, b.priority, b.port_guid)
                    })
                {
                    best = Some((k, r));
                }
            }
        }
        if let Some((_, r)) = best
            && r.state != Some(SmState::Master)
        {
            let n = match self.yielded {
                Some((g, n)) if g == r.port_guid => n,
                _ => 0,
            };
            self.yielded = Some((r.port_guid, n + 1));
        }
        let Some((k, r)) = best else {
            if master
                && hand_over
                && let Some(f) = self.handover_target(own)
            {
                return QueryOutcome::Handover(f);
            }
            return QueryOutcome::Proceed;
        };
        let (node, port) = self.found_at[k];
        let f = Followed {
            node,
            port,
            guid: r.port_guid,
            priority: r.priority,
        };
        // It should hand over to this SM when this SM outranks it.
        let notify = outranks(prio, guid, f.priority, f.guid);
        QueryOutcome::Standby { master: f, notify }
    }

    /// The query is over: the SMs found that could take the fabric are watched from now
    /// on (see [`ForeignSms::missed_watched`]).
    pub fn watch_found(&mut self, own: (u8, Guid)) {
        self.watched = self
            .found
            .iter()
            .filter(|r| {
                r.state == Some(SmState::Master) || outranks(r.priority, r.port_guid, own.0, own.1)
            })
            .map(|r| r.port_guid)
            .collect();
        self.held = 0;
    }

    /// Whether a discovery that lost reads holds its sweep back (writes nothing, sweeps
    /// again): it missed a watched SM (`Some(Some(guid))`), or `before_up` (this SM has not
    /// brought the subnet up as master: an SM that appeared while no master ran trapped
    /// to nobody, and only a discovery finds it) (`Some(None)`). None after [`HOLD_SWEEPS`]
    /// holds in a row: the sweep goes on with what it found.
    pub fn hold(&mut self, before_up: bool) -> Option<Option<Guid>> {
        let missed = self
            .watched
            .iter()
            .copied()
            .find(|g| !self.found.iter().any(|r| r.port_guid == *g));
        if (missed.is_none() && !before_up) || self.held >= HOLD_SWEEPS {
            return None;
        }
        self.held += 1;
        Some(missed)
    }

    /// Stands by for `f` (polls counted from now).
    pub fn follow(&mut self, f: Followed) {
        self.master = Some(f);
        self.missed = 0;
        self.polls_made = 0;
    }

    /// Forgets the master followed.
    pub fn unfollow(&mut self) {
        self.master = None;
    }

    /// The next programming reads back the LFT blocks it would write first.
    pub fn verify_lfts(&mut self) {
        self.verify_lfts = true;
    }

    /// A poll is due: the SM polled (the master followed, or the one handed over to).
    pub fn start_poll(&mut self) -> Option<Followed> {
        let f = self.master.or(self.handing.map(|h| h.to))?;
        self.polling = true;
        self.poll_answer = None;
        Some(f)
    }

    /// A poll ended: its answer, and a Set deferred while it ran.
    pub fn end_poll(&mut self) -> (Option<SmInfo>, Option<SetAction>) {
        self.polling = false;
        (self.poll_answer.take(), self.pending.take())
    }

    /// What the poll of the followed master `f` found (this SM: rank `own`; `misses`:
    /// polls in a row without an answer after which it is gone).
    pub fn master_polled(
        &mut self,
        f: Followed,
        answer: Option<SmInfo>,
        own: (u8, Guid),
        misses: u8,
    ) -> MasterPoll {
        let (prio, guid) = own;
        let mut notify = false;
        let gone = match answer {
            Some(a) => {
                self.missed = 0;
                let still = a.state() == Some(SmState::Master) && a.guid == f.guid;
                self.polls_made += 1;
                if still
                    && outranks(prio, guid, a.priority, a.guid)
                    && self.polls_made.is_multiple_of(NOTIFY_EVERY_POLLS)
                {
                    notify = true;
                }
                (!still).then_some(a.state())
            }
            None => {
                self.missed = self.missed.saturating_add(1);
                (self.missed >= misses.max(1)).then_some(None)
            }
        };
        match gone {
            None => MasterPoll::Still { notify },
            Some(state) => {
                let missed = self.missed;
                self.master = None;
                self.missed = 0;
                self.verify_lfts = true;
                MasterPoll::Gone {
                    master: f,
                    state,
                    missed,
                }
            }
        }
    }

    /// Routing planned `blocks` LFT blocks: after taking over from a foreign master, they
    /// are read back first. Returns true when the check runs.
    pub fn begin_lft_check(&mut self, blocks: usize) -> bool {
        if !std::mem::take(&mut self.verify_lfts) || blocks == 0 {
            return false;
        }
        self.lft_same.clear();
        self.lft_read = blocks;
        true
    }

    /// A block read back holds what the routing wants.
    pub fn lft_block_same(&mut self, node: u32, block: u16) {
        self.lft_same.push((node, block));
    }

    /// The check ended: the blocks found right (not written) and the blocks read.
    pub fn end_lft_check(&mut self) -> (Vec<(u32, u16)>, usize) {
        (std::mem::take(&mut self.lft_same), self.lft_read)
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

    fn sm(guid: u64, priority: u8, state: SmState) -> RemoteSm {
        RemoteSm {
            port_guid: Guid(guid),
            priority,
            state: Some(state),
            act_count: 0,
        }
    }

    #[test]
    fn a_lossy_discovery_holds_for_a_missed_sm_or_before_subnet_up_a_bounded_number_of_times() {
        let own = (5, Guid(50));
        // A MASTER, a higher STANDBY, a lower STANDBY: the first two are watched.
        let mut f = ForeignSms {
            found: vec![
                sm(1, 1, SmState::Master),
                sm(2, 9, SmState::Standby),
                sm(3, 1, SmState::Standby),
            ],
            ..ForeignSms::default()
        };
        f.watch_found(own);
        assert_eq!(f.watched, vec![Guid(1), Guid(2)]);
        // All found again: nothing to hold for, unless the subnet is not up yet.
        assert_eq!(f.hold(false), None);
        assert_eq!(f.hold(true), Some(None));
        f.watch_found(own);
        // The lower one missed: nothing to hold for.
        f.found.truncate(2);
        assert_eq!(f.hold(false), None);
        // The MASTER missed: held HOLD_SWEEPS times, then the sweep goes on.
        f.found = vec![sm(2, 9, SmState::Standby)];
        for _ in 0..HOLD_SWEEPS {
            assert_eq!(f.hold(false), Some(Some(Guid(1))));
        }
        assert_eq!(f.hold(false), None);
        assert_eq!(f.hold(true), None);
        // Going on watches what it found: the count starts again.
        f.watch_found(own);
        assert_eq!(f.watched, vec![Guid(2)]);
        f.found.clear();
        assert_eq!(f.hold(false), Some(Some(Guid(2))));
    }
}
