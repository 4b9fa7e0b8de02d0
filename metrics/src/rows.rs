//! The rows the performance manager hands to [`super::set_port_counters`] and
//! [`super::set_link_health`]: one port's accumulated counters, one link end's health.

/// The PortCounters (and PortCountersExtended) a row carries, in exposition order; each is
/// the family `ib_port_<name>_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PortCounter {
    /// SymbolErrorCounter.
    SymbolError,
    /// LinkErrorRecoveryCounter.
    LinkErrorRecovery,
    /// LinkDownedCounter.
    LinkDowned,
    /// PortRcvErrors.
    RcvErrors,
    /// PortRcvRemotePhysicalErrors.
    RcvRemotePhysicalErrors,
    /// PortRcvSwitchRelayErrors.
    RcvSwitchRelayErrors,
    /// PortXmitDiscards.
    XmitDiscards,
    /// PortXmitConstraintErrors.
    XmitConstraintErrors,
    /// PortRcvConstraintErrors.
    RcvConstraintErrors,
    /// LocalLinkIntegrityErrors.
    LocalLinkIntegrityErrors,
    /// ExcessiveBufferOverrunErrors.
    ExcessiveBufferOverrunErrors,
    /// VL15Dropped.
    Vl15Dropped,
    /// PortXmitData, in octets (the counter's 4-octet words x 4).
    XmitData,
    /// PortRcvData, in octets (the counter's 4-octet words x 4).
    RcvData,
    /// PortXmitPkts.
    XmitPkts,
    /// PortRcvPkts.
    RcvPkts,
    /// PortXmitWait.
    XmitWait,
}

impl PortCounter {
    /// Every counter, in exposition order.
    pub const ALL: [PortCounter; 17] = [
        PortCounter::SymbolError,
        PortCounter::LinkErrorRecovery,
        PortCounter::LinkDowned,
        PortCounter::RcvErrors,
        PortCounter::RcvRemotePhysicalErrors,
        PortCounter::RcvSwitchRelayErrors,
        PortCounter::XmitDiscards,
        PortCounter::XmitConstraintErrors,
        PortCounter::RcvConstraintErrors,
        PortCounter::LocalLinkIntegrityErrors,
        PortCounter::ExcessiveBufferOverrunErrors,
        PortCounter::Vl15Dropped,
        PortCounter::XmitData,
        PortCounter::RcvData,
        PortCounter::XmitPkts,
        PortCounter::RcvPkts,
        PortCounter::XmitWait,
    ];

    /// The name in metric names and the `counter` label (`symbol_error`, ...).
    pub fn name(self) -> &'static str {
        self.info().0
    }

    /// (name, HELP text).
    pub(crate) fn info(self) -> (&'static str, &'static str) {
        match self {
            PortCounter::SymbolError => (
                "symbol_error",
                "Minor link errors on the port (SymbolErrorCounter), accumulated across counter clears",
            ),
            PortCounter::LinkErrorRecovery => (
                "link_error_recovery",
                "Link error recovery processes completed (LinkErrorRecoveryCounter), accumulated across counter clears",
            ),
            PortCounter::LinkDowned => (
                "link_downed",
                "Times the link went down after failed error recovery (LinkDownedCounter), accumulated across counter clears",
            ),
            PortCounter::RcvErrors => (
                "rcv_errors",
                "Packets received with errors (PortRcvErrors), accumulated across counter clears",
            ),
            PortCounter::RcvRemotePhysicalErrors => (
                "rcv_remote_physical_errors",
                "Packets received marked with the EBP delimiter (PortRcvRemotePhysicalErrors), accumulated across counter clears",
            ),
            PortCounter::RcvSwitchRelayErrors => (
                "rcv_switch_relay_errors",
                "Packets the switch could not relay (PortRcvSwitchRelayErrors), accumulated across counter clears",
            ),
            PortCounter::XmitDiscards => (
                "xmit_discards",
                "Outbound packets discarded (PortXmitDiscards), accumulated across counter clears",
            ),
            PortCounter::XmitConstraintErrors => (
                "xmit_constraint_errors",
                "Packets not sent because of a constraint (PortXmitConstraintErrors), accumulated across counter clears",
            ),
            PortCounter::RcvConstraintErrors => (
                "rcv_constraint_errors",
                "Packets discarded on receive because of a constraint (PortRcvConstraintErrors), accumulated across counter clears",
            ),
            PortCounter::LocalLinkIntegrityErrors => (
                "local_link_integrity_errors",
                "Times local physical errors exceeded the threshold (LocalLinkIntegrityErrors), accumulated across counter clears",
            ),
            PortCounter::ExcessiveBufferOverrunErrors => (
                "excessive_buffer_overrun_errors",
                "Consecutive flow control update periods with buffer overrun (ExcessiveBufferOverrunErrors), accumulated across counter clears",
            ),
            PortCounter::Vl15Dropped => (
                "vl15_dropped",
                "Incoming VL15 packets dropped (VL15Dropped), accumulated across counter clears",
            ),
            PortCounter::XmitData => (
                "xmit_data",
                "Octets transmitted, PortXmitData x 4 (the counter counts 4-octet words), accumulated across counter clears",
            ),
            PortCounter::RcvData => (
                "rcv_data",
                "Octets received, PortRcvData x 4 (the counter counts 4-octet words), accumulated across counter clears",
            ),
            PortCounter::XmitPkts => (
                "xmit_pkts",
                "Packets transmitted (PortXmitPkts), accumulated across counter clears",
            ),
            PortCounter::RcvPkts => (
                "rcv_pkts",
                "Packets received (PortRcvPkts), accumulated across counter clears",
            ),
            PortCounter::XmitWait => (
                "xmit_wait",
                "Ticks the port had data to send but no flow-control credits (PortXmitWait), accumulated across counter clears",
            ),
        }
    }
}

/// One port's counters as the perf manager accumulated them: monotonic totals across the
/// counter clears it did (every value only grows while the process runs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortCounterRow {
    /// NodeGUID of the port's node.
    pub node_guid: u64,
    /// Port number (0: a switch's management port).
    pub port: u8,
    /// SymbolErrorCounter.
    pub symbol_error: u64,
    /// LinkErrorRecoveryCounter.
    pub link_error_recovery: u64,
    /// LinkDownedCounter.
    pub link_downed: u64,
    /// PortRcvErrors.
    pub rcv_errors: u64,
    /// PortRcvRemotePhysicalErrors.
    pub rcv_remote_physical_errors: u64,
    /// PortRcvSwitchRelayErrors.
    pub rcv_switch_relay_errors: u64,
    /// PortXmitDiscards.
    pub xmit_discards: u64,
    /// PortXmitConstraintErrors.
    pub xmit_constraint_errors: u64,
    /// PortRcvConstraintErrors.
    pub rcv_constraint_errors: u64,
    /// LocalLinkIntegrityErrors.
    pub local_link_integrity_errors: u64,
    /// ExcessiveBufferOverrunErrors.
    pub excessive_buffer_overrun_errors: u64,
    /// VL15Dropped.
    pub vl15_dropped: u64,
    /// Octets transmitted: PortXmitData (4-octet words) x 4, done by the caller.
    pub xmit_data: u64,
    /// Octets received: PortRcvData (4-octet words) x 4, done by the caller.
    pub rcv_data: u64,
    /// PortXmitPkts.
    pub xmit_pkts: u64,
    /// PortRcvPkts.
    pub rcv_pkts: u64,
    /// PortXmitWait.
    pub xmit_wait: u64,
}

impl PortCounterRow {
    /// The value of one counter.
    pub fn get(&self, c: PortCounter) -> u64 {
        let mut r = *self;
        *r.counter_mut(c)
    }

    /// One counter, to set or accumulate.
    pub fn counter_mut(&mut self, c: PortCounter) -> &mut u64 {
        match c {
            PortCounter::SymbolError => &mut self.symbol_error,
            PortCounter::LinkErrorRecovery => &mut self.link_error_recovery,
            PortCounter::LinkDowned => &mut self.link_downed,
            PortCounter::RcvErrors => &mut self.rcv_errors,
            PortCounter::RcvRemotePhysicalErrors => &mut self.rcv_remote_physical_errors,
            PortCounter::RcvSwitchRelayErrors => &mut self.rcv_switch_relay_errors,
            PortCounter::XmitDiscards => &mut self.xmit_discards,
            PortCounter::XmitConstraintErrors => &mut self.xmit_constraint_errors,
            PortCounter::RcvConstraintErrors => &mut self.rcv_constraint_errors,
            PortCounter::LocalLinkIntegrityErrors => &mut self.local_link_integrity_errors,
            PortCounter::ExcessiveBufferOverrunErrors => &mut self.excessive_buffer_overrun_errors,
            PortCounter::Vl15Dropped => &mut self.vl15_dropped,
            PortCounter::XmitData => &mut self.xmit_data,
            PortCounter::RcvData => &mut self.rcv_data,
            PortCounter::XmitPkts => &mut self.xmit_pkts,
            PortCounter::RcvPkts => &mut self.rcv_pkts,
            PortCounter::XmitWait => &mut self.xmit_wait,
        }
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
