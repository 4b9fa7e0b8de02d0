//! Helpers shared by the fabric integration tests.
#![allow(dead_code)]

use fabric::{Guid, NodeType, Topology};
use std::collections::BTreeSet;

/// One node's identity, independent of node order.
pub type NodeKey = (u64, NodeType, String, u64, u32, u16, u8, Vec<u64>);
/// One link, by GUIDs and port numbers, lower end first.
pub type LinkKey = ((u64, u8), (u64, u8), u8, &'static str);

/// The topology as order-independent sets, for comparing fabrics whose node order differs
/// (e.g. a file we wrote and what ibnetdiscover reports for it).
pub fn canonical(t: &Topology) -> (BTreeSet<NodeKey>, BTreeSet<LinkKey>) {
    let nodes = t
        .nodes()
        .map(|(_, n)| {
            (
                n.node_guid.0,
                n.node_type,
                n.description.clone(),
                n.sys_image_guid.0,
                n.vendor_id,
                n.device_id,
                n.num_ports(),
                n.ports.iter().skip(1).map(|p| p.guid.0).collect(),
            )
        })
        .collect();
    let links = t
        .links()
        .map(|(a, b)| {
            let ea = (t.node(a.node).node_guid.0, a.port.0);
            let eb = (t.node(b.node).node_guid.0, b.port.0);
            let port = &t.node(a.node).ports[a.port.0 as usize];
            let (lo, hi) = if ea <= eb { (ea, eb) } else { (eb, ea) };
            (lo, hi, port.width.lanes(), port.speed.name())
        })
        .collect();
    (nodes, links)
}

/// Counts (switches, CAs, links).
pub fn counts(t: &Topology) -> (usize, usize, usize) {
    (t.switches().count(), t.cas().count(), t.num_links())
}

/// The node with this GUID (panics if absent).
pub fn by_guid(t: &Topology, g: u64) -> &fabric::Node {
    t.node(t.node_by_guid(Guid(g)).expect("node present"))
}

pub const EXAMPLES: &str = testenv::NET_EXAMPLES;

/// Reads an ibsim example for test `test`, or None when ibsim-utils is missing (reported by
/// testenv: a failure under CI=true, a `SKIPPED:` line otherwise).
pub fn example(test: &str, name: &str) -> Option<String> {
    let path = format!("{EXAMPLES}/{name}");
    if !testenv::require_files(test, &[&path]) {
        return None;
    }
    Some(std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {path}: {e}")))
}
