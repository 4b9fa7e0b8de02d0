//! Per-port tables: P_KeyTable (IBA 14.2.5.7), GUIDInfo (14.2.5.5), SLtoVLMappingTable
//! (14.2.5.8) and VLArbitrationTable (14.2.5.9).

use super::{SmpAttribute, bits, place};
use crate::header::AttributeId;
use crate::wire::*;
use fabric::{Guid, PKey};

/// One 32-entry block of a port's P_KeyTable. Attribute modifier: bits 15..0 = block
/// number (entries 32*block ..), bits 23..16 = port number on a switch (ignored on a CA).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct PKeyTable {
    /// The 32 keys, entry i at index 32*block + i.
    pub keys: [PKey; 32],
}

impl PKeyTable {
    /// Entries per block.
    pub const ENTRIES: usize = 32;

    /// The attribute modifier for `block` of switch port `port` (use port 0 for a CA).
    pub fn modifier(port: u8, block: u16) -> u32 {
        (u32::from(port) << 16) | u32::from(block)
    }

    /// Splits a modifier into (port, block).
    pub fn split_modifier(attr_mod: u32) -> (u8, u16) {
        (((attr_mod >> 16) & 0xFF) as u8, (attr_mod & 0xFFFF) as u16)
    }
}

impl SmpAttribute for PKeyTable {
    const ID: AttributeId = AttributeId::P_KEY_TABLE;
    const LEN: usize = 64;
    const NAME: &'static str = "P_KeyTable";

    fn decode(d: &[u8; 64]) -> PKeyTable {
        let mut keys = [PKey(0); 32];
        for (i, k) in keys.iter_mut().enumerate() {
            *k = PKey(u16::from_be_bytes([d[2 * i], d[2 * i + 1]]));
        }
        PKeyTable { keys }
    }

    fn encode(&self, d: &mut [u8; 64]) {
        for (chunk, k) in d.chunks_exact_mut(2).zip(self.keys.iter()) {
            chunk.copy_from_slice(&k.0.to_be_bytes());
        }
    }
}

/// One 8-entry block of a port's GUIDInfo (attribute modifier = block number).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct GuidInfo {
    /// The 8 GUIDs; index 0 of block 0 is the port GUID (read only).
    pub guids: [Guid; 8],
}

impl SmpAttribute for GuidInfo {
    const ID: AttributeId = AttributeId::GUID_INFO;
    const LEN: usize = 64;
    const NAME: &'static str = "GUIDInfo";

    fn decode(d: &[u8; 64]) -> GuidInfo {
        let mut guids = [Guid(0); 8];
        for (i, g) in guids.iter_mut().enumerate() {
            *g = Guid(get_u64(d, 8 * i));
        }
        GuidInfo { guids }
    }

    fn encode(&self, d: &mut [u8; 64]) {
        for (i, g) in self.guids.iter().enumerate() {
            put_u64(d, 8 * i, g.0);
        }
    }
}

/// SLtoVLMappingTable: the VL (4 bits) for each of the 16 SLs, two per byte, SL0 in the
/// high nibble of byte 0 (fields.c `IB_SLTOVL_MAPPING_TABLE_F`, 8 bytes). Attribute
/// modifier on a switch: bits 15..8 input port, bits 7..0 output port.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct SlToVlTable {
    /// VL per SL (low 4 bits used).
    pub vl: [u8; 16],
}

impl SlToVlTable {
    /// The modifier for (input port, output port) on a switch.
    pub fn modifier(in_port: u8, out_port: u8) -> u32 {
        (u32::from(in_port) << 8) | u32::from(out_port)
    }
}

impl SmpAttribute for SlToVlTable {
    const ID: AttributeId = AttributeId::SL_TO_VL_TABLE;
    const LEN: usize = 8;
    const NAME: &'static str = "SLtoVLMappingTable";

    fn decode(d: &[u8; 64]) -> SlToVlTable {
        let mut vl = [0u8; 16];
        for (pair, &byte) in vl.chunks_exact_mut(2).zip(d.iter()) {
            pair[0] = bits(byte, 7, 4);
            pair[1] = bits(byte, 3, 4);
        }
        SlToVlTable { vl }
    }

    fn encode(&self, d: &mut [u8; 64]) {
        d.fill(0);
        for (byte, pair) in d.iter_mut().zip(self.vl.chunks_exact(2)) {
            *byte = place(pair[0], 7, 4) | place(pair[1], 3, 4);
        }
    }
}

/// One VLArbitrationTable entry: byte 0 bits 3..0 VL (bits 7..4 reserved), byte 1 weight.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct VlArbEntry {
    /// VL (4 bits).
    pub vl: u8,
    /// Weight (units of 64 bytes; 0 = skip).
    pub weight: u8,
}

/// One 32-entry block of a VLArbitrationTable. Attribute modifier: bits 31..16 select
/// the block (1 = low-priority entries 0-31, 2 = low 32-63, 3 = high 0-31, 4 = high
/// 32-63), bits 15..0 the output port on a switch.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct VlArbitrationTable {
    /// The 32 entries.
    pub entries: [VlArbEntry; 32],
}

impl VlArbitrationTable {
    /// Modifier block: low-priority entries 0..=31.
    pub const LOW_0_31: u16 = 1;
    /// Modifier block: low-priority entries 32..=63.
    pub const LOW_32_63: u16 = 2;
    /// Modifier block: high-priority entries 0..=31.
    pub const HIGH_0_31: u16 = 3;
    /// Modifier block: high-priority entries 32..=63.
    pub const HIGH_32_63: u16 = 4;

    /// The modifier for `block` (1..=4) of `port`.
    pub fn modifier(block: u16, port: u16) -> u32 {
        (u32::from(block) << 16) | u32::from(port)
    }
}

impl SmpAttribute for VlArbitrationTable {
    const ID: AttributeId = AttributeId::VL_ARBITRATION_TABLE;
    const LEN: usize = 64;
    const NAME: &'static str = "VLArbitrationTable";

    fn decode(d: &[u8; 64]) -> VlArbitrationTable {
        let mut entries = [VlArbEntry::default(); 32];
        for (i, e) in entries.iter_mut().enumerate() {
            e.vl = bits(d[2 * i], 3, 4);
            e.weight = d[2 * i + 1];
        }
        VlArbitrationTable { entries }
    }

    fn encode(&self, d: &mut [u8; 64]) {
        for (i, e) in self.entries.iter().enumerate() {
            d[2 * i] = place(e.vl, 3, 4);
            d[2 * i + 1] = e.weight;
        }
    }
}
