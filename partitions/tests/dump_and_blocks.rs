//! The read-back formats (smpquery text with our headers, JSON) and block diffs.

use fabric::{Guid, PKey};
use partitions::plan::{BLOCK_LEN, PKeyTable};
use partitions::{PortReading, parse_dump, write_dump};

const SMPQUERY: &str = "ibwarn: [6895] sim_connect: attached as client 0 at node \"Switch1\"
### node 0x0000000000200000 port 2
   0: 0x9002 0xffff 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000
   8: 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000
16 pkeys capacity for this port
PartEnforceInb:..................1
PartEnforceOutb:.................0
### node 0x100006 port 1
   0: 0x9002 0xffff 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000
8 pkeys capacity for this port
";

#[test]
fn smpquery_text_parses() {
    let r = parse_dump(SMPQUERY).unwrap();
    assert_eq!(r.len(), 2);
    assert_eq!(r[0].node, Guid(0x200000));
    assert_eq!(r[0].port, 2);
    assert_eq!(r[0].pkeys.len(), 16);
    assert_eq!(r[0].pkeys[..2], [PKey(0x9002), PKey(0xffff)]);
    assert_eq!(r[0].capacity, Some(16));
    assert_eq!(
        (r[0].enforce_in, r[0].enforce_out),
        (Some(true), Some(false))
    );
    assert_eq!(r[1].node, Guid(0x100006));
    assert_eq!(r[1].enforce_in, None);
    assert_eq!(parse_dump(&write_dump(&r)).unwrap(), r);
}

#[test]
fn dump_errors_have_lines() {
    let e = parse_dump("   0: 0xffff\n").unwrap_err();
    assert_eq!(e.pos.line, 1);
    let e = parse_dump("### node 0x1 port 1\n   8: 0xffff\n").unwrap_err();
    assert_eq!(e.pos.line, 2);
    let e = parse_dump("### node 0x1 port 1\n   0: 0xfffff\n").unwrap_err();
    assert!(e.message.contains("bad P_Key"), "{e}");
    let e = parse_dump("### node zz port 1\n").unwrap_err();
    assert!(e.message.contains("GUID"), "{e}");
    let e = parse_dump("### node 0x1 port 1\nPartEnforceInb:....7\n").unwrap_err();
    assert_eq!(e.pos.line, 2);
}

#[test]
fn json_round_trip() {
    let json =
        r#"[{"node": "0x200000", "port": 3, "pkeys": ["0xffff", "0x8001"], "enforce_in": true}]"#;
    let r: Vec<PortReading> = serde_json::from_str(json).unwrap();
    assert_eq!(r[0].node, Guid(0x200000));
    assert_eq!(r[0].pkeys, vec![PKey(0xffff), PKey(0x8001)]);
    assert_eq!(r[0].enforce_in, Some(true));
    assert_eq!(r[0].enforce_out, None);
    let back: Vec<PortReading> = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
    assert_eq!(back, r);
    assert!(
        serde_json::from_str::<Vec<PortReading>>(r#"[{"node":"x","port":1,"pkeys":[]}]"#).is_err()
    );
}

#[test]
fn tables_are_blocks_of_32_and_diff_by_block() {
    let keys: Vec<PKey> = (1..=40).map(|i| PKey(0x8000 | i)).collect();
    let t = PKeyTable::from_entries(128, &keys);
    assert_eq!(t.blocks.len(), 4);
    assert!(
        t.blocks
            .iter()
            .enumerate()
            .all(|(i, b)| b.index as usize == i && b.keys.len() == BLOCK_LEN)
    );
    assert_eq!(t.get(39), PKey(0x8028));
    assert_eq!(t.get(40), PKey(0));
    // Only the block holding a changed entry needs writing.
    let mut keys2 = keys.clone();
    keys2[35] = PKey(0x7fff);
    let t2 = PKeyTable::from_entries(128, &keys2);
    let changed = t2.changed_blocks(&t);
    assert_eq!(changed.len(), 1);
    assert_eq!(changed[0].index, 1);
    assert!(t.changed_blocks(&t).is_empty());
    // Everything differs from an empty table except the all-zero blocks.
    assert_eq!(t.changed_blocks(&PKeyTable::empty(128)).len(), 2);
    // A capacity that is not a multiple of 32.
    let t = PKeyTable::from_entries(40, &keys);
    assert_eq!(t.blocks.len(), 2);
    assert_eq!(t.entries().len(), 40);
    assert_eq!(PKeyTable::from_entries(8, &keys).valid().len(), 8);
}
