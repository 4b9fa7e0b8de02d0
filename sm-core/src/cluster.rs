//! What a replicated (Raft) master needs beyond a single SM: role, fencing, and the M_Key
//! rotation per term.
//!
//! * Role: a [`Role::Standby`] sweeper sends nothing but SMInfo answers (state STANDBY).
//! * Fencing: while [`Sweeper::set_fenced`] is on, or the sweeper's time has reached the
//!   write lease ([`Sweeper::set_lease`]), no Set leaves (Gets, SMInfo answers and trap
//!   represses do); queued Sets wait and go when it is lifted. [`Sweeper::step_down`]
//!   drops everything queued or in flight and turns the sweeper into a standby.
//! * M_Key: SMPs carry, per target, the key its management port (switch port 0, the CA
//!   port reached) is believed to hold, out of the candidates `m_key_prev` + `m_key`. A
//!   PortInfo read showing a key settles it; a read hiding it (protect bits >= 1 and a
//!   wrong key: the port holds a key other than the one sent) or a timed-out request moves
//!   that port to the next candidate. After discovery, with `m_key_prev` non-empty, every
//!   configured port whose key is not `m_key` gets one PortInfo Set (its fields as read,
//!   M_Key, protect bits, lease and MasterSMLID = this SM's LID) before any other Set; from
//!   then on that port takes `m_key` only, so a deposed master's Sets fail in the fabric.

use crate::config::Role;
use crate::io::{Op, Req};
use crate::state::NONE;
use crate::sweeper::{Phase, Sweeper};
use crate::{SweepReason, VTime};
use fabric::Guid;
use mad::{PortInfo, SmState};

impl Sweeper {
    /// Fences (true) or unfences (false) the sweeper. While fenced no Set is transmitted;
    /// queued Sets are kept and go out once unfenced. A driver fences whenever this replica
    /// is not the leader of the current term with a valid lease.
    pub fn set_fenced(&mut self, fenced: bool) {
        self.fenced = fenced;
    }

    /// True while fenced.
    pub fn is_fenced(&self) -> bool {
        self.fenced
    }

    /// Sets the write lease: Sets leave only while the sweeper's time is before `until`
    /// (None, the default: no lease needed). A cluster driver extends it each time a quorum
    /// confirms its leadership (e.g. to the quorum's acknowledgement time plus the lease
    /// length), so a master that was paused and resumes past its lease sends no Set even
    /// before its Raft node notices it was deposed. Use [`Sweeper::poll_transmit_at`] so the
    /// check sees the current time.
    pub fn set_lease(&mut self, until: Option<VTime>) {
        self.lease_until = until;
    }

    /// [`Sweeper::poll_transmit`] after moving the sweeper's time to `now` (what the lease
    /// is checked against).
    pub fn poll_transmit_at(&mut self, now: VTime) -> Option<crate::Transmit> {
        self.now = self.now.max(now);
        self.poll_transmit()
    }

    /// May this SM write now (not fenced, within its lease, master)?
    pub fn may_write(&self) -> bool {
        self.cfg.role == Role::Master
            && !self.fenced
            && self.lease_until.is_none_or(|u| self.now < u)
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
        self.heavy_pending = None;
        self.next_light = None;
    }

    /// Current role.
    pub fn role(&self) -> Role {
        self.cfg.role
    }

    /// Changes the role. Master -> Standby is [`Sweeper::step_down`]; Standby -> Master
    /// starts a heavy sweep at once.
    pub fn set_role(&mut self, now: VTime, role: Role) {
        self.now = self.now.max(now);
        match (self.cfg.role, role) {
            (Role::Master, Role::Standby) => self.step_down(),
            (Role::Standby, Role::Master) => {
                self.forget_foreign();
                self.cfg.role = Role::Master;
                self.state = SmState::Discovering;
                self.subnet_up = false;
                self.heavy_pending = Some(SweepReason::Initial);
                self.next_light = Some(self.now);
            }
            _ => {}
        }
    }

    /// May a request be transmitted now? Standby sends none; fenced sends no Set (the
    /// window of a writing phase holds only Sets).
    pub(crate) fn may_transmit(&self) -> bool {
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
        let i = self.disc.find(node)?;
        let n = self.disc.node(i);
        if port > n.nports {
            return None;
        }
        let p = if n.is_switch { 0 } else { port };
        let k = self.disc.port(n.port_index(p)).key_idx;
        self.keys.get(usize::from(k)).copied()
    }

    /// Configured end ports (LID set) of the last heavy sweep not known to hold this
    /// term's M_Key. 0 after a clean sweep: the previous terms' keys can be retired from
    /// the replicated record.
    pub fn ports_on_old_keys(&self) -> usize {
        let sweep = self.disc.sweep();
        let mut n_old = 0;
        for n in self.disc.nodes().iter().filter(|n| n.seen == sweep) {
            let range = if n.is_switch { 0..=0 } else { 1..=n.nports };
            for p in range {
                let port = self.disc.port(n.port_index(p));
                if port.info_sweep == 0 || port.info.lid.0 == 0 {
                    continue;
                }
                let key = self.keys.get(usize::from(port.key_idx)).copied();
                if key != Some(self.cfg.m_key) {
                    n_old += 1;
                }
            }
        }
        n_old
    }

    /// The key (and its candidate index) a request carries.
    pub(crate) fn key_for(&self, req: &Req) -> (u64, u8) {
        let k = self
            .disc
            .mgmt_index(req)
            .map_or(0, |i| self.disc.port(i).key_idx);
        (self.keys.get(usize::from(k)).copied().unwrap_or(0), k)
    }

    /// A PortInfo of the request's management port was read (Get) or written (Set
    /// response): what it shows about the key in force.
    pub(crate) fn note_key(&mut self, req: &Req, info: &PortInfo) {
        let Some(mi) = self.disc.mgmt_index(req) else {
            return;
        };
        let n = self.disc.node(req.node);
        // A switch reports port 0's M_Key for every port; a CA port only its own.
        if !n.is_switch && mi != n.port_index(req.port) {
            return;
        }
        if info.m_key != 0 {
            if let Some(k) = self.keys.iter().position(|&x| x == info.m_key) {
                self.disc.port_mut(mi).key_idx = k as u8;
            }
        } else if info.m_key_protect_bits != 0 && self.keys.len() > 1 {
            // Hidden (or truly zero, when any key passes): the key sent may be wrong.
            self.next_key(mi, req.key);
        }
    }

    /// A request timed out: with several candidate keys, the one it carried may be wrong.
    pub(crate) fn key_timed_out(&mut self, req: &Req) {
        if self.keys.len() > 1
            && let Some(mi) = self.disc.mgmt_index(req)
        {
            self.next_key(mi, req.key);
        }
    }

    fn next_key(&mut self, mi: usize, used: u8) {
        let p = self.disc.port_mut(mi);
        if p.key_idx == used {
            p.key_idx = ((usize::from(used) + 1) % self.keys.len()) as u8;
        }
    }

    /// After discovery, with previous keys: one PortInfo Set per configured port that does
    /// not hold this term's key. Returns true when some were queued.
    pub(crate) fn start_rekey(&mut self) -> bool {
        if self.cfg.m_key_prev.is_empty() {
            return false;
        }
        let sweep = self.disc.sweep();
        let todo: Vec<(u32, u8)> = self
            .disc
            .end_ports_seen()
            .filter(|&(_, _, n, port)| {
                let i2 = &port.info;
                port.info_sweep == sweep
                    && i2.lid.0 != 0
                    && (n.is_switch || port.path_sweep == sweep)
                    && (i2.m_key != self.cfg.m_key
                        || i2.m_key_protect_bits != self.cfg.m_key_protect_bits
                        || (i2.m_key_lease_period != self.cfg.m_key_lease_period
                            && !port.lease_not_held))
            })
            .map(|(i, p, _, _)| (i, p))
            .collect();
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

    /// The PortInfo a rotation Set writes: the port's fields as read, with this term's
    /// M_Key settings and MasterSMLID pointing at this SM (when its port has a LID).
    pub(crate) fn rekey_info(&self, node: u32, port: u8) -> PortInfo {
        let n = self.disc.node(node);
        let mut pi = self.disc.port(n.port_index(port)).info;
        pi.port_state = 0;
        pi.port_phys_state = 0;
        pi.link_down_default_state = 0;
        pi.client_reregister = false;
        pi.m_key = self.cfg.m_key;
        pi.m_key_protect_bits = self.cfg.m_key_protect_bits;
        pi.m_key_lease_period = self.cfg.m_key_lease_period;
        if self.disc.local() != NONE {
            let ln = self.disc.node(self.disc.local());
            let own = self
                .disc
                .port(ln.port_index(self.disc.local_port()))
                .info
                .lid;
            if own.0 != 0 {
                pi.master_sm_lid = own;
            }
        }
        pi
    }

    /// Discovery (or a pre-routing step) finished: rotation, re-apply, then LIDs.
    pub(crate) fn pre_routing(&mut self, from: Phase) {
        if from == Phase::Discovering && self.start_rekey() && !self.io.idle() {
            return;
        }
        if matches!(from, Phase::Discovering | Phase::Rekey) && self.start_reapply() {
            if !self.io.idle() {
                return;
            }
            self.finish_reapply();
        } else if from == Phase::Reapply {
            self.finish_reapply();
        }
        // LIDs, partitions and the routing input are prepared on the next timeout (due at
        // once), so a driver sees discovery end before that work starts.
        self.phase = Phase::Lids;
    }
}
