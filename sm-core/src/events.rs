//! What the sweeper reports ([`Event`]) and the routing hand-off ([`RoutingJob`]).

use crate::counters::Counters;
use crate::{SmError, VTime};
use routing::{EngineOptions, Executor, Lfts, RoutingInput, Sequential};
use std::fmt;
use std::sync::Arc;

/// Routing work the daemon runs wherever it likes (worker pool, threads, inline) and hands
/// back through [`crate::Sweeper::handle_routing_result`].
#[derive(Debug)]
pub struct RoutingJob {
    /// Heavy sweep this job belongs to; a result for an older sweep is ignored.
    pub sweep: u64,
    /// The dense routing input built from the discovered fabric and the LIDs.
    pub input: RoutingInput,
    /// Engine chain, tried in order.
    pub engines: Vec<String>,
    /// Engine options.
    pub options: EngineOptions,
    /// Suggested number of shards per phase (the executor decides where they run).
    pub shards: usize,
    /// Tables programmed so far, kept where still valid (incremental routing).
    pub prev: Option<Arc<Lfts>>,
}

/// The merged result of a [`RoutingJob`].
#[derive(Debug)]
pub struct RoutingOutcome {
    /// The job's [`RoutingJob::sweep`].
    pub sweep: u64,
    /// Engine that produced the tables.
    pub engine: &'static str,
    /// One LFT per switch.
    pub lfts: Lfts,
    /// Engines that refused first, with their reasons.
    pub refusals: Vec<String>,
    /// The SL each switch pair must use, when the engine requires one (the SA answers
    /// PathRecords with it).
    pub path_sl: Option<std::sync::Arc<routing::PathSl>>,
    /// The SL-to-VL tables `path_sl` relies on (programmed on the switch ports).
    pub sl2vl: Option<std::sync::Arc<routing::EngineSl2Vl>>,
    /// Warnings about the accepted routing (ROUTE-W-CDG: credit loops kept on request).
    pub warnings: Vec<String>,
}

impl RoutingJob {
    /// The shard plan: contiguous switch ranges, the same for both phases (what
    /// [`routing::split`] gives for [`RoutingJob::shards`]).
    pub fn shard_plan(&self) -> Vec<routing::Shard> {
        routing::split(&self.input, self.shards)
    }

    /// Runs the engine chain with `exec` running the shards of each phase.
    pub fn run<X: Executor>(&self, exec: &X) -> Result<RoutingOutcome, SmError> {
        let names: Vec<&str> = self.engines.iter().map(String::as_str).collect();
        let out = routing::route_with_chain(
            &self.input,
            &names,
            &self.options,
            exec,
            self.shards,
            self.prev.as_deref(),
        )?;
        Ok(RoutingOutcome {
            sweep: self.sweep,
            engine: out.routing.engine,
            lfts: out.routing.lfts,
            refusals: out
                .refusals
                .iter()
                .map(|r| format!("{}: {}", r.engine, r.reason))
                .collect(),
            path_sl: out.routing.path_sl,
            sl2vl: out.routing.sl2vl,
            warnings: out.warnings,
        })
    }
}

/// Computes a routing job on the calling thread (tests, benchmarks, small fabrics).
pub fn route_inline(job: &RoutingJob) -> Result<RoutingOutcome, SmError> {
    job.run(&Sequential)
}

/// A milestone or a request to the daemon.
#[derive(Debug)]
pub enum Event {
    /// A heavy sweep started.
    HeavySweepStarted {
        /// Sweep number.
        sweep: u64,
        /// Why it started.
        reason: SweepReason,
    },
    /// Discovery finished.
    DiscoveryDone {
        /// Nodes found.
        nodes: usize,
        /// Switches among them.
        switches: usize,
        /// Ports whose PortInfo was read.
        ports: usize,
        /// Links found.
        links: usize,
        /// SMPs sent for discovery.
        smps: u64,
        /// Minimum SMPs discovery needs (one NodeInfo per link plus the local node, one
        /// NodeDescription per node, one PortInfo per port read, one SwitchInfo per switch).
        min_smps: u64,
    },
    /// LIDs decided.
    LidsAssigned {
        /// Ports given a remembered range.
        from_map: usize,
        /// Ports that kept the LID they carried.
        kept: usize,
        /// Ports given a new block.
        new: usize,
        /// Ports whose LID will change.
        changed: usize,
        /// Highest LID in use.
        max_lid: u16,
    },
    /// Routing must be computed; hand the result to `handle_routing_result`.
    RoutingNeeded(Box<RoutingJob>),
    /// Routing result accepted and diffed against what is programmed.
    RoutingDone {
        /// Engine used.
        engine: &'static str,
        /// LFT blocks to write.
        lft_blocks: usize,
        /// Engines that refused first.
        refusals: Vec<String>,
        /// Warnings about the accepted routing (ROUTE-W-CDG).
        warnings: Vec<String>,
    },
    /// Routing failed: the sweep stops and is retried at the next interval.
    RoutingFailed(String),
    /// Every planned Set was written (or given up).
    ProgrammingDone {
        /// LFT blocks written.
        lft_blocks: u64,
        /// P_KeyTable blocks written.
        pkey_blocks: u64,
        /// PortInfo Sets.
        port_sets: u64,
        /// SwitchInfo Sets.
        switch_sets: u64,
        /// Sets given up after every retry.
        failed: u64,
    },
    /// First time every port is ACTIVE and routed (OpenSM's "SUBNET UP").
    SubnetUp {
        /// Virtual time it happened.
        at: VTime,
        /// Counters since the sweep started.
        counters: Counters,
    },
    /// A heavy sweep finished.
    HeavySweepComplete {
        /// Sweep number.
        sweep: u64,
        /// SMPs of this sweep.
        counters: Counters,
        /// Minimum SMPs this sweep needed (discovery minimum plus every planned Set).
        min_smps: u64,
    },
    /// A light sweep finished.
    LightSweepComplete {
        /// True when it found a change (a heavy sweep follows).
        changed: bool,
        /// SMPs it sent.
        smps: u64,
    },
    /// A P_KeyTable read-back ([`crate::Sweeper::request_pkey_readback`]) finished.
    PKeyReadback(Box<crate::ReadbackReport>),
    /// SMs found at other ports after discovery (their SMInfo answers; see `foreign`).
    OtherSms(Vec<crate::RemoteSm>),
    /// A foreign MASTER outranks this SM: it stands by (SMInfo STANDBY, nothing written)
    /// and polls that master every sweep interval.
    ForeignMaster {
        /// The master's port GUID.
        guid: fabric::Guid,
        /// Its priority.
        priority: u8,
    },
    /// A lower-priority SM answered MASTER to this master's query (it should have yielded:
    /// it may be writing): reported; this master carries on and expects its HANDOVER.
    RogueMaster {
        /// Its port GUID.
        guid: fabric::Guid,
        /// Its port's LID (0: none yet).
        lid: fabric::Lid,
        /// The priority it answered.
        priority: u8,
    },
    /// A light sweep's P_Key audit read back a P_KeyTable block that is not what this
    /// master programmed (changed behind its back): the port's table counts as unknown and
    /// the heavy sweep that follows rewrites it.
    PKeyDrift {
        /// The port's GUID (a switch's: its node GUID).
        port_guid: fabric::Guid,
        /// The port number.
        port: u8,
        /// The port's LID (a switch's: port 0's; 0: none known).
        lid: fabric::Lid,
        /// The P_KeyTable block.
        block: u16,
    },
    /// An SM this SM's query found for the first time at a port that is not its cluster's
    /// (`SweeperConfig::peer_sms`): reported once per port GUID.
    UnknownSm {
        /// Its port GUID.
        guid: fabric::Guid,
        /// Its port's LID (0: none yet).
        lid: fabric::Lid,
        /// Its priority.
        priority: u8,
        /// Its state (None: undefined).
        state: Option<mad::SmState>,
    },
    /// A light sweep's LFT audit read back a block that is not what this master wants
    /// (changed behind its back: a rogue SM, a switch that lost it): the switch's table
    /// counts as unknown and the heavy sweep that follows rewrites it.
    LftDrift {
        /// The switch's node GUID.
        switch: fabric::Guid,
        /// Its LID (0: none known).
        lid: fabric::Lid,
        /// The LFT block.
        block: u16,
    },
    /// An SM whose SMInfo answer carries another SM_Key (non-zero, not this SM's): it takes
    /// no part in this SM's mastership decisions (IBA 14.4.1; OpenSM ignores such SMs too).
    SmKeyIgnored {
        /// Its port GUID.
        guid: fabric::Guid,
        /// Its port's LID (0: none yet).
        lid: fabric::Lid,
        /// The priority it answered.
        priority: u8,
        /// The state it answered.
        state: Option<mad::SmState>,
    },
    /// The foreign master this SM stood by for is gone: a heavy sweep as master follows.
    /// A discovery lost reads and did not reach an SM the last query found MASTER or
    /// outranking this one, or came before this SM brought the subnet up: the sweep writes
    /// nothing and another follows (bounded), rather than a second master writing beside
    /// an unseen one.
    SweepHeld {
        /// The SM not reached (None: the subnet is not up yet).
        missed: Option<fabric::Guid>,
    },
    ForeignMasterGone {
        /// The master's port GUID.
        guid: fabric::Guid,
        /// What it answered last (None: an undefined state value, or it stopped
        /// answering: then `missed_polls` > 0).
        state: Option<mad::SmState>,
        /// Polls in a row it left unanswered.
        missed_polls: u8,
    },
    /// This master sent SubnSet(SMInfo) HANDOVER to a STANDBY SM that outranks it and
    /// programs nothing until that SM takes over (see `foreign::handover`).
    HandoverSent {
        /// Port GUID of the SM handed over to.
        guid: fabric::Guid,
        /// Its priority.
        priority: u8,
    },
    /// The SM this master handed over to took over: it sent ACKNOWLEDGE (`acknowledged`),
    /// or a poll found it MASTER (OpenSM 3.3.23 sends no ACKNOWLEDGE). This SM stands by
    /// for it ([`Event::ForeignMaster`] follows).
    HandoverTaken {
        /// Port GUID of the new master.
        guid: fabric::Guid,
        /// True when its ACKNOWLEDGE arrived.
        acknowledged: bool,
    },
    /// The SM this master handed over to neither acknowledged nor reported MASTER within
    /// `polls` polls (or refused the Set): this SM stays MASTER, sweeps again, and hands
    /// over to it no more while it reports STANDBY.
    HandoverFailed {
        /// Port GUID of the SM handed over to.
        guid: fabric::Guid,
        /// Polls made after the HANDOVER.
        polls: u8,
    },
    /// A SubnSet(SMInfo) HANDOVER from the master `guid` was taken: this SM is MASTER and
    /// sweeps with the LFT read-back of a takeover; the ACKNOWLEDGE follows once `guid`
    /// reports STANDBY ([`Event::AcknowledgeSent`]).
    HandoverReceived {
        /// Port GUID of the SM that handed over.
        guid: fabric::Guid,
    },
    /// The ACKNOWLEDGE owed to `guid` for its HANDOVER was sent: an SMInfo answer of
    /// `guid` reported STANDBY.
    AcknowledgeSent {
        /// Port GUID of the SM that handed over.
        guid: fabric::Guid,
    },
    /// A SubnSet(SMInfo) DISABLE, STANDBY or DISCOVER from the master `guid` was acted on:
    /// this SM's SMInfo state is now `state`.
    SmInfoSetApplied {
        /// Port GUID of the sender.
        guid: fabric::Guid,
        /// The attribute modifier ([`mad::SmInfo::MOD_DISABLE`] ...).
        modifier: u32,
        /// The state entered.
        state: mad::SmState,
    },
    /// A SubnSet(SMInfo) with a handover modifier was refused (answered with status
    /// "invalid attribute value", nothing changed).
    SmInfoSetRefused {
        /// Port GUID the Set names as its sender.
        guid: fabric::Guid,
        /// The attribute modifier.
        modifier: u32,
        /// Why.
        reason: &'static str,
    },
    /// After a foreign master: LFT blocks the routing wanted written were read back first;
    /// `kept` of them already held the wanted entries and are not written.
    LftsChecked {
        /// Blocks read.
        read: usize,
        /// Blocks found right (not written).
        kept: usize,
    },
    /// A port's SMA answered a PortInfo Set without taking a field the SM wrote (ibsim keeps
    /// no M_KeyLeasePeriod and no partition enforcement bits): the SM stops rewriting it
    /// every sweep and says so once per port and field.
    FieldNotHeld {
        /// Node GUID.
        node: fabric::Guid,
        /// Port number.
        port: u8,
        /// The PortInfo component.
        field: &'static str,
        /// The value written.
        wrote: u32,
        /// The value the port reports.
        holds: u32,
    },
    /// A heavy sweep's programming ended with virtualization-capable CA ports (or alias
    /// GUIDs) on the fabric: what their vports are now.
    Vports {
        /// Virtualization-capable CA ports read.
        ports: usize,
        /// Vports found on them.
        vports: usize,
        /// Vports ACTIVE.
        active: usize,
    },
    /// A trap arrived (and was repressed).
    Trap {
        /// Trap number (generic notices).
        number: u16,
        /// Issuer LID.
        issuer: fabric::Lid,
    },
}

/// Why a heavy sweep runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SweepReason {
    /// The first sweep.
    Initial,
    /// The daemon asked.
    Requested,
    /// A light sweep saw a change.
    Change,
    /// A trap (128 link state, 144 capability change, ...).
    Trap(u16),
    /// Link-state traps (128) from this many switches, and nothing else: a targeted sweep
    /// re-reads those switches only (`discovery::targeted`).
    LinkTraps(u32),
    /// The foreign master this SM stood by for went away.
    MasterGone,
    /// The master was not run for more than two sweep intervals (its process stopped).
    Resumed,
    /// A switch lost a link and its PortStateChange was cleared after that was read: its
    /// ports are read again (a link back in between sent no trap).
    Recheck,
    /// The last discovery lost reads and was held back ([`Event::SweepHeld`]).
    LossyDiscovery,
    /// The master handed over to this SM (SubnSet(SMInfo) HANDOVER).
    Handover,
    /// The SM this master handed over to did not take over.
    HandoverFailed,
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::HeavySweepStarted { sweep, reason } => {
                write!(f, "Entering heavy sweep {sweep} ({reason:?})")
            }
            Event::DiscoveryDone {
                nodes,
                switches,
                ports,
                links,
                smps,
                min_smps,
            } => write!(
                f,
                "DISCOVERY COMPLETE: {nodes} nodes ({switches} switches), {ports} ports, {links} links, {smps} SMPs (minimum {min_smps})"
            ),
            Event::LidsAssigned {
                from_map,
                kept,
                new,
                changed,
                max_lid,
            } => write!(
                f,
                "LID ASSIGNMENT COMPLETE: {from_map} remembered, {kept} kept, {new} new, {changed} changing, max LID {max_lid}"
            ),
            Event::RoutingNeeded(job) => write!(
                f,
                "ROUTING REQUESTED: {} switches, {} end ports, engines {}",
                job.input.num_switches(),
                job.input.end_ports.len(),
                job.engines.join(",")
            ),
            Event::RoutingDone {
                engine,
                lft_blocks,
                refusals,
                warnings,
            } => {
                write!(
                    f,
                    "ROUTING COMPLETE: engine {engine}, {lft_blocks} LFT blocks to write"
                )?;
                for r in refusals {
                    write!(f, "; refused: {r}")?;
                }
                for w in warnings {
                    write!(f, "; warning: {w}")?;
                }
                Ok(())
            }
            Event::RoutingFailed(e) => write!(f, "ROUTING FAILED: {e}"),
            Event::ProgrammingDone {
                lft_blocks,
                pkey_blocks,
                port_sets,
                switch_sets,
                failed,
            } => write!(
                f,
                "PROGRAMMING COMPLETE: {lft_blocks} LFT blocks, {pkey_blocks} P_Key blocks, {port_sets} PortInfo Sets, {switch_sets} SwitchInfo Sets, {failed} failed"
            ),
            Event::SubnetUp { at, counters } => {
                write!(f, "SUBNET UP at {} ms: {counters}", at / 1_000_000)
            }
            Event::HeavySweepComplete {
                sweep,
                counters,
                min_smps,
            } => write!(
                f,
                "HEAVY SWEEP COMPLETE (sweep {sweep}): {counters}, minimum {min_smps}"
            ),
            Event::LightSweepComplete { changed, smps } => write!(
                f,
                "LIGHT SWEEP COMPLETE: {} ({smps} SMPs)",
                if *changed {
                    "change detected"
                } else {
                    "no change"
                }
            ),
            Event::Trap { number, issuer } => {
                write!(f, "Received trap {number} from LID {issuer}")
            }
            Event::OtherSms(v) => {
                write!(f, "SMInfo of {} other SM port(s):", v.len())?;
                for r in v {
                    write!(
                        f,
                        " {} priority {} state {};",
                        r.port_guid,
                        r.priority,
                        state_name(r.state)
                    )?;
                }
                Ok(())
            }
            Event::RogueMaster {
                guid,
                lid,
                priority,
            } => write!(
                f,
                "SM at port {guid} LID {} (priority {priority}) claims MASTER next to this master",
                lid.0
            ),
            Event::PKeyDrift {
                port_guid,
                port,
                lid,
                block,
            } => write!(
                f,
                "P_KeyTable block {block} of port {port_guid} port {port} LID {} changed behind \
                 our back: rewriting",
                lid.0
            ),
            Event::UnknownSm {
                guid,
                lid,
                priority,
                state,
            } => write!(
                f,
                "unknown SM at port {guid} LID {} (priority {priority}, {}): not one of ours",
                lid.0,
                state_name(*state)
            ),
            Event::LftDrift { switch, lid, block } => write!(
                f,
                "LFT block {block} of switch {switch} LID {} changed behind our back: rewriting",
                lid.0
            ),
            Event::SmKeyIgnored {
                guid,
                lid,
                priority,
                state,
            } => write!(
                f,
                "SM at port {guid} LID {} (priority {priority}, {}) answers another SM_Key: ignored",
                lid.0,
                state_name(*state)
            ),
            Event::ForeignMaster { guid, priority } => write!(
                f,
                "Entering STANDBY state (master {guid} priority {priority})"
            ),
            Event::SweepHeld { missed: Some(guid) } => write!(
                f,
                "SM {guid} not reached by a discovery that lost reads: nothing written, sweeping again"
            ),
            Event::SweepHeld { missed: None } => write!(
                f,
                "discovery lost reads before SUBNET UP: nothing written, sweeping again"
            ),
            Event::ForeignMasterGone {
                guid,
                state,
                missed_polls: 0,
            } => write!(
                f,
                "master {guid} now reports {}: entering DISCOVERING state",
                state_name(*state)
            ),
            Event::ForeignMasterGone {
                guid, missed_polls, ..
            } => write!(
                f,
                "master {guid} did not answer {missed_polls} SMInfo polls: entering DISCOVERING state"
            ),
            Event::FieldNotHeld {
                node,
                port,
                field,
                wrote,
                holds,
            } => write!(
                f,
                "node {node} port {port} does not hold PortInfo.{field} (wrote {wrote}, it reports {holds}); not rewritten each sweep"
            ),
            Event::HandoverSent { guid, priority } => write!(
                f,
                "HANDOVER sent to {guid} (priority {priority}): no Set until it takes over"
            ),
            Event::HandoverTaken {
                guid,
                acknowledged: true,
            } => write!(f, "ACKNOWLEDGE received from {guid}: handover done"),
            Event::HandoverTaken { guid, .. } => write!(
                f,
                "{guid} reports MASTER after our HANDOVER (no ACKNOWLEDGE): handover done"
            ),
            Event::HandoverFailed { guid, polls } => write!(
                f,
                "HANDOVER to {guid} not taken after {polls} SMInfo polls: staying MASTER"
            ),
            Event::HandoverReceived { guid } => write!(
                f,
                "received HANDOVER from {guid}: entering MASTER state, ACKNOWLEDGE once it reports STANDBY"
            ),
            Event::AcknowledgeSent { guid } => {
                write!(f, "ACKNOWLEDGE sent to {guid} (it reports STANDBY)")
            }
            Event::SmInfoSetApplied {
                guid,
                modifier,
                state,
            } => write!(
                f,
                "received {} from {guid}: entering {} state",
                modifier_name(*modifier),
                state_name(Some(*state))
            ),
            Event::SmInfoSetRefused {
                guid,
                modifier,
                reason,
            } => write!(
                f,
                "SMInfo Set {} from {guid} refused: {reason}",
                modifier_name(*modifier)
            ),
            Event::Vports {
                ports,
                vports,
                active,
            } => write!(
                f,
                "Virtualization: {ports} capable ports, {vports} vports, {active} ACTIVE"
            ),
            Event::LftsChecked { read, kept } => write!(
                f,
                "LFT CHECK COMPLETE: {read} blocks read back, {kept} already right (not rewritten)"
            ),
            Event::PKeyReadback(r) => write!(
                f,
                "P_KEY READBACK {} COMPLETE: {} tables read, {} ports did not answer, {} SMPs",
                r.id,
                r.tables.len(),
                r.unanswered.len(),
                r.smps
            ),
        }
    }
}

fn state_name(s: Option<mad::SmState>) -> &'static str {
    match s {
        Some(mad::SmState::NotActive) => "NOT-ACTIVE",
        Some(mad::SmState::Discovering) => "DISCOVERING",
        Some(mad::SmState::Standby) => "STANDBY",
        Some(mad::SmState::Master) => "MASTER",
        None => "unknown",
    }
}

fn modifier_name(m: u32) -> &'static str {
    match m {
        mad::SmInfo::MOD_HANDOVER => "HANDOVER",
        mad::SmInfo::MOD_ACKNOWLEDGE => "ACKNOWLEDGE",
        mad::SmInfo::MOD_DISABLE => "DISABLE",
        mad::SmInfo::MOD_STANDBY => "STANDBY",
        mad::SmInfo::MOD_DISCOVER => "DISCOVER",
        _ => "(unknown modifier)",
    }
}
