//! Heavy sweep, part 1: breadth-first discovery over directed routes.
//!
//! The hop-0 NodeInfo finds the SM's own node. Every new node gets NodeDescription, and
//! PortInfo of the port it was reached through (CAs) or of every port (switches, plus
//! SwitchInfo). Every switch port whose link is up and whose peer is not yet known gets a
//! NodeInfo probe one hop further. Nodes are identified by node GUID, so a node reached
//! again through another path (loops in tori and random graphs) is only linked, not expanded.

use crate::events::{Event, SweepReason};
use crate::io::{Op, Req};
use crate::state::{NONE, Node, Port, Switch};
use crate::sweeper::{Phase, Sweeper};
use mad::{NodeDescription, NodeInfo, PortInfo, Smp, SmpAttribute, SwitchInfo};

impl Sweeper {
    pub(crate) fn start_heavy(&mut self, reason: SweepReason) {
        self.sweep += 1;
        self.dirty = false;
        self.act_count = self.act_count.wrapping_add(1);
        self.phase = Phase::Discovering;
        self.sweep_start = *self.io.counters();
        self.paths.clear();
        self.disc_links = 0;
        self.disc_ports = 0;
        self.disc_min = 1;
        self.planned_sets = 0;
        self.failed_sets = 0;
        self.stage_counts = [0; 4];
        self.failed_ports.clear();
        self.during_routing.result = None;
        for s in &mut self.switches {
            s.psc_seen = false;
            s.lft_failed = false;
        }
        self.events.push_back(Event::HeavySweepStarted {
            sweep: self.sweep,
            reason,
        });
        self.push(Op::Probe, NONE, 0, 0);
    }

    /// Dispatches a successful response.
    pub(crate) fn on_reply(&mut self, req: Req, smp: &Smp) {
        match req.op {
            Op::Probe => self.on_node_info(req, NodeInfo::decode(&smp.data)),
            Op::NodeDesc => {
                self.nodes[req.node as usize].desc = NodeDescription::decode(&smp.data);
            }
            Op::PortInfoGet => {
                let info = PortInfo::decode(&smp.data);
                self.note_key(&req, &info);
                self.on_port_info(req, info)
            }
            Op::SwitchInfoGet => self.on_switch_info(req, SwitchInfo::decode(&smp.data)),
            Op::LightSwitchInfo => self.on_light_switch_info(req, SwitchInfo::decode(&smp.data)),
            Op::ReadBack => self.on_readback_reply(req, smp),
            // The answer to a handover Set: nothing to do (the wait polls).
            Op::SmInfoSet => {}
            Op::SmInfoGet => {
                if let Ok(i) = smp.attr::<mad::SmInfo>() {
                    self.on_sm_info(req, i);
                }
            }
            Op::LftGet => self.on_lft_block(req, smp),
            Op::LftSet
            | Op::PKeySet
            | Op::PortInfoSet
            | Op::SwitchInfoSet
            | Op::RekeySet
            | Op::MftSet => self.on_set_done(req, smp),
        }
    }

    /// A request given up after every retry.
    pub(crate) fn on_failure(&mut self, req: Req) {
        match req.op {
            // A probe that never returns: no usable peer on that port this sweep.
            // The sweep goes on with what it has, but is not clean: no SUBNET UP from it,
            // and the next interval brings a heavy sweep.
            Op::Probe | Op::NodeDesc | Op::PortInfoGet | Op::SwitchInfoGet => self.dirty = true,
            Op::LightSwitchInfo => self.light_changed = true,
            Op::ReadBack => self.on_readback_failed(req),
            // Another SM that does not answer (or a block not read back) stops nothing: the
            // SM is taken to be absent, the block is written.
            Op::SmInfoSet => self.sm_info_set_failed(req),
            Op::SmInfoGet | Op::LftGet => {}
            Op::LftSet
            | Op::PKeySet
            | Op::PortInfoSet
            | Op::SwitchInfoSet
            | Op::RekeySet
            | Op::MftSet => self.on_set_failed(req),
        }
    }

    fn new_node(&mut self, info: &NodeInfo) -> u32 {
        let idx = self.nodes.len() as u32;
        let is_switch = info.is_switch();
        let first_port = self.ports.len() as u32;
        self.ports.resize_with(
            self.ports.len() + info.num_ports as usize + 1,
            Port::default,
        );
        let known = self.cfg.known_pkeys.clone();
        for (k, p) in self.ports[first_port as usize..].iter_mut().enumerate() {
            p.remote = NONE;
            p.via = NONE;
            if is_switch {
                p.guid = info.port_guid;
            }
            if let Some(t) = known
                .as_ref()
                .and_then(|m| m.get(&(info.node_guid, k as u8)))
            {
                p.pkey_known.clone_from(t);
                p.pkey_known_valid = true;
            }
        }
        // A table handed in as known (failover) counts as programmed until SwitchInfo
        // says otherwise (LinearFDBTop mismatch).
        let known_top = self
            .lfts
            .as_ref()
            .and_then(|l| l.by_guid(info.node_guid))
            .map(crate::intent::routed_top);
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

    fn on_node_info(&mut self, req: Req, info: NodeInfo) {
        let idx = match self.by_guid.get(&info.node_guid) {
            Some(&i) if self.nodes[i as usize].nports == info.num_ports => i,
            Some(_) | None => {
                if let Some(&old) = self.by_guid.get(&info.node_guid) {
                    // Same GUID, different shape: forget the old record.
                    self.nodes[old as usize].seen = 0;
                }
                self.new_node(&info)
            }
        };
        let sweep = self.sweep;
        let entry = if info.is_switch() {
            0
        } else {
            info.local_port_num
        };
        if entry > self.nodes[idx as usize].nports {
            return;
        }
        if req.node == NONE {
            self.local = idx;
            self.local_port = info.local_port_num;
        } else {
            // Link parent.port <-> idx.local_port_num.
            let pp = self.nodes[req.node as usize].port_index(req.port);
            let rp = self.nodes[idx as usize].port_index(info.local_port_num);
            if rp < self.ports.len() && self.ports[pp].remote_sweep != sweep {
                self.disc_links += 1;
                self.disc_min += 1;
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
        let fresh_port = self.ports[ep].path_sweep != sweep;
        if !fresh_node && !fresh_port {
            return;
        }
        // Record the directed path to this node through `entry`.
        let off = self.paths.len() as u32;
        let len = if req.node == NONE {
            0
        } else {
            let n = &self.nodes[req.node as usize];
            let pp = &self.ports[n.port_index(n.path_port)];
            let (o, l) = (pp.path_off as usize, pp.path_len as usize);
            self.paths.extend_from_within(o..o + l);
            self.paths.push(req.port);
            l + 1
        };
        {
            let p = &mut self.ports[ep];
            p.path_off = off;
            p.path_len = len as u8;
            p.path_sweep = sweep;
            p.via = req.node;
            if !info.is_switch() {
                p.guid = info.port_guid;
            }
        }
        if fresh_node {
            let n = &mut self.nodes[idx as usize];
            n.seen = sweep;
            n.info = info;
            n.path_port = entry;
            self.disc_min += 1;
            self.push(Op::NodeDesc, idx, 0, 0);
            if info.is_switch() {
                self.disc_min += 1;
                self.push(Op::SwitchInfoGet, idx, 0, 0);
                for p in 0..=info.num_ports {
                    self.disc_min += 1;
                    self.push(Op::PortInfoGet, idx, p, 0);
                }
                return;
            }
        }
        // A CA (or router) port: its PortInfo (the attribute modifier names the port).
        self.disc_min += 1;
        self.push(Op::PortInfoGet, idx, entry, 0);
    }

    fn on_port_info(&mut self, req: Req, info: PortInfo) {
        let sweep = self.sweep;
        let (is_switch, pi) = {
            let n = &self.nodes[req.node as usize];
            (n.is_switch, n.port_index(req.port))
        };
        let p = &mut self.ports[pi];
        p.info = info;
        p.info_sweep = sweep;
        if req.port == 0 || !is_switch {
            p.fresh = info.lid.0 == 0;
        }
        self.disc_ports += 1;
        let up = info.port_state >= 2;
        let probe =
            up && req.port != 0 && p.remote_sweep != sweep && (is_switch || req.node == self.local);
        if probe {
            self.push(Op::Probe, req.node, req.port, 0);
        }
    }

    fn on_switch_info(&mut self, req: Req, info: SwitchInfo) {
        let sw = self.nodes[req.node as usize].sw;
        let s = &mut self.switches[sw as usize];
        if s.lft_valid && info.linear_fdb_top != s.fdb_top {
            // The switch lost its table (reboot): rewrite every block.
            s.lft_valid = false;
        }
        s.psc_seen |= info.port_state_change;
        s.info = info;
    }

    pub(crate) fn finish_discovery(&mut self) {
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
                // Its LFT (and MFT, see `plan_mfts`) is back to the default too, even where
                // LinearFDBTop happens to match what was known.
                self.switches[n.sw as usize].lft_valid = false;
            }
        }
        self.io.set_all_active(all_active);
        let nodes = self.nodes.iter().filter(|n| n.seen == sweep).count();
        let switches = self
            .nodes
            .iter()
            .filter(|n| n.seen == sweep && n.is_switch)
            .count();
        self.events.push_back(Event::DiscoveryDone {
            nodes,
            switches,
            ports: self.disc_ports as usize,
            links: self.disc_links as usize,
            smps: self.io.counters().since(&self.sweep_start).total(),
            min_smps: self.disc_min,
        });
        // Switches not reached this sweep keep nothing we believe about them.
        for s in &mut self.switches {
            if self.nodes[s.node as usize].seen != sweep {
                s.lft_valid = false;
            }
        }
        // Nothing to manage while the SM's own port has no link.
        let linked = self.local != NONE && {
            let n = &self.nodes[self.local as usize];
            self.ports[n.port_index(self.local_port)].remote_sweep == sweep
        };
        if !linked {
            // Not clean: the link may come back with the port in INIT and no trap says so
            // (no switch is known to poll), so every interval is a heavy sweep until it does.
            self.dirty = true;
            self.finish_heavy();
            return;
        }
        self.after_discovery();
    }
}

impl Sweeper {
    /// Phase::Lids: assigns LIDs, plans partitions, builds and emits the routing job.
    pub(crate) fn run_lids(&mut self) {
        match self.prepare_routing() {
            Ok(job) => {
                self.phase = Phase::Routing;
                self.events.push_back(Event::RoutingNeeded(Box::new(job)));
                self.plan_during_routing();
            }
            Err(e) => {
                self.events.push_back(Event::RoutingFailed(e.to_string()));
                self.finish_heavy();
            }
        }
    }
}
