//! ClassPortInfo of the Performance Management class (attribute 0x0001, IBA 13.4.8.1 and
//! 16.1.2). The layout is the one every GMP class shares (opensm `ib_class_port_info_t`), so
//! the fields are [`crate::sa::ClassPortInfo`]'s; what is PerfMgt's own is the meaning of the
//! CapabilityMask bits (opensm `ib_types.h` `IB_PM_*`).

use super::{PERF_DATA_LEN, PerfAttribute};
use crate::header::AttributeId;
use crate::sa::{SA_DATA_LEN, SaRecord};

/// PerfMgt ClassPortInfo, 72 bytes: the shared ClassPortInfo layout with PerfMgt's
/// capability bits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct ClassPortInfo {
    /// The fields, as every class lays them out.
    pub info: crate::sa::ClassPortInfo,
}

impl ClassPortInfo {
    /// CapabilityMask bit 8, AllPortSelect: PortSelect 0xFF addresses every port
    /// (`IB_PM_ALL_PORT_SELECT`).
    pub const CAP_ALL_PORT_SELECT: u16 = 1 << 8;
    /// CapabilityMask bit 9, IsExtendedWidthSupported: PortCountersExtended with all eight
    /// counters (`IB_PM_EXT_WIDTH_SUPPORTED`).
    pub const CAP_EXTENDED_WIDTH: u16 = 1 << 9;
    /// CapabilityMask bit 10, IsExtendedWidthSupportedNoIETF: PortCountersExtended without
    /// the unicast/multicast packet counters (`IB_PM_EXT_WIDTH_NOIETF_SUP`).
    pub const CAP_EXTENDED_WIDTH_NO_IETF: u16 = 1 << 10;
    /// CapabilityMask bit 11, SamplesOnlySupported (`IB_PM_SAMPLES_ONLY_SUP`).
    pub const CAP_SAMPLES_ONLY: u16 = 1 << 11;
    /// CapabilityMask bit 12, PortCountersXmitWaitSupported: PortCounters.PortXmitWait is
    /// implemented (`IB_PM_PC_XMIT_WAIT_SUP`).
    pub const CAP_PORT_COUNTERS_XMIT_WAIT: u16 = 1 << 12;
    /// CapabilityMask bit 15, IsQP1DroppedSupported: PortCounters.QP1Dropped is implemented
    /// (`IB_PM_IS_QP1_DROP_SUP`).
    pub const CAP_QP1_DROPPED: u16 = 1 << 15;

    /// The raw CapabilityMask.
    pub fn capability_mask(&self) -> u16 {
        self.info.capability_mask
    }

    fn has(&self, bit: u16) -> bool {
        self.info.capability_mask & bit != 0
    }

    /// AllPortSelect.
    pub fn all_port_select(&self) -> bool {
        self.has(Self::CAP_ALL_PORT_SELECT)
    }

    /// IsExtendedWidthSupported.
    pub fn extended_width(&self) -> bool {
        self.has(Self::CAP_EXTENDED_WIDTH)
    }

    /// IsExtendedWidthSupportedNoIETF.
    pub fn extended_width_no_ietf(&self) -> bool {
        self.has(Self::CAP_EXTENDED_WIDTH_NO_IETF)
    }

    /// True when PortCountersExtended may be asked for at all (either extended-width bit;
    /// opensm's perfmgr tests the same two bits).
    pub fn port_counters_extended(&self) -> bool {
        self.extended_width() || self.extended_width_no_ietf()
    }

    /// PortCountersXmitWaitSupported: PortCounters.PortXmitWait holds a real count.
    pub fn port_xmit_wait(&self) -> bool {
        self.has(Self::CAP_PORT_COUNTERS_XMIT_WAIT)
    }

    /// IsQP1DroppedSupported.
    pub fn qp1_dropped(&self) -> bool {
        self.has(Self::CAP_QP1_DROPPED)
    }
}

impl PerfAttribute for ClassPortInfo {
    const ID: AttributeId = AttributeId::CLASS_PORT_INFO;
    const LEN: usize = 72;
    const NAME: &'static str = "PerfMgt ClassPortInfo";

    fn decode(d: &[u8; PERF_DATA_LEN]) -> ClassPortInfo {
        let mut s = [0u8; SA_DATA_LEN];
        s[..Self::LEN].copy_from_slice(&d[..Self::LEN]);
        ClassPortInfo {
            info: crate::sa::ClassPortInfo::decode_data(&s),
        }
    }

    fn encode(&self, d: &mut [u8; PERF_DATA_LEN]) {
        let s = self.info.to_data();
        d.fill(0);
        d[..Self::LEN].copy_from_slice(&s[..Self::LEN]);
    }
}
