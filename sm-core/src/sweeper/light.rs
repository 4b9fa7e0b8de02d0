//! The light sweep's course (see `crate::light`).

use super::{Phase, Sweeper};
use crate::events::{Event, SweepReason};
use crate::io::{Op, Req};
use mad::SwitchInfo;

impl Sweeper {
    pub(super) fn start_light(&mut self) {
        self.phase = Phase::Light;
        // Until the subnet has come up once, and after a sweep that could not finish cleanly,
        // every interval is a heavy sweep (the SM's own link may come up later, and no
        // trap would say so).
        let changed = !self.subnet_up || self.sched.is_dirty();
        self.light.start(changed, *self.io.counters());
        for k in 0..self.disc.switches().len() {
            let node = self.disc.switches()[k].node;
            if self.disc.seen(node) {
                self.push(Op::LightSwitchInfo, node, 0, 0);
            }
        }
        self.light_query_sms();
        self.advance();
    }

    pub(super) fn on_light_switch_info(&mut self, req: Req, info: SwitchInfo) {
        let sw = self.disc.node(req.node).sw;
        self.light.on_switch_info(self.disc.switch(sw), &info);
    }

    pub(super) fn finish_light(&mut self) {
        self.phase = Phase::Idle;
        let (changed, smps) = self.light.finish(self.io.counters());
        self.events
            .push_back(Event::LightSweepComplete { changed, smps });
        if changed {
            self.sched.request_heavy(SweepReason::Change);
        }
        self.schedule_next();
    }
}
