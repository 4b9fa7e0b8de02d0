//! [`IntentState`] keeps the intent bookkeeping of a sweeper: the id counter, the intent
//! waiting for its commit and the one being programmed, the re-apply under way and the
//! events for the driver. It never builds an intent's content (the sweeper asks
//! programming and multicast for it) and never starts programming.
//!
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

use fabric::{Guid, Lid};
use std::collections::VecDeque;

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
    /// SLtoVLMappingTable and VLArbitrationTable blocks.
    pub vl_blocks: Vec<crate::VlBlockWrite>,
    /// Vport and alias GUID writes (see `vports`): recorded in the intent, read back by
    /// every heavy sweep rather than kept as programmed state.
    pub vport_writes: Vec<VportWrite>,
}

/// A write of a virtualization-capable or alias port's tables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VportWrite {
    /// The physical CA port's GUID.
    pub port_guid: Guid,
    /// Vport index (0 for VirtualizationInfo and GUIDInfo).
    pub index: u16,
    /// Attribute id.
    pub attribute: u16,
    /// The attribute's data as it is to be written (VPortInfo: as it is to end, ACTIVE).
    pub data: [u8; 64],
}

impl Intent {
    /// True when there is nothing in it.
    pub fn is_empty(&self) -> bool {
        self.lft_blocks.is_empty()
            && self.pkey_blocks.is_empty()
            && self.port_changes.is_empty()
            && self.mft_blocks.is_empty()
            && self.vl_blocks.is_empty()
            && self.vport_writes.is_empty()
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

/// Switches and ports (node GUID, port) an intent's Sets did not reach.
pub(crate) type Unreached = (Vec<Guid>, Vec<(Guid, u8)>);

/// The intent bookkeeping of a sweeper (see the module documentation).
#[derive(Debug, Default)]
pub(crate) struct IntentState {
    /// Intent counter (ids are `intent_id_base + seq`).
    seq: u64,
    /// The intent waiting for its commit.
    awaiting: Option<u64>,
    /// The intent being programmed.
    current: Option<u64>,
    /// The previous master's intent being re-applied.
    reapply_id: Option<u64>,
    /// Blocks re-applied (LFT, P_Key).
    reapplied: [u64; 2],
    /// Switches and ports the re-apply did not reach.
    reapply_unreached: Unreached,
    /// What the driver must commit.
    events: VecDeque<IntentEvent>,
}

impl IntentState {
    /// The id of the next intent.
    pub fn next_id(&mut self, base: u64) -> u64 {
        self.seq += 1;
        base.wrapping_add(self.seq)
    }

    /// Hands an intent to the driver and waits for its commit.
    pub fn propose(&mut self, it: Intent) {
        self.awaiting = Some(it.id);
        self.events.push_back(IntentEvent::Program(it));
    }

    /// Is intent `id` the one waiting for its commit?
    pub fn awaits(&self, id: u64) -> bool {
        self.awaiting == Some(id)
    }

    /// Intent `id` was committed: it is being programmed.
    pub fn committed(&mut self, id: u64) {
        self.awaiting = None;
        self.current = Some(id);
    }

    /// The intent waiting was not committed.
    pub fn rejected(&mut self) {
        self.awaiting = None;
    }

    /// The intent being programmed, which is done.
    pub fn take_current(&mut self) -> Option<u64> {
        self.current.take()
    }

    /// An IntentDone for the driver.
    pub fn push_done(&mut self, ev: IntentEvent) {
        self.events.push_back(ev);
    }

    /// The next event for the driver.
    pub fn poll(&mut self) -> Option<IntentEvent> {
        self.events.pop_front()
    }

    /// The term ended: no intent waits, is programmed or re-applied, none is handed out.
    pub fn drop_all(&mut self) {
        self.awaiting = None;
        self.current = None;
        self.reapply_id = None;
        self.events.clear();
    }

    /// The previous master's intent `id` is being re-applied.
    pub fn start_reapply(&mut self, id: u64) {
        self.reapply_id = Some(id);
    }

    /// One LFT (`lft`) or P_Key block re-applied.
    pub fn count_reapplied(&mut self, lft: bool) {
        self.reapplied[usize::from(!lft)] += 1;
    }

    /// Switches the re-apply did not reach.
    pub fn unreached_switches(&mut self, guids: impl IntoIterator<Item = Guid>) {
        self.reapply_unreached.0.extend(guids);
    }

    /// Ports the re-apply did not reach.
    pub fn unreached_ports(&mut self, ports: impl IntoIterator<Item = (Guid, u8)>) {
        self.reapply_unreached.1.extend(ports);
    }

    /// The re-apply ended: its id, the blocks re-applied (LFT, P_Key) and the switches and
    /// ports not reached. None when none runs.
    pub fn finish_reapply(&mut self) -> Option<(u64, [u64; 2], Unreached)> {
        let id = self.reapply_id.take()?;
        Some((
            id,
            self.reapplied,
            std::mem::take(&mut self.reapply_unreached),
        ))
    }
}
