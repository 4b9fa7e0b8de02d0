//! [`PathSl`]: the service level a routing requires per (source switch, destination switch)
//! pair. Engines that keep a routing free of credit loops by moving paths onto virtual lanes
//! (LASH-, DFSSSP-style layering) give every pair an SL, and the SL-to-VL tables map it to
//! the pair's layer; the SA must then answer a PathRecord between two end ports with the SL
//! of their switches' pair. Engines that need one set [`crate::Routing::path_sl`] and the
//! SL-to-VL tables it relies on, [`EngineSl2Vl`] ([`crate::Routing::sl2vl`]); min-hop,
//! up/down and fat-tree need neither (one layer, SL 0 on VL 0).

use fabric::Guid;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// An SL-to-VL table: entry `sl` is the VL of a packet with that SL.
pub type SlVlTable = [u8; 16];

/// The SL-to-VL mapping a routing requires on switch output ports: per (switch, output
/// port) one table used with every input port of that switch (an out-port-only mapping is
/// what layered and dateline schemes need), `default` on every other port, CA ports
/// included. The daemon programs these tables instead of the QoS ones when a routing
/// carries them, and the deadlock check ([`crate::cdg::check`]) follows them hop by hop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineSl2Vl {
    /// The table of every port not in `per_out_port` (CA ports included).
    pub default: SlVlTable,
    /// Tables of switch output ports that differ from `default`, by (switch GUID, port).
    pub per_out_port: BTreeMap<(Guid, u8), SlVlTable>,
}

impl EngineSl2Vl {
    /// SL n on VL n on every port (layered engines: one VL per layer).
    pub fn identity() -> EngineSl2Vl {
        EngineSl2Vl {
            default: std::array::from_fn(|i| i as u8),
            per_out_port: BTreeMap::new(),
        }
    }

    /// The table of a switch output port.
    pub fn table(&self, switch: Guid, out_port: u8) -> &SlVlTable {
        self.per_out_port
            .get(&(switch, out_port))
            .unwrap_or(&self.default)
    }

    /// The highest VL any table maps an SL in `sls` to (the data VLs the ports need are
    /// 0..=this).
    pub fn max_vl(&self, sls: &BTreeSet<u8>) -> u8 {
        std::iter::once(&self.default)
            .chain(self.per_out_port.values())
            .flat_map(|t| sls.iter().map(|&sl| t[sl as usize & 0xF]))
            .max()
            .unwrap_or(0)
    }
}

/// SL per (source switch, destination switch); pairs never set hold SL 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathSl {
    index: HashMap<Guid, u32>,
    n: usize,
    sl: Vec<u8>,
}

impl PathSl {
    /// Every pair of `switches` on SL 0.
    pub fn new(switches: &[Guid]) -> PathSl {
        let index: HashMap<Guid, u32> = switches
            .iter()
            .enumerate()
            .map(|(k, g)| (*g, k as u32))
            .collect();
        let n = index.len();
        PathSl {
            index,
            n,
            sl: vec![0; n * n],
        }
    }

    fn at(&self, src: Guid, dst: Guid) -> Option<usize> {
        let (s, d) = (*self.index.get(&src)?, *self.index.get(&dst)?);
        Some(s as usize * self.n + d as usize)
    }

    /// Sets the SL (low 4 bits) of the pair; false when a switch is unknown.
    pub fn set(&mut self, src: Guid, dst: Guid, sl: u8) -> bool {
        match self.at(src, dst) {
            Some(k) => {
                self.sl[k] = sl & 0xF;
                true
            }
            None => false,
        }
    }

    /// The SL of the pair (None: a switch it does not know).
    pub fn get(&self, src: Guid, dst: Guid) -> Option<u8> {
        self.at(src, dst).map(|k| self.sl[k])
    }

    /// Every pair's SL as a dense `n x n` matrix over `switches` (row: source), 0 for a
    /// switch it does not know: one lookup per switch instead of one per pair.
    pub(crate) fn dense(&self, switches: &[Guid]) -> Vec<u8> {
        let n = switches.len();
        let idx: Vec<Option<usize>> = switches
            .iter()
            .map(|g| self.index.get(g).map(|&k| k as usize))
            .collect();
        let mut out = vec![0u8; n * n];
        for (x, ix) in idx.iter().enumerate() {
            let Some(ix) = ix else { continue };
            let row = &self.sl[ix * self.n..(ix + 1) * self.n];
            for (t, it) in idx.iter().enumerate() {
                if let Some(it) = it {
                    out[x * n + t] = row[*it];
                }
            }
        }
        out
    }

    /// The SLs in use.
    pub fn sls(&self) -> BTreeSet<u8> {
        self.sl.iter().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_tables_fall_back_to_the_default() {
        let mut m = EngineSl2Vl::identity();
        let mut t = [0u8; 16];
        t[1] = 1;
        t[3] = 1;
        m.per_out_port.insert((Guid(7), 2), t);
        assert_eq!(m.table(Guid(7), 2)[3], 1);
        assert_eq!(m.table(Guid(7), 3)[3], 3);
        assert_eq!(m.max_vl(&[0, 1].into()), 1);
        assert_eq!(m.max_vl(&[0, 1, 5].into()), 5);
    }

    #[test]
    fn pairs_hold_their_sl_and_unknown_switches_none() {
        let mut p = PathSl::new(&[Guid(1), Guid(2), Guid(3)]);
        assert_eq!(p.get(Guid(1), Guid(3)), Some(0));
        assert!(p.set(Guid(1), Guid(3), 2));
        assert!(p.set(Guid(3), Guid(1), 0x13));
        assert!(!p.set(Guid(9), Guid(1), 1));
        assert_eq!(p.get(Guid(1), Guid(3)), Some(2));
        assert_eq!(p.get(Guid(3), Guid(1)), Some(3), "4 bits");
        assert_eq!(p.get(Guid(9), Guid(1)), None);
        assert_eq!(p.sls(), [0, 2, 3].into());
    }
}
