//! OpenSM's root GUID file (`root_guid_file`, `-a`): the up/down and fat-tree root switches,
//! one node GUID per line (`0x` hex); blank lines and `#` comments are skipped.

use crate::DeployError;
use fabric::Guid;

/// Parses a root GUID file; any malformed line rejects the whole file (with its line).
pub fn parse(text: &str) -> Result<Vec<Guid>, DeployError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let bad = |why: String| DeployError::Roots { line: i + 1, why };
        let mut words = line.split_whitespace();
        let (Some(word), None) = (words.next(), words.next()) else {
            return Err(bad(format!("expected one GUID, found {line:?}")));
        };
        let hex = word
            .strip_prefix("0x")
            .or_else(|| word.strip_prefix("0X"))
            .unwrap_or(word);
        let g = u64::from_str_radix(hex, 16).map_err(|e| bad(format!("{word:?}: {e}")))?;
        if g == 0 {
            return Err(bad("GUID 0 names no switch".into()));
        }
        out.push(Guid(g));
    }
    if out.is_empty() {
        return Err(DeployError::Roots {
            line: 0,
            why: "no GUID in the file".into(),
        });
    }
    Ok(out)
}

/// Reads and parses a root GUID file; the error names the file.
pub fn read(path: &std::path::Path) -> Result<Vec<Guid>, DeployError> {
    let text = std::fs::read_to_string(path).map_err(|e| DeployError::Io {
        path: path.to_path_buf(),
        why: e.to_string(),
    })?;
    parse(&text).map_err(|e| DeployError::Input {
        path: path.to_path_buf(),
        why: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_opensm_root_guid_files() {
        let g = parse("# roots\n0x0002c90200000001\n\n0002c90200000002  # spine 2\n").unwrap();
        assert_eq!(g, vec![Guid(0x0002c90200000001), Guid(0x0002c90200000002)]);
    }

    #[test]
    fn refuses_bad_lines_and_empty_files() {
        let e = parse("0x1\nspine\n").unwrap_err().to_string();
        assert!(e.starts_with("E_ROOTS: line 2:"), "{e}");
        assert!(parse("0x1 0x2\n").is_err());
        assert!(parse("0x0\n").is_err());
        assert!(parse("# nothing\n").is_err());
    }
}
