//! The Unix-socket server behind `fabric-simd` (IO; threads). One [`SimFabric`] behind
//! a mutex; per client a reader thread (frames in) and a writer thread (frames out); a
//! timer thread for events in the future.
//!
//! Time: virtual time follows the wall clock since the server started, and every event
//! due no later than wall time + [`LOOKAHEAD_NS`] runs immediately. SMP traffic (hops of
//! hundreds of nanoseconds) therefore runs as fast as the CPU allows, while long timers
//! (link retraining, M_Key leases, scheduled faults) fire at their wall-clock time.
//! Virtual time never runs more than the lookahead ahead of the wall clock.
//!
//! Malformed frames never panic the server: the client gets an `ERROR` frame and is
//! disconnected; other clients are unaffected.

use crate::protocol::*;
use crate::{AttachId, SimFabric, VTime, control};
use fabric::Lid;
use serde_json::json;
use std::collections::HashMap;
use std::io::{self, BufReader, BufWriter, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// Loads a topology from a file (ibsim / ibnetdiscover format) or, when no such file
/// exists, from a generator spec such as `ft3:36`.
pub fn load_topology(arg: &str) -> Result<fabric::Topology, String> {
    let path = Path::new(arg);
    if path.is_file() {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{arg}: {e}"))?;
        return fabric::netfile::parse(&text).map_err(|e| format!("{arg}: {e}"));
    }
    let spec: fabric::GenSpec = arg
        .parse()
        .map_err(|e| format!("{arg:?} is neither a file nor a generator spec: {e}"))?;
    spec.generate().map_err(|e| format!("{arg}: {e}"))
}

/// Events due within this much virtual time after the wall clock run immediately.
pub const LOOKAHEAD_NS: VTime = 1_000_000;

struct Client {
    attach: Option<AttachId>,
    tx: Sender<Vec<u8>>,
    stream: UnixStream,
}

struct Core {
    sim: SimFabric,
    clients: HashMap<u64, Client>,
    next_id: u64,
}

struct Shared {
    core: Mutex<Core>,
    start: Instant,
    stop: AtomicBool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Core> {
        // A panic while holding the lock would poison it; the state is still usable
        // for a simulator, so recover the guard.
        self.core.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn wall(&self) -> VTime {
        self.start.elapsed().as_nanos() as VTime
    }
}

/// Runs due events and hands delivered MADs to the clients' writers.
fn pump(core: &mut Core, wall: VTime) {
    core.sim.run_until(wall);
    core.sim.run_until_idle(wall + LOOKAHEAD_NS);
    let Core { sim, clients, .. } = core;
    for c in clients.values() {
        if let Some(a) = c.attach {
            while let Some((t, slid, b)) = sim.poll_recv_bytes(a) {
                let _ = c.tx.send(frame(T_MAD, &mad_in(t, slid.0, &b)));
            }
            while let Some(g) = sim.poll_recv_gmp(a) {
                let _ =
                    c.tx.send(frame(T_GMP, &gmp_in(g.time, g.slid.0, g.pkey.0, &g.mad)));
            }
        }
    }
}

/// A running server; dropping it does not stop it, call [`ServerHandle::shutdown`].
pub struct ServerHandle {
    shared: Arc<Shared>,
    path: PathBuf,
    acceptor: Option<JoinHandle<()>>,
    timer: Option<JoinHandle<()>>,
}

impl ServerHandle {
    /// The socket path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` on the fabric under the server's lock (tests, inspection).
    pub fn with_sim<T>(&self, f: impl FnOnce(&mut SimFabric) -> T) -> T {
        let mut g = self.shared.lock();
        f(&mut g.sim)
    }

    /// Blocks until the server stops (it stops only through `shutdown` from another
    /// thread or process exit).
    pub fn join(mut self) {
        if let Some(h) = self.acceptor.take() {
            let _ = h.join();
        }
        if let Some(h) = self.timer.take() {
            let _ = h.join();
        }
    }

    /// Stops accepting, disconnects every client and removes the socket file.
    pub fn shutdown(mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        let _ = UnixStream::connect(&self.path);
        if let Some(h) = self.acceptor.take() {
            let _ = h.join();
        }
        if let Some(h) = self.timer.take() {
            let _ = h.join();
        }
        let g = self.shared.lock();
        for c in g.clients.values() {
            let _ = c.stream.shutdown(std::net::Shutdown::Both);
        }
        drop(g);
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Binds `path` and serves `sim` on background threads.
pub fn spawn(sim: SimFabric, path: &Path) -> io::Result<ServerHandle> {
    let listener = UnixListener::bind(path)?;
    let shared = Arc::new(Shared {
        core: Mutex::new(Core {
            sim,
            clients: HashMap::new(),
            next_id: 0,
        }),
        start: Instant::now(),
        stop: AtomicBool::new(false),
    });
    let s2 = shared.clone();
    let acceptor = thread::Builder::new()
        .name("fabric-simd-accept".into())
        .spawn(move || accept_loop(listener, s2))?;
    let s3 = shared.clone();
    let timer = thread::Builder::new()
        .name("fabric-simd-timer".into())
        .spawn(move || timer_loop(s3))?;
    Ok(ServerHandle {
        shared,
        path: path.to_path_buf(),
        acceptor: Some(acceptor),
        timer: Some(timer),
    })
}

fn timer_loop(shared: Arc<Shared>) {
    while !shared.stop.load(Ordering::SeqCst) {
        let wall = shared.wall();
        let next = {
            let mut g = shared.lock();
            pump(&mut g, wall);
            g.sim.next_event_time()
        };
        let wait = match next {
            Some(t) => t.saturating_sub(shared.wall() + LOOKAHEAD_NS),
            None => 5_000_000,
        };
        thread::sleep(Duration::from_nanos(wait.clamp(100_000, 5_000_000)));
    }
}

fn accept_loop(listener: UnixListener, shared: Arc<Shared>) {
    for conn in listener.incoming() {
        if shared.stop.load(Ordering::SeqCst) {
            break;
        }
        let stream = match conn {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("SIMD-W001 accept failed: {e}");
                continue;
            }
        };
        if let Err(e) = start_client(stream, &shared) {
            tracing::warn!("SIMD-W002 client setup failed: {e}");
        }
    }
}

fn start_client(stream: UnixStream, shared: &Arc<Shared>) -> io::Result<()> {
    let (tx, rx) = channel::<Vec<u8>>();
    let wstream = stream.try_clone()?;
    let keep = stream.try_clone()?;
    let id = {
        let mut g = shared.lock();
        let id = g.next_id;
        g.next_id += 1;
        g.clients.insert(
            id,
            Client {
                attach: None,
                tx: tx.clone(),
                stream: keep,
            },
        );
        id
    };
    thread::Builder::new()
        .name(format!("fabric-simd-w{id}"))
        .spawn(move || {
            let mut w = BufWriter::new(wstream);
            while let Ok(f) = rx.recv() {
                if w.write_all(&f).is_err() {
                    break;
                }
                // Batch whatever else is queued before flushing.
                let mut ok = true;
                while let Ok(more) = rx.try_recv() {
                    if w.write_all(&more).is_err() {
                        ok = false;
                        break;
                    }
                }
                if !ok || w.flush().is_err() {
                    break;
                }
            }
            let _ = w.flush();
            let _ = w.get_ref().shutdown(std::net::Shutdown::Both);
        })?;
    let s2 = shared.clone();
    thread::Builder::new()
        .name(format!("fabric-simd-r{id}"))
        .spawn(move || {
            if let Err(msg) = client_loop(stream, id, &tx, &s2) {
                tracing::info!("SIMD-I003 client {id} closed: {msg}");
                let _ = tx.send(frame(T_ERROR, msg.as_bytes()));
            }
            let mut g = s2.lock();
            if let Some(c) = g.clients.remove(&id)
                && let Some(a) = c.attach
            {
                let _ = g.sim.detach(a);
            }
            // Dropping the last sender ends the writer, which closes the socket.
        })?;
    Ok(())
}

/// Serves one client until it closes (Ok) or misbehaves (Err with the error text).
fn client_loop(
    stream: UnixStream,
    id: u64,
    tx: &Sender<Vec<u8>>,
    shared: &Shared,
) -> Result<(), String> {
    let mut r = BufReader::new(stream);
    loop {
        let (ty, payload) = match read_frame(&mut r) {
            Ok(Some(f)) => f,
            Ok(None) => return Ok(()),
            Err(e) => return Err(format!("SIMD-E010 malformed frame: {e}")),
        };
        match ty {
            T_ATTACH | T_ATTACH_CLIENT => {
                let name = std::str::from_utf8(&payload)
                    .map_err(|_| "SIMD-E011 attach name is not UTF-8".to_string())?;
                let mut g = shared.lock();
                if g.clients.get(&id).and_then(|c| c.attach).is_some() {
                    return Err("SIMD-E012 already attached".into());
                }
                let guid = control::port_guid_of(&g.sim, name)
                    .map_err(|e| format!("SIMD-E013 attach {name:?}: {e}"))?;
                let a = if ty == T_ATTACH {
                    g.sim.attach(guid)
                } else {
                    g.sim.attach_client(guid)
                }
                .map_err(|e| format!("SIMD-E014 attach {name:?}: {e}"))?;
                let (node, port) = g.sim.attach_point(a).unwrap_or_default();
                let node_guid = g.sim.node_guid(node).map(|g| g.0).unwrap_or(0);
                if let Some(c) = g.clients.get_mut(&id) {
                    c.attach = Some(a);
                }
                let body = json!({"attach": a.0, "port_guid": format!("{:#018x}", guid.0),
                    "node_guid": format!("{node_guid:#018x}"), "port": port});
                let _ = tx.send(frame(T_ATTACHED, body.to_string().as_bytes()));
            }
            T_MAD => {
                let (dlid, mad) = parse_mad_out(&payload).ok_or_else(|| {
                    format!(
                        "SIMD-E015 MAD payload must be {MAD_OUT_LEN} bytes, got {}",
                        payload.len()
                    )
                })?;
                let wall = shared.wall();
                let mut g = shared.lock();
                let a = g
                    .clients
                    .get(&id)
                    .and_then(|c| c.attach)
                    .ok_or("SIMD-E016 MAD before attach")?;
                let now = wall.max(g.sim.now());
                g.sim
                    .send_bytes(now, a, Lid(dlid), &mad)
                    .map_err(|e| format!("SIMD-E017 {e}"))?;
                pump(&mut g, wall);
            }
            T_GMP => {
                let (dlid, pkey, sl, mad) = parse_gmp_out_sl(&payload).ok_or_else(|| {
                    format!(
                        "SIMD-E020 GMP payload must be {GMP_OUT_LEN} or {GMP_OUT_SL_LEN} bytes, got {}",
                        payload.len()
                    )
                })?;
                let wall = shared.wall();
                let mut g = shared.lock();
                let a = g
                    .clients
                    .get(&id)
                    .and_then(|c| c.attach)
                    .ok_or("SIMD-E021 GMP before attach")?;
                let now = wall.max(g.sim.now());
                g.sim
                    .send_gmp_sl(now, a, Lid(dlid), fabric::PKey(pkey), sl, &mad)
                    .map_err(|e| format!("SIMD-E022 {e}"))?;
                pump(&mut g, wall);
            }
            T_CONTROL => {
                let text = std::str::from_utf8(&payload)
                    .map_err(|_| "SIMD-E018 control request is not UTF-8".to_string())?;
                let wall = shared.wall();
                let mut g = shared.lock();
                let now = wall.max(g.sim.now());
                let resp = control::handle(&mut g.sim, now, text);
                pump(&mut g, wall);
                let _ = tx.send(frame(T_CONTROL_RESP, resp.to_string().as_bytes()));
            }
            other => return Err(format!("SIMD-E019 unknown frame type {other:#04x}")),
        }
    }
}
