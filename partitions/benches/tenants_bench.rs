//! Timing of the tenant compiler at scale: compile (strict, node descriptions resolved),
//! plan of the compiled policy, and the tenant reachability audit over the planned tables.
//! Run: `cargo bench -p partitions --bench tenants_bench [-- SPEC TENANTS]` (default ft3:36 100).

use fabric::{GenSpec, Guid, NodeType, PKey};
use partitions::plan::Caps;
use partitions::tenants::{
    MemberRef, Mode, PortDirectory, RdmaLimit, StoragePartition, Tenant, TenantSet, compile,
    reachability, tenants_leak,
};
use partitions::{Options, check};
use std::collections::BTreeMap;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().filter(|a| a != "--bench").collect();
    let spec = args.get(1).map(String::as_str).unwrap_or("ft3:36");
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100);
    let topo = spec
        .parse::<GenSpec>()
        .expect("spec")
        .generate()
        .expect("generate");
    let ends = partitions::plan::end_ports(&topo);
    let cas: Vec<(Guid, Guid)> = ends
        .iter()
        .filter(|e| e.node_type == NodeType::Ca)
        .map(|e| (e.node_guid, e.port_guid))
        .collect();
    // Host 0 is the SM and the storage server; the rest are shared out; every other host of a
    // tenant is named by node description.
    let per = (cas.len() - 1) / n.max(1);
    let desc = |node: Guid| {
        let id = topo.node_by_guid(node).expect("node");
        topo.node(id).description.clone()
    };
    let set = TenantSet {
        tenants: (0..n)
            .map(|t| Tenant {
                name: format!("t{t}"),
                pkey: 0x100 + t as u16,
                members: cas[1 + t * per..1 + (t + 1) * per]
                    .iter()
                    .enumerate()
                    .map(|(i, (node, port))| {
                        if i % 2 == 0 {
                            MemberRef::Port(*port)
                        } else {
                            MemberRef::Node(desc(*node))
                        }
                    })
                    .collect(),
                storage: vec!["storage".into()],
                rdma: vec![RdmaLimit {
                    device: "mlx5_0".into(),
                    hca_handle: Some(64),
                    hca_object: Some(100_000),
                }],
                ipoib: true,
                default_full: false,
            })
            .collect(),
        storage: vec![StoragePartition {
            name: "storage".into(),
            pkey: 0x50,
            servers: vec![MemberRef::Port(cas[0].1)],
            ipoib: false,
        }],
    };
    let operator = "Default=0x7fff,ipoib : ALL=full ;\n";
    let t0 = Instant::now();
    let dir = PortDirectory::from_topology(&topo);
    let directory = t0.elapsed();
    let t1 = Instant::now();
    let c = compile(&set, Some(operator), Some(&dir), Mode::Strict).expect("compile");
    let compiled = t1.elapsed();
    let opts = Options {
        sm_port_guid: Some(cas[0].1),
        ..Options::default()
    };
    let t2 = Instant::now();
    let r = check(&c.text, opts, Some((&topo, &Caps::default())));
    let planned = t2.elapsed();
    assert!(!r.has_errors(), "{:?}", r.lints.first());
    let plan = r.plan.expect("plan");
    let tables: BTreeMap<Guid, Vec<PKey>> = plan
        .ports
        .iter()
        .filter(|p| p.port.node_type == NodeType::Ca)
        .map(|p| {
            (
                p.port.port_guid,
                p.table.valid().into_iter().map(|(_, k)| k).collect(),
            )
        })
        .collect();
    let t3 = Instant::now();
    let reach = reachability(&c, &tables);
    let audited = t3.elapsed();
    assert!(tenants_leak(&reach).is_empty());
    println!(
        "{spec}: {} CA ports, {n} tenants of {per} hosts (half by node description), compiled policy {} bytes",
        cas.len(),
        c.text.len()
    );
    println!(
        "directory {directory:?}; compile {compiled:?}; check+plan of the compiled policy {planned:?}; tenant reachability {audited:?} ({} group pairs)",
        reach.len()
    );
}
