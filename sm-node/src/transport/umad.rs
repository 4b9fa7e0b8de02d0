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

use super::{Attached, GmpRx, Inbound, InboundGmp, InboundTx, Transport, TransportError};
use ::umad::{Dest, ReaderThread, ReceivedMad, RecvStatus, UmadPort};
use fabric::{Guid, Lid};
use mad::Smp;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// MADs kept for the first attachment at most (see `Shared::early`).
const EARLY_MAX: usize = 1024;

/// MADs handed to the master in one batch at most.
const MAX_BATCH: usize = 256;

pub use deploy::config::{UMAD_SMP_TIMEOUT_MS, UMAD_WINDOW};

/// How long attach waits for the local port's answers.
const ATTACH_TIMEOUT: Duration = Duration::from_secs(2);

/// A umad port open in this process, with its reader thread. Opened once per device and
/// kept for the life of the process: umad2sim serves one umad fd per process, does not
/// survive a close followed by a new open (later MADs find "no one to handle"), and crashes
/// when a fd closes while MADs still arrive. A replica that goes from standby to master
/// (or back) attaches again to the same port.
struct Shared {
    port: Arc<UmadPort>,
    local: ::umad::LocalPort,
    /// Where received MADs go: the current attachment's channel, with its generation.
    sink: Arc<Mutex<Option<(u64, InboundTx)>>>,
    /// MADs read before the first attachment (the port is opened, the SM role claimed and
    /// the local port read before the master exists): kept for it. `None` once taken.
    /// Locked only while `sink` is held.
    early: Arc<Mutex<Option<Vec<Inbound>>>>,
    /// Where received SA MADs (class 0x03) go: the current attachment's GMP channel.
    gmp_sink: GmpSink,
    reader: ReaderThread,
    attaches: AtomicU64,
    /// High 32 bits of the TIDs the attached sweeper sends (its `tid_high`: a cluster puts
    /// the term there). The kernel and umad2sim overwrite them in responses; they are put
    /// back before the sweeper sees a response, which checks them.
    tid_high: Arc<AtomicU32>,
}

type GmpSink = Arc<Mutex<Option<tokio::sync::mpsc::UnboundedSender<Vec<InboundGmp>>>>>;

/// Methods the SA agent takes unsolicited (IBA 15.4).
fn sa_methods() -> ::umad::MethodMask {
    use mad::Method;
    ::umad::MethodMask::NONE
        .with(Method::GET)
        .with(Method::SET)
        .with(Method::GET_TABLE)
        .with(Method::GET_MULTI)
        .with(Method::DELETE)
        .with(Method::REPORT)
}

/// Takes the GMPs for the master (SA requests, class 0x03; PerfMgt answers to the
/// performance manager, class 0x04; status ok) out of a batch of reads.
fn split_gmps(batch: Vec<::umad::Received>) -> (Vec<::umad::Received>, Vec<InboundGmp>) {
    let mut rest = Vec::with_capacity(batch.len());
    let mut gmps = Vec::new();
    for r in batch {
        match (&r.status, &r.mad) {
            (
                RecvStatus::Ok,
                ReceivedMad::Other {
                    class: 0x03 | 0x04,
                    bytes,
                },
            ) => {
                if let Ok(mad) = <[u8; 256]>::try_from(bytes.as_slice()) {
                    gmps.push(InboundGmp {
                        slid: r.slid,
                        src_qpn: r.src_qpn,
                        mad,
                    });
                }
            }
            (
                RecvStatus::TimedOut,
                ReceivedMad::Other {
                    class: 0x03 | 0x04, ..
                },
            ) => {}
            _ => rest.push(r),
        }
    }
    (rest, gmps)
}

/// Open ports by device path.
fn open_ports() -> &'static Mutex<HashMap<String, Arc<Shared>>> {
    static OPEN: OnceLock<Mutex<HashMap<String, Arc<Shared>>>> = OnceLock::new();
    OPEN.get_or_init(|| Mutex::new(HashMap::new()))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding these locks leaves a map or an Option, both consistent.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Opens `device` (once per process), registers the SMP agents, claims the SM role, reads
/// the local port and starts the reader thread.
fn open_shared(device: &str, smp_timeout_ms: u64) -> Result<Arc<Shared>, TransportError> {
    let att = |e: ::umad::UmadError| TransportError::Attach(format!("{device}: {e}"));
    let port = UmadPort::open(device).map_err(att)?;
    port.register_smp_agents().map_err(att)?;
    // The SA (class 0x03 on QP1, class version 2), answered by the master. No RMPP from
    // the kernel: tables are sent by the SA itself (one MAD under umad2sim).
    if let Err(e) = port.register(mad::MgmtClass::SUBN_ADM, 1, sa_methods(), 2) {
        tracing::warn!("E_NODE_TRANSPORT_ATTACH: no SA agent on {device}: {e}; SA not served");
    }
    // The performance manager's queries (class 0x04, version 1): a client agent, it takes
    // no unsolicited MAD (the answers come back to it by transaction id).
    if let Err(e) = port.register(mad::MgmtClass::PERF_MGMT, 1, ::umad::MethodMask::NONE, 1) {
        tracing::warn!(
            "E_NODE_TRANSPORT_ATTACH: no PerfMgt agent on {device}: {e}; counters not read"
        );
    }
    port.claim_sm().map_err(att)?;
    let kernel_ms = smp_timeout_ms
        .saturating_mul(4)
        .clamp(1000, u64::from(u32::MAX));
    port.set_kernel_timeout_ms(u32::try_from(kernel_ms).unwrap_or(u32::MAX));
    let local = port.query_local(ATTACH_TIMEOUT).map_err(att)?;
    let port = Arc::new(port);
    let sink: Arc<Mutex<Option<(u64, InboundTx)>>> = Arc::new(Mutex::new(None));
    let to = Arc::clone(&sink);
    let early: Arc<Mutex<Option<Vec<Inbound>>>> = Arc::new(Mutex::new(Some(Vec::new())));
    let early_to = Arc::clone(&early);
    let gmp_sink: GmpSink = Arc::new(Mutex::new(None));
    let gto = Arc::clone(&gmp_sink);
    let tid_high = Arc::new(AtomicU32::new(0));
    let high = Arc::clone(&tid_high);
    let dev = device.to_string();
    let reader = ReaderThread::spawn(Arc::clone(&port), MAX_BATCH, move |batch| match batch {
        Ok(b) => {
            let (b, gmps) = split_gmps(b);
            if !gmps.is_empty() {
                let mut g = lock(&gto);
                if let Some(tx) = g.as_ref()
                    && tx.send(gmps).is_err()
                {
                    *g = None;
                }
            }
            let inbound = to_inbound(b, high.load(Ordering::Relaxed));
            let mut g = lock(&to);
            if !inbound.is_empty() {
                match g.as_ref() {
                    Some((_, tx)) => {
                        if tx.send(inbound).is_err() {
                            *g = None;
                        }
                    }
                    None => {
                        // Before the first attachment (a trap or another SM's SMInfo Get
                        // right after we claimed the SM role): kept for the master. Later,
                        // with nobody attached (between a standby and a master), dropped.
                        if let Some(buf) = lock(&early_to).as_mut() {
                            let room = EARLY_MAX.saturating_sub(buf.len());
                            buf.extend(inbound.into_iter().take(room));
                        }
                    }
                }
            }
            true
        }
        Err(e) => {
            // Dropping the sender closes the attached master's channel: it stops. The
            // port is forgotten so that a later attach opens the device again.
            tracing::error!("E_NODE_TRANSPORT_IO: umad read failed on {dev}: {e}");
            *lock(&to) = None;
            lock(open_ports()).remove(&dev);
            false
        }
    })?;
    Ok(Arc::new(Shared {
        port,
        local,
        sink,
        early,
        gmp_sink,
        reader,
        attaches: AtomicU64::new(0),
        tid_high,
    }))
}

/// Attaches at `device`: opens it the first time (agents for 0x81 and 0x01, the SM role,
/// the local port by directed route, a reader thread), reuses the open port afterwards.
/// Checks the local port number against `expect_port` when given. `smp_timeout_ms` is the
/// sweeper's per-attempt timeout (the kernel's is set to four times it, at least 1 s).
/// Received MADs go to the newest attachment only.
pub fn attach(
    device: &str,
    expect_port: Option<u8>,
    smp_timeout_ms: u64,
) -> Result<Attached, TransportError> {
    let shared = {
        let mut open = lock(open_ports());
        match open.get(device) {
            Some(s) if !s.reader.is_finished() => Arc::clone(s),
            _ => {
                let s = open_shared(device, smp_timeout_ms)?;
                open.insert(device.to_string(), Arc::clone(&s));
                s
            }
        }
    };
    let local = &shared.local;
    if let Some(p) = expect_port
        && p != local.port_num()
    {
        return Err(TransportError::Attach(format!(
            "{device} is port {} of node {}, not port {p}",
            local.port_num(),
            local.node_guid()
        )));
    }
    let generation = shared.attaches.fetch_add(1, Ordering::Relaxed) + 1;
    let label = format!(
        "umad {device} port {} (node {}, LID {} at open)",
        local.port_num(),
        local.node_guid(),
        local.lid().0
    );
    tracing::info!("attached: {label}, attachment {generation}");
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    {
        let mut g = lock(&shared.sink);
        if let Some(buf) = lock(&shared.early).take()
            && !buf.is_empty()
        {
            tracing::info!(
                "{} MADs read before the master attached handed to it",
                buf.len()
            );
            let _ = tx.send(buf);
        }
        *g = Some((generation, tx));
    }
    let (gtx, grx) = tokio::sync::mpsc::unbounded_channel();
    *lock(&shared.gmp_sink) = Some(gtx);
    shared.tid_high.store(0, Ordering::Relaxed);
    Ok(Attached {
        transport: Box::new(UmadTransport {
            label,
            port_guid: local.port_guid(),
            generation,
            shared,
            gmps: Some(grx),
        }),
        inbound: rx,
    })
}

/// Keeps the SMPs of a batch of reads, with `tid_high` put back into the high 32 bits of
/// responses' TIDs; drops the kernel's timed-out request copies (the sweeper keeps its own
/// clock) and, with a warning, anything that is not an SMP.
fn to_inbound(batch: Vec<::umad::Received>, tid_high: u32) -> Vec<Inbound> {
    let mut out = Vec::with_capacity(batch.len());
    for r in batch {
        match (r.status, r.mad) {
            (RecvStatus::Ok, ReceivedMad::Smp(mut smp)) => {
                if smp.is_response() {
                    smp.tid = (u64::from(tid_high) << 32) | (smp.tid & 0xFFFF_FFFF);
                }
                out.push(Inbound { slid: r.slid, smp })
            }
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
/// it detaches: received MADs stop going to its channel (the port stays open, see
/// [`Shared`]).
struct UmadTransport {
    label: String,
    port_guid: Guid,
    generation: u64,
    shared: Arc<Shared>,
    gmps: Option<GmpRx>,
}

impl Transport for UmadTransport {
    fn send(&mut self, dlid: Lid, smp: &Smp) -> Result<(), TransportError> {
        if !smp.is_response() {
            self.shared
                .tid_high
                .store((smp.tid >> 32) as u32, Ordering::Relaxed);
        }
        self.shared
            .port
            .send(smp, Dest::for_smp(smp, dlid))
            .map_err(|e| TransportError::Sim(format!("umad send to LID {}: {e}", dlid.0)))
    }

    fn flush(&mut self) -> Result<(), TransportError> {
        if self.shared.reader.is_finished() {
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

    fn send_gmp(
        &mut self,
        dlid: Lid,
        dqpn: u32,
        mad: &[u8; 256],
        len: usize,
    ) -> Result<(), TransportError> {
        let dest = Dest {
            lid: dlid,
            qpn: dqpn,
            qkey: ::umad::GSI_QKEY,
            sl: 0,
        };
        self.shared
            .port
            .send_mad_len(mad, len, dest)
            .map_err(|e| TransportError::Sim(format!("umad GMP to LID {}: {e}", dlid.0)))
    }

    fn take_gmps(&mut self) -> Option<GmpRx> {
        self.gmps.take()
    }
}

impl Drop for UmadTransport {
    fn drop(&mut self) {
        let mut g = lock(&self.shared.sink);
        if matches!(g.as_ref(), Some((gen_, _)) if *gen_ == self.generation) {
            *g = None;
        }
        drop(g);
        let c = self.shared.port.counters();
        tracing::info!(
            "umad detached (attachment {}): port totals {} MADs sent, {} received, {} short reads",
            self.generation,
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
        let out = to_inbound(batch, 0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].slid, Lid(7));
    }

    #[test]
    fn responses_get_the_senders_high_tid_bits_back() {
        let mut resp = Smp {
            tid: 0x0003_0000_1234_5678, // high bits as umad2sim leaves them
            ..Smp::default()
        };
        resp.method = mad::Method::GET_RESP;
        let mut trap = resp.clone();
        trap.method = mad::Method::TRAP;
        let out = to_inbound(
            vec![
                received(RecvStatus::Ok, ReceivedMad::Smp(resp)),
                received(RecvStatus::Ok, ReceivedMad::Smp(trap)),
            ],
            7,
        );
        assert_eq!(out[0].smp.tid, 0x0000_0007_1234_5678);
        assert_eq!(
            out[1].smp.tid, 0x0003_0000_1234_5678,
            "requests keep their TID"
        );
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
