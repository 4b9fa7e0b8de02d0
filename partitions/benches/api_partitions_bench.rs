//! Timing of API-managed partitions (issue 26, ChangeGuids / the UFM-compatible API) at their
//! limits: N partitions of MAX_API_MEMBERS (4,096) GUIDs each (every CA port of the fabric in
//! turn, the first half full, the rest limited) compiled strictly with the operator's file
//! (what every ChangeGuids prechecks and apply checks), then the compiled text loaded as the
//! master loads it. Run: `cargo bench -p partitions --bench api_partitions_bench [-- SPEC N]`
//! (default ft3:36 8).

use fabric::{GenSpec, NodeType};
use partitions::tenants::{
    ApiPartition, MAX_API_MEMBERS, Mode, PortDirectory, TenantSet, compile_all,
};
use std::collections::BTreeSet;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().filter(|a| a != "--bench").collect();
    let spec = args.get(1).map(String::as_str).unwrap_or("ft3:36");
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(8);
    let topo = spec
        .parse::<GenSpec>()
        .expect("spec")
        .generate()
        .expect("generate");
    let cas: Vec<_> = partitions::plan::end_ports(&topo)
        .into_iter()
        .filter(|e| e.node_type == NodeType::Ca)
        .map(|e| e.port_guid)
        .collect();
    let pkeys: Vec<ApiPartition> = (0..n)
        .map(|p| ApiPartition {
            pkey: 0x1000 + p as u16,
            name: ApiPartition::default_name(0x1000 + p as u16),
            members: (0..MAX_API_MEMBERS)
                .map(|i| (cas[(p * 977 + i) % cas.len()], i < MAX_API_MEMBERS / 2))
                .collect(),
            ipoib: true,
            index0: p == 0,
        })
        .collect();
    let dir = PortDirectory::from_topology(&topo);
    let operator = "Default=0x7fff,ipoib : ALL=full ;\n";
    let t0 = Instant::now();
    let c = compile_all(
        &TenantSet::default(),
        &pkeys,
        Some(operator),
        Some(&dir),
        &BTreeSet::new(),
        Mode::Strict,
    )
    .expect("compile");
    let compiled = t0.elapsed();
    let t1 = Instant::now();
    let policy = partitions::load(&c.text, partitions::Options::default()).expect("load");
    let loaded = t1.elapsed();
    println!(
        "{spec}: {} CA ports, {n} API partitions x {MAX_API_MEMBERS} GUIDs ({} bytes of policy): compile {:.1} ms, load {:.1} ms ({} partitions)",
        cas.len(),
        c.text.len(),
        compiled.as_secs_f64() * 1e3,
        loaded.as_secs_f64() * 1e3,
        policy.partitions.len()
    );
}
