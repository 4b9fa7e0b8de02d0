//! The crate's error type. Messages start with a stable code (`UMAD-Ennn`).

use std::io;
use thiserror::Error;

/// Everything that can go wrong talking to a umad device.
#[derive(Debug, Error)]
pub enum UmadError {
    /// The device path could not be opened.
    #[error("UMAD-E001 cannot open {path}: {source}")]
    Open {
        /// The device path.
        path: String,
        /// The OS error.
        source: io::Error,
    },
    /// The device path contains a NUL byte.
    #[error("UMAD-E002 device path {0:?} contains a NUL byte")]
    BadPath(String),
    /// `IB_USER_MAD_REGISTER_AGENT` failed.
    #[error("UMAD-E003 registering an agent for class {class:#04x} on QP{qpn} failed: {source}")]
    Register {
        /// Management class.
        class: u8,
        /// QP number.
        qpn: u8,
        /// The OS error.
        source: io::Error,
    },
    /// A MAD of a class no agent was registered for (umad2sim crashes on those; the kernel
    /// rejects them).
    #[error("UMAD-E004 no agent registered for class {0:#04x}; call register() first")]
    NotRegistered(u8),
    /// A write failed or was short.
    #[error("UMAD-E005 write to the umad device failed: {0}")]
    Write(io::Error),
    /// A read or poll failed.
    #[error("UMAD-E006 read from the umad device failed: {0}")]
    Read(io::Error),
    /// Destination and SMP form disagree (a directed-route SMP with a permissive DrSLID
    /// goes to LID 0xFFFF; a LID-routed SMP needs a real LID).
    #[error("UMAD-E007 bad destination for this SMP: {0}")]
    BadDest(&'static str),
    /// A request got no answer in time.
    #[error("UMAD-E008 no response to TID {tid:#010x} within {timeout_ms} ms")]
    Timeout {
        /// Low 32 bits of the TID.
        tid: u32,
        /// The timeout.
        timeout_ms: u64,
    },
    /// The answer to a request could not be used (wrong class, bad status, undecodable).
    #[error("UMAD-E009 unusable response: {0}")]
    BadResponse(String),
    /// Building or decoding a MAD failed.
    #[error("UMAD-E010 {0}")]
    Mad(#[from] mad::MadError),
    /// A sysfs file was missing or unreadable.
    #[error("UMAD-E011 sysfs {path}: {reason}")]
    Sysfs {
        /// The file.
        path: String,
        /// What went wrong.
        reason: String,
    },
}

/// Result alias.
pub type Result<T, E = UmadError> = std::result::Result<T, E>;
