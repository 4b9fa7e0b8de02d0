//! PortCounters (attribute 0x0012, IBA 16.1.3.5) and PortCountersExtended (0x001D,
//! IBA 16.1.4.11). Byte offsets are those of opensm `ib_types.h` `ib_port_counters_t` and
//! `ib_port_counters_ext_t` (libibmad `IB_PC_*_F` / `IB_PC_EXT_*_F`).

use super::{PERF_DATA_LEN, PerfAttribute};
use crate::attr::{bits, place};
use crate::header::AttributeId;
use crate::wire::*;

/// PortSelect value meaning "all ports" (only when ClassPortInfo has AllPortSelect).
pub const ALL_PORTS: u8 = 0xFF;

/// PortCounters, 44 bytes:
///
/// | bytes | field | width |
/// |---|---|---|
/// | 0 | reserved | 8 |
/// | 1 | PortSelect | 8 |
/// | 2-3 | CounterSelect | 16 |
/// | 4-5 | SymbolErrorCounter | 16 |
/// | 6 | LinkErrorRecoveryCounter | 8 |
/// | 7 | LinkDownedCounter | 8 |
/// | 8-9 | PortRcvErrors | 16 |
/// | 10-11 | PortRcvRemotePhysicalErrors | 16 |
/// | 12-13 | PortRcvSwitchRelayErrors | 16 |
/// | 14-15 | PortXmitDiscards | 16 |
/// | 16 | PortXmitConstraintErrors | 8 |
/// | 17 | PortRcvConstraintErrors | 8 |
/// | 18 | CounterSelect2 | 8 |
/// | 19 bits 7..4 | LocalLinkIntegrityErrors | 4 |
/// | 19 bits 3..0 | ExcessiveBufferOverrunErrors | 4 |
/// | 20-21 | QP1Dropped | 16 |
/// | 22-23 | VL15Dropped | 16 |
/// | 24-27 | PortXmitData (in 4-byte words) | 32 |
/// | 28-31 | PortRcvData (in 4-byte words) | 32 |
/// | 32-35 | PortXmitPkts | 32 |
/// | 36-39 | PortRcvPkts | 32 |
/// | 40-43 | PortXmitWait | 32 |
///
/// (opensm `ib_port_counters_t`: `reserved`, `port_select`, `counter_select`, ...,
/// `counter_select2`, `link_int_buffer_overrun` with `PC_LINK_INT` = high nibble and
/// `PC_BUF_OVERRUN` = low nibble, `qp1_dropped`, `vl15_dropped`, `xmit_data` ...
/// `xmit_wait`.) The counters saturate at their all-ones value (see [`Counter::max`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct PortCounters {
    /// Byte 1: PortSelect (0xFF: all ports, see [`ALL_PORTS`]).
    pub port_select: u8,
    /// Bytes 2-3: CounterSelect (Set: which counters to clear).
    pub counter_select: u16,
    /// Bytes 4-5: SymbolErrorCounter.
    pub symbol_error: u16,
    /// Byte 6: LinkErrorRecoveryCounter.
    pub link_error_recovery: u8,
    /// Byte 7: LinkDownedCounter.
    pub link_downed: u8,
    /// Bytes 8-9: PortRcvErrors.
    pub rcv_errors: u16,
    /// Bytes 10-11: PortRcvRemotePhysicalErrors.
    pub rcv_remote_physical_errors: u16,
    /// Bytes 12-13: PortRcvSwitchRelayErrors.
    pub rcv_switch_relay_errors: u16,
    /// Bytes 14-15: PortXmitDiscards.
    pub xmit_discards: u16,
    /// Byte 16: PortXmitConstraintErrors.
    pub xmit_constraint_errors: u8,
    /// Byte 17: PortRcvConstraintErrors.
    pub rcv_constraint_errors: u8,
    /// Byte 18: CounterSelect2.
    pub counter_select2: u8,
    /// Byte 19 bits 7..4: LocalLinkIntegrityErrors (4 bits).
    pub local_link_integrity_errors: u8,
    /// Byte 19 bits 3..0: ExcessiveBufferOverrunErrors (4 bits).
    pub excessive_buffer_overrun_errors: u8,
    /// Bytes 20-21: QP1Dropped.
    pub qp1_dropped: u16,
    /// Bytes 22-23: VL15Dropped.
    pub vl15_dropped: u16,
    /// Bytes 24-27: PortXmitData, in units of 4 bytes.
    pub xmit_data: u32,
    /// Bytes 28-31: PortRcvData, in units of 4 bytes.
    pub rcv_data: u32,
    /// Bytes 32-35: PortXmitPkts.
    pub xmit_pkts: u32,
    /// Bytes 36-39: PortRcvPkts.
    pub rcv_pkts: u32,
    /// Bytes 40-43: PortXmitWait (valid when ClassPortInfo has
    /// [`super::ClassPortInfo::CAP_PORT_COUNTERS_XMIT_WAIT`]).
    pub xmit_wait: u32,
}

/// One counter of [`PortCounters`], for the saturation helpers.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum Counter {
    /// SymbolErrorCounter (16 bits).
    SymbolError,
    /// LinkErrorRecoveryCounter (8 bits).
    LinkErrorRecovery,
    /// LinkDownedCounter (8 bits).
    LinkDowned,
    /// PortRcvErrors (16 bits).
    RcvErrors,
    /// PortRcvRemotePhysicalErrors (16 bits).
    RcvRemotePhysicalErrors,
    /// PortRcvSwitchRelayErrors (16 bits).
    RcvSwitchRelayErrors,
    /// PortXmitDiscards (16 bits).
    XmitDiscards,
    /// PortXmitConstraintErrors (8 bits).
    XmitConstraintErrors,
    /// PortRcvConstraintErrors (8 bits).
    RcvConstraintErrors,
    /// LocalLinkIntegrityErrors (4 bits).
    LocalLinkIntegrityErrors,
    /// ExcessiveBufferOverrunErrors (4 bits).
    ExcessiveBufferOverrunErrors,
    /// QP1Dropped (16 bits).
    Qp1Dropped,
    /// VL15Dropped (16 bits).
    Vl15Dropped,
    /// PortXmitData (32 bits).
    XmitData,
    /// PortRcvData (32 bits).
    RcvData,
    /// PortXmitPkts (32 bits).
    XmitPkts,
    /// PortRcvPkts (32 bits).
    RcvPkts,
    /// PortXmitWait (32 bits).
    XmitWait,
}

impl Counter {
    /// The error counters, in the order of their PortCounters CounterSelect bits 0..=11
    /// (SymbolErrorCounter through VL15Dropped, QP1Dropped aside).
    pub const ERRORS: [Counter; 12] = [
        Counter::SymbolError,
        Counter::LinkErrorRecovery,
        Counter::LinkDowned,
        Counter::RcvErrors,
        Counter::RcvRemotePhysicalErrors,
        Counter::RcvSwitchRelayErrors,
        Counter::XmitDiscards,
        Counter::XmitConstraintErrors,
        Counter::RcvConstraintErrors,
        Counter::LocalLinkIntegrityErrors,
        Counter::ExcessiveBufferOverrunErrors,
        Counter::Vl15Dropped,
    ];

    /// Position in [`Counter::ALL`] (the declaration order, checked by a test).
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Every counter, in wire order.
    pub const ALL: [Counter; 18] = [
        Counter::SymbolError,
        Counter::LinkErrorRecovery,
        Counter::LinkDowned,
        Counter::RcvErrors,
        Counter::RcvRemotePhysicalErrors,
        Counter::RcvSwitchRelayErrors,
        Counter::XmitDiscards,
        Counter::XmitConstraintErrors,
        Counter::RcvConstraintErrors,
        Counter::LocalLinkIntegrityErrors,
        Counter::ExcessiveBufferOverrunErrors,
        Counter::Qp1Dropped,
        Counter::Vl15Dropped,
        Counter::XmitData,
        Counter::RcvData,
        Counter::XmitPkts,
        Counter::RcvPkts,
        Counter::XmitWait,
    ];

    /// Width on the wire, in bits.
    pub const fn width(self) -> u32 {
        match self {
            Counter::LocalLinkIntegrityErrors | Counter::ExcessiveBufferOverrunErrors => 4,
            Counter::LinkErrorRecovery
            | Counter::LinkDowned
            | Counter::XmitConstraintErrors
            | Counter::RcvConstraintErrors => 8,
            Counter::SymbolError
            | Counter::RcvErrors
            | Counter::RcvRemotePhysicalErrors
            | Counter::RcvSwitchRelayErrors
            | Counter::XmitDiscards
            | Counter::Qp1Dropped
            | Counter::Vl15Dropped => 16,
            Counter::XmitData
            | Counter::RcvData
            | Counter::XmitPkts
            | Counter::RcvPkts
            | Counter::XmitWait => 32,
        }
    }

    /// The value at which the counter stops (all ones of its width).
    pub const fn max(self) -> u64 {
        (1u64 << self.width()) - 1
    }

    /// The name perfquery prints.
    pub const fn name(self) -> &'static str {
        match self {
            Counter::SymbolError => "SymbolErrorCounter",
            Counter::LinkErrorRecovery => "LinkErrorRecoveryCounter",
            Counter::LinkDowned => "LinkDownedCounter",
            Counter::RcvErrors => "PortRcvErrors",
            Counter::RcvRemotePhysicalErrors => "PortRcvRemotePhysicalErrors",
            Counter::RcvSwitchRelayErrors => "PortRcvSwitchRelayErrors",
            Counter::XmitDiscards => "PortXmitDiscards",
            Counter::XmitConstraintErrors => "PortXmitConstraintErrors",
            Counter::RcvConstraintErrors => "PortRcvConstraintErrors",
            Counter::LocalLinkIntegrityErrors => "LocalLinkIntegrityErrors",
            Counter::ExcessiveBufferOverrunErrors => "ExcessiveBufferOverrunErrors",
            Counter::Qp1Dropped => "QP1Dropped",
            Counter::Vl15Dropped => "VL15Dropped",
            Counter::XmitData => "PortXmitData",
            Counter::RcvData => "PortRcvData",
            Counter::XmitPkts => "PortXmitPkts",
            Counter::RcvPkts => "PortRcvPkts",
            Counter::XmitWait => "PortXmitWait",
        }
    }
}

impl PortCounters {
    /// The value of one counter.
    pub fn get(&self, c: Counter) -> u64 {
        match c {
            Counter::SymbolError => self.symbol_error.into(),
            Counter::LinkErrorRecovery => self.link_error_recovery.into(),
            Counter::LinkDowned => self.link_downed.into(),
            Counter::RcvErrors => self.rcv_errors.into(),
            Counter::RcvRemotePhysicalErrors => self.rcv_remote_physical_errors.into(),
            Counter::RcvSwitchRelayErrors => self.rcv_switch_relay_errors.into(),
            Counter::XmitDiscards => self.xmit_discards.into(),
            Counter::XmitConstraintErrors => self.xmit_constraint_errors.into(),
            Counter::RcvConstraintErrors => self.rcv_constraint_errors.into(),
            Counter::LocalLinkIntegrityErrors => self.local_link_integrity_errors.into(),
            Counter::ExcessiveBufferOverrunErrors => self.excessive_buffer_overrun_errors.into(),
            Counter::Qp1Dropped => self.qp1_dropped.into(),
            Counter::Vl15Dropped => self.vl15_dropped.into(),
            Counter::XmitData => self.xmit_data.into(),
            Counter::RcvData => self.rcv_data.into(),
            Counter::XmitPkts => self.xmit_pkts.into(),
            Counter::RcvPkts => self.rcv_pkts.into(),
            Counter::XmitWait => self.xmit_wait.into(),
        }
    }

    /// True when the counter has reached its maximum and stopped counting. (A 4-bit field
    /// holding more than 15 cannot come off the wire; such a value counts as saturated.)
    pub fn is_saturated(&self, c: Counter) -> bool {
        self.get(c) >= c.max()
    }

    /// The counters that are saturated, in wire order.
    pub fn saturated(&self) -> impl Iterator<Item = Counter> + '_ {
        Counter::ALL
            .into_iter()
            .filter(move |&c| self.is_saturated(c))
    }
}

impl PerfAttribute for PortCounters {
    const ID: AttributeId = AttributeId::PERF_PORT_COUNTERS;
    const LEN: usize = 44;
    const NAME: &'static str = "PortCounters";

    fn decode(d: &[u8; PERF_DATA_LEN]) -> PortCounters {
        PortCounters {
            port_select: d[1],
            counter_select: get_u16(d, 2),
            symbol_error: get_u16(d, 4),
            link_error_recovery: d[6],
            link_downed: d[7],
            rcv_errors: get_u16(d, 8),
            rcv_remote_physical_errors: get_u16(d, 10),
            rcv_switch_relay_errors: get_u16(d, 12),
            xmit_discards: get_u16(d, 14),
            xmit_constraint_errors: d[16],
            rcv_constraint_errors: d[17],
            counter_select2: d[18],
            local_link_integrity_errors: bits(d[19], 7, 4),
            excessive_buffer_overrun_errors: bits(d[19], 3, 4),
            qp1_dropped: get_u16(d, 20),
            vl15_dropped: get_u16(d, 22),
            xmit_data: get_u32(d, 24),
            rcv_data: get_u32(d, 28),
            xmit_pkts: get_u32(d, 32),
            rcv_pkts: get_u32(d, 36),
            xmit_wait: get_u32(d, 40),
        }
    }

    fn encode(&self, d: &mut [u8; PERF_DATA_LEN]) {
        d.fill(0);
        d[1] = self.port_select;
        put_u16(d, 2, self.counter_select);
        put_u16(d, 4, self.symbol_error);
        d[6] = self.link_error_recovery;
        d[7] = self.link_downed;
        put_u16(d, 8, self.rcv_errors);
        put_u16(d, 10, self.rcv_remote_physical_errors);
        put_u16(d, 12, self.rcv_switch_relay_errors);
        put_u16(d, 14, self.xmit_discards);
        d[16] = self.xmit_constraint_errors;
        d[17] = self.rcv_constraint_errors;
        d[18] = self.counter_select2;
        d[19] = place(self.local_link_integrity_errors, 7, 4)
            | place(self.excessive_buffer_overrun_errors, 3, 4);
        put_u16(d, 20, self.qp1_dropped);
        put_u16(d, 22, self.vl15_dropped);
        put_u32(d, 24, self.xmit_data);
        put_u32(d, 28, self.rcv_data);
        put_u32(d, 32, self.xmit_pkts);
        put_u32(d, 36, self.rcv_pkts);
        put_u32(d, 40, self.xmit_wait);
    }
}

/// PortCountersExtended, 72 bytes: the 64-bit data and packet counters.
///
/// | bytes | field |
/// |---|---|
/// | 0 | reserved |
/// | 1 | PortSelect |
/// | 2-3 | CounterSelect |
/// | 4-7 | CounterSelect2 |
/// | 8-15 | PortXmitData (4-byte words) |
/// | 16-23 | PortRcvData (4-byte words) |
/// | 24-31 | PortXmitPkts |
/// | 32-39 | PortRcvPkts |
/// | 40-47 | PortUnicastXmitPkts |
/// | 48-55 | PortUnicastRcvPkts |
/// | 56-63 | PortMulticastXmitPkts |
/// | 64-71 | PortMulticastRcvPkts |
///
/// (opensm `ib_port_counters_ext_t` up to `multicast_rcv_pkts`.) The 64-bit error counters
/// that follow from byte 72 (`symbol_err_cnt` ... `qp1_dropped`, present when
/// ClassPortInfo CapabilityMask2 IsAdditionalPortCountersExtendedSupported) are not
/// decoded: they encode as zero.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct PortCountersExtended {
    /// Byte 1: PortSelect.
    pub port_select: u8,
    /// Bytes 2-3: CounterSelect.
    pub counter_select: u16,
    /// Bytes 4-7: CounterSelect2.
    pub counter_select2: u32,
    /// Bytes 8-15: PortXmitData, in units of 4 bytes.
    pub xmit_data: u64,
    /// Bytes 16-23: PortRcvData, in units of 4 bytes.
    pub rcv_data: u64,
    /// Bytes 24-31: PortXmitPkts.
    pub xmit_pkts: u64,
    /// Bytes 32-39: PortRcvPkts.
    pub rcv_pkts: u64,
    /// Bytes 40-47: PortUnicastXmitPkts.
    pub unicast_xmit_pkts: u64,
    /// Bytes 48-55: PortUnicastRcvPkts.
    pub unicast_rcv_pkts: u64,
    /// Bytes 56-63: PortMulticastXmitPkts.
    pub multicast_xmit_pkts: u64,
    /// Bytes 64-71: PortMulticastRcvPkts.
    pub multicast_rcv_pkts: u64,
}

/// One counter of [`PortCountersExtended`] (all 64 bits wide).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum ExtCounter {
    /// PortXmitData.
    XmitData,
    /// PortRcvData.
    RcvData,
    /// PortXmitPkts.
    XmitPkts,
    /// PortRcvPkts.
    RcvPkts,
    /// PortUnicastXmitPkts.
    UnicastXmitPkts,
    /// PortUnicastRcvPkts.
    UnicastRcvPkts,
    /// PortMulticastXmitPkts.
    MulticastXmitPkts,
    /// PortMulticastRcvPkts.
    MulticastRcvPkts,
}

impl ExtCounter {
    /// Every counter, in wire order.
    pub const ALL: [ExtCounter; 8] = [
        ExtCounter::XmitData,
        ExtCounter::RcvData,
        ExtCounter::XmitPkts,
        ExtCounter::RcvPkts,
        ExtCounter::UnicastXmitPkts,
        ExtCounter::UnicastRcvPkts,
        ExtCounter::MulticastXmitPkts,
        ExtCounter::MulticastRcvPkts,
    ];

    /// Width on the wire, in bits.
    pub const fn width(self) -> u32 {
        64
    }

    /// The value at which the counter stops.
    pub const fn max(self) -> u64 {
        u64::MAX
    }

    /// The name perfquery prints.
    pub const fn name(self) -> &'static str {
        match self {
            ExtCounter::XmitData => "PortXmitData",
            ExtCounter::RcvData => "PortRcvData",
            ExtCounter::XmitPkts => "PortXmitPkts",
            ExtCounter::RcvPkts => "PortRcvPkts",
            ExtCounter::UnicastXmitPkts => "PortUnicastXmitPkts",
            ExtCounter::UnicastRcvPkts => "PortUnicastRcvPkts",
            ExtCounter::MulticastXmitPkts => "PortMulticastXmitPkts",
            ExtCounter::MulticastRcvPkts => "PortMulticastRcvPkts",
        }
    }

    /// True for the counters a port without IsExtendedWidthSupported (only
    /// IsExtendedWidthSupportedNoIETF) may leave at zero: the unicast and multicast ones.
    pub const fn is_ietf(self) -> bool {
        matches!(
            self,
            ExtCounter::UnicastXmitPkts
                | ExtCounter::UnicastRcvPkts
                | ExtCounter::MulticastXmitPkts
                | ExtCounter::MulticastRcvPkts
        )
    }
}

impl PortCountersExtended {
    /// The value of one counter.
    pub fn get(&self, c: ExtCounter) -> u64 {
        match c {
            ExtCounter::XmitData => self.xmit_data,
            ExtCounter::RcvData => self.rcv_data,
            ExtCounter::XmitPkts => self.xmit_pkts,
            ExtCounter::RcvPkts => self.rcv_pkts,
            ExtCounter::UnicastXmitPkts => self.unicast_xmit_pkts,
            ExtCounter::UnicastRcvPkts => self.unicast_rcv_pkts,
            ExtCounter::MulticastXmitPkts => self.multicast_xmit_pkts,
            ExtCounter::MulticastRcvPkts => self.multicast_rcv_pkts,
        }
    }

    /// True when the counter holds all ones.
    pub fn is_saturated(&self, c: ExtCounter) -> bool {
        self.get(c) == c.max()
    }

    /// The counters that are saturated, in wire order.
    pub fn saturated(&self) -> impl Iterator<Item = ExtCounter> + '_ {
        ExtCounter::ALL
            .into_iter()
            .filter(move |&c| self.is_saturated(c))
    }
}

impl PerfAttribute for PortCountersExtended {
    const ID: AttributeId = AttributeId::PERF_PORT_COUNTERS_EXTENDED;
    const LEN: usize = 72;
    const NAME: &'static str = "PortCountersExtended";

    fn decode(d: &[u8; PERF_DATA_LEN]) -> PortCountersExtended {
        PortCountersExtended {
            port_select: d[1],
            counter_select: get_u16(d, 2),
            counter_select2: get_u32(d, 4),
            xmit_data: get_u64(d, 8),
            rcv_data: get_u64(d, 16),
            xmit_pkts: get_u64(d, 24),
            rcv_pkts: get_u64(d, 32),
            unicast_xmit_pkts: get_u64(d, 40),
            unicast_rcv_pkts: get_u64(d, 48),
            multicast_xmit_pkts: get_u64(d, 56),
            multicast_rcv_pkts: get_u64(d, 64),
        }
    }

    fn encode(&self, d: &mut [u8; PERF_DATA_LEN]) {
        d.fill(0);
        d[1] = self.port_select;
        put_u16(d, 2, self.counter_select);
        put_u32(d, 4, self.counter_select2);
        put_u64(d, 8, self.xmit_data);
        put_u64(d, 16, self.rcv_data);
        put_u64(d, 24, self.xmit_pkts);
        put_u64(d, 32, self.rcv_pkts);
        put_u64(d, 40, self.unicast_xmit_pkts);
        put_u64(d, 48, self.unicast_rcv_pkts);
        put_u64(d, 56, self.multicast_xmit_pkts);
        put_u64(d, 64, self.multicast_rcv_pkts);
    }
}

impl PortCounters {
    /// Every field in the attribute's order with perfquery's names (PortSelect,
    /// CounterSelect, the counters with CounterSelect2 after PortRcvConstraintErrors).
    pub fn fields(&self) -> Vec<(&'static str, u64)> {
        let mut v = vec![
            ("PortSelect", u64::from(self.port_select)),
            ("CounterSelect", u64::from(self.counter_select)),
        ];
        for c in Counter::ALL {
            if c == Counter::LocalLinkIntegrityErrors {
                v.push(("CounterSelect2", u64::from(self.counter_select2)));
            }
            v.push((c.name(), self.get(c)));
        }
        v
    }
}

impl PortCountersExtended {
    /// Every field in the attribute's order with perfquery's names (PortSelect,
    /// CounterSelect, the 64-bit counters).
    pub fn fields(&self) -> Vec<(&'static str, u64)> {
        let mut v = vec![
            ("PortSelect", u64::from(self.port_select)),
            ("CounterSelect", u64::from(self.counter_select)),
        ];
        v.extend(ExtCounter::ALL.map(|c| (c.name(), self.get(c))));
        v
    }
}
