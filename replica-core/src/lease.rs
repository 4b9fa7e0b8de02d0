//! The master's write lease: Set SMPs are allowed only while it is valid.
//!
//! The replica core extends it, while leader, to the moment it SENT the latest heartbeat that a
//! quorum of voters (counting itself as now) acknowledged in this leader's term, plus half
//! the minimum election timeout. A follower that heard from this leader within an election
//! timeout refuses to vote for anyone else (check_quorum); it heard the heartbeat no earlier
//! than it was sent, so no other leader can exist before the lease ends.
//!
//! An acknowledgement is dated by the send time of the heartbeat it answers, never by its
//! receipt: a leader resumed after SIGSTOP, or reading responses a slow network held back,
//! finds acknowledgements that waited in its socket, and those prove nothing about now.
//! [`AckBook`] does the dating: it wraps the context of every outgoing heartbeat in a tag
//! (raft-rs followers echo the context in their response), remembers each tag's peer and
//! send time, and unwraps the tag from the response before raft-rs sees it (so ReadIndex
//! contexts pass through untouched). Append responses echo nothing and extend nothing.
//!
//! The arithmetic ([`AckBook`], [`quorum_ack_time`], [`lease_end`]) is pure and generic
//! over the time type. [`fence_allows`] is the rule every transport of a master applies to
//! each SMP (the daemon's fenced transport and the simulation's sends alike).

use raft::eraftpb::{Message, MessageType};
use std::collections::{BTreeMap, VecDeque};
use std::ops::Add;

use crate::VTime;

/// May an SMP of `method` leave now? Gets always (they change nothing in the fabric); Sets
/// only while the lease (`lease_until`, None: no lease) holds at `now`.
pub fn fence_allows(method: mad::Method, lease_until: Option<VTime>, now: VTime) -> bool {
    method != mad::Method::SET || lease_until.is_some_and(|u| now < u)
}

/// First bytes of a heartbeat context that carries an [`AckBook`] tag.
const TAG_MAGIC: [u8; 4] = *b"QSL1";
/// Magic plus the tag (u64, big-endian); the original context follows.
const TAG_LEN: usize = TAG_MAGIC.len() + 8;
/// Heartbeat sends remembered; an acknowledgement of an older one counts for nothing (by
/// then it is far older than any lease).
const MAX_SENT: usize = 4096;

/// The time of the quorum-th most recent acknowledgement among `voters` (`self_id` counts
/// as acknowledged `now`; `acked` gives a peer's latest dated acknowledgement). None when
/// fewer than a majority of `voters` ever acknowledged, or `voters` is empty.
pub fn quorum_ack_time<T: Copy + Ord>(
    voters: &[u64],
    self_id: u64,
    now: T,
    acked: impl Fn(u64) -> Option<T>,
) -> Option<T> {
    let mut voters = voters.to_vec();
    voters.sort_unstable();
    voters.dedup();
    if voters.is_empty() {
        return None;
    }
    let mut times: Vec<T> = voters
        .iter()
        .filter_map(|&id| if id == self_id { Some(now) } else { acked(id) })
        .collect();
    let quorum = voters.len() / 2 + 1;
    if times.len() < quorum {
        return None;
    }
    times.sort_unstable_by(|a, b| b.cmp(a));
    Some(times[quorum - 1])
}

/// End of the lease: the earliest [`quorum_ack_time`] over the non-empty majority
/// configurations in `majorities` (one, or two during a joint membership change) plus
/// `duration`. None when any of them lacks a quorum, or all are empty.
pub fn lease_end<T, D>(
    majorities: &[&[u64]],
    self_id: u64,
    now: T,
    acked: impl Fn(u64) -> Option<T>,
    duration: D,
) -> Option<T>
where
    T: Copy + Ord + Add<D, Output = T>,
{
    let mut end: Option<T> = None;
    for voters in majorities.iter().filter(|v| !v.is_empty()) {
        let t = quorum_ack_time(voters, self_id, now, &acked)?;
        end = Some(end.map_or(t, |e| e.min(t)));
    }
    end.map(|t| t + duration)
}

/// One heartbeat send: its tag, the peer it went to, when.
#[derive(Clone, Copy, Debug)]
struct Sent<T> {
    tag: u64,
    to: u64,
    at: T,
}

/// A leader's acknowledgements, dated by the send time of the heartbeat each one answers.
#[derive(Clone, Debug)]
pub struct AckBook<T> {
    next_tag: u64,
    /// Tags in increasing order (consecutive: each send takes the next tag).
    sent: VecDeque<Sent<T>>,
    /// Peer -> send time of the latest heartbeat it acknowledged in this leadership.
    acked: BTreeMap<u64, T>,
}

impl<T> Default for AckBook<T> {
    fn default() -> Self {
        AckBook {
            next_tag: 1,
            sent: VecDeque::new(),
            acked: BTreeMap::new(),
        }
    }
}

impl<T: Copy + Ord> AckBook<T> {
    /// An empty book.
    pub fn new() -> Self {
        Self::default()
    }

    /// A new leadership begins: no acknowledgement or send of an earlier one counts.
    pub fn reset(&mut self) {
        self.sent.clear();
        self.acked.clear();
    }

    /// Call on every outgoing message just before it is sent, with the time (taken no later
    /// than the send): a heartbeat gets a tag wrapped around its context and is remembered.
    pub fn stamp(&mut self, m: &mut Message, now: T) {
        if m.get_msg_type() != MessageType::MsgHeartbeat {
            return;
        }
        let tag = self.next_tag;
        self.next_tag = self.next_tag.wrapping_add(1);
        let mut ctx = Vec::with_capacity(TAG_LEN + m.context.len());
        ctx.extend_from_slice(&TAG_MAGIC);
        ctx.extend_from_slice(&tag.to_be_bytes());
        ctx.extend_from_slice(&m.context);
        m.context = ctx.into();
        if self
            .sent
            .back()
            .is_some_and(|s| s.tag.wrapping_add(1) != tag)
        {
            self.sent.clear(); // the tag counter wrapped: start the run over
        }
        self.sent.push_back(Sent {
            tag,
            to: m.to,
            at: now,
        });
        while self.sent.len() > MAX_SENT {
            self.sent.pop_front();
        }
    }

    /// Call on every incoming message before raft-rs steps it. A heartbeat response loses
    /// its tag (raft-rs sees the original context). When `leader_term` is the message's
    /// term (this replica leads it), the response counts as an acknowledgement dated by
    /// the send of the heartbeat it answers (never later than `now`, the receipt). A tag
    /// this book did not send, or sent to another peer, counts for nothing.
    pub fn receive(&mut self, m: &mut Message, leader_term: Option<u64>, now: T) {
        if m.get_msg_type() != MessageType::MsgHeartbeatResponse
            || m.context.len() < TAG_LEN
            || m.context[..TAG_MAGIC.len()] != TAG_MAGIC
        {
            return;
        }
        let mut tag = [0u8; 8];
        tag.copy_from_slice(&m.context[TAG_MAGIC.len()..TAG_LEN]);
        let tag = u64::from_be_bytes(tag);
        m.context = m.context.slice(TAG_LEN..);
        if leader_term != Some(m.term) {
            return;
        }
        let Some(front) = self.sent.front() else {
            return;
        };
        let Some(s) = usize::try_from(tag.wrapping_sub(front.tag))
            .ok()
            .and_then(|i| self.sent.get(i))
        else {
            return;
        };
        if s.tag != tag || s.to != m.from {
            return;
        }
        let at = s.at.min(now);
        let e = self.acked.entry(m.from).or_insert(at);
        *e = (*e).max(at);
    }

    /// Send time of the latest heartbeat `peer` acknowledged in this leadership.
    pub fn acked(&self, peer: u64) -> Option<T> {
        self.acked.get(&peer).copied()
    }

    /// [`lease_end`] over this book's acknowledgements.
    pub fn lease_end<D>(
        &self,
        majorities: &[&[u64]],
        self_id: u64,
        now: T,
        duration: D,
    ) -> Option<T>
    where
        T: Add<D, Output = T>,
    {
        lease_end(majorities, self_id, now, |id| self.acked(id), duration)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Virtual nanoseconds.
    const MS: u64 = 1_000_000;
    const TICK: u64 = 50 * MS;
    const ELECTION_TICKS: usize = 10;
    /// Half the minimum election timeout, as ClusterConfig::lease_duration.
    const LEASE: u64 = TICK * ELECTION_TICKS as u64 / 2;

    fn heartbeat(to: u64, term: u64, ctx: &[u8]) -> Message {
        let mut m = Message::default();
        m.set_msg_type(MessageType::MsgHeartbeat);
        m.from = 1;
        m.to = to;
        m.term = term;
        m.context = ctx.to_vec().into();
        m
    }

    /// The response raft-rs's follower gives (context echoed).
    fn response(hb: &Message) -> Message {
        let mut m = Message::default();
        m.set_msg_type(MessageType::MsgHeartbeatResponse);
        m.from = hb.to;
        m.to = hb.from;
        m.term = hb.term;
        m.context = hb.context.clone();
        m
    }

    #[test]
    fn quorum_ack_time_is_the_quorum_th_most_recent() {
        let acks = |id: u64| match id {
            2 => Some(70u64),
            3 => Some(40),
            4 => Some(90),
            _ => None,
        };
        // Three voters: self (now = 100) and 2 (70): the second most recent is 70.
        assert_eq!(quorum_ack_time(&[1, 2, 3], 1, 100, acks), Some(70));
        // Five voters, 5 never acknowledged: 100, 90, 70 -> the third is 70.
        assert_eq!(quorum_ack_time(&[1, 2, 3, 4, 5], 1, 100, acks), Some(70));
        // Only self and 5: no majority of three.
        assert_eq!(quorum_ack_time(&[1, 5, 6], 1, 100, acks), None);
        assert_eq!(quorum_ack_time(&[], 1, 100, acks), None);
        // A single voter leads alone.
        assert_eq!(quorum_ack_time(&[1], 1, 100, acks), Some(100));
    }

    #[test]
    fn lease_end_takes_the_weaker_half_of_a_joint_configuration() {
        let acks = |id: u64| match id {
            2 => Some(70u64),
            3 => Some(40),
            _ => None,
        };
        assert_eq!(lease_end(&[&[1, 2, 3], &[]], 1, 100, acks, 5), Some(75));
        // Outgoing {1, 3, 4}: 100, 40 -> 40.
        assert_eq!(
            lease_end(&[&[1, 2, 3], &[1, 3, 4]], 1, 100, acks, 5),
            Some(45)
        );
        // Outgoing {1, 4, 5} has no quorum: no lease at all.
        assert_eq!(lease_end(&[&[1, 2, 3], &[1, 4, 5]], 1, 100, acks, 5), None);
        assert_eq!(lease_end::<u64, u64>(&[&[], &[]], 1, 100, acks, 5), None);
    }

    /// The regression of chaos finding F3 in its smallest form: a heartbeat sent at 100 ms
    /// whose response is read at 2,000 ms (the leader was stopped meanwhile) dates the
    /// acknowledgement at 100 ms, so the lease ended long ago.
    #[test]
    fn an_acknowledgement_is_dated_by_the_send_of_its_heartbeat() {
        let mut book = AckBook::new();
        let mut hb = heartbeat(2, 5, b"");
        book.stamp(&mut hb, 100 * MS);
        let mut r = response(&hb);
        book.receive(&mut r, Some(5), 2_000 * MS);
        assert!(r.context.is_empty(), "the tag is unwrapped");
        assert_eq!(book.acked(2), Some(100 * MS));
        let end = book.lease_end(&[&[1, 2, 3]], 1, 2_000 * MS, LEASE);
        assert_eq!(end, Some(100 * MS + LEASE));
        assert!(
            end.is_some_and(|e| e <= 2_000 * MS),
            "stale ack renewed the lease"
        );
    }

    #[test]
    fn foreign_misdirected_or_other_term_tags_count_for_nothing() {
        let mut book = AckBook::new();
        let mut hb = heartbeat(2, 5, b"");
        book.stamp(&mut hb, 10);
        // Answered by a peer it was not sent to.
        let mut r = response(&hb);
        r.from = 3;
        book.receive(&mut r, Some(5), 20);
        assert_eq!(book.acked(3), None);
        // Answered in another term than the one this replica leads (or not leading).
        let mut r = response(&hb);
        book.receive(&mut r, Some(6), 20);
        assert!(r.context.is_empty(), "unwrapped even when not counted");
        let mut r = response(&hb);
        book.receive(&mut r, None, 20);
        assert_eq!(book.acked(2), None);
        // A tag from before a reset (an earlier leadership).
        book.reset();
        let mut r = response(&hb);
        book.receive(&mut r, Some(5), 20);
        assert_eq!(book.acked(2), None);
        // An untagged response (e.g. a ReadIndex context of 8 bytes) passes untouched.
        let mut r = response(&heartbeat(2, 5, &7u64.to_be_bytes()));
        book.receive(&mut r, Some(5), 20);
        assert_eq!(&r.context[..], &7u64.to_be_bytes());
        assert_eq!(book.acked(2), None);
        // Only heartbeats are stamped; append responses echo nothing and count for nothing.
        let mut app = heartbeat(2, 5, b"");
        app.set_msg_type(MessageType::MsgAppend);
        book.stamp(&mut app, 30);
        assert!(app.context.is_empty());
        let mut ar = response(&app);
        ar.set_msg_type(MessageType::MsgAppendResponse);
        book.receive(&mut ar, Some(5), 40);
        assert_eq!(book.acked(2), None);
    }

    #[test]
    fn a_later_ack_of_an_older_heartbeat_does_not_move_the_date_back() {
        let mut book = AckBook::new();
        let mut old = heartbeat(2, 5, b"");
        book.stamp(&mut old, 10);
        let mut new = heartbeat(2, 5, b"");
        book.stamp(&mut new, 50);
        book.receive(&mut response(&new), Some(5), 60);
        book.receive(&mut response(&old), Some(5), 70);
        assert_eq!(book.acked(2), Some(50));
    }

    #[test]
    fn forgotten_sends_count_for_nothing() {
        let mut book = AckBook::new();
        let mut first = heartbeat(2, 5, b"");
        book.stamp(&mut first, 0u64);
        for t in 1..=MAX_SENT as u64 {
            book.stamp(&mut heartbeat(3, 5, b""), t);
        }
        book.receive(&mut response(&first), Some(5), 10_000);
        assert_eq!(book.acked(2), None);
    }

    #[test]
    fn read_index_contexts_survive_the_tag() {
        let mut book = AckBook::new();
        let ctx = 42u64.to_be_bytes();
        let mut hb = heartbeat(2, 5, &ctx);
        book.stamp(&mut hb, 10);
        assert_ne!(&hb.context[..], &ctx, "the tag wraps the context");
        let mut r = response(&hb);
        book.receive(&mut r, Some(5), 20);
        assert_eq!(&r.context[..], &ctx);
        assert_eq!(book.acked(2), Some(10));
    }
}
