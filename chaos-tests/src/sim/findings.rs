//! Defects the simulation found in the code under test, still open. A batch run counts a
//! failure matching one of them separately instead of stopping on it, so that CI keeps
//! catching anything new; each one has a seed that reproduces it and an ignored test in
//! `tests/sim.rs` that asserts the invariant (un-ignore it once fixed).

use super::{Action, Failure};

/// An open defect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Finding {
    /// F1 (sm-core discovery): a master seeded with `known_pkeys` trusts them for a switch
    /// that rebooted (ports fresh, tables back to the default): its ports' P_Key tables are
    /// never rewritten and partition enforcement drops traffic the policy allows.
    /// Reproduced by seed 93.
    RebootedSwitchPKeys,
    /// F2 (sm-core light sweep): when the master's own CA link flaps during a sweep, the
    /// heavy sweep finds a one-node fabric and later light sweeps send no SMP: the port
    /// stays INIT for good. Reproduced by seed 109.
    OwnLinkFlapStuck,
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
            Finding::RebootedSwitchPKeys => 93,
            Finding::OwnLinkFlapStuck => 109,
            Finding::StaleAckLease => 1081,
        }
    }

    /// Short name.
    pub fn code(self) -> &'static str {
        match self {
            Finding::RebootedSwitchPKeys => "F1 rebooted switch P_Keys",
            Finding::OwnLinkFlapStuck => "F2 own link flap",
            Finding::StaleAckLease => "F3 stale-ack lease",
        }
    }
}

/// The open defect `f` matches, if any: its invariant and the fault that triggers it.
pub fn classify(f: &Failure) -> Option<Finding> {
    let what = &f.violation.what;
    let has = |p: fn(&Action) -> bool| f.schedule.steps.iter().any(|s| p(&s.action));
    if what.starts_with("INV-SETTLE")
        && (what.contains("INV-DELIVERY") || what.contains("P_Key"))
        && has(|a| matches!(a, Action::SwitchReboot { .. }))
    {
        return Some(Finding::RebootedSwitchPKeys);
    }
    if what.starts_with("INV-SETTLE")
        && what.contains("INV-ACTIVE")
        && has(|a| matches!(a, Action::LinkFlap { .. }))
    {
        return Some(Finding::OwnLinkFlapStuck);
    }
    if what.starts_with("INV-FENCE")
        && what.contains("a deposed master wrote")
        && has(|a| matches!(a, Action::PauseLeader | Action::Pause(_)))
    {
        return Some(Finding::StaleAckLease);
    }
    None
}
