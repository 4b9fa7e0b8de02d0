//! [`UmadPort`]: one open umad device, its agents, send and receive.

use crate::abi::{
    IB_USER_MAD_REGISTER_AGENT, MAD_LEN, MethodMask, REG_REQ_LEN, RegReq, UMAD_HDR_LEN, UMAD_LEN,
    UmadHeader,
};
use crate::received::{RawMad, Received, ReceivedMad, RecvStatus};
use crate::{Result, UmadError};
use fabric::Lid;
use mad::{MgmtClass, Smp};
use std::collections::VecDeque;
use std::ffi::CString;
use std::io;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Q_Key of QP1 (GSI), IBA 13.5.1.
pub const GSI_QKEY: u32 = 0x8001_0000;

/// Where a MAD goes: the fields of the user-MAD header that address it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Dest {
    /// Destination LID (0xFFFF for a directed-route SMP).
    pub lid: Lid,
    /// Destination QP: 0 for SMPs, 1 for GSI classes such as SA.
    pub qpn: u32,
    /// Q_Key (0 on QP0, [`GSI_QKEY`] on QP1).
    pub qkey: u32,
    /// Service level.
    pub sl: u8,
}

impl Dest {
    /// A directed-route SMP: LID 0xFFFF (permissive), QP0.
    pub fn directed() -> Dest {
        Dest {
            lid: Lid::PERMISSIVE,
            qpn: 0,
            qkey: 0,
            sl: 0,
        }
    }

    /// A LID-routed SMP to `lid`, QP0.
    pub fn smp_to(lid: Lid) -> Dest {
        Dest {
            lid,
            qpn: 0,
            qkey: 0,
            sl: 0,
        }
    }

    /// A GSI MAD (e.g. SA) to `lid`, QP1 with the well-known Q_Key.
    pub fn gsi_to(lid: Lid) -> Dest {
        Dest {
            lid,
            qpn: 1,
            qkey: GSI_QKEY,
            sl: 0,
        }
    }

    /// The destination an SMP is normally sent to: [`Dest::directed`] for class 0x81,
    /// [`Dest::smp_to`]`(lid)` for class 0x01.
    pub fn for_smp(smp: &Smp, lid: Lid) -> Dest {
        if smp.is_directed() {
            Dest::directed()
        } else {
            Dest::smp_to(lid)
        }
    }
}

/// Counters of what went through the port (for logs and benches).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct PortCounters {
    /// MADs written.
    pub sent: u64,
    /// MADs read (including malformed ones).
    pub received: u64,
    /// Reads shorter than the 56-byte header (dropped).
    pub short_reads: u64,
}

/// One umad device (`/dev/infiniband/umadN`, one HCA port) opened for MADs.
///
/// Everything goes through ONE file descriptor (umad2sim's `poll` only watches the first
/// umad fd of a process). `send` may be called from any thread at any time; receiving
/// (`recv`, `recv_raw`, `request`, the [`crate::Reader`] thread) must happen on one
/// thread at a time, which an internal lock enforces.
///
/// The device is opened with the libc symbol `open` (not `std::fs`, whose `open64` umad2sim
/// does not wrap) with `O_NONBLOCK`, so a read never blocks on a real kernel; `poll` waits.
pub struct UmadPort {
    fd: libc::c_int,
    issm_fd: Mutex<Option<libc::c_int>>,
    path: String,
    agents: Mutex<[Option<u32>; 256]>,
    kernel_timeout_ms: AtomicU32,
    next_tid: AtomicU32,
    backlog: Mutex<VecDeque<Received>>,
    read_lock: Mutex<()>,
    sent: AtomicU64,
    received: AtomicU64,
    short_reads: AtomicU64,
}

impl std::fmt::Debug for UmadPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UmadPort")
            .field("path", &self.path)
            .field("fd", &self.fd)
            .finish_non_exhaustive()
    }
}

fn set_errno(v: i32) {
    // SAFETY: __errno_location returns this thread's errno slot, always valid.
    unsafe { *libc::__errno_location() = v };
}

/// Opens `path` with the libc symbol `open` (so that an LD_PRELOADed umad2sim sees it).
pub(crate) fn libc_open(path: &str, flags: libc::c_int) -> Result<libc::c_int> {
    let c = CString::new(path).map_err(|_| UmadError::BadPath(path.to_string()))?;
    // SAFETY: c is a valid NUL-terminated string; open does not keep the pointer.
    let fd = unsafe { libc::open(c.as_ptr(), flags) };
    if fd < 0 {
        return Err(UmadError::Open {
            path: path.to_string(),
            source: io::Error::last_os_error(),
        });
    }
    Ok(fd)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned lock only means another thread panicked while holding it; the data
    // (agent table, backlog, unit) stays consistent, so keep going.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl UmadPort {
    /// Default time the kernel keeps a sent request waiting for its response (see
    /// [`UmadPort::set_kernel_timeout_ms`]).
    pub const DEFAULT_KERNEL_TIMEOUT_MS: u32 = 1000;

    /// Opens the umad device at `device` (e.g. `/dev/infiniband/umad0`). No agent is
    /// registered yet: call [`UmadPort::register`] or [`UmadPort::register_smp_agents`].
    pub fn open(device: &str) -> Result<UmadPort> {
        let fd = libc_open(device, libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC)?;
        Ok(UmadPort {
            fd,
            issm_fd: Mutex::new(None),
            path: device.to_string(),
            agents: Mutex::new([None; 256]),
            kernel_timeout_ms: AtomicU32::new(Self::DEFAULT_KERNEL_TIMEOUT_MS),
            next_tid: AtomicU32::new(1),
            backlog: Mutex::new(VecDeque::new()),
            read_lock: Mutex::new(()),
            sent: AtomicU64::new(0),
            received: AtomicU64::new(0),
            short_reads: AtomicU64::new(0),
        })
    }

    /// The device path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Registers an agent for `class` on `qpn` (0 or 1) with class version `version`, taking
    /// unsolicited MADs whose method is in `method_mask`. Returns the agent id. Every class
    /// the caller sends or receives needs an agent (umad2sim delivers a MAD of an
    /// unregistered class to no one, or crashes).
    pub fn register(
        &self,
        class: MgmtClass,
        qpn: u8,
        method_mask: MethodMask,
        version: u8,
    ) -> Result<u32> {
        let req = RegReq {
            id: 0,
            method_mask,
            qpn,
            mgmt_class: class.0,
            mgmt_class_version: version,
            oui: [0; 3],
            rmpp_version: 0,
        };
        let mut b: [u8; REG_REQ_LEN] = req.encode();
        // SAFETY: b is a live 28-byte buffer laid out as struct ib_user_mad_reg_req; the
        // kernel (or umad2sim) reads it and writes the id back into it.
        let r = unsafe {
            libc::ioctl(
                self.fd,
                IB_USER_MAD_REGISTER_AGENT as libc::c_ulong,
                b.as_mut_ptr(),
            )
        };
        if r < 0 {
            return Err(UmadError::Register {
                class: class.0,
                qpn,
                source: io::Error::last_os_error(),
            });
        }
        let id = RegReq::id_of(&b);
        lock(&self.agents)[usize::from(class.0)] = Some(id);
        tracing::debug!(class = class.0, qpn, id, "umad agent registered");
        Ok(id)
    }

    /// Registers the two SMP agents an SM needs on QP0: directed route (0x81) and
    /// LID-routed (0x01, where traps arrive), both taking [`MethodMask::sm_smp`].
    pub fn register_smp_agents(&self) -> Result<()> {
        self.register(MgmtClass::SUBN_DIRECTED_ROUTE, 0, MethodMask::sm_smp(), 1)?;
        self.register(MgmtClass::SUBN_LID_ROUTED, 0, MethodMask::sm_smp(), 1)?;
        Ok(())
    }

    /// The agent id registered for `class`, if any.
    pub fn agent(&self, class: MgmtClass) -> Option<u32> {
        lock(&self.agents)[usize::from(class.0)]
    }

    /// How long the kernel waits for the response to a request it sends (header
    /// `timeout_ms`; retries are always 0). A real kernel drops a response that matches no
    /// request still waiting, so this must exceed the caller's own timeout; when it expires
    /// the kernel returns the request with status `ETIMEDOUT` ([`RecvStatus::TimedOut`]).
    /// umad2sim ignores it.
    pub fn set_kernel_timeout_ms(&self, ms: u32) {
        self.kernel_timeout_ms.store(ms, Ordering::Relaxed);
    }

    /// Marks this port as running an SM (IsSM capability bit) by opening the matching
    /// `issmN` device, kept open until the port is dropped. Under umad2sim this sets the
    /// bit in the simulated port.
    pub fn claim_sm(&self) -> Result<()> {
        let mut g = lock(&self.issm_fd);
        if g.is_some() {
            return Ok(());
        }
        let issm = match self.path.rfind("umad") {
            Some(i) => format!("{}issm{}", &self.path[..i], &self.path[i + 4..]),
            None => return Err(UmadError::BadPath(self.path.clone())),
        };
        *g = Some(libc_open(&issm, libc::O_RDWR | libc::O_CLOEXEC)?);
        Ok(())
    }

    /// A fresh transaction id for the convenience requests ([`UmadPort::request`] callers,
    /// [`UmadPort::get_dr`]); unique in its low 32 bits until it wraps.
    pub fn next_tid(&self) -> u64 {
        u64::from(self.next_tid.fetch_add(1, Ordering::Relaxed))
    }

    /// Counters since open.
    pub fn counters(&self) -> PortCounters {
        PortCounters {
            sent: self.sent.load(Ordering::Relaxed),
            received: self.received.load(Ordering::Relaxed),
            short_reads: self.short_reads.load(Ordering::Relaxed),
        }
    }

    /// Sends an SMP. Directed-route SMPs whose DrSLID is permissive must go to
    /// [`Dest::directed`] (ibsim also needs DrDLID permissive); LID-routed ones to a LID
    /// other than 0. SMPs go to QP0.
    pub fn send(&self, smp: &Smp, dest: Dest) -> Result<()> {
        if dest.qpn != 0 {
            return Err(UmadError::BadDest("SMPs go to QP0"));
        }
        if smp.is_directed() {
            if smp.dr_slid == Lid::PERMISSIVE && dest.lid != Lid::PERMISSIVE {
                return Err(UmadError::BadDest(
                    "a directed-route SMP with permissive DrSLID goes to LID 0xFFFF",
                ));
            }
        } else if dest.lid == Lid::UNASSIGNED {
            return Err(UmadError::BadDest(
                "a LID-routed SMP needs a LID other than 0",
            ));
        }
        self.send_mad(&smp.encode(), dest)
    }

    /// Sends the first `len` bytes (at least the 56-byte SA header, at most 256) of a MAD:
    /// an SA answer carries only its records, so a receiver that counts records from the
    /// length it reads (saquery through umad2sim) sees exactly them. Otherwise as
    /// [`UmadPort::send_mad`].
    pub fn send_mad_len(&self, mad: &[u8; MAD_LEN], len: usize, dest: Dest) -> Result<()> {
        self.write_mad(mad, len.clamp(56, MAD_LEN), dest)
    }

    /// Sends any 256-byte MAD through the agent registered for its class (byte 1). A
    /// request (no R bit, not TrapRepress) carries the kernel timeout.
    pub fn send_mad(&self, mad: &[u8; MAD_LEN], dest: Dest) -> Result<()> {
        self.write_mad(mad, MAD_LEN, dest)
    }

    fn write_mad(&self, mad: &[u8; MAD_LEN], len: usize, dest: Dest) -> Result<()> {
        let class = mad[1];
        let agent_id = self
            .agent(MgmtClass(class))
            .ok_or(UmadError::NotRegistered(class))?;
        let method = mad[3];
        let expects_response =
            method & mad::Method::RESPONSE_BIT == 0 && method != mad::Method::TRAP_REPRESS.0;
        let hdr = UmadHeader {
            agent_id,
            timeout_ms: if expects_response {
                self.kernel_timeout_ms.load(Ordering::Relaxed)
            } else {
                0
            },
            retries: 0,
            length: UMAD_LEN as u32,
            qpn: dest.qpn,
            qkey: dest.qkey,
            lid: dest.lid,
            sl: dest.sl,
            ..UmadHeader::default()
        };
        let mut buf = [0u8; UMAD_LEN];
        let mut h = [0u8; UMAD_HDR_LEN];
        hdr.encode(&mut h);
        buf[..UMAD_HDR_LEN].copy_from_slice(&h);
        buf[UMAD_HDR_LEN..].copy_from_slice(mad);
        let total = UMAD_HDR_LEN + len.min(MAD_LEN);
        // SAFETY: buf is a live buffer of UMAD_LEN bytes and total <= UMAD_LEN.
        let n = unsafe { libc::write(self.fd, buf.as_ptr().cast(), total) };
        if n < 0 {
            return Err(UmadError::Write(io::Error::last_os_error()));
        }
        if n as usize != total {
            return Err(UmadError::Write(io::Error::new(
                io::ErrorKind::WriteZero,
                format!("short write: {n} of {total} bytes"),
            )));
        }
        self.sent.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// One non-blocking read attempt.
    fn try_read(&self) -> Result<Option<RawMad>> {
        let mut buf = [0u8; 2 * UMAD_LEN];
        set_errno(0);
        // SAFETY: buf is a live buffer of its length.
        let n = unsafe { libc::read(self.fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n == -1 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EINTR) | Some(0) => Ok(None),
                _ => Err(UmadError::Read(e)),
            };
        }
        if n < 0 {
            // umad2sim returns -EWOULDBLOCK as the value of an empty read.
            let code = i32::try_from(-n).unwrap_or(libc::EIO);
            return if code == libc::EAGAIN {
                Ok(None)
            } else {
                Err(UmadError::Read(io::Error::from_raw_os_error(code)))
            };
        }
        let n = (n as usize).min(buf.len());
        self.received.fetch_add(1, Ordering::Relaxed);
        match RawMad::parse(&buf[..n]) {
            Some(m) => Ok(Some(m)),
            None => {
                self.short_reads.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(
                    bytes = n,
                    "UMAD-W001 read shorter than the user-MAD header dropped"
                );
                Ok(None)
            }
        }
    }

    /// Waits up to `timeout` for the next MAD, as read (header + bytes). Skips the
    /// internal backlog of [`UmadPort::request`].
    pub fn recv_raw(&self, timeout: Duration) -> Result<Option<RawMad>> {
        let _g = lock(&self.read_lock);
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(m) = self.try_read()? {
                return Ok(Some(m));
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            let left = deadline - now;
            let ms = i32::try_from(left.as_micros().div_ceil(1000)).unwrap_or(i32::MAX);
            let mut pfd = libc::pollfd {
                fd: self.fd,
                events: libc::POLLIN,
                revents: 0,
            };
            set_errno(0);
            // SAFETY: pfd is one live pollfd.
            let r = unsafe { libc::poll(&mut pfd, 1, ms) };
            if r < 0 {
                let e = io::Error::last_os_error();
                match e.raw_os_error() {
                    // umad2sim returns -1 without errno when its condition variable wakes
                    // up with an empty queue: just look again.
                    Some(0) | Some(libc::EINTR) | Some(libc::EAGAIN) => continue,
                    _ => return Err(UmadError::Read(e)),
                }
            }
        }
    }

    /// Waits up to `timeout` for the next MAD (first from the backlog that
    /// [`UmadPort::request`] filled with MADs it was not waiting for).
    pub fn recv(&self, timeout: Duration) -> Result<Option<Received>> {
        if let Some(r) = lock(&self.backlog).pop_front() {
            return Ok(Some(r));
        }
        Ok(self.recv_raw(timeout)?.map(Received::from_raw))
    }

    /// Sends `smp` and waits up to `timeout` for the response with the same class and
    /// low 32 bits of TID (the only part of the TID that survives the kernel and umad2sim).
    /// Other MADs read meanwhile go to the backlog that [`UmadPort::recv`] returns first.
    /// No retries: a lost request is [`UmadError::Timeout`].
    pub fn request(&self, smp: &Smp, dest: Dest, timeout: Duration) -> Result<Received> {
        let key = smp.tid as u32;
        self.send(smp, dest)?;
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let raw = match self.recv_raw(left)? {
                Some(r) => r,
                None => {
                    return Err(UmadError::Timeout {
                        tid: key,
                        timeout_ms: timeout.as_millis() as u64,
                    });
                }
            };
            let r = Received::from_raw(raw);
            let matches = r.tid_key() == Some(key)
                && r.class() == Some(smp.class.0)
                && (r.is_response() || r.status == RecvStatus::TimedOut);
            if !matches {
                lock(&self.backlog).push_back(r);
                continue;
            }
            if r.status == RecvStatus::TimedOut {
                return Err(UmadError::Timeout {
                    tid: key,
                    timeout_ms: timeout.as_millis() as u64,
                });
            }
            return Ok(r);
        }
    }

    /// Gets attribute `T` over the directed route `path` (empty = this node) and checks the
    /// response status.
    pub fn get_dr<T: mad::SmpAttribute>(
        &self,
        path: &[u8],
        attr_mod: u32,
        timeout: Duration,
    ) -> Result<T> {
        let smp = Smp::dr_get(self.next_tid(), T::ID, attr_mod, path)?;
        let r = self.request(&smp, Dest::directed(), timeout)?;
        attr_of(r)
    }

    /// Gets attribute `T` from the port at `lid` (LID-routed SMP) and checks the status.
    pub fn get_lid<T: mad::SmpAttribute>(
        &self,
        lid: Lid,
        attr_mod: u32,
        timeout: Duration,
    ) -> Result<T> {
        let smp = Smp::lid_get(self.next_tid(), T::ID, attr_mod);
        let r = self.request(&smp, Dest::smp_to(lid), timeout)?;
        attr_of(r)
    }

    /// Sets attribute `T` over the directed route `path`; returns what the SMA answered.
    pub fn set_dr<T: mad::SmpAttribute>(
        &self,
        path: &[u8],
        attr_mod: u32,
        value: &T,
        timeout: Duration,
    ) -> Result<T> {
        let smp = Smp::dr_set(self.next_tid(), attr_mod, path, value)?;
        let r = self.request(&smp, Dest::directed(), timeout)?;
        attr_of(r)
    }
}

fn attr_of<T: mad::SmpAttribute>(r: Received) -> Result<T> {
    match r.mad {
        ReceivedMad::Smp(smp) => {
            if !smp.mad_status().is_ok() {
                return Err(UmadError::BadResponse(format!(
                    "{} answered with MAD status {:#06x}",
                    T::NAME,
                    smp.status
                )));
            }
            Ok(smp.attr::<T>()?)
        }
        ReceivedMad::Other { class, .. } => Err(UmadError::BadResponse(format!(
            "expected an SMP, got class {class:#04x}"
        ))),
        ReceivedMad::Malformed { reason, .. } => Err(UmadError::BadResponse(reason)),
    }
}

impl Drop for UmadPort {
    fn drop(&mut self) {
        if let Some(fd) = lock(&self.issm_fd).take() {
            // SAFETY: fd was returned by open and is closed once.
            unsafe { libc::close(fd) };
        }
        // SAFETY: self.fd was returned by open and is closed once (here).
        unsafe { libc::close(self.fd) };
    }
}
