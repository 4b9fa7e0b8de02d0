//! Every policy error code, triggered with its exact line:col; errors sorted, file refused whole.

use qos::{MAX_ITEMS, MAX_POLICY_BYTES, Policy, Pos, QosError};

/// The (code, line, col) of every error of a text.
fn errs(text: &str) -> Vec<(&'static str, u32, u32)> {
    match Policy::parse(text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(v) => v
            .iter()
            .map(|e| {
                let p = e.pos().unwrap();
                (e.code(), p.line, p.col)
            })
            .collect(),
    }
}

const LEVELS: &str =
    "qos-levels\n  qos-level\n    name: default\n    sl: 0\n  end-qos-level\nend-qos-levels\n";

#[test]
fn e003_too_large() {
    let text = "#".repeat(MAX_POLICY_BYTES + 1);
    let e = Policy::parse(&text).unwrap_err();
    assert_eq!(e.len(), 1);
    assert!(matches!(
        e[0],
        QosError::TooLarge {
            pos: Pos { line: 1, col: 1 },
            ..
        }
    ));
    assert_eq!(e[0].code(), "QOS-E003");
}

#[test]
fn e004_too_many() {
    let mut text = String::from("port-groups\n");
    for i in 0..=MAX_ITEMS {
        text.push_str(&format!(
            "port-group\nname: g{i}\nnode-type: CA\nend-port-group\n"
        ));
    }
    text.push_str("end-port-groups\n");
    // The group over the limit opens at line 2 + 4 * 4096.
    let line = 2 + 4 * MAX_ITEMS as u32;
    assert_eq!(errs(&text), [("QOS-E004", line, 1)]);
}

#[test]
fn e005_syntax() {
    assert_eq!(
        errs("port-groups\n  hello\nend-port-groups\n"),
        [("QOS-E005", 2, 3)]
    );
    assert_eq!(errs("  name: x\n"), [("QOS-E005", 1, 3)]);
    assert_eq!(
        errs("Qos-Levels\nend-qos-levels\n"),
        [("QOS-E005", 1, 1), ("QOS-E005", 2, 1)]
    );
    assert_eq!(
        errs(
            "port-groups\n port-group\n  name: a\n  color: red\n end-port-group\nend-port-groups\n"
        ),
        [("QOS-E005", 4, 3)]
    );
    assert_eq!(
        errs("qos-ulps\n  default : 0\n  mpi : 1\nend-qos-ulps\n"),
        [("QOS-E005", 3, 3)]
    );
    assert_eq!(
        errs("qos-ulps\n  default : 0\n  any : 1\nend-qos-ulps\n"),
        [("QOS-E005", 3, 3)]
    );
    assert_eq!(
        errs("qos-ulps\n  default : 0\n  sdp, pkey 0x1 : 1\nend-qos-ulps\n"),
        [("QOS-E005", 3, 8)]
    );
    assert_eq!(
        errs("qos-levels\nend-port-groups\nend-qos-levels\n"),
        [("QOS-E005", 2, 1)]
    );
    assert_eq!(errs("qos-level\n"), [("QOS-E005", 1, 1)]);
}

#[test]
fn e006_across_unsupported() {
    let text = "port-groups\n port-group\n  name: a\n  node-type: ALL\n end-port-group\nend-port-groups\n\
qos-setup\n sl2vl-tables\n  sl2vl-scope\n   group: a\n   across-to: a\n   sl2vl-table: 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,7\n  end-sl2vl-scope\n end-sl2vl-tables\n\
 vlarb-tables\n  vlarb-scope\n   across: a\n   group: a\n  end-vlarb-scope\n end-vlarb-tables\nend-qos-setup\n";
    assert_eq!(errs(text), [("QOS-E006", 11, 4), ("QOS-E006", 17, 4)]);
    let e = Policy::parse(text).unwrap_err();
    assert!(
        e[0].to_string().contains("`across-to` is not supported"),
        "{}",
        e[0]
    );
}

#[test]
fn e007_bad_values() {
    let lvl = |f: &str| {
        format!(
            "qos-levels\n qos-level\n  name: default\n  sl: 0\n  {f}\n end-qos-level\nend-qos-levels\n"
        )
    };
    assert_eq!(errs(&lvl("mtu-limit: 6")), [("QOS-E007", 5, 14)]);
    assert_eq!(errs(&lvl("rate-limit: 1")), [("QOS-E007", 5, 15)]);
    assert_eq!(errs(&lvl("packet-life: 64")), [("QOS-E007", 5, 16)]);
    assert_eq!(errs(&lvl("pkey: 1, 0x7ffe-0x8001")), [("QOS-E007", 5, 12)]);
    assert_eq!(errs(&lvl("path-bits: 0x80")), [("QOS-E007", 5, 14)]);
    assert_eq!(
        errs("qos-levels\n qos-level\n  name: default\n  sl: 16\n end-qos-level\nend-qos-levels\n"),
        [("QOS-E007", 4, 7)]
    );
    let scope = |f: &str| {
        format!(
            "port-groups\nport-group\nname: a\nnode-type: ALL\nend-port-group\nend-port-groups\nqos-setup\nvlarb-tables\nvlarb-scope\ngroup: a\n{f}\nend-vlarb-scope\nend-vlarb-tables\nend-qos-setup\n"
        )
    };
    assert_eq!(
        errs(&scope("vlarb-high: 0:4, 15:4")),
        [("QOS-E007", 11, 18)]
    );
    assert_eq!(errs(&scope("vlarb-low: 0:4,1:256")), [("QOS-E007", 11, 16)]);
    assert_eq!(errs(&scope("vlarb-low: 0:4,1")), [("QOS-E007", 11, 16)]);
    assert_eq!(errs(&scope("vl-high-limit: 0x100")), [("QOS-E007", 11, 16)]);
    let sl2 = |f: &str| {
        format!(
            "port-groups\nport-group\nname: a\nnode-type: ALL\nend-port-group\nend-port-groups\nqos-setup\nsl2vl-tables\nsl2vl-scope\ngroup: a\n{f}\nend-sl2vl-scope\nend-sl2vl-tables\nend-qos-setup\n"
        )
    };
    assert_eq!(errs(&sl2("sl2vl-table: 0,1,2")), [("QOS-E007", 11, 14)]);
    assert_eq!(
        errs(&sl2("sl2vl-table: 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,16")),
        [("QOS-E007", 11, 49)]
    );
    assert_eq!(
        errs(&format!(
            "{}\n",
            sl2("sl2vl: 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,7\nto: 255")
        )),
        [("QOS-E007", 12, 5)]
    );
    assert_eq!(
        errs(
            "port-groups\nport-group\nname: a\nport-name: host/1, host/P0\nend-port-group\nend-port-groups\n"
        ),
        [("QOS-E007", 4, 12)]
    );
    assert_eq!(
        errs(
            "port-groups\nport-group\nname: a\nnode-type: CA, HOST\nend-port-group\nend-port-groups\n"
        ),
        [("QOS-E007", 4, 16)]
    );
    assert_eq!(
        errs("port-groups\nport-group\nname: a\nport-guid: 010\nend-port-group\nend-port-groups\n"),
        [("QOS-E007", 4, 12)]
    );
    assert_eq!(
        errs("qos-ulps\n default : 16\nend-qos-ulps\n"),
        [("QOS-E007", 2, 12)]
    );
    assert_eq!(
        errs("qos-ulps\n default : 0\n sdp, port-num 70000 : 1\nend-qos-ulps\n"),
        [("QOS-E007", 3, 16)]
    );
}

#[test]
fn e008_duplicates() {
    let text = format!(
        "port-groups\nport-group\nname: Storage\nnode-type: CA\nend-port-group\nport-group\nname: storage\nnode-type: CA\nend-port-group\nend-port-groups\n{LEVELS}qos-levels\n qos-level\n  name: DEFAULT\n  sl: 1\n end-qos-level\nend-qos-levels\n"
    );
    assert_eq!(errs(&text), [("QOS-E008", 6, 1), ("QOS-E008", 18, 2)]);
}

#[test]
fn e009_unknown_references() {
    let text = format!(
        "{LEVELS}qos-match-rules\n qos-match-rule\n  source: Nowhere\n  qos-level-name: Gold\n end-qos-match-rule\nend-qos-match-rules\n\
qos-ulps\n sdp : Silver\nend-qos-ulps\nqos-setup\nvlarb-tables\nvlarb-scope\ngroup: Lost\nend-vlarb-scope\nend-vlarb-tables\nend-qos-setup\n"
    );
    assert_eq!(
        errs(&text),
        [
            ("QOS-E009", 9, 11),
            ("QOS-E009", 10, 19),
            ("QOS-E009", 14, 8),
            ("QOS-E009", 19, 8)
        ]
    );
}

#[test]
fn e010_missing_fields() {
    assert_eq!(
        errs("port-groups\n port-group\n  node-type: CA\n end-port-group\nend-port-groups\n"),
        [("QOS-E010", 2, 2)]
    );
    assert_eq!(
        errs("qos-levels\n qos-level\n  name: default\n end-qos-level\nend-qos-levels\n"),
        [("QOS-E010", 2, 2)]
    );
    assert_eq!(
        errs(&format!(
            "{LEVELS}qos-match-rules\n qos-match-rule\n  pkey: 1\n end-qos-match-rule\nend-qos-match-rules\n"
        )),
        [("QOS-E010", 8, 2)]
    );
    assert_eq!(
        errs(
            "qos-setup\n sl2vl-tables\n  sl2vl-scope\n  end-sl2vl-scope\n end-sl2vl-tables\nend-qos-setup\n"
        ),
        [("QOS-E010", 3, 3), ("QOS-E010", 3, 3)]
    );
}

#[test]
fn e011_repeated_fields() {
    assert_eq!(
        errs(
            "qos-levels\n qos-level\n  name: default\n  sl: 0\n  sl: 1\n end-qos-level\nend-qos-levels\n"
        ),
        [("QOS-E011", 5, 3)]
    );
    assert_eq!(
        errs("qos-ulps\n default : 0\n default : 1\nend-qos-ulps\n"),
        [("QOS-E011", 3, 2)]
    );
}

#[test]
fn e012_no_default_level() {
    assert_eq!(
        errs("qos-levels\n qos-level\n  name: gold\n  sl: 1\n end-qos-level\nend-qos-levels\n"),
        [("QOS-E012", 1, 1)]
    );
}

#[test]
fn e013_unclosed() {
    assert_eq!(
        errs("qos-levels\n qos-level\n  name: default\n  sl: 0\n"),
        [("QOS-E013", 1, 1), ("QOS-E013", 2, 2)]
    );
}

#[test]
fn all_errors_sorted_and_file_refused_whole() {
    let text = "qos-levels\n qos-level\n  name: default\n  sl: 99\n end-qos-level\n\
 qos-level\n  name: x\n  sl: 1\n  mtu-limit: 9\n end-qos-level\nend-qos-levels\n\
qos-ulps\n  bogus : 1\nend-qos-ulps\nport-groups\n";
    // A bad value is one error: no "missing sl" or "no default" follows from it.
    assert_eq!(
        errs(text),
        [
            ("QOS-E007", 4, 7),
            ("QOS-E007", 9, 14),
            ("QOS-E005", 13, 3),
            ("QOS-E013", 15, 1)
        ]
    );
    let e = Policy::parse(text).unwrap_err();
    let lines: Vec<String> = e.iter().map(|e| e.to_string()).collect();
    assert!(
        lines[0].starts_with("QOS-E007 4:7: `sl`: 99 is out of range 0-15"),
        "{lines:#?}"
    );
}

#[test]
fn truncated_or_damaged_text_never_panics() {
    // Deterministic: every prefix of the example policy, and the example with each
    // character removed or replaced by a delimiter. Each gives a policy or errors.
    let text = include_str!("example-policy.conf");
    let cuts: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    for &i in &cuts {
        let _ = Policy::parse(&text[..i]);
        let next = text[i..].chars().next().map_or(0, char::len_utf8);
        let _ = Policy::parse(&format!("{}{}", &text[..i], &text[i + next..]));
        for c in [':', ',', '#'] {
            let _ = Policy::parse(&format!("{}{c}{}", &text[..i], &text[i + next..]));
        }
    }
}
