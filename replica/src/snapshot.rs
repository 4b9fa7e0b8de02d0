//! Snapshots: the whole state as one prost-encoded [`StateSnapshot`].
//!
//! LFTs travel as one `bytes` field per switch and P_Key tables as packed varints, so the
//! encoding stays close to the raw table size (ft3 radix 36: 1,620 switches x 13,284 LIDs).
//! The parsed policy is not stored; [`ReplicatedState::restore`] parses the text again.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use fabric::{Guid, Lid, PortNum};
use proto::Message;
use proto::state::{LftTable, LidEntry, PKeyTable, StateSnapshot};

use crate::error::RestoreError;
use crate::state::{
    DEDUP_WINDOW, LFT_BLOCK, LidAssignment, MAX_LFT_BLOCK, PKEY_BLOCK, POLICY_HISTORY,
    ReplicatedState,
};

/// Snapshot format written by this build.
pub const SNAPSHOT_FORMAT: u32 = 1;

impl ReplicatedState {
    /// The state as a snapshot message (a copy).
    pub fn to_snapshot(&self) -> StateSnapshot {
        StateSnapshot {
            applied_index: self.applied_index,
            applied_term: self.applied_term,
            config: Some(self.config.clone()),
            policy: Some(self.policy.clone()),
            policy_history: self.policy_history.iter().cloned().collect(),
            topology: Some(self.topology.clone()),
            lids: self
                .lids
                .iter()
                .map(|(g, a)| LidEntry {
                    port_guid: g.0,
                    base_lid: u32::from(a.base.0),
                    lmc: u32::from(a.lmc),
                })
                .collect(),
            lfts: self
                .lfts
                .iter()
                .map(|(g, t)| LftTable {
                    switch_guid: g.0,
                    ports: t.clone(),
                })
                .collect(),
            pkeys: self
                .pkeys
                .iter()
                .map(|((g, p), t)| PKeyTable {
                    node_guid: g.0,
                    port: u32::from(p.0),
                    pkeys: t.iter().map(|k| u32::from(*k)).collect(),
                })
                .collect(),
            port_infos: self.port_infos.values().cloned().collect(),
            intent: self.intent.clone(),
            master: self.master,
            tenants: Some(self.tenants.clone()),
            sa: Some(self.sa.clone()),
            mfts: crate::mft::to_proto(&self.mfts),
            vl_blocks: crate::vl::to_proto(&self.vl_tables),
            qos_policy: Some(self.qos_policy.clone()),
            recent_requests: self.recent.iter().copied().collect(),
            format: SNAPSHOT_FORMAT,
        }
    }

    /// The state encoded as snapshot bytes. Equal states give identical bytes.
    pub fn snapshot_bytes(&self) -> Vec<u8> {
        self.to_snapshot().encode_to_vec()
    }

    /// Rebuilds a state from [`ReplicatedState::snapshot_bytes`]. Never panics on malformed
    /// input.
    pub fn restore(bytes: &[u8]) -> Result<ReplicatedState, RestoreError> {
        let snap = StateSnapshot::decode(bytes).map_err(|e| RestoreError::Decode(e.to_string()))?;
        ReplicatedState::from_snapshot(snap)
    }

    /// Rebuilds a state from a decoded snapshot, checking its invariants.
    pub fn from_snapshot(s: StateSnapshot) -> Result<ReplicatedState, RestoreError> {
        let bad = |m: String| RestoreError::Invalid(m);
        if s.format != SNAPSHOT_FORMAT {
            return Err(RestoreError::Format(s.format));
        }
        let policy = s.policy.unwrap_or_default();
        let policy_file = if policy.version == 0 {
            None
        } else {
            Some(partitions::parse(&policy.text).map_err(|e| {
                bad(format!(
                    "policy version {} does not parse: {}",
                    policy.version,
                    e.first().map(|e| e.to_string()).unwrap_or_default()
                ))
            })?)
        };
        if s.policy_history.len() > POLICY_HISTORY {
            return Err(bad(format!(
                "{} policies in the history",
                s.policy_history.len()
            )));
        }
        let mut lids = BTreeMap::new();
        for e in s.lids {
            if !(1..=0xBFFF).contains(&e.base_lid) || e.lmc > 7 {
                return Err(bad(format!("LID entry {:?}", e)));
            }
            let a = LidAssignment {
                base: Lid(e.base_lid as u16),
                lmc: e.lmc as u8,
            };
            if lids.insert(Guid(e.port_guid), a).is_some() {
                return Err(bad(format!(
                    "port GUID {} twice in the LID map",
                    Guid(e.port_guid)
                )));
            }
        }
        let mut lfts = BTreeMap::new();
        for t in s.lfts {
            let max = (MAX_LFT_BLOCK as usize + 1) * LFT_BLOCK;
            if t.ports.len() % LFT_BLOCK != 0 || t.ports.len() > max {
                return Err(bad(format!(
                    "LFT of {} has {} entries",
                    Guid(t.switch_guid),
                    t.ports.len()
                )));
            }
            if lfts.insert(Guid(t.switch_guid), t.ports).is_some() {
                return Err(bad(format!("LFT of {} twice", Guid(t.switch_guid))));
            }
        }
        let mut pkeys = BTreeMap::new();
        for t in s.pkeys {
            let port = port(t.node_guid, t.port)?;
            if t.pkeys.len() % PKEY_BLOCK != 0
                || t.pkeys.len() > 0x10000
                || t.pkeys.iter().any(|k| *k > 0xFFFF)
            {
                return Err(bad(format!(
                    "P_Key table of {} port {}",
                    Guid(t.node_guid),
                    t.port
                )));
            }
            let table: Vec<u16> = t.pkeys.iter().map(|k| *k as u16).collect();
            if pkeys.insert((Guid(t.node_guid), port), table).is_some() {
                return Err(bad(format!(
                    "P_Key table of {} port {} twice",
                    Guid(t.node_guid),
                    t.port
                )));
            }
        }
        let mut port_infos = BTreeMap::new();
        for p in s.port_infos {
            let key = (Guid(p.node_guid), port(p.node_guid, p.port)?);
            if port_infos.insert(key, p).is_some() {
                return Err(bad(format!("PortInfo of {} port {} twice", key.0, key.1.0)));
            }
        }
        let mfts = crate::mft::from_proto(s.mfts).map_err(bad)?;
        let vl_tables = crate::vl::from_proto(s.vl_blocks).map_err(bad)?;
        let qos_policy = s.qos_policy.unwrap_or_default();
        if qos_policy.version > 0 && qos::Policy::parse(&qos_policy.text).is_err() {
            return Err(bad("the QoS policy does not parse".into()));
        }
        if let Some(i) = &s.intent {
            crate::intent::validate_contents(&i.contents.clone().unwrap_or_default())
                .map_err(|e| bad(format!("pending intent: {e}")))?;
        }
        if s.recent_requests.len() > DEDUP_WINDOW {
            return Err(bad(format!(
                "{} request ids in the dedup window",
                s.recent_requests.len()
            )));
        }
        let recent: VecDeque<u64> = s.recent_requests.into_iter().collect();
        let recent_set: BTreeSet<u64> = recent.iter().copied().collect();
        if recent_set.len() != recent.len() || recent_set.contains(&0) {
            return Err(bad("dedup window holds 0 or a repeated id".into()));
        }
        Ok(ReplicatedState {
            applied_index: s.applied_index,
            applied_term: s.applied_term,
            config: s.config.unwrap_or_default(),
            policy,
            policy_file,
            policy_history: s.policy_history.into_iter().collect(),
            topology: s.topology.unwrap_or_default(),
            lids,
            lfts,
            pkeys,
            port_infos,
            intent: s.intent,
            master: s.master,
            tenants: s.tenants.unwrap_or_default(),
            sa: s.sa.unwrap_or_default(),
            mfts,
            vl_tables,
            qos_policy,
            recent,
            recent_set,
        })
    }
}

fn port(node: u64, port: u32) -> Result<PortNum, RestoreError> {
    u8::try_from(port)
        .ok()
        .filter(|p| *p <= 254)
        .map(PortNum)
        .ok_or_else(|| RestoreError::Invalid(format!("node {} port {port}", Guid(node))))
}
