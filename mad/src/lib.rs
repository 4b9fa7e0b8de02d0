//! `mad` — InfiniBand management datagrams on the wire, bit for bit: the common MAD
//! header, Subnet Management Packets in both forms (LID-routed and directed route), the
//! directed-route forwarding rules as a pure step function, every SMP attribute the SM
//! uses, the IB virtualization attributes (VirtualizationInfo, VPortInfo, VPortState,
//! VNodeInfo, VNodeDescription, VPortGUIDInfo, VPortP_KeyTable: layouts from NVIDIA's public
//! encodings, see `attr/virt.rs`), the SA/RMPP headers, and the Performance Management GMP
//! with its counters.
//!
//! Layouts follow the InfiniBand Architecture specification (IBA) as published in public
//! code: rdma-core libibmad `fields.c`, opensm `include/iba/ib_types.h` and linux
//! `include/rdma/ib_smi.h` / `ib_mad.h`. All multi-byte fields are big-endian.
//!
//! This crate is pure and must never do IO, read a clock, spawn a thread, allocate on the
//! SMP hot path (encode/decode work on fixed arrays), or panic on any input bytes.
//!
//! Round trip guarantee: for every MAD and attribute, decoding then encoding returns the
//! input with reserved bits cleared; every defined bit, including reserved *values* of
//! defined fields, survives.

mod error;
mod wire;

pub mod attr;
pub mod dr;
pub mod header;
pub mod perf;
pub mod sa;
pub mod smp;

pub use attr::{
    GuidInfo, LinearForwardingTable, MulticastForwardingTable, NodeDescription, NodeInfo, Notice,
    NoticeDetails, PKeyTable, PortInfo, ProducerType, SlToVlTable, SmInfo, SmState, SmpAttribute,
    SwitchInfo, VNodeDescription, VNodeInfo, VPortGuidInfo, VPortInfo, VPortPKeyTable, VPortState,
    VirtualizationInfo, VlArbEntry, VlArbitrationTable,
};
pub use dr::{DrAction, DrDropReason, DrIngress, DrNode, dr_step};
pub use error::MadError;
pub use header::{AttributeId, MadHeader, MadStatus, Method, MgmtClass};
pub use perf::{PerfAttribute, PerfMad, PortCounters, PortCountersExtended};
pub use sa::{RmppHeader, SaHeader, SaMad, SaRecords, sa_records};
pub use smp::Smp;
