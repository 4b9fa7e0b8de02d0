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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    struct Sink(Arc<Mutex<Vec<Method>>>);

    impl Transport for Sink {
        fn send(&mut self, _: Lid, smp: &Smp) -> Result<(), TransportError> {
            self.0.lock().unwrap().push(smp.method);
            Ok(())
        }
        fn flush(&mut self) -> Result<(), TransportError> {
            Ok(())
        }
        fn port_guid(&self) -> Guid {
            Guid(1)
        }
        fn describe(&self) -> String {
            "sink".into()
        }
    }

    #[test]
    fn sets_pass_only_within_the_lease_and_gets_always() {
        let sent = Arc::new(Mutex::new(Vec::new()));
        let lease = Lease::new();
        let dropped = Arc::new(AtomicU64::new(0));
        let mut t =
            FencedTransport::new(Box::new(Sink(sent.clone())), lease.clone(), dropped.clone());
        let get = Smp {
            method: Method::GET,
            ..Smp::default()
        };
        let set = Smp {
            method: Method::SET,
            ..Smp::default()
        };
        // No lease yet.
        t.send(Lid(1), &get).unwrap();
        t.send(Lid(1), &set).unwrap();
        assert_eq!(*sent.lock().unwrap(), [Method::GET]);
        // Within the lease.
        lease.hold_until(Instant::now() + Duration::from_secs(60));
        t.send(Lid(1), &set).unwrap();
        assert_eq!(sent.lock().unwrap().len(), 2);
        // Expired (a paused process wakes up past it), then revoked.
        lease.hold_until(Instant::now() - Duration::from_millis(1));
        t.send(Lid(1), &set).unwrap();
        lease.hold_until(Instant::now() + Duration::from_secs(60));
        lease.revoke();
        t.send(Lid(1), &set).unwrap();
        t.send(Lid(1), &get).unwrap();
        assert_eq!(
            *sent.lock().unwrap(),
            [Method::GET, Method::SET, Method::GET]
        );
        assert_eq!(dropped.load(Ordering::Relaxed), 3);
    }
}
