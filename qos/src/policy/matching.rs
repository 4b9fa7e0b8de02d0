//! Pure matching: which QoS level a path query gets (osm_qos_policy.c
//! __qos_policy_get_match_rule_by_params), and which qos-setup tables a port gets.

use super::Policy;
use super::ast::{GroupMatch, MatchRule, NodeTypeSel, PortGroup, QosLevel, VlArbScope, in_ranges};
use crate::tables::{PortKind, QosTables, TableConfig};
use fabric::{Guid, NodeType, PKey};

/// What the caller knows about one port. Borrowed: building one costs nothing.
#[derive(Clone, Copy, Debug)]
pub struct PortFacts<'a> {
    /// NodeInfo.NodeGUID.
    pub node_guid: Guid,
    /// The port's GUID (a switch's ports share port 0's).
    pub port_guid: Guid,
    /// The port number (0 for a switch's port 0; a CA's port number otherwise).
    pub port_num: u8,
    /// NodeInfo.NodeType.
    pub node_type: NodeType,
    /// NodeDescription (compared exactly with `port-name:`).
    pub node_desc: &'a str,
    /// The P_Keys of the port's table, membership bit included.
    pub pkeys: &'a [PKey],
    /// Names of the partitions (partitions.conf) the port is a member of.
    pub partitions: &'a [&'a str],
    /// True for the SM's own port (`node-type: SELF`).
    pub is_sm_port: bool,
}

/// A PathRecord (or MultiPathRecord) query as the QoS rules see it.
#[derive(Clone, Copy, Debug)]
pub struct PathQuery<'a> {
    /// The source port.
    pub source: &'a PortFacts<'a>,
    /// The destination port.
    pub destination: &'a PortFacts<'a>,
    /// The P_Key, when the query's component mask has it.
    pub pkey: Option<PKey>,
    /// The Service ID, when the query's component mask has it.
    pub service_id: Option<u64>,
    /// The QoS class (12 bits), when the query's component mask has it.
    pub qos_class: Option<u16>,
}

impl PortGroup {
    /// Whether a port is a member: any of the group's selectors holds it.
    pub fn contains(&self, port: &PortFacts<'_>) -> bool {
        let by_type = self.node_types.iter().any(|t| match t {
            NodeTypeSel::All => true,
            NodeTypeSel::SelfPort => port.is_sm_port,
            NodeTypeSel::Ca => port.node_type == NodeType::Ca,
            NodeTypeSel::Switch => port.node_type == NodeType::Switch,
            NodeTypeSel::Router => port.node_type == NodeType::Router,
        });
        by_type
            || in_ranges(&self.port_guids, port.port_guid.0)
            || self
                .port_names
                .iter()
                .any(|n| n.port == port.port_num && n.node_desc == port.node_desc)
            || port
                .pkeys
                .iter()
                .any(|k| !k.is_invalid() && in_ranges(&self.pkeys, u64::from(k.partition())))
            || self
                .partitions
                .iter()
                .any(|p| port.partitions.iter().any(|q| q == p))
    }
}

impl Policy {
    fn in_group(&self, g: &GroupMatch, port: &PortFacts<'_>) -> bool {
        match g {
            GroupMatch::Group(i) => self.port_groups.get(*i).is_some_and(|g| g.contains(port)),
            GroupMatch::Guids(r) => in_ranges(r, port.port_guid.0),
        }
    }

    fn in_any(&self, list: &[GroupMatch], port: &PortFacts<'_>) -> bool {
        list.iter().any(|g| self.in_group(g, port))
    }

    fn rule_matches(&self, r: &MatchRule, q: &PathQuery<'_>) -> bool {
        if !r.source.is_empty() && !self.in_any(&r.source, q.source) {
            return false;
        }
        if !r.destination.is_empty() && !self.in_any(&r.destination, q.destination) {
            return false;
        }
        if !r.either.is_empty()
            && !self.in_any(&r.either, q.source)
            && !self.in_any(&r.either, q.destination)
        {
            return false;
        }
        if !r.qos_classes.is_empty() {
            match q.qos_class {
                Some(c) if in_ranges(&r.qos_classes, u64::from(c)) => {}
                _ => return false,
            }
        }
        if !r.service_ids.is_empty() {
            match q.service_id {
                Some(s) if in_ranges(&r.service_ids, s) => {}
                _ => return false,
            }
        }
        if !r.pkeys.is_empty() {
            match q.pkey {
                Some(k) if in_ranges(&r.pkeys, u64::from(k.partition())) => {}
                _ => return false,
            }
        }
        true
    }

    /// The first rule (match rules, then qos-ulps rules, in file order) a query meets.
    pub fn rule_for_path(&self, q: &PathQuery<'_>) -> Option<&MatchRule> {
        self.rules.iter().find(|r| self.rule_matches(r, q))
    }

    /// The QoS level of a path query: the first matching rule's, else the default level.
    /// None only for a policy without levels (then the caller's own default applies).
    pub fn level_for_path(&self, q: &PathQuery<'_>) -> Option<&QosLevel> {
        let i = match self.rule_for_path(q) {
            Some(r) => Some(r.level),
            None => self.default_level,
        };
        i.and_then(|i| self.levels.get(i))
    }

    /// The first vlarb-scope one of whose groups holds the port.
    pub fn vlarb_scope_for(&self, port: &PortFacts<'_>) -> Option<&VlArbScope> {
        self.vlarb_scopes.iter().find(|s| {
            s.groups
                .iter()
                .any(|g| self.in_group(&GroupMatch::Group(*g), port))
        })
    }

    /// The SL2VL table of the first sl2vl-scope one of whose groups holds the port and,
    /// on a switch external port (a switch port other than 0), whose `from:` holds
    /// `in_port` and `to:` holds `out_port`; other ports ignore `from:`/`to:`. None: the
    /// option-derived table applies.
    pub fn sl2vl_for(&self, port: &PortFacts<'_>, in_port: u8, out_port: u8) -> Option<[u8; 16]> {
        let external = port.node_type == NodeType::Switch && port.port_num != 0;
        self.sl2vl_scopes
            .iter()
            .find(|s| {
                s.groups
                    .iter()
                    .any(|g| self.in_group(&GroupMatch::Group(*g), port))
                    && (!external || (s.from.contains(in_port) && s.to.contains(out_port)))
            })
            .map(|s| s.sl2vl)
    }

    /// The tables of one port: `base`'s for its kind, with the first matching
    /// vlarb-scope's values (those it gives) and the first matching sl2vl-scope's table
    /// on top. The `sl2vl` here is for the pair (in 0, out `port.port_num`); a switch
    /// external port, programmed per input port, takes [`Policy::sl2vl_for`] per pair.
    pub fn tables_for_port(
        &self,
        port: &PortFacts<'_>,
        kind: PortKind,
        base: &QosTables,
    ) -> TableConfig {
        let mut t = *base.get(kind);
        if let Some(s) = self.vlarb_scope_for(port) {
            if let Some(h) = s.vlarb_high {
                t.vlarb_high = h;
            }
            if let Some(l) = s.vlarb_low {
                t.vlarb_low = l;
            }
            if let Some(l) = s.vl_high_limit {
                t.vl_high_limit = l;
            }
        }
        if let Some(sl2vl) = self.sl2vl_for(port, 0, port.port_num) {
            t.sl2vl = sl2vl;
        }
        t
    }
}
