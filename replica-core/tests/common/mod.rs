//! A cluster of replica cores on virtual time for the tests: a network that delivers every
//! message (unless a node is paused: its messages wait, as in its socket), ticks, and a
//! driver that answers master and standby starts at once.

#![allow(dead_code)]

use fabric::Guid;
use replica_core::{CoreConfig, Output, ReplicaCore, VTime};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use storage::VolatileLog;

pub const MS: VTime = 1_000_000;

/// What a driver saw (everything but messages).
#[derive(Debug)]
pub enum Seen {
    StartMaster {
        gen_: u64,
        term: u64,
    },
    StartStandby {
        gen_: u64,
    },
    StopRole {
        gen_: u64,
    },
    IntentResult {
        gen_: u64,
        id: u64,
        committed: bool,
    },
    RecordTables {
        gen_: u64,
    },
    Answer {
        request: u64,
        accepted: bool,
    },
    Dropped {
        request: u64,
    },
    ReadDone {
        ticket: u64,
        result: Result<u64, replica_core::ProposeError>,
    },
    Stopped,
    Fatal(String),
}

pub struct Node {
    pub core: ReplicaCore<VolatileLog>,
    pub log: VolatileLog,
    pub seen: Vec<Seen>,
    pub notices: Vec<String>,
    /// Answer role starts and stops at once.
    pub auto: bool,
    /// The seed of the last master start.
    pub last_seed: Option<Box<replica_core::MasterSeed>>,
}

pub struct Cluster {
    pub now: VTime,
    pub nodes: BTreeMap<u64, Node>,
    pub queue: VecDeque<raft::eraftpb::Message>,
    pub paused: BTreeSet<u64>,
    pub held: Vec<raft::eraftpb::Message>,
    pub down: BTreeSet<u64>,
}

pub fn config(id: u64, n: u64) -> CoreConfig {
    let peers = (1..=n)
        .map(|i| (i, format!("127.0.0.1:{}", 7100 + i)))
        .collect();
    let mut c = CoreConfig::new(id, peers);
    c.seed = 42 + id;
    c.port_guid = Guid(0x100 + id);
    c.bootstrap = true;
    c
}

impl Cluster {
    pub fn new(n: u64) -> Cluster {
        Cluster::with(n, |_| {})
    }

    pub fn with(n: u64, tweak: impl Fn(&mut CoreConfig)) -> Cluster {
        let mut nodes = BTreeMap::new();
        for id in 1..=n {
            let mut cfg = config(id, n);
            tweak(&mut cfg);
            let log = VolatileLog::new();
            let core = ReplicaCore::new(cfg, log.clone()).expect("core");
            nodes.insert(
                id,
                Node {
                    core,
                    log,
                    seen: Vec::new(),
                    notices: Vec::new(),
                    auto: true,
                    last_seed: None,
                },
            );
        }
        let mut c = Cluster {
            now: 0,
            nodes,
            queue: VecDeque::new(),
            paused: BTreeSet::new(),
            held: Vec::new(),
            down: BTreeSet::new(),
        };
        for id in 1..=n {
            c.drain(id);
        }
        c
    }

    pub fn node(&mut self, id: u64) -> &mut Node {
        self.nodes.get_mut(&id).expect("node")
    }

    pub fn core(&mut self, id: u64) -> &mut ReplicaCore<VolatileLog> {
        &mut self.node(id).core
    }

    /// Handles node `id`'s outputs (after every input: nothing is left unflushed).
    pub fn drain(&mut self, id: u64) {
        let now = self.now;
        let n = self.nodes.get_mut(&id).expect("node");
        assert_eq!(
            n.log.unflushed(),
            0,
            "replica {id} returned with unflushed writes"
        );
        while let Some(o) = n.core.poll_output() {
            match o {
                Output::Send(m) => self.queue.push_back(m),
                Output::StartMaster { gen_, seed } => {
                    n.seen.push(Seen::StartMaster {
                        gen_,
                        term: seed.term,
                    });
                    n.last_seed = Some(seed);
                    if n.auto {
                        n.core.master_started(now, gen_, Guid(0x100 + id));
                    }
                }
                Output::StartStandby { gen_ } => n.seen.push(Seen::StartStandby { gen_ }),
                Output::StopRole { gen_ } => {
                    n.seen.push(Seen::StopRole { gen_ });
                    if n.auto {
                        n.core.role_stopped(now, gen_);
                    }
                }
                Output::IntentResult {
                    gen_,
                    id,
                    committed,
                } => n.seen.push(Seen::IntentResult {
                    gen_,
                    id,
                    committed,
                }),
                Output::RecordTables { gen_ } => n.seen.push(Seen::RecordTables { gen_ }),
                Output::Answer { request, result } => n.seen.push(Seen::Answer {
                    request,
                    accepted: result.accepted,
                }),
                Output::Dropped { request } => n.seen.push(Seen::Dropped { request }),
                Output::ReadDone { ticket, result } => {
                    n.seen.push(Seen::ReadDone { ticket, result })
                }
                Output::Applied { .. } => {}
                Output::Stopped => n.seen.push(Seen::Stopped),
                Output::Fatal(e) => n.seen.push(Seen::Fatal(e.to_string())),
                Output::Notice(x) => n.notices.push(x.to_string()),
            }
        }
    }

    pub fn drain_all(&mut self) {
        let ids: Vec<u64> = self.nodes.keys().copied().collect();
        for id in ids {
            self.drain(id);
        }
    }

    /// Delivers until no message is in flight.
    pub fn settle(&mut self) {
        for _ in 0..100_000 {
            self.drain_all();
            let Some(m) = self.queue.pop_front() else {
                return;
            };
            let to = m.to;
            if self.down.contains(&to) || !self.nodes.contains_key(&to) {
                continue;
            }
            if self.paused.contains(&to) {
                self.held.push(m);
                continue;
            }
            let now = self.now;
            if std::env::var("TRACE_NET").is_ok() {
                eprintln!(
                    "t={} {:?} {}->{} term {} reject {} ",
                    now / MS,
                    m.get_msg_type(),
                    m.from,
                    m.to,
                    m.term,
                    m.reject
                );
            }
            self.core(to).step(now, m);
        }
        panic!("the cluster did not settle");
    }

    /// One tick of every running node, then delivery.
    pub fn tick(&mut self) {
        self.now += 50 * MS;
        let ids: Vec<u64> = self.nodes.keys().copied().collect();
        for id in ids {
            if !self.paused.contains(&id) && !self.down.contains(&id) {
                let now = self.now;
                self.core(id).tick(now);
            }
        }
        self.settle();
    }

    pub fn ticks(&mut self, n: usize) {
        for _ in 0..n {
            self.tick();
        }
    }

    pub fn leader(&self) -> Option<u64> {
        self.nodes
            .iter()
            .find(|(id, n)| {
                n.core.is_leader() && !self.down.contains(id) && !self.paused.contains(id)
            })
            .map(|(id, _)| *id)
    }

    /// Ticks until a leader has a master with a lease.
    pub fn elect(&mut self) -> u64 {
        for _ in 0..400 {
            self.tick();
            if let Some(l) = self.leader()
                && self.nodes[&l].core.master_gen().is_some()
            {
                return l;
            }
        }
        panic!("no master elected");
    }
}
