//! A sweep of the counters and the answers that come back (see the module documentation
//! of [`super`]).

use super::port::PortRecord;
use super::{
    Alarm, Ask, PerfEvent, PerfManager, PerfSweepStats, Queued, Reading, VTime, ext_select,
    pc_select,
};
use fabric::Lid;
use mad::perf::{ClassPortInfo, PerfMad, PortCounters, PortCountersExtended};
use std::collections::HashMap;

impl PerfManager {
    /// Queues the reads of every readable port: ClassPortInfo first for a node not asked yet.
    pub(super) fn start_sweep(&mut self, now: VTime) {
        self.sweeps += 1;
        self.sweep = Some(PerfSweepStats {
            number: self.sweeps,
            ..PerfSweepStats::default()
        });
        self.sweep_started = now;
        self.next_sweep = None;
        let mut readable = 0usize;
        let mut waiting: HashMap<Lid, Vec<usize>> = HashMap::new();
        for (i, r) in self.ports.iter().enumerate() {
            if !r.target.readable() {
                continue;
            }
            readable += 1;
            let lid = r.target.lid;
            if self.caps.contains_key(&lid) {
                self.queue.push_back(pc_ask(i, lid, r.target.port));
            } else {
                waiting.entry(lid).or_default().push(i);
            }
        }
        let mut lids: Vec<Lid> = waiting.keys().copied().collect();
        lids.sort_unstable();
        for lid in lids {
            self.queue.push_front(Queued {
                ask: Ask::Cpi(lid),
                dlid: lid,
                mad: PerfMad::get(0, 0, &ClassPortInfo::default()),
                tries: 0,
            });
        }
        self.waiting_cpi = waiting;
        self.events.push_back(PerfEvent::SweepStarted {
            number: self.sweeps,
            ports: readable,
        });
        self.maybe_done(now);
    }

    /// Drops the sweep under way (the ports changed); live queries go on.
    pub(super) fn abort_sweep(&mut self) {
        self.queue.clear();
        self.urgent.retain(|q| matches!(q.ask, Ask::Live { .. }));
        self.inflight
            .retain(|_, f| matches!(f.q.ask, Ask::Live { .. }));
        self.waiting_cpi.clear();
        self.sweep = None;
    }

    /// A GMP that reached the SM's port. Returns false when it is not an answer to this
    /// manager (another class, a request): the caller hands it on (the SA). Answers are
    /// matched by the low 32 bits of the transaction id: the kernel's umad puts its agent
    /// id into the high bits of what it sends (the manager is the port's only PerfMgt
    /// client).
    pub fn handle_gmp(&mut self, now: VTime, mad: &[u8; 256]) -> bool {
        let Ok(m) = PerfMad::decode(mad) else {
            return false;
        };
        if !m.header.method.is_response() {
            return false;
        }
        let Some(f) = self.inflight.remove(&(m.header.tid as u32)) else {
            // A late answer to a query resent or given up.
            return true;
        };
        let status = m.header.status;
        if status != 0 {
            self.failed(f.q.ask, format!("MAD status 0x{status:04x}"));
        } else {
            self.answered(now, f.q, &m);
        }
        self.trim_deadlines();
        self.maybe_done(now);
        true
    }

    fn answered(&mut self, now: VTime, q: Queued, m: &PerfMad) {
        match q.ask {
            Ask::Cpi(lid) => {
                let caps = m.attr::<ClassPortInfo>().ok().map(|c| c.capability_mask());
                self.caps.insert(lid, caps);
                self.release(lid);
            }
            Ask::Pc(i) => {
                let Ok(pc) = m.attr::<PortCounters>() else {
                    return self.failed(q.ask, "undecodable PortCounters".to_string());
                };
                if pc.port_select != self.ports[i].target.port {
                    return self.failed(q.ask, format!("answer for port {}", pc.port_select));
                }
                if self.has_ext(q.dlid) {
                    self.ports[i].pending_pc = Some(pc);
                    let port = self.ports[i].target.port;
                    self.queue.push_front(Queued {
                        ask: Ask::Pce(i),
                        dlid: q.dlid,
                        mad: PerfMad::get(0, 0, &ext_select(port)),
                        tries: 0,
                    });
                } else {
                    self.finish(now, i, q.dlid, pc, None);
                }
            }
            Ask::Pce(i) => {
                let ext = m.attr::<PortCountersExtended>().ok();
                let Some(pc) = self.ports[i].pending_pc.take() else {
                    return;
                };
                self.finish(now, i, q.dlid, pc, ext);
            }
            Ask::Clear(i) => {
                let r = &mut self.ports[i];
                r.clears += 1;
                if let (Ok(pc), Some(last)) = (m.attr::<PortCounters>(), r.last.as_mut()) {
                    // The answer holds the counters as they are after the clear.
                    last.pc = pc;
                    last.at = now;
                }
            }
            Ask::Live { id, ext } => {
                let Some(mut l) = self.live.remove(&id) else {
                    return;
                };
                if ext {
                    l.ext = m.attr::<PortCountersExtended>().ok();
                } else {
                    l.pc = m.attr::<PortCounters>().ok();
                }
                self.events
                    .push_back(PerfEvent::QueryDone { id, result: Ok(l) });
            }
        }
    }

    /// Ports of the node at `lid` waiting for its ClassPortInfo are queued.
    fn release(&mut self, lid: Lid) {
        for i in self.waiting_cpi.remove(&lid).unwrap_or_default() {
            let q = pc_ask(i, lid, self.ports[i].target.port);
            self.queue.push_back(q);
        }
    }

    fn has_ext(&self, lid: Lid) -> bool {
        self.caps.get(&lid).copied().flatten().is_some_and(|c| {
            c & (ClassPortInfo::CAP_EXTENDED_WIDTH | ClassPortInfo::CAP_EXTENDED_WIDTH_NO_IETF) != 0
        })
    }

    fn xmit_wait(&self, lid: Lid) -> bool {
        self.caps
            .get(&lid)
            .copied()
            .flatten()
            .is_some_and(|c| c & ClassPortInfo::CAP_PORT_COUNTERS_XMIT_WAIT != 0)
    }

    /// A port's reading is complete: sample, alarms, and a clear when a counter nears its
    /// maximum.
    fn finish(
        &mut self,
        now: VTime,
        i: usize,
        lid: Lid,
        pc: PortCounters,
        ext: Option<PortCountersExtended>,
    ) {
        let reading = Reading { at: now, pc, ext };
        let xmit_wait = self.xmit_wait(lid);
        let (window, th) = (self.cfg.window, &self.cfg.thresholds);
        let r = &mut self.ports[i];
        let crossed = r.take(reading, window, th);
        for (counter, value) in crossed {
            self.events.push_back(PerfEvent::Alarm(Alarm {
                node_guid: r.target.node_guid,
                desc: r.target.desc.clone(),
                lid,
                port: r.target.port,
                peer: r.target.peer.clone(),
                counter,
                value,
                threshold: th.get(counter).unwrap_or(0),
            }));
        }
        if let Some((select, select2)) = PortRecord::clear_select(&reading, xmit_wait) {
            let clear = PortCounters {
                port_select: r.target.port,
                counter_select: select,
                counter_select2: select2,
                ..PortCounters::default()
            };
            self.queue.push_front(Queued {
                ask: Ask::Clear(i),
                dlid: lid,
                mad: PerfMad::set(0, 0, &clear),
                tries: 0,
            });
            if let Some(s) = &mut self.sweep {
                s.clears += 1;
            }
        }
        if let Some(s) = &mut self.sweep {
            s.ports += 1;
        }
    }

    /// A query was given up (no answer after the retries, or an error status).
    pub(super) fn failed(&mut self, ask: Ask, why: String) {
        match ask {
            Ask::Cpi(lid) => {
                // Read the ports without the extended counters.
                self.caps.insert(lid, None);
                self.release(lid);
            }
            Ask::Pc(i) | Ask::Pce(i) => {
                self.ports[i].pending_pc = None;
                if let Some(s) = &mut self.sweep {
                    s.failed += 1;
                }
            }
            Ask::Clear(_) => {}
            Ask::Live { id, .. } => {
                if self.live.remove(&id).is_some() {
                    self.events.push_back(PerfEvent::QueryDone {
                        id,
                        result: Err(why),
                    });
                }
            }
        }
    }

    /// Ends the sweep when nothing of it is queued or outstanding.
    pub(super) fn maybe_done(&mut self, now: VTime) {
        let Some(mut s) = self.sweep else {
            return;
        };
        let busy = !self.queue.is_empty()
            || !self.waiting_cpi.is_empty()
            || self
                .urgent
                .iter()
                .any(|q| !matches!(q.ask, Ask::Live { .. }))
            || self
                .inflight
                .values()
                .any(|f| !matches!(f.q.ask, Ask::Live { .. }));
        if busy {
            return;
        }
        s.duration = now.saturating_sub(self.sweep_started);
        self.sweep = None;
        self.last_sweep = Some((s, now));
        self.events.push_back(PerfEvent::SweepDone(s));
        let changed = self.health.update(&self.ports);
        self.events
            .extend(changed.into_iter().map(PerfEvent::Health));
        let next = self.sweep_started + self.cfg.interval;
        self.next_sweep = Some(next.max(now));
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<PerfEvent> {
        self.events.pop_front()
    }
}

fn pc_ask(i: usize, lid: Lid, port: u8) -> Queued {
    Queued {
        ask: Ask::Pc(i),
        dlid: lid,
        mad: PerfMad::get(0, 0, &pc_select(port)),
        tries: 0,
    }
}
