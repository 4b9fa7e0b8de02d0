//! Conformance checks that any [`RaftLog`] must pass: raft-rs's own `MemStorage` tests
//! (term, entries with `max_size`, first/last index, compact, append) plus the write side
//! (conflicting tails, snapshots, applied state) and reopening for durable logs.
//!
//! Each check builds fresh logs with `new` and returns `Err(description)` at the first
//! difference from the expected behaviour. [`crate::raft_log_conformance!`] turns them into
//! one `#[test]` per check for a given factory.

use protobuf::Message;
use raft::eraftpb::{ConfState, Entry, HardState, Snapshot};
use raft::{GetEntriesContext, StorageError};

use crate::error::Error;
use crate::log::{AppliedState, RaftLog};

/// Outcome of one check.
pub type CheckResult = std::result::Result<(), String>;

/// An entry with `index` and `term` and no data.
pub fn entry(index: u64, term: u64) -> Entry {
    Entry {
        index,
        term,
        ..Default::default()
    }
}

/// An entry with a payload, for size limits and overwrite checks.
pub fn entry_with_data(index: u64, term: u64, data: &[u8]) -> Entry {
    let mut e = entry(index, term);
    e.data = data.to_vec().into();
    e
}

/// A snapshot at `index`/`term` with `voters` and `data`.
pub fn snapshot(index: u64, term: u64, voters: &[u64], data: &[u8]) -> Snapshot {
    let mut s = Snapshot::default();
    s.mut_metadata().index = index;
    s.mut_metadata().term = term;
    s.mut_metadata().mut_conf_state().voters = voters.to_vec();
    s.data = data.to_vec().into();
    s
}

fn conf(voters: &[u64]) -> ConfState {
    ConfState {
        voters: voters.to_vec(),
        ..Default::default()
    }
}

/// A hard state with `term`, `vote` and `commit`.
pub fn hard_state(term: u64, vote: u64, commit: u64) -> HardState {
    HardState {
        term,
        vote,
        commit,
        ..Default::default()
    }
}

/// One `entries()` case: low, high, max_size and the expected answer.
type EntriesCase = (u64, u64, Option<u64>, raft::Result<Vec<Entry>>);

fn ctx() -> GetEntriesContext {
    GetEntriesContext::empty(false)
}

fn size(e: &Entry) -> u64 {
    u64::from(e.compute_size())
}

macro_rules! ensure_eq {
    ($what:expr, $got:expr, $want:expr) => {{
        let (got, want) = (&$got, &$want);
        if got != want {
            return Err(format!("{}: got {:?}, want {:?}", $what, got, want));
        }
    }};
}

fn ok<T, E: std::fmt::Debug>(what: &str, r: std::result::Result<T, E>) -> Result<T, String> {
    r.map_err(|e| format!("{what}: unexpected error {e:?}"))
}

/// A log whose entries are 3 (term 3), 4 (term 4), 5 (term 5) after a snapshot at 2
/// (term 2, voters 1 2 3): the shape raft-rs's MemStorage tests use.
pub fn seeded<L: RaftLog>(new: &mut dyn FnMut() -> L) -> Result<L, String> {
    let log = new();
    ok(
        "seed apply_snapshot(2)",
        log.apply_snapshot(snapshot(2, 2, &[1, 2, 3], b"s2")),
    )?;
    ok(
        "seed append 3..=5",
        log.append(&[entry(3, 3), entry(4, 4), entry(5, 5)]),
    )?;
    Ok(log)
}

fn bounds<L: RaftLog>(log: &L) -> Result<(u64, u64), String> {
    Ok((
        ok("first_index", log.first_index())?,
        ok("last_index", log.last_index())?,
    ))
}

fn all_entries<L: RaftLog>(log: &L) -> Result<Vec<Entry>, String> {
    let (first, last) = bounds(log)?;
    if last < first {
        return Ok(Vec::new());
    }
    ok(
        "entries(first, last+1)",
        log.entries(first, last + 1, None, ctx()),
    )
}

/// A new log: first index 1, last index 0, term(0) = 0, default state, no snapshot, no
/// applied state.
pub fn check_empty<L: RaftLog>(new: &mut dyn FnMut() -> L) -> CheckResult {
    let log = new();
    ensure_eq!("first/last of empty log", bounds(&log)?, (1, 0));
    ensure_eq!("term(0)", log.term(0), Ok(0));
    ensure_eq!(
        "term(1) of empty log",
        log.term(1),
        Err(raft::Error::Store(StorageError::Unavailable))
    );
    let st = ok("initial_state", log.initial_state())?;
    ensure_eq!("hard state", st.hard_state, HardState::default());
    ensure_eq!("conf state", st.conf_state, ConfState::default());
    ensure_eq!(
        "snapshot of empty log",
        log.snapshot(0, 2),
        Err(raft::Error::Store(
            StorageError::SnapshotTemporarilyUnavailable
        ))
    );
    ensure_eq!("applied", ok("load_applied", log.load_applied())?, None);
    Ok(())
}

/// term(): compacted below the first index, the snapshot term at first - 1, entry terms,
/// unavailable past the last index.
pub fn check_term<L: RaftLog>(new: &mut dyn FnMut() -> L) -> CheckResult {
    let log = seeded(new)?;
    let compacted = Err(raft::Error::Store(StorageError::Compacted));
    ensure_eq!("term(1)", log.term(1), compacted);
    ensure_eq!("term(2) (snapshot)", log.term(2), Ok(2));
    ensure_eq!("term(3)", log.term(3), Ok(3));
    ensure_eq!("term(4)", log.term(4), Ok(4));
    ensure_eq!("term(5)", log.term(5), Ok(5));
    ensure_eq!(
        "term(6)",
        log.term(6),
        Err(raft::Error::Store(StorageError::Unavailable))
    );
    Ok(())
}

/// entries(): ranges, Compacted below the first index, `max_size` semantics of
/// `raft::util::limit_size` (always one entry, then while the total fits).
pub fn check_entries<L: RaftLog>(new: &mut dyn FnMut() -> L) -> CheckResult {
    let log = seeded(new)?;
    ok("append 6", log.append(&[entry(6, 6)]))?;
    let e = [entry(3, 3), entry(4, 4), entry(5, 5), entry(6, 6)];
    let max = u64::MAX;
    let cases: Vec<EntriesCase> = vec![
        (
            2,
            6,
            Some(max),
            Err(raft::Error::Store(StorageError::Compacted)),
        ),
        (3, 4, Some(max), Ok(e[0..1].to_vec())),
        (4, 5, Some(max), Ok(e[1..2].to_vec())),
        (4, 6, Some(max), Ok(e[1..3].to_vec())),
        (4, 7, Some(max), Ok(e[1..4].to_vec())),
        (4, 7, None, Ok(e[1..4].to_vec())),
        (3, 7, None, Ok(e.to_vec())),
        (4, 4, None, Ok(Vec::new())),
        (4, 7, Some(0), Ok(e[1..2].to_vec())),
        (4, 7, Some(size(&e[1]) + size(&e[2])), Ok(e[1..3].to_vec())),
        (
            4,
            7,
            Some(size(&e[1]) + size(&e[2]) + size(&e[3]) / 2),
            Ok(e[1..3].to_vec()),
        ),
        (
            4,
            7,
            Some(size(&e[1]) + size(&e[2]) + size(&e[3]) - 1),
            Ok(e[1..3].to_vec()),
        ),
        (
            4,
            7,
            Some(size(&e[1]) + size(&e[2]) + size(&e[3])),
            Ok(e[1..4].to_vec()),
        ),
    ];
    for (i, (lo, hi, max_size, want)) in cases.into_iter().enumerate() {
        let got = log.entries(lo, hi, max_size, ctx());
        ensure_eq!(format!("#{i} entries({lo}, {hi}, {max_size:?})"), got, want);
    }
    // Sizes with payloads: 3 entries of 100 bytes, limit for two of them.
    let log = seeded(new)?;
    let big: Vec<Entry> = (3..=5)
        .map(|i| entry_with_data(i, 5, &[i as u8; 100]))
        .collect();
    ok("append payloads", log.append(&big))?;
    let two = size(&big[0]) + size(&big[1]);
    ensure_eq!(
        "payload entries within two-entry budget",
        log.entries(3, 6, Some(two), ctx()),
        Ok(big[0..2].to_vec())
    );
    ensure_eq!(
        "payload entries with budget smaller than the first",
        log.entries(3, 6, Some(1), ctx()),
        Ok(big[0..1].to_vec())
    );
    Ok(())
}

/// first_index()/last_index() follow append and compact.
pub fn check_first_last<L: RaftLog>(new: &mut dyn FnMut() -> L) -> CheckResult {
    let log = seeded(new)?;
    ensure_eq!("seeded bounds", bounds(&log)?, (3, 5));
    ok("append 6", log.append(&[entry(6, 5)]))?;
    ensure_eq!("after append 6", bounds(&log)?, (3, 6));
    ok("compact(4)", log.compact(4))?;
    ensure_eq!("after compact(4)", bounds(&log)?, (4, 6));
    ok("append 5 (truncate 6)", log.append(&[entry(5, 7)]))?;
    ensure_eq!("after truncating append", bounds(&log)?, (4, 5));
    Ok(())
}

/// compact(): the table of raft-rs's test (at or below the first index is a no-op), and
/// compacting past `last_index + 1` is refused.
pub fn check_compact<L: RaftLog>(new: &mut dyn FnMut() -> L) -> CheckResult {
    // (compact index, want first index, want its term, want entry count)
    for (idx, wfirst, wterm, wlen) in [(2, 3, 3, 3), (3, 3, 3, 3), (4, 4, 4, 2), (5, 5, 5, 1)] {
        let log = seeded(new)?;
        ok("compact", log.compact(idx))?;
        let (first, last) = bounds(&log)?;
        ensure_eq!(format!("first after compact({idx})"), first, wfirst);
        ensure_eq!(format!("last after compact({idx})"), last, 5);
        ensure_eq!(
            format!("term({first}) after compact({idx})"),
            log.term(first),
            Ok(wterm)
        );
        ensure_eq!(
            format!("entries after compact({idx})"),
            all_entries(&log)?.len(),
            wlen
        );
        if first > 3 {
            ensure_eq!(
                format!("entries below first after compact({idx})"),
                log.entries(first - 1, last + 1, None, ctx()),
                Err(raft::Error::Store(StorageError::Compacted))
            );
        }
        // Two below the first index (and not the snapshot's index 2) is compacted.
        if first >= 5 {
            ensure_eq!(
                format!("term({}) after compact({idx})", first - 2),
                log.term(first - 2),
                Err(raft::Error::Store(StorageError::Compacted))
            );
        }
    }
    let log = seeded(new)?;
    match log.compact(7) {
        Err(Error::CompactBeyondLog { .. }) => {}
        other => return Err(format!("compact(7) past last 5 + 1: got {other:?}")),
    }
    ensure_eq!("bounds after refused compact", bounds(&log)?, (3, 5));
    Ok(())
}

/// append(): identical entries, a conflicting tail replaced, extension, truncation to a
/// shorter tail, direct append, and the refusals (compacted, gap, not consecutive).
pub fn check_append<L: RaftLog>(new: &mut dyn FnMut() -> L) -> CheckResult {
    let base = [entry(3, 3), entry(4, 4), entry(5, 5)];
    let cases: Vec<(Vec<Entry>, Vec<Entry>)> = vec![
        (base.to_vec(), base.to_vec()),
        (
            vec![entry(3, 3), entry(4, 6), entry(5, 6)],
            vec![entry(3, 3), entry(4, 6), entry(5, 6)],
        ),
        (
            vec![entry(3, 3), entry(4, 4), entry(5, 5), entry(6, 5)],
            vec![entry(3, 3), entry(4, 4), entry(5, 5), entry(6, 5)],
        ),
        (vec![entry(4, 5)], vec![entry(3, 3), entry(4, 5)]),
        (
            vec![entry(6, 6)],
            vec![entry(3, 3), entry(4, 4), entry(5, 5), entry(6, 6)],
        ),
        (
            vec![entry_with_data(5, 9, b"new")],
            vec![entry(3, 3), entry(4, 4), entry_with_data(5, 9, b"new")],
        ),
    ];
    for (i, (ents, want)) in cases.into_iter().enumerate() {
        let log = seeded(new)?;
        ok(&format!("#{i} append"), log.append(&ents))?;
        ensure_eq!(
            format!("#{i} entries after append"),
            all_entries(&log)?,
            want
        );
        let want_last = want.last().map(|e| e.index).unwrap_or(2);
        ensure_eq!(format!("#{i} last index"), bounds(&log)?.1, want_last);
        ensure_eq!(
            format!("#{i} term past the end"),
            log.term(want_last + 1),
            Err(raft::Error::Store(StorageError::Unavailable))
        );
    }
    let log = seeded(new)?;
    match log.append(&[entry(2, 3), entry(3, 3), entry(4, 5)]) {
        Err(Error::AppendCompacted { .. }) => {}
        other => return Err(format!("append over compacted: got {other:?}")),
    }
    match log.append(&[entry(7, 5)]) {
        Err(Error::AppendGap { .. }) => {}
        other => return Err(format!("append with a gap: got {other:?}")),
    }
    match log.append(&[entry(6, 5), entry(8, 5)]) {
        Err(Error::AppendNotConsecutive { .. }) => {}
        other => return Err(format!("append not consecutive: got {other:?}")),
    }
    ensure_eq!(
        "entries after refused appends",
        all_entries(&log)?,
        base.to_vec()
    );
    ok("empty append", log.append(&[]))?;
    ensure_eq!(
        "entries after empty append",
        all_entries(&log)?,
        base.to_vec()
    );
    Ok(())
}

/// apply_snapshot(): replaces the log, hard state commit/term, conf state, stored snapshot
/// and applied state; an older snapshot is refused; appending resumes after it.
pub fn check_apply_snapshot<L: RaftLog>(new: &mut dyn FnMut() -> L) -> CheckResult {
    let log = seeded(new)?;
    let hs = hard_state(9, 2, 4);
    ok("set_hardstate", log.set_hardstate(hs))?;

    let snap = snapshot(7, 6, &[1, 2, 4], b"state at 7");
    ok("apply_snapshot(7)", log.apply_snapshot(snap.clone()))?;
    ensure_eq!("bounds after snapshot", bounds(&log)?, (8, 7));
    ensure_eq!("term(7)", log.term(7), Ok(6));
    ensure_eq!(
        "term(5) after snapshot",
        log.term(5),
        Err(raft::Error::Store(StorageError::Compacted))
    );
    let st = ok("initial_state", log.initial_state())?;
    ensure_eq!("commit after snapshot", st.hard_state.commit, 7);
    ensure_eq!("term kept (max)", st.hard_state.term, 9);
    ensure_eq!("vote kept", st.hard_state.vote, 2);
    ensure_eq!("conf state from snapshot", st.conf_state, conf(&[1, 2, 4]));
    ensure_eq!("snapshot()", log.snapshot(0, 3), Ok(snap.clone()));
    ensure_eq!("snapshot(7)", log.snapshot(7, 3), Ok(snap.clone()));
    ensure_eq!(
        "snapshot(8) newer than stored",
        log.snapshot(8, 3),
        Err(raft::Error::Store(
            StorageError::SnapshotTemporarilyUnavailable
        ))
    );
    ensure_eq!(
        "applied after snapshot",
        ok("load_applied", log.load_applied())?,
        Some(AppliedState {
            index: 7,
            data: b"state at 7".to_vec()
        })
    );
    match log.apply_snapshot(snapshot(6, 6, &[1], b"old")) {
        Err(Error::SnapshotOutOfDate { .. }) => {}
        other => return Err(format!("older snapshot: got {other:?}")),
    }
    match log.append(&[entry(9, 6)]) {
        Err(Error::AppendGap { .. }) => {}
        other => return Err(format!("append with a gap after snapshot: got {other:?}")),
    }
    ok(
        "append 8 after snapshot",
        log.append(&[entry(8, 6), entry(9, 9)]),
    )?;
    ensure_eq!("bounds after append", bounds(&log)?, (8, 9));
    ensure_eq!(
        "entries after snapshot + append",
        all_entries(&log)?,
        vec![entry(8, 6), entry(9, 9)]
    );
    // A snapshot inside the current log also replaces it whole.
    ok(
        "apply_snapshot(8)",
        log.apply_snapshot(snapshot(8, 6, &[1, 2, 4], b"8")),
    )?;
    ensure_eq!(
        "bounds after snapshot inside the log",
        bounds(&log)?,
        (9, 8)
    );
    Ok(())
}

/// create_snapshot(): records a snapshot at an index of the log with its term and the given
/// conf state and data; `snapshot()` serves it to raft; compaction after it keeps serving.
pub fn check_create_snapshot<L: RaftLog>(new: &mut dyn FnMut() -> L) -> CheckResult {
    let log = seeded(new)?;
    let snap = ok(
        "create_snapshot(4)",
        log.create_snapshot(4, conf(&[1, 2, 3]), b"applied 4".to_vec()),
    )?;
    ensure_eq!("snapshot index", snap.get_metadata().index, 4);
    ensure_eq!("snapshot term", snap.get_metadata().term, 4);
    ensure_eq!(
        "snapshot conf",
        snap.get_metadata().get_conf_state().clone(),
        conf(&[1, 2, 3])
    );
    ensure_eq!("snapshot data", snap.data.to_vec(), b"applied 4".to_vec());
    ensure_eq!("snapshot(0)", log.snapshot(0, 2), Ok(snap.clone()));
    ensure_eq!("snapshot(4)", log.snapshot(4, 2), Ok(snap.clone()));
    ensure_eq!(
        "snapshot(5)",
        log.snapshot(5, 2),
        Err(raft::Error::Store(
            StorageError::SnapshotTemporarilyUnavailable
        ))
    );
    ensure_eq!("log untouched by create_snapshot", bounds(&log)?, (3, 5));
    ok("compact(4)", log.compact(4))?;
    ensure_eq!("bounds after compact(4)", bounds(&log)?, (4, 5));
    ensure_eq!("snapshot after compact", log.snapshot(0, 2), Ok(snap));
    for bad in [0, 6] {
        match log.create_snapshot(bad, conf(&[1]), Vec::new()) {
            Err(Error::SnapshotIndexOutOfRange { .. }) => {}
            other => return Err(format!("create_snapshot({bad}): got {other:?}")),
        }
    }
    let snap5 = ok(
        "create_snapshot(5)",
        log.create_snapshot(5, conf(&[1, 2, 3]), b"applied 5".to_vec()),
    )?;
    ensure_eq!(
        "snapshot(5) after new snapshot",
        log.snapshot(5, 2),
        Ok(snap5)
    );
    // After a conf change the stored snapshot is stale: a new member would refuse it.
    ok("set_conf_state", log.set_conf_state(conf(&[1, 2, 3, 4])))?;
    ensure_eq!(
        "snapshot with an old conf state",
        log.snapshot(0, 4),
        Err(raft::Error::Store(
            StorageError::SnapshotTemporarilyUnavailable
        ))
    );
    let snap5b = ok(
        "create_snapshot(5) with the new conf state",
        log.create_snapshot(5, conf(&[1, 2, 3, 4]), b"applied 5".to_vec()),
    )?;
    ensure_eq!(
        "snapshot after re-creating it",
        log.snapshot(0, 4),
        Ok(snap5b)
    );
    Ok(())
}

/// set_hardstate()/set_conf_state() are what initial_state() returns.
pub fn check_hard_and_conf_state<L: RaftLog>(new: &mut dyn FnMut() -> L) -> CheckResult {
    let log = new();
    let hs = hard_state(3, 1, 0);
    ok("set_hardstate", log.set_hardstate(hs.clone()))?;
    let mut cs = conf(&[1, 2, 3]);
    cs.learners = vec![7];
    ok("set_conf_state", log.set_conf_state(cs.clone()))?;
    let st = ok("initial_state", log.initial_state())?;
    ensure_eq!("hard state", st.hard_state, hs);
    ensure_eq!("conf state", st.conf_state, cs);
    Ok(())
}

/// save_applied()/load_applied(): last write wins, index never goes backwards.
pub fn check_applied<L: RaftLog>(new: &mut dyn FnMut() -> L) -> CheckResult {
    let log = seeded(new)?;
    ok("save_applied(3)", log.save_applied(3, b"three"))?;
    ok("save_applied(5)", log.save_applied(5, b"five"))?;
    ensure_eq!(
        "applied",
        ok("load_applied", log.load_applied())?,
        Some(AppliedState {
            index: 5,
            data: b"five".to_vec()
        })
    );
    match log.save_applied(4, b"four") {
        Err(Error::AppliedRegression { current: 5, new: 4 }) => {}
        other => return Err(format!("applied regression: got {other:?}")),
    }
    ok("save_applied(5) again", log.save_applied(5, b"five'"))?;
    ensure_eq!(
        "applied rewritten at same index",
        ok("load_applied", log.load_applied())?.map(|a| a.data),
        Some(b"five'".to_vec())
    );
    Ok(())
}

/// recovery_state(): the newer of applied state and snapshot; refused when the log was
/// compacted past both.
pub fn check_recovery_state<L: RaftLog>(new: &mut dyn FnMut() -> L) -> CheckResult {
    let log = new();
    ensure_eq!(
        "recovery of a new log",
        ok("recovery_state", log.recovery_state())?,
        None
    );
    ensure_eq!(
        "no snapshot in a new log",
        ok("load_snapshot", log.load_snapshot())?,
        None
    );
    let log = seeded(new)?;
    let at = |index: u64, data: &[u8]| {
        Some(AppliedState {
            index,
            data: data.to_vec(),
        })
    };
    ensure_eq!(
        "recovery after a received snapshot",
        ok("recovery_state", log.recovery_state())?,
        at(2, b"s2")
    );
    ok("save_applied(4)", log.save_applied(4, b"a4"))?;
    ensure_eq!(
        "recovery from applied",
        ok("recovery_state", log.recovery_state())?,
        at(4, b"a4")
    );
    let snap = ok(
        "create_snapshot(5)",
        log.create_snapshot(5, conf(&[1]), b"s5".to_vec()),
    )?;
    ensure_eq!(
        "load_snapshot",
        ok("load_snapshot", log.load_snapshot())?,
        Some(snap)
    );
    ensure_eq!(
        "recovery from the newer snapshot",
        ok("recovery_state", log.recovery_state())?,
        at(5, b"s5")
    );
    ok("compact(5)", log.compact(5))?;
    ensure_eq!(
        "recovery after compaction up to the snapshot",
        ok("recovery_state", log.recovery_state())?,
        at(5, b"s5")
    );
    let log = seeded(new)?;
    ok("compact(5) past applied and snapshot", log.compact(5))?;
    match log.recovery_state() {
        Err(Error::Unrecoverable {
            index: 2,
            first_index: 5,
        }) => {}
        other => return Err(format!("recovery after over-compaction: got {other:?}")),
    }
    Ok(())
}

/// For durable logs: everything written and flushed is exactly back after `reopen`
/// (which drops the log it is given and opens the same place again).
pub fn check_reopen<L: RaftLog>(
    new: &mut dyn FnMut() -> L,
    reopen: &mut dyn FnMut(L) -> L,
) -> CheckResult {
    let log = seeded(new)?;
    ok(
        "append 6..=8",
        log.append(&[entry_with_data(6, 6, b"six"), entry(7, 6), entry(8, 6)]),
    )?;
    // A conflicting tail: 7 is replaced and 8 must stay gone after reopening.
    ok("append 7 (truncate 8)", log.append(&[entry(7, 6)]))?;
    let hs = hard_state(6, 3, 6);
    ok("set_hardstate", log.set_hardstate(hs.clone()))?;
    let cs = conf(&[1, 2, 3, 4]);
    ok("set_conf_state", log.set_conf_state(cs.clone()))?;
    let snap = ok(
        "create_snapshot(4)",
        log.create_snapshot(4, cs.clone(), b"s4".to_vec()),
    )?;
    ok("compact(4)", log.compact(4))?;
    ok("save_applied(6)", log.save_applied(6, b"a6"))?;
    ok("flush", log.flush())?;
    let before = (
        bounds(&log)?,
        all_entries(&log)?,
        log.term(3),
        log.load_applied().map_err(|e| e.to_string())?,
    );
    let log = reopen(log);
    let st = ok("initial_state after reopen", log.initial_state())?;
    ensure_eq!("hard state after reopen", st.hard_state, hs);
    ensure_eq!("conf state after reopen", st.conf_state, cs);
    ensure_eq!("snapshot after reopen", log.snapshot(0, 1), Ok(snap));
    let after = (
        bounds(&log)?,
        all_entries(&log)?,
        log.term(3),
        log.load_applied().map_err(|e| e.to_string())?,
    );
    ensure_eq!("log and applied state after reopen", after, before);
    ensure_eq!("bounds after reopen", after.0, (4, 7));
    Ok(())
}

/// Generates one `#[test]` per conformance check in module `$name`, building logs with
/// the expression `$new` (a closure `FnMut() -> impl RaftLog`).
#[macro_export]
macro_rules! raft_log_conformance {
    ($name:ident, $new:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            use $crate::conformance as c;

            #[test]
            fn empty() {
                c::check_empty(&mut $new).unwrap();
            }
            #[test]
            fn term() {
                c::check_term(&mut $new).unwrap();
            }
            #[test]
            fn entries_and_max_size() {
                c::check_entries(&mut $new).unwrap();
            }
            #[test]
            fn first_and_last_index() {
                c::check_first_last(&mut $new).unwrap();
            }
            #[test]
            fn compact_boundaries() {
                c::check_compact(&mut $new).unwrap();
            }
            #[test]
            fn append_conflicting_tail() {
                c::check_append(&mut $new).unwrap();
            }
            #[test]
            fn apply_snapshot() {
                c::check_apply_snapshot(&mut $new).unwrap();
            }
            #[test]
            fn create_snapshot() {
                c::check_create_snapshot(&mut $new).unwrap();
            }
            #[test]
            fn hard_and_conf_state() {
                c::check_hard_and_conf_state(&mut $new).unwrap();
            }
            #[test]
            fn applied_state() {
                c::check_applied(&mut $new).unwrap();
            }
            #[test]
            fn recovery_state() {
                c::check_recovery_state(&mut $new).unwrap();
            }
        }
    };
}
