//! Persistence of the guid -> LID map in OpenSM's guid2lid format: loaded at start, written
//! atomically (temporary file, fsync, rename, fsync of the directory) whenever it changed.

use crate::error::NodeError;
use sm_core::Guid2Lid;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The guid2lid file of this replica.
#[derive(Debug)]
pub struct Guid2LidStore {
    path: PathBuf,
    /// Text last written or read (a save with the same text is skipped).
    last: String,
}

impl Guid2LidStore {
    /// Opens the store at `path`, returning the map it holds (empty when the file does not
    /// exist yet). A malformed file is an error: the daemon refuses to start rather than
    /// renumber the fabric.
    pub fn open(path: &Path) -> Result<(Guid2LidStore, Guid2Lid), NodeError> {
        let err = |why: String| NodeError::Guid2Lid {
            path: path.to_path_buf(),
            why,
        };
        let text = match fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(err(e.to_string())),
        };
        let map = Guid2Lid::parse(&text).map_err(|e| err(e.to_string()))?;
        Ok((
            Guid2LidStore {
                path: path.to_path_buf(),
                last: map.export(),
            },
            map,
        ))
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `map` when it differs from what is on disk; returns whether it wrote.
    pub fn save(&mut self, map: &Guid2Lid) -> Result<bool, NodeError> {
        let text = map.export();
        if text == self.last {
            return Ok(false);
        }
        write_atomic(&self.path, text.as_bytes()).map_err(|e| NodeError::Guid2Lid {
            path: self.path.clone(),
            why: e.to_string(),
        })?;
        self.last = text;
        Ok(true)
    }
}

/// Writes `bytes` to `path` so that a crash leaves either the old or the new file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    let tmp = dir.join(format!(".{name}.tmp.{}", std::process::id()));
    {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    fs::rename(&tmp, path)?;
    File::open(&dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabric::{Guid, Lid};

    #[test]
    fn save_then_open_round_trips_and_skips_identical_saves() {
        let dir = std::env::temp_dir().join(format!("smnode-store-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let path = dir.join("guid2lid");
        let (mut st, map) = Guid2LidStore::open(&path).unwrap();
        assert!(map.is_empty());
        let mut m = Guid2Lid::new();
        m.set(Guid(0x10), Lid(5), Lid(5));
        assert!(st.save(&m).unwrap());
        assert!(!st.save(&m).unwrap());
        let (_, back) = Guid2LidStore::open(&path).unwrap();
        assert_eq!(back, m);
        fs::write(&path, "garbage\n").unwrap();
        let e = Guid2LidStore::open(&path).unwrap_err().to_string();
        assert!(e.starts_with("E_NODE_GUID2LID"), "{e}");
        fs::remove_dir_all(&dir).unwrap();
    }
}
