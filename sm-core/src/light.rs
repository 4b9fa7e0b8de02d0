//! Light sweeps: every interval, poll SwitchInfo of every switch. PortStateChange set, a
//! LinearFDBTop that is not what this SM wrote (the switch rebooted and lost its LFT), or a
//! switch that does not answer means a heavy sweep; otherwise nothing is written.

use crate::events::{Event, SweepReason};
use crate::io::{Op, Req};
use crate::sweeper::{Phase, Sweeper};
use mad::SwitchInfo;

impl Sweeper {
    pub(crate) fn start_light(&mut self) {
        self.phase = Phase::Light;
        self.light_changed = false;
        self.light_start = self.counters;
        let sweep = self.sweep;
        for k in 0..self.switches.len() {
            let node = self.switches[k].node;
            if self.nodes[node as usize].seen == sweep {
                self.push(Op::LightSwitchInfo, node, 0, 0);
            }
        }
        self.advance();
    }

    pub(crate) fn on_light_switch_info(&mut self, req: Req, info: SwitchInfo) {
        let sw = self.nodes[req.node as usize].sw;
        let s = &mut self.switches[sw as usize];
        if info.port_state_change || !s.lft_valid || info.linear_fdb_top != s.fdb_top {
            self.light_changed = true;
        }
    }

    pub(crate) fn finish_light(&mut self) {
        self.phase = Phase::Idle;
        let smps = self.counters.since(&self.light_start).total();
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
