//! The event queue: events in (time, sequence) order, as a binary heap would give them, at
//! a constant cost for the events due soon.
//!
//! Almost every event of a sweep is due within a few microseconds of the one being
//! processed (a hop, an SMA answer), so those go into a timing wheel of one-nanosecond
//! slots spanning [`WHEEL`] ns from the time last taken out: every event in a slot has the
//! same time, and a slot is a FIFO, so its order is the sequence order. Anything further
//! out (link training, leases, trap repeats, scheduled faults) or earlier goes to a binary
//! heap. Taking out compares the first event of each, so the order is exactly (time, seq)
//! whatever went where.

use crate::VTime;
use crate::sim::{Ev, EvKind};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Span of the wheel in nanoseconds (a power of two).
const WHEEL: usize = 4096;
const WORDS: usize = WHEEL / 64;
/// End of a slot's list.
const NIL: u32 = u32::MAX;

/// An event in the wheel and the next one of its slot.
struct Entry {
    ev: Ev,
    next: u32,
}

/// See the module documentation.
pub(crate) struct EventQueue {
    /// Per slot, the first and last entry of its FIFO (NIL when empty): the slots are
    /// lists through one pool of entries, reused last-freed first, so the queue's memory
    /// stays a few kilobytes however many slots are in use.
    head: Vec<u32>,
    tail: Vec<u32>,
    pool: Vec<Entry>,
    /// First free entry of the pool (NIL when none).
    free: u32,
    /// One bit per non-empty slot.
    bits: [u64; WORDS],
    /// Lower bound of every time in the wheel: the latest time taken out.
    base: VTime,
    far: BinaryHeap<Reverse<Ev>>,
}

impl Default for EventQueue {
    fn default() -> EventQueue {
        EventQueue {
            head: vec![NIL; WHEEL],
            tail: vec![NIL; WHEEL],
            pool: Vec::new(),
            free: NIL,
            bits: [0; WORDS],
            base: 0,
            far: BinaryHeap::new(),
        }
    }
}

impl EventQueue {
    /// Adds an event (its `seq` must be larger than any added before).
    pub fn push(&mut self, time: VTime, seq: u64, kind: EvKind) {
        let ev = Ev { time, seq, kind };
        if time >= self.base && time - self.base < WHEEL as u64 {
            let s = (time as usize) & (WHEEL - 1);
            let e = Entry { ev, next: NIL };
            let i = if self.free != NIL {
                let i = self.free;
                self.free = self.pool[i as usize].next;
                self.pool[i as usize] = e;
                i
            } else {
                self.pool.push(e);
                (self.pool.len() - 1) as u32
            };
            match self.tail[s] {
                NIL => self.head[s] = i,
                t => self.pool[t as usize].next = i,
            }
            self.tail[s] = i;
            self.bits[s / 64] |= 1u64 << (s % 64);
        } else {
            self.far.push(Reverse(ev));
        }
    }

    /// The first non-empty slot at or after the base, circularly.
    fn first_slot(&self) -> Option<usize> {
        let start = (self.base as usize) & (WHEEL - 1);
        let (w0, b0) = (start / 64, start % 64);
        let first = self.bits[w0] & (!0u64 << b0);
        if first != 0 {
            return Some(w0 * 64 + first.trailing_zeros() as usize);
        }
        for k in 1..=WORDS {
            let w = (w0 + k) % WORDS;
            // The start word again, last: only its bits below the start are left.
            let word = if k == WORDS {
                self.bits[w] & !(!0u64 << b0)
            } else {
                self.bits[w]
            };
            if word != 0 {
                return Some(w * 64 + word.trailing_zeros() as usize);
            }
        }
        None
    }

    /// The first event of a non-empty slot.
    fn front(&self, s: usize) -> &Ev {
        &self.pool[self.head[s] as usize].ev
    }

    /// Where the next event is: (true, slot) in the wheel, (false, _) in the heap.
    fn next_at(&self) -> Option<(bool, usize)> {
        let slot = self.first_slot();
        let wheel = slot.map(|s| {
            let e = self.front(s);
            (e.time, e.seq)
        });
        let far = self.far.peek().map(|Reverse(e)| (e.time, e.seq));
        match (slot, wheel, far) {
            (Some(s), Some(a), Some(b)) if a < b => Some((true, s)),
            (Some(s), Some(_), None) => Some((true, s)),
            (_, _, Some(_)) => Some((false, 0)),
            _ => None,
        }
    }

    /// Time of the next event.
    pub fn peek_time(&self) -> Option<VTime> {
        match self.next_at()? {
            (true, s) => Some(self.front(s).time),
            (false, _) => self.far.peek().map(|Reverse(e)| e.time),
        }
    }

    /// Takes out the next event.
    #[cfg(test)]
    pub fn pop(&mut self) -> Option<Ev> {
        self.pop_due(VTime::MAX)
    }

    /// Takes out the next event if it is due at or before `now`.
    pub fn pop_due(&mut self, now: VTime) -> Option<Ev> {
        let ev = match self.next_at()? {
            (true, s) => {
                if self.front(s).time > now {
                    return None;
                }
                let i = self.head[s];
                let e = &self.pool[i as usize];
                let (ev, next) = (
                    Ev {
                        time: e.ev.time,
                        seq: e.ev.seq,
                        kind: e.ev.kind,
                    },
                    e.next,
                );
                self.head[s] = next;
                if next == NIL {
                    self.tail[s] = NIL;
                    self.bits[s / 64] &= !(1u64 << (s % 64));
                }
                self.pool[i as usize].next = self.free;
                self.free = i;
                ev
            }
            (false, _) => {
                if self.far.peek().is_none_or(|Reverse(e)| e.time > now) {
                    return None;
                }
                self.far.pop().map(|Reverse(e)| e)?
            }
        };
        self.base = self.base.max(ev.time);
        Some(ev)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabric::rng::SplitMix64;

    /// The queue gives the same order as a binary heap for mixes of near, far and past
    /// times, pushes interleaved with pops.
    #[test]
    fn same_order_as_a_binary_heap() {
        for seed in 0..20 {
            let mut rng = SplitMix64::new(seed);
            let mut q = EventQueue::default();
            let mut h: BinaryHeap<Reverse<Ev>> = BinaryHeap::new();
            let (mut seq, mut now) = (0u64, 0u64);
            for _ in 0..20_000 {
                if !rng.next_u64().is_multiple_of(3) {
                    seq += 1;
                    let r = rng.next_u64();
                    let time = match r % 10 {
                        0 => now + 4096 + r % 100_000,
                        1 => now.saturating_sub(r % 50),
                        2 => now + 4095,
                        _ => now + r % 800,
                    };
                    let kind = EvKind::LeaseCheck { port: seq as u32 };
                    q.push(time, seq, kind);
                    h.push(Reverse(Ev { time, seq, kind }));
                } else {
                    assert_eq!(q.peek_time(), h.peek().map(|Reverse(e)| e.time));
                    let a = q.pop();
                    let b = h.pop().map(|Reverse(e)| e);
                    assert_eq!(a, b);
                    if let Some(e) = a {
                        now = now.max(e.time);
                    }
                }
            }
            while let Some(Reverse(e)) = h.pop() {
                assert_eq!(q.pop(), Some(e));
            }
            assert_eq!(q.pop(), None);
        }
    }
}
