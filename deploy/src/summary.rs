//! The summary `sm-node` prints when it exits: what it did, with counts and times (pure:
//! milestones in, text out).

use crate::config::{FabricSpec, NodeConfig};
use sm_core::Counters;
use sm_core::milestone::{Milestone, MilestoneKind};
use std::fmt::Write;
use std::time::Duration;

/// Milestones gathered while running.
#[derive(Default)]
pub struct Summary {
    pub discovery: Option<(Duration, usize, usize, usize, u64)>,
    pub lids: Option<(Duration, usize, u16)>,
    pub routing_start: Option<Duration>,
    pub routing: Option<(Duration, &'static str, usize)>,
    pub programming: Option<(Duration, u64, u64, u64, u64)>,
    pub subnet_up: Option<(Duration, Counters)>,
    pub heavy_sweeps: u64,
    pub light_sweeps: u64,
    pub light_smps: u64,
    pub traps: u64,
    pub guid2lid_ports: Option<usize>,
    pub stopped: Option<String>,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

impl Summary {
    pub fn add(&mut self, m: &Milestone) {
        let t = m.elapsed;
        match &m.kind {
            MilestoneKind::DiscoveryDone {
                nodes,
                switches,
                links,
                smps,
            } if self.discovery.is_none() => {
                self.discovery = Some((t, *nodes, *switches, *links, *smps))
            }
            MilestoneKind::LidsAssigned { new, max_lid, .. } if self.lids.is_none() => {
                self.lids = Some((t, *new, *max_lid))
            }
            MilestoneKind::RoutingStarted if self.routing_start.is_none() => {
                self.routing_start = Some(t)
            }
            MilestoneKind::RoutingDone { engine, lft_blocks } if self.routing.is_none() => {
                self.routing = Some((t, engine, *lft_blocks))
            }
            MilestoneKind::ProgrammingDone {
                lft_blocks,
                pkey_blocks,
                port_sets,
                failed,
            } if self.programming.is_none() => {
                self.programming = Some((t, *lft_blocks, *pkey_blocks, *port_sets, *failed))
            }
            MilestoneKind::SubnetUp { counters } if self.subnet_up.is_none() => {
                self.subnet_up = Some((t, *counters))
            }
            MilestoneKind::HeavySweepComplete { .. } => self.heavy_sweeps += 1,
            MilestoneKind::LightSweepComplete { smps, .. } => {
                self.light_sweeps += 1;
                self.light_smps += smps;
            }
            MilestoneKind::Trap { .. } => self.traps += 1,
            MilestoneKind::Guid2LidSaved { ports } => self.guid2lid_ports = Some(*ports),
            MilestoneKind::Stopped { reason } => self.stopped = Some(reason.clone()),
            _ => {}
        }
    }

    pub fn render(&self, cfg: &NodeConfig) -> String {
        let mut s = String::new();
        let fabric = match &cfg.fabric {
            FabricSpec::Sim { topology, .. } => format!("in-process simulator, {topology}"),
            FabricSpec::Umad { device, .. } => format!("kernel umad {device}"),
            FabricSpec::Simd { socket, port } => {
                format!("fabric-simd {} at {port}", socket.display())
            }
        };
        let _ = writeln!(s, "sm-node summary ({fabric})");
        if let Some((t, n, sw, l, smps)) = self.discovery {
            let _ = writeln!(
                s,
                "  discovery     {:>9.1} ms  {n} nodes ({sw} switches), {l} links, {smps} SMPs",
                ms(t)
            );
        }
        if let Some((t, new, max)) = self.lids {
            let _ = writeln!(
                s,
                "  LIDs          {:>9.1} ms  {new} new, max LID {max}",
                ms(t)
            );
        }
        if let (Some(t0), Some((t, e, b))) = (self.routing_start, self.routing) {
            let _ = writeln!(
                s,
                "  routing       {:>9.1} ms  engine {e}, {:.1} ms on {} workers, {b} LFT blocks to write",
                ms(t),
                ms(t.saturating_sub(t0)),
                cfg.workers
            );
        }
        if let Some((t, l, p, ps, f)) = self.programming {
            let _ = writeln!(
                s,
                "  programming   {:>9.1} ms  {l} LFT blocks, {p} P_Key blocks, {ps} PortInfo Sets, {f} failed",
                ms(t)
            );
        }
        match self.subnet_up {
            Some((t, c)) => {
                let _ = writeln!(
                    s,
                    "  SUBNET UP     {:>9.1} ms  {} SMPs ({} Sets, {} directed, {} LID-routed, {} timeouts)",
                    ms(t),
                    c.total(),
                    c.sets(),
                    c.directed,
                    c.lid_routed,
                    c.timeouts
                );
                for (a, m, n) in c.nonzero() {
                    let _ = writeln!(s, "      {a:<22} {m:<11} {n}");
                }
            }
            None => {
                let _ = writeln!(s, "  SUBNET UP     not reached");
            }
        }
        let _ = writeln!(
            s,
            "  sweeps        {} heavy, {} light ({} SMPs), {} traps",
            self.heavy_sweeps, self.light_sweeps, self.light_smps, self.traps
        );
        match (&cfg.guid2lid, self.guid2lid_ports) {
            (Some(p), Some(n)) => {
                let _ = writeln!(s, "  guid2lid      {n} ports in {}", p.display());
            }
            (Some(p), None) => {
                let _ = writeln!(s, "  guid2lid      unchanged ({})", p.display());
            }
            (None, _) => {
                let _ = writeln!(s, "  guid2lid      not persisted (no --data-dir)");
            }
        }
        if let Some(r) = &self.stopped {
            let _ = writeln!(s, "  stopped       {r}");
        }
        s
    }
}
