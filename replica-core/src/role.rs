//! The replica's part on the fabric, as one [`Role`]: nothing attached, the standby SM, the
//! master, or one of them detaching. A leader holding the lease, once it applied its term's
//! first entry, becomes master (a standby detaches first: the port is exclusive); a replica
//! that is not leader runs the standby SM. The master stops the moment its replica steps
//! down, and restarts when a new policy is in force.

use crate::VTime;
use crate::core::ReplicaCore;
use crate::output::{Notice, Output};
use crate::start::MasterSeed;
use proto::state::{Command, command::Kind};
use storage::RaftLog;

/// What this replica runs on the fabric. Generations number every master and standby
/// started, so that news of a stopped one is told apart from the current one's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Nothing attached; after a failed attach, nothing before `retry_at`.
    Idle {
        /// No attach before this.
        retry_at: Option<VTime>,
    },
    /// The standby SM (SMInfo STANDBY, sends nothing else).
    Standby {
        /// Generation.
        gen_: u64,
    },
    /// The master of `term`.
    Master {
        /// Generation.
        gen_: u64,
        /// Term it masters.
        term: u64,
        /// Its M_Key.
        m_key: u64,
    },
    /// Told to stop; nothing attaches before it reports stopped.
    Detaching {
        /// Generation.
        gen_: u64,
    },
}

/// Whether the replica is stopping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    /// Serving.
    Running,
    /// A graceful stop waits for the leadership transfer it started.
    HandingOver { since: VTime },
    /// Stopping for good: no master or standby starts again.
    Shut,
}

impl<S: RaftLog + Clone> ReplicaCore<S> {
    /// Leadership bookkeeping after every input: a new leadership starts its lease book and
    /// pings; the lease is renewed; the master starts or stops; the standby attaches.
    pub(crate) fn after_apply(&mut self, now: VTime) {
        let term = self.raw.raft.term;
        let leader = self.is_leader();
        let mut first = None;
        if leader {
            first = Some(match self.leading {
                Some((t, i)) if t == term => i,
                _ => {
                    let i = self.raw.raft.raft_log.last_index();
                    self.notice(Notice::LeaderOf { term });
                    self.leading = Some((term, i));
                    self.lease.acks.reset();
                    // Heartbeats now: only their acknowledgements start the lease.
                    self.raw.ping();
                    i
                }
            });
        } else if self.leading.take().is_some() {
            let leader = self.raw.raft.leader_id;
            self.notice(Notice::SteppedDown { term, leader });
        }
        self.update_lease(now);
        let voter = self.is_voter();
        if leader && !voter {
            // A leader the membership left out (it applied its own removal) masters
            // nothing and hands leadership to a voter: raft-rs keeps it leading and drops
            // its proposals.
            self.stop_role_keep_lease();
            if self.raw.raft.lead_transferee.is_none()
                && let Some(to) = self.best_successor()
            {
                self.notice(Notice::Transferring { to });
                self.raw.transfer_leader(to);
            }
        }
        if let Some(first) = first {
            if !matches!(self.role, Role::Master { .. })
                && voter
                && self.stop == Stop::Running
                && self.state.applied_index() >= first
                && self.lease_valid(now)
                && self.retry_due(now)
            {
                self.start_master(term);
            }
        } else {
            self.stop_master();
            self.start_standby(now);
        }
        if matches!(self.stop, Stop::HandingOver { .. }) && !leader {
            self.finish_stop();
        }
    }

    /// Lease: until the send of the latest heartbeat a quorum of voters acknowledged (self
    /// counts as now) plus half the minimum election timeout (see [`crate::lease`]).
    fn update_lease(&mut self, now: VTime) {
        if !self.is_leader() || self.failed {
            self.lease.until = None;
            return;
        }
        let cs = self.raw.raft.prs().conf().to_conf_state();
        self.lease.until = self.lease.acks.lease_end(
            &[&cs.voters, &cs.voters_outgoing],
            self.cfg.id,
            now,
            self.cfg.lease(),
        );
    }

    fn retry_due(&self, now: VTime) -> bool {
        match self.role {
            Role::Idle { retry_at } => retry_at.is_none_or(|t| now >= t),
            _ => true,
        }
    }

    fn start_master(&mut self, term: u64) {
        match self.role {
            Role::Standby { gen_ } => {
                // Free the port first; the master attaches once the standby has stopped.
                self.out.push_back(Output::StopRole { gen_ });
                self.role = Role::Detaching { gen_ };
                return;
            }
            Role::Detaching { .. } | Role::Master { .. } => return,
            Role::Idle { .. } => {}
        }
        if self.state.pending_intent().is_none()
            && let Some(open) = self.state.open_intent()
        {
            // Never sealed, so never programmed: drop it.
            let id = open.id;
            self.propose_quiet(Command {
                request_id: 0,
                kind: Some(Kind::AbortIntent(proto::state::AbortIntent { id })),
            });
        }
        let seed = MasterSeed::new(&self.state, term);
        if let Some(error) = seed.seeds.tenants_error.clone() {
            self.notice(Notice::TenantsDoNotCompile { error });
        }
        self.gen_ += 1;
        let gen_ = self.gen_;
        self.role = Role::Master {
            gen_,
            term,
            m_key: seed.m_key,
        };
        self.notice(Notice::MasterStarting {
            term,
            lids: seed.seeds.guid2lid.len(),
            lfts: seed
                .seeds
                .known_lfts
                .as_ref()
                .map_or(0, |l| l.switches.len()),
            pkeys: seed.seeds.known_pkeys.as_ref().map_or(0, |p| p.len()),
            policy_version: seed.versions.partitions,
        });
        self.out.push_back(Output::StartMaster {
            gen_,
            seed: Box::new(seed),
        });
    }

    /// Stops the master (if any) and ends the lease.
    fn stop_master(&mut self) {
        self.lease.until = None;
        self.stop_role_keep_lease();
    }

    /// Stops the master (if any), keeping the lease (a restart within the term).
    pub(crate) fn stop_role_keep_lease(&mut self) {
        if let Role::Master { gen_, .. } = self.role {
            self.notice(Notice::MasterEnds);
            self.out.push_back(Output::StopRole { gen_ });
            self.role = Role::Detaching { gen_ };
        }
    }

    /// Attaches the standby SM while this replica is not master.
    fn start_standby(&mut self, now: VTime) {
        if self.stop != Stop::Running || self.is_leader() || !self.retry_due(now) {
            return;
        }
        let Role::Idle { .. } = self.role else {
            return;
        };
        self.gen_ += 1;
        let gen_ = self.gen_;
        self.role = Role::Standby { gen_ };
        self.notice(Notice::StandbyStarting);
        self.out.push_back(Output::StartStandby { gen_ });
    }

    /// Stopping for good: master and standby told to stop, [`Output::Stopped`].
    pub(crate) fn finish_stop(&mut self) {
        self.stop = Stop::Shut;
        self.stop_master();
        if let Role::Standby { gen_ } = self.role {
            self.out.push_back(Output::StopRole { gen_ });
            self.role = Role::Detaching { gen_ };
        }
        self.out.push_back(Output::Stopped);
    }

    /// True while this replica is a voter of the membership it applied.
    pub(crate) fn is_voter(&self) -> bool {
        self.raw.raft.prs().conf().voters().contains(self.cfg.id)
    }

    /// The voter most fit to take over: recently active and caught up to within 16 entries,
    /// the highest match index (ties: lowest id).
    pub(crate) fn best_successor(&self) -> Option<u64> {
        let last = self.raw.raft.raft_log.last_index();
        self.raw
            .raft
            .prs()
            .iter()
            .filter(|(id, p)| {
                **id != self.cfg.id
                    && p.recent_active
                    && p.matched + 16 >= last
                    && self.raw.raft.prs().conf().voters().contains(**id)
            })
            .max_by_key(|(id, p)| (p.matched, std::cmp::Reverse(**id)))
            .map(|(id, _)| *id)
    }
}
