//! [`Fencing`] owns the fence and the write lease and answers whether a Set may leave; it
//! never holds a Set back itself (the sweeper does not transmit while it says no).
//!
//! What a replicated (Raft) master needs beyond a single SM: role, fencing, and the M_Key
//! rotation per term (see `crate::keys`).
//!
//! * Role: a [`crate::Role::Standby`] sweeper sends nothing but SMInfo answers (state STANDBY).
//! * Fencing: while [`crate::Sweeper::set_fenced`] is on, or the sweeper's time has reached the
//!   write lease ([`crate::Sweeper::set_lease`]), no Set leaves (Gets, SMInfo answers and trap
//!   represses do); queued Sets wait and go when it is lifted. [`crate::Sweeper::step_down`]
//!   drops everything queued or in flight and turns the sweeper into a standby.
//! * M_Key: SMPs carry, per target, the key its management port is believed to hold, and
//!   a takeover rotates every port to this term's key before any other Set (see
//!   `crate::keys`).

use crate::VTime;

/// Fencing and the write lease of a sweeper.
#[derive(Debug, Default)]
pub(crate) struct Fencing {
    /// No Set may leave (not leader of the current term with a valid lease).
    fenced: bool,
    /// Sets leave only before this time (None: no lease).
    lease_until: Option<VTime>,
}

/// How often a master whose Sets wait for its lease looks at the lease again (see
/// [`crate::Sweeper::poll_timeout`]).
pub(crate) const FENCE_RECHECK: VTime = 10 * crate::MS;

impl Fencing {
    pub fn set_fenced(&mut self, fenced: bool) {
        self.fenced = fenced;
    }

    pub fn is_fenced(&self) -> bool {
        self.fenced
    }

    pub fn set_lease(&mut self, until: Option<VTime>) {
        self.lease_until = until;
    }

    /// A lease is in use (a cluster's sweeper).
    pub fn has_lease(&self) -> bool {
        self.lease_until.is_some()
    }

    /// Not fenced, but the lease has run out at `now` (only the driver's extension of the
    /// lease, not a call of the sweeper, lets Sets leave again).
    pub fn lease_lapsed(&self, now: VTime) -> bool {
        !self.fenced && self.lease_until.is_some_and(|u| now >= u)
    }

    /// Not fenced, and `now` within the lease.
    pub fn allows_sets(&self, now: VTime) -> bool {
        !self.fenced && self.lease_until.is_none_or(|u| now < u)
    }
}
