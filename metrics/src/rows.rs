//! The rows the performance manager hands to [`super::set_port_counters`] and
//! [`super::set_link_health`]: one port's accumulated counters, one link end's health. The
//! counters are `mad::perf::Counter`s; each but QP1Dropped (not read by the perf manager's
//! thresholds, not modelled everywhere) is the family `ib_port_<name>_total`.

use mad::perf::Counter;

/// The counters exported, in exposition order (every [`Counter`] but QP1Dropped).
pub const EXPORTED: [Counter; 17] = {
    let mut a = [Counter::SymbolError; 17];
    let mut i = 0;
    let mut j = 0;
    while i < Counter::ALL.len() {
        if !matches!(Counter::ALL[i], Counter::Qp1Dropped) {
            a[j] = Counter::ALL[i];
            j += 1;
        }
        i += 1;
    }
    a
};

/// (name in metric names and the `counter` label, HELP text) of an exported counter; None
/// for QP1Dropped.
pub fn info(c: Counter) -> Option<(&'static str, &'static str)> {
    Some(match c {
        Counter::SymbolError => (
            "symbol_error",
            "Minor link errors on the port (SymbolErrorCounter), accumulated across counter clears",
        ),
        Counter::LinkErrorRecovery => (
            "link_error_recovery",
            "Link error recovery processes completed (LinkErrorRecoveryCounter), accumulated across counter clears",
        ),
        Counter::LinkDowned => (
            "link_downed",
            "Times the link went down after failed error recovery (LinkDownedCounter), accumulated across counter clears",
        ),
        Counter::RcvErrors => (
            "rcv_errors",
            "Packets received with errors (PortRcvErrors), accumulated across counter clears",
        ),
        Counter::RcvRemotePhysicalErrors => (
            "rcv_remote_physical_errors",
            "Packets received marked with the EBP delimiter (PortRcvRemotePhysicalErrors), accumulated across counter clears",
        ),
        Counter::RcvSwitchRelayErrors => (
            "rcv_switch_relay_errors",
            "Packets the switch could not relay (PortRcvSwitchRelayErrors), accumulated across counter clears",
        ),
        Counter::XmitDiscards => (
            "xmit_discards",
            "Outbound packets discarded (PortXmitDiscards), accumulated across counter clears",
        ),
        Counter::XmitConstraintErrors => (
            "xmit_constraint_errors",
            "Packets not sent because of a constraint (PortXmitConstraintErrors), accumulated across counter clears",
        ),
        Counter::RcvConstraintErrors => (
            "rcv_constraint_errors",
            "Packets discarded on receive because of a constraint (PortRcvConstraintErrors), accumulated across counter clears",
        ),
        Counter::LocalLinkIntegrityErrors => (
            "local_link_integrity_errors",
            "Times local physical errors exceeded the threshold (LocalLinkIntegrityErrors), accumulated across counter clears",
        ),
        Counter::ExcessiveBufferOverrunErrors => (
            "excessive_buffer_overrun_errors",
            "Consecutive flow control update periods with buffer overrun (ExcessiveBufferOverrunErrors), accumulated across counter clears",
        ),
        Counter::Vl15Dropped => (
            "vl15_dropped",
            "Incoming VL15 packets dropped (VL15Dropped), accumulated across counter clears",
        ),
        Counter::XmitData => (
            "xmit_data",
            "Octets transmitted, PortXmitData x 4 (the counter counts 4-octet words), accumulated across counter clears",
        ),
        Counter::RcvData => (
            "rcv_data",
            "Octets received, PortRcvData x 4 (the counter counts 4-octet words), accumulated across counter clears",
        ),
        Counter::XmitPkts => (
            "xmit_pkts",
            "Packets transmitted (PortXmitPkts), accumulated across counter clears",
        ),
        Counter::RcvPkts => (
            "rcv_pkts",
            "Packets received (PortRcvPkts), accumulated across counter clears",
        ),
        Counter::XmitWait => (
            "xmit_wait",
            "Ticks the port had data to send but no flow-control credits (PortXmitWait), accumulated across counter clears",
        ),
        Counter::Qp1Dropped => return None,
    })
}

/// One port's counters as the perf manager accumulated them: monotonic totals across the
/// counter clears it did (every value only grows while the process runs). PortXmitData and
/// PortRcvData are in octets (the counters' 4-octet words x 4, done by the caller).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortCounterRow {
    /// NodeGUID of the port's node.
    pub node_guid: u64,
    /// Port number (0: a switch's management port).
    pub port: u8,
    /// Every counter, indexed as [`Counter::ALL`].
    pub values: [u64; Counter::ALL.len()],
}

impl PortCounterRow {
    /// The value of one counter.
    pub fn get(&self, c: Counter) -> u64 {
        self.values[c.index()]
    }

    /// One counter, to set or accumulate.
    pub fn counter_mut(&mut self, c: Counter) -> &mut u64 {
        &mut self.values[c.index()]
    }
}

/// A link's health as the perf manager judges it (the gauge's value).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LinkHealth {
    /// 0: healthy.
    #[default]
    Ok = 0,
    /// 1: up, with errors or alarms.
    Degraded = 1,
    /// 2: down.
    Down = 2,
}

/// One end of a link and its health (`ib_link_health`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkHealthRow {
    /// NodeGUID of this end's node.
    pub node_guid: u64,
    /// This end's port number.
    pub port: u8,
    /// NodeGUID of the node at the other end.
    pub peer_guid: u64,
    /// The other end's port number.
    pub peer_port: u8,
    /// The link's health.
    pub health: LinkHealth,
}
