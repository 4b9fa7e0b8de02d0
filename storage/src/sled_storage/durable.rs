//! Making a flush durable against power loss: sled 0.34's `flush` writes its log with
//! `pwrite` and `sync_file_range`, which neither flushes the disk's write cache nor the
//! file's metadata, and sled never syncs the blob files it writes for large values nor the
//! directory entries of the files it creates. After sled's flush, [`DirSync::sync`] calls
//! `fsync` (`File::sync_all`) on the files of the sled directory and of its `blobs`
//! subdirectory, then on the directories:
//!
//! - `db`, the only file sled changes in place, on every flush;
//! - every other file (sled's `conf`, its page-table snapshots `snap.*`, the blobs) once,
//!   the first time a flush sees its name: sled 0.34 writes each of them whole under its
//!   final name (blobs with `create_new`, snapshots under `.generating` then renamed) and
//!   never changes them afterwards;
//! - a directory when its list of names differs from the one last synced.
//!
//! [`SyncHook`] is called after each of those `fsync`s (and the mark's): the power-loss
//! test keeps a copy of each file as it was when synced and restores exactly those copies
//! to simulate a power cut.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};

/// What was just made durable.
#[derive(Debug, Clone, Copy)]
pub enum SyncEvent<'a> {
    /// `fsync` of this regular file returned: its contents are durable.
    File(&'a Path),
    /// `fsync` of this directory returned: its list of names is durable.
    Dir(&'a Path),
}

/// Called after every `fsync` this crate does (instrumentation for power-loss tests; the
/// daemon sets none). Runs on the flushing thread, before `flush` returns.
pub type SyncHook = Arc<dyn Fn(SyncEvent<'_>) + Send + Sync>;

/// The state of a data directory before it is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirState {
    /// Nothing at the path.
    Absent,
    /// An empty directory.
    Empty,
    /// A directory with something in it.
    Populated,
}

pub(crate) fn io<'a>(
    op: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> Error + 'a {
    move |source| Error::Io {
        op,
        path: path.display().to_string(),
        source,
    }
}

/// Looks at `path` without changing anything.
pub fn inspect(path: &Path) -> Result<DirState> {
    match std::fs::read_dir(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(DirState::Absent),
        Err(e) => Err(io("read the data directory", path)(e)),
        Ok(mut it) => Ok(if it.next().is_none() {
            DirState::Empty
        } else {
            DirState::Populated
        }),
    }
}

/// The parent directory of `path` (`.` for a bare name).
pub fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The name of the one file sled changes in place.
const DB_FILE: &str = "db";

/// What is known durable: per directory, the names its last `fsync` covered and the
/// files already synced.
#[derive(Default)]
struct Synced {
    listings: BTreeMap<PathBuf, BTreeSet<OsString>>,
    files: BTreeSet<PathBuf>,
}

/// `fsync` of the sled directory's files and of the directories.
pub(crate) struct DirSync {
    dir: PathBuf,
    hook: Option<SyncHook>,
    synced: Mutex<Synced>,
}

impl DirSync {
    pub(crate) fn new(dir: &Path, hook: Option<SyncHook>) -> DirSync {
        DirSync {
            dir: dir.to_path_buf(),
            hook,
            synced: Mutex::new(Synced::default()),
        }
    }

    pub(crate) fn notify(&self, ev: SyncEvent<'_>) {
        if let Some(h) = &self.hook {
            h(ev);
        }
    }

    /// `fsync` of `db`, of the files not synced before, then of the directories whose
    /// names changed (subdirectories first). Files that disappear while this runs (sled
    /// removing an old snapshot or blob) are skipped.
    pub(crate) fn sync(&self) -> Result<()> {
        let mut synced = self.synced.lock().map_err(|_| Error::Poisoned)?;
        let mut subdirs = Vec::new();
        let top = self.sync_files_in(&mut synced, &self.dir, Some(&mut subdirs))?;
        for sub in &subdirs {
            let names = self.sync_files_in(&mut synced, sub, None)?;
            self.sync_dir_if_changed(&mut synced, sub, names)?;
        }
        self.sync_dir_if_changed(&mut synced, &self.dir, top)
    }

    /// Syncs the files of `dir` that need it; returns the names found.
    fn sync_files_in(
        &self,
        synced: &mut Synced,
        dir: &Path,
        mut subdirs: Option<&mut Vec<PathBuf>>,
    ) -> Result<BTreeSet<OsString>> {
        let entries = std::fs::read_dir(dir).map_err(io("list", dir))?;
        let mut names = BTreeSet::new();
        let mut files = Vec::new();
        for entry in entries {
            let entry = entry.map_err(io("list", dir))?;
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_file() => {
                    names.insert(entry.file_name());
                    let in_place = dir == self.dir && entry.file_name() == DB_FILE;
                    if in_place || !synced.files.contains(&path) {
                        files.push(path);
                    }
                }
                Ok(t) if t.is_dir() => {
                    names.insert(entry.file_name());
                    if let Some(s) = subdirs.as_mut() {
                        s.push(path);
                    }
                }
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io("stat", &path)(e)),
            }
        }
        // In name order: the same order on every flush (and in the power-loss test).
        files.sort();
        for path in files {
            match File::open(&path) {
                Ok(f) => {
                    f.sync_all().map_err(io("fsync", &path))?;
                    self.notify(SyncEvent::File(&path));
                    synced.files.insert(path);
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io("open for fsync", &path)(e)),
            }
        }
        // Forget removed files, so that a name sled reuses is synced again.
        synced.files.retain(|p| {
            p.parent() != Some(dir) || p.file_name().is_some_and(|n| names.contains(n))
        });
        Ok(names)
    }

    fn sync_dir_if_changed(
        &self,
        synced: &mut Synced,
        dir: &Path,
        names: BTreeSet<OsString>,
    ) -> Result<()> {
        if synced.listings.get(dir) == Some(&names) {
            return Ok(());
        }
        self.sync_dir(dir)?;
        synced.listings.insert(dir.to_path_buf(), names);
        Ok(())
    }

    /// `fsync` of a directory (its list of names).
    pub(crate) fn sync_dir(&self, dir: &Path) -> Result<()> {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io("fsync the directory", dir))?;
        self.notify(SyncEvent::Dir(dir));
        Ok(())
    }
}
