//! The persistent port GUID -> LID map in OpenSM's guid2lid file format
//! (`/var/cache/opensm/guid2lid`, written by osm_db_pack.c): one port per line,
//! `0x<port guid, 16 hex digits> 0x<min lid, 4 hex digits> 0x<max lid, 4 hex digits>`.
//! Blank lines and lines starting with `#` are skipped on import.

use crate::SmError;
use fabric::{Guid, Lid};
use std::collections::BTreeMap;

/// GUID -> (first LID, last LID) of each port the SM has ever assigned.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Guid2Lid {
    map: BTreeMap<Guid, (Lid, Lid)>,
}

impl Guid2Lid {
    /// An empty map.
    pub fn new() -> Guid2Lid {
        Guid2Lid::default()
    }

    /// Parses the file text. Any malformed line rejects the whole file (with its line).
    pub fn parse(text: &str) -> Result<Guid2Lid, SmError> {
        let mut g = Guid2Lid::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |why: &str| SmError::Guid2Lid {
                line: i + 1,
                why: why.to_string(),
            };
            let mut it = line.split_whitespace();
            let (Some(gs), Some(a), Some(b), None) = (it.next(), it.next(), it.next(), it.next())
            else {
                return Err(bad("expected `0x<guid> 0x<min lid> 0x<max lid>`"));
            };
            let guid = parse_hex(gs, u64::MAX).ok_or_else(|| bad("bad port GUID"))?;
            let lo = parse_hex(a, 0xFFFF).ok_or_else(|| bad("bad min LID"))? as u16;
            let hi = parse_hex(b, 0xFFFF).ok_or_else(|| bad("bad max LID"))? as u16;
            if lo == 0 || hi < lo || !Lid(hi).is_unicast() {
                return Err(bad("LID range outside 0x0001..=0xbfff or reversed"));
            }
            g.map.insert(Guid(guid), (Lid(lo), Lid(hi)));
        }
        Ok(g)
    }

    /// Writes the file text, ports in GUID order.
    pub fn export(&self) -> String {
        let mut s = String::with_capacity(self.map.len() * 34);
        for (g, (lo, hi)) in &self.map {
            s.push_str(&format!("0x{:016x} 0x{:04x} 0x{:04x}\n", g.0, lo.0, hi.0));
        }
        s
    }

    /// The LID range remembered for a port.
    pub fn get(&self, guid: Guid) -> Option<(Lid, Lid)> {
        self.map.get(&guid).copied()
    }

    /// Remembers a port's range.
    pub fn set(&mut self, guid: Guid, lo: Lid, hi: Lid) {
        self.map.insert(guid, (lo, hi));
    }

    /// Forgets a port.
    pub fn remove(&mut self, guid: Guid) {
        self.map.remove(&guid);
    }

    /// Number of ports.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Every entry in GUID order.
    pub fn iter(&self) -> impl Iterator<Item = (Guid, Lid, Lid)> + '_ {
        self.map.iter().map(|(g, (a, b))| (*g, *a, *b))
    }
}

fn parse_hex(s: &str, max: u64) -> Option<u64> {
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok()?,
        None => s.parse::<u64>().ok()?,
    };
    (v <= max).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_opensm_layout() {
        let text =
            "# comment\n0x0002c90300001234 0x0005 0x0005\n\n0x0002c90300001240 0x0010 0x0013\n";
        let g = Guid2Lid::parse(text).unwrap();
        assert_eq!(g.len(), 2);
        assert_eq!(
            g.get(Guid(0x0002c90300001240)),
            Some((Lid(0x10), Lid(0x13)))
        );
        let out = g.export();
        assert_eq!(
            out,
            "0x0002c90300001234 0x0005 0x0005\n0x0002c90300001240 0x0010 0x0013\n"
        );
        assert_eq!(Guid2Lid::parse(&out).unwrap(), g);
    }

    #[test]
    fn rejects_malformed_lines_with_line_number() {
        for bad in [
            "0x1 0x2",
            "0x1 0x2 0x3 0x4",
            "zz 0x1 0x1",
            "0x1 0x0 0x0",
            "0x1 0x5 0x4",
            "0x1 0xc000 0xc000",
            "0x1 0x10000 0x10001",
        ] {
            let text = format!("0x0002c90300001234 0x0005 0x0005\n{bad}\n");
            match Guid2Lid::parse(&text) {
                Err(SmError::Guid2Lid { line: 2, .. }) => {}
                other => panic!("{bad}: {other:?}"),
            }
        }
    }
}
