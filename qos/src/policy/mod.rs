//! OpenSM's QoS policy file (qos-policy.conf): parsing into a checked [`Policy`], and the
//! pure matching the SA (path record SLs) and sm-core (SL2VL/VLArb per port) ask of it.
//!
//! Grammar (OpenSM doc/QoS_management_in_OpenSM.txt, osm_qos_parser_l.l/_y.y): sections
//! `port-groups`, `qos-setup`, `qos-levels`, `qos-match-rules`, `qos-ulps`, each optional,
//! each closed by `end-<section>`; one keyword or `key: value` per line; `#` comments.
//! Section and key words are lower case (as OpenSM's lexer); node types and ULP names are
//! case-insensitive; group and level names compare case-insensitively with blanks ignored
//! (OpenSM's lexer drops blanks inside names).

pub mod ast;
mod lexer;
mod matching;
mod parser;
pub mod ulps;
mod values;

pub use ast::{
    GroupMatch, MatchRule, NodeTypeSel, NumRange, PortGroup, PortName, PortSel, QosLevel,
    RuleOrigin, Sl2VlScope, VlArbScope,
};
pub use matching::{PathQuery, PortFacts};

use crate::MAX_POLICY_BYTES;
use crate::error::{Pos, QosError};
use parser::{LevelRef, RawGroupRef, parse, rule_shell};

/// A checked QoS policy: every name resolved, every value in range.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Policy {
    /// `port-group`s in file order.
    pub port_groups: Vec<PortGroup>,
    /// `vlarb-scope`s in file order (the first whose group holds a port applies).
    pub vlarb_scopes: Vec<VlArbScope>,
    /// `sl2vl-scope`s in file order (the first that matches applies).
    pub sl2vl_scopes: Vec<Sl2VlScope>,
    /// `qos-level`s in file order, then the levels qos-ulps SLs generate.
    pub levels: Vec<QosLevel>,
    /// `qos-match-rule`s in file order, then qos-ulps rules in file order (OpenSM appends
    /// the ULP rules after the match rules).
    pub rules: Vec<MatchRule>,
    /// The level of a query no rule matches: the qos-level named `default`, else the
    /// qos-ulps `default:`. None only in a file with no level and no rule.
    pub default_level: Option<usize>,
    /// Where qos-ulps `default:` is, when there is one.
    pub ulp_default_pos: Option<Pos>,
}

/// A name as OpenSM compares it: case-insensitive, blanks ignored.
pub(crate) fn name_key(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect()
}

impl Policy {
    /// Parses and checks a policy text. Any error rejects the whole text; the errors come
    /// back sorted by position. A text over [`MAX_POLICY_BYTES`] is not parsed (QOS-E003).
    pub fn parse(text: &str) -> Result<Policy, Vec<QosError>> {
        if text.len() > MAX_POLICY_BYTES {
            return Err(vec![QosError::TooLarge {
                pos: Pos::new(1, 1),
                size: text.len(),
                limit: MAX_POLICY_BYTES,
            }]);
        }
        let raw = parse(text);
        let mut errors = raw.errors;
        let mut policy = Policy::default();

        // Port groups: duplicate names.
        let mut group_keys: Vec<(String, Pos)> = Vec::new();
        for g in raw.groups {
            let k = name_key(&g.name);
            if let Some((_, first)) = group_keys.iter().find(|(n, _)| *n == k) {
                errors.push(QosError::Duplicate {
                    pos: g.pos,
                    what: "port-group",
                    name: g.name.clone(),
                    first: *first,
                });
                continue;
            }
            group_keys.push((k, g.pos));
            policy.port_groups.push(g);
        }
        let find_group = |name: &str, pos: Pos, errors: &mut Vec<QosError>| {
            let k = name_key(name);
            let i = group_keys.iter().position(|(n, _)| *n == k);
            if i.is_none() {
                errors.push(QosError::UnknownReference {
                    pos,
                    what: "port-group",
                    name: name.to_string(),
                });
            }
            i
        };

        for s in raw.vlarb {
            let groups = s
                .groups
                .iter()
                .filter_map(|(n, p)| find_group(n, *p, &mut errors))
                .collect();
            policy.vlarb_scopes.push(VlArbScope {
                pos: s.pos,
                groups,
                vlarb_high: s.high,
                vlarb_low: s.low,
                vl_high_limit: s.limit,
            });
        }
        for s in raw.sl2vl {
            let groups = s
                .groups
                .iter()
                .filter_map(|(n, p)| find_group(n, *p, &mut errors))
                .collect();
            if let Some(sl2vl) = s.table {
                policy.sl2vl_scopes.push(Sl2VlScope {
                    pos: s.pos,
                    groups,
                    from: s.from,
                    to: s.to,
                    sl2vl,
                });
            }
        }

        // Levels: duplicate names.
        let mut level_keys: Vec<String> = Vec::new();
        for l in raw.levels {
            let k = name_key(&l.level.name);
            if let Some(i) = level_keys.iter().position(|n| *n == k) {
                errors.push(QosError::Duplicate {
                    pos: l.level.pos,
                    what: "qos-level",
                    name: l.level.name.clone(),
                    first: policy.levels[i].pos,
                });
                continue;
            }
            level_keys.push(k);
            policy.levels.push(l.level);
        }
        let file_levels = policy.levels.len();
        let resolve_level =
            |r: &LevelRef, levels: &mut Vec<QosLevel>, errors: &mut Vec<QosError>| match r {
                LevelRef::Name(n, pos) => {
                    let k = name_key(n);
                    let i = levels[..file_levels]
                        .iter()
                        .position(|l| name_key(&l.name) == k);
                    if i.is_none() {
                        errors.push(QosError::UnknownReference {
                            pos: *pos,
                            what: "qos-level",
                            name: n.clone(),
                        });
                    }
                    i
                }
                LevelRef::Sl(sl, pos) => {
                    if let Some(i) = levels[file_levels..].iter().position(|l| l.sl == *sl) {
                        return Some(file_levels + i);
                    }
                    levels.push(QosLevel {
                        name: format!("ulp-sl{sl}"),
                        pos: *pos,
                        use_: Some("generated from qos-ulps".to_string()),
                        sl: *sl,
                        mtu_limit: None,
                        rate_limit: None,
                        packet_life: None,
                        path_bits: Vec::new(),
                        pkeys: Vec::new(),
                        generated: true,
                    });
                    Some(levels.len() - 1)
                }
            };

        for r in raw.rules.iter().chain(raw.ulps.iter()) {
            let Some(lref) = &r.level else { continue };
            let level = resolve_level(lref, &mut policy.levels, &mut errors);
            let mut rule = rule_shell(r, level.unwrap_or(0));
            let groups = |list: &[RawGroupRef], errors: &mut Vec<QosError>| -> Vec<GroupMatch> {
                list.iter()
                    .filter_map(|g| match g {
                        RawGroupRef::Name(n, p) => find_group(n, *p, errors).map(GroupMatch::Group),
                        RawGroupRef::Guids(v) => Some(GroupMatch::Guids(v.clone())),
                    })
                    .collect()
            };
            rule.source = groups(&r.source, &mut errors);
            rule.destination = groups(&r.destination, &mut errors);
            rule.either = groups(&r.either, &mut errors);
            if level.is_some() {
                policy.rules.push(rule);
            }
        }

        policy.default_level = level_keys.iter().position(|k| k == "default");
        if let Some(d) = &raw.ulp_default {
            let (LevelRef::Name(_, p) | LevelRef::Sl(_, p)) = d;
            policy.ulp_default_pos = Some(*p);
            let i = resolve_level(d, &mut policy.levels, &mut errors);
            if policy.default_level.is_none() {
                policy.default_level = i;
            }
        }
        if policy.default_level.is_none()
            && raw.ulp_default.is_none()
            && (!policy.levels.is_empty() || !policy.rules.is_empty())
        {
            errors.push(QosError::NoDefaultLevel {
                pos: Pos::new(1, 1),
            });
        }

        if errors.is_empty() {
            Ok(policy)
        } else {
            errors.sort_by_key(|e| e.pos().unwrap_or_default());
            Err(errors)
        }
    }

    /// The level whose name is `name` (case-insensitive, blanks ignored).
    pub fn level(&self, name: &str) -> Option<&QosLevel> {
        let k = name_key(name);
        self.levels.iter().find(|l| name_key(&l.name) == k)
    }

    /// The port group whose name is `name` (case-insensitive, blanks ignored).
    pub fn group(&self, name: &str) -> Option<&PortGroup> {
        let k = name_key(name);
        self.port_groups.iter().find(|g| name_key(&g.name) == k)
    }
}
