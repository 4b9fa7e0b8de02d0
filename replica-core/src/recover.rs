//! Recovering a lost log. A replica of an existing cluster that starts on an empty log (its
//! disk was replaced or wiped) may once have acknowledged entries it no longer holds; if it
//! voted now it could elect a candidate that lacks them, and a committed entry would be
//! lost. So it neither votes nor campaigns until a leader has brought it up to an entry
//! committed in that leader's own term: by Raft's log matching, it then holds every entry
//! committed before, including any it acknowledged. The flag lives in the log, so a replica
//! that crashes while recovering recovers again.
//!
//! Its term was lost with its log, so a leader it hears from may be a stale one (deposed
//! while this replica still held its entries): taking that leader's log, and counting in its
//! quorum, would let the stale leader overwrite an entry this replica had acknowledged under
//! a later term (simulation seed 7028581). So before it takes or acknowledges anything it
//! asks the other replicas for their terms (a term probe, answered by the cores themselves,
//! never by raft-rs) and waits for `n - q + 1` of them (n voters, quorum q): every quorum
//! this replica belonged to shares a replica with them, so the highest term they answer is
//! at least any term this replica acknowledged in. It adopts that term; raft-rs then
//! refuses every leader of an older one. A replica that recovers does not answer probes.

use crate::core::{ReplicaCore, storage};
use crate::error::CoreError;
use crate::output::Notice;
use raft::StateRole;
use raft::eraftpb::{Message, MessageType};
use std::collections::BTreeMap;
use storage::RaftLog;

/// Marks a term probe and its answer (the `context` of a pre-vote message raft-rs never
/// sees).
const TERM_PROBE: &[u8] = b"qsm-term-probe";

/// The term probe of a recovering replica: the terms answered so far, by replica.
#[derive(Debug, Default)]
pub(crate) struct TermProbe {
    answers: BTreeMap<u64, u64>,
}

/// What the core does with a message while a log recovers.
pub(crate) enum Probe {
    /// Raft's.
    Pass,
    /// Handled (or dropped) here.
    Taken,
}

/// The rejected index a replica sends when a heartbeat shows it lost its log: beyond any
/// index a leader sends, so raft-rs takes the rejection as stale once the leader has reset
/// its progress.
const LOST: u64 = u64::MAX;

/// What a message says about a lost log, before raft-rs sees it.
pub(crate) enum LostLog {
    /// Nothing.
    No,
    /// A leader's heartbeat commits beyond this replica's log (raft-rs would panic): this
    /// replica lost entries it acknowledged.
    Here { commit: u64, last: u64 },
    /// A follower says its log ends below what it acknowledged.
    There { peer: u64, matched: u64, last: u64 },
}

/// Messages a recovering replica does not take: votes asked of it, and a leader's request
/// to campaign at once (a transfer).
pub(crate) fn is_vote(m: &Message) -> bool {
    matches!(
        m.get_msg_type(),
        MessageType::MsgRequestVote | MessageType::MsgRequestPreVote | MessageType::MsgTimeoutNow
    )
}

impl<S: RaftLog + Clone> ReplicaCore<S> {
    /// Replicas whose term a recovering replica needs: `n - q + 1` of the `n` voters.
    fn probe_needs(&self) -> usize {
        let n = self.raw.raft.prs().conf().voters().ids().len();
        n - (n / 2 + 1) + 1
    }

    /// Sends the term probe to every other voter that has not answered (each tick while
    /// probing).
    pub(crate) fn send_term_probes(&mut self) {
        let Some(p) = &self.probe else {
            return;
        };
        let peers: Vec<u64> = self
            .raw
            .raft
            .prs()
            .conf()
            .voters()
            .ids()
            .iter()
            .filter(|&id| id != self.cfg.id && !p.answers.contains_key(&id))
            .collect();
        for to in peers {
            let mut m = Message::default();
            m.set_msg_type(MessageType::MsgRequestPreVote);
            m.to = to;
            m.from = self.cfg.id;
            m.context = TERM_PROBE.to_vec().into();
            self.out.push_back(crate::Output::Send(m));
        }
    }

    /// Term probes and their answers, and what a replica still probing must not take (a
    /// leader's appends, heartbeats and snapshots).
    pub(crate) fn term_probe(&mut self, m: &Message) -> Probe {
        let probe_msg = m.context.as_ref() == TERM_PROBE;
        match m.get_msg_type() {
            MessageType::MsgRequestPreVote if probe_msg => {
                if !self.recovering {
                    let mut r = Message::default();
                    r.set_msg_type(MessageType::MsgRequestPreVoteResponse);
                    r.to = m.from;
                    r.from = self.cfg.id;
                    r.term = self.raw.raft.term;
                    r.reject = true;
                    r.context = TERM_PROBE.to_vec().into();
                    self.out.push_back(crate::Output::Send(r));
                }
                Probe::Taken
            }
            MessageType::MsgRequestPreVoteResponse if probe_msg => {
                let needs = self.probe_needs();
                let Some(p) = &mut self.probe else {
                    return Probe::Taken;
                };
                p.answers.insert(m.from, m.term);
                if p.answers.len() >= needs {
                    let term = p.answers.values().copied().max().unwrap_or(0);
                    let answers = p.answers.len();
                    self.probe = None;
                    if term > self.raw.raft.term {
                        self.raw.raft.become_follower(term, raft::INVALID_ID);
                    }
                    self.notice(Notice::TermLearned { term, answers });
                }
                Probe::Taken
            }
            MessageType::MsgAppend | MessageType::MsgHeartbeat | MessageType::MsgSnapshot
                if self.probe.is_some() =>
            {
                Probe::Taken
            }
            _ => Probe::Pass,
        }
    }

    /// Checks (and adjusts) a message for a lost log on either side. A heartbeat that
    /// commits beyond this log commits only what this replica already committed (its
    /// answer then makes the leader probe it); a rejection that reveals a follower's lost
    /// log resets the leader's progress of it, so it is replicated again from the start
    /// (raft-rs assumes an acknowledged entry is never lost and would never resend it).
    pub(crate) fn lost_log(&mut self, m: &mut Message) -> LostLog {
        let last = self.raw.raft.raft_log.last_index();
        match m.get_msg_type() {
            // (A heartbeat of an older term is raft-rs's to refuse.)
            MessageType::MsgHeartbeat if m.commit > last && m.term >= self.raw.raft.term => {
                let commit = m.commit;
                m.commit = self.raw.raft.raft_log.committed.min(last);
                // The leader believes this log holds what it acknowledged: tell it otherwise
                // (a rejection no append of it could be behind, see `There`).
                let mut r = Message::default();
                r.set_msg_type(MessageType::MsgAppendResponse);
                r.to = m.from;
                r.from = self.cfg.id;
                r.term = m.term;
                r.reject = true;
                r.index = LOST;
                r.reject_hint = last;
                self.out.push_back(crate::Output::Send(r));
                LostLog::Here { commit, last }
            }
            MessageType::MsgAppendResponse
                if m.reject
                    && self.raw.raft.state == StateRole::Leader
                    && m.term == self.raw.raft.term =>
            {
                let Some(pr) = self.raw.raft.mut_prs().get_mut(m.from) else {
                    return LostLog::No;
                };
                // Only the follower knows its log was lost (it says so with `LOST`): an
                // ordinary rejection below what it matched may just be an old one the
                // network reordered, and is raft-rs's to handle.
                if m.index != LOST || m.reject_hint >= pr.matched {
                    return LostLog::No;
                }
                let matched = pr.matched;
                pr.matched = 0;
                pr.become_probe();
                LostLog::There {
                    peer: m.from,
                    matched,
                    last: m.reject_hint,
                }
            }
            _ => LostLog::No,
        }
    }

    /// Ends the recovery once this replica follows a leader and holds an entry committed in
    /// that leader's term.
    pub(crate) fn check_recovered(&mut self) -> Result<(), CoreError> {
        if !self.recovering {
            return Ok(());
        }
        let r = &self.raw.raft;
        let committed = r.raft_log.committed;
        if r.state != StateRole::Follower || r.leader_id == 0 || committed == 0 {
            return Ok(());
        }
        if r.raft_log.term(committed).ok() != Some(r.term) {
            return Ok(());
        }
        let (index, term) = (committed, r.term);
        self.store
            .set_recovering(false)
            .map_err(storage("recovering flag"))?;
        self.store.flush().map_err(storage("flush"))?;
        self.recovering = false;
        self.notice(Notice::LogRecovered { index, term });
        Ok(())
    }
}
