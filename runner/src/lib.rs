//! `runner` — what the hosts of Quorum SM's pure crates take from the machine, in one place:
//! [`Threads`], routing's [`Executor`] over `std::thread::scope` (the daemon's routing pool,
//! `smctl route`/`smctl bench`, routing's benchmark and tests), and [`peak_rss_bytes`], the
//! process's peak memory (smctl's reports, the routing and fabric-sim benchmarks).
//!
//! It exists because `routing` must never spawn a thread and the pure crates must never do
//! IO: both live here instead, once. It must never hold routing, SM or fabric logic, read a
//! clock, or do any IO beyond reading `/proc/self/status`.

use routing::Executor;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Runs the jobs of each routing phase on up to `n` scoped threads, handed out in order;
/// with `n <= 1` (or a single job) they run one after another on the calling thread. The
/// results are in job order, so routing's output is the same for any `n`.
#[derive(Clone, Copy, Debug)]
pub struct Threads(pub usize);

impl Executor for Threads {
    fn map<R: Send, F: Fn(usize) -> R + Sync>(&self, jobs: usize, f: F) -> Vec<R> {
        let workers = self.0.min(jobs);
        if workers <= 1 {
            return (0..jobs).map(f).collect();
        }
        let next = AtomicUsize::new(0);
        let done: Vec<Vec<(usize, R)>> = std::thread::scope(|sc| {
            let handles: Vec<_> = (0..workers)
                .map(|_| {
                    sc.spawn(|| {
                        let mut mine = Vec::new();
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            if i >= jobs {
                                break;
                            }
                            mine.push((i, f(i)));
                        }
                        mine
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        let mut slots: Vec<Option<R>> = (0..jobs).map(|_| None).collect();
        for (i, r) in done.into_iter().flatten() {
            slots[i] = Some(r);
        }
        slots
            .into_iter()
            // Invariant: `fetch_add` hands every index below `jobs` to exactly one worker,
            // and every worker ran to the end (a panic was resumed above).
            .map(|r| r.expect("every job ran exactly once"))
            .collect()
    }
}

/// Peak resident set size of this process in bytes (VmHWM from `/proc/self/status`), or
/// None where the kernel does not report it.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_job_order_for_any_thread_count() {
        for n in [0, 1, 2, 3, 8] {
            for jobs in [0, 1, 2, 5, 17] {
                let v = Threads(n).map(jobs, |i| i * 10);
                assert_eq!(v, (0..jobs).map(|i| i * 10).collect::<Vec<_>>(), "n={n}");
            }
        }
    }

    #[test]
    #[should_panic(expected = "job 3")]
    fn a_panicking_job_panics_the_caller() {
        Threads(2).map(6, |i| {
            assert!(i != 3, "job 3");
            i
        });
    }

    #[test]
    fn peak_rss_is_known_on_linux() {
        if cfg!(target_os = "linux") {
            assert!(peak_rss_bytes().is_some_and(|b| b > 0));
        }
    }
}
