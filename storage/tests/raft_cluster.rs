//! Three raft-rs `RawNode`s over `SledStorage` in temporary directories, driven in-process:
//! fixed ids, ticks from a loop, messages routed through a queue, the Ready loop in the
//! raft-rs example order. Deterministic: every election timeout is exactly 10 ticks
//! (min 10, max 11) and nodes are ticked one at a time with the network drained in between.

use std::collections::{BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use protobuf::Message as _;
use raft::eraftpb::{ConfChange, ConfChangeType, ConfState, Entry, EntryType, Message};
use raft::{Config, RawNode, StateRole, Storage};
use storage::{RaftLog, SledStorage};

/// The replicated state machine of the test: every proposal payload in commit order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Machine {
    items: Vec<Vec<u8>>,
}

impl Machine {
    fn encode(&self) -> Vec<u8> {
        let mut out = (self.items.len() as u32).to_be_bytes().to_vec();
        for it in &self.items {
            out.extend_from_slice(&(it.len() as u32).to_be_bytes());
            out.extend_from_slice(it);
        }
        out
    }

    fn decode(mut b: &[u8]) -> Machine {
        let mut take = |n: usize| {
            let (h, t) = b.split_at(n);
            b = t;
            h.to_vec()
        };
        let count = u32::from_be_bytes(take(4).try_into().unwrap());
        let mut items = Vec::new();
        for _ in 0..count {
            let len = u32::from_be_bytes(take(4).try_into().unwrap()) as usize;
            items.push(take(len));
        }
        Machine { items }
    }
}

struct Node {
    id: u64,
    raw: RawNode<SledStorage>,
    store: SledStorage,
    machine: Machine,
    applied: u64,
    /// Create a snapshot and compact when this many entries were applied since the last.
    snapshot_every: Option<u64>,
    /// Snapshots made because raft asked for one.
    snapshots_on_request: usize,
}

fn logger() -> slog::Logger {
    slog::Logger::root(slog::Discard, slog::o!())
}

fn config(id: u64, applied: u64) -> Config {
    Config {
        id,
        election_tick: 10,
        heartbeat_tick: 3,
        min_election_tick: 10,
        max_election_tick: 11,
        check_quorum: true,
        pre_vote: true,
        applied,
        max_size_per_msg: 1024 * 1024,
        max_inflight_msgs: 256,
        ..Config::default()
    }
}

impl Node {
    /// Opens the node's storage in `dir`; a new storage is initialized with voters 1 2 3.
    /// Recovery: applied state from the storage, then raft replays entries after it.
    fn open(id: u64, dir: &Path) -> Node {
        Self::open_with(id, dir, true)
    }

    /// `bootstrap`: a member of the initial cluster (voters 1 2 3); a replica added later
    /// starts empty and learns everything from the leader's snapshot.
    fn open_with(id: u64, dir: &Path, bootstrap: bool) -> Node {
        let store = SledStorage::open(dir).unwrap();
        let st = store.initial_state().unwrap();
        if bootstrap && !st.initialized() {
            let cs = ConfState {
                voters: vec![1, 2, 3],
                ..Default::default()
            };
            store.initialize_with_conf_state(cs).unwrap();
            store.flush().unwrap();
        }
        let (applied, machine) = match store.recovery_state().unwrap() {
            Some(a) => (a.index, Machine::decode(&a.data)),
            None => (0, Machine::default()),
        };
        let raw = RawNode::new(&config(id, applied), store.clone(), &logger()).unwrap();
        Node {
            id,
            raw,
            store,
            machine,
            applied,
            snapshot_every: None,
            snapshots_on_request: 0,
        }
    }

    fn apply(&mut self, entries: Vec<Entry>) {
        if entries.is_empty() {
            return;
        }
        for e in &entries {
            match e.get_entry_type() {
                EntryType::EntryNormal => {
                    if !e.data.is_empty() {
                        self.machine.items.push(e.data.to_vec());
                    }
                }
                EntryType::EntryConfChange => {
                    let cc = ConfChange::parse_from_bytes(&e.data).unwrap();
                    let cs = self.raw.apply_conf_change(&cc).unwrap();
                    self.store.set_conf_state(cs).unwrap();
                }
                other => panic!("node {}: unexpected entry type {other:?}", self.id),
            }
            self.applied = e.index;
        }
        self.store
            .save_applied(self.applied, &self.machine.encode())
            .unwrap();
        if let Some(every) = self.snapshot_every {
            let snap_index = self.store.snapshot_metadata().unwrap().index;
            if self.applied >= snap_index + every {
                let cs = self.store.initial_state().unwrap().conf_state;
                self.store
                    .create_snapshot(self.applied, cs, self.machine.encode())
                    .unwrap();
                self.store.compact(self.applied).unwrap();
            }
        }
    }

    /// One Ready in raft-rs's example order. Returns false when there was none.
    fn on_ready(&mut self, out: &mut Vec<Message>) -> bool {
        // raft asked for a snapshot the storage did not have (none, or from before the
        // latest conf change): make one at the applied index; raft retries on its own.
        if self.store.take_snapshot_request().is_some() {
            let cs = self.store.initial_state().unwrap().conf_state;
            self.store
                .create_snapshot(self.applied, cs, self.machine.encode())
                .unwrap();
            self.snapshots_on_request += 1;
        }
        if !self.raw.has_ready() {
            return false;
        }
        let mut rd = self.raw.ready();
        // 1. messages that may go out before persisting (leader's appends, heartbeats).
        out.extend(rd.take_messages());
        // 2. snapshot from the leader replaces log and state machine.
        if !rd.snapshot().is_empty() {
            let snap = rd.snapshot().clone();
            self.machine = Machine::decode(&snap.data);
            self.applied = snap.get_metadata().index;
            self.store.apply_snapshot(snap).unwrap();
        }
        // 3. committed entries (already persisted here) to the state machine.
        let committed = rd.take_committed_entries();
        self.apply(committed);
        // 4. new entries, 5. hard state, then flush before acknowledging anything.
        self.store.append(rd.entries()).unwrap();
        if let Some(hs) = rd.hs() {
            self.store.set_hardstate(hs.clone()).unwrap();
        }
        self.store.flush().unwrap();
        // 6. messages that acknowledge persisted state.
        out.extend(rd.take_persisted_messages());
        // 7. light ready.
        let mut light = self.raw.advance(rd);
        if let Some(commit) = light.commit_index() {
            let mut hs = self.store.initial_state().unwrap().hard_state;
            hs.commit = commit;
            self.store.set_hardstate(hs).unwrap();
            self.store.flush().unwrap();
        }
        out.extend(light.take_messages());
        let committed = light.take_committed_entries();
        self.apply(committed);
        self.raw.advance_apply();
        true
    }
}

struct Cluster {
    nodes: Vec<Node>,
    dirs: Vec<PathBuf>,
    queue: VecDeque<Message>,
    /// Nodes cut off from everyone: their messages in and out are dropped.
    isolated: BTreeSet<u64>,
    _tmp: tempfile::TempDir,
}

impl Cluster {
    fn new() -> Cluster {
        let tmp = tempfile::tempdir().unwrap();
        let dirs: Vec<PathBuf> = (1..=3).map(|i| tmp.path().join(format!("n{i}"))).collect();
        let nodes = (1..=3)
            .map(|i| Node::open(i, &dirs[i as usize - 1]))
            .collect();
        Cluster {
            nodes,
            dirs,
            queue: VecDeque::new(),
            isolated: BTreeSet::new(),
            _tmp: tmp,
        }
    }

    fn node(&mut self, id: u64) -> &mut Node {
        &mut self.nodes[id as usize - 1]
    }

    /// Handles Readies and delivers messages until nothing moves.
    fn drain(&mut self) {
        for _ in 0..10_000 {
            let mut out = Vec::new();
            let mut progressed = false;
            for n in &mut self.nodes {
                while n.on_ready(&mut out) {
                    progressed = true;
                }
            }
            self.queue.extend(out);
            if self.queue.is_empty() && !progressed {
                return;
            }
            while let Some(m) = self.queue.pop_front() {
                if self.isolated.contains(&m.from) || self.isolated.contains(&m.to) {
                    continue;
                }
                let to = m.to;
                // A step error (e.g. a stale message) is raft's business, not the network's.
                let _ = self.node(to).raw.step(m);
            }
        }
        panic!("network never settled");
    }

    /// Ticks every node once, one at a time, draining the network after each.
    fn tick_round(&mut self) {
        for i in 0..self.nodes.len() {
            self.nodes[i].raw.tick();
            self.drain();
        }
    }

    fn leader(&self) -> Option<u64> {
        let leaders: Vec<u64> = self
            .nodes
            .iter()
            .filter(|n| !self.isolated.contains(&n.id) && n.raw.raft.state == StateRole::Leader)
            .map(|n| n.id)
            .collect();
        match leaders.as_slice() {
            [one] => Some(*one),
            _ => None,
        }
    }

    fn wait_leader(&mut self, max_rounds: usize) -> (u64, usize) {
        for round in 0..max_rounds {
            if let Some(l) = self.leader() {
                // Also wait until every connected follower knows it.
                let known = self
                    .nodes
                    .iter()
                    .filter(|n| !self.isolated.contains(&n.id))
                    .all(|n| n.raw.raft.leader_id == l);
                if known {
                    return (l, round);
                }
            }
            self.tick_round();
        }
        panic!("no leader after {max_rounds} tick rounds");
    }

    fn propose(&mut self, data: &[u8]) {
        let l = self.leader().expect("a leader");
        self.node(l).raw.propose(vec![], data.to_vec()).unwrap();
        self.drain();
    }

    fn conf_change(&mut self, change_type: ConfChangeType, node_id: u64) {
        let l = self.leader().expect("a leader");
        let cc = ConfChange {
            change_type,
            node_id,
            ..Default::default()
        };
        self.node(l).raw.propose_conf_change(vec![], cc).unwrap();
        self.drain();
    }

    fn restart_all(&mut self) {
        let snapshot_every: Vec<Option<u64>> =
            self.nodes.iter().map(|n| n.snapshot_every).collect();
        // Dropping RawNode and every storage handle closes sled (no explicit close).
        self.nodes.clear();
        self.queue.clear();
        for (i, every) in snapshot_every.into_iter().enumerate() {
            let mut n = Node::open_with(i as u64 + 1, &self.dirs[i], i < 3);
            n.snapshot_every = every;
            self.nodes.push(n);
        }
    }
}

fn payload(i: usize) -> Vec<u8> {
    format!("proposal {i}").into_bytes()
}

#[test]
fn three_nodes_elect_commit_snapshot_and_recover() {
    let mut c = Cluster::new();

    // Election: node 1 times out first because it is ticked first.
    let (leader, rounds) = c.wait_leader(40);
    assert_eq!(leader, 1, "deterministic tick order elects node 1");
    assert!(
        rounds >= 10,
        "no election before the timeout, got {rounds} rounds"
    );

    // Commit proposals on all three.
    for i in 0..20 {
        c.propose(&payload(i));
    }
    let want: Vec<Vec<u8>> = (0..20).map(payload).collect();
    for n in &c.nodes {
        assert_eq!(n.machine.items, want, "node {} state", n.id);
        assert_eq!(n.raw.raft.raft_log.committed, n.applied, "node {}", n.id);
    }

    // Node 3 falls behind; the leader snapshots and compacts past what node 3 has.
    let behind = c.nodes[2].store.last_index().unwrap();
    c.isolated.insert(3);
    c.node(1).snapshot_every = Some(10);
    for i in 20..50 {
        c.propose(&payload(i));
    }
    let leader_first = c.nodes[0].store.first_index().unwrap();
    assert!(
        leader_first > behind + 1,
        "leader compacted past node 3 (first {leader_first}, node 3 last {behind})"
    );
    assert!(c.nodes[0].store.snapshot_metadata().unwrap().index > behind);
    assert_eq!(
        c.nodes[2].machine.items.len(),
        20,
        "isolated node applied nothing new"
    );

    // Heal: node 3 can only catch up through the snapshot.
    c.isolated.clear();
    for _ in 0..5 {
        c.tick_round();
    }
    let want: Vec<Vec<u8>> = (0..50).map(payload).collect();
    let n3 = &c.nodes[2];
    assert_eq!(n3.machine.items, want, "node 3 caught up");
    assert!(
        n3.store.first_index().unwrap() > behind + 1,
        "node 3's log was replaced by the snapshot"
    );
    assert_eq!(n3.store.load_applied().unwrap().unwrap().index, n3.applied);

    // Leader failure: isolate node 1; 2 or 3 takes over and commits.
    c.isolated.insert(1);
    let (new_leader, _) = c.wait_leader(60);
    assert_ne!(new_leader, 1);
    for i in 50..55 {
        c.propose(&payload(i));
    }
    c.isolated.clear();
    for _ in 0..10 {
        c.tick_round();
    }
    let want: Vec<Vec<u8>> = (0..55).map(payload).collect();
    for n in &c.nodes {
        assert_eq!(n.machine.items, want, "node {} after failover", n.id);
    }
    let terms: Vec<u64> = c.nodes.iter().map(|n| n.raw.raft.term).collect();

    // Restart all three from sled: every bit of state comes back.
    let before: Vec<(raft::RaftState, u64, u64, Machine)> = c
        .nodes
        .iter()
        .map(|n| {
            (
                n.store.initial_state().unwrap(),
                n.store.first_index().unwrap(),
                n.store.last_index().unwrap(),
                n.machine.clone(),
            )
        })
        .collect();
    c.restart_all();
    for (n, (st, first, last, machine)) in c.nodes.iter().zip(&before) {
        let got = n.store.initial_state().unwrap();
        assert_eq!(&got.hard_state, &st.hard_state, "node {} hard state", n.id);
        assert_eq!(&got.conf_state, &st.conf_state, "node {} conf state", n.id);
        assert_eq!(n.store.first_index().unwrap(), *first, "node {}", n.id);
        assert_eq!(n.store.last_index().unwrap(), *last, "node {}", n.id);
        // The applied state restored from storage is the one before the restart.
        assert_eq!(&n.machine, machine, "node {} machine", n.id);
        assert_eq!(
            n.raw.raft.term,
            terms[n.id as usize - 1],
            "node {} term",
            n.id
        );
    }
    let (_, _) = c.wait_leader(60);
    for i in 55..60 {
        c.propose(&payload(i));
    }
    let want: Vec<Vec<u8>> = (0..60).map(payload).collect();
    for n in &c.nodes {
        assert_eq!(n.machine.items, want, "node {} after restart", n.id);
    }
}

fn voters(n: &Node) -> Vec<u64> {
    let mut v = n.store.initial_state().unwrap().conf_state.voters;
    v.sort();
    v
}

#[test]
fn membership_change_adds_and_removes_a_voter_and_persists_conf_state() {
    let mut c = Cluster::new();
    let (leader, _) = c.wait_leader(40);
    assert_eq!(leader, 1);
    for i in 0..12 {
        c.propose(&payload(i));
    }
    // Node 4 starts empty; the leader's log no longer starts at 1, so it joins through a
    // snapshot carrying voters 1 2 3.
    c.node(1).snapshot_every = Some(5);
    c.propose(&payload(12));
    assert!(c.nodes[0].store.first_index().unwrap() > 1);

    let dir4 = c._tmp.path().join("n4");
    c.dirs.push(dir4.clone());
    c.nodes.push(Node::open_with(4, &dir4, false));
    assert!(!c.nodes[3].store.initial_state().unwrap().initialized());
    c.conf_change(ConfChangeType::AddNode, 4);
    for _ in 0..5 {
        c.tick_round();
    }
    for n in &c.nodes {
        assert_eq!(voters(n), vec![1, 2, 3, 4], "node {} voters", n.id);
    }
    let want: Vec<Vec<u8>> = (0..13).map(payload).collect();
    assert_eq!(
        c.nodes[3].machine.items, want,
        "node 4 caught up via snapshot"
    );
    assert!(
        c.nodes[3].store.snapshot_metadata().unwrap().index > 0,
        "node 4 received a snapshot"
    );
    assert!(
        c.nodes[0].snapshots_on_request > 0,
        "the leader re-made its snapshot to include node 4"
    );

    // Remove node 2; the other three keep committing.
    c.conf_change(ConfChangeType::RemoveNode, 2);
    for _ in 0..3 {
        c.tick_round();
    }
    c.isolated.insert(2);
    for i in 13..18 {
        c.propose(&payload(i));
    }
    let want: Vec<Vec<u8>> = (0..18).map(payload).collect();
    for id in [1, 3, 4] {
        let n = &c.nodes[id as usize - 1];
        assert_eq!(voters(n), vec![1, 3, 4], "node {id} voters");
        assert_eq!(n.machine.items, want, "node {id} state");
    }

    // The conf state comes back from sled on every replica.
    c.restart_all();
    for id in [1, 3, 4] {
        assert_eq!(
            voters(&c.nodes[id as usize - 1]),
            vec![1, 3, 4],
            "node {id} after restart"
        );
    }
    let (leader, _) = c.wait_leader(60);
    assert_ne!(leader, 2);
    c.propose(&payload(18));
    let want: Vec<Vec<u8>> = (0..19).map(payload).collect();
    for id in [1, 3, 4] {
        assert_eq!(
            c.nodes[id as usize - 1].machine.items,
            want,
            "node {id} after restart"
        );
    }
}
