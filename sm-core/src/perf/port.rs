//! One monitored port: its last reading, the totals accumulated over this master's window,
//! the rolling window of samples, and which thresholds its counters exceed.

use super::thresholds::{CHECKED, Thresholds};
use super::{PerfTarget, VTime};
use mad::perf::{Counter, ExtCounter, PortCounters, PortCountersExtended};
use std::collections::VecDeque;

/// Counters kept per port, indexed as [`Counter::ALL`].
pub const N: usize = Counter::ALL.len();

/// The extended counter holding the 64-bit value of a 32-bit data counter.
fn ext_of(c: Counter) -> Option<ExtCounter> {
    match c {
        Counter::XmitData => Some(ExtCounter::XmitData),
        Counter::RcvData => Some(ExtCounter::RcvData),
        Counter::XmitPkts => Some(ExtCounter::XmitPkts),
        Counter::RcvPkts => Some(ExtCounter::RcvPkts),
        _ => None,
    }
}

/// One read of a port's counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reading {
    /// When the answer arrived.
    pub at: VTime,
    /// PortCounters as answered.
    pub pc: PortCounters,
    /// PortCountersExtended as answered, when the node supports it.
    pub ext: Option<PortCountersExtended>,
}

impl Reading {
    /// The value of `c`: the 64-bit extended one for data counters when read, else the
    /// PortCounters field.
    pub fn value(&self, c: Counter) -> u64 {
        match (ext_of(c), &self.ext) {
            (Some(e), Some(x)) => x.get(e),
            _ => self.pc.get(c),
        }
    }
}

/// The increase of every counter between two readings.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    /// Time of the later reading.
    pub at: VTime,
    /// Time since the earlier reading.
    pub dt: VTime,
    /// Increase per counter (indexed as [`Counter::ALL`]).
    pub deltas: [u64; N],
}

/// One port as the perf manager keeps it.
#[derive(Clone, Debug)]
pub struct PortRecord {
    /// What the last heavy sweep said about the port.
    pub target: PerfTarget,
    /// The last reading (after the answer of a clear, the values it answered).
    pub last: Option<Reading>,
    /// Sum of the increases since this master first read the port.
    pub totals: [u64; N],
    /// The last samples, oldest first.
    pub window: VecDeque<Sample>,
    /// Checked counters over their threshold at the last reading (bit i: `CHECKED[i]`).
    pub exceeded: u16,
    /// Readings lower than the one before (someone else cleared the counters).
    pub resets: u32,
    /// Clears this manager sent (a counter near its maximum).
    pub clears: u32,
    /// PortCounters read, waiting for the extended read of the same sweep.
    pub pending_pc: Option<PortCounters>,
}

impl PortRecord {
    /// A port not read yet.
    pub fn new(target: PerfTarget) -> PortRecord {
        PortRecord {
            target,
            last: None,
            totals: [0; N],
            window: VecDeque::new(),
            exceeded: 0,
            resets: 0,
            clears: 0,
            pending_pc: None,
        }
    }

    /// Takes a reading: the sample against the last one (a counter lower than before
    /// counts from 0: it was reset), totals, the window (at most `keep` samples), and the
    /// checked counters that newly exceed their thresholds.
    pub fn take(&mut self, r: Reading, keep: usize, th: &Thresholds) -> Vec<(Counter, u64)> {
        if let Some(prev) = self.last {
            let mut deltas = [0u64; N];
            let mut reset = false;
            for c in Counter::ALL {
                let (now, before) = (r.value(c), prev.value(c));
                deltas[c.index()] = if now >= before {
                    now - before
                } else {
                    reset = true;
                    now
                };
            }
            if reset {
                self.resets += 1;
            }
            for (t, d) in self.totals.iter_mut().zip(deltas) {
                *t = t.saturating_add(d);
            }
            self.window.push_back(Sample {
                at: r.at,
                dt: r.at.saturating_sub(prev.at),
                deltas,
            });
            while self.window.len() > keep.max(1) {
                self.window.pop_front();
            }
        }
        let mut crossed = Vec::new();
        let mut exceeded = 0u16;
        for (i, c) in CHECKED.iter().copied().enumerate() {
            let v = r.value(c);
            if th.exceeds(c, v) {
                exceeded |= 1 << i;
                if self.exceeded & (1 << i) == 0 {
                    crossed.push((c, v));
                }
            }
        }
        self.exceeded = exceeded;
        self.last = Some(r);
        crossed
    }

    /// Counters of the last reading over their threshold in `th`, with their values.
    pub fn over(&self, th: &Thresholds) -> Vec<(Counter, u64)> {
        let Some(r) = self.last else {
            return Vec::new();
        };
        CHECKED
            .iter()
            .copied()
            .map(|c| (c, r.value(c)))
            .filter(|&(c, v)| th.exceeds(c, v))
            .collect()
    }

    /// Does an error counter over its threshold still grow within the window? (PortXmitWait
    /// is congestion, not a damaged link: it alarms but degrades nothing.)
    pub fn degraded(&self) -> bool {
        CHECKED.iter().enumerate().any(|(i, &c)| {
            c != Counter::XmitWait
                && self.exceeded & (1 << i) != 0
                && self.window.iter().any(|s| s.deltas[c.index()] > 0)
        })
    }

    /// Increase of `c` over the window and the window's length.
    pub fn window_delta(&self, c: Counter) -> (u64, VTime) {
        self.window.iter().fold((0, 0), |(d, t), s| {
            (d.saturating_add(s.deltas[c.index()]), t + s.dt)
        })
    }

    /// Should the counters be cleared (OpenSM's perfmgr rule: an error counter at 3/4 of
    /// its maximum or more; the 32-bit data counters too when there is no extended read;
    /// PortXmitWait when the node has it)? Returns the CounterSelect and CounterSelect2.
    pub fn clear_select(r: &Reading, xmit_wait: bool) -> Option<(u16, u8)> {
        let near = |c: Counter| r.pc.get(c) >= c.max() - c.max() / 4;
        let errors = CHECKED
            .iter()
            .copied()
            .filter(|&c| c != Counter::XmitWait)
            .any(near);
        let data = r.ext.is_none()
            && [
                Counter::XmitData,
                Counter::RcvData,
                Counter::XmitPkts,
                Counter::RcvPkts,
            ]
            .into_iter()
            .any(near);
        let wait = xmit_wait && near(Counter::XmitWait);
        (errors || data || wait).then_some((
            // With the extended counters read, the 32-bit data counters are left alone
            // (some hardware shares them with the 64-bit ones; OpenSM does the same).
            if r.ext.is_some() { 0x0FFF } else { 0xFFFF },
            u8::from(xmit_wait),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec() -> PortRecord {
        PortRecord::new(PerfTarget::default())
    }

    fn pc(sym: u16, xmit: u32) -> PortCounters {
        PortCounters {
            symbol_error: sym,
            xmit_data: xmit,
            ..PortCounters::default()
        }
    }

    #[test]
    fn deltas_resets_window_and_crossings() {
        let th = Thresholds::default();
        let mut r = rec();
        let read = |at, sym, x| Reading {
            at,
            pc: pc(sym, x),
            ext: None,
        };
        assert!(r.take(read(0, 2, 100), 2, &th).is_empty());
        let crossed = r.take(read(10, 12, 150), 2, &th);
        assert_eq!(crossed, vec![(Counter::SymbolError, 12)]);
        assert_eq!(r.totals[Counter::SymbolError.index()], 10);
        assert_eq!(r.totals[Counter::XmitData.index()], 50);
        assert!(r.degraded());
        // Still over: no second alarm. A reset counts from 0.
        assert!(r.take(read(20, 13, 20), 2, &th).is_empty());
        assert_eq!(r.resets, 1);
        assert_eq!(r.totals[Counter::XmitData.index()], 70);
        assert_eq!(r.window.len(), 2);
        // Over, but no longer growing within the window: not degraded.
        r.take(read(30, 13, 20), 2, &th);
        r.take(read(40, 13, 20), 2, &th);
        assert!(!r.degraded());
        assert_eq!(r.over(&th), vec![(Counter::SymbolError, 13)]);
    }

    #[test]
    fn extended_data_wins_and_clear_rule() {
        let ext = PortCountersExtended {
            xmit_data: 1 << 40,
            ..Default::default()
        };
        let r = Reading {
            at: 0,
            pc: pc(0, u32::MAX),
            ext: Some(ext),
        };
        assert_eq!(r.value(Counter::XmitData), 1 << 40);
        assert_eq!(PortRecord::clear_select(&r, false), None);
        let plain = Reading { ext: None, ..r };
        assert_eq!(PortRecord::clear_select(&plain, true), Some((0xFFFF, 1)));
        let sym = Reading {
            at: 0,
            pc: pc(0xC000, 0),
            ext: Some(ext),
        };
        assert_eq!(PortRecord::clear_select(&sym, false), Some((0x0FFF, 0)));
        let below = Reading {
            pc: pc(0xBFFF, 0),
            ..sym
        };
        assert_eq!(PortRecord::clear_select(&below, false), None);
    }
}
