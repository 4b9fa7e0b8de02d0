//! The durable mark: a 256-byte file next to the sled directory recording what the last
//! flush made durable (the write generation and a summary of the log), so that opening can
//! tell a store that went back (sled cut its log at a damaged record, a file was
//! truncated, the directory was wiped) from one that holds everything it acknowledged.
//!
//! Two 128-byte slots, written alternately (generation parity) with `pwrite` + `fdatasync`:
//! a write torn by a power cut damages only the slot being written, and the other slot
//! still holds the previous flush. Each slot: magic `QSMMARK1`, ten big-endian u64s
//! (generation, commit, term, vote, first index, last index, last term, applied index,
//! snapshot index, recovering flag 0/1), CRC32 of those bytes.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::durable::io;
use crate::error::{Error, Result};

const MAGIC: &[u8; 8] = b"QSMMARK1";
const SLOT: usize = 128;
/// Size of the mark file.
pub const MARK_LEN: usize = 2 * SLOT;
const FIELDS: usize = 10;
const BODY: usize = 8 + 8 * FIELDS;

/// What a flush made durable, as the log looked when the flush began.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Summary {
    /// Commit index: the hard state's, raised to the applied, snapshot and discarded
    /// indexes (all of which cover committed entries only).
    pub commit: u64,
    /// Hard state term.
    pub term: u64,
    /// Hard state vote.
    pub vote: u64,
    /// First index of the log.
    pub first_index: u64,
    /// Last index of the log.
    pub last_index: u64,
    /// Term of the last entry (or of the last discarded entry when the log is empty).
    pub last_term: u64,
    /// Applied index (0: none saved).
    pub applied: u64,
    /// Snapshot index (0: none).
    pub snapshot: u64,
    /// The recovering flag (`RaftLog::recovering`).
    pub recovering: bool,
}

/// One slot: the generation and its summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Mark {
    /// Write generation the flush made durable.
    pub generation: u64,
    /// The log at that flush.
    pub summary: Summary,
}

impl Mark {
    fn encode(&self) -> [u8; SLOT] {
        let s = &self.summary;
        let fields = [
            self.generation,
            s.commit,
            s.term,
            s.vote,
            s.first_index,
            s.last_index,
            s.last_term,
            s.applied,
            s.snapshot,
            u64::from(s.recovering),
        ];
        let mut out = [0u8; SLOT];
        out[..8].copy_from_slice(MAGIC);
        for (i, v) in fields.iter().enumerate() {
            out[8 + 8 * i..16 + 8 * i].copy_from_slice(&v.to_be_bytes());
        }
        let crc = crc32fast::hash(&out[..BODY]);
        out[BODY..BODY + 4].copy_from_slice(&crc.to_be_bytes());
        out
    }

    /// The slot's mark, or `None` when the slot is empty or damaged.
    fn decode(slot: &[u8]) -> Option<Mark> {
        if slot.len() < BODY + 4 || &slot[..8] != MAGIC {
            return None;
        }
        let mut crc = [0u8; 4];
        crc.copy_from_slice(&slot[BODY..BODY + 4]);
        if u32::from_be_bytes(crc) != crc32fast::hash(&slot[..BODY]) {
            return None;
        }
        let mut f = [0u64; FIELDS];
        for (i, v) in f.iter_mut().enumerate() {
            let mut b = [0u8; 8];
            b.copy_from_slice(&slot[8 + 8 * i..16 + 8 * i]);
            *v = u64::from_be_bytes(b);
        }
        if f[9] > 1 {
            return None;
        }
        Some(Mark {
            generation: f[0],
            summary: Summary {
                commit: f[1],
                term: f[2],
                vote: f[3],
                first_index: f[4],
                last_index: f[5],
                last_term: f[6],
                applied: f[7],
                snapshot: f[8],
                recovering: f[9] == 1,
            },
        })
    }
}

/// Where the mark of the sled directory `db_path` lives: next to it, `<name>.mark`, so that
/// wiping the directory leaves the mark behind to say what was lost.
pub fn mark_path(db_path: &Path) -> Result<PathBuf> {
    let name = db_path.file_name().ok_or_else(|| Error::Io {
        op: "place the durable mark next to",
        path: db_path.display().to_string(),
        source: std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "the path has no final component",
        ),
    })?;
    let mut mark = name.to_os_string();
    mark.push(".mark");
    Ok(db_path.with_file_name(mark))
}

fn corrupt(path: &Path, reason: String) -> Error {
    Error::MarkCorrupt {
        path: path.display().to_string(),
        reason,
    }
}

/// Reads the newest valid slot of the mark at `path`; `None` when there is no mark file.
///
/// Errors: [`Error::MarkCorrupt`] when the file is not [`MARK_LEN`] bytes or neither slot
/// is valid; [`Error::Io`] when it cannot be read.
pub fn read(path: &Path) -> Result<Option<Mark>> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io("open the durable mark", path)(e)),
    };
    // Read at most one byte more than a mark: the size limit on this input.
    let mut bytes = Vec::with_capacity(MARK_LEN + 1);
    file.take(MARK_LEN as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(io("read the durable mark", path))?;
    if bytes.len() != MARK_LEN {
        return Err(corrupt(
            path,
            format!("{} bytes, expected {MARK_LEN}", bytes.len()),
        ));
    }
    let (a, b) = bytes.split_at(SLOT);
    match (Mark::decode(a), Mark::decode(b)) {
        (Some(a), Some(b)) => Ok(Some(if b.generation > a.generation { b } else { a })),
        (Some(m), None) | (None, Some(m)) => Ok(Some(m)),
        (None, None) => Err(corrupt(path, "no valid slot".to_string())),
    }
}

/// An open mark file, written by every flush that wrote something.
#[derive(Debug)]
pub struct MarkFile {
    path: PathBuf,
    file: File,
}

impl MarkFile {
    /// Creates the mark at `path` holding `mark`, atomically: written to `<path>.tmp`,
    /// synced, renamed over `path`; the caller syncs the parent directory.
    pub fn create(path: &Path, mark: &Mark) -> Result<MarkFile> {
        let mut tmp = path.as_os_str().to_os_string();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let mut bytes = [0u8; MARK_LEN];
        bytes[..SLOT].copy_from_slice(&mark.encode());
        std::fs::write(&tmp, bytes).map_err(io("write the durable mark", &tmp))?;
        File::open(&tmp)
            .and_then(|f| f.sync_all())
            .map_err(io("sync the durable mark", &tmp))?;
        std::fs::rename(&tmp, path).map_err(io("rename the durable mark to", path))?;
        Self::open(path)
    }

    /// Opens the existing mark at `path` for writing.
    pub fn open(path: &Path) -> Result<MarkFile> {
        let file = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(io("open the durable mark", path))?;
        Ok(MarkFile {
            path: path.to_path_buf(),
            file,
        })
    }

    /// The mark's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `mark` into the slot of its generation's parity and makes it durable. The
    /// other slot keeps the previous flush if this write is torn.
    pub fn write(&self, mark: &Mark) -> Result<()> {
        let offset = (mark.generation % 2) * SLOT as u64;
        self.file
            .write_all_at(&mark.encode(), offset)
            .map_err(io("write the durable mark", &self.path))?;
        self.file
            .sync_data()
            .map_err(io("sync the durable mark", &self.path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mark(generation: u64) -> Mark {
        Mark {
            generation,
            summary: Summary {
                commit: 10 + generation,
                term: 2,
                vote: 1,
                first_index: 1,
                last_index: 20 + generation,
                last_term: 2,
                applied: 5,
                snapshot: 4,
                recovering: generation % 2 == 1,
            },
        }
    }

    #[test]
    fn the_newest_valid_slot_wins_and_a_torn_slot_falls_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.mark");
        assert_eq!(read(&path).unwrap(), None);
        let f = MarkFile::create(&path, &mark(0)).unwrap();
        assert_eq!(read(&path).unwrap(), Some(mark(0)));
        f.write(&mark(1)).unwrap();
        f.write(&mark(2)).unwrap();
        assert_eq!(read(&path).unwrap(), Some(mark(2)));
        // Tear the slot of generation 2 (slot 0): generation 1 in slot 1 is what is left.
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[40] ^= 0x10;
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(read(&path).unwrap(), Some(mark(1)));
        // Both slots damaged, or a wrong size: a typed error, never a default.
        bytes[SLOT + 40] ^= 0x10;
        std::fs::write(&path, &bytes).unwrap();
        let err = read(&path).unwrap_err();
        assert!(err.to_string().starts_with("STORAGE-E030"), "{err}");
        std::fs::write(&path, [0u8; 3]).unwrap();
        assert!(matches!(read(&path), Err(Error::MarkCorrupt { .. })));
        std::fs::write(&path, vec![0u8; 10_000]).unwrap();
        assert!(matches!(read(&path), Err(Error::MarkCorrupt { .. })));
    }

    #[test]
    fn the_mark_sits_next_to_the_directory() {
        assert_eq!(
            mark_path(Path::new("/var/lib/sm/raft")).unwrap(),
            PathBuf::from("/var/lib/sm/raft.mark")
        );
        assert_eq!(
            mark_path(Path::new("raft/")).unwrap(),
            PathBuf::from("raft.mark")
        );
        assert!(mark_path(Path::new("/")).is_err());
    }
}
