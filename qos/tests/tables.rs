//! The per-port table rules of osm_qos.c, each pinned with a concrete table.

use qos::{QosOptions, TableConfig, VlArb, has_vlarb, op_vls, vl_mask};

fn arb(v: &[(u8, u8)]) -> Vec<VlArb> {
    v.iter().map(|&(vl, weight)| VlArb { vl, weight }).collect()
}

#[test]
fn vl_mask_per_operational_vls_code() {
    // (1 << (op_vls - 1)) - 1: 1 = VL0, 2 = VL0-1, 3 = VL0-3, 4 = VL0-7, 5 = VL0-14.
    assert_eq!(
        [1, 2, 3, 4, 5].map(vl_mask),
        [0b0000, 0b0001, 0b0011, 0b0111, 0b1111]
    );
    assert_eq!(vl_mask(0), 0);
}

#[test]
fn default_sl2vl_masked() {
    let t = TableConfig::opensm_default();
    assert_eq!(
        t.sl2vl,
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 7]
    );
    assert_eq!(t.sl2vl_masked(1), [0; 16]);
    assert_eq!(
        t.sl2vl_masked(2),
        [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1]
    );
    assert_eq!(
        t.sl2vl_masked(3),
        [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3]
    );
    assert_eq!(
        t.sl2vl_masked(4),
        [0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7]
    );
    assert_eq!(t.sl2vl_masked(5), t.sl2vl);
}

#[test]
fn sl2vl_vl15_is_kept_unmasked() {
    let mut t = TableConfig::opensm_default();
    t.sl2vl[3] = 15;
    t.sl2vl[9] = 14;
    let m = t.sl2vl_masked(2);
    assert_eq!(m[3], 15, "VL 15 (drop) survives the mask");
    assert_eq!(m[9], 0, "VL 14 & 1");
}

#[test]
fn vlarb_default_blocks_per_caps() {
    let t = TableConfig::opensm_default();
    // Low cap 8, op_vls 4 (VL0-7): entries 0-7 of the low table, the rest zero.
    let b0 = t.vlarb_block(0, 4, 8, 8).unwrap();
    assert_eq!(
        b0[..8],
        arb(&[
            (0, 0),
            (1, 4),
            (2, 4),
            (3, 4),
            (4, 4),
            (5, 4),
            (6, 4),
            (7, 4)
        ])[..]
    );
    assert!(b0[8..].iter().all(|e| *e == VlArb::default()));
    // High table: 0:4 then zero weights.
    let b2 = t.vlarb_block(2, 4, 8, 8).unwrap();
    assert_eq!(b2[..3], arb(&[(0, 4), (1, 0), (2, 0)])[..]);
    // Caps of 8 reach no second block; a cap of 0 no block at all; block 4 does not exist.
    assert_eq!(t.vlarb_block(1, 4, 8, 8), None);
    assert_eq!(t.vlarb_block(3, 4, 8, 8), None);
    assert_eq!(t.vlarb_block(0, 4, 0, 8), None);
    assert_eq!(t.vlarb_block(2, 4, 8, 0), None);
    assert_eq!(t.vlarb_block(4, 4, 64, 64), None);
}

#[test]
fn vlarb_vls_are_masked_by_operational_vls() {
    let t = TableConfig::opensm_default();
    // 15 entries (cap 15), op_vls 3 (VL0-3): VL 4..14 fold onto 0..3, weights kept.
    let b0 = t.vlarb_block(0, 3, 15, 15).unwrap();
    let vls: Vec<u8> = b0[..15].iter().map(|e| e.vl).collect();
    assert_eq!(vls, [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2]);
    assert!(b0[1..15].iter().all(|e| e.weight == 4));
    assert!(b0[15..].iter().all(|e| *e == VlArb::default()));
}

#[test]
fn vlarb_second_block_length_is_cap_mod_32() {
    let mut t = TableConfig::opensm_default();
    for (i, e) in t.vlarb_low.iter_mut().enumerate() {
        *e = VlArb {
            vl: (i % 8) as u8,
            weight: i as u8 + 1,
        };
    }
    // Cap 40: block 1 carries entries 32..40.
    let b1 = t.vlarb_block(1, 5, 40, 0).unwrap();
    assert_eq!(b1[0], VlArb { vl: 0, weight: 33 });
    assert_eq!(b1[7], VlArb { vl: 7, weight: 40 });
    assert_eq!(b1[8], VlArb::default());
    // Cap 64: OpenSM's length is 64 % 32 = 0: the second block goes out all zeros.
    assert_eq!(t.vlarb_block(1, 5, 64, 0), Some([VlArb::default(); 32]));
    // Block 0 is full at any cap >= 32.
    assert_eq!(
        t.vlarb_block(0, 5, 64, 0).unwrap()[31],
        VlArb { vl: 7, weight: 32 }
    );
}

#[test]
fn doc_example_eight_vls() {
    // doc/QoS_management_in_OpenSM.txt section 7: VL0 high priority, limit 6 x 4 KB.
    let o = QosOptions::from_pairs([
        ("qos_ca_max_vls", "15"),
        ("qos_ca_high_limit", "6"),
        ("qos_ca_vlarb_high", "0:4"),
        (
            "qos_ca_vlarb_low",
            "0:0,1:64,2:128,3:192,4:0,5:64,6:64,7:64",
        ),
        ("qos_ca_sl2vl", "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,7"),
    ])
    .unwrap();
    let t = o.build().unwrap().ca;
    assert_eq!(t.vl_high_limit, 6);
    let high = t.vlarb_block(2, 4, 8, 8).unwrap();
    assert_eq!(high[0], VlArb { vl: 0, weight: 4 });
    assert!(high[1..].iter().all(|e| *e == VlArb::default()));
    let low = t.vlarb_block(0, 4, 8, 8).unwrap();
    assert_eq!(
        low[..8],
        arb(&[
            (0, 0),
            (1, 64),
            (2, 128),
            (3, 192),
            (4, 0),
            (5, 64),
            (6, 64),
            (7, 64)
        ])[..]
    );
}

#[test]
fn no_vlarb_with_one_data_vl() {
    assert!(!has_vlarb(1));
    assert!(has_vlarb(2));
    assert!(has_vlarb(5));
}

#[test]
fn operational_vls_negotiation() {
    // With a peer: the smaller VLCap, capped by max_op_vls.
    assert_eq!(op_vls(4, Some(3), 0, 5), 3);
    assert_eq!(op_vls(5, Some(5), 0, 3), 3);
    // Without a peer: the port's current OperationalVLs.
    assert_eq!(op_vls(4, None, 2, 5), 2);
    // 0 is forced to 1 (VL0).
    assert_eq!(op_vls(0, Some(4), 0, 5), 1);
    assert_eq!(op_vls(4, None, 0, 5), 1);
}
