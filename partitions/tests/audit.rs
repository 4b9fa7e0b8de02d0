//! Audit tests: a correct fabric yields no finding; each crafted break is found.

use fabric::{Guid, NodeType, PKey, PortRef, Topology};
use partitions::dump::PortReading;
use partitions::plan::{Caps, Plan};
use partitions::{Options, Severity, audit, check, parse_dump, write_dump};
use std::collections::BTreeMap;

/// Storage server 0x100001 (SM), tenant A = 0x100004 + 0x100007, tenant B = 0x10000a, 0x10000d.
fn topo() -> Topology {
    let mut t = Topology::new();
    let sw = t
        .add_node(NodeType::Switch, 8, Guid(0x200000), "sw")
        .unwrap();
    for i in 0..5u64 {
        let h = t
            .add_node(NodeType::Ca, 2, Guid(0x100000 + 3 * i), format!("h{i}"))
            .unwrap();
        t.connect(PortRef::new(sw, i as u8 + 1), PortRef::new(h, 1))
            .unwrap();
    }
    t
}

const POLICY: &str = "Default=0x7fff : ALL=limited, SELF=full ;
TenantA=0x0101, ipoib : 0x100004=full, 0x100007=full ;
TenantB=0x0102, ipoib : 0x10000a=full, 0x10000d=full ;
Storage=0x0200 : 0x100001=full, 0x100004, 0x100007, 0x10000a, 0x10000d ;
";

fn setup() -> (Topology, Plan, BTreeMap<u16, String>) {
    let t = topo();
    let opts = Options {
        sm_port_guid: Some(Guid(0x100001)),
        ..Options::default()
    };
    let r = check(POLICY, opts, Some((&t, &Caps::default())));
    assert!(!r.has_errors(), "{:?}", r.lints);
    let names = r
        .policy
        .unwrap()
        .partitions
        .iter()
        .map(|p| (p.pkey, p.name.clone()))
        .collect();
    (t, r.plan.unwrap(), names)
}

/// What a correctly programmed fabric reads back.
fn correct(plan: &Plan) -> Vec<PortReading> {
    let mut v = Vec::new();
    for p in &plan.ports {
        v.push(PortReading {
            node: p.port.node_guid,
            port: p.port.port,
            pkeys: p.table.entries(),
            capacity: Some(p.table.cap),
            enforce_in: None,
            enforce_out: None,
        });
    }
    for s in &plan.switch_ports {
        let t = s.table.as_ref().unwrap();
        v.push(PortReading {
            node: s.switch_guid,
            port: s.port,
            pkeys: t.entries(),
            capacity: Some(t.cap),
            enforce_in: Some(s.enforce_in),
            enforce_out: Some(s.enforce_out),
        });
    }
    v
}

fn set_keys(r: &mut [PortReading], node: u64, port: u8, keys: &[u16]) {
    let x = r
        .iter_mut()
        .find(|x| x.node == Guid(node) && x.port == port)
        .unwrap();
    x.pkeys = keys.iter().map(|k| PKey(*k)).collect();
}

fn codes(rep: &partitions::AuditReport) -> Vec<&'static str> {
    rep.findings.iter().map(|f| f.code).collect()
}

#[test]
fn correct_fabric_has_no_findings() {
    let (t, plan, names) = setup();
    let readings = correct(&plan);
    // Round trip through the text format on the way.
    let readings = parse_dump(&write_dump(&readings)).unwrap();
    let rep = audit(&t, &readings, Some(&plan), &names);
    assert!(rep.findings.is_empty(), "{:#?}", rep.findings);
    // Tenants do not exchange with each other; each reaches storage.
    let pair = |a: &str, b: &str| {
        rep.exchange
            .iter()
            .find(|g| (g.a == a && g.b == b) || (g.a == b && g.b == a))
    };
    assert!(pair("TenantA", "TenantB").is_none());
    assert_eq!(pair("TenantA", "TenantA").unwrap().via, vec![0x0101]);
    assert_eq!(
        pair("Storage", "TenantA").unwrap().via,
        vec![0x0200, 0x7fff]
    );
    assert_eq!(pair("Storage", "TenantA").unwrap().pairs, 2);
    let storage = rep.partitions.iter().find(|p| p.pkey == 0x0200).unwrap();
    assert_eq!((storage.full.len(), storage.limited.len()), (1, 4));
}

#[test]
fn tenant_full_in_other_tenants_partition() {
    let (t, plan, names) = setup();
    let mut r = correct(&plan);
    // Tenant A's 0x100004 gets TenantB's key as full member, and its switch port too
    // (a mis-programmed policy, so enforcement does not save us).
    set_keys(&mut r, 0x100003, 1, &[0x7fff, 0x8101, 0x0200, 0x8102]);
    set_keys(&mut r, 0x200000, 2, &[0x7fff, 0x8101, 0x0200, 0x8102]);
    let rep = audit(&t, &r, Some(&plan), &names);
    let c = codes(&rep);
    assert!(
        c.contains(&"AUDIT-E001") && c.contains(&"AUDIT-E002"),
        "{:#?}",
        rep.findings
    );
    let e1 = rep
        .findings
        .iter()
        .find(|f| f.code == "AUDIT-E001")
        .unwrap();
    assert!(
        e1.message.contains("TenantA <-> TenantB") && e1.message.contains("0x0102"),
        "{}",
        e1.message
    );
    assert!(rep.has_errors());
}

#[test]
fn storage_spoke_promoted_to_full_breaks_hub_and_spoke() {
    let (t, plan, names) = setup();
    let mut r = correct(&plan);
    // Tenant B's 0x10000a becomes a full storage member: it now reaches tenant A via 0x0200.
    set_keys(&mut r, 0x100009, 1, &[0x7fff, 0x8102, 0x8200]);
    set_keys(&mut r, 0x200000, 4, &[0x7fff, 0x8102, 0x8200]);
    let rep = audit(&t, &r, Some(&plan), &names);
    let e1: Vec<_> = rep
        .findings
        .iter()
        .filter(|f| f.code == "AUDIT-E001")
        .collect();
    assert!(
        e1.iter()
            .any(|f| f.message.contains("TenantA <-> TenantB") && f.message.contains("0x0200")),
        "{e1:#?}"
    );
}

#[test]
fn switch_enforcement_off_lets_a_forged_key_through() {
    let (t, plan, names) = setup();
    let mut r = correct(&plan);
    // 0x10000a's HCA table carries TenantA's key (forged / stale); the switch table is right.
    set_keys(&mut r, 0x100009, 1, &[0x7fff, 0x8102, 0x0200, 0x8101]);
    // With enforcement on, the switch drops it: a warning, no isolation break.
    let rep = audit(&t, &r, Some(&plan), &names);
    assert_eq!(codes(&rep), vec!["AUDIT-W003"], "{:#?}", rep.findings);
    let a = rep.partitions.iter().find(|p| p.pkey == 0x0101).unwrap();
    assert_eq!(a.blocked, vec![Guid(0x10000a)]);
    // Enforcement off on that switch port: the key is effective and tenants mix.
    let sp = r
        .iter_mut()
        .find(|x| x.node == Guid(0x200000) && x.port == 4)
        .unwrap();
    sp.enforce_in = Some(false);
    sp.enforce_out = Some(false);
    let rep = audit(&t, &r, Some(&plan), &names);
    let c = codes(&rep);
    assert!(
        c.contains(&"AUDIT-E001") && c.contains(&"AUDIT-E002") && c.contains(&"AUDIT-W005"),
        "{:#?}",
        rep.findings
    );
}

#[test]
fn enforcement_off_alone_is_a_warning_and_lost_keys_are_reported() {
    let (t, plan, names) = setup();
    let mut r = correct(&plan);
    let sp = r
        .iter_mut()
        .find(|x| x.node == Guid(0x200000) && x.port == 1)
        .unwrap();
    sp.enforce_out = Some(false);
    let rep = audit(&t, &r, Some(&plan), &names);
    assert_eq!(codes(&rep), vec!["AUDIT-W005"]);
    assert!(!rep.has_errors());
    // A tenant port that lost its storage key: function loss, not an isolation break.
    let mut r = correct(&plan);
    set_keys(&mut r, 0x100006, 1, &[0x7fff, 0x8101]);
    let rep = audit(&t, &r, Some(&plan), &names);
    let c = codes(&rep);
    assert_eq!(c, vec!["AUDIT-W004", "AUDIT-W008"]);
    assert!(rep.findings.iter().all(|f| f.severity == Severity::Warning));
}

#[test]
fn without_policy_reports_reachability_only() {
    let (t, plan, _) = setup();
    let rep = audit(&t, &correct(&plan), None, &BTreeMap::new());
    assert!(rep.findings.is_empty());
    assert!(!rep.exchange.is_empty());
    assert!(rep.exchange.iter().all(|g| g.unintended.is_empty()));
}
