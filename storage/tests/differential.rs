//! Differential test: seeded random sequences of writes applied to raft-rs's MemStorage
//! (through MemRaftLog) and to SledStorage must leave both in the same observable state
//! after every step; SledStorage is also closed and reopened now and then and must come
//! back identical. Operations stay inside the envelope where MemStorage is a correct model:
//! compaction up to `last_index` (MemStorage's first index jumps back when compacted to
//! `last + 1`), terms compared on `[first, last]` (MemStorage keeps the term of its last
//! snapshot, SledStorage the term of the last discarded entry). They also stay within what
//! raft-rs does, which SledStorage verifies when it reopens: committed entries are never
//! truncated, the commit index never goes back, the applied state, snapshots and
//! compaction never pass the commit index, a received snapshot is past the commit index.

use raft::eraftpb::{ConfState, Entry, HardState, Snapshot};
use raft::{GetEntriesContext, Storage};
use storage::{MemRaftLog, RaftLog, SledStorage};

/// SplitMix64: deterministic and dependency-free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[lo, hi]`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

#[derive(Debug, PartialEq)]
struct Observed {
    first: u64,
    last: u64,
    entries: Vec<Entry>,
    limited: Vec<Entry>,
    terms: Vec<raft::Result<u64>>,
    hard_state: HardState,
    conf_state: ConfState,
    snapshot: raft::Result<Snapshot>,
    applied: Option<storage::AppliedState>,
}

fn observe<L: RaftLog>(log: &L, max_size: u64) -> Observed {
    let first = log.first_index().unwrap();
    let last = log.last_index().unwrap();
    let ctx = || GetEntriesContext::empty(false);
    let (entries, limited) = if last >= first {
        (
            log.entries(first, last + 1, None, ctx()).unwrap(),
            log.entries(first, last + 1, max_size, ctx()).unwrap(),
        )
    } else {
        (Vec::new(), Vec::new())
    };
    let st = log.initial_state().unwrap();
    Observed {
        first,
        last,
        entries,
        limited,
        terms: (first..=last + 1).map(|i| log.term(i)).collect(),
        hard_state: st.hard_state,
        conf_state: st.conf_state,
        snapshot: log.snapshot(0, 2),
        applied: log.load_applied().unwrap(),
    }
}

fn random_entries(rng: &mut Rng, start: u64, term: u64) -> Vec<Entry> {
    let n = rng.range(1, 6);
    (start..start + n)
        .map(|i| {
            let len = rng.range(0, 40) as usize;
            Entry {
                index: i,
                term,
                data: vec![(i % 251) as u8; len].into(),
                ..Default::default()
            }
        })
        .collect()
}

fn run(seed: u64, steps: usize) {
    let mut rng = Rng(seed);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let mem = MemRaftLog::new();
    let mut sled = SledStorage::open(&path).unwrap();
    let mut term = 1u64;
    let mut applied = 0u64;
    let mut commit = 0u64;
    let mut reopens = 0;
    for step in 0..steps {
        let first = mem.first_index().unwrap();
        let last = mem.last_index().unwrap();
        let op = rng.range(0, 9);
        let what = match op {
            0..=3 => {
                if rng.range(0, 4) == 0 {
                    term += 1;
                }
                let start = rng.range(first.max(commit + 1), last + 1);
                let ents = random_entries(&mut rng, start, term);
                mem.append(&ents).unwrap();
                sled.append(&ents).unwrap();
                format!("append {start}+{}", ents.len())
            }
            4 => {
                let idx = rng.range(first.saturating_sub(2), last.min(commit + 1).max(1));
                mem.compact(idx).unwrap();
                sled.compact(idx).unwrap();
                format!("compact {idx}")
            }
            5 => {
                commit = rng.range(commit.max(first - 1), last.max(commit));
                let hs = HardState {
                    term,
                    vote: rng.range(0, 3),
                    commit,
                    ..Default::default()
                };
                mem.set_hardstate(hs.clone()).unwrap();
                sled.set_hardstate(hs).unwrap();
                "hard state".to_string()
            }
            6 if commit >= first && commit > 0 => {
                let idx = rng.range(first, commit);
                let cs = ConfState {
                    voters: vec![1, 2, rng.range(3, 5)],
                    ..Default::default()
                };
                let data = format!("snap {idx}").into_bytes();
                let a = mem.create_snapshot(idx, cs.clone(), data.clone());
                let b = sled.create_snapshot(idx, cs, data);
                assert_eq!(
                    a.is_ok(),
                    b.is_ok(),
                    "seed {seed} step {step}: {a:?} vs {b:?}"
                );
                if let (Ok(a), Ok(b)) = (a, b) {
                    assert_eq!(a, b);
                }
                format!("create snapshot {idx}")
            }
            7 => {
                let idx = rng.range(first.max(commit + 1), last + 8);
                let snap_term = term.max(1);
                term = snap_term;
                let mut snap = Snapshot::default();
                snap.mut_metadata().index = idx;
                snap.mut_metadata().term = snap_term;
                snap.mut_metadata().mut_conf_state().voters = vec![1, 2, 3];
                snap.data = format!("received {idx}").into_bytes().into();
                mem.apply_snapshot(snap.clone()).unwrap();
                sled.apply_snapshot(snap).unwrap();
                applied = applied.max(idx);
                commit = idx;
                format!("apply snapshot {idx}")
            }
            8 => {
                applied = (applied + rng.range(0, 3)).min(commit).max(applied);
                let data = format!("applied {applied}").into_bytes();
                mem.save_applied(applied, &data).unwrap();
                sled.save_applied(applied, &data).unwrap();
                format!("save applied {applied}")
            }
            _ => {
                sled.flush().unwrap();
                drop(sled);
                sled = SledStorage::open(&path).unwrap();
                reopens += 1;
                "reopen".to_string()
            }
        };
        let max_size = rng.range(0, 200);
        let want = observe(&mem, max_size);
        let got = observe(&sled, max_size);
        assert_eq!(got, want, "seed {seed} step {step} after {what}");
    }
    assert!(reopens > 0, "seed {seed}: the run never reopened sled");
}

#[test]
fn sled_matches_mem_storage_on_random_histories() {
    for seed in 1..=6 {
        run(seed, 300);
    }
}
