//! Lint and semantics tests.

use fabric::{Guid, NodeType, PortRef, Topology};
use partitions::plan::Caps;
use partitions::{LintCode, Options, PartEnforce, check};

/// Two HCAs (0x100001, 0x100004 as port GUIDs) on one switch 0x200000.
fn topo() -> Topology {
    let mut t = Topology::new();
    let sw = t
        .add_node(NodeType::Switch, 8, Guid(0x200000), "sw")
        .unwrap();
    for (i, g) in [0x100000u64, 0x100003, 0x100006].iter().enumerate() {
        let h = t
            .add_node(NodeType::Ca, 2, Guid(*g), format!("h{i}"))
            .unwrap();
        t.connect(PortRef::new(sw, i as u8 + 1), PortRef::new(h, 1))
            .unwrap();
    }
    t
}

fn opts() -> Options {
    Options {
        sm_port_guid: Some(Guid(0x100001)),
        ..Options::default()
    }
}

fn codes(src: &str, o: Options, caps: Option<&Caps>) -> Vec<(LintCode, Option<(u32, u32)>)> {
    let t = topo();
    let r = check(src, o, caps.map(|c| (&t, c)));
    assert!(r.parse_errors.is_empty(), "{:?}", r.parse_errors);
    r.lints
        .iter()
        .map(|l| (l.code, l.pos.map(|p| (p.line, p.col))))
        .collect()
}

fn has(v: &[(LintCode, Option<(u32, u32)>)], c: LintCode) -> bool {
    v.iter().any(|(x, _)| *x == c)
}

#[test]
fn clean_file_has_no_lints() {
    let src = "Default=0x7fff : ALL=full ;\nA=0x1, ipoib : 0x100001=full, 0x100004=full ;\n";
    assert!(codes(src, opts(), Some(&Caps::default())).is_empty());
    assert!(codes(src, opts(), None).is_empty());
}

#[test]
fn each_lint() {
    let caps = Caps::default();
    let c = codes("A=0x1 : ALL=full ;", opts(), None);
    assert!(has(&c, LintCode::NoDefaultRule));
    let c = codes(
        "Default=0x7fff:ALL=full;\nA=0x1 : 0x100001, 0x100004 ;",
        opts(),
        None,
    );
    assert_eq!(c, vec![(LintCode::NoFullMember, Some((2, 1)))]);
    let c = codes(
        "Default=0x7fff:ALL=full;\nA=0x1,ipoib : 0x100001 ;",
        opts(),
        Some(&caps),
    );
    assert_eq!(c, vec![(LintCode::IpoibAllLimited, Some((2, 1)))]);
    let c = codes(
        "Default=0x7fff:ALL=full;\nA=0x1 : 0x100001=ful, 0x100004=fulll ;",
        opts(),
        None,
    );
    assert!(c.contains(&(LintCode::Abbreviation, Some((2, 18)))));
    assert!(c.contains(&(LintCode::UnrecognizedMembership, Some((2, 32)))));
    let c = codes(
        "Default=0x7fff:ALL=full;\nA=0x8001 : ALL=full ;\nB=0x1 : ALL=full;",
        opts(),
        None,
    );
    assert!(c.contains(&(LintCode::PKeyAlias, Some((2, 3)))));
    assert!(c.contains(&(LintCode::PKeyAlias, Some((3, 3)))));
    let c = codes("Default=0x7fff:ALL=full;\nA : ALL=full ;", opts(), None);
    assert_eq!(c, vec![(LintCode::AutoPKey, Some((2, 1)))]);
    let c = codes(
        "Default=0x7fff:ALL=full;\nA=0x1 : 0x999=full, 0x100001=full ;",
        opts(),
        Some(&caps),
    );
    assert_eq!(c, vec![(LintCode::UnknownGuid, Some((2, 9)))]);
    let long = format!(
        "Default=0x7fff:ALL=full;\nA=0x1 : ALL=full{} ;",
        " ".repeat(5000)
    );
    assert!(codes(&long, opts(), None).contains(&(LintCode::LongLine, Some((2, 1)))));
    let c = codes("Default=0x7fff:ALL=full;\nA=0x1 : ALL=both ;", opts(), None);
    assert_eq!(c, vec![(LintCode::BothNotAllowed, Some((2, 13)))]);
    let both = Options {
        allow_both_pkeys: true,
        ..opts()
    };
    assert!(codes("Default=0x7fff:ALL=full;\nA=0x1 : ALL=both ;", both, None).is_empty());
    let c = codes("Default=0x7fff : ALL=limited ;", opts(), None);
    assert_eq!(c, vec![(LintCode::SmPortDemoted, Some((1, 18)))]);
    let c = codes(
        "Default=0x7fff : ALL=full, 0x100001=limited, ALL_SWITCHES=limited ;",
        opts(),
        Some(&caps),
    );
    assert_eq!(c, vec![(LintCode::SmPortDemoted, Some((1, 28)))]);
    assert!(codes("Default=0x7fff : ALL=limited, SELF=full ;", opts(), None).is_empty());
    assert!(
        codes(
            "Default=0x7fff : ALL_CAS=full, ALL_SWITCHES=limited ;",
            opts(),
            Some(&caps)
        )
        .is_empty()
    );
    let c = codes(
        "Default=0x7fff:ALL=full;\nA=0x1, mtu=5 : ALL=full ;",
        opts(),
        None,
    );
    assert_eq!(c, vec![(LintCode::GroupFlagsUnused, Some((2, 8)))]);
    let c = codes("# nothing\n", opts(), None);
    assert_eq!(c, vec![(LintCode::EmptyFile, None)]);
    let c = codes(
        "Default=0x7fff:ALL=full;\nA=0x1, ipoib, sl=3 : ALL=full ;",
        opts(),
        None,
    );
    assert_eq!(c, vec![(LintCode::SlWithoutQos, Some((2, 15)))]);
    let c = codes(
        "Default=0x7fff:ALL=full;\nA=0x1 : mgid=ff12:401b:8002::1\n ALL=full ;",
        opts(),
        None,
    );
    assert_eq!(c, vec![(LintCode::BadIpGroup, Some((2, 9)))]);
    let no_sm = Options::default();
    let c = codes("Default=0x7fff:ALL=full;\nA=0x1 : SELF=full ;", no_sm, None);
    assert!(c.contains(&(LintCode::SelfUnknown, Some((2, 9)))));
    let c = codes("Default=0x7fff:ALL=full;\nA=0x1 : NONE ;", opts(), None);
    assert_eq!(c, vec![(LintCode::EmptyPartition, Some((2, 1)))]);
    let c = codes(
        "Default=0x7fff:ALL=full;\nA=0x1 : 0x999=full ;",
        opts(),
        Some(&caps),
    );
    assert!(has(&c, LintCode::EmptyPartition));
    let c = codes(
        "Default=0x7fff:ALL=full;\nA=0x1 : 04000001=full ;",
        opts(),
        None,
    );
    assert!(c.contains(&(LintCode::OctalNumber, Some((2, 9)))));
}

#[test]
fn overflow_lints() {
    let mut src = String::from("Default=0x7fff : ALL=full ;\n");
    for i in 1..=10 {
        src.push_str(&format!("P{i}=0x{:x} : ALL_CAS=full ;\n", 0x100 + i));
    }
    let caps = Caps {
        ca_partition_cap: 8,
        enforcement_cap: 64,
        ..Caps::default()
    };
    let c = codes(&src, opts(), Some(&caps));
    assert_eq!(
        c.iter()
            .filter(|(x, _)| *x == LintCode::TableOverflow)
            .count(),
        3
    );
    assert!(!has(&c, LintCode::EnforcementOverflow));
    let caps = Caps {
        ca_partition_cap: 32,
        enforcement_cap: 8,
        ..Caps::default()
    };
    let t = topo();
    let r = check(&src, opts(), Some((&t, &caps)));
    assert_eq!(
        r.lints
            .iter()
            .filter(|l| l.code == LintCode::EnforcementOverflow)
            .count(),
        3
    );
    assert!(r.has_errors());
    let plan = r.plan.unwrap();
    assert!(
        plan.switch_ports
            .iter()
            .all(|s| s.overflow && !s.enforce_in && !s.enforce_out)
    );
}

#[test]
fn semantics_follow_opensm() {
    let t = topo();
    let caps = Caps::default();
    let keys = |src: &str, o: Options| -> Vec<Vec<u16>> {
        let r = check(src, o, Some((&t, &caps)));
        r.plan
            .unwrap()
            .ports
            .iter()
            .map(|p| p.table.valid().iter().map(|(_, k)| k.0).collect())
            .collect()
    };
    // Ports sorted by node GUID: 0x100001, 0x100004, 0x100007, then switch 0x200000.
    // No Default rule: everyone limited, SM port full.
    assert_eq!(
        keys("A=0x1 : ALL_CAS=full ;", opts()),
        vec![
            vec![0xffff, 0x8001],
            vec![0x7fff, 0x8001],
            vec![0x7fff, 0x8001],
            vec![0x7fff]
        ]
    );
    // Later rules override; repeated PKey merges; defmember.
    assert_eq!(
        keys(
            "Default=0x7fff:ALL=full;\nA=0x5, defmember=full : 0x100001, 0x100004 ;\nB=0x5 : 0x100004=limited ;",
            opts()
        ),
        vec![
            vec![0xffff, 0x8005],
            vec![0xffff, 0x0005],
            vec![0xffff],
            vec![0xffff]
        ]
    );
    // indx0 puts the key first; ordering is by byte-swapped PKey.
    assert_eq!(
        keys(
            "Default=0x7fff:ALL=full;\nA=0x0002 : ALL_CAS ;\nB=0x0100, indx0 : 0x100001=full ;\nC=0x0001 : 0x100001=full;",
            opts()
        )[0],
        vec![0x8100, 0x8001, 0x0002, 0xffff]
    );
    // both with allow_both_pkeys: limited then full.
    let both = Options {
        allow_both_pkeys: true,
        ..opts()
    };
    assert_eq!(
        keys("Default=0x7fff:ALL=full;\nA=0x3 : 0x100001=both ;", both)[0],
        vec![0xffff, 0x0003, 0x8003]
    );
    // Empty file: documented meaning (limited), not OpenSM's fallback.
    assert_eq!(keys("", opts())[1], vec![0x7fff]);
    // The SM port stays full in Default.
    assert_eq!(
        keys("Default=0x7fff : ALL=limited ;", opts())[0],
        vec![0xffff]
    );
}

#[test]
fn ipoib_groups() {
    let t = topo();
    let r = check(
        "Default=0x7fff:ALL=full;\nA=0x12, ipoib, scope=2, scope=5, Q_Key=0x99 : ALL=full ;\nB=0x13, ipoib : NONE ;",
        opts(),
        Some((&t, &Caps::default())),
    );
    let plan = r.plan.unwrap();
    let a = plan.partitions.iter().find(|p| p.pkey == 0x12).unwrap();
    let mgids: Vec<String> = a.groups.iter().map(|g| g.mgid_string()).collect();
    assert_eq!(
        mgids,
        vec!["ff12:401b:8012::ffff:ffff", "ff15:401b:8012::ffff:ffff"]
    );
    assert!(
        a.groups
            .iter()
            .all(|g| g.q_key == 0x99 && g.mtu == 4 && g.rate == 3 && g.sl == 0)
    );
    // Empty partitions vanish with their groups.
    assert!(plan.partitions.iter().all(|p| p.pkey != 0x13));
    // No file: Default's broadcast group with the defaults.
    let p = partitions::Policy::no_file(opts());
    let g = &p.partitions[0].groups[0];
    assert_eq!(g.mgid_string(), "ff12:401b:ffff::ffff:ffff");
    assert_eq!(
        (g.rate, g.mtu, g.sl, g.scope, g.q_key),
        (3, 4, 0, 2, 0x0b1b)
    );
}

#[test]
fn part_enforce_modes() {
    let t = topo();
    let src = "Default=0x7fff:ALL=full;\nA=0x1 : 0x100001=full, 0x100004 ;";
    for (mode, bits, tables) in [
        (PartEnforce::Both, (true, true), true),
        (PartEnforce::In, (true, false), true),
        (PartEnforce::Out, (false, true), true),
        (PartEnforce::Off, (false, false), false),
    ] {
        let o = Options {
            part_enforce: mode,
            ..opts()
        };
        let plan = check(src, o, Some((&t, &Caps::default()))).plan.unwrap();
        assert_eq!(plan.switch_ports.len(), 3);
        for sp in &plan.switch_ports {
            assert_eq!((sp.enforce_in, sp.enforce_out), bits, "{mode}");
            assert_eq!(sp.table.is_some(), tables, "{mode}");
        }
        // Switch-to-switch ports never get tables; none here, the switch has only CAs.
        assert!(plan.inter_switch_ports.is_empty());
    }
    // A limited key is left out of the switch table when the full one is there.
    let both = Options {
        allow_both_pkeys: true,
        ..opts()
    };
    let plan = check(
        "Default=0x7fff:ALL=full;\nA=0x1 : 0x100001=both ;",
        both,
        Some((&t, &Caps::default())),
    )
    .plan
    .unwrap();
    let sp = plan
        .switch_ports
        .iter()
        .find(|s| s.peer.port_guid == Guid(0x100001))
        .unwrap();
    let keys: Vec<u16> = sp
        .table
        .as_ref()
        .unwrap()
        .valid()
        .iter()
        .map(|(_, k)| k.0)
        .collect();
    assert_eq!(keys, vec![0xffff, 0x8001]);
}

/// `n` partitions P1..Pn, every port a full member of each (after Default).
fn many_partitions(n: u32) -> String {
    let mut s = String::from("Default=0x7fff : ALL=full ;\n");
    for i in 1..=n {
        s.push_str(&format!("P{i}={i:#06x} : ALL=full ;\n"));
    }
    s
}

#[test]
fn limits_are_errors_and_the_text_over_the_size_limit_is_not_parsed() {
    use partitions::{MAX_PARTITIONS, MAX_POLICY_BYTES, Severity};
    let t = topo();
    // A comment-only text one byte over the limit: refused before parsing.
    let mut big = String::from("Default=0x7fff : ALL=full ;\n");
    while big.len() <= MAX_POLICY_BYTES {
        big.push_str("# padding padding padding padding padding padding padding padding\n");
    }
    let r = check(&big, opts(), Some((&t, &Caps::default())));
    assert!(r.has_errors() && r.policy.is_none(), "{:?}", r.lints);
    assert_eq!(r.lints.len(), 1);
    assert_eq!(r.lints[0].code.code(), "PART-E021");
    assert_eq!(r.lints[0].severity(), Severity::Error);
    // The same text at the limit parses.
    big.truncate(MAX_POLICY_BYTES);
    let cut = big.rfind('\n').unwrap() + 1;
    big.truncate(cut);
    assert!(!check(&big, opts(), None).has_errors());

    // More partitions than the limit: an error, not planned.
    let r = check(
        &many_partitions(MAX_PARTITIONS as u32),
        opts(),
        Some((&t, &Caps::default())),
    );
    assert!(
        r.lints
            .iter()
            .any(|l| l.code == LintCode::TooManyPartitions)
    );
    assert!(r.plan.is_none() && r.has_errors());
    // At the limit (Default included) it is planned, and a port's PartitionCap still bounds it.
    let r = check(
        &many_partitions(MAX_PARTITIONS as u32 - 1),
        opts(),
        Some((&t, &Caps::default())),
    );
    assert!(
        !r.lints
            .iter()
            .any(|l| l.code == LintCode::TooManyPartitions)
    );
    assert!(r.plan.is_some());
    assert!(r.lints.iter().any(|l| l.code == LintCode::TableOverflow));
}

#[test]
fn more_full_memberships_than_a_port_holds_is_an_error() {
    // 128 keys fit a PartitionCap of 128 (Default + 127); one more is dropped: PART-E008.
    let caps = Caps::default();
    let fits = codes(&many_partitions(127), opts(), Some(&caps));
    assert!(!has(&fits, LintCode::TableOverflow), "{fits:?}");
    let over = codes(&many_partitions(128), opts(), Some(&caps));
    assert!(has(&over, LintCode::TableOverflow), "{over:?}");
    let t = topo();
    assert!(check(&many_partitions(128), opts(), Some((&t, &caps))).has_errors());
}
