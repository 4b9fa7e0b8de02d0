//! Timing of SledStorage on this machine's disk (no criterion: std::time::Instant).
//!
//! `cargo bench -p storage --bench append_flush` (directory: $STORAGE_BENCH_DIR or the
//! system temp dir). Prints p50/p99/max of: one proposal's write path (append one entry +
//! hard state + flush), a 64-entry batch with flush, reading 1,000 entries, and reopening
//! a 20,000-entry log.

use std::time::{Duration, Instant};

use raft::eraftpb::{Entry, HardState};
use raft::{GetEntriesContext, Storage};
use storage::{RaftLog, SledStorage};

fn entry(index: u64, size: usize) -> Entry {
    Entry {
        index,
        term: 1,
        data: vec![(index % 251) as u8; size].into(),
        ..Default::default()
    }
}

fn report(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let pick = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    println!(
        "{name:<44} n={:<6} p50={:>9.3?} p99={:>9.3?} max={:>9.3?}",
        samples.len(),
        pick(0.5),
        pick(0.99),
        samples[samples.len() - 1]
    );
}

fn main() {
    let base = std::env::var_os("STORAGE_BENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let dir = base.join(format!("storage-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let log = SledStorage::open(&dir).expect("open");
    let mut hs = HardState::default();
    let mut next = 1u64;

    let mut single = Vec::new();
    for _ in 0..2000 {
        let t = Instant::now();
        log.append(&[entry(next, 256)]).expect("append");
        hs.commit = next;
        log.set_hardstate(hs.clone()).expect("hs");
        log.flush().expect("flush");
        single.push(t.elapsed());
        next += 1;
    }
    report("append 1 x 256 B + hard state + flush", single);

    let mut batch = Vec::new();
    for _ in 0..300 {
        let ents: Vec<Entry> = (next..next + 64).map(|i| entry(i, 256)).collect();
        let t = Instant::now();
        log.append(&ents).expect("append");
        log.flush().expect("flush");
        batch.push(t.elapsed());
        next += 64;
    }
    report("append 64 x 256 B + flush", batch);

    let mut reads = Vec::new();
    for k in 0..200u64 {
        let lo = 1 + (k * 97) % (next - 1001);
        let t = Instant::now();
        let got = log
            .entries(lo, lo + 1000, None, GetEntriesContext::empty(false))
            .expect("entries");
        reads.push(t.elapsed());
        assert_eq!(got.len(), 1000);
    }
    report("entries(1,000 x 256 B)", reads);

    let mut opens = Vec::new();
    let last = log.last_index().expect("last");
    drop(log);
    for _ in 0..5 {
        let t = Instant::now();
        let log = SledStorage::open(&dir).expect("reopen");
        opens.push(t.elapsed());
        assert_eq!(log.last_index().expect("last"), last);
    }
    report(&format!("reopen with {last} entries"), opens);
    let _ = std::fs::remove_dir_all(&dir);
}
