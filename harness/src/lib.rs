//! A cluster of replica processes on loopback over an in-process fabric-simd server, for
//! tests and the failover benchmark: start, kill -9, SIGSTOP/SIGCONT, SIGTERM and restart
//! replicas; ask them over SmAdmin; read the fabric's accounting (accepted Sets by source
//! port, LIDs, P_Key tables, delivery between CAs).
//!
//! Waits poll the replicas' status; the bounds are failure bounds, not synchronisation.
//!
//! It must never be part of a daemon: it starts and kills processes by PID, and talks to
//! the replicas in plain HTTP/2 on loopback (every replica is started with
//! `--insecure-loopback`; a TLS test makes its own clients).

pub mod bench;

use fabric::{Guid, Lid, NodeId, PKey, Topology};
use fabric_sim::server::ServerHandle;
use fabric_sim::{SetRecord, SimConfig, SimFabric};
use proto::admin::sm_admin_client::SmAdminClient;
use proto::admin::{ClusterStatusReply, ClusterStatusRequest};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// One replica process.
pub struct ProcReplica {
    /// Raft id.
    pub id: u64,
    /// Peer/admin address.
    pub addr: String,
    /// Its fabric port.
    pub port_guid: Guid,
    /// Extra flags (priority, ...).
    pub extra: Vec<String>,
    child: Option<Child>,
}

impl ProcReplica {
    /// Process id while running.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }
}

/// CA ports with a cable: (node, port number, port GUID), in topology order.
pub fn ca_ports(t: &Topology) -> Vec<(NodeId, u8, Guid)> {
    t.cas()
        .flat_map(|(id, n)| {
            n.port_numbers()
                .filter(|p| n.ports[p.0 as usize].remote.is_some())
                .map(|p| (id, p.0, n.ports[p.0 as usize].guid))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The cluster.
pub struct LocalCluster {
    /// Working directory.
    pub dir: PathBuf,
    /// The fabric.
    pub server: Option<ServerHandle>,
    /// Its topology.
    pub topo: Topology,
    /// Replicas (index = id - 1).
    pub replicas: Vec<ProcReplica>,
    bin: PathBuf,
    peers: String,
    /// Flags given to every replica.
    pub common: Vec<String>,
}

/// A plain HTTP/2 channel to a replica's admin address, with the daemon's peer timeouts.
fn channel(addr: &str) -> Result<tonic::transport::Channel, String> {
    Ok(
        tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
            .map_err(|e| format!("{addr}: {e}"))?
            .connect_timeout(Duration::from_millis(300))
            .timeout(Duration::from_secs(2))
            .tcp_nodelay(true)
            .connect_lazy(),
    )
}

/// A free loopback port, held open by the returned listener: ports chosen while the earlier
/// ones are still held are distinct (the kernel may hand a just-closed port out again).
pub fn free_port() -> std::io::Result<(u16, std::net::TcpListener)> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok((l.local_addr()?.port(), l))
}

impl LocalCluster {
    /// Serves `topology` and prepares `n` replicas of `bin` (not started) in `dir`.
    pub fn new(bin: &Path, topology: &str, n: u64, dir: &Path) -> Result<LocalCluster, String> {
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        let topo = fabric_sim::server::load_topology(topology)?;
        let sim = SimFabric::new(&topo, SimConfig::default()).map_err(|e| e.to_string())?;
        let server =
            fabric_sim::server::spawn(sim, &dir.join("simd.sock")).map_err(|e| e.to_string())?;
        let cas = ca_ports(&topo);
        let mut replicas = Vec::new();
        let mut held = Vec::new();
        for id in 1..=n {
            let (port, l) = free_port().map_err(|e| e.to_string())?;
            held.push(l);
            replicas.push(ProcReplica {
                id,
                addr: format!("127.0.0.1:{port}"),
                port_guid: cas[(id - 1) as usize].2,
                extra: Vec::new(),
                child: None,
            });
        }
        drop(held);
        let peers = replicas
            .iter()
            .map(|r| format!("{}={}", r.id, r.addr))
            .collect::<Vec<_>>()
            .join(",");
        Ok(LocalCluster {
            dir: dir.to_path_buf(),
            server: Some(server),
            topo,
            replicas,
            bin: bin.to_path_buf(),
            peers,
            common: vec![
                "--sweep-interval".into(),
                "0".into(),
                "--routing-workers".into(),
                "1".into(),
            ],
        })
    }

    fn r(&self, id: u64) -> &ProcReplica {
        &self.replicas[(id - 1) as usize]
    }

    fn r_mut(&mut self, id: u64) -> &mut ProcReplica {
        &mut self.replicas[(id - 1) as usize]
    }

    /// Starts replica `id` (again, on the same data directory).
    pub fn start(&mut self, id: u64) -> Result<(), String> {
        self.start_as(id, "new")
    }

    /// The operator's disk replacement of a stopped replica: its data directory is gone and
    /// it is started again as a replica of the existing cluster (it recovers its log from
    /// the leader before it votes).
    pub fn start_on_new_disk(&mut self, id: u64) -> Result<(), String> {
        let data = self.dir.join(format!("r{id}"));
        match std::fs::remove_dir_all(&data) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("{}: {e}", data.display())),
        }
        self.start_as(id, "existing")
    }

    fn start_as(&mut self, id: u64, initial_cluster_state: &str) -> Result<(), String> {
        let socket = self
            .server
            .as_ref()
            .map(|s| s.path().to_path_buf())
            .unwrap_or_default();
        let r = self.r(id);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join(format!("replica{id}.log")))
            .map_err(|e| e.to_string())?;
        let child = Command::new(&self.bin)
            .arg("--id")
            .arg(id.to_string())
            .arg("--peers")
            .arg(&self.peers)
            // A new cluster: an empty data directory votes (a restart keeps its log).
            .args(["--initial-cluster-state", initial_cluster_state])
            .arg("--data-dir")
            .arg(self.dir.join(format!("r{id}")))
            .arg("--fabric")
            .arg(format!(
                "simd:{}@0x{:016x}",
                socket.display(),
                r.port_guid.0
            ))
            // Plain HTTP/2 on loopback must be asked for (always given here, whatever a test
            // puts in `common`; TLS tests configure TLS through the SM_TLS_* environment,
            // and a replica with TLS serves TLS).
            .arg("--insecure-loopback")
            .args(&self.common)
            .args(&r.extra)
            .env(
                "RUST_LOG",
                std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("{}: {e}", self.bin.display()))?;
        self.r_mut(id).child = Some(child);
        Ok(())
    }

    /// Starts every replica.
    pub fn start_all(&mut self) -> Result<(), String> {
        for id in 1..=self.replicas.len() as u64 {
            self.start(id)?;
        }
        Ok(())
    }

    fn signal(&self, id: u64, sig: i32) {
        if let Some(pid) = self.r(id).pid() {
            // SAFETY: kill(2) on the pid of a child this process spawned and has not reaped.
            unsafe {
                libc::kill(pid as i32, sig);
            }
        }
    }

    /// kill -9 and reap.
    pub fn kill9(&mut self, id: u64) {
        self.signal(id, libc::SIGKILL);
        if let Some(mut c) = self.r_mut(id).child.take() {
            let _ = c.wait();
        }
    }

    /// SIGTERM, then waits for the exit: at most `polls` checks 20 ms apart, then SIGKILL
    /// (so a replica that ignores SIGTERM shows as killed by signal 9, never hangs a test).
    /// Returns how it exited (None when it was not running).
    pub fn terminate(&mut self, id: u64, polls: u32) -> Option<ExitStatus> {
        self.r(id).child.as_ref()?;
        self.signal(id, libc::SIGTERM);
        if let Some(st) = self.wait_exit(id, polls) {
            return Some(st);
        }
        self.signal(id, libc::SIGKILL);
        self.r_mut(id).child.take()?.wait().ok()
    }

    /// Waits for replica `id` to exit by itself: at most `polls` checks 20 ms apart. Returns
    /// its exit status once it has exited (reaped: the replica is then not running), None
    /// while it still runs or when it was not running.
    pub fn wait_exit(&mut self, id: u64, polls: u32) -> Option<ExitStatus> {
        for i in 0..polls.max(1) {
            let exited = self.r_mut(id).child.as_mut()?.try_wait().ok().flatten();
            if let Some(st) = exited {
                self.r_mut(id).child = None;
                return Some(st);
            }
            if i + 1 < polls {
                // Polling a child's exit, not synchronising on time.
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        None
    }

    /// SIGSTOP.
    pub fn pause(&self, id: u64) {
        self.signal(id, libc::SIGSTOP);
    }

    /// SIGCONT.
    pub fn resume(&self, id: u64) {
        self.signal(id, libc::SIGCONT);
    }

    /// True while the process runs.
    pub fn is_running(&self, id: u64) -> bool {
        self.r(id).child.is_some()
    }

    /// Replica `id`'s status.
    pub async fn status(&self, id: u64) -> Result<ClusterStatusReply, String> {
        let ch = channel(&self.r(id).addr)?;
        let mut c = SmAdminClient::new(ch);
        c.cluster_status(ClusterStatusRequest::default())
            .await
            .map(|r| r.into_inner())
            .map_err(|e| e.message().to_string())
    }

    /// An admin client of replica `id`.
    pub fn admin(&self, id: u64) -> Result<SmAdminClient<tonic::transport::Channel>, String> {
        let ch = channel(&self.r(id).addr)?;
        Ok(SmAdminClient::new(ch))
    }

    /// Waits (bounded) for a running replica that reports itself leader, whose master has
    /// completed a sweep at or after `after_ms` with the subnet up. Returns its status.
    pub async fn wait_serving(
        &self,
        after_ms: u64,
        bound: Duration,
    ) -> Result<ClusterStatusReply, String> {
        self.wait_leader(bound, |st| st.last_sweep_unix_ms >= after_ms)
            .await
    }

    /// Waits (bounded) for a serving master whose last heavy sweep programmed the policy,
    /// tenant set and QoS policy versions in force: after a change's reply, the fabric carries
    /// it (the change restarted the master, and a sweep of the master it replaced does not
    /// count, whenever it completed).
    pub async fn wait_programmed(&self, bound: Duration) -> Result<ClusterStatusReply, String> {
        self.wait_leader(bound, ClusterStatusReply::in_force_programmed)
            .await
    }

    /// Waits (bounded) for a running replica that reports itself leader with the subnet up,
    /// its sweep recorded and `ok` true of its status.
    async fn wait_leader(
        &self,
        bound: Duration,
        ok: impl Fn(&ClusterStatusReply) -> bool,
    ) -> Result<ClusterStatusReply, String> {
        let start = Instant::now();
        let mut last = String::new();
        while start.elapsed() < bound {
            for r in &self.replicas {
                if r.child.is_none() {
                    continue;
                }
                match self.status(r.id).await {
                    Ok(st)
                        if st.leader_id == st.self_id
                            && st.subnet_up_unix_ms != 0
                            && ok(&st)
                            && self.sweep_recorded(r.id).await =>
                    {
                        return Ok(st);
                    }
                    Ok(st) => last = format!("{st:?}"),
                    Err(e) => last = e,
                }
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Err(format!("no serving master within {bound:?}; last: {last}"))
    }

    /// True once the master's sweep is recorded in the log (its SM port has a LID there), so
    /// every read of the replicated state sees the fabric it brought up.
    async fn sweep_recorded(&self, id: u64) -> bool {
        let Ok(mut a) = self.admin(id) else {
            return false;
        };
        a.sm_info(proto::admin::SmInfoRequest::default())
            .await
            .is_ok_and(|r| r.into_inner().sm_lid != 0)
    }

    /// Waits (bounded) until `pred` holds for replica `id`'s status.
    pub async fn wait_status(
        &self,
        id: u64,
        bound: Duration,
        pred: impl Fn(&ClusterStatusReply) -> bool,
    ) -> Result<ClusterStatusReply, String> {
        let start = Instant::now();
        let mut last = String::new();
        while start.elapsed() < bound {
            match self.status(id).await {
                Ok(st) if pred(&st) => return Ok(st),
                Ok(st) => last = format!("{st:?}"),
                Err(e) => last = e,
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Err(format!(
            "replica {id}: condition not met within {bound:?}; last: {last}"
        ))
    }

    /// Waits (bounded) until replica `id` has nothing in flight (no intent pending, every
    /// entry applied) and every running replica applied as far.
    pub async fn settle(&self, id: u64, bound: Duration) -> Result<(), String> {
        self.wait_status(id, bound, |s| {
            !s.intent_pending && s.applied_index == s.commit_index
        })
        .await?;
        let settled = self.status(id).await?.commit_index;
        for r in self
            .replicas
            .iter()
            .map(|r| r.id)
            .filter(|&r| self.is_running(r))
        {
            self.wait_status(r, bound, |s| s.applied_index >= settled)
                .await?;
        }
        Ok(())
    }

    /// kill -9 of replica `leader`, then waits (at most `bound`) for another replica serving
    /// as master, with a sweep completed after the kill. Returns its status and every
    /// replica's log length at the kill (for [`LocalCluster::heavy_sweeps_since`]).
    pub async fn kill9_leader(
        &mut self,
        leader: u64,
        bound: Duration,
    ) -> Result<(ClusterStatusReply, Vec<u64>), String> {
        let kill_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let from = (1..=self.replicas.len() as u64)
            .map(|id| self.log_len(id))
            .collect();
        self.kill9(leader);
        let start = Instant::now();
        loop {
            if let Ok(st) = self
                .wait_serving(kill_ms + 1, Duration::from_millis(50))
                .await
                && st.leader_id != leader
            {
                return Ok((st, from));
            }
            if start.elapsed() > bound {
                return Err(format!(
                    "no new master within {bound:?} after kill -9 of replica {leader}"
                ));
            }
        }
    }

    /// Length of replica `id`'s log file (0 when there is none).
    pub fn log_len(&self, id: u64) -> u64 {
        std::fs::metadata(self.dir.join(format!("replica{id}.log"))).map_or(0, |m| m.len())
    }

    /// Heavy sweeps replica `id` logged as complete after byte `from` of its log.
    pub fn heavy_sweeps_since(&self, id: u64, from: u64) -> usize {
        let text = std::fs::read(self.dir.join(format!("replica{id}.log"))).unwrap_or_default();
        String::from_utf8_lossy(&text[(from as usize).min(text.len())..])
            .matches("HEAVY SWEEP COMPLETE")
            .count()
    }

    /// Runs `f` on the served simulator (tests reach behind the SM's back with it).
    pub fn with_sim<T>(&self, f: impl FnOnce(&mut SimFabric) -> T) -> T {
        self.server
            .as_ref()
            .map(|s| s.with_sim(f))
            .expect("the fabric is served until drop")
    }

    /// Takes (and clears) the fabric's log of accepted Sets.
    pub fn take_sets(&self) -> Vec<SetRecord> {
        self.with_sim(|s| s.take_set_log())
    }

    /// Every CA port's LID.
    pub fn ca_lids(&self) -> Vec<(Guid, Lid)> {
        let cas = ca_ports(&self.topo);
        self.with_sim(|s| {
            cas.iter()
                .map(|&(n, p, g)| (g, s.port_info(n, p).map_or(Lid(0), |pi| pi.lid)))
                .collect()
        })
    }

    /// P_Keys of every CA port.
    pub fn ca_pkeys(&self) -> Vec<(Guid, Vec<PKey>)> {
        let cas = ca_ports(&self.topo);
        self.with_sim(|s| {
            cas.iter()
                .map(|&(n, p, g)| (g, s.pkey_table(n, p).unwrap_or_default()))
                .collect()
        })
    }

    /// Pairs of CA ports (by GUID) that cannot reach each other on the default partition.
    pub fn undelivered(&self) -> Vec<(Guid, Guid)> {
        let lids = self.ca_lids();
        self.with_sim(|s| {
            let mut bad = Vec::new();
            for &(a, _) in &lids {
                for &(b, lid) in &lids {
                    if a != b && !s.deliver(a, lid, PKey(0xFFFF)).is_delivered() {
                        bad.push((a, b));
                    }
                }
            }
            bad
        })
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        for r in &mut self.replicas {
            if let Some(mut c) = r.child.take() {
                // SAFETY: kill(2) on our own child: SIGCONT first (a stopped process ignores
                // nothing but needs to run to die cleanly), then SIGKILL.
                unsafe {
                    libc::kill(c.id() as i32, libc::SIGCONT);
                }
                let _ = c.kill();
                let _ = c.wait();
            }
        }
        if let Some(s) = self.server.take() {
            s.shutdown();
        }
    }
}
