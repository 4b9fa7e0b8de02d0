//! The tenant-level audit over P_KeyTables read back from the fabric.

use super::Compiled;
use fabric::{Guid, PKey};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Who a port is, for [`reachability`].
fn group_of(c: &Compiled, g: Guid) -> String {
    if let Some(t) = c.tenant_of(g) {
        return format!("tenant:{}", t.name);
    }
    if let Some(s) = c.storage.iter().find(|s| s.servers.contains(&g)) {
        return format!("storage:{}", s.name);
    }
    "other".to_string()
}

/// Traffic possible between two groups of ports (tenants, storage servers, other ports).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Reach {
    /// First group (`tenant:NAME`, `storage:NAME` or `other`).
    pub a: String,
    /// Second group (may equal `a`).
    pub b: String,
    /// Partitions through which some port of `a` and some port of `b` match.
    #[serde(serialize_with = "crate::hexser::parts")]
    pub via: Vec<u16>,
    /// One example pair.
    #[serde(serialize_with = "crate::hexser::guid_pair")]
    pub example: (Guid, Guid),
}

/// The tenant-level audit: from the P_KeyTables read back (port GUID -> keys), which groups
/// can exchange traffic and through which partitions (IBA match rule: same partition, one
/// side full). Pairs of distinct ports only; groups are listed in name order.
pub fn reachability(c: &Compiled, tables: &BTreeMap<Guid, Vec<PKey>>) -> Vec<Reach> {
    // Group ports by (group, key set) so the pair walk is over signatures, not ports.
    type Sig = BTreeSet<PKey>;
    let mut sigs: BTreeMap<(String, Sig), Vec<Guid>> = BTreeMap::new();
    for (g, keys) in tables {
        let sig: Sig = keys.iter().copied().filter(|k| !k.is_invalid()).collect();
        sigs.entry((group_of(c, *g), sig)).or_default().push(*g);
    }
    let entries: Vec<(&(String, Sig), &Vec<Guid>)> = sigs.iter().collect();
    type Acc = (BTreeSet<u16>, (Guid, Guid));
    let mut out: BTreeMap<(String, String), Acc> = BTreeMap::new();
    for (i, ((ga, sa), pa)) in entries.iter().enumerate() {
        for ((gb, sb), pb) in entries.iter().skip(i) {
            let same = std::ptr::eq(*pa, *pb);
            if same && pa.len() < 2 {
                continue;
            }
            let via: BTreeSet<u16> = sa
                .iter()
                .flat_map(|ka| sb.iter().filter(move |kb| ka.matches(**kb)))
                .map(|k| k.partition())
                .collect();
            if via.is_empty() {
                continue;
            }
            let example = if same { (pa[0], pa[1]) } else { (pa[0], pb[0]) };
            let key = if ga <= gb {
                (ga.clone(), gb.clone())
            } else {
                (gb.clone(), ga.clone())
            };
            let e = out.entry(key).or_insert((BTreeSet::new(), example));
            e.0.extend(via);
        }
    }
    out.into_iter()
        .map(|((a, b), (via, example))| Reach {
            a,
            b,
            via: via.into_iter().collect(),
            example,
        })
        .collect()
}

/// True when the reachability report lets two different tenants exchange traffic.
pub fn tenants_leak(reach: &[Reach]) -> Vec<&Reach> {
    reach
        .iter()
        .filter(|r| r.a != r.b && r.a.starts_with("tenant:") && r.b.starts_with("tenant:"))
        .collect()
}
