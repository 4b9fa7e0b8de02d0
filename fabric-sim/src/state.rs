//! The simulated hardware: nodes, ports and switch tables, stored flat and addressed by
//! index so that the forwarding path never hashes or allocates.

use crate::VTime;
use crate::config::SimConfig;
use fabric::{Guid, Lid, LinkSpeed, NodeType, PKey, PhysState, PortState, Topology};
use mad::{MulticastForwardingTable, NodeDescription, PortInfo};
use std::collections::HashMap;

/// "No index" marker for the u32 index fields.
pub(crate) const NONE: u32 = u32::MAX;

/// One simulated node.
pub(crate) struct SimNode {
    pub kind: NodeType,
    pub num_ports: u8,
    /// Index of this node's port 0 slot in `State::ports` (ports 0..=num_ports follow).
    pub port_base: u32,
    /// False while the node is removed by a fault.
    pub present: bool,
    /// Index into `State::switches`, or NONE for a CA/router.
    pub sw: u32,
    pub node_guid: Guid,
    pub sys_guid: Guid,
    pub vendor_id: u32,
    pub device_id: u16,
    /// Switches: port 0's M_Key and whether its M_Key lease runs, copies of what its
    /// [`PortCold`] holds (kept by [`State::sync_mkey`] at every write of either), so that
    /// the M_Key check of an SMP to a switch reads only this record, which the hop has
    /// just read, instead of the port's cold record (a cache and TLB miss per SMP on a
    /// large fabric). Unused (0, false) on a CA: its ports' checks read the cold record.
    pub mkey: u64,
    pub lease_running: bool,
}

/// One port slot (switch port 0 included; CA slot 0 exists but is unused): what moving an
/// SMP reads at every hop. What only an SMA or the data path reads is in [`PortCold`], so
/// that the port slots of a large fabric stay small enough to be cached.
pub(crate) struct SimPort {
    pub node: u32,
    pub num: u8,
    /// Logical state (PortInfo.PortState wire value).
    pub state: PortState,
    /// Physical state.
    pub phys: PhysState,
    /// Port index at the other end of the cable, NONE when uncabled.
    pub cable: u32,
    /// True while the physical link trains up (both ends present and enabled).
    pub link_up: bool,
    /// Disabled by the SM (PortPhysicalState = Disabled).
    pub disabled: bool,
    /// Taken down by a fault.
    pub fault_down: bool,
    /// When the output link is free again (serialisation of queued SMPs).
    pub busy_until: VTime,
    /// Attached SM (index into `SimFabric::attaches`), NONE when none.
    pub attach: u32,
    /// Port GUID.
    pub guid: Guid,
    /// Packets sent out of this port, low 32 bits of the running total (performance
    /// counters, `crate::perf`: kept here because every hop already reads this slot; the
    /// carries go to `Perf`, so the slot grows by 8 bytes only).
    pub xmit_pkts: u32,
    /// Packets received at this port, low 32 bits of the running total.
    pub rcv_pkts: u32,
}

/// The rest of a port slot (same index as [`SimPort`]).
pub(crate) struct PortCold {
    /// PortInfo fields as the SM wrote them (dynamic fields are filled in on Get).
    pub info: PortInfo,
    /// P_KeyTable; empty means the power-up table (0xFFFF at index 0).
    pub pkeys: Vec<PKey>,
    /// GUIDInfo entries 1..8 written by the SM (entry 0 is the port GUID).
    pub guids: Option<Box<[Guid; 8]>>,
    /// M_Key lease deadline (0 = no lease running).
    pub lease_deadline: VTime,
}

/// State of one switch beyond its ports.
#[derive(Default)]
pub(crate) struct SwitchState {
    /// Linear forwarding table, grown on write; entries beyond the end are 0xFF.
    pub lft: Vec<u8>,
    pub lft_top: u16,
    pub port_state_change: bool,
    pub life_time_value: u8,
    pub default_port: u8,
    pub default_mcast_primary: u8,
    pub default_mcast_not_primary: u8,
    pub mft_top: u16,
    pub optimized_sl2vl: u8,
    /// MulticastForwardingTable blocks by attribute modifier (position << 28 | block).
    pub mft: HashMap<u32, MulticastForwardingTable>,
}

impl SwitchState {
    /// Output port for `lid`, or None when the entry is unprogrammed or above the top.
    #[inline]
    pub fn route(&self, lid: Lid) -> Option<u8> {
        if lid.0 > self.lft_top {
            return None;
        }
        match self.lft.get(usize::from(lid.0)) {
            Some(&p) if p != 0xFF => Some(p),
            _ => None,
        }
    }
}

/// All nodes and ports.
pub(crate) struct State {
    pub nodes: Vec<SimNode>,
    pub ports: Vec<SimPort>,
    /// Per port slot, what is not in [`SimPort`].
    pub cold: Vec<PortCold>,
    pub switches: Vec<SwitchState>,
    /// Port GUID -> port index (CA ports, and switch port 0 for switch GUIDs).
    pub by_port_guid: HashMap<Guid, u32>,
    /// Node GUID -> node index.
    pub by_node_guid: HashMap<Guid, u32>,
    /// NodeDescription per node (kept out of [`SimNode`], which every hop reads, so that
    /// the nodes of a large fabric stay in cache).
    pub descs: Vec<NodeDescription>,
    /// SwitchInfo.MulticastFDBTop of a switch at power-up (see
    /// `SimConfig::multicast_fdb_top_supported`).
    pub mft_top_reset: u16,
    /// Vports of virtualization-capable CA ports ([`crate::vport`]).
    pub virt: crate::vport::VirtState,
}

/// Entry `index` of a P_Key table (a port's or a vport's); an empty table is the power-up
/// table, 0xFFFF at index 0.
#[inline]
pub(crate) fn key_at(table: &[PKey], index: usize) -> PKey {
    if table.is_empty() {
        if index == 0 {
            PKey::DEFAULT_FULL
        } else {
            PKey(0)
        }
    } else {
        table.get(index).copied().unwrap_or(PKey(0))
    }
}

/// True when some entry of a P_Key table matches `key` by the IBA rule.
pub(crate) fn keys_match(table: &[PKey], key: PKey) -> bool {
    if table.is_empty() {
        return PKey::DEFAULT_FULL.matches(key);
    }
    table.iter().any(|k| k.matches(key))
}

/// True when a P_Key table holds exactly `key` (an HCA sends only with such a key).
pub(crate) fn keys_contain(table: &[PKey], key: PKey) -> bool {
    if table.is_empty() {
        return key == PKey::DEFAULT_FULL;
    }
    !key.is_invalid() && table.contains(&key)
}

/// Writes 32-entry `block` of a P_Key table of `cap` entries (materialising the power-up
/// table first); the caller checked `block * 32 < cap`.
pub(crate) fn write_pkey_block(table: &mut Vec<PKey>, cap: u16, block: usize, keys: &[PKey; 32]) {
    if table.is_empty() {
        *table = vec![PKey(0); usize::from(cap)];
        table[0] = PKey::DEFAULT_FULL;
    }
    table[block * 32..block * 32 + 32].copy_from_slice(keys);
}

/// MulticastFDBTop meaning "no MFT entry valid" (the MLID before 0xC000).
pub(crate) const MFT_TOP_NONE: u16 = 0xBFFF;

fn speed_fields(s: LinkSpeed) -> (u8, u8) {
    // (LinkSpeedActive, LinkSpeedExtActive)
    match s {
        LinkSpeed::Sdr => (1, 0),
        LinkSpeed::Ddr => (2, 0),
        LinkSpeed::Qdr => (4, 0),
        LinkSpeed::Fdr => (4, 1),
        LinkSpeed::Edr => (4, 2),
        LinkSpeed::Hdr => (4, 4),
        LinkSpeed::Ndr => (4, 8),
    }
}

/// The power-up PortInfo of a port.
pub(crate) fn default_port_info(kind: NodeType, num: u8, tport: &fabric::Port) -> PortInfo {
    let (speed, ext) = speed_fields(tport.speed);
    let mut pi = PortInfo {
        local_port_num: num,
        link_width_enabled: 0x03 | tport.width.to_wire(),
        link_width_supported: 0x03 | tport.width.to_wire(),
        link_width_active: tport.width.to_wire(),
        link_speed_supported: 0x1 | 0x2 | 0x4,
        link_speed_active: speed,
        link_speed_enabled: 0x1 | 0x2 | 0x4,
        link_speed_ext_active: ext,
        link_speed_ext_supported: if ext != 0 { 0xF } else { 0 },
        link_speed_ext_enabled: if ext != 0 { 0xF } else { 0 },
        link_down_default_state: PhysState::Polling.to_wire(),
        neighbor_mtu: 5,
        mtu_cap: 5,
        vl_cap: 4,
        operational_vls: 4,
        vl_high_limit: 0,
        vl_arbitration_high_cap: 8,
        vl_arbitration_low_cap: 8,
        hoq_life: 0x10,
        subnet_timeout: 0x12,
        resp_time_value: 0x10,
        ..PortInfo::default()
    };
    match kind {
        NodeType::Switch => {
            pi.guid_cap = 1;
            if num == 0 {
                // IsSLMappingSupported: the switch maps SL to VL per port pair (ibsim's
                // switch port 0 sets it too).
                pi.capability_mask = PortInfo::CAP_IS_TRAP_SUPPORTED
                    | PortInfo::CAP_IS_NOTICE_SUPPORTED
                    | PortInfo::CAP_IS_SL_MAPPING_SUPPORTED
                    | PortInfo::CAP_IS_SYSTEM_IMAGE_GUID_SUPPORTED;
            }
        }
        _ => {
            pi.guid_cap = 8;
            pi.capability_mask = PortInfo::CAP_IS_TRAP_SUPPORTED
                | PortInfo::CAP_IS_SL_MAPPING_SUPPORTED
                | PortInfo::CAP_IS_SYSTEM_IMAGE_GUID_SUPPORTED
                | PortInfo::CAP_IS_CM_SUPPORTED
                | PortInfo::CAP_IS_CLIENT_REREGISTRATION_SUPPORTED
                | PortInfo::CAP_IS_CAPABILITY_MASK_NOTICE_SUPPORTED;
        }
    }
    pi
}

impl State {
    /// Builds the hardware for a topology: every cabled port with both ends present comes
    /// up in INIT with physical LinkUp; switch port 0 is always Active.
    pub fn build(topo: &Topology, cfg: &SimConfig) -> State {
        let n_ports: usize = topo.nodes().map(|(_, n)| n.ports.len()).sum();
        let mut nodes = Vec::with_capacity(topo.len());
        let mut ports = Vec::with_capacity(n_ports);
        let mut cold = Vec::with_capacity(n_ports);
        let mut switches = Vec::new();
        let mut by_port_guid = HashMap::with_capacity(n_ports / 2);
        let mut by_node_guid = HashMap::with_capacity(topo.len());
        let mut bases = Vec::with_capacity(topo.len());
        let mut descs = Vec::with_capacity(topo.len());
        let mft_top_reset = if cfg.multicast_fdb_top_supported {
            MFT_TOP_NONE
        } else {
            0
        };
        for (id, n) in topo.nodes() {
            let base = ports.len() as u32;
            bases.push(base);
            let sw = if n.is_switch() {
                switches.push(SwitchState {
                    mft_top: mft_top_reset,
                    ..SwitchState::default()
                });
                (switches.len() - 1) as u32
            } else {
                NONE
            };
            for (pn, tp) in n.ports.iter().enumerate() {
                let num = pn as u8;
                let is_sw0 = n.is_switch() && num == 0;
                ports.push(SimPort {
                    node: id.0,
                    num,
                    state: if is_sw0 {
                        PortState::Active
                    } else {
                        PortState::Down
                    },
                    phys: if is_sw0 {
                        PhysState::LinkUp
                    } else {
                        PhysState::Polling
                    },
                    cable: NONE,
                    link_up: is_sw0,
                    disabled: false,
                    fault_down: false,
                    busy_until: 0,
                    attach: NONE,
                    guid: tp.guid,
                    xmit_pkts: 0,
                    rcv_pkts: 0,
                });
                cold.push(PortCold {
                    info: {
                        let mut pi = default_port_info(n.node_type, num, tp);
                        if is_sw0 && cfg.multicast_fdb_top_supported {
                            pi.capability_mask |= PortInfo::CAP_IS_MULTICAST_FDB_TOP_SUPPORTED;
                        }
                        pi
                    },
                    pkeys: Vec::new(),
                    guids: None,
                    lease_deadline: 0,
                });
                if (!n.is_switch() && num > 0) || is_sw0 {
                    by_port_guid.insert(tp.guid, base + u32::from(num));
                }
            }
            by_node_guid.insert(n.node_guid, id.0);
            nodes.push(SimNode {
                kind: n.node_type,
                num_ports: n.num_ports(),
                port_base: base,
                present: true,
                sw,
                node_guid: n.node_guid,
                sys_guid: n.sys_image_guid,
                vendor_id: n.vendor_id,
                device_id: n.device_id,
                mkey: 0,
                lease_running: false,
            });
            descs.push(NodeDescription::from_text(&n.description));
        }
        for (a, b) in topo.links() {
            let ia = bases[a.node.index()] + u32::from(a.port.0);
            let ib = bases[b.node.index()] + u32::from(b.port.0);
            ports[ia as usize].cable = ib;
            ports[ib as usize].cable = ia;
            for i in [ia, ib] {
                let p = &mut ports[i as usize];
                p.link_up = true;
                p.state = PortState::Init;
                p.phys = PhysState::LinkUp;
            }
        }
        let mut st = State {
            nodes,
            ports,
            cold,
            switches,
            by_port_guid,
            by_node_guid,
            descs,
            mft_top_reset,
            virt: Default::default(),
        };
        for i in 0..st.nodes.len() {
            st.sync_mkey(st.nodes[i].port_base);
        }
        st
    }

    /// Port index of port `num` of node `node`.
    #[inline]
    pub fn pidx(&self, node: u32, num: u8) -> u32 {
        self.nodes[node as usize].port_base + u32::from(num)
    }

    /// The LID range (base, count) owned by a port as an end port: a CA port's own LID
    /// and LMC; for any switch port, the switch's port-0 LID and LMC. (A
    /// virtualization-capable CA port also owns its vports' own LIDs: [`State::owns_lid`].)
    #[inline]
    pub fn lid_range(&self, port: u32) -> (u16, u16) {
        let p = &self.ports[port as usize];
        let node = &self.nodes[p.node as usize];
        let info = if node.sw != NONE {
            &self.cold[node.port_base as usize].info
        } else {
            &self.cold[port as usize].info
        };
        (info.lid.0, 1u16 << (info.lmc & 7))
    }

    /// True when `lid` belongs to the end port `port` (see [`State::lid_range`]), or is the
    /// own LID of one of its vports.
    #[inline]
    pub fn owns_lid(&self, port: u32, lid: Lid) -> bool {
        let (base, n) = self.lid_range(port);
        (base != 0 && lid.0 >= base && u32::from(lid.0) < u32::from(base) + u32::from(n))
            || self.virt.lid_owner(lid).is_some_and(|(p, _)| p == port)
    }

    /// The LID a node uses as source from port `port` (switches: port 0's LID).
    #[inline]
    pub fn source_lid(&self, port: u32) -> Lid {
        Lid(self.lid_range(port).0)
    }

    /// Copies the M_Key and lease state of `port` into its node's record when `port` is a
    /// switch's port 0 (see [`SimNode::mkey`]); to be called after every write of either.
    #[inline]
    pub fn sync_mkey(&mut self, port: u32) {
        let node = self.ports[port as usize].node as usize;
        let n = &mut self.nodes[node];
        if n.sw != NONE && n.port_base == port {
            let c = &self.cold[port as usize];
            n.mkey = c.info.m_key;
            n.lease_running = c.lease_deadline != 0;
        }
    }

    /// The port whose M_Key and MasterSMLID govern SMPs arriving at `port`: the port
    /// itself on a CA, port 0 on a switch.
    #[inline]
    pub fn mgmt_port(&self, port: u32) -> u32 {
        let p = &self.ports[port as usize];
        let node = &self.nodes[p.node as usize];
        if node.sw != NONE {
            node.port_base
        } else {
            port
        }
    }

    /// P_Key at `index` of a port's table.
    #[inline]
    pub fn pkey_at(&self, port: u32, index: usize) -> PKey {
        key_at(&self.cold[port as usize].pkeys, index)
    }

    /// True when some entry of the port's table matches `key` by the IBA rule.
    pub fn table_matches(&self, port: u32, key: PKey) -> bool {
        keys_match(&self.cold[port as usize].pkeys, key)
    }

    /// True when the port's table holds exactly `key`.
    pub fn table_contains(&self, port: u32, key: PKey) -> bool {
        keys_contain(&self.cold[port as usize].pkeys, key)
    }

    /// Resets a node to power-up: LIDs, keys, tables, M_Key and (for switches) the LFT.
    pub fn power_cycle(&mut self, node: u32) {
        let n = &self.nodes[node as usize];
        let (base, np, sw) = (n.port_base, n.num_ports, n.sw);
        for i in base..=base + u32::from(np) {
            let p = &mut self.cold[i as usize];
            let keep = (p.info.local_port_num, p.info.link_width_active);
            let mut fresh = p.info;
            fresh.m_key = 0;
            fresh.gid_prefix = 0;
            fresh.lid = Lid(0);
            fresh.master_sm_lid = Lid(0);
            fresh.m_key_lease_period = 0;
            fresh.m_key_protect_bits = 0;
            fresh.lmc = 0;
            fresh.master_sm_sl = 0;
            fresh.partition_enforcement_inbound = false;
            fresh.partition_enforcement_outbound = false;
            fresh.filter_raw_inbound = false;
            fresh.filter_raw_outbound = false;
            fresh.m_key_violations = 0;
            fresh.p_key_violations = 0;
            fresh.q_key_violations = 0;
            fresh.client_reregister = false;
            fresh.operational_vls = fresh.vl_cap;
            fresh.vl_high_limit = 0;
            (fresh.local_port_num, fresh.link_width_active) = keep;
            p.info = fresh;
            p.pkeys = Vec::new();
            p.guids = None;
            p.lease_deadline = 0;
            self.virt.power_cycle(i);
        }
        self.sync_mkey(base);
        if sw != NONE {
            self.switches[sw as usize] = SwitchState {
                mft_top: self.mft_top_reset,
                ..SwitchState::default()
            };
        }
    }
}
