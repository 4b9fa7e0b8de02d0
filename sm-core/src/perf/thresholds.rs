//! Error thresholds as infiniband-diags' `ibqueryerrors` reads them: a counter is reported
//! when its value is greater than its threshold (`exceeds_threshold` in `ibqueryerrors.c`:
//! `val > thres`, 0 when the file does not name the counter). The file format is the
//! `error_thresholds` one: `Name=value` lines, `#` comments, blank lines ignored.
//!
//! The counters checked are those `ibqueryerrors` checks: SymbolErrorCounter through
//! VL15Dropped of PortCounters (QP1Dropped and the data counters are not errors) and
//! PortXmitWait. [`Thresholds::default`] holds the values infiniband-diags ships in its
//! `error_thresholds` file — commented out there, so a plain `ibqueryerrors` reports any
//! non-zero counter; the perf manager's alarms use them so that a single symbol error does
//! not page anyone — except PortXmitWait, at OpenSM's `perfmgr_xmit_wait_threshold`.

use crate::SmError;
use mad::perf::Counter;

/// The counters thresholds apply to, in `ibqueryerrors`' order: the error counters, then
/// PortXmitWait.
pub const CHECKED: [Counter; 13] = {
    let mut a = [Counter::XmitWait; 13];
    let mut i = 0;
    while i < Counter::ERRORS.len() {
        a[i] = Counter::ERRORS[i];
        i += 1;
    }
    a
};

/// Size limit of a thresholds text.
pub const MAX_TEXT: usize = 64 * 1024;

/// One threshold per checked counter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Thresholds {
    values: [u64; CHECKED.len()],
}

impl Default for Thresholds {
    /// infiniband-diags' suggested values (its `error_thresholds` file).
    fn default() -> Thresholds {
        let mut t = Thresholds::zero();
        for (c, v) in [
            (Counter::SymbolError, 10),
            (Counter::LinkErrorRecovery, 10),
            (Counter::LinkDowned, 10),
            (Counter::RcvErrors, 10),
            (Counter::RcvRemotePhysicalErrors, 100),
            (Counter::RcvSwitchRelayErrors, 100),
            (Counter::XmitDiscards, 100),
            (Counter::XmitConstraintErrors, 100),
            (Counter::RcvConstraintErrors, 100),
            (Counter::LocalLinkIntegrityErrors, 10),
            (Counter::ExcessiveBufferOverrunErrors, 10),
            (Counter::Vl15Dropped, 100),
            // PortXmitWait is congestion, not link damage: OpenSM's perfmgr logs it past
            // `perfmgr_xmit_wait_threshold` (65535); error_thresholds suggests 1000, which
            // an SM's own port passes during every bring-up.
            (Counter::XmitWait, 65535),
        ] {
            t.set(c, v);
        }
        t
    }
}

impl Thresholds {
    /// Every threshold 0: any non-zero counter is reported (a plain `ibqueryerrors`).
    pub fn zero() -> Thresholds {
        Thresholds {
            values: [0; CHECKED.len()],
        }
    }

    /// The threshold of `c`; None for a counter that is not checked.
    pub fn get(&self, c: Counter) -> Option<u64> {
        CHECKED.iter().position(|&x| x == c).map(|i| self.values[i])
    }

    /// Sets the threshold of a checked counter (others are ignored).
    pub fn set(&mut self, c: Counter, v: u64) {
        if let Some(i) = CHECKED.iter().position(|&x| x == c) {
            self.values[i] = v;
        }
    }

    /// Does `value` of `c` exceed its threshold (`ibqueryerrors`: `val > thres`)?
    pub fn exceeds(&self, c: Counter, value: u64) -> bool {
        self.get(c).is_some_and(|t| value > t)
    }

    /// Parses an `error_thresholds` text over the thresholds of `base` (`ibqueryerrors`
    /// starts from all 0). A line that is not `Name=value` with a checked counter's name
    /// and a number (decimal or 0x hex) is an error naming the line; nothing is applied then.
    pub fn parse(text: &str, base: &Thresholds) -> Result<Thresholds, SmError> {
        if text.len() > MAX_TEXT {
            return Err(SmError::Thresholds {
                line: 0,
                why: format!("text of {} bytes, more than {MAX_TEXT}", text.len()),
            });
        }
        let mut t = base.clone();
        for (n, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let err = |why: String| SmError::Thresholds { line: n + 1, why };
            let (name, value) = line
                .split_once('=')
                .ok_or_else(|| err(format!("`{line}` is not Name=value")))?;
            let (name, value) = (name.trim(), value.trim());
            let c = CHECKED
                .iter()
                .copied()
                .find(|c| c.name() == name)
                .ok_or_else(|| err(format!("`{name}` is not a counter ibqueryerrors checks")))?;
            let v = match value
                .strip_prefix("0x")
                .or_else(|| value.strip_prefix("0X"))
            {
                Some(h) => u64::from_str_radix(h, 16),
                None => value.parse(),
            }
            .map_err(|_| err(format!("`{value}` is not a number")))?;
            t.set(c, v);
        }
        Ok(t)
    }

    /// The thresholds as an `error_thresholds` text (every checked counter, one per line),
    /// which `ibqueryerrors --threshold-file` reads the same way.
    pub fn to_text(&self) -> String {
        CHECKED
            .iter()
            .zip(self.values)
            .map(|(c, v)| format!("{}={v}\n", c.name()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_round_trips_and_refuses_bad_lines() {
        let t = Thresholds::default();
        assert_eq!(
            Thresholds::parse(&t.to_text(), &Thresholds::zero()).unwrap(),
            t
        );
        let p = Thresholds::parse("# c\n\nSymbolErrorCounter=0x3\n", &Thresholds::zero()).unwrap();
        assert_eq!(p.get(Counter::SymbolError), Some(3));
        assert_eq!(p.get(Counter::RcvErrors), Some(0));
        assert!(p.exceeds(Counter::RcvErrors, 1));
        assert!(!p.exceeds(Counter::SymbolError, 3));
        assert!(
            !p.exceeds(Counter::XmitData, u64::MAX),
            "data is not checked"
        );
        for bad in [
            "Nope=1",
            "SymbolErrorCounter",
            "SymbolErrorCounter=x",
            "PortXmitData=1",
        ] {
            let e = Thresholds::parse(bad, &t).unwrap_err().to_string();
            assert!(e.starts_with("SMC-E") && e.contains("line 1"), "{e}");
        }
    }
}
