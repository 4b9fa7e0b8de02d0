//! The in-process simulator transport: a [`SimFabric`] shared behind a mutex
//! ([`SimHandle`]), driven by one thread per attachment.
//!
//! It carries SMPs and GMPs, as the fabric-simd transport does: GMPs the master sends (SA
//! answers, PerfMgt queries) go through [`SimFabric::send_gmp`] with the default full P_Key
//! on SL 0, and GMPs that reach the master's port (SA requests from clients attached to the
//! same fabric, PMA answers) come back on [`Transport::take_gmps`]'s channel. Whatever is
//! done to the fabric through [`SimHandle::with`] (a test's client sending a GMP, a fault)
//! wakes every driving thread, so the events it scheduled run without waiting for the
//! master's next send.
//!
//! Pacing ([`Pace`]):
//! - [`Pace::Fast`] (default): every pending simulator event runs as soon as the thread gets
//!   to it; virtual time jumps from event to event, so SMP round trips cost only CPU time
//!   and long simulator timers (link retraining, scheduled faults) fire at once. The
//!   sweeper's own timers (SMP timeouts, light sweeps) still run on the daemon's monotonic
//!   clock. Runs are deterministic in what the fabric ends up programmed with; only the
//!   number of resends can vary when the machine is overloaded.
//! - [`Pace::RealTime`]: virtual time follows the wall clock since attach; events due no
//!   later than wall time + 1 ms run at once (like `fabric-simd`).

use super::{Attached, GmpRx, Inbound, InboundGmp, InboundTx, Transport, TransportError};
use fabric::{Guid, Lid, PKey};
use fabric_sim::{AttachId, SimFabric};
use mad::Smp;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use deploy::config::Pace;

/// Events due within this much virtual time after the wall clock run at once (RealTime).
const LOOKAHEAD_NS: u64 = 1_000_000;
/// Events run between two hand-overs of received MADs (Fast), to keep latency low.
const EVENTS_PER_SLICE: usize = 4096;
/// Received MADs that end a slice early.
const RECV_PER_SLICE: usize = 128;

/// A simulated fabric shared by its transports and by whoever inspects it (tests, tools).
#[derive(Clone)]
pub struct SimHandle(Arc<Shared>);

struct Shared {
    sim: Mutex<SimFabric>,
    /// The command channels of the driving threads, by key, to wake them.
    drivers: Mutex<Vec<(u64, Sender<Cmd>)>>,
    next_key: AtomicU64,
}

impl SimHandle {
    /// Wraps a fabric.
    pub fn new(sim: SimFabric) -> SimHandle {
        SimHandle(Arc::new(Shared {
            sim: Mutex::new(sim),
            drivers: Mutex::new(Vec::new()),
            next_key: AtomicU64::new(0),
        }))
    }

    /// Runs `f` with the fabric locked, then wakes the driving threads (what `f` scheduled,
    /// such as a GMP a test's client sent, runs at once).
    pub fn with<T>(&self, f: impl FnOnce(&mut SimFabric) -> T) -> T {
        let r = f(&mut self.lock());
        for (_, d) in self.drivers().iter() {
            // A driver that already stopped is removed by its transport's drop.
            let _ = d.send(Cmd::Wake);
        }
        r
    }

    fn lock(&self) -> MutexGuard<'_, SimFabric> {
        // A panic while holding the lock leaves the simulator in a state that is still
        // memory-safe; keep going rather than cascade the panic.
        self.0.sim.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn drivers(&self) -> MutexGuard<'_, Vec<(u64, Sender<Cmd>)>> {
        self.0.drivers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The port GUID named `name`: a NodeDescription (port 1 of a CA), `name[N]`, or a
    /// `0x` port or node GUID.
    pub fn resolve_port(&self, name: &str) -> Result<Guid, TransportError> {
        let sim = self.lock();
        let (base, num) = match name.strip_suffix(']').and_then(|s| s.rsplit_once('[')) {
            Some((b, n)) => {
                let n = n
                    .parse::<u8>()
                    .map_err(|_| TransportError::Attach(format!("bad port number in {name:?}")))?;
                (b, Some(n))
            }
            None => (name, None),
        };
        let (node, port) = sim
            .find(base)
            .ok_or_else(|| TransportError::Attach(format!("no port named {name:?}")))?;
        let port = num
            .or(port)
            .unwrap_or(if sim.is_switch(node) { 0 } else { 1 });
        sim.port_guid(node, port)
            .map_err(|e| TransportError::Attach(format!("{name:?}: {e}")))
    }

    /// Attaches an SM at `port_guid` and starts the thread that drives the fabric for it.
    pub fn attach(&self, port_guid: Guid, pace: Pace) -> Result<Attached, TransportError> {
        let id = self
            .lock()
            .attach(port_guid)
            .map_err(|e| TransportError::Attach(format!("{port_guid}: {e}")))?;
        let (cmd_tx, cmd_rx) = mpsc::channel();
        let (in_tx, in_rx) = tokio::sync::mpsc::unbounded_channel();
        let (gmp_tx, gmp_rx) = tokio::sync::mpsc::unbounded_channel();
        let key = self.0.next_key.fetch_add(1, Ordering::Relaxed);
        self.drivers().push((key, cmd_tx.clone()));
        let handle = self.clone();
        let out = Outputs {
            smps: in_tx,
            gmps: gmp_tx,
        };
        let thread = std::thread::Builder::new()
            .name("sim-transport".into())
            .spawn(move || drive(handle, id, pace, cmd_rx, out));
        let thread = match thread {
            Ok(t) => t,
            Err(e) => {
                self.drivers().retain(|(k, _)| *k != key);
                return Err(e.into());
            }
        };
        Ok(Attached {
            transport: Box::new(SimTransport {
                port_guid,
                buf: Vec::new(),
                tx: Some(cmd_tx),
                thread: Some(thread),
                handle: self.clone(),
                key,
                gmps: Some(gmp_rx),
            }),
            inbound: in_rx,
        })
    }
}

type Batch = Vec<(Lid, Smp)>;

/// What a driving thread is told.
enum Cmd {
    /// SMPs to send (a flush).
    Smps(Batch),
    /// A GMP to send to a LID.
    Gmp(Lid, Box<[u8; 256]>),
    /// The fabric was changed through the handle: run what is due, hand over what arrived.
    Wake,
}

/// Where a driving thread hands over what reached the SM's port.
struct Outputs {
    smps: InboundTx,
    gmps: tokio::sync::mpsc::UnboundedSender<Vec<InboundGmp>>,
}

/// The sending half: buffers SMPs and hands them to the driving thread on flush; GMPs go at
/// once. Dropping it stops the thread and detaches the SM from the fabric (before `drop`
/// returns).
struct SimTransport {
    port_guid: Guid,
    buf: Batch,
    tx: Option<Sender<Cmd>>,
    thread: Option<JoinHandle<()>>,
    /// The fabric's handle and this driver's key in it (to stop waking it).
    handle: SimHandle,
    key: u64,
    gmps: Option<GmpRx>,
}

impl SimTransport {
    fn command(&self, c: Cmd) -> Result<(), TransportError> {
        self.tx
            .as_ref()
            .ok_or_else(|| TransportError::Closed("simulator transport stopped".into()))?
            .send(c)
            .map_err(|_| TransportError::Closed("simulator thread ended".into()))
    }
}

impl Transport for SimTransport {
    fn send(&mut self, dlid: Lid, smp: &Smp) -> Result<(), TransportError> {
        self.buf.push((dlid, smp.clone()));
        Ok(())
    }

    fn flush(&mut self) -> Result<(), TransportError> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let batch = std::mem::take(&mut self.buf);
        self.command(Cmd::Smps(batch))
    }

    fn port_guid(&self) -> Guid {
        self.port_guid
    }

    fn describe(&self) -> String {
        format!("in-process simulator at port {}", self.port_guid)
    }

    fn send_gmp(
        &mut self,
        dlid: Lid,
        _dqpn: u32,
        mad: &[u8; 256],
        _len: usize,
    ) -> Result<(), TransportError> {
        // Whole MADs, as fabric-simd carries them; the simulator has one QP1 per port.
        self.command(Cmd::Gmp(dlid, Box::new(*mad)))
    }

    fn take_gmps(&mut self) -> Option<GmpRx> {
        self.gmps.take()
    }
}

impl Drop for SimTransport {
    fn drop(&mut self) {
        // Forget the waker first: the thread stops once every sender of its channel is gone.
        self.handle.drivers().retain(|(k, _)| *k != self.key);
        self.tx = None;
        if let Some(t) = self.thread.take() {
            // The thread returns as soon as it sees the closed channel; a panic in it was
            // already reported by the panic hook.
            let _ = t.join();
        }
    }
}

/// The driving thread: takes SMP batches and GMPs, runs the simulator, hands back received
/// MADs and GMPs.
fn drive(h: SimHandle, id: AttachId, pace: Pace, rx: Receiver<Cmd>, out: Outputs) {
    let start = Instant::now();
    let base = h.lock().now();
    let wall = || base + start.elapsed().as_nanos() as u64;
    let mut next_inject = base;
    'run: loop {
        // Wait for work: a batch to send, or a simulator event that is due.
        let next = h.lock().next_event_time();
        let first = match (next, pace) {
            (None, _) => match rx.recv() {
                Ok(b) => Some(b),
                Err(_) => break 'run,
            },
            (Some(_), Pace::Fast) => match rx.try_recv() {
                Ok(b) => Some(b),
                Err(TryRecvError::Empty) => None,
                Err(TryRecvError::Disconnected) => break 'run,
            },
            (Some(t), Pace::RealTime) => {
                let ahead = t.saturating_sub(wall() + LOOKAHEAD_NS);
                match rx.recv_timeout(Duration::from_nanos(ahead)) {
                    Ok(b) => Some(b),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => break 'run,
                }
            }
        };
        let mut sim = h.lock();
        let mut cmds = first.into_iter().collect::<Vec<_>>();
        while let Ok(c) = rx.try_recv() {
            cmds.push(c);
        }
        let now = match pace {
            Pace::Fast => sim.now(),
            Pace::RealTime => sim.now().max(wall()),
        };
        // Inject a batch at half the link's packet rate rather than all at one instant:
        // a real HCA cannot exceed the packet rate and real links have credit flow control,
        // while the simulator drops beyond its VL15 depth; requests out and responses back
        // share links, so half the rate leaves room for both (measured on ft2:36: at the full
        // rate 1-5 VL15 drops per run, each a 20 ms timeout; at half the rate none).
        let gap = sim.config().wire_time_ns.max(1) * 2;
        next_inject = next_inject.max(now);
        for c in cmds {
            match c {
                Cmd::Smps(batch) => {
                    for (dlid, smp) in batch {
                        let at = next_inject;
                        next_inject += gap;
                        let r = if dlid.is_permissive() {
                            sim.send(at, id, &smp)
                        } else {
                            sim.send_lid(at, id, dlid, &smp)
                        };
                        if let Err(e) = r {
                            tracing::warn!(
                                "E_NODE_TRANSPORT_SIM: SMP refused by the simulator: {e}"
                            );
                        }
                    }
                }
                Cmd::Gmp(dlid, mad) => {
                    let at = next_inject;
                    next_inject += gap;
                    // A GMP dropped on the way is counted by the simulator (gmps_dropped);
                    // as on a real fabric the sender learns nothing.
                    if let Err(e) = sim.send_gmp(at, id, dlid, PKey::DEFAULT_FULL, &mad) {
                        tracing::warn!("E_NODE_TRANSPORT_SIM: GMP refused by the simulator: {e}");
                    }
                }
                Cmd::Wake => {}
            }
        }
        let limit = match pace {
            Pace::Fast => u64::MAX,
            Pace::RealTime => wall() + LOOKAHEAD_NS,
        };
        let mut n = 0;
        while let Some(t) = sim.next_event_time() {
            if t > limit || n >= EVENTS_PER_SLICE || sim.pending(id) >= RECV_PER_SLICE {
                break;
            }
            sim.run_until(t);
            n += 1;
        }
        let mut got = Vec::with_capacity(sim.pending(id));
        while let Some(r) = sim.poll_recv_full(id) {
            got.push(Inbound {
                slid: r.slid,
                smp: r.smp,
            });
        }
        let mut gmps = Vec::new();
        while let Some(g) = sim.poll_recv_gmp(id) {
            gmps.push(InboundGmp {
                slid: g.slid,
                src_qpn: 1,
                mad: g.mad,
            });
        }
        drop(sim);
        if !got.is_empty() && out.smps.send(got).is_err() {
            break 'run;
        }
        // Nobody taking GMPs (no SA on this attachment) is not an error.
        if !gmps.is_empty() {
            let _ = out.gmps.send(gmps);
        }
    }
    if let Err(e) = h.lock().detach(id) {
        tracing::warn!("E_NODE_TRANSPORT_SIM: detach failed: {e}");
    }
}
