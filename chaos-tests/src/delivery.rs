//! The delivery check shared by both levels: between every pair of CA ports, in every
//! partition of the policy in force, a data packet is delivered exactly when the policy
//! says (both ports members, at least one of them full).

use fabric::{Guid, Lid, NodeType, PKey, Topology};
use fabric_sim::SimFabric;

/// Checks delivery on `fab` for the policy `text` (version 0: no policy applied, the
/// built-in `Default=0x7fff : ALL=full`). `lids` are the CA ports' LIDs. Returns the number
/// of pairs checked, or the first mismatch.
pub fn check(
    fab: &mut SimFabric,
    topo: &Topology,
    version: u64,
    text: &str,
    lids: &[(Guid, Lid)],
) -> Result<u64, String> {
    let opts = partitions::Options::default();
    let policy = if version == 0 {
        partitions::Policy::no_file(opts)
    } else {
        partitions::load(text, opts).map_err(|e| format!("INV-DELIVERY policy: {e}"))?
    };
    let ports: Vec<_> = partitions::plan::end_ports(topo)
        .into_iter()
        .filter(|p| p.node_type == NodeType::Ca)
        .collect();
    let held = policy.resolve(&ports);
    let mut n = 0;
    for a in &held {
        for b in &held {
            if a.port.port_guid == b.port.port_guid {
                continue;
            }
            let Some(&(_, dlid)) = lids.iter().find(|(g, _)| *g == b.port.port_guid) else {
                continue;
            };
            for (i, part) in policy.partitions.iter().enumerate() {
                let (ha, hb) = (a.held[i], b.held[i]);
                let a_in = ha.full || ha.limited;
                let b_in = hb.full || hb.limited;
                let want = a_in && b_in && (ha.full || hb.full);
                let key = if ha.full || !a_in {
                    part.pkey | 0x8000
                } else {
                    part.pkey
                };
                n += 1;
                let d = fab.deliver(a.port.port_guid, dlid, PKey(key));
                if d.is_delivered() != want {
                    return Err(format!(
                        "INV-DELIVERY {} -> {} with P_Key 0x{key:04x} ({}): {:?} but the policy \
                         says {}",
                        a.port.port_guid,
                        b.port.port_guid,
                        part.name,
                        d,
                        if want { "deliver" } else { "drop" }
                    ));
                }
            }
        }
    }
    Ok(n)
}
