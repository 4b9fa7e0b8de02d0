//! The host's RDMA devices and their P_Key view as sysfs shows them:
//! `class/infiniband/<dev>/ports/<n>/pkeys/<index>` (one `0xffff` per file; empty entries
//! read `0x0000`), `class/infiniband/<dev>/ports/<n>/gids/0` (the port GID: subnet prefix and
//! port GUID) and `link_layer` (`InfiniBand` or `Ethernet`).

use crate::{AgentError, Roots};
use fabric::{Guid, PKey};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// One IB port of the host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HostPort {
    /// Device name (`mlx5_0`).
    pub device: String,
    /// Port number.
    pub port: u8,
    /// Port GUID (low 64 bits of GID 0).
    pub guid: Guid,
    /// Its sysfs directory.
    pub dir: PathBuf,
}

fn read(path: &Path) -> Result<String, AgentError> {
    crate::read_kernel_file(path)
}

fn list(dir: &Path) -> Result<Vec<String>, AgentError> {
    let rd = std::fs::read_dir(dir).map_err(|e| AgentError::Unreadable {
        path: dir.to_path_buf(),
        why: e.to_string(),
    })?;
    let mut v: Vec<String> = rd
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    v.sort();
    Ok(v)
}

/// The port GUID in a GID as sysfs prints it (`fe80:0000:0000:0000:0002:c903:0000:1235`).
pub fn guid_of_gid(path: &Path, text: &str) -> Result<Guid, AgentError> {
    let bad = |why: &str| AgentError::Malformed {
        path: path.to_path_buf(),
        line: 1,
        why: why.to_string(),
    };
    let t = text.trim();
    let groups: Vec<&str> = t.split(':').collect();
    if groups.len() != 8 || groups.iter().any(|g| g.is_empty() || g.len() > 4) {
        return Err(bad("a GID is 8 groups of hex digits separated by ':'"));
    }
    let mut v: u64 = 0;
    for g in &groups[4..] {
        let n = u16::from_str_radix(g, 16).map_err(|_| bad("not hexadecimal"))?;
        v = (v << 16) | u64::from(n);
    }
    Ok(Guid(v))
}

/// Every InfiniBand port of the host, by device then port number.
pub fn host_ports(roots: &Roots) -> Result<Vec<HostPort>, AgentError> {
    let base = roots.sysfs.join("class/infiniband");
    let mut out = Vec::new();
    for dev in list(&base)? {
        let ports_dir = base.join(&dev).join("ports");
        for p in list(&ports_dir)? {
            let Ok(port) = p.parse::<u8>() else { continue };
            let dir = ports_dir.join(&p);
            let ll = dir.join("link_layer");
            if ll.exists() && read(&ll)?.trim() != "InfiniBand" {
                continue;
            }
            let gid = dir.join("gids/0");
            let guid = guid_of_gid(&gid, &read(&gid)?)?;
            out.push(HostPort {
                device: dev.clone(),
                port,
                guid,
                dir,
            });
        }
    }
    Ok(out)
}

/// The port's P_Key table as the host sees it, by index (every entry, empty ones included).
pub fn pkey_view(port_dir: &Path) -> Result<Vec<(usize, PKey)>, AgentError> {
    let dir = port_dir.join("pkeys");
    let mut out = Vec::new();
    for name in list(&dir)? {
        let path = dir.join(&name);
        let Ok(index) = name.parse::<usize>() else {
            return Err(AgentError::Malformed {
                path,
                line: 1,
                why: "a pkeys entry name is not an index".into(),
            });
        };
        let text = read(&path)?;
        let t = text.trim();
        let v = t
            .strip_prefix("0x")
            .and_then(|h| u16::from_str_radix(h, 16).ok())
            .ok_or_else(|| AgentError::Malformed {
                path: path.clone(),
                line: 1,
                why: format!("'{t}' is not a 16-bit hex P_Key (0x....)"),
            })?;
        out.push((index, PKey(v)));
    }
    out.sort_by_key(|(i, _)| *i);
    Ok(out)
}
