//! The fenced transport: Set SMPs pass only within the write lease, Gets always.

use fabric::{Guid, Lid};
use mad::{Method, Smp};
use replica_core::VTime;
use sm_node::fence::{FencedTransport, Lease};
use sm_node::transport::{Transport, TransportError};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
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
    let lease = Lease::new(Instant::now());
    let hour = Duration::from_secs(3600).as_nanos() as VTime;
    let dropped = Arc::new(AtomicU64::new(0));
    let mut t = FencedTransport::new(Box::new(Sink(sent.clone())), lease.clone(), dropped.clone());
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
    lease.set(Some(lease.now() + hour));
    t.send(Lid(1), &set).unwrap();
    assert_eq!(sent.lock().unwrap().len(), 2);
    // Expired (a paused process wakes up past it), then revoked.
    lease.set(Some(lease.now().saturating_sub(1).max(1)));
    t.send(Lid(1), &set).unwrap();
    lease.set(Some(lease.now() + hour));
    lease.set(None);
    t.send(Lid(1), &set).unwrap();
    t.send(Lid(1), &get).unwrap();
    assert_eq!(
        *sent.lock().unwrap(),
        [Method::GET, Method::SET, Method::GET]
    );
    assert_eq!(dropped.load(Ordering::Relaxed), 3);
}
