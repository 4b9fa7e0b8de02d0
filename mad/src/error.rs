//! The crate's error type.

use thiserror::Error;

/// Everything that can go wrong decoding or building a MAD.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum MadError {
    /// The input is shorter than the structure being decoded.
    #[error("MAD-E001 truncated {what}: need {needed} bytes, got {got}")]
    Truncated {
        /// What was being decoded.
        what: &'static str,
        /// Bytes required.
        needed: usize,
        /// Bytes available.
        got: usize,
    },
    /// The input is longer than a MAD may be (MADs are exactly 256 bytes on QP0/QP1).
    #[error("MAD-E002 {what} has wrong length: expected {expected} bytes, got {got}")]
    BadLength {
        /// What was being decoded.
        what: &'static str,
        /// Exact length required.
        expected: usize,
        /// Length given.
        got: usize,
    },
    /// The management class is not the one this decoder handles (e.g. not 0x01/0x81 for an SMP).
    #[error("MAD-E003 management class {class:#04x} is not {expected}")]
    WrongClass {
        /// Class found in byte 1.
        class: u8,
        /// What was expected.
        expected: &'static str,
    },
    /// A directed-route SMP whose hop count exceeds 63 (the path fields hold 64 entries,
    /// entry 0 unused; IBA 14.2.1.2).
    #[error("MAD-E004 directed-route hop count {hop_count} exceeds 63")]
    HopCountTooLarge {
        /// Hop count found in byte 7.
        hop_count: u8,
    },
    /// A path given to a builder is longer than 63 hops.
    #[error("MAD-E005 directed-route path of {len} hops exceeds 63")]
    PathTooLong {
        /// Number of hops given.
        len: usize,
    },
    /// The SMP carries a different attribute than the one asked for.
    #[error("MAD-E006 attribute mismatch: SMP carries {found:#06x}, asked for {expected:#06x}")]
    AttributeMismatch {
        /// Attribute id asked for.
        expected: u16,
        /// Attribute id in the SMP.
        found: u16,
    },
    /// An attribute or record does not fit in the space the MAD gives it.
    #[error("MAD-E007 bad attribute length for {what}: {len} bytes does not fit in {max}")]
    BadAttributeLength {
        /// Attribute or record.
        what: &'static str,
        /// Length required.
        len: usize,
        /// Space available.
        max: usize,
    },
    /// An RMPP field holds a value the protocol does not define.
    #[error("MAD-E008 invalid RMPP header: {0}")]
    BadRmpp(&'static str),
}
