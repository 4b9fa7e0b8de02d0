//! `check`: parse, build the policy, lint, and (with a topology) plan.

use crate::ast::*;
use crate::lints::{Lint, LintCode, Severity};
use crate::parser::{ParseError, parse};
use crate::plan::{Caps, Plan, end_ports, plan};
use crate::policy::{Effect, EndPort, Options, Policy, Selector};
use fabric::Topology;
use fabric::{Guid, NodeType, PKey};
use std::collections::BTreeSet;

/// The outcome of checking a file.
#[derive(Clone, Debug)]
pub struct CheckReport {
    /// The policy (None when the file did not parse).
    pub policy: Option<Policy>,
    /// The plan, when a topology was given and the file parsed.
    pub plan: Option<Plan>,
    /// Syntax errors (any rejects the file).
    pub parse_errors: Vec<ParseError>,
    /// Lints, sorted by position.
    pub lints: Vec<Lint>,
}

impl CheckReport {
    /// True when there is a syntax error or an error-level lint.
    pub fn has_errors(&self) -> bool {
        !self.parse_errors.is_empty() || self.lints.iter().any(|l| l.severity() == Severity::Error)
    }
}

/// Checks a partitions.conf text; with a topology also plans it and runs topology lints.
///
/// Limits first: a text larger than [`crate::MAX_POLICY_BYTES`] is not parsed (PART-E021),
/// a policy of more than [`crate::MAX_PARTITIONS`] partitions is not planned (PART-E022).
pub fn check(src: &str, options: Options, topo: Option<(&Topology, &Caps)>) -> CheckReport {
    if src.len() > crate::MAX_POLICY_BYTES {
        return CheckReport {
            policy: None,
            plan: None,
            parse_errors: Vec::new(),
            lints: vec![Lint::new(
                LintCode::TooLarge,
                None,
                format!(
                    "the text is {} bytes; a policy is at most {} bytes (MAX_POLICY_BYTES): not parsed",
                    src.len(),
                    crate::MAX_POLICY_BYTES
                ),
            )],
        };
    }
    let file = match parse(src) {
        Ok(f) => f,
        Err(errors) => {
            return CheckReport {
                policy: None,
                plan: None,
                parse_errors: errors,
                lints: Vec::new(),
            };
        }
    };
    let (policy, mut lints) = Policy::from_file(&file, options);
    lints.extend(syntax_lints(&file, &options));
    if !file.statements.is_empty() && policy.partitions[0].defined_at.is_empty() {
        lints.push(Lint::new(
            LintCode::NoDefaultRule,
            None,
            "no rule for the Default partition (0x7fff): every port but the SM's is a limited member, \
             so nothing talks in Default (add `Default=0x7fff : ALL=full ;` or say what you mean)",
        ));
    }
    let too_many = policy.partitions.len() > crate::MAX_PARTITIONS;
    if too_many {
        lints.push(Lint::new(
            LintCode::TooManyPartitions,
            None,
            format!(
                "{} partitions; a policy has at most {} (MAX_PARTITIONS): not planned",
                policy.partitions.len(),
                crate::MAX_PARTITIONS
            ),
        ));
    }
    let planned = topo.filter(|_| !too_many).map(|(t, caps)| {
        let p = plan(&policy, t, caps);
        lints.extend(p.lints.iter().cloned());
        let known: BTreeSet<_> = end_ports(t).iter().map(|e| e.port_guid).collect();
        for st in &file.statements {
            for item in &st.items {
                if let Item::Member(m) = item
                    && let Target::Guid(g) = m.target
                    && !known.contains(&g)
                {
                    lints.push(Lint::new(
                        LintCode::UnknownGuid,
                        Some(m.name.pos),
                        format!("port GUID {g} is not an end port of the topology"),
                    ));
                }
            }
        }
        p
    });
    sm_port_lint(&policy, topo.map(|(t, _)| t), &mut lints);
    membership_lints(&policy, planned.as_ref(), &mut lints);
    lints.sort_by_key(|l| (l.pos, l.code));
    CheckReport {
        policy: Some(policy),
        plan: planned,
        parse_errors: Vec::new(),
        lints,
    }
}

fn syntax_lints(file: &PartitionFile, opts: &Options) -> Vec<Lint> {
    let mut out = Vec::new();
    for l in &file.long_lines {
        out.push(Lint::new(
            LintCode::LongLine,
            Some(Pos { line: l.line, col: 1 }),
            format!(
                "line is {} bytes long; OpenSM reads at most {} per line and would parse the rest as a new line",
                l.len,
                crate::parser::OPENSM_MAX_LINE
            ),
        ));
    }
    let abbrev = |out: &mut Vec<Lint>, w: &Word, full: &str| {
        out.push(Lint::new(
            LintCode::Abbreviation,
            Some(w.pos),
            format!(
                "'{}' is an abbreviation OpenSM reads as '{full}'; write it out",
                w.text
            ),
        ));
    };
    let both = |out: &mut Vec<Lint>, m: &MembershipSpec| {
        if m.value == MemberWord::Both && !opts.allow_both_pkeys {
            out.push(Lint::new(
                LintCode::BothNotAllowed,
                Some(m.word.pos),
                "'both' needs allow_both_pkeys; without it OpenSM makes the port full only",
            ));
        }
    };
    let membership = |out: &mut Vec<Lint>, m: &MembershipSpec| {
        match m.value {
            MemberWord::Unrecognized => out.push(Lint::new(
                LintCode::UnrecognizedMembership,
                Some(m.word.pos),
                format!(
                    "'{}' is not full, limited or both: OpenSM silently makes this a limited member",
                    m.word.text
                ),
            )),
            v if m.abbreviated => {
                let full = match v {
                    MemberWord::Full => "full",
                    MemberWord::Both => "both",
                    _ => "limited",
                };
                abbrev(out, &m.word, full);
            }
            _ => {}
        }
        both(out, m);
    };
    for st in &file.statements {
        if let Some(k) = st.pkey
            && k.value & 0x8000 != 0
        {
            out.push(Lint::new(
                LintCode::PKeyAlias,
                Some(k.pos),
                format!(
                    "PKey {:#06x} has bit 15 set; only the low 15 bits are used ({:#06x})",
                    k.value,
                    k.value & 0x7FFF
                ),
            ));
        }
        for f in &st.flags {
            if f.abbreviated {
                let full = match &f.kind {
                    HeaderFlagKind::Ipoib => "ipoib",
                    HeaderFlagKind::Indx0 => "indx0",
                    HeaderFlagKind::DefMember(_) => "defmember",
                    HeaderFlagKind::Group(g) => group_name(g),
                };
                abbrev(&mut out, &f.word, full);
            }
            if let HeaderFlagKind::DefMember(m) = &f.kind {
                membership(&mut out, m);
            }
        }
        for item in &st.items {
            match item {
                Item::Member(m) => {
                    if m.name_abbreviated {
                        let full = match m.target {
                            Target::All => "ALL",
                            Target::AllCas => "ALL_CAS",
                            Target::AllSwitches => "ALL_SWITCHES",
                            Target::AllRouters => "ALL_ROUTERS",
                            Target::SelfPort => "SELF",
                            _ => "NONE",
                        };
                        abbrev(&mut out, &m.name, full);
                    }
                    if m.name.text.len() > 1
                        && m.name.text.starts_with('0')
                        && !m.name.text.starts_with("0x")
                        && !m.name.text.starts_with("0X")
                    {
                        out.push(Lint::new(
                            LintCode::OctalNumber,
                            Some(m.name.pos),
                            format!(
                                "'{}' starts with 0 and is read as octal; GUIDs are normally written 0x...",
                                m.name.text
                            ),
                        ));
                    }
                    if let Some(ms) = &m.membership {
                        membership(&mut out, ms);
                    }
                }
                Item::Mgid(line) => {
                    for f in &line.flags {
                        if f.abbreviated {
                            abbrev(&mut out, &f.word, group_name(&f.flag));
                        }
                    }
                }
            }
        }
    }
    out
}

fn group_name(g: &GroupFlag) -> &'static str {
    match g {
        GroupFlag::Mtu(_) => "mtu",
        GroupFlag::Rate(_) => "rate",
        GroupFlag::Sl(_) => "sl",
        GroupFlag::Scope(_) => "scope",
        GroupFlag::QKey(_) => "Q_Key",
        GroupFlag::TClass(_) => "TClass",
        GroupFlag::FlowLabel(_) => "FlowLabel",
    }
}

fn membership_lints(policy: &Policy, plan: Option<&Plan>, lints: &mut Vec<Lint>) {
    for (i, p) in policy.partitions.iter().enumerate() {
        if i == 0 {
            continue;
        }
        let pos = p.defined_at.first().copied();
        let (has_member, has_full) = match plan {
            Some(plan) => match plan.partitions.iter().find(|x| x.pkey == p.pkey) {
                // Keys dropped for lack of room are PART-E008's business.
                Some(x) => (
                    true,
                    !x.full.is_empty()
                        || plan
                            .ports
                            .iter()
                            .any(|pp| pp.dropped.contains(&PKey(p.pkey | 0x8000))),
                ),
                None => (false, false),
            },
            None => {
                let rules: Vec<_> = policy.rules.iter().filter(|r| r.partition == i).collect();
                (
                    !rules.is_empty(),
                    rules.iter().any(|r| r.effect != Effect::Limited),
                )
            }
        };
        if !has_member {
            lints.push(Lint::new(
                LintCode::EmptyPartition,
                pos,
                format!(
                    "partition '{}' ({:#06x}) has no member ports: OpenSM deletes it and its groups",
                    p.name, p.pkey
                ),
            ));
        } else if !has_full && p.ipoib {
            lints.push(Lint::new(
                LintCode::IpoibAllLimited,
                pos,
                format!(
                    "ipoib partition '{}' ({:#06x}) has only limited members: IPoIB needs full members and ARP never resolves",
                    p.name, p.pkey
                ),
            ));
        } else if !has_full {
            lints.push(Lint::new(
                LintCode::NoFullMember,
                pos,
                format!(
                    "partition '{}' ({:#06x}) has no full member: limited members cannot talk to each other",
                    p.name, p.pkey
                ),
            ));
        }
    }
}

/// PART-W013: OpenSM would leave its own port a limited member of Default after the file's
/// rules (we keep it full). The SM port's node type comes from the topology, else CA.
fn sm_port_lint(policy: &Policy, topo: Option<&Topology>, lints: &mut Vec<Lint>) {
    let Some(sm) = policy.options.sm_port_guid else {
        return;
    };
    let port = topo
        .and_then(|t| end_ports(t).into_iter().find(|e| e.port_guid == sm))
        .unwrap_or(EndPort {
            node_guid: Guid(sm.0.wrapping_sub(1)),
            port_guid: sm,
            port: 1,
            node_type: NodeType::Ca,
        });
    let m = policy.opensm_membership(port);
    if m.held[0].full {
        return;
    }
    // Blame the last file rule on Default that matches the SM port.
    let pos = policy
        .rules
        .iter()
        .rev()
        .filter(|r| r.partition == 0 && r.pos.is_some())
        .find(|r| match r.selector {
            Selector::All => true,
            Selector::Type(t) => t == port.node_type,
            Selector::Port(g) => g == sm,
            Selector::UnknownSelf => false,
        })
        .and_then(|r| r.pos);
    lints.push(Lint::new(
        LintCode::SmPortDemoted,
        pos,
        format!(
            "the file leaves the SM port {sm} a limited member of Default ({}): it stays full, as OpenSM \
             documents (OpenSM 3.3 actually demotes it, cutting it off from limited ports)",
            PKey::DEFAULT_LIMITED
        ),
    ));
}
