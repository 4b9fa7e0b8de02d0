//! Clients of the admin API during a process-level run: each one, on a thread of its own,
//! reads the policy (`GetPolicy`, linearizable) and compare-and-sets it (`ApplyPolicy` with
//! the version it last saw) through a random replica, and records every call and answer
//! with the time it was made and answered. The history then goes to
//! [`crate::lincheck::check`]: an answer that contradicts every order of the operations is
//! a linearizability violation (a lost or misreported write, a stale read).
//!
//! The broken variant reads without `linearizable` (any replica answers from its own
//! applied state, however stale): the checker must catch it.

use crate::lincheck::{Answer, Call, Op};
use fabric::rng::SplitMix64;
use proto::admin::sm_admin_client::SmAdminClient;
use proto::admin::{ApplyPolicyRequest, GetPolicyRequest};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tonic::Code;

/// Bound on one admin call (beyond it the outcome is unknown).
const CALL_TIMEOUT: Duration = Duration::from_secs(3);
/// Pause between two calls of a client.
const PAUSE: Duration = Duration::from_millis(150);
/// Share of calls that are writes (each write restarts the master on the new policy).
const WRITES: f64 = 0.15;

/// FNV-1a of a policy text: the register's value.
pub fn value_of(text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
    }
    h
}

/// Running clients.
pub struct Clients {
    stop: Arc<AtomicBool>,
    paused: Arc<AtomicBool>,
    history: Arc<Mutex<Vec<Op>>>,
    threads: Vec<JoinHandle<()>>,
}

/// A client thread's view of the harness's switches.
#[derive(Clone, Copy)]
struct Flags<'a> {
    stop: &'a AtomicBool,
    paused: &'a AtomicBool,
}

impl Clients {
    /// Starts `n` clients against the replicas' admin addresses. `stale_reads`: the broken
    /// variant (reads served by any replica without ReadIndex).
    pub fn start(n: u64, addrs: Vec<SocketAddr>, seed: u64, stale_reads: bool) -> Clients {
        let stop = Arc::new(AtomicBool::new(false));
        let paused = Arc::new(AtomicBool::new(false));
        let history = Arc::new(Mutex::new(Vec::new()));
        let base = Instant::now();
        let threads = (1..=n)
            .map(|id| {
                let (stop, paused) = (stop.clone(), paused.clone());
                let (history, addrs) = (history.clone(), addrs.clone());
                std::thread::spawn(move || {
                    let flags = Flags {
                        stop: &stop,
                        paused: &paused,
                    };
                    client(id, addrs, seed ^ id, stale_reads, base, flags, &history)
                })
            })
            .collect();
        Clients {
            stop,
            paused,
            history,
            threads,
        }
    }

    /// Holds the writes back (reads go on) while the harness checks the fabric against
    /// the policy in force: a policy changing under the check would never let it settle.
    pub fn pause_writes(&self, paused: bool) {
        self.paused.store(paused, Ordering::Relaxed);
    }

    /// Stops the clients and returns the history (operations in call order).
    pub fn finish(self) -> Vec<Op> {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads {
            let _ = t.join();
        }
        let mut h = self
            .history
            .lock()
            .map(|h| h.clone())
            .unwrap_or_else(|p| p.into_inner().clone());
        h.sort_by_key(|o| o.start);
        h
    }
}

fn client(
    id: u64,
    addrs: Vec<SocketAddr>,
    seed: u64,
    stale_reads: bool,
    base: Instant,
    flags: Flags<'_>,
    history: &Mutex<Vec<Op>>,
) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    let mut rng = SplitMix64::new(seed);
    let mut known = 0u64;
    let mut n = 0u64;
    let ns = |t: Instant| t.duration_since(base).as_nanos() as u64;
    while !flags.stop.load(Ordering::Relaxed) {
        let addr = addrs[rng.below(addrs.len() as u64) as usize];
        let write = rng.chance(WRITES) && !flags.paused.load(Ordering::Relaxed);
        n += 1;
        let text = format!(
            "Default=0x7fff : ALL=full ;\nC{id}N{n}=0x{:04x} : ALL=full ;\n",
            0x100 + (id * 0x1000 + n) % 0x7000
        );
        let start = Instant::now();
        let (call, answer) = rt.block_on(async {
            let Ok(ch) = sm_node::cluster::net::channel(&addr.to_string()) else {
                return (Call::Read, None);
            };
            let mut a = SmAdminClient::new(ch);
            if write {
                let call = Call::Write {
                    expected: known,
                    value: value_of(&text),
                };
                let req = ApplyPolicyRequest {
                    text: text.clone(),
                    expected_version: known,
                    request_id: 0,
                };
                let r = tokio::time::timeout(CALL_TIMEOUT, a.apply_policy(req)).await;
                let answer = match r {
                    Ok(Ok(rep)) => Some(Answer::Written {
                        version: rep.into_inner().version,
                    }),
                    // Refused at apply for the version: it changed nothing.
                    Ok(Err(s))
                        if s.code() == Code::FailedPrecondition
                            && s.message().starts_with("REPL-E004") =>
                    {
                        Some(Answer::Stale)
                    }
                    // Refused before it was proposed (no leader): it changed nothing.
                    Ok(Err(s)) if s.message().starts_with("E_NODE_NO_LEADER") => None,
                    _ => Some(Answer::Unknown),
                };
                (call, answer)
            } else {
                let req = GetPolicyRequest {
                    linearizable: !stale_reads,
                };
                match tokio::time::timeout(CALL_TIMEOUT, a.get_policy(req)).await {
                    Ok(Ok(rep)) => {
                        let p = rep.into_inner();
                        (
                            Call::Read,
                            Some(Answer::Read {
                                version: p.version,
                                value: if p.version == 0 { 0 } else { value_of(&p.text) },
                            }),
                        )
                    }
                    // A read that failed observed nothing.
                    _ => (Call::Read, None),
                }
            }
        });
        let end = Instant::now();
        if let Some(answer) = answer {
            match &answer {
                Answer::Read { version, .. } => known = *version,
                Answer::Written { version } => known = *version,
                _ => {}
            }
            if let Ok(mut h) = history.lock() {
                h.push(Op {
                    client: id,
                    call,
                    answer,
                    start: ns(start),
                    end: ns(end),
                });
            }
        }
        std::thread::sleep(PAUSE);
    }
}
