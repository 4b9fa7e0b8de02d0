//! The kernel user-MAD transport: the SM's QP0 through `/dev/infiniband/umadN` (a real HCA,
//! or ibsim through `LD_PRELOAD=libumad2sim.so`), built on the `umad` crate.
//!
//! Attach: open the device with the libc symbol `open`, register the SMP agents (0x81
//! directed route, 0x01 LID-routed; traps arrive on 0x01), claim the SM role (`issmN`: the
//! IsSM capability bit, and under ibsim the only way to receive traps and SMInfo requests),
//! read the local port with a directed-route Get of hop count 0 (its GUID; the LID comes
//! from the sweeper's own discovery, sysfs is a stale snapshot under umad2sim). A
//! [`umad::ReaderThread`] turns what the port reads into [`Inbound`] batches.
//!
//! Timeouts and retries stay with sm-core's sweeper (every retry carries a fresh TID, unique
//! in its low 32 bits, the only bits the kernel and umad2sim keep). The kernel's own request
//! timeout is set well above the sweeper's, so that the kernel never drops a late response
//! the sweeper still waits for; its `ETIMEDOUT` copies of requests are dropped here.

use super::{Attached, Inbound, Transport, TransportError};
use ::umad::{Dest, ReaderThread, ReceivedMad, RecvStatus, UmadPort};
use fabric::{Guid, Lid};
use mad::Smp;
use std::sync::Arc;
use std::time::Duration;

/// MADs handed to the master in one batch at most.
const MAX_BATCH: usize = 256;

/// Outstanding SMPs allowed on a umad port. ibsim declares a client dead with more than
/// about 256 requests in flight (umad README); 128 leaves room for traps and retries, and a
/// real HCA's QP0 send queue is of the same order.
pub const UMAD_WINDOW: usize = 128;

/// Default per-attempt SMP timeout on umad, in ms. ibsim answers in tens of µs when idle but
/// queues up to a window's worth of SMPs behind a busy single thread, and a real fabric has
/// switch hops of its own: 200 ms never fires on a healthy fabric and still retries quickly.
pub const UMAD_SMP_TIMEOUT_MS: u64 = 200;

/// How long attach waits for the local port's answers.
const ATTACH_TIMEOUT: Duration = Duration::from_secs(2);

/// Opens `device`, registers the SMP agents, claims the SM role, checks the local port number
/// against `expect_port` (when given) and starts the reader thread. `smp_timeout_ms` is the
/// sweeper's per-attempt timeout (the kernel's is set to four times it, at least 1 s).
pub fn attach(
    device: &str,
    expect_port: Option<u8>,
    smp_timeout_ms: u64,
) -> Result<Attached, TransportError> {
    let att = |e: ::umad::UmadError| TransportError::Attach(format!("{device}: {e}"));
    let port = UmadPort::open(device).map_err(att)?;
    port.register_smp_agents().map_err(att)?;
    port.claim_sm().map_err(att)?;
    let kernel_ms = smp_timeout_ms
        .saturating_mul(4)
        .clamp(1000, u64::from(u32::MAX));
    port.set_kernel_timeout_ms(u32::try_from(kernel_ms).unwrap_or(u32::MAX));
    let local = port.query_local(ATTACH_TIMEOUT).map_err(att)?;
    if let Some(p) = expect_port
        && p != local.port_num()
    {
        return Err(TransportError::Attach(format!(
            "{device} is port {} of node {}, not port {p}",
            local.port_num(),
            local.node_guid()
        )));
    }
    let label = format!(
        "umad {device} port {} (node {}, LID {} at attach)",
        local.port_num(),
        local.node_guid(),
        local.lid().0
    );
    tracing::info!("attached: {label}");
    let port = Arc::new(port);
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let reader = ReaderThread::spawn(Arc::clone(&port), MAX_BATCH, move |batch| match batch {
        Ok(b) => {
            let inbound = to_inbound(b);
            inbound.is_empty() || tx.send(inbound).is_ok()
        }
        Err(e) => {
            // Dropping `tx` (the thread ends) closes the master's channel: it stops.
            tracing::error!("E_NODE_TRANSPORT_IO: umad read failed: {e}");
            false
        }
    })?;
    Ok(Attached {
        transport: Box::new(UmadTransport {
            label,
            port_guid: local.port_guid(),
            reader: Some(reader),
            port,
        }),
        inbound: rx,
    })
}

/// Keeps the SMPs of a batch of reads; drops the kernel's timed-out request copies (the
/// sweeper keeps its own clock) and, with a warning, anything that is not an SMP.
fn to_inbound(batch: Vec<::umad::Received>) -> Vec<Inbound> {
    let mut out = Vec::with_capacity(batch.len());
    for r in batch {
        match (r.status, r.mad) {
            (RecvStatus::Ok, ReceivedMad::Smp(smp)) => out.push(Inbound { slid: r.slid, smp }),
            (RecvStatus::TimedOut, _) => {}
            (RecvStatus::Error(e), _) => {
                tracing::warn!("E_NODE_TRANSPORT_IO: umad receive status {e}, MAD dropped")
            }
            (RecvStatus::Ok, ReceivedMad::Other { class, .. }) => {
                tracing::warn!("E_NODE_TRANSPORT_IO: MAD of class {class:#04x} dropped")
            }
            (RecvStatus::Ok, ReceivedMad::Malformed { reason, .. }) => {
                tracing::warn!("E_NODE_TRANSPORT_IO: malformed MAD dropped: {reason}")
            }
        }
    }
    out
}

/// The sending half. Writes go to the device at once (`flush` has nothing to do). Dropping
/// it stops the reader thread first, then closes the port (umad2sim must not receive for a
/// closed fd).
struct UmadTransport {
    label: String,
    port_guid: Guid,
    reader: Option<ReaderThread>,
    port: Arc<UmadPort>,
}

impl Transport for UmadTransport {
    fn send(&mut self, dlid: Lid, smp: &Smp) -> Result<(), TransportError> {
        self.port
            .send(smp, Dest::for_smp(smp, dlid))
            .map_err(|e| TransportError::Sim(format!("umad send to LID {}: {e}", dlid.0)))
    }

    fn flush(&mut self) -> Result<(), TransportError> {
        if self.reader.as_ref().is_some_and(ReaderThread::is_finished) {
            return Err(TransportError::Closed(format!(
                "{}: the reader thread stopped",
                self.label
            )));
        }
        Ok(())
    }

    fn port_guid(&self) -> Guid {
        self.port_guid
    }

    fn describe(&self) -> String {
        self.label.clone()
    }
}

impl Drop for UmadTransport {
    fn drop(&mut self) {
        if let Some(r) = self.reader.take() {
            r.stop();
        }
        let c = self.port.counters();
        tracing::info!(
            "umad port closed: {} MADs sent, {} received, {} short reads",
            c.sent,
            c.received,
            c.short_reads
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::umad::Received;

    fn received(status: RecvStatus, mad: ReceivedMad) -> Received {
        Received {
            agent_id: 0,
            status,
            slid: Lid(7),
            src_qpn: 0,
            sl: 0,
            mad,
        }
    }

    #[test]
    fn only_good_smps_become_inbound() {
        let smp = Smp::default();
        let batch = vec![
            received(RecvStatus::Ok, ReceivedMad::Smp(smp.clone())),
            received(RecvStatus::TimedOut, ReceivedMad::Smp(smp.clone())),
            received(RecvStatus::Error(5), ReceivedMad::Smp(smp.clone())),
            received(
                RecvStatus::Ok,
                ReceivedMad::Other {
                    class: 3,
                    bytes: vec![0; 256],
                },
            ),
            received(
                RecvStatus::Ok,
                ReceivedMad::Malformed {
                    bytes: vec![1],
                    reason: "short".into(),
                },
            ),
        ];
        let out = to_inbound(batch);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].slid, Lid(7));
    }

    #[test]
    fn a_missing_device_is_an_attach_error() {
        let e = attach("/nonexistent/umad9", None, 200)
            .err()
            .expect("no such device")
            .to_string();
        assert!(e.starts_with("E_NODE_TRANSPORT_ATTACH"), "{e}");
        assert!(e.contains("/nonexistent/umad9"), "{e}");
    }
}
