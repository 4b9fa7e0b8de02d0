//! SA records of per-port and per-switch tables: GUIDInfoRecord (attribute 0x0030, no SMP
//! attribute of its own in this crate), SLtoVLMappingTableRecord (0x0013),
//! VLArbitrationTableRecord (0x0036) and MulticastForwardingTableRecord (0x0017), each
//! wrapping its SMP attribute's data.

use super::record::{CompField, SaRecord, cf};
use crate::header::AttributeId;
use crate::sa::SA_DATA_LEN;
use crate::wire::*;
use crate::{MulticastForwardingTable, SlToVlTable, SmpAttribute, VlArbitrationTable};
use fabric::Lid;

/// GUIDInfoRecord (attribute 0x0030), 72 bytes: LID, block, 8 GUIDs (IBA 15.2.5.18;
/// `ib_guidinfo_record_t`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct GuidInfoRecord {
    /// Bytes 0-1: the port's LID.
    pub lid: Lid,
    /// Byte 2: block number (8 GUIDs a block).
    pub block: u8,
    /// Bytes 8-71: the GUIDs of the block (index 0 of block 0: the port GUID).
    pub guids: [u64; 8],
}

const GUID_INFO_FIELDS: &[CompField] = &[cf(0, "LID", 0, 7, 16), cf(1, "BlockNum", 2, 7, 8)];

impl SaRecord for GuidInfoRecord {
    const ID: AttributeId = AttributeId::SA_GUID_INFO_RECORD;
    const LEN: usize = 72;
    const NAME: &'static str = "GUIDInfoRecord";
    const FIELDS: &'static [CompField] = GUID_INFO_FIELDS;

    fn decode_data(b: &[u8; SA_DATA_LEN]) -> GuidInfoRecord {
        let mut guids = [0u64; 8];
        for (i, g) in guids.iter_mut().enumerate() {
            *g = get_u64(b, 8 + 8 * i);
        }
        GuidInfoRecord {
            lid: Lid(get_u16(b, 0)),
            block: b[2],
            guids,
        }
    }

    fn encode_data(&self, b: &mut [u8; SA_DATA_LEN]) {
        b.fill(0);
        put_u16(b, 0, self.lid.0);
        b[2] = self.block;
        for (i, g) in self.guids.iter().enumerate() {
            put_u64(b, 8 + 8 * i, *g);
        }
    }
}

/// SLtoVLMappingTableRecord (attribute 0x0013), 16 bytes (IBA 15.2.5.4;
/// `ib_slvl_table_record_t`): bytes 0-1 LID (a CA port's, a switch's port-0 LID), byte 2
/// InputPortNum, byte 3 OutputPortNum (both reserved for a CA), bytes 4-7 reserved, bytes
/// 8-15 the SLtoVLMappingTable as the SMP attribute carries it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct SlToVlRecord {
    /// Bytes 0-1.
    pub lid: Lid,
    /// Byte 2.
    pub in_port: u8,
    /// Byte 3.
    pub out_port: u8,
    /// Bytes 8-15.
    pub table: SlToVlTable,
}

const SL_TO_VL_FIELDS: &[CompField] = &[
    cf(0, "LID", 0, 7, 16),
    cf(1, "InputPortNum", 2, 7, 8),
    cf(2, "OutputPortNum", 3, 7, 8),
];

impl SaRecord for SlToVlRecord {
    const ID: AttributeId = AttributeId::SA_SL_TO_VL_RECORD;
    const LEN: usize = 16;
    const NAME: &'static str = "SLtoVLMappingTableRecord";
    const FIELDS: &'static [CompField] = SL_TO_VL_FIELDS;

    fn decode_data(b: &[u8; SA_DATA_LEN]) -> SlToVlRecord {
        SlToVlRecord {
            lid: Lid(get_u16(b, 0)),
            in_port: b[2],
            out_port: b[3],
            table: SlToVlTable::decode(&attr_at(b, 8, SlToVlTable::LEN)),
        }
    }

    fn encode_data(&self, b: &mut [u8; SA_DATA_LEN]) {
        b.fill(0);
        put_u16(b, 0, self.lid.0);
        b[2] = self.in_port;
        b[3] = self.out_port;
        put_attr(b, 8, SlToVlTable::LEN, &self.table);
    }
}

/// VLArbitrationTableRecord (attribute 0x0036), 72 bytes (IBA 15.2.5.9;
/// `ib_vl_arb_table_record_t`): bytes 0-1 LID, byte 2 OutputPortNum, byte 3 BlockNum (1-4,
/// as the SMP's modifier), bytes 4-7 reserved, bytes 8-71 the VLArbitrationTable block.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct VlArbRecord {
    /// Bytes 0-1.
    pub lid: Lid,
    /// Byte 2.
    pub port: u8,
    /// Byte 3.
    pub block: u8,
    /// Bytes 8-71.
    pub table: VlArbitrationTable,
}

const VL_ARB_FIELDS: &[CompField] = &[
    cf(0, "LID", 0, 7, 16),
    cf(1, "OutputPortNum", 2, 7, 8),
    cf(2, "BlockNum", 3, 7, 8),
];

impl SaRecord for VlArbRecord {
    const ID: AttributeId = AttributeId::SA_VL_ARBITRATION_RECORD;
    const LEN: usize = 72;
    const NAME: &'static str = "VLArbitrationTableRecord";
    const FIELDS: &'static [CompField] = VL_ARB_FIELDS;

    fn decode_data(b: &[u8; SA_DATA_LEN]) -> VlArbRecord {
        VlArbRecord {
            lid: Lid(get_u16(b, 0)),
            port: b[2],
            block: b[3],
            table: VlArbitrationTable::decode(&attr_at(b, 8, VlArbitrationTable::LEN)),
        }
    }

    fn encode_data(&self, b: &mut [u8; SA_DATA_LEN]) {
        b.fill(0);
        put_u16(b, 0, self.lid.0);
        b[2] = self.port;
        b[3] = self.block;
        put_attr(b, 8, VlArbitrationTable::LEN, &self.table);
    }
}

/// MulticastForwardingTableRecord (attribute 0x0017), 72 bytes (IBA 15.2.5.8;
/// `ib_mft_record_t`): bytes 0-1 the switch's LID; bytes 2-3 Position (bits 15-12), 3
/// reserved bits, BlockNum (bits 8-0); bytes 4-7 reserved; bytes 8-71 the
/// MulticastForwardingTable block (32 port masks).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct MftRecord {
    /// Bytes 0-1.
    pub lid: Lid,
    /// Position (0-15): which 16 ports the masks cover.
    pub position: u8,
    /// BlockNum (0-511): MLIDs 0xC000 + 32 * block ...
    pub block: u16,
    /// Bytes 8-71.
    pub table: MulticastForwardingTable,
}

const MFT_FIELDS: &[CompField] = &[
    cf(0, "LID", 0, 7, 16),
    cf(1, "Position", 2, 7, 4),
    cf(3, "BlockNum", 2, 0, 9),
];

impl SaRecord for MftRecord {
    const ID: AttributeId = AttributeId::SA_MFT_RECORD;
    const LEN: usize = 72;
    const NAME: &'static str = "MulticastForwardingTableRecord";
    const FIELDS: &'static [CompField] = MFT_FIELDS;

    fn decode_data(b: &[u8; SA_DATA_LEN]) -> MftRecord {
        let w = get_u16(b, 2);
        MftRecord {
            lid: Lid(get_u16(b, 0)),
            position: (w >> 12) as u8,
            block: w & 0x1FF,
            table: MulticastForwardingTable::decode(&attr_at(b, 8, 64)),
        }
    }

    fn encode_data(&self, b: &mut [u8; SA_DATA_LEN]) {
        b.fill(0);
        put_u16(b, 0, self.lid.0);
        put_u16(
            b,
            2,
            (u16::from(self.position & 0xF) << 12) | (self.block & 0x1FF),
        );
        put_attr(b, 8, 64, &self.table);
    }
}

/// The `len` bytes at `off` of `b` as an SMP attribute's 64-byte data (zero-padded).
fn attr_at(b: &[u8; SA_DATA_LEN], off: usize, len: usize) -> [u8; 64] {
    let mut d = [0u8; 64];
    d[..len].copy_from_slice(&b[off..off + len]);
    d
}

/// Writes attribute `a`'s first `len` data bytes at `off` of `b`.
fn put_attr<A: SmpAttribute>(b: &mut [u8; SA_DATA_LEN], off: usize, len: usize, a: &A) {
    let mut d = [0u8; 64];
    a.encode(&mut d);
    b[off..off + len].copy_from_slice(&d[..len]);
}
