//! `fabric-sim` — a simulated InfiniBand fabric that behaves like real switches and HCAs
//! closely enough that an SM correct here is correct on hardware.
//!
//! The core, [`SimFabric`], is a sans-IO discrete-event state machine: it loads any
//! [`fabric::Topology`], gives every node a Subnet Management Agent (SMA) answering Get/Set of
//! the SMP attributes, forwards directed-route SMPs hop by hop with the shared
//! [`mad::dr_step`] rule, LID-routes SMPs and data packets through each switch's programmed
//! LFT, runs the IBA port state machine (INIT -> ARMED -> ACTIVE), checks M_Keys, P_Keys
//! and switch partition enforcement, maps data packets' SLs to VLs hop by hop, sends traps
//! 128/144/256, injects seeded faults and keeps accounting. Time is virtual ([`VTime`], nanoseconds), driven by an event queue
//! ordered by (time, sequence), so a seed gives the same run every time.
//!
//! # The model, where IBA leaves room or the simulator simplifies
//!
//! * Links come up INIT / LinkUp when loaded or retrained; the SM moves ports to ARMED
//!   (only from INIT) and ACTIVE (only from ARMED, and only once the other end of the link
//!   is ARMED or ACTIVE, as ibsim checks); Set PortState=INIT, ACTIVE from INIT or with
//!   the neighbour still in INIT, ARMED from ACTIVE answer status 0x1C and change nothing. Set Down takes the link
//!   down at both ends; it retrains to INIT after `SimConfig::retrain_ns` (unless the SM
//!   disabled it with PortPhysicalState=Disabled, or a fault unplugged it).
//! * Switch port 0 is always Active and carries the switch's LID, LMC, MasterSMLID and
//!   M_Key; external ports report port 0's values for those fields.
//! * SwitchInfo.PortStateChange is set when a port goes Down or comes up (the link state
//!   machine, IBA 14.2.5.4), not on the SM's own Sets: an ARMED/ACTIVE Set changes no
//!   bit, a Down Set flags only the far end's switch (the link then retrains and both
//!   ends flag the Down->INIT change); writing 1 clears it. Switches send trap 128 on the
//!   same transitions; CAs send none.
//! * Traps go LID-routed to the MasterSMLID (nothing is sent while the port has no LID or
//!   no MasterSMLID). They are sent once, or, with `SimConfig::trap_repeat_ns` set,
//!   repeated until a TrapRepress with the trap's TID reaches the SMA (at most
//!   `trap_repeats` times).
//! * M_Key (IBA 14.2.4, as linux qib/hfi1 implement it): a zero M_Key or a matching key
//!   passes; otherwise Get passes at protect level 0 (key shown) and 1 (key read as 0),
//!   fails at 2 and 3; Set and TrapRepress always fail. A failure sends no response,
//!   counts M_KeyViolations, starts the lease (when the period is non-zero) and sends
//!   trap 256. The lease expiring clears the protect bits; a matching key stops it.
//! * Directed route uses [`mad::dr_step`] at every node; a CA sends a directed-route SMP
//!   only out of the port it was posted on (linux smi.c). Bad ports, unlinked ports and
//!   non-switches asked to forward discard the SMP (counted, no answer).
//! * LID-routed packets (SMPs and the [`SimFabric::deliver`] check) need ACTIVE ports at
//!   both ends of every link; LFT entries 0xFF, above LinearFDBTop or naming a missing
//!   port drop. A packet crossing more than 255 links is dropped as looping.
//! * VL15: a switch output port queues at most `SimConfig::vl15_depth` SMPs behind the
//!   one on the wire (`wire_time_ns` each); more are dropped and counted. CA send queues
//!   are not bounded.
//! * P_Keys: an HCA sends only with a key held in its table; the receiving HCA accepts a
//!   key matching some entry by the IBA rule (same partition, not both limited). Switch
//!   enforcement (PortInfo inbound/outbound bits on a switch port) compares the
//!   partition only, so a port facing a limited member may carry that member's keys.
//!   SMPs are exempt.
//! * GMPs (SA and other QP1 MADs) between attached SMs and clients are data packets:
//!   routed and P_Key-checked like [`SimFabric::deliver`], delivered to whoever is
//!   attached at the destination port ([`SimFabric::send_gmp`], `poll_recv_gmp`).
//! * Performance management: every node has a PMA answering PerfMgt GMPs (class 0x04)
//!   sent to its LID: ClassPortInfo, PortCounters and PortCountersExtended Get/Set, with
//!   ibsim's capabilities (AllPortSelect on switches, extended width and PortXmitWait
//!   everywhere). Every packet crossing a link counts at both ends, [`PACKET_WORDS`] words
//!   each (a 256-byte MAD with LRH, BTH, DETH and ICRC); drops count in the error counter
//!   IBA names; counters saturate, the extended ones keep counting. Tests read them
//!   ([`SimFabric::port_counters`]), add errors ([`SimFabric::inject_port_errors`]) and
//!   set a seeded receive error rate per port ([`SimFabric::set_port_error_rate`]). The
//!   `perf` and `pma` modules list what counts where.
//! * Multicast data ([`SimFabric::deliver_mcast`]): switches replicate a packet to the
//!   ports of their MulticastForwardingTable entry, never back out of the ingress port,
//!   with the unicast link, ACTIVE and P_Key checks.
//! * Virtual lanes ([`SimFabric::deliver_sl`], [`SimFabric::vl_path`]): a data packet
//!   (delivery check, GMP, multicast copy) carries an SL, 0 unless given. On every link
//!   it rides the VL the sending node's SLtoVLMappingTable gives: on a switch the table
//!   of (input port, output port), modifier `in << 8 | out` (a packet the switch sends
//!   itself enters by port 0); on a CA the sending port's table. A data packet mapped to
//!   VL15 is dropped (VL15 is management only), and so is one mapped to a VL at or
//!   beyond the output port's OperationalVLs (1 = VL0, 2 = VL0-1, 3 = VL0-3, 4 = VL0-7,
//!   5 = VL0-14); both are counted per (node, port, VL) ([`Accounting::per_vl`]). SMPs
//!   stay on VL15 and never consult SLtoVL. A table the SM never wrote holds
//!   `SimConfig::sl2vl_reset`, ibsim's reset table by default (SL n -> VL n, SL 15 ->
//!   VL 7; IBA leaves it unspecified), and reads back as such; a power cycle forgets the
//!   tables and returns OperationalVLs to VLCap and VLHighLimit to 0.
//! * PortInfo Set of OperationalVLs: 0 leaves it unchanged, a value above the port's
//!   VLCap answers 0x1C and changes nothing, in any port state (as ibsim and linux qib).
//!   VLHighLimit is stored as set.
//! * Stored but not acted on: VLArbitration tables and VLHighLimit (no arbiter, no
//!   credits or congestion), GUIDInfo entries (CAs only; entry 0 is the port GUID and
//!   read-only).
//! * Virtualization ([`virt`]): a PF passed to a VM is an ordinary CA port; a VF in the
//!   shared-port model is a GUIDInfo alias sharing the PF's LID and P_KeyTable, without SM
//!   access. A virtualization-capable CA port ([`SimFabric::enable_virtualization`]) has
//!   vports with their own state, GUID, optional LID and P_Key table, managed by the SM
//!   through VirtualizationInfo, VPortInfo, VPortState, VPortGUIDInfo and VPortP_KeyTable,
//!   and reached by [`SimFabric::deliver_vport`] (the `vport` module states the model).
//!
//! The core must never do IO, read a clock, spawn a thread or use unseeded randomness.
//! The only IO parts are [`protocol`] (framing over `Read`/`Write`), [`server`] (the
//! Unix-socket server behind the `fabric-simd` binary, threads allowed) and [`client`]
//! (a blocking client for that socket). See `PROTOCOL.md` for the wire protocol.

mod accounting;
mod config;
mod deliver;
mod error;
mod faults;
mod forward;
mod gmp;
mod mcast;
mod mkey;
mod perf;
mod pma;
mod portstate;
mod queue;
mod sim;
mod sma;
mod state;
mod vl;
mod vport;
mod vport_sma;

pub mod client;
pub mod control;
pub mod protocol;
pub mod server;
pub mod virt;

pub use accounting::{Accounting, Counters, SetRecord, TraceHop, TraceKind, VlCounters, VlKey};
pub use config::{IBSIM_SL2VL_RESET, SimConfig};
pub use deliver::{Delivery, DropReason};
pub use error::SimError;
pub use faults::Fault;
pub use gmp::ReceivedGmp;
pub use mcast::McastDelivery;
pub use perf::PACKET_WORDS;
pub use sim::{AttachId, Received, SimFabric};
pub use vl::{VlHop, data_vls};
pub use vport::{VPortSpec, VPortView, VirtSpec, vport_guid};

/// Virtual time in nanoseconds since the fabric was created.
pub type VTime = u64;
