//! The invariants, checked after every step of a simulated run (and the convergence checks
//! once the faults settle, in [`super::World::settle`]).
//!
//! * State machine safety: every replica applies the same entry at every index (an
//!   acknowledged client change is one of them, so it is never lost or replaced).
//! * One leader per term.
//! * Fencing: at most one replica's Sets accepted by the fabric per term, and none from a
//!   deposed master: a Set accepted after a leader of a later term existed.
//! * At most one SM's Sets accepted per interval: no replica's Set within
//!   [`ONE_SM_WINDOW`] of an honest foreign SM's while that SM still masters, and no
//!   foreign Set within it of a replica's while that replica's master of that term still
//!   runs unpaused (the cluster counts as one SM; an SM that died or stood by since is no second
//!   writer; a lying foreign SM's writes are a rogue's, which the master corrects, and
//!   count for no SM).
//! * No CA port's LID ever changes once assigned.
//! * A takeover with unchanged topology (nothing recorded left to finish, the fabric holding
//!   what the log records, no fabric fault) writes no LFT block in its first heavy sweep.

use fabric::{Guid, Lid};
use fabric_sim::SetRecord;
use mad::AttributeId;
use sm_core::VTime;
use std::collections::{BTreeMap, BTreeSet};

/// LinearForwardingTable attribute id.
pub const ATTR_LFT: u16 = AttributeId::LINEAR_FORWARDING_TABLE.0;
/// PortInfo attribute id.
pub const ATTR_PORT_INFO: u16 = AttributeId::PORT_INFO.0;

/// "Per interval": the sweep interval of the replicas' masters and of the foreign SM.
pub const ONE_SM_WINDOW: VTime = 500_000_000;

/// An invariant that did not hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Virtual time.
    pub at: VTime,
    /// Which invariant (a stable code) and what was seen.
    pub what: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "t={} ms: {}", self.at / 1_000_000, self.what)
    }
}

/// The continuous checker.
#[derive(Debug, Default)]
pub struct Checker {
    committed: BTreeMap<u64, (u64, u64)>,
    /// Acknowledged client changes: (index, policy version, text).
    pub acked: Vec<(u64, u64, String)>,
    leaders: BTreeMap<u64, (u64, VTime)>,
    set_terms: BTreeMap<u64, BTreeSet<u64>>,
    ca_lids: BTreeMap<Guid, Lid>,
    /// A takeover being watched for LFT Sets: (replica, term).
    pub quiet: Option<(u64, u64)>,
    /// Invariant evaluations made.
    pub checks: u64,
    /// The last replica Set accepted: (time, replica, term).
    last_cluster_set: Option<(VTime, u64, u64)>,
    /// The last honest foreign SM's Set accepted.
    last_foreign_set: Option<VTime>,
    /// When the running foreign SM appeared: a replica's Set before that is none of its
    /// business (it could not have known of it, nor that replica of it).
    foreign_since: VTime,
}

impl Checker {
    fn fail(at: VTime, what: String) -> Result<(), Violation> {
        Err(Violation { at, what })
    }

    /// A committed entry applied by `replica`.
    pub fn applied(
        &mut self,
        now: VTime,
        replica: u64,
        index: u64,
        term: u64,
        hash: u64,
    ) -> Result<(), Violation> {
        self.checks += 1;
        match self.committed.get(&index) {
            Some(&(t, h)) if (t, h) != (term, hash) => Self::fail(
                now,
                format!(
                    "INV-LOG replica {replica} applied entry (term {term}, hash {hash:x}) at index \
                     {index} where another replica applied (term {t}, hash {h:x})"
                ),
            ),
            Some(_) => Ok(()),
            None => {
                self.committed.insert(index, (term, hash));
                Ok(())
            }
        }
    }

    /// `replica` is Raft leader of `term` at `now`.
    pub fn leader(&mut self, now: VTime, replica: u64, term: u64) -> Result<(), Violation> {
        self.checks += 1;
        match self.leaders.get(&term) {
            Some(&(r, _)) if r != replica => Self::fail(
                now,
                format!("INV-LEADER replicas {r} and {replica} both lead term {term}"),
            ),
            Some(_) => Ok(()),
            None => {
                self.leaders.insert(term, (replica, now));
                Ok(())
            }
        }
    }

    /// Sets the fabric accepted; `who` names the replica and master term behind a source
    /// port; `foreign_master(source)`: an honest foreign SM runs as MASTER now on the part
    /// of the fabric that source port reaches.
    pub fn sets(
        &mut self,
        now: VTime,
        log: &[SetRecord],
        who: impl Fn(Guid) -> Option<(u64, u64)>,
        foreign_master: impl Fn(Guid) -> bool,
    ) -> Result<(), Violation> {
        for r in log {
            self.checks += 1;
            let Some((replica, term)) = r.source.and_then(&who) else {
                return Self::fail(
                    now,
                    format!(
                        "INV-FENCE a Set (attr 0x{:04x}) from {:?}, which is no replica's master",
                        r.attr, r.source
                    ),
                );
            };
            if let Some(f) = self.last_foreign_set
                && r.time < f + ONE_SM_WINDOW
                && r.source.is_some_and(&foreign_master)
            {
                return Self::fail(
                    r.time,
                    format!(
                        "INV-ONE-SM replica {replica} (master of term {term}) had a Set (attr \
                         0x{:04x} to {}) accepted at {} us, {} us after the foreign SM's: two \
                         SMs wrote in one interval",
                        r.attr,
                        r.node_guid,
                        r.time / 1000,
                        (r.time - f) / 1000
                    ),
                );
            }
            self.last_cluster_set = Some((r.time, replica, term));
            let srcs = self.set_terms.entry(term).or_default();
            srcs.insert(replica);
            if srcs.len() > 1 {
                return Self::fail(
                    r.time,
                    format!("INV-FENCE Sets of replicas {srcs:?} accepted in term {term}"),
                );
            }
            if let Some((t2, (r2, seen))) = self
                .leaders
                .range(term + 1..)
                .filter(|(_, (_, seen))| *seen < r.time)
                .min_by_key(|(_, (_, seen))| *seen)
            {
                return Self::fail(
                    r.time,
                    format!(
                        "INV-FENCE replica {replica}, master of term {term}, had a Set (attr \
                         0x{:04x} to {}) accepted at {} us, after replica {r2} led term {t2} \
                         (since {} us): a deposed master wrote",
                        r.attr,
                        r.node_guid,
                        r.time / 1000,
                        seen / 1000
                    ),
                );
            }
            if r.attr == ATTR_LFT && self.quiet == Some((replica, term)) {
                return Self::fail(
                    r.time,
                    format!(
                        "INV-QUIET replica {replica} wrote LFT block {} of {} on a takeover of \
                         term {term} with unchanged topology",
                        r.attr_mod, r.node_guid
                    ),
                );
            }
        }
        Ok(())
    }

    /// A foreign SM appeared at `now` (its Sets are checked against the replicas' from
    /// then on).
    pub fn foreign_appeared(&mut self, now: VTime) {
        self.foreign_since = now;
    }

    /// Sets from the foreign SM's port `port` the fabric accepted: an honest SM's
    /// (`legit`) must not fall within [`ONE_SM_WINDOW`] of a replica's while that
    /// replica's master of that term still runs (`running(replica, term)`).
    pub fn foreign_sets(
        &mut self,
        now: VTime,
        log: &[SetRecord],
        port: Guid,
        legit: bool,
        running: impl Fn(u64, u64) -> bool,
    ) -> Result<(), Violation> {
        if !legit {
            return Ok(());
        }
        for r in log {
            self.checks += 1;
            if let Some((c, replica, term)) = self.last_cluster_set
                && c >= self.foreign_since
                && r.time < c + ONE_SM_WINDOW
                && running(replica, term)
            {
                return Self::fail(
                    now.max(r.time),
                    format!(
                        "INV-ONE-SM the foreign SM at {port} had a Set (attr 0x{:04x} to {}) \
                         accepted at {} us, {} us after replica {replica}'s: two SMs wrote in \
                         one interval",
                        r.attr,
                        r.node_guid,
                        r.time / 1000,
                        (r.time - c) / 1000
                    ),
                );
            }
            self.last_foreign_set = Some(r.time);
        }
        Ok(())
    }

    /// Current CA port LIDs (0: none yet).
    pub fn lids(
        &mut self,
        now: VTime,
        lids: impl Iterator<Item = (Guid, Lid)>,
    ) -> Result<(), Violation> {
        for (g, lid) in lids {
            self.checks += 1;
            if lid.0 == 0 {
                continue;
            }
            match self.ca_lids.insert(g, lid) {
                Some(old) if old != lid => {
                    return Self::fail(
                        now,
                        format!("INV-LID CA port {g} changed LID {} -> {}", old.0, lid.0),
                    );
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// A linearizable read through `replica` returned policy version `got`; every version
    /// acknowledged before it began (the highest is `floor`) must be visible to it.
    pub fn read(
        &mut self,
        now: VTime,
        replica: u64,
        floor: u64,
        got: u64,
    ) -> Result<(), Violation> {
        self.checks += 1;
        if got < floor {
            return Self::fail(
                now,
                format!(
                    "INV-READ a linearizable read through replica {replica} returned policy \
                     version {got} after version {floor} was acknowledged"
                ),
            );
        }
        Ok(())
    }

    /// The entry committed at `index` (term, hash), if any replica applied it.
    pub fn committed_at(&self, index: u64) -> Option<(u64, u64)> {
        self.committed.get(&index).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabric::NodeId;

    fn set(time: VTime, src: u64, attr: u16) -> SetRecord {
        SetRecord {
            time,
            source: Some(Guid(src)),
            attr,
            attr_mod: 0,
            node: NodeId(0),
            node_guid: Guid(100),
            in_port: 0,
        }
    }

    #[test]
    fn a_deposed_masters_set_and_two_writers_per_term_are_caught() {
        let who = |g: Guid| Some((g.0, if g.0 == 1 { 1 } else { 2 }));
        let mut c = Checker::default();
        c.leader(10, 1, 1).unwrap();
        c.sets(20, &[set(15, 1, 0x19)], who, |_| false).unwrap();
        c.leader(30, 2, 2).unwrap();
        // Replica 1 (term 1) accepted after replica 2 led term 2.
        let v = c.sets(40, &[set(35, 1, 0x19)], who, |_| false).unwrap_err();
        assert!(v.what.starts_with("INV-FENCE"), "{v}");
        // Two leaders in one term.
        assert!(c.leader(50, 3, 2).is_err());
        // Two writers in one term.
        let mut c = Checker::default();
        let same_term = |g: Guid| Some((g.0, 7));
        assert!(
            c.sets(1, &[set(1, 1, 0x15), set(2, 2, 0x15)], same_term, |_| false)
                .is_err()
        );
    }

    #[test]
    fn log_divergence_lid_change_and_quiet_lft_writes_are_caught() {
        let mut c = Checker::default();
        c.applied(1, 1, 5, 2, 0xAA).unwrap();
        c.applied(2, 2, 5, 2, 0xAA).unwrap();
        assert!(c.applied(3, 3, 5, 3, 0xBB).is_err());
        c.lids(1, [(Guid(1), Lid(0)), (Guid(1), Lid(4))].into_iter())
            .unwrap();
        c.lids(2, [(Guid(1), Lid(4))].into_iter()).unwrap();
        assert!(c.lids(3, [(Guid(1), Lid(5))].into_iter()).is_err());
        c.quiet = Some((2, 9));
        let who = |_: Guid| Some((2, 9));
        c.sets(1, &[set(1, 2, 0x15)], who, |_| false).unwrap();
        assert!(c.sets(1, &[set(1, 2, ATTR_LFT)], who, |_| false).is_err());
    }

    #[test]
    fn two_sms_writing_in_one_interval_are_caught() {
        let who = |g: Guid| Some((g.0, 1));
        let f = Guid(99);
        let mut c = Checker::default();
        let running = |_: u64, _: u64| true;
        let gone = |_: u64, _: u64| false;
        c.sets(10, &[set(10, 1, ATTR_LFT)], who, |_| false).unwrap();
        // A rogue's write right after counts for no SM.
        c.foreign_sets(20, &[set(20, 99, ATTR_LFT)], f, false, running)
            .unwrap();
        // An honest foreign SM's within the interval is a second writer, unless the
        // replica's master has stopped since.
        c.foreign_sets(25, &[set(25, 99, ATTR_LFT)], f, true, gone)
            .unwrap();
        let v = c
            .foreign_sets(30, &[set(30, 99, ATTR_LFT)], f, true, running)
            .unwrap_err();
        assert!(v.what.starts_with("INV-ONE-SM"), "{v}");
        // One interval later it is the only writer; then a replica's Set is the second
        // while the foreign SM still masters.
        let later = 10 + ONE_SM_WINDOW;
        c.foreign_sets(later, &[set(later, 99, ATTR_LFT)], f, true, running)
            .unwrap();
        c.sets(later + 1, &[set(later + 1, 1, ATTR_LFT)], who, |_| false)
            .unwrap();
        let v = c
            .sets(later + 2, &[set(later + 2, 1, ATTR_LFT)], who, |_| true)
            .unwrap_err();
        assert!(v.what.starts_with("INV-ONE-SM"), "{v}");
    }

    #[test]
    fn a_replica_set_before_the_foreign_sm_appeared_is_not_its_business() {
        let who = |g: Guid| Some((g.0, 1));
        let (f, running) = (Guid(99), |_: u64, _: u64| true);
        let mut c = Checker::default();
        c.sets(10, &[set(10, 1, ATTR_LFT)], who, |_| false).unwrap();
        c.foreign_appeared(11);
        c.foreign_sets(20, &[set(20, 99, ATTR_LFT)], f, true, running)
            .unwrap();
        // A replica's Set after it appeared counts again.
        let mut c = Checker::default();
        c.foreign_appeared(5);
        c.sets(10, &[set(10, 1, ATTR_LFT)], who, |_| false).unwrap();
        assert!(
            c.foreign_sets(20, &[set(20, 99, ATTR_LFT)], f, true, running)
                .is_err()
        );
    }
}
