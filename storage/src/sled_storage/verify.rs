//! The verification pass [`load`] runs when a store is opened: every stored value's
//! checksum, the on-disk format, index continuity from the first to the last index, terms
//! that never go down, the hard state's commit within the log, the snapshot and applied
//! state within the log; then [`check_against_mark`] compares the result with what the
//! last flush recorded. Nothing here panics on what it reads.

use raft::eraftpb::{ConfState, Entry, HardState, Snapshot, SnapshotMetadata};

use super::mark::{Mark, Summary};
use crate::codec::{
    FORMAT_VERSION, KEY_APPLIED, KEY_CONF_STATE, KEY_FORMAT, KEY_GENERATION, KEY_HARD_STATE,
    KEY_RECOVERING, KEY_SNAPSHOT, KEY_TRUNCATED, decode, decode_applied, decode_index_term,
    decode_u32, decode_u64, entry_place, key_index, meta_place, unseal,
};
use crate::error::{Error, Result};

/// What is cached in memory; always equal to what is in sled (updated after sled accepts).
#[derive(Debug, Clone, Default)]
pub(super) struct Cache {
    pub(super) hard_state: HardState,
    pub(super) conf_state: ConfState,
    pub(super) snapshot: SnapshotMetadata,
    /// Index and term of the last discarded entry: first index is `truncated_index + 1`.
    pub(super) truncated_index: u64,
    pub(super) truncated_term: u64,
    pub(super) last_index: u64,
    /// Term of the entry at `last_index` (the truncated term when the log is empty).
    pub(super) last_term: u64,
    pub(super) applied_index: Option<u64>,
    /// The write generation stored in sled (raised by the first write after a flush).
    pub(super) generation: u64,
    /// The recovering flag (`RaftLog::recovering`).
    pub(super) recovering: bool,
}

impl Cache {
    pub(super) fn first_index(&self) -> u64 {
        self.truncated_index + 1
    }

    /// The hard state's commit raised to the applied, snapshot and discarded indexes: each
    /// of them covers committed entries only, and a crash between `save_applied` and the
    /// flush of the new hard state can leave the stored commit below them (raft-rs panics
    /// on a restart with `applied > commit` or `commit < first_index - 1`).
    pub(super) fn effective_commit(&self) -> u64 {
        self.hard_state
            .commit
            .max(self.applied_index.unwrap_or(0))
            .max(self.snapshot.index)
            .max(self.truncated_index)
    }

    pub(super) fn summary(&self) -> Summary {
        Summary {
            commit: self.effective_commit(),
            term: self.hard_state.term,
            vote: self.hard_state.vote,
            first_index: self.first_index(),
            last_index: self.last_index,
            last_term: self.last_term,
            applied: self.applied_index.unwrap_or(0),
            snapshot: self.snapshot.index,
            recovering: self.recovering,
        }
    }
}

/// What [`load`] found.
#[derive(Debug)]
pub(super) enum Loaded {
    /// Nothing written yet: no key at all, or only the format and generation 0.
    Pristine {
        /// The format key is there already.
        formatted: bool,
    },
    /// A format-1 store, verified.
    Verified(Box<Cache>),
}

fn meta_value<T>(
    meta: &sled::Tree,
    key: &'static str,
    what: &'static str,
    parse: impl FnOnce(&[u8]) -> Result<T>,
) -> Result<Option<T>> {
    match meta.get(key)? {
        None => Ok(None),
        Some(v) => {
            let payload = unseal(what, || meta_place(key), key.as_bytes(), &v)?;
            parse(payload).map(Some)
        }
    }
}

/// Reads and verifies everything in the two trees. `path` only names the store in errors.
pub(super) fn load(path: &str, entries: &sled::Tree, meta: &sled::Tree) -> Result<Loaded> {
    let format = meta_value(meta, KEY_FORMAT, "format version", |b| {
        decode_u32(KEY_FORMAT, b)
    })?;
    match format {
        None if entries.is_empty() && meta.is_empty() => {
            return Ok(Loaded::Pristine { formatted: false });
        }
        None => {
            return Err(Error::UnsupportedFormat {
                path: path.to_string(),
                found: None,
                supported: FORMAT_VERSION,
                hint: "it was written before checksums; no migration is built: move it aside and start this replica as a new member",
            });
        }
        Some(v) if v != FORMAT_VERSION => {
            return Err(Error::UnsupportedFormat {
                path: path.to_string(),
                found: Some(v),
                supported: FORMAT_VERSION,
                hint: "it was written by a newer build",
            });
        }
        Some(_) => {}
    }
    let generation = meta_value(meta, KEY_GENERATION, "write generation", |b| {
        decode_u64(KEY_GENERATION, b)
    })?
    .ok_or_else(|| Error::CorruptedMeta {
        key: KEY_GENERATION,
        reason: "missing in a format-1 store".to_string(),
    })?;

    let mut c = Cache {
        generation,
        ..Cache::default()
    };
    if let Some(hs) = meta_value(meta, KEY_HARD_STATE, "hard state", |b| {
        decode("hard state", || meta_place(KEY_HARD_STATE), b)
    })? {
        c.hard_state = hs;
    }
    if let Some(cs) = meta_value(meta, KEY_CONF_STATE, "conf state", |b| {
        decode("conf state", || meta_place(KEY_CONF_STATE), b)
    })? {
        c.conf_state = cs;
    }
    let snapshot: Option<Snapshot> = meta_value(meta, KEY_SNAPSHOT, "snapshot", |b| {
        decode("snapshot", || meta_place(KEY_SNAPSHOT), b)
    })?;
    if let Some(s) = &snapshot {
        c.snapshot = s.get_metadata().clone();
    }
    if let Some((i, t)) = meta_value(meta, KEY_TRUNCATED, "discarded index", |b| {
        decode_index_term(KEY_TRUNCATED, b)
    })? {
        (c.truncated_index, c.truncated_term) = (i, t);
    }
    c.applied_index = meta_value(meta, KEY_APPLIED, "applied state", |b| {
        decode_applied(b).map(|(i, _)| i)
    })?;

    c.recovering = meta_value(meta, KEY_RECOVERING, "recovering flag", |b| match b {
        [1] => Ok(()),
        _ => Err(Error::CorruptedMeta {
            key: KEY_RECOVERING,
            reason: format!("{} bytes, expected the single byte 1", b.len()),
        }),
    })?
    .is_some();

    // Every entry: checksum, decoding, continuity, terms.
    let mut expected = c.first_index();
    let mut prev_term = c.truncated_term;
    let mut snapshot_term_in_log = None;
    for kv in entries.iter() {
        let (k, v) = kv?;
        let index = key_index(&k)?;
        if index != expected {
            return Err(Error::LogHole {
                expected,
                found: index,
            });
        }
        let payload = unseal("entry", || entry_place(index), &k, &v)?;
        let e: Entry = decode("entry", || entry_place(index), payload)?;
        if e.index != index {
            return Err(Error::LogHole {
                expected: index,
                found: e.index,
            });
        }
        if e.term < prev_term {
            return Err(Error::TermRegression {
                index,
                term: e.term,
                prev_term,
            });
        }
        if index == c.snapshot.index {
            snapshot_term_in_log = Some(e.term);
        }
        prev_term = e.term;
        expected += 1;
    }
    c.last_index = expected - 1;
    c.last_term = prev_term;

    if c.hard_state.commit > c.last_index {
        return Err(Error::CommitBeyondLog {
            commit: c.hard_state.commit,
            last_index: c.last_index,
        });
    }
    if snapshot.is_some() {
        let (index, term) = (c.snapshot.index, c.snapshot.term);
        let beyond = |reason: String| Error::StateBeyondLog {
            what: "snapshot",
            index,
            reason,
        };
        if index > c.last_index {
            return Err(beyond(format!("the log ends at {}", c.last_index)));
        }
        let log_term = if index == c.truncated_index {
            Some(c.truncated_term)
        } else {
            snapshot_term_in_log
        };
        if let Some(t) = log_term
            && t != term
        {
            return Err(beyond(format!(
                "term {term}, but the log has term {t} there"
            )));
        }
    }
    if let Some(a) = c.applied_index
        && a > c.last_index
    {
        return Err(Error::StateBeyondLog {
            what: "applied state",
            index: a,
            reason: format!("the log ends at {}", c.last_index),
        });
    }
    let pristine = generation == 0
        && entries.is_empty()
        && c.hard_state == HardState::default()
        && c.conf_state == ConfState::default()
        && snapshot.is_none()
        && c.truncated_index == 0
        && c.applied_index.is_none()
        && !c.recovering;
    if pristine {
        return Ok(Loaded::Pristine { formatted: true });
    }
    c.hard_state.commit = c.effective_commit();
    Ok(Loaded::Verified(Box::new(c)))
}

/// Compares a verified store with the mark of its last flush: the store must be at the
/// mark's generation with exactly the recorded state, or at a later generation (writes
/// after the flush that sled persisted on its own) without going back on anything that
/// only moves forward.
pub(super) fn check_against_mark(path: &str, c: &Cache, mark: &Mark) -> Result<()> {
    let found = c.summary();
    let durable = &mark.summary;
    if c.generation < mark.generation {
        return Err(Error::RolledBack {
            path: path.to_string(),
            durable: mark.generation,
            found: c.generation,
            commit: durable.commit,
            last_index: durable.last_index,
            found_commit: found.commit,
            found_last_index: found.last_index,
        });
    }
    let exact = c.generation == mark.generation;
    let fields: [(&'static str, u64, u64, bool); 9] = [
        ("commit", durable.commit, found.commit, true),
        ("term", durable.term, found.term, true),
        ("first index", durable.first_index, found.first_index, true),
        ("applied index", durable.applied, found.applied, true),
        ("vote", durable.vote, found.vote, false),
        ("last index", durable.last_index, found.last_index, false),
        ("last term", durable.last_term, found.last_term, false),
        ("snapshot index", durable.snapshot, found.snapshot, false),
        (
            "recovering flag",
            u64::from(durable.recovering),
            u64::from(found.recovering),
            false,
        ),
    ];
    for (field, durable, found, monotonic) in fields {
        let bad = if exact {
            durable != found
        } else {
            monotonic && found < durable
        };
        if bad {
            return Err(Error::NotAsFlushed {
                path: path.to_string(),
                field,
                durable,
                found,
                generation: mark.generation,
            });
        }
    }
    Ok(())
}
