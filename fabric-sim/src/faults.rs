//! Faults, applied now ([`SimFabric::inject`]) or at a virtual time
//! ([`SimFabric::schedule`]); random ones draw from the fabric's seeded generator.

use crate::VTime;
use crate::error::SimError;
use crate::sim::{EvKind, Packet, SimFabric};
use crate::state::NONE;
use fabric::{Guid, Lid, NodeId, PhysState, PortState};
use mad::Smp;
use mad::perf::Counter;

/// A fault or environment change.
#[derive(Clone, Debug, PartialEq)]
pub enum Fault {
    /// Unplug the cable on a port (both ends go Down; switches raise trap 128).
    LinkDown {
        /// Node.
        node: NodeId,
        /// Port number.
        port: u8,
    },
    /// Plug it back: the link trains and both ends come up in INIT.
    LinkUp {
        /// Node.
        node: NodeId,
        /// Port number.
        port: u8,
    },
    /// The node disappears: all its links go Down, it answers nothing.
    RemoveNode {
        /// Node.
        node: NodeId,
    },
    /// The node comes back powered up fresh (no LIDs, default tables); its links train
    /// after `SimConfig::reboot_ns`.
    ReturnNode {
        /// Node.
        node: NodeId,
    },
    /// The switch reboots: loses its LFT, LID, P_Key tables and M_Key; all its links go
    /// Down and train again after `SimConfig::reboot_ns`.
    RebootSwitch {
        /// Node.
        node: NodeId,
    },
    /// Every link transmission is lost with this probability.
    Loss {
        /// 0.0..=1.0.
        prob: f64,
    },
    /// Every hop takes this much extra virtual time.
    Delay {
        /// Nanoseconds.
        ns: u64,
    },
    /// Every link transmission is duplicated with this probability.
    Duplicate {
        /// 0.0..=1.0.
        prob: f64,
    },
    /// A rogue sender emits an SMP from any port (no SM attached needed). `dlid`
    /// 0xFFFF sends a directed-route SMP, otherwise LID-routed to `dlid`. Answers go to
    /// an SM attached at that port if any, otherwise they are dropped and counted.
    Rogue {
        /// Port GUID (CA port, or a switch's GUID for its port 0).
        port_guid: Guid,
        /// Destination LID or 0xFFFF.
        dlid: Lid,
        /// The SMP.
        smp: Box<Smp>,
    },
    /// A CA port's CapabilityMask changes (trap 144 to its MasterSMLID).
    CapabilityMask {
        /// Port GUID.
        port_guid: Guid,
        /// New mask.
        mask: u32,
    },
    /// Adds `n` to a performance counter of a port ([`SimFabric::inject_port_errors`]).
    PortErrors {
        /// Node.
        node: NodeId,
        /// Port number.
        port: u8,
        /// The counter.
        counter: Counter,
        /// How much to add (the counter stops at its all-ones value).
        n: u64,
    },
    /// The receive error rate of a port ([`SimFabric::set_port_error_rate`]).
    ErrorRate {
        /// Node.
        node: NodeId,
        /// Port number; None: every port of the node.
        port: Option<u8>,
        /// 0.0..=1.0.
        prob: f64,
    },
}

impl SimFabric {
    /// Runs the fabric up to `now`, then applies `fault`.
    pub fn inject(&mut self, now: VTime, fault: Fault) -> Result<(), SimError> {
        self.run_until(now);
        let t = self.now;
        self.apply_fault(t, fault)
    }

    /// Schedules `fault` at virtual time `at` (checked now, applied then).
    pub fn schedule(&mut self, at: VTime, fault: Fault) -> Result<(), SimError> {
        self.validate(&fault)?;
        self.scheduled.push(Some(fault));
        let idx = (self.scheduled.len() - 1) as u32;
        self.push(at.max(self.now), EvKind::Fault { idx });
        Ok(())
    }

    fn validate(&self, f: &Fault) -> Result<(), SimError> {
        match f {
            Fault::LinkDown { node, port } | Fault::LinkUp { node, port } => {
                self.port_index(*node, *port).map(|_| ())
            }
            Fault::RemoveNode { node } | Fault::ReturnNode { node } => self
                .st
                .nodes
                .get(node.index())
                .map(|_| ())
                .ok_or(SimError::NoSuchNode(*node)),
            Fault::RebootSwitch { node } => match self.st.nodes.get(node.index()) {
                None => Err(SimError::NoSuchNode(*node)),
                Some(n) if n.sw == NONE => Err(SimError::NotASwitch(*node)),
                Some(_) => Ok(()),
            },
            Fault::Loss { prob } | Fault::Duplicate { prob } => {
                if (0.0..=1.0).contains(prob) {
                    Ok(())
                } else {
                    Err(SimError::BadProbability(prob.to_string()))
                }
            }
            Fault::Delay { .. } => Ok(()),
            Fault::PortErrors {
                node,
                port,
                counter,
                ..
            } => {
                self.port_index(*node, *port)?;
                if *counter == Counter::Qp1Dropped {
                    return Err(SimError::NotModelled(counter.name()));
                }
                Ok(())
            }
            Fault::ErrorRate { node, port, prob } => {
                match port {
                    Some(p) => self.port_index(*node, *p).map(|_| ())?,
                    None if node.index() >= self.st.nodes.len() => {
                        return Err(SimError::NoSuchNode(*node));
                    }
                    None => {}
                }
                if (0.0..=1.0).contains(prob) {
                    Ok(())
                } else {
                    Err(SimError::BadProbability(prob.to_string()))
                }
            }
            Fault::Rogue { port_guid, .. } | Fault::CapabilityMask { port_guid, .. } => {
                if self.st.by_port_guid.contains_key(port_guid) {
                    Ok(())
                } else {
                    Err(SimError::NoSuchPort(*port_guid))
                }
            }
        }
    }

    pub(crate) fn apply_fault(&mut self, t: VTime, fault: Fault) -> Result<(), SimError> {
        self.validate(&fault)?;
        match fault {
            Fault::LinkDown { node, port } => {
                let i = self.port_index(node, port)?;
                self.st.ports[i as usize].fault_down = true;
                self.link_down(i, t);
            }
            Fault::LinkUp { node, port } => {
                let i = self.port_index(node, port)?;
                self.st.ports[i as usize].fault_down = false;
                let r = self.st.ports[i as usize].cable;
                if r != NONE {
                    self.st.ports[r as usize].fault_down = false;
                }
                self.push(t + self.cfg.retrain_ns, EvKind::LinkTrain { port: i });
            }
            Fault::RemoveNode { node } => {
                let (base, np) = self.node_ports(node);
                for i in base + 1..=base + np {
                    self.link_down(i, t);
                }
                self.st.nodes[node.index()].present = false;
            }
            Fault::ReturnNode { node } => {
                if !self.st.nodes[node.index()].present {
                    self.st.nodes[node.index()].present = true;
                    self.power_cycle(node);
                    self.retrain_all(node, t + self.cfg.reboot_ns);
                }
            }
            Fault::RebootSwitch { node } => {
                let (base, np) = self.node_ports(node);
                for i in base + 1..=base + np {
                    self.link_down(i, t);
                }
                self.power_cycle(node);
                let p0 = &mut self.st.ports[base as usize];
                p0.state = PortState::Active;
                p0.phys = PhysState::LinkUp;
                self.retrain_all(node, t + self.cfg.reboot_ns);
            }
            Fault::Loss { prob } => self.loss_prob = prob,
            Fault::Delay { ns } => self.extra_delay_ns = ns,
            Fault::Duplicate { prob } => self.dup_prob = prob,
            Fault::Rogue {
                port_guid,
                dlid,
                smp,
            } => {
                let port = self.st.by_port_guid[&port_guid];
                let origin = self.acct.origin_of(port_guid);
                self.acct.counters.sent += 1;
                let slot = self.alloc(Packet {
                    slid: self.st.source_lid(port),
                    dlid,
                    lid_leg: !dlid.is_permissive(),
                    origin,
                    hops: 0,
                    smp: *smp,
                });
                self.originate(port, slot, t);
            }
            Fault::CapabilityMask { port_guid, mask } => {
                let port = self.st.by_port_guid[&port_guid];
                self.change_capability(port, mask, t);
            }
            Fault::PortErrors {
                node,
                port,
                counter,
                n,
            } => self.inject_port_errors(node, port, counter, n)?,
            Fault::ErrorRate { node, port, prob } => self.set_port_error_rate(node, port, prob)?,
        }
        Ok(())
    }

    /// A node powers up again: its SMA state, VL tables and performance counters reset.
    fn power_cycle(&mut self, node: NodeId) {
        self.st.power_cycle(node.0);
        self.reset_vl_tables(node.0);
        let (base, np) = self.node_ports(node);
        self.perf_reset(base..=base + np);
    }

    /// Schedules `count` seeded random link flaps: each picks a cabled link uniformly,
    /// takes it down at a time uniform in `from..to` and plugs it back `down_for` later.
    /// Returns the flaps as (time down, node, port). The same seed gives the same flaps.
    pub fn schedule_random_flaps(
        &mut self,
        seed: u64,
        count: usize,
        from: VTime,
        to: VTime,
        down_for: VTime,
    ) -> Vec<(VTime, NodeId, u8)> {
        let cabled: Vec<u32> = (0..self.st.ports.len() as u32)
            .filter(|&i| {
                let p = &self.st.ports[i as usize];
                p.cable != NONE && i < p.cable
            })
            .collect();
        let mut out = Vec::with_capacity(count);
        if cabled.is_empty() || to <= from {
            return out;
        }
        let mut rng = fabric::rng::SplitMix64::new(seed);
        for _ in 0..count {
            let i = cabled[rng.below(cabled.len() as u64) as usize];
            let at = from + rng.below(to - from);
            let p = &self.st.ports[i as usize];
            let (node, port) = (NodeId(p.node), p.num);
            // Both validated: the port exists.
            let _ = self.schedule(at, Fault::LinkDown { node, port });
            let _ = self.schedule(at + down_for, Fault::LinkUp { node, port });
            out.push((at, node, port));
        }
        out
    }

    fn node_ports(&self, node: NodeId) -> (u32, u32) {
        let n = &self.st.nodes[node.index()];
        (n.port_base, u32::from(n.num_ports))
    }

    fn retrain_all(&mut self, node: NodeId, at: VTime) {
        let (base, np) = self.node_ports(node);
        for i in base + 1..=base + np {
            if self.st.ports[i as usize].cable != NONE {
                self.push(at, EvKind::LinkTrain { port: i });
            }
        }
    }
}
