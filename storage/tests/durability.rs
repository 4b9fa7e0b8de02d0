//! SledStorage durability: reopen after drop, SIGKILL of a writer process after it flushed,
//! and SledStorage-only behaviour (retained term before the first index, full compaction,
//! corruption reported as errors).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use raft::eraftpb::{ConfState, Entry, HardState};
use raft::{GetEntriesContext, Storage, StorageError};
use storage::codec::{ENTRIES_TREE, index_key, seal};
use storage::conformance::{check_reopen, entry, seeded};
use storage::{AppliedState, Error, RaftLog, SledStorage};

fn ctx() -> GetEntriesContext {
    GetEntriesContext::empty(false)
}

fn conf(voters: &[u64]) -> ConfState {
    ConfState {
        voters: voters.to_vec(),
        ..Default::default()
    }
}

#[test]
fn reopen_after_drop_recovers_everything() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let p1 = path.clone();
    let p2 = path.clone();
    check_reopen(
        &mut move || SledStorage::open(&p1).unwrap(),
        &mut move |log| {
            drop(log);
            SledStorage::open(&p2).unwrap()
        },
    )
    .unwrap();
}

#[test]
fn term_before_first_index_is_retained_after_compaction() {
    let log = seeded(&mut || SledStorage::open_temporary().unwrap()).unwrap();
    log.append(&[entry(6, 6), entry(7, 7)]).unwrap();
    log.compact(6).unwrap();
    assert_eq!(log.first_index(), Ok(6));
    assert_eq!(log.term(5), Ok(5), "term of the last discarded entry");
    assert_eq!(
        log.term(4),
        Err(raft::Error::Store(StorageError::Compacted))
    );
}

#[test]
fn compacting_the_whole_log_keeps_the_indexes() {
    let log = seeded(&mut || SledStorage::open_temporary().unwrap()).unwrap();
    log.compact(6).unwrap();
    assert_eq!((log.first_index(), log.last_index()), (Ok(6), Ok(5)));
    assert_eq!(log.term(5), Ok(5));
    log.append(&[entry(6, 5)]).unwrap();
    assert_eq!(log.entries(6, 7, None, ctx()), Ok(vec![entry(6, 5)]));
}

#[test]
fn entries_past_the_end_is_unavailable_not_a_panic() {
    let log = seeded(&mut || SledStorage::open_temporary().unwrap()).unwrap();
    assert_eq!(
        log.entries(3, 7, None, ctx()),
        Err(raft::Error::Store(StorageError::Unavailable))
    );
    assert!(matches!(
        log.entries(5, 4, None, ctx()),
        Err(raft::Error::Store(StorageError::Other(_)))
    ));
}

#[test]
fn initialize_only_once_and_snapshot_requests_are_reported() {
    let log = SledStorage::open_temporary().unwrap();
    log.initialize_with_conf_state(conf(&[1, 2, 3])).unwrap();
    assert!(matches!(
        log.initialize_with_conf_state(conf(&[1])),
        Err(Error::AlreadyInitialized)
    ));
    assert_eq!(log.take_snapshot_request(), None);
    assert!(log.snapshot(0, 2).is_err());
    assert_eq!(log.take_snapshot_request(), Some(0));
    assert_eq!(log.take_snapshot_request(), None);
    log.append(&[entry(1, 1), entry(2, 1)]).unwrap();
    log.create_snapshot(1, conf(&[1, 2, 3]), b"x".to_vec())
        .unwrap();
    assert_eq!(
        log.snapshot(2, 2),
        Err(raft::Error::Store(
            StorageError::SnapshotTemporarilyUnavailable
        ))
    );
    assert_eq!(log.take_snapshot_request(), Some(2));
    assert_eq!(log.snapshot(1, 2).unwrap().get_metadata().index, 1);
}

#[test]
fn corrupted_values_are_errors_not_panics() {
    let log = seeded(&mut || SledStorage::open_temporary().unwrap()).unwrap();
    let tree = log.db().open_tree(ENTRIES_TREE).unwrap();
    // Too short to hold a checksum.
    tree.insert(index_key(4), &[0xff, 0xff, 0xff][..]).unwrap();
    let err = log.entries(3, 6, None, ctx()).unwrap_err();
    assert!(
        matches!(err, raft::Error::Store(StorageError::Other(_))),
        "{err:?}"
    );
    assert!(err.to_string().contains("STORAGE-E022"), "{err}");
    assert!(log.term(4).is_err());
    assert_eq!(log.term(3), Ok(3));
    // A checksum that holds but bytes that do not decode.
    let key = index_key(4);
    tree.insert(key, seal(&key, &[0xff, 0xff, 0xff])).unwrap();
    let err = log.entries(3, 6, None, ctx()).unwrap_err();
    assert!(err.to_string().contains("STORAGE-E002"), "{err}");
    // Well-formed bytes under a checksum that does not match them.
    let mut forged = seal(
        &key,
        &protobuf::Message::write_to_bytes(&entry(4, 4)).unwrap(),
    );
    forged[0] ^= 0x80;
    tree.insert(key, forged).unwrap();
    let err = log.entries(3, 6, None, ctx()).unwrap_err();
    assert!(err.to_string().contains("STORAGE-E021"), "{err}");
    assert_eq!(log.term(3), Ok(3));
}

#[test]
fn a_hole_in_the_log_is_reported_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    {
        let log = seeded(&mut || SledStorage::open(&path).unwrap()).unwrap();
        log.db()
            .open_tree(ENTRIES_TREE)
            .unwrap()
            .remove(index_key(4))
            .unwrap();
        log.flush().unwrap();
    }
    match SledStorage::open(&path) {
        Err(e) => assert!(e.to_string().contains("STORAGE-E006"), "{e}"),
        Ok(_) => panic!("a log with a hole opened without error"),
    }
}

// ---- the kill test ---------------------------------------------------------------------

const CHILD_DIR: &str = "STORAGE_KILL_CHILD_DIR";
const CHILD_MODE: &str = "STORAGE_KILL_CHILD_MODE";
const MARK: &str = "@@storage-flushed@@";

fn gen_term(i: u64) -> u64 {
    1 + i / 40
}

fn gen_entry(i: u64) -> Entry {
    let mut e = entry(i, gen_term(i));
    e.data = format!("entry {i};")
        .repeat(1 + (i % 7) as usize)
        .into_bytes()
        .into();
    e
}

fn gen_applied(i: u64) -> Vec<u8> {
    format!("applied through {i}").into_bytes()
}

fn flushed_hard_state() -> HardState {
    HardState {
        term: gen_term(100),
        vote: 1,
        commit: 90,
        ..Default::default()
    }
}

/// What the child does before printing the mark: append with a conflicting tail that is
/// later truncated, hard state, conf change, snapshot, compaction, applied state, flush.
fn child_workload(log: &SledStorage) {
    log.initialize_with_conf_state(conf(&[1, 2, 3])).unwrap();
    for chunk in (1..=100u64).collect::<Vec<_>>().chunks(7) {
        let ents: Vec<Entry> = chunk.iter().map(|&i| gen_entry(i)).collect();
        log.append(&ents).unwrap();
    }
    // A stale tail 80..=120 from an old term, then replaced by the right 80..=100.
    let stale: Vec<Entry> = (80..=120)
        .map(|i| {
            let mut e = entry(i, 1);
            e.data = b"stale".to_vec().into();
            e
        })
        .collect();
    log.append(&stale).unwrap();
    let right: Vec<Entry> = (80..=100).map(gen_entry).collect();
    log.append(&right).unwrap();
    log.set_hardstate(flushed_hard_state()).unwrap();
    log.set_conf_state(conf(&[1, 2, 3, 4])).unwrap();
    log.create_snapshot(60, conf(&[1, 2, 3, 4]), gen_applied(60))
        .unwrap();
    log.compact(50).unwrap();
    log.save_applied(90, &gen_applied(90)).unwrap();
    log.flush().unwrap();
}

/// Entry point of the child process (ignored in normal runs; the parent runs it).
#[test]
#[ignore = "child process of the kill tests"]
fn kill_child() {
    let Ok(dir) = std::env::var(CHILD_DIR) else {
        return;
    };
    let busy = std::env::var(CHILD_MODE).as_deref() == Ok("busy");
    let log = SledStorage::open(Path::new(&dir)).unwrap();
    child_workload(&log);
    println!("{MARK}");
    if busy {
        // Keep writing, flushing every 100 entries; the parent kills us after the flush
        // through BUSY_KILL_AT, somewhere in the middle of later writes.
        let mut hs = flushed_hard_state();
        for i in 101..=20_000u64 {
            log.append(&[gen_entry(i)]).unwrap();
            if i % 10 == 0 {
                hs.commit = i - 5;
                hs.term = gen_term(i);
                log.set_hardstate(hs.clone()).unwrap();
                log.save_applied(i - 5, &gen_applied(i - 5)).unwrap();
            }
            if i % 100 == 0 {
                log.flush().unwrap();
                println!("{MARK} through {i}");
            }
        }
    }
    // Block (no sleep) until killed: the parent never writes to our stdin.
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
}

/// Runs the child, SIGKILLs it as soon as it reports the flush, returns the db path.
/// In busy mode, the flush after which the parent kills the child.
const BUSY_KILL_AT: u64 = 1000;

fn run_and_kill(dir: &Path, mode: &str) {
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .args([
            "--exact",
            "kill_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_DIR, dir)
        .env(CHILD_MODE, mode)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut seen = false;
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        let wanted = if mode == "busy" {
            line.contains(&format!("{MARK} through {BUSY_KILL_AT}"))
        } else {
            line.contains(MARK)
        };
        if wanted {
            seen = true;
            break;
        }
    }
    // Child::kill sends SIGKILL on Unix: no destructor, no sled shutdown flush.
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(
        seen,
        "child exited ({status:?}) without reporting the flush"
    );
    assert!(
        !status.success(),
        "child was killed, not finished: {status:?}"
    );
}

fn check_flushed_prefix(log: &SledStorage, exact: bool) {
    let st = log.initial_state().unwrap();
    assert_eq!(st.conf_state, conf(&[1, 2, 3, 4]));
    let first = log.first_index().unwrap();
    let last = log.last_index().unwrap();
    assert_eq!(first, 50);
    assert_eq!(log.term(49), Ok(gen_term(49)));
    let snap = log.snapshot(0, 2).unwrap();
    assert_eq!(snap.get_metadata().index, 60);
    assert_eq!(snap.get_metadata().term, gen_term(60));
    assert_eq!(snap.data.to_vec(), gen_applied(60));
    let ents = log.entries(first, last + 1, None, ctx()).unwrap();
    let want: Vec<Entry> = (first..=last).map(gen_entry).collect();
    assert_eq!(ents, want, "entries after the kill");
    let applied = log.load_applied().unwrap().unwrap();
    if exact {
        assert_eq!(last, 100);
        assert_eq!(st.hard_state, flushed_hard_state());
        assert_eq!(
            applied,
            AppliedState {
                index: 90,
                data: gen_applied(90)
            }
        );
    } else {
        // At least what was flushed; whatever else survived is a consistent prefix.
        let b = BUSY_KILL_AT;
        assert!(last >= b, "lost flushed entries: last {last}");
        assert!(st.hard_state.commit >= b - 5 && st.hard_state.commit <= last);
        assert_eq!(st.hard_state.vote, 1);
        assert!(
            applied.index >= b - 5,
            "applied went back to {}",
            applied.index
        );
        assert_eq!(applied.data, gen_applied(applied.index));
    }
}

#[test]
fn sigkill_after_flush_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    run_and_kill(&path, "idle");
    let log = SledStorage::open(&path).unwrap();
    check_flushed_prefix(&log, true);
}

#[test]
fn sigkill_while_writing_keeps_flushed_state_and_a_consistent_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    run_and_kill(&path, "busy");
    let log = SledStorage::open(&path).unwrap();
    check_flushed_prefix(&log, false);
    // The recovered storage keeps working.
    let last = log.last_index().unwrap();
    log.append(&[gen_entry(last + 1)]).unwrap();
    log.flush().unwrap();
    assert_eq!(log.last_index(), Ok(last + 1));
}

#[test]
fn a_second_open_of_a_live_storage_is_refused_as_locked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let first = SledStorage::open(&path).unwrap();
    match SledStorage::open_with_lock_wait(&path, std::time::Duration::from_millis(20)) {
        Err(Error::Locked { .. }) => {}
        other => panic!("second open while the first is alive: {other:?}"),
    }
    drop(first);
    // Once the first handle is gone the lock comes free (open waits out sled's threads).
    let again = SledStorage::open(&path).unwrap();
    assert_eq!(again.last_index(), Ok(0));
}
