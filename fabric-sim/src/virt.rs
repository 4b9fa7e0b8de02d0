//! Virtualization on the simulated fabric (issue 12): what a tenant's VM is to the fabric.
//!
//! * A PF passed whole to a VM ([`VirtModel::pass_pf`]) is an ordinary CA port: its own LID,
//!   its own P_KeyTable, SM access on QP0. The fabric cannot tell it from bare metal, so the
//!   guest is a full fabric member and isolation rests on the P_Keys the SM programs.
//! * A VF in the shared-port SR-IOV model ([`VirtModel::add_vf`]) has its own GUID — an alias
//!   in the PF port's GUIDInfo table — but shares the PF's LID and P_KeyTable, and has no SM
//!   access (only the PF's QP0 talks to the SM; a VF's management traffic is tunnelled by the
//!   host PF driver, which a VM with vfio-pci lacks). Packets to a VF carry the PF's LID; the
//!   P_Key check is the PF's table. VFs of one PF therefore cannot be separated by the fabric:
//!   [`VirtModel::shared_port_lints`] reports tenants that try.
//!
//! Pure like the simulator's core: no IO, no clock.

use crate::{AttachId, Delivery, DropReason, SimError, SimFabric};
use fabric::{Guid, Lid, NodeType, PKey};
use std::collections::{BTreeMap, BTreeSet};

/// GUIDInfo entries a simulated CA port has (entry 0 is the port GUID).
pub const GUID_INFO_ENTRIES: usize = 8;

/// A virtual function (shared-port model).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vf {
    /// Its alias GUID.
    pub alias: Guid,
    /// The PF port GUID whose LID and P_KeyTable it shares.
    pub pf: Guid,
    /// Its GUIDInfo index on the PF port (1..=7).
    pub index: u8,
    /// The VM it is passed to.
    pub vm: String,
}

/// Why a virtualization step is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VirtError {
    /// The PF GUID is not a CA port of the fabric.
    #[error("VIRT-E001 {0} is not a CA port of the fabric")]
    NotACaPort(Guid),
    /// No free GUIDInfo entry on the PF port.
    #[error("VIRT-E002 port {0} has no free GUIDInfo entry (7 aliases at most)")]
    GuidInfoFull(Guid),
    /// The alias GUID is already a port or an alias.
    #[error("VIRT-E003 GUID {0} is already in use")]
    GuidInUse(Guid),
    /// A VF has no SM access (QP0 belongs to the PF).
    #[error("VIRT-E004 {0} is a VF: no SM access in the shared-port model (QP0 is the PF's)")]
    NoSmAccess(Guid),
    /// Neither a port nor a VF alias.
    #[error("VIRT-E005 no port or VF with GUID {0}")]
    Unknown(Guid),
    /// The simulator refused.
    #[error(transparent)]
    Sim(#[from] SimError),
}

/// A finding about shared ports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VirtLint {
    /// Stable code: VIRT-E101 (tenants split across one PF), VIRT-W102 (a tenant's VF shares
    /// its PF with functions outside the tenant).
    pub code: &'static str,
    /// The PF port.
    pub pf: Guid,
    /// Explanation.
    pub message: String,
}

/// The virtualization layout of a simulated fabric.
#[derive(Clone, Debug, Default)]
pub struct VirtModel {
    vfs: Vec<Vf>,
    passthrough: BTreeMap<Guid, String>,
}

fn ca_port(sim: &SimFabric, g: Guid) -> Result<u32, VirtError> {
    let idx = *sim
        .st
        .by_port_guid
        .get(&g)
        .ok_or(VirtError::NotACaPort(g))?;
    let node = sim.st.ports[idx as usize].node;
    if sim.st.nodes[node as usize].kind != NodeType::Ca {
        return Err(VirtError::NotACaPort(g));
    }
    Ok(idx)
}

impl VirtModel {
    /// No VMs.
    pub fn new() -> VirtModel {
        VirtModel::default()
    }

    /// Passes a PF whole to `vm`: the guest owns an ordinary CA port.
    pub fn pass_pf(&mut self, sim: &SimFabric, pf: Guid, vm: &str) -> Result<(), VirtError> {
        ca_port(sim, pf)?;
        self.passthrough.insert(pf, vm.to_string());
        Ok(())
    }

    /// Creates a VF of `pf` with GUID `alias` for `vm`: the alias goes into the next free
    /// GUIDInfo entry of the PF port (as the SM would program it), visible to GUIDInfo Gets.
    pub fn add_vf(
        &mut self,
        sim: &mut SimFabric,
        pf: Guid,
        alias: Guid,
        vm: &str,
    ) -> Result<u8, VirtError> {
        let idx = ca_port(sim, pf)?;
        if alias.0 == 0
            || sim.st.by_port_guid.contains_key(&alias)
            || self.vfs.iter().any(|v| v.alias == alias)
        {
            return Err(VirtError::GuidInUse(alias));
        }
        let port = &mut sim.st.cold[idx as usize];
        let table = port
            .guids
            .get_or_insert_with(|| Box::new([Guid(0); GUID_INFO_ENTRIES]));
        let free = (1..GUID_INFO_ENTRIES)
            .find(|&i| table[i].0 == 0)
            .ok_or(VirtError::GuidInfoFull(pf))?;
        table[free] = alias;
        let index = free as u8;
        self.vfs.push(Vf {
            alias,
            pf,
            index,
            vm: vm.to_string(),
        });
        Ok(index)
    }

    /// Every VF.
    pub fn vfs(&self) -> &[Vf] {
        &self.vfs
    }

    /// PFs passed whole, with their VM.
    pub fn passthrough(&self) -> &BTreeMap<Guid, String> {
        &self.passthrough
    }

    /// (alias, PF port GUID) of every VF, for `partitions::tenants::PortDirectory::with_aliases`.
    pub fn aliases(&self) -> impl Iterator<Item = (Guid, Guid)> + '_ {
        self.vfs.iter().map(|v| (v.alias, v.pf))
    }

    /// The physical port a GUID sends and receives on: the PF for a VF alias, else itself.
    pub fn physical(&self, g: Guid) -> Guid {
        self.vfs.iter().find(|v| v.alias == g).map_or(g, |v| v.pf)
    }

    /// True for a VF alias.
    pub fn is_vf(&self, g: Guid) -> bool {
        self.vfs.iter().any(|v| v.alias == g)
    }

    /// Attaches an SM at a port; refused for a VF (no QP0 of its own).
    pub fn attach(&self, sim: &mut SimFabric, g: Guid) -> Result<AttachId, VirtError> {
        if self.is_vf(g) {
            return Err(VirtError::NoSmAccess(g));
        }
        Ok(sim.attach(g)?)
    }

    /// The LID packets to `g` carry: the PF's for a VF (shared port).
    pub fn lid_of(&self, sim: &SimFabric, g: Guid) -> Result<Lid, VirtError> {
        let p = self.physical(g);
        let (node, port) = sim.port_by_guid(p).ok_or(VirtError::Unknown(g))?;
        Ok(sim.port_info(node, port)?.lid)
    }

    /// Would a data packet from `src` to `dst` (ports or VF aliases) with `pkey` arrive?
    /// Between functions of one physical port the HCA loops it back: only the shared table's
    /// P_Key check applies (nothing the fabric can filter).
    pub fn deliver(
        &self,
        sim: &mut SimFabric,
        src: Guid,
        dst: Guid,
        pkey: PKey,
    ) -> Result<Delivery, VirtError> {
        let (ps, pd) = (self.physical(src), self.physical(dst));
        if ps == pd {
            let idx = *sim
                .st
                .by_port_guid
                .get(&ps)
                .ok_or(VirtError::Unknown(src))?;
            let ok = sim.st.table_contains(idx, pkey) && sim.st.table_matches(idx, pkey);
            return Ok(if ok {
                Delivery::Delivered {
                    dst_port: pd,
                    hops: 0,
                }
            } else {
                Delivery::Dropped(DropReason::SourcePKey)
            });
        }
        let lid = self.lid_of(sim, pd)?;
        Ok(sim.deliver(ps, lid, pkey))
    }

    /// The P_Key table every CA port holds now (valid keys, index order) by port GUID, VF
    /// aliases included (with their PF's table): what an audit reads back.
    pub fn port_tables(&self, sim: &SimFabric) -> BTreeMap<Guid, Vec<PKey>> {
        let mut out = BTreeMap::new();
        for (&g, &idx) in &sim.st.by_port_guid {
            let p = &sim.st.ports[idx as usize];
            if sim.st.nodes[p.node as usize].kind != NodeType::Ca {
                continue;
            }
            let c = &sim.st.cold[idx as usize];
            let keys: Vec<PKey> = if c.pkeys.is_empty() {
                vec![PKey::DEFAULT_FULL]
            } else {
                c.pkeys
                    .iter()
                    .copied()
                    .filter(|k| !k.is_invalid())
                    .collect()
            };
            out.insert(g, keys);
        }
        for v in &self.vfs {
            if let Some(k) = out.get(&v.pf).cloned() {
                out.insert(v.alias, k);
            }
        }
        out
    }

    /// Shared-port findings: a PF whose functions (the PF itself or its VFs) are named by two
    /// tenants (VIRT-E101: the fabric cannot separate them), or a tenant's VF whose PF also
    /// carries functions of no tenant or named by nobody (VIRT-W102: they get the tenant's
    /// reach). `tenant_of` names the tenant a GUID (port or alias) is a member of.
    pub fn shared_port_lints(&self, tenant_of: impl Fn(Guid) -> Option<String>) -> Vec<VirtLint> {
        let mut by_pf: BTreeMap<Guid, Vec<Guid>> = BTreeMap::new();
        for v in &self.vfs {
            by_pf.entry(v.pf).or_default().push(v.alias);
        }
        let mut out = Vec::new();
        for (pf, vfs) in by_pf {
            let functions: Vec<Guid> = std::iter::once(pf).chain(vfs.iter().copied()).collect();
            let tenants: BTreeSet<String> =
                functions.iter().filter_map(|g| tenant_of(*g)).collect();
            if tenants.len() > 1 {
                out.push(VirtLint {
                    code: "VIRT-E101",
                    pf,
                    message: format!(
                        "functions of physical port {pf} are named by tenants {}: they share one LID and one P_KeyTable, so the fabric cannot separate them",
                        tenants.iter().cloned().collect::<Vec<_>>().join(", ")
                    ),
                });
            } else if let Some(t) = tenants.iter().next() {
                let outside: Vec<String> = vfs
                    .iter()
                    .filter(|g| tenant_of(**g).is_none())
                    .map(|g| g.to_string())
                    .collect();
                if !outside.is_empty() {
                    out.push(VirtLint {
                        code: "VIRT-W102",
                        pf,
                        message: format!(
                            "VFs {} of physical port {pf} belong to no tenant but share tenant '{t}''s P_Keys",
                            outside.join(", ")
                        ),
                    });
                }
            }
        }
        out
    }
}
