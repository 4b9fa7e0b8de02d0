//! [`ReplicaCore`]: the struct, its construction and its inputs. The Ready loop and apply
//! are in `ready.rs`, the role lifecycle in `role.rs`, proposals and reads in
//! `requests.rs`.

use crate::config::CoreConfig;
use crate::error::{CoreError, ProposeError};
use crate::lease::AckBook;
use crate::output::{Notice, Output};
use crate::requests::Requests;
use crate::role::{Role, Stop};
use crate::seed::{self, SweepTables};
use crate::{MasterSeed, VTime};
use fabric::Guid;
use fabric::rng::SplitMix64;
use proto::state::{Command, command::Kind};
use raft::eraftpb::{ConfChange, ConfChangeType, Message};
use raft::{RawNode, StateRole};
use replica::ReplicatedState;
use sm_core::IntentEvent;
use std::collections::VecDeque;
use storage::RaftLog;

/// Ready rounds handled in one go before the core yields (raft-rs rarely needs more than
/// two; the bound keeps a bug from spinning).
const MAX_READY_ROUNDS: usize = 64;

/// The write lease while leading.
#[derive(Debug, Default)]
pub(crate) struct LeaseState {
    /// Acknowledgements of this leadership, dated by the send of the heartbeat answered.
    pub(crate) acks: AckBook<VTime>,
    /// End of the lease (None: none).
    pub(crate) until: Option<VTime>,
}

/// Where the saved applied state and the snapshot stand.
#[derive(Debug, Default)]
pub(crate) struct Persisted {
    pub(crate) last_saved: u64,
    pub(crate) last_snapshot: u64,
}

/// raft-rs draws its randomised election timeout from an unseeded generator; the core
/// replaces every fresh draw with one from its own seeded generator, so that a seed
/// replays exactly.
#[derive(Debug)]
pub(crate) struct Election {
    rng: SplitMix64,
    seen: Option<(u64, StateRole, u64, usize)>,
}

/// One replica.
pub struct ReplicaCore<S: RaftLog + Clone> {
    pub(crate) cfg: CoreConfig,
    pub(crate) raw: RawNode<S>,
    pub(crate) store: S,
    pub(crate) state: ReplicatedState,
    pub(crate) lease: LeaseState,
    /// Term of the leadership being held, and the index its first entry has.
    pub(crate) leading: Option<(u64, u64)>,
    pub(crate) role: Role,
    /// Generation counter of masters and standbys started.
    pub(crate) gen_: u64,
    pub(crate) stop: Stop,
    pub(crate) requests: Requests,
    pub(crate) persisted: Persisted,
    election: Election,
    /// The tables of a heavy sweep are being read (one at a time).
    pub(crate) recording: bool,
    /// The log failed: nothing more is done.
    pub(crate) failed: bool,
    /// Recovering a lost log: no vote, no campaign (see [`CoreConfig::bootstrap`]).
    pub(crate) recovering: bool,
    /// A recovering replica's term probe, until enough replicas answered.
    pub(crate) probe: Option<crate::recover::TermProbe>,
    pub(crate) out: VecDeque<Output>,
    /// Answers held until the log is flushed.
    pub(crate) deferred: Vec<Output>,
    /// Followers the leader sent a snapshot to, since when (see
    /// [`CoreConfig::snapshot_timeout`]).
    snapshots_sent: std::collections::BTreeMap<u64, VTime>,
}

fn logger() -> slog::Logger {
    slog::Logger::root(slog::Discard, slog::o!())
}

pub(crate) fn storage(what: &'static str) -> impl FnOnce(storage::Error) -> CoreError {
    move |source| CoreError::Storage { what, source }
}

impl<S: RaftLog + Clone> ReplicaCore<S> {
    /// A replica over `store`: initialized with the configured voters when it is new,
    /// resumed from its saved applied state otherwise (raft-rs replays the committed
    /// entries after it).
    pub fn new(cfg: CoreConfig, store: S) -> Result<ReplicaCore<S>, CoreError> {
        cfg.validate()?;
        let st = raft::Storage::initial_state(&store)?;
        if !st.initialized() {
            let cs = raft::eraftpb::ConfState {
                voters: if cfg.voters.is_empty() {
                    cfg.peers.keys().copied().collect()
                } else {
                    cfg.voters.clone()
                },
                ..Default::default()
            };
            store.initialize(cs).map_err(storage("initialize"))?;
            if !cfg.bootstrap {
                store
                    .set_recovering(true)
                    .map_err(storage("recovering flag"))?;
            }
            store.flush().map_err(storage("flush"))?;
        }
        let recovering = store.recovering().map_err(storage("recovering flag"))?;
        let (applied, state) = match store.recovery_state().map_err(storage("recovery"))? {
            Some(a) => (
                a.index,
                ReplicatedState::restore(&a.data).map_err(|e| CoreError::State {
                    index: a.index,
                    reason: e.to_string(),
                })?,
            ),
            None => (0, ReplicatedState::new()),
        };
        let rc = raft::Config {
            id: cfg.id,
            election_tick: cfg.election_ticks,
            heartbeat_tick: cfg.heartbeat_ticks,
            min_election_tick: cfg.election_ticks,
            max_election_tick: cfg.election_ticks * 2,
            check_quorum: true,
            pre_vote: true,
            applied,
            max_size_per_msg: 1024 * 1024,
            max_inflight_msgs: 256,
            ..raft::Config::default()
        };
        let raw = RawNode::new(&rc, store.clone(), &logger())?;
        let snap = store
            .load_snapshot()
            .map_err(storage("load snapshot"))?
            .map_or(0, |s| s.get_metadata().index);
        let mut out = VecDeque::new();
        if recovering {
            out.push_back(Output::Notice(Notice::RecoveringLog));
        }
        out.push_back(Output::Notice(Notice::Recovered {
            applied,
            policy_version: state.policy().version,
            lids: state.guid2lid().len(),
            lfts: state.lfts().count(),
        }));
        // The seed and the id mixed apart, so that replicas given neighbouring seeds draw
        // different timeouts.
        let mixed =
            SplitMix64::new(cfg.seed).next_u64() ^ cfg.id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mut rng = SplitMix64::new(mixed);
        let next_request = (cfg.id << 56) | (rng.next_u64() & ((1 << 56) - 1));
        let mut core = ReplicaCore {
            raw,
            store,
            state,
            lease: LeaseState::default(),
            leading: None,
            role: Role::Idle { retry_at: None },
            gen_: 0,
            stop: Stop::Running,
            requests: Requests::new(next_request),
            persisted: Persisted {
                last_saved: applied,
                last_snapshot: snap,
            },
            election: Election { rng, seen: None },
            recording: false,
            failed: false,
            recovering,
            probe: recovering.then(crate::recover::TermProbe::default),
            out,
            deferred: Vec::new(),
            snapshots_sent: std::collections::BTreeMap::new(),
            cfg,
        };
        core.fix_election_timeout();
        Ok(core)
    }

    // ---- inputs ---------------------------------------------------------------------

    /// One Raft tick (every [`CoreConfig::tick`]); also expires old proposals and ends a
    /// graceful stop whose transfer did not complete.
    pub fn tick(&mut self, now: VTime) {
        if self.failed {
            return;
        }
        if !self.recovering {
            // A recovering replica's clocks stand still: it never campaigns.
            self.raw.tick();
        }
        self.send_term_probes();
        self.expire_requests(now);
        self.expire_snapshots(now);
        if let Stop::HandingOver { since } = self.stop
            && now.saturating_sub(since) > self.cfg.stop_timeout
        {
            self.notice(Notice::StopTransferTimedOut);
            self.finish_stop();
        }
        self.process(now);
    }

    /// A Raft message from a peer.
    pub fn step(&mut self, now: VTime, msg: Message) {
        self.step_batch(now, std::iter::once(msg));
    }

    /// Raft messages from peers that arrived together: all stepped, then one round of Ready
    /// handling (one flush for the batch).
    pub fn step_batch(&mut self, now: VTime, msgs: impl IntoIterator<Item = Message>) {
        if self.failed {
            return;
        }
        for mut msg in msgs {
            if let crate::recover::Probe::Taken = self.term_probe(&msg) {
                continue;
            }
            if self.recovering && crate::recover::is_vote(&msg) {
                continue; // no vote while the log is not back
            }
            let term = self.is_leader().then_some(self.raw.raft.term);
            self.lease.acks.receive(&mut msg, term, now);
            match self.lost_log(&mut msg) {
                crate::recover::LostLog::No => {}
                crate::recover::LostLog::Here { commit, last } => {
                    self.notice(Notice::LogShorterThanCommit { commit, last })
                }
                crate::recover::LostLog::There {
                    peer,
                    matched,
                    last,
                } => self.notice(Notice::PeerLostLog {
                    peer,
                    matched,
                    last,
                }),
            }
            // A stale or misdirected message is raft's business.
            let _ = self.raw.step(msg);
        }
        self.process(now);
    }

    /// Transfers leadership (hence the master role) to replica `to`.
    pub fn transfer_leader(&mut self, now: VTime, to: u64) -> Result<(), ProposeError> {
        self.check_leader()?;
        if to == self.cfg.id {
            return Ok(());
        }
        if !self.cfg.peers.contains_key(&to) {
            return Err(ProposeError::Failed(format!("no replica {to}")));
        }
        self.notice(Notice::Transferring { to });
        self.raw.transfer_leader(to);
        self.process(now);
        Ok(())
    }

    /// Adds (`add`) or removes a voter through a conf change.
    pub fn change_membership(
        &mut self,
        now: VTime,
        id: u64,
        add: bool,
    ) -> Result<(), ProposeError> {
        self.check_leader()?;
        if add && !self.cfg.peers.contains_key(&id) {
            return Err(ProposeError::Failed(format!(
                "replica {id} is not a configured peer (no address): as a voter it could never answer and would count against every quorum"
            )));
        }
        if self.raw.raft.has_pending_conf() {
            // raft-rs would accept the proposal, then replace it with an empty entry.
            return Err(ProposeError::Failed(format!(
                "a membership change (index {}) is not applied yet: retry once it is",
                self.raw.raft.pending_conf_index
            )));
        }
        let mut cc = ConfChange {
            node_id: id,
            ..Default::default()
        };
        cc.set_change_type(if add {
            ConfChangeType::AddNode
        } else {
            ConfChangeType::RemoveNode
        });
        self.raw
            .propose_conf_change(vec![], cc)
            .map_err(|e| ProposeError::Failed(e.to_string()))?;
        self.process(now);
        Ok(())
    }

    /// SM priority as a preference: given the other replicas' priorities and port GUIDs,
    /// a leader hands leadership to a caught-up replica of strictly higher priority (the
    /// highest; ties to the lower port GUID). Equal priorities never move it. Returns the
    /// replica it hands over to.
    pub fn consider_priorities(&mut self, now: VTime, peers: &[(u64, u8, Guid)]) -> Option<u64> {
        if self.failed || !self.is_leader() || self.stop != Stop::Running {
            return None;
        }
        let own = self.cfg.priority;
        let commit = self.raw.raft.raft_log.committed;
        let best = peers
            .iter()
            .filter(|(id, p, _)| *id != self.cfg.id && *p > own)
            .filter(|(id, _, _)| {
                self.raw
                    .raft
                    .prs()
                    .get(*id)
                    .is_some_and(|pr| pr.matched != 0 && pr.matched >= commit)
            })
            .min_by_key(|(_, p, g)| (std::cmp::Reverse(*p), *g))
            .copied()?;
        self.notice(Notice::PriorityHandover {
            to: best.0,
            priority: best.1,
            own,
        });
        self.raw.transfer_leader(best.0);
        self.process(now);
        Some(best.0)
    }

    /// Graceful stop: a leader hands leadership to a caught-up peer first (bounded by
    /// [`CoreConfig::stop_timeout`]), then the master and standby stop; [`Output::Stopped`]
    /// says when the process may exit.
    pub fn graceful_stop(&mut self, now: VTime) {
        match self.stop {
            Stop::Shut => return self.out.push_back(Output::Stopped),
            Stop::HandingOver { .. } => return,
            Stop::Running => {}
        }
        if self.failed {
            return self.out.push_back(Output::Stopped);
        }
        if self.is_leader()
            && let Some(to) = self.best_successor()
        {
            self.notice(Notice::StopHandingOver { to });
            self.stop = Stop::HandingOver { since: now };
            self.stop_role_keep_lease();
            self.raw.transfer_leader(to);
            self.process(now);
        } else {
            self.finish_stop();
        }
    }

    /// The process ends: the applied state is saved and the log flushed.
    pub fn shutdown(&mut self) -> Result<(), CoreError> {
        if self.failed {
            return Ok(());
        }
        let idx = self.state.applied_index();
        self.store
            .save_applied(idx, &self.state.snapshot_bytes())
            .map_err(storage("save applied state"))?;
        self.store.flush().map_err(storage("flush"))
    }

    /// The master of generation `gen_` is attached at port `port`: its record goes to the log.
    pub fn master_started(&mut self, now: VTime, gen_: u64, port: Guid) {
        if let Role::Master {
            gen_: g,
            term,
            m_key,
        } = self.role
            && g == gen_
        {
            self.propose_quiet(Command {
                request_id: 0,
                kind: Some(Kind::SetMaster(proto::state::MasterRecord {
                    term,
                    replica_id: self.cfg.id,
                    sm_port_guid: port.0,
                    sm_lid: 0,
                    m_key,
                })),
            });
        }
        self.process(now);
    }

    /// The master or standby of generation `gen_` could not attach: tried again later.
    pub fn attach_failed(&mut self, now: VTime, gen_: u64) {
        let wait = match self.role {
            Role::Master { gen_: g, .. } if g == gen_ => self.cfg.master_retry,
            Role::Standby { gen_: g } if g == gen_ => self.cfg.standby_retry,
            _ => return,
        };
        self.role = Role::Idle {
            retry_at: Some(now + wait),
        };
        self.process(now);
    }

    /// The master or standby of generation `gen_` stopped (asked to or by itself) and its
    /// port is free.
    pub fn role_stopped(&mut self, now: VTime, gen_: u64) {
        match self.role {
            Role::Master { gen_: g, .. } if g == gen_ => {
                self.notice(Notice::RoleStoppedByItself { master: true });
                self.role = Role::Idle { retry_at: None };
            }
            Role::Standby { gen_: g } if g == gen_ => {
                self.notice(Notice::RoleStoppedByItself { master: false });
                self.role = Role::Idle { retry_at: None };
            }
            Role::Detaching { gen_: g } if g == gen_ => self.role = Role::Idle { retry_at: None },
            _ => return,
        }
        self.process(now);
    }

    /// Master `gen_` finished a heavy sweep: its tables are asked for
    /// ([`Output::RecordTables`]) unless a reading is under way.
    pub fn heavy_sweep_done(&mut self, _now: VTime, gen_: u64) {
        if self.master_gen() == Some(gen_) && !self.recording && self.is_leader() {
            self.recording = true;
            self.out.push_back(Output::RecordTables { gen_ });
        }
    }

    /// The tables of master `gen_` could not be read (it stopped meanwhile): nothing is
    /// recorded, and the next heavy sweep asks again.
    pub fn tables_unavailable(&mut self, _gen: u64) {
        self.recording = false;
    }

    /// The tables of master `gen_` after a heavy sweep: topology and LIDs go to the log when
    /// they changed (what it programmed went there as intents before the Sets).
    pub fn sweep_tables(&mut self, now: VTime, gen_: u64, t: &SweepTables) {
        self.recording = false;
        if self.failed || !self.is_leader() || self.master_gen() != Some(gen_) {
            return;
        }
        let cmds: Vec<Command> = [
            seed::topology_command(&self.state, t),
            seed::lid_command(&self.state, t),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !cmds.is_empty() {
            self.notice(Notice::RecordingSweep {
                commands: cmds.len(),
            });
        }
        for c in cmds {
            self.propose_quiet(c);
        }
        self.process(now);
    }

    /// An intent event of master `gen_`: a planned programming goes to the log (chunks, then
    /// the seal, whose commit is answered with [`Output::IntentResult`]); a finished one is
    /// recorded done.
    pub fn intent(&mut self, now: VTime, gen_: u64, ev: IntentEvent) {
        let Role::Master { gen_: g, term, .. } = self.role else {
            return;
        };
        if g != gen_ || self.failed {
            return;
        }
        match ev {
            IntentEvent::Program(it) => self.propose_intent(now, gen_, term, &it),
            IntentEvent::Done {
                id,
                failed_switches,
                failed_ports,
                ..
            } => self.propose_quiet(Command {
                request_id: 0,
                kind: Some(Kind::IntentDone(proto::state::IntentDone {
                    id,
                    failed_switches: failed_switches.iter().map(|g| g.0).collect(),
                    failed_ports: failed_ports
                        .iter()
                        .map(|(g, p)| proto::state::PortRef {
                            node_guid: g.0,
                            port: u32::from(*p),
                        })
                        .collect(),
                })),
            }),
        }
        self.process(now);
    }

    // ---- outputs and views ----------------------------------------------------------

    /// The next thing for the driver to do.
    pub fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    /// The applied state.
    pub fn state(&self) -> &ReplicatedState {
        &self.state
    }

    /// This replica's settings.
    pub fn config(&self) -> &CoreConfig {
        &self.cfg
    }

    /// True while this replica is Raft leader.
    pub fn is_leader(&self) -> bool {
        self.raw.raft.state == StateRole::Leader
    }

    /// Current term.
    pub fn term(&self) -> u64 {
        self.raw.raft.term
    }

    /// The leader this replica knows of (0: none).
    pub fn leader_id(&self) -> u64 {
        self.raw.raft.leader_id
    }

    /// Last index in the log.
    pub fn last_index(&self) -> u64 {
        self.raw.raft.raft_log.last_index()
    }

    /// End of the write lease (None: no lease).
    pub fn lease_until(&self) -> Option<VTime> {
        self.lease.until
    }

    /// True while the lease holds at `now`.
    pub fn lease_valid(&self, now: VTime) -> bool {
        self.lease.until.is_some_and(|u| now < u)
    }

    /// The master or standby role.
    pub fn role(&self) -> Role {
        self.role
    }

    /// Generation of the running master, if any.
    pub fn master_gen(&self) -> Option<u64> {
        match self.role {
            Role::Master { gen_, .. } => Some(gen_),
            _ => None,
        }
    }

    /// True while recovering a lost log (no vote, no campaign).
    pub fn is_recovering(&self) -> bool {
        self.recovering
    }

    /// True once the log failed ([`Output::Fatal`] was given).
    pub fn has_failed(&self) -> bool {
        self.failed
    }

    /// A new master's seed from the state as it is now (for tools and tests).
    pub fn master_seed(&self) -> MasterSeed {
        MasterSeed::new(&self.state, self.term())
    }

    // ---- internals shared by the other files ----------------------------------------

    pub(crate) fn notice(&mut self, n: Notice) {
        self.out.push_back(Output::Notice(n));
    }

    pub(crate) fn check_leader(&self) -> Result<(), ProposeError> {
        if self.failed || self.stop != Stop::Running {
            return Err(ProposeError::Stopping);
        }
        if !self.is_leader() {
            return Err(self.not_leader());
        }
        Ok(())
    }

    pub(crate) fn not_leader(&self) -> ProposeError {
        let leader_id = self.raw.raft.leader_id;
        ProposeError::NotLeader {
            leader_id,
            leader_address: self.cfg.peers.get(&leader_id).cloned().unwrap_or_default(),
        }
    }

    pub(crate) fn fatal(&mut self, e: CoreError) {
        self.failed = true;
        self.lease.until = None;
        self.deferred.clear();
        self.out.push_back(Output::Fatal(e));
    }

    /// A snapshot the follower never answered (lost on the way) is reported failed, so that
    /// raft-rs sends it again instead of waiting for that follower forever.
    fn expire_snapshots(&mut self, now: VTime) {
        use raft::ProgressState;
        if !self.is_leader() {
            self.snapshots_sent.clear();
            return;
        }
        let waiting: Vec<u64> = self
            .raw
            .raft
            .prs()
            .iter()
            .filter(|(_, p)| p.state == ProgressState::Snapshot)
            .map(|(id, _)| *id)
            .collect();
        self.snapshots_sent.retain(|id, _| waiting.contains(id));
        for id in waiting {
            let since = *self.snapshots_sent.entry(id).or_insert(now);
            if now.saturating_sub(since) >= self.cfg.snapshot_timeout {
                self.snapshots_sent.remove(&id);
                self.notice(Notice::SnapshotUnanswered { peer: id });
                self.raw.report_snapshot(id, raft::SnapshotStatus::Failure);
            }
        }
    }

    /// Replaces a timeout raft-rs just drew with a seeded one.
    pub(crate) fn fix_election_timeout(&mut self) {
        let r = &self.raw.raft;
        let key = (
            r.term,
            r.state,
            r.leader_id,
            r.randomized_election_timeout(),
        );
        if self.election.seen == Some(key) {
            return;
        }
        let lo = self.cfg.election_ticks;
        let t = lo + self.election.rng.below(lo as u64) as usize;
        self.raw.raft.set_randomized_election_timeout(t);
        self.election.seen = Some((key.0, key.1, key.2, t));
    }

    /// After any input: Ready rounds, leadership bookkeeping, Ready again (what the
    /// bookkeeping proposed), reads.
    pub(crate) fn process(&mut self, now: VTime) {
        if self.failed {
            return;
        }
        self.fix_election_timeout();
        self.retry_backlog();
        if let Err(e) = self.pump(now) {
            return self.fatal(e);
        }
        self.after_apply(now);
        if let Err(e) = self.pump(now) {
            return self.fatal(e);
        }
        self.answer_reads();
        if let Err(e) = self.check_recovered() {
            return self.fatal(e);
        }
        self.fix_election_timeout();
    }

    fn pump(&mut self, now: VTime) -> Result<(), CoreError> {
        if self.store.take_snapshot_request().is_some() {
            self.make_snapshot()?;
        }
        for _ in 0..MAX_READY_ROUNDS {
            if !self.raw.has_ready() {
                break;
            }
            self.one_ready(now)?;
        }
        Ok(())
    }
}
