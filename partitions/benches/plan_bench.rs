//! Timing of check (parse + semantics + lints), plan and audit on a large generated fabric.
//! Run: `cargo bench -p partitions --bench plan_bench [-- SPEC TENANTS]` (default ft3:36 100).

use fabric::{GenSpec, Guid, NodeType};
use partitions::dump::PortReading;
use partitions::plan::Caps;
use partitions::{Options, audit, check};
use std::collections::BTreeMap;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().filter(|a| a != "--bench").collect();
    let spec = args.get(1).map(String::as_str).unwrap_or("ft3:36");
    let tenants: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100);
    let t0 = Instant::now();
    let topo = spec
        .parse::<GenSpec>()
        .expect("spec")
        .generate()
        .expect("generate");
    let generated = t0.elapsed();
    let cas: Vec<Guid> = partitions::plan::end_ports(&topo)
        .iter()
        .filter(|e| e.node_type == NodeType::Ca)
        .map(|e| e.port_guid)
        .collect();
    // Tenants share the hosts round-robin; host 0 is the storage server and the SM.
    let mut src = String::from("Default=0x7fff : ALL=limited, SELF=full ;\n");
    let per = (cas.len() - 1) / tenants.max(1);
    for t in 0..tenants {
        src.push_str(&format!("T{t}=0x{:04x}, ipoib :", 0x100 + t));
        let members: Vec<String> = cas[1 + t * per..1 + (t + 1) * per]
            .iter()
            .map(|g| format!("{:#x}=full", g.0))
            .collect();
        for chunk in members.chunks(100) {
            src.push_str(&format!("\n  {},", chunk.join(", ")));
        }
        src.push_str(" ;\n");
    }
    src.push_str(&format!(
        "Storage=0x0050 : {:#x}=full, ALL_CAS=limited ;\n",
        cas[0].0
    ));
    src.push_str(&format!("Storage=0x0050 : {:#x}=full ;\n", cas[0].0));
    let opts = Options {
        sm_port_guid: Some(cas[0]),
        ..Options::default()
    };
    let caps = Caps::default();
    let t1 = Instant::now();
    let r = check(&src, opts, None);
    let checked = t1.elapsed();
    assert!(!r.has_errors(), "{:?}", r.lints);
    let t2 = Instant::now();
    let r = check(&src, opts, Some((&topo, &caps)));
    let planned = t2.elapsed();
    let plan = r.plan.expect("plan");
    let readings: Vec<PortReading> = plan
        .ports
        .iter()
        .map(|p| PortReading {
            node: p.port.node_guid,
            port: p.port.port,
            pkeys: p.table.entries(),
            capacity: None,
            enforce_in: None,
            enforce_out: None,
        })
        .chain(plan.switch_ports.iter().map(|s| PortReading {
            node: s.switch_guid,
            port: s.port,
            pkeys: s.table.as_ref().map(|t| t.entries()).unwrap_or_default(),
            capacity: None,
            enforce_in: Some(s.enforce_in),
            enforce_out: Some(s.enforce_out),
        }))
        .collect();
    let t3 = Instant::now();
    let rep = audit(&topo, &readings, Some(&plan), &BTreeMap::new());
    let audited = t3.elapsed();
    assert!(rep.findings.is_empty());
    println!(
        "{spec}: {} end ports, {} switch ports planned, {tenants} tenants, file {} bytes",
        plan.ports.len(),
        plan.switch_ports.len(),
        src.len()
    );
    println!(
        "generate {generated:?}; check (no topology) {checked:?}; check+plan {planned:?}; audit {audited:?}"
    );
}
