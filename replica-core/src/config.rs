//! [`CoreConfig`]: a replica's settings as the core needs them (times in virtual
//! nanoseconds, counted by the driver's clock).

use crate::VTime;
use crate::error::CoreError;
use fabric::Guid;
use std::collections::BTreeMap;

/// One millisecond.
pub const MS: VTime = 1_000_000;

/// A replica's settings.
#[derive(Clone, Debug)]
pub struct CoreConfig {
    /// This replica's Raft id (>= 1).
    pub id: u64,
    /// Every replica's id and address (`host:port`), this one included. Addresses are only
    /// handed back in NotLeader answers.
    pub peers: BTreeMap<u64, String>,
    /// Voters of the initial membership, used only when the log is first initialized
    /// (empty: every peer).
    pub voters: Vec<u64>,
    /// Raft tick length (for the lease).
    pub tick: VTime,
    /// Election timeout in ticks; the randomised timeout is drawn in [n, 2n).
    pub election_ticks: usize,
    /// Heartbeat interval in ticks.
    pub heartbeat_ticks: usize,
    /// Snapshot and compact the log every this many applied entries.
    pub snapshot_every: u64,
    /// Save the applied state every this many applied entries.
    pub save_applied_every: u64,
    /// This replica's fabric port GUID (0 when the port is named otherwise).
    pub port_guid: Guid,
    /// SM priority (higher is preferred as master).
    pub priority: u8,
    /// Seed of the replica's own random choices (election timeouts, request ids).
    pub seed: u64,
    /// A proposal not answered within this is dropped (its caller times out first).
    pub proposal_ttl: VTime,
    /// A graceful stop waits this long for the leadership transfer.
    pub stop_timeout: VTime,
    /// A snapshot sent to a follower that has not answered within this is taken as lost
    /// (raft-rs then sends it again; it would otherwise wait for the follower forever).
    pub snapshot_timeout: VTime,
    /// Wait before attaching the master again after a failed attach.
    pub master_retry: VTime,
    /// Wait before attaching the standby again after a failed attach.
    pub standby_retry: VTime,
    /// Report every applied entry ([`crate::Output::Applied`]; the simulation's checker).
    pub observe_applied: bool,
    /// An empty log belongs to a new cluster (every replica starts empty and votes). When
    /// false, an empty log means this replica's log was lost in an existing cluster: it
    /// recovers — no vote, no campaign — until a leader has brought it up to an entry
    /// committed in the leader's own term (so it never votes with less than it once
    /// acknowledged). A log that is not empty ignores this.
    pub bootstrap: bool,
}

impl CoreConfig {
    /// The daemon's defaults for replica `id` of `peers`.
    pub fn new(id: u64, peers: BTreeMap<u64, String>) -> CoreConfig {
        CoreConfig {
            id,
            peers,
            voters: Vec::new(),
            tick: 50 * MS,
            election_ticks: 10,
            heartbeat_ticks: 2,
            snapshot_every: 1000,
            save_applied_every: 64,
            port_guid: Guid(0),
            priority: 0,
            seed: id,
            proposal_ttl: 30_000 * MS,
            stop_timeout: 3_000 * MS,
            snapshot_timeout: 10_000 * MS,
            master_retry: 20 * MS,
            standby_retry: 200 * MS,
            observe_applied: false,
            bootstrap: false,
        }
    }

    /// Lease length: half the minimum election timeout.
    pub fn lease(&self) -> VTime {
        self.tick * self.election_ticks as VTime / 2
    }

    /// Checks the settings can work.
    pub fn validate(&self) -> Result<(), CoreError> {
        let bad = |s: String| Err(CoreError::Config(s));
        if self.id == 0 {
            return bad("replica id must be >= 1".into());
        }
        if !self.peers.contains_key(&self.id) {
            return bad(format!("replica {} is not among the peers", self.id));
        }
        if self.election_ticks < 5 {
            return bad(format!(
                "election timeout of {} ticks: at least 5 (the lease must outlast the heartbeat interval)",
                self.election_ticks
            ));
        }
        if self.heartbeat_ticks == 0 || self.heartbeat_ticks * 2 >= self.election_ticks {
            return bad(format!(
                "heartbeat of {} ticks against an election timeout of {}: the heartbeat must be under half of it",
                self.heartbeat_ticks, self.election_ticks
            ));
        }
        if self.tick == 0 || self.snapshot_every == 0 || self.save_applied_every == 0 {
            return bad("tick, snapshot and save intervals must be > 0".into());
        }
        Ok(())
    }
}
