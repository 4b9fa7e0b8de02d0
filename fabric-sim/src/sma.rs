//! The Subnet Management Agent of every node: after the M_Key check ([`crate::mkey`]), Get/Set of NodeInfo,
//! NodeDescription, PortInfo, SwitchInfo, LinearForwardingTable, MulticastForwardingTable,
//! P_KeyTable, GUIDInfo, SLtoVLMappingTable and VLArbitrationTable (and, on
//! virtualization-capable CA ports, the virtualization attributes: `vport_sma`), with the IBA status
//! codes: 0x0C (method/attribute combination unsupported) and 0x1C (invalid attribute
//! field or modifier), 0x08 (method unsupported), 0x04 (bad version).

use crate::VTime;
use crate::accounting::SetRecord;
use crate::mkey::MKeyCheck;
use crate::sim::{EvKind, SimFabric};
use crate::state::NONE;
use fabric::{Guid, NodeId, PhysState, PortState};
use mad::{
    AttributeId, GuidInfo, LinearForwardingTable, MadStatus, Method, MulticastForwardingTable,
    NodeInfo, PKeyTable, PortInfo, SlToVlTable, Smp, SmpAttribute, SwitchInfo, VlArbitrationTable,
};

/// M_KeyLeasePeriod an SMA that ignores writes to it reports (see
/// `SimConfig::ibsim_port_info_sets`).
const IGNORED_LEASE_PERIOD: u16 = 16;

const UNSUP: u16 = MadStatus::METHOD_ATTR_UNSUPPORTED.0;
const INVALID: u16 = MadStatus::INVALID_FIELD.0;

impl SimFabric {
    /// An SMA receives a request on `port` (for a switch: the arrival port).
    pub(crate) fn sma_request(&mut self, port: u32, slot: u32, t: VTime) {
        let node = self.st.ports[port as usize].node;
        let (method, attr, base_v, class_v, origin) = {
            let pk = &self.slots[slot as usize];
            (
                pk.smp.method,
                pk.smp.attr_id,
                pk.smp.base_version,
                pk.smp.class_version,
                pk.origin,
            )
        };
        self.acct.count_request(node, attr, method.0, origin);
        let check = if matches!(method, Method::GET | Method::SET | Method::TRAP_REPRESS) {
            self.m_key_check(port, slot, t)
        } else {
            MKeyCheck::Pass
        };
        if check == MKeyCheck::Fail {
            self.acct.counters.dropped_m_key += 1;
            self.drop_packet(port, slot, t);
            return;
        }
        if method == Method::TRAP_REPRESS {
            // Stops the repetition of that trap (when repetition is on); no response.
            let tid = self.slots[slot as usize].smp.tid;
            let mp = self.st.mgmt_port(port);
            self.repress_trap(mp, tid);
            self.release(slot);
            return;
        }
        // The response is the request turned around in its slot (as `Smp::make_response`
        // builds it), the request kept aside: one copy of the SMP instead of two.
        let req = self.slots[slot as usize].smp.clone();
        {
            let r = &mut self.slots[slot as usize].smp;
            r.method = req.method.response();
            r.status = 0;
            if r.is_directed() {
                r.direction = true;
            }
        }
        let status = if base_v != 1 || class_v != 1 {
            MadStatus::BAD_VERSION.0
        } else {
            match method {
                Method::GET => self.sma_get(port, &req, slot, check == MKeyCheck::PassHidden),
                Method::SET => {
                    let st = self.sma_set(port, &req, slot, t);
                    if st == 0 && self.cfg.log_sets {
                        let source = self.acct.origins.get(origin as usize).copied();
                        let n = &self.st.nodes[node as usize];
                        self.acct.set_log.push(SetRecord {
                            time: t,
                            source,
                            attr: attr.0,
                            attr_mod: req.attr_mod,
                            node: NodeId(node),
                            node_guid: n.node_guid,
                            in_port: self.st.ports[port as usize].num,
                        });
                    }
                    st
                }
                _ => MadStatus::METHOD_UNSUPPORTED.0,
            }
        };
        let pk = &mut self.slots[slot as usize];
        pk.smp.status = status;
        pk.hops = 0;
        if pk.lid_leg || !pk.smp.is_directed() {
            // LID-routed answer goes back to the LRH source.
            pk.dlid = pk.slid;
            pk.slid = self.st.source_lid(port);
            pk.lid_leg = true;
        }
        self.acct.counters.sma_responses += 1;
        self.push(t + self.cfg.sma_latency_ns, EvKind::Depart { port, slot });
    }

    /// PortInfo as the SMA reports it for port index `idx`, asked through port `in_num`.
    pub(crate) fn port_info_view(&self, idx: u32, in_num: u8, hide_key: bool) -> PortInfo {
        let p = &self.st.ports[idx as usize];
        let n = &self.st.nodes[p.node as usize];
        let mut pi = self.st.cold[idx as usize].info;
        if n.sw != NONE && p.num != 0 {
            let p0 = &self.st.cold[n.port_base as usize].info;
            pi.m_key = p0.m_key;
            pi.gid_prefix = p0.gid_prefix;
            pi.lid = p0.lid;
            pi.lmc = p0.lmc;
            pi.master_sm_lid = p0.master_sm_lid;
            pi.master_sm_sl = p0.master_sm_sl;
            pi.m_key_protect_bits = p0.m_key_protect_bits;
            pi.m_key_lease_period = p0.m_key_lease_period;
            pi.subnet_timeout = p0.subnet_timeout;
        }
        pi.local_port_num = in_num;
        pi.port_state = p.state.to_wire();
        pi.port_phys_state = p.phys.to_wire();
        if hide_key {
            pi.m_key = 0;
        }
        pi
    }

    /// Resolves the port a PortInfo / P_KeyTable / SLtoVL modifier names.
    fn target_port(&self, port: u32, num: u32) -> Option<u32> {
        let p = &self.st.ports[port as usize];
        let n = &self.st.nodes[p.node as usize];
        if n.sw != NONE {
            (num <= u32::from(n.num_ports)).then(|| n.port_base + num)
        } else if num == 0 {
            Some(port)
        } else {
            (num <= u32::from(n.num_ports)).then(|| n.port_base + num)
        }
    }

    pub(crate) fn sma_get(&mut self, port: u32, req: &Smp, slot: u32, hide_key: bool) -> u16 {
        let p = &self.st.ports[port as usize];
        let in_num = p.num;
        let node = p.node;
        let n = &self.st.nodes[node as usize];
        let is_switch = n.sw != NONE;
        let m = req.attr_mod;
        let mut data = [0u8; 64];
        match req.attr_id {
            AttributeId::NODE_INFO => {
                if m != 0 {
                    return INVALID;
                }
                self.node_info(port).encode(&mut data);
            }
            AttributeId::NODE_DESCRIPTION => {
                if m != 0 {
                    return INVALID;
                }
                self.st.descs[node as usize].encode(&mut data);
            }
            AttributeId::PORT_INFO => {
                let Some(target) = self.target_port(port, m) else {
                    return INVALID;
                };
                self.port_info_view(target, in_num, hide_key)
                    .encode(&mut data);
            }
            AttributeId::SWITCH_INFO => {
                if !is_switch {
                    return UNSUP;
                }
                if m != 0 {
                    return INVALID;
                }
                self.switch_info(n.sw).encode(&mut data);
            }
            AttributeId::LINEAR_FORWARDING_TABLE => {
                if !is_switch {
                    return UNSUP;
                }
                if u64::from(m) * 64 >= u64::from(self.cfg.linear_fdb_cap) {
                    return INVALID;
                }
                let lft = &self.st.switches[n.sw as usize].lft;
                let start = m as usize * 64;
                let mut t = LinearForwardingTable::default();
                if let Some(chunk) = lft.get(start..(start + 64).min(lft.len())) {
                    t.ports[..chunk.len()].copy_from_slice(chunk);
                }
                t.encode(&mut data);
            }
            AttributeId::MULTICAST_FORWARDING_TABLE => {
                if !is_switch {
                    return UNSUP;
                }
                let Some(key) = self.mft_key(n.num_ports, m) else {
                    return INVALID;
                };
                self.st.switches[n.sw as usize]
                    .mft
                    .get(&key)
                    .copied()
                    .unwrap_or_default()
                    .encode(&mut data);
            }
            AttributeId::P_KEY_TABLE => {
                let Some((target, block)) = self.pkey_target(port, m) else {
                    return INVALID;
                };
                let mut t = PKeyTable::default();
                for (i, k) in t.keys.iter_mut().enumerate() {
                    *k = self.st.pkey_at(target, block * 32 + i);
                }
                t.encode(&mut data);
            }
            AttributeId::GUID_INFO => {
                if is_switch {
                    return UNSUP;
                }
                if m != 0 {
                    return INVALID;
                }
                let mut g = GuidInfo::default();
                if let Some(extra) = &self.st.cold[port as usize].guids {
                    g.guids = **extra;
                }
                g.guids[0] = self.st.ports[port as usize].guid;
                g.encode(&mut data);
            }
            AttributeId::SL_TO_VL_TABLE => {
                let Some(key) = self.sl2vl_key(port, m) else {
                    return INVALID;
                };
                // A table the SM never wrote reads as the reset table ([`crate::vl`]).
                self.sl2vl
                    .get(&key)
                    .copied()
                    .unwrap_or_else(|| self.sl2vl_reset_table())
                    .encode(&mut data);
            }
            AttributeId::VL_ARBITRATION_TABLE => {
                let Some(key) = self.vlarb_key(port, m) else {
                    return INVALID;
                };
                self.vlarb
                    .get(&key)
                    .copied()
                    .unwrap_or_default()
                    .encode(&mut data);
            }
            id if crate::vport_sma::is_virt_attr(id) => {
                return self.vport_sma_get(port, req, slot, hide_key);
            }
            _ => return UNSUP,
        }
        self.slots[slot as usize].smp.data = data;
        0
    }

    fn node_info(&self, port: u32) -> NodeInfo {
        let p = &self.st.ports[port as usize];
        let n = &self.st.nodes[p.node as usize];
        let is_switch = n.sw != NONE;
        NodeInfo {
            base_version: 1,
            class_version: 1,
            node_type: n.kind.to_wire(),
            num_ports: n.num_ports,
            system_image_guid: n.sys_guid,
            node_guid: n.node_guid,
            port_guid: if is_switch {
                self.st.ports[n.port_base as usize].guid
            } else {
                p.guid
            },
            partition_cap: if is_switch {
                self.cfg.switch_partition_cap
            } else {
                self.cfg.ca_partition_cap
            },
            device_id: n.device_id,
            revision: 0,
            local_port_num: p.num,
            vendor_id: n.vendor_id,
        }
    }

    fn switch_info(&self, sw: u32) -> SwitchInfo {
        let s = &self.st.switches[sw as usize];
        SwitchInfo {
            linear_fdb_cap: self.cfg.linear_fdb_cap,
            random_fdb_cap: 0,
            multicast_fdb_cap: self.cfg.multicast_fdb_cap,
            linear_fdb_top: s.lft_top,
            default_port: s.default_port,
            default_multicast_primary_port: s.default_mcast_primary,
            default_multicast_not_primary_port: s.default_mcast_not_primary,
            life_time_value: s.life_time_value,
            port_state_change: s.port_state_change,
            optimized_sl_to_vl_mapping_programming: s.optimized_sl2vl,
            lids_per_port: 0,
            partition_enforcement_cap: self.cfg.switch_partition_cap,
            inbound_enforcement_cap: true,
            outbound_enforcement_cap: true,
            filter_raw_inbound_cap: true,
            filter_raw_outbound_cap: true,
            enhanced_port0: false,
            multicast_fdb_top: s.mft_top,
        }
    }

    fn mft_key(&self, num_ports: u8, m: u32) -> Option<u32> {
        let (pos, block) = MulticastForwardingTable::split_modifier(m);
        if m & !0xF000_01FF != 0 || u32::from(pos) > u32::from(num_ports) / 16 {
            return None;
        }
        if u32::from(block) * 32 >= u32::from(self.cfg.multicast_fdb_cap) {
            return None;
        }
        Some(m)
    }

    fn pkey_target(&self, port: u32, m: u32) -> Option<(u32, usize)> {
        let p = &self.st.ports[port as usize];
        let n = &self.st.nodes[p.node as usize];
        let (pnum, block) = PKeyTable::split_modifier(m);
        let (target, cap) = if n.sw != NONE {
            if pnum > n.num_ports {
                return None;
            }
            (n.port_base + u32::from(pnum), self.cfg.switch_partition_cap)
        } else {
            (port, self.cfg.ca_partition_cap)
        };
        if m >> 24 != 0 || usize::from(block) * 32 >= usize::from(cap) {
            return None;
        }
        Some((target, usize::from(block)))
    }

    fn sl2vl_key(&self, port: u32, m: u32) -> Option<(u32, u32)> {
        let p = &self.st.ports[port as usize];
        let n = &self.st.nodes[p.node as usize];
        if n.sw != NONE {
            let (inp, outp) = ((m >> 8) & 0xFF, m & 0xFF);
            if m >> 16 != 0 || inp > u32::from(n.num_ports) || outp > u32::from(n.num_ports) {
                return None;
            }
            Some((n.port_base, m))
        } else {
            Some((port, 0))
        }
    }

    fn vlarb_key(&self, port: u32, m: u32) -> Option<(u32, u32)> {
        let p = &self.st.ports[port as usize];
        let n = &self.st.nodes[p.node as usize];
        let block = m >> 16;
        if !(1..=4).contains(&block) {
            return None;
        }
        if n.sw != NONE {
            let pn = m & 0xFFFF;
            if pn == 0 || pn > u32::from(n.num_ports) {
                return None;
            }
            Some((n.port_base + pn, block))
        } else {
            Some((port, block))
        }
    }

    /// Applies a Set; on success the response data is the attribute as it now is.
    pub(crate) fn sma_set(&mut self, port: u32, req: &Smp, slot: u32, t: VTime) -> u16 {
        let p = &self.st.ports[port as usize];
        let node = p.node;
        let n = &self.st.nodes[node as usize];
        let (is_switch, sw, num_ports) = (n.sw != NONE, n.sw, n.num_ports);
        let m = req.attr_mod;
        match req.attr_id {
            AttributeId::NODE_INFO | AttributeId::NODE_DESCRIPTION => return UNSUP,
            AttributeId::PORT_INFO => {
                let Some(target) = self.target_port(port, m) else {
                    return INVALID;
                };
                let st = self.set_port_info(target, &PortInfo::decode(&req.data), t);
                if st != 0 {
                    // No change; answer with the current values.
                    let in_num = self.st.ports[port as usize].num;
                    self.port_info_view(target, in_num, false)
                        .encode(&mut self.slots[slot as usize].smp.data);
                    return st;
                }
            }
            AttributeId::SWITCH_INFO => {
                if !is_switch {
                    return UNSUP;
                }
                if m != 0 {
                    return INVALID;
                }
                let si = SwitchInfo::decode(&req.data);
                // MulticastFDBTop: 0 (unset), 0xBFFF (no entry) or an MLID within the cap.
                let mft_last = 0xC000u32 + u32::from(self.cfg.multicast_fdb_cap).max(1) - 1;
                let mt = si.multicast_fdb_top;
                if si.linear_fdb_top >= self.cfg.linear_fdb_cap
                    || mt != 0 && (mt < crate::state::MFT_TOP_NONE || u32::from(mt) > mft_last)
                {
                    self.switch_info(sw)
                        .encode(&mut self.slots[slot as usize].smp.data);
                    return INVALID;
                }
                let s = &mut self.st.switches[sw as usize];
                s.lft_top = si.linear_fdb_top;
                s.default_port = si.default_port;
                s.default_mcast_primary = si.default_multicast_primary_port;
                s.default_mcast_not_primary = si.default_multicast_not_primary_port;
                s.life_time_value = si.life_time_value;
                s.optimized_sl2vl = si.optimized_sl_to_vl_mapping_programming;
                s.mft_top = si.multicast_fdb_top;
                if si.port_state_change {
                    // Writing 1 clears the bit (IBA 14.2.5.4).
                    s.port_state_change = false;
                }
            }
            AttributeId::LINEAR_FORWARDING_TABLE => {
                if !is_switch {
                    return UNSUP;
                }
                if u64::from(m) * 64 >= u64::from(self.cfg.linear_fdb_cap) {
                    return INVALID;
                }
                let start = m as usize * 64;
                let s = &mut self.st.switches[sw as usize];
                let lft = &mut s.lft;
                if lft.len() < start + 64 {
                    // Room up to LinearFDBTop at once: an SM writes the blocks in order, and
                    // growing block by block re-copied the table on every reallocation.
                    let top = (usize::from(s.lft_top) + 1).next_multiple_of(64);
                    lft.reserve(top.max(start + 64) - lft.len());
                    lft.resize(start + 64, 0xFF);
                }
                lft[start..start + 64].copy_from_slice(&req.data);
            }
            AttributeId::MULTICAST_FORWARDING_TABLE => {
                if !is_switch {
                    return UNSUP;
                }
                let Some(key) = self.mft_key(num_ports, m) else {
                    return INVALID;
                };
                let t = MulticastForwardingTable::decode(&req.data);
                self.st.switches[sw as usize].mft.insert(key, t);
            }
            AttributeId::P_KEY_TABLE => {
                let Some((target, block)) = self.pkey_target(port, m) else {
                    return INVALID;
                };
                let cap = if is_switch {
                    self.cfg.switch_partition_cap
                } else {
                    self.cfg.ca_partition_cap
                };
                let keys = PKeyTable::decode(&req.data).keys;
                let tp = &mut self.st.cold[target as usize].pkeys;
                crate::state::write_pkey_block(tp, cap, block, &keys);
            }
            AttributeId::GUID_INFO => {
                if is_switch {
                    return UNSUP;
                }
                if m != 0 {
                    return INVALID;
                }
                let g = GuidInfo::decode(&req.data);
                let mut extra = [Guid(0); 8];
                extra[1..].copy_from_slice(&g.guids[1..]);
                self.st.cold[port as usize].guids = Some(Box::new(extra));
            }
            AttributeId::SL_TO_VL_TABLE => {
                let Some(key) = self.sl2vl_key(port, m) else {
                    return INVALID;
                };
                self.sl2vl.insert(key, SlToVlTable::decode(&req.data));
            }
            AttributeId::VL_ARBITRATION_TABLE => {
                let Some(key) = self.vlarb_key(port, m) else {
                    return INVALID;
                };
                self.vlarb
                    .insert(key, VlArbitrationTable::decode(&req.data));
            }
            id if crate::vport_sma::is_virt_attr(id) => {
                return self.vport_sma_set(port, req, slot, t);
            }
            _ => return UNSUP,
        }
        // Answer with the attribute as it now is.
        let hidden = false;
        self.sma_get(port, req, slot, hidden)
    }

    /// Applies a PortInfo Set to port index `target`; returns 0 or 0x1C (nothing changed).
    fn set_port_info(&mut self, target: u32, new: &PortInfo, t: VTime) -> u16 {
        let p = &self.st.ports[target as usize];
        let n = &self.st.nodes[p.node as usize];
        let is_switch = n.sw != NONE;
        let sw_port0 = is_switch && p.num == 0;
        let sw_external = is_switch && p.num != 0;
        let cur = p.state;
        // Validate everything first: an invalid Set changes nothing.
        let new_state = match PortState::from_wire(new.port_state) {
            None => return INVALID,
            Some(PortState::Init) => return INVALID,
            Some(s) => s,
        };
        if !sw_port0 {
            // The neighbour must keep up: ACTIVE only when the other end is ARMED or
            // ACTIVE (as ibsim checks), so an SM arms both ends before activating.
            let remote = if p.cable != NONE {
                self.st.ports[p.cable as usize].state
            } else {
                PortState::Down
            };
            let legal = match new_state {
                PortState::NoChange | PortState::Down => true,
                PortState::Armed => matches!(cur, PortState::Init | PortState::Armed),
                PortState::Active => {
                    matches!(cur, PortState::Armed | PortState::Active)
                        && matches!(remote, PortState::Armed | PortState::Active)
                }
                PortState::Init => false,
            };
            if !legal {
                return INVALID;
            }
        }
        let new_phys = match new.port_phys_state {
            0 => None,
            2 => Some(PhysState::Polling),
            3 => Some(PhysState::Disabled),
            _ => return INVALID,
        };
        // OperationalVLs (IBA 14.2.5.6, PortInfo): 0 leaves it unchanged; a value above
        // the port's own VLCap (the reserved codes 6..=15 included) is an invalid field,
        // and the whole Set changes nothing. Accepted in every port state: neither ibsim
        // (sim_mad.c) nor linux qib's SMA restrict it by state, and we could not establish
        // a state rule from the IBA text. (ibsim compares against the VLCap field of the
        // Set's own data and applies the other fields first; we compare against the port's
        // VLCap and refuse atomically, as qib does.) Switch port 0 (no enhanced port 0)
        // has no data VLs: the field is ignored there.
        if !sw_port0 && new.operational_vls > self.st.cold[target as usize].info.vl_cap {
            return INVALID;
        }
        if !sw_external && (new.lid.is_multicast() || new.lid.is_permissive()) {
            return INVALID;
        }
        if !sw_external && (new.master_sm_lid.is_multicast() || new.master_sm_lid.is_permissive()) {
            return INVALID;
        }
        // Apply.
        let i = &mut self.st.cold[target as usize].info;
        if !sw_external {
            i.m_key = new.m_key;
            i.gid_prefix = new.gid_prefix;
            i.lid = new.lid;
            i.master_sm_lid = new.master_sm_lid;
            if self.cfg.ibsim_port_info_sets {
                i.m_key_lease_period = IGNORED_LEASE_PERIOD;
            } else {
                i.m_key_lease_period = new.m_key_lease_period;
            }
            i.m_key_protect_bits = new.m_key_protect_bits;
            if !is_switch {
                i.lmc = new.lmc;
            }
            i.master_sm_sl = new.master_sm_sl;
            i.subnet_timeout = new.subnet_timeout;
            i.client_reregister = new.client_reregister;
        }
        if !sw_port0 {
            match new.link_width_enabled {
                0 => {}
                255 => i.link_width_enabled = i.link_width_supported,
                w => i.link_width_enabled = w,
            }
            match new.link_speed_enabled {
                0 => {}
                15 => i.link_speed_enabled = i.link_speed_supported,
                s => i.link_speed_enabled = s,
            }
            if new.link_down_default_state != 0 {
                i.link_down_default_state = new.link_down_default_state;
            }
            if new.neighbor_mtu != 0 {
                i.neighbor_mtu = new.neighbor_mtu;
            }
            if new.operational_vls != 0 {
                i.operational_vls = new.operational_vls;
            }
            // Stored as set: the arbiter is not modelled, so nothing acts on it.
            i.vl_high_limit = new.vl_high_limit;
            i.hoq_life = new.hoq_life;
            i.vl_stall_count = new.vl_stall_count;
            i.init_type = new.init_type;
        }
        if sw_external && !self.cfg.ibsim_port_info_sets {
            i.partition_enforcement_inbound = new.partition_enforcement_inbound;
            i.partition_enforcement_outbound = new.partition_enforcement_outbound;
        }
        if sw_external {
            i.filter_raw_inbound = new.filter_raw_inbound;
            i.filter_raw_outbound = new.filter_raw_outbound;
        }
        i.m_key_violations = new.m_key_violations;
        i.p_key_violations = new.p_key_violations;
        i.q_key_violations = new.q_key_violations;
        self.st.sync_mkey(target);
        if sw_port0 {
            return 0;
        }
        let p = &mut self.st.ports[target as usize];
        match new_phys {
            Some(PhysState::Disabled) => {
                p.disabled = true;
                self.link_down_by_sm(target, t);
                self.st.ports[target as usize].phys = PhysState::Disabled;
                return 0;
            }
            Some(_) if p.disabled => {
                p.disabled = false;
                p.phys = PhysState::Polling;
                self.push(t + self.cfg.retrain_ns, EvKind::LinkTrain { port: target });
                return 0;
            }
            _ => {}
        }
        match new_state {
            PortState::Down if cur != PortState::Down => {
                self.link_down_by_sm(target, t);
                self.push(t + self.cfg.retrain_ns, EvKind::LinkTrain { port: target });
            }
            PortState::Armed | PortState::Active => {
                self.st.ports[target as usize].state = new_state;
            }
            _ => {}
        }
        0
    }
}
