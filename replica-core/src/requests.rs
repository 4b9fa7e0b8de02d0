//! Proposals waiting for their entry to apply, and linearizable reads through Raft
//! ReadIndex: the leader records its commit index, confirms with a heartbeat round that a
//! quorum still follows it (raft-rs `ReadOnlyOption::Safe`), and the read is served once
//! this replica has applied up to that index. A read never relies on clocks or on the
//! lease: a deposed leader that cannot reach a quorum answers nothing.

use crate::VTime;
use crate::core::ReplicaCore;
use crate::error::ProposeError;
use crate::output::{Notice, Output};
use prost::Message as _;
use proto::state::Command;
use std::collections::{BTreeMap, VecDeque};

/// The replica's own commands waiting to be proposed again (raft-rs drops proposals while a
/// leadership transfer is under way); beyond this many the oldest are given up.
const MAX_BACKLOG: usize = 1024;
use storage::RaftLog;

/// What a pending proposal is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PendingKind {
    /// A client's (admin API, SA): answered with [`Output::Answer`].
    Client,
    /// The seal of intent `intent` proposed by master `gen_`: only that master hears of its
    /// commit (a master restarted within its term reuses the term's intent ids).
    Seal { intent: u64, gen_: u64 },
}

/// A proposal in flight.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pending {
    pub(crate) since: VTime,
    pub(crate) kind: PendingKind,
}

/// Proposals and reads in flight.
#[derive(Debug, Default)]
pub(crate) struct Requests {
    next_request: u64,
    pub(crate) pending: BTreeMap<u64, Pending>,
    next_read: u64,
    /// Read ticket -> before raft confirmed leadership.
    confirming: BTreeMap<u64, ()>,
    /// Confirmed reads: (read index, ticket), answered once applied >= index.
    confirmed: Vec<(u64, u64)>,
    /// The replica's own commands raft-rs dropped, in order, proposed again while leading.
    backlog: VecDeque<Command>,
}

impl Requests {
    pub(crate) fn new(next_request: u64) -> Requests {
        Requests {
            next_request,
            ..Default::default()
        }
    }

    fn fresh(&mut self) -> u64 {
        self.next_request = self.next_request.wrapping_add(1);
        self.next_request
    }
}

impl<S: RaftLog + Clone> ReplicaCore<S> {
    /// Proposes a client's command (a request id is given when it has none); the answer is
    /// [`Output::Answer`] with that id once committed and applied here.
    pub fn propose(&mut self, now: VTime, mut cmd: Command) -> Result<u64, ProposeError> {
        self.check_leader()?;
        if cmd.request_id == 0 {
            cmd.request_id = self.requests.fresh();
        }
        self.raw
            .propose(vec![], cmd.encode_to_vec())
            .map_err(|e| ProposeError::Failed(e.to_string()))?;
        self.requests.pending.insert(
            cmd.request_id,
            Pending {
                since: now,
                kind: PendingKind::Client,
            },
        );
        self.process(now);
        Ok(cmd.request_id)
    }

    /// Proposes one of the replica's own commands (records, intents, their completion; no
    /// answer). One raft-rs drops (a leadership transfer under way) is kept, with those
    /// after it, and proposed again in order while this replica leads: a dropped IntentDone
    /// would otherwise block every later intent of the term.
    pub(crate) fn propose_quiet(&mut self, cmd: Command) {
        if !self.requests.backlog.is_empty() {
            return self.keep(cmd);
        }
        if let Err(e) = self.raw.propose(vec![], cmd.encode_to_vec()) {
            self.notice(Notice::ProposalDropped {
                error: e.to_string(),
            });
            self.keep(cmd);
        }
    }

    fn keep(&mut self, cmd: Command) {
        if self.requests.backlog.len() >= MAX_BACKLOG {
            self.requests.backlog.pop_front();
            self.notice(Notice::ProposalDropped {
                error: format!("more than {MAX_BACKLOG} of the replica's own commands waiting"),
            });
        }
        self.requests.backlog.push_back(cmd);
    }

    /// Proposes the kept commands again, in order, while leading; a replica that no longer
    /// leads forgets them (a later master re-applies or aborts what they concerned).
    pub(crate) fn retry_backlog(&mut self) {
        if !self.is_leader() {
            self.requests.backlog.clear();
            return;
        }
        while let Some(cmd) = self.requests.backlog.front() {
            if self.raw.propose(vec![], cmd.encode_to_vec()).is_err() {
                return;
            }
            self.requests.backlog.pop_front();
        }
    }

    /// A master's planned programming: its chunks, then its seal, whose commit goes back
    /// to master `gen_` only.
    pub(crate) fn propose_intent(
        &mut self,
        now: VTime,
        gen_: u64,
        term: u64,
        it: &sm_core::Intent,
    ) {
        let id = it.id;
        if !self.requests.backlog.is_empty() {
            // Earlier commands of this master wait to be proposed: its chunks and seal would
            // come before them. Not committed; the sweeper plans again later.
            self.notice(Notice::IntentNotCommitted { id });
            self.out.push_back(Output::IntentResult {
                gen_,
                id,
                committed: false,
            });
            return;
        }
        let contents = crate::seed::intent_to_contents(it);
        let mut cmds =
            replica::split_intent(id, term, contents, replica::DEFAULT_MAX_COMMAND_BYTES);
        let seal = cmds.pop();
        for c in cmds {
            self.propose_quiet(c);
        }
        self.notice(Notice::IntentProposed {
            id,
            lft_blocks: it.lft_blocks.len(),
            pkey_blocks: it.pkey_blocks.len(),
            port_changes: it.port_changes.len(),
        });
        let sealed = seal.is_some_and(|mut c| {
            c.request_id = self.requests.fresh();
            let ok = self.raw.propose(vec![], c.encode_to_vec()).is_ok();
            if ok {
                self.requests.pending.insert(
                    c.request_id,
                    Pending {
                        since: now,
                        kind: PendingKind::Seal { intent: id, gen_ },
                    },
                );
            }
            ok
        });
        if !sealed {
            self.notice(Notice::IntentNotCommitted { id });
            self.out.push_back(Output::IntentResult {
                gen_,
                id,
                committed: false,
            });
        }
    }

    /// Proposals older than the time to live are given up: a client's is
    /// [`Output::Dropped`], a seal is answered not committed.
    pub(crate) fn expire_requests(&mut self, now: VTime) {
        let ttl = self.cfg.proposal_ttl;
        let old: Vec<(u64, Pending)> = self
            .requests
            .pending
            .iter()
            .filter(|(_, p)| now.saturating_sub(p.since) >= ttl)
            .map(|(id, p)| (*id, *p))
            .collect();
        for (request, p) in old {
            self.requests.pending.remove(&request);
            match p.kind {
                PendingKind::Client => self.out.push_back(Output::Dropped { request }),
                PendingKind::Seal { intent, gen_ } => {
                    self.notice(Notice::IntentNotCommitted { id: intent });
                    self.out.push_back(Output::IntentResult {
                        gen_,
                        id: intent,
                        committed: false,
                    });
                }
            }
        }
    }

    /// Starts a linearizable read: the answer is [`Output::ReadDone`] with the returned
    /// ticket (the read index once applied here, or why not).
    pub fn read_index(&mut self, now: VTime) -> Result<u64, ProposeError> {
        self.check_leader()?;
        self.requests.next_read += 1;
        let ticket = self.requests.next_read;
        self.requests.confirming.insert(ticket, ());
        self.raw.read_index(ticket.to_be_bytes().to_vec());
        self.process(now);
        Ok(ticket)
    }

    /// Takes the ReadStates of a Ready (leadership confirmed for those reads).
    pub(crate) fn take_read_states(&mut self, states: &[raft::ReadState]) {
        for rs in states {
            let Ok(b) = <[u8; 8]>::try_from(rs.request_ctx.as_slice()) else {
                continue;
            };
            let ticket = u64::from_be_bytes(b);
            if self.requests.confirming.remove(&ticket).is_some() {
                self.requests.confirmed.push((rs.index, ticket));
            }
        }
    }

    /// Answers the confirmed reads whose index is applied; fails every read when this
    /// replica no longer leads.
    pub(crate) fn answer_reads(&mut self) {
        if !self.is_leader() || self.failed {
            let e = self.not_leader();
            let confirming = std::mem::take(&mut self.requests.confirming);
            let confirmed = std::mem::take(&mut self.requests.confirmed);
            for ticket in confirming
                .into_keys()
                .chain(confirmed.into_iter().map(|(_, t)| t))
            {
                self.out.push_back(Output::ReadDone {
                    ticket,
                    result: Err(e.clone()),
                });
            }
            return;
        }
        let applied = self.raw.raft.raft_log.applied;
        let (ready, wait): (Vec<_>, Vec<_>) = std::mem::take(&mut self.requests.confirmed)
            .into_iter()
            .partition(|(i, _)| *i <= applied);
        self.requests.confirmed = wait;
        for (index, ticket) in ready {
            self.out.push_back(Output::ReadDone {
                ticket,
                result: Ok(index),
            });
        }
    }
}
