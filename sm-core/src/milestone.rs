//! What a master reports to whoever listens (the daemon's summary, its replica, tests): a clonable
//! mirror of the sweeper's events, stamped with the daemon's elapsed time.

use crate::{Counters, Event};
use std::time::Duration;

/// One milestone of the master.
#[derive(Clone, Debug)]
pub struct Milestone {
    /// Time since the master started.
    pub elapsed: Duration,
    /// What happened.
    pub kind: MilestoneKind,
}

/// The milestones.
#[derive(Clone, Debug)]
pub enum MilestoneKind {
    /// This replica became master (single replica: at start).
    EnteredMaster,
    /// A heavy sweep started.
    HeavySweepStarted {
        /// Sweep number.
        sweep: u64,
    },
    /// Discovery finished.
    DiscoveryDone {
        /// Nodes.
        nodes: usize,
        /// Switches.
        switches: usize,
        /// Links.
        links: usize,
        /// SMPs sent for discovery.
        smps: u64,
    },
    /// LIDs decided.
    LidsAssigned {
        /// Ports given a new LID block.
        new: usize,
        /// Ports whose LID changes.
        changed: usize,
        /// Highest LID.
        max_lid: u16,
    },
    /// A routing job went to the pool.
    RoutingStarted,
    /// Routing result accepted.
    RoutingDone {
        /// Engine.
        engine: &'static str,
        /// LFT blocks to write.
        lft_blocks: usize,
    },
    /// Routing failed.
    RoutingFailed(String),
    /// Programming finished.
    ProgrammingDone {
        /// LFT blocks written.
        lft_blocks: u64,
        /// P_Key blocks written.
        pkey_blocks: u64,
        /// PortInfo Sets.
        port_sets: u64,
        /// Sets that failed.
        failed: u64,
    },
    /// SUBNET UP.
    SubnetUp {
        /// SMP counters of the sweep.
        counters: Counters,
    },
    /// A heavy sweep finished.
    HeavySweepComplete {
        /// Sweep number.
        sweep: u64,
        /// SMP counters of the sweep.
        counters: Counters,
        /// Minimum SMPs it needed.
        min_smps: u64,
    },
    /// A light sweep finished.
    LightSweepComplete {
        /// Change found.
        changed: bool,
        /// SMPs sent.
        smps: u64,
    },
    /// A trap arrived.
    Trap {
        /// Trap number.
        number: u16,
    },
    /// The guid2lid file was written.
    Guid2LidSaved {
        /// Ports in it.
        ports: usize,
    },
    /// A counter sweep of the performance manager ended.
    PerfSweepDone {
        /// Sweep number.
        number: u64,
        /// Ports read.
        ports: usize,
        /// Ports given up.
        failed: usize,
        /// MADs sent.
        mads: u64,
        /// Duration in ms.
        ms: u64,
    },
    /// A port counter crossed its threshold (the alarm's text: node, port, LID, counter,
    /// value, threshold, peer).
    PerfAlarm {
        /// The alarm, as logged.
        text: String,
    },
    /// Another SM acting behind this master's back: an LFT block changed
    /// ([`Event::LftDrift`]), a P_KeyTable block changed ([`Event::PKeyDrift`]), an SM not
    /// of this cluster found ([`Event::UnknownSm`]), an SM with another SM_Key
    /// ([`Event::SmKeyIgnored`]), a
    /// lower-priority SM claiming MASTER ([`Event::RogueMaster`]). The text names its port
    /// GUID and LID.
    Rogue {
        /// The alarm, as logged.
        text: String,
    },
    /// A HANDOVER this master sent ended: `taken` (the other SM took over) or not. The
    /// text names the SM, as logged.
    HandoverEnded {
        /// The other SM took over.
        taken: bool,
        /// As logged.
        text: String,
    },
    /// A link's health changed.
    LinkHealth {
        /// `ok`, `degraded` or `down`.
        health: &'static str,
        /// The link and why, as logged.
        text: String,
    },
    /// The master stopped (shutdown, or its transport died).
    Stopped {
        /// Why.
        reason: String,
    },
}

impl MilestoneKind {
    /// The mirror of a sweeper event (None for `RoutingNeeded`, which is not a milestone).
    pub fn from_event(e: &Event) -> Option<MilestoneKind> {
        Some(match e {
            Event::HeavySweepStarted { sweep, .. } => {
                MilestoneKind::HeavySweepStarted { sweep: *sweep }
            }
            Event::DiscoveryDone {
                nodes,
                switches,
                links,
                smps,
                ..
            } => MilestoneKind::DiscoveryDone {
                nodes: *nodes,
                switches: *switches,
                links: *links,
                smps: *smps,
            },
            Event::LidsAssigned {
                new,
                changed,
                max_lid,
                ..
            } => MilestoneKind::LidsAssigned {
                new: *new,
                changed: *changed,
                max_lid: *max_lid,
            },
            // Other SMs on the fabric: logged by the master (see `master`), no milestone.
            Event::RoutingNeeded(_)
            | Event::PKeyReadback(_)
            | Event::OtherSms(_)
            | Event::ForeignMaster { .. }
            | Event::ForeignMasterGone { .. }
            | Event::SweepHeld { .. }
            | Event::LftsChecked { .. }
            | Event::HandoverSent { .. }
            | Event::HandoverReceived { .. }
            | Event::AcknowledgeSent { .. }
            | Event::SmInfoSetApplied { .. }
            | Event::SmInfoSetRefused { .. }
            | Event::FieldNotHeld { .. }
            | Event::Vports { .. } => return None,
            Event::HandoverTaken { .. } | Event::HandoverFailed { .. } => {
                MilestoneKind::HandoverEnded {
                    taken: matches!(e, Event::HandoverTaken { .. }),
                    text: e.to_string(),
                }
            }
            Event::LftDrift { .. }
            | Event::PKeyDrift { .. }
            | Event::UnknownSm { .. }
            | Event::SmKeyIgnored { .. }
            | Event::RogueMaster { .. } => MilestoneKind::Rogue {
                text: e.to_string(),
            },
            Event::RoutingDone {
                engine, lft_blocks, ..
            } => MilestoneKind::RoutingDone {
                engine,
                lft_blocks: *lft_blocks,
            },
            Event::RoutingFailed(e) => MilestoneKind::RoutingFailed(e.clone()),
            Event::ProgrammingDone {
                lft_blocks,
                pkey_blocks,
                port_sets,
                failed,
                ..
            } => MilestoneKind::ProgrammingDone {
                lft_blocks: *lft_blocks,
                pkey_blocks: *pkey_blocks,
                port_sets: *port_sets,
                failed: *failed,
            },
            Event::SubnetUp { counters, .. } => MilestoneKind::SubnetUp {
                counters: *counters,
            },
            Event::HeavySweepComplete {
                sweep,
                counters,
                min_smps,
            } => MilestoneKind::HeavySweepComplete {
                sweep: *sweep,
                counters: *counters,
                min_smps: *min_smps,
            },
            Event::LightSweepComplete { changed, smps } => MilestoneKind::LightSweepComplete {
                changed: *changed,
                smps: *smps,
            },
            Event::Trap { number, .. } => MilestoneKind::Trap { number: *number },
        })
    }
}
