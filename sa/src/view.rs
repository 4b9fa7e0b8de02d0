//! [`FabricView`]: the read-only picture of the fabric the SA answers from — nodes with
//! NodeInfo/NodeDescription, ports with PortInfo, LIDs and P_Key tables, links, switches with
//! SwitchInfo and LFTs, the SM itself. Built by the glue from what the master's sweeper (or
//! the replicated state) knows; never changed by the SA.

use fabric::{Guid, Lid, NodeType};
use mad::{
    LinearForwardingTable, NodeDescription, NodeInfo, PortInfo, SlToVlTable, SwitchInfo,
    VlArbitrationTable,
};
use std::collections::{BTreeMap, HashMap};

/// MFT blocks of one switch by (position, block): the 32 port masks (absent: all zero).
pub type MftBlocks = BTreeMap<(u8, u16), [u16; 32]>;

/// One port of a node.
#[derive(Clone, Debug, Default)]
pub struct ViewPort {
    /// Port number.
    pub num: u8,
    /// Port GUID (end ports; a switch's port 0 has the node GUID; other switch ports 0).
    pub guid: Guid,
    /// The LID that names this port in records: a CA port's base LID, a switch's port-0
    /// LID for every port of the switch (0: none).
    pub lid: Lid,
    /// LMC of an end port.
    pub lmc: u8,
    /// PortInfo as known.
    pub info: PortInfo,
    /// The port at the other end of the link: (node index, port number).
    pub remote: Option<(usize, u8)>,
    /// P_Key table (empty: unknown / not managed).
    pub pkeys: Vec<u16>,
    /// True for a port that exists (index 0 of a CA is a placeholder).
    pub present: bool,
    /// SLtoVLMappingTables known to be held, by input port (this port the output; a CA
    /// port's one table under input 0).
    pub sl2vl: Vec<(u8, SlToVlTable)>,
    /// VLArbitrationTable blocks known to be held, by block (1-4).
    pub vlarb: Vec<(u8, VlArbitrationTable)>,
}

/// One node.
#[derive(Clone, Debug, Default)]
pub struct ViewNode {
    /// NodeInfo (PortGUID/LocalPortNum as seen through the node's first end port).
    pub info: NodeInfo,
    /// NodeDescription.
    pub desc: NodeDescription,
    /// SwitchInfo of a switch.
    pub switch_info: Option<SwitchInfo>,
    /// A switch's LFT, indexed by LID ([`LinearForwardingTable::NO_PATH`] beyond).
    pub lft: Vec<u8>,
    /// A switch's MFT blocks as the SM programmed them (non-zero ones).
    pub mft: MftBlocks,
    /// Ports indexed by number (0..=NumPorts).
    pub ports: Vec<ViewPort>,
    /// A vport's virtual node ([`FabricView::add_vports`]): the physical CA port
    /// (node index, port) it sits behind.
    pub vport_of: Option<(usize, u8)>,
}

/// A vport of a virtualization-capable CA port, as the master programmed it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ViewVport {
    /// The physical port's node GUID and port number.
    pub pf_node: Guid,
    /// The physical port number.
    pub pf_port: u8,
    /// The vport GUID.
    pub guid: Guid,
    /// Its LID (its own, or the physical port's).
    pub lid: Lid,
    /// VPortState (PortState encoding).
    pub state: u8,
    /// Its P_KeyTable (block 0).
    pub pkeys: Vec<u16>,
}

impl ViewNode {
    /// True for a switch.
    pub fn is_switch(&self) -> bool {
        self.info.node_type == NodeType::Switch.to_wire()
    }

    /// The LFT entry for `lid`.
    pub fn lft_port(&self, lid: Lid) -> u8 {
        self.lft
            .get(usize::from(lid.0))
            .copied()
            .unwrap_or(LinearForwardingTable::NO_PATH)
    }

    /// The end ports of the node: port 0 of a switch, the present ports of a CA/router.
    pub fn end_ports(&self) -> impl Iterator<Item = &ViewPort> + '_ {
        let sw = self.is_switch();
        self.ports
            .iter()
            .filter(move |p| p.present && (if sw { p.num == 0 } else { p.num != 0 }))
    }
}

/// The SM as the SA reports it (SMInfoRecord) and uses it (MasterSMLID).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SmSelf {
    /// The SM port's LID.
    pub lid: Lid,
    /// The SM port's GUID.
    pub port_guid: Guid,
    /// SMInfo priority.
    pub priority: u8,
    /// SMInfo state (3 master).
    pub state: u8,
    /// ActCount.
    pub act_count: u32,
}

/// The fabric as the SA sees it, with lookup indexes.
#[derive(Clone, Debug, Default)]
pub struct FabricView {
    /// Subnet prefix of every port GID.
    pub subnet_prefix: u64,
    /// The SM.
    pub sm: SmSelf,
    /// Nodes.
    pub nodes: Vec<ViewNode>,
    /// Service level of each partition (low 15 bits of the key), from the policy.
    pub partition_sl: HashMap<u16, u8>,
    /// The QoS policy in force: the SL of a path its rules match (before the partition's).
    pub qos_policy: Option<std::sync::Arc<qos::Policy>>,
    /// Partition names by key (low 15 bits), from the policy: what a QoS port group's
    /// `partition:` names.
    pub partition_names: HashMap<u16, String>,
    /// The SL each (source switch, destination switch) pair must use when the routing
    /// engine requires one: it wins over the QoS policy and the partition.
    pub path_sl: Option<std::sync::Arc<routing::PathSl>>,
    by_lid: HashMap<u16, (usize, u8)>,
    by_guid: HashMap<Guid, (usize, u8)>,
    /// Alias GUIDs (GUIDInfoRecord Set) with their end port's GUID.
    aliases: BTreeMap<Guid, Guid>,
}

impl FabricView {
    /// A view over `nodes`; builds the LID and GUID indexes (every LID of an end port's LMC
    /// range maps to it).
    pub fn new(subnet_prefix: u64, sm: SmSelf, nodes: Vec<ViewNode>) -> FabricView {
        let mut v = FabricView {
            subnet_prefix,
            sm,
            nodes,
            ..FabricView::default()
        };
        v.index(0);
        v
    }

    /// Indexes the end ports of nodes `from..` by GUID and LID (a vnode sharing its
    /// physical port's LID does not take the LID over).
    fn index(&mut self, from: usize) {
        for (ni, n) in self.nodes.iter().enumerate().skip(from) {
            for p in n.end_ports() {
                if p.guid.0 != 0 {
                    self.by_guid.insert(p.guid, (ni, p.num));
                }
                if p.lid.0 != 0 {
                    let count = 1u32 << p.lmc.min(7);
                    for i in 0..count {
                        let l = u32::from(p.lid.0) + i;
                        if l <= u32::from(Lid::UNICAST_MAX.0) {
                            if n.vport_of.is_some() {
                                self.by_lid.entry(l as u16).or_insert((ni, p.num));
                            } else {
                                self.by_lid.insert(l as u16, (ni, p.num));
                            }
                        }
                    }
                }
            }
        }
    }

    /// Adds the vports of virtualization-capable CA ports, each as a virtual node of one
    /// CA port (node and port GUID the vport GUID, port 1) behind its physical port: the
    /// physical port's PortInfo with the vport's LID (LMC 0) and state, its own P_KeyTable,
    /// the physical port's link. NodeRecords, PortInfoRecords and PathRecords then answer
    /// for vport GIDs and LIDs; a path to a vport is the path to its physical port. A vport
    /// whose physical port is not in the view is left out.
    pub fn add_vports(&mut self, vports: &[ViewVport]) {
        let from = self.nodes.len();
        for v in vports {
            let Some(pf_node) = self
                .nodes
                .iter()
                .position(|n| n.info.node_guid == v.pf_node && n.vport_of.is_none())
            else {
                continue;
            };
            let Some(pf) = self.port((pf_node, v.pf_port)).cloned() else {
                continue;
            };
            let mut info = self.nodes[pf_node].info;
            info.node_guid = v.guid;
            info.port_guid = v.guid;
            info.num_ports = 1;
            info.local_port_num = 1;
            let mut port = pf;
            port.num = 1;
            port.guid = v.guid;
            port.lid = v.lid;
            port.lmc = 0;
            port.info.lid = v.lid;
            port.info.lmc = 0;
            port.info.port_state = v.state;
            port.info.local_port_num = 1;
            port.pkeys.clone_from(&v.pkeys);
            self.nodes.push(ViewNode {
                info,
                desc: self.nodes[pf_node].desc,
                switch_info: None,
                lft: Vec::new(),
                mft: MftBlocks::new(),
                ports: vec![ViewPort::default(), port],
                vport_of: Some((pf_node, v.pf_port)),
            });
        }
        self.index(from);
    }

    /// True when a path arriving at end port `at` has reached `dest` (the end port itself,
    /// or a vport behind it).
    pub fn arrived(&self, at: (usize, u8), dest: Option<(usize, u8)>) -> bool {
        match dest {
            Some(d) if d == at => true,
            Some(d) => self.nodes.get(d.0).and_then(|n| n.vport_of) == Some(at),
            None => false,
        }
    }

    /// Takes the MFT blocks the switches now hold (by switch GUID): a multicast pass between
    /// sweeps changes them without a new view.
    pub fn set_mfts(&mut self, mfts: &HashMap<Guid, MftBlocks>) {
        for n in self.nodes.iter_mut().filter(|n| n.is_switch()) {
            n.mft = mfts.get(&n.info.node_guid).cloned().unwrap_or_default();
        }
    }

    /// The end port owning `lid` (any LID of its LMC range).
    pub fn port_by_lid(&self, lid: Lid) -> Option<(usize, u8)> {
        self.by_lid.get(&lid.0).copied()
    }

    /// The end port with this GUID (its port GUID, or an alias GUID of it).
    pub fn port_by_guid(&self, guid: Guid) -> Option<(usize, u8)> {
        self.by_guid
            .get(&guid)
            .or_else(|| self.by_guid.get(self.aliases.get(&guid)?))
            .copied()
    }

    /// The alias GUIDs in force, with their port's GUID.
    pub fn aliases(&self) -> &BTreeMap<Guid, Guid> {
        &self.aliases
    }

    /// Replaces the alias GUIDs.
    pub fn set_aliases(&mut self, aliases: BTreeMap<Guid, Guid>) {
        self.aliases = aliases;
    }

    /// The port at (node, port).
    pub fn port(&self, at: (usize, u8)) -> Option<&ViewPort> {
        self.nodes
            .get(at.0)?
            .ports
            .get(usize::from(at.1))
            .filter(|p| p.present)
    }

    /// Every end port, in node order: (node index, port).
    pub fn end_ports(&self) -> impl Iterator<Item = (usize, &ViewPort)> + '_ {
        self.nodes
            .iter()
            .enumerate()
            .flat_map(|(i, n)| n.end_ports().map(move |p| (i, p)))
    }

    /// The GID of an end port.
    pub fn gid_of(&self, p: &ViewPort) -> mad::sa::Gid {
        mad::sa::Gid::new(self.subnet_prefix, p.guid.0)
    }
}

/// What [`FabricView::from_topology`] builds a view from: the discovered topology and what
/// the SM knows about it. NodeInfo/PortInfo/SwitchInfo not given are filled from the
/// topology (LID, LMC, MasterSMLID, link width/speed, state Active on linked ports, MTU 2048,
/// revision 0): the master gives what it read, so only a node or port it never read is.
#[derive(Clone, Debug, Default)]
pub struct ViewInput {
    /// Subnet prefix.
    pub subnet_prefix: u64,
    /// The SM.
    pub sm: SmSelf,
    /// Base LID and LMC of each end port, by port GUID (a switch: its node GUID).
    pub lids: HashMap<Guid, (Lid, u8)>,
    /// LFTs by switch GUID (index = LID).
    pub lfts: HashMap<Guid, Vec<u8>>,
    /// P_Key tables by (node GUID, port).
    pub pkeys: HashMap<(Guid, u8), Vec<u16>>,
    /// PortInfo as read from the fabric, by (node GUID, port).
    pub port_info: HashMap<(Guid, u8), PortInfo>,
    /// SwitchInfo as read, by switch GUID.
    pub switch_info: HashMap<Guid, SwitchInfo>,
    /// NodeInfo as read, by node GUID (PortGUID and LocalPortNum are set per record).
    pub node_info: HashMap<Guid, NodeInfo>,
    /// Partition SLs.
    pub partition_sl: HashMap<u16, u8>,
    /// MFT blocks the switches are known to hold, by switch GUID.
    pub mfts: HashMap<Guid, MftBlocks>,
    /// SLtoVL tables known, by (node GUID, output port): (input port, table).
    pub sl2vl: HashMap<(Guid, u8), Vec<(u8, SlToVlTable)>>,
    /// VLArb blocks known, by (node GUID, port): (block, table).
    pub vlarb: HashMap<(Guid, u8), Vec<(u8, VlArbitrationTable)>>,
}

impl FabricView {
    /// Builds a view from a topology and what the SM knows (see [`ViewInput`]).
    pub fn from_topology(topo: &fabric::Topology, inp: &ViewInput) -> FabricView {
        let mut index = HashMap::new();
        for (i, (id, _)) in topo.nodes().enumerate() {
            index.insert(id, i);
        }
        let mut nodes = Vec::with_capacity(topo.len());
        for (_, n) in topo.nodes() {
            let sw = n.is_switch();
            let sw_lid = if sw {
                inp.lids.get(&n.node_guid).copied()
            } else {
                None
            };
            let mut ports = Vec::with_capacity(n.ports.len());
            for (pn, p) in n.ports.iter().enumerate() {
                let num = pn as u8;
                let present = sw || num != 0;
                let guid = if sw {
                    if num == 0 { n.node_guid } else { Guid(0) }
                } else {
                    p.guid
                };
                let (lid, lmc) = if sw {
                    sw_lid.unwrap_or_default()
                } else {
                    inp.lids.get(&p.guid).copied().unwrap_or_default()
                };
                let remote = p
                    .remote
                    .and_then(|r| Some((*index.get(&r.node)?, r.port.0)));
                let info = inp
                    .port_info
                    .get(&(n.node_guid, num))
                    .copied()
                    .unwrap_or_else(|| {
                        let linked = remote.is_some() || (sw && num == 0);
                        let mut pi = PortInfo {
                            gid_prefix: inp.subnet_prefix,
                            lid: if !sw || num == 0 { lid } else { Lid(0) },
                            master_sm_lid: inp.sm.lid,
                            local_port_num: num,
                            link_width_enabled: 3,
                            link_width_supported: 3,
                            link_width_active: p.width.to_wire(),
                            link_speed_supported: 1,
                            link_speed_active: 1,
                            link_speed_enabled: 1,
                            lmc,
                            mtu_cap: 4,
                            neighbor_mtu: 4,
                            vl_cap: 1,
                            operational_vls: 1,
                            subnet_timeout: 18,
                            ..PortInfo::default()
                        };
                        pi.port_state = if linked { 4 } else { 1 };
                        pi.port_phys_state = if linked { 5 } else { 2 };
                        if !sw && p.guid == inp.sm.port_guid {
                            pi.capability_mask |= 0x2;
                        }
                        pi
                    });
                let pkeys = inp
                    .pkeys
                    .get(&(n.node_guid, num))
                    .cloned()
                    .unwrap_or_default();
                ports.push(ViewPort {
                    num,
                    guid,
                    lid: if sw {
                        sw_lid.unwrap_or_default().0
                    } else {
                        lid
                    },
                    lmc,
                    info,
                    remote,
                    pkeys,
                    present,
                    sl2vl: inp
                        .sl2vl
                        .get(&(n.node_guid, num))
                        .cloned()
                        .unwrap_or_default(),
                    vlarb: inp
                        .vlarb
                        .get(&(n.node_guid, num))
                        .cloned()
                        .unwrap_or_default(),
                });
            }
            let first_guid = if sw {
                n.node_guid
            } else {
                n.ports
                    .iter()
                    .skip(1)
                    .map(|p| p.guid)
                    .next()
                    .unwrap_or_default()
            };
            let read = inp.node_info.get(&n.node_guid).copied();
            let info = read.map(|i| NodeInfo {
                port_guid: first_guid,
                local_port_num: if sw { 0 } else { 1 },
                ..i
            });
            let info = info.unwrap_or(NodeInfo {
                base_version: 1,
                class_version: 1,
                node_type: n.node_type.to_wire(),
                num_ports: n.num_ports(),
                system_image_guid: n.sys_image_guid,
                node_guid: n.node_guid,
                port_guid: first_guid,
                partition_cap: if sw { 8 } else { 64 },
                device_id: n.device_id,
                revision: 0,
                local_port_num: if sw { 0 } else { 1 },
                vendor_id: n.vendor_id,
            });
            let switch_info = sw.then(|| {
                inp.switch_info
                    .get(&n.node_guid)
                    .copied()
                    .unwrap_or_else(|| SwitchInfo {
                        linear_fdb_cap: 0xC000,
                        multicast_fdb_cap: 0x400,
                        linear_fdb_top: inp
                            .lfts
                            .get(&n.node_guid)
                            .map(|l| l.len().saturating_sub(1) as u16)
                            .unwrap_or(0),
                        partition_enforcement_cap: 8,
                        ..SwitchInfo::default()
                    })
            });
            nodes.push(ViewNode {
                info,
                desc: NodeDescription::from_text(&n.description),
                switch_info,
                lft: inp.lfts.get(&n.node_guid).cloned().unwrap_or_default(),
                mft: inp.mfts.get(&n.node_guid).cloned().unwrap_or_default(),
                ports,
                vport_of: None,
            });
        }
        let mut v = FabricView::new(inp.subnet_prefix, inp.sm, nodes);
        v.partition_sl = inp.partition_sl.clone();
        v
    }
}
