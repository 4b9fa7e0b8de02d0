//! Parser tests: every grammar element, every error kind with its line:col.

use fabric::Guid;
use partitions::ast::*;
use partitions::parse;

fn one(src: &str) -> Statement {
    let f = parse(src).unwrap_or_else(|e| panic!("{src:?}: {e:?}"));
    assert_eq!(f.statements.len(), 1, "{src:?}");
    f.statements.into_iter().next().unwrap()
}

fn members(st: &Statement) -> Vec<&Member> {
    st.items
        .iter()
        .filter_map(|i| match i {
            Item::Member(m) => Some(m),
            _ => None,
        })
        .collect()
}

fn err(src: &str) -> (String, u32, u32) {
    let e = parse(src).expect_err(src);
    (e[0].kind.code().to_string(), e[0].pos.line, e[0].pos.col)
}

#[test]
fn name_and_pkey() {
    let st = one("Tenant=0x8001 : ALL ;");
    assert_eq!(st.name.as_ref().unwrap().text, "Tenant");
    assert_eq!(st.pkey.unwrap().value, 0x8001);
    assert_eq!(st.pkey.unwrap().pos, Pos { line: 1, col: 8 });
    assert_eq!(st.end, Pos { line: 1, col: 21 });
    // Name only, PKey only, neither.
    assert!(one("Tenant : ALL ;").pkey.is_none());
    let st = one("0x12 : ALL ;");
    assert!(st.name.is_none());
    assert_eq!(st.pkey.unwrap().value, 0x12);
    let st = one(" : ALL ;");
    assert!(st.name.is_none() && st.pkey.is_none());
    // Decimal and octal numbers, as strtoul(…, 0).
    assert_eq!(one("P=18 : ALL;").pkey.unwrap().value, 18);
    assert_eq!(one("P=010 : ALL;").pkey.unwrap().value, 8);
    // Blanks around delimiters.
    assert_eq!(one("  P   =   0x5   :   ALL  ;").pkey.unwrap().value, 5);
}

#[test]
fn header_flags() {
    let st = one(
        "P=0x1, ipoib, indx0, defmember=full, mtu=5, rate=7, sl=2, scope=5, Q_Key=0x1234, TClass=3, FlowLabel=0x12345 : ALL ;",
    );
    let kinds: Vec<_> = st.flags.iter().map(|f| f.kind.clone()).collect();
    assert_eq!(kinds[0], HeaderFlagKind::Ipoib);
    assert_eq!(kinds[1], HeaderFlagKind::Indx0);
    assert!(matches!(&kinds[2], HeaderFlagKind::DefMember(m) if m.value == MemberWord::Full));
    assert_eq!(kinds[3], HeaderFlagKind::Group(GroupFlag::Mtu(5)));
    assert_eq!(kinds[4], HeaderFlagKind::Group(GroupFlag::Rate(7)));
    assert_eq!(kinds[5], HeaderFlagKind::Group(GroupFlag::Sl(2)));
    assert_eq!(kinds[6], HeaderFlagKind::Group(GroupFlag::Scope(5)));
    assert_eq!(kinds[7], HeaderFlagKind::Group(GroupFlag::QKey(0x1234)));
    assert_eq!(kinds[8], HeaderFlagKind::Group(GroupFlag::TClass(3)));
    assert_eq!(
        kinds[9],
        HeaderFlagKind::Group(GroupFlag::FlowLabel(0x12345))
    );
    assert!(st.flags.iter().all(|f| !f.abbreviated));
    // Abbreviations OpenSM accepts: ip -> ipoib, s -> scope (tried before sl), def -> defmember.
    let st = one("P=0x1, ip, s=5, def=lim : ALL ;");
    assert_eq!(st.flags[0].kind, HeaderFlagKind::Ipoib);
    assert!(st.flags[0].abbreviated);
    assert_eq!(st.flags[1].kind, HeaderFlagKind::Group(GroupFlag::Scope(5)));
    assert!(
        matches!(&st.flags[2].kind, HeaderFlagKind::DefMember(m) if m.value == MemberWord::Limited && m.abbreviated)
    );
    assert_eq!(st.flags[2].word.pos, Pos { line: 1, col: 17 });
}

#[test]
fn member_targets_and_memberships() {
    let st = one(
        "P=0x1 : 0x100001=full, 1048580=limited, ALL=both, ALL_CAS, ALL_SWITCHES=full, ALL_ROUTERS, SELF=full, NONE, 0x7=weird ;",
    );
    let m = members(&st);
    assert_eq!(m[0].target, Target::Guid(Guid(0x100001)));
    assert_eq!(m[0].membership.as_ref().unwrap().value, MemberWord::Full);
    assert_eq!(m[1].target, Target::Guid(Guid(1048580)));
    assert_eq!(m[1].membership.as_ref().unwrap().value, MemberWord::Limited);
    assert_eq!(m[2].target, Target::All);
    assert_eq!(m[2].membership.as_ref().unwrap().value, MemberWord::Both);
    assert_eq!(m[3].target, Target::AllCas);
    assert!(m[3].membership.is_none());
    assert_eq!(m[4].target, Target::AllSwitches);
    assert_eq!(m[5].target, Target::AllRouters);
    assert_eq!(m[6].target, Target::SelfPort);
    assert_eq!(m[7].target, Target::None);
    assert_eq!(
        m[8].membership.as_ref().unwrap().value,
        MemberWord::Unrecognized
    );
    assert_eq!(m[0].name.pos, Pos { line: 1, col: 9 });
    // Keyword abbreviations as OpenSM's prefix match reads them.
    let st = one("P=0x1 : A=f, ALL_C=l, ALL_S, S=b, N ;");
    let m = members(&st);
    assert_eq!(m[0].target, Target::All);
    assert!(m[0].name_abbreviated);
    assert_eq!(m[0].membership.as_ref().unwrap().value, MemberWord::Full);
    assert!(m[0].membership.as_ref().unwrap().abbreviated);
    assert_eq!(m[1].target, Target::AllCas);
    assert_eq!(m[2].target, Target::AllSwitches);
    assert_eq!(m[3].target, Target::SelfPort);
    assert_eq!(m[3].membership.as_ref().unwrap().value, MemberWord::Both);
    assert_eq!(m[4].target, Target::None);
}

#[test]
fn comments_multiline_and_several_per_line() {
    let src = "# comment\nA=0x1 : # trailing comment\n  0x100001=full,  # first\n  0x100004\n  0x100007 ; B=0x2 : ALL ; C=0x3:\nNONE;\n";
    let f = parse(src).unwrap();
    assert_eq!(f.statements.len(), 3);
    let a = &f.statements[0];
    assert_eq!(a.pos, Pos { line: 2, col: 1 });
    // A line break separates members like a comma.
    assert_eq!(members(a).len(), 3);
    assert_eq!(members(a)[2].name.pos, Pos { line: 5, col: 3 });
    assert_eq!(f.statements[1].pos, Pos { line: 5, col: 14 });
    assert_eq!(f.statements[2].end, Pos { line: 6, col: 5 });
    // Empty list, empty file, CRLF.
    assert!(one("E=0x9 : ;").items.is_empty());
    assert!(parse("").unwrap().statements.is_empty());
    assert!(parse("# only\n\n").unwrap().statements.is_empty());
    assert_eq!(parse("A=0x1 : ALL ;\r\n").unwrap().statements.len(), 1);
}

#[test]
fn mgid_lines() {
    let src = "Default=0x7fff,ipoib:\n  mgid=ff12:401b::0707,sl=1 # group\n  mgid=ff12::1,sl=1,Q_Key=0xDEADBEEF,rate=3,mtu=2\n  ALL=full;";
    let st = one(src);
    let mg: Vec<&MgidLine> = st
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Mgid(m) => Some(m),
            _ => None,
        })
        .collect();
    assert_eq!(mg.len(), 2);
    assert_eq!(mg[0].pos, Pos { line: 2, col: 3 });
    assert_eq!(mg[0].mgid[..4], [0xff, 0x12, 0x40, 0x1b]);
    assert_eq!(mg[0].flags[0].flag, GroupFlag::Sl(1));
    assert_eq!(mg[1].flags.len(), 4);
    assert_eq!(mg[1].flags[1].flag, GroupFlag::QKey(0xDEADBEEF));
    assert_eq!(members(&st).len(), 1);
}

#[test]
fn long_lines_are_recorded() {
    let long = format!("A=0x1 : {} ;", "0x100001, ".repeat(500));
    let f = parse(&long).unwrap();
    assert_eq!(f.long_lines.len(), 1);
    assert_eq!(f.long_lines[0].line, 1);
    assert!(parse("A=0x1 : ALL ;").unwrap().long_lines.is_empty());
}

#[test]
fn every_error_with_position() {
    let cases: &[(&str, &str, u32, u32)] = &[
        ("A=0x1 ALL ;", "PART-E101", 1, 1),
        ("A=0x1\n  : ALL ;", "PART-E101", 1, 1),
        ("A=0x1 : ALL", "PART-E102", 1, 1),
        ("\n  A=0x1 : ALL,\n 0x2", "PART-E102", 2, 3),
        ("A=zz : ALL ;", "PART-E103", 1, 3),
        ("A=0x10000 : ALL ;", "PART-E104", 1, 3),
        ("A=0x8000 : ALL ;", "PART-E105", 1, 3),
        ("A=0 : ALL ;", "PART-E105", 1, 3),
        ("A=0x1, , ipoib : ALL ;", "PART-E106", 1, 8),
        ("A=0x1, fancy : ALL ;", "PART-E107", 1, 8),
        ("A=0x1, mtu : ALL ;", "PART-E108", 1, 8),
        ("A=0x1, defmember : ALL ;", "PART-E108", 1, 8),
        ("A=0x1, ipoib=1 : ALL ;", "PART-E109", 1, 14),
        ("A=0x1, indx0=yes : ALL ;", "PART-E109", 1, 14),
        ("A=0x1, mtu=9 : ALL ;", "PART-E110", 1, 12),
        ("A=0x1, rate=x : ALL ;", "PART-E110", 1, 13),
        ("A=0x1, sl=16 : ALL ;", "PART-E110", 1, 11),
        ("A=0x1, scope=0 : ALL ;", "PART-E110", 1, 14),
        ("A=0x1, TClass=256 : ALL ;", "PART-E110", 1, 15),
        ("A=0x1, FlowLabel=0x100000 : ALL ;", "PART-E110", 1, 18),
        ("A=0x1, Q_Key=0x100000000 : ALL ;", "PART-E110", 1, 14),
        ("A=0x1 : 0x100001= ;", "PART-E111", 1, 19),
        ("A=0x1, defmember= : ALL ;", "PART-E111", 1, 19),
        ("A=0x1 :\n  foo ;", "PART-E112", 2, 3),
        ("A=0x1 : 0x12zz ;", "PART-E112", 1, 9),
        ("A=0x1 : defmember=limited : 0x1 ;", "PART-E112", 1, 9),
        ("A=0x1 : 0 ;", "PART-E113", 1, 9),
        ("A=0x1 : ALL, =full ;", "PART-E114", 1, 15),
        ("A=0x1 : mgid=zz ;", "PART-E115", 1, 14),
        ("A=0x1 : mgid=fe80::1 ;", "PART-E116", 1, 14),
        ("A=0x1 : mgid ;", "PART-E117", 1, 9),
        ("A=0x1 : mgid=ff12::1, color=3 ;", "PART-E118", 1, 23),
        ("A=0x1 : mgid=ff12::1, mtu=0 ;", "PART-E110", 1, 27),
    ];
    let mut bad = Vec::new();
    for (src, code, line, col) in cases {
        let got = err(src);
        if got != (code.to_string(), *line, *col) {
            bad.push(format!("{src:?}: got {got:?}"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn errors_reject_the_whole_file_and_are_all_reported() {
    let src = "Good=0x1 : ALL ;\nBad=0x2 : foo ;\nAlso=0x3, nope : ALL ;\nFine=0x4 : ALL ;";
    let e = parse(src).unwrap_err();
    assert_eq!(e.len(), 2);
    assert_eq!(e[0].pos, Pos { line: 2, col: 11 });
    assert_eq!(e[1].pos, Pos { line: 3, col: 11 });
    let text = e[0].to_string();
    assert!(text.starts_with("2:11: PART-E112:"), "{text}");
}

#[test]
fn columns_count_characters() {
    let e = parse("Ünï=0x1 : föo ;").unwrap_err();
    assert_eq!(e[0].pos, Pos { line: 1, col: 11 });
}
