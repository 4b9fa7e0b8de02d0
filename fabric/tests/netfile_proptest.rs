//! Property tests: random small topologies round-trip through the file format, and the
//! parser never panics on arbitrary or mangled input.

use fabric::netfile::{parse, write};
use fabric::{Guid, LinkSpeed, LinkWidth, NodeId, NodeType, PortRef, Topology};
use proptest::prelude::*;

const WIDTHS: [LinkWidth; 5] = [
    LinkWidth::X1,
    LinkWidth::X2,
    LinkWidth::X4,
    LinkWidth::X8,
    LinkWidth::X12,
];
const SPEEDS: [LinkSpeed; 7] = [
    LinkSpeed::Sdr,
    LinkSpeed::Ddr,
    LinkSpeed::Qdr,
    LinkSpeed::Fdr,
    LinkSpeed::Edr,
    LinkSpeed::Hdr,
    LinkSpeed::Ndr,
];

#[derive(Debug, Clone)]
struct NodePlan {
    kind: u8,
    ports: u8,
    desc: String,
    vendor: u32,
    device: u16,
    sys: u64,
    custom_port_guid: Option<u64>,
}

fn node_plan() -> impl Strategy<Value = NodePlan> {
    (
        0u8..3,
        1u8..12,
        "[A-Za-z0-9 _;:#.=/-]{1,64}",
        0u32..0x0100_0000,
        any::<u16>(),
        1u64..,
        proptest::option::of(1u64..),
    )
        .prop_map(
            |(kind, ports, desc, vendor, device, sys, custom_port_guid)| NodePlan {
                kind,
                ports,
                desc,
                vendor,
                device,
                sys,
                custom_port_guid,
            },
        )
}

fn build(plans: &[NodePlan], links: &[(usize, u8, usize, u8, usize, usize)]) -> Topology {
    let mut t = Topology::new();
    for (i, p) in plans.iter().enumerate() {
        let kind = [NodeType::Ca, NodeType::Switch, NodeType::Router][usize::from(p.kind)];
        // GUIDs spaced so that CA port GUIDs (node + n) never collide with other nodes.
        let guid = Guid(0x5000 + 0x100 * i as u64);
        let id = t
            .add_node(kind, u16::from(p.ports), guid, p.desc.clone())
            .unwrap();
        t.set_identity(id, Guid(p.sys), p.vendor, p.device);
    }
    for &(a, pa, b, pb, w, s) in links {
        let (a, b) = (
            NodeId((a % plans.len()) as u32),
            NodeId((b % plans.len()) as u32),
        );
        let pa = 1 + pa % t.node(a).num_ports();
        let pb = 1 + pb % t.node(b).num_ports();
        let (ra, rb) = (PortRef::new(a, pa), PortRef::new(b, pb));
        if t.connect(ra, rb).is_ok() {
            t.set_link_attrs(ra, WIDTHS[w % 5], SPEEDS[s % 7]).unwrap();
        }
    }
    // The file lists cabled ports only, so only a cabled port can carry its own GUID.
    for (i, p) in plans.iter().enumerate() {
        let port = PortRef::new(NodeId(i as u32), 1);
        if let (Some(g), Some(_)) = (p.custom_port_guid, t.remote(port)) {
            t.set_port_guid(port, Guid(g)).unwrap();
        }
    }
    t
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn write_parse_round_trip(
        plans in proptest::collection::vec(node_plan(), 1..12),
        links in proptest::collection::vec((0usize..64, any::<u8>(), 0usize..64, any::<u8>(), 0usize..5, 0usize..7), 0..40),
    ) {
        let t = build(&plans, &links);
        let text = write(&t).unwrap();
        let back = parse(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(back, t);
    }

    #[test]
    fn parse_never_panics_on_arbitrary_text(text in "\\PC{0,400}") {
        let _ = parse(&text);
    }

    #[test]
    fn parse_never_panics_on_token_soup(
        tokens in proptest::collection::vec(proptest::sample::select(vec![
            "Switch", "Ca", "Hca", "Rt", " ", "\t", "\n", "\"", "\"a\"", "\"b\"", "[", "]", "(", ")",
            "1", "2", "36", "0x", "ff", "#", "lid", "lmc", "4x", "12x", "SDR", "FDR10", "é", "ü€",
            "w=", "s=", "e=", "=", "+", "switchguid", "caguid", "rtguid", "sysimgguid", "vendid",
            "devid", "width", "[ext 3]", "base port 0", "\r",
        ]), 0..120),
    ) {
        let text: String = tokens.concat();
        let _ = parse(&text);
    }

    #[test]
    fn parse_never_panics_on_mangled_files(
        plans in proptest::collection::vec(node_plan(), 1..6),
        links in proptest::collection::vec((0usize..64, any::<u8>(), 0usize..64, any::<u8>(), 0usize..5, 0usize..7), 0..10),
        cuts in proptest::collection::vec((any::<prop::sample::Index>(), any::<prop::sample::Index>(), "[\\[\\]\"#=() \t\n0-9a-zA-Z]{0,4}"), 1..6),
    ) {
        let t = build(&plans, &links);
        let mut text = write(&t).unwrap().into_bytes();
        for (at, len, insert) in cuts {
            let start = at.index(text.len() + 1);
            let end = (start + len.index(8)).min(text.len());
            text.splice(start..end, insert.bytes());
        }
        let text = String::from_utf8_lossy(&text);
        let _ = parse(&text);
    }
}
