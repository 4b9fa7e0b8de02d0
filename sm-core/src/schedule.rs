//! Sweep scheduling ([`Schedule`]): the heavy sweep asked for (and why), when the next
//! sweep is due (a light sweep, a heavy one asked for, or a poll of a foreign master), and
//! what the heavy sweeps left behind: whether the last one was clean, whether one has
//! completed at all, and the counters when the running one started.
//!
//! It only remembers; it never starts a sweep (the sweeper does, when a timeout finds one
//! due or a sweep ends).

use crate::VTime;
use crate::counters::Counters;
use crate::events::SweepReason;

/// The sweep schedule of a sweeper.
#[derive(Debug)]
pub(crate) struct Schedule {
    /// A heavy sweep asked for, and why.
    heavy: Option<SweepReason>,
    /// When the next sweep (light, heavy asked for, or poll) is due.
    next: Option<VTime>,
    /// The current or last heavy sweep gave up on a request or left a port not ACTIVE.
    dirty: bool,
    /// A heavy sweep has ended (complete, abandoned, or for a foreign master).
    first_done: bool,
    /// The counters when the running (or last) heavy sweep started.
    started: Counters,
    /// LIDs of the switches whose link-state changes (trap 128, PortStateChange) asked for
    /// the pending heavy sweep.
    trap_lids: Vec<fabric::Lid>,
    /// The pending heavy sweep was also asked for another reason: a full discovery.
    full: bool,
}

impl Schedule {
    /// A master's first heavy sweep is due at once; a standby has nothing scheduled.
    pub fn new(standby: bool) -> Schedule {
        Schedule {
            heavy: (!standby).then_some(SweepReason::Initial),
            next: (!standby).then_some(0),
            dirty: false,
            first_done: false,
            started: Counters::default(),
            trap_lids: Vec::new(),
            full: true,
        }
    }

    /// Asks for a heavy sweep (a reason already given is kept).
    pub fn request_heavy(&mut self, reason: SweepReason) {
        self.full = true;
        self.heavy.get_or_insert(reason);
    }

    /// A heavy sweep is asked for, replacing any reason given.
    pub fn force_heavy(&mut self, reason: SweepReason) {
        self.full = true;
        self.heavy = Some(reason);
    }

    /// A change of link state at the switch at `lid` (its trap 128, or its PortStateChange
    /// seen by a light sweep) asks for a heavy sweep that may re-read that switch alone.
    pub fn request_for_links(&mut self, reason: SweepReason, lid: fabric::Lid) {
        if !self.trap_lids.contains(&lid) {
            self.trap_lids.push(lid);
        }
        self.heavy.get_or_insert(reason);
    }

    /// The switches a starting heavy sweep may re-read alone: the LIDs of the link-state
    /// changes that asked for it, when nothing else did (None: a full discovery). Forgets
    /// them either way.
    pub fn take_trap_lids(&mut self) -> Option<Vec<fabric::Lid>> {
        let lids = std::mem::take(&mut self.trap_lids);
        let full = std::mem::replace(&mut self.full, false);
        (!full && !lids.is_empty()).then_some(lids)
    }

    /// Is a heavy sweep with a full discovery asked for (a reason other than link-state
    /// changes: trap 144 or 145, an operator's request)?
    pub fn full_pending(&self) -> bool {
        self.heavy.is_some() && self.full
    }

    /// Is a heavy sweep asked for?
    pub fn heavy_pending(&self) -> bool {
        self.heavy.is_some()
    }

    /// The heavy sweep asked for is starting: its reason.
    pub fn take_heavy(&mut self) -> SweepReason {
        self.heavy.take().unwrap_or(SweepReason::Requested)
    }

    /// No heavy sweep asked for any more.
    pub fn drop_heavy(&mut self) {
        self.heavy = None;
    }

    /// When the next sweep is due.
    pub fn next(&self) -> Option<VTime> {
        self.next
    }

    /// The next sweep is due at `at` (None: nothing scheduled).
    pub fn set_next(&mut self, at: Option<VTime>) {
        self.next = at;
    }

    /// True (and no longer scheduled) when the next sweep is due at `now`.
    pub fn take_due(&mut self, now: VTime) -> bool {
        if self.next.is_some_and(|t| t <= now) {
            self.next = None;
            return true;
        }
        false
    }

    /// A heavy sweep starts with `counters`: clean so far.
    pub fn heavy_started(&mut self, counters: Counters) {
        self.started = counters;
        self.dirty = false;
    }

    /// The counters when the running heavy sweep started.
    pub fn started(&self) -> &Counters {
        &self.started
    }

    /// The heavy sweep is not clean (a heavy sweep follows at the next interval).
    pub fn mark_dirty(&mut self) {
        self.dirty = true;
    }

    /// The current or last heavy sweep is not clean.
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }

    /// A heavy sweep ended.
    pub fn heavy_ended(&mut self) {
        self.first_done = true;
    }

    /// Has a heavy sweep ended yet?
    pub fn first_done(&self) -> bool {
        self.first_done
    }
}
