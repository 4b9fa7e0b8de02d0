//! Linear forwarding tables: the routing output.

use fabric::{Guid, Lid};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The LFT value for "no route" (IBA and OpenSM use port 255 for an invalid entry).
pub const NO_ROUTE: u8 = 0xFF;

/// Number of LIDs in one LinearForwardingTable block.
pub const BLOCK_LIDS: usize = 64;

/// One switch's LFT.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwitchLft {
    /// The switch's node GUID.
    pub guid: Guid,
    /// The switch's LID (0 when it has none).
    pub lid: Lid,
    /// Output port per destination LID (index = LID), [`NO_ROUTE`] where there is none.
    pub ports: Vec<u8>,
}

impl SwitchLft {
    /// The output port for a LID, [`NO_ROUTE`] beyond the table.
    pub fn port(&self, lid: u16) -> u8 {
        self.ports.get(lid as usize).copied().unwrap_or(NO_ROUTE)
    }

    /// Number of 64-LID blocks the table spans.
    pub fn blocks(&self) -> usize {
        self.ports.len().div_ceil(BLOCK_LIDS)
    }
}

/// Every switch's LFT, in the switch order of the [`crate::RoutingInput`] they came from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lfts {
    /// One table per switch.
    pub switches: Vec<SwitchLft>,
}

impl Lfts {
    /// One table per switch of `input`, in its order, taken in order from `tables`.
    pub fn from_tables(
        input: &crate::RoutingInput,
        tables: impl IntoIterator<Item = Vec<u8>>,
    ) -> Lfts {
        Lfts {
            switches: input
                .switches
                .iter()
                .zip(tables)
                .map(|(sw, ports)| SwitchLft {
                    guid: sw.guid,
                    lid: sw.lid,
                    ports,
                })
                .collect(),
        }
    }

    /// The table of every switch of `input`, in its order, matched by GUID (empty for a
    /// switch these tables do not have: it forwards nothing).
    pub fn tables_for(&self, input: &crate::RoutingInput) -> Vec<&[u8]> {
        let by_guid: HashMap<_, _> = self
            .switches
            .iter()
            .map(|s| (s.guid, s.ports.as_slice()))
            .collect();
        input
            .switches
            .iter()
            .map(|s| by_guid.get(&s.guid).copied().unwrap_or(&[]))
            .collect()
    }

    /// The table of the switch with this GUID.
    pub fn by_guid(&self, guid: Guid) -> Option<&SwitchLft> {
        self.switches.iter().find(|s| s.guid == guid)
    }

    /// Total number of 64-LID blocks over all switches.
    pub fn total_blocks(&self) -> usize {
        self.switches.iter().map(SwitchLft::blocks).sum()
    }
}

/// Number of 64-LID blocks that differ between two sets of tables, matching switches by
/// GUID: a switch only in `new` counts all its blocks, a switch only in `old` none (it is
/// gone and needs no programming). Entries beyond a table's end count as [`NO_ROUTE`].
pub fn changed_blocks(old: &Lfts, new: &Lfts) -> usize {
    let by_guid: HashMap<Guid, &SwitchLft> = old.switches.iter().map(|s| (s.guid, s)).collect();
    new.switches
        .iter()
        .map(|n| match by_guid.get(&n.guid) {
            None => n.blocks(),
            Some(o) => (0..n.blocks())
                .filter(|b| {
                    let lo = b * BLOCK_LIDS;
                    (lo..lo + BLOCK_LIDS).any(|l| n.port(l as u16) != o.port(l as u16))
                })
                .count(),
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lfts(tables: &[(u64, Vec<u8>)]) -> Lfts {
        Lfts {
            switches: tables
                .iter()
                .map(|(g, p)| SwitchLft {
                    guid: Guid(*g),
                    lid: Lid(1),
                    ports: p.clone(),
                })
                .collect(),
        }
    }

    #[test]
    fn changed_blocks_counts_64_lid_blocks_by_guid() {
        let a = vec![1u8; 130]; // 3 blocks
        let mut b = a.clone();
        b[5] = 2; // block 0
        b[70] = 2; // block 1
        b[71] = 3; // block 1 again
        let old = lfts(&[(1, a.clone()), (2, a.clone())]);
        assert_eq!(changed_blocks(&old, &old), 0);
        assert_eq!(
            changed_blocks(&old, &lfts(&[(1, b.clone()), (2, a.clone())])),
            2
        );
        // Switch order does not matter; a new switch counts all its blocks.
        assert_eq!(changed_blocks(&old, &lfts(&[(2, a.clone()), (1, b)])), 2);
        assert_eq!(changed_blocks(&old, &lfts(&[(3, a.clone())])), 3);
        // A longer table: the extra entries differ from "no route".
        let mut c = a.clone();
        c.push(4);
        assert_eq!(changed_blocks(&old, &lfts(&[(1, c)])), 1);
        assert_eq!(old.total_blocks(), 6);
    }
}
