//! Virtualization-capable CA ports (issue 26): a PF port with N virtual ports (vports),
//! each with its own state, GUID, optional LID and P_Key table, as NVIDIA HCAs expose their
//! SR-IOV virtual functions to the SM through the virtualization attributes
//! (`mad::VirtualizationInfo` and friends; the SMA side is `vport_sma`).
//!
//! The model:
//!
//! * [`SimFabric::enable_virtualization`] makes a CA port virtualization-capable: its
//!   PortInfo CapabilityMask2 gets IsVirtualizationSupported (0x0004, and CapabilityMask
//!   IsCapabilityMask2Supported; trap 144 tells the SM once the port has a LID and a
//!   MasterSMLID), and it gets vports 1..=N ([`VirtSpec`]). Vport 0 is the
//!   PF itself: its VPortInfo, VPortGUIDInfo and VPortP_KeyTable are the port's PortInfo
//!   view, GUIDInfo and P_KeyTable (Sets of VPortInfo 0 are refused: PortInfo manages it).
//! * Power-up: VirtualizationEnable is 0 and every vport is Down. Once the SM sets
//!   VirtualizationInfo.VirtualizationEnable, a vport the host enabled
//!   ([`SimFabric::set_vport_enabled`], all are at creation) goes Down -> Init while the PF
//!   port's link is up (PortState Init, Armed or Active); the PF going Down, the host
//!   disabling it or the SM clearing VirtualizationEnable takes it Down. Init -> Armed ->
//!   Active happen only by the SM's Set of VPortInfo, with PortInfo's rules: Armed only
//!   from Init, Active only from Armed and only while the PF port is Active, Init never;
//!   an illegal Set answers 0x1C and changes nothing. A Set of Down takes the vport Down;
//!   it returns to Init after `SimConfig::retrain_ns`.
//! * VirtualizationInfo.VPortStateChange is set when a vport changes state other than by
//!   the SM's own Set (as SwitchInfo.PortStateChange here); the SM clears it by writing 1.
//!   No trap is sent for it.
//! * LIDs: a vport with LIDRequired gets its own LID from the SM (VPortInfo.VPortLID); the
//!   PF's HCA then owns that LID too, so LFTs route it like any LID and SMPs to it reach the
//!   PF's SMA. A vport without LIDRequired uses the LID of vport LIDByVPortIndex (0 = the
//!   PF's), settable by the SM to 0 or a vport that has its own LID; packets reach it by
//!   that LID plus a GRH whose DGID names its GUID.
//! * Data ([`SimFabric::deliver_vport`]): the sending vport must be Active and hold the key
//!   in its own table; the receiving vport (by DLID, or by DGID for a shared LID) must be
//!   Active and match the key in its own table (a refusal counts in its
//!   VPortInfo.P_KeyViolations). The physical path is checked as for any packet. A plain
//!   [`SimFabric::deliver`] to a vport's own LID is received, and checked, by that vport.
//! * A node's power cycle forgets VirtualizationEnable, vport LIDs, tables and counters.
//!
//! Pure like the rest of the core: no IO, no clock.

use crate::VTime;
use crate::deliver::{Delivery, DropReason, Ends};
use crate::error::SimError;
use crate::sim::{EvKind, SimFabric};
use crate::state::{NONE, keys_contain, keys_match};
use fabric::{Guid, Lid, NodeType, PKey, PortState};
use mad::{NodeDescription, PortInfo, VirtualizationInfo};
use std::collections::HashMap;

/// One vport a [`VirtSpec`] creates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VPortSpec {
    /// The vport's port GUID (VPortInfo.PortGUID, entry 0 of its VPortGUIDInfo).
    pub guid: Guid,
    /// VPortInfo.LIDRequired: the SM must give it a LID of its own.
    pub lid_required: bool,
    /// VNodeInfo.VNodeGUID of the vport's virtual node.
    pub vnode_guid: Guid,
    /// VNodeDescription text.
    pub description: String,
}

impl VPortSpec {
    /// A vport with GUID `guid`; its vnode GUID is `guid` with the top byte 0x0B and its
    /// description `vport <guid>`.
    pub fn new(guid: Guid, lid_required: bool) -> VPortSpec {
        VPortSpec {
            guid,
            lid_required,
            vnode_guid: Guid(0x0B00_0000_0000_0000 | (guid.0 & 0x00FF_FFFF_FFFF_FFFF)),
            description: format!("vport {guid}"),
        }
    }
}

/// What [`SimFabric::enable_virtualization`] gives a PF port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VirtSpec {
    /// VirtualizationInfo.VPortCap: the highest vport index the port supports (at least
    /// the number of vports).
    pub vport_cap: u16,
    /// Vports 1, 2, ... in order.
    pub vports: Vec<VPortSpec>,
}

impl VirtSpec {
    /// `n` vports with the deterministic GUIDs of [`vport_guid`], VPortCap = `n`.
    pub fn uniform(pf: Guid, n: u16, lid_required: bool) -> VirtSpec {
        VirtSpec {
            vport_cap: n,
            vports: (1..=n)
                .map(|i| VPortSpec::new(vport_guid(pf, i), lid_required))
                .collect(),
        }
    }
}

/// The deterministic GUID of vport `index` of PF port `pf`: top byte 0x0A, then the low 48
/// bits of the PF GUID, then the index (low byte). Distinct for distinct (PF, index < 256)
/// as long as PF GUIDs differ in their low 48 bits.
pub fn vport_guid(pf: Guid, index: u16) -> Guid {
    Guid(0x0A00_0000_0000_0000 | ((pf.0 & 0xFFFF_FFFF_FFFF) << 8) | u64::from(index & 0xFF))
}

/// What the tests inspect of one vport ([`SimFabric::vport`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VPortView {
    /// The PF port GUID.
    pub pf: Guid,
    /// Vport index (1..).
    pub index: u16,
    /// Its GUID.
    pub guid: Guid,
    /// Enabled by the host.
    pub enabled: bool,
    /// LIDRequired.
    pub lid_required: bool,
    /// Current state.
    pub state: PortState,
    /// Its own LID (VPortLID; 0 when none).
    pub lid: Lid,
    /// The LID packets to it carry: its own, or that of vport LIDByVPortIndex (0: the PF's).
    pub effective_lid: Lid,
    /// LIDByVPortIndex.
    pub lid_by_vport_index: u16,
    /// Valid P_Keys of its table in index order (the power-up table: 0xFFFF).
    pub pkeys: Vec<PKey>,
    /// Alias GUIDs the SM wrote to VPortGUIDInfo entries 1..8 (non-zero ones).
    pub alias_guids: Vec<Guid>,
    /// VPortInfo.P_KeyViolations.
    pub p_key_violations: u16,
}

/// One vport's state.
pub(crate) struct VPort {
    pub guid: Guid,
    pub vnode_guid: Guid,
    pub desc: NodeDescription,
    pub lid_required: bool,
    pub enabled: bool,
    pub state: PortState,
    /// An SM's Set of Down holds the vport Down until then.
    pub hold_until: VTime,
    pub client_reregister: bool,
    pub lid: Lid,
    pub lid_by_vport_index: u16,
    /// P_Key table; empty means the power-up table (0xFFFF at index 0).
    pub pkeys: Vec<PKey>,
    /// VPortGUIDInfo entries (entry 0 unused: the vport GUID).
    pub guids: [Guid; 8],
    pub p_key_violations: u16,
    pub q_key_violations: u16,
}

/// A virtualization-capable port.
pub(crate) struct VirtPort {
    pub vport_cap: u16,
    pub enable: bool,
    pub vclient_reregister: bool,
    pub state_change: bool,
    /// Vport index i at position i - 1.
    pub vports: Vec<VPort>,
}

impl VirtPort {
    /// The vport with index `i` (1..).
    pub fn get(&self, i: u16) -> Option<&VPort> {
        self.vports.get(usize::from(i).checked_sub(1)?)
    }

    /// VPortIndexTop: the highest index of an enabled vport (0 when none).
    pub fn index_top(&self) -> u16 {
        self.vports
            .iter()
            .rposition(|v| v.enabled)
            .map_or(0, |p| p as u16 + 1)
    }
}

/// Every virtualization-capable port, by port index, and the lookups the data path needs.
#[derive(Default)]
pub(crate) struct VirtState {
    pub ports: HashMap<u32, VirtPort>,
    /// Vport GUID -> (PF port index, vport index).
    pub by_guid: HashMap<Guid, (u32, u16)>,
    /// Own vport LID -> (PF port index, vport index).
    pub lids: HashMap<Lid, (u32, u16)>,
}

impl VirtState {
    /// The vport (PF port index, index) owning `lid` as its own LID.
    #[inline]
    pub fn lid_owner(&self, lid: Lid) -> Option<(u32, u16)> {
        if self.lids.is_empty() {
            return None;
        }
        self.lids.get(&lid).copied()
    }

    /// Vport `i` of port `port`.
    pub fn vport(&self, port: u32, i: u16) -> Option<&VPort> {
        self.ports.get(&port)?.get(i)
    }

    /// Vport `i` of port `port`, mutable.
    pub fn vport_mut(&mut self, port: u32, i: u16) -> Option<&mut VPort> {
        let vp = self.ports.get_mut(&port)?;
        vp.vports.get_mut(usize::from(i).checked_sub(1)?)
    }

    /// Sets the own LID of vport `i` of `port`, keeping the LID lookup (the last Set of a
    /// LID wins it).
    pub fn set_lid(&mut self, port: u32, i: u16, lid: Lid) {
        let Some(v) = self.vport_mut(port, i) else {
            return;
        };
        let old = std::mem::replace(&mut v.lid, lid);
        if old != Lid(0) && self.lids.get(&old) == Some(&(port, i)) {
            self.lids.remove(&old);
        }
        if lid != Lid(0) {
            self.lids.insert(lid, (port, i));
        }
    }

    /// Power-up state of a port's vports: virtualization off, no LIDs, tables, counters.
    pub fn power_cycle(&mut self, port: u32) {
        let Some(vp) = self.ports.get_mut(&port) else {
            return;
        };
        vp.enable = false;
        vp.vclient_reregister = false;
        vp.state_change = false;
        let n = vp.vports.len() as u16;
        for v in &mut vp.vports {
            v.state = PortState::Down;
            v.hold_until = 0;
            v.client_reregister = false;
            v.lid_by_vport_index = 0;
            v.pkeys = Vec::new();
            v.guids = [Guid(0); 8];
            v.p_key_violations = 0;
            v.q_key_violations = 0;
        }
        for i in 1..=n {
            self.set_lid(port, i, Lid(0));
        }
    }
}

impl SimFabric {
    /// Makes CA port `pf` virtualization-capable with the vports of `spec` (see the module
    /// documentation). Refused for a switch port, a port that already has vports, a
    /// VPortCap below the vport count, and a vport GUID already in use.
    pub fn enable_virtualization(&mut self, pf: Guid, spec: VirtSpec) -> Result<(), SimError> {
        let &port = self
            .st
            .by_port_guid
            .get(&pf)
            .ok_or(SimError::NoSuchPort(pf))?;
        let node = self.st.ports[port as usize].node;
        if self.st.nodes[node as usize].kind != NodeType::Ca {
            return Err(SimError::NotAnEndPort(pf));
        }
        let refuse = |why: String| Err(SimError::Virtualization(pf, why));
        if self.st.virt.ports.contains_key(&port) {
            return refuse("it already has vports".into());
        }
        if spec.vports.len() > usize::from(spec.vport_cap) {
            return refuse(format!(
                "{} vports exceed VPortCap {}",
                spec.vports.len(),
                spec.vport_cap
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for v in &spec.vports {
            if v.guid.0 == 0
                || !seen.insert(v.guid)
                || self.st.by_port_guid.contains_key(&v.guid)
                || self.st.virt.by_guid.contains_key(&v.guid)
            {
                return refuse(format!("vport GUID {} is zero or in use", v.guid));
            }
        }
        for (i, v) in spec.vports.iter().enumerate() {
            self.st.virt.by_guid.insert(v.guid, (port, i as u16 + 1));
        }
        let vports = spec
            .vports
            .iter()
            .map(|v| VPort {
                guid: v.guid,
                vnode_guid: v.vnode_guid,
                desc: NodeDescription::from_text(&v.description),
                lid_required: v.lid_required,
                enabled: true,
                state: PortState::Down,
                hold_until: 0,
                client_reregister: false,
                lid: Lid(0),
                lid_by_vport_index: 0,
                pkeys: Vec::new(),
                guids: [Guid(0); 8],
                p_key_violations: 0,
                q_key_violations: 0,
            })
            .collect();
        self.st.virt.ports.insert(
            port,
            VirtPort {
                vport_cap: spec.vport_cap,
                enable: false,
                vclient_reregister: false,
                state_change: false,
                vports,
            },
        );
        let info = &self.st.cold[port as usize].info;
        let mask = info.capability_mask | PortInfo::CAP_IS_CAPABILITY_MASK2_SUPPORTED;
        let mask2 = info.capability_mask2 | PortInfo::CAP2_IS_VIRTUALIZATION_SUPPORTED;
        let t = self.now;
        self.change_capabilities(port, mask, mask2, t);
        Ok(())
    }

    /// The host enables or disables a vport (a VF bound to or taken from a VM): disabled,
    /// it goes Down and leaves VPortIndexTop.
    pub fn set_vport_enabled(&mut self, vport: Guid, enabled: bool) -> Result<(), SimError> {
        let &(port, i) = self
            .st
            .virt
            .by_guid
            .get(&vport)
            .ok_or(SimError::NoSuchVPort(vport))?;
        if let Some(v) = self.st.virt.vport_mut(port, i) {
            v.enabled = enabled;
        }
        let t = self.now;
        self.vports_follow(port, t);
        Ok(())
    }

    /// Brings the vports of `port` to the state the PF and the enables ask for: Down when
    /// virtualization is off, the vport disabled or the PF's link down; Down -> Init when
    /// all allow it (and no SM Set of Down holds it). Sets VPortStateChange on a change.
    pub(crate) fn vports_follow(&mut self, port: u32, t: VTime) {
        let pf_up = self
            .st
            .ports
            .get(port as usize)
            .is_some_and(|p| p.state != PortState::Down);
        let present = self.st.nodes[self.st.ports[port as usize].node as usize].present;
        let Some(vp) = self.st.virt.ports.get_mut(&port) else {
            return;
        };
        let allow = vp.enable && pf_up && present;
        let mut changed = false;
        for v in &mut vp.vports {
            let next = if !(allow && v.enabled) {
                PortState::Down
            } else if v.state == PortState::Down && v.hold_until <= t {
                PortState::Init
            } else {
                v.state
            };
            if next != v.state {
                v.state = next;
                changed = true;
            }
        }
        vp.state_change |= changed;
    }

    /// The SM set vport `i` of `port` Down: it stays Down until `retrain_ns` from now.
    pub(crate) fn vport_down_by_sm(&mut self, port: u32, i: u16, t: VTime) {
        let until = t + self.cfg.retrain_ns;
        if let Some(v) = self.st.virt.vport_mut(port, i) {
            v.state = PortState::Down;
            v.hold_until = until;
        }
        self.push(until, EvKind::VPortTrain { port });
    }

    /// The LID packets to vport `i` of `port` carry (0 when it has none yet).
    pub(crate) fn vport_effective_lid(&self, port: u32, i: u16) -> Lid {
        let Some(v) = self.st.virt.vport(port, i) else {
            return Lid(0);
        };
        if v.lid_required {
            return v.lid;
        }
        match v.lid_by_vport_index {
            0 => self.st.cold[port as usize].info.lid,
            j => self.st.virt.vport(port, j).map_or(Lid(0), |o| o.lid),
        }
    }

    /// One vport by GUID, for tests and the control protocol.
    pub fn vport(&self, guid: Guid) -> Option<VPortView> {
        let &(port, i) = self.st.virt.by_guid.get(&guid)?;
        let v = self.st.virt.vport(port, i)?;
        Some(VPortView {
            pf: self.st.ports[port as usize].guid,
            index: i,
            guid,
            enabled: v.enabled,
            lid_required: v.lid_required,
            state: v.state,
            lid: v.lid,
            effective_lid: self.vport_effective_lid(port, i),
            lid_by_vport_index: v.lid_by_vport_index,
            pkeys: if v.pkeys.is_empty() {
                vec![PKey::DEFAULT_FULL]
            } else {
                v.pkeys
                    .iter()
                    .copied()
                    .filter(|k| !k.is_invalid())
                    .collect()
            },
            alias_guids: v.guids[1..].iter().copied().filter(|g| g.0 != 0).collect(),
            p_key_violations: v.p_key_violations,
        })
    }

    /// Every vport of PF port `pf`, in index order (empty for a port without vports).
    pub fn vports_of(&self, pf: Guid) -> Vec<VPortView> {
        let Some(vp) = self
            .st
            .by_port_guid
            .get(&pf)
            .and_then(|p| self.st.virt.ports.get(p))
        else {
            return Vec::new();
        };
        vp.vports
            .iter()
            .filter_map(|v| self.vport(v.guid))
            .collect()
    }

    /// The VirtualizationInfo port `pf` reports (None without vports).
    pub fn virtualization_info(&self, pf: Guid) -> Option<VirtualizationInfo> {
        let port = *self.st.by_port_guid.get(&pf)?;
        self.virt_info(port)
    }

    pub(crate) fn virt_info(&self, port: u32) -> Option<VirtualizationInfo> {
        let vp = self.st.virt.ports.get(&port)?;
        Some(VirtualizationInfo {
            vport_cap: vp.vport_cap,
            vport_index_top: vp.index_top(),
            virtualization_enable: vp.enable,
            vclient_reregister: vp.vclient_reregister,
            vport_state_change: vp.state_change,
            virtualization_revision: 1,
            capability_mask: 0,
        })
    }

    /// Would a data packet from function `src` to function `dst` with P_Key `pkey` arrive?
    /// A function is a vport (by its GUID) or a CA port (by its port GUID, the PF itself).
    /// The packet carries the destination's LID (a vport's own, or the one it shares) and a
    /// GRH naming its GUID; see the module documentation for the checks.
    pub fn deliver_vport(&mut self, src: Guid, dst: Guid, pkey: PKey) -> Delivery {
        let Some((src_port, src_vport)) = self.function(src) else {
            return Delivery::Dropped(DropReason::NoSuchVPort { guid: src });
        };
        let Some((dst_port, dst_vport)) = self.function(dst) else {
            return Delivery::Dropped(DropReason::NoSuchVPort { guid: dst });
        };
        let dlid = match dst_vport {
            Some(i) => self.vport_effective_lid(dst_port, i),
            None => self.st.cold[dst_port as usize].info.lid,
        };
        if dlid == Lid(0) {
            return Delivery::Dropped(DropReason::NoLid { guid: dst });
        }
        let ends = Ends {
            src_vport,
            dgid: Some(dst),
        };
        match self.walk_from_ends(src_port, dlid, Some(pkey), Some(0), ends) {
            Ok((_, hops)) => Delivery::Delivered {
                dst_port: dst,
                hops,
            },
            Err(r) => Delivery::Dropped(r),
        }
    }

    /// (port index, vport index or None for the port itself) of a vport or CA port GUID.
    fn function(&self, g: Guid) -> Option<(u32, Option<u16>)> {
        if let Some(&(p, i)) = self.st.virt.by_guid.get(&g) {
            return Some((p, Some(i)));
        }
        let &p = self.st.by_port_guid.get(&g)?;
        let node = self.st.ports[p as usize].node;
        (self.st.nodes[node as usize].sw == NONE).then_some((p, None))
    }

    /// The receiving function of a packet for `dst` (with DGID `dgid`) at CA port `ing`:
    /// the vport named by the DGID and using that LID, else the vport owning `dst` as its
    /// own LID, else the port itself; Err when the DGID names no function of the port.
    pub(crate) fn receiving_function(
        &self,
        ing: u32,
        dst: Lid,
        dgid: Option<Guid>,
    ) -> Result<Option<u16>, DropReason> {
        if let Some(g) = dgid {
            if g == self.st.ports[ing as usize].guid {
                return Ok(None);
            }
            return match self.st.virt.by_guid.get(&g) {
                Some(&(p, i)) if p == ing && self.vport_effective_lid(p, i) == dst => Ok(Some(i)),
                _ => Err(DropReason::NoSuchVPort { guid: g }),
            };
        }
        Ok(match self.st.virt.lid_owner(dst) {
            Some((p, i)) if p == ing => Some(i),
            _ => None,
        })
    }

    /// The checks of vport `i` of `port` receiving a packet with `key`: ACTIVE, and a table
    /// entry matching the key.
    pub(crate) fn vport_receive(
        &self,
        port: u32,
        i: u16,
        key: Option<PKey>,
    ) -> Result<(), DropReason> {
        self.vport_checks(port, i, key, false)
    }

    /// The checks of vport `i` of `port` sending a packet with `key`: ACTIVE, and the key in
    /// its table.
    pub(crate) fn vport_send(
        &self,
        port: u32,
        i: u16,
        key: Option<PKey>,
    ) -> Result<(), DropReason> {
        self.vport_checks(port, i, key, true)
    }

    /// One vport's checks of a packet, as the sender (`send`) or the receiver.
    fn vport_checks(
        &self,
        port: u32,
        i: u16,
        key: Option<PKey>,
        send: bool,
    ) -> Result<(), DropReason> {
        let Some(v) = self.st.virt.vport(port, i) else {
            return Err(DropReason::NoSuchVPort { guid: Guid(0) });
        };
        if v.state != PortState::Active {
            return Err(DropReason::VPortNotActive { vport: v.guid });
        }
        match key {
            Some(k) if send && !keys_contain(&v.pkeys, k) => Err(DropReason::SourcePKey),
            Some(k) if !send && !keys_match(&v.pkeys, k) => {
                Err(DropReason::VPortPKey { vport: v.guid })
            }
            _ => Ok(()),
        }
    }
}
