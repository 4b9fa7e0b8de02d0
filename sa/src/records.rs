//! The records read straight from the fabric view: NodeRecord, PortInfoRecord,
//! LinkRecord, SMInfoRecord, SwitchInfoRecord, LinearForwardingTableRecord,
//! P_KeyTableRecord, GUIDInfoRecord, MulticastForwardingTableRecord,
//! SLtoVLMappingTableRecord and VLArbitrationTableRecord. Each function lists every
//! candidate; the engine filters by the ComponentMask.

use crate::view::{FabricView, ViewNode, ViewPort};
use fabric::Lid;
use mad::sa::{
    GuidInfoRecord, LftRecord, LinkRecord, MftRecord, NodeRecord, PKeyTableRecord, PortInfoRecord,
    SlToVlRecord, SmInfoRecord, SwitchInfoRecord, VlArbRecord,
};
use mad::{LinearForwardingTable, MulticastForwardingTable, PKeyTable, PortInfo, SmInfo};

/// PortInfo.PortState Down.
const PORT_DOWN: u8 = 1;

/// One NodeRecord per end port (a switch once, through port 0).
pub fn node_records(view: &FabricView) -> Vec<NodeRecord> {
    let mut out = Vec::new();
    for n in &view.nodes {
        for p in n.end_ports() {
            let mut info = n.info;
            info.port_guid = p.guid;
            info.local_port_num = if n.is_switch() {
                info.local_port_num
            } else {
                p.num
            };
            out.push(NodeRecord {
                lid: p.lid,
                node_info: info,
                node_desc: n.desc,
            });
        }
    }
    out
}

/// One PortInfoRecord per port (a switch's ports carry its port-0 LID).
pub fn port_info_records(view: &FabricView) -> Vec<PortInfoRecord> {
    let mut out = Vec::new();
    for n in &view.nodes {
        let sw_lid = n.ports.first().map(|p| p.lid).unwrap_or_default();
        for p in n.ports.iter().filter(|p| p.present) {
            let lid = if n.is_switch() { sw_lid } else { p.lid };
            if lid.0 == 0 {
                continue;
            }
            let mut info = if p.info.port_state == PORT_DOWN {
                // IBA C14-24.2.1: of a port in Down only PortState and PortPhysicalState
                // are valid; OpenSM keeps only those (osm_physp_set_port_info).
                PortInfo {
                    port_state: PORT_DOWN,
                    port_phys_state: p.info.port_phys_state,
                    ..PortInfo::default()
                }
            } else {
                p.info
            };
            info.m_key = 0;
            out.push(PortInfoRecord {
                lid,
                port_num: p.num,
                options: 0,
                port_info: info,
            });
        }
    }
    out
}

/// One LinkRecord per direction of every link between ports with LIDs.
pub fn link_records(view: &FabricView) -> Vec<LinkRecord> {
    let mut out = Vec::new();
    let lid_of = |n: usize, p: u8| -> Lid {
        let node = &view.nodes[n];
        if node.is_switch() {
            node.ports.first().map(|x| x.lid).unwrap_or_default()
        } else {
            node.ports
                .get(usize::from(p))
                .map(|x| x.lid)
                .unwrap_or_default()
        }
    };
    for (ni, n) in view.nodes.iter().enumerate() {
        for p in n.ports.iter().filter(|p| p.present && p.num != 0) {
            let Some((rn, rp)) = p.remote else { continue };
            if rn >= view.nodes.len() {
                continue;
            }
            let (from, to) = (lid_of(ni, p.num), lid_of(rn, rp));
            if from.0 == 0 || to.0 == 0 {
                continue;
            }
            out.push(LinkRecord {
                from_lid: from,
                from_port: p.num,
                to_port: rp,
                to_lid: to,
            });
        }
    }
    out
}

/// The SM's SMInfoRecord (SM_Key shown only to a trusted requester).
pub fn sm_info_records(view: &FabricView, sm_key: u64, trusted: bool) -> Vec<SmInfoRecord> {
    vec![SmInfoRecord {
        lid: view.sm.lid,
        sm_info: SmInfo {
            guid: view.sm.port_guid,
            sm_key: if trusted { sm_key } else { 0 },
            act_count: view.sm.act_count,
            priority: view.sm.priority,
            sm_state: view.sm.state,
        },
    }]
}

/// One SwitchInfoRecord per switch with a LID.
pub fn switch_info_records(view: &FabricView) -> Vec<SwitchInfoRecord> {
    view.nodes
        .iter()
        .filter_map(|n| {
            let lid = n.ports.first()?.lid;
            Some(SwitchInfoRecord {
                lid,
                switch_info: n.switch_info?,
            })
            .filter(|_| lid.0 != 0)
        })
        .collect()
}

/// One LinearForwardingTableRecord per LFT block of every switch (up to LinearFDBTop).
pub fn lft_records(view: &FabricView) -> Vec<LftRecord> {
    let mut out = Vec::new();
    for n in view.nodes.iter().filter(|n| n.is_switch()) {
        let lid = n.ports.first().map(|p| p.lid).unwrap_or_default();
        if lid.0 == 0 {
            continue;
        }
        let top = n
            .switch_info
            .map(|s| usize::from(s.linear_fdb_top) + 1)
            .unwrap_or(n.lft.len())
            .min(n.lft.len());
        for (b, chunk) in n.lft[..top].chunks(64).enumerate() {
            let mut lft = LinearForwardingTable::default();
            lft.ports[..chunk.len()].copy_from_slice(chunk);
            out.push(LftRecord {
                lid,
                block: b as u16,
                lft,
            });
        }
    }
    out
}

/// One P_KeyTableRecord per 32-entry block of every port (switch ports carry the
/// switch's LID and their port number; CA ports their own LID), as many blocks as the port
/// can hold (NodeInfo.PartitionCap of a CA port, SwitchInfo.PartitionEnforcementCap of every
/// port of a switch, port 0 included), as OpenSM answers. A port
/// whose table the SM neither wrote nor read (a switch port it does not enforce on) holds the
/// default table: 0xFFFF at index 0 on a linked port, nothing on a Down one.
pub fn pkey_records(view: &FabricView) -> Vec<PKeyTableRecord> {
    const DEFAULT: &[u16] = &[0xFFFF];
    let mut out = Vec::new();
    for n in &view.nodes {
        let sw = n.is_switch();
        let sw_lid = n.ports.first().map(|p| p.lid).unwrap_or_default();
        for p in n.ports.iter().filter(|p| p.present) {
            let lid = if sw { sw_lid } else { p.lid };
            if lid.0 == 0 {
                continue;
            }
            let cap = match n.switch_info {
                Some(si) if sw => si.partition_enforcement_cap,
                _ => n.info.partition_cap,
            };
            let keys: &[u16] = if !p.pkeys.is_empty() {
                &p.pkeys
            } else if p.info.port_state == PORT_DOWN {
                &[]
            } else {
                DEFAULT
            };
            let blocks = usize::from(cap)
                .div_ceil(32)
                .max(keys.len().div_ceil(32))
                .max(1);
            for b in 0..blocks {
                let mut table = PKeyTable::default();
                let chunk = keys.get(b * 32..).unwrap_or_default();
                for (k, v) in table.keys.iter_mut().zip(chunk) {
                    *k = fabric::PKey(*v);
                }
                out.push(PKeyTableRecord {
                    lid,
                    block: b as u16,
                    port_num: p.num,
                    table,
                });
            }
        }
    }
    out
}

/// One GUIDInfoRecord per block of every end port with a LID (GuidCap GUIDs, 8 a block; at
/// least one block): index 0 of block 0 is the port GUID, the other entries the alias
/// GUIDs clients set (GUIDInfoRecord Set), 0 where none, as OpenSM answers.
pub fn guid_info_records(view: &FabricView, db: &crate::db::SaDb) -> Vec<GuidInfoRecord> {
    let mut out = Vec::new();
    for (_, p) in view.end_ports() {
        if p.lid.0 == 0 {
            continue;
        }
        let blocks = usize::from(p.info.guid_cap).div_ceil(8).max(1);
        for b in 0..blocks {
            let key = GuidInfoRecord {
                lid: p.lid,
                block: b as u8,
                guids: [0; 8],
            };
            out.push(crate::guidinfo::block_record(db, &key, p.guid));
        }
    }
    out
}

/// MulticastForwardingTableRecords as OpenSM lists them: for every switch with a LID and a
/// non-zero MFT block, every block from 0 to the highest non-zero one, each for every
/// position the switch has (16 ports a position, port 0 included), block by block. A block
/// the SM did not program holds zero (a switch's power-up table, as the sweeper takes it).
pub fn mft_records(view: &FabricView) -> Vec<MftRecord> {
    let mut out = Vec::new();
    for n in view.nodes.iter().filter(|n| n.is_switch()) {
        let lid = n.ports.first().map(|p| p.lid).unwrap_or_default();
        let top = n
            .mft
            .iter()
            .filter(|(_, m)| **m != [0; 32])
            .map(|((_, b), _)| *b)
            .max();
        let (Some(top), true) = (top, lid.0 != 0) else {
            continue;
        };
        // Positions covering ports 0..=NumPorts.
        let positions = (usize::from(n.info.num_ports) + 1).div_ceil(16).max(1) as u8;
        for block in 0..=top {
            for position in 0..positions {
                let port_masks = n.mft.get(&(position, block)).copied().unwrap_or([0; 32]);
                out.push(MftRecord {
                    lid,
                    position,
                    block,
                    table: MulticastForwardingTable { port_masks },
                });
            }
        }
    }
    out
}

/// The LID that names a port of `n` in a table record (a switch's port-0 LID).
fn record_lid(n: &crate::view::ViewNode, p: &crate::view::ViewPort) -> Lid {
    if n.is_switch() {
        n.ports.first().map(|x| x.lid).unwrap_or_default()
    } else {
        p.lid
    }
}

/// One SLtoVLMappingTableRecord per SLtoVL table the SM knows a port holds (it wrote it):
/// a switch's per (input port, output port), a CA port's with both port numbers 0
/// (reserved for a CA, IBA 15.2.5.4). Ports without a LID are left out.
pub fn sl_to_vl_records(view: &FabricView) -> Vec<SlToVlRecord> {
    let mut out = Vec::new();
    for (lid, n, p) in ports_with_lid(view) {
        for (input, table) in &p.sl2vl {
            let (in_port, out_port) = if n.is_switch() {
                (*input, p.num)
            } else {
                (0, 0)
            };
            out.push(SlToVlRecord {
                lid,
                in_port,
                out_port,
                table: *table,
            });
        }
    }
    out.sort_by_key(|r| (r.lid.0, r.out_port, r.in_port));
    out
}

/// Every present port whose records carry a LID ([`record_lid`]), with its node.
fn ports_with_lid(view: &FabricView) -> impl Iterator<Item = (Lid, &ViewNode, &ViewPort)> + '_ {
    view.nodes.iter().flat_map(|n| {
        (n.ports.iter().filter(|p| p.present))
            .map(move |p| (record_lid(n, p), n, p))
            .filter(|(lid, _, _)| lid.0 != 0)
    })
}

/// One VLArbitrationTableRecord per VLArb block the SM knows a port holds (it wrote it).
pub fn vl_arb_records(view: &FabricView) -> Vec<VlArbRecord> {
    let mut out: Vec<VlArbRecord> = ports_with_lid(view)
        .flat_map(|(lid, _, p)| {
            p.vlarb.iter().map(move |(block, table)| VlArbRecord {
                lid,
                port: p.num,
                block: *block,
                table: *table,
            })
        })
        .collect();
    out.sort_by_key(|r| (r.lid.0, r.port, r.block));
    out
}
