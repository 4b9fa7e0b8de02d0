//! Multicast passes (see `crate::mcast`): groups handed over, a standalone pass between
//! sweeps (its own intent in gated mode), MFT Sets queued and their answers recorded.

use super::{Phase, Sweeper};
use crate::VTime;
use crate::intent::{Intent, IntentEvent};
use crate::io::{Op, Req};
use crate::mcast::{McastGroup, MftBlockWrite, MftTables};
use fabric::Guid;
use mad::SmState;
use std::collections::HashMap;

impl Sweeper {
    /// Hands over the multicast groups (every group with its MLID and member port GUIDs;
    /// the whole set each time: a group absent from it is removed). The tables are
    /// recomputed and the changed blocks written at once when the sweeper is idle and has
    /// routed the fabric, otherwise as soon as the running sweep ends (a heavy sweep that
    /// has not planned its programming yet takes them into its own).
    pub fn set_multicast(&mut self, now: VTime, groups: Vec<McastGroup>) {
        self.clock(now);
        if !self.mcast.set_groups(groups) {
            return;
        }
        if self.phase == Phase::Idle {
            self.start_mcast_pass();
            self.advance();
        }
    }

    /// The MFTs the switches are known to hold, by switch GUID and (position, block):
    /// what a replicated state keeps for a takeover ([`crate::SweeperConfig::known_mfts`]).
    pub fn mft_tables(&self) -> &MftTables {
        self.mcast.known()
    }

    /// The multicast groups last handed over (None: never).
    pub fn multicast_groups(&self) -> Option<&[McastGroup]> {
        self.mcast.groups()
    }

    /// MulticastFDBTop wanted per switch node (see `Multicast::mft_tops`).
    pub(super) fn mft_tops(&self) -> HashMap<u32, u16> {
        self.mcast.mft_tops(&self.disc)
    }

    /// Queues the planned MFT Sets (stage 2 of a heavy sweep, or a standalone pass).
    pub(super) fn queue_mfts(&mut self) {
        for (node, pos, block) in self.mcast.queued() {
            self.prog.count_planned();
            self.push(Op::MftSet, node, pos, block);
        }
    }

    /// Starts a standalone pass when the groups changed and the fabric was routed, and
    /// this SM is MASTER: one standing by for another SM writes nothing (the groups wait
    /// for the heavy sweep it masters with, which plans them).
    pub(super) fn start_mcast_pass(&mut self) {
        if self.phase != Phase::Idle
            || self.state != SmState::Master
            || !self.mcast.start_pass(&self.disc)
        {
            return;
        }
        if self.cfg.gate_programming {
            let id = self.intent.next_id(self.cfg.intent_id_base);
            let it = Intent {
                id,
                mft_blocks: self.mcast.planned().to_vec(),
                ..Default::default()
            };
            self.mcast.await_pass_intent(id);
            self.phase = Phase::AwaitIntent;
            self.intent.propose(it);
            return;
        }
        self.run_mcast_pass();
    }

    fn run_mcast_pass(&mut self) {
        self.phase = Phase::Multicast;
        self.queue_mfts();
        let mut tops: Vec<(u32, u16)> = self.mft_tops().into_iter().collect();
        tops.sort_unstable();
        for (node, top) in tops {
            let sw = self.disc.node(node).sw;
            if self.disc.switch(sw).info.multicast_fdb_top != top {
                self.disc.switch_mut(sw).mft_top_want = Some(top);
                self.prog.count_planned();
                self.push(Op::SwitchInfoSet, node, 0, 0);
            }
        }
    }

    /// The driver committed intent `id`: true when it was a standalone multicast pass
    /// (now programming).
    pub(super) fn mcast_intent_committed(&mut self, id: u64) -> bool {
        if !self.mcast.pass_committed(id) {
            return false;
        }
        self.intent.committed(id);
        self.run_mcast_pass();
        true
    }

    /// The driver could not commit intent `id`: true when it was a standalone multicast
    /// pass (dropped; the groups stay to be planned again).
    pub(super) fn mcast_intent_rejected(&mut self, id: u64) -> bool {
        if !self.mcast.pass_rejected(id) {
            return false;
        }
        self.intent.rejected();
        self.phase = Phase::Idle;
        true
    }

    /// Every Set of a standalone pass answered or given up.
    pub(super) fn finish_mcast_pass(&mut self) {
        self.phase = Phase::Idle;
        if let Some(id) = self.intent.take_current() {
            let ev = IntentEvent::Done {
                id,
                failed_switches: self.mcast.take_failed_switches(),
                failed_ports: Vec::new(),
                lft_blocks: 0,
                pkey_blocks: 0,
            };
            self.intent.push_done(ev);
        }
        // A heavy sweep asked for while this pass ran (it plans the MFTs itself), or
        // groups handed over meanwhile.
        if self.sched.heavy_pending() {
            self.start_pending_heavy();
        } else {
            self.start_mcast_pass();
        }
    }

    /// Re-applies a previous master's MFT blocks (the pending intent). Returns the switches
    /// not reached.
    pub(super) fn mcast_reapply(&mut self, blocks: &[MftBlockWrite]) -> Vec<Guid> {
        let (sets, unreached) = self.mcast.reapply(&self.disc, blocks);
        for (node, pos, block) in sets {
            self.prog.count_planned();
            self.push(Op::MftSet, node, pos, block);
        }
        unreached
    }

    /// An MFT Set was answered: the block is known.
    pub(super) fn mft_done(&mut self, req: &Req) {
        let g = self.disc.node(req.node).guid;
        self.mcast.done(g, req);
    }

    /// An MFT Set was given up: the block is unknown.
    pub(super) fn mft_failed(&mut self, req: &Req) {
        let g = self.disc.node(req.node).guid;
        self.mcast.failed(g, req);
    }
}
