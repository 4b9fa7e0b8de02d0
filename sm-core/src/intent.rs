//! Intent-first programming (a Raft cluster's master): what a heavy sweep is about to write
//! is handed to the driver as an [`Intent`] before any Set goes out, and a previous
//! master's unfinished intent is re-programmed first.
//!
//! * Gated (`SweeperConfig::gate_programming`): once routing is diffed, the LFT blocks,
//!   P_KeyTable blocks and PortInfo field changes of the sweep form an [`Intent`]
//!   ([`IntentEvent::Program`]); the sweeper waits in [`crate::Phase::AwaitIntent`] until
//!   [`crate::Sweeper::handle_intent_committed`], programs, and emits [`IntentEvent::Done`]
//!   when every Set of the sweep was answered or given up (the failed targets listed).
//!   A sweep with nothing for an intent (no LFT/P_Key block, no PortInfo field change)
//!   emits none and is not gated: a quiet sweep costs no Raft entry. Port state changes
//!   (ARMED, ACTIVE), SwitchInfo LinearFDBTop and PortStateChange clears are not intents
//!   (they are not replicated state); like every Set they obey fencing.
//! * Re-apply (`SweeperConfig::pending_intent`): after the first discovery (and the M_Key
//!   rotation, see `keys`), exactly the intent's LFT and P_Key blocks are written again
//!   (their PortInfo changes are not: the sweep that follows writes every field that
//!   differs, with this master's LIDs, MasterSMLID and M_Key), then
//!   [`IntentEvent::Done`] with the intent's id, then LIDs and routing.

use crate::VTime;
use crate::io::Op;
use crate::sweeper::{Phase, Sweeper};
use fabric::{Guid, Lid};

/// One 64-entry LinearForwardingTable block to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LftBlockWrite {
    /// Switch node GUID.
    pub switch: Guid,
    /// Block number (LIDs `block*64 .. block*64+63`).
    pub block: u16,
    /// Egress port per LID (255 = no route).
    pub ports: [u8; 64],
}

/// One 32-entry P_KeyTable block to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PKeyBlockWrite {
    /// Node GUID.
    pub node: Guid,
    /// Port number (0 for a switch's management port).
    pub port: u8,
    /// Block number (indices `block*32 .. block*32+31`).
    pub block: u16,
    /// P_Keys (membership bit included).
    pub keys: [u16; 32],
    /// The port is taken to hold this block already (a port never configured since reset
    /// holds the IBA default table): recorded as programmed but not written by this sweep.
    /// A re-apply writes it like any other block.
    pub assumed: bool,
}

/// PortInfo fields a sweep writes to an end port (switch port 0, CA port).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortChange {
    /// Node GUID.
    pub node: Guid,
    /// Port number.
    pub port: u8,
    /// Port GUID (what guid2lid is keyed by).
    pub port_guid: Guid,
    /// Base LID.
    pub lid: Lid,
    /// LMC.
    pub lmc: u8,
    /// MasterSMLID.
    pub master_sm_lid: Lid,
    /// M_Key.
    pub m_key: u64,
    /// M_KeyProtectBits.
    pub m_key_protect_bits: u8,
    /// M_KeyLeasePeriod.
    pub m_key_lease_period: u16,
    /// GID prefix.
    pub subnet_prefix: u64,
}

/// What a heavy sweep is about to program (or what a previous master did not finish).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Intent {
    /// Unique id (`SweeperConfig::intent_id_base` + counter).
    pub id: u64,
    /// LFT blocks.
    pub lft_blocks: Vec<LftBlockWrite>,
    /// P_KeyTable blocks.
    pub pkey_blocks: Vec<PKeyBlockWrite>,
    /// PortInfo field changes.
    pub port_changes: Vec<PortChange>,
    /// MulticastForwardingTable blocks.
    pub mft_blocks: Vec<crate::MftBlockWrite>,
}

impl Intent {
    /// True when there is nothing in it.
    pub fn is_empty(&self) -> bool {
        self.lft_blocks.is_empty()
            && self.pkey_blocks.is_empty()
            && self.port_changes.is_empty()
            && self.mft_blocks.is_empty()
    }
}

/// What the driver must commit (read with [`crate::Sweeper::poll_intent`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IntentEvent {
    /// Commit this intent, then call [`crate::Sweeper::handle_intent_committed`] (or
    /// [`crate::Sweeper::handle_intent_rejected`] if it could not be committed).
    Program(Intent),
    /// Every Set of intent `id` was answered or given up: commit IntentDone.
    Done {
        /// The intent.
        id: u64,
        /// Switches an LFT Set of the intent failed on.
        failed_switches: Vec<Guid>,
        /// Ports (node GUID, port) a P_Key or PortInfo Set failed on.
        failed_ports: Vec<(Guid, u8)>,
        /// LFT blocks written.
        lft_blocks: u64,
        /// P_Key blocks written.
        pkey_blocks: u64,
    },
}

impl Sweeper {
    /// Gated mode, routing diffed: builds the sweep's intent. Returns true when the sweep
    /// now waits for it to be committed.
    pub(crate) fn gate(&mut self) -> bool {
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
        it.mft_blocks = self.mft_intent_blocks();
        if it.is_empty() {
            return false;
        }
        self.intent_seq += 1;
        it.id = self.cfg.intent_id_base.wrapping_add(self.intent_seq);
        self.awaiting_intent = Some(it.id);
        self.phase = Phase::AwaitIntent;
        self.intent_events.push_back(IntentEvent::Program(it));
        true
    }

    /// The driver committed intent `id`: programming starts.
    pub fn handle_intent_committed(&mut self, now: VTime, id: u64) {
        self.now = self.now.max(now);
        if self.phase != Phase::AwaitIntent || self.awaiting_intent != Some(id) {
            return;
        }
        if self.mcast_intent_committed(id) {
            self.advance();
            return;
        }
        self.awaiting_intent = None;
        self.current_intent = Some(id);
        self.phase = Phase::Programming(0);
        self.next_stage(0);
        self.advance();
    }

    /// The driver could not commit intent `id` (lost leadership, proposal dropped): nothing
    /// of it is written, what it would have changed is marked unknown, and the sweep ends
    /// (a heavy sweep follows at the next interval).
    pub fn handle_intent_rejected(&mut self, now: VTime, id: u64) {
        self.now = self.now.max(now);
        if self.phase != Phase::AwaitIntent || self.awaiting_intent != Some(id) {
            return;
        }
        if self.mcast_intent_rejected(id) {
            self.advance();
            return;
        }
        self.awaiting_intent = None;
        self.forget_planned();
        self.finish_heavy();
        self.advance();
    }

    /// What this sweep planned to write is not known to be written: its switches' tables
    /// and its ports' P_KeyTables become unknown, and the sweep counts as not clean.
    pub(crate) fn forget_planned(&mut self) {
        self.prog.forget_planned(&mut self.disc);
        self.mcast_forget_planned();
        self.dirty = true;
    }

    /// The next intent event for the driver to commit.
    pub fn poll_intent(&mut self) -> Option<IntentEvent> {
        self.intent_events.pop_front()
    }

    /// At the end of programming: IntentDone for the sweep's intent.
    pub(crate) fn intent_finished(&mut self) {
        let Some(id) = self.current_intent.take() else {
            return;
        };
        let [lft_blocks, pkey_blocks, ..] = self.prog.stage_counts();
        let ev = self.done_event(id, lft_blocks, pkey_blocks, Default::default());
        self.intent_events.push_back(ev);
    }

    fn done_event(
        &mut self,
        id: u64,
        lft_blocks: u64,
        pkey_blocks: u64,
        unreached: (Vec<Guid>, Vec<(Guid, u8)>),
    ) -> IntentEvent {
        let (mut failed_switches, mut failed_ports) = unreached;
        failed_switches.extend(
            self.disc
                .switches()
                .iter()
                .filter(|s| s.lft_failed)
                .map(|s| self.disc.node(s.node).guid),
        );
        failed_switches.extend(self.mcast_failed_switches());
        failed_switches.sort_unstable();
        failed_switches.dedup();
        failed_ports.append(&mut self.prog.take_failed_ports());
        failed_ports.sort_unstable();
        failed_ports.dedup();
        // The replicated state drops what it knows of every failed switch (LFT, MFT) and
        // port (P_KeyTable, PortInfo) when this is committed: forget the same here, so the
        // next sweep writes them again and the record comes back. Otherwise this sweeper
        // believes a table programmed that the replicated state (and the next master) no
        // longer records, and never rewrites it.
        for g in &failed_switches {
            if let Some(i) = self.disc.find(*g) {
                let sw = self.disc.node(i).sw;
                if sw != crate::state::NONE {
                    self.disc.switch_mut(sw).lft_valid = false;
                }
            }
        }
        for (g, p) in &failed_ports {
            if let Some(i) = self.disc.find(*g) {
                let n = self.disc.node(i);
                if *p <= n.nports {
                    self.disc.port_mut(n.port_index(*p)).pkey_known_valid = false;
                }
            }
        }
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
    pub(crate) fn start_reapply(&mut self) -> bool {
        let Some(it) = self.cfg.pending_intent.take() else {
            return false;
        };
        self.phase = Phase::Reapply;
        self.reapply_id = Some(it.id);
        // LFT: the known tables with the intent's blocks laid over them.
        let (sets, unreached) = self.prog.reapply_lfts(&mut self.disc, &it.lft_blocks);
        self.reapply_unreached.0.extend(unreached);
        for (node, block) in sets {
            self.reapplied[0] += 1;
            self.queue_reapply(Op::LftSet, node, 0, block);
        }
        // P_Keys: the intent's blocks laid over what is known of each port.
        let (sets, unreached) = self.prog.reapply_pkeys(&mut self.disc, &it.pkey_blocks);
        self.reapply_unreached.1.extend(unreached);
        for (node, port, block) in sets {
            self.reapplied[1] += 1;
            self.queue_reapply(Op::PKeySet, node, port, block);
        }
        let unreached = self.mcast_reapply(&it.mft_blocks);
        self.reapply_unreached.0.extend(unreached);
        true
    }

    fn queue_reapply(&mut self, op: Op, node: u32, port: u8, arg: u16) {
        self.prog.count_planned();
        self.push(op, node, port, arg);
    }

    /// Every re-applied Set answered or given up: IntentDone for the pending intent.
    pub(crate) fn finish_reapply(&mut self) {
        let Some(id) = self.reapply_id.take() else {
            return;
        };
        let [l, p] = self.reapplied;
        let unreached = std::mem::take(&mut self.reapply_unreached);
        let ev = self.done_event(id, l, p, unreached);
        self.intent_events.push_back(ev);
    }
}
