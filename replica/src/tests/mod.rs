//! Unit tests of the replicated state machine.

mod determinism;
mod intents;
mod misc;
mod policy;
mod snapshots;

use proto::state::{
    Command, IntentContents, LftBlock, MftBlock, MftTable, PKeyBlock, PortInfoChange, PortPKeys,
    SwitchLft, command::Kind,
};

/// A command with a request id.
pub(crate) fn cmd(request_id: u64, kind: Kind) -> Command {
    Command {
        request_id,
        kind: Some(kind),
    }
}

/// One LFT block whose every entry is `port`.
pub(crate) fn lft_block(block: u32, port: u8) -> LftBlock {
    LftBlock {
        block,
        ports: vec![port; 64],
    }
}

/// A P_Key block holding `key` at index 0 and zeros elsewhere.
pub(crate) fn pkey_block(block: u32, key: u16) -> PKeyBlock {
    let mut pkeys = vec![0u32; 32];
    pkeys[0] = u32::from(key);
    PKeyBlock { block, pkeys }
}

/// Intent contents: `switches` switches with `blocks` LFT blocks each (entries derived from
/// the switch and block numbers and `salt`), one P_Key table and a PortInfo change.
pub(crate) fn contents(switches: u64, blocks: u32, salt: u8) -> IntentContents {
    IntentContents {
        lfts: (0..switches)
            .map(|s| SwitchLft {
                switch_guid: 0x2000 + s,
                blocks: (0..blocks)
                    .map(|b| LftBlock {
                        block: b,
                        ports: (0..64u32)
                            .map(|i| ((s as u32 + b * 7 + i + u32::from(salt)) % 37) as u8)
                            .collect(),
                    })
                    .collect(),
            })
            .collect(),
        pkeys: vec![PortPKeys {
            node_guid: 0x1000,
            port: 1,
            blocks: vec![pkey_block(0, 0xffff), pkey_block(1, 0x8001)],
        }],
        port_infos: vec![PortInfoChange {
            node_guid: 0x1000,
            port: 1,
            lid: Some(5),
            master_sm_lid: Some(1),
            ..PortInfoChange::default()
        }],
        mfts: vec![MftTable {
            switch_guid: 0x2000,
            blocks: vec![MftBlock {
                block: u32::from(salt),
                position: 0,
                masks: (0..32).map(|i| 1 + i + u32::from(salt)).collect(),
            }],
        }],
        vport_writes: vec![proto::state::VportWrite {
            port_guid: 0x1000,
            index: 1,
            attribute: 0xFFB6,
            data: vec![salt; 64],
        }],
        vl_blocks: vec![proto::state::VlBlock {
            node_guid: 0x1000,
            attr: crate::vl::VL_ATTR_SL2VL,
            modifier: 0,
            data: vec![salt; 8],
        }],
    }
}
