//! The cluster side of the sweeper (see `crate::cluster` and `crate::keys`): fencing, the
//! write lease, role changes, stepping down, and the M_Keys SMPs carry.

use super::{Phase, Sweeper};
use crate::config::Role;
use crate::io::{Op, Req};
use crate::keys::rekey_targets;
use crate::{SweepReason, VTime};
use fabric::Guid;
use mad::{PortInfo, SmState};

impl Sweeper {
    /// Fences (true) or unfences (false) the sweeper. While fenced no Set is transmitted;
    /// queued Sets are kept and go out once unfenced. A driver fences whenever this replica
    /// is not the leader of the current term with a valid lease.
    pub fn set_fenced(&mut self, fenced: bool) {
        self.fencing.set_fenced(fenced);
    }

    /// True while fenced.
    pub fn is_fenced(&self) -> bool {
        self.fencing.is_fenced()
    }

    /// The SA's state could not be restored (a new master whose replicated SA state did
    /// not load): every CA and router port gets ClientReregister (IBA 14.2.5.6, when its
    /// CapabilityMask says it takes it) with a PortInfo Set in the next heavy sweep,
    /// requested now, so its clients register their services, joins and subscriptions
    /// again. Returns the number of the first heavy sweep certain to do it.
    pub fn reregister_clients(&mut self, now: VTime) -> u64 {
        let ports: Vec<usize> = self
            .disc
            .nodes()
            .iter()
            .filter(|n| !n.is_switch)
            .flat_map(|n| (1..=n.nports).map(move |p| n.port_index(p)))
            .collect();
        for pi in ports {
            self.disc.port_mut(pi).rereg_wanted = true;
        }
        let first = self.disc.sweep() + 1;
        self.request_sweep(now, true);
        first
    }

    /// Sets the write lease: Sets leave only while the sweeper's time is before `until`
    /// (None, the default: no lease needed). A cluster driver extends it each time a quorum
    /// confirms its leadership (e.g. to the quorum's acknowledgement time plus the lease
    /// length), so a master that was paused and resumes past its lease sends no Set even
    /// before its Raft node notices it was deposed. Use [`Sweeper::poll_transmit_at`] so the
    /// check sees the current time.
    pub fn set_lease(&mut self, until: Option<VTime>) {
        self.fencing.set_lease(until);
    }

    /// [`Sweeper::poll_transmit`] after moving the sweeper's time to `now` (what the lease
    /// is checked against).
    pub fn poll_transmit_at(&mut self, now: VTime) -> Option<crate::Transmit> {
        self.clock(now);
        self.poll_transmit()
    }

    /// May this SM write now (not fenced, within its lease, master)?
    pub fn may_write(&self) -> bool {
        self.cfg.role == Role::Master && self.fencing.allows_sets(self.now)
    }

    /// The term ended: every queued or outstanding request, a pending intent and the
    /// programming under way are dropped (late responses count as stale), and the sweeper
    /// becomes a standby (SMInfo STANDBY, no sweeps).
    pub fn step_down(&mut self) {
        if matches!(
            self.phase,
            Phase::AwaitIntent | Phase::Programming(_) | Phase::Reapply | Phase::Rekey
        ) {
            self.forget_planned();
        }
        self.io.window().clear();
        self.intent.drop_all();
        self.forget_foreign();
        self.cfg.role = Role::Standby;
        self.state = SmState::Standby;
        self.phase = Phase::Idle;
        self.sched.drop_heavy();
        self.sched.set_next(None);
    }

    /// Current role.
    pub fn role(&self) -> Role {
        self.cfg.role
    }

    /// Changes the role. Master -> Standby is [`Sweeper::step_down`]; Standby -> Master
    /// starts a heavy sweep at once.
    pub fn set_role(&mut self, now: VTime, role: Role) {
        self.clock(now);
        match (self.cfg.role, role) {
            (Role::Master, Role::Standby) => self.step_down(),
            (Role::Standby, Role::Master) => {
                self.forget_foreign();
                self.cfg.role = Role::Master;
                self.state = SmState::Discovering;
                self.subnet_up = false;
                self.sched.force_heavy(SweepReason::Initial);
                self.sched.set_next(Some(self.now));
            }
            _ => {}
        }
    }

    /// May a request be transmitted now? Standby sends none; fenced sends no Set (the
    /// window of a writing phase holds only Sets).
    pub(super) fn may_transmit(&self) -> bool {
        if self.cfg.role == Role::Standby {
            return false;
        }
        let writing = matches!(
            self.phase,
            Phase::Programming(_) | Phase::Rekey | Phase::Reapply
        );
        !writing || self.may_write()
    }

    /// The M_Key believed in force at `(node GUID, port)`'s management port (None when the
    /// port is unknown).
    pub fn m_key_in_force(&self, node: Guid, port: u8) -> Option<u64> {
        self.keys.in_force(&self.disc, node, port)
    }

    /// Configured end ports (LID set) of the last heavy sweep not known to hold this
    /// term's M_Key. 0 after a clean sweep: the previous terms' keys can be retired from
    /// the replicated record.
    pub fn ports_on_old_keys(&self) -> usize {
        self.keys.ports_on_old_keys(&self.disc, self.cfg.m_key)
    }

    /// The key (and its candidate index) a request carries.
    pub(super) fn key_for(&self, req: &Req) -> (u64, u8) {
        self.keys.key_for(&self.disc, req)
    }

    /// A PortInfo of the request's management port was read (Get) or written (Set
    /// response): what it shows about the key in force.
    pub(super) fn note_key(&mut self, req: &Req, info: &PortInfo) {
        self.keys.note(&mut self.disc, req, info);
    }

    /// After discovery, with previous keys: one PortInfo Set per configured port that does
    /// not hold this term's key. Returns true when some were queued.
    pub(super) fn start_rekey(&mut self) -> bool {
        let todo = rekey_targets(&self.disc, &self.cfg);
        if todo.is_empty() {
            return false;
        }
        self.phase = Phase::Rekey;
        for (node, p) in todo {
            self.prog.count_planned();
            self.push(Op::RekeySet, node, p, 0);
        }
        true
    }
}
