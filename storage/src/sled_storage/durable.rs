//! Making a flush durable against power loss: sled 0.34's `flush` writes its log with
//! `pwrite` and `sync_file_range`, which neither flushes the disk's write cache nor the
//! file's metadata, and sled never syncs the blob files it writes for large values nor the
//! directory entries of the files it creates. After sled's flush, [`DirSync::sync`] calls
//! `fsync` (`File::sync_all`) on every file of the sled directory and of its `blobs`
//! subdirectory, then on both directories.
//!
//! [`SyncHook`] is called after each of those `fsync`s (and the mark's): the power-loss
//! test keeps a copy of each file as it was when synced and restores exactly those copies
//! to simulate a power cut.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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

/// `fsync` of the sled directory's files and of the directories.
pub(crate) struct DirSync {
    dir: PathBuf,
    hook: Option<SyncHook>,
}

impl DirSync {
    pub(crate) fn new(dir: &Path, hook: Option<SyncHook>) -> DirSync {
        DirSync {
            dir: dir.to_path_buf(),
            hook,
        }
    }

    pub(crate) fn notify(&self, ev: SyncEvent<'_>) {
        if let Some(h) = &self.hook {
            h(ev);
        }
    }

    /// `fsync` of every regular file in the directory and in its subdirectories (sled's
    /// `blobs`), then of the subdirectories and the directory. Files that disappear while
    /// this runs (sled removing an old snapshot or blob) are skipped.
    pub(crate) fn sync(&self) -> Result<()> {
        let mut subdirs = Vec::new();
        self.sync_files_in(&self.dir, Some(&mut subdirs))?;
        for sub in &subdirs {
            self.sync_files_in(sub, None)?;
            self.sync_dir(sub)?;
        }
        self.sync_dir(&self.dir)
    }

    fn sync_files_in(&self, dir: &Path, mut subdirs: Option<&mut Vec<PathBuf>>) -> Result<()> {
        let entries = std::fs::read_dir(dir).map_err(io("list", dir))?;
        let mut files = Vec::new();
        for entry in entries {
            let entry = entry.map_err(io("list", dir))?;
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_file() => files.push(path),
                Ok(t) if t.is_dir() => {
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
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io("open for fsync", &path)(e)),
            }
        }
        Ok(())
    }

    pub(crate) fn sync_dir(&self, dir: &Path) -> Result<()> {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io("fsync the directory", dir))?;
        self.notify(SyncEvent::Dir(dir));
        Ok(())
    }
}
