//! ApplyQosPolicy in the replicated state: the QoS policy has its own version with the
//! partition policy's rules (a stale expected version is REPL-E004, a text that does not
//! parse is REPL-E003 with the line and column of its first error, and neither changes
//! anything), it does not move the partition policy's version, and it survives a snapshot.

use proto::state::{ApplyPolicy, Command, command::Kind};
use replica::ReplicatedState;

const POLICY: &str = "\
qos-levels
  qos-level
    name: storage
    sl: 2
  end-qos-level
  qos-level
    name: other
    sl: 0
  end-qos-level
end-qos-levels
qos-ulps
  default : other
  ipoib : storage
end-qos-ulps
";

fn apply(st: &mut ReplicatedState, index: u64, text: &str, expected: u64) -> replica::ApplyOutcome {
    let cmd = Command {
        request_id: 0,
        kind: Some(Kind::ApplyQosPolicy(ApplyPolicy {
            text: text.into(),
            expected_version: expected,
        })),
    };
    st.apply(index, 1, &cmd)
}

#[test]
fn qos_policy_versions_and_errors() {
    let mut st = ReplicatedState::new();
    let ok = apply(&mut st, 1, POLICY, 0);
    assert!(ok.is_accepted(), "{:?}", ok.result);
    assert_eq!(ok.policy_version, 1);
    assert_eq!(st.qos_policy().version, 1);
    assert_eq!(st.qos_policy().text, POLICY);
    assert_eq!(st.policy().version, 0, "the partition policy is untouched");

    // A stale version: refused, nothing changes.
    let stale = apply(&mut st, 2, POLICY, 0);
    let r = stale.to_proto();
    assert_eq!(r.code, "REPL-E004");
    assert_eq!(st.qos_policy().version, 1);

    // A syntax error: refused with its position, nothing changes.
    let bad = "qos-levels\n  qos-level\n    name: x\n    sl: 16\n  end-qos-level\nend-qos-levels\nqos-ulps\n  default : x\nend-qos-ulps\n";
    let r = apply(&mut st, 3, bad, 1).to_proto();
    assert_eq!(r.code, "REPL-E003", "{}", r.message);
    assert_eq!((r.line, r.col > 0), (4, true), "{}", r.message);
    assert_eq!(st.qos_policy().text, POLICY);

    // Snapshots keep it.
    let back = ReplicatedState::restore(&st.snapshot_bytes()).expect("restore");
    assert_eq!(back.qos_policy(), st.qos_policy());
}
