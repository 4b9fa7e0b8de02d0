//! A stopped replica's sled store damaged on disk must not open: a flipped byte in the
//! middle of sled's file, a truncated file, a wiped directory, removed or altered records,
//! terms going down, a store from before checksums. Each case writes a real store through
//! `RaftLog`, closes it, damages the files, and asserts the typed error `open` returns
//! (never a shorter log, never a panic).
//!
//! sled itself opens a store whose file has a flipped byte or was truncated without any
//! error: it cuts its log at the first damaged record and returns the older state. Those
//! cases are caught by the durable mark (`<dir>.mark`), which records what every flush
//! made durable.

use std::path::{Path, PathBuf};

use raft::eraftpb::{ConfState, Entry, HardState};
use raft::{GetEntriesContext, Storage};
use storage::codec::{ENTRIES_TREE, KEY_HARD_STATE, KEY_RECOVERING, META_TREE, index_key, seal};
use storage::{Error, ErrorKind, RaftLog, SledStorage};

const LAST: u64 = 300;
const COMMIT: u64 = 290;
const SNAPSHOT: u64 = 200;
const COMPACT: u64 = 150;
const APPLIED: u64 = 250;

fn term_of(i: u64) -> u64 {
    1 + i / 50
}

fn payload(i: u64) -> Vec<u8> {
    format!("entry-{i:06}-").repeat(6).into_bytes()
}

fn gen_entry(i: u64) -> Entry {
    Entry {
        index: i,
        term: term_of(i),
        data: payload(i).into(),
        ..Default::default()
    }
}

fn conf(voters: &[u64]) -> ConfState {
    ConfState {
        voters: voters.to_vec(),
        ..Default::default()
    }
}

fn hs(commit: u64) -> HardState {
    HardState {
        term: term_of(LAST),
        vote: 1,
        commit,
        ..Default::default()
    }
}

/// A replica's history: entries appended three at a time and flushed (each flush is an
/// acknowledgment), the commit following 10 behind, a snapshot, a compaction, an applied
/// state; at the end entries 1..=300 with commit 290, all flushed.
fn write_store(path: &Path) {
    let log = SledStorage::open(path).unwrap();
    assert!(log.created());
    log.initialize_with_conf_state(conf(&[1, 2, 3])).unwrap();
    for chunk in (1..=LAST).collect::<Vec<_>>().chunks(3) {
        let ents: Vec<Entry> = chunk.iter().map(|&i| gen_entry(i)).collect();
        log.append(&ents).unwrap();
        let last = chunk[chunk.len() - 1];
        log.set_hardstate(hs(last.saturating_sub(10))).unwrap();
        log.flush().unwrap();
    }
    log.create_snapshot(SNAPSHOT, conf(&[1, 2, 3]), b"state at 200".to_vec())
        .unwrap();
    log.compact(COMPACT).unwrap();
    log.save_applied(APPLIED, b"state at 250").unwrap();
    log.set_hardstate(hs(COMMIT)).unwrap();
    log.flush().unwrap();
}

/// The full acknowledged state, as a reopened store must show it.
fn assert_everything_there(log: &SledStorage) {
    assert!(!log.created());
    assert_eq!(log.first_index(), Ok(COMPACT));
    assert_eq!(log.last_index(), Ok(LAST));
    assert_eq!(log.initial_state().unwrap().hard_state, hs(COMMIT));
    let ents = log
        .entries(COMPACT, LAST + 1, None, GetEntriesContext::empty(false))
        .unwrap();
    let want: Vec<Entry> = (COMPACT..=LAST).map(gen_entry).collect();
    assert_eq!(ents, want);
    assert_eq!(log.load_applied().unwrap().unwrap().index, APPLIED);
}

fn store() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("raft");
    write_store(&path);
    (dir, path)
}

/// Opens the damaged store, expects an error whose message starts with `code`, and checks
/// it is classified as damage (so the replica refuses to start and never votes). Opening
/// again gives the same refusal: nothing was "repaired" into a shorter log.
fn refused(path: &Path, code: &str) -> Error {
    let first = match SledStorage::open(path) {
        Ok(log) => panic!(
            "a damaged store opened: last index {:?}, commit {}",
            log.last_index(),
            log.initial_state().unwrap().hard_state.commit
        ),
        Err(e) => e,
    };
    assert!(
        first.to_string().starts_with(code),
        "expected {code}, got: {first}"
    );
    assert_damaged(&first);
    match SledStorage::open(path) {
        Ok(_) => panic!("the second open accepted what the first refused"),
        Err(again) => assert!(again.to_string().starts_with(code), "{again}"),
    }
    first
}

fn assert_damaged(e: &Error) {
    assert!(e.is_damaged(), "{e} is classified {:?}", e.kind());
}

fn db_file(path: &Path) -> PathBuf {
    path.join("db")
}

/// Edits the closed store through sled's own API (behind SledStorage's back), flushed.
fn edit(path: &Path, f: impl FnOnce(&sled::Tree, &sled::Tree)) {
    let log = SledStorage::open(path).unwrap();
    let db = log.db();
    let entries = db.open_tree(ENTRIES_TREE).unwrap();
    let meta = db.open_tree(META_TREE).unwrap();
    f(&entries, &meta);
    db.flush().unwrap();
}

#[test]
fn an_intact_store_reopens_with_everything() {
    let (_dir, path) = store();
    assert_everything_there(&SledStorage::open(&path).unwrap());
}

#[test]
fn a_flipped_byte_in_the_middle_of_the_db_file_is_refused() {
    let (_dir, path) = store();
    let mut bytes = std::fs::read(db_file(&path)).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x01;
    std::fs::write(db_file(&path), &bytes).unwrap();
    // sled opens this without an error and with a log that ends near the flip.
    let e = refused(&path, "STORAGE-E025");
    assert!(matches!(e, Error::RolledBack { durable, found, .. } if found < durable));
    assert_eq!(e.kind(), ErrorKind::Lost);
}

#[test]
fn a_flipped_byte_in_the_newest_copy_of_an_entry_is_refused() {
    let (_dir, path) = store();
    let mut bytes = std::fs::read(db_file(&path)).unwrap();
    let needle = format!("entry-{:06}-", LAST - 20).into_bytes();
    let at = bytes
        .windows(needle.len())
        .rposition(|w| w == needle.as_slice())
        .expect("the entry's bytes are in the file");
    bytes[at + 3] ^= 0x20;
    std::fs::write(db_file(&path), &bytes).unwrap();
    refused(&path, "STORAGE-E025");
}

#[test]
fn a_truncated_db_file_is_refused() {
    let (_dir, path) = store();
    let len = std::fs::metadata(db_file(&path)).unwrap().len();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(db_file(&path))
        .unwrap();
    f.set_len(len / 2).unwrap();
    drop(f);
    refused(&path, "STORAGE-E025");
}

#[test]
fn a_db_file_truncated_to_nothing_is_refused() {
    let (_dir, path) = store();
    std::fs::File::create(db_file(&path)).unwrap();
    refused(&path, "STORAGE-E024");
}

#[test]
fn a_wiped_data_dir_is_refused() {
    // Everything in the directory removed, the directory itself kept.
    let (_dir, path) = store();
    for e in std::fs::read_dir(&path).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            std::fs::remove_dir_all(&p).unwrap();
        } else {
            std::fs::remove_file(&p).unwrap();
        }
    }
    let e = refused(&path, "STORAGE-E024");
    assert!(
        matches!(
            e,
            Error::Wiped {
                commit: COMMIT,
                last_index: LAST,
                ..
            }
        ),
        "{e}"
    );
    // Refusing changed nothing: the directory is still empty.
    assert_eq!(std::fs::read_dir(&path).unwrap().count(), 0);
}

#[test]
fn a_removed_data_dir_is_refused() {
    let (_dir, path) = store();
    std::fs::remove_dir_all(&path).unwrap();
    refused(&path, "STORAGE-E024");
    assert!(!path.exists(), "refusing must not create the directory");
}

#[test]
fn a_data_dir_reduced_to_the_locked_db_file_still_holds_everything() {
    // sled locks its `db` file; deleting every other file (its config, its snapshots of
    // the page table, the blobs directory) loses nothing: sled rebuilds from the log. Not
    // a loss, so it must open with everything (and verification must agree).
    let (_dir, path) = store();
    for e in std::fs::read_dir(&path).unwrap() {
        let p = e.unwrap().path();
        if p.file_name().is_some_and(|n| n == "db") {
            continue;
        }
        if p.is_dir() {
            std::fs::remove_dir_all(&p).unwrap();
        } else {
            std::fs::remove_file(&p).unwrap();
        }
    }
    assert_everything_there(&SledStorage::open(&path).unwrap());
}

#[test]
fn an_entry_removed_from_the_middle_is_refused() {
    let (_dir, path) = store();
    edit(&path, |entries, _| {
        entries.remove(index_key(200)).unwrap();
    });
    let e = refused(&path, "STORAGE-E006");
    assert!(
        matches!(
            e,
            Error::LogHole {
                expected: 200,
                found: 201
            }
        ),
        "{e}"
    );
}

#[test]
fn committed_entries_removed_from_the_tail_are_refused() {
    let (_dir, path) = store();
    edit(&path, |entries, _| {
        for i in 281..=LAST {
            entries.remove(index_key(i)).unwrap();
        }
    });
    let e = refused(&path, "STORAGE-E027");
    assert!(
        matches!(
            e,
            Error::CommitBeyondLog {
                commit: COMMIT,
                last_index: 280
            }
        ),
        "{e}"
    );
}

#[test]
fn acknowledged_uncommitted_entries_removed_from_the_tail_are_refused() {
    let (_dir, path) = store();
    edit(&path, |entries, _| {
        for i in 296..=LAST {
            entries.remove(index_key(i)).unwrap();
        }
    });
    let e = refused(&path, "STORAGE-E026");
    assert!(
        matches!(
            e,
            Error::NotAsFlushed {
                field: "last index",
                durable: LAST,
                found: 295,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn an_altered_entry_fails_its_checksum() {
    let (_dir, path) = store();
    edit(&path, |entries, _| {
        // Valid protobuf in place of the stored bytes, the old checksum kept.
        let key = index_key(222);
        let old = entries.get(key).unwrap().unwrap();
        let mut forged = old[..4].to_vec();
        let mut e = gen_entry(222);
        e.data = b"forged".to_vec().into();
        forged.extend(protobuf::Message::write_to_bytes(&e).unwrap());
        entries.insert(key, forged).unwrap();
    });
    let e = refused(&path, "STORAGE-E021");
    assert!(e.to_string().contains("raft_entries/222"), "{e}");
    assert_eq!(e.kind(), ErrorKind::Corrupt);
}

#[test]
fn an_altered_hard_state_fails_its_checksum() {
    let (_dir, path) = store();
    edit(&path, |_, meta| {
        let mut v = meta.get(KEY_HARD_STATE).unwrap().unwrap().to_vec();
        let n = v.len();
        v[n - 1] ^= 0x01;
        meta.insert(KEY_HARD_STATE, v).unwrap();
    });
    let e = refused(&path, "STORAGE-E021");
    assert!(e.to_string().contains("raft_meta/hard_state"), "{e}");
}

#[test]
fn terms_going_down_are_refused() {
    let (_dir, path) = store();
    edit(&path, |entries, _| {
        let mut e = gen_entry(260);
        e.term = 1;
        let key = index_key(260);
        entries
            .insert(
                key,
                seal(&key, &protobuf::Message::write_to_bytes(&e).unwrap()),
            )
            .unwrap();
    });
    let e = refused(&path, "STORAGE-E028");
    assert!(
        matches!(
            e,
            Error::TermRegression {
                index: 260,
                term: 1,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn an_applied_state_beyond_the_log_is_refused() {
    let (_dir, path) = store();
    edit(&path, |_, meta| {
        let mut v = 400u64.to_be_bytes().to_vec();
        v.extend_from_slice(b"state at 400");
        meta.insert("applied", seal(b"applied", &v)).unwrap();
    });
    refused(&path, "STORAGE-E029");
}

#[test]
fn a_damaged_mark_is_refused() {
    let (_dir, path) = store();
    let mark = SledStorage::mark_path(&path).unwrap();
    std::fs::write(&mark, [0u8; 256]).unwrap();
    refused(&path, "STORAGE-E030");
}

#[test]
fn a_store_whose_mark_is_gone_is_refused() {
    let (_dir, path) = store();
    std::fs::remove_file(SledStorage::mark_path(&path).unwrap()).unwrap();
    refused(&path, "STORAGE-E031");
}

#[test]
fn a_store_from_before_checksums_is_refused_unchanged() {
    // The layout this crate wrote before format 1: raw protobuf values, no format key.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("raft");
    {
        let db = sled::open(&path).unwrap();
        let entries = db.open_tree(ENTRIES_TREE).unwrap();
        let meta = db.open_tree(META_TREE).unwrap();
        for i in 1..=5 {
            let e = gen_entry(i);
            entries
                .insert(index_key(i), protobuf::Message::write_to_bytes(&e).unwrap())
                .unwrap();
        }
        meta.insert(
            KEY_HARD_STATE,
            protobuf::Message::write_to_bytes(&hs(5)).unwrap(),
        )
        .unwrap();
        db.flush().unwrap();
    }
    let e = match SledStorage::open(&path) {
        Ok(_) => panic!("a format-0 store opened"),
        Err(e) => e,
    };
    assert!(e.to_string().starts_with("STORAGE-E023"), "{e}");
    assert!(matches!(e, Error::UnsupportedFormat { found: None, .. }));
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    // Refused, not converted: the old values are still there, raw.
    let db = sled::open(&path).unwrap();
    let v = db
        .open_tree(META_TREE)
        .unwrap()
        .get(KEY_HARD_STATE)
        .unwrap()
        .unwrap();
    assert_eq!(
        v.to_vec(),
        protobuf::Message::write_to_bytes(&hs(5)).unwrap()
    );
    assert!(!SledStorage::mark_path(&path).unwrap().exists());
}

#[test]
fn new_and_existing_stores_are_told_apart() {
    let dir = tempfile::tempdir().unwrap();
    // Absent: created.
    let path = dir.path().join("raft");
    let log = SledStorage::open(&path).unwrap();
    assert!(log.created());
    assert_eq!(log.last_index(), Ok(0));
    log.initialize_with_conf_state(conf(&[1, 2, 3])).unwrap();
    log.flush().unwrap();
    drop(log);
    let log = SledStorage::open(&path).unwrap();
    assert!(!log.created());
    assert_eq!(log.initial_state().unwrap().conf_state, conf(&[1, 2, 3]));
    drop(log);
    // An empty directory without a mark: created as well.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert!(SledStorage::open(&empty).unwrap().created());
    // A store created but never written to reopens as an existing (empty) store.
    let log = SledStorage::open(&empty).unwrap();
    assert!(!log.created());
    assert_eq!(log.last_index(), Ok(0));
}

/// The store of [`store`] with the recovering flag set and flushed.
fn recovering_store() -> (tempfile::TempDir, PathBuf) {
    let (dir, path) = store();
    let log = SledStorage::open(&path).unwrap();
    assert!(!log.recovering().unwrap());
    log.set_recovering(true).unwrap();
    log.flush().unwrap();
    drop(log);
    (dir, path)
}

#[test]
fn the_recovering_flag_is_kept_and_cleared_durably() {
    let (_dir, path) = recovering_store();
    let log = SledStorage::open(&path).unwrap();
    assert!(log.recovering().unwrap());
    assert_everything_there(&log);
    log.set_recovering(false).unwrap();
    log.flush().unwrap();
    drop(log);
    let log = SledStorage::open(&path).unwrap();
    assert!(!log.recovering().unwrap());
}

#[test]
fn a_recovering_flag_removed_behind_the_stores_back_is_refused() {
    // A replica that lost its log must not vote again because its flag vanished.
    let (_dir, path) = recovering_store();
    edit(&path, |_, meta| {
        meta.remove(KEY_RECOVERING).unwrap();
    });
    let e = refused(&path, "STORAGE-E026");
    assert!(
        matches!(
            e,
            Error::NotAsFlushed {
                field: "recovering flag",
                durable: 1,
                found: 0,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn an_altered_recovering_flag_fails_its_checksum() {
    let (_dir, path) = recovering_store();
    edit(&path, |_, meta| {
        let mut v = meta.get(KEY_RECOVERING).unwrap().unwrap().to_vec();
        let n = v.len();
        v[n - 1] ^= 0x02;
        meta.insert(KEY_RECOVERING, v).unwrap();
    });
    let e = refused(&path, "STORAGE-E021");
    assert!(e.to_string().contains("raft_meta/recovering"), "{e}");
}
