//! Drift: the host's P_Key view against the keys the compiled policy intends for the port.

use fabric::{Guid, PKey};
use serde::Serialize;
use std::collections::BTreeSet;

/// How a port's P_Key view differs from intent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Drift {
    /// Port GUID.
    #[serde(serialize_with = "ser_guid")]
    pub port: Guid,
    /// Device and port number.
    pub device: String,
    /// Port number.
    pub port_num: u8,
    /// Intended keys the host does not hold.
    #[serde(serialize_with = "ser_keys")]
    pub missing: Vec<PKey>,
    /// Keys the host holds that are not intended (a full key where limited is intended shows
    /// as the full key extra and the limited key missing).
    #[serde(serialize_with = "ser_keys")]
    pub extra: Vec<PKey>,
}

fn ser_guid<S: serde::Serializer>(g: &Guid, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{:#018x}", g.0))
}

fn ser_keys<S: serde::Serializer>(v: &[PKey], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(|k| format!("{:#06x}", k.0)))
}

/// Compares the valid keys of a host view with the intended keys. None when they agree.
pub fn compare(
    port: Guid,
    device: &str,
    port_num: u8,
    view: &[(usize, PKey)],
    intended: &[u16],
) -> Option<Drift> {
    let have: BTreeSet<PKey> = view
        .iter()
        .map(|(_, k)| *k)
        .filter(|k| !k.is_invalid())
        .collect();
    let want: BTreeSet<PKey> = intended.iter().map(|k| PKey(*k)).collect();
    let missing: Vec<PKey> = want.difference(&have).copied().collect();
    let extra: Vec<PKey> = have.difference(&want).copied().collect();
    (!missing.is_empty() || !extra.is_empty()).then(|| Drift {
        port,
        device: device.to_string(),
        port_num,
        missing,
        extra,
    })
}

impl Drift {
    /// True when the host holds a full key the policy gives it limited (or not at all): the
    /// port can reach more than intended.
    pub fn widens(&self) -> bool {
        self.extra.iter().any(|k| k.is_full())
    }
}
