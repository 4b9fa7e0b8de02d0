//! The heavy sweep's course: start, end of discovery, LIDs and the routing hand-off, end
//! of the sweep and the scheduling of the next one.

use super::{Phase, Sweeper};
use crate::events::{Event, SweepReason};
use crate::io::Op;
use crate::state::NONE;

impl Sweeper {
    /// Starts a heavy sweep: discovery from the SM's own node.
    pub(crate) fn start_heavy(&mut self, reason: SweepReason) {
        self.disc.start();
        self.dirty = false;
        self.act_count = self.act_count.wrapping_add(1);
        self.phase = Phase::Discovering;
        self.sweep_start = *self.io.counters();
        self.planned_sets = 0;
        self.failed_sets = 0;
        self.stage_counts = [0; 4];
        self.failed_ports.clear();
        self.during_routing.result = None;
        self.events.push_back(Event::HeavySweepStarted {
            sweep: self.disc.sweep(),
            reason,
        });
        self.push(Op::Probe, NONE, 0, 0);
    }

    /// Discovery has nothing left in flight: report it, then other SMs (or straight on
    /// to the pre-routing steps), or end the sweep when the SM's own port has no link.
    pub(crate) fn finish_discovery(&mut self) {
        let found = self.disc.finish();
        self.io.set_all_active(found.all_active);
        self.events.push_back(Event::DiscoveryDone {
            nodes: found.nodes,
            switches: found.switches,
            ports: found.ports as usize,
            links: found.links as usize,
            smps: self.io.counters().since(&self.sweep_start).total(),
            min_smps: found.min_smps,
        });
        // Nothing to manage while the SM's own port has no link.
        if !found.linked {
            // Not clean: the link may come back with the port in INIT and no trap says so
            // (no switch is known to poll), so every interval is a heavy sweep until it does.
            self.dirty = true;
            self.finish_heavy();
            return;
        }
        self.after_discovery();
    }

    /// Phase::Lids: assigns LIDs, plans partitions, builds and emits the routing job.
    pub(crate) fn run_lids(&mut self) {
        match self.prepare_routing() {
            Ok(job) => {
                self.phase = Phase::Routing;
                self.events.push_back(Event::RoutingNeeded(Box::new(job)));
                self.plan_during_routing();
            }
            Err(e) => {
                self.events.push_back(Event::RoutingFailed(e.to_string()));
                self.finish_heavy();
            }
        }
    }

    pub(crate) fn start_pending_heavy(&mut self) {
        let reason = self.heavy_pending.take().unwrap_or(SweepReason::Requested);
        self.start_heavy(reason);
    }

    /// Ends a heavy sweep (complete or abandoned) and schedules the next sweep.
    pub(crate) fn finish_heavy(&mut self) {
        self.phase = Phase::Idle;
        self.first_sweep_done = true;
        let c = self.io.counters().since(&self.sweep_start);
        self.events.push_back(Event::HeavySweepComplete {
            sweep: self.disc.sweep(),
            counters: c,
            min_smps: self.disc.min_smps() + self.planned_sets,
        });
        self.schedule_next();
        self.start_waiting_readback();
    }

    pub(crate) fn schedule_next(&mut self) {
        if self.heavy_pending.is_some() {
            self.start_pending_heavy();
        } else {
            self.next_light = Some(self.now + self.cfg.sweep_interval);
        }
    }
}
