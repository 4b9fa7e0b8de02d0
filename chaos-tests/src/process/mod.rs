//! Process level: fabric-simd and three `sm-node` processes ([`cluster::ProcCluster`]),
//! a seeded schedule of rounds, each ending with a kill -9 of the master (optionally after
//! another fault: SIGSTOP of the master, a network cut through the proxies, delayed peer
//! links, a link flap, a switch reboot, MAD loss, a policy change), invariants checked
//! continuously while waiting and after each round settles, and a failover-time
//! distribution.
//!
//! Invariants (process level):
//! * no Set from a deposed master: a Set accepted by the fabric from replica r's port after
//!   a leader of a later term than r's last observed leadership had been observed;
//! * no CA port's LID ever changes once assigned;
//! * a kill -9 takeover with no fabric fault in the round writes no LFT block;
//! * every acknowledged policy version is in force (or superseded by a later acknowledged
//!   one) on every new master;
//! * after each round settles: every CA port ACTIVE, delivery exactly as the policy says;
//! * every kill -9 of the master is followed by a failover (a new master's completed sweep
//!   with the subnet up), counted;
//! * with [`Options::failover_bound`] (the `chaos process` binary, never a test): every
//!   failover under that wall-clock bound. Tests count failovers and leave timing to the
//!   binary, which prints the failover-time distribution.
//! * with `clients`: the admin API history (linearizable reads and compare-and-set writes
//!   through random replicas) is linearizable ([`crate::lincheck`]);
//! * with `disk_faults`: a replica whose disk filled up or whose log was damaged either
//!   serves or exits non-zero, never lingers half-alive; one on a new disk recovers.
//!
//! A wait gives up after [`Options::patience`] observation polls (a liveness bound that turns
//! a hung cluster into a reported violation, not a claim about speed).

pub mod clients;
pub mod cluster;
pub mod disk;
pub mod proxy;

use crate::ChaosError;
use cluster::ProcCluster;
use fabric::rng::SplitMix64;
use fabric::{Guid, Lid, PortState};
use fabric_sim::Fault;
use proto::admin::{ApplyPolicyRequest, GetPolicyRequest};
use proxy::Mode;
use sm_node::clock::unix_ms;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Settings of a process-level run.
#[derive(Clone, Debug)]
pub struct Options {
    /// sm-node binary.
    pub sm_node: PathBuf,
    /// Working directory (removed and recreated).
    pub dir: PathBuf,
    /// Master kills (rounds).
    pub kills: u32,
    /// Seed of the schedule.
    pub seed: u64,
    /// Topology served.
    pub topology: String,
    /// Probability that a round injects another fault before the kill.
    pub extra_fault_p: f64,
    /// Wall-clock bound on one failover, a violation beyond it (`chaos process`); None: no
    /// timing check (tests, which count failovers instead).
    pub failover_bound: Option<Duration>,
    /// Observation polls a wait makes before it gives up (each poll observes the cluster,
    /// then pauses 20 ms; 100 ms while settling): a liveness bound, not a speed claim.
    pub patience: u32,
    /// Admin API clients reading and compare-and-setting the policy throughout, their
    /// history checked for linearizability at the end (0: none).
    pub clients: u64,
    /// The broken variant for proving the checker: clients read without ReadIndex.
    pub stale_reads: bool,
    /// Disk faults among the faults of a round (full disk, a flipped byte, a lost disk;
    /// needs root for the tmpfs data directories).
    pub disk_faults: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            sm_node: PathBuf::from("sm-node"),
            dir: std::env::temp_dir().join("chaos-process"),
            kills: 10,
            seed: 1,
            topology: "ft2:4".into(),
            extra_fault_p: 0.6,
            failover_bound: Some(Duration::from_secs(15)),
            // At least a minute per wait at 20 ms a poll (longer on a loaded machine, where
            // each observation takes longer too).
            patience: 3000,
            clients: 0,
            stale_reads: false,
            disk_faults: false,
        }
    }
}

/// What a run did and found.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Seed.
    pub seed: u64,
    /// The schedule as it ran, one line per action.
    pub schedule: Vec<String>,
    /// Faults injected by kind.
    pub faults: BTreeMap<&'static str, u64>,
    /// Failovers measured (kill -9 of the master -> a new master serving), ms.
    pub failover_ms: Vec<f64>,
    /// Masters deposed by SIGSTOP or a network cut (another replica took over).
    pub deposals: u64,
    /// CA P_Key tables compared between the replicated state (admin GetPort) and the
    /// fabric.
    pub tables_compared: u64,
    /// Invariant evaluations.
    pub checks: u64,
    /// Sets accepted by the fabric.
    pub sets: u64,
    /// Sets whose sender was never observed as leader (not attributable).
    pub unattributed_sets: u64,
    /// Client operations recorded and checked for linearizability.
    pub client_ops: u64,
    /// Violations found.
    pub violations: Vec<String>,
    /// Wall time of the run.
    pub wall: Duration,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "schedule (seed {}):", self.seed)?;
        for l in &self.schedule {
            writeln!(f, "  {l}")?;
        }
        let mut fo = self.failover_ms.clone();
        fo.sort_by(f64::total_cmp);
        let pick = |q: f64| {
            fo.get(((fo.len() as f64 - 1.0) * q).round() as usize)
                .copied()
        };
        writeln!(f, "| process level | value |")?;
        writeln!(f, "|---|---|")?;
        let total: u64 = self.faults.values().sum();
        let kinds = self
            .faults
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ");
        writeln!(f, "| faults injected | {total} ({kinds}) |")?;
        writeln!(
            f,
            "| failovers after kill -9 of the master | {} |",
            fo.len()
        )?;
        writeln!(
            f,
            "| masters deposed by SIGSTOP or a network cut | {} |",
            self.deposals
        )?;
        if let (Some(a), Some(m), Some(b)) = (pick(0.0), pick(0.5), pick(1.0)) {
            writeln!(
                f,
                "| failover time (kill -9 -> new master's sweep done, subnet up) min / median / max | {a:.0} / {m:.0} / {b:.0} ms |"
            )?;
        }
        writeln!(f, "| Sets accepted by the fabric | {} |", self.sets)?;
        writeln!(
            f,
            "| Sets not attributable to an observed leader | {} |",
            self.unattributed_sets
        )?;
        writeln!(
            f,
            "| CA P_Key tables compared, replicated state vs fabric | {} |",
            self.tables_compared
        )?;
        writeln!(
            f,
            "| client operations checked for linearizability | {} |",
            self.client_ops
        )?;
        writeln!(f, "| invariant checks | {} |", self.checks)?;
        writeln!(f, "| violations | {} |", self.violations.len())?;
        writeln!(f, "| wall time | {:.1} s |", self.wall.as_secs_f64())?;
        for v in &self.violations {
            writeln!(f, "VIOLATION {v}")?;
        }
        Ok(())
    }
}

/// Continuous observation state.
struct Monitor {
    /// Observed leaderships in order: (fabric time, replica, term).
    leaders: Vec<(u64, u64, u64)>,
    /// Sets waiting for their sender to be observed as leader.
    waiting: Vec<fabric_sim::SetRecord>,
    lids: BTreeMap<Guid, Lid>,
    by_port: BTreeMap<Guid, u64>,
    /// LFT Sets per replica since the counter was reset.
    lft_sets: BTreeMap<u64, u64>,
    acked: Option<(u64, String)>,
}

struct Run<'a> {
    c: ProcCluster,
    /// The replicas' tmpfs data directories (after `c`: unmounted once the replicas died).
    _disks: Option<disk::Tmpfs>,
    /// The admin API clients (their history checked at the end).
    workload: Option<clients::Clients>,
    rt: &'a tokio::runtime::Runtime,
    m: Monitor,
    rep: Report,
    rng: SplitMix64,
    policies: Vec<String>,
    opts: &'a Options,
}

impl Run<'_> {
    fn note(&mut self, line: String) {
        tracing::info!("chaos: {line}");
        self.rep.schedule.push(line);
    }

    fn fault(&mut self, kind: &'static str) {
        *self.rep.faults.entry(kind).or_default() += 1;
    }

    fn violation(&mut self, v: String) {
        tracing::error!("CHAOS-VIOLATION {v}");
        self.rep.violations.push(v);
    }

    /// One observation: statuses, leader changes, Sets, LIDs.
    fn observe(&mut self) -> Option<(u64, proto::admin::ClusterStatusReply)> {
        let mut leader = None;
        for id in 1..=3 {
            if let Some(st) = self.rt.block_on(self.c.status(id))
                && st.leader_id == st.self_id
            {
                match &leader {
                    Some((_, l)) if proto_term(l) >= st.term => {}
                    _ => leader = Some((id, st)),
                }
            }
        }
        let now = self.c.with_sim(|s| s.now()).unwrap_or(0);
        if let Some((id, st)) = &leader
            && self
                .m
                .leaders
                .last()
                .is_none_or(|&(_, r, t)| (r, t) != (*id, st.term))
        {
            self.m.leaders.push((now, *id, st.term));
        }
        let sets = self.c.with_sim(|s| s.take_set_log()).unwrap_or_default();
        self.rep.sets += sets.len() as u64;
        self.m.waiting.extend(sets);
        self.check_sets();
        for (g, lid, _) in self.c.ca_ports_now() {
            self.rep.checks += 1;
            if lid.0 == 0 {
                continue;
            }
            if let Some(old) = self.m.lids.insert(g, lid)
                && old != lid
            {
                self.violation(format!(
                    "INV-LID CA port {g} changed LID {} -> {}",
                    old.0, lid.0
                ));
            }
        }
        leader
    }

    /// Attributes waiting Sets to their sender's last observed leadership; flags a Set
    /// accepted after a later term's leader had been observed.
    fn check_sets(&mut self) {
        let waiting = std::mem::take(&mut self.m.waiting);
        for s in waiting {
            let Some(r) = s.source.and_then(|g| self.m.by_port.get(&g).copied()) else {
                self.rep.checks += 1;
                self.violation(format!(
                    "INV-FENCE a Set from {:?}, no replica's port",
                    s.source
                ));
                continue;
            };
            if s.attr == mad::AttributeId::LINEAR_FORWARDING_TABLE.0 {
                *self.m.lft_sets.entry(r).or_default() += 1;
            }
            // The sender's leadership: observations are samples, so a Set lies between the
            // last observation of r before it and the first after it; the later (higher)
            // term is taken (lenient: a deposed master that leads again later is excused).
            let before = self
                .m
                .leaders
                .iter()
                .rev()
                .find(|&&(t, id, _)| id == r && t <= s.time)
                .map(|l| l.2);
            let after = self
                .m
                .leaders
                .iter()
                .find(|&&(t, id, _)| id == r && t > s.time)
                .map(|l| l.2);
            let Some(term) = before.max(after) else {
                self.rep.unattributed_sets += 1;
                continue;
            };
            self.rep.checks += 1;
            if let Some(&(t, other, t2)) = self
                .m
                .leaders
                .iter()
                .find(|&&(t, id, t2)| id != r && t2 > term && t < s.time)
            {
                self.violation(format!(
                    "INV-FENCE replica {r} (leader of term {term}) had a Set (attr 0x{:04x} to {}) \
                     accepted at fabric time {} us, after replica {other} was seen leading term \
                     {t2} at {} us",
                    s.attr,
                    s.node_guid,
                    s.time / 1000,
                    t / 1000
                ));
            }
        }
    }

    /// Waits (at most [`Options::patience`] polls) for a leader other than `not` whose master
    /// completed a sweep with the subnet up at or after `after_ms`, nothing pending;
    /// observing all the while.
    fn wait_serving(&mut self, not: Option<u64>, after_ms: u64) -> Option<u64> {
        for _ in 0..self.opts.patience {
            if let Some((id, st)) = self.observe()
                && Some(id) != not
                && st.subnet_up_unix_ms != 0
                && st.last_sweep_unix_ms >= after_ms
                && !st.intent_pending
            {
                return Some(id);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// After a round: every CA port ACTIVE and delivery as the policy says, within
    /// [`Options::patience`] / 5 polls (the master may still be sweeping after a fault).
    fn settle_checks(&mut self, leader: u64) {
        if let Some(w) = &self.workload {
            w.pause_writes(true);
        }
        self.settle_checks_paused(leader);
        if let Some(w) = &self.workload {
            w.pause_writes(false);
        }
    }

    fn settle_checks_paused(&mut self, leader: u64) {
        let polls = (self.opts.patience / 5).max(1);
        let mut last = String::new();
        for _ in 0..polls {
            self.observe();
            self.rep.checks += 1;
            match self.fabric_ok(leader) {
                Ok(()) => return,
                Err(e) => last = e,
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        self.violation(format!(
            "INV-SETTLE not converged after {polls} polls: {last}"
        ));
    }

    fn fabric_ok(&mut self, leader: u64) -> Result<(), String> {
        let ports = self.c.ca_ports_now();
        let mut lids = Vec::new();
        for (g, lid, st) in ports {
            if st != Some(PortState::Active) {
                return Err(format!("INV-ACTIVE CA port {g} is {st:?}"));
            }
            lids.push((g, lid));
        }
        let pol = self.get_policy(leader)?;
        if let Some((v, text)) = &self.m.acked
            && (pol.0 < *v || (pol.0 == *v && pol.1 != *text))
        {
            return Err(format!(
                "INV-ACKED acknowledged policy version {v} not in force on replica {leader} \
                 (version {})",
                pol.0
            ));
        }
        let topo = self.c.topo.clone();
        let r = self
            .c
            .with_sim(|s| crate::delivery::check(s, &topo, pol.0, &pol.1, &lids))
            .unwrap_or_else(|| Err("no fabric".into()))?;
        self.rep.checks += r;
        self.state_matches_fabric(leader)
    }

    /// SM state equals fabric state, as far as the admin API shows it: every CA port's
    /// LID leads to that port in the replicated state, and its P_Key table as programmed
    /// (replicated) is the fabric's.
    fn state_matches_fabric(&mut self, leader: u64) -> Result<(), String> {
        let cas = sm_node::cluster::harness::ca_ports(&self.c.topo);
        let fab: Vec<(Guid, u8, Lid, Vec<u32>)> = self
            .c
            .with_sim(|s| {
                cas.iter()
                    .map(|&(n, p, g)| {
                        let lid = s.port_info(n, p).map_or(Lid(0), |i| i.lid);
                        let keys = s
                            .pkey_table(n, p)
                            .unwrap_or_default()
                            .iter()
                            .map(|k| u32::from(k.0))
                            .collect();
                        (g, p, lid, keys)
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut a = self.c.admin(leader).map_err(|e| e.to_string())?;
        let trim = |v: &mut Vec<u32>| {
            while v.last() == Some(&0) {
                v.pop();
            }
        };
        for (g, port, lid, mut keys) in fab {
            self.rep.checks += 1;
            let req = proto::admin::GetPortRequest {
                linearizable: false,
                lid: u32::from(lid.0),
                port: u32::from(port),
            };
            let r = self
                .rt
                .block_on(async {
                    tokio::time::timeout(Duration::from_secs(2), a.get_port(req)).await
                })
                .map_err(|_| "GetPort timed out".to_string())?
                .map_err(|e| format!("GetPort LID {}: {}", lid.0, e.message()))?
                .into_inner();
            if r.port_guid != g.0 {
                return Err(format!(
                    "INV-STATE LID {} is port {:#x} in the replicated state, {g} in the fabric",
                    lid.0, r.port_guid
                ));
            }
            let mut rec = r.pkeys.clone();
            trim(&mut rec);
            trim(&mut keys);
            if !rec.is_empty() {
                self.rep.tables_compared += 1;
            }
            if !rec.is_empty() && rec != keys {
                return Err(format!(
                    "INV-STATE {g} P_Keys {rec:x?} programmed (replicated), {keys:x?} in the \
                     fabric"
                ));
            }
        }
        Ok(())
    }

    fn get_policy(&mut self, id: u64) -> Result<(u64, String), String> {
        let mut a = self.c.admin(id).map_err(|e| e.to_string())?;
        let r = self
            .rt
            .block_on(async {
                tokio::time::timeout(
                    Duration::from_secs(2),
                    a.get_policy(GetPolicyRequest::default()),
                )
                .await
            })
            .map_err(|_| "GetPolicy timed out".to_string())?
            .map_err(|e| e.message().to_string())?
            .into_inner();
        Ok((r.version, r.text))
    }

    fn apply_policy(&mut self, leader: u64) {
        let i = self.rng.below(self.policies.len() as u64) as usize;
        let text = self.policies[i].clone();
        let Ok((v, _)) = self.get_policy(leader) else {
            return;
        };
        let Ok(mut a) = self.c.admin(leader) else {
            return;
        };
        let req = ApplyPolicyRequest {
            text: text.clone(),
            expected_version: v,
            request_id: self.rng.next_u64() | 1,
        };
        let r = self.rt.block_on(async {
            tokio::time::timeout(Duration::from_secs(5), a.apply_policy(req)).await
        });
        self.fault("policy change");
        match r {
            Ok(Ok(rep)) => {
                let rep = rep.into_inner();
                self.note(format!(
                    "  policy {i} acknowledged as version {}",
                    rep.version
                ));
                self.m.acked = Some((rep.version, text));
            }
            other => self.note(format!("  policy {i} not acknowledged: {other:?}")),
        }
    }

    /// A fault other than the kill; returns true when it deposed the master (a failover
    /// to measure) and the replica that was hit.
    fn extra_fault(&mut self, leader: u64) -> Option<u64> {
        let cas = sm_node::cluster::harness::ca_ports(&self.c.topo);
        let links: Vec<_> = self
            .c
            .topo
            .links()
            .map(|(a, _)| (a.node, a.port.0))
            .collect();
        let switches: Vec<_> = self.c.topo.switches().map(|(id, _)| id).collect();
        let _ = cas;
        let kinds = if self.opts.disk_faults { 10 } else { 7 };
        match self.rng.below(kinds) {
            0 => {
                let d = 300 + self.rng.below(1500);
                self.note(format!("SIGSTOP master {leader} for {d} ms"));
                self.fault("SIGSTOP");
                self.c.pause(leader);
                self.watch_for(Duration::from_millis(d));
                self.c.resume(leader);
                Some(leader)
            }
            1 => {
                let d = 1000 + self.rng.below(1500);
                let mode = if self.rng.chance(0.5) {
                    Mode::BlackHole
                } else {
                    Mode::Drop
                };
                self.note(format!(
                    "cut master {leader} from its peers ({mode:?}) for {d} ms"
                ));
                self.fault("network cut");
                self.c.cut(leader, mode, Duration::ZERO);
                self.watch_for(Duration::from_millis(d));
                self.c.all_links(Mode::Pass, Duration::ZERO);
                Some(leader)
            }
            2 => {
                let d = 5 + self.rng.below(40);
                let for_ms = 500 + self.rng.below(1500);
                self.note(format!("delay every peer link {d} ms for {for_ms} ms"));
                self.fault("network delay");
                self.c.all_links(Mode::Delay, Duration::from_millis(d));
                self.watch_for(Duration::from_millis(for_ms));
                self.c.all_links(Mode::Pass, Duration::ZERO);
                None
            }
            3 if !links.is_empty() => {
                let (node, port) = links[self.rng.below(links.len() as u64) as usize];
                let d = 50 + self.rng.below(400);
                self.note(format!("link {node:?}/{port} down for {d} ms"));
                self.fault("link flap");
                self.c.with_sim(|s| {
                    let now = s.now();
                    let _ = s.inject(now, Fault::LinkDown { node, port });
                    let _ = s.schedule(now + d * 1_000_000, Fault::LinkUp { node, port });
                });
                self.watch_for(Duration::from_millis(d + 200));
                None
            }
            4 if !switches.is_empty() => {
                let node = switches[self.rng.below(switches.len() as u64) as usize];
                self.note(format!("reboot switch {node:?}"));
                self.fault("switch reboot");
                self.c.with_sim(|s| {
                    let now = s.now();
                    let _ = s.inject(now, Fault::RebootSwitch { node });
                });
                self.watch_for(Duration::from_millis(300));
                None
            }
            5 => {
                let pct = 5 + self.rng.below(25);
                let d = 200 + self.rng.below(800);
                self.note(format!("MAD loss {pct}% for {d} ms"));
                self.fault("MAD loss");
                self.c.with_sim(|s| {
                    let now = s.now();
                    let _ = s.inject(
                        now,
                        Fault::Loss {
                            prob: pct as f64 / 100.0,
                        },
                    );
                });
                self.watch_for(Duration::from_millis(d));
                self.c.with_sim(|s| {
                    let now = s.now();
                    let _ = s.inject(now, Fault::Loss { prob: 0.0 });
                });
                None
            }
            7..=9 => {
                self.disk_fault(leader);
                None
            }
            _ if self.opts.clients > 0 => {
                // The clients write the policy (the checker must see every write).
                self.note("no fault (the clients write the policy)".into());
                None
            }
            _ => {
                self.note("apply a policy through the master".into());
                self.apply_policy(leader);
                None
            }
        }
    }

    /// A disk fault on a follower: its disk fills up (it must exit or keep serving, never
    /// hang), a byte of its stopped log flips (it must refuse to start or start right), or
    /// its disk is lost (it recovers its log before it votes).
    fn disk_fault(&mut self, leader: u64) {
        let Some(f) = (1..=3).find(|&i| i != leader && self.c.is_running(i)) else {
            return;
        };
        let dir = self.c.data_dir(f);
        match self.rng.below(3) {
            0 => {
                self.note(format!("disk of replica {f} full"));
                self.fault("disk full");
                if let Err(e) = disk::fill(&dir) {
                    self.note(format!("  could not fill {}: {e}", dir.display()));
                }
                // Writes come with every proposal: within the bound the replica either
                // exits (fail-stop) or still serves; never neither.
                self.watch_for(Duration::from_secs(3));
                let exited = self.alive_or_exited(f);
                let _ = disk::unfill(&dir);
                if let Some(st) = exited {
                    self.note(format!("  replica {f} exited ({st}); restarted"));
                    if st.success() {
                        self.violation(format!(
                            "INV-FAILSTOP replica {f} stopped on a full disk with status 0"
                        ));
                    }
                    if let Err(e) = self.c.start(f) {
                        self.violation(format!("INV-RESTART replica {f}: {e}"));
                    }
                }
            }
            1 => {
                self.fault("byte flipped");
                self.c.kill9(f);
                let pick = self.rng.next_u64();
                match disk::flip_byte(&dir, pick) {
                    Ok((file, off)) => self.note(format!(
                        "replica {f} stopped, byte {off} of {} flipped",
                        file.display()
                    )),
                    Err(e) => self.note(format!("replica {f}: no byte flipped: {e}")),
                }
                if let Err(e) = self.c.start(f) {
                    self.violation(format!("INV-RESTART replica {f}: {e}"));
                    return;
                }
                self.watch_for(Duration::from_secs(2));
                if let Some(st) = self.alive_or_exited(f) {
                    // It refused its log: the operator replaces the disk.
                    self.note(format!(
                        "  replica {f} refused its log ({st}); disk replaced"
                    ));
                    if let Err(e) = self.c.start_on_new_disk(f) {
                        self.violation(format!("INV-RESTART replica {f}: {e}"));
                    }
                }
            }
            _ => {
                self.note(format!("disk of replica {f} lost; started on a new one"));
                self.fault("disk lost");
                self.c.kill9(f);
                if let Err(e) = self.c.start_on_new_disk(f) {
                    self.violation(format!("INV-RESTART replica {f}: {e}"));
                }
            }
        }
    }

    /// A replica process that runs answers its status: a process that neither serves nor
    /// exits is a violation (a supervisor could not tell it is broken). Returns the exit
    /// status when it ended by itself (reaped).
    fn alive_or_exited(&mut self, id: u64) -> Option<std::process::ExitStatus> {
        if let Some(st) = self.c.exited(id) {
            return Some(st);
        }
        if !self.c.is_running(id) {
            return None;
        }
        self.rep.checks += 1;
        if self.rt.block_on(self.c.status(id)).is_none() {
            self.violation(format!(
                "INV-FAILSTOP replica {id} runs but does not answer its status (neither serves nor exits)"
            ));
        }
        None
    }

    fn watch_for(&mut self, d: Duration) {
        let start = Instant::now();
        while start.elapsed() < d {
            self.observe();
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn proto_term(s: &proto::admin::ClusterStatusReply) -> u64 {
    s.term
}

/// Runs the process-level schedule of `opts.seed`; every child is stopped on return.
pub fn run(opts: &Options) -> Result<Report, ChaosError> {
    let t0 = Instant::now();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    // Admin channels are built lazily outside async code too.
    let _enter = rt.enter();
    let mut c = ProcCluster::new(&opts.sm_node, &opts.topology, &opts.dir)?;
    let disks = if opts.disk_faults {
        let dirs: Vec<PathBuf> = (1..=3).map(|id| c.data_dir(id)).collect();
        Some(disk::Tmpfs::mount(&dirs, 128)?)
    } else {
        None
    };
    let by_port = c.replicas.iter().map(|r| (r.port_guid, r.id)).collect();
    let cas = sm_node::cluster::harness::ca_ports(&c.topo);
    let policies = crate::sim::world::policies(&cas);
    for id in 1..=3 {
        c.start(id)?;
    }
    let mut run = Run {
        c,
        _disks: disks,
        workload: None,
        rt: &rt,
        m: Monitor {
            leaders: Vec::new(),
            waiting: Vec::new(),
            lids: BTreeMap::new(),
            by_port,
            lft_sets: BTreeMap::new(),
            acked: None,
        },
        rep: Report {
            seed: opts.seed,
            ..Report::default()
        },
        rng: SplitMix64::new(opts.seed),
        policies,
        opts,
    };
    let Some(mut leader) = run.wait_serving(None, 0) else {
        return Err(ChaosError::Process(format!(
            "no serving master after {} polls (logs in {})",
            opts.patience,
            opts.dir.display()
        )));
    };
    run.note(format!("replica {leader} is master"));
    let addrs: Vec<std::net::SocketAddr> = run.c.replicas.iter().map(|r| r.addr).collect();
    run.workload = (opts.clients > 0)
        .then(|| clients::Clients::start(opts.clients, addrs, opts.seed, opts.stale_reads));
    for k in 0..opts.kills {
        run.m.lft_sets.clear();
        let mut fabric_fault = false;
        if run.rng.chance(opts.extra_fault_p) {
            let before = run.rep.faults.clone();
            let hit = run.extra_fault(leader);
            fabric_fault = ["link flap", "switch reboot", "MAD loss"]
                .iter()
                .any(|k| run.rep.faults.get(k) != before.get(k));
            let t = Instant::now();
            let after = unix_ms();
            match run.wait_serving(None, after) {
                Some(l) => {
                    if let Some(bound) = run.opts.failover_bound
                        && t.elapsed() > bound
                    {
                        run.violation(format!(
                            "INV-FAILOVER-TIME no serving master within {bound:?} after the \
                             fault (serving after {:.0} ms)",
                            t.elapsed().as_secs_f64() * 1e3
                        ));
                    }
                    if hit.is_some_and(|h| h != l) {
                        run.rep.deposals += 1;
                        run.note(format!(
                            "  replica {l} took over (serving {:.0} ms after the fault ended)",
                            t.elapsed().as_secs_f64() * 1e3
                        ));
                    }
                    leader = l;
                }
                None => {
                    run.violation(format!(
                        "INV-FAILOVER no serving master after {} polls following the fault",
                        run.opts.patience
                    ));
                    break;
                }
            }
            run.settle_checks(leader);
        }
        // The kill.
        run.m.lft_sets.clear();
        run.note(format!("kill {}: kill -9 master {leader}", k + 1));
        run.fault("kill -9 master");
        let t = Instant::now();
        let after = unix_ms();
        run.c.kill9(leader);
        let next = run.wait_serving(Some(leader), after);
        let Some(next) = next else {
            run.violation(format!(
                "INV-FAILOVER no new master after {} polls following kill -9 of {leader}",
                run.opts.patience
            ));
            break;
        };
        let took = t.elapsed();
        let ms = took.as_secs_f64() * 1e3;
        run.rep.failover_ms.push(ms);
        if let Some(bound) = run.opts.failover_bound
            && took > bound
        {
            run.violation(format!(
                "INV-FAILOVER-TIME replica {next} took over {ms:.0} ms after kill -9 of \
                 {leader}, over the bound of {bound:?}"
            ));
        }
        run.note(format!("  replica {next} took over in {ms:.0} ms"));
        let lft = run.m.lft_sets.get(&next).copied().unwrap_or(0);
        run.rep.checks += 1;
        if !fabric_fault && lft > 0 {
            run.violation(format!(
                "INV-QUIET replica {next} wrote {lft} LFT blocks taking over an unchanged fabric"
            ));
        }
        run.c.start(leader)?;
        run.fault("restart");
        leader = next;
        run.settle_checks(leader);
    }
    // Last settle with everyone running.
    if let Some(l) = run.wait_serving(None, 0) {
        run.settle_checks(l);
    }
    if let Some(w) = run.workload.take() {
        let history = w.finish();
        run.rep.client_ops = history.len() as u64;
        run.rep.checks += 1;
        if let Err(e) = crate::lincheck::check(&history, (0, 0)) {
            run.violation(format!("INV-LINEARIZABLE {e}"));
        }
    }
    run.rep.wall = t0.elapsed();
    Ok(run.rep)
}
