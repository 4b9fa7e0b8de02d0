//! The local port's identity: from the fabric (a directed-route Get with hop count 0, which
//! always reflects the current LID) and from sysfs.
//!
//! Under umad2sim, sysfs is faked: the library writes the files under `./sys-<pid>/` in the
//! process's working directory when the first `/sys/class/infiniband*` or `/dev/infiniband*`
//! path is opened, and redirects `open`/`opendir`/`scandir` of those paths there. The files
//! are a snapshot taken when the client attached: the LID and SM LID in them never change
//! afterwards (a real kernel updates them). Use [`UmadPort::query_local`] for the LID.

use crate::port::{UmadPort, libc_open};
use crate::{Result, UmadError};
use fabric::{Guid, Lid};
use mad::{NodeInfo, PortInfo};
use std::time::Duration;

/// The local node and port as their SMA reports them.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct LocalPort {
    /// NodeInfo of the local node.
    pub node_info: NodeInfo,
    /// PortInfo of the local port (port 0 for a switch).
    pub port_info: PortInfo,
}

impl LocalPort {
    /// Node GUID.
    pub fn node_guid(&self) -> Guid {
        self.node_info.node_guid
    }
    /// GUID of the port the SM uses.
    pub fn port_guid(&self) -> Guid {
        self.node_info.port_guid
    }
    /// Number of the local port (NodeInfo.LocalPortNum).
    pub fn port_num(&self) -> u8 {
        self.node_info.local_port_num
    }
    /// The port's LID (0 before an SM assigned one).
    pub fn lid(&self) -> Lid {
        self.port_info.lid
    }
    /// PortInfo.MasterSMLID.
    pub fn sm_lid(&self) -> Lid {
        self.port_info.master_sm_lid
    }
}

impl UmadPort {
    /// Reads the local NodeInfo and PortInfo with directed-route Gets of hop count 0
    /// (needs the 0x81 agent registered).
    pub fn query_local(&self, timeout: Duration) -> Result<LocalPort> {
        let node_info: NodeInfo = self.get_dr(&[], 0, timeout)?;
        let port = if node_info.is_switch() {
            0
        } else {
            node_info.local_port_num
        };
        let port_info: PortInfo = self.get_dr(&[], u32::from(port), timeout)?;
        Ok(LocalPort {
            node_info,
            port_info,
        })
    }
}

/// What sysfs says about the port behind `umadN`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct SysfsPort {
    /// `/sys/class/infiniband_mad/umadN/ibdev` (e.g. `mlx5_0`; `ibsim0` under umad2sim).
    pub ibdev: String,
    /// `/sys/class/infiniband_mad/umadN/port`.
    pub port: u8,
    /// `/sys/class/infiniband/<ibdev>/node_guid`.
    pub node_guid: Guid,
    /// `/sys/class/infiniband/<ibdev>/ports/<port>/lid` (stale under umad2sim).
    pub lid: Lid,
    /// `/sys/class/infiniband/<ibdev>/ports/<port>/sm_lid` (stale under umad2sim).
    pub sm_lid: Lid,
    /// Port GUID: low 64 bits of `/sys/class/infiniband/<ibdev>/ports/<port>/gids/0`.
    pub port_guid: Guid,
}

/// Reads a small text file with the libc `open`/`read` (so umad2sim can redirect it).
pub fn read_text(path: &str) -> Result<String> {
    let fd = libc_open(path, libc::O_RDONLY | libc::O_CLOEXEC).map_err(|e| UmadError::Sysfs {
        path: path.to_string(),
        reason: e.to_string(),
    })?;
    let mut out = Vec::new();
    let mut buf = [0u8; 512];
    let res = loop {
        // SAFETY: buf is a live buffer of its length; fd is open.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            break Err(UmadError::Sysfs {
                path: path.to_string(),
                reason: std::io::Error::last_os_error().to_string(),
            });
        }
        if n == 0 || out.len() > 64 * 1024 {
            break Ok(());
        }
        out.extend_from_slice(&buf[..n as usize]);
    };
    // SAFETY: fd came from open and is closed once.
    unsafe { libc::close(fd) };
    res?;
    Ok(String::from_utf8_lossy(&out).trim().to_string())
}

fn bad(path: &str, text: &str, what: &str) -> UmadError {
    UmadError::Sysfs {
        path: path.to_string(),
        reason: format!("cannot read {what} from {text:?}"),
    }
}

/// Parses a number written as `0x1f`, `31` or `0x001f`.
fn parse_num(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Parses a GUID or the GUID half of a GID written as colon-separated 16-bit hex groups
/// (`0002:c903:0000:1234`); for a GID (8 groups) the last 4 groups.
pub fn parse_guid_groups(s: &str) -> Option<Guid> {
    let groups: Vec<&str> = s.trim().split(':').collect();
    if groups.len() != 4 && groups.len() != 8 {
        return None;
    }
    let mut v = 0u64;
    for g in &groups[groups.len() - 4..] {
        v = (v << 16) | u64::from(u16::from_str_radix(g, 16).ok()?);
    }
    Some(Guid(v))
}

/// The index N of a `.../umadN` device path.
pub fn umad_index(device: &str) -> Option<u32> {
    let i = device.rfind("umad")?;
    device[i + 4..].parse().ok()
}

/// Reads sysfs for the port behind umad device number `index`.
pub fn sysfs_port(index: u32) -> Result<SysfsPort> {
    let base = format!("/sys/class/infiniband_mad/umad{index}");
    let ibdev = read_text(&format!("{base}/ibdev"))?;
    let port_path = format!("{base}/port");
    let port_text = read_text(&port_path)?;
    let port = parse_num(&port_text)
        .and_then(|p| u8::try_from(p).ok())
        .ok_or_else(|| bad(&port_path, &port_text, "a port number"))?;
    let dev = format!("/sys/class/infiniband/{ibdev}");
    let guid_path = format!("{dev}/node_guid");
    let guid_text = read_text(&guid_path)?;
    let node_guid =
        parse_guid_groups(&guid_text).ok_or_else(|| bad(&guid_path, &guid_text, "a GUID"))?;
    let pdir = format!("{dev}/ports/{port}");
    let lid_of = |name: &str| -> Result<Lid> {
        let p = format!("{pdir}/{name}");
        let t = read_text(&p)?;
        parse_num(&t)
            .and_then(|v| u16::try_from(v).ok())
            .map(Lid)
            .ok_or_else(|| bad(&p, &t, "a LID"))
    };
    let gid_path = format!("{pdir}/gids/0");
    let gid_text = read_text(&gid_path)?;
    let port_guid =
        parse_guid_groups(&gid_text).ok_or_else(|| bad(&gid_path, &gid_text, "a GID"))?;
    Ok(SysfsPort {
        ibdev,
        port,
        node_guid,
        lid: lid_of("lid")?,
        sm_lid: lid_of("sm_lid")?,
        port_guid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guid_and_gid_text() {
        assert_eq!(
            parse_guid_groups("0000:0000:0010:0003\n"),
            Some(Guid(0x0010_0003))
        );
        assert_eq!(
            parse_guid_groups("fe80:0000:0000:0000:0002:c903:00a1:b2c4"),
            Some(Guid(0x0002_c903_00a1_b2c4))
        );
        assert_eq!(parse_guid_groups("fe80::1"), None);
        assert_eq!(parse_guid_groups("zzzz:0:0:0"), None);
        assert_eq!(parse_guid_groups(""), None);
    }

    #[test]
    fn numbers_and_device_index() {
        assert_eq!(parse_num("0x1f"), Some(31));
        assert_eq!(parse_num("12\n"), Some(12));
        assert_eq!(parse_num("x"), None);
        assert_eq!(umad_index("/dev/infiniband/umad3"), Some(3));
        assert_eq!(umad_index("/dev/infiniband/umad"), None);
        assert_eq!(umad_index("/dev/null"), None);
    }

    #[test]
    fn missing_sysfs_file_is_an_error() {
        let e = read_text("/nonexistent/quorum-umad-test").unwrap_err();
        assert!(e.to_string().starts_with("UMAD-E011"), "{e}");
    }
}
