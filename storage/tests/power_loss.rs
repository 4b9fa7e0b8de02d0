//! Power loss: a writer child process appends, flushes and reports every acknowledged index
//! over a pipe; the parent SIGKILLs it at a seeded point (mid-write), then throws away every
//! byte that was not made durable: the data directory is rebuilt from what each `fsync`
//! covered, and only that. The rebuilt store must open (verification passes) and hold every
//! acknowledged entry, hard state and applied state.
//!
//! The model: the child's [`storage::SyncHook`] runs after each `fsync` this crate does.
//! After `fsync` of a file it copies the file's contents into an image store; after `fsync`
//! of a directory it records the directory's names. Each image is written atomically
//! (temporary file + rename), in sync order, before `flush` returns, so at any kill point
//! the image store is what a power cut after the last completed `fsync` would leave on a
//! disk that persisted nothing else: a directory holds exactly the names of its last synced
//! listing, each file the contents of its last `fsync` (empty if it never had one, absent
//! if its name was never synced). This is stricter than a real disk, which may also keep
//! some later writes, including sled's own background `fsync`s (every 500 ms): those are
//! treated as lost. What it cannot model: a disk that lies about `fsync`, and the reordering
//! of writes inside a file between two `fsync`s (the image holds the bytes as they were
//! read right after the `fsync`, a state a real crash could also leave).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use raft::eraftpb::{ConfState, Entry, HardState};
use raft::{GetEntriesContext, Storage};
use storage::{OpenOptions, RaftLog, SledStorage, SyncEvent};

const ENV_ROOT: &str = "STORAGE_POWER_ROOT";
const ENV_IMAGES: &str = "STORAGE_POWER_IMAGES";
const ACK: &str = "@@ack@@";
/// sled stores values over about 128 KiB as separate blob files; the applied state is
/// made that large every `BIG_EVERY` entries so that blobs and their directory are covered.
const BIG_STATE: usize = 200 * 1024;
const BIG_EVERY: u64 = 40;

fn term_of(i: u64) -> u64 {
    1 + i / 64
}

fn gen_entry(i: u64) -> Entry {
    Entry {
        index: i,
        term: term_of(i),
        data: format!("power {i};")
            .repeat(1 + (i % 9) as usize)
            .into_bytes()
            .into(),
        ..Default::default()
    }
}

fn commit_of(i: u64) -> u64 {
    i.saturating_sub(3)
}

fn hard_state(i: u64) -> HardState {
    HardState {
        term: term_of(i),
        vote: 1,
        commit: commit_of(i),
        ..Default::default()
    }
}

fn applied_state(index: u64) -> Vec<u8> {
    let head = format!("applied through {index};").into_bytes();
    // Saved at commit_of(i) = i - 3 for i a multiple of 10: 37, 77, 117... are large.
    if (index + 3).is_multiple_of(BIG_EVERY) {
        head.iter().copied().cycle().take(BIG_STATE).collect()
    } else {
        head
    }
}

/// The image store's name for `path` (relative to the root the child writes under).
fn image_name(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let s = rel.to_string_lossy();
    if s.is_empty() {
        "ROOT".to_string()
    } else {
        s.replace('/', "%")
    }
}

/// Writes `bytes` to `path` atomically (a SIGKILL leaves the old image or the new one).
fn put(path: &Path, bytes: &[u8]) {
    let mut tmp = path.as_os_str().to_os_string();
    tmp.push(".partial");
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// The child: a replica's write path, reporting each index once its flush returned.
#[test]
#[ignore = "child process of the power-loss test"]
fn power_loss_child() {
    let (Ok(root), Ok(images)) = (std::env::var(ENV_ROOT), std::env::var(ENV_IMAGES)) else {
        return;
    };
    let (root, images) = (PathBuf::from(root), PathBuf::from(images));
    std::fs::create_dir_all(images.join("files")).unwrap();
    std::fs::create_dir_all(images.join("dirs")).unwrap();
    let hook_root = root.clone();
    let hook = Arc::new(move |ev: SyncEvent<'_>| match ev {
        SyncEvent::File(p) => {
            let bytes = std::fs::read(p).unwrap();
            put(
                &images.join("files").join(image_name(&hook_root, p)),
                &bytes,
            );
        }
        SyncEvent::Dir(p) => {
            let mut names: Vec<String> = std::fs::read_dir(p)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            let listing = names.join("\n");
            put(
                &images.join("dirs").join(image_name(&hook_root, p)),
                listing.as_bytes(),
            );
        }
    });
    let log = OpenOptions::new()
        .sync_hook(hook)
        .open(root.join("raft"))
        .unwrap();
    log.initialize_with_conf_state(ConfState {
        voters: vec![1, 2, 3],
        ..Default::default()
    })
    .unwrap();
    log.flush().unwrap();
    let mut out = std::io::stdout().lock();
    for i in 1..=100_000u64 {
        log.append(&[gen_entry(i)]).unwrap();
        log.set_hardstate(hard_state(i)).unwrap();
        if i % 10 == 0 {
            let a = commit_of(i);
            log.save_applied(a, &applied_state(a)).unwrap();
        }
        if i % 100 == 0 {
            let s = commit_of(i) - 20;
            log.create_snapshot(s, log.initial_state().unwrap().conf_state, applied_state(s))
                .unwrap();
            log.compact(s - 10).unwrap();
        }
        log.flush().unwrap();
        writeln!(out, "{ACK} {i}").unwrap();
        out.flush().unwrap();
    }
}

/// Rebuilds under `to` the tree the images say is durable, starting at directory `rel`.
fn rebuild(images: &Path, from_root: &Path, to: &Path, rel: &Path) {
    let dir_image = images
        .join("dirs")
        .join(image_name(from_root, &from_root.join(rel)));
    let listing = std::fs::read_to_string(&dir_image).unwrap_or_default();
    std::fs::create_dir_all(to.join(rel)).unwrap();
    for name in listing.lines().filter(|l| !l.is_empty()) {
        let child = rel.join(name);
        let original = from_root.join(&child);
        let file_image = images.join("files").join(image_name(from_root, &original));
        let dir_listing = images.join("dirs").join(image_name(from_root, &original));
        if dir_listing.exists() {
            rebuild(images, from_root, to, &child);
        } else if original.is_dir() {
            // A directory whose own names were never synced: it exists, empty.
            std::fs::create_dir_all(to.join(&child)).unwrap();
        } else {
            // A file: its contents at its last fsync, or nothing if it never had one.
            let bytes = std::fs::read(&file_image).unwrap_or_default();
            std::fs::write(to.join(&child), bytes).unwrap();
        }
    }
}

/// Runs the child until it acknowledged `kill_after` indexes, SIGKILLs it, returns the last
/// index it acknowledged.
fn run_and_cut(root: &Path, images: &Path, kill_after: u64) -> u64 {
    run_and_cut_with(root, images, kill_after, &mut |_| {})
}

/// [`run_and_cut`], calling `on_ack` with every acknowledged index as it arrives.
fn run_and_cut_with(
    root: &Path,
    images: &Path,
    kill_after: u64,
    on_ack: &mut dyn FnMut(u64),
) -> u64 {
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .args([
            "--exact",
            "power_loss_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ENV_ROOT, root)
        .env(ENV_IMAGES, images)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut acked = 0;
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        if let Some(i) = line.strip_prefix(ACK) {
            acked = i.trim().parse().unwrap();
            on_ack(acked);
            if acked >= kill_after {
                break;
            }
        }
    }
    // SIGKILL: the child is somewhere in its next append/flush; nothing runs after.
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(
        acked >= kill_after,
        "child stopped early ({status:?}) at {acked}"
    );
    acked
}

fn check_restored(path: &Path, acked: u64, cut: &str) {
    let log = match SledStorage::open(path) {
        Ok(log) => log,
        Err(e) => panic!("{cut}: the power-cut store does not open: {e}"),
    };
    assert!(!log.created(), "{cut}: the store came back as new");
    let (first, last) = (log.first_index().unwrap(), log.last_index().unwrap());
    assert!(
        last >= acked,
        "{cut}: acknowledged {acked}, log ends at {last}"
    );
    let hs = log.initial_state().unwrap().hard_state;
    assert!(hs.commit >= commit_of(acked), "{cut}: commit {}", hs.commit);
    assert!(hs.commit <= last, "{cut}: commit {} past {last}", hs.commit);
    let ents = log
        .entries(first, last + 1, None, GetEntriesContext::empty(false))
        .unwrap();
    let want: Vec<Entry> = (first..=last).map(gen_entry).collect();
    assert_eq!(ents, want, "{cut}: entries differ");
    let applied = log.load_applied().unwrap().unwrap();
    assert!(
        applied.index >= commit_of(acked / 10 * 10),
        "{cut}: applied {}",
        applied.index
    );
    assert_eq!(
        applied.data,
        applied_state(applied.index),
        "{cut}: applied data"
    );
    let state = log.recovery_state().unwrap().unwrap();
    assert_eq!(
        state.data,
        applied_state(state.index),
        "{cut}: recovery state"
    );
    // It keeps working.
    log.append(&[gen_entry(last + 1)]).unwrap();
    log.flush().unwrap();
}

/// SplitMix64, for the seeded kill points.
fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

#[test]
fn a_power_cut_keeps_every_acknowledged_write() {
    let mut files_seen = BTreeMap::new();
    for seed in 1..=4u64 {
        let kill_after = 30 + splitmix(seed) % 250;
        let root = tempfile::tempdir().unwrap();
        let images = tempfile::tempdir().unwrap();
        let acked = run_and_cut(root.path(), images.path(), kill_after);
        let restored = tempfile::tempdir().unwrap();
        rebuild(images.path(), root.path(), restored.path(), Path::new(""));
        for e in std::fs::read_dir(images.path().join("files")).unwrap() {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            let kind = if name.starts_with("raft%blobs%") {
                "blob"
            } else {
                "file"
            };
            *files_seen.entry(kind).or_insert(0) += 1;
        }
        let cut = format!("seed {seed}, cut after {acked} acknowledged");
        check_restored(&restored.path().join("raft"), acked, &cut);
    }
    // The cuts covered sled's blob files too (the large applied states).
    assert!(
        files_seen.get("blob").copied().unwrap_or(0) > 0,
        "{files_seen:?}"
    );
}

#[test]
fn a_store_older_than_its_mark_is_refused() {
    // The same cut, but sled's file rolled back further than the mark: its image from an
    // earlier flush (copied while the child ran on) with the mark of the last one. This is
    // what a flush that did not fsync sled's file would leave after a power cut; opening
    // must refuse it, not return the shorter log.
    let root = tempfile::tempdir().unwrap();
    let images = tempfile::tempdir().unwrap();
    let db_image = images.path().join("files").join("raft%db");
    let early_db = root.path().join("early-db");
    let acked = run_and_cut_with(root.path(), images.path(), 120, &mut |i| {
        if i == 60 {
            std::fs::copy(&db_image, &early_db).unwrap();
        }
    });
    let restored = tempfile::tempdir().unwrap();
    rebuild(images.path(), root.path(), restored.path(), Path::new(""));
    std::fs::copy(&early_db, restored.path().join("raft").join("db")).unwrap();
    match SledStorage::open(restored.path().join("raft")) {
        Ok(log) => panic!(
            "acknowledged {acked}, opened with last index {:?}",
            log.last_index()
        ),
        Err(e) => assert!(e.is_damaged(), "{e}"),
    }
}
