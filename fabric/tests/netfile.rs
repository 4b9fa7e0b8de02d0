//! Topology file parsing and writing: ibsim examples, real ibnetdiscover output, errors with
//! positions, and write -> parse round trips.

mod common;

use common::{by_guid, canonical, counts, example};
use fabric::netfile::{ParseErrorKind, parse, write};
use fabric::{GenSpec, Guid, LinkSpeed, LinkWidth, NodeType, PortRef, Topology};

const IBNETDISCOVER: &str = include_str!("data/ibnetdiscover-2sw2path4hca.txt");

#[test]
fn every_ibsim_example_parses() {
    // (file, switches, CAs, links)
    let expected = [
        ("net", 2, 2, 4),
        ("net.1", 1, 2, 2),
        ("net.2sw2path", 2, 2, 4),
        ("net.2sw2path4hca", 2, 4, 6),
        ("net.2sw2path4hca2port", 2, 2, 6),
    ];
    for (name, sw, ca, links) in expected {
        let Some(text) = example("every_ibsim_example_parses", name) else {
            return;
        };
        let t = parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(counts(&t), (sw, ca, links), "{name}");
        // Round trip through our writer.
        let again = parse(&write(&t).unwrap()).unwrap();
        assert_eq!(again, t, "{name} round trip");
    }
}

#[test]
fn ibsim_guid_assignment() {
    // Verified by running ibsim 0.10 on this file and reading it back with ibnetdiscover:
    // switches 0x200000 + n, CAs from 0x100000 advancing by num_ports + 1, ports node + n.
    let Some(text) = example("ibsim_guid_assignment", "net.2sw2path4hca") else {
        return;
    };
    let t = parse(&text).unwrap();
    let guids: Vec<(u64, &str)> = t
        .nodes()
        .map(|(_, n)| (n.node_guid.0, n.description.as_str()))
        .collect();
    assert_eq!(
        guids,
        [
            (0x200000, "Switch1"),
            (0x200001, "Switch2"),
            (0x100000, "Hca1"),
            (0x100003, "Hca2"),
            (0x100006, "Hca3"),
            (0x100009, "Hca4"),
        ]
    );
    let hca3 = by_guid(&t, 0x100006);
    assert_eq!(hca3.ports[1].guid, Guid(0x100007));
    assert_eq!(hca3.ports[2].guid, Guid(0x100008));
    assert_eq!(by_guid(&t, 0x200001).ports[5].guid, Guid(0x200001));
    assert_eq!(hca3.sys_image_guid, Guid(0x100006));
}

#[test]
fn real_ibnetdiscover_output_matches_the_ibsim_file_it_came_from() {
    let from_tool = parse(IBNETDISCOVER).unwrap();
    assert_eq!(counts(&from_tool), (2, 4, 6));
    let sw1 = by_guid(&from_tool, 0x200000);
    assert_eq!(sw1.description, "Switch1");
    assert_eq!(sw1.node_type, NodeType::Switch);
    assert_eq!(by_guid(&from_tool, 0x100009).description, "Hca4");
    let Some(text) = example(
        "real_ibnetdiscover_output_matches_the_ibsim_file_it_came_from",
        "net.2sw2path4hca",
    ) else {
        return;
    };
    let from_ibsim_file = parse(&text).unwrap();
    assert_eq!(canonical(&from_tool), canonical(&from_ibsim_file));
}

#[test]
fn ibnetdiscover_extras() {
    // Router, CA-to-CA link with both port GUIDs, widths and speeds, port GUID override,
    // vendid resetting per node and devid staying (as ibsim does), -g style [ext N].
    let text = "\
vendid=0x2c9
devid=0xc738
sysimgguid=0xabc
switchguid=0x1000000000000005(1000000000000005)
Switch\t4 \"S-A\"\t\t# \"my switch\" enhanced port 0 lid 9 lmc 0
[1]\t\"H-B\"[1](2000000000000011) \t\t# \"hca b\" lid 1 12xQDR
[2][ext 7]\t\"R-E\"[1](3000000000000001) \t\t# \"router e\" lid 3 4xHDR
[3]\t\"H-C\"[2](77) \t\t# \"hca c\" lid 4 1xFDR10

caguid=0x2000000000000010
Ca\t2 \"H-B\"\t\t# \"hca b\"
[1](2000000000000011) \t\"S-A\"[1]\t\t# lid 1 lmc 0 \"my switch\" lid 9 12xQDR
[2](2000000000000012) \t\"H-C\"[1] (76) \t\t# lid 2 lmc 0 \"hca c\" lid 5 2xEDR

caguid=0x75
Ca\t2 \"H-C\"\t\t# \"hca c\"
[1](76) \t\"H-B\"[2] (2000000000000012) \t\t# lid 5 lmc 0 \"hca b\" lid 2 2xEDR
[2](99) \t\"S-A\"[3]\t\t# lid 4 lmc 0 \"my switch\" lid 9 1xFDR10

rtguid=0x3000000000000000
Rt\t1 \"R-E\"\t\t# \"router e\"
[1](3000000000000001) \t\"S-A\"[2]\t\t# lid 3 lmc 0 \"my switch\" lid 9 4xHDR
";
    let t = parse(text).unwrap();
    let sw = by_guid(&t, 0x1000000000000005);
    assert_eq!(
        (sw.vendor_id, sw.device_id, sw.sys_image_guid),
        (0x2c9, 0xc738, Guid(0xabc))
    );
    let b = by_guid(&t, 0x2000000000000010);
    assert_eq!(
        (b.vendor_id, b.device_id, b.sys_image_guid.0),
        (0, 0xc738, 0x2000000000000010)
    );
    let c = by_guid(&t, 0x75);
    assert_eq!(c.ports[2].guid, Guid(0x99), "explicit port GUID recorded");
    assert_eq!(c.ports[1].guid, Guid(0x76));
    let r = by_guid(&t, 0x3000000000000000);
    assert_eq!(r.node_type, NodeType::Router);
    assert_eq!(sw.ports[1].width, LinkWidth::X12);
    assert_eq!(sw.ports[1].speed, LinkSpeed::Qdr);
    assert_eq!(
        (sw.ports[2].width, sw.ports[2].speed),
        (LinkWidth::X4, LinkSpeed::Hdr)
    );
    assert_eq!(
        (sw.ports[3].width, sw.ports[3].speed),
        (LinkWidth::X1, LinkSpeed::Qdr)
    );
    assert_eq!(
        (b.ports[2].width, b.ports[2].speed),
        (LinkWidth::X2, LinkSpeed::Edr)
    );
    assert_eq!(t.num_links(), 4);
    assert_eq!(parse(&write(&t).unwrap()).unwrap(), t);
}

#[test]
fn ibsim_port_options_and_defaults() {
    let text = "\
width=3
speed=7
Switch 4 \"s1\"
[1] \"h1\"[1] w=2
[2] \"h2\"
[3] \"s2\"[1] s=1

Switch 2 \"s2\"
[1] \"s1\"[3]

Hca 1 \"h1\"
[1] \"s1\"[1]

Hca 1 \"h2\"
[1] \"s1\"[2]
";
    let t = parse(text).unwrap();
    let s1 = t.node(fabric::NodeId(0));
    assert_eq!(
        (s1.ports[1].width, s1.ports[1].speed),
        (LinkWidth::X4, LinkSpeed::Qdr)
    );
    // No remote port means port 1; both ends enable 1x|4x and SDR..QDR.
    assert_eq!(
        t.remote(PortRef::new(fabric::NodeId(0), 2)),
        Some(PortRef::new(fabric::NodeId(3), 1))
    );
    assert_eq!(
        (s1.ports[3].width, s1.ports[3].speed),
        (LinkWidth::X4, LinkSpeed::Sdr)
    );
}

fn err(text: &str) -> (u32, u32, ParseErrorKind) {
    let e = parse(text).expect_err("should not parse");
    assert!(
        e.to_string()
            .starts_with(&format!("line {}:{}: ", e.line, e.col)),
        "{e}"
    );
    (e.line, e.col, e.kind)
}

#[test]
fn errors_carry_line_and_column() {
    let (l, c, k) = err("Switch 4 \"a\"\n[1]\t\"nobody\"[1]\n");
    assert_eq!((l, c), (2, 6));
    assert_eq!(k, ParseErrorKind::UnknownNode("nobody".into()));

    let (l, c, k) = err("Switch 4 \"a\"\n[5]\t\"b\"[1]\n");
    assert_eq!((l, c), (2, 2));
    assert!(matches!(
        k,
        ParseErrorKind::PortOutOfRange {
            port: 5,
            num_ports: 4,
            ..
        }
    ));

    // Remote port beyond the remote's port count: reported at the remote port number.
    let (l, c, k) = err("Switch 4 \"a\"\n[1] \"b\"[3]\n\nHca 2 \"b\"\n[1] \"a\"[1]\n");
    assert_eq!((l, c), (2, 9));
    assert!(matches!(
        k,
        ParseErrorKind::PortOutOfRange {
            port: 3,
            num_ports: 2,
            ..
        }
    ));

    // A says B[1], B[1] says C.
    let text = "Switch 4 \"A\"\n[1] \"B\"[1]\n\nSwitch 4 \"B\"\n[1] \"C\"[1]\n\nSwitch 4 \"C\"\n[1] \"B\"[1]\n";
    let (l, c, k) = err(text);
    assert_eq!((l, c), (2, 6));
    assert_eq!(
        k,
        ParseErrorKind::InconsistentLink {
            node: "A".into(),
            port: 1,
            remote: "B".into(),
            remote_port: 1,
            remote_says: Some(("C".into(), 1)),
        }
    );
    assert!(
        parse(text)
            .unwrap_err()
            .to_string()
            .contains("but \"B\"[1] says \"C\"[1]")
    );

    // One-sided link.
    let (l, _, k) = err("Switch 4 \"A\"\n[1] \"B\"[2]\n\nSwitch 4 \"B\"\n");
    assert_eq!(l, 2);
    assert!(matches!(
        k,
        ParseErrorKind::InconsistentLink {
            remote_says: None,
            ..
        }
    ));

    let (l, c, k) = err("Switch 4 \"A\"\n\nHca 1 \"A\"\n");
    assert_eq!((l, c), (3, 8));
    assert_eq!(k, ParseErrorKind::DuplicateName("A".into()));

    let (l, _, k) = err("switchguid=0x5\nSwitch 4 \"A\"\n\nswitchguid=0x5\nSwitch 4 \"B\"\n");
    assert_eq!(l, 5);
    assert_eq!(k, ParseErrorKind::DuplicateGuid(Guid(5)));

    let (l, c, k) = err("Switch 0 \"A\"\n");
    assert_eq!((l, c, k), (1, 8, ParseErrorKind::BadPortCount(0)));

    let (l, c, k) = err("Switch 4 \"A\n");
    assert_eq!((l, c), (1, 12));
    assert_eq!(k, ParseErrorKind::Expected("closing '\"'"));

    let (l, _, k) = err("Switch 4 \"A\"\n[1] \"A\"[2]\n[1] \"A\"[3]\n");
    assert_eq!(l, 3);
    assert!(matches!(k, ParseErrorKind::DuplicatePort { port: 1, .. }));

    let (l, _, k) = err("Switch 4 \"A\"\n[1] \"A\"[1]\n");
    assert_eq!(l, 2);
    assert!(matches!(k, ParseErrorKind::SelfLink { port: 1, .. }));

    let (l, c, k) = err("Switch 4 \"A\"\n[1] \"A\"[2]\nHca 1 \"B\"\n");
    assert_eq!((l, c), (3, 1));
    assert!(matches!(k, ParseErrorKind::RecordInterrupted(_)));

    let (l, c, k) = err("Switch 4 \"A\"\n[1] \"A\"[2]\n\n[2] \"A\"[1]\n");
    assert_eq!((l, c, k), (4, 1, ParseErrorKind::PortOutsideRecord));

    let (l, c, k) = err("# fine\n\nSwtich 4 \"A\"\n");
    assert_eq!((l, c, k), (3, 1, ParseErrorKind::UnexpectedLine));

    let (l, _, k) = err("include \"other\"\n");
    assert_eq!((l, k), (1, ParseErrorKind::Unsupported("include lines")));

    let (l, c, k) = err("Switch 4 \"A\"\n[1] \"B\"[1] w=40\n\nSwitch 4 \"B\"\n[1] \"A\"[1]\n");
    assert_eq!((l, c), (2, 14));
    assert!(matches!(k, ParseErrorKind::BadValue { value: 40, .. }));

    // No common width: ibsim aborts on this, we report it.
    let (l, _, k) = err("Switch 4 \"A\"\n[1] \"B\"[1] w=1\n\nSwitch 4 \"B\"\n[1] \"A\"[1] w=2\n");
    assert_eq!(l, 2);
    assert!(matches!(
        k,
        ParseErrorKind::LinkMismatch { what: "width", .. }
    ));
}

#[test]
fn columns_count_characters() {
    let (l, c, _) = err("Switch 4 \"é\"\n[1]\t\"ü\"[1]\n");
    assert_eq!((l, c), (2, 6));
}

#[test]
fn generated_fabrics_round_trip() {
    for spec in [
        "ft2:8",
        "ft3:6",
        "ft3:8:hosts=2:pods=3",
        "torus:3x2x4:hosts=2",
        "random:40:seed=9:radix=12",
    ] {
        let t = spec.parse::<GenSpec>().unwrap().generate().unwrap();
        let text = write(&t).unwrap();
        let back = parse(&text).unwrap_or_else(|e| panic!("{spec}: {e}"));
        assert_eq!(back, t, "{spec}");
        // Header lines start with Switch / Ca so that line counts give node counts.
        let sw = text.lines().filter(|l| l.starts_with("Switch")).count();
        let ca = text
            .lines()
            .filter(|l| l.starts_with("Ca") || l.starts_with("Hca"))
            .count();
        assert_eq!((sw, ca), (t.switches().count(), t.cas().count()), "{spec}");
    }
}

#[test]
fn widths_and_speeds_round_trip() {
    let mut t = Topology::new();
    let s = t.add_node(NodeType::Switch, 8, Guid(0x10), "s").unwrap();
    let mut hosts = Vec::new();
    let combos = [
        (LinkWidth::X1, LinkSpeed::Sdr),
        (LinkWidth::X2, LinkSpeed::Ddr),
        (LinkWidth::X4, LinkSpeed::Qdr),
        (LinkWidth::X8, LinkSpeed::Fdr),
        (LinkWidth::X12, LinkSpeed::Edr),
        (LinkWidth::X4, LinkSpeed::Hdr),
        (LinkWidth::X2, LinkSpeed::Ndr),
    ];
    for (i, &(w, sp)) in combos.iter().enumerate() {
        let h = t
            .add_node(NodeType::Ca, 1, Guid(0x100 + 4 * i as u64), format!("h{i}"))
            .unwrap();
        t.connect(PortRef::new(s, i as u8 + 1), PortRef::new(h, 1))
            .unwrap();
        t.set_link_attrs(PortRef::new(h, 1), w, sp).unwrap();
        hosts.push(h);
    }
    let back = parse(&write(&t).unwrap()).unwrap();
    assert_eq!(back, t);
}

#[test]
fn writer_rejects_unwritable_descriptions() {
    for bad in ["say \"hi\"", "two\nlines", &"x".repeat(65)] {
        let mut t = Topology::new();
        t.add_node(NodeType::Switch, 2, Guid(1), bad).unwrap();
        assert!(write(&t).is_err(), "{bad:?}");
    }
}

#[test]
fn empty_description_reads_back_as_the_id() {
    let mut t = Topology::new();
    t.add_node(NodeType::Switch, 2, Guid(0xab), "").unwrap();
    let back = parse(&write(&t).unwrap()).unwrap();
    assert_eq!(
        back.node(fabric::NodeId(0)).description,
        "S-00000000000000ab"
    );
}

#[test]
fn ibsim_limits() {
    use fabric::netfile::IbsimLimits;
    let t = "ft2:36".parse::<GenSpec>().unwrap().generate().unwrap();
    let l = IbsimLimits::of(&t);
    assert_eq!(
        l,
        IbsimLimits {
            nodes: 702,
            switches: 54,
            ports: 54 * 37 + 648
        }
    );
    assert!(!l.exceed_defaults());
    let t = "ft3:36:pods=6"
        .parse::<GenSpec>()
        .unwrap()
        .generate()
        .unwrap();
    let l = IbsimLimits::of(&t);
    assert!(l.exceed_defaults());
    assert_eq!(l.args(), ["-N", "2484", "-S", "540", "-P", "21924"]);
}
