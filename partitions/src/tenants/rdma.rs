//! The Linux RDMA cgroup line format (Documentation/admin-guide/cgroup-v1/rdma.rst and the
//! cgroup-v2 RDMA section): `DEVICE hca_handle=N hca_object=N`, where a value is a
//! non-negative integer up to S32_MAX or `max` (no limit). Reading `rdma.max` shows both keys
//! per device, unset ones as `max`; a write may give one or both keys; `rdma.current` has the
//! same shape with numbers only.

use super::{RDMA_LIMIT_MAX, RdmaLimit, check_device_name};
use std::fmt;

/// Why a cgroup RDMA line does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("bad RDMA cgroup line '{line}': {why}")]
pub struct RdmaLineError {
    /// The line.
    pub line: String,
    /// What is wrong.
    pub why: String,
}

fn value(v: Option<u32>) -> String {
    v.map_or_else(|| "max".to_string(), |n| n.to_string())
}

impl RdmaLimit {
    /// The line the kernel shows in `rdma.max` (and accepts): both keys, `max` for none.
    pub fn to_line(&self) -> String {
        format!(
            "{} hca_handle={} hca_object={}",
            self.device,
            value(self.hca_handle),
            value(self.hca_object)
        )
    }

    /// The line that removes every limit of the device (`max` for both keys).
    pub fn clear_line(device: &str) -> String {
        format!("{device} hca_handle=max hca_object=max")
    }

    /// True when neither key is limited.
    pub fn is_unlimited(&self) -> bool {
        self.hca_handle.is_none() && self.hca_object.is_none()
    }

    /// Parses one line (`DEVICE key=value ...`). Keys not given are `max`. Unknown keys, a
    /// key twice, a value that is neither `max` nor 0..=S32_MAX, or a line without device are
    /// errors.
    pub fn parse_line(line: &str) -> Result<RdmaLimit, RdmaLineError> {
        let err = |why: String| RdmaLineError {
            line: line.to_string(),
            why,
        };
        let mut words = line.split_whitespace();
        let device = words.next().ok_or_else(|| err("empty line".into()))?;
        check_device_name(device).map_err(err)?;
        let mut l = RdmaLimit {
            device: device.to_string(),
            hca_handle: None,
            hca_object: None,
        };
        let mut seen = (false, false);
        for w in words {
            let (k, v) = w
                .split_once('=')
                .ok_or_else(|| err(format!("'{w}' is not key=value")))?;
            let n = if v == "max" {
                None
            } else {
                let n: u32 = v
                    .parse()
                    .ok()
                    .filter(|n| *n <= RDMA_LIMIT_MAX)
                    .ok_or_else(|| err(format!("{k}={v}: not 'max' nor 0..={RDMA_LIMIT_MAX}")))?;
                Some(n)
            };
            let slot = match k {
                "hca_handle" => (&mut seen.0, &mut l.hca_handle),
                "hca_object" => (&mut seen.1, &mut l.hca_object),
                _ => return Err(err(format!("unknown resource '{k}'"))),
            };
            if *slot.0 {
                return Err(err(format!("{k} given twice")));
            }
            *slot.0 = true;
            *slot.1 = n;
        }
        Ok(l)
    }
}

impl fmt::Display for RdmaLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_line())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_documentation_examples() {
        let l = RdmaLimit::parse_line("mlx4_0 hca_handle=2 hca_object=2000").unwrap();
        assert_eq!(l.to_line(), "mlx4_0 hca_handle=2 hca_object=2000");
        let l = RdmaLimit::parse_line("ocrdma1 hca_handle=3").unwrap();
        assert_eq!(l.to_line(), "ocrdma1 hca_handle=3 hca_object=max");
        let l = RdmaLimit::parse_line("mlx4_0 hca_handle=max hca_object=max").unwrap();
        assert!(l.is_unlimited());
        assert_eq!(
            RdmaLimit::clear_line("mlx4_0"),
            "mlx4_0 hca_handle=max hca_object=max"
        );
    }

    #[test]
    fn malformed_lines_are_errors() {
        for bad in [
            "",
            "mlx4_0 hca_handle",
            "mlx4_0 hca_handle=-1",
            "mlx4_0 hca_handle=2147483648",
            "mlx4_0 hca_handle=1 hca_handle=2",
            "mlx4_0 qp=3",
            "mlx4_0 hca_handle=0x10",
        ] {
            assert!(RdmaLimit::parse_line(bad).is_err(), "{bad:?}");
        }
    }
}
