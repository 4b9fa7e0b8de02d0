//! P_KeyTable read-backs (see `crate::readback`): requests, their Gets in the sweeper's
//! window, and the report once every Get was answered or given up.

use super::{Phase, Sweeper};
use crate::events::Event;
use crate::io::{Op, Req};
use crate::readback::{Get, PORT_INFO, ReadbackId};
use crate::{SmError, VTime};
use mad::{PortInfo, Smp, SmpAttribute};

impl Sweeper {
    /// Asks for every managed P_KeyTable to be read back from the fabric now (see the
    /// `readback` module documentation of what is read). Returns the id the
    /// [`crate::Event::PKeyReadback`] will carry. Fails on a standby sweeper; a request made
    /// before the first heavy sweep completed waits for it.
    pub fn request_pkey_readback(&mut self, now: VTime) -> Result<ReadbackId, SmError> {
        self.clock(now);
        if self.cfg.role == crate::Role::Standby {
            return Err(SmError::Readback("a standby SM sends no SMPs".into()));
        }
        let id = self.readback.request(self.now);
        self.start_waiting_readback();
        Ok(id)
    }

    /// Progress of the running read-back: (id, ports finished, ports to read).
    pub fn readback_progress(&self) -> Option<(ReadbackId, usize, usize)> {
        self.readback.progress()
    }

    /// Starts the next queued read-back when none runs and no heavy sweep is under way.
    pub(super) fn start_waiting_readback(&mut self) {
        let heavy = matches!(
            self.phase,
            Phase::Discovering
                | Phase::Lids
                | Phase::Routing
                | Phase::Programming(_)
                | Phase::Rekey
                | Phase::Reapply
                | Phase::AwaitIntent
        );
        if !self.sched.first_done() || heavy {
            return;
        }
        let counters = *self.io.counters();
        let known = self.lanes.known();
        let Some(gets) = self
            .readback
            .start_next(&self.disc, self.now, counters, known)
        else {
            return;
        };
        for g in gets {
            self.push_readback(g);
        }
        for (node, attr, m) in self.readback.vl_gets() {
            let (op, port, arg) = crate::vl::get_of(attr, m);
            self.push_get(op, node, port, arg);
        }
        self.finish_readback_if_done();
    }

    /// Queues a read-back Get: LID-routed when the sweeper uses LID routes (no wait for
    /// this sweep's tables: nothing is written).
    fn push_readback(&mut self, (node, port, arg): Get) {
        self.push_get(Op::ReadBack, node, port, arg);
    }

    fn push_get(&mut self, op: Op, node: u32, port: u8, arg: u16) {
        let lid_routed = self.cfg.lid_routed_programming
            && self.io.lid_routes()
            && self.disc.target_lid(node, port).0 != 0;
        let req = Req::new(op, node, port, arg, lid_routed);
        let g = self.disc.gate_of(&req);
        self.io.push(g, req);
    }

    /// A read-back Get answered.
    pub(super) fn on_readback_reply(&mut self, req: Req, smp: &Smp) {
        let Some(k) = self.readback.target_of(&req) else {
            return;
        };
        if req.arg == PORT_INFO {
            let info = PortInfo::decode(&smp.data);
            self.note_key(&req, &info);
            for g in self.readback.enforcement_read(k, &info) {
                self.push_readback(g);
            }
        } else {
            self.readback.block_read(k, req.arg, smp);
        }
        self.readback.request_done(k, false);
        self.finish_readback_if_done();
    }

    /// A VL table read-back Get answered (`smp`) or given up (None).
    pub(super) fn on_vl_readback(&mut self, req: Req, smp: Option<&Smp>) {
        let (attr, m) = crate::vl::key_of(&req);
        let data = smp.map(|s| s.data[..attr.data_len()].to_vec());
        self.readback.vl_read((req.node, attr, m), data);
        self.finish_readback_if_done();
    }

    /// A read-back Get given up after every retry (or that could not be built).
    pub(super) fn on_readback_failed(&mut self, req: Req) {
        if let Some(k) = self.readback.target_of(&req) {
            self.readback.request_done(k, true);
            self.finish_readback_if_done();
        }
    }

    fn finish_readback_if_done(&mut self) {
        let Some(report) = self
            .readback
            .finish_if_done(&self.disc, self.now, self.io.counters())
        else {
            return;
        };
        self.events.push_back(Event::PKeyReadback(Box::new(report)));
        self.start_waiting_readback();
    }
}
