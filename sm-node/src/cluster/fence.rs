//! [`FencedTransport`]: the master's transport, with every Set SMP dropped while the
//! replica's [`Lease`] does not hold. Gets pass (they change nothing in the fabric).

use super::lease::Lease;
use crate::transport::{Transport, TransportError};
use fabric::{Guid, Lid};
use mad::{Method, Smp};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

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
        if smp.method == Method::SET && !self.lease.valid() {
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
}
