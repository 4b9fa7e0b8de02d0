//! Read-back P_KeyTables: the text dump format and its JSON twin.
//!
//! Text format: for each port, a header line defined by this crate, then what
//! `smpquery PKeys <lid> <port>` prints, optionally followed by what `smpquery portinfo <lid>
//! <port>` prints (only its `PartEnforceInb` / `PartEnforceOutb` lines are used):
//!
//! ```text
//! ### node 0x0000000000200000 port 2
//!    0: 0x9002 0xffff 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000
//!    8: 0x0000 ...
//! 64 pkeys capacity for this port
//! PartEnforceInb:..................1
//! PartEnforceOutb:.................1
//! ```
//!
//! `node` is the node GUID (a CA port is identified by its node GUID and port number, a
//! switch port the same way; a switch's own port is port 0). Any other line is ignored
//! (ibwarn chatter, other PortInfo fields). Enforcement absent means "not known".

use crate::ast::Pos;
use crate::parser::parse_c_number;
use fabric::{Guid, PKey};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The P_KeyTable of one port as read back from the fabric.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortReading {
    /// Node GUID.
    #[serde(serialize_with = "ser_guid", deserialize_with = "de_guid")]
    pub node: Guid,
    /// Port number (0 for a switch's own port).
    pub port: u8,
    /// Entries in index order (as many as were read).
    #[serde(serialize_with = "ser_keys", deserialize_with = "de_keys")]
    pub pkeys: Vec<PKey>,
    /// Capacity as reported, when known.
    #[serde(default)]
    pub capacity: Option<u16>,
    /// PortInfo.PartitionEnforcementInbound, when known.
    #[serde(default)]
    pub enforce_in: Option<bool>,
    /// PortInfo.PartitionEnforcementOutbound, when known.
    #[serde(default)]
    pub enforce_out: Option<bool>,
}

fn ser_guid<S: Serializer>(g: &Guid, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{:#018x}", g.0))
}

fn de_guid<'de, D: Deserializer<'de>>(d: D) -> Result<Guid, D::Error> {
    let s = String::deserialize(d)?;
    parse_c_number(&s)
        .map(Guid)
        .ok_or_else(|| serde::de::Error::custom(format!("bad GUID '{s}'")))
}

fn ser_keys<S: Serializer>(k: &[PKey], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(k.iter().map(|k| format!("{:#06x}", k.0)))
}

fn de_keys<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<PKey>, D::Error> {
    let v = Vec::<String>::deserialize(d)?;
    v.iter()
        .map(|s| {
            parse_c_number(s)
                .filter(|n| *n <= 0xFFFF)
                .map(|n| PKey(n as u16))
                .ok_or_else(|| serde::de::Error::custom(format!("bad P_Key '{s}'")))
        })
        .collect()
}

/// A problem in a text dump.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{pos}: {message}")]
pub struct DumpError {
    /// Where.
    pub pos: Pos,
    /// What.
    pub message: String,
}

/// The header line for one port.
pub fn header(node: Guid, port: u8) -> String {
    format!("### node {:#018x} port {port}", node.0)
}

/// Parses a text dump.
pub fn parse_dump(text: &str) -> Result<Vec<PortReading>, DumpError> {
    let mut out: Vec<PortReading> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let pos = Pos {
            line: i as u32 + 1,
            col: 1,
        };
        let err = |m: String| DumpError { pos, message: m };
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("###") {
            let w: Vec<&str> = rest.split_whitespace().collect();
            let (node, port) = match w.as_slice() {
                ["node", g, "port", p] => (
                    parse_c_number(g).ok_or_else(|| err(format!("bad node GUID '{g}'")))?,
                    p.parse::<u8>()
                        .map_err(|_| err(format!("bad port number '{p}'")))?,
                ),
                _ => return Err(err("expected '### node <GUID> port <N>'".into())),
            };
            out.push(PortReading {
                node: Guid(node),
                port,
                pkeys: Vec::new(),
                capacity: None,
                enforce_in: None,
                enforce_out: None,
            });
            continue;
        }
        if let Some((idx, rest)) = t.split_once(':')
            && !idx.is_empty()
            && idx.chars().all(|c| c.is_ascii_digit())
            && rest.trim_start().starts_with("0x")
        {
            let cur = out
                .last_mut()
                .ok_or_else(|| err("P_Key line before any '### node' header".into()))?;
            let idx: usize = idx.parse().map_err(|_| err("bad index".into()))?;
            if idx != cur.pkeys.len() {
                return Err(err(format!(
                    "entry index {idx} out of sequence (expected {})",
                    cur.pkeys.len()
                )));
            }
            for w in rest.split_whitespace() {
                let v = parse_c_number(w)
                    .filter(|v| *v <= 0xFFFF)
                    .ok_or_else(|| err(format!("bad P_Key '{w}'")))?;
                cur.pkeys.push(PKey(v as u16));
            }
            continue;
        }
        if let Some(n) = t.strip_suffix("pkeys capacity for this port") {
            let cur = out
                .last_mut()
                .ok_or_else(|| err("capacity line before any header".into()))?;
            cur.capacity = Some(
                n.trim()
                    .parse()
                    .map_err(|_| err(format!("bad capacity '{}'", n.trim())))?,
            );
            continue;
        }
        for (field, inbound) in [("PartEnforceInb:", true), ("PartEnforceOutb:", false)] {
            if let Some(v) = t.strip_prefix(field) {
                let cur = out
                    .last_mut()
                    .ok_or_else(|| err(format!("{field} before any header")))?;
                let v = v.trim_start_matches('.').trim();
                let b = match v {
                    "0" => false,
                    "1" => true,
                    _ => return Err(err(format!("bad {field} value '{v}'"))),
                };
                if inbound {
                    cur.enforce_in = Some(b);
                } else {
                    cur.enforce_out = Some(b);
                }
            }
        }
    }
    Ok(out)
}

/// Writes readings in the text format (without PortInfo lines when enforcement is unknown).
pub fn write_dump(readings: &[PortReading]) -> String {
    let mut s = String::new();
    for r in readings {
        s.push_str(&header(r.node, r.port));
        s.push('\n');
        for (i, chunk) in r.pkeys.chunks(8).enumerate() {
            s.push_str(&format!("{:4}:", i * 8));
            for k in chunk {
                s.push_str(&format!(" {:#06x}", k.0));
            }
            s.push('\n');
        }
        if let Some(c) = r.capacity {
            s.push_str(&format!("{c} pkeys capacity for this port\n"));
        }
        if let Some(b) = r.enforce_in {
            s.push_str(&format!("PartEnforceInb:..................{}\n", b as u8));
        }
        if let Some(b) = r.enforce_out {
            s.push_str(&format!("PartEnforceOutb:.................{}\n", b as u8));
        }
    }
    s
}
