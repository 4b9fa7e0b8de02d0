//! What every SA record shares: the [`SaRecord`] trait (fixed layout, padded length,
//! attribute id), the [`Gid`] type, and ComponentMask fields ([`CompField`]) with the
//! matching rule of IBA 15.2.4.1: a record matches a query when every component the mask
//! selects holds the query's value.

use crate::MadError;
use crate::header::AttributeId;
use crate::sa::SA_DATA_LEN;

/// A 128-bit GID (IBA 4.1.1): subnet prefix (bytes 0-7) and interface id (bytes 8-15).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct Gid(pub [u8; 16]);

impl Gid {
    /// The link-local subnet prefix fe80::/64.
    pub const LINK_LOCAL_PREFIX: u64 = 0xfe80_0000_0000_0000;

    /// A unicast GID from a subnet prefix and a port GUID.
    pub fn new(prefix: u64, guid: u64) -> Gid {
        let mut g = [0u8; 16];
        g[..8].copy_from_slice(&prefix.to_be_bytes());
        g[8..].copy_from_slice(&guid.to_be_bytes());
        Gid(g)
    }

    /// Bytes 0-7: subnet prefix.
    pub fn prefix(&self) -> u64 {
        let mut a = [0u8; 8];
        a.copy_from_slice(&self.0[..8]);
        u64::from_be_bytes(a)
    }

    /// Bytes 8-15: interface id (the port GUID for a unicast GID).
    pub fn guid(&self) -> u64 {
        let mut a = [0u8; 8];
        a.copy_from_slice(&self.0[8..]);
        u64::from_be_bytes(a)
    }

    /// A multicast GID starts with 0xFF (IBA 4.1.1).
    pub fn is_multicast(&self) -> bool {
        self.0[0] == 0xFF
    }

    /// All zero.
    pub fn is_zero(&self) -> bool {
        self.0 == [0; 16]
    }

    /// The scope nibble of a multicast GID (low 4 bits of byte 1).
    pub fn mc_scope(&self) -> u8 {
        self.0[1] & 0x0F
    }

    /// The IPoIB broadcast MGID of a partition (RFC 4391 §4):
    /// `ff1<scope>:401b:<pkey>::ffff:ffff`, with the full-membership bit set in the key.
    pub fn ipoib_broadcast(scope: u8, pkey: u16) -> Gid {
        let mut g = [0u8; 16];
        g[0] = 0xFF;
        g[1] = 0x10 | (scope & 0x0F);
        g[2] = 0x40;
        g[3] = 0x1B;
        g[4..6].copy_from_slice(&(pkey | 0x8000).to_be_bytes());
        g[12..16].copy_from_slice(&[0xFF; 4]);
        Gid(g)
    }
}

impl std::fmt::Display for Gid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for i in 0..8 {
            if i > 0 {
                write!(f, ":")?;
            }
            write!(
                f,
                "{:x}",
                u16::from_be_bytes([self.0[2 * i], self.0[2 * i + 1]])
            )?;
        }
        Ok(())
    }
}

/// One ComponentMask bit of a record: the bits of the record it selects, counted from the
/// most significant bit of byte 0 (`bit_off`), `width` bits long.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct CompField {
    /// ComponentMask bit number (IBA: bit 0 is the first component).
    pub bit: u8,
    /// Field name as the IBA names it.
    pub name: &'static str,
    /// Offset in bits from the start of the record.
    pub bit_off: u16,
    /// Width in bits.
    pub width: u16,
}

/// Shorthand for tables of [`CompField`].
pub(crate) const fn cf(bit: u8, name: &'static str, byte: u16, msb: u16, width: u16) -> CompField {
    // `msb` is the bit number inside byte `byte` where the field starts (7 = top bit).
    CompField {
        bit,
        name,
        bit_off: byte * 8 + (7 - msb),
        width,
    }
}

fn bit_at(b: &[u8], i: usize) -> u8 {
    b.get(i / 8).map_or(0, |x| (x >> (7 - (i % 8))) & 1)
}

/// True when bits `[off, off+width)` of `a` and `b` are equal (missing bytes read as 0).
pub fn bits_equal(a: &[u8], b: &[u8], off: u16, width: u16) -> bool {
    let (off, width) = (usize::from(off), usize::from(width));
    if off % 8 == 0 && width % 8 == 0 {
        let r = off / 8..off / 8 + width / 8;
        if let (Some(x), Some(y)) = (a.get(r.clone()), b.get(r)) {
            return x == y;
        }
    }
    (off..off + width).all(|i| bit_at(a, i) == bit_at(b, i))
}

/// Reads up to 64 bits of a field as an integer (fields wider than 64 bits give their low
/// 64 bits).
pub fn bits_value(a: &[u8], off: u16, width: u16) -> u64 {
    let mut v = 0u64;
    for i in usize::from(off)..usize::from(off) + usize::from(width) {
        v = (v << 1) | u64::from(bit_at(a, i));
    }
    v
}

/// An SA record: a fixed layout in the SA data area (IBA 15.2.5).
pub trait SaRecord: Sized + Clone + PartialEq + std::fmt::Debug {
    /// Attribute id.
    const ID: AttributeId;
    /// Bytes on the wire, padded to a multiple of 8 (AttributeOffset = LEN / 8).
    const LEN: usize;
    /// Name, for errors and logs.
    const NAME: &'static str;
    /// The ComponentMask bits this crate knows for the record.
    const FIELDS: &'static [CompField];

    /// Decodes from a 200-byte data area (every bit pattern decodes).
    fn decode_data(b: &[u8; SA_DATA_LEN]) -> Self;

    /// Encodes into a 200-byte data area; bytes beyond [`Self::LEN`] and reserved bits are
    /// written as zero.
    fn encode_data(&self, b: &mut [u8; SA_DATA_LEN]);

    /// AttributeOffset of a table of these records, in 8-byte words.
    fn attr_offset() -> u16 {
        (Self::LEN / 8) as u16
    }

    /// Decodes from the first [`Self::LEN`] bytes of `s`.
    fn decode(s: &[u8]) -> Result<Self, MadError> {
        let src = s.get(..Self::LEN).ok_or(MadError::Truncated {
            what: Self::NAME,
            needed: Self::LEN,
            got: s.len(),
        })?;
        let mut d = [0u8; SA_DATA_LEN];
        d[..Self::LEN].copy_from_slice(src);
        Ok(Self::decode_data(&d))
    }

    /// Encodes to [`Self::LEN`] bytes.
    fn to_bytes(&self) -> Vec<u8> {
        let mut d = [0u8; SA_DATA_LEN];
        self.encode_data(&mut d);
        d[..Self::LEN].to_vec()
    }

    /// Encodes into a 200-byte data area (a single-record MAD's data).
    fn to_data(&self) -> [u8; SA_DATA_LEN] {
        let mut d = [0u8; SA_DATA_LEN];
        self.encode_data(&mut d);
        d
    }
}

/// True when `candidate` holds the value of `query` in every component `mask` selects
/// among `fields` (bits the table does not name are ignored, as reserved components are).
pub fn comp_match(fields: &[CompField], mask: u64, query: &[u8], candidate: &[u8]) -> bool {
    fields
        .iter()
        .filter(|f| f.bit < 64 && mask & (1u64 << f.bit) != 0)
        .all(|f| bits_equal(query, candidate, f.bit_off, f.width))
}

/// [`comp_match`] on two records.
pub fn record_matches<R: SaRecord>(mask: u64, query: &R, candidate: &R) -> bool {
    comp_match(R::FIELDS, mask, &query.to_data(), &candidate.to_data())
}
