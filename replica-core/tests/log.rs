//! The log side of the core: the lease dated by heartbeat sends, snapshots and compaction,
//! restart from the saved applied state, flush before acknowledgement, a failing log.

mod common;

use common::{Cluster, MS, Seen};
use proto::state::{ApplyPolicy, Command, command::Kind};
use raft::eraftpb::MessageType;
use replica_core::{Output, ReplicaCore};
use storage::{RaftLog, VolatileLog};

fn policy_v(v: u64) -> Command {
    Command {
        request_id: 0,
        kind: Some(Kind::ApplyPolicy(ApplyPolicy {
            text: format!(
                "Default=0x7fff : ALL=full ;\nP{v}=0x{:04x} : ALL=limited ;\n",
                v + 1
            ),
            expected_version: v,
        })),
    }
}

#[test]
fn a_leader_with_a_live_quorum_holds_its_lease() {
    let mut c = Cluster::new(3);
    let l = c.elect();
    for _ in 0..40 {
        c.tick();
        let now = c.now;
        assert!(
            c.core(l).lease_valid(now),
            "lease lapsed at {} ms",
            now / MS
        );
    }
}

/// Chaos finding F3 (seed 1081): the leader sends heartbeats and is stopped; the followers
/// answer (the answers wait in its socket) and elect another leader. Resumed, the old
/// leader reads the waiting answers first, still believing it leads: they must not give it
/// a lease.
#[test]
fn stale_acknowledgements_after_a_pause_give_no_lease() {
    let mut c = Cluster::new(3);
    let l = c.elect();
    c.tick();
    let old_term = c.core(l).term();
    // A heartbeat round leaves the leader, then it stops.
    c.now += 50 * MS;
    let now = c.now;
    c.core(l).tick(now);
    c.core(l).tick(now);
    c.drain(l);
    assert!(
        c.queue
            .iter()
            .any(|m| m.get_msg_type() == MessageType::MsgHeartbeat),
        "a heartbeat round went out"
    );
    c.paused.insert(l);
    c.settle();
    let mut ticks = 0;
    while c.leader().is_none() {
        c.tick();
        ticks += 1;
        assert!(ticks < 400, "no new leader");
    }
    assert!(
        c.held
            .iter()
            .any(|m| m.get_msg_type() == MessageType::MsgHeartbeatResponse && m.term == old_term),
        "answers to the old leader's heartbeats wait in its socket"
    );
    // It resumes and reads the answers of its own term first.
    c.paused.remove(&l);
    let held = std::mem::take(&mut c.held);
    let (stale, rest): (Vec<_>, Vec<_>) = held.into_iter().partition(|m| m.term == old_term);
    let now = c.now;
    for m in stale {
        c.core(l).step(now, m);
    }
    assert!(c.core(l).is_leader(), "it still believes it leads");
    assert!(
        !c.core(l).lease_valid(now),
        "stale acknowledgements renewed the lease to {:?} at {} ms",
        c.core(l).lease_until().map(|e| e / MS),
        now / MS
    );
    for m in rest {
        c.core(l).step(now, m);
    }
    c.settle();
    assert!(!c.core(l).is_leader());
}

#[test]
fn a_lagging_replica_catches_up_from_a_snapshot_and_compacted_logs() {
    let mut c = Cluster::with(3, |cfg| {
        cfg.snapshot_every = 5;
        cfg.save_applied_every = 3;
    });
    let l = c.elect();
    let f = if l == 3 { 2 } else { 3 };
    c.down.insert(f);
    for v in 0..12 {
        let now = c.now;
        c.core(l).propose(now, policy_v(v)).expect("proposed");
        c.settle();
        c.tick();
    }
    assert!(
        c.node(l)
            .notices
            .iter()
            .any(|n| n.contains("log compacted"))
    );
    let first = raft::Storage::first_index(&c.node(l).log).unwrap();
    assert!(first > 5, "log compacted to {first}");
    c.down.remove(&f);
    c.ticks(10);
    assert!(
        c.node(f)
            .notices
            .iter()
            .any(|n| n.contains("snapshot from the leader")),
        "{:?}",
        c.node(f).notices
    );
    let want = c.core(l).state().clone();
    assert_eq!(c.core(f).state().policy(), want.policy());
    assert_eq!(c.core(f).state().applied_index(), want.applied_index());
}

#[test]
fn a_restart_resumes_from_the_saved_state_and_loses_nothing_acknowledged() {
    let mut c = Cluster::with(3, |cfg| cfg.save_applied_every = 4);
    let l = c.elect();
    let mut acked = Vec::new();
    for v in 0..9 {
        let now = c.now;
        let r = c.core(l).propose(now, policy_v(v)).unwrap();
        c.settle();
        c.tick();
        assert!(
            c.node(l)
                .seen
                .iter()
                .any(|s| matches!(s, Seen::Answer { request, accepted: true } if *request == r))
        );
        acked.push(v + 1);
    }
    // Every replica crashes (unflushed writes lost) and restarts from its disk.
    for id in 1..=3 {
        let log = c.node(id).log.clone();
        log.crash().unwrap();
        let cfg = c.core(id).config().clone();
        let core = ReplicaCore::new(cfg, log).expect("restart");
        c.node(id).core = core;
        c.node(id).notices.clear();
        c.drain(id);
    }
    for id in 1..=3 {
        let n = c.node(id);
        let rec = n
            .notices
            .iter()
            .find(|x| x.starts_with("recovered"))
            .expect("recovered");
        assert!(
            !rec.contains("applied index 0,"),
            "replica {id} replays from scratch: {rec}"
        );
    }
    c.elect();
    c.ticks(4);
    for id in 1..=3 {
        assert_eq!(
            c.core(id).state().policy().version,
            *acked.last().unwrap(),
            "replica {id}"
        );
    }
}

/// A log whose writes fail on demand.
#[derive(Clone, Default)]
struct Failing {
    inner: VolatileLog,
    fail: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl raft::Storage for Failing {
    fn initial_state(&self) -> raft::Result<raft::RaftState> {
        self.inner.initial_state()
    }
    fn entries(
        &self,
        low: u64,
        high: u64,
        max: impl Into<Option<u64>>,
        ctx: raft::GetEntriesContext,
    ) -> raft::Result<Vec<raft::eraftpb::Entry>> {
        self.inner.entries(low, high, max, ctx)
    }
    fn term(&self, idx: u64) -> raft::Result<u64> {
        self.inner.term(idx)
    }
    fn first_index(&self) -> raft::Result<u64> {
        self.inner.first_index()
    }
    fn last_index(&self) -> raft::Result<u64> {
        self.inner.last_index()
    }
    fn snapshot(&self, i: u64, to: u64) -> raft::Result<raft::eraftpb::Snapshot> {
        self.inner.snapshot(i, to)
    }
}

impl RaftLog for Failing {
    fn initialize(&self, cs: raft::eraftpb::ConfState) -> storage::Result<()> {
        self.inner.initialize(cs)
    }
    fn append(&self, e: &[raft::eraftpb::Entry]) -> storage::Result<()> {
        self.inner.append(e)
    }
    fn set_hardstate(&self, hs: raft::eraftpb::HardState) -> storage::Result<()> {
        self.inner.set_hardstate(hs)
    }
    fn set_conf_state(&self, cs: raft::eraftpb::ConfState) -> storage::Result<()> {
        self.inner.set_conf_state(cs)
    }
    fn apply_snapshot(&self, s: raft::eraftpb::Snapshot) -> storage::Result<()> {
        self.inner.apply_snapshot(s)
    }
    fn compact(&self, i: u64) -> storage::Result<()> {
        self.inner.compact(i)
    }
    fn create_snapshot(
        &self,
        i: u64,
        cs: raft::eraftpb::ConfState,
        d: Vec<u8>,
    ) -> storage::Result<raft::eraftpb::Snapshot> {
        self.inner.create_snapshot(i, cs, d)
    }
    fn save_applied(&self, i: u64, d: &[u8]) -> storage::Result<()> {
        self.inner.save_applied(i, d)
    }
    fn load_applied(&self) -> storage::Result<Option<storage::AppliedState>> {
        self.inner.load_applied()
    }
    fn load_snapshot(&self) -> storage::Result<Option<raft::eraftpb::Snapshot>> {
        self.inner.load_snapshot()
    }
    fn recovering(&self) -> storage::Result<bool> {
        self.inner.recovering()
    }
    fn set_recovering(&self, on: bool) -> storage::Result<()> {
        self.inner.set_recovering(on)
    }
    fn flush(&self) -> storage::Result<()> {
        if self.fail.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(storage::Error::Poisoned);
        }
        self.inner.flush()
    }
}

#[test]
fn a_failing_log_ends_the_replica_with_one_fatal_output() {
    let log = Failing::default();
    let cfg = common::config(1, 1);
    let mut core = ReplicaCore::new(cfg, log.clone()).unwrap();
    let mut now = 0;
    let mut started = false;
    for _ in 0..100 {
        now += 50 * MS;
        core.tick(now);
        while let Some(o) = core.poll_output() {
            match o {
                Output::StartMaster { gen_, .. } => {
                    core.master_started(now, gen_, fabric::Guid(1));
                    started = true;
                }
                Output::StopRole { gen_ } => core.role_stopped(now, gen_),
                _ => {}
            }
        }
        if started {
            break;
        }
    }
    assert!(started, "a single replica becomes master");
    log.fail.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = core.propose(now, policy_v(0));
    let outs: Vec<Output> = std::iter::from_fn(|| core.poll_output()).collect();
    let fatal: Vec<_> = outs
        .iter()
        .filter(|o| matches!(o, Output::Fatal(_)))
        .collect();
    assert_eq!(fatal.len(), 1, "{outs:?}");
    assert!(
        matches!(outs.last(), Some(Output::Fatal(e)) if e.to_string().starts_with("RCORE-E001 storage: flush")),
        "{outs:?}"
    );
    assert!(
        !outs.iter().any(|o| matches!(o, Output::Answer { .. })),
        "answered without a flush"
    );
    assert!(core.has_failed());
    assert_eq!(core.lease_until(), None);
    core.tick(now + 50 * MS);
    assert!(
        core.poll_output().is_none(),
        "a failed replica does nothing more"
    );
}

/// A replica whose log is lost (an empty disk in an existing cluster) never votes before a
/// leader has brought it up to an entry committed in the leader's term: here the one
/// replica holding an acknowledged entry besides the dead leader is wiped, and the stale
/// follower cannot be elected with its vote.
#[test]
fn a_replica_with_a_lost_log_votes_only_once_caught_up() {
    let mut c = Cluster::new(3);
    let l = c.elect();
    c.ticks(3);
    let others: Vec<u64> = (1..=3).filter(|&i| i != l).collect();
    let (stale, wiped) = (others[0], others[1]);
    // `stale` misses an entry the leader and `wiped` acknowledge (it is committed).
    c.down.insert(stale);
    let now = c.now;
    let r = c.core(l).propose(now, policy_v(0)).unwrap();
    c.settle();
    c.tick();
    assert!(
        c.node(l)
            .seen
            .iter()
            .any(|s| matches!(s, Seen::Answer { request, accepted: true } if *request == r))
    );
    // The leader dies, `wiped` loses its disk and starts again on an empty log.
    c.down.insert(l);
    let cfg = c.core(wiped).config().clone();
    let mut cfg = cfg;
    cfg.bootstrap = false;
    let fresh = VolatileLog::new();
    c.node(wiped).log = fresh.clone();
    c.node(wiped).core = ReplicaCore::new(cfg.clone(), fresh).unwrap();
    c.drain(wiped);
    assert!(c.core(wiped).is_recovering());
    c.down.remove(&stale);
    c.ticks(200);
    assert_eq!(
        c.leader(),
        None,
        "the stale replica was elected with the vote of a replica that lost its log"
    );
    assert_eq!(c.core(stale).state().policy().version, 0);
    // The old leader comes back: it is elected (with the stale replica's vote), catches the
    // recovering replica up, which then votes again; the acknowledged entry survives.
    c.down.remove(&l);
    let nl = c.elect();
    c.ticks(40);
    let (wn, ln) = (
        c.nodes[&wiped].notices.clone(),
        c.nodes[&nl].notices.clone(),
    );
    assert!(
        !c.core(wiped).is_recovering(),
        "{wn:?}\nleader {nl}: {ln:?}"
    );
    assert!(
        c.node(wiped)
            .notices
            .iter()
            .any(|n| n.contains("log recovered"))
    );
    for id in 1..=3 {
        assert_eq!(
            c.core(id).state().policy().version,
            1,
            "replica {id} (leader {nl})"
        );
    }
    // And a restart while recovering stays recovering (the flag is on disk).
    let log = VolatileLog::new();
    cfg.bootstrap = false;
    let mut core = ReplicaCore::new(cfg.clone(), log.clone()).unwrap();
    assert!(core.is_recovering());
    core.shutdown().unwrap();
    log.crash().unwrap();
    let again = ReplicaCore::new(cfg, log).unwrap();
    assert!(again.is_recovering());
}
