//! Value readers of the policy grammar: numbers, ranges, P_Key ranges, name lists, port
//! names, port selections, VLArb and SL2VL tables, each error at the entry's position.

use super::ast::{NumRange, PortName, PortSel};
use super::lexer::{Item, Line, split_list, unquote};
use crate::error::{Pos, QosError};
use crate::num::parse_u64;
use crate::tables::{VLARB_TABLE_LEN, VlArb};

fn bad(pos: Pos, key: &str, msg: impl Into<String>) -> QosError {
    QosError::BadValue {
        pos,
        key: key.to_string(),
        msg: msg.into(),
    }
}

/// A number in `lo..=hi` at `pos`.
pub(crate) fn number(pos: Pos, key: &str, value: &str, lo: u64, hi: u64) -> Result<u64, QosError> {
    let n = parse_u64(value).map_err(|m| bad(pos, key, m))?;
    if n < lo || n > hi {
        return Err(bad(pos, key, format!("{n} is out of range {lo}-{hi}")));
    }
    Ok(n)
}

/// A comma list of `a` or `a-b` (ends in either order, as OpenSM accepts), each <= `max`.
pub(crate) fn ranges(
    line: &Line<'_>,
    key: &str,
    value: &str,
    max: u64,
) -> Result<Vec<NumRange>, QosError> {
    split_list(line, value)
        .into_iter()
        .map(|it| range(line, key, it, max))
        .collect()
}

fn range(line: &Line<'_>, key: &str, it: Item<'_>, max: u64) -> Result<NumRange, QosError> {
    let pos = line.pos_at(it.off);
    let (a, b) = match it.text.split_once('-') {
        Some((a, b)) => (a, b),
        None => (it.text, it.text),
    };
    let a = number(pos, key, a, 0, max)?;
    let b = number(pos, key, b, 0, max)?;
    Ok(NumRange {
        lo: a.min(b),
        hi: a.max(b),
    })
}

/// P_Key ranges as partition numbers (low 15 bits); a range must not cross the
/// membership bit.
pub(crate) fn pkey_ranges(
    line: &Line<'_>,
    key: &str,
    value: &str,
) -> Result<Vec<NumRange>, QosError> {
    let mut out = Vec::new();
    for it in split_list(line, value) {
        let r = range(line, key, it, 0xFFFF)?;
        if (r.lo & 0x8000) != (r.hi & 0x8000) {
            return Err(bad(
                line.pos_at(it.off),
                key,
                format!(
                    "`{}` crosses the membership bit 0x8000: write the partition numbers (low 15 bits)",
                    it.text
                ),
            ));
        }
        out.push(NumRange {
            lo: r.lo & 0x7FFF,
            hi: r.hi & 0x7FFF,
        });
    }
    Ok(out)
}

/// A comma list of non-empty names with their positions.
pub(crate) fn strings(
    line: &Line<'_>,
    key: &str,
    value: &str,
) -> Result<Vec<(String, Pos)>, QosError> {
    split_list(line, value)
        .into_iter()
        .map(|it| {
            let t = unquote(it.text).trim();
            if t.is_empty() {
                Err(bad(line.pos_at(it.off), key, "empty name in the list"))
            } else {
                Ok((t.to_string(), line.pos_at(it.off)))
            }
        })
        .collect()
}

pub(crate) fn port_name(line: &Line<'_>, key: &str, it: Item<'_>) -> Result<PortName, QosError> {
    let pos = line.pos_at(it.off);
    let text = unquote(it.text);
    let msg = || {
        bad(
            pos,
            key,
            format!("`{text}`: expected `node description/Pnum` (port 1-254)"),
        )
    };
    let (desc, p) = text.rsplit_once('/').ok_or_else(msg)?;
    let num = p
        .strip_prefix('P')
        .or_else(|| p.strip_prefix('p'))
        .ok_or_else(msg)?;
    let port = parse_u64(num).map_err(|_| msg())?;
    if !(1..=254).contains(&port) || desc.trim().is_empty() {
        return Err(msg());
    }
    Ok(PortName {
        node_desc: desc.trim().to_string(),
        port: port as u8,
    })
}

pub(crate) fn port_sel(line: &Line<'_>, key: &str, value: &str) -> Result<PortSel, QosError> {
    if value == "*" {
        return Ok(PortSel::All);
    }
    Ok(PortSel::Ports(ranges(line, key, value, 254)?))
}

/// `VL:weight` entries (VL 0-14, weight 0-255), at most 64; the rest are 0:0.
pub(crate) fn vlarb(
    line: &Line<'_>,
    key: &str,
    value: &str,
) -> Result<[VlArb; VLARB_TABLE_LEN], QosError> {
    let mut out = [VlArb::default(); VLARB_TABLE_LEN];
    for (i, it) in split_list(line, value).into_iter().enumerate() {
        let pos = line.pos_at(it.off);
        if i >= VLARB_TABLE_LEN {
            return Err(bad(pos, key, "more than 64 entries (two blocks of 32)"));
        }
        let (vl, w) = it
            .text
            .split_once(':')
            .ok_or_else(|| bad(pos, key, format!("`{}`: expected VL:weight", it.text)))?;
        let vl = number(pos, key, vl, 0, 15)?;
        if vl == 15 {
            return Err(bad(
                pos,
                key,
                format!(
                    "`{}`: VL 15 is the management VL and has no arbitration entry (data VLs are 0-14)",
                    it.text
                ),
            ));
        }
        let weight = number(pos, key, w, 0, 255)?;
        out[i] = VlArb {
            vl: vl as u8,
            weight: weight as u8,
        };
    }
    Ok(out)
}

/// Exactly 16 VLs (0-15).
pub(crate) fn sl2vl(line: &Line<'_>, key: &str, value: &str) -> Result<[u8; 16], QosError> {
    let items = split_list(line, value);
    if items.len() != 16 {
        return Err(bad(
            line.pos_at(items.first().map_or(0, |i| i.off)),
            key,
            format!(
                "{} VLs given, exactly 16 needed (one per SL 0-15)",
                items.len()
            ),
        ));
    }
    let mut out = [0u8; 16];
    for (o, it) in out.iter_mut().zip(items) {
        *o = number(line.pos_at(it.off), key, it.text, 0, 15)? as u8;
    }
    Ok(out)
}
