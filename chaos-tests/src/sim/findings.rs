//! Defects the simulation found in the code under test, still open. (Three more it found
//! were fixed in sm-core while this crate was written — F1: P_Key tables of a switch
//! rebooted between masters never rewritten, seed 93; F2: the master's own link flap leaving
//! its port INIT for good, seed 109; F4: a port whose Set failed in an intent never written
//! again, seeds 1197 and 3956 — and `tests/sim.rs` keeps their seeds as regression tests.)
//! A batch run counts a
//! failure matching one of them separately instead of stopping on it, so that CI keeps
//! catching anything new; each one has a seed that reproduces it and an ignored test in
//! `tests/sim.rs` that asserts the invariant (un-ignore it once fixed).

use super::{Action, Failure};

/// An open defect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Finding {
    /// F3 (sm-node lease): a SIGSTOP'ed leader, resumed after another replica won a later
    /// term, counts the heartbeat responses that waited in its socket as fresh
    /// acknowledgements (timestamped on receipt, not on send), renews its lease and sends
    /// Sets before it learns the new term. Reproduced by seed 1081.
    StaleAckLease,
}

impl Finding {
    /// A seed whose schedule reproduces it.
    pub fn seed(self) -> u64 {
        match self {
            Finding::StaleAckLease => 1081,
        }
    }

    /// Short name.
    pub fn code(self) -> &'static str {
        match self {
            Finding::StaleAckLease => "F3 stale-ack lease",
        }
    }
}

/// The open defect `f` matches, if any: its invariant and the fault that triggers it.
pub fn classify(f: &Failure) -> Option<Finding> {
    let what = &f.violation.what;
    let has = |p: fn(&Action) -> bool| f.schedule.steps.iter().any(|s| p(&s.action));
    if what.starts_with("INV-FENCE")
        && what.contains("a deposed master wrote")
        && has(|a| matches!(a, Action::PauseLeader | Action::Pause(_)))
    {
        return Some(Finding::StaleAckLease);
    }
    None
}
