//! Temporary vendored copy of the qos crate's tables and options (being merged).
pub mod error;
pub mod num;
pub mod options;
pub mod tables;
pub const MAX_POLICY_BYTES: usize = 1 << 20;
pub const MAX_ITEMS: usize = 4096;
pub use error::QosError;
pub use options::QosOptions;
pub use tables::{PortKind, QosTables, TableConfig, VlArb, has_vlarb, op_vls, vl_mask};
