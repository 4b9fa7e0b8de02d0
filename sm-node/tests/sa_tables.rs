//! MulticastForwardingTableRecord, SLtoVLMappingTableRecord and VLArbitrationTableRecord
//! on a fabric sm-core brought up on the simulator with QoS on and multicast groups: every
//! record is what the sweeper programmed (and the simulator holds, for SLtoVL), listed as
//! OpenSM lists them; nothing else is answered.

mod sa_common;

use fabric::{Guid, Lid};
use mad::sa::{MftRecord, SlToVlRecord, VlArbRecord, sa_status};
use mad::{Method, SmpAttribute, VlArbitrationTable};
use sa_common::*;
use sm_core::{McastGroup, SweeperConfig, VlAttr};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

fn qos_up() -> Up {
    let opts = qos::QosOptions::from_pairs([("qos_sl2vl", "0,1,2,3,0,1,2,3,0,1,2,3,0,1,2,3")])
        .expect("options");
    let cfg = SweeperConfig {
        qos: Some(Arc::new(opts.build().expect("tables"))),
        sm_key: 1,
        ..SweeperConfig::default()
    };
    let t = topo("ft2:4");
    let cas: Vec<Guid> = ca_ports(&t).iter().map(|c| c.2).collect();
    // MLID 0xC021: block 1; block 0 holds nothing and is answered all zero, as OpenSM does.
    let groups = vec![McastGroup {
        mlid: Lid(0xC021),
        members: vec![cas[0], cas[cas.len() - 1]],
    }];
    bring_up_with("ft2:4", cfg, groups)
}

#[test]
fn sl_to_vl_records_are_the_tables_programmed() {
    let up = qos_up();
    let mut e = up.engine();
    let me = up.lid_of_guid(up.sm_port);
    let all: Vec<SlToVlRecord> = query(&mut e, me, Method::GET_TABLE, 0, &SlToVlRecord::default())
        .records()
        .unwrap();
    let known = up
        .sw
        .vl_tables()
        .keys()
        .filter(|k| k.1 == VlAttr::SlToVl)
        .count();
    assert!(known > 0, "QoS on wrote no SLtoVL table");
    assert_eq!(all.len(), known);
    // Every record is what the simulator's port holds.
    let mut seen = BTreeSet::new();
    for r in &all {
        let (id, n) = up
            .topo
            .nodes()
            .find(|(_, n)| {
                let g = if n.is_switch() {
                    n.node_guid
                } else {
                    n.ports[1].guid
                };
                up.sw.guid2lid().get(g).map(|l| l.0) == Some(r.lid)
            })
            .expect("the record's LID names a node");
        let (i, o) = if n.is_switch() {
            (r.in_port, r.out_port)
        } else {
            assert_eq!((r.in_port, r.out_port), (0, 0), "reserved on a CA");
            (0, 1)
        };
        assert_eq!(r.table, up.fab.sl2vl(id, i, o).unwrap(), "{r:?}");
        assert!(seen.insert((r.lid, i, o)), "twice: {r:?}");
    }
    // In OpenSM's order: by LID, output port, input port.
    let keys: Vec<_> = all.iter().map(|r| (r.lid, r.out_port, r.in_port)).collect();
    assert!(keys.is_sorted());
    // A CA port is named by its LID: the port numbers asked are not matched; a switch's are.
    let ca = up.lid_of_guid(ca_ports(&up.topo)[1].2);
    let q = SlToVlRecord {
        lid: ca,
        in_port: 3,
        out_port: 4,
        ..Default::default()
    };
    let one: Vec<SlToVlRecord> = query(&mut e, me, Method::GET, 0b111, &q).records().unwrap();
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].table.vl[..4], [0, 1, 2, 3]);
    let sw = all.iter().find(|r| r.in_port != 0).unwrap();
    let q = SlToVlRecord {
        in_port: 0xFE,
        ..*sw
    };
    let none = query(&mut e, me, Method::GET, 0b111, &q);
    assert_eq!(none.status(), sa_status::NO_RECORDS);
}

#[test]
fn vl_arb_records_are_the_blocks_programmed() {
    let up = qos_up();
    let mut e = up.engine();
    let me = up.lid_of_guid(up.sm_port);
    let all: Vec<VlArbRecord> = query(&mut e, me, Method::GET_TABLE, 0, &VlArbRecord::default())
        .records()
        .unwrap();
    // The known blocks by (node GUID, port, block).
    let mut want: BTreeMap<(Guid, u8, u8), VlArbitrationTable> = BTreeMap::new();
    for ((g, attr, m), data) in up.sw.vl_tables() {
        if *attr == VlAttr::VlArb {
            let mut d = [0u8; 64];
            d.copy_from_slice(data);
            want.insert(
                (*g, (m & 0xFF) as u8, (m >> 16) as u8),
                VlArbitrationTable::decode(&d),
            );
        }
    }
    assert!(!want.is_empty(), "QoS on wrote no VLArb block");
    assert_eq!(all.len(), want.len());
    for r in &all {
        let owner = up
            .topo
            .nodes()
            .find_map(|(_, n)| {
                let g = if n.is_switch() {
                    n.node_guid
                } else {
                    n.ports[1].guid
                };
                (up.sw.guid2lid().get(g).map(|l| l.0) == Some(r.lid)).then_some(n.node_guid)
            })
            .expect("the record's LID names a node");
        assert_eq!(want.get(&(owner, r.port, r.block)), Some(&r.table), "{r:?}");
        assert!((1..=4).contains(&r.block));
    }
    // ComponentMask: LID and BlockNum select one block of a CA port (its port not matched).
    let ca = up.lid_of_guid(ca_ports(&up.topo)[2].2);
    let q = VlArbRecord {
        lid: ca,
        port: 9,
        block: 1,
        ..Default::default()
    };
    let one: Vec<VlArbRecord> = query(&mut e, me, Method::GET, 0b111, &q).records().unwrap();
    assert_eq!((one[0].lid, one[0].port, one[0].block), (ca, 1, 1));
}

#[test]
fn mft_records_list_every_block_up_to_the_highest_in_use() {
    let up = qos_up();
    let mut e = up.engine();
    let me = up.lid_of_guid(up.sm_port);
    let all: Vec<MftRecord> = query(&mut e, me, Method::GET_TABLE, 0, &MftRecord::default())
        .records()
        .unwrap();
    let known = up.sw.mft_tables();
    assert!(!known.is_empty(), "the group programmed no MFT block");
    // ft2:4 switches have 4 ports: one position; blocks 0 (all zero) and 1, per switch on
    // the tree.
    assert_eq!(all.len(), known.len() * 2);
    for (g, blocks) in known {
        let lid = up.lid_of_guid(*g);
        let mine: Vec<&MftRecord> = all.iter().filter(|r| r.lid == lid).collect();
        assert_eq!(mine.len(), 2, "{mine:?}");
        assert_eq!((mine[0].position, mine[0].block), (0, 0));
        assert_eq!(mine[0].table.port_masks, [0; 32]);
        assert_eq!((mine[1].position, mine[1].block), (0, 1));
        assert_eq!(mine[1].table.port_masks, blocks[&(0, 1)]);
        assert_ne!(
            mine[1].table.port_masks[1], 0,
            "MLID 0xC021 is entry 1 of block 1"
        );
    }
    // Position and BlockNum select; a block past the highest in use is no record.
    let (g, _) = known.iter().next().unwrap();
    let q = MftRecord {
        lid: up.lid_of_guid(*g),
        block: 1,
        ..Default::default()
    };
    let one: Vec<MftRecord> = query(&mut e, me, Method::GET, 0b1011, &q)
        .records()
        .unwrap();
    assert_eq!(one.len(), 1);
    let q = MftRecord { block: 2, ..q };
    let none = query(&mut e, me, Method::GET, 0b1011, &q);
    assert_eq!(none.status(), sa_status::NO_RECORDS);
    // The blocks as they are now replace the view's (a pass between sweeps).
    e.set_mfts(&Default::default());
    let after = query(&mut e, me, Method::GET_TABLE, 0, &MftRecord::default());
    assert_eq!(after.records::<MftRecord>().unwrap(), vec![]);
}

#[test]
fn without_qos_no_vl_table_record_is_answered() {
    let up = bring_up("ft2:4", None);
    let mut e = up.engine();
    let me = up.lid_of_guid(up.sm_port);
    let sl: Vec<SlToVlRecord> = query(&mut e, me, Method::GET_TABLE, 0, &SlToVlRecord::default())
        .records()
        .unwrap();
    let vla: Vec<VlArbRecord> = query(&mut e, me, Method::GET_TABLE, 0, &VlArbRecord::default())
        .records()
        .unwrap();
    assert!(sl.is_empty() && vla.is_empty());
}
