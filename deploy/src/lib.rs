//! `deploy` — what running Quorum SM as a system daemon needs besides the daemon itself:
//!
//! - [`opensm`]: OpenSM's `opensm.conf` read and every key classified (mapped to an
//!   `sm-node` key, already what Quorum SM does, or not supported and why), pure;
//! - [`import`]: `sm-node import-opensm`, the files side: reads opensm.conf, partitions.conf,
//!   guid2lid and the root GUID file, checks them all, then writes the daemon's TOML
//!   configuration and copies the files (nothing is written when any input is bad);
//! - [`cli`]: the daemon's flags (every config key, cluster mode, admin security) overlaid
//!   on the configuration file into a checked `NodeConfig`, pure;
//! - [`roots`]: OpenSM's root GUID file (`root_guid_file`), read by `sm-node` too;
//! - [`logging`]: the log set-up of the daemon binaries (`--log-format text|json`, colour
//!   only on a terminal and without `NO_COLOR`).

pub mod cli;
pub mod config;
pub mod import;
pub mod logging;
pub mod opensm;
pub mod roots;
pub mod summary;

use std::path::PathBuf;

/// Errors of the import and of the files it reads; every message starts with its code.
#[derive(Debug, thiserror::Error)]
pub enum DeployError {
    /// A file cannot be read or written.
    #[error("E_IMPORT_IO: {path}: {why}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        why: String,
    },
    /// A line of opensm.conf is malformed, or a mapped key has a value Quorum SM refuses.
    #[error("E_IMPORT_CONF: {path}:{line}: {why}")]
    Conf {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        why: String,
    },
    /// An input file (partitions, guid2lid, root GUIDs) does not parse; nothing was written.
    #[error("E_IMPORT_INPUT: {path}: {why}")]
    Input {
        /// The file.
        path: PathBuf,
        /// Every error, with its line.
        why: String,
    },
    /// A file the import would write exists already (and `--force` was not given).
    #[error("E_IMPORT_EXISTS: {0} exists; nothing written (--force replaces it)")]
    Exists(PathBuf),
    /// The root GUID file does not parse.
    #[error("E_ROOTS: line {line}: {why}")]
    Roots {
        /// 1-based line.
        line: usize,
        /// What is wrong.
        why: String,
    },
    /// `--log-format` is neither `text` nor `json`.
    #[error("E_LOG_FORMAT: {0:?}: expected text or json")]
    LogFormat(String),
}
