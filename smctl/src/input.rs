//! Every file smctl reads, read with a size limit: a file larger than its limit is an error
//! naming the limit, and nothing is sent or computed from it.
//!
//! | input | limit |
//! |---|---|
//! | a partitions.conf (check, plan, audit --policy, apply, diff; `-` = stdin) | `partitions::MAX_POLICY_BYTES` (1 MiB, the server's limit too) |
//! | a topology file, an ibroute dump, a P_Key dump, an audit report | [`MAX_FILE_BYTES`] (256 MiB) |
//! | a PEM file (CA, certificate, key) | [`MAX_PEM_BYTES`] (1 MiB) |

use anyhow::{Context, bail};
use std::io::Read;
use std::path::Path;

/// Largest topology file, ibroute or P_Key dump, or audit report smctl reads (256 MiB): the
/// ibnetdiscover output of a 50,000-node fabric is about 40 MB.
pub const MAX_FILE_BYTES: usize = 256 << 20;

/// Largest PEM file (CA, certificate, key) smctl reads (1 MiB; a chain is a few KiB).
pub const MAX_PEM_BYTES: usize = 1 << 20;

/// Reads `path` (`-` = stdin) as UTF-8, refusing more than `limit` bytes (`name` is the
/// limit's constant, for the message).
pub fn read_limited(path: &Path, limit: usize, name: &str) -> anyhow::Result<String> {
    let bytes = read_bytes(path, limit, name)?;
    String::from_utf8(bytes).with_context(|| format!("{}: not UTF-8 text", path.display()))
}

/// Reads `path` (`-` = stdin), refusing more than `limit` bytes.
pub fn read_bytes(path: &Path, limit: usize, name: &str) -> anyhow::Result<Vec<u8>> {
    let mut buf = Vec::new();
    let take = limit as u64 + 1;
    let r = if path == Path::new("-") {
        std::io::stdin().lock().take(take).read_to_end(&mut buf)
    } else {
        std::fs::File::open(path).and_then(|f| f.take(take).read_to_end(&mut buf))
    };
    r.with_context(|| format!("cannot read {}", path.display()))?;
    if buf.len() > limit {
        bail!(
            "{}: larger than {limit} bytes ({name}): refused",
            path.display()
        );
    }
    Ok(buf)
}

/// A partitions.conf text (`-` = stdin), at most `partitions::MAX_POLICY_BYTES`.
pub fn read_policy(path: &str) -> anyhow::Result<String> {
    read_limited(
        Path::new(path),
        partitions::MAX_POLICY_BYTES,
        "MAX_POLICY_BYTES",
    )
}

/// A topology file, dump or report, at most [`MAX_FILE_BYTES`].
pub fn read_file(path: &Path) -> anyhow::Result<String> {
    read_limited(path, MAX_FILE_BYTES, "MAX_FILE_BYTES")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_over_the_limit_are_refused_and_files_at_it_read() {
        let d = std::env::temp_dir().join(format!("smctl-input-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let f = d.join("p.conf");
        std::fs::write(&f, "x".repeat(10)).unwrap();
        assert_eq!(read_limited(&f, 10, "LIMIT").unwrap().len(), 10);
        let e = read_limited(&f, 9, "LIMIT").unwrap_err().to_string();
        assert!(e.contains("larger than 9 bytes (LIMIT)"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
