use proto::state::{ApplyPolicy, command::Kind};

use super::cmd;
use crate::{ApplyError, Effect, POLICY_HISTORY, ReplicatedState};

const GOOD: &str = "Default=0x7fff : ALL=full ;\n";
const GOOD2: &str = "Default=0x7fff : ALL=limited, SELF=full ;\nstorage=0x0002 : ALL ;\n";
const BAD: &str = "Default=0x7fff : ALL=full ;\nstorage=0x0002 ALL=full ;\n";

fn apply(text: &str, expected_version: u64) -> Kind {
    Kind::ApplyPolicy(ApplyPolicy {
        text: text.into(),
        expected_version,
    })
}

#[test]
fn accepted_policy_bumps_version_and_keeps_text() {
    let mut s = ReplicatedState::new();
    assert_eq!(s.policy().version, 0);
    let o = s.apply(1, 1, &cmd(1, apply(GOOD, 0)));
    assert_eq!(o.result, Ok(Effect::PolicyApplied { version: 1 }));
    assert_eq!(o.policy_version, 1);
    assert_eq!(s.policy().text, GOOD);
    assert_eq!(s.policy().applied_at_index, 1);
    assert!(s.policy_file().is_some());
    let o = s.apply(2, 1, &cmd(2, apply(GOOD2, 1)));
    assert_eq!(o.result, Ok(Effect::PolicyApplied { version: 2 }));
    assert_eq!(s.policy().text, GOOD2);
    let hist: Vec<u64> = s.policy_history().map(|p| p.version).collect();
    assert_eq!(hist, vec![1, 2]);
}

#[test]
fn syntax_error_is_refused_with_line_col_and_changes_nothing() {
    let mut s = ReplicatedState::new();
    s.apply(1, 1, &cmd(1, apply(GOOD, 0)));
    let before = s.snapshot_bytes();
    let o = s.apply(2, 1, &cmd(2, apply(BAD, 1)));
    let expected = partitions::parse(BAD).unwrap_err();
    match &o.result {
        Err(ApplyError::PolicySyntax {
            line, col, count, ..
        }) => {
            assert_eq!(*line, 2, "the error is on the second line");
            assert_eq!((*line, *col), (expected[0].pos.line, expected[0].pos.col));
            assert_eq!(*count, expected.len());
        }
        other => panic!("expected a syntax error, got {other:?}"),
    }
    let r = o.to_proto();
    assert!(!r.accepted);
    assert_eq!(r.code, "REPL-E003");
    assert_eq!((r.line, r.col), (expected[0].pos.line, expected[0].pos.col));
    assert_eq!(r.policy_version, 1);
    assert_eq!(s.policy().text, GOOD);
    assert_eq!(s.policy().version, 1);
    // Only the applied index moved.
    let mut restored = ReplicatedState::restore(&before).unwrap();
    restored.applied_index = 2;
    assert_eq!(restored.snapshot_bytes(), s.snapshot_bytes());
    // The refused request id is not remembered: the corrected text may reuse it.
    let o = s.apply(3, 1, &cmd(2, apply(GOOD2, 1)));
    assert_eq!(o.result, Ok(Effect::PolicyApplied { version: 2 }));
}

#[test]
fn stale_version_is_refused() {
    let mut s = ReplicatedState::new();
    s.apply(1, 1, &cmd(0, apply(GOOD, 0)));
    s.apply(2, 1, &cmd(0, apply(GOOD2, 1)));
    // Two operators both edited version 1; the second apply loses.
    let o = s.apply(3, 1, &cmd(0, apply(GOOD, 1)));
    assert_eq!(
        o.result,
        Err(ApplyError::StaleVersion {
            expected: 1,
            current: 2
        })
    );
    assert_eq!(o.to_proto().code, "REPL-E004");
    assert_eq!(s.policy().text, GOOD2);
    // A future version is stale too.
    let o = s.apply(4, 1, &cmd(0, apply(GOOD, 7)));
    assert!(matches!(o.result, Err(ApplyError::StaleVersion { .. })));
    // Stale beats syntax: the version is checked first.
    let o = s.apply(5, 1, &cmd(0, apply(BAD, 0)));
    assert!(matches!(o.result, Err(ApplyError::StaleVersion { .. })));
    assert_eq!(s.policy().version, 2);
}

#[test]
fn history_is_bounded_and_keeps_the_latest() {
    let mut s = ReplicatedState::new();
    let n = POLICY_HISTORY as u64 + 5;
    for v in 0..n {
        let text = format!(
            "Default=0x7fff : ALL=full ;\np{v}=0x{:04x} : ALL ;\n",
            v + 1
        );
        let o = s.apply(v + 1, 1, &cmd(0, apply(&text, v)));
        assert!(o.is_accepted(), "{o:?}");
    }
    let hist: Vec<_> = s.policy_history().collect();
    assert_eq!(hist.len(), POLICY_HISTORY);
    assert_eq!(hist.last().unwrap().version, n);
    assert_eq!(hist.first().unwrap().version, n - POLICY_HISTORY as u64 + 1);
    assert_eq!(hist.last().unwrap().text, s.policy().text);
    for w in hist.windows(2) {
        assert_eq!(w[0].version + 1, w[1].version);
        assert!(w[0].applied_at_index < w[1].applied_at_index);
    }
}

#[test]
fn empty_text_is_a_valid_policy() {
    // partitions accepts an empty file (ALL=limited, SELF=full); apply follows the parser.
    let mut s = ReplicatedState::new();
    let o = s.apply(1, 1, &cmd(0, apply("", 0)));
    assert_eq!(o.result.is_ok(), partitions::parse("").is_ok());
}
