//! The heavy sweep's programming: the routing result taken, the stages run one after the
//! other, the Sets' data written and their answers recorded (see `crate::program`).

use super::{Phase, Sweeper};
use crate::events::{Event, RoutingOutcome, SweepReason};
use crate::io::{Op, Req};
use crate::keys::rekey_info;
use crate::program::{Set, Wanted};
use mad::{PortInfo, SmState, Smp, SmpAttribute};
use std::collections::HashMap;

impl Sweeper {
    /// What PortInfo Sets write besides what the ports hold.
    pub(super) fn wanted(&self) -> Wanted<'_> {
        Wanted {
            cfg: &self.cfg,
            sm_lid: self.lids.sm_lid(),
            qos_policy: self.lanes.policy(),
        }
    }

    /// Ungated mode, routing job just handed out: sends now what does not depend on the
    /// routes, so the fabric is busy while the daemon routes — stage 1 (PortInfo fields of
    /// ports not in INIT) and the ARMED Sets of ports still in INIT (links that carry no
    /// traffic: a port transmits data only once ACTIVE, and ACTIVE still comes after the
    /// tables of stage 2). Ports that are already up keep stage 3's order (their partition
    /// enforcement bits change only after their P_KeyTables). The stages planned later find
    /// these ports done (the Set responses updated what is known of them).
    /// Not in a cluster's sweeper (gated, fenced or under a lease): there every Set waits
    /// for its intent and its lease, in stage order.
    pub(super) fn plan_during_routing(&mut self) {
        if self.cfg.gate_programming || self.fencing.is_fenced() || self.fencing.has_lease() {
            return;
        }
        self.plan_stage(1);
        let sets = self.prog.arm_init_sets(&self.disc);
        self.queue_sets(sets);
    }

    /// Accepts the routing result: diffs it against what is programmed and starts stage 1.
    /// While Sets sent during routing are still in flight, the result waits for them
    /// (`advance` brings it back once the window is idle).
    pub(super) fn start_programming(&mut self, mut r: RoutingOutcome) {
        if !self.io.idle() {
            self.prog.hold_result(r);
            return;
        }
        crate::vports::route(&mut r.lfts, self.vport_routes());
        let done = self.prog.take_routing(&mut self.disc, r);
        self.events.push_back(done);
        self.prog
            .plan_pkeys(&mut self.disc, self.cfg.assume_default_pkeys);
        self.mcast.plan(&self.disc);
        self.plan_vl_tables();
        if self.start_lft_check() {
            return;
        }
        if self.gate() {
            return;
        }
        self.phase = Phase::Programming(0);
        self.next_stage(0);
    }

    /// Plans stages after `done` until one has work; after stage 5 the sweep completes.
    pub(super) fn next_stage(&mut self, done: u8) {
        if done == 2 {
            self.prog.after_tables(&mut self.disc);
        }
        for stage in done + 1..=5 {
            self.phase = Phase::Programming(stage);
            self.plan_stage(stage);
            if !self.io.idle() {
                return;
            }
            if stage == 2 {
                self.prog.after_tables(&mut self.disc);
            }
        }
        self.finish_programming();
    }

    /// Queues the Sets of a stage (stage 2 with the multicast blocks last).
    fn plan_stage(&mut self, stage: u8) {
        let mft_tops = if stage == 2 {
            self.mft_tops()
        } else {
            HashMap::new()
        };
        let routing = self.phase == Phase::Routing;
        let want = Wanted {
            cfg: &self.cfg,
            sm_lid: self.lids.sm_lid(),
            qos_policy: self.lanes.policy(),
        };
        let mut sets = self
            .prog
            .plan_stage(&mut self.disc, &want, stage, routing, &mft_tops);
        if self.sched.heavy_pending() {
            // The fabric changed since discovery (a trap): a switch may have rebooted since
            // its SwitchInfo was read, and writing its LinearFDBTop back would hide that it
            // lost its tables. Read it again first.
            for s in &mut sets {
                if s.0 == Op::SwitchInfoSet {
                    s.0 = Op::SwitchInfoRecheck;
                }
            }
        }
        self.queue_sets(sets);
        if stage == 2 {
            self.queue_mfts();
            self.queue_vl_tables();
            self.queue_vport_pkeys();
        }
        if stage == 4 || stage == 5 {
            self.queue_vport_bring_up(stage == 4);
        }
    }

    /// Queues planned Sets, in order.
    pub(super) fn queue_sets(&mut self, sets: Vec<Set>) {
        for (op, node, port, arg) in sets {
            self.push(op, node, port, arg);
        }
    }

    fn finish_programming(&mut self) {
        let [lft, pkey, port_sets, switch_sets] = self.prog.stage_counts();
        self.events.push_back(Event::ProgrammingDone {
            lft_blocks: lft,
            pkey_blocks: pkey,
            port_sets,
            switch_sets,
            failed: self.prog.failed_sets(),
        });
        self.report_vports();
        self.intent_finished();
        let inactive = self.disc.linked_not_active();
        let sm = self.disc.sm_port();
        let clean = self.prog.failed_sets() == 0 && inactive == 0 && !self.sched.is_dirty();
        let lid_ok = clean && sm.lid.0 != 0 && sm.info.lid == sm.lid;
        self.io.set_lid_ok(lid_ok);
        self.io.set_all_active(clean);
        if !self.subnet_up && clean {
            self.subnet_up = true;
            self.state = SmState::Master;
            self.events.push_back(Event::SubnetUp {
                at: self.now,
                counters: self.io.counters().since(self.sched.started()),
            });
        }
        if !clean {
            // Something did not take or was not reached: look again at the next interval.
            self.sched.mark_dirty();
        }
        // A switch whose PortStateChange was cleared after this sweep read one of its
        // ports losing its link: the link may have come back in between, with the bit
        // still set (so no new trap 128), and the clear lost that. Its ports are read again
        // by a targeted sweep now (chaos seed 2551: a rebooted switch back within the
        // sweep stayed INIT).
        for node in self.prog.take_psc_cleared() {
            if self.disc.lost_a_link(node) {
                let lid = self.disc.port_of(node, 0).info.lid;
                self.sched.request_for_links(SweepReason::Recheck, lid);
            }
        }
        if self.disc.sweep() == 1 && self.cfg.known_lfts.is_some() {
            // A takeover's first sweep: until it wrote MasterSMLID, the ports sent their
            // traps to the previous master, and a link that changed after this sweep's
            // discovery may have had its PortStateChange cleared by the SwitchInfo Set
            // above: look again once, at the next interval (Gets only on a quiet fabric).
            self.sched.mark_dirty();
        }
        self.finish_heavy();
    }

    /// Writes the data of a Set request; None when it no longer makes sense.
    pub(super) fn fill_set(&self, req: &Req, data: &mut [u8; 64]) -> Option<()> {
        match req.op {
            Op::RekeySet => {
                rekey_info(&self.disc, &self.cfg, req.node, req.port).encode(data);
                Some(())
            }
            Op::MftSet => self.mcast.fill(req, data),
            Op::SlToVlSet | Op::VlArbSet => self.lanes.fill(req, data),
            Op::VPortInfoSet | Op::VPortPKeySet | Op::GuidInfoSet | Op::VirtInfoSet => {
                self.fill_vport_set(req, data)
            }
            _ => self.prog.fill_set(&self.disc, &self.wanted(), req, data),
        }
    }

    /// A Set was answered: what the target holds now.
    pub(super) fn on_set_done(&mut self, req: Req, smp: &Smp) {
        match req.op {
            Op::PortInfoSet | Op::RekeySet => {
                let info = PortInfo::decode(&smp.data);
                self.note_key(&req, &info);
                let not_held = self.prog.on_port_info_set(
                    &mut self.disc,
                    &req,
                    info,
                    self.cfg.m_key_lease_period,
                );
                self.events.extend(not_held);
            }
            Op::SwitchInfoSet => self.prog.on_switch_info_set(&mut self.disc, &req, smp),
            Op::MftSet => self.mft_done(&req),
            Op::SlToVlSet | Op::VlArbSet => {
                let g = self.disc.node(req.node).guid;
                self.lanes.done(g, &req);
            }
            _ => {}
        }
    }

    /// The SwitchInfo read again before its Set: a LinearFDBTop other than the one
    /// discovery read means the switch rebooted since (its LFT, MFT and P_Key tables are
    /// back to the default): it is written again by the next heavy sweep, which this
    /// sweep's end asks for. The Set follows, on what the switch holds now.
    pub(super) fn on_switch_info_recheck(&mut self, req: Req, info: mad::SwitchInfo) {
        let n = self.disc.node(req.node);
        let (sw, first, nports) = (n.sw, n.port_index(0), n.nports);
        let s = self.disc.switch_mut(sw);
        if info.linear_fdb_top != s.info.linear_fdb_top {
            s.lft_valid = false;
            s.lft_failed = true;
            s.info = info;
            for p in 0..=usize::from(nports) {
                self.disc.port_mut(first + p).pkey_known_valid = false;
            }
            self.sched.mark_dirty();
        } else {
            s.info = info;
        }
        self.push(Op::SwitchInfoSet, req.node, 0, req.arg);
    }

    /// A Set was given up.
    pub(super) fn on_set_failed(&mut self, req: Req) {
        self.prog.on_set_failed(&mut self.disc, &req);
        if req.op == Op::MftSet {
            self.mft_failed(&req);
        }
        if matches!(req.op, Op::SlToVlSet | Op::VlArbSet) {
            let g = self.disc.node(req.node).guid;
            self.lanes.failed(g, &req);
        }
    }
}
