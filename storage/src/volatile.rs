//! [`VolatileLog`]: an in-memory [`RaftLog`] with a disk model for simulations. What was
//! written before the last [`RaftLog::flush`] is durable; [`VolatileLog::crash`] throws
//! away everything written after it, as a process kill (or, with the caveats of the real
//! store, a power cut) would. A replica that acknowledges before flushing loses
//! acknowledged entries on a simulated crash, which the simulation's invariants catch.
//!
//! Every clone shares one log (the replica core holds one, its `RawNode` another, the
//! simulated machine a third to crash it). Writes go to the live log and to a journal; a
//! flush moves the journal to the durable history. A crash rebuilds the live log by
//! replaying the durable history on an empty log, so it is exactly what was flushed.

use std::sync::{Arc, Mutex, MutexGuard};

use raft::eraftpb::{ConfState, Entry, HardState, Snapshot};
use raft::{GetEntriesContext, RaftState, Storage};

use crate::error::{Error, Result};
use crate::log::{AppliedState, RaftLog};
use crate::mem::MemRaftLog;

/// One write not yet flushed.
#[derive(Clone, Debug)]
enum Op {
    Initialize(ConfState),
    Append(Vec<Entry>),
    HardState(HardState),
    ConfState(ConfState),
    ApplySnapshot(Snapshot),
    Compact(u64),
    CreateSnapshot(u64, ConfState, Vec<u8>),
    SaveApplied(u64, Vec<u8>),
    Recovering(bool),
}

impl Op {
    fn replay(self, log: &MemRaftLog) -> Result<()> {
        match self {
            Op::Initialize(cs) => log.initialize(cs),
            Op::Append(e) => log.append(&e),
            Op::HardState(hs) => log.set_hardstate(hs),
            Op::ConfState(cs) => log.set_conf_state(cs),
            Op::ApplySnapshot(s) => log.apply_snapshot(s),
            Op::Compact(i) => log.compact(i),
            Op::CreateSnapshot(i, cs, d) => log.create_snapshot(i, cs, d).map(|_| ()),
            Op::SaveApplied(i, d) => log.save_applied(i, &d),
            Op::Recovering(on) => log.set_recovering(on),
        }
    }
}

#[derive(Default)]
struct Disk {
    live: MemRaftLog,
    /// Every flushed write, in order.
    durable: Vec<Op>,
    journal: Vec<Op>,
    flushes: u64,
}

/// An in-memory log that loses unflushed writes on [`VolatileLog::crash`].
#[derive(Clone, Default)]
pub struct VolatileLog {
    disk: Arc<Mutex<Disk>>,
}

impl VolatileLog {
    /// An empty log (the replica initializes it with its voters).
    pub fn new() -> Self {
        Self::default()
    }

    fn disk(&self) -> Result<MutexGuard<'_, Disk>> {
        self.disk.lock().map_err(|_| Error::Poisoned)
    }

    fn live(&self) -> Result<MemRaftLog> {
        Ok(self.disk()?.live.clone())
    }

    fn write(&self, op: Op) -> Result<()> {
        let mut d = self.disk()?;
        op.clone().replay(&d.live)?;
        d.journal.push(op);
        Ok(())
    }

    /// The machine dies: every write after the last flush is lost. Returns how many writes
    /// were lost.
    pub fn crash(&self) -> Result<usize> {
        let mut d = self.disk()?;
        let lost = d.journal.len();
        d.journal.clear();
        let live = MemRaftLog::new();
        for op in &d.durable {
            op.clone().replay(&live)?;
        }
        d.live = live;
        Ok(lost)
    }

    /// Writes made since the last flush.
    pub fn unflushed(&self) -> usize {
        self.disk().map_or(0, |d| d.journal.len())
    }

    /// Flushes so far.
    pub fn flushes(&self) -> u64 {
        self.disk().map_or(0, |d| d.flushes)
    }
}

impl Storage for VolatileLog {
    fn initial_state(&self) -> raft::Result<RaftState> {
        self.live()?.initial_state()
    }

    fn entries(
        &self,
        low: u64,
        high: u64,
        max_size: impl Into<Option<u64>>,
        context: GetEntriesContext,
    ) -> raft::Result<Vec<Entry>> {
        self.live()?.entries(low, high, max_size, context)
    }

    fn term(&self, idx: u64) -> raft::Result<u64> {
        self.live()?.term(idx)
    }

    fn first_index(&self) -> raft::Result<u64> {
        self.live()?.first_index()
    }

    fn last_index(&self) -> raft::Result<u64> {
        self.live()?.last_index()
    }

    fn snapshot(&self, request_index: u64, to: u64) -> raft::Result<Snapshot> {
        self.live()?.snapshot(request_index, to)
    }
}

impl RaftLog for VolatileLog {
    fn initialize(&self, cs: ConfState) -> Result<()> {
        self.write(Op::Initialize(cs))
    }

    fn take_snapshot_request(&self) -> Option<u64> {
        self.live().ok()?.take_snapshot_request()
    }

    fn append(&self, entries: &[Entry]) -> Result<()> {
        if entries.is_empty() {
            return Ok(());
        }
        self.write(Op::Append(entries.to_vec()))
    }

    fn set_hardstate(&self, hs: HardState) -> Result<()> {
        self.write(Op::HardState(hs))
    }

    fn set_conf_state(&self, cs: ConfState) -> Result<()> {
        self.write(Op::ConfState(cs))
    }

    fn apply_snapshot(&self, snapshot: Snapshot) -> Result<()> {
        self.write(Op::ApplySnapshot(snapshot))
    }

    fn compact(&self, compact_index: u64) -> Result<()> {
        self.write(Op::Compact(compact_index))
    }

    fn create_snapshot(
        &self,
        index: u64,
        conf_state: ConfState,
        data: Vec<u8>,
    ) -> Result<Snapshot> {
        let mut d = self.disk()?;
        let snap = d
            .live
            .create_snapshot(index, conf_state.clone(), data.clone())?;
        d.journal.push(Op::CreateSnapshot(index, conf_state, data));
        Ok(snap)
    }

    fn save_applied(&self, index: u64, data: &[u8]) -> Result<()> {
        self.write(Op::SaveApplied(index, data.to_vec()))
    }

    fn load_applied(&self) -> Result<Option<AppliedState>> {
        self.live()?.load_applied()
    }

    fn load_snapshot(&self) -> Result<Option<Snapshot>> {
        self.live()?.load_snapshot()
    }

    fn recovering(&self) -> Result<bool> {
        self.live()?.recovering()
    }

    fn set_recovering(&self, on: bool) -> Result<()> {
        self.write(Op::Recovering(on))
    }

    fn flush(&self) -> Result<()> {
        let mut d = self.disk()?;
        let journal = std::mem::take(&mut d.journal);
        d.durable.extend(journal);
        d.flushes += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance::{entry, hard_state};

    fn voters() -> ConfState {
        ConfState {
            voters: vec![1, 2, 3],
            ..Default::default()
        }
    }

    #[test]
    fn a_crash_keeps_what_was_flushed_and_loses_the_rest() {
        let log = VolatileLog::new();
        log.initialize(voters()).unwrap();
        log.append(&[entry(1, 1), entry(2, 1)]).unwrap();
        log.set_hardstate(hard_state(1, 1, 2)).unwrap();
        log.save_applied(2, b"two").unwrap();
        log.flush().unwrap();
        log.append(&[entry(3, 1)]).unwrap();
        log.set_hardstate(hard_state(2, 2, 3)).unwrap();
        assert_eq!(log.unflushed(), 2);
        assert_eq!(log.crash().unwrap(), 2);
        assert_eq!(log.last_index().unwrap(), 2);
        let st = log.initial_state().unwrap();
        assert_eq!(st.hard_state, hard_state(1, 1, 2));
        assert_eq!(st.conf_state.voters, vec![1, 2, 3]);
        assert_eq!(log.load_applied().unwrap().unwrap().data, b"two");
        // The log goes on after the crash.
        log.append(&[entry(3, 2)]).unwrap();
        log.flush().unwrap();
        assert_eq!(log.crash().unwrap(), 0);
        assert_eq!(log.term(3).unwrap(), 2);
    }

    #[test]
    fn snapshots_and_compaction_survive_a_crash_once_flushed() {
        let log = VolatileLog::new();
        log.initialize(voters()).unwrap();
        let ents: Vec<Entry> = (1..=10).map(|i| entry(i, 1)).collect();
        log.append(&ents).unwrap();
        log.set_hardstate(hard_state(1, 1, 10)).unwrap();
        log.create_snapshot(8, voters(), b"eight".to_vec()).unwrap();
        log.compact(8).unwrap();
        log.flush().unwrap();
        log.crash().unwrap();
        assert_eq!(log.first_index().unwrap(), 8);
        assert_eq!(log.last_index().unwrap(), 10);
        let rec = log.recovery_state().unwrap().unwrap();
        assert_eq!((rec.index, rec.data.as_slice()), (8, &b"eight"[..]));
        assert_eq!(log.snapshot(0, 2).unwrap().get_metadata().index, 8);
    }
}
