//! Warnings about a policy that parses but is probably not what was meant, with stable
//! codes `QOS-W001`... Runtime facts (a port group that matches no port of the fabric) are
//! not linted here.

use crate::error::Pos;
use crate::policy::{Policy, RuleOrigin};
use crate::tables::{PortKind, QosTables};
use std::fmt;

/// Every lint, with its stable code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LintCode {
    /// QOS-W001: a qos-level no rule uses and that is not the default.
    UnusedLevel,
    /// QOS-W002: a level's SL maps to VL 15 (dropped) in a table its ports may get.
    SlDropped,
    /// QOS-W003: a rule or level sets an SL for a P_Key whose partition has its own `sl=`
    /// in partitions.conf, and they differ (OpenSM logs the same note).
    PartitionSlDiffers,
    /// QOS-W004: qos-ulps `default:` is ignored: a qos-level named `default` wins.
    UlpDefaultIgnored,
    /// QOS-W005: a rule no query can reach: an earlier rule without criteria takes all.
    UnreachableRule,
    /// QOS-W006: a port group without any selector: it holds no port.
    EmptyGroup,
    /// QOS-W007: a scope no port can reach: an earlier scope of the same kind has every
    /// group it has.
    ShadowedScope,
}

impl LintCode {
    /// The stable code.
    pub fn code(self) -> &'static str {
        match self {
            LintCode::UnusedLevel => "QOS-W001",
            LintCode::SlDropped => "QOS-W002",
            LintCode::PartitionSlDiffers => "QOS-W003",
            LintCode::UlpDefaultIgnored => "QOS-W004",
            LintCode::UnreachableRule => "QOS-W005",
            LintCode::EmptyGroup => "QOS-W006",
            LintCode::ShadowedScope => "QOS-W007",
        }
    }
}

/// One warning.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lint {
    /// What.
    pub code: LintCode,
    /// Where.
    pub pos: Pos,
    /// For a human.
    pub message: String,
}

impl fmt::Display for Lint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: {}", self.code.code(), self.pos, self.message)
    }
}

/// The lints of a policy. `tables` are the option-derived tables (W002 looks at their
/// SL2VL and at every sl2vl-scope's); `partition_sls` are the `(partition number, sl)` of
/// the partitions.conf partitions that set `sl=` (W003). Sorted by position.
pub fn lints(policy: &Policy, tables: &QosTables, partition_sls: &[(u16, u8)]) -> Vec<Lint> {
    let mut out = Vec::new();
    let mut push = |code, pos, message: String| out.push(Lint { code, pos, message });

    for (i, l) in policy.levels.iter().enumerate() {
        if l.generated {
            continue;
        }
        if Some(i) != policy.default_level && !policy.rules.iter().any(|r| r.level == i) {
            push(
                LintCode::UnusedLevel,
                l.pos,
                format!(
                    "qos-level `{}` is used by no rule and is not the default",
                    l.name
                ),
            );
        }
    }

    let mut used: Vec<usize> = policy.rules.iter().map(|r| r.level).collect();
    used.extend(policy.default_level);
    used.sort_unstable();
    used.dedup();
    for i in used {
        let Some(l) = policy.levels.get(i) else {
            continue;
        };
        let sl = usize::from(l.sl);
        let mut where_ = Vec::new();
        for k in PortKind::ALL {
            if tables.get(k).sl2vl[sl] == 15 {
                where_.push(format!("the {}sl2vl option", k.option_prefix()));
            }
        }
        for s in &policy.sl2vl_scopes {
            if s.sl2vl[sl] == 15 {
                where_.push(format!("the sl2vl-scope at {}", s.pos));
            }
        }
        if !where_.is_empty() {
            push(
                LintCode::SlDropped,
                l.pos,
                format!(
                    "qos-level `{}` uses SL {} which {} map(s) to VL 15: its packets are dropped",
                    l.name,
                    l.sl,
                    where_.join(", ")
                ),
            );
        }
    }

    for r in &policy.rules {
        let Some(l) = policy.levels.get(r.level) else {
            continue;
        };
        let level_pkeys = if r.pkeys.is_empty() {
            &l.pkeys
        } else {
            &r.pkeys
        };
        for (pkey, psl) in partition_sls {
            if *psl != l.sl && level_pkeys.iter().any(|x| x.contains(u64::from(*pkey))) {
                push(
                    LintCode::PartitionSlDiffers,
                    r.pos,
                    format!(
                        "SL {} of qos-level `{}` for P_Key {:#06x} differs from that partition's sl={} (the QoS level's SL is what path records get)",
                        l.sl, l.name, pkey, psl
                    ),
                );
            }
        }
    }

    let file_default = policy
        .default_level
        .and_then(|d| policy.levels.get(d))
        .is_some_and(|l| !l.generated);
    if let (true, Some(p)) = (file_default, policy.ulp_default_pos) {
        push(
            LintCode::UlpDefaultIgnored,
            p,
            "qos-ulps `default:` is ignored: the qos-level named `default` is the default"
                .to_string(),
        );
    }

    if let Some(first) = policy.rules.iter().position(|r| r.matches_all()) {
        for r in &policy.rules[first + 1..] {
            let what = match r.origin {
                RuleOrigin::MatchRule => "qos-match-rule",
                RuleOrigin::Ulp => "qos-ulps rule",
            };
            push(
                LintCode::UnreachableRule,
                r.pos,
                format!(
                    "this {what} is never reached: the rule at {} has no criteria and matches every query",
                    policy.rules[first].pos
                ),
            );
        }
    }

    for g in &policy.port_groups {
        if g.is_empty() {
            push(
                LintCode::EmptyGroup,
                g.pos,
                format!(
                    "port-group `{}` has no port-guid, port-name, pkey, partition or node-type: it holds no port",
                    g.name
                ),
            );
        }
    }

    let covered = |earlier: &[usize], later: &[usize]| later.iter().all(|g| earlier.contains(g));
    for (i, s) in policy.vlarb_scopes.iter().enumerate() {
        if let Some(e) = policy.vlarb_scopes[..i]
            .iter()
            .find(|e| covered(&e.groups, &s.groups))
        {
            push(
                LintCode::ShadowedScope,
                s.pos,
                format!(
                    "this vlarb-scope applies to no port: the one at {} covers all its groups",
                    e.pos
                ),
            );
        }
    }
    for (i, s) in policy.sl2vl_scopes.iter().enumerate() {
        if let Some(e) = policy.sl2vl_scopes[..i].iter().find(|e| {
            covered(&e.groups, &s.groups)
                && e.from == crate::policy::PortSel::All
                && e.to == crate::policy::PortSel::All
        }) {
            push(
                LintCode::ShadowedScope,
                s.pos,
                format!(
                    "this sl2vl-scope applies to no port: the one at {} covers all its groups and ports",
                    e.pos
                ),
            );
        }
    }

    out.sort_by_key(|l| (l.pos, l.code));
    out
}
