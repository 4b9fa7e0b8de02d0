//! `sm-agent` — the Quorum SM host agent (issue 12). It runs on each host, learns the host's
//! tenant assignment from the cluster's admin API (`GetTenantAssignment` for the host's own
//! port GUIDs, polled), and
//!
//! * writes the tenant cgroup's `rdma.max` in the kernel's exact format (one line per device,
//!   `mlx4_0 hca_handle=2 hca_object=2000`, `max` for no limit, both keys `max` to remove a
//!   device's limit) — see [`cgroup`];
//! * reads and parses `rdma.current` and reports usage against the limits;
//! * reads the host's own P_Key view (`/sys/class/infiniband/<dev>/ports/<n>/pkeys/*`) and
//!   reports drift from the intended keys — see [`sysfs`] and [`drift`].
//!
//! Roots of sysfs and of the cgroup tree are configurable ([`Roots`]), so tests use temporary
//! directories laid out like the kernel's. Before writing anything the agent checks that every
//! device it would limit exists and that `rdma.max` exists and parses; it then opens the file
//! once and writes every line (one `write(2)` per device line, as the kernel parses one device
//! per write). A missing device or a malformed file is a clear error ([`AgentError`], codes
//! `AGENT-Ennn`) and nothing is written. Every kernel file is read with a size limit
//! ([`MAX_KERNEL_FILE`], AGENT-E007 beyond it).
//!
//! Reports are log lines with stable codes (`AGENT-I…`, `AGENT-W…`, `AGENT-E…`, see
//! README.md) and, with `--json`, one JSON [`reconcile::Report`] per cycle on stdout.
//!
//! This crate never writes anywhere but the tenant cgroup's `rdma.max`, never creates
//! cgroups, never touches the fabric (only the SM programs P_Key tables) and never panics on
//! malformed files.

pub mod cgroup;
pub mod client;
pub mod drift;
pub mod reconcile;
pub mod sysfs;

use std::io::Read as _;
use std::path::{Path, PathBuf};

/// Largest kernel file the agent reads (64 KiB): `rdma.max` and `rdma.current` hold one
/// short line per RDMA device, a sysfs attribute is at most one page (4 KiB). A larger file
/// (a wrong path, a file that never ends) is AGENT-E007 and nothing is written.
pub const MAX_KERNEL_FILE: usize = 64 * 1024;

/// Reads the text of a kernel file, at most [`MAX_KERNEL_FILE`] bytes: only that much plus
/// one byte is ever read, so an endless file costs no more.
pub fn read_kernel_file(path: &Path) -> Result<String, AgentError> {
    let unreadable = |why: String| AgentError::Unreadable {
        path: path.to_path_buf(),
        why,
    };
    let f = std::fs::File::open(path).map_err(|e| unreadable(e.to_string()))?;
    let mut buf = Vec::new();
    f.take(MAX_KERNEL_FILE as u64 + 1)
        .read_to_end(&mut buf)
        .map_err(|e| unreadable(e.to_string()))?;
    if buf.len() > MAX_KERNEL_FILE {
        return Err(AgentError::TooLarge {
            path: path.to_path_buf(),
            limit: MAX_KERNEL_FILE,
        });
    }
    String::from_utf8(buf).map_err(|_| unreadable("not UTF-8 text".into()))
}

/// Where the kernel's trees are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Roots {
    /// sysfs root (`/sys`): devices are under `class/infiniband`.
    pub sysfs: PathBuf,
    /// cgroup v2 root (`/sys/fs/cgroup`).
    pub cgroup: PathBuf,
}

impl Default for Roots {
    fn default() -> Roots {
        Roots {
            sysfs: PathBuf::from("/sys"),
            cgroup: PathBuf::from("/sys/fs/cgroup"),
        }
    }
}

/// What the agent refuses to go on with.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The admin API could not be reached or refused the call.
    #[error("AGENT-E001 admin API: {0}")]
    Api(String),
    /// A device to limit is not on this host.
    #[error("AGENT-E002 RDMA device '{device}' not found at {path}: nothing written")]
    MissingDevice {
        /// Device name.
        device: String,
        /// Where it was looked for.
        path: PathBuf,
    },
    /// A kernel file does not parse.
    #[error("AGENT-E003 malformed {path} line {line}: {why}: nothing written")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// Line number from 1.
        line: usize,
        /// What is wrong.
        why: String,
    },
    /// A kernel file or directory is missing or unreadable.
    #[error("AGENT-E004 cannot read {path}: {why}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The IO error.
        why: String,
    },
    /// Writing `rdma.max` failed.
    #[error("AGENT-E005 writing {path} failed after {written} of {total} line(s): {why}")]
    WriteFailed {
        /// The file.
        path: PathBuf,
        /// Lines the kernel accepted before the failure.
        written: usize,
        /// Lines to write.
        total: usize,
        /// The IO error.
        why: String,
    },
    /// The host's ports belong to several tenants, or the assignment is unusable.
    #[error("AGENT-E006 assignment: {0}")]
    Assignment(String),
    /// A kernel file larger than the agent reads.
    #[error(
        "AGENT-E007 {path} is larger than {limit} bytes (MAX_KERNEL_FILE): not read, nothing written"
    )]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The limit.
        limit: usize,
    },
}

impl AgentError {
    /// The stable code.
    pub fn code(&self) -> &'static str {
        match self {
            AgentError::Api(_) => "AGENT-E001",
            AgentError::MissingDevice { .. } => "AGENT-E002",
            AgentError::Malformed { .. } => "AGENT-E003",
            AgentError::Unreadable { .. } => "AGENT-E004",
            AgentError::WriteFailed { .. } => "AGENT-E005",
            AgentError::Assignment(_) => "AGENT-E006",
            AgentError::TooLarge { .. } => "AGENT-E007",
        }
    }
}
