//! Disk faults of a process-level run: each replica's data directory on a tmpfs of its own
//! (so one can fill up), filled to the last byte, a byte flipped in the middle of the
//! largest file of a stopped replica, a data directory emptied (a lost disk).
//!
//! An fsync that fails cannot be injected here without a kernel-level fault injector (a
//! dm-flakey device or an LD_PRELOAD shim around fsync, neither of which this harness
//! has); the full disk makes sled's writes and flushes fail instead.

use crate::ChaosError;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Name of the file that fills a disk.
const FILLER: &str = "chaos-filler";

/// tmpfs mounts, unmounted when dropped.
pub struct Tmpfs {
    dirs: Vec<PathBuf>,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size_mb` MiB on each of `dirs` (created when missing). Needs root.
    pub fn mount(dirs: &[PathBuf], size_mb: u64) -> Result<Tmpfs, ChaosError> {
        let mut t = Tmpfs { dirs: Vec::new() };
        for d in dirs {
            std::fs::create_dir_all(d)?;
            let out = Command::new("mount")
                .args(["-t", "tmpfs", "-o", &format!("size={size_mb}m"), "tmpfs"])
                .arg(d)
                .output()
                .map_err(|e| ChaosError::Process(format!("mount: {e}")))?;
            if !out.status.success() {
                return Err(ChaosError::Process(format!(
                    "mount tmpfs on {}: {} (disk faults need root)",
                    d.display(),
                    String::from_utf8_lossy(&out.stderr).trim()
                )));
            }
            t.dirs.push(d.clone());
        }
        Ok(t)
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        for d in &self.dirs {
            let _ = Command::new("umount").arg("-l").arg(d).status();
        }
    }
}

/// Fills the file system of `dir` to the last byte; returns the bytes written.
pub fn fill(dir: &Path) -> std::io::Result<u64> {
    let mut f = std::fs::File::create(dir.join(FILLER))?;
    let block = vec![0u8; 1 << 16];
    let mut n = 0u64;
    loop {
        match f.write(&block) {
            Ok(0) => break,
            Ok(k) => n += k as u64,
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
            Err(e) => return Err(e),
        }
    }
    let _ = f.sync_all();
    Ok(n)
}

/// Frees what [`fill`] took.
pub fn unfill(dir: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(dir.join(FILLER)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Flips the bits of one byte in the middle of the largest file under `dir`; returns the
/// file and the offset.
pub fn flip_byte(dir: &Path, pick: u64) -> std::io::Result<(PathBuf, u64)> {
    let mut files = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d)? {
            let e = e?;
            let m = e.metadata()?;
            if m.is_dir() {
                todo.push(e.path());
            } else if m.len() > 0 && e.file_name() != FILLER {
                files.push((m.len(), e.path()));
            }
        }
    }
    files.sort();
    let Some((len, path)) = files.pop() else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("no file under {}", dir.display()),
        ));
    };
    // Somewhere in the middle half of the file.
    let off = len / 4 + pick % (len / 2).max(1);
    let mut bytes = std::fs::read(&path)?;
    if let Some(b) = bytes.get_mut(off as usize) {
        *b ^= 0xFF;
    }
    std::fs::write(&path, &bytes)?;
    Ok((path, off))
}

/// Empties `dir` (a lost disk), keeping the directory (it may be a mount point).
pub fn wipe(dir: &Path) -> std::io::Result<()> {
    match std::fs::read_dir(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
        Ok(entries) => {
            for e in entries {
                let p = e?.path();
                if p.is_dir() {
                    std::fs::remove_dir_all(&p)?;
                } else {
                    std::fs::remove_file(&p)?;
                }
            }
        }
    }
    Ok(())
}
