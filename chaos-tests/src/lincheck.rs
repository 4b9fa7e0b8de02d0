//! A linearizability checker for the admin API's policy register: a value with a version
//! that clients read (`GetPolicy`) and compare-and-set (`ApplyPolicy` with the expected
//! version). The algorithm is Wing & Gong's search as Porcupine runs it (Lowe's
//! refinement): take the history's calls and returns in time order, try to linearize a
//! pending operation at each point, backtrack, and memoize (linearized set, state) pairs so
//! every configuration is explored once.
//!
//! An operation whose outcome the client does not know (a timeout, a transport error after
//! the request left, a "commit unknown" answer) has no return: it may take effect at any
//! point after its call, or never — the checker places it anywhere after its call, the end
//! of the history included (which stands for never).
//!
//! Written here rather than taken from a crate: the register model is 40 lines, and the
//! maintained tester (stateright's) would bring its model checker and a dozen dependencies
//! into a crate CI builds on every run. It must never read a clock: times are the
//! recorder's.

use std::collections::HashSet;

/// What a client asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Call {
    /// A read of (version, value).
    Read,
    /// Compare-and-set: `value` becomes version `expected + 1` if the version is `expected`.
    Write {
        /// Version the writer expects in force.
        expected: u64,
        /// The new value (a hash of the policy text).
        value: u64,
    },
}

/// What the client was answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The read saw this.
    Read {
        /// Version.
        version: u64,
        /// Value.
        value: u64,
    },
    /// The write took effect as this version.
    Written {
        /// The new version.
        version: u64,
    },
    /// The write was refused: the version was not the expected one.
    Stale,
    /// The outcome is not known (the operation may or may not have taken effect).
    Unknown,
}

/// One operation of the history.
#[derive(Clone, Debug)]
pub struct Op {
    /// Client that issued it.
    pub client: u64,
    /// What it asked.
    pub call: Call,
    /// What it got.
    pub answer: Answer,
    /// When it was called (any monotonic unit).
    pub start: u64,
    /// When it returned (ignored when the answer is `Unknown`).
    pub end: u64,
}

/// The register's state: (version, value).
type State = (u64, u64);

/// The state after `op` from `s`, if the op's answer is possible from `s`.
fn step(s: State, op: &Op) -> Vec<State> {
    match (&op.call, &op.answer) {
        (Call::Read, Answer::Read { version, value }) => {
            if (s.0, s.1) == (*version, *value) {
                vec![s]
            } else {
                vec![]
            }
        }
        (Call::Read, Answer::Unknown) => vec![s],
        (Call::Write { expected, value }, Answer::Written { version }) => {
            if s.0 == *expected && *version == expected + 1 {
                vec![(*version, *value)]
            } else {
                vec![]
            }
        }
        (Call::Write { expected, .. }, Answer::Stale) => {
            if s.0 != *expected {
                vec![s]
            } else {
                vec![]
            }
        }
        (Call::Write { expected, value }, Answer::Unknown) => {
            if s.0 == *expected {
                vec![(expected + 1, *value), s]
            } else {
                vec![s]
            }
        }
        _ => vec![],
    }
}

/// Why a history is not linearizable (a short account for the report).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotLinearizable {
    /// The longest prefix of operations (indexes into the history) that could be linearized.
    pub best: Vec<usize>,
    /// Human-readable account.
    pub why: String,
}

impl std::fmt::Display for NotLinearizable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.why)
    }
}

/// Bound on the configurations explored (a pathological history fails loudly rather than
/// running for hours).
const MAX_CONFIGS: usize = 5_000_000;

/// Checks `history` from the initial state `(version, value)`.
pub fn check(history: &[Op], initial: (u64, u64)) -> Result<(), NotLinearizable> {
    let n = history.len();
    if n == 0 {
        return Ok(());
    }
    // Return time of an unknown operation: after everything.
    let end_of = |o: &Op| {
        if o.answer == Answer::Unknown {
            u64::MAX
        } else {
            o.end
        }
    };
    let mut done = vec![false; n];
    let mut seen: HashSet<(Vec<u64>, State)> = HashSet::new();
    let mut stack: Vec<(usize, State)> = Vec::new();
    let mut state = initial;
    let mut best: Vec<usize> = Vec::new();
    let mut path: Vec<usize> = Vec::new();
    let words = n.div_ceil(64);
    let key = |done: &[bool]| -> Vec<u64> {
        let mut k = vec![0u64; words];
        for (i, d) in done.iter().enumerate() {
            if *d {
                k[i / 64] |= 1 << (i % 64);
            }
        }
        k
    };
    // Candidates: pending operations called before the earliest return among pending ones.
    let candidates = |done: &[bool]| -> Vec<usize> {
        let min_end = (0..n)
            .filter(|&i| !done[i])
            .map(|i| end_of(&history[i]))
            .min()
            .unwrap_or(u64::MAX);
        (0..n)
            .filter(|&i| !done[i] && history[i].start <= min_end)
            .collect()
    };
    // Depth-first over (operation, resulting state) choices.
    let mut frames: Vec<(Vec<(usize, State)>, usize)> = Vec::new();
    let first: Vec<(usize, State)> = candidates(&done)
        .into_iter()
        .flat_map(|i| step(state, &history[i]).into_iter().map(move |s| (i, s)))
        .collect();
    frames.push((first, 0));
    loop {
        if seen.len() > MAX_CONFIGS {
            return Err(NotLinearizable {
                best,
                why: format!("search exceeded {MAX_CONFIGS} configurations"),
            });
        }
        let Some((choices, next)) = frames.last_mut() else {
            let ops: Vec<String> = (0..n)
                .filter(|i| !best.contains(i))
                .take(5)
                .map(|i| format!("#{i} {:?}", history[i]))
                .collect();
            return Err(NotLinearizable {
                best: best.clone(),
                why: format!(
                    "not linearizable: at most {} of {n} operations fit one order; first left out: {}",
                    best.len(),
                    ops.join("; ")
                ),
            });
        };
        if *next >= choices.len() {
            frames.pop();
            if let Some((i, s)) = stack.pop() {
                done[i] = false;
                path.pop();
                state = s;
            }
            continue;
        }
        let (i, s2) = choices[*next];
        *next += 1;
        done[i] = true;
        let k = (key(&done), s2);
        if seen.contains(&k) {
            done[i] = false;
            continue;
        }
        seen.insert(k);
        stack.push((i, state));
        path.push(i);
        state = s2;
        if path.len() > best.len() {
            best = path.clone();
        }
        if path.len() == n {
            return Ok(());
        }
        let next_choices: Vec<(usize, State)> = candidates(&done)
            .into_iter()
            .flat_map(|j| step(state, &history[j]).into_iter().map(move |s| (j, s)))
            .collect();
        frames.push((next_choices, 0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(client: u64, call: Call, answer: Answer, start: u64, end: u64) -> Op {
        Op {
            client,
            call,
            answer,
            start,
            end,
        }
    }

    fn w(expected: u64, value: u64) -> Call {
        Call::Write { expected, value }
    }

    fn r(version: u64, value: u64) -> Answer {
        Answer::Read { version, value }
    }

    #[test]
    fn sequential_and_overlapping_histories_pass() {
        let h = vec![
            op(1, w(0, 10), Answer::Written { version: 1 }, 0, 10),
            op(2, Call::Read, r(1, 10), 11, 20),
            // Overlapping: the read may see either side of the write.
            op(1, w(1, 20), Answer::Written { version: 2 }, 21, 40),
            op(2, Call::Read, r(1, 10), 22, 30),
            op(3, Call::Read, r(2, 20), 25, 45),
            // A stale CAS changes nothing.
            op(3, w(1, 99), Answer::Stale, 50, 60),
            op(2, Call::Read, r(2, 20), 61, 70),
        ];
        check(&h, (0, 0)).unwrap();
    }

    #[test]
    fn a_stale_read_after_an_acknowledged_write_fails() {
        let h = vec![
            op(1, w(0, 10), Answer::Written { version: 1 }, 0, 10),
            // Called after the write returned, yet sees the old value.
            op(2, Call::Read, r(0, 0), 11, 20),
        ];
        let e = check(&h, (0, 0)).unwrap_err();
        assert!(e.why.starts_with("not linearizable"), "{e}");
    }

    #[test]
    fn a_lost_acknowledged_write_fails_and_a_read_going_back_fails() {
        let h = vec![
            op(1, w(0, 10), Answer::Written { version: 1 }, 0, 10),
            op(1, w(1, 20), Answer::Written { version: 2 }, 11, 20),
            op(2, Call::Read, r(2, 20), 21, 30),
            op(3, Call::Read, r(1, 10), 31, 40),
        ];
        assert!(check(&h, (0, 0)).is_err());
    }

    #[test]
    fn an_unknown_write_may_have_taken_effect_or_not() {
        // Timed out, then seen.
        let seen = vec![
            op(1, w(0, 10), Answer::Unknown, 0, 0),
            op(2, Call::Read, r(1, 10), 50, 60),
        ];
        check(&seen, (0, 0)).unwrap();
        // Timed out, never seen: a later CAS from the old version succeeds.
        let lost = vec![
            op(1, w(0, 10), Answer::Unknown, 0, 0),
            op(2, w(0, 20), Answer::Written { version: 1 }, 50, 60),
            op(3, Call::Read, r(1, 20), 61, 70),
        ];
        check(&lost, (0, 0)).unwrap();
        // But it cannot take effect before its call.
        let early = vec![
            op(2, Call::Read, r(1, 10), 0, 5),
            op(1, w(0, 10), Answer::Unknown, 10, 0),
        ];
        assert!(check(&early, (0, 0)).is_err());
    }

    #[test]
    fn two_writers_of_one_version_cannot_both_win() {
        let h = vec![
            op(1, w(0, 10), Answer::Written { version: 1 }, 0, 10),
            op(2, w(0, 20), Answer::Written { version: 1 }, 0, 10),
        ];
        assert!(check(&h, (0, 0)).is_err());
    }
}
