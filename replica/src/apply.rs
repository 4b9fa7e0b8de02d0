//! Deterministic apply of one committed [`Command`].
//!
//! Rules every replica follows identically:
//! * An entry at or below the applied index is refused ([`ApplyError::AlreadyApplied`]) and
//!   changes nothing, not even the applied index (replay after a restart is harmless).
//! * Any other entry advances the applied index and term, whether accepted or refused.
//! * A non-zero `request_id` already accepted within the last [`crate::DEDUP_WINDOW`] accepted ids
//!   is a [`Effect::Duplicate`]: nothing is applied again. Only accepted commands enter the
//!   window (a refused command may be corrected and retried under the same id).
//! * A refused command leaves the state as it was (validation happens before any change).

use std::collections::BTreeSet;

use fabric::{Guid, Lid, PortNum};
use proto::state::{
    ApplyPolicy, ApplyResult, ClusterConfig, Command, LidUpdate, MasterRecord, Topology,
    command::Kind,
};

use crate::error::ApplyError;
use crate::state::{LidAssignment, POLICY_HISTORY, ReplicatedState};

/// What an accepted command did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Noop applied.
    Noop,
    /// The request id was already applied; nothing done again.
    Duplicate,
    /// Configuration replaced.
    ConfigSet,
    /// Partition policy accepted; the version now in force.
    PolicyApplied {
        /// New version.
        version: u64,
    },
    /// Topology replaced.
    TopologySet {
        /// Nodes.
        nodes: usize,
        /// Links.
        links: usize,
    },
    /// guid -> LID map changed.
    LidsUpdated {
        /// Entries set.
        set: usize,
        /// Entries removed (that existed).
        removed: usize,
    },
    /// Intent opened.
    IntentBegun {
        /// Its id.
        id: u64,
    },
    /// Chunk added to the open intent.
    IntentChunkAdded {
        /// Intent id.
        id: u64,
        /// Chunk number.
        seq: u32,
    },
    /// Intent sealed: it may be programmed now.
    IntentSealed {
        /// Intent id.
        id: u64,
    },
    /// Intent done: its contents are now the programmed state.
    IntentDone(crate::intent::DoneStats),
    /// Intent dropped unapplied.
    IntentAborted {
        /// Intent id.
        id: u64,
    },
    /// Master record of a term recorded.
    MasterSet {
        /// Its term.
        term: u64,
    },
    /// Tenants replaced; the tenant set version now in force.
    TenantsSet {
        /// New version.
        version: u64,
    },
    /// SA state replaced.
    SaStateSet,
}

/// The result of applying one entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApplyOutcome {
    /// Raft index of the entry.
    pub index: u64,
    /// Raft term of the entry.
    pub term: u64,
    /// The command's request id (0 = none), for matching the outcome to its proposal.
    pub request_id: u64,
    /// The policy version in force after this entry.
    pub policy_version: u64,
    /// What it did, or why it was refused.
    pub result: Result<Effect, ApplyError>,
}

impl ApplyOutcome {
    /// True when accepted (duplicates included).
    pub fn is_accepted(&self) -> bool {
        self.result.is_ok()
    }

    /// The protobuf form returned to a proposer (possibly over the Peer service).
    pub fn to_proto(&self) -> ApplyResult {
        let mut r = ApplyResult {
            index: self.index,
            term: self.term,
            request_id: self.request_id,
            policy_version: self.policy_version,
            ..ApplyResult::default()
        };
        match &self.result {
            Ok(effect) => {
                r.accepted = true;
                r.duplicate = *effect == Effect::Duplicate;
            }
            Err(e) => {
                r.code = e.code().to_string();
                r.message = e.to_string();
                if let ApplyError::PolicySyntax { line, col, .. } = e {
                    r.line = *line;
                    r.col = *col;
                }
            }
        }
        r
    }
}

impl ReplicatedState {
    /// Applies the committed entry `(index, term)` holding `cmd`. Deterministic: the same
    /// sequence of calls gives the same state on every replica. Never panics.
    pub fn apply(&mut self, index: u64, term: u64, cmd: &Command) -> ApplyOutcome {
        if index <= self.applied_index {
            return ApplyOutcome {
                index,
                term,
                request_id: cmd.request_id,
                policy_version: self.policy.version,
                result: Err(ApplyError::AlreadyApplied {
                    index,
                    applied: self.applied_index,
                }),
            };
        }
        self.applied_index = index;
        self.applied_term = term;
        let result = if self.seen_request(cmd.request_id) {
            Ok(Effect::Duplicate)
        } else {
            let r = self.apply_kind(index, term, cmd.kind.as_ref());
            if r.is_ok() {
                self.remember_request(cmd.request_id);
            }
            r
        };
        ApplyOutcome {
            index,
            term,
            request_id: cmd.request_id,
            policy_version: if matches!(cmd.kind, Some(Kind::ApplyQosPolicy(_))) {
                self.qos_policy.version
            } else {
                self.policy.version
            },
            result,
        }
    }

    fn apply_kind(
        &mut self,
        index: u64,
        term: u64,
        kind: Option<&Kind>,
    ) -> Result<Effect, ApplyError> {
        match kind.ok_or(ApplyError::EmptyCommand)? {
            Kind::Noop(_) => Ok(Effect::Noop),
            Kind::SetConfig(c) => self.set_config(c),
            Kind::ApplyPolicy(p) => self.apply_policy(index, term, p),
            Kind::ApplyQosPolicy(p) => self.apply_qos_policy(index, term, p),
            Kind::SetTopology(t) => self.set_topology(t),
            Kind::UpdateLids(u) => self.update_lids(u),
            Kind::BeginIntent(b) => self.begin_intent(index, term, b),
            Kind::IntentChunk(c) => self.intent_chunk(term, c),
            Kind::SealIntent(s) => self.seal_intent(term, s),
            Kind::IntentDone(d) => self.intent_done(d),
            Kind::AbortIntent(a) => self.abort_intent(a.id),
            Kind::SetMaster(m) => self.set_master(m),
            Kind::SetTenants(t) => self.set_tenants(t),
            Kind::SetSaState(s) => {
                crate::sa::validate(s).map_err(ApplyError::BadSaState)?;
                self.sa = s.clone();
                Ok(Effect::SaStateSet)
            }
        }
    }

    fn set_config(&mut self, c: &ClusterConfig) -> Result<Effect, ApplyError> {
        validate_config(c).map_err(ApplyError::BadConfig)?;
        self.config = c.clone();
        Ok(Effect::ConfigSet)
    }

    fn apply_policy(
        &mut self,
        index: u64,
        term: u64,
        p: &ApplyPolicy,
    ) -> Result<Effect, ApplyError> {
        // Version first: a stale proposal is refused whatever its text.
        if p.expected_version != self.policy.version {
            return Err(ApplyError::StaleVersion {
                expected: p.expected_version,
                current: self.policy.version,
            });
        }
        let file = partitions::parse(&p.text).map_err(|errs| {
            let first = errs.first();
            ApplyError::PolicySyntax {
                line: first.map_or(0, |e| e.pos.line),
                col: first.map_or(0, |e| e.pos.col),
                message: first.map(|e| e.to_string()).unwrap_or_default(),
                count: errs.len(),
            }
        })?;
        self.check_policy_with_tenants(&p.text)?;
        self.policy = proto::state::PartitionPolicy {
            text: p.text.clone(),
            version: self.policy.version + 1,
            applied_at_index: index,
            applied_at_term: term,
        };
        self.policy_file = Some(file);
        self.policy_history.push_back(self.policy.clone());
        while self.policy_history.len() > POLICY_HISTORY {
            self.policy_history.pop_front();
        }
        Ok(Effect::PolicyApplied {
            version: self.policy.version,
        })
    }

    /// The QoS policy: the version first, then the text must parse (qos-policy.conf).
    fn apply_qos_policy(
        &mut self,
        index: u64,
        term: u64,
        p: &ApplyPolicy,
    ) -> Result<Effect, ApplyError> {
        if p.expected_version != self.qos_policy.version {
            return Err(ApplyError::StaleVersion {
                expected: p.expected_version,
                current: self.qos_policy.version,
            });
        }
        qos::Policy::parse(&p.text).map_err(|errs| {
            let first = errs.first();
            let pos = first.and_then(|e| e.pos());
            ApplyError::PolicySyntax {
                line: pos.map_or(0, |p| p.line),
                col: pos.map_or(0, |p| p.col),
                message: first.map(|e| e.to_string()).unwrap_or_default(),
                count: errs.len(),
            }
        })?;
        self.qos_policy = proto::state::PartitionPolicy {
            text: p.text.clone(),
            version: self.qos_policy.version + 1,
            applied_at_index: index,
            applied_at_term: term,
        };
        Ok(Effect::PolicyApplied {
            version: self.qos_policy.version,
        })
    }

    fn set_topology(&mut self, t: &Topology) -> Result<Effect, ApplyError> {
        validate_topology(t).map_err(ApplyError::BadTopology)?;
        self.topology = t.clone();
        Ok(Effect::TopologySet {
            nodes: t.nodes.len(),
            links: t.links.len(),
        })
    }

    fn update_lids(&mut self, u: &LidUpdate) -> Result<Effect, ApplyError> {
        let mut parsed = Vec::with_capacity(u.set.len());
        for e in &u.set {
            let ok = (1..=0xBFFF).contains(&e.base_lid) && e.lmc <= 7;
            if !ok {
                return Err(ApplyError::BadLid {
                    port_guid: Guid(e.port_guid),
                    lid: e.base_lid,
                    lmc: e.lmc,
                });
            }
            // Checked just above: base_lid fits 16 bits, lmc fits 3.
            parsed.push((
                Guid(e.port_guid),
                LidAssignment {
                    base: Lid(e.base_lid as u16),
                    lmc: e.lmc as u8,
                },
            ));
        }
        if u.replace_all {
            self.lids.clear();
        }
        let mut removed = 0;
        for g in &u.remove {
            removed += usize::from(self.lids.remove(&Guid(*g)).is_some());
        }
        let set = parsed.len();
        self.lids.extend(parsed);
        Ok(Effect::LidsUpdated { set, removed })
    }

    fn set_master(&mut self, m: &MasterRecord) -> Result<Effect, ApplyError> {
        if let Some(cur) = &self.master
            && m.term < cur.term
        {
            return Err(ApplyError::StaleMaster {
                term: m.term,
                current: cur.term,
            });
        }
        self.master = Some(*m);
        Ok(Effect::MasterSet { term: m.term })
    }
}

/// Port number as stored, refusing anything above 254.
pub(crate) fn port_num(node: u64, port: u32) -> Result<PortNum, ApplyError> {
    u8::try_from(port)
        .ok()
        .filter(|p| *p <= 254)
        .map(PortNum)
        .ok_or(ApplyError::BadPort {
            node: Guid(node),
            port,
        })
}

fn validate_config(c: &ClusterConfig) -> Result<(), String> {
    if c.lmc > 7 {
        return Err(format!("lmc {} (0..=7)", c.lmc));
    }
    if c.m_key_protect_bits > 3 {
        return Err(format!(
            "m_key_protect_bits {} (0..=3)",
            c.m_key_protect_bits
        ));
    }
    if c.m_key_lease_period > 0xFFFF {
        return Err(format!(
            "m_key_lease_period {} (0..=65535)",
            c.m_key_lease_period
        ));
    }
    let mut ids = BTreeSet::new();
    for r in &c.replicas {
        if r.id == 0 {
            return Err("replica id 0".into());
        }
        if !ids.insert(r.id) {
            return Err(format!("replica id {} twice", r.id));
        }
        if r.priority > 15 {
            return Err(format!("replica {} priority {} (0..=15)", r.id, r.priority));
        }
    }
    Ok(())
}

fn validate_topology(t: &Topology) -> Result<(), String> {
    let mut guids = BTreeSet::new();
    for n in &t.nodes {
        if !guids.insert(n.node_guid) {
            return Err(format!("node GUID {} twice", Guid(n.node_guid)));
        }
        if n.num_ports == 0 || n.num_ports > 254 {
            return Err(format!(
                "node {} has {} ports",
                Guid(n.node_guid),
                n.num_ports
            ));
        }
    }
    let mut used = BTreeSet::new();
    for (i, l) in t.links.iter().enumerate() {
        for (node, port) in [(l.a_node, l.a_port), (l.b_node, l.b_port)] {
            let Some(n) = t.nodes.get(node as usize) else {
                return Err(format!(
                    "link {i} names node index {node} of {}",
                    t.nodes.len()
                ));
            };
            if port == 0 || port > n.num_ports {
                return Err(format!(
                    "link {i}: node {} has no port {port}",
                    Guid(n.node_guid)
                ));
            }
            if !used.insert((node, port)) {
                return Err(format!(
                    "link {i}: port {port} of node {} linked twice",
                    Guid(n.node_guid)
                ));
            }
        }
    }
    Ok(())
}
