//! [`PathSl`]: the service level a routing requires per (source switch, destination switch)
//! pair. Engines that keep a routing free of credit loops by moving paths onto virtual lanes
//! (LASH-, DFSSSP-style layering) give every pair an SL, and the SL-to-VL tables map it to
//! the pair's layer; the SA must then answer a PathRecord between two end ports with the SL
//! of their switches' pair. The engines of this crate today need none (one layer): their
//! result carries no [`PathSl`].

use fabric::Guid;
use std::collections::{BTreeSet, HashMap};

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

    /// The SLs in use.
    pub fn sls(&self) -> BTreeSet<u8> {
        self.sl.iter().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
