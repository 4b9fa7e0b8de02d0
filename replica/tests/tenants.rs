//! SetTenants in the replicated state: compare-and-set, refusal that changes nothing (with the
//! tenant conflict code), ApplyPolicy checked against the tenants in force, the effective
//! policy text, node descriptions resolved through the recorded topology, snapshots.

use fabric::{Guid, NodeType, PortRef, Topology};
use proto::state::{
    ApplyPolicy, Command, RdmaLimit, StoragePartition, Tenant, TenantMember, Tenants,
    command::Kind, tenant_member,
};
use replica::{Effect, ReplicatedState, topology_to_proto};

fn cmd(id: u64, kind: Kind) -> Command {
    Command {
        request_id: id,
        kind: Some(kind),
    }
}

fn guid(g: u64) -> TenantMember {
    TenantMember {
        kind: Some(tenant_member::Kind::PortGuid(g)),
    }
}

fn desc(d: &str) -> TenantMember {
    TenantMember {
        kind: Some(tenant_member::Kind::NodeDescription(d.into())),
    }
}

fn tenants(version: u64) -> Tenants {
    Tenants {
        tenants: vec![
            Tenant {
                name: "red".into(),
                pkey: 0x101,
                members: vec![guid(0x100004), desc("h2")],
                storage: vec!["nfs".into()],
                rdma: vec![RdmaLimit {
                    device: "mlx5_0".into(),
                    hca_handle: Some(2),
                    hca_object: Some(2000),
                }],
                ..Default::default()
            },
            Tenant {
                name: "blue".into(),
                pkey: 0x102,
                members: vec![guid(0x10000a)],
                storage: vec!["nfs".into()],
                ..Default::default()
            },
        ],
        storage: vec![StoragePartition {
            name: "nfs".into(),
            pkey: 0x200,
            servers: vec![guid(0x100001)],
            ipoib: false,
        }],
        version,
        pkeys: Vec::new(),
    }
}

/// Hosts h0..h3 on one switch, port GUID of hI = 0x100001 + 3*I.
fn topo() -> proto::state::Topology {
    let mut t = Topology::new();
    let sw = t
        .add_node(NodeType::Switch, 8, Guid(0x200000), "sw")
        .unwrap();
    for i in 0..4u64 {
        let h = t
            .add_node(NodeType::Ca, 1, Guid(0x100000 + 3 * i), format!("h{i}"))
            .unwrap();
        t.connect(PortRef::new(sw, i as u8 + 1), PortRef::new(h, 1))
            .unwrap();
    }
    topology_to_proto(&t)
}

fn policy(text: &str, v: u64) -> Kind {
    Kind::ApplyPolicy(ApplyPolicy {
        text: text.into(),
        expected_version: v,
    })
}

#[test]
fn accepted_then_stale_and_conflicting_sets_change_nothing() {
    let mut s = ReplicatedState::new();
    s.apply(1, 1, &cmd(0, Kind::SetTopology(topo())));
    let o = s.apply(2, 1, &cmd(7, Kind::SetTenants(tenants(0))));
    assert_eq!(o.result, Ok(Effect::TenantsSet { version: 1 }));
    assert_eq!(s.tenants().version, 1);
    let before = s.snapshot_bytes();
    // Stale: version 0 again.
    let o = s.apply(3, 1, &cmd(8, Kind::SetTenants(tenants(0))));
    assert_eq!(o.to_proto().code, "REPL-E201");
    // Conflict: blue takes red's PKey.
    let mut t = tenants(1);
    t.tenants[1].pkey = 0x101;
    let o = s.apply(4, 1, &cmd(9, Kind::SetTenants(t)));
    let p = o.to_proto();
    assert!(!p.accepted);
    assert_eq!(p.code, "TENANT-E004", "{}", p.message);
    // Unknown node description (the topology is known).
    let mut t = tenants(1);
    t.tenants[1].members.push(desc("h9"));
    let o = s.apply(5, 1, &cmd(10, Kind::SetTenants(t)));
    assert_eq!(o.to_proto().code, "TENANT-E008");
    // Malformed member.
    let mut t = tenants(1);
    t.tenants[1].members.push(TenantMember { kind: None });
    let o = s.apply(6, 1, &cmd(11, Kind::SetTenants(t)));
    assert_eq!(o.to_proto().code, "REPL-E202");
    // Nothing changed but the applied index.
    let mut after = ReplicatedState::restore(&s.snapshot_bytes()).unwrap();
    let mut b = ReplicatedState::restore(&before).unwrap();
    assert_eq!(after.tenants(), b.tenants());
    assert_eq!(
        after.effective_policy_text().unwrap(),
        b.effective_policy_text().unwrap()
    );
    // A correct next version is accepted.
    let o = after.apply(7, 1, &cmd(12, Kind::SetTenants(tenants(1))));
    assert_eq!(o.result, Ok(Effect::TenantsSet { version: 2 }));
    let o = b.apply(7, 1, &cmd(12, Kind::SetTenants(tenants(1))));
    assert!(o.is_accepted());
}

#[test]
fn policy_defining_a_tenant_pkey_is_refused_and_tenant_clashing_with_policy_too() {
    let mut s = ReplicatedState::new();
    s.apply(1, 1, &cmd(1, policy("Default=0x7fff : ALL=full ;\n", 0)));
    s.apply(2, 1, &cmd(2, Kind::SetTenants(tenants(0))));
    let o = s.apply(
        3,
        1,
        &cmd(
            3,
            policy(
                "Default=0x7fff : ALL=full ;\nLegacy=0x0102 : ALL=full ;\n",
                1,
            ),
        ),
    );
    let p = o.to_proto();
    assert_eq!(p.code, "TENANT-E005", "{}", p.message);
    assert_eq!(s.policy().version, 1);
    // The other way round: a tenant taking an operator PKey.
    let mut s = ReplicatedState::new();
    s.apply(1, 1, &cmd(1, policy("Legacy=0x0101 : ALL=full ;\n", 0)));
    let o = s.apply(2, 1, &cmd(2, Kind::SetTenants(tenants(0))));
    assert_eq!(o.to_proto().code, "TENANT-E005");
    assert_eq!(s.tenants().version, 0);
}

#[test]
fn effective_policy_is_the_operator_text_without_tenants_and_the_compiled_one_with_them() {
    let mut s = ReplicatedState::new();
    assert_eq!(s.effective_policy_text().unwrap(), None);
    let op = "Default=0x7fff : ALL=full ;\n";
    s.apply(1, 1, &cmd(1, policy(op, 0)));
    assert_eq!(s.effective_policy_text().unwrap().as_deref(), Some(op));
    s.apply(2, 1, &cmd(0, Kind::SetTopology(topo())));
    s.apply(3, 1, &cmd(2, Kind::SetTenants(tenants(0))));
    let text = s.effective_policy_text().unwrap().unwrap();
    assert!(text.starts_with(op), "{text}");
    assert!(text.contains(partitions::tenants::GENERATED_MARK));
    // h2 resolved through the recorded topology.
    assert!(text.contains("0x0000000000100007=full"), "{text}");
    assert!(partitions::parse(&text).is_ok());
    let c = s.compiled_tenants().unwrap();
    assert_eq!(
        c.tenant_of(Guid(0x100007)).map(|t| t.name.as_str()),
        Some("red")
    );
}

#[test]
fn without_topology_descriptions_wait_and_snapshots_keep_the_set() {
    let mut s = ReplicatedState::new();
    let o = s.apply(1, 1, &cmd(1, Kind::SetTenants(tenants(0))));
    assert!(o.is_accepted(), "{:?}", o.result);
    let c = s.compiled_tenants().unwrap();
    assert!(c.warnings.iter().any(|w| w.code == "TENANT-W003"));
    let r = ReplicatedState::restore(&s.snapshot_bytes()).unwrap();
    assert_eq!(r.tenants(), s.tenants());
    assert_eq!(r.tenants().version, 1);
    assert_eq!(r.snapshot_bytes(), s.snapshot_bytes());
}

#[test]
fn a_replica_port_cannot_be_a_tenant_member() {
    let mut s = ReplicatedState::new();
    let cfg = proto::state::ClusterConfig {
        replicas: vec![proto::state::ReplicaInfo {
            id: 1,
            port_guid: 0x10000a,
            ..Default::default()
        }],
        ..Default::default()
    };
    assert!(s.apply(1, 1, &cmd(0, Kind::SetConfig(cfg))).is_accepted());
    let o = s.apply(2, 1, &cmd(1, Kind::SetTenants(tenants(0))));
    assert_eq!(o.to_proto().code, "TENANT-E014", "{}", o.to_proto().message);
    assert_eq!(s.tenants().version, 0);
}
