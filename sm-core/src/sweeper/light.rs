//! The light sweep's course (see `crate::light`).

use super::{Phase, Sweeper};
use crate::events::{Event, SweepReason};
use crate::io::{Op, Req};
use mad::{LinearForwardingTable, PKeyTable, SmState, Smp, SmpAttribute, SwitchInfo};

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
        self.audit_lfts();
        self.audit_pkeys();
        self.advance();
    }

    /// The LFT audit (see `crate::light`): a master that is up reads the next few blocks
    /// of the routing in force back.
    fn audit_lfts(&mut self) {
        if self.state != SmState::Master || !self.subnet_up {
            return;
        }
        let Some(lfts) = self.prog.lfts() else {
            return;
        };
        let mut blocks: Vec<(u32, u16)> = Vec::new();
        for s in self.disc.switches() {
            let Some(t) = lfts.switches.get(s.lft_idx as usize) else {
                continue;
            };
            if !self.disc.seen(s.node) || !s.lft_valid {
                continue;
            }
            let n = t.ports.len().div_ceil(64);
            blocks.extend((0..n).map(|b| (s.node, b as u16)));
        }
        for k in self.light.audit_slice(blocks.len()) {
            let (node, b) = blocks[k];
            self.push(Op::LftGet, node, 0, b);
        }
    }

    /// The P_KeyTable audit (see `crate::light`): a master that is up reads the next few
    /// blocks of the tables it programmed back.
    fn audit_pkeys(&mut self) {
        if self.state != SmState::Master || !self.subnet_up {
            return;
        }
        let mut blocks: Vec<(u32, u8, u16)> = Vec::new();
        for i in 0..self.disc.nodes().len() as u32 {
            if !self.disc.seen(i) {
                continue;
            }
            for p in 0..=self.disc.node(i).nports {
                let port = self.disc.port_of(i, p);
                if port.pkey_want.is_empty() || !port.pkey_known_valid {
                    continue;
                }
                let n = port.pkey_want.len().div_ceil(PKeyTable::ENTRIES).min(64);
                blocks.extend((0..n).map(|b| (i, p, b as u16)));
            }
        }
        for k in self.light.pkey_audit_slice(blocks.len()) {
            let (node, p, b) = blocks[k];
            self.push(Op::PKeyGet, node, p, b);
        }
    }

    /// A P_KeyTable block read back by the audit: one that is not what this SM wants was
    /// changed behind its back; the port's table counts as unknown and the heavy sweep
    /// that follows rewrites it.
    pub(super) fn on_audit_pkey_block(&mut self, req: Req, smp: &Smp) {
        if self.phase != Phase::Light || self.state != SmState::Master {
            return;
        }
        let got = PKeyTable::decode(&smp.data);
        let port = self.disc.port_of(req.node, req.port);
        if !port.pkey_known_valid {
            return;
        }
        let lo = usize::from(req.arg) * PKeyTable::ENTRIES;
        let hi = (lo + PKeyTable::ENTRIES).min(port.pkey_want.len());
        if lo >= hi {
            return;
        }
        let same = port.pkey_want[lo..hi]
            .iter()
            .zip(got.keys.iter())
            .all(|(w, g)| *w == g.0);
        if same {
            return;
        }
        let n = self.disc.node(req.node);
        let is_switch = n.is_switch;
        let guid = if is_switch { n.guid } else { port.guid };
        let lid = self
            .disc
            .reported_lid(req.node, if is_switch { 0 } else { req.port });
        self.disc.port_of_mut(req.node, req.port).pkey_known_valid = false;
        self.light.changed();
        self.events.push_back(Event::PKeyDrift {
            port_guid: guid,
            port: req.port,
            lid,
            block: req.arg,
        });
    }

    /// An LFT block read back by the audit: one that is not what this SM wants was
    /// changed behind its back.
    pub(super) fn on_audit_block(&mut self, node: u32, block: u16, got: &LinearForwardingTable) {
        if self.prog.lft_block_matches(&self.disc, node, block, got) != Some(false) {
            return;
        }
        let n = self.disc.node(node);
        let sw = n.sw;
        let guid = n.guid;
        let lid = self.disc.reported_lid(node, 0);
        self.disc.switch_mut(sw).lft_valid = false;
        self.light.changed();
        self.events.push_back(Event::LftDrift {
            switch: guid,
            lid,
            block,
        });
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
        match self.light.links_changed() {
            Some(nodes) if changed && !nodes.is_empty() => {
                for &n in nodes {
                    let lid = self.disc.reported_lid(n, 0);
                    self.sched.request_for_links(SweepReason::Change, lid);
                }
            }
            _ if changed => self.sched.request_heavy(SweepReason::Change),
            _ => {}
        }
        self.schedule_next();
    }
}
