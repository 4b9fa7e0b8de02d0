//! [`ReplicatedState`]: what every replica holds, and the queries the master and the admin API
//! read it through.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use fabric::{Guid, Lid, PortNum};
use proto::state::{
    ClusterConfig, Intent, MasterRecord, PartitionPolicy, PortInfoChange, SaState, Tenants,
    Topology,
};

/// Number of accepted policy versions kept (the one in force included).
pub const POLICY_HISTORY: usize = 32;
/// Number of recent accepted request ids remembered for dedup.
pub const DEDUP_WINDOW: usize = 1024;
/// LIDs per LinearForwardingTable block.
pub const LFT_BLOCK: usize = 64;
/// Highest LFT block number (unicast LIDs end at 0xBFFF).
pub const MAX_LFT_BLOCK: u32 = 0xBFFF / LFT_BLOCK as u32;
/// P_Keys per P_KeyTable block.
pub const PKEY_BLOCK: usize = 32;
/// Highest P_KeyTable block number (PartitionCap is 16 bits).
pub const MAX_PKEY_BLOCK: u32 = 0xFFFF / PKEY_BLOCK as u32;
/// Egress port of an LFT entry without a route.
pub const NO_ROUTE: u8 = 0xFF;

/// A port's LID assignment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LidAssignment {
    /// Base LID.
    pub base: Lid,
    /// LID mask control: the port answers base .. base + 2^lmc - 1.
    pub lmc: u8,
}

/// The replicated state machine of a Quorum SM cluster. Changed only by
/// [`ReplicatedState::apply`] of committed commands (or [`ReplicatedState::restore`]).
#[derive(Clone, Debug, Default)]
pub struct ReplicatedState {
    pub(crate) applied_index: u64,
    pub(crate) applied_term: u64,
    pub(crate) config: ClusterConfig,
    pub(crate) policy: PartitionPolicy,
    /// Parsed form of `policy.text` (None while version is 0).
    pub(crate) policy_file: Option<partitions::PartitionFile>,
    pub(crate) policy_history: VecDeque<PartitionPolicy>,
    /// The QoS policy in force (version 0: none).
    pub(crate) qos_policy: PartitionPolicy,
    pub(crate) topology: Topology,
    pub(crate) lids: BTreeMap<Guid, LidAssignment>,
    /// Per switch: `ports[lid]` as programmed; entries past the end are [`NO_ROUTE`]; length
    /// is a multiple of [`LFT_BLOCK`].
    pub(crate) lfts: BTreeMap<Guid, Vec<u8>>,
    /// Per (node, port): P_Keys by index; length a multiple of [`PKEY_BLOCK`].
    pub(crate) pkeys: BTreeMap<(Guid, PortNum), Vec<u16>>,
    /// Per (node, port): PortInfo fields as last programmed (merged).
    pub(crate) port_infos: BTreeMap<(Guid, PortNum), PortInfoChange>,
    pub(crate) intent: Option<Intent>,
    pub(crate) master: Option<MasterRecord>,
    pub(crate) tenants: Tenants,
    pub(crate) sa: SaState,
    /// Per switch: MFT blocks as programmed (see `mft`).
    pub(crate) mfts: crate::mft::Mfts,
    /// VL tables as programmed (see `vl`).
    pub(crate) vl_tables: crate::vl::VlTables,
    pub(crate) recent: VecDeque<u64>,
    pub(crate) recent_set: BTreeSet<u64>,
}

impl ReplicatedState {
    /// An empty state (nothing applied).
    pub fn new() -> ReplicatedState {
        ReplicatedState::default()
    }

    /// Raft index of the last applied entry (0 = none).
    pub fn applied_index(&self) -> u64 {
        self.applied_index
    }

    /// Raft term of the last applied entry.
    pub fn applied_term(&self) -> u64 {
        self.applied_term
    }

    /// The cluster configuration (all defaults before the first SetConfig).
    pub fn config(&self) -> &ClusterConfig {
        &self.config
    }

    /// The partition policy in force (version 0 and empty text before the first accepted
    /// ApplyPolicy).
    pub fn policy(&self) -> &PartitionPolicy {
        &self.policy
    }

    /// The QoS policy in force (version 0: none applied).
    pub fn qos_policy(&self) -> &PartitionPolicy {
        &self.qos_policy
    }

    /// The parsed policy in force, None before the first accepted ApplyPolicy.
    pub fn policy_file(&self) -> Option<&partitions::PartitionFile> {
        self.policy_file.as_ref()
    }

    /// The last [`POLICY_HISTORY`] accepted policies, oldest first (the one in force last).
    pub fn policy_history(&self) -> impl Iterator<Item = &PartitionPolicy> + '_ {
        self.policy_history.iter()
    }

    /// The topology last committed.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// The guid -> LID map, by port GUID.
    pub fn guid2lid(&self) -> &BTreeMap<Guid, LidAssignment> {
        &self.lids
    }

    /// The LID assignment of one port GUID.
    pub fn lid_of(&self, port_guid: Guid) -> Option<LidAssignment> {
        self.lids.get(&port_guid).copied()
    }

    /// The LFT of a switch as programmed (`[lid]` = egress port; beyond the end: no route),
    /// None when nothing is known to be programmed on it.
    pub fn lft(&self, switch: Guid) -> Option<&[u8]> {
        self.lfts.get(&switch).map(Vec::as_slice)
    }

    /// One 64-entry block of a switch's programmed LFT, None when not programmed.
    pub fn lft_block(&self, switch: Guid, block: u32) -> Option<&[u8]> {
        let t = self.lfts.get(&switch)?;
        let lo = block as usize * LFT_BLOCK;
        t.get(lo..lo + LFT_BLOCK)
    }

    /// Every programmed LFT, by switch GUID.
    pub fn lfts(&self) -> impl Iterator<Item = (Guid, &[u8])> + '_ {
        self.lfts.iter().map(|(g, t)| (*g, t.as_slice()))
    }

    /// The P_KeyTable of a port as programmed (index -> key), None when unknown.
    pub fn pkey_table(&self, node: Guid, port: PortNum) -> Option<&[u16]> {
        self.pkeys.get(&(node, port)).map(Vec::as_slice)
    }

    /// Every programmed P_KeyTable, by (node GUID, port).
    pub fn pkey_tables(&self) -> impl Iterator<Item = ((Guid, PortNum), &[u16])> + '_ {
        self.pkeys.iter().map(|(k, t)| (*k, t.as_slice()))
    }

    /// PortInfo fields as last programmed on a port (only fields ever set are present).
    pub fn port_info(&self, node: Guid, port: PortNum) -> Option<&PortInfoChange> {
        self.port_infos.get(&(node, port))
    }

    /// The sealed intent that is not done yet: a new master re-programs it and commits
    /// IntentDone. None when there is none (an open, unsealed intent is not returned: it was
    /// never programmed).
    pub fn pending_intent(&self) -> Option<&Intent> {
        self.intent.as_ref().filter(|i| i.sealed)
    }

    /// The intent being built or pending, sealed or not.
    pub fn open_intent(&self) -> Option<&Intent> {
        self.intent.as_ref()
    }

    /// The master record in force.
    pub fn master(&self) -> Option<&MasterRecord> {
        self.master.as_ref()
    }

    /// Tenants in force (see [`crate::tenants`]).
    pub fn tenants(&self) -> &Tenants {
        &self.tenants
    }

    /// SA state (placeholder).
    pub fn sa_state(&self) -> &SaState {
        &self.sa
    }

    /// True when a request id was applied recently (within [`DEDUP_WINDOW`] accepted ids).
    pub fn seen_request(&self, request_id: u64) -> bool {
        request_id != 0 && self.recent_set.contains(&request_id)
    }

    pub(crate) fn remember_request(&mut self, request_id: u64) {
        if request_id == 0 || !self.recent_set.insert(request_id) {
            return;
        }
        self.recent.push_back(request_id);
        while self.recent.len() > DEDUP_WINDOW {
            if let Some(old) = self.recent.pop_front() {
                self.recent_set.remove(&old);
            }
        }
    }
}
