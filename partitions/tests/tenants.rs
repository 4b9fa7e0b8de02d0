//! Tenants compiled into the partition policy: isolation from the planned tables, the Default
//! partition, every conflict code, lenient resolution, and the tenant reachability audit.

use fabric::{Guid, NodeType, PKey, PortRef, Topology};
use partitions::plan::Caps;
use partitions::tenants::{
    Compiled, MemberRef, Mode, PortDirectory, RdmaLimit, StoragePartition, Tenant, TenantSet,
    compile, reachability, tenants_leak,
};
use partitions::{Options, check};
use std::collections::BTreeMap;

/// Hosts h0..h6 on one switch; port GUID of hI is 0x100001 + 3*I. h0 = storage, h1/h2 =
/// tenant red (h2 by description), h3/h4 = tenant blue, h5 = outside any tenant, h6 = SM.
fn topo() -> Topology {
    let mut t = Topology::new();
    let sw = t
        .add_node(NodeType::Switch, 12, Guid(0x200000), "sw")
        .unwrap();
    for i in 0..7u64 {
        let h = t
            .add_node(NodeType::Ca, 1, Guid(0x100000 + 3 * i), format!("h{i}"))
            .unwrap();
        t.connect(PortRef::new(sw, i as u8 + 1), PortRef::new(h, 1))
            .unwrap();
    }
    t
}

fn port(i: u64) -> Guid {
    Guid(0x100001 + 3 * i)
}

fn tenant(name: &str, pkey: u16, members: Vec<MemberRef>) -> Tenant {
    Tenant {
        name: name.into(),
        pkey,
        members,
        storage: vec!["nfs".into()],
        rdma: vec![RdmaLimit {
            device: "mlx5_0".into(),
            hca_handle: Some(2),
            hca_object: Some(2000),
        }],
        ipoib: true,
        default_full: false,
    }
}

fn set() -> TenantSet {
    TenantSet {
        tenants: vec![
            tenant(
                "red",
                0x0101,
                vec![MemberRef::Port(port(1)), MemberRef::Node("h2".into())],
            ),
            tenant(
                "blue",
                0x0102,
                vec![MemberRef::Port(port(3)), MemberRef::Port(port(4))],
            ),
        ],
        storage: vec![StoragePartition {
            name: "nfs".into(),
            pkey: 0x0200,
            servers: vec![MemberRef::Port(port(0))],
            ipoib: false,
        }],
    }
}

/// Plans the compiled text on the topology and returns each CA port's table.
fn tables(c: &Compiled, t: &Topology) -> BTreeMap<Guid, Vec<PKey>> {
    let opts = Options {
        sm_port_guid: Some(port(6)),
        ..Options::default()
    };
    let r = check(&c.text, opts, Some((t, &Caps::default())));
    assert!(!r.has_errors(), "{:?}\n{}", r.lints, c.text);
    r.plan
        .unwrap()
        .ports
        .iter()
        .filter(|p| p.port.node_type == NodeType::Ca)
        .map(|p| {
            (
                p.port.port_guid,
                p.table.valid().into_iter().map(|(_, k)| k).collect(),
            )
        })
        .collect()
}

fn reach(r: &[partitions::tenants::Reach], a: &str, b: &str) -> Option<Vec<u16>> {
    let (a, b) = if a <= b { (a, b) } else { (b, a) };
    r.iter()
        .find(|x| x.a == a && x.b == b)
        .map(|x| x.via.clone())
}

#[test]
fn two_tenants_and_storage_isolated_even_when_operator_default_is_all_full() {
    let t = topo();
    let dir = PortDirectory::from_topology(&t);
    let operator = "Default=0x7fff,ipoib : ALL=full ;\n";
    let c = compile(&set(), Some(operator), Some(&dir), Mode::Strict).unwrap();
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    assert_eq!(c.tenants[0].ports, vec![port(1), port(2)]);
    let tb = tables(&c, &t);
    // Tenant ports: own key full, storage limited, Default limited.
    for i in [1, 2] {
        let k = &tb[&port(i)];
        assert!(
            k.contains(&PKey(0x8101)) && k.contains(&PKey(0x0200)),
            "{k:?}"
        );
        assert!(
            k.contains(&PKey(0x7fff)) && !k.contains(&PKey(0xffff)),
            "{k:?}"
        );
    }
    assert!(tb[&port(0)].contains(&PKey(0x8200)));
    // Outside any tenant: still full in Default, as the operator wrote.
    assert!(tb[&port(5)].contains(&PKey(0xffff)));
    let r = reachability(&c, &tb);
    assert!(tenants_leak(&r).is_empty(), "{r:?}");
    assert_eq!(reach(&r, "tenant:red", "tenant:red"), Some(vec![0x0101]));
    assert_eq!(reach(&r, "tenant:blue", "tenant:blue"), Some(vec![0x0102]));
    // Both reach storage through nfs and Default (the server is full in Default).
    assert_eq!(
        reach(&r, "tenant:red", "storage:nfs"),
        Some(vec![0x0200, 0x7fff])
    );
    assert_eq!(
        reach(&r, "tenant:blue", "storage:nfs"),
        Some(vec![0x0200, 0x7fff])
    );
    assert_eq!(reach(&r, "tenant:red", "tenant:blue"), None);
}

#[test]
fn without_operator_file_others_stay_full_and_tenants_limited() {
    let t = topo();
    let dir = PortDirectory::from_topology(&t);
    let c = compile(&set(), None, Some(&dir), Mode::Strict).unwrap();
    assert!(c.text.starts_with("# no operator"), "{}", c.text);
    let tb = tables(&c, &t);
    assert!(tb[&port(5)].contains(&PKey(0xffff)));
    assert!(tb[&port(0)].contains(&PKey(0xffff)));
    assert!(tb[&port(3)].contains(&PKey(0x7fff)));
    assert!(tenants_leak(&reachability(&c, &tb)).is_empty());
}

#[test]
fn empty_set_compiles_to_the_operator_text_unchanged() {
    let op = "Default=0x7fff : ALL=full ;\n";
    let c = compile(&TenantSet::default(), Some(op), None, Mode::Strict).unwrap();
    assert_eq!(c.text, op);
}

#[test]
fn default_full_is_the_operator_choice_and_shows_as_a_leak() {
    let t = topo();
    let dir = PortDirectory::from_topology(&t);
    let mut s = set();
    for x in &mut s.tenants {
        x.default_full = true;
    }
    let c = compile(&s, None, Some(&dir), Mode::Strict).unwrap();
    let r = reachability(&c, &tables(&c, &t));
    let leaks = tenants_leak(&r);
    assert_eq!(leaks.len(), 1, "{r:?}");
    assert_eq!(leaks[0].via, vec![0x7fff]);
}

#[test]
fn operator_partition_joining_tenants_is_warned_and_audited() {
    let t = topo();
    let dir = PortDirectory::from_topology(&t);
    let op = "Default=0x7fff : ALL=limited, SELF=full ;\nShared=0x0005 : ALL_CAS=full ;\n";
    let c = compile(&set(), Some(op), Some(&dir), Mode::Strict).unwrap();
    assert!(
        c.warnings.iter().any(|w| w.code == "TENANT-W006"),
        "{:?}",
        c.warnings
    );
    let r = reachability(&c, &tables(&c, &t));
    assert_eq!(reach(&r, "tenant:blue", "tenant:red"), Some(vec![0x0005]));
}

fn code_of(s: &TenantSet, op: Option<&str>) -> &'static str {
    let dir = PortDirectory::from_topology(&topo());
    compile(s, op, Some(&dir), Mode::Strict).unwrap_err().code()
}

#[test]
fn every_conflict_has_its_code_and_nothing_compiles() {
    let mut s = set();
    s.tenants[1].pkey = 0x0101;
    assert_eq!(code_of(&s, None), "TENANT-E004");
    let mut s = set();
    s.storage[0].pkey = 0x0102;
    assert_eq!(code_of(&s, None), "TENANT-E004");
    let mut s = set();
    s.tenants[1].members.push(MemberRef::Port(port(2)));
    assert_eq!(code_of(&s, None), "TENANT-E007");
    assert_eq!(
        code_of(&set(), Some("Legacy=0x0102 : ALL=full ;\n")),
        "TENANT-E005"
    );
    assert_eq!(
        code_of(&set(), Some("red=0x0003 : ALL=full ;\n")),
        "TENANT-E006"
    );
    let mut s = set();
    s.tenants[0]
        .members
        .push(MemberRef::Node("no-such-host".into()));
    assert_eq!(code_of(&s, None), "TENANT-E008");
    let mut s = set();
    s.tenants[0].storage.push("ceph".into());
    assert_eq!(code_of(&s, None), "TENANT-E009");
    let mut s = set();
    s.storage[0].servers.push(MemberRef::Port(port(3)));
    assert_eq!(code_of(&s, None), "TENANT-E010");
    let mut s = set();
    let dup = s.tenants[0].rdma[0].clone();
    s.tenants[0].rdma.push(dup);
    assert_eq!(code_of(&s, None), "TENANT-E011");
    let mut s = set();
    s.tenants[0].rdma[0].device = "mlx5 0".into();
    assert_eq!(code_of(&s, None), "TENANT-E011");
    let mut s = set();
    s.tenants[0].rdma[0].hca_object = Some(u32::MAX);
    assert_eq!(code_of(&s, None), "TENANT-E011");
    assert_eq!(
        code_of(&set(), Some("Default=0x7fff : ALL=full\n")),
        "TENANT-E012"
    );
    for (name, pkey) in [("9lives", 5), ("Default", 5), ("a b", 5), ("", 5)] {
        let mut s = set();
        s.tenants[0].name = name.into();
        s.tenants[0].pkey = pkey;
        assert_eq!(code_of(&s, None), "TENANT-E001", "{name}");
    }
    let mut s = set();
    s.tenants[1].name = "red".into();
    assert_eq!(code_of(&s, None), "TENANT-E002");
    for pkey in [0, 0x7fff, 0x8001] {
        let mut s = set();
        s.tenants[0].pkey = pkey;
        assert_eq!(code_of(&s, None), "TENANT-E003", "{pkey:#x}");
    }
}

#[test]
fn vf_aliases_resolve_to_their_pf_and_cannot_be_split_across_tenants() {
    let t = topo();
    // Two VFs of h3's PF.
    let dir = PortDirectory::from_topology(&t)
        .with_aliases([(Guid(0xaa01), port(3)), (Guid(0xaa02), port(3))]);
    let mut s = set();
    s.tenants[1].members = vec![MemberRef::Port(Guid(0xaa01))];
    let c = compile(&s, None, Some(&dir), Mode::Strict).unwrap();
    assert_eq!(c.tenants[1].ports, vec![port(3)]);
    s.tenants[0].members.push(MemberRef::Port(Guid(0xaa02)));
    let e = compile(&s, None, Some(&dir), Mode::Strict).unwrap_err();
    assert_eq!(e.code(), "TENANT-E013", "{e}");
}

#[test]
fn lenient_mode_fails_closed() {
    let t = topo();
    let dir = PortDirectory::from_topology(&t);
    let mut s = set();
    s.tenants[1].members.push(MemberRef::Port(port(2)));
    s.tenants[0].members.push(MemberRef::Node("gone".into()));
    let c = compile(&s, None, Some(&dir), Mode::Lenient).unwrap();
    let codes: Vec<&str> = c.warnings.iter().map(|w| w.code).collect();
    assert!(
        codes.contains(&"TENANT-W002") && codes.contains(&"TENANT-W004"),
        "{codes:?}"
    );
    // The contested port joins neither tenant and stays limited in Default.
    assert!(c.tenant_of(port(2)).is_none());
    let tb = tables(&c, &t);
    let k = &tb[&port(2)];
    assert!(
        !k.iter()
            .any(|k| k.partition() == 0x0101 || k.partition() == 0x0102),
        "{k:?}"
    );
    assert!(tenants_leak(&reachability(&c, &tb)).is_empty());
}

#[test]
fn unknown_guids_are_kept_with_a_warning_and_descriptions_wait_for_a_fabric() {
    let c = compile(&set(), None, None, Mode::Strict).unwrap();
    assert!(c.warnings.iter().any(|w| w.code == "TENANT-W003"));
    assert_eq!(c.tenants[0].ports, vec![port(1)]);
    let dir = PortDirectory::from_topology(&topo());
    let mut s = set();
    s.tenants[0].members.push(MemberRef::Port(Guid(0xdead)));
    let c = compile(&s, None, Some(&dir), Mode::Strict).unwrap();
    assert!(c.warnings.iter().any(|w| w.code == "TENANT-W001"));
    assert!(c.text.contains("0x000000000000dead=full"), "{}", c.text);
}

#[test]
fn empty_tenant_compiles_to_a_partition_without_ports() {
    let mut s = set();
    s.tenants[1].members.clear();
    let dir = PortDirectory::from_topology(&topo());
    let c = compile(&s, None, Some(&dir), Mode::Strict).unwrap();
    assert!(c.text.contains("blue=0x0102,ipoib : NONE ;"), "{}", c.text);
    let tb = tables(&c, &topo());
    assert!(!tb[&port(3)].iter().any(|k| k.partition() == 0x0102));
}

#[test]
fn sm_ports_cannot_join_tenants_and_default_full_is_warned() {
    let t = topo();
    let dir = PortDirectory::from_topology(&t);
    let sm: std::collections::BTreeSet<Guid> = [port(3)].into();
    let e =
        partitions::tenants::compile_with(&set(), None, Some(&dir), &sm, Mode::Strict).unwrap_err();
    assert_eq!(e.code(), "TENANT-E014", "{e}");
    let c =
        partitions::tenants::compile_with(&set(), None, Some(&dir), &sm, Mode::Lenient).unwrap();
    assert!(c.warnings.iter().any(|w| w.code == "TENANT-W007"));
    assert_eq!(c.tenants[1].ports, vec![port(4)]);
    let mut s = set();
    s.tenants[0].default_full = true;
    let c = compile(&s, None, Some(&dir), Mode::Strict).unwrap();
    assert!(
        c.warnings.iter().any(|w| w.code == "TENANT-W008"),
        "{:?}",
        c.warnings
    );
    // One default_full tenant reaches the other (limited) through Default.
    let leaks = tenants_leak(&reachability(&c, &tables(&c, &t)))
        .into_iter()
        .map(|r| r.via.clone())
        .collect::<Vec<_>>();
    assert_eq!(leaks, vec![vec![0x7fff]]);
}
