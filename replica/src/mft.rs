//! MulticastForwardingTables as programmed: per switch, every non-zero MFT block (32
//! multicast LIDs x 16 ports of one position). They enter the state with the intent that
//! wrote them (`IntentContents.mfts`, applied at `IntentDone`), are dropped for a switch
//! listed as failed, and travel in snapshots (`StateSnapshot.mfts`). A new master seeds its
//! sweeper with them, so it rewrites no MFT block the switches already hold.

use std::collections::BTreeMap;

use fabric::Guid;
use proto::state::{MftBlock, MftTable};

use crate::error::ApplyError;
use crate::state::ReplicatedState;

/// Port masks per MFT block.
pub const MFT_BLOCK: usize = 32;
/// Highest MFT block number (MLIDs 0xC000..=0xFFFF).
pub const MAX_MFT_BLOCK: u32 = 511;
/// Highest MFT position (ports 240..=255).
pub const MAX_MFT_POSITION: u32 = 15;

/// MFT blocks by switch GUID, then (position, block); only non-zero blocks are kept.
pub type Mfts = BTreeMap<Guid, BTreeMap<(u8, u16), [u16; MFT_BLOCK]>>;

impl ReplicatedState {
    /// Every switch's MFT as programmed: (position, block) -> 32 port masks, non-zero
    /// blocks only (a block absent is all zero).
    pub fn mfts(&self) -> &Mfts {
        &self.mfts
    }

    /// One MFT block as programmed (None: all zero or never written).
    pub fn mft_block(&self, switch: Guid, position: u8, block: u16) -> Option<&[u16; MFT_BLOCK]> {
        self.mfts.get(&switch)?.get(&(position, block))
    }

    /// Writes the blocks of one switch (validated) into the programmed state; returns how
    /// many.
    pub(crate) fn write_mft_blocks(&mut self, t: &MftTable) -> usize {
        let g = Guid(t.switch_guid);
        let table = self.mfts.entry(g).or_default();
        for b in &t.blocks {
            let masks = masks_of(b);
            let key = (b.position as u8, b.block as u16);
            if masks == [0; MFT_BLOCK] {
                table.remove(&key);
            } else {
                table.insert(key, masks);
            }
        }
        if table.is_empty() {
            self.mfts.remove(&g);
        }
        t.blocks.len()
    }

    /// Forgets a switch's MFT (its Sets failed): the next master rewrites it.
    pub(crate) fn drop_mft(&mut self, switch: Guid) -> bool {
        self.mfts.remove(&switch).is_some()
    }
}

/// The 32 masks of a validated block.
fn masks_of(b: &MftBlock) -> [u16; MFT_BLOCK] {
    let mut m = [0u16; MFT_BLOCK];
    for (d, s) in m.iter_mut().zip(&b.masks) {
        // Validated: every mask fits 16 bits.
        *d = *s as u16;
    }
    m
}

/// Checks every block's shape: 32 masks of 16 bits, block <= 511, position <= 15.
pub(crate) fn validate(tables: &[MftTable]) -> Result<(), ApplyError> {
    for t in tables {
        for b in &t.blocks {
            if b.masks.len() != MFT_BLOCK
                || b.block > MAX_MFT_BLOCK
                || b.position > MAX_MFT_POSITION
                || b.masks.iter().any(|m| *m > 0xFFFF)
            {
                return Err(ApplyError::BadMftBlock {
                    switch: Guid(t.switch_guid),
                    position: b.position,
                    block: b.block,
                    len: b.masks.len(),
                });
            }
        }
    }
    Ok(())
}

/// The programmed MFTs in snapshot form (switches and blocks in order).
pub(crate) fn to_proto(m: &Mfts) -> Vec<MftTable> {
    m.iter()
        .map(|(g, blocks)| MftTable {
            switch_guid: g.0,
            blocks: blocks
                .iter()
                .map(|(&(position, block), masks)| MftBlock {
                    block: u32::from(block),
                    position: u32::from(position),
                    masks: masks.iter().map(|&x| u32::from(x)).collect(),
                })
                .collect(),
        })
        .collect()
}

/// Rebuilds the programmed MFTs from a snapshot; refuses malformed or repeated blocks and
/// all-zero blocks (a snapshot never holds them).
pub(crate) fn from_proto(tables: Vec<MftTable>) -> Result<Mfts, String> {
    validate(&tables).map_err(|e| e.to_string())?;
    let mut out = Mfts::new();
    for t in tables {
        let g = Guid(t.switch_guid);
        if out.contains_key(&g) {
            return Err(format!("MFT of {g} twice"));
        }
        let mut table = BTreeMap::new();
        for b in &t.blocks {
            let masks = masks_of(b);
            if masks == [0; MFT_BLOCK] {
                return Err(format!("MFT of {g}: all-zero block {}", b.block));
            }
            if table
                .insert((b.position as u8, b.block as u16), masks)
                .is_some()
            {
                return Err(format!(
                    "MFT of {g}: block {} position {} twice",
                    b.block, b.position
                ));
            }
        }
        if !table.is_empty() {
            out.insert(g, table);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::state::{
        BeginIntent, Command, IntentContents, IntentDone, SealIntent, command::Kind,
    };

    fn block(position: u32, block: u32, first: u32) -> MftBlock {
        let mut masks = vec![0u32; MFT_BLOCK];
        masks[0] = first;
        MftBlock {
            block,
            position,
            masks,
        }
    }

    fn cmd(kind: Kind) -> Command {
        Command {
            request_id: 0,
            kind: Some(kind),
        }
    }

    fn program(
        st: &mut ReplicatedState,
        index: u64,
        id: u64,
        mfts: Vec<MftTable>,
        failed: Vec<u64>,
    ) {
        let contents = IntentContents {
            mfts,
            ..Default::default()
        };
        let cmds = crate::split_intent(id, 1, contents, 400);
        let mut i = index;
        for c in cmds {
            assert!(st.apply(i, 1, &c).is_accepted(), "{c:?}");
            i += 1;
        }
        let done = cmd(Kind::IntentDone(IntentDone {
            id,
            failed_switches: failed,
            failed_ports: Vec::new(),
        }));
        assert!(st.apply(i, 1, &done).is_accepted());
    }

    #[test]
    fn intent_blocks_become_programmed_state_and_survive_a_snapshot() {
        let mut st = ReplicatedState::new();
        // Enough blocks to be split over several chunks.
        let blocks: Vec<MftBlock> = (0..40).map(|b| block(b % 2, b, 0x6)).collect();
        program(
            &mut st,
            1,
            7,
            vec![
                MftTable {
                    switch_guid: 0x10,
                    blocks: blocks.clone(),
                },
                MftTable {
                    switch_guid: 0x20,
                    blocks: vec![block(0, 3, 0x1)],
                },
            ],
            Vec::new(),
        );
        assert_eq!(st.mfts().len(), 2);
        assert_eq!(st.mfts()[&Guid(0x10)].len(), 40);
        assert_eq!(st.mft_block(Guid(0x20), 0, 3).unwrap()[0], 1);
        let back = ReplicatedState::restore(&st.snapshot_bytes()).unwrap();
        assert_eq!(back.mfts(), st.mfts());
        assert_eq!(back.snapshot_bytes(), st.snapshot_bytes());
        // A later all-zero block clears it; a failed switch loses its whole MFT.
        program(
            &mut st,
            100,
            8,
            vec![
                MftTable {
                    switch_guid: 0x20,
                    blocks: vec![block(0, 3, 0)],
                },
                MftTable {
                    switch_guid: 0x10,
                    blocks: vec![block(0, 0, 0xFF)],
                },
            ],
            vec![0x10],
        );
        assert!(st.mft_block(Guid(0x20), 0, 3).is_none());
        assert!(!st.mfts().contains_key(&Guid(0x20)));
        assert!(
            !st.mfts().contains_key(&Guid(0x10)),
            "failed switch kept its MFT"
        );
    }

    #[test]
    fn malformed_blocks_are_refused() {
        let mut st = ReplicatedState::new();
        for bad in [
            MftBlock {
                block: 0,
                position: 0,
                masks: vec![0; 31],
            },
            block(16, 0, 1),
            block(0, 512, 1),
            block(0, 0, 0x1_0000),
        ] {
            let c = cmd(Kind::BeginIntent(BeginIntent {
                id: 1,
                term: 1,
                contents: Some(IntentContents {
                    mfts: vec![MftTable {
                        switch_guid: 1,
                        blocks: vec![bad.clone()],
                    }],
                    ..Default::default()
                }),
            }));
            let r = st.apply(1, 1, &c);
            assert!(!r.is_accepted(), "{bad:?} accepted");
        }
        let seal = cmd(Kind::SealIntent(SealIntent { id: 1, chunks: 1 }));
        assert!(!st.apply(2, 1, &seal).is_accepted(), "nothing was opened");
        assert!(
            from_proto(vec![MftTable {
                switch_guid: 1,
                blocks: vec![block(0, 0, 0)],
            }])
            .is_err()
        );
    }
}
