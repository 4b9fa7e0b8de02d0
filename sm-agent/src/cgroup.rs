//! The tenant cgroup's RDMA files: parse `rdma.max` and `rdma.current`, decide the lines to
//! write, and write them once, completely, or not at all.
//!
//! Kernel behaviour this follows (Documentation/admin-guide/cgroup-v1/rdma.rst, cgroup-v2.rst
//! "RDMA"): a write to `rdma.max` names one device and one or both keys
//! (`mlx4_0 hca_handle=2 hca_object=2000`); a read shows one line per device with both keys,
//! unset ones as `max`; setting both keys to `max` removes the device's limit; `rdma.current`
//! shows usage in the same shape with numbers.

use crate::{AgentError, Roots};
use partitions::tenants::{RdmaLimit, check_device_name};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Usage of one device from `rdma.current`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Usage {
    /// Device name.
    pub device: String,
    /// HCA handles in use.
    pub hca_handle: u64,
    /// HCA objects in use.
    pub hca_object: u64,
}

/// The tenant cgroup directory: `<cgroup root>/<path>` where `{tenant}` in `path` is replaced
/// by the tenant name.
pub fn cgroup_dir(roots: &Roots, path_template: &str, tenant: &str) -> PathBuf {
    roots.cgroup.join(
        path_template
            .replace("{tenant}", tenant)
            .trim_start_matches('/'),
    )
}

/// Where a device is in sysfs.
pub fn device_dir(roots: &Roots, device: &str) -> PathBuf {
    roots.sysfs.join("class/infiniband").join(device)
}

fn read(path: &Path) -> Result<String, AgentError> {
    crate::read_kernel_file(path)
}

/// Parses `rdma.max` text (one line per device; blank lines ignored).
pub fn parse_rdma_max(path: &Path, text: &str) -> Result<BTreeMap<String, RdmaLimit>, AgentError> {
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let l = RdmaLimit::parse_line(line).map_err(|e| AgentError::Malformed {
            path: path.to_path_buf(),
            line: i + 1,
            why: e.why,
        })?;
        if out.insert(l.device.clone(), l).is_some() {
            return Err(AgentError::Malformed {
                path: path.to_path_buf(),
                line: i + 1,
                why: "device listed twice".into(),
            });
        }
    }
    Ok(out)
}

/// Parses `rdma.current` text: `DEVICE hca_handle=N hca_object=N` per line, both keys, numbers.
pub fn parse_rdma_current(path: &Path, text: &str) -> Result<Vec<Usage>, AgentError> {
    let mut out: Vec<Usage> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |why: String| AgentError::Malformed {
            path: path.to_path_buf(),
            line: i + 1,
            why,
        };
        let mut words = line.split_whitespace();
        let device = words.next().unwrap_or_default();
        check_device_name(device).map_err(bad)?;
        let (mut h, mut o) = (None, None);
        for w in words {
            let (k, v) = w
                .split_once('=')
                .ok_or_else(|| bad(format!("'{w}' is not key=value")))?;
            let n: u64 = v
                .parse()
                .map_err(|_| bad(format!("{k}={v}: not a number")))?;
            let slot = match k {
                "hca_handle" => &mut h,
                "hca_object" => &mut o,
                _ => return Err(bad(format!("unknown resource '{k}'"))),
            };
            if slot.replace(n).is_some() {
                return Err(bad(format!("{k} given twice")));
            }
        }
        let (Some(hca_handle), Some(hca_object)) = (h, o) else {
            return Err(bad("hca_handle and hca_object are both required".into()));
        };
        if out.iter().any(|u| u.device == device) {
            return Err(bad("device listed twice".into()));
        }
        out.push(Usage {
            device: device.to_string(),
            hca_handle,
            hca_object,
        });
    }
    Ok(out)
}

/// The lines to write so that `rdma.max` holds exactly `desired` (devices not in `desired`
/// and limited now are cleared with `max`, when `present` says the device still exists).
/// Empty when the file already says it. Every desired device gets its full line (both keys).
pub fn plan_lines(
    current: &BTreeMap<String, RdmaLimit>,
    desired: &[RdmaLimit],
    present: impl Fn(&str) -> bool,
) -> Vec<String> {
    let same = |l: &RdmaLimit| {
        current
            .get(&l.device)
            .is_some_and(|c| c.hca_handle == l.hca_handle && c.hca_object == l.hca_object)
            || (l.is_unlimited() && !current.contains_key(&l.device))
    };
    let stale: Vec<&RdmaLimit> = current
        .values()
        .filter(|c| !c.is_unlimited())
        .filter(|c| !desired.iter().any(|d| d.device == c.device))
        .filter(|c| present(&c.device))
        .collect();
    if desired.iter().all(same) && stale.is_empty() {
        return Vec::new();
    }
    let mut lines: Vec<String> = desired.iter().map(RdmaLimit::to_line).collect();
    lines.extend(stale.iter().map(|c| RdmaLimit::clear_line(&c.device)));
    lines
}

/// What [`apply_limits`] did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Applied {
    /// The `rdma.max` file.
    pub path: PathBuf,
    /// Lines written, in order (empty: the file already said it).
    pub written: Vec<String>,
}

/// Makes the cgroup at `dir` hold exactly `desired` in `rdma.max`. Checks first that every
/// desired device exists under sysfs and that `rdma.max` exists and parses; writes nothing
/// when a check fails. Then opens the file once and writes each line with one `write(2)`.
pub fn apply_limits(
    roots: &Roots,
    dir: &Path,
    desired: &[RdmaLimit],
) -> Result<Applied, AgentError> {
    for l in desired {
        let d = device_dir(roots, &l.device);
        if !d.is_dir() {
            return Err(AgentError::MissingDevice {
                device: l.device.clone(),
                path: d,
            });
        }
    }
    let path = dir.join("rdma.max");
    let current = parse_rdma_max(&path, &read(&path)?)?;
    let lines = plan_lines(&current, desired, |d| device_dir(roots, d).is_dir());
    if lines.is_empty() {
        return Ok(Applied {
            path,
            written: Vec::new(),
        });
    }
    // No O_CREAT: a cgroup without the rdma controller has no rdma.max, and creating a plain
    // file there would hide that.
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&path)
        .map_err(|e| AgentError::WriteFailed {
            path: path.clone(),
            written: 0,
            total: lines.len(),
            why: e.to_string(),
        })?;
    for (i, line) in lines.iter().enumerate() {
        let buf = format!("{line}\n");
        let fail = |why: String| AgentError::WriteFailed {
            path: path.clone(),
            written: i,
            total: lines.len(),
            why,
        };
        match f.write(buf.as_bytes()) {
            Ok(n) if n == buf.len() => {}
            Ok(n) => return Err(fail(format!("short write ({n} of {} bytes)", buf.len()))),
            Err(e) => return Err(fail(e.to_string())),
        }
    }
    Ok(Applied {
        path,
        written: lines,
    })
}

/// Reads and parses the cgroup's `rdma.current`.
pub fn read_usage(dir: &Path) -> Result<Vec<Usage>, AgentError> {
    let path = dir.join("rdma.current");
    parse_rdma_current(&path, &read(&path)?)
}
