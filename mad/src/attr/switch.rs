//! Switch attributes: SwitchInfo (IBA 14.2.5.4), LinearForwardingTable (14.2.5.10) and
//! MulticastForwardingTable (14.2.5.12).

use super::{SmpAttribute, bits, place};
use crate::header::AttributeId;
use crate::wire::*;
use fabric::Lid;

/// SwitchInfo, 20 defined bytes (libibmad fields.c `IB_SW_*_F`; opensm `ib_switch_info_t`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct SwitchInfo {
    /// Bytes 0-1: LinearFDBCap (LFT entries supported).
    pub linear_fdb_cap: u16,
    /// Bytes 2-3: RandomFDBCap.
    pub random_fdb_cap: u16,
    /// Bytes 4-5: MulticastFDBCap.
    pub multicast_fdb_cap: u16,
    /// Bytes 6-7: LinearFDBTop (highest valid LID in the LFT).
    pub linear_fdb_top: u16,
    /// Byte 8: DefaultPort.
    pub default_port: u8,
    /// Byte 9: DefaultMulticastPrimaryPort.
    pub default_multicast_primary_port: u8,
    /// Byte 10: DefaultMulticastNotPrimaryPort.
    pub default_multicast_not_primary_port: u8,
    /// Byte 11 bits 7..3: LifeTimeValue (5 bits).
    pub life_time_value: u8,
    /// Byte 11 bit 2: PortStateChange (set by the switch on a port state change; the SM
    /// clears it by writing 1).
    pub port_state_change: bool,
    /// Byte 11 bits 1..0: OptimizedSLtoVLMappingProgramming (2 bits).
    pub optimized_sl_to_vl_mapping_programming: u8,
    /// Bytes 12-13: LIDsPerPort.
    pub lids_per_port: u16,
    /// Bytes 14-15: PartitionEnforcementCap (P_KeyTable entries on external ports).
    pub partition_enforcement_cap: u16,
    /// Byte 16 bit 7: InboundEnforcementCap.
    pub inbound_enforcement_cap: bool,
    /// Byte 16 bit 6: OutboundEnforcementCap.
    pub outbound_enforcement_cap: bool,
    /// Byte 16 bit 5: FilterRawInboundCap.
    pub filter_raw_inbound_cap: bool,
    /// Byte 16 bit 4: FilterRawOutboundCap.
    pub filter_raw_outbound_cap: bool,
    /// Byte 16 bit 3: EnhancedPort0.
    pub enhanced_port0: bool,
    /// Bytes 18-19: MulticastFDBTop.
    pub multicast_fdb_top: u16,
}

impl SmpAttribute for SwitchInfo {
    const ID: AttributeId = AttributeId::SWITCH_INFO;
    const LEN: usize = 20;
    const NAME: &'static str = "SwitchInfo";

    fn decode(d: &[u8; 64]) -> SwitchInfo {
        SwitchInfo {
            linear_fdb_cap: get_u16(d, 0),
            random_fdb_cap: get_u16(d, 2),
            multicast_fdb_cap: get_u16(d, 4),
            linear_fdb_top: get_u16(d, 6),
            default_port: d[8],
            default_multicast_primary_port: d[9],
            default_multicast_not_primary_port: d[10],
            life_time_value: bits(d[11], 7, 5),
            port_state_change: bits(d[11], 2, 1) != 0,
            optimized_sl_to_vl_mapping_programming: bits(d[11], 1, 2),
            lids_per_port: get_u16(d, 12),
            partition_enforcement_cap: get_u16(d, 14),
            inbound_enforcement_cap: bits(d[16], 7, 1) != 0,
            outbound_enforcement_cap: bits(d[16], 6, 1) != 0,
            filter_raw_inbound_cap: bits(d[16], 5, 1) != 0,
            filter_raw_outbound_cap: bits(d[16], 4, 1) != 0,
            enhanced_port0: bits(d[16], 3, 1) != 0,
            multicast_fdb_top: get_u16(d, 18),
        }
    }

    fn encode(&self, d: &mut [u8; 64]) {
        d.fill(0);
        put_u16(d, 0, self.linear_fdb_cap);
        put_u16(d, 2, self.random_fdb_cap);
        put_u16(d, 4, self.multicast_fdb_cap);
        put_u16(d, 6, self.linear_fdb_top);
        d[8] = self.default_port;
        d[9] = self.default_multicast_primary_port;
        d[10] = self.default_multicast_not_primary_port;
        d[11] = place(self.life_time_value, 7, 5)
            | place(self.port_state_change as u8, 2, 1)
            | place(self.optimized_sl_to_vl_mapping_programming, 1, 2);
        put_u16(d, 12, self.lids_per_port);
        put_u16(d, 14, self.partition_enforcement_cap);
        d[16] = place(self.inbound_enforcement_cap as u8, 7, 1)
            | place(self.outbound_enforcement_cap as u8, 6, 1)
            | place(self.filter_raw_inbound_cap as u8, 5, 1)
            | place(self.filter_raw_outbound_cap as u8, 4, 1)
            | place(self.enhanced_port0 as u8, 3, 1);
        put_u16(d, 18, self.multicast_fdb_top);
    }
}

/// One 64-entry block of a switch's LinearForwardingTable. The attribute modifier is the
/// block number: entry i of block b is the output port for LID 64*b + i. Port 255 (0xFF)
/// means "no route" by convention (OpenSM's OSM_NO_PATH).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct LinearForwardingTable {
    /// Output port per LID of the block.
    pub ports: [u8; 64],
}

impl Default for LinearForwardingTable {
    fn default() -> LinearForwardingTable {
        LinearForwardingTable {
            ports: [Self::NO_PATH; 64],
        }
    }
}

impl LinearForwardingTable {
    /// Entries per block.
    pub const ENTRIES: usize = 64;
    /// The "unreachable" port value.
    pub const NO_PATH: u8 = 0xFF;

    /// The block (attribute modifier) holding `lid`.
    pub fn block_of(lid: Lid) -> u32 {
        u32::from(lid.0) / 64
    }

    /// The index of `lid` inside its block.
    pub fn index_of(lid: Lid) -> usize {
        usize::from(lid.0) % 64
    }

    /// The first LID of block `block` (a modifier above 1023 wraps into the 16-bit LID space).
    pub fn first_lid(block: u32) -> Lid {
        Lid((block.wrapping_mul(64) & 0xFFFF) as u16)
    }
}

impl SmpAttribute for LinearForwardingTable {
    const ID: AttributeId = AttributeId::LINEAR_FORWARDING_TABLE;
    const LEN: usize = 64;
    const NAME: &'static str = "LinearForwardingTable";

    fn decode(d: &[u8; 64]) -> LinearForwardingTable {
        LinearForwardingTable { ports: *d }
    }

    fn encode(&self, d: &mut [u8; 64]) {
        *d = self.ports;
    }
}

/// One block of a MulticastForwardingTable: 32 multicast LIDs × a 16-bit port mask.
/// Attribute modifier: bits 31..28 = position (which 16 ports: position p covers ports
/// 16p..16p+15, bit i of a mask = port 16p+i), bits 8..0 = block (LID 0xC000 + 32*block + i).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct MulticastForwardingTable {
    /// Port masks, entry i for multicast LID 0xC000 + 32*block + i.
    pub port_masks: [u16; 32],
}

impl MulticastForwardingTable {
    /// Entries per block.
    pub const ENTRIES: usize = 32;

    /// The attribute modifier for `position` (0..=15) and `block` (0..=511).
    pub fn modifier(position: u8, block: u16) -> u32 {
        (u32::from(position & 0xF) << 28) | u32::from(block & 0x1FF)
    }

    /// Splits a modifier into (position, block).
    pub fn split_modifier(attr_mod: u32) -> (u8, u16) {
        (((attr_mod >> 28) & 0xF) as u8, (attr_mod & 0x1FF) as u16)
    }
}

impl SmpAttribute for MulticastForwardingTable {
    const ID: AttributeId = AttributeId::MULTICAST_FORWARDING_TABLE;
    const LEN: usize = 64;
    const NAME: &'static str = "MulticastForwardingTable";

    fn decode(d: &[u8; 64]) -> MulticastForwardingTable {
        let mut port_masks = [0u16; 32];
        for (i, m) in port_masks.iter_mut().enumerate() {
            *m = u16::from_be_bytes([d[2 * i], d[2 * i + 1]]);
        }
        MulticastForwardingTable { port_masks }
    }

    fn encode(&self, d: &mut [u8; 64]) {
        for (chunk, m) in d.chunks_exact_mut(2).zip(self.port_masks.iter()) {
            chunk.copy_from_slice(&m.to_be_bytes());
        }
    }
}
