//! What the core asks its driver to do ([`Output`]), and what it has to say ([`Notice`]).
//!
//! Outputs are drained in order after every input; by then everything the core wrote to its
//! log is flushed, so a driver may send and answer at once.

use crate::error::{CoreError, ProposeError};
use crate::start::MasterSeed;
use proto::state::ApplyResult;
use raft::eraftpb::Message;
use std::fmt;

/// One thing for the driver to do.
#[derive(Debug)]
pub enum Output {
    /// Send a Raft message to its `to` peer (heartbeats already carry their lease tag).
    Send(Message),
    /// Start the master of generation `gen` (attach at this replica's port with a sweeper
    /// configured by [`MasterSeed::configure`]); report back with
    /// [`crate::ReplicaCore::master_started`] or [`crate::ReplicaCore::attach_failed`].
    StartMaster {
        /// Generation: every later input about this master names it.
        gen_: u64,
        /// What it starts from.
        seed: Box<MasterSeed>,
    },
    /// Attach the standby SM of generation `gen_` (see [`crate::start::configure_standby`]).
    StartStandby {
        /// Generation.
        gen_: u64,
    },
    /// Stop the master or standby of generation `gen_` (it sends nothing more); report with
    /// [`crate::ReplicaCore::role_stopped`] once its port is free.
    StopRole {
        /// Generation.
        gen_: u64,
    },
    /// The intent `id` of master `gen_` was committed (or could not be): its Sets may leave
    /// (or its sweep ends without writing).
    IntentResult {
        /// Master generation that proposed it.
        gen_: u64,
        /// Intent id.
        id: u64,
        /// Committed and accepted.
        committed: bool,
    },
    /// Read the tables of master `gen_` after its heavy sweep and hand them to
    /// [`crate::ReplicaCore::sweep_tables`].
    RecordTables {
        /// Generation.
        gen_: u64,
    },
    /// Proposal `request` was committed and applied here.
    Answer {
        /// Its request id.
        request: u64,
        /// The apply result.
        result: ApplyResult,
    },
    /// Proposal `request` will not be answered (it outlived its time to live): its outcome
    /// is unknown to this replica.
    Dropped {
        /// Its request id.
        request: u64,
    },
    /// A linearizable read: `Ok(index)` once this replica has applied up to the index the
    /// leader confirmed (read the state now), or the reason it cannot be served.
    ReadDone {
        /// The ticket [`crate::ReplicaCore::read_index`] gave.
        ticket: u64,
        /// Read index, or why not.
        result: Result<u64, ProposeError>,
    },
    /// A committed entry applied here (only with [`crate::CoreConfig::observe_applied`]).
    Applied {
        /// Log index.
        index: u64,
        /// Term.
        term: u64,
        /// FNV-1a of the entry's type and data.
        hash: u64,
    },
    /// The graceful stop is done: leadership handed over (or not leading), the master and
    /// the standby told to stop. The process may exit.
    Stopped,
    /// The replica cannot go on (its log failed): the process must exit non-zero with this
    /// as its last word. Nothing else comes after it.
    Fatal(CoreError),
    /// Something to log.
    Notice(Notice),
}

/// How loud a notice is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Details.
    Debug,
    /// Milestones.
    Info,
    /// Something unexpected the replica handles.
    Warn,
    /// Something wrong the operator should see.
    Error,
}

/// A log line the core wants written (the driver picks the sink).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Notice {
    /// Restarted from its log.
    Recovered {
        /// Applied index resumed from.
        applied: u64,
        /// Policy version in force.
        policy_version: u64,
        /// LIDs recorded.
        lids: usize,
        /// Switch LFTs recorded.
        lfts: usize,
    },
    /// Won an election.
    LeaderOf {
        /// Term.
        term: u64,
    },
    /// Lost leadership.
    SteppedDown {
        /// Term.
        term: u64,
        /// Leader known now (0: none).
        leader: u64,
    },
    /// Starting the master.
    MasterStarting {
        /// Term.
        term: u64,
        /// LIDs seeded.
        lids: usize,
        /// Switch LFTs seeded.
        lfts: usize,
        /// P_Key tables seeded.
        pkeys: usize,
        /// Policy version.
        policy_version: u64,
    },
    /// The master role ends (stepped down, policy change, stop).
    MasterEnds,
    /// The standby SM is being attached.
    StandbyStarting,
    /// The master or standby stopped without being asked.
    RoleStoppedByItself {
        /// True for the master.
        master: bool,
    },
    /// A new policy (or tenant set) is in force; the master restarts on it.
    RestartingMaster,
    /// A partition policy version is in force.
    PolicyInForce {
        /// Version.
        version: u64,
        /// Log index.
        index: u64,
    },
    /// A QoS policy version is in force.
    QosPolicyInForce {
        /// Version.
        version: u64,
        /// Log index.
        index: u64,
    },
    /// A tenant set version is in force.
    TenantsInForce {
        /// Version.
        version: u64,
        /// Log index.
        index: u64,
    },
    /// The tenants do not compile; the master plans from the operator policy alone.
    TenantsDoNotCompile {
        /// Why.
        error: String,
    },
    /// A committed entry was refused by the state machine.
    EntryRefused {
        /// Index.
        index: u64,
        /// Why.
        error: String,
        /// One of the replicas' own commands (records, intents), which should never be
        /// refused.
        own: bool,
    },
    /// A committed entry could not be decoded (applied as a no-op).
    Undecodable {
        /// Index.
        index: u64,
        /// Why.
        error: String,
    },
    /// Membership applied.
    Membership {
        /// Voters now.
        voters: Vec<u64>,
    },
    /// A conf change raft refused.
    ConfChangeRefused {
        /// Why.
        error: String,
    },
    /// Installed the leader's snapshot.
    SnapshotInstalled {
        /// Index.
        index: u64,
    },
    /// Took a snapshot and compacted the log.
    SnapshotTaken {
        /// Index.
        index: u64,
    },
    /// A snapshot could not be taken (the log stays as it is).
    SnapshotFailed {
        /// Index.
        index: u64,
        /// Why.
        error: String,
    },
    /// A master's intent went to the log.
    IntentProposed {
        /// Intent id.
        id: u64,
        /// LFT blocks.
        lft_blocks: usize,
        /// P_Key blocks.
        pkey_blocks: usize,
        /// PortInfo changes.
        port_changes: usize,
    },
    /// An intent was not committed.
    IntentNotCommitted {
        /// Intent id.
        id: u64,
    },
    /// A heavy sweep's topology and LIDs go to the log.
    RecordingSweep {
        /// Commands proposed.
        commands: usize,
    },
    /// raft-rs refused one of the replica's own proposals.
    ProposalDropped {
        /// Why.
        error: String,
    },
    /// Leadership is being transferred.
    Transferring {
        /// To whom.
        to: u64,
    },
    /// A caught-up replica of higher priority takes the master role.
    PriorityHandover {
        /// To whom.
        to: u64,
        /// Its priority.
        priority: u8,
        /// Ours.
        own: u8,
    },
    /// A graceful stop hands leadership over first.
    StopHandingOver {
        /// To whom.
        to: u64,
    },
    /// The transfer of a graceful stop did not complete in time.
    StopTransferTimedOut,
    /// Started on an empty log in an existing cluster: no vote until a leader caught it up.
    RecoveringLog,
    /// A recovering replica learned the cluster's term from enough other replicas that
    /// no term it may have acknowledged entries in is beyond it: it follows leaders of
    /// that term or later only.
    TermLearned {
        /// The highest term the replicas answered.
        term: u64,
        /// How many replicas answered.
        answers: usize,
    },
    /// The lost log is back: votes again.
    LogRecovered {
        /// Committed index reached.
        index: u64,
        /// The leader's term it was committed in.
        term: u64,
    },
    /// The leader commits beyond this replica's log: it lost entries it acknowledged.
    LogShorterThanCommit {
        /// Commit index the leader sent.
        commit: u64,
        /// This log's last index.
        last: u64,
    },
    /// A follower lost entries it acknowledged: it is replicated again from the start.
    PeerLostLog {
        /// The follower.
        peer: u64,
        /// What it had acknowledged.
        matched: u64,
        /// Its last index now.
        last: u64,
    },
    /// A snapshot sent to a follower was not answered in time: sent again.
    SnapshotUnanswered {
        /// The follower.
        peer: u64,
    },
    /// A Raft message the core could not use.
    BadMessage {
        /// Why.
        error: String,
    },
}

impl Notice {
    /// How loud it is.
    pub fn level(&self) -> Level {
        match self {
            Notice::EntryRefused { own: false, .. } => Level::Debug,
            Notice::EntryRefused { own: true, .. }
            | Notice::RoleStoppedByItself { .. }
            | Notice::SnapshotFailed { .. }
            | Notice::IntentNotCommitted { .. }
            | Notice::ProposalDropped { .. }
            | Notice::StopTransferTimedOut
            | Notice::RecoveringLog
            | Notice::LogShorterThanCommit { .. }
            | Notice::PeerLostLog { .. }
            | Notice::SnapshotUnanswered { .. }
            | Notice::BadMessage { .. } => Level::Warn,
            Notice::Undecodable { .. }
            | Notice::ConfChangeRefused { .. }
            | Notice::TenantsDoNotCompile { .. } => Level::Error,
            _ => Level::Info,
        }
    }
}

impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Notice::Recovered {
                applied,
                policy_version,
                lids,
                lfts,
            } => write!(
                f,
                "recovered: applied index {applied}, policy version {policy_version}, {lids} LIDs, {lfts} LFTs"
            ),
            Notice::LeaderOf { term } => write!(f, "leader of term {term}"),
            Notice::SteppedDown { term, leader } => {
                write!(f, "stepped down (term {term}, leader {leader})")
            }
            Notice::MasterStarting {
                term,
                lids,
                lfts,
                pkeys,
                policy_version,
            } => write!(
                f,
                "becomes MASTER for term {term} (seeded: {lids} LIDs, {lfts} LFTs, {pkeys} P_Key tables, policy {policy_version})"
            ),
            Notice::MasterEnds => write!(f, "master role ends"),
            Notice::StandbyStarting => write!(f, "standby SM attaching (SMInfo STANDBY)"),
            Notice::RoleStoppedByItself { master: true } => {
                write!(f, "the master stopped by itself")
            }
            Notice::RoleStoppedByItself { master: false } => {
                write!(f, "the standby SM stopped by itself")
            }
            Notice::RestartingMaster => {
                write!(f, "restarting the master on the new partition policy")
            }
            Notice::PolicyInForce { version, index } => {
                write!(
                    f,
                    "partition policy version {version} in force (index {index})"
                )
            }
            Notice::QosPolicyInForce { version, index } => {
                write!(f, "QoS policy version {version} in force (index {index})")
            }
            Notice::TenantsInForce { version, index } => {
                write!(f, "tenant set version {version} in force (index {index})")
            }
            Notice::TenantsDoNotCompile { error } => write!(
                f,
                "E_NODE_TENANTS: tenants do not compile ({error}); planning from the operator policy alone"
            ),
            Notice::EntryRefused {
                index,
                error,
                own: true,
            } => write!(f, "E_NODE_APPLY: entry {index} refused: {error}"),
            Notice::EntryRefused { index, error, .. } => {
                write!(f, "entry {index} refused: {error}")
            }
            Notice::Undecodable { index, error } => {
                write!(f, "E_NODE_RAFT: entry {index}: undecodable: {error}")
            }
            Notice::Membership { voters } => write!(f, "membership now: voters {voters:?}"),
            Notice::ConfChangeRefused { error } => {
                write!(f, "E_NODE_RAFT: conf change refused: {error}")
            }
            Notice::SnapshotInstalled { index } => {
                write!(f, "applied a snapshot from the leader at index {index}")
            }
            Notice::SnapshotTaken { index } => {
                write!(f, "snapshot at index {index}; log compacted")
            }
            Notice::SnapshotFailed { index, error } => {
                write!(f, "E_NODE_RAFT: snapshot at {index}: {error}")
            }
            Notice::IntentProposed {
                id,
                lft_blocks,
                pkey_blocks,
                port_changes,
            } => write!(
                f,
                "intent {}/{}: {lft_blocks} LFT blocks, {pkey_blocks} P_Key blocks, {port_changes} PortInfo changes proposed",
                id >> 32,
                id & 0xFFFF_FFFF
            ),
            Notice::IntentNotCommitted { id } => write!(
                f,
                "intent {}/{} was not committed",
                id >> 32,
                id & 0xFFFF_FFFF
            ),
            Notice::RecordingSweep { commands } => {
                write!(f, "recording the sweep in the log: {commands} commands")
            }
            Notice::ProposalDropped { error } => {
                write!(f, "E_NODE_RAFT: proposal dropped: {error}")
            }
            Notice::Transferring { to } => write!(f, "transferring leadership to replica {to}"),
            Notice::PriorityHandover { to, priority, own } => write!(
                f,
                "replica {to} has priority {priority} > {own}: handing the master role over"
            ),
            Notice::StopHandingOver { to } => {
                write!(f, "graceful stop: handing leadership to replica {to} first")
            }
            Notice::StopTransferTimedOut => {
                write!(f, "leadership transfer did not complete; stopping anyway")
            }
            Notice::RecoveringLog => write!(
                f,
                "RCORE-W001 empty log in an existing cluster: recovering it from the leader; no vote or campaign until then"
            ),
            Notice::TermLearned { term, answers } => write!(
                f,
                "recovering: {answers} replicas answered, the cluster is at term {term}: taking the log from a leader of term {term} or later"
            ),
            Notice::LogRecovered { index, term } => write!(
                f,
                "log recovered up to index {index}, committed in term {term}: voting again"
            ),
            Notice::LogShorterThanCommit { commit, last } => write!(
                f,
                "RCORE-W002 the leader commits up to {commit} but this log ends at {last}: entries acknowledged here were lost; waiting for the leader to replicate them again"
            ),
            Notice::PeerLostLog {
                peer,
                matched,
                last,
            } => write!(
                f,
                "RCORE-W003 replica {peer} acknowledged up to {matched} but its log ends at {last}: replicating it again from the start"
            ),
            Notice::SnapshotUnanswered { peer } => write!(
                f,
                "RCORE-W004 the snapshot sent to replica {peer} was not answered in time: sending it again"
            ),
            Notice::BadMessage { error } => write!(f, "E_NODE_PEER: {error}"),
        }
    }
}
