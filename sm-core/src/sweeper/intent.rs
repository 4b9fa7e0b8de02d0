//! Intent-first programming (see `crate::intent`): the sweep's intent built and handed
//! to the driver, its commit or rejection, IntentDone, and the re-apply of a previous
//! master's intent.

use super::{Phase, Sweeper};
use crate::VTime;
use crate::intent::{Intent, IntentEvent, Unreached};
use crate::io::Op;

impl Sweeper {
    /// Gated mode, routing diffed: builds the sweep's intent. Returns true when the sweep
    /// now waits for it to be committed.
    pub(super) fn gate(&mut self) -> bool {
        if !self.cfg.gate_programming {
            return false;
        }
        let (lft_blocks, pkey_blocks) = self.prog.intent_blocks(&self.disc);
        let mut it = Intent {
            lft_blocks,
            pkey_blocks,
            ..Intent::default()
        };
        it.port_changes = self.prog.planned_port_changes(&self.disc, &self.wanted());
        it.mft_blocks = self.mcast.planned().to_vec();
        it.vl_blocks = self.lanes.planned().to_vec();
        it.vport_writes = self.planned_vport_writes();
        if it.is_empty() {
            return false;
        }
        it.id = self.intent.next_id(self.cfg.intent_id_base);
        self.phase = Phase::AwaitIntent;
        self.intent.propose(it);
        true
    }

    /// The driver committed intent `id`: programming starts.
    pub fn handle_intent_committed(&mut self, now: VTime, id: u64) {
        self.clock(now);
        if self.phase != Phase::AwaitIntent || !self.intent.awaits(id) {
            return;
        }
        if self.mcast_intent_committed(id) {
            self.advance();
            return;
        }
        self.intent.committed(id);
        self.phase = Phase::Programming(0);
        self.next_stage(0);
        self.advance();
    }

    /// The driver could not commit intent `id` (lost leadership, proposal dropped): nothing
    /// of it is written, what it would have changed is marked unknown, and the sweep ends
    /// (a heavy sweep follows at the next interval).
    pub fn handle_intent_rejected(&mut self, now: VTime, id: u64) {
        self.clock(now);
        if self.phase != Phase::AwaitIntent || !self.intent.awaits(id) {
            return;
        }
        if self.mcast_intent_rejected(id) {
            self.advance();
            return;
        }
        self.intent.rejected();
        self.forget_planned();
        self.finish_heavy();
        self.advance();
    }

    /// What this sweep planned to write is not known to be written: its switches' tables
    /// and its ports' P_KeyTables become unknown, and the sweep counts as not clean.
    pub(super) fn forget_planned(&mut self) {
        self.prog.forget_planned(&mut self.disc);
        self.mcast.forget_planned();
        self.lanes.forget_planned();
        self.sched.mark_dirty();
    }

    /// The next intent event for the driver to commit.
    pub fn poll_intent(&mut self) -> Option<IntentEvent> {
        self.intent.poll()
    }

    /// At the end of programming: IntentDone for the sweep's intent.
    pub(super) fn intent_finished(&mut self) {
        let Some(id) = self.intent.take_current() else {
            return;
        };
        let [lft_blocks, pkey_blocks, ..] = self.prog.stage_counts();
        let ev = self.done_event(id, lft_blocks, pkey_blocks, Default::default());
        self.intent.push_done(ev);
    }

    fn done_event(
        &mut self,
        id: u64,
        lft_blocks: u64,
        pkey_blocks: u64,
        unreached: Unreached,
    ) -> IntentEvent {
        let (mut failed_switches, mut failed_ports) = unreached;
        failed_switches.extend(self.prog.lft_failed_switches(&self.disc));
        failed_switches.extend(self.mcast.take_failed_switches());
        failed_switches.sort_unstable();
        failed_switches.dedup();
        failed_ports.append(&mut self.prog.take_failed_ports());
        failed_ports.append(&mut self.lanes.take_failed());
        failed_ports.sort_unstable();
        failed_ports.dedup();
        // The replicated state drops what it knows of every failed switch (LFT, MFT) and
        // port (P_KeyTable, PortInfo) when this is committed: forget the same here, so the
        // next sweep writes them again and the record comes back. Otherwise this sweeper
        // believes a table programmed that the replicated state (and the next master) no
        // longer records, and never rewrites it.
        self.prog
            .forget_failed(&mut self.disc, &failed_switches, &failed_ports);
        IntentEvent::Done {
            id,
            failed_switches,
            failed_ports,
            lft_blocks,
            pkey_blocks,
        }
    }

    /// Re-programs the pending intent (after the first discovery). Returns false when there
    /// is none.
    pub(super) fn start_reapply(&mut self) -> bool {
        let Some(it) = self.cfg.pending_intent.take() else {
            return false;
        };
        self.phase = Phase::Reapply;
        self.intent.start_reapply(it.id);
        // LFT: the known tables with the intent's blocks laid over them.
        let (sets, unreached) = self.prog.reapply_lfts(&mut self.disc, &it.lft_blocks);
        self.intent.unreached_switches(unreached);
        for (op, node, port, block) in sets {
            self.intent.count_reapplied(true);
            self.queue_reapply(op, node, port, block);
        }
        // P_Keys: the intent's blocks laid over what is known of each port.
        let (sets, unreached) = self.prog.reapply_pkeys(&mut self.disc, &it.pkey_blocks);
        self.intent.unreached_ports(unreached);
        for (op, node, port, block) in sets {
            self.intent.count_reapplied(false);
            self.queue_reapply(op, node, port, block);
        }
        let unreached = self.mcast_reapply(&it.mft_blocks);
        self.intent.unreached_switches(unreached);
        let (sets, unreached) = self.lanes.reapply(&self.disc, &it.vl_blocks);
        self.intent.unreached_ports(unreached);
        for (op, node, port, arg) in sets {
            self.queue_reapply(op, node, port, arg);
        }
        true
    }

    fn queue_reapply(&mut self, op: Op, node: u32, port: u8, arg: u16) {
        self.prog.count_planned();
        self.push(op, node, port, arg);
    }

    /// Every re-applied Set answered or given up: IntentDone for the pending intent.
    pub(super) fn finish_reapply(&mut self) {
        let Some((id, [l, p], unreached)) = self.intent.finish_reapply() else {
            return;
        };
        let ev = self.done_event(id, l, p, unreached);
        self.intent.push_done(ev);
    }
}
