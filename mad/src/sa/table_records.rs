//! SA records of per-port tables the SM keeps that have no SMP attribute of their own in
//! this crate: GUIDInfoRecord (attribute 0x0030).

use super::record::{CompField, SaRecord, cf};
use crate::header::AttributeId;
use crate::sa::SA_DATA_LEN;
use crate::wire::*;
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
