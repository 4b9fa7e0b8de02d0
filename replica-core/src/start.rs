//! What a driver needs to start the master or the standby SM: the sweeper's configuration
//! from the replicated state (seeds, per-term M_Key, the unfinished intent, SA state), applied
//! onto the driver's own base configuration (timers, routing, transport settings).

use crate::seed::{self, Seeds};
use replica::ReplicatedState;
use sm_core::{Guid2Lid, Intent, Role, SweeperConfig};
use std::collections::BTreeSet;

/// M_Key base when the replicated configuration sets none.
pub const DEFAULT_M_KEY_BASE: u64 = 0x5153_4D5F_4D4B_4559;

/// Earlier terms whose keys a new master also tries (ports may still hold them).
const PREVIOUS_TERMS_TRIED: usize = 8;

/// Everything a new master of `term` is started with.
#[derive(Clone, Debug)]
pub struct MasterSeed {
    /// The term it masters.
    pub term: u64,
    /// LIDs, tables as programmed, the policy in force.
    pub seeds: Seeds,
    /// A previous master's sealed, unfinished intent, re-applied first.
    pub pending_intent: Option<Intent>,
    /// This term's M_Key.
    pub m_key: u64,
    /// Keys ports may still hold: the last master's, earlier terms', none (0).
    pub m_key_prev: Vec<u64>,
    /// The SA's replicated state.
    pub sa_state: proto::state::SaState,
    /// The policy versions in force: what this master programs.
    pub versions: PolicyVersions,
}

/// The versions of the three operator policies, which together decide what a master
/// programs beyond routes: the partition policy, the tenant set compiled into it, the QoS
/// policy (0: none applied).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PolicyVersions {
    /// Partition policy version.
    pub partitions: u64,
    /// Tenant set version.
    pub tenants: u64,
    /// QoS policy version.
    pub qos: u64,
}

impl PolicyVersions {
    /// The versions in force in `st`.
    pub fn of(st: &ReplicatedState) -> PolicyVersions {
        PolicyVersions {
            partitions: st.policy().version,
            tenants: st.tenants().version,
            qos: st.qos_policy().version,
        }
    }
}

impl MasterSeed {
    /// The seed of a master of `term` over the replicated state `st`.
    pub fn new(st: &ReplicatedState, term: u64) -> MasterSeed {
        let base = match st.config().m_key_base {
            0 => DEFAULT_M_KEY_BASE,
            b => b,
        };
        let m_key = seed::m_key_of_term(base, term);
        let mut m_key_prev: Vec<u64> = Vec::new();
        if let Some(m) = st.master()
            && m.m_key != 0
        {
            m_key_prev.push(m.m_key);
        }
        for t in (1..term).rev().take(PREVIOUS_TERMS_TRIED) {
            m_key_prev.push(seed::m_key_of_term(base, t));
        }
        m_key_prev.push(0);
        let mut seen = BTreeSet::new();
        m_key_prev.retain(|k| *k != m_key && seen.insert(*k));
        MasterSeed {
            term,
            seeds: seed::seeds(st),
            pending_intent: st.pending_intent().map(seed::intent_from_proto),
            m_key,
            m_key_prev,
            sa_state: st.sa_state().clone(),
            versions: PolicyVersions::of(st),
        }
    }

    /// Applies the seed onto the driver's base sweeper configuration.
    pub fn configure(&self, scfg: &mut SweeperConfig) {
        let s = &self.seeds;
        scfg.role = Role::Master;
        // The log's LIDs rule once it holds any. A new cluster's first master (no LID
        // replicated yet) keeps the driver's own map: the guid2lid file of the replica (an
        // OpenSM guid2lid imported for a migration); the LIDs it assigns from it are
        // committed after its first sweep like any others.
        if !s.guid2lid.is_empty() {
            scfg.guid2lid = s.guid2lid.clone();
        }
        scfg.known_lfts = s.known_lfts.clone();
        scfg.known_pkeys = s.known_pkeys.clone();
        scfg.known_mfts = s.known_mfts.clone();
        scfg.known_vl_tables = s.known_vl_tables.clone();
        if s.qos_policy.is_some() {
            scfg.qos_policy.clone_from(&s.qos_policy);
        }
        if s.policy.is_some() {
            scfg.partitions_conf = s.policy.clone();
        }
        if s.known_lfts.is_some() {
            // A takeover: clients keep their SA registrations.
            scfg.reregister_on_takeover = false;
        }
        // Intent first: every sweep's programming is committed before its first Set; a
        // previous master's sealed, unfinished intent is re-applied first.
        scfg.gate_programming = true;
        scfg.intent_id_base = self.term << 32;
        scfg.pending_intent = self.pending_intent.clone();
        scfg.m_key = self.m_key;
        scfg.m_key_prev = self.m_key_prev.clone();
    }
}

/// Applies the standby role onto the driver's base sweeper configuration: SMInfo STANDBY at
/// `port`, nothing else sent, no LIDs of its own.
pub fn configure_standby(scfg: &mut SweeperConfig, port: fabric::Guid) {
    scfg.role = Role::Standby;
    scfg.guid2lid = Guid2Lid::new();
    scfg.sm_port_guid = Some(port);
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabric::{Guid, Lid};
    use proto::state::{Command, LidEntry, LidUpdate, command::Kind};

    #[test]
    fn a_new_cluster_starts_from_the_local_guid2lid_and_the_log_rules_after() {
        let mut local = Guid2Lid::new();
        local.set(Guid(1), Lid(40), Lid(40));
        let base = SweeperConfig {
            guid2lid: local.clone(),
            ..SweeperConfig::default()
        };
        // Empty log: the local map stays.
        let mut st = ReplicatedState::new();
        let mut scfg = base.clone();
        MasterSeed::new(&st, 1).configure(&mut scfg);
        assert_eq!(scfg.guid2lid.get(Guid(1)), Some((Lid(40), Lid(40))));
        // LIDs in the log: they replace the local map.
        let lids = Command {
            request_id: 0,
            kind: Some(Kind::UpdateLids(LidUpdate {
                set: vec![LidEntry {
                    port_guid: 1,
                    base_lid: 3,
                    lmc: 0,
                }],
                remove: Vec::new(),
                replace_all: true,
            })),
        };
        assert!(st.apply(1, 1, &lids).is_accepted());
        let mut scfg = base;
        MasterSeed::new(&st, 2).configure(&mut scfg);
        assert_eq!(scfg.guid2lid.get(Guid(1)), Some((Lid(3), Lid(3))));
        assert_eq!(scfg.guid2lid.len(), 1);
    }
}
