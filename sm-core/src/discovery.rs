//! Discovery ([`Discovery`]): the fabric as the heavy sweeps found it — the node, port and
//! switch arenas (a node keeps its index for the sweeper's life, found again by GUID), the
//! directed paths of the current sweep, the SM's own port, the heavy sweep number and the
//! statistics of the running discovery.
//!
//! Discovery never sends anything itself (a reply hands back the requests it calls for) and
//! never decides what is programmed: the fields other sub-states keep on the port and
//! switch records (LIDs, P_Keys, M_Key candidates, LFT state) are theirs, discovery only
//! marks unknown what a fresh or vanished node no longer holds.
//!
//! Heavy sweep, part 1: breadth-first discovery over directed routes. The hop-0 NodeInfo
//! finds the SM's own node. Every new node gets NodeDescription, and PortInfo of the port
//! it was reached through (CAs) or of every port (switches, plus SwitchInfo). Every switch
//! port whose link is up and whose peer is not yet known gets a NodeInfo probe one hop
//! further. Nodes are identified by node GUID, so a node reached again through another path
//! (loops in tori and random graphs) is only linked, not expanded.

use crate::SmError;
use crate::io::{Op, Req};
use crate::state::{NONE, Node, NodeShape, PathRef, Port, Switch, routed_top};
use fabric::{Guid, Lid, NodeId, PortRef, Topology};
use mad::{NodeDescription, NodeInfo, PortInfo, SwitchInfo};
use routing::Lfts;
use std::collections::{BTreeMap, HashMap};

mod targeted;

/// P_KeyTables known to be held, by (node GUID, port) (`SweeperConfig::known_pkeys`).
type KnownPKeys = BTreeMap<(Guid, u8), Vec<u16>>;

/// The fabric as discovered (see the module documentation).
#[derive(Debug)]
pub(crate) struct Discovery {
    /// Number of the current (or last) heavy sweep.
    sweep: u64,
    nodes: Vec<Node>,
    /// Per node (same index): what addressing a request reads (see [`NodeShape`]).
    shapes: Vec<NodeShape>,
    ports: Vec<Port>,
    /// Per port (same index): the directed path of the sweep that last reached it.
    routes: Vec<PathRef>,
    switches: Vec<Switch>,
    by_guid: HashMap<Guid, u32>,
    /// Directed paths of this sweep (ports point into it).
    paths: Vec<u8>,
    /// The SM's own node and port (known after the hop-0 NodeInfo).
    local: u32,
    local_port: u8,
    /// Links found in this sweep.
    links: u64,
    /// PortInfos read in this sweep.
    ports_read: u64,
    /// Minimum SMPs this sweep's discovery needs (SMInfo Gets of other SMs included).
    min_smps: u64,
    /// A targeted sweep's state (idle in a full discovery).
    retarget: targeted::Retarget,
}

/// What a finished discovery found.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Found {
    pub nodes: usize,
    pub switches: usize,
    pub ports: u64,
    pub links: u64,
    pub min_smps: u64,
    /// Every linked port is ACTIVE.
    pub all_active: bool,
    /// The SM's own port has a link (nothing to manage otherwise).
    pub linked: bool,
}

impl Discovery {
    pub fn new() -> Discovery {
        Discovery {
            sweep: 0,
            nodes: Vec::new(),
            shapes: Vec::new(),
            ports: Vec::new(),
            routes: Vec::new(),
            switches: Vec::new(),
            by_guid: HashMap::new(),
            paths: Vec::new(),
            local: NONE,
            local_port: 0,
            links: 0,
            ports_read: 0,
            min_smps: 0,
            retarget: targeted::Retarget::default(),
        }
    }

    /// Number of the current (or last) heavy sweep.
    pub fn sweep(&self) -> u64 {
        self.sweep
    }

    /// Links of this sweep so far (a targeted sweep's read of a port found down removes one).
    pub fn link_count(&self) -> u64 {
        self.links
    }

    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    pub fn node(&self, i: u32) -> &Node {
        &self.nodes[i as usize]
    }

    /// What addressing a request reads of node `i` (see [`NodeShape`]).
    pub fn shape(&self, i: u32) -> &NodeShape {
        &self.shapes[i as usize]
    }

    /// The node was reached by the current sweep.
    pub fn seen(&self, i: u32) -> bool {
        self.nodes[i as usize].seen == self.sweep
    }

    pub fn port(&self, pi: usize) -> &Port {
        &self.ports[pi]
    }

    pub fn port_mut(&mut self, pi: usize) -> &mut Port {
        &mut self.ports[pi]
    }

    /// The heavy sweep whose directed path reaches port `pi` (0 = none yet).
    pub fn path_sweep(&self, pi: usize) -> u64 {
        self.routes[pi].sweep
    }

    /// Management port `pi`: index of the candidate M_Key believed in force.
    pub fn key_idx(&self, pi: usize) -> u8 {
        self.routes[pi].key_idx
    }

    /// Records the candidate M_Key believed in force at management port `pi`.
    pub fn set_key_idx(&mut self, pi: usize, k: u8) {
        self.routes[pi].key_idx = k;
    }

    /// Port `p` of node `i`.
    pub fn port_of(&self, i: u32, p: u8) -> &Port {
        &self.ports[self.nodes[i as usize].port_index(p)]
    }

    /// Port `p` of node `i`.
    pub fn port_of_mut(&mut self, i: u32, p: u8) -> &mut Port {
        let pi = self.nodes[i as usize].port_index(p);
        &mut self.ports[pi]
    }

    pub fn switches(&self) -> &[Switch] {
        &self.switches
    }

    pub fn switches_mut(&mut self) -> &mut [Switch] {
        &mut self.switches
    }

    /// Every switch record with its node GUID.
    pub fn switches_by_guid_mut(&mut self) -> impl Iterator<Item = (Guid, &mut Switch)> + '_ {
        let nodes = &self.nodes;
        self.switches
            .iter_mut()
            .map(move |s| (nodes[s.node as usize].guid, s))
    }

    pub fn switch(&self, sw: u32) -> &Switch {
        &self.switches[sw as usize]
    }

    pub fn switch_mut(&mut self, sw: u32) -> &mut Switch {
        &mut self.switches[sw as usize]
    }

    /// Node index of a node GUID.
    pub fn find(&self, guid: Guid) -> Option<u32> {
        self.by_guid.get(&guid).copied()
    }

    /// The SM's own node (NONE before the hop-0 NodeInfo).
    pub fn local(&self) -> u32 {
        self.local
    }

    /// The SM's own port number.
    pub fn local_port(&self) -> u8 {
        self.local_port
    }

    /// The SM's own port record. Only called once discovery linked the SM's port (the
    /// sweep ends before LIDs otherwise), so `local` is a node index.
    pub fn sm_port(&self) -> &Port {
        self.port_of(self.local, self.local_port)
    }

    /// The SM's own port GUID (known after the hop-0 NodeInfo).
    pub fn sm_port_guid(&self) -> Option<Guid> {
        (self.local != NONE).then(|| self.sm_port().guid)
    }

    /// One more SMP the sweep's discovery needs at least (SMInfo Gets of other SMs).
    pub fn count_min(&mut self) {
        self.min_smps += 1;
    }

    /// Minimum SMPs of this sweep's discovery.
    pub fn min_smps(&self) -> u64 {
        self.min_smps
    }

    /// The end ports of the nodes this sweep reached, with their node index: a switch's
    /// port 0, every port of a CA or router (the ports that carry a LID and PortInfo's
    /// management fields).
    pub fn end_ports_seen(&self) -> impl Iterator<Item = (u32, u8, &Node, &Port)> + '_ {
        let sweep = self.sweep;
        self.nodes
            .iter()
            .enumerate()
            .filter(move |(_, n)| n.seen == sweep)
            .flat_map(move |(i, n)| {
                let range = if n.is_switch { 0..=0 } else { 1..=n.nports };
                range.map(move |p| (i as u32, p, n, &self.ports[n.port_index(p)]))
            })
    }

    /// Linked ports of this sweep's nodes that are not ACTIVE.
    pub fn linked_not_active(&self) -> usize {
        let sweep = self.sweep;
        let mut inactive = 0usize;
        for n in self.nodes.iter().filter(|n| n.seen == sweep) {
            for p in 1..=n.nports {
                let port = &self.ports[n.port_index(p)];
                if port.remote_sweep == sweep && port.info.port_state != 4 {
                    inactive += 1;
                }
            }
        }
        inactive
    }

    /// Index of the port whose path (and LID) reaches `node` for a request about `port`:
    /// a CA port reached on its own is addressed through itself (a CA's SMA applies
    /// P_KeyTable and other per-port attributes to the port an SMP arrives on).
    pub fn route_port(&self, node: u32, port: u8) -> usize {
        let n = &self.shapes[node as usize];
        if !n.is_switch && port != 0 && port <= n.nports {
            let i = n.port_index(port);
            if self.routes[i].sweep != 0 {
                return i;
            }
        }
        n.port_index(n.path_port)
    }

    /// The LID the port at `(node, port)` (a switch's port 0) reported in its last
    /// PortInfo, whoever assigned it (0: none, or the node is unknown).
    pub fn reported_lid(&self, node: u32, port: u8) -> Lid {
        if node == NONE {
            return Lid(0);
        }
        self.ports[self.route_port(node, port)].info.lid
    }

    /// The LID a LID-routed SMP to `node` goes to (0 when it has none in the fabric yet).
    pub fn target_lid(&self, node: u32, port: u8) -> Lid {
        if node == NONE {
            return Lid(0);
        }
        let p = &self.ports[self.route_port(node, port)];
        if p.info.lid == p.lid && p.lid.0 != 0 {
            p.lid
        } else {
            Lid(0)
        }
    }

    /// The gate of a request: the switch whose VL15 buffer it occupies last.
    pub fn gate_of(&self, req: &Req) -> u32 {
        if req.node == NONE {
            return NONE;
        }
        if req.op == Op::Probe {
            return req.node;
        }
        let n = &self.shapes[req.node as usize];
        if n.is_switch {
            return req.node;
        }
        let p = &self.routes[self.route_port(req.node, req.port)];
        if p.via == NONE { req.node } else { p.via }
    }

    /// Copies the directed path of a request into `buf` (a probe goes one hop past its
    /// node) and returns its length.
    pub fn path_to(&self, req: &Req, buf: &mut [u8; 64]) -> Option<usize> {
        if req.node == NONE {
            return Some(0);
        }
        let p = &self.routes[self.route_port(req.node, req.port)];
        // A path of an earlier sweep points into an arena cleared since (a Get queued by a
        // light sweep or a poll, built after a heavy sweep began): not sent.
        if p.sweep == 0 || p.sweep != self.sweep {
            return None;
        }
        let (off, len) = (p.off as usize, p.len as usize);
        buf[..len].copy_from_slice(self.paths.get(off..off + len)?);
        if req.op == Op::Probe {
            if len >= mad::smp::MAX_HOPS as usize {
                return None;
            }
            buf[len] = req.port;
            return Some(len + 1);
        }
        Some(len)
    }

    /// A directed route of the current sweep reaches the request's target (a heavy sweep
    /// that started since cleared the path arena).
    pub fn has_current_path(&self, req: &Req) -> bool {
        req.node == NONE || self.routes[self.route_port(req.node, req.port)].sweep == self.sweep
    }

    /// Index of the management port whose M_Key a request is checked against (None:
    /// unknown target).
    pub fn mgmt_index(&self, req: &Req) -> Option<usize> {
        if req.node == NONE || req.op == Op::Probe {
            return None;
        }
        let n = &self.shapes[req.node as usize];
        Some(if n.is_switch {
            n.port_index(0)
        } else {
            self.route_port(req.node, req.port)
        })
    }

    /// The management port of the end port answering to `lid` (its LMC range covers it).
    pub fn mgmt_index_at_lid(&self, lid: Lid) -> Option<usize> {
        for n in &self.nodes {
            let range = if n.is_switch { 0..=0 } else { 1..=n.nports };
            for p in range {
                let port = &self.ports[n.port_index(p)];
                let lo = port.info.lid.0;
                if lo != 0 && lid.0 >= lo && lid.0 - lo < (1u16 << port.info.lmc.min(7)) {
                    return Some(if n.is_switch {
                        n.first_port as usize
                    } else {
                        n.port_index(p)
                    });
                }
            }
        }
        None
    }

    /// (node, port) of an end port with GUID `guid` and a known path.
    pub fn end_port_with_path(&self, guid: Guid) -> Option<(u32, u8)> {
        for (i, n) in self.nodes.iter().enumerate() {
            let range = if n.is_switch { 0..=0 } else { 1..=n.nports };
            for p in range {
                if self.ports[n.port_index(p)].guid == guid
                    && self.routes[self.route_port(i as u32, p)].sweep != 0
                {
                    return Some((i as u32, p));
                }
            }
        }
        None
    }

    /// The fabric as this sweep discovered it (nodes seen and the links between them),
    /// built the way routing sees it, with the topology node id of each node index (NONE:
    /// not in it) and the node indices in it. `strict`: a node or port GUID the topology
    /// refuses is an error (else it is left out). Inconsistent links are left out.
    pub fn topology(&self, strict: bool) -> Result<(Topology, Vec<u32>, Vec<usize>), SmError> {
        let sweep = self.sweep;
        let mut topo = Topology::new();
        let mut tnode = vec![NONE; self.nodes.len()];
        let mut order = Vec::new();
        for (i, n) in self.nodes.iter().enumerate() {
            if n.seen != sweep {
                continue;
            }
            let Some(kind) = n.info.kind() else { continue };
            let id = match topo.add_node(kind, u16::from(n.nports), n.guid, n.desc.text()) {
                Ok(id) => id,
                Err(e) if strict => return Err(e.into()),
                Err(_) => continue,
            };
            tnode[i] = id.0;
            order.push(i);
            if !n.is_switch {
                for p in 1..=n.nports {
                    let port = &self.ports[n.port_index(p)];
                    if self.routes[n.port_index(p)].sweep == sweep && port.guid.0 != 0 {
                        let r = topo.set_port_guid(PortRef::new(id, p), port.guid);
                        if strict {
                            r?;
                        }
                    }
                }
            }
        }
        for &i in &order {
            let n = &self.nodes[i];
            for p in 1..=n.nports {
                let port = &self.ports[n.port_index(p)];
                if port.remote_sweep != sweep || port.remote == NONE {
                    continue;
                }
                let r = port.remote as usize;
                if tnode[r] == NONE || (r, port.remote_port) <= (i, p) {
                    continue;
                }
                // An inconsistent pair (a port claimed twice) is skipped, not fatal.
                let _ = topo.connect(
                    PortRef::new(NodeId(tnode[i]), p),
                    PortRef::new(NodeId(tnode[r]), port.remote_port),
                );
            }
        }
        Ok((topo, tnode, order))
    }

    /// Did a port of `node` lose its link in this sweep (linked in the sweep before, not
    /// now)?
    pub fn lost_a_link(&self, node: u32) -> bool {
        let n = &self.nodes[node as usize];
        (1..=n.nports).any(|p| {
            let port = &self.ports[n.port_index(p)];
            port.remote != NONE && port.remote_sweep.saturating_add(1) == self.sweep
        })
    }

    /// A heavy sweep starts: a new sweep number, no path, the statistics and the per-sweep
    /// flags of the switch records reset.
    pub fn start(&mut self) {
        self.sweep += 1;
        self.paths.clear();
        self.links = 0;
        self.ports_read = 0;
        self.min_smps = 1;
        self.retarget = targeted::Retarget::default();
        for s in &mut self.switches {
            s.psc_seen = false;
            s.lft_failed = false;
        }
    }

    fn new_node(
        &mut self,
        info: &NodeInfo,
        known_pkeys: Option<&KnownPKeys>,
        known_lfts: Option<&Lfts>,
    ) -> u32 {
        let idx = self.nodes.len() as u32;
        let is_switch = info.is_switch();
        let first_port = self.ports.len() as u32;
        self.ports.resize_with(
            self.ports.len() + info.num_ports as usize + 1,
            Port::default,
        );
        self.routes.resize(self.ports.len(), PathRef::default());
        for (k, p) in self.ports[first_port as usize..].iter_mut().enumerate() {
            p.remote = NONE;
            if is_switch {
                p.guid = info.port_guid;
            }
            if let Some(t) = known_pkeys.and_then(|m| m.get(&(info.node_guid, k as u8))) {
                p.pkey_known.clone_from(t);
                p.pkey_known_valid = true;
            }
        }
        // A table handed in as known (failover) counts as programmed until SwitchInfo
        // says otherwise (LinearFDBTop mismatch).
        let known_top = known_lfts
            .and_then(|l| l.by_guid(info.node_guid))
            .map(routed_top);
        let sw = if is_switch {
            self.switches.push(Switch {
                node: idx,
                info: SwitchInfo::default(),
                lft_valid: known_top.is_some(),
                fdb_top: known_top.unwrap_or(0),
                lft_idx: NONE,
                psc_seen: false,
                lft_failed: false,
                mft_top_want: None,
            });
            self.switches.len() as u32 - 1
        } else {
            NONE
        };
        self.shapes.push(NodeShape {
            first_port,
            sw,
            nports: info.num_ports,
            is_switch,
            path_port: 0,
        });
        self.nodes.push(Node {
            guid: info.node_guid,
            info: *info,
            desc: NodeDescription::default(),
            is_switch,
            nports: info.num_ports,
            first_port,
            seen: 0,
            path_port: 0,
            sw,
        });
        self.by_guid.insert(info.node_guid, idx);
        idx
    }

    /// A NodeInfo answered the probe `req`: the node is recorded (new, or found again by
    /// GUID), linked to the port probed, and its path recorded. Returns the Gets it calls
    /// for (NodeDescription, SwitchInfo, PortInfo), in order.
    pub fn on_node_info(
        &mut self,
        req: &Req,
        info: NodeInfo,
        known_pkeys: Option<&KnownPKeys>,
        known_lfts: Option<&Lfts>,
    ) -> Vec<(Op, u32, u8)> {
        let mut gets = Vec::new();
        let idx = match self.by_guid.get(&info.node_guid) {
            Some(&i) if self.nodes[i as usize].nports == info.num_ports => i,
            Some(_) | None => {
                if let Some(&old) = self.by_guid.get(&info.node_guid) {
                    // Same GUID, different shape: forget the old record.
                    self.nodes[old as usize].seen = 0;
                }
                self.new_node(&info, known_pkeys, known_lfts)
            }
        };
        let sweep = self.sweep;
        let entry = if info.is_switch() {
            0
        } else {
            info.local_port_num
        };
        if entry > self.nodes[idx as usize].nports {
            return gets;
        }
        if req.node == NONE {
            self.local = idx;
            self.local_port = info.local_port_num;
        } else {
            // Link parent.port <-> idx.local_port_num.
            let pp = self.nodes[req.node as usize].port_index(req.port);
            let rp = self.nodes[idx as usize].port_index(info.local_port_num);
            let new_link = self.ports[pp].remote_sweep != sweep;
            if self.targeted() && rp < self.ports.len() {
                // A port's far end that changed (a cable moved between traps) is settled
                // by a full discovery; a link that came up to a known node has that
                // node's port read again (it was down when last read).
                let (a, b) = (&self.ports[pp], &self.ports[rp]);
                if (!new_link && (a.remote, a.remote_port) != (idx, info.local_port_num))
                    || (b.remote_sweep == sweep
                        && (b.remote, b.remote_port) != (req.node, req.port))
                {
                    self.want_full();
                }
                let known_entry =
                    self.nodes[idx as usize].is_switch || self.routes[rp].sweep == sweep;
                if new_link && self.nodes[idx as usize].seen == sweep && known_entry {
                    self.min_smps += 1;
                    gets.push((Op::PortInfoGet, idx, info.local_port_num));
                }
            }
            if rp < self.ports.len() && new_link {
                self.links += 1;
                self.min_smps += 1;
            }
            self.ports[pp].remote = idx;
            self.ports[pp].remote_port = info.local_port_num;
            self.ports[pp].remote_sweep = sweep;
            let r = &mut self.ports[rp];
            r.remote = req.node;
            r.remote_port = req.port;
            r.remote_sweep = sweep;
        }
        let ep = self.nodes[idx as usize].port_index(entry);
        let fresh_node = self.nodes[idx as usize].seen != sweep;
        let fresh_port = self.routes[ep].sweep != sweep;
        if !fresh_node && !fresh_port {
            return gets;
        }
        // Record the directed path to this node through `entry`.
        let off = self.paths.len() as u32;
        let len = if req.node == NONE {
            0
        } else {
            let n = &self.nodes[req.node as usize];
            let pp = &self.routes[n.port_index(n.path_port)];
            let (o, l) = (pp.off as usize, pp.len as usize);
            self.paths.extend_from_within(o..o + l);
            self.paths.push(req.port);
            l + 1
        };
        {
            let r = &mut self.routes[ep];
            r.sweep = sweep;
            r.off = off;
            r.via = req.node;
            r.len = len as u8;
            if !info.is_switch() {
                self.ports[ep].guid = info.port_guid;
            }
        }
        if fresh_node {
            let n = &mut self.nodes[idx as usize];
            n.seen = sweep;
            n.info = info;
            n.path_port = entry;
            self.shapes[idx as usize].path_port = entry;
            self.min_smps += 1;
            gets.push((Op::NodeDesc, idx, 0));
            if info.is_switch() {
                self.min_smps += 1;
                gets.push((Op::SwitchInfoGet, idx, 0));
                for p in 0..=info.num_ports {
                    self.min_smps += 1;
                    gets.push((Op::PortInfoGet, idx, p));
                }
                return gets;
            }
        }
        // A CA (or router) port: its PortInfo (the attribute modifier names the port).
        self.min_smps += 1;
        gets.push((Op::PortInfoGet, idx, entry));
        gets
    }

    /// A NodeDescription answered.
    pub fn on_node_desc(&mut self, node: u32, desc: NodeDescription) {
        self.nodes[node as usize].desc = desc;
    }

    /// A PortInfo Get answered. Returns true when the port should be probed one hop
    /// further (its link is up and its peer is not known yet).
    pub fn on_port_info(&mut self, node: u32, port: u8, info: PortInfo) -> bool {
        let sweep = self.sweep;
        let (is_switch, pi) = {
            let n = &self.nodes[node as usize];
            (n.is_switch, n.port_index(port))
        };
        let target = self.is_target(node);
        let up = info.port_state >= 2;
        if target && port != 0 && !up {
            self.unlink(pi);
        }
        let p = &mut self.ports[pi];
        // ACTIVE when last read and ACTIVE now: the link has not been down in between (a
        // port whose link goes down drops to Down and comes back in Init; only an SM's
        // PortInfo Set makes it ACTIVE again), so its far end is the one already known.
        let stayed_active = p.info_sweep == sweep && p.info.port_state == 4 && info.port_state == 4;
        p.info = info;
        p.info_sweep = sweep;
        if port == 0 || !is_switch {
            p.fresh = info.lid.0 == 0;
        }
        self.ports_read += 1;
        // A targeted sweep probes every up port of a target again whose link may have
        // been down since it was read (its far end may have changed); a full one only the
        // ports whose peer is not known yet.
        let probe = up
            && port != 0
            && (p.remote_sweep != sweep || (target && !stayed_active))
            && (is_switch || node == self.local);
        if probe && target && p.remote_sweep == sweep {
            self.min_smps += 1;
        }
        probe
    }

    /// A SwitchInfo Get answered; returns the reads a targeted sweep calls for.
    pub fn on_switch_info(&mut self, node: u32, info: SwitchInfo) -> targeted::Gets {
        let gets = self.targeted_switch_info(node, info.port_state_change);
        let sw = self.nodes[node as usize].sw;
        let s = &mut self.switches[sw as usize];
        if s.lft_valid && info.linear_fdb_top != s.fdb_top {
            // The switch lost its table (reboot): rewrite every block.
            s.lft_valid = false;
        }
        s.psc_seen |= info.port_state_change;
        s.info = info;
        gets
    }

    /// Nothing of the discovery is left in flight: what fresh ports no longer hold and
    /// what unreached switches hold is marked unknown, and what was found is summed up.
    pub fn finish(&mut self) -> Found {
        self.end_targeted();
        let sweep = self.sweep;
        let mut all_active = true;
        for n in self.nodes.iter().filter(|n| n.seen == sweep) {
            let base = &self.ports[n.first_port as usize];
            let mgmt_fresh = n.is_switch && base.fresh;
            for p in 0..=n.nports {
                let port = &mut self.ports[n.port_index(p)];
                if n.is_switch {
                    port.fresh = mgmt_fresh;
                }
                // A port found fresh (reset since it was configured: a switch rebooted, a
                // node power-cycled, possibly while no master ran) holds the default
                // P_KeyTable, whatever this sweeper wrote before or was seeded with
                // (`known_pkeys` on a takeover): plan it from the default again.
                if port.fresh && (n.is_switch || port.info_sweep == sweep) {
                    port.pkey_known_valid = false;
                }
                if p != 0 && port.remote_sweep == sweep && port.info.port_state != 4 {
                    all_active = false;
                }
            }
            if mgmt_fresh {
                // Its LFT (and MFT, see `Multicast::plan`) is back to the default too, even
                // where LinearFDBTop happens to match what was known.
                self.switches[n.sw as usize].lft_valid = false;
            }
        }
        let nodes = self.nodes.iter().filter(|n| n.seen == sweep).count();
        let switches = self
            .nodes
            .iter()
            .filter(|n| n.seen == sweep && n.is_switch)
            .count();
        // Switches not reached this sweep keep nothing we believe about them.
        for s in &mut self.switches {
            if self.nodes[s.node as usize].seen != sweep {
                s.lft_valid = false;
            }
        }
        let linked = self.local != NONE && {
            let n = &self.nodes[self.local as usize];
            self.ports[n.port_index(self.local_port)].remote_sweep == sweep
        };
        Found {
            nodes,
            switches,
            ports: self.ports_read,
            links: self.links,
            min_smps: self.min_smps,
            all_active,
            linked,
        }
    }
}
