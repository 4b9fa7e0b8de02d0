//! Simulator parameters.

use serde::{Deserialize, Serialize};

/// Parameters of a simulated fabric. Times are virtual nanoseconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SimConfig {
    /// Seed of every random choice (loss, duplication).
    pub seed: u64,
    /// Propagation plus switching latency of one hop.
    pub hop_latency_ns: u64,
    /// Time a 256-byte SMP occupies a link (serialisation); packets queue behind each other.
    pub wire_time_ns: u64,
    /// Time an SMA takes to answer a request.
    pub sma_latency_ns: u64,
    /// SMPs a switch output port can hold waiting for the link (VL15 buffer); more are
    /// dropped and counted.
    pub vl15_depth: u32,
    /// Time a link takes to retrain after it is set Down or re-enabled.
    pub retrain_ns: u64,
    /// Time a rebooted switch or returned node takes before its links train again.
    pub reboot_ns: u64,
    /// SwitchInfo.LinearFDBCap of every switch.
    pub linear_fdb_cap: u16,
    /// SwitchInfo.MulticastFDBCap of every switch.
    pub multicast_fdb_cap: u16,
    /// Switches set IsMulticastFDBTopSupported on port 0 and honour
    /// SwitchInfo.MulticastFDBTop. They start (and restart after a reboot) with it at
    /// 0xBFFF, no MFT entry valid: the case in which an SM that leaves it alone breaks
    /// multicast. Off (the default, as ibsim): the field is stored and 0 forwards every MLID.
    pub multicast_fdb_top_supported: bool,
    /// PortInfo Sets behave as ibsim's SMA: M_KeyLeasePeriod is not stored (the port
    /// reports 16 after any Set) and neither are a switch port's partition enforcement
    /// bits (they stay off, so the switch does not enforce).
    pub ibsim_port_info_sets: bool,
    /// NodeInfo.PartitionCap of CAs (P_KeyTable entries per CA port).
    pub ca_partition_cap: u16,
    /// SwitchInfo.PartitionEnforcementCap (P_KeyTable entries per switch port).
    pub switch_partition_cap: u16,
    /// Repeat each trap this often until the SM sends TrapRepress with its TID
    /// (0 = send every trap once). At most `trap_repeats` repetitions.
    pub trap_repeat_ns: u64,
    /// Repetitions of an unrepressed trap when `trap_repeat_ns` is set.
    pub trap_repeats: u32,
    /// Keep the log of accepted Sets (memory grows with every accepted Set).
    pub log_sets: bool,
    /// Record every hop of every SMP (for tests; slow and memory hungry).
    pub trace: bool,
    /// The SLtoVLMappingTable every port holds until the SM writes it (and again after a
    /// power cycle): VL per SL. IBA leaves the content after reset unspecified; the
    /// default is ibsim's reset table, SL n -> VL n for SL 0..=14 and SL 15 -> VL 7, so
    /// with the power-up OperationalVLs (VL0-7) SLs 8..=14 are dropped until the SM
    /// programs the tables. `[0; 16]` models hardware that resets every SL to VL0.
    pub sl2vl_reset: [u8; 16],
}

/// ibsim's SLtoVLMappingTable at reset (`sim_net.c`): SL n -> VL n, SL 15 -> VL 7.
pub const IBSIM_SL2VL_RESET: [u8; 16] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 7];

impl Default for SimConfig {
    fn default() -> SimConfig {
        SimConfig {
            seed: 0,
            hop_latency_ns: 200,
            wire_time_ns: 60,
            sma_latency_ns: 500,
            vl15_depth: 8,
            retrain_ns: 1_000_000,
            reboot_ns: 5_000_000,
            linear_fdb_cap: 49152,
            multicast_fdb_cap: 1024,
            multicast_fdb_top_supported: false,
            ibsim_port_info_sets: false,
            ca_partition_cap: 128,
            switch_partition_cap: 32,
            trap_repeat_ns: 0,
            trap_repeats: 16,
            log_sets: true,
            trace: false,
            sl2vl_reset: IBSIM_SL2VL_RESET,
        }
    }
}
