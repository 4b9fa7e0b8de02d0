//! The SMA side of virtualization-capable CA ports ([`crate::vport`]): Get/Set of
//! VirtualizationInfo, VPortInfo, VPortState, VNodeInfo, VNodeDescription, VPortGUIDInfo and
//! VPortP_KeyTable, after the same M_Key check as every attribute. A port without vports
//! (and any switch) answers 0x0C for them; a bad modifier or an illegal value answers 0x1C
//! and changes nothing. Read-only attributes (VPortState, VNodeInfo, VNodeDescription)
//! answer 0x0C to Set. Vport 0 is the PF: its VPortGUIDInfo and VPortP_KeyTable are the
//! port's GUIDInfo and P_KeyTable, handled by the same code. In a VPortInfo Set the SM
//! writes VPortState, ClientReregister, the violation counters, VPortLID (LIDRequired vports
//! only; unicast or 0) and LIDByVPortIndex (other vports only: 0 or a LIDRequired vport);
//! LIDRequired, GUIDCap, CapabilityMask, PortGUID and PortProfile are read only.

use crate::VTime;
use crate::sim::SimFabric;
use crate::state::{key_at, write_pkey_block};
use fabric::{Lid, PortState};
use mad::attr::split_vport_block_modifier;
use mad::{
    AttributeId, MadStatus, PKeyTable, Smp, SmpAttribute, VNodeDescription, VNodeInfo,
    VPortGuidInfo, VPortInfo, VPortPKeyTable, VPortState, VirtualizationInfo,
};

const UNSUP: u16 = MadStatus::METHOD_ATTR_UNSUPPORTED.0;
const INVALID: u16 = MadStatus::INVALID_FIELD.0;

/// True for the attribute ids this module answers.
pub(crate) fn is_virt_attr(id: AttributeId) -> bool {
    (AttributeId::VIRTUALIZATION_INFO.0..=AttributeId::VPORT_P_KEY_TABLE.0).contains(&id.0)
}

impl SimFabric {
    /// The vport index a VPortInfo / VNodeInfo / VNodeDescription modifier names, when the
    /// port supports it (0..=VPortCap).
    fn vport_index(&self, port: u32, m: u32) -> Result<u16, u16> {
        let vp = self.st.virt.ports.get(&port).ok_or(UNSUP)?;
        let i = VPortInfo::split_modifier(m);
        if m >> 16 != 0 || i > vp.vport_cap {
            return Err(INVALID);
        }
        Ok(i)
    }

    /// (vport index, block) of a VPortGUIDInfo / VPortP_KeyTable modifier, checked against
    /// VPortCap and the table's size.
    fn vport_block(
        &self,
        port: u32,
        m: u32,
        entries: usize,
        cap: usize,
    ) -> Result<(u16, usize), u16> {
        let vp = self.st.virt.ports.get(&port).ok_or(UNSUP)?;
        let (i, block) = split_vport_block_modifier(m);
        if i > vp.vport_cap || usize::from(block) * entries >= cap {
            return Err(INVALID);
        }
        Ok((i, usize::from(block)))
    }

    /// Vport 0's VPortGUIDInfo and VPortP_KeyTable are the PF's GUIDInfo and P_KeyTable:
    /// `req` re-addressed to that attribute, when it names vport 0 with a valid block.
    fn pf_table_request(&self, port: u32, req: &Smp) -> Option<Smp> {
        let cap = usize::from(self.cfg.ca_partition_cap);
        let (attr, block) = match req.attr_id {
            AttributeId::VPORT_GUID_INFO => (
                AttributeId::GUID_INFO,
                self.vport_block(port, req.attr_mod, 8, 8).ok()?,
            ),
            AttributeId::VPORT_P_KEY_TABLE => (
                AttributeId::P_KEY_TABLE,
                self.vport_block(port, req.attr_mod, 32, cap).ok()?,
            ),
            _ => return None,
        };
        let (0, block) = block else {
            return None;
        };
        let mut r = req.clone();
        r.attr_id = attr;
        r.attr_mod = block as u32;
        Some(r)
    }

    /// Get of a virtualization attribute arriving at CA port `port`.
    pub(crate) fn vport_sma_get(&mut self, port: u32, req: &Smp, slot: u32, hide_key: bool) -> u16 {
        if self.st.nodes[self.st.ports[port as usize].node as usize].sw != crate::state::NONE {
            return UNSUP;
        }
        if let Some(r) = self.pf_table_request(port, req) {
            return self.sma_get(port, &r, slot, hide_key);
        }
        match self.vport_get_data(port, req) {
            Ok(data) => {
                self.slots[slot as usize].smp.data = data;
                0
            }
            Err(st) => st,
        }
    }

    /// The data a Get of a virtualization attribute answers (vport 0's tables excepted).
    fn vport_get_data(&self, port: u32, req: &Smp) -> Result<[u8; 64], u16> {
        let m = req.attr_mod;
        let mut data = [0u8; 64];
        match req.attr_id {
            AttributeId::VIRTUALIZATION_INFO => {
                let vi = self.virt_info(port).ok_or(UNSUP)?;
                if m != 0 {
                    return Err(INVALID);
                }
                vi.encode(&mut data);
            }
            AttributeId::VPORT_INFO => {
                let i = self.vport_index(port, m)?;
                self.vport_info(port, i).encode(&mut data);
            }
            AttributeId::VNODE_INFO => {
                let i = self.vport_index(port, m)?;
                self.vnode_info(port, i).encode(&mut data);
            }
            AttributeId::VNODE_DESCRIPTION => {
                let i = self.vport_index(port, m)?;
                let desc = match self.st.virt.vport(port, i) {
                    _ if i == 0 => self.st.descs[self.st.ports[port as usize].node as usize],
                    Some(v) => v.desc,
                    None => mad::NodeDescription::default(),
                };
                VNodeDescription { desc }.encode(&mut data);
            }
            AttributeId::VPORT_STATE => {
                let vp = self.st.virt.ports.get(&port).ok_or(UNSUP)?;
                let block = VPortState::split_modifier(m);
                if m >> 16 != 0 || u32::from(block) * 128 > u32::from(vp.vport_cap) {
                    return Err(INVALID);
                }
                let mut s = VPortState::default();
                for (k, e) in s.states.iter_mut().enumerate() {
                    let i = u32::from(block) * 128 + k as u32;
                    if i > u32::from(vp.vport_cap) {
                        break;
                    }
                    *e = self.vport_state_of(port, i as u16).to_wire();
                }
                s.encode(&mut data);
            }
            AttributeId::VPORT_GUID_INFO => {
                let (i, _) = self.vport_block(port, m, 8, 8)?;
                let mut g = VPortGuidInfo::default();
                if let Some(v) = self.st.virt.vport(port, i) {
                    g.guids = v.guids;
                    g.guids[0] = v.guid;
                }
                g.encode(&mut data);
            }
            AttributeId::VPORT_P_KEY_TABLE => {
                let cap = usize::from(self.cfg.ca_partition_cap);
                let (i, block) = self.vport_block(port, m, 32, cap)?;
                let mut t = VPortPKeyTable::default();
                if let Some(v) = self.st.virt.vport(port, i) {
                    for (k, key) in t.keys.iter_mut().enumerate() {
                        *key = key_at(&v.pkeys, block * 32 + k);
                    }
                }
                t.encode(&mut data);
            }
            _ => return Err(UNSUP),
        }
        Ok(data)
    }

    /// The state of vport `i` of `port` (0: the PF port's own state; a vport slot the host
    /// never created: Down).
    fn vport_state_of(&self, port: u32, i: u16) -> PortState {
        if i == 0 {
            return self.st.ports[port as usize].state;
        }
        self.st
            .virt
            .vport(port, i)
            .map_or(PortState::Down, |v| v.state)
    }

    /// VPortInfo of vport `i` (0: the PF's view of itself).
    fn vport_info(&self, port: u32, i: u16) -> VPortInfo {
        if i == 0 {
            let pi = &self.st.cold[port as usize].info;
            return VPortInfo {
                vport_state: self.st.ports[port as usize].state.to_wire(),
                client_reregister: pi.client_reregister,
                lid_required: true,
                guid_cap: pi.guid_cap,
                capability_mask: VPortInfo::CAP_IS_CM_SUPPORTED,
                p_key_violations: pi.p_key_violations,
                q_key_violations: pi.q_key_violations,
                vport_lid: pi.lid,
                lid_by_vport_index: 0,
                port_guid: self.st.ports[port as usize].guid,
                port_profile: 0,
            };
        }
        let Some(v) = self.st.virt.vport(port, i) else {
            return VPortInfo {
                vport_state: PortState::Down.to_wire(),
                ..VPortInfo::default()
            };
        };
        VPortInfo {
            vport_state: v.state.to_wire(),
            client_reregister: v.client_reregister,
            lid_required: v.lid_required,
            guid_cap: 8,
            capability_mask: VPortInfo::CAP_IS_CM_SUPPORTED,
            p_key_violations: v.p_key_violations,
            q_key_violations: v.q_key_violations,
            vport_lid: v.lid,
            lid_by_vport_index: v.lid_by_vport_index,
            port_guid: v.guid,
            port_profile: 0,
        }
    }

    /// VNodeInfo of the vnode of vport `i` (0: the physical node).
    fn vnode_info(&self, port: u32, i: u16) -> VNodeInfo {
        let p = &self.st.ports[port as usize];
        let cap = self.cfg.ca_partition_cap;
        if i == 0 {
            let n = &self.st.nodes[p.node as usize];
            return VNodeInfo {
                partition_cap: cap,
                local_port_num: p.num,
                num_ports: n.num_ports,
                vnode_guid: n.node_guid,
            };
        }
        match self.st.virt.vport(port, i) {
            Some(v) => VNodeInfo {
                partition_cap: cap,
                local_port_num: 1,
                num_ports: 1,
                vnode_guid: v.vnode_guid,
            },
            None => VNodeInfo::default(),
        }
    }

    /// Set of a virtualization attribute arriving at CA port `port`; on success the answer
    /// is the attribute as it now is, on failure as it was.
    pub(crate) fn vport_sma_set(&mut self, port: u32, req: &Smp, slot: u32, t: VTime) -> u16 {
        if self.st.nodes[self.st.ports[port as usize].node as usize].sw != crate::state::NONE {
            return UNSUP;
        }
        if let Some(r) = self.pf_table_request(port, req) {
            return self.sma_set(port, &r, slot, t);
        }
        let m = req.attr_mod;
        let st = match req.attr_id {
            AttributeId::VIRTUALIZATION_INFO => self.set_virtualization_info(port, req, t),
            AttributeId::VPORT_INFO => match self.vport_index(port, m) {
                Ok(i) => self.set_vport_info(port, i, &VPortInfo::decode(&req.data), t),
                Err(st) => st,
            },
            AttributeId::VPORT_GUID_INFO => match self.vport_block(port, m, 8, 8) {
                Ok((i, _)) => match self.st.virt.vport_mut(port, i) {
                    Some(v) => {
                        let g = VPortGuidInfo::decode(&req.data);
                        v.guids[1..].copy_from_slice(&g.guids[1..]);
                        0
                    }
                    None => INVALID,
                },
                Err(st) => st,
            },
            AttributeId::VPORT_P_KEY_TABLE => {
                let cap = self.cfg.ca_partition_cap;
                match self.vport_block(port, m, 32, usize::from(cap)) {
                    Ok((i, block)) => match self.st.virt.vport_mut(port, i) {
                        Some(v) => {
                            let keys = PKeyTable::decode(&req.data).keys;
                            write_pkey_block(&mut v.pkeys, cap, block, &keys);
                            0
                        }
                        None => INVALID,
                    },
                    Err(st) => st,
                }
            }
            AttributeId::VPORT_STATE | AttributeId::VNODE_INFO | AttributeId::VNODE_DESCRIPTION => {
                UNSUP
            }
            _ => UNSUP,
        };
        if st == UNSUP {
            return st;
        }
        let answer = self.vport_sma_get(port, req, slot, false);
        if st != 0 { st } else { answer }
    }

    fn set_virtualization_info(&mut self, port: u32, req: &Smp, t: VTime) -> u16 {
        if !self.st.virt.ports.contains_key(&port) {
            return UNSUP;
        }
        if req.attr_mod != 0 {
            return INVALID;
        }
        let new = VirtualizationInfo::decode(&req.data);
        if let Some(vp) = self.st.virt.ports.get_mut(&port) {
            vp.enable = new.virtualization_enable;
            vp.vclient_reregister = new.vclient_reregister;
            if new.vport_state_change {
                // Writing 1 clears it, as SwitchInfo.PortStateChange.
                vp.state_change = false;
            }
        }
        self.vports_follow(port, t);
        0
    }

    /// Applies a VPortInfo Set to vport `i` of `port`: validated whole first (an invalid
    /// Set changes nothing), then applied.
    fn set_vport_info(&mut self, port: u32, i: u16, new: &VPortInfo, t: VTime) -> u16 {
        // Vport 0 is the PF: PortInfo manages it.
        let Some(v) = self.st.virt.vport(port, i).filter(|_| i != 0) else {
            return INVALID;
        };
        let pf_active = self.st.ports[port as usize].state == PortState::Active;
        let cur = v.state;
        let legal = match PortState::from_wire(new.vport_state) {
            None | Some(PortState::Init) => false,
            Some(PortState::NoChange | PortState::Down) => true,
            Some(PortState::Armed) => matches!(cur, PortState::Init | PortState::Armed),
            Some(PortState::Active) => {
                matches!(cur, PortState::Armed | PortState::Active) && pf_active
            }
        };
        if !legal {
            return INVALID;
        }
        if v.lid_required && !(new.vport_lid == Lid(0) || new.vport_lid.is_unicast()) {
            return INVALID;
        }
        let lid_from = new.lid_by_vport_index;
        if !v.lid_required
            && lid_from != 0
            && !self
                .st
                .virt
                .vport(port, lid_from)
                .is_some_and(|o| o.lid_required)
        {
            return INVALID;
        }
        let lid_required = v.lid_required;
        if lid_required {
            self.st.virt.set_lid(port, i, new.vport_lid);
        }
        if let Some(v) = self.st.virt.vport_mut(port, i) {
            if !lid_required {
                v.lid_by_vport_index = lid_from;
            }
            v.client_reregister = new.client_reregister;
            v.p_key_violations = new.p_key_violations;
            v.q_key_violations = new.q_key_violations;
            match PortState::from_wire(new.vport_state) {
                Some(s @ (PortState::Armed | PortState::Active)) => v.state = s,
                Some(PortState::Down) if cur != PortState::Down => {
                    self.vport_down_by_sm(port, i, t);
                }
                _ => {}
            }
        }
        0
    }
}
