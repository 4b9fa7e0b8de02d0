//! [`RoleMetrics`]: what a master or standby SM actor reports to the process's registry.

use super::m;
use sm_core::milestone::{Milestone, MilestoneKind};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// What one master or standby SM actor reports. Created when the actor starts; the
/// process's registry outlives it.
pub struct RoleMetrics {
    token: u64,
    master: bool,
    published: sm_core::Counters,
    sweep_at: Option<Duration>,
    route_at: Option<Duration>,
    light_at: Option<Instant>,
}

impl RoleMetrics {
    /// A master's (`master`) or standby's metrics; its SMInfo state is the one shown from
    /// now on.
    pub fn start(master: bool) -> RoleMetrics {
        let mm = m();
        let token = mm.roles.fetch_add(1, Ordering::Relaxed) + 1;
        mm.sminfo_owner.store(token, Ordering::Relaxed);
        RoleMetrics {
            token,
            master,
            published: sm_core::Counters::default(),
            sweep_at: None,
            route_at: None,
            light_at: None,
        }
    }

    /// One milestone of this actor (its elapsed times are on the actor's clock).
    pub fn milestone(&mut self, ms: &Milestone) {
        let sm = &m().sm;
        let since = |t: Duration| ms.elapsed.saturating_sub(t).as_secs_f64();
        match &ms.kind {
            MilestoneKind::HeavySweepStarted { .. } => self.sweep_at = Some(ms.elapsed),
            MilestoneKind::HeavySweepComplete { .. } => {
                if let Some(t) = self.sweep_at.take() {
                    sm.heavy_sweep.observe(since(t));
                }
            }
            MilestoneKind::RoutingStarted => self.route_at = Some(ms.elapsed),
            MilestoneKind::RoutingDone { .. } => {
                if let Some(t) = self.route_at.take() {
                    sm.routing.observe(since(t));
                }
            }
            MilestoneKind::RoutingFailed(_) => self.route_at = None,
            MilestoneKind::DiscoveryDone {
                nodes,
                switches,
                links,
                ..
            } => {
                let i = |v: usize| i64::try_from(v).unwrap_or(i64::MAX);
                sm.nodes.set(i(*nodes));
                sm.switches.set(i(*switches));
                sm.links.set(i(*links));
            }
            MilestoneKind::SubnetUp { .. } => {
                sm.subnet_up.set(ms.elapsed.as_secs_f64());
                if self.master
                    && let Some(t) = m().leader.lock().ok().and_then(|mut w| w.lost_at.take())
                {
                    sm.failover.set(t.elapsed().as_secs_f64());
                }
            }
            MilestoneKind::LightSweepComplete { .. } => {
                if let Some(t) = self.light_at.take() {
                    sm.light_sweep.observe(t.elapsed().as_secs_f64());
                }
            }
            MilestoneKind::Rogue { .. } => {
                sm.rogue_alarms.inc();
            }
            _ => {}
        }
    }

    /// The sweeper's phase after each turn of the actor: notes when a light sweep starts.
    pub fn phase(&mut self, phase: sm_core::Phase) {
        if matches!(phase, sm_core::Phase::Light) && self.light_at.is_none() {
            self.light_at = Some(Instant::now());
        }
    }

    /// Adds what the sweeper counted since the last call, and shows its SMInfo state.
    pub fn publish(&mut self, c: &sm_core::Counters, state: mad::SmState) {
        let sm = &m().sm;
        for (i, (an, _)) in sm_core::ATTRS.iter().enumerate() {
            for (j, (mn, _)) in sm_core::METHODS.iter().enumerate() {
                let d = c.sent[i][j].saturating_sub(self.published.sent[i][j]);
                if d != 0 {
                    sm.smps
                        .get_or_create(&[("attribute", an), ("method", mn)])
                        .inc_by(d);
                }
            }
        }
        sm.smp_timeouts
            .inc_by(c.timeouts.saturating_sub(self.published.timeouts));
        sm.traps
            .inc_by(c.traps.saturating_sub(self.published.traps));
        self.published = *c;
        if m().sminfo_owner.load(Ordering::Relaxed) == self.token {
            sm.sminfo_state.set(i64::from(state.to_wire()));
        }
    }

    /// The linked ports not ACTIVE the master counted after its heavy sweep.
    pub fn ports_down(&self, n: usize) {
        m().sm.ports_down.set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    /// The actor stopped: its last counts are added; no SM is shown attached unless another
    /// actor started since; a master's ports-down figure is no longer this replica's.
    pub fn stopped(&mut self, c: &sm_core::Counters, state: mad::SmState) {
        self.publish(c, state);
        let mm = m();
        if mm
            .sminfo_owner
            .compare_exchange(self.token, 0, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
        {
            mm.sm.sminfo_state.set(0);
        }
        if self.master {
            mm.sm.ports_down.set(0);
        }
    }
}
