//! Light sweeps: every interval, poll SwitchInfo of every switch. PortStateChange set, a
//! LinearFDBTop that is not what this SM wrote (the switch rebooted and lost its LFT), or a
//! switch that does not answer means a heavy sweep; otherwise nothing is written. CA port
//! changes show up as the PortStateChange of the switch at the other end of the link. The
//! other SMs the last heavy sweep found are asked for their SMInfo again: a MASTER that
//! outranks this SM means a heavy sweep too (which then stands by; see `foreign`).

use crate::events::{Event, SweepReason};
use crate::io::{Op, Req};
use crate::sweeper::{Phase, Sweeper};
use mad::SwitchInfo;

impl Sweeper {
    pub(crate) fn start_light(&mut self) {
        self.phase = Phase::Light;
        // Until the subnet has come up once, and after a sweep that could not finish cleanly,
        // every interval is a heavy sweep (the SM's own link may come up later, and no
        // trap would say so).
        self.light_changed = !self.subnet_up || self.dirty;
        self.light_start = *self.io.counters();
        for k in 0..self.disc.switches().len() {
            let node = self.disc.switches()[k].node;
            if self.disc.seen(node) {
                self.push(Op::LightSwitchInfo, node, 0, 0);
            }
        }
        self.light_query_sms();
        self.advance();
    }

    pub(crate) fn on_light_switch_info(&mut self, req: Req, info: SwitchInfo) {
        let sw = self.disc.node(req.node).sw;
        let s = self.disc.switch_mut(sw);
        if info.port_state_change || !s.lft_valid || info.linear_fdb_top != s.fdb_top {
            self.light_changed = true;
        }
    }

    pub(crate) fn finish_light(&mut self) {
        self.phase = Phase::Idle;
        let smps = self.io.counters().since(&self.light_start).total();
        self.events.push_back(Event::LightSweepComplete {
            changed: self.light_changed,
            smps,
        });
        if self.light_changed {
            self.heavy_pending.get_or_insert(SweepReason::Change);
        }
        self.schedule_next();
    }
}
