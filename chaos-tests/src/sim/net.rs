//! The simulated replica network: Raft messages delivered after a seeded delay (so they
//! reorder), dropped or duplicated with a probability, and cut between replicas.

use fabric::rng::SplitMix64;
use raft::eraftpb::Message;
use sm_core::VTime;
use std::collections::{BTreeMap, BTreeSet};

/// One message on its way.
#[derive(Clone, Debug)]
pub struct Envelope {
    /// Sender id.
    pub from: u64,
    /// Receiver id.
    pub to: u64,
    /// The Raft message.
    pub msg: Message,
}

/// Counters of what the network did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NetStats {
    /// Messages handed to the network.
    pub sent: u64,
    /// Dropped (loss or a cut).
    pub dropped: u64,
    /// Extra copies made.
    pub duplicated: u64,
    /// Delivered to a replica.
    pub delivered: u64,
}

/// The network.
#[derive(Debug)]
pub struct Net {
    rng: SplitMix64,
    queue: BTreeMap<(VTime, u64), Envelope>,
    seq: u64,
    /// Base one-way delay.
    pub base_ns: VTime,
    /// Extra delay drawn uniformly in `0..=jitter_ns`.
    pub jitter_ns: VTime,
    /// Loss probability.
    pub drop_p: f64,
    /// Duplication probability.
    pub dup_p: f64,
    /// Replicas cut off from every peer.
    pub isolated: BTreeSet<u64>,
    /// Counters.
    pub stats: NetStats,
}

impl Net {
    /// A clean network (0.2 ms one way, 0.3 ms spread) drawing from `seed`.
    pub fn new(seed: u64) -> Net {
        Net {
            rng: SplitMix64::new(seed),
            queue: BTreeMap::new(),
            seq: 0,
            base_ns: 200_000,
            jitter_ns: 300_000,
            drop_p: 0.0,
            dup_p: 0.0,
            isolated: BTreeSet::new(),
            stats: NetStats::default(),
        }
    }

    /// True when `a` and `b` cannot talk.
    pub fn cut(&self, a: u64, b: u64) -> bool {
        a != b && (self.isolated.contains(&a) || self.isolated.contains(&b))
    }

    /// Sends `msg` at `now`.
    pub fn send(&mut self, now: VTime, msg: Message) {
        self.stats.sent += 1;
        let (from, to) = (msg.from, msg.to);
        if self.cut(from, to) || self.rng.chance(self.drop_p) {
            self.stats.dropped += 1;
            return;
        }
        let copies = if self.rng.chance(self.dup_p) { 2 } else { 1 };
        self.stats.duplicated += copies - 1;
        for _ in 0..copies {
            let at = now + self.base_ns + self.rng.below(self.jitter_ns + 1);
            self.seq += 1;
            self.queue.insert(
                (at, self.seq),
                Envelope {
                    from,
                    to,
                    msg: msg.clone(),
                },
            );
        }
    }

    /// When the next message arrives.
    pub fn next_time(&self) -> Option<VTime> {
        self.queue.keys().next().map(|k| k.0)
    }

    /// The next message due at or before `now` (dropped on the way when a cut appeared
    /// meanwhile).
    pub fn pop_due(&mut self, now: VTime) -> Option<Envelope> {
        loop {
            let (&k, _) = self.queue.iter().next()?;
            if k.0 > now {
                return None;
            }
            let e = self.queue.remove(&k)?;
            if self.cut(e.from, e.to) {
                self.stats.dropped += 1;
                continue;
            }
            self.stats.delivered += 1;
            return Some(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(from: u64, to: u64, term: u64) -> Message {
        Message {
            from,
            to,
            term,
            ..Default::default()
        }
    }

    #[test]
    fn cuts_drop_and_delivery_respects_time() {
        let mut n = Net::new(1);
        n.send(0, msg(1, 2, 1));
        assert!(n.pop_due(n.base_ns - 1).is_none());
        let t = n.next_time().unwrap();
        assert!(t >= n.base_ns && t <= n.base_ns + n.jitter_ns);
        assert_eq!(n.pop_due(t).unwrap().msg.term, 1);
        n.isolated.insert(2);
        n.send(0, msg(1, 2, 2));
        n.send(0, msg(1, 3, 3));
        assert_eq!(n.pop_due(VTime::MAX).unwrap().to, 3);
        assert!(n.pop_due(VTime::MAX).is_none());
        assert_eq!(n.stats.dropped, 1);
        // A cut made while a message flies drops it too.
        n.isolated.clear();
        n.send(0, msg(1, 2, 4));
        n.isolated.insert(1);
        assert!(n.pop_due(VTime::MAX).is_none());
        assert_eq!(n.stats.dropped, 2);
    }

    #[test]
    fn jitter_reorders_and_duplicates_are_made() {
        let mut n = Net::new(3);
        n.jitter_ns = 10_000_000;
        n.dup_p = 0.5;
        for t in 0..50 {
            n.send(t, msg(1, 2, t));
        }
        let mut terms = Vec::new();
        while let Some(e) = n.pop_due(VTime::MAX) {
            terms.push(e.msg.term);
        }
        assert!(terms.len() > 50, "no duplicate in 50 sends at p=0.5");
        assert!(terms.windows(2).any(|w| w[0] > w[1]), "no reordering");
    }
}
