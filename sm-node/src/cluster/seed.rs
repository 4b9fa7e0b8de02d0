//! Between the replicated state and the sweeper: what a new master is seeded with (LIDs,
//! LFTs and P_Key tables as programmed, the policy in force), and the commands that record
//! a master's sweep results in the log.

use fabric::{Guid, Lid, PortNum};
use proto::state::{
    Command, IntentContents, IntentDone, LftBlock, LidEntry, LidUpdate, PKeyBlock, PortPKeys,
    SwitchLft as ProtoSwitchLft, command::Kind,
};
use replica::{LFT_BLOCK, NO_ROUTE, PKEY_BLOCK, ReplicatedState};
use routing::{Lfts, SwitchLft};
use sm_core::{Guid2Lid, PKeyTables};
use std::sync::Arc;

/// What the sweeper of a new master starts from.
#[derive(Clone, Debug, Default)]
pub struct Seeds {
    /// guid -> LID range.
    pub guid2lid: Guid2Lid,
    /// Tables as programmed (None when nothing was recorded yet).
    pub known_lfts: Option<Arc<Lfts>>,
    /// P_Key tables as programmed.
    pub known_pkeys: Option<Arc<PKeyTables>>,
    /// Partition policy text in force (None: never applied through the cluster).
    pub policy: Option<String>,
}

/// Highest LID of the map (the LinearFDBTop the master programs).
fn max_lid(g: &Guid2Lid) -> u16 {
    g.iter().map(|(_, _, hi)| hi.0).max().unwrap_or(0)
}

/// The seeds in `st`.
pub fn seeds(st: &ReplicatedState) -> Seeds {
    let mut guid2lid = Guid2Lid::new();
    for (g, a) in st.guid2lid() {
        let hi = a.base.0.saturating_add((1u16 << a.lmc) - 1);
        guid2lid.set(*g, a.base, Lid(hi));
    }
    // The replica keeps whole 64-entry blocks; the sweeper compares a switch's table
    // length with its LinearFDBTop, which is the highest LID in use.
    let top = max_lid(&guid2lid) as usize;
    let switches: Vec<SwitchLft> = st
        .lfts()
        .map(|(g, ports)| {
            let mut p = ports.to_vec();
            p.resize(top + 1, NO_ROUTE);
            SwitchLft {
                guid: g,
                lid: Lid(0),
                ports: p,
            }
        })
        .collect();
    let pkeys: PKeyTables = st
        .pkey_tables()
        .map(|((g, p), t)| ((g, p.0), t.to_vec()))
        .collect();
    let policy = st.policy();
    Seeds {
        guid2lid,
        known_lfts: (!switches.is_empty()).then(|| Arc::new(Lfts { switches })),
        known_pkeys: (!pkeys.is_empty()).then(|| Arc::new(pkeys)),
        policy: (policy.version > 0).then(|| policy.text.clone()),
    }
}

/// A master's tables after a sweep.
#[derive(Clone, Debug, Default)]
pub struct SweepTables {
    /// guid -> LID range.
    pub guid2lid: Guid2Lid,
    /// LFTs programmed.
    pub lfts: Option<Lfts>,
    /// P_Key tables programmed.
    pub pkeys: PKeyTables,
}

/// The LID update recording `t` when it differs from `st` (replace-all).
pub fn lid_command(st: &ReplicatedState, t: &SweepTables) -> Option<Command> {
    let same = st.guid2lid().len() == t.guid2lid.len()
        && t.guid2lid.iter().all(|(g, lo, hi)| {
            st.lid_of(g).is_some_and(|a| {
                a.base == lo && a.base.0.saturating_add((1u16 << a.lmc) - 1) == hi.0
            })
        });
    if same {
        return None;
    }
    let set = t
        .guid2lid
        .iter()
        .map(|(g, lo, hi)| LidEntry {
            port_guid: g.0,
            base_lid: lo.0 as u32,
            lmc: (hi.0.saturating_sub(lo.0) as u32 + 1).trailing_zeros(),
        })
        .collect();
    Some(Command {
        request_id: 0,
        kind: Some(Kind::UpdateLids(LidUpdate {
            set,
            remove: Vec::new(),
            replace_all: true,
        })),
    })
}

/// The LFT blocks and P_Key blocks of `t` that differ from what `st` records.
pub fn changed_contents(st: &ReplicatedState, t: &SweepTables) -> IntentContents {
    let mut out = IntentContents::default();
    if let Some(l) = &t.lfts {
        for s in &l.switches {
            let mut blocks = Vec::new();
            for b in 0..s.ports.len().div_ceil(LFT_BLOCK) {
                let lo = b * LFT_BLOCK;
                let mut ports = vec![NO_ROUTE; LFT_BLOCK];
                let hi = (lo + LFT_BLOCK).min(s.ports.len());
                ports[..hi - lo].copy_from_slice(&s.ports[lo..hi]);
                if st.lft_block(s.guid, b as u32) != Some(&ports[..]) {
                    blocks.push(LftBlock {
                        block: b as u32,
                        ports,
                    });
                }
            }
            if !blocks.is_empty() {
                out.lfts.push(ProtoSwitchLft {
                    switch_guid: s.guid.0,
                    blocks,
                });
            }
        }
    }
    for ((g, p), table) in &t.pkeys {
        let cur = st.pkey_table(*g, PortNum(*p));
        let mut padded = table.clone();
        padded.resize(table.len().div_ceil(PKEY_BLOCK) * PKEY_BLOCK, 0);
        if cur == Some(&padded[..]) {
            continue;
        }
        let blocks = padded
            .chunks(PKEY_BLOCK)
            .enumerate()
            .map(|(b, k)| PKeyBlock {
                block: b as u32,
                pkeys: k.iter().map(|&x| x as u32).collect(),
            })
            .collect();
        out.pkeys.push(PortPKeys {
            node_guid: g.0,
            port: *p as u32,
            blocks,
        });
    }
    out
}

/// True when the contents program nothing.
pub fn is_empty(c: &IntentContents) -> bool {
    c.lfts.is_empty() && c.pkeys.is_empty() && c.port_infos.is_empty()
}

/// The commands recording a programmed intent: begin, chunks, seal, done.
pub fn intent_commands(id: u64, term: u64, contents: IntentContents) -> Vec<Command> {
    let mut cmds = replica::split_intent(id, term, contents, replica::DEFAULT_MAX_COMMAND_BYTES);
    cmds.push(Command {
        request_id: 0,
        kind: Some(Kind::IntentDone(IntentDone {
            id,
            failed_switches: Vec::new(),
            failed_ports: Vec::new(),
        })),
    });
    cmds
}

/// A port GUID parsed from a `0x...` port name (0 when the name is not a GUID).
pub fn guid_of_port_name(name: &str) -> Guid {
    Guid(
        name.strip_prefix("0x")
            .and_then(|h| u64::from_str_radix(h, 16).ok())
            .unwrap_or(0),
    )
}
