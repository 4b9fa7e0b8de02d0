//! Sweeper configuration.

use crate::VTime;
use crate::guid2lid::Guid2Lid;
use crate::intent::Intent;
use fabric::Guid;
use routing::Lfts;
use std::collections::BTreeMap;
use std::sync::Arc;

/// P_KeyTables by (node GUID, port number), entries in index order.
pub type PKeyTables = BTreeMap<(Guid, u8), Vec<u16>>;

/// One millisecond of virtual time.
pub const MS: VTime = 1_000_000;

/// Everything a [`crate::Sweeper`] needs to know before it starts.
#[derive(Clone, Debug)]
pub struct SweeperConfig {
    /// SMInfo.Priority of this SM (0..=15).
    pub sm_priority: u8,
    /// SMInfo.SM_Key (default 1, OpenSM's default `sm_key`: OpenSM ignores an SM whose
    /// SMInfo answer does not show its own key, ERR 2F18, and would not yield to it).
    pub sm_key: u64,
    /// Subnet prefix written to every port (default fe80::/64).
    pub subnet_prefix: u64,
    /// M_Key written to every port and carried in every SMP (default 0).
    pub m_key: u64,
    /// PortInfo.M_KeyProtectBits (default 0).
    pub m_key_protect_bits: u8,
    /// PortInfo.M_KeyLeasePeriod (default 0).
    pub m_key_lease_period: u16,
    /// LMC of CA and router ports (switch port 0 always gets LMC 0).
    pub lmc: u8,
    /// Routing engines tried in order (OpenSM `-R`); the first that accepts wins.
    pub engines: Vec<String>,
    /// Up/down root GUIDs (empty = automatic).
    pub updn_roots: Vec<fabric::Guid>,
    /// Keep a routing whose channel dependency graph has a cycle (logged as ROUTE-W-CDG)
    /// instead of refusing it and trying the next engine (default false).
    pub accept_credit_loops: bool,
    /// Shards per routing phase handed to the daemon's executor.
    pub routing_shards: usize,
    /// Fabric-wide limit of outstanding SMPs.
    pub window: usize,
    /// Outstanding SMPs allowed per switch (each switch port has one VL15 buffer).
    pub per_switch_window: u8,
    /// Time to wait for a response before resending.
    pub timeout: VTime,
    /// Resends before giving up on one request.
    pub retries: u8,
    /// Interval between light sweeps.
    pub sweep_interval: VTime,
    /// partitions.conf text; None = no file (`Default=0x7fff : ALL=full`).
    pub partitions_conf: Option<String>,
    /// Partition options (part_enforce, allow_both_pkeys, qos).
    pub partition_options: partitions::Options,
    /// LIDs remembered from a previous life (OpenSM guid2lid).
    pub guid2lid: Guid2Lid,
    /// Use LID-routed SMPs once routes exist (falls back to directed route on failure).
    pub lid_routed_programming: bool,
    /// Ports found without a LID (never configured since reset) are taken to hold the IBA
    /// default P_KeyTable (0xFFFF at index 0), so blocks equal to it are not written.
    pub assume_default_pkeys: bool,
    /// Forwarding tables the switches are known to hold (a new master taking over with the
    /// replicated state): a switch found with a matching LinearFDBTop is not rewritten
    /// where its table already says the right thing.
    pub known_lfts: Option<Arc<Lfts>>,
    /// P_KeyTables the ports are known to hold (takeover with the replicated state; see
    /// [`crate::Sweeper::pkey_tables`]): blocks equal to them are not rewritten.
    pub known_pkeys: Option<Arc<PKeyTables>>,
    /// MulticastForwardingTable blocks the switches are known to hold (takeover with the
    /// replicated state; see [`crate::Sweeper::mft_tables`]): blocks equal to what the
    /// multicast groups need are not rewritten.
    pub known_mfts: Option<Arc<crate::MftTables>>,
    /// SLtoVL and VLArb blocks the ports are known to hold (a takeover, from the replicated
    /// state; see [`crate::Sweeper::vl_tables`]): blocks equal to what is wanted are not
    /// written.
    pub known_vl_tables: Option<Arc<crate::VlTables>>,
    /// OpenSM's `max_op_vls`: the most OperationalVLs (PortInfo code, 1 = VL0 .. 5 =
    /// VL0-14) a port is brought up with. Default 5, as OpenSM.
    pub max_op_vls: u8,
    /// QoS on (OpenSM's `qos TRUE`): the SLtoVL and VLArb tables per kind of port from the
    /// QoS options. None: no VL table is written.
    pub qos: Option<Arc<qos::QosTables>>,
    /// The QoS policy (OpenSM's qos-policy.conf text): its qos-setup scopes choose the
    /// tables of the ports in their groups. None: the options' tables everywhere.
    pub qos_policy: Option<String>,
    /// Set ClientReregister on end ports the first time this SM writes them (OpenSM does,
    /// so clients re-register with a new SM). A takeover whose SA state is replicated can
    /// turn it off.
    pub reregister_on_takeover: bool,
    /// Upper 32 bits of every transaction id (e.g. a per-process agent id).
    pub tid_high: u32,
    /// Master (sweeps and programs) or standby (answers SMInfo only, sends nothing else).
    pub role: Role,
    /// This SM's port GUID, for SMInfo answers before (or without) discovery; a standby
    /// must be given it. None: the GUID discovery finds (0 until then).
    pub sm_port_guid: Option<Guid>,
    /// Intent first: after planning a heavy sweep's programming, emit
    /// [`crate::IntentEvent::Program`] and send no Set until
    /// [`crate::Sweeper::handle_intent_committed`]; emit [`crate::IntentEvent::Done`] when
    /// every Set of it was answered. Off (default): program at once, emit no intent.
    pub gate_programming: bool,
    /// Intent ids are `intent_id_base + 1, + 2, ...` (a cluster passes `term << 32` so ids
    /// never repeat across terms).
    pub intent_id_base: u64,
    /// A sealed intent a previous master did not finish: re-programmed (exactly its LFT and
    /// P_Key blocks) right after the first discovery, before LIDs and routing; then
    /// [`crate::IntentEvent::Done`] with its id.
    pub pending_intent: Option<Intent>,
    /// M_Keys the ports may still hold (previous terms, most recent first). When non-empty,
    /// the first heavy sweep rotates every configured port to [`SweeperConfig::m_key`]
    /// (PortInfo Set carrying the key in force, before any other Set); until a port is
    /// rotated its SMPs carry the key it holds.
    pub m_key_prev: Vec<u64>,
    /// Obey other SMs on the fabric (IBA 14.4; see the `foreign` module): after each
    /// discovery read the SMInfo of every other port with IsSM, stand by for a MASTER
    /// (any, while DISCOVERING; one that outranks this SM, while MASTER), hand over to a
    /// STANDBY that outranks this master, and act on SubnSet(SMInfo) HANDOVER,
    /// ACKNOWLEDGE, DISABLE, STANDBY and DISCOVER. Default true; no effect on a Raft
    /// cluster's master (`gate_programming`), whose other SMs are its own replicas.
    pub obey_foreign_sms: bool,
    /// Port GUIDs of SMs of this SM's own cluster (replicas fenced by Raft): never queried
    /// or obeyed as foreign SMs.
    pub peer_sms: Vec<Guid>,
    /// Polls of the followed foreign master in a row without an answer after which this
    /// SM sweeps as master again (one poll per sweep interval; default 3).
    pub foreign_poll_misses: u8,
}

/// What this SM does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Role {
    /// Sweeps and programs the fabric.
    #[default]
    Master,
    /// Answers SMInfo (state STANDBY) and sends nothing else.
    Standby,
}

impl Default for SweeperConfig {
    fn default() -> SweeperConfig {
        SweeperConfig {
            sm_priority: 0,
            sm_key: 1,
            subnet_prefix: 0xfe80_0000_0000_0000,
            m_key: 0,
            m_key_protect_bits: 0,
            m_key_lease_period: 0,
            lmc: 0,
            engines: vec!["ftree".into(), "updn".into(), "minhop".into()],
            updn_roots: Vec::new(),
            accept_credit_loops: false,
            routing_shards: 1,
            window: 256,
            per_switch_window: 4,
            timeout: 20 * MS,
            retries: 8,
            sweep_interval: 10_000 * MS,
            partitions_conf: None,
            partition_options: partitions::Options::default(),
            guid2lid: Guid2Lid::default(),
            lid_routed_programming: true,
            assume_default_pkeys: true,
            known_lfts: None,
            known_pkeys: None,
            known_mfts: None,
            known_vl_tables: None,
            max_op_vls: 5,
            qos: None,
            qos_policy: None,
            reregister_on_takeover: true,
            tid_high: 0,
            role: Role::Master,
            sm_port_guid: None,
            gate_programming: false,
            intent_id_base: 0,
            pending_intent: None,
            m_key_prev: Vec::new(),
            obey_foreign_sms: true,
            peer_sms: Vec::new(),
            foreign_poll_misses: 3,
        }
    }
}
