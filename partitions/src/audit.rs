//! The isolation audit: which end ports can exchange traffic according to the P_KeyTables
//! read back from the fabric (never the file), compared with what the policy intends.
//!
//! Model:
//! * Two end ports exchange traffic in partition p when both hold a key of p and at least one
//!   holds it full (the IBA match rule, checked by the receiving port).
//! * A switch port facing an end port, when its table was read and its enforcement bit is
//!   set, drops that port's packets (inbound) or packets to it (outbound) whose partition is
//!   not in its table. Switch enforcement is taken to compare the partition number only; the
//!   membership check is left to the receiving end port. (OpenSM writes a limited end port's
//!   limited key into its switch port and enforces by default; were the switch to apply the
//!   full/limited rule, a limited member's own packets would be dropped at ingress and
//!   hub-and-spoke storage could not work under OpenSM's defaults.) Traffic needs both directions, so
//!   an end port is an effective member of p only when its switch port passes p both ways.
//! * A switch port whose table or enforcement bits were not read is assumed not to enforce
//!   (the conservative assumption for isolation).
//!
//! Ports are grouped by (intended memberships, effective memberships); reachability is
//! computed between groups, never pair by pair, and reported per pair of tenant groups.

use crate::dump::PortReading;
use crate::lints::Severity;
use crate::plan::Plan;
use crate::policy::EndPort;
use fabric::{Guid, Membership, NodeType, PKey, PortRef, Topology};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Partitions lost between two groups, the pair count and an example pair.
type Lost = (BTreeSet<u16>, usize, (Guid, Guid));

/// A partition membership signature: partition number -> best membership.
pub type Signature = BTreeMap<u16, Membership>;

/// One audit finding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Stable code (AUDIT-Ennn / AUDIT-Wnnn).
    pub code: &'static str,
    /// Error (isolation broken) or warning.
    pub severity: Severity,
    /// Explanation.
    pub message: String,
}

/// Effective members of one partition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PartitionView {
    /// Partition number.
    #[serde(serialize_with = "crate::hexser::part")]
    pub pkey: u16,
    /// Name from the policy, when known.
    pub name: Option<String>,
    /// Effective full members (port GUIDs).
    #[serde(serialize_with = "crate::hexser::guids")]
    pub full: Vec<Guid>,
    /// Effective limited members.
    #[serde(serialize_with = "crate::hexser::guids")]
    pub limited: Vec<Guid>,
    /// Ports holding a key of p that switch enforcement blocks.
    #[serde(serialize_with = "crate::hexser::guids")]
    pub blocked: Vec<Guid>,
}

/// Exchange between two groups of ports.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GroupPair {
    /// First group name.
    pub a: String,
    /// Second group name (may equal `a`).
    pub b: String,
    /// Partitions through which they exchange traffic.
    #[serde(serialize_with = "crate::hexser::parts")]
    pub via: Vec<u16>,
    /// Of those, partitions the policy does not intend for them.
    #[serde(serialize_with = "crate::hexser::parts")]
    pub unintended: Vec<u16>,
    /// Number of port pairs.
    pub pairs: usize,
    /// One example pair.
    #[serde(serialize_with = "crate::hexser::guid_pair")]
    pub example: (Guid, Guid),
}

/// The audit's result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AuditReport {
    /// Effective partitions.
    pub partitions: Vec<PartitionView>,
    /// Groups: name -> member port GUIDs.
    #[serde(serialize_with = "group_map")]
    pub groups: BTreeMap<String, Vec<Guid>>,
    /// Exchange between groups.
    pub exchange: Vec<GroupPair>,
    /// Findings, errors first.
    pub findings: Vec<Finding>,
}

impl AuditReport {
    /// True when some finding is an error.
    pub fn has_errors(&self) -> bool {
        self.findings.iter().any(|f| f.severity == Severity::Error)
    }
}

fn group_map<S: serde::Serializer>(
    m: &BTreeMap<String, Vec<Guid>>,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_map(m.iter().map(|(k, v)| {
        (
            k,
            v.iter()
                .map(|g| format!("{:#018x}", g.0))
                .collect::<Vec<_>>(),
        )
    }))
}

fn sig_of(keys: impl IntoIterator<Item = PKey>) -> Signature {
    let mut s = Signature::new();
    for k in keys {
        if k.is_invalid() {
            continue;
        }
        let e = s.entry(k.partition()).or_insert(k.membership());
        if k.is_full() {
            *e = Membership::Full;
        }
    }
    s
}

fn reach(a: &Signature, b: &Signature) -> BTreeSet<u16> {
    a.iter()
        .filter_map(|(p, ma)| {
            let mb = b.get(p)?;
            (*ma == Membership::Full || *mb == Membership::Full).then_some(*p)
        })
        .collect()
}

fn fmt_parts(v: &[u16]) -> String {
    v.iter()
        .map(|p| format!("{p:#06x}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Audits read-back tables against the topology and, when given, the intended plan.
pub fn audit(
    topo: &Topology,
    readings: &[PortReading],
    intent: Option<&Plan>,
    names: &BTreeMap<u16, String>,
) -> AuditReport {
    let mut findings = Vec::new();
    let by_port: BTreeMap<(Guid, u8), &PortReading> =
        readings.iter().map(|r| ((r.node, r.port), r)).collect();
    let ends = crate::plan::end_ports(topo);
    let intended: BTreeMap<(Guid, u8), Signature> = intent
        .map(|p| {
            p.ports
                .iter()
                .map(|pp| {
                    (
                        (pp.port.node_guid, pp.port.port),
                        sig_of(pp.table.valid().into_iter().map(|(_, k)| k)),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    // Effective signatures.
    let mut effective: Vec<(EndPort, Signature, Signature)> = Vec::new();
    let mut blocked: BTreeMap<u16, Vec<Guid>> = BTreeMap::new();
    for e in &ends {
        let Some(r) = by_port.get(&(e.node_guid, e.port)) else {
            if intent.is_some() || !readings.is_empty() {
                findings.push(Finding {
                    code: "AUDIT-W007",
                    severity: Severity::Warning,
                    message: format!(
                        "end port {} (node {} port {}) was not read: not audited",
                        e.port_guid, e.node_guid, e.port
                    ),
                });
            }
            continue;
        };
        let raw = sig_of(r.pkeys.iter().copied());
        let mut eff = raw.clone();
        let mut switch_note = None;
        if e.node_type != NodeType::Switch
            && let Some(id) = topo.node_by_guid(e.node_guid)
            && let Some(rem) = topo.remote(PortRef::new(id, e.port))
            && topo.node(rem.node).is_switch()
        {
            let sw = topo.node(rem.node).node_guid;
            if let Some(sr) = by_port.get(&(sw, rem.port.0)) {
                let swsig = sig_of(sr.pkeys.iter().copied());
                let enf = sr.enforce_in == Some(true) || sr.enforce_out == Some(true);
                if enf {
                    eff.retain(|p, _| {
                        let ok = swsig.contains_key(p);
                        if !ok {
                            blocked.entry(*p).or_default().push(e.port_guid);
                        }
                        ok
                    });
                }
                switch_note = Some((sw, rem.port.0, sr.enforce_in, sr.enforce_out));
            } else {
                switch_note = Some((sw, rem.port.0, None, None));
            }
        }
        let int = intended.get(&(e.node_guid, e.port)).cloned();
        if let Some(int) = &int {
            for (p, m) in &raw {
                let allowed = int.get(p);
                let extra = matches!(
                    (allowed, m),
                    (None, _) | (Some(Membership::Limited), Membership::Full)
                );
                if !extra {
                    continue;
                }
                let what = match allowed {
                    None => format!(
                        "holds {:?} key of partition {p:#06x} it is not a member of",
                        m
                    ),
                    Some(_) => format!(
                        "holds the full key of partition {p:#06x} where it should be limited"
                    ),
                };
                if eff.contains_key(p) {
                    findings.push(Finding {
                        code: "AUDIT-E002",
                        severity: Severity::Error,
                        message: format!("port {} {what}", e.port_guid),
                    });
                } else {
                    findings.push(Finding {
                        code: "AUDIT-W003",
                        severity: Severity::Warning,
                        message: format!(
                            "port {} {what}; its switch port's enforcement blocks that partition",
                            e.port_guid
                        ),
                    });
                }
            }
            for p in int.keys() {
                if !raw.contains_key(p) {
                    findings.push(Finding {
                        code: "AUDIT-W004",
                        severity: Severity::Warning,
                        message: format!(
                            "port {} lacks its key of partition {p:#06x}",
                            e.port_guid
                        ),
                    });
                }
            }
        }
        if let (Some(plan), Some((sw, sp, ein, eout))) = (intent, switch_note)
            && let Some(want) = plan
                .switch_ports
                .iter()
                .find(|s| s.switch_guid == sw && s.port == sp)
        {
            let miss_in = want.enforce_in && ein != Some(true);
            let miss_out = want.enforce_out && eout != Some(true);
            if miss_in || miss_out {
                let state = |v: Option<bool>| match v {
                    Some(true) => "on",
                    Some(false) => "off",
                    None => "unknown",
                };
                findings.push(Finding {
                    code: "AUDIT-W005",
                    severity: Severity::Warning,
                    message: format!(
                        "switch {sw} port {sp} (facing {}): partition enforcement inbound {} outbound {} but the plan wants {}",
                        e.port_guid,
                        state(ein),
                        state(eout),
                        plan.part_enforce
                    ),
                });
            }
            if let Some(t) = &want.table
                && let Some(sr) = by_port.get(&(sw, sp))
                && sig_of(sr.pkeys.iter().copied()) != sig_of(t.valid().into_iter().map(|(_, k)| k))
            {
                findings.push(Finding {
                    code: "AUDIT-W006",
                    severity: Severity::Warning,
                    message: format!(
                        "switch {sw} port {sp} (facing {}): enforcement table differs from the plan",
                        e.port_guid
                    ),
                });
            }
        }
        effective.push((*e, int.unwrap_or_default(), eff));
    }
    // Partition views.
    let mut parts: BTreeMap<u16, PartitionView> = BTreeMap::new();
    for (e, _, eff) in &effective {
        for (p, m) in eff {
            let v = parts.entry(*p).or_insert_with(|| PartitionView {
                pkey: *p,
                name: names.get(p).cloned(),
                full: Vec::new(),
                limited: Vec::new(),
                blocked: Vec::new(),
            });
            match m {
                Membership::Full => v.full.push(e.port_guid),
                Membership::Limited => v.limited.push(e.port_guid),
            }
        }
    }
    for (p, ports) in blocked {
        if let Some(v) = parts.get_mut(&p) {
            v.blocked = ports;
        } else {
            parts.insert(
                p,
                PartitionView {
                    pkey: p,
                    name: names.get(&p).cloned(),
                    full: Vec::new(),
                    limited: Vec::new(),
                    blocked: ports,
                },
            );
        }
    }
    // Groups: by intended signature when there is an intent, else by effective signature.
    let group_sig = |int: &Signature, eff: &Signature| -> Signature {
        if intent.is_some() {
            int.clone()
        } else {
            eff.clone()
        }
    };
    let mut sig_names: BTreeMap<Signature, String> = BTreeMap::new();
    let mut used: BTreeSet<String> = BTreeSet::new();
    for (_, int, eff) in &effective {
        let s = group_sig(int, eff);
        if sig_names.contains_key(&s) {
            continue;
        }
        let label = |m: Membership| {
            s.iter()
                .filter(|(p, mm)| **mm == m && **p != 0x7FFF)
                .map(|(p, _)| names.get(p).cloned().unwrap_or(format!("{p:#06x}")))
                .collect::<Vec<_>>()
                .join("+")
        };
        let mut name = match (label(Membership::Full), label(Membership::Limited)) {
            (f, _) if !f.is_empty() => f,
            (_, l) if !l.is_empty() => format!("limited:{l}"),
            _ => match s.get(&0x7FFF) {
                Some(Membership::Full) => "default-full".to_string(),
                Some(Membership::Limited) => "default-limited".to_string(),
                None => "no-partition".to_string(),
            },
        };
        let base = name.clone();
        let mut n = 2;
        while used.contains(&name) {
            name = format!("{base}#{n}");
            n += 1;
        }
        used.insert(name.clone());
        sig_names.insert(s, name);
    }
    let mut groups: BTreeMap<String, Vec<Guid>> = BTreeMap::new();
    // Classes: (intended, effective) -> ports.
    let mut classes: BTreeMap<(Signature, Signature), Vec<Guid>> = BTreeMap::new();
    for (e, int, eff) in &effective {
        let gs = group_sig(int, eff);
        groups
            .entry(sig_names[&gs].clone())
            .or_default()
            .push(e.port_guid);
        classes
            .entry((int.clone(), eff.clone()))
            .or_default()
            .push(e.port_guid);
    }
    let class_list: Vec<_> = classes.into_iter().collect();
    let mut pairs: BTreeMap<(String, String), GroupPair> = BTreeMap::new();
    let mut lost: BTreeMap<(String, String), Lost> = BTreeMap::new();
    for i in 0..class_list.len() {
        for j in i..class_list.len() {
            let ((i1, e1), p1) = &class_list[i];
            let ((i2, e2), p2) = &class_list[j];
            let n = if i == j {
                p1.len() * (p1.len().saturating_sub(1)) / 2
            } else {
                p1.len() * p2.len()
            };
            if n == 0 {
                continue;
            }
            let example = if i == j {
                (p1[0], p1[1])
            } else {
                (p1[0], p2[0])
            };
            let actual = reach(e1, e2);
            let wanted = reach(i1, i2);
            let g1 = sig_names[&group_sig(i1, e1)].clone();
            let g2 = sig_names[&group_sig(i2, e2)].clone();
            let key = if g1 <= g2 { (g1, g2) } else { (g2, g1) };
            if !actual.is_empty() {
                let unintended: Vec<u16> = if intent.is_some() {
                    actual.difference(&wanted).copied().collect()
                } else {
                    Vec::new()
                };
                let gp = pairs.entry(key.clone()).or_insert_with(|| GroupPair {
                    a: key.0.clone(),
                    b: key.1.clone(),
                    via: Vec::new(),
                    unintended: Vec::new(),
                    pairs: 0,
                    example,
                });
                gp.pairs += n;
                for p in &actual {
                    if !gp.via.contains(p) {
                        gp.via.push(*p);
                    }
                }
                for p in unintended {
                    if !gp.unintended.contains(&p) {
                        gp.unintended.push(p);
                        if gp.example != example && gp.unintended.len() == 1 {
                            gp.example = example;
                        }
                    }
                }
            }
            if intent.is_some() {
                let missing: BTreeSet<u16> = wanted.difference(&actual).copied().collect();
                if !missing.is_empty() {
                    let l = lost.entry(key).or_insert((BTreeSet::new(), 0, example));
                    l.0.extend(missing);
                    l.1 += n;
                }
            }
        }
    }
    let mut exchange: Vec<GroupPair> = pairs.into_values().collect();
    for gp in &mut exchange {
        gp.via.sort();
        gp.unintended.sort();
        if !gp.unintended.is_empty() {
            findings.push(Finding {
                code: "AUDIT-E001",
                severity: Severity::Error,
                message: format!(
                    "{} <-> {} can exchange traffic through {} which the policy does not allow ({} port pairs, e.g. {} <-> {})",
                    gp.a,
                    gp.b,
                    fmt_parts(&gp.unintended),
                    gp.pairs,
                    gp.example.0,
                    gp.example.1
                ),
            });
        }
    }
    for ((a, b), (parts_lost, n, ex)) in lost {
        let v: Vec<u16> = parts_lost.into_iter().collect();
        findings.push(Finding {
            code: "AUDIT-W008",
            severity: Severity::Warning,
            message: format!(
                "{a} <-> {b} cannot exchange traffic through {} as the policy intends ({n} port pairs, e.g. {} <-> {})",
                fmt_parts(&v),
                ex.0,
                ex.1
            ),
        });
    }
    findings.sort_by(|a, b| b.severity.cmp(&a.severity).then(a.code.cmp(b.code)));
    AuditReport {
        partitions: parts.into_values().collect(),
        groups,
        exchange,
        findings,
    }
}
