//! The example policy (storage SL 1, compute SL 0, IPoIB SL 2): parse, then match.

use fabric::{Guid, NodeType, PKey};
use qos::policy::ulps::{RDS_ISER_SERVICE_ID, RDS_PORT, SDP_SERVICE_ID};
use qos::{PathQuery, Policy, PortFacts, PortKind, QosOptions, QosTables, VlArb};

const EXAMPLE: &str = include_str!("example-policy.conf");

fn port<'a>(guid: u64, node_type: NodeType, desc: &'a str, pkeys: &'a [PKey]) -> PortFacts<'a> {
    PortFacts {
        node_guid: Guid(guid | 0x1_0000_0000),
        port_guid: Guid(guid),
        port_num: 1,
        node_type,
        node_desc: desc,
        pkeys,
        partitions: &[],
        is_sm_port: false,
    }
}

fn query<'a>(s: &'a PortFacts<'a>, d: &'a PortFacts<'a>) -> PathQuery<'a> {
    PathQuery {
        source: s,
        destination: d,
        pkey: None,
        service_id: None,
        qos_class: None,
    }
}

const DEFAULT_KEYS: &[PKey] = &[PKey(0xFFFF)];

#[test]
fn example_parses() {
    let p = Policy::parse(EXAMPLE).unwrap_or_else(|e| panic!("{e:#?}"));
    assert_eq!(p.port_groups.len(), 4);
    assert_eq!(p.vlarb_scopes.len(), 1);
    assert_eq!(p.sl2vl_scopes.len(), 1);
    // 3 file levels + generated SL 2, 1, 3, 4.
    let names: Vec<&str> = p.levels.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "DEFAULT", "Storage", "IPoIB", "ulp-sl2", "ulp-sl1", "ulp-sl3", "ulp-sl4"
        ]
    );
    // 2 match rules, then 7 ULP rules.
    assert_eq!(p.rules.len(), 9);
    let storage = p.level("storage").unwrap();
    assert_eq!(
        (
            storage.sl,
            storage.mtu_limit,
            storage.rate_limit,
            storage.packet_life
        ),
        (1, Some(5), Some(7), Some(18))
    );
    assert_eq!(p.levels[p.default_level.unwrap()].name, "DEFAULT");
    // Names compare case-insensitively with blanks ignored.
    assert!(p.group("tenanta").is_some());
}

#[test]
fn example_matches() {
    let p = Policy::parse(EXAMPLE).unwrap();
    let compute1 = port(
        0x0002c90300000101,
        NodeType::Ca,
        "compute01 HCA-1",
        DEFAULT_KEYS,
    );
    let compute2 = port(
        0x0002c90300000102,
        NodeType::Ca,
        "compute02 HCA-1",
        DEFAULT_KEYS,
    );
    let storage = port(
        0x0002c90300000012,
        NodeType::Ca,
        "stor01 HCA-1",
        DEFAULT_KEYS,
    );
    let srp_target = port(
        0x0002c90300000001,
        NodeType::Ca,
        "stor00 HCA-1",
        DEFAULT_KEYS,
    );
    let special = port(0x0002c90300000099, NodeType::Ca, "special", DEFAULT_KEYS);
    let sl = |q: PathQuery<'_>| p.level_for_path(&q).map(|l| (l.name.clone(), l.sl));

    // Compute to compute, nothing else in the query: the default, SL 0.
    assert_eq!(sl(query(&compute1, &compute2)), Some(("DEFAULT".into(), 0)));
    // Anything to storage: the first match rule, SL 1.
    assert_eq!(sl(query(&compute1, &storage)), Some(("Storage".into(), 1)));
    assert_eq!(
        sl(query(&compute1, &srp_target)),
        Some(("Storage".into(), 1))
    );
    // Storage to compute is not "destination: Storage".
    assert_eq!(sl(query(&storage, &compute1)).unwrap().1, 0);
    // IPoIB on the default partition (either membership): SL 2.
    let q = PathQuery {
        pkey: Some(PKey(0x7FFF)),
        ..query(&compute1, &compute2)
    };
    assert_eq!(sl(q), Some(("IPoIB".into(), 2)));
    let q = PathQuery {
        pkey: Some(PKey(0xFFFF)),
        ..query(&compute1, &compute2)
    };
    assert_eq!(sl(q).unwrap().1, 2);
    // IPoIB on 0x8002: the generated SL-2 level.
    let q = PathQuery {
        pkey: Some(PKey(0x8002)),
        ..query(&compute1, &compute2)
    };
    assert_eq!(sl(q), Some(("ulp-sl2".into(), 2)));
    // SDP to port 5001, RDS default port: SL 1; SDP to another port: default.
    let q = PathQuery {
        service_id: Some(SDP_SERVICE_ID + 5001),
        ..query(&compute1, &compute2)
    };
    assert_eq!(sl(q).unwrap().1, 1);
    let q = PathQuery {
        service_id: Some(SDP_SERVICE_ID + 5002),
        ..query(&compute1, &compute2)
    };
    assert_eq!(sl(q).unwrap().1, 0);
    let q = PathQuery {
        service_id: Some(RDS_ISER_SERVICE_ID + RDS_PORT),
        ..query(&compute1, &compute2)
    };
    assert_eq!(sl(q).unwrap().1, 1);
    let q = PathQuery {
        service_id: Some(0x10000000000),
        ..query(&compute1, &compute2)
    };
    assert_eq!(sl(q).unwrap().1, 3);
    // source-target-port-guid: either end.
    assert_eq!(sl(query(&special, &compute1)).unwrap().1, 4);
    assert_eq!(sl(query(&compute1, &special)).unwrap().1, 4);
    // A QoS class rule needs the class in the query, and the source in TenantA.
    let tenant_keys = [PKey(0x8011)];
    let tenant = port(0x0002c90300000201, NodeType::Ca, "t1", &tenant_keys);
    let q = PathQuery {
        qos_class: Some(8),
        ..query(&tenant, &compute1)
    };
    assert_eq!(sl(q).unwrap().1, 1);
    let q = PathQuery {
        qos_class: Some(10),
        ..query(&tenant, &compute1)
    };
    assert_eq!(sl(q).unwrap().1, 0);
    assert_eq!(sl(query(&tenant, &compute1)).unwrap().1, 0);
    // The SM's port is in TenantA (node-type: SELF).
    let sm = PortFacts {
        is_sm_port: true,
        ..compute2
    };
    let q = PathQuery {
        qos_class: Some(7),
        ..query(&sm, &compute1)
    };
    assert_eq!(sl(q).unwrap().1, 1);
}

#[test]
fn example_port_groups() {
    let p = Policy::parse(EXAMPLE).unwrap();
    let compute = p.group("Compute").unwrap();
    let c1 = port(
        0x0002c90300000101,
        NodeType::Ca,
        "compute01 HCA-1",
        DEFAULT_KEYS,
    );
    assert!(compute.contains(&c1));
    assert!(!compute.contains(&PortFacts { port_num: 2, ..c1 }));
    let named = ["compute", "storage"];
    let c9 = PortFacts {
        partitions: &named,
        ..port(
            0x0002c90300000109,
            NodeType::Ca,
            "compute09 HCA-1",
            DEFAULT_KEYS,
        )
    };
    assert!(compute.contains(&c9));
    let other = ["Compute"];
    assert!(
        !compute.contains(&PortFacts {
            partitions: &other,
            ..c9
        }),
        "partition names are exact"
    );
    let storage = p.group("Storage").unwrap();
    assert!(storage.contains(&port(0x0002c9030000001f, NodeType::Ca, "", &[])));
    assert!(!storage.contains(&port(0x0002c90300000020, NodeType::Ca, "", &[])));
}

#[test]
fn example_tables() {
    let p = Policy::parse(EXAMPLE).unwrap();
    let base: QosTables = QosOptions::from_pairs([("qos_high_limit", "1")])
        .unwrap()
        .build()
        .unwrap();
    // A storage CA port gets the vlarb-scope's values, the options' SL2VL.
    let stor = port(
        0x0002c90300000012,
        NodeType::Ca,
        "stor01 HCA-1",
        DEFAULT_KEYS,
    );
    let t = p.tables_for_port(&stor, PortKind::Ca, &base);
    assert_eq!(t.vl_high_limit, 4);
    assert_eq!(t.vlarb_high[0], VlArb { vl: 1, weight: 64 });
    assert_eq!(t.vlarb_high[1], VlArb::default());
    assert_eq!(
        t.vlarb_low[..2],
        [VlArb { vl: 0, weight: 64 }, VlArb { vl: 2, weight: 32 }]
    );
    assert_eq!(t.sl2vl, base.ca.sl2vl);
    assert_eq!(p.sl2vl_for(&stor, 0, 0), None);
    // A compute port: the options' tables, untouched.
    let c1 = port(
        0x0002c90300000101,
        NodeType::Ca,
        "compute01 HCA-1",
        DEFAULT_KEYS,
    );
    assert_eq!(p.tables_for_port(&c1, PortKind::Ca, &base), base.ca);
    // A switch external port: the sl2vl-scope for output ports 1-18, any input port.
    let sw = PortFacts {
        port_num: 3,
        ..port(0x0002c90300000500, NodeType::Switch, "sw1", &[])
    };
    let scoped = [0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7];
    assert_eq!(p.sl2vl_for(&sw, 7, 3), Some(scoped));
    assert_eq!(p.sl2vl_for(&PortFacts { port_num: 20, ..sw }, 7, 20), None);
    let t = p.tables_for_port(&sw, PortKind::SwitchExternal, &base);
    assert_eq!(t.sl2vl, scoped);
    assert_eq!(t.vl_high_limit, 1);
    // Switch port 0 ignores from/to.
    let sw0 = PortFacts { port_num: 0, ..sw };
    assert_eq!(
        p.tables_for_port(&sw0, PortKind::SwitchPort0, &base).sl2vl,
        scoped
    );
}

#[test]
fn ulp_only_policy_and_empty_policy() {
    // The shortest policy of the OpenSM doc, simplified form.
    let p = Policy::parse("qos-ulps\n    default  : 0 #default SL\nend-qos-ulps\n").unwrap();
    let a = port(1, NodeType::Ca, "a", DEFAULT_KEYS);
    assert_eq!(p.level_for_path(&query(&a, &a)).unwrap().sl, 0);
    // And its full form.
    let p = Policy::parse(
        "qos-levels\n qos-level\n  name: DEFAULT\n  sl: 0\n end-qos-level\nend-qos-levels\n",
    )
    .unwrap();
    assert_eq!(p.level_for_path(&query(&a, &a)).unwrap().name, "DEFAULT");
    // Nothing at all: no level, the caller's default applies.
    let p = Policy::parse("# nothing\n\n").unwrap();
    assert!(p.level_for_path(&query(&a, &a)).is_none());
}

#[test]
fn opensm_doc_simplified_example() {
    // doc section 6, every keyword (tab-indented line included).
    let text = "qos-ulps
    default                       : 0 # default SL
    sdp, port-num 30000           : 0
    sdp, port-num 10000-20000     : 0
    sdp                           : 1
    rds                           : 2
    iser, port-num 900            : 0
    iser                          : 3
    ipoib, pkey 0x0001            : 0
    ipoib                         : 4
    any, service-id 0x6234        : 6
    any, pkey 0x0ABC              : 6
    srp, target-port-guid 0x1234  : 5
    any, target-port-guid 0x0ABC-0xFFFFF : 6
    any, source-port-guid 0x5678  : 7
\tany, source-target-port-guid 0x9abcd : 8
end-qos-ulps
";
    let p = Policy::parse(text).unwrap_or_else(|e| panic!("{e:#?}"));
    assert_eq!(p.rules.len(), 14);
    let a = port(0x5678, NodeType::Ca, "a", DEFAULT_KEYS);
    let b = port(0x1234, NodeType::Ca, "b", DEFAULT_KEYS);
    let c = port(0x42, NodeType::Ca, "c", DEFAULT_KEYS);
    let sl = |q: PathQuery<'_>| p.level_for_path(&q).unwrap().sl;
    assert_eq!(sl(query(&c, &b)), 5, "srp target");
    assert_eq!(sl(query(&a, &c)), 7, "source guid");
    let q = PathQuery {
        service_id: Some(SDP_SERVICE_ID + 15000),
        ..query(&c, &b)
    };
    assert_eq!(sl(q), 0, "sdp port range wins over the srp rule below it");
    let q = PathQuery {
        service_id: Some(RDS_ISER_SERVICE_ID + 900),
        ..query(&c, &c)
    };
    assert_eq!(sl(q), 0, "iser port 900");
    let q = PathQuery {
        pkey: Some(PKey(0x8ABC)),
        ..query(&c, &c)
    };
    assert_eq!(sl(q), 6);
    assert_eq!(sl(query(&c, &c)), 0, "default");
}
