//! [`Light`] owns what the running light sweep found; it never sends and never starts the
//! heavy sweep it calls for.
//!
//! Light sweeps: every interval, poll SwitchInfo of every switch. PortStateChange
//! set, a LinearFDBTop that is not what this SM wrote (the switch rebooted and lost its
//! LFT), or a switch that does not answer means a heavy sweep; otherwise nothing is
//! written. CA port changes show up as the PortStateChange of the switch at the other end
//! of the link. The other SMs the last heavy sweep found are asked for their SMInfo again:
//! a MASTER that outranks this SM means a heavy sweep too (which then stands by; see
//! `foreign`).

use crate::counters::Counters;
use crate::state::Switch;
use mad::SwitchInfo;

/// The running (or last) light sweep.
#[derive(Debug, Default)]
pub(crate) struct Light {
    /// A change was found (a heavy sweep follows).
    changed: bool,
    /// The counters when it started.
    start: Counters,
}

impl Light {
    /// A light sweep starts with `counters`; `changed`: it calls for a heavy sweep
    /// whatever it finds.
    pub fn start(&mut self, changed: bool, counters: Counters) {
        self.changed = changed;
        self.start = counters;
    }

    /// A change was found.
    pub fn changed(&mut self) {
        self.changed = true;
    }

    /// A switch answered its SwitchInfo poll with `info`.
    pub fn on_switch_info(&mut self, s: &Switch, info: &SwitchInfo) {
        if info.port_state_change || !s.lft_valid || info.linear_fdb_top != s.fdb_top {
            self.changed = true;
        }
    }

    /// The light sweep ended: whether it found a change, and the SMPs sent since it
    /// started (`counters`: now).
    pub fn finish(&self, counters: &Counters) -> (bool, u64) {
        (self.changed, counters.since(&self.start).total())
    }
}
