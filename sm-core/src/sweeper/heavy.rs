//! The heavy sweep's course: start, end of discovery, LIDs and the routing hand-off, end
//! of the sweep and the scheduling of the next one.

use super::{Phase, Sweeper};
use crate::SmError;
use crate::events::{Event, RoutingJob, SweepReason};
use crate::io::Op;
use crate::state::NONE;
use fabric::{NodeId, PortRef};
use mad::SmState;
use routing::{EngineOptions, RoutingInput};
use std::sync::Arc;

impl Sweeper {
    /// Starts a heavy sweep: discovery from the SM's own node.
    pub(super) fn start_heavy(&mut self, reason: SweepReason) {
        if let Some(targets) = self.link_trap_targets(reason) {
            self.start_targeted(&targets);
            return;
        }
        self.disc.start();
        self.phase = Phase::Discovering;
        self.sched.heavy_started(*self.io.counters());
        self.prog.start_sweep();
        self.events.push_back(Event::HeavySweepStarted {
            sweep: self.disc.sweep(),
            reason,
        });
        self.push(Op::Probe, NONE, 0, 0);
    }

    /// The switches a heavy sweep asked for by link-state changes alone (traps 128, a light
    /// sweep's PortStateChange) re-reads, when the last heavy sweep left a clean picture to
    /// start from and every one is a switch it found (None: a full discovery).
    fn link_trap_targets(&mut self, reason: SweepReason) -> Option<Vec<u32>> {
        let lids = self.sched.take_trap_lids()?;
        if !matches!(
            reason,
            SweepReason::Trap(128) | SweepReason::Change | SweepReason::Recheck
        ) || !self.sched.first_done()
            || self.sched.is_dirty()
        {
            return None;
        }
        lids.iter().map(|&l| self.disc.switch_at_lid(l)).collect()
    }

    /// Starts a targeted heavy sweep: the trapping switches' ports are read again.
    fn start_targeted(&mut self, targets: &[u32]) {
        let gets = self.disc.start_targeted(targets);
        self.phase = Phase::Discovering;
        self.sched.heavy_started(*self.io.counters());
        self.prog.start_sweep();
        self.events.push_back(Event::HeavySweepStarted {
            sweep: self.disc.sweep(),
            reason: SweepReason::LinkTraps(targets.len() as u32),
        });
        self.push_gets(gets);
    }

    /// Discovery has nothing left in flight: report it, then other SMs (or straight on
    /// to the pre-routing steps), or end the sweep when the SM's own port has no link.
    pub(super) fn finish_discovery(&mut self) {
        let targeted = self.disc.targeted();
        if targeted && !self.disc.needs_full() {
            let unreached = self.light.take_unreached();
            let gets = self.disc.settle_round(&unreached);
            self.push_gets(gets);
            if !self.io.idle() {
                return;
            }
        }
        let found = self.disc.finish();
        if targeted && self.sched.full_pending() {
            // A full sweep was asked for while the switches were read (trap 144: an SM may
            // have registered at a port, and no SM writes before it has asked the others):
            // it takes this sweep's place before anything is written.
            let reason = self.sched.take_heavy();
            self.start_heavy(reason);
            return;
        }
        if targeted && self.disc.needs_full() {
            // What changed is more than the trapping switches tell: discover everything.
            self.start_heavy(SweepReason::Trap(128));
            return;
        }
        self.io.set_all_active(found.all_active);
        self.events.push_back(Event::DiscoveryDone {
            nodes: found.nodes,
            switches: found.switches,
            ports: found.ports as usize,
            links: found.links as usize,
            smps: self.io.counters().since(self.sched.started()).total(),
            min_smps: found.min_smps,
        });
        // Nothing to manage while the SM's own port has no link.
        if !found.linked {
            // The fabric is the SM's own node: that is what this discovery found.
            if let Ok((topo, _, _)) = self.disc.topology(false) {
                self.last_topology = Arc::new(topo);
            }
            // Not clean: the link may come back with the port in INIT and no trap says so
            // (no switch is known to poll), so every interval is a heavy sweep until it does.
            self.sched.mark_dirty();
            self.finish_heavy();
            return;
        }
        if self.start_vport_reads() {
            return;
        }
        self.after_discovery();
    }

    /// Builds the topology, assigns LIDs, plans P_KeyTables and returns the routing job.
    fn prepare_routing(&mut self) -> Result<RoutingJob, SmError> {
        let (topo, tnode, order) = self.disc.topology(true)?;
        let topo = Arc::new(topo);
        self.last_topology = Arc::clone(&topo);
        let (la, outcome) = self.lids.assign(
            &mut self.disc,
            &mut self.cfg.guid2lid,
            self.cfg.lmc,
            &order,
            &tnode,
        )?;
        self.events.push_back(Event::LidsAssigned {
            from_map: outcome.from_map,
            kept: outcome.kept,
            new: outcome.new,
            changed: outcome.changed,
            max_lid: outcome.max_lid,
        });
        let dropped =
            self.prog
                .plan_partitions(&mut self.disc, &topo, self.cfg.partition_options)?;
        self.troubles.set_dropped(dropped);
        self.plan_vports();
        let sm_port = PortRef::new(
            NodeId(tnode[self.disc.local() as usize]),
            self.disc.local_port(),
        );
        let input = RoutingInput::new(&topo, &la, Some(sm_port))?;
        self.mcast.keep_input(&input);
        Ok(RoutingJob {
            sweep: self.disc.sweep(),
            input,
            engines: self.cfg.engines.clone(),
            options: EngineOptions {
                updn_roots: self.cfg.updn_roots.clone(),
                accept_credit_loops: self.cfg.accept_credit_loops,
                max_layers: crate::vl::want::switch_link_vls(&self.disc, &self.cfg),
            },
            shards: self.cfg.routing_shards.max(1),
            prev: self.prog.lfts_shared(),
        })
    }

    /// Phase::Lids: assigns LIDs, plans partitions, builds and emits the routing job.
    pub(super) fn run_lids(&mut self) {
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

    /// Starts the heavy sweep asked for (a plain request when none was).
    pub(super) fn start_pending_heavy(&mut self) {
        let reason = self.sched.take_heavy();
        self.start_heavy(reason);
    }

    /// Ends a heavy sweep (complete or abandoned) and schedules the next sweep.
    pub(super) fn finish_heavy(&mut self) {
        self.phase = Phase::Idle;
        self.sched.heavy_ended();
        let c = self.io.counters().since(self.sched.started());
        self.events.push_back(Event::HeavySweepComplete {
            sweep: self.disc.sweep(),
            counters: c,
            min_smps: self.disc.min_smps() + self.prog.planned_sets(),
        });
        self.schedule_next();
        self.start_waiting_readback();
    }

    /// Nothing runs any more: the heavy sweep asked for meanwhile, else a light sweep one
    /// interval from now.
    pub(super) fn schedule_next(&mut self) {
        if self.sched.heavy_pending() {
            self.start_pending_heavy();
        } else {
            self.sched
                .set_next(Some(self.now + self.cfg.sweep_interval));
        }
    }

    /// Discovery (or a pre-routing step) finished: rotation, re-apply, then LIDs.
    pub(super) fn pre_routing(&mut self, from: Phase) {
        if from == Phase::Discovering && self.state == SmState::Discovering {
            // IBA 14.4.1: discovery done and no SM found that it should stand by for, a
            // DISCOVERING SM is MASTER (OpenSM's DISCOVERY_COMPLETED), before it writes: an
            // SM discovering meanwhile finds a MASTER and stands by instead of taking over.
            self.state = SmState::Master;
        }
        if from == Phase::Discovering && self.start_rekey() && !self.io.idle() {
            return;
        }
        if matches!(from, Phase::Discovering | Phase::Rekey) && self.start_reapply() {
            if !self.io.idle() {
                return;
            }
            self.finish_reapply();
        } else if from == Phase::Reapply {
            self.finish_reapply();
        }
        // LIDs, partitions and the routing input are prepared on the next timeout (due at
        // once), so a driver sees discovery end before that work starts.
        self.phase = Phase::Lids;
    }
}
