//! Test driver: one sweeper on one simulated fabric, virtual time only.
#![allow(dead_code)]

use fabric::{Guid, Lid, NodeId, PKey, PortState, Topology};
use fabric_sim::{AttachId, SimConfig, SimFabric};
use sm_core::{Event, Sweeper, SweeperConfig, VTime, route_inline};

pub struct Harness {
    pub fab: SimFabric,
    pub sm: AttachId,
    pub sw: Sweeper,
    pub now: VTime,
    /// Every event seen (RoutingNeeded is kept as its Display text only).
    pub log: Vec<String>,
    pub events: Vec<Event>,
}

pub fn topo(spec: &str) -> Topology {
    spec.parse::<fabric::GenSpec>().unwrap().generate().unwrap()
}

/// Port GUIDs of every cabled CA port, in node order.
pub fn ca_ports(t: &Topology) -> Vec<(NodeId, u8, Guid)> {
    let mut v = Vec::new();
    for (id, n) in t.cas() {
        for p in n.port_numbers() {
            if n.ports[p.0 as usize].remote.is_some() {
                v.push((id, p.0, n.ports[p.0 as usize].guid));
            }
        }
    }
    v
}

/// The Sets of one attribute in a fabric's Set log.
pub fn count_sets_of(log: &[fabric_sim::SetRecord], attr: u16) -> usize {
    log.iter().filter(|r| r.attr == attr).count()
}

impl Harness {
    pub fn new(t: &Topology, cfg: SweeperConfig, seed: u64) -> Harness {
        let fab = SimFabric::new(
            t,
            SimConfig {
                seed,
                ..SimConfig::default()
            },
        )
        .unwrap();
        Harness::with_fabric(fab, t, cfg)
    }

    pub fn with_fabric(mut fab: SimFabric, t: &Topology, cfg: SweeperConfig) -> Harness {
        let sm_port = ca_ports(t)[0].2;
        let sm = fab.attach(sm_port).unwrap();
        Harness {
            fab,
            sm,
            sw: Sweeper::new(cfg).unwrap(),
            now: 0,
            log: Vec::new(),
            events: Vec::new(),
        }
    }

    /// One turn of the driver loop; false when nothing is scheduled at all.
    pub fn step(&mut self) -> bool {
        while let Some(tx) = self.sw.poll_transmit() {
            if tx.dlid.is_permissive() {
                self.fab.send(self.now, self.sm, &tx.smp).unwrap();
            } else {
                self.fab
                    .send_lid(self.now, self.sm, tx.dlid, &tx.smp)
                    .unwrap();
            }
        }
        let next = match (self.fab.next_event_time(), self.sw.poll_timeout()) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => match a.or(b) {
                Some(t) => t,
                None => return false,
            },
        };
        self.now = self.now.max(next);
        self.fab.run_until(self.now);
        while let Some(r) = self.fab.poll_recv_full(self.sm) {
            self.sw.handle_mad(self.now, r.slid, r.smp);
        }
        if matches!(self.sw.poll_timeout(), Some(t) if t <= self.now) {
            self.sw.handle_timeout(self.now);
        }
        while let Some(ev) = self.sw.poll_event() {
            self.log.push(ev.to_string());
            match ev {
                Event::RoutingNeeded(job) => {
                    let r = route_inline(&job);
                    self.sw.handle_routing_result(self.now, r);
                }
                other => self.events.push(other),
            }
        }
        true
    }

    /// Lets the sweeper finish whatever it does: steps until it is idle with nothing
    /// scheduled in the fabric, or `limit` of virtual time passes.
    pub fn settle(&mut self, limit: VTime) {
        let end = self.now + limit;
        while self.now < end {
            if self.sw.phase() == sm_core::Phase::Idle && self.fab.next_event_time().is_none() {
                break;
            }
            if !self.step() {
                break;
            }
        }
    }

    /// Runs until an event matching `pred` is recorded (counting from now) or `limit` of
    /// virtual time passes; returns whether it was seen.
    pub fn run_until(&mut self, limit: VTime, pred: impl Fn(&Event) -> bool) -> bool {
        let start = self.events.len();
        let end = self.now + limit;
        while self.now <= end {
            if self.events[start..].iter().any(&pred) {
                return true;
            }
            if !self.step() {
                break;
            }
        }
        self.events[start..].iter().any(&pred)
    }

    pub fn subnet_up(&mut self) {
        let ok = self.run_until(60_000_000_000, |e| matches!(e, Event::SubnetUp { .. }));
        assert!(ok, "no SUBNET UP; log:\n{}", self.log.join("\n"));
    }

    pub fn heavy_done(&mut self) -> bool {
        self.run_until(60_000_000_000, |e| {
            matches!(e, Event::HeavySweepComplete { .. })
        })
    }

    pub fn lid_of(&self, node: NodeId, port: u8) -> Lid {
        self.fab.port_info(node, port).unwrap().lid
    }

    /// Asserts every cabled CA port is ACTIVE with a LID and every switch routes every CA LID.
    pub fn check_programmed(&self, t: &Topology) {
        let cas = ca_ports(t);
        for &(n, p, g) in &cas {
            assert_eq!(
                self.fab.port_state(n, p).unwrap(),
                PortState::Active,
                "CA port {g} not ACTIVE"
            );
            assert_ne!(self.lid_of(n, p).0, 0, "CA port {g} has no LID");
        }
        for (sid, _) in t.switches() {
            for &(n, p, g) in &cas {
                let lid = self.lid_of(n, p);
                let out = self.fab.lft_entry(sid, lid).unwrap();
                assert_ne!(out, 0xFF, "switch {sid:?} has no route to {g} (LID {lid})");
            }
        }
    }

    /// Checks delivery for every ordered CA pair in `pairs` (or all pairs): `allowed(a, b)`
    /// says whether a and b share a partition (key `pkey(a,b)`).
    pub fn check_delivery(
        &mut self,
        t: &Topology,
        stride: usize,
        allowed: impl Fn(Guid, Guid) -> Option<PKey>,
        probe_key: PKey,
    ) -> (usize, usize) {
        let cas = ca_ports(t);
        let (mut ok, mut blocked) = (0, 0);
        for (i, &(_, _, a)) in cas.iter().enumerate() {
            for (j, &(n, p, b)) in cas.iter().enumerate() {
                if i == j || !(i * cas.len() + j).is_multiple_of(stride) {
                    continue;
                }
                let lid = self.lid_of(n, p);
                match allowed(a, b) {
                    Some(k) => {
                        let d = self.fab.deliver(a, lid, k);
                        assert!(d.is_delivered(), "{a} -> {b} (LID {lid}) key {k}: {d:?}");
                        ok += 1;
                    }
                    None => {
                        let d = self.fab.deliver(a, lid, probe_key);
                        assert!(
                            !d.is_delivered(),
                            "{a} -> {b} must not deliver with {probe_key}"
                        );
                        blocked += 1;
                    }
                }
            }
        }
        (ok, blocked)
    }
}
