//! Every lint code on a small policy.

use qos::{LintCode, Policy, QosOptions, lints};

#[test]
fn lints_fire_where_expected() {
    let text = "port-groups
 port-group
  name: empty
 end-port-group
 port-group
  name: cas
  node-type: CA
 end-port-group
end-port-groups
qos-setup
 vlarb-tables
  vlarb-scope
   group: cas
   vl-high-limit: 1
  end-vlarb-scope
  vlarb-scope
   group: cas
   vl-high-limit: 2
  end-vlarb-scope
 end-vlarb-tables
end-qos-setup
qos-levels
 qos-level
  name: default
  sl: 0
 end-qos-level
 qos-level
  name: unused
  sl: 1
 end-qos-level
 qos-level
  name: dropped
  sl: 3
  pkey: 0x10
 end-qos-level
end-qos-levels
qos-match-rules
 qos-match-rule
  pkey: 0x10
  qos-level-name: dropped
 end-qos-match-rule
 qos-match-rule
  qos-level-name: default
 end-qos-match-rule
end-qos-match-rules
qos-ulps
 default : 0
 sdp : 1
end-qos-ulps
";
    let p = Policy::parse(text).unwrap_or_else(|e| panic!("{e:#?}"));
    let tables =
        QosOptions::from_pairs([("qos_ca_sl2vl", "0,1,2,15,4,5,6,7,8,9,10,11,12,13,14,7")])
            .unwrap()
            .build()
            .unwrap();
    let got: Vec<(&str, u32, u32)> = lints(&p, &tables, &[(0x10, 5)])
        .iter()
        .map(|l| (l.code.code(), l.pos.line, l.pos.col))
        .collect();
    assert_eq!(
        got,
        [
            ("QOS-W006", 2, 2),   // empty group
            ("QOS-W007", 16, 3),  // second vlarb-scope shadowed
            ("QOS-W001", 27, 2),  // unused level
            ("QOS-W002", 31, 2),  // SL 3 -> VL 15 in qos_ca_sl2vl
            ("QOS-W003", 38, 2),  // pkey 0x10 has sl=5 in partitions.conf
            ("QOS-W004", 47, 12), // ulps default ignored
            ("QOS-W005", 48, 2),  // sdp after a catch-all rule
        ]
    );
    let all = lints(&p, &tables, &[(0x10, 5)]);
    assert_eq!(all[3].code, LintCode::SlDropped);
    assert!(all[3].to_string().contains("qos_ca_sl2vl"), "{}", all[3]);
}

#[test]
fn example_policy_is_clean() {
    let p = Policy::parse(include_str!("example-policy.conf")).unwrap();
    let tables = QosOptions::default().build().unwrap();
    assert_eq!(lints(&p, &tables, &[]), []);
}
