//! `sm-core` — Quorum SM's brain, sans-IO: discovery over directed routes, the LID manager
//! (with OpenSM's guid2lid format), the routing hand-off, the programming planner (only
//! changed LFT and P_KeyTable blocks, PortInfo fields, port bring-up INIT -> ARMED ->
//! ACTIVE), light and heavy sweeps, trap handling and SMInfo answers.
//!
//! It must never do IO, read a clock, spawn a thread or use unseeded randomness. Time is
//! passed in as [`VTime`] (nanoseconds on any clock the caller likes); SMPs go out through
//! [`Sweeper::poll_transmit`] and come back through [`Sweeper::handle_mad`].
//!
//! Driver loop (single thread, deterministic; `fabric` stands for any transport):
//!
//! ```text
//! loop {
//!     while let Some(tx) = sweeper.poll_transmit() {
//!         // tx.dlid is Lid::PERMISSIVE for directed route, else the LRH DLID
//!         fabric.send(now, tx.dlid, &tx.smp)
//!     }
//!     now = min(fabric.next_event_time(), sweeper.poll_timeout())   // both None: idle
//!     fabric.run_until(now)
//!     while let Some((slid, smp)) = fabric.poll_recv() { sweeper.handle_mad(now, slid, smp) }
//!     if sweeper.poll_timeout() is Some(t) with t <= now { sweeper.handle_timeout(now) }
//!     while let Some(ev) = sweeper.poll_event() {
//!         if let Event::RoutingNeeded(job) = ev {
//!             let r = route_inline(&job);               // or job.run(&executor) on workers
//!             sweeper.handle_routing_result(now, r);
//!         }
//!     }
//! }
//! ```
//!
//! A heavy sweep: `HeavySweepStarted` -> discovery (`DiscoveryDone`) -> LIDs and partitions
//! (`LidsAssigned`, on a timeout due at once) -> `RoutingNeeded` (the daemon routes) ->
//! `RoutingDone` -> programming stages 1-5 (`ProgrammingDone`) -> `SubnetUp` the first time
//! -> `HeavySweepComplete`; then a light sweep every `sweep_interval`
//! (`LightSweepComplete`), a heavy one on change, trap 128/144 or request.
//!
//! In a Raft cluster (see the `cluster` and `intent` modules) the driver also:
//! builds one `Sweeper` per term with the replicated state (`guid2lid`, `known_lfts`,
//! `known_pkeys`, `pending_intent`, `m_key_prev`, this term's `m_key`,
//! `gate_programming = true`, `reregister_on_takeover = false`); keeps
//! [`Sweeper::set_lease`] / [`Sweeper::set_fenced`] up to date and sends with
//! [`Sweeper::poll_transmit_at`]; commits every [`IntentEvent`] from
//! [`Sweeper::poll_intent`] (answering `Program` with [`Sweeper::handle_intent_committed`]);
//! calls [`Sweeper::step_down`] when the term ends. A standby replica runs a
//! `Role::Standby` sweeper that only answers SMInfo.
//!
//! [`Sweeper::set_policy`] replaces the partition policy of a running sweeper (a SIGHUP
//! reload): a text that does not parse is refused and changes nothing; otherwise a heavy
//! sweep is requested, which writes only the P_KeyTable blocks the new policy changes.
//!
//! [`Sweeper::explain`] says why a port is not ACTIVE (or cannot talk) and what to do, from
//! what the sweeper read and recorded (see the `explain` module).
//!
//! [`Sweeper::request_pkey_readback`] reads every managed P_KeyTable back from the fabric
//! (Gets in the same window) and ends in [`Event::PKeyReadback`] (see the `readback` module).
//!
//! [`Sweeper::set_multicast`] hands over the multicast groups (MLID + member port GUIDs,
//! from the SA); the sweeper keeps every switch's MulticastForwardingTable in step, writing
//! only changed 32-MLID x 16-port blocks (in the sweep's intent, or a multicast-only intent
//! between sweeps), and a takeover seeded with [`SweeperConfig::known_mfts`] writes none
//! (see the `mcast` module).
//!
//! Other SMs on the fabric (OpenSM, a switch's SM) are found through SMInfo after each
//! discovery and obeyed as IBA 14.4 says: a MASTER that outranks this SM (any MASTER, while
//! it is DISCOVERING) makes it stand by (SMInfo STANDBY, no Set) and poll that master until
//! it goes away or hands over (SubnSet(SMInfo) HANDOVER, answered with ACKNOWLEDGE); a
//! master hands over to a STANDBY SM that outranks it (see the `foreign` module).
//!
//! Directed route is used for discovery, LID changes and table writes (routes may be in
//! flux); once a sweep has brought every port ACTIVE, port bring-up, PortStateChange
//! clears and light-sweep polls go LID-routed, with one directed-route retry on timeout.
//! On a fresh fabric every SMP is directed: ports that are not ACTIVE do not forward
//! LID-routed packets.

mod cluster;
mod config;
mod counters;
mod discovery;
mod error;
mod events;
pub mod explain;
mod foreign;
mod guid2lid;
mod intent;
mod io;
mod keys;
pub mod lids;
mod light;
mod mcast;
pub mod milestone;
pub mod perf;
mod program;
mod readback;
mod schedule;
mod state;
mod sweeper;
mod vl;
pub mod vports;

pub use config::{MS, PKeyTables, Role, SweeperConfig};
pub use counters::{ATTRS, Counters, METHODS};
pub use error::SmError;
pub use events::{Event, RoutingJob, RoutingOutcome, SweepReason, route_inline};
pub use explain::{Cause, ExplainInputs, ExplainPeer, ExplainTarget, Explanation};
pub use foreign::{RemoteSm, outranks};
pub use guid2lid::Guid2Lid;
pub use intent::{Intent, IntentEvent, LftBlockWrite, PKeyBlockWrite, PortChange, VportWrite};
pub use io::Transmit;
pub use mcast::{McastGroup, MftBlockWrite, MftTables, mlid_masks};
pub use readback::{PortTable, ReadbackId, ReadbackReport};
pub use sweeper::{Phase, Sweeper};
pub use vl::{
    Sl2VlByPort, VlArbByPort, VlAttr, VlBlockWrite, VlTables, sl2vl_data, tables_by_port,
    vlarb_data,
};

/// Virtual time in nanoseconds.
pub type VTime = u64;
