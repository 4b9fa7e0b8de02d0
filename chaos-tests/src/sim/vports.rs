//! Virtualization-capable HCAs in the simulation (issue 26): the topology suffix
//! `+vports=AxB` (A HCAs after the replicas' and the foreign SM's CA ports, B vports each,
//! every vport needing a LID of its own) and the watch on their LIDs.

use super::world::World;
use fabric::{Guid, Lid, NodeId};
use fabric_sim::SimFabric;
use std::collections::BTreeMap;

/// Virtualization-capable HCAs of a topology spec: (HCAs, vports each).
pub type VportSpec = Option<(usize, u16)>;

/// Splits a topology `ft2:8+vports=2x4` into the generator spec and (HCAs, vports each).
pub fn split_vports(topology: &str) -> Result<(&str, VportSpec), String> {
    let Some((spec, v)) = topology.split_once("+vports=") else {
        return Ok((topology, None));
    };
    let (a, b) = v
        .split_once('x')
        .ok_or_else(|| format!("vports={v}: want HCAsxVPORTS, e.g. 2x4"))?;
    let a: usize = a
        .parse()
        .map_err(|_| format!("vports={v}: bad HCA count"))?;
    let b: u16 = b
        .parse()
        .map_err(|_| format!("vports={v}: bad vport count"))?;
    Ok((spec, Some((a, b))))
}

/// Makes the HCAs `virt` asks for virtualization-capable (the CA ports after the first
/// four); returns their vport GUIDs, no LID seen yet.
pub fn enable(
    fab: &mut SimFabric,
    cas: &[(NodeId, u8, Guid)],
    virt: VportSpec,
) -> Result<BTreeMap<Guid, Option<Lid>>, String> {
    let mut vports = BTreeMap::new();
    let Some((hcas, n)) = virt else {
        return Ok(vports);
    };
    let pfs = cas
        .get(4..4 + hcas)
        .ok_or_else(|| format!("{} CA ports; vports need {}", cas.len(), 4 + hcas))?;
    for &(_, _, pf) in pfs {
        fab.enable_virtualization(pf, fabric_sim::VirtSpec::uniform(pf, n, true))
            .map_err(|e| e.to_string())?;
        for i in 1..=n {
            vports.insert(fabric_sim::vport_guid(pf, i), None);
        }
    }
    Ok(vports)
}

impl World {
    /// At a master's SUBNET UP: every ACTIVE vport's LID against the first it had (a vport
    /// LID that moves is counted; a takeover must keep them all).
    pub(super) fn watch_vports(&mut self) {
        for (g, first) in self.vports.iter_mut() {
            let Some(v) = self.fab.vport(*g) else {
                continue;
            };
            if v.state != fabric::PortState::Active || v.lid.0 == 0 {
                continue;
            }
            match first {
                None => *first = Some(v.lid),
                Some(l) if *l != v.lid => {
                    self.stats.vport_lid_changes += 1;
                    *l = v.lid;
                }
                Some(_) => {}
            }
        }
    }
}
