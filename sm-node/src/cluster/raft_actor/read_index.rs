//! Linearizable reads through Raft ReadIndex: the leader records its commit index, confirms
//! with a heartbeat round that a quorum still follows it (raft-rs `ReadOnlyOption::Safe`),
//! and the read is served once this replica has applied up to that index. A read never
//! relies on clocks or on the lease: a deposed leader that cannot reach a quorum answers
//! nothing.

use super::{ProposeError, RaftActor};
use actix::prelude::*;
use std::collections::HashMap;
use tokio::sync::oneshot;

/// Reads waiting for their ReadState, then for the applied index to reach it.
#[derive(Debug, Default)]
pub(super) struct ReadWaiters {
    next: u64,
    /// Request context -> caller, before raft confirmed leadership.
    confirming: HashMap<u64, oneshot::Sender<Result<u64, ProposeError>>>,
    /// Confirmed reads: (read index, caller), answered once applied >= index.
    confirmed: Vec<(u64, oneshot::Sender<Result<u64, ProposeError>>)>,
}

/// Confirms leadership with a ReadIndex round; answers the read index once it is applied
/// here (the caller then reads the applied state), or NotLeader.
#[derive(Message)]
#[rtype(result = "Result<oneshot::Receiver<Result<u64, ProposeError>>, ProposeError>")]
pub struct ReadIndex;

impl Handler<ReadIndex> for RaftActor {
    type Result = Result<oneshot::Receiver<Result<u64, ProposeError>>, ProposeError>;
    fn handle(&mut self, _: ReadIndex, ctx: &mut Context<Self>) -> Self::Result {
        if !self.is_leader() || self.stopping.is_some() {
            return Err(self.not_leader());
        }
        let (tx, rx) = oneshot::channel();
        self.reads.next += 1;
        let id = self.reads.next;
        self.reads.confirming.insert(id, tx);
        self.raw.read_index(id.to_be_bytes().to_vec());
        self.on_ready(ctx);
        Ok(rx)
    }
}

impl RaftActor {
    /// Takes the ReadStates of a Ready (leadership confirmed for those reads).
    pub(super) fn take_read_states(&mut self, states: &[raft::ReadState]) {
        for rs in states {
            let Ok(b) = <[u8; 8]>::try_from(rs.request_ctx.as_slice()) else {
                continue;
            };
            if let Some(tx) = self.reads.confirming.remove(&u64::from_be_bytes(b)) {
                self.reads.confirmed.push((rs.index, tx));
            }
        }
    }

    /// Answers the confirmed reads whose index is applied; fails every read when this
    /// replica no longer leads.
    pub(super) fn answer_reads(&mut self) {
        if !self.is_leader() {
            let e = self.not_leader();
            for (_, tx) in self.reads.confirming.drain() {
                let _ = tx.send(Err(e.clone()));
            }
            for (_, tx) in self.reads.confirmed.drain(..) {
                let _ = tx.send(Err(e.clone()));
            }
            return;
        }
        let applied = self.raw.raft.raft_log.applied;
        let (ready, wait): (Vec<_>, Vec<_>) = self
            .reads
            .confirmed
            .drain(..)
            .partition(|(i, _)| *i <= applied);
        self.reads.confirmed = wait;
        for (i, tx) in ready {
            let _ = tx.send(Ok(i));
        }
    }
}
