//! The master's write lease: Set SMPs are allowed only while it is valid.
//!
//! The RaftActor extends it, while leader, to the time a quorum of voters (counting itself)
//! last acknowledged this leader's term, plus half the minimum election timeout. A follower
//! that heard from this leader within an election timeout refuses to vote for anyone else
//! (check_quorum), so no other leader can exist before the lease ends. A paused process
//! (SIGSTOP) wakes up with an expired lease: the monotonic clock kept running.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Shared between the RaftActor (writer) and the fenced transport (reader).
#[derive(Debug)]
pub struct Lease {
    base: Instant,
    /// Nanoseconds after `base` until which the lease holds (0: none).
    until: AtomicU64,
}

impl Lease {
    /// A lease that holds nothing.
    pub fn new() -> Arc<Lease> {
        Arc::new(Lease {
            base: Instant::now(),
            until: AtomicU64::new(0),
        })
    }

    fn nanos(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.base).as_nanos() as u64
    }

    /// True while the lease holds now.
    pub fn valid(&self) -> bool {
        let until = self.until.load(Ordering::Acquire);
        until != 0 && self.nanos(Instant::now()) < until
    }

    /// When the lease ends (None: no lease).
    pub fn until(&self) -> Option<Instant> {
        match self.until.load(Ordering::Acquire) {
            0 => None,
            n => Some(self.base + std::time::Duration::from_nanos(n)),
        }
    }

    /// Sets the end of the lease.
    pub fn hold_until(&self, t: Instant) {
        self.until.store(self.nanos(t).max(1), Ordering::Release);
    }

    /// Ends the lease now.
    pub fn revoke(&self) {
        self.until.store(0, Ordering::Release);
    }
}
