//! A replica whose log is damaged or lost refuses to start: `sm-node` exits non-zero and
//! its last log line is the storage error (code, path, what was lost). Before storage
//! verification, a wiped `raft` directory started as a new, empty voter and a truncated
//! sled file as a shorter log.

use raft::eraftpb::{ConfState, Entry, HardState};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use storage::{RaftLog, SledStorage};

const BIN: &str = env!("CARGO_BIN_EXE_sm-node");

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("smnode-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A replica's log in `data_dir/raft`: 40 entries, commit 35, flushed.
fn write_log(data_dir: &Path) {
    let log = SledStorage::open(data_dir.join("raft")).unwrap();
    log.initialize_with_conf_state(ConfState {
        voters: vec![1],
        ..Default::default()
    })
    .unwrap();
    for i in 1..=40u64 {
        log.append(&[Entry {
            index: i,
            term: 1,
            data: format!("entry {i}").into_bytes().into(),
            ..Default::default()
        }])
        .unwrap();
        log.set_hardstate(HardState {
            term: 1,
            vote: 1,
            commit: i.saturating_sub(5),
            ..Default::default()
        })
        .unwrap();
        log.flush().unwrap();
    }
}

/// Runs replica 1 on `data_dir`; returns (success, last non-empty stderr line, stderr).
/// A replica that starts (the defect) would run for ever: it is killed after `BOUND` and
/// reported as started.
fn run_replica(data_dir: &Path) -> (bool, String, String) {
    const BOUND: Duration = Duration::from_secs(60);
    let err_path = data_dir.join("stderr.log");
    let err_file = std::fs::File::create(&err_path).unwrap();
    let mut child = Command::new(BIN)
        .args([
            "--id",
            "1",
            "--peers",
            "1=127.0.0.1:1",
            "--fabric",
            "sim:ft2:4",
        ])
        .args(["--insecure-loopback", "--data-dir"])
        .arg(data_dir)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(err_file)
        .spawn()
        .unwrap();
    let start = Instant::now();
    let ok = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.success();
        }
        if start.elapsed() > BOUND {
            let _ = child.kill();
            let _ = child.wait();
            // Still running: it started on the damaged log.
            break true;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let err = std::fs::read_to_string(&err_path).unwrap();
    let last = err
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default()
        .to_string();
    (ok, last, err)
}

#[test]
fn a_wiped_log_directory_refuses_to_start() {
    let dir = temp_dir("damaged-wiped");
    write_log(&dir);
    let raft = dir.join("raft");
    std::fs::remove_dir_all(&raft).unwrap();
    std::fs::create_dir(&raft).unwrap();
    let (ok, last, err) = run_replica(&dir);
    assert!(!ok, "started on a wiped log:\n{err}");
    assert!(
        last.contains("E_NODE_STORAGE") && last.contains("STORAGE-E024"),
        "last line: {last}\n{err}"
    );
    // Nothing was created in its place.
    assert_eq!(std::fs::read_dir(&raft).unwrap().count(), 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_truncated_log_file_refuses_to_start() {
    let dir = temp_dir("damaged-truncated");
    write_log(&dir);
    let db = dir.join("raft").join("db");
    let len = std::fs::metadata(&db).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&db)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    let (ok, last, err) = run_replica(&dir);
    assert!(!ok, "started on a truncated log:\n{err}");
    assert!(
        last.contains("E_NODE_STORAGE") && last.contains("STORAGE-E025"),
        "last line: {last}\n{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
