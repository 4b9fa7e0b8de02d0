//! Serde helpers so that JSON output shows GUIDs, P_Keys and MGIDs the way operators read
//! them (`"0x0000000000100001"`, `"0x8001"`, `"ff12:401b:8001::ffff:ffff"`).

use fabric::{Guid, PKey};
use serde::Serializer;
use serde::ser::{SerializeSeq, SerializeTuple};

/// A GUID as `0x%016x`.
pub fn guid<S: Serializer>(g: &Guid, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{:#018x}", g.0))
}

/// GUIDs as `0x%016x` strings.
pub fn guids<S: Serializer>(v: &[Guid], s: S) -> Result<S::Ok, S::Error> {
    let mut seq = s.serialize_seq(Some(v.len()))?;
    for g in v {
        seq.serialize_element(&format!("{:#018x}", g.0))?;
    }
    seq.end()
}

/// A P_Key as `0x%04x`.
pub fn pkey<S: Serializer>(k: &PKey, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{:#06x}", k.0))
}

/// A partition number as `0x%04x`.
pub fn part<S: Serializer>(k: &u16, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{k:#06x}"))
}

/// Partition numbers as `0x%04x` strings.
pub fn parts<S: Serializer>(v: &[u16], s: S) -> Result<S::Ok, S::Error> {
    let mut seq = s.serialize_seq(Some(v.len()))?;
    for k in v {
        seq.serialize_element(&format!("{k:#06x}"))?;
    }
    seq.end()
}

/// P_Keys as `0x%04x` strings.
pub fn pkeys<S: Serializer>(v: &[PKey], s: S) -> Result<S::Ok, S::Error> {
    let mut seq = s.serialize_seq(Some(v.len()))?;
    for k in v {
        seq.serialize_element(&format!("{:#06x}", k.0))?;
    }
    seq.end()
}

/// A fixed block of P_Keys as `0x%04x` strings.
pub fn pkey_block<S: Serializer, const N: usize>(v: &[PKey; N], s: S) -> Result<S::Ok, S::Error> {
    let mut t = s.serialize_tuple(N)?;
    for k in v {
        t.serialize_element(&format!("{:#06x}", k.0))?;
    }
    t.end()
}

/// An MGID in IPv6 notation.
pub fn mgid<S: Serializer>(m: &[u8; 16], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&std::net::Ipv6Addr::from(*m).to_string())
}

/// (switch GUID, port) pairs as `["0x...", port]`.
pub fn guid_ports<S: Serializer>(v: &[(Guid, u8)], s: S) -> Result<S::Ok, S::Error> {
    let mut seq = s.serialize_seq(Some(v.len()))?;
    for (g, p) in v {
        seq.serialize_element(&(format!("{:#018x}", g.0), p))?;
    }
    seq.end()
}

/// A pair of GUIDs.
pub fn guid_pair<S: Serializer>(v: &(Guid, Guid), s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq([v.0, v.1].iter().map(|g| format!("{:#018x}", g.0)))
}
