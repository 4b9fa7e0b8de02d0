//! The body of the `parse` fuzz target, shared with the corpus replay test
//! (`partitions/tests/fuzz_corpus.rs`), so both run exactly the same checks: the
//! partitions.conf parser, the semantics, the planner and the dump parser must not panic on
//! any input, and every error position must lie inside the text.

use fabric::{Guid, NodeType, PortRef, Topology};
use partitions::plan::Caps;
use partitions::{Options, check, parse, parse_dump};

fn topo() -> Topology {
    let mut t = Topology::new();
    let Ok(sw) = t.add_node(NodeType::Switch, 4, Guid(0x200000), "sw") else {
        return t;
    };
    for i in 0..3u64 {
        if let Ok(h) = t.add_node(NodeType::Ca, 1, Guid(0x100000 + 3 * i), "h") {
            let _ = t.connect(PortRef::new(sw, i as u8 + 1), PortRef::new(h, 1));
        }
    }
    t
}

/// Runs every check on `data`; panics on a violation.
pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let lines = text.split('\n').count() as u32;
    match parse(&text) {
        Err(errors) => {
            assert!(!errors.is_empty());
            for e in &errors {
                assert!(e.pos.line >= 1 && e.pos.line <= lines, "{e}");
                assert!(e.pos.col >= 1);
                let _ = e.to_string();
            }
        }
        Ok(_) => {
            let t = topo();
            let caps = Caps {
                ca_partition_cap: 4,
                switch_partition_cap: 2,
                enforcement_cap: 3,
                ..Caps::default()
            };
            for allow_both in [false, true] {
                let opts = Options {
                    allow_both_pkeys: allow_both,
                    sm_port_guid: Some(Guid(0x100001)),
                    ..Options::default()
                };
                let r = check(&text, opts, Some((&t, &caps)));
                let plan = r.plan.expect("a file that parses is planned");
                for p in &plan.ports {
                    assert_eq!(p.table.entries().len(), p.table.cap as usize);
                }
            }
        }
    }
    let _ = parse_dump(&text);
}
