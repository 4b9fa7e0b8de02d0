//! The records of what the sweeper knows about the fabric: nodes, ports and switches, kept
//! in index-addressed arenas by [`crate::discovery::Discovery`]. Plain data: discovery
//! fills in what it reads; the other sub-states keep their own fields on the port and
//! switch records (LIDs, P_KeyTables, M_Key candidates, LFT and MFT state).

use fabric::{Guid, Lid};
use mad::{NodeDescription, NodeInfo, PortInfo, SwitchInfo};
use routing::{NO_ROUTE, SwitchLft};

/// "No index".
pub(crate) const NONE: u32 = u32::MAX;

/// One node (switch, CA or router).
#[derive(Clone, Debug)]
pub(crate) struct Node {
    pub guid: Guid,
    pub info: NodeInfo,
    pub desc: NodeDescription,
    pub is_switch: bool,
    pub nports: u8,
    /// Index of this node's port 0 in the port arena; ports are contiguous 0..=nports.
    pub first_port: u32,
    /// Heavy sweep that last reached this node (0 = never).
    pub seen: u64,
    /// The port whose directed path reaches this node (0 for switches, entry port for CAs).
    pub path_port: u8,
    /// Index into the switch arena, or NONE.
    pub sw: u32,
}

/// One port slot.
#[derive(Clone, Debug, Default)]
pub(crate) struct Port {
    /// PortInfo as last read or written.
    pub info: PortInfo,
    /// Heavy sweep in which `info` was read (0 = never).
    pub info_sweep: u64,
    /// Port GUID (CA ports: NodeInfo.PortGUID when reached through it).
    pub guid: Guid,
    /// Peer (node index, port), valid when `remote_sweep` is the current sweep.
    pub remote: u32,
    pub remote_port: u8,
    pub remote_sweep: u64,
    /// Assigned base LID and LMC (end ports only; Lid(0) = none).
    pub lid: Lid,
    pub lmc: u8,
    /// P_KeyTable this port should hold (empty = not managed).
    pub pkey_want: Vec<u16>,
    /// P_KeyTable believed to be in the port (valid when `pkey_known_valid`).
    pub pkey_known: Vec<u16>,
    pub pkey_known_valid: bool,
    /// Partition enforcement bits wanted (switch ports facing end ports).
    pub enforce_in: bool,
    pub enforce_out: bool,
    /// The node's management port had no LID when discovered: never configured since
    /// reset, so its tables hold their defaults.
    pub fresh: bool,
    /// This sweeper has written the port's PortInfo at least once.
    pub programmed: bool,
    /// ClientReregister is to be set with the port's next PortInfo Set (the SA's state was
    /// lost: [`crate::Sweeper::reregister_clients`]).
    pub rereg_wanted: bool,
    /// The SMA does not hold M_KeyLeasePeriod (a Set's answer kept another value; ibsim
    /// does this): the value it holds is written back instead of rewritten every sweep.
    pub lease_not_held: bool,
    /// The switch port does not hold the partition enforcement bits written (ibsim does
    /// not): no Set is queued for them alone any more (the audit reports the port).
    pub enforce_not_held: bool,
}

/// What building an SMP reads of a port, kept apart from [`Port`] (same index) in a small
/// record so that on a large fabric it does not cost a cache miss into the much larger
/// port record: the directed path to the node through this port (offset/len in the path
/// arena, and the node before it on the path, its gate), valid when `sweep` is the current
/// sweep; and, for management ports, the M_Key candidate believed in force.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PathRef {
    pub sweep: u64,
    pub off: u32,
    pub via: u32,
    pub len: u8,
    /// Management ports: index of the candidate M_Key believed in force.
    pub key_idx: u8,
}

/// The shape of a node as addressing a request reads it (a copy of [`Node`]'s fields of
/// the same names, kept small for the same reason as [`PathRef`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct NodeShape {
    pub first_port: u32,
    pub sw: u32,
    pub nports: u8,
    pub is_switch: bool,
    pub path_port: u8,
}

impl NodeShape {
    pub fn port_index(&self, p: u8) -> usize {
        self.first_port as usize + p as usize
    }
}

impl Default for PathRef {
    fn default() -> PathRef {
        PathRef {
            sweep: 0,
            off: 0,
            via: NONE,
            len: 0,
            key_idx: 0,
        }
    }
}

/// Per-switch state.
#[derive(Clone, Debug)]
pub(crate) struct Switch {
    pub node: u32,
    pub info: SwitchInfo,
    /// The LFT in the switch equals the programmed tables (`Programming::lfts`) for it.
    pub lft_valid: bool,
    /// LinearFDBTop this sweeper last wrote.
    pub fdb_top: u16,
    /// Index of this switch in the current `Lfts`, or NONE.
    pub lft_idx: u32,
    /// SwitchInfo.PortStateChange was seen set in this sweep.
    pub psc_seen: bool,
    /// A Set for the LFT failed in this sweep.
    pub lft_failed: bool,
    /// MulticastFDBTop the next SwitchInfo Set writes (switches that support it, once
    /// multicast groups are known; see `mcast::Sweeper::mft_tops`).
    pub mft_top_want: Option<u16>,
}

impl Node {
    pub fn port_index(&self, p: u8) -> usize {
        self.first_port as usize + p as usize
    }
}

/// The last LID a table routes (0 when none): what LinearFDBTop was set to by the master
/// that programmed it (tables kept in 64-entry blocks are padded with no-route entries).
pub(crate) fn routed_top(t: &SwitchLft) -> u16 {
    t.ports
        .iter()
        .rposition(|&p| p != NO_ROUTE)
        .map_or(0, |i| i as u16)
}
