use proptest::prelude::*;
use proto::Message;
use proto::state::{
    ApplyPolicy, BeginIntent, IntentDone, LftTable, SealIntent, StateSnapshot, command::Kind,
};

use super::{cmd, contents};
use crate::{ReplicatedState, RestoreError, SNAPSHOT_FORMAT, topology_to_proto};
use fabric::generate::{FatTreeSpec, fat_tree};
use fabric::{Guid, PortNum};

/// A state with something in every part.
fn populated() -> ReplicatedState {
    let mut s = ReplicatedState::new();
    let t = fat_tree(&FatTreeSpec::new(2, 4)).unwrap();
    let kinds = vec![
        Kind::SetTopology(topology_to_proto(&t)),
        Kind::ApplyPolicy(ApplyPolicy {
            text: "Default=0x7fff : ALL=full ;\n".into(),
            expected_version: 0,
        }),
        Kind::BeginIntent(BeginIntent {
            id: 1,
            term: 1,
            contents: Some(contents(3, 3, 1)),
        }),
        Kind::SealIntent(SealIntent { id: 1, chunks: 1 }),
        Kind::IntentDone(IntentDone {
            id: 1,
            ..IntentDone::default()
        }),
        Kind::BeginIntent(BeginIntent {
            id: 2,
            term: 1,
            contents: Some(contents(2, 1, 9)),
        }),
        Kind::SealIntent(SealIntent { id: 2, chunks: 1 }),
    ];
    for (i, k) in kinds.into_iter().enumerate() {
        assert!(
            s.apply(i as u64 + 1, 1, &cmd(i as u64 + 100, k))
                .is_accepted()
        );
    }
    s
}

#[test]
fn round_trip_keeps_everything() {
    let s = populated();
    let bytes = s.snapshot_bytes();
    let r = ReplicatedState::restore(&bytes).unwrap();
    assert_eq!(r.snapshot_bytes(), bytes);
    assert_eq!(r.applied_index(), 7);
    assert_eq!(r.policy(), s.policy());
    assert!(r.policy_file().is_some(), "the policy is parsed again");
    assert_eq!(r.topology(), s.topology());
    assert!(r.lfts().eq(s.lfts()));
    assert_eq!(
        r.pkey_table(Guid(0x1000), PortNum(1)),
        s.pkey_table(Guid(0x1000), PortNum(1))
    );
    assert_eq!(r.pending_intent(), s.pending_intent());
    assert!(r.pending_intent().is_some());
    assert!(r.seen_request(100) && r.seen_request(106));
    // The restored replica finishes the pending intent like the original.
    let mut a = s.clone();
    let mut b = r;
    let d = cmd(
        0,
        Kind::IntentDone(IntentDone {
            id: 2,
            ..IntentDone::default()
        }),
    );
    assert_eq!(a.apply(8, 2, &d), b.apply(8, 2, &d));
    assert_eq!(a.snapshot_bytes(), b.snapshot_bytes());
}

#[test]
fn empty_state_round_trips() {
    let s = ReplicatedState::new();
    let r = ReplicatedState::restore(&s.snapshot_bytes()).unwrap();
    assert_eq!(r.snapshot_bytes(), s.snapshot_bytes());
    assert!(r.policy_file().is_none());
}

#[test]
fn inconsistent_snapshots_are_refused() {
    let good = populated().to_snapshot();
    let check = |s: StateSnapshot| ReplicatedState::restore(&s.encode_to_vec());
    assert_eq!(
        check(StateSnapshot {
            format: 2,
            ..good.clone()
        })
        .unwrap_err(),
        RestoreError::Format(2)
    );
    let mut s = good.clone();
    s.lfts.push(LftTable {
        switch_guid: 1,
        ports: vec![0; 63],
    });
    assert!(matches!(check(s), Err(RestoreError::Invalid(_))));
    let mut s = good.clone();
    let dup = s.lfts[0].clone();
    s.lfts.push(dup);
    assert!(matches!(check(s), Err(RestoreError::Invalid(_))));
    let mut s = good.clone();
    s.policy.as_mut().unwrap().text = "Default=0x7fff ALL ;".into();
    assert!(matches!(check(s), Err(RestoreError::Invalid(_))));
    let mut s = good.clone();
    s.recent_requests.push(100);
    assert!(matches!(check(s), Err(RestoreError::Invalid(_))));
    assert!(matches!(
        ReplicatedState::restore(&[0xff, 0xff, 0xff]),
        Err(RestoreError::Decode(_))
    ));
    assert_eq!(SNAPSHOT_FORMAT, good.format);
}

proptest! {
    #[test]
    fn restore_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = ReplicatedState::restore(&bytes);
    }

    #[test]
    fn restore_of_a_mutated_snapshot_never_panics(pos in 0usize..4096, v in any::<u8>()) {
        let mut bytes = populated().snapshot_bytes();
        let n = bytes.len();
        bytes[pos % n] = v;
        if let Ok(r) = ReplicatedState::restore(&bytes) {
            // Whatever restores re-encodes and restores again.
            prop_assert!(ReplicatedState::restore(&r.snapshot_bytes()).is_ok());
        }
    }
}
