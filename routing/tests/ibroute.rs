//! The ibroute text format: round trip and the reference sample.

mod common;

use common::*;
use routing::ibroute::{format_ibroute, lfts_from_dump, parse_ibroute};
use routing::{FatTree, MinHop, RoutingInput, route};

#[test]
fn dump_round_trips_lfts_and_lids() {
    for (spec, lmc) in [("ft2:8", 0u8), ("ft3:4", 1), ("torus:3x3", 0)] {
        let topo = fabric_of(spec);
        let inp = input(&topo, lmc);
        let r = route(&inp, &MinHop).unwrap();
        let text = format_ibroute(&topo, &inp, &r.lfts);
        let dump = parse_ibroute(&text).unwrap();
        assert_eq!(dump.len(), inp.num_switches());
        let (lids, lfts) = lfts_from_dump(&topo, &dump).unwrap();
        assert_eq!(
            lids,
            routing::assign_lids_sequential(&topo, lmc).unwrap(),
            "{spec}"
        );
        assert_eq!(lfts, r.lfts, "{spec}");
        // The same metrics come out of the dump.
        let inp2 = RoutingInput::new(&topo, &lids, None).unwrap();
        assert_eq!(metrics_of(&inp2, &lfts), metrics_of(&inp, &r.lfts));
    }
}

#[test]
fn parses_the_reference_sample() {
    // What `ibroute 2` printed on ibsim's net.2sw2path4hca (infiniband-diags).
    let text = "$ ibroute 2
Unicast lids [0x0-0x6] of switch Lid 2 guid 0x0000000000200000 (Switch1):
  Lid  Out   Destination
       Port     Info 
0x0001 001 : (Channel Adapter portguid 0x0000000000100001: 'Hca1')
0x0002 000 : (Switch portguid 0x0000000000200000: 'Switch1')
0x0003 003 : (Switch portguid 0x0000000000200001: 'Switch2')
0x0004 003 : (Channel Adapter portguid 0x0000000000100004: 'Hca2')
0x0005 002 : (Channel Adapter portguid 0x0000000000100007: 'Hca3')
0x0006 005 : (Channel Adapter portguid 0x000000000010000a: 'Hca4')
6 valid lids dumped 
[rc=0]
";
    let d = parse_ibroute(text).unwrap();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].lid.0, 2);
    assert_eq!(d[0].guid.0, 0x200000);
    assert_eq!(d[0].entries.len(), 6);
    assert_eq!(d[0].entries[5].lid.0, 6);
    assert_eq!(d[0].entries[5].port, 5);
    assert_eq!(d[0].entries[5].port_guid.map(|g| g.0), Some(0x10000a));
    assert_eq!(d[0].entries[1].port, 0);
    // The line ibroute prints for the further LIDs of an LMC > 0 port.
    let lmc = "Unicast lids [0x0-0x17] of switch Lid 1 guid 0x2001 (s):\n\
               0x0015 006 : (path #2 out of 4: portguid 0x1000000000000001)\n";
    let d = parse_ibroute(lmc).unwrap();
    assert_eq!(
        d[0].entries[0].port_guid,
        Some(fabric::Guid(0x1000000000000001))
    );
}

#[test]
fn bad_dumps_are_errors_not_panics() {
    assert!(parse_ibroute("0x0001 001 : (x)\n").is_err());
    assert!(parse_ibroute("Unicast lids [0x0-0x6] of switch Lid zz guid 0x1 (a):\n").is_err());
    assert!(
        parse_ibroute("Unicast lids [0x0-0x6] of switch Lid 2 guid 0x1 (a):\n0x0001 9999 :\n")
            .is_err()
    );
    for junk in [
        "",
        "\u{0}\u{1}",
        "Unicast lids",
        "0x",
        "Unicast lids of switch Lid 1 guid",
    ] {
        let _ = parse_ibroute(junk);
    }
    // A dump naming a switch that is not in the topology.
    let topo = fabric_of("ft2:4");
    let d = parse_ibroute("Unicast lids [0x0-0x1] of switch Lid 1 guid 0xdead (a):\n").unwrap();
    assert!(lfts_from_dump(&topo, &d).is_err());
}

#[test]
fn ftree_dump_has_the_same_contention_free_metrics() {
    let topo = fabric_of("ft3:8");
    let inp = input(&topo, 0);
    let r = route(&inp, &FatTree).unwrap();
    let text = format_ibroute(&topo, &inp, &r.lfts);
    let (lids, lfts) = lfts_from_dump(&topo, &parse_ibroute(&text).unwrap()).unwrap();
    let inp2 = RoutingInput::new(&topo, &lids, None).unwrap();
    assert_eq!(metrics_of(&inp2, &lfts).max_link_load, 1);
}

#[test]
fn random_text_never_panics_the_parser() {
    let tokens = [
        "Unicast lids [0x0-0x6] of switch Lid ",
        " guid 0x",
        "0x",
        " : (Channel Adapter portguid 0x",
        ": 'x')",
        "(Switch portguid ",
        "\n",
        " ",
        "ffffffffffffffffff",
        "65536",
        "255",
        "-1",
        "\u{fffd}",
        "valid lids dumped",
    ];
    let topo = fabric_of("ft2:4");
    let mut rng = fabric::rng::SplitMix64::new(7);
    for _ in 0..3000 {
        let mut text = String::new();
        for _ in 0..rng.below(40) {
            text.push_str(tokens[rng.below(tokens.len() as u64) as usize]);
            if rng.chance(0.3) {
                text.push_str(&format!("{:x}", rng.next_u64() >> rng.below(64)));
            }
        }
        if let Ok(d) = parse_ibroute(&text) {
            let _ = lfts_from_dump(&topo, &d);
        }
    }
}
