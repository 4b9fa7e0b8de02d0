//! Between the replicated state and the sweeper: what a new master is seeded with (LIDs,
//! LFTs and P_Key tables as programmed, the policy in force), and the commands that record
//! a master's sweep results in the log.

use fabric::{Guid, Lid};
use proto::state::{
    Command, IntentContents, LftBlock, LidEntry, LidUpdate, MftBlock, MftTable, PKeyBlock,
    PortPKeys, SwitchLft as ProtoSwitchLft, command::Kind,
};
use replica::{NO_ROUTE, ReplicatedState};
use routing::{Lfts, SwitchLft};
use sm_core::{Guid2Lid, MftTables, PKeyTables};
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
    /// MulticastForwardingTables as programmed (None when none was ever written).
    pub known_mfts: Option<Arc<MftTables>>,
    /// SLtoVL and VLArb blocks as programmed (None when none was ever written).
    pub known_vl_tables: Option<Arc<sm_core::VlTables>>,
    /// Partition policy text to plan from: the operator's text with the tenants compiled in
    /// (None: no policy nor tenants ever applied through the cluster).
    pub policy: Option<String>,
    /// Why the tenants could not be compiled in (the policy is then the operator's alone).
    pub tenants_error: Option<String>,
    /// The QoS policy text in force (None: none applied through the cluster).
    pub qos_policy: Option<String>,
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
    // The operator's policy with the tenants compiled in (issue 12).
    let (policy, tenants_error) = match st.effective_policy_text() {
        Ok(p) => (p, None),
        Err(e) => {
            let p = st.policy();
            ((p.version > 0).then(|| p.text.clone()), Some(e.to_string()))
        }
    };
    let mfts: MftTables = st.mfts().clone();
    let vl: sm_core::VlTables = st
        .vl_tables()
        .iter()
        .filter_map(|(&(g, attr, m), d)| Some(((g, vl_attr(attr)?, m), d.clone())))
        .collect();
    Seeds {
        known_vl_tables: (!vl.is_empty()).then(|| Arc::new(vl)),
        known_mfts: (!mfts.is_empty()).then(|| Arc::new(mfts)),
        guid2lid,
        known_lfts: (!switches.is_empty()).then(|| Arc::new(Lfts { switches })),
        known_pkeys: (!pkeys.is_empty()).then(|| Arc::new(pkeys)),
        policy,
        tenants_error,
        qos_policy: (st.qos_policy().version > 0).then(|| st.qos_policy().text.clone()),
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
    /// The fabric as the sweep discovered it (None: not read).
    pub topology: Option<proto::state::Topology>,
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

/// A port GUID parsed from a `0x...` port name (0 when the name is not a GUID).
pub fn guid_of_port_name(name: &str) -> Guid {
    Guid(
        name.strip_prefix("0x")
            .and_then(|h| u64::from_str_radix(h, 16).ok())
            .unwrap_or(0),
    )
}

/// The topology command when `t` found a fabric other than the one `st` records.
pub fn topology_command(st: &ReplicatedState, t: &SweepTables) -> Option<Command> {
    let topo = canonical(t.topology.as_ref()?);
    if topo.nodes.is_empty() || st.topology() == &topo {
        return None;
    }
    Some(Command {
        request_id: 0,
        kind: Some(Kind::SetTopology(topo)),
    })
}

/// The topology with its nodes in GUID order and its links sorted, so that masters that
/// discovered the same fabric from different ports record the same value.
pub fn canonical(t: &proto::state::Topology) -> proto::state::Topology {
    let mut order: Vec<usize> = (0..t.nodes.len()).collect();
    order.sort_by_key(|&i| t.nodes[i].node_guid);
    let mut new_index = vec![0u32; t.nodes.len()];
    for (new, &old) in order.iter().enumerate() {
        new_index[old] = new as u32;
    }
    let remap = |i: u32| new_index.get(i as usize).copied().unwrap_or(u32::MAX);
    let mut links: Vec<proto::state::TopoLink> = t
        .links
        .iter()
        .map(|l| {
            let (mut a, mut ap, mut b, mut bp) =
                (remap(l.a_node), l.a_port, remap(l.b_node), l.b_port);
            if (b, bp) < (a, ap) {
                std::mem::swap(&mut a, &mut b);
                std::mem::swap(&mut ap, &mut bp);
            }
            proto::state::TopoLink {
                a_node: a,
                a_port: ap,
                b_node: b,
                b_port: bp,
                ..*l
            }
        })
        .collect();
    links.sort_by_key(|l| (l.a_node, l.a_port, l.b_node, l.b_port));
    proto::state::Topology {
        nodes: order.iter().map(|&i| t.nodes[i].clone()).collect(),
        links,
    }
}

/// The sweeper's VL attribute of a replicated `VlBlock.attr` (None: unknown).
fn vl_attr(attr: u32) -> Option<sm_core::VlAttr> {
    match attr {
        replica::vl::VL_ATTR_SL2VL => Some(sm_core::VlAttr::SlToVl),
        replica::vl::VL_ATTR_VLARB => Some(sm_core::VlAttr::VlArb),
        _ => None,
    }
}

/// A sweeper's intent as replicated contents.
pub fn intent_to_contents(it: &sm_core::Intent) -> IntentContents {
    use std::collections::BTreeMap;
    let mut lfts: BTreeMap<u64, Vec<LftBlock>> = BTreeMap::new();
    for b in &it.lft_blocks {
        lfts.entry(b.switch.0).or_default().push(LftBlock {
            block: b.block as u32,
            ports: b.ports.to_vec(),
        });
    }
    let mut pkeys: BTreeMap<(u64, u8), Vec<PKeyBlock>> = BTreeMap::new();
    for b in &it.pkey_blocks {
        pkeys
            .entry((b.node.0, b.port))
            .or_default()
            .push(PKeyBlock {
                block: b.block as u32,
                pkeys: b.keys.iter().map(|&k| k as u32).collect(),
            });
    }
    let mut mfts: BTreeMap<u64, Vec<MftBlock>> = BTreeMap::new();
    for b in &it.mft_blocks {
        mfts.entry(b.switch.0).or_default().push(MftBlock {
            block: u32::from(b.block),
            position: u32::from(b.position),
            masks: b.masks.iter().map(|&m| u32::from(m)).collect(),
        });
    }
    IntentContents {
        vport_writes: it
            .vport_writes
            .iter()
            .map(|w| proto::state::VportWrite {
                port_guid: w.port_guid.0,
                index: u32::from(w.index),
                attribute: u32::from(w.attribute),
                data: w.data.to_vec(),
            })
            .collect(),
        vl_blocks: it
            .vl_blocks
            .iter()
            .map(|b| proto::state::VlBlock {
                node_guid: b.node.0,
                attr: match b.attr {
                    sm_core::VlAttr::SlToVl => replica::vl::VL_ATTR_SL2VL,
                    sm_core::VlAttr::VlArb => replica::vl::VL_ATTR_VLARB,
                },
                modifier: b.modifier,
                data: b.data.clone(),
            })
            .collect(),
        mfts: mfts
            .into_iter()
            .map(|(g, blocks)| MftTable {
                switch_guid: g,
                blocks,
            })
            .collect(),
        lfts: lfts
            .into_iter()
            .map(|(g, blocks)| ProtoSwitchLft {
                switch_guid: g,
                blocks,
            })
            .collect(),
        pkeys: pkeys
            .into_iter()
            .map(|((g, p), blocks)| PortPKeys {
                node_guid: g,
                port: p as u32,
                blocks,
            })
            .collect(),
        port_infos: it
            .port_changes
            .iter()
            .map(|c| proto::state::PortInfoChange {
                node_guid: c.node.0,
                port: c.port as u32,
                lid: Some(c.lid.0 as u32),
                lmc: Some(c.lmc as u32),
                master_sm_lid: Some(c.master_sm_lid.0 as u32),
                m_key: Some(c.m_key),
                m_key_protect_bits: Some(c.m_key_protect_bits as u32),
                m_key_lease_period: Some(c.m_key_lease_period as u32),
                subnet_prefix: Some(c.subnet_prefix),
                ..Default::default()
            })
            .collect(),
    }
}

/// A replicated (sealed, unfinished) intent as the sweeper re-applies it: its LFT and P_Key
/// blocks (malformed blocks are skipped; PortInfo changes are not re-applied).
pub fn intent_from_proto(it: &proto::state::Intent) -> sm_core::Intent {
    let mut out = sm_core::Intent {
        id: it.id,
        ..Default::default()
    };
    let Some(c) = &it.contents else {
        return out;
    };
    for s in &c.lfts {
        for b in &s.blocks {
            if let (Ok(ports), Ok(block)) =
                (<[u8; 64]>::try_from(&b.ports[..]), u16::try_from(b.block))
            {
                out.lft_blocks.push(sm_core::LftBlockWrite {
                    switch: Guid(s.switch_guid),
                    block,
                    ports,
                });
            }
        }
    }
    for p in &c.pkeys {
        let Ok(port) = u8::try_from(p.port) else {
            continue;
        };
        for b in &p.blocks {
            let keys: Vec<u16> = b.pkeys.iter().map(|&k| k as u16).collect();
            if let (Ok(keys), Ok(block)) =
                (<[u16; 32]>::try_from(&keys[..]), u16::try_from(b.block))
            {
                out.pkey_blocks.push(sm_core::PKeyBlockWrite {
                    node: Guid(p.node_guid),
                    port,
                    block,
                    keys,
                    assumed: false,
                });
            }
        }
    }
    for t in &c.mfts {
        for b in &t.blocks {
            let masks: Vec<u16> = b.masks.iter().map(|&m| m as u16).collect();
            if let (Ok(masks), Ok(block), Ok(position)) = (
                <[u16; 32]>::try_from(&masks[..]),
                u16::try_from(b.block),
                u8::try_from(b.position),
            ) {
                out.mft_blocks.push(sm_core::MftBlockWrite {
                    switch: Guid(t.switch_guid),
                    position,
                    block,
                    masks,
                });
            }
        }
    }
    for w in &c.vport_writes {
        if let (Ok(data), Ok(index), Ok(attribute)) = (
            <[u8; 64]>::try_from(&w.data[..]),
            u16::try_from(w.index),
            u16::try_from(w.attribute),
        ) {
            out.vport_writes.push(sm_core::VportWrite {
                port_guid: Guid(w.port_guid),
                index,
                attribute,
                data,
            });
        }
    }
    for b in &c.vl_blocks {
        if let Some(attr) = vl_attr(b.attr).filter(|a| a.data_len() == b.data.len()) {
            out.vl_blocks.push(sm_core::VlBlockWrite {
                node: Guid(b.node_guid),
                attr,
                modifier: b.modifier,
                data: b.data.clone(),
            });
        }
    }
    out
}

/// The cluster's M_Key of a master term (never 0): a SplitMix64 step of `base ^ term`.
pub fn m_key_of_term(base: u64, term: u64) -> u64 {
    let mut z = (base ^ term).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intent_round_trips_through_the_replicated_form() {
        let mut ports = [NO_ROUTE; 64];
        ports[3] = 7;
        let mut keys = [0u16; 32];
        keys[0] = 0xFFFF;
        keys[1] = 0x8002;
        let it = sm_core::Intent {
            id: 42,
            lft_blocks: vec![sm_core::LftBlockWrite {
                switch: Guid(0x10),
                block: 2,
                ports,
            }],
            pkey_blocks: vec![sm_core::PKeyBlockWrite {
                node: Guid(0x20),
                port: 1,
                block: 0,
                keys,
                assumed: false,
            }],
            port_changes: Vec::new(),
            vport_writes: vec![sm_core::VportWrite {
                port_guid: Guid(0x40),
                index: 3,
                attribute: 0xFFB1,
                data: [7; 64],
            }],
            mft_blocks: vec![sm_core::MftBlockWrite {
                switch: Guid(0x30),
                position: 1,
                block: 5,
                masks: [0x8001; 32],
            }],
            vl_blocks: vec![
                sm_core::VlBlockWrite {
                    node: Guid(0x30),
                    attr: sm_core::VlAttr::SlToVl,
                    modifier: 0x0203,
                    data: sm_core::sl2vl_data([1; 16]),
                },
                sm_core::VlBlockWrite {
                    node: Guid(0x20),
                    attr: sm_core::VlAttr::VlArb,
                    modifier: 3 << 16 | 1,
                    data: vec![7; 64],
                },
            ],
        };
        let p = proto::state::Intent {
            id: 42,
            term: 3,
            chunks: 1,
            sealed: true,
            begun_at_index: 9,
            contents: Some(intent_to_contents(&it)),
        };
        assert_eq!(intent_from_proto(&p), it);
    }

    #[test]
    fn canonical_topology_ignores_discovery_order() {
        use proto::state::{TopoLink, TopoNode, Topology};
        let node = |g: u64| TopoNode {
            node_guid: g,
            ..Default::default()
        };
        let link = |a, ap, b, bp| TopoLink {
            a_node: a,
            a_port: ap,
            b_node: b,
            b_port: bp,
            ..Default::default()
        };
        // The same fabric found from two ends: nodes and link ends in other orders.
        let x = Topology {
            nodes: vec![node(30), node(10), node(20)],
            links: vec![link(0, 1, 1, 2), link(2, 1, 1, 1)],
        };
        let y = Topology {
            nodes: vec![node(10), node(20), node(30)],
            links: vec![link(0, 1, 1, 1), link(0, 2, 2, 1)],
        };
        assert_eq!(canonical(&x), canonical(&y));
        assert_eq!(canonical(&canonical(&x)), canonical(&x));
        assert_ne!(canonical(&x), canonical(&Topology::default()));
    }

    #[test]
    fn m_keys_differ_per_term_and_are_never_zero() {
        let keys: std::collections::BTreeSet<u64> =
            (1..=1000).map(|t| m_key_of_term(7, t)).collect();
        assert_eq!(keys.len(), 1000);
        assert!(!keys.contains(&0));
        assert_eq!(m_key_of_term(7, 5), m_key_of_term(7, 5));
    }

    #[test]
    fn seeds_trim_tables_to_the_highest_lid_and_lids_round_trip() {
        let mut st = ReplicatedState::new();
        let lids = Command {
            request_id: 0,
            kind: Some(Kind::UpdateLids(LidUpdate {
                set: vec![
                    LidEntry {
                        port_guid: 1,
                        base_lid: 1,
                        lmc: 0,
                    },
                    LidEntry {
                        port_guid: 2,
                        base_lid: 4,
                        lmc: 2,
                    },
                ],
                remove: Vec::new(),
                replace_all: true,
            })),
        };
        assert!(st.apply(1, 1, &lids).is_accepted());
        let mut ports = vec![NO_ROUTE; 64];
        ports[1] = 1;
        ports[7] = 2;
        let it = IntentContents {
            lfts: vec![ProtoSwitchLft {
                switch_guid: 1,
                blocks: vec![LftBlock { block: 0, ports }],
            }],
            ..Default::default()
        };
        let mut cmds = replica::split_intent(5, 1, it, 1 << 20);
        cmds.push(Command {
            request_id: 0,
            kind: Some(Kind::IntentDone(proto::state::IntentDone {
                id: 5,
                failed_switches: Vec::new(),
                failed_ports: Vec::new(),
            })),
        });
        for (i, c) in cmds.iter().enumerate() {
            assert!(st.apply(2 + i as u64, 1, c).is_accepted(), "{c:?}");
        }
        let s = seeds(&st);
        // Highest LID 7 (4 + 2^2 - 1): LinearFDBTop 7, a table of 8 entries.
        let l = s.known_lfts.unwrap();
        assert_eq!(l.switches[0].ports.len(), 8);
        assert_eq!(l.switches[0].ports[7], 2);
        assert_eq!(s.guid2lid.get(Guid(2)), Some((Lid(4), Lid(7))));
        let t = SweepTables {
            guid2lid: s.guid2lid.clone(),
            lfts: None,
            pkeys: Default::default(),
            topology: None,
        };
        assert!(lid_command(&st, &t).is_none(), "same map, no command");
        let mut other = s.guid2lid.clone();
        other.set(Guid(3), Lid(9), Lid(9));
        let t = SweepTables {
            guid2lid: other,
            ..t
        };
        assert!(lid_command(&st, &t).is_some());
    }
}
