//! Tenants naming a VF and a passed-through PF, compiled by `partitions::tenants`, programmed
//! into the simulator: the VF's tenant reaches its own hosts only, the fabric cannot keep the
//! PF's other VF out of that tenant (VIRT-W102), and the tenant audit over the tables read
//! back shows no leak between tenants.

mod common;

use common::*;
use fabric::{Guid, NodeType, PKey};
use fabric_sim::SimConfig;
use fabric_sim::virt::VirtModel;
use mad::PKeyTable;
use partitions::plan::Caps;
use partitions::tenants::{
    MemberRef, Mode, PortDirectory, StoragePartition, Tenant, TenantSet, compile, reachability,
    tenants_leak,
};

fn tenant(name: &str, pkey: u16, members: Vec<MemberRef>) -> Tenant {
    Tenant {
        name: name.into(),
        pkey,
        members,
        storage: vec!["nfs".into()],
        rdma: vec![],
        ipoib: false,
        default_full: false,
    }
}

const VF_RED: Guid = Guid(0xa1);
const VF_STRAY: Guid = Guid(0xa2);

#[test]
fn a_vf_in_a_tenant_gets_the_tenant_reach_and_so_does_its_sibling() {
    let mut s = small(SimConfig::default());
    s.bring_up();
    let (h1, h2, h3, h4, h5) = (s.hg(1), s.hg(2), s.hg(3), s.hg(4), s.hg(5));
    let mut v = VirtModel::new();
    v.pass_pf(&s.fab, h2, "red-vm0").unwrap();
    v.add_vf(&mut s.fab, h3, VF_RED, "red-vm1").unwrap();
    v.add_vf(&mut s.fab, h3, VF_STRAY, "unassigned").unwrap();
    let topo = small_topology();
    let dir = PortDirectory::from_topology(&topo).with_aliases(v.aliases());
    let set = TenantSet {
        tenants: vec![
            tenant(
                "red",
                0x101,
                vec![MemberRef::Port(h2), MemberRef::Port(VF_RED)],
            ),
            tenant(
                "blue",
                0x102,
                vec![MemberRef::Port(h4), MemberRef::Port(h5)],
            ),
        ],
        storage: vec![StoragePartition {
            name: "nfs".into(),
            pkey: 0x200,
            servers: vec![MemberRef::Port(h1)],
            ipoib: false,
        }],
    };
    let c = compile(&set, None, Some(&dir), Mode::Strict).unwrap();
    assert_eq!(
        c.tenants[0].ports,
        vec![h2, h3],
        "the VF resolves to its PF port"
    );
    // Plan and program every CA port's table (block 0) as the SM would.
    let opts = partitions::Options {
        sm_port_guid: Some(h1),
        ..partitions::Options::default()
    };
    let r = partitions::check(&c.text, opts, Some((&topo, &Caps::ibsim())));
    assert!(!r.has_errors(), "{:?}", r.lints);
    for pp in r.plan.unwrap().ports {
        if pp.port.node_type != NodeType::Ca {
            continue;
        }
        let i = (pp.port.node_guid.0 - 0x1000) / 0x10;
        let mut t = PKeyTable::default();
        t.keys.copy_from_slice(&pp.table.blocks[0].keys);
        let (st, _) = dr_set(&mut s.fab, s.sm, H_PATHS[i as usize - 1], 0, &t).unwrap();
        assert_eq!(st, 0);
    }
    // The red VF reaches red's passed-through PF and storage, never blue.
    assert!(
        v.deliver(&mut s.fab, VF_RED, h2, PKey(0x8101))
            .unwrap()
            .is_delivered()
    );
    assert!(
        v.deliver(&mut s.fab, VF_RED, h1, PKey(0x0200))
            .unwrap()
            .is_delivered()
    );
    let tables = v.port_tables(&s.fab);
    for dst in [h4, h5] {
        for k in tables[&VF_RED].iter().chain(&tables[&dst]) {
            assert!(
                !v.deliver(&mut s.fab, VF_RED, dst, *k)
                    .unwrap()
                    .is_delivered(),
                "{VF_RED} -> {dst} with {k}"
            );
        }
    }
    // The sibling VF was never named, yet the fabric gives it red's reach.
    assert!(
        v.deliver(&mut s.fab, VF_STRAY, h2, PKey(0x8101))
            .unwrap()
            .is_delivered()
    );
    let lints = v.shared_port_lints(|g| {
        set.tenants
            .iter()
            .find(|t| t.members.contains(&MemberRef::Port(g)))
            .map(|t| t.name.clone())
    });
    assert_eq!(lints.len(), 1, "{lints:?}");
    assert_eq!((lints[0].code, lints[0].pf), ("VIRT-W102", h3));
    // Tenant audit over the physical ports' tables: no leak between red and blue.
    let physical: std::collections::BTreeMap<Guid, Vec<PKey>> =
        tables.into_iter().filter(|(g, _)| !v.is_vf(*g)).collect();
    let reach = reachability(&c, &physical);
    assert!(tenants_leak(&reach).is_empty(), "{reach:?}");
    assert!(
        reach
            .iter()
            .any(|r| r.a == "tenant:red" && r.b == "tenant:red")
    );
}
