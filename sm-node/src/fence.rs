//! The replica's write lease as the daemon shares it ([`Lease`]: the replica core computes
//! it, the master and the fenced transport read it), and [`FencedTransport`]: the master's
//! transport with every Set SMP dropped while the lease does not hold (the rule is
//! `replica_core::lease::fence_allows`, the one the simulation applies). Gets pass.

use crate::transport::{Transport, TransportError};
use fabric::{Guid, Lid};
use mad::{Method, Smp};
use replica_core::VTime;
use replica_core::lease::fence_allows;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The lease end, shared between the replica's actor (writer) and the master and its
/// transport (readers), on the replica's clock (nanoseconds since `base`).
#[derive(Debug)]
pub struct Lease {
    base: Instant,
    /// Nanoseconds after `base` until which the lease holds (0: none).
    until: AtomicU64,
}

impl Lease {
    /// A lease that holds nothing, on a clock that starts at `base`.
    pub fn new(base: Instant) -> Arc<Lease> {
        Arc::new(Lease {
            base,
            until: AtomicU64::new(0),
        })
    }

    /// The replica's clock now.
    pub fn now(&self) -> VTime {
        self.base.elapsed().as_nanos() as VTime
    }

    /// Sets the end of the lease (None: no lease).
    pub fn set(&self, until: Option<VTime>) {
        self.until
            .store(until.map_or(0, |u| u.max(1)), Ordering::Release);
    }

    /// End of the lease on the replica's clock.
    pub fn until_vtime(&self) -> Option<VTime> {
        match self.until.load(Ordering::Acquire) {
            0 => None,
            n => Some(n),
        }
    }

    /// When the lease ends (None: no lease).
    pub fn until(&self) -> Option<Instant> {
        self.until_vtime()
            .map(|n| self.base + Duration::from_nanos(n))
    }

    /// May an SMP of `method` leave now?
    pub fn allows(&self, method: Method) -> bool {
        fence_allows(method, self.until_vtime(), self.now())
    }

    /// True while the lease holds now.
    pub fn valid(&self) -> bool {
        self.allows(Method::SET)
    }
}

/// A transport that refuses Sets without a lease.
pub struct FencedTransport {
    inner: Box<dyn Transport>,
    lease: Arc<Lease>,
    dropped: Arc<AtomicU64>,
}

impl FencedTransport {
    /// Wraps `inner`; `dropped` counts the Sets refused.
    pub fn new(inner: Box<dyn Transport>, lease: Arc<Lease>, dropped: Arc<AtomicU64>) -> Self {
        FencedTransport {
            inner,
            lease,
            dropped,
        }
    }
}

impl Transport for FencedTransport {
    fn send(&mut self, dlid: Lid, smp: &Smp) -> Result<(), TransportError> {
        if !self.lease.allows(smp.method) {
            if self.dropped.fetch_add(1, Ordering::Relaxed) == 0 {
                tracing::warn!("FENCE-W001 no valid lease: Set SMPs are dropped");
            }
            return Ok(());
        }
        self.inner.send(dlid, smp)
    }

    fn flush(&mut self) -> Result<(), TransportError> {
        self.inner.flush()
    }

    fn port_guid(&self) -> Guid {
        self.inner.port_guid()
    }

    fn describe(&self) -> String {
        format!("{} (fenced by the Raft lease)", self.inner.describe())
    }

    fn send_gmp(
        &mut self,
        dlid: Lid,
        dqpn: u32,
        mad: &[u8; 256],
        len: usize,
    ) -> Result<(), TransportError> {
        // SA answers change nothing in the fabric: not fenced.
        self.inner.send_gmp(dlid, dqpn, mad, len)
    }

    fn take_gmps(&mut self) -> Option<crate::transport::GmpRx> {
        self.inner.take_gmps()
    }
}
