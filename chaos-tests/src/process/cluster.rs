//! Three `sm-node` processes on loopback over an in-process fabric-simd server, with a
//! [`Proxy`] on every directed peer link: replica i dials replica j through proxy (i, j),
//! so a replica can be cut off from its peers while the admin API (dialled directly) still
//! answers. Every child is stopped by PID on drop (SIGCONT then SIGKILL, then reaped).

use super::proxy::{Mode, Proxy};
use crate::ChaosError;
use fabric::{Guid, Lid, PortState, Topology};
use fabric_sim::server::ServerHandle;
use fabric_sim::{SimConfig, SimFabric};
use proto::admin::sm_admin_client::SmAdminClient;
use proto::admin::{ClusterStatusReply, ClusterStatusRequest};
use sm_node::cluster::harness::ca_ports;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// One replica process.
pub struct Proc {
    /// Raft id.
    pub id: u64,
    /// Where it listens (Peer and SmAdmin).
    pub addr: SocketAddr,
    /// Its fabric port.
    pub port_guid: Guid,
    child: Option<Child>,
    /// SIGSTOP'ed.
    pub paused: bool,
}

/// The cluster.
pub struct ProcCluster {
    /// Working directory.
    pub dir: PathBuf,
    server: Option<ServerHandle>,
    /// Topology served.
    pub topo: Topology,
    bin: PathBuf,
    /// Replicas (index = id - 1).
    pub replicas: Vec<Proc>,
    proxies: BTreeMap<(u64, u64), Proxy>,
    /// Flags given to every replica.
    pub common: Vec<String>,
}

impl ProcCluster {
    /// Serves `topology` and prepares three replicas of `bin` (not started) in `dir`.
    pub fn new(bin: &Path, topology: &str, dir: &Path) -> Result<ProcCluster, ChaosError> {
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir)?;
        let topo = sm_node::daemon::load_topology(topology).map_err(|e| ChaosError::Topology {
            spec: topology.into(),
            reason: e.to_string(),
        })?;
        let sim = SimFabric::new(&topo, SimConfig::default())?;
        let server = fabric_sim::server::spawn(sim, &dir.join("simd.sock"))?;
        let cas = ca_ports(&topo);
        if cas.len() < 3 {
            return Err(ChaosError::Topology {
                spec: topology.into(),
                reason: "fewer than three CA ports".into(),
            });
        }
        let mut replicas = Vec::new();
        let mut held = Vec::new();
        for id in 1..=3u64 {
            // Held until every proxy is bound, or the kernel could hand a replica's
            // address to a proxy, which then dials itself for ever (a CI hang).
            let (port, l) = sm_harness::free_port()?;
            held.push(l);
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            replicas.push(Proc {
                id,
                addr,
                port_guid: cas[(id - 1) as usize].2,
                child: None,
                paused: false,
            });
        }
        let mut proxies = BTreeMap::new();
        for a in &replicas {
            for b in &replicas {
                if a.id != b.id {
                    proxies.insert((a.id, b.id), Proxy::start(b.addr)?);
                }
            }
        }
        // The replicas bind their addresses themselves when they start.
        drop(held);
        Ok(ProcCluster {
            dir: dir.to_path_buf(),
            server: Some(server),
            topo,
            bin: bin.to_path_buf(),
            replicas,
            proxies,
            common: vec![
                "--sweep-interval".into(),
                "0.5".into(),
                "--routing-workers".into(),
                "1".into(),
                "--insecure-loopback".into(),
            ],
        })
    }

    fn r(&self, id: u64) -> &Proc {
        &self.replicas[(id - 1) as usize]
    }

    fn r_mut(&mut self, id: u64) -> &mut Proc {
        &mut self.replicas[(id - 1) as usize]
    }

    /// The --peers of replica `id`: itself directly, the others through its proxies.
    fn peers_of(&self, id: u64) -> String {
        self.replicas
            .iter()
            .map(|r| {
                let addr = if r.id == id {
                    r.addr
                } else {
                    self.proxies[&(id, r.id)].listen
                };
                format!("{}={addr}", r.id)
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Starts replica `id` (again, on its data directory).
    pub fn start(&mut self, id: u64) -> Result<(), ChaosError> {
        self.start_as(id, "new")
    }

    /// Replica `id`'s data directory.
    pub fn data_dir(&self, id: u64) -> PathBuf {
        self.dir.join(format!("r{id}"))
    }

    /// Starts replica `id` on an emptied data directory as a replica of the existing
    /// cluster (the operator's disk replacement: it recovers its log before it votes).
    pub fn start_on_new_disk(&mut self, id: u64) -> Result<(), ChaosError> {
        super::disk::wipe(&self.data_dir(id))?;
        self.start_as(id, "existing")
    }

    /// The exit status of replica `id` when its process ended by itself (reaped here).
    pub fn exited(&mut self, id: u64) -> Option<std::process::ExitStatus> {
        let r = self.r_mut(id);
        let st = r.child.as_mut()?.try_wait().ok()??;
        r.child = None;
        Some(st)
    }

    fn start_as(&mut self, id: u64, initial_cluster_state: &str) -> Result<(), ChaosError> {
        let socket = self
            .server
            .as_ref()
            .map(|s| s.path().to_path_buf())
            .unwrap_or_default();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join(format!("replica{id}.log")))?;
        let r = self.r(id);
        let mut cmd = Command::new(&self.bin);
        // SAFETY: the closure runs in the forked child before exec and only calls
        // prctl(2), which is async-signal-safe: the child gets SIGKILL when the thread
        // that spawned it ends, so even a chaos run killed by a signal (no Drop) leaves no
        // replica behind.
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd
            .arg("--id")
            .arg(id.to_string())
            .arg("--peers")
            .arg(self.peers_of(id))
            .args(["--initial-cluster-state", initial_cluster_state])
            .arg("--listen")
            .arg(r.addr.to_string())
            .arg("--data-dir")
            .arg(self.dir.join(format!("r{id}")))
            .arg("--fabric")
            .arg(format!(
                "simd:{}@0x{:016x}",
                socket.display(),
                r.port_guid.0
            ))
            .args(&self.common)
            .env(
                "RUST_LOG",
                std::env::var("CHAOS_NODE_LOG").unwrap_or_else(|_| "info".into()),
            )
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| ChaosError::Process(format!("{}: {e}", self.bin.display())))?;
        let r = self.r_mut(id);
        r.child = Some(child);
        r.paused = false;
        Ok(())
    }

    /// True while replica `id`'s process exists.
    pub fn is_running(&self, id: u64) -> bool {
        self.r(id).child.is_some()
    }

    fn signal(&self, id: u64, sig: i32) {
        if let Some(c) = &self.r(id).child {
            // SAFETY: kill(2) on the pid of a child this process spawned and has not reaped.
            unsafe {
                libc::kill(c.id() as i32, sig);
            }
        }
    }

    /// kill -9 and reap.
    pub fn kill9(&mut self, id: u64) {
        self.signal(id, libc::SIGCONT);
        self.signal(id, libc::SIGKILL);
        if let Some(mut c) = self.r_mut(id).child.take() {
            let _ = c.wait();
        }
        self.r_mut(id).paused = false;
    }

    /// SIGSTOP.
    pub fn pause(&mut self, id: u64) {
        self.signal(id, libc::SIGSTOP);
        self.r_mut(id).paused = true;
    }

    /// SIGCONT.
    pub fn resume(&mut self, id: u64) {
        self.signal(id, libc::SIGCONT);
        self.r_mut(id).paused = false;
    }

    /// Every peer link to and from `id` in `mode` (`delay` for [`Mode::Delay`]).
    pub fn cut(&self, id: u64, mode: Mode, delay: Duration) {
        for ((a, b), p) in &self.proxies {
            if *a == id || *b == id {
                p.set(mode, delay);
            }
        }
    }

    /// Every peer link in `mode`.
    pub fn all_links(&self, mode: Mode, delay: Duration) {
        for p in self.proxies.values() {
            p.set(mode, delay);
        }
    }

    /// Runs `f` on the fabric under the server's lock.
    pub fn with_sim<T>(&self, f: impl FnOnce(&mut SimFabric) -> T) -> Option<T> {
        self.server.as_ref().map(|s| s.with_sim(f))
    }

    /// Every CA port: (GUID, LID, state).
    pub fn ca_ports_now(&self) -> Vec<(Guid, Lid, Option<PortState>)> {
        let cas = ca_ports(&self.topo);
        self.with_sim(|s| {
            cas.iter()
                .map(|&(n, p, g)| {
                    (
                        g,
                        s.port_info(n, p).map_or(Lid(0), |pi| pi.lid),
                        s.port_state(n, p).ok(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
    }

    /// An admin client of replica `id` (dialled directly, not through a proxy).
    pub fn admin(&self, id: u64) -> Result<SmAdminClient<tonic::transport::Channel>, ChaosError> {
        let ch = sm_node::cluster::net::channel(&self.r(id).addr.to_string())
            .map_err(|e| ChaosError::Process(e.to_string()))?;
        Ok(SmAdminClient::new(ch))
    }

    /// Replica `id`'s status (None when it does not answer).
    pub async fn status(&self, id: u64) -> Option<ClusterStatusReply> {
        if !self.is_running(id) || self.r(id).paused {
            return None;
        }
        let mut c = self.admin(id).ok()?;
        let fut = c.cluster_status(ClusterStatusRequest::default());
        match tokio::time::timeout(Duration::from_millis(500), fut).await {
            Ok(Ok(r)) => Some(r.into_inner()),
            _ => None,
        }
    }
}

impl Drop for ProcCluster {
    fn drop(&mut self) {
        for r in &mut self.replicas {
            if let Some(mut c) = r.child.take() {
                // SAFETY: kill(2) on our own child: SIGCONT first (a stopped process must run
                // to die), then SIGKILL; then reap it.
                unsafe {
                    libc::kill(c.id() as i32, libc::SIGCONT);
                }
                let _ = c.kill();
                let _ = c.wait();
            }
        }
        for p in self.proxies.values_mut() {
            p.stop();
        }
        if let Some(s) = self.server.take() {
            s.shutdown();
        }
    }
}
