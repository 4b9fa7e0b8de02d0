//! Virtual-lane tables as programmed: every SLtoVLMappingTable and VLArbitrationTable block
//! the master wrote, by (node, attribute, attribute modifier), in the attribute's own bytes.
//! They enter the state with the intent that wrote them (`IntentContents.vl_blocks`, applied
//! at `IntentDone`), are dropped for a node or port listed as failed, and travel in
//! snapshots (`StateSnapshot.vl_blocks`). A new master seeds its sweeper with them, so it
//! rewrites no VL table the ports already hold.

use std::collections::{BTreeMap, BTreeSet};

use fabric::Guid;
use proto::state::VlBlock;

use crate::error::ApplyError;
use crate::state::ReplicatedState;

/// `VlBlock.attr` of an SLtoVLMappingTable block.
pub const VL_ATTR_SL2VL: u32 = 1;
/// `VlBlock.attr` of a VLArbitrationTable block.
pub const VL_ATTR_VLARB: u32 = 2;

/// VL table blocks by (node GUID, attr, modifier): the attribute's data (8 bytes for
/// SLtoVL, 64 for VLArb).
pub type VlTables = BTreeMap<(Guid, u32, u32), Vec<u8>>;

/// The data length of attribute `attr` (None: not a VL table attribute).
pub fn vl_data_len(attr: u32) -> Option<usize> {
    match attr {
        VL_ATTR_SL2VL => Some(8),
        VL_ATTR_VLARB => Some(64),
        _ => None,
    }
}

/// The port a block belongs to (what IntentDone's failed ports name): the low byte of the
/// modifier, the output port of an SLtoVL pair and the port of a VLArb block alike.
pub fn vl_block_port(modifier: u32) -> u8 {
    (modifier & 0xFF) as u8
}

impl ReplicatedState {
    /// Every VL table block as programmed.
    pub fn vl_tables(&self) -> &VlTables {
        &self.vl_tables
    }

    /// Records the blocks of a done intent, except those of failed switches or ports;
    /// returns how many were recorded. Blocks were validated when the chunk was accepted.
    pub(crate) fn write_vl_blocks(
        &mut self,
        blocks: &[VlBlock],
        failed_switches: &BTreeSet<Guid>,
        failed_ports: &BTreeSet<(Guid, u8)>,
    ) -> usize {
        let mut n = 0;
        for b in blocks {
            let g = Guid(b.node_guid);
            let key = (g, b.attr, b.modifier);
            if failed_switches.contains(&g)
                || failed_ports.contains(&(g, vl_block_port(b.modifier)))
            {
                self.vl_tables.remove(&key);
                continue;
            }
            self.vl_tables.insert(key, b.data.clone());
            n += 1;
        }
        n
    }
}

/// Checks every block's shape: a known attribute, its data length, a VLArb block 1-4, an
/// SLtoVL modifier of 16 bits.
pub(crate) fn validate(blocks: &[VlBlock]) -> Result<(), ApplyError> {
    for b in blocks {
        let ok = match vl_data_len(b.attr) {
            Some(len) if b.data.len() == len => match b.attr {
                VL_ATTR_SL2VL => b.modifier <= 0xFFFF,
                _ => (1..=4).contains(&(b.modifier >> 16)) && b.modifier & 0xFF00 == 0,
            },
            _ => false,
        };
        if !ok {
            return Err(ApplyError::BadVlBlock {
                node: Guid(b.node_guid),
                attr: b.attr,
                modifier: b.modifier,
                len: b.data.len(),
            });
        }
    }
    Ok(())
}

/// The programmed VL tables in snapshot form (in key order).
pub(crate) fn to_proto(t: &VlTables) -> Vec<VlBlock> {
    t.iter()
        .map(|(&(g, attr, modifier), data)| VlBlock {
            node_guid: g.0,
            attr,
            modifier,
            data: data.clone(),
        })
        .collect()
}

/// Rebuilds the programmed VL tables from a snapshot; refuses malformed or repeated blocks.
pub(crate) fn from_proto(blocks: Vec<VlBlock>) -> Result<VlTables, String> {
    validate(&blocks).map_err(|e| e.to_string())?;
    let mut out = VlTables::new();
    for b in blocks {
        let key = (Guid(b.node_guid), b.attr, b.modifier);
        if out.insert(key, b.data).is_some() {
            return Err(format!(
                "VL table of {} attr {} modifier {:#x} twice",
                key.0, key.1, key.2
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sl2vl(node: u64, modifier: u32) -> VlBlock {
        VlBlock {
            node_guid: node,
            attr: VL_ATTR_SL2VL,
            modifier,
            data: vec![0x01, 0x23, 0x45, 0x67, 0x01, 0x23, 0x45, 0x67],
        }
    }

    #[test]
    fn malformed_blocks_are_refused() {
        let mut b = sl2vl(1, 0x0102);
        b.data.pop();
        assert!(matches!(
            validate(&[b]),
            Err(ApplyError::BadVlBlock { len: 7, .. })
        ));
        let arb = VlBlock {
            node_guid: 1,
            attr: VL_ATTR_VLARB,
            modifier: 5 << 16 | 3,
            data: vec![0; 64],
        };
        assert!(validate(&[arb]).is_err());
        let unknown = VlBlock {
            attr: 3,
            ..sl2vl(1, 0)
        };
        assert!(validate(&[unknown]).is_err());
        assert!(validate(&[sl2vl(1, 0x0102)]).is_ok());
    }

    #[test]
    fn failed_ports_and_switches_drop_their_blocks() {
        let mut st = ReplicatedState::new();
        let blocks = [sl2vl(1, 0x0102), sl2vl(1, 0x0203), sl2vl(2, 0)];
        let n = st.write_vl_blocks(&blocks, &BTreeSet::new(), &BTreeSet::new());
        assert_eq!(n, 3);
        let failed: BTreeSet<(Guid, u8)> = [(Guid(1), 3)].into();
        let n = st.write_vl_blocks(&blocks[1..2], &BTreeSet::new(), &failed);
        assert_eq!(n, 0);
        assert_eq!(st.vl_tables().len(), 2);
        let sw: BTreeSet<Guid> = [Guid(2)].into();
        st.write_vl_blocks(&blocks[2..], &sw, &BTreeSet::new());
        assert_eq!(
            st.vl_tables().keys().copied().collect::<Vec<_>>(),
            vec![(Guid(1), VL_ATTR_SL2VL, 0x0102)]
        );
        let back = from_proto(to_proto(st.vl_tables())).expect("round trip");
        assert_eq!(&back, st.vl_tables());
    }
}
