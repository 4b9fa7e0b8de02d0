//! OpenSM's QoS options: defaults, overrides, strict errors, round trips.

use qos::{
    PortKind, QosError, QosOptions, TableConfig, VlArb, format_sl2vl, format_vlarb, parse_sl2vl,
    parse_vlarb,
};

/// osm_base.h OSM_DEFAULT_QOS_VLARB_HIGH / _LOW / _SL2VL.
const DEF_HIGH: &str = "0:4,1:0,2:0,3:0,4:0,5:0,6:0,7:0,8:0,9:0,10:0,11:0,12:0,13:0,14:0";
const DEF_LOW: &str = "0:0,1:4,2:4,3:4,4:4,5:4,6:4,7:4,8:4,9:4,10:4,11:4,12:4,13:4,14:4";
const DEF_SL2VL: &str = "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,7";

#[test]
fn built_in_defaults_are_opensm_strings() {
    let d = TableConfig::opensm_default();
    assert_eq!(parse_vlarb("k", DEF_HIGH).unwrap(), d.vlarb_high);
    assert_eq!(parse_vlarb("k", DEF_LOW).unwrap(), d.vlarb_low);
    assert_eq!(parse_sl2vl("k", DEF_SL2VL).unwrap(), d.sl2vl);
    assert_eq!((d.max_vls, d.vl_high_limit), (15, 0));
    let t = QosOptions::default().build().unwrap();
    for k in PortKind::ALL {
        assert_eq!(*t.get(k), d);
    }
}

#[test]
fn kind_overrides_default_overrides_builtin() {
    let o = QosOptions::from_pairs([
        ("qos_high_limit", "10"),
        ("qos_vlarb_low", "0:32,1:32"),
        ("qos_ca_vlarb_low", "0:8"),
        ("qos_swe_sl2vl", "0,1,0,1,0,1,0,1,0,1,0,1,0,1,0,15"),
        ("qos_rtr_max_vls", "4"),
    ])
    .unwrap();
    let t = o.build().unwrap();
    assert_eq!(t.ca.vlarb_low[0], VlArb { vl: 0, weight: 8 });
    assert_eq!(t.ca.vlarb_low[1], VlArb::default());
    assert_eq!(t.swe.vlarb_low[1], VlArb { vl: 1, weight: 32 });
    assert_eq!(t.sw0.vl_high_limit, 10);
    assert_eq!(t.swe.sl2vl[15], 15);
    assert_eq!(t.ca.sl2vl, TableConfig::opensm_default().sl2vl);
    assert_eq!(t.rtr.max_vls, 4);
    assert_eq!(t.ca.max_vls, 15);
}

#[test]
fn opensm_unset_spellings_clear() {
    // What `opensm -c` writes for an unset set.
    let o = QosOptions::from_pairs([
        ("qos", "TRUE"),
        ("qos_ca_max_vls", "0"),
        ("qos_ca_high_limit", "-1"),
        ("qos_ca_vlarb_high", "(null)"),
        ("qos_ca_vlarb_low", "(null)"),
        ("qos_ca_sl2vl", "(null)"),
        ("qos_policy_file", "/etc/opensm/qos-policy.conf"),
    ])
    .unwrap();
    assert_eq!(o.enabled, Some(true));
    assert_eq!(o.ca, Default::default());
    assert_eq!(o.build().unwrap().ca, TableConfig::opensm_default());
}

fn bad(key: &str, value: &str) -> (usize, String, String) {
    match QosOptions::default().set(key, value) {
        Err(e @ QosError::BadOptionValue { .. }) => {
            assert_eq!(e.code(), "QOS-E002");
            let QosError::BadOptionValue {
                key: k,
                index,
                entry,
                reason,
            } = e
            else {
                unreachable!()
            };
            assert_eq!(k, key);
            (index, entry, reason)
        }
        other => panic!("{key} {value}: {other:?}"),
    }
}

#[test]
fn strict_values_name_key_and_entry() {
    let (i, e, r) = bad("qos_vlarb_high", "0:4,16:4");
    assert_eq!((i, e.as_str()), (2, "16:4"));
    assert!(r.contains("VL out of range"), "{r}");
    let (i, e, r) = bad("qos_ca_vlarb_low", "0:4,1:256");
    assert_eq!((i, e.as_str()), (2, "1:256"));
    assert!(r.contains("weight"), "{r}");
    let (i, e, r) = bad("qos_swe_vlarb_low", "0:4,15:4");
    assert_eq!((i, e.as_str()), (2, "15:4"));
    assert!(r.contains("VL 15"), "{r}");
    let long = vec!["1:1"; 65].join(",");
    let (i, _, r) = bad("qos_vlarb_low", &long);
    assert_eq!(i, 65);
    assert!(r.contains("64"), "{r}");
    let (i, e, _) = bad("qos_vlarb_low", "0:4,1");
    assert_eq!((i, e.as_str()), (2, "1"));
    let (i, _, r) = bad("qos_sl2vl", "0,1,2,3,5,5,5,12,12,0");
    assert_eq!(i, 10);
    assert!(r.contains("exactly 16"), "{r}");
    let (i, e, _) = bad("qos_sl2vl", "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,7,0");
    assert_eq!((i, e.as_str()), (17, "0"));
    let (i, e, _) = bad("qos_rtr_sl2vl", "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,16");
    assert_eq!((i, e.as_str()), (16, "16"));
    let (_, e, r) = bad("qos_sw0_sl2vl", "0,1,2,3,4,5,6,7,08,9,10,11,12,13,14,7");
    assert_eq!(e, "08");
    assert!(r.contains("leading zero"), "{r}");
    bad("qos_max_vls", "16");
    bad("qos_high_limit", "256");
    bad("qos", "maybe");
}

#[test]
fn unknown_keys() {
    for k in [
        "qos_foo",
        "qos_ca_sl2vls",
        "qos_sw1_sl2vl",
        "sl2vl",
        "QOS_SL2VL",
    ] {
        let e = QosOptions::default().set(k, "1").unwrap_err();
        assert_eq!(e, QosError::UnknownOption { key: k.to_string() });
        assert_eq!(e.code(), "QOS-E001");
        assert!(e.to_string().starts_with("QOS-E001: unknown QoS option"));
    }
}

#[test]
fn option_strings_round_trip() {
    for s in [
        DEF_HIGH,
        DEF_LOW,
        "0:0,1:64,2:128,3:192,4:0,5:64,6:64,7:64",
        "0:4",
        "",
    ] {
        assert_eq!(format_vlarb(&parse_vlarb("k", s).unwrap()), s);
    }
    assert_eq!(
        format_sl2vl(&parse_sl2vl("k", DEF_SL2VL).unwrap()),
        DEF_SL2VL
    );
    // Hex and blanks read back canonically, to the same table.
    let t = parse_vlarb("k", " 0x1:0x40 , 2:8").unwrap();
    assert_eq!(format_vlarb(&t), "1:64,2:8");

    let o = QosOptions::from_pairs([
        ("qos", "FALSE"),
        ("qos_max_vls", "8"),
        ("qos_ca_high_limit", "255"),
        ("qos_swe_vlarb_high", "0:4,1:8"),
        ("qos_rtr_sl2vl", DEF_SL2VL),
    ])
    .unwrap();
    let pairs = o.to_pairs();
    let back = QosOptions::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))).unwrap();
    assert_eq!(back, o);

    // Tables -> option strings -> tables.
    let t = o.build().unwrap();
    let mut again = QosOptions::default();
    for k in PortKind::ALL {
        let c = t.get(k);
        let p = k.option_prefix();
        again
            .set(&format!("{p}max_vls"), &c.max_vls.to_string())
            .unwrap();
        again
            .set(&format!("{p}high_limit"), &c.vl_high_limit.to_string())
            .unwrap();
        again
            .set(&format!("{p}vlarb_high"), &format_vlarb(&c.vlarb_high))
            .unwrap();
        again
            .set(&format!("{p}vlarb_low"), &format_vlarb(&c.vlarb_low))
            .unwrap();
        again
            .set(&format!("{p}sl2vl"), &format_sl2vl(&c.sl2vl))
            .unwrap();
    }
    assert_eq!(again.build().unwrap(), t);
}
