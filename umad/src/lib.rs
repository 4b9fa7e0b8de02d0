//! `umad` — the Linux kernel user-MAD transport of Quorum SM: opens `/dev/infiniband/umadN`,
//! registers agents with `IB_USER_MAD_REGISTER_AGENT`, writes and reads MADs behind the
//! 56-byte user-MAD header (`ib_user_mad_hdr_old`; `IB_USER_MAD_ENABLE_PKEY` is never
//! called), polls before reading, and finds the local port's GUID and LID (directed-route
//! Get with hop count 0, or sysfs). The same code drives ibsim through
//! `LD_PRELOAD=libumad2sim.so`; [`testing`] starts ibsim and runs clients and
//! infiniband-diags tools against it.
//!
//! What this crate must never do: call `std::fs` on device or sysfs paths (umad2sim only
//! wraps the libc symbol `open`, `std` calls `open64`); use more than one umad fd per
//! process (umad2sim's `poll` only watches the first); use epoll/select/fcntl on the fd
//! (umad2sim's fd is fake); rely on the header timeout or retries (umad2sim ignores them);
//! rely on more than the low 32 bits of a TID (the kernel puts its agent's id in the high
//! 32 bits, umad2sim in bits 32-47). It does no retries of its own: the caller (sm-core's
//! sweeper) owns timeouts and retries and matches responses by the low 32 TID bits.
//!
//! Targets little-endian Linux hosts (the registration method mask is a bitmap of native
//! longs, encoded here for little-endian).

#[cfg(not(all(target_os = "linux", target_endian = "little")))]
compile_error!("the umad crate supports little-endian Linux only");

pub mod abi;
mod error;
mod local;
mod port;
mod reader;
mod received;
pub mod testing;

pub use abi::{MethodMask, UmadHeader};
pub use error::{Result, UmadError};
pub use local::{LocalPort, SysfsPort, parse_guid_groups, read_text, sysfs_port, umad_index};
pub use port::{Dest, GSI_QKEY, PortCounters, UmadPort};
pub use reader::{READER_POLL, Reader, ReaderThread};
pub use received::{RawMad, Received, ReceivedMad, RecvStatus};
