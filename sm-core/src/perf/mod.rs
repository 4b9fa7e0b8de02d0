//! The performance manager (issue 21): the master reads the PerfMgt counters of every
//! ACTIVE CA port and switch port on an interval (OpenSM's `perfmgr_sweep_time_s`, 180 s by
//! default), in its own window of outstanding queries and its own rate limit, over QP1 —
//! apart from the sweeper's SMP window, so it never delays bring-up or programming (its
//! first sweep starts after SUBNET UP). Sans-IO in the quinn-proto style: targets in with
//! [`PerfManager::set_fabric`] after each heavy sweep, answers in with
//! [`PerfManager::handle_gmp`], time in with [`PerfManager::handle_timeout`]; GMPs out with
//! [`PerfManager::poll_transmit`], [`PerfEvent`]s out with [`PerfManager::poll_event`].
//!
//! Per port: ClassPortInfo once per node (the extended 64-bit data counters are read when
//! its capability mask says so, as OpenSM's perfmgr does), PortCounters (and
//! PortCountersExtended) every sweep; deltas against the last reading (a lower reading is
//! a reset by someone else and counts from 0), totals over this master's window, a rolling
//! window of samples, counters cleared with a Set when one nears its maximum (OpenSM's
//! rule: 3/4 of it). Thresholds as `ibqueryerrors` applies them ([`Thresholds`]); a counter
//! crossing its threshold raises [`PerfEvent::Alarm`]; each link has a [`Health`].
//!
//! Counters are not Raft state: they are measurements, not decisions, change every sweep,
//! and a new master reads them again from the fabric (its window starts fresh).
//!
//! Must never: do IO, read a clock, or send more than `max_outstanding` queries at once
//! or faster than `rate_per_sec`.

mod health;
mod port;
mod sweep;
mod thresholds;

pub use health::{End, Health, LinkHealth};
pub use port::{N as COUNTERS, PortRecord, Reading, Sample};
pub use thresholds::{CHECKED, MAX_TEXT as MAX_THRESHOLDS_TEXT, Thresholds};

use crate::SmError;
use fabric::{Guid, Lid};
use mad::perf::{PerfMad, PortCounters, PortCountersExtended};
use std::collections::{HashMap, VecDeque};

/// Virtual time in nanoseconds.
pub type VTime = u64;

const SEC: VTime = 1_000_000_000;

/// How the performance manager runs.
#[derive(Clone, Debug)]
pub struct PerfConfig {
    /// Sweep the counters at all (OpenSM `perfmgr`).
    pub enabled: bool,
    /// Time between the starts of two sweeps (OpenSM `perfmgr_sweep_time_s`, 180 s).
    pub interval: VTime,
    /// Queries outstanding at once (OpenSM `perfmgr_max_outstanding_queries`, 500).
    pub max_outstanding: usize,
    /// Queries sent per second at most.
    pub rate_per_sec: u32,
    /// Time to wait for an answer before resending.
    pub timeout: VTime,
    /// Resends of an unanswered query before the port is given up for the sweep.
    pub retries: u8,
    /// Samples kept per port (the rolling window).
    pub window: usize,
    /// Alarm thresholds.
    pub thresholds: Thresholds,
    /// High 32 bits of every transaction id (the low ones count queries).
    pub tid_high: u32,
}

impl Default for PerfConfig {
    fn default() -> PerfConfig {
        PerfConfig {
            enabled: true,
            interval: 180 * SEC,
            max_outstanding: 500,
            rate_per_sec: 20_000,
            timeout: SEC / 2,
            retries: 2,
            window: 10,
            thresholds: Thresholds::default(),
            tid_high: 0x5045_5246, // "PERF"
        }
    }
}

/// The other end of a link.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Peer {
    /// Node GUID.
    pub node_guid: Guid,
    /// Port number.
    pub port: u8,
    /// NodeDescription.
    pub desc: String,
}

/// A port the last heavy sweep found (see [`crate::Sweeper::perf_targets`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PerfTarget {
    /// Node GUID.
    pub node_guid: Guid,
    /// NodeDescription.
    pub desc: String,
    /// A switch (its ports are read through port 0's LID).
    pub is_switch: bool,
    /// The LID queries go to (a switch's port-0 LID, a CA port's LID; 0: none).
    pub lid: Lid,
    /// Port number.
    pub port: u8,
    /// PortInfo.PortState as read (1 Down, 2 Init, 3 Armed, 4 Active).
    pub state: u8,
    /// PortInfo.PortPhysicalState as read (5 LinkUp, 2 Polling, 3 Disabled, ...).
    pub phys: u8,
    /// The port at the other end of the link, when linked.
    pub peer: Option<Peer>,
}

impl PerfTarget {
    /// Is the port read in a sweep (ACTIVE with a LID to query)?
    pub fn readable(&self) -> bool {
        self.state == 4 && self.lid.0 != 0
    }
}

/// A GMP to send: the PerfMgt MAD to `dlid`, QP1.
#[derive(Clone, Debug)]
pub struct PerfTransmit {
    /// Destination LID.
    pub dlid: Lid,
    /// The MAD.
    pub mad: [u8; 256],
}

/// A counter over its threshold, as raised.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Alarm {
    /// The port's node GUID, description, LID and number.
    pub node_guid: Guid,
    /// NodeDescription.
    pub desc: String,
    /// LID the port was read at.
    pub lid: Lid,
    /// Port number.
    pub port: u8,
    /// Other end of the link.
    pub peer: Option<Peer>,
    /// The counter.
    pub counter: mad::perf::Counter,
    /// Its value.
    pub value: u64,
    /// The threshold it exceeds.
    pub threshold: u64,
}

impl std::fmt::Display for Alarm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} port {} ({}, lid {}): {} = {} > {}",
            self.node_guid,
            self.port,
            self.desc,
            self.lid.0,
            self.counter.name(),
            self.value,
            self.threshold
        )?;
        if let Some(p) = &self.peer {
            write!(f, "; peer {} port {} ({})", p.node_guid, p.port, p.desc)?;
        }
        Ok(())
    }
}

/// What one sweep did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PerfSweepStats {
    /// Number of the sweep (from 1).
    pub number: u64,
    /// Ports read.
    pub ports: usize,
    /// Ports given up (no answer after the retries, or an error status).
    pub failed: usize,
    /// MADs sent (resends and clears included).
    pub mads: u64,
    /// Counter clears sent.
    pub clears: usize,
    /// From the first query to the last answer.
    pub duration: VTime,
}

/// The answer to a live query ([`PerfManager::query`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryAnswer {
    /// LID and port read.
    pub lid: Lid,
    /// Port number asked for.
    pub port: u8,
    /// ClassPortInfo.CapabilityMask of the node, when read.
    pub cap_mask: Option<u16>,
    /// PortCounters (None for an extended-only query).
    pub pc: Option<PortCounters>,
    /// PortCountersExtended (when asked for).
    pub ext: Option<PortCountersExtended>,
}

/// What the performance manager reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PerfEvent {
    /// A sweep started over `ports` ports.
    SweepStarted { number: u64, ports: usize },
    /// A sweep ended.
    SweepDone(PerfSweepStats),
    /// A counter crossed its threshold.
    Alarm(Alarm),
    /// A link's health changed.
    Health(LinkHealth),
    /// A live query ended.
    QueryDone {
        /// The id [`PerfManager::query`] returned.
        id: u64,
        /// The counters, or why not.
        result: Result<QueryAnswer, String>,
    },
}

/// What an outstanding query is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ask {
    /// ClassPortInfo of the node at this LID.
    Cpi(Lid),
    /// PortCounters of record `i`.
    Pc(usize),
    /// PortCountersExtended of record `i`.
    Pce(usize),
    /// A clear of record `i`'s counters.
    Clear(usize),
    /// A live query (`id`), PortCounters or extended.
    Live { id: u64, ext: bool },
}

#[derive(Clone, Debug)]
struct Queued {
    ask: Ask,
    dlid: Lid,
    mad: PerfMad,
    /// Sends so far.
    tries: u8,
}

#[derive(Clone, Debug)]
struct InFlight {
    q: Queued,
    deadline: VTime,
}

/// The performance manager of a master (see the module documentation).
#[derive(Debug)]
pub struct PerfManager {
    cfg: PerfConfig,
    ports: Vec<PortRecord>,
    by_port: HashMap<(Guid, u8), usize>,
    /// ClassPortInfo.CapabilityMask by node LID (None: asked, no usable answer).
    caps: HashMap<Lid, Option<u16>>,
    /// Links as (lower end, higher end) with their last health.
    health: health::Links,
    /// Sweep queue and live queries (sent first).
    queue: VecDeque<Queued>,
    urgent: VecDeque<Queued>,
    inflight: HashMap<u32, InFlight>,
    deadlines: VecDeque<(VTime, u32)>,
    next_tid: u32,
    next_send: VTime,
    next_sweep: Option<VTime>,
    sweep: Option<PerfSweepStats>,
    sweep_started: VTime,
    /// Ports of the sweep still waiting for their CPI (by node LID).
    waiting_cpi: HashMap<Lid, Vec<usize>>,
    sweeps: u64,
    last_sweep: Option<(PerfSweepStats, VTime)>,
    /// Live queries under way: the answer as far as known.
    live: HashMap<u64, QueryAnswer>,
    next_live: u64,
    events: VecDeque<PerfEvent>,
}

impl PerfManager {
    /// A manager with nothing to read yet.
    pub fn new(cfg: PerfConfig) -> PerfManager {
        PerfManager {
            cfg,
            ports: Vec::new(),
            by_port: HashMap::new(),
            caps: HashMap::new(),
            health: health::Links::default(),
            queue: VecDeque::new(),
            urgent: VecDeque::new(),
            inflight: HashMap::new(),
            deadlines: VecDeque::new(),
            next_tid: 1,
            next_send: 0,
            next_sweep: None,
            sweep: None,
            sweep_started: 0,
            waiting_cpi: HashMap::new(),
            sweeps: 0,
            last_sweep: None,
            live: HashMap::new(),
            next_live: 1,
            events: VecDeque::new(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &PerfConfig {
        &self.cfg
    }

    /// The ports the last heavy sweep found (`subnet_up`: the subnet is up, so a sweep may
    /// start). A port seen before keeps its readings; a port no longer found is dropped,
    /// and its link reported down. The first call with the subnet up starts a sweep at once
    /// (the baseline), later ones keep the interval.
    pub fn set_fabric(&mut self, now: VTime, targets: Vec<PerfTarget>, subnet_up: bool) {
        let mut old: HashMap<(Guid, u8), PortRecord> = self
            .ports
            .drain(..)
            .map(|r| ((r.target.node_guid, r.target.port), r))
            .collect();
        self.by_port.clear();
        for t in targets {
            let key = (t.node_guid, t.port);
            let rec = match old.remove(&key) {
                Some(mut r) => {
                    if r.target.lid != t.lid {
                        r.last = None;
                    }
                    r.target = t;
                    r
                }
                None => PortRecord::new(t),
            };
            self.by_port.insert(key, self.ports.len());
            self.ports.push(rec);
        }
        // A sweep under way refers to records by index: it starts again on the new set.
        if self.sweep.is_some() {
            self.abort_sweep();
            self.next_sweep = Some(now);
        }
        let changed = self.health.update(&self.ports);
        self.events
            .extend(changed.into_iter().map(PerfEvent::Health));
        if self.cfg.enabled && subnet_up && self.next_sweep.is_none() {
            self.next_sweep = Some(now);
        }
    }

    /// Starts a sweep now (an operator asked), unless one is under way.
    pub fn request_sweep(&mut self, now: VTime) {
        if self.sweep.is_none() {
            self.next_sweep = Some(now);
        }
    }

    /// The ports known, in the order of the last heavy sweep.
    pub fn ports(&self) -> &[PortRecord] {
        &self.ports
    }

    /// The record of `(node GUID, port)`.
    pub fn port(&self, node: Guid, port: u8) -> Option<&PortRecord> {
        self.by_port.get(&(node, port)).map(|&i| &self.ports[i])
    }

    /// Every link with its health.
    pub fn links(&self) -> Vec<LinkHealth> {
        self.health.all()
    }

    /// The last finished sweep and when it ended.
    pub fn last_sweep(&self) -> Option<(PerfSweepStats, VTime)> {
        self.last_sweep
    }

    /// Ports whose last reading exceeds `th`, with the counters over it.
    pub fn errors(&self, th: &Thresholds) -> Vec<(&PortRecord, Vec<(mad::perf::Counter, u64)>)> {
        self.ports
            .iter()
            .map(|r| (r, r.over(th)))
            .filter(|(_, o)| !o.is_empty())
            .collect()
    }

    /// Reads the counters of `port` at `lid` now (PortCounters, or PortCountersExtended
    /// with `extended`), ahead of any sweep; ends in [`PerfEvent::QueryDone`] with the id
    /// returned. A LID outside the unicast range is refused.
    pub fn query(&mut self, lid: Lid, port: u8, extended: bool) -> Result<u64, SmError> {
        if lid.0 == 0 || lid.0 >= 0xC000 {
            return Err(SmError::PerfQuery(format!(
                "LID {} is not a unicast LID",
                lid.0
            )));
        }
        if self.live.len() >= self.cfg.max_outstanding {
            return Err(SmError::PerfQuery(format!(
                "{} queries already waiting",
                self.live.len()
            )));
        }
        let id = self.next_live;
        self.next_live += 1;
        self.live.insert(
            id,
            QueryAnswer {
                lid,
                port,
                cap_mask: self.caps.get(&lid).copied().flatten(),
                pc: None,
                ext: None,
            },
        );
        let mad = if extended {
            PerfMad::get(0, 0, &ext_select(port))
        } else {
            PerfMad::get(0, 0, &pc_select(port))
        };
        self.urgent.push_back(Queued {
            ask: Ask::Live { id, ext: extended },
            dlid: lid,
            mad,
            tries: 0,
        });
        Ok(id)
    }

    /// The next GMP to send at `now`, within the window and the rate limit.
    pub fn poll_transmit(&mut self, now: VTime) -> Option<PerfTransmit> {
        let (gap, burst) = self.rate();
        if self.inflight.len() >= self.cfg.max_outstanding || now + burst < self.next_send {
            return None;
        }
        let q = self.urgent.pop_front().or_else(|| self.queue.pop_front())?;
        self.next_send = self.next_send.max(now) + gap;
        Some(self.send(now, q))
    }

    /// The rate limit as a token bucket: the time one send costs, and how far ahead of
    /// `now` sends may be booked (10 ms worth, at least one send).
    fn rate(&self) -> (VTime, VTime) {
        let rate = VTime::from(self.cfg.rate_per_sec.max(1));
        let gap = (SEC / rate).max(1);
        (gap, gap * (rate / 100).max(1) - gap)
    }

    fn send(&mut self, now: VTime, mut q: Queued) -> PerfTransmit {
        let tid = self.next_tid;
        self.next_tid = self.next_tid.wrapping_add(1).max(1);
        q.mad.header.tid = (u64::from(self.cfg.tid_high) << 32) | u64::from(tid);
        let t = PerfTransmit {
            dlid: q.dlid,
            mad: q.mad.encode(),
        };
        if let Some(s) = &mut self.sweep
            && !matches!(q.ask, Ask::Live { .. })
        {
            s.mads += 1;
        }
        let deadline = now + self.cfg.timeout;
        self.deadlines.push_back((deadline, tid));
        q.tries += 1;
        self.inflight.insert(tid, InFlight { q, deadline });
        t
    }

    /// When [`Self::handle_timeout`] is due next.
    pub fn poll_timeout(&self) -> Option<VTime> {
        let send = (!self.queue.is_empty() || !self.urgent.is_empty())
            && self.inflight.len() < self.cfg.max_outstanding;
        [
            self.next_sweep.filter(|_| self.cfg.enabled),
            send.then(|| self.next_send.saturating_sub(self.rate().1)),
            self.deadlines.front().map(|d| d.0),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Time passes: sweeps start, unanswered queries are resent or given up.
    pub fn handle_timeout(&mut self, now: VTime) {
        if self.cfg.enabled && self.sweep.is_none() && self.next_sweep.is_some_and(|t| t <= now) {
            self.start_sweep(now);
        }
        while let Some(&(at, tid)) = self.deadlines.front() {
            if at > now {
                break;
            }
            self.deadlines.pop_front();
            let Some(f) = self.inflight.get(&tid) else {
                continue;
            };
            if f.deadline != at {
                continue;
            }
            let Some(f) = self.inflight.remove(&tid) else {
                continue;
            };
            if f.q.tries <= self.cfg.retries {
                // Resent ahead of everything else.
                self.urgent.push_front(f.q);
            } else {
                self.failed(f.q.ask, "no answer".to_string());
            }
        }
        self.maybe_done(now);
    }

    /// Drops deadlines of queries answered since (kept in send order, removed lazily).
    fn trim_deadlines(&mut self) {
        while let Some(&(at, tid)) = self.deadlines.front() {
            if self.inflight.get(&tid).is_some_and(|f| f.deadline == at) {
                break;
            }
            self.deadlines.pop_front();
        }
    }
}

/// A PortCounters query of `port`.
fn pc_select(port: u8) -> PortCounters {
    PortCounters {
        port_select: port,
        ..PortCounters::default()
    }
}

/// A PortCountersExtended query of `port`.
fn ext_select(port: u8) -> PortCountersExtended {
    PortCountersExtended {
        port_select: port,
        ..PortCountersExtended::default()
    }
}

#[cfg(test)]
mod tests;
