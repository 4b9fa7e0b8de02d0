//! The performance manager on the master (issue 21): sm-core's [`PerfManager`] driven next
//! to the sweeper — its GMPs out through the transport (QP1), PerfMgt answers in from the
//! GMP stream before the SA sees them, its timer folded into the master's; targets handed
//! over after every heavy sweep; alarms and link health logged and reported as milestones;
//! live counter queries answered to whoever asked (`smctl counters`).

use super::MasterActor;
use crate::milestone::MilestoneKind;
use actix::prelude::*;
use sm_core::VTime;
use sm_core::perf::{LinkHealth, PerfEvent, PerfManager, PerfSweepStats, QueryAnswer};
use std::collections::HashMap;
use tokio::sync::oneshot;

/// Callers waiting for a live counter query, by query id.
pub(super) type Waiting = HashMap<u64, oneshot::Sender<Result<QueryAnswer, String>>>;

impl MasterActor {
    /// The perf manager runs: it exists, the transport carries GMPs, the subnet is up under
    /// this master (not while it stands by for another SM), and the sweeper is idle — a
    /// sweep, programming or read-back under way has the transport to itself (its answers
    /// still reach the perf manager; what timed out meanwhile is resent after).
    fn perf_active(&self) -> bool {
        self.perf.is_some()
            && self.gmps
            && self.sweeper.is_subnet_up()
            && self.sweeper.phase() == sm_core::Phase::Idle
    }

    /// When the perf manager wants time next (None while it does not run).
    pub(super) fn perf_deadline(&self) -> Option<VTime> {
        if !self.perf_active() {
            return None;
        }
        self.perf.as_ref().and_then(|p| p.poll_timeout())
    }

    /// Hands the ports of the last heavy sweep to the perf manager.
    pub(super) fn perf_targets(&mut self) {
        let now = self.clock.now();
        let up = self.sweeper.is_subnet_up();
        if let Some(p) = self.perf.as_mut() {
            p.set_fabric(now, self.sweeper.perf_targets(), up);
        }
    }

    /// Runs the perf manager: due timeouts, GMPs out, events. An error is the transport's.
    pub(super) fn perf_pump(&mut self) -> Result<(), String> {
        if !self.perf_active() {
            return Ok(());
        }
        let now = self.clock.now();
        let (Some(p), Some(t)) = (self.perf.as_mut(), self.transport.as_mut()) else {
            return Ok(());
        };
        if p.poll_timeout().is_some_and(|d| d <= now) {
            p.handle_timeout(now);
        }
        while let Some(tx) = p.poll_transmit(now) {
            t.send_gmp(tx.dlid, 1, &tx.mad, tx.mad.len())
                .map_err(|e| e.to_string())?;
        }
        let mut events = Vec::new();
        while let Some(e) = p.poll_event() {
            events.push(e);
        }
        for e in events {
            self.perf_event(e);
        }
        Ok(())
    }

    /// A GMP for the perf manager? (PerfMgt answers to its queries.)
    pub(super) fn perf_gmp(&mut self, mad: &[u8; 256]) -> bool {
        let now = self.clock.now();
        self.perf.as_mut().is_some_and(|p| p.handle_gmp(now, mad))
    }

    fn perf_event(&mut self, e: PerfEvent) {
        match e {
            PerfEvent::SweepStarted { number, ports } => {
                tracing::debug!("perf sweep {number} started: {ports} ports");
            }
            PerfEvent::SweepDone(s) => {
                tracing::info!("{}", sweep_text(&s));
                if let Some(p) = &self.perf {
                    crate::metrics::publish_perf(p);
                }
                self.notify(MilestoneKind::PerfSweepDone {
                    number: s.number,
                    ports: s.ports,
                    failed: s.failed,
                    mads: s.mads,
                    ms: s.duration / 1_000_000,
                });
            }
            PerfEvent::Alarm(a) => {
                crate::metrics::add_port_alarms(a.counter, 1);
                let text = a.to_string();
                tracing::warn!("E_NODE_PERF_ALARM: {text}");
                self.notify(MilestoneKind::PerfAlarm { text });
            }
            PerfEvent::Health(l) => {
                let text = link_text(&l);
                match l.health {
                    sm_core::perf::Health::Ok => tracing::info!("{text}"),
                    _ => tracing::warn!("E_NODE_LINK_HEALTH: {text}"),
                }
                self.notify(MilestoneKind::LinkHealth {
                    health: l.health.name(),
                    text,
                });
            }
            PerfEvent::QueryDone { id, result } => {
                if let Some(tx) = self.perf_waiting.remove(&id) {
                    let _ = tx.send(result);
                }
            }
        }
    }
}

/// The log line of a finished counter sweep.
fn sweep_text(s: &PerfSweepStats) -> String {
    format!(
        "perf sweep {}: {} ports read, {} given up, {} MADs, {} clears, in {:.1} ms",
        s.number,
        s.ports,
        s.failed,
        s.mads,
        s.clears,
        s.duration as f64 / 1e6
    )
}

/// A link's health in one line.
pub fn link_text(l: &LinkHealth) -> String {
    let mut t = format!(
        "link {} port {} ({}) <-> {} port {} ({}): {}",
        l.a.node_guid,
        l.a.port,
        l.a.desc,
        l.b.node_guid,
        l.b.port,
        l.b.desc,
        l.health.name()
    );
    if !l.why.is_empty() {
        t.push_str(" (");
        t.push_str(&l.why);
        t.push(')');
    }
    t
}

/// Reads the counters of `port` at `lid` now (PortCounters, or PortCountersExtended with
/// `extended`).
#[derive(Message)]
#[rtype(result = "Result<QueryAnswer, String>")]
pub struct QueryCounters {
    /// LID of the node (a switch: its port-0 LID).
    pub lid: fabric::Lid,
    /// Port (PortSelect).
    pub port: u8,
    /// PortCountersExtended instead of PortCounters.
    pub extended: bool,
}

impl Handler<QueryCounters> for MasterActor {
    type Result = ResponseFuture<Result<QueryAnswer, String>>;
    fn handle(&mut self, m: QueryCounters, ctx: &mut Context<Self>) -> Self::Result {
        let refused = |why: String| -> Self::Result { Box::pin(async move { Err(why) }) };
        if !self.gmps {
            return refused("E_NODE_PERF: this master's transport carries no GMPs".into());
        }
        if !self.sweeper.is_subnet_up() {
            return refused("E_NODE_PERF: the subnet is not up under this master".into());
        }
        let Some(p) = self.perf.as_mut() else {
            return refused("E_NODE_PERF: no performance manager on this replica".into());
        };
        let id = match p.query(m.lid, m.port, m.extended) {
            Ok(id) => id,
            Err(e) => return refused(e.to_string()),
        };
        let (tx, rx) = oneshot::channel();
        self.perf_waiting.insert(id, tx);
        self.pump(ctx);
        Box::pin(async move {
            rx.await
                .map_err(|_| "E_NODE_PERF: the master stopped before the query ended".to_string())?
        })
    }
}

/// Runs `f` on this master's perf manager (None without one) at the master's time: the
/// admin API's reads (`smctl errors`, link health, a port's record) take what they need
/// without copying every port's window.
pub struct WithPerf<R: Send + 'static>(pub PerfReader<R>);

/// What [`WithPerf`] runs.
pub type PerfReader<R> = Box<dyn FnOnce(Option<&PerfManager>, VTime) -> R + Send>;

impl<R: Send + 'static> Message for WithPerf<R> {
    type Result = R;
}

impl<R: Send + 'static> Handler<WithPerf<R>> for MasterActor {
    type Result = MessageResult<WithPerf<R>>;
    fn handle(&mut self, m: WithPerf<R>, _: &mut Context<Self>) -> Self::Result {
        let now = self.clock.now();
        MessageResult((m.0)(self.perf.as_ref(), now))
    }
}
