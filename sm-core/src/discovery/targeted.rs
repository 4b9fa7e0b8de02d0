//! Targeted re-discovery: the heavy sweep a link-state trap (128) starts re-reads only the
//! switches that trapped (before it started, or while it discovers) instead of the whole
//! fabric.
//!
//! The previous sweep's nodes, links and directed paths are carried into the new sweep
//! number; every port of a trapping switch is read again (PortInfo) and every up port
//! probed again (NodeInfo) unless it was ACTIVE when last read and still is (its link has
//! not been down since: a port comes back from a link down in Init, and only an SM makes it
//! ACTIVE), so a link that went down is removed, a link that came up is followed (a node
//! not known yet is discovered as in a full sweep, with everything behind it) and a link
//! whose far end changed is noticed. When the reads are in, the nodes still
//! reachable from the SM's port are found again breadth-first, a directed path that crosses
//! a removed link is replaced by one over the links in place, and what is no longer
//! reachable is left out of the sweep, exactly as a full sweep would not have found it.
//!
//! Then every switch whose path was replaced, and every switch the light sweep before it
//! could not reach, is read again (SwitchInfo) over its path. A check whose path a target's
//! port read cuts while it is in flight is taken back at once (it cannot answer) and the
//! switch is checked again by the next round over a path that still leads to it, if any
//! (a switch removed whole: its neighbours, read whole for their traps or their
//! PortStateChange, cut every path to it, and it is left out without waiting for a
//! timeout). A check that does not answer is taken to be gone (its links removed, its
//! neighbours made targets, whose port reads confirm it: a switch removed whole, whose
//! neighbours' traps were lost with it, is settled without a full discovery), one that
//! reports a PortStateChange becomes a target too, and the rounds go on until no target is
//! left. What it cannot settle alone (a port's far end that changed, a read that did not
//! answer) asks for a full discovery instead ([`Discovery::needs_full`]); the periodic
//! heavy sweep still rediscovers everything.

use super::Discovery;
use crate::io::Op;
use crate::state::NONE;
use fabric::Lid;
use std::collections::{BTreeSet, VecDeque};

/// A targeted sweep's state (see the module documentation).
#[derive(Debug, Default)]
pub(crate) struct Retarget {
    /// A targeted sweep is running.
    active: bool,
    /// Switches whose ports were read again (node indices).
    read: BTreeSet<u32>,
    /// Switches whose path was checked by a SwitchInfo read.
    verified: BTreeSet<u32>,
    /// Targets read since the last breadth-first pass.
    round: Vec<u32>,
    /// No breadth-first pass has run yet.
    fresh: bool,
    /// Found what only a full discovery settles.
    needs_full: bool,
    /// Switches taken to be gone (a check read did not answer).
    gone: BTreeSet<u32>,
}

/// The reads a targeted step calls for: (op, node, port).
pub(crate) type Gets = Vec<(Op, u32, u8)>;

impl Discovery {
    /// The switch (node index) whose management port answers to `lid`, seen in the last
    /// sweep.
    pub fn switch_at_lid(&self, lid: Lid) -> Option<u32> {
        let sweep = self.sweep;
        let at = |n: &crate::state::Node| {
            let p = &self.ports[n.first_port as usize];
            let lo = p.info.lid.0;
            lo != 0 && lid.0 >= lo && lid.0 - lo < (1u16 << p.info.lmc.min(7))
        };
        (self.nodes.iter())
            .position(|n| n.is_switch && n.seen == sweep && at(n))
            .map(|i| i as u32)
    }

    /// Starts a targeted sweep of the switches `targets` (node indices seen in the last
    /// sweep): what the last sweep found is carried into the new sweep number. Returns the
    /// reads it calls for: SwitchInfo and the PortInfo of every port of every target.
    pub fn start_targeted(&mut self, targets: &[u32]) -> Gets {
        let prev = self.sweep;
        self.sweep += 1;
        let sweep = self.sweep;
        self.ports_read = 0;
        self.min_smps = 0;
        for n in &mut self.nodes {
            if n.seen == prev {
                n.seen = sweep;
            }
        }
        let mut ends = 0u64;
        for p in &mut self.ports {
            // Handled by the sweep that found it: only a port read again is fresh now.
            p.fresh = false;
            if p.remote_sweep == prev {
                p.remote_sweep = sweep;
                ends += 1;
            }
            if p.info_sweep == prev {
                p.info_sweep = sweep;
            }
        }
        self.links = ends / 2;
        for r in &mut self.routes {
            if r.sweep == prev {
                r.sweep = sweep;
            }
        }
        for s in &mut self.switches {
            s.psc_seen = false;
            s.lft_failed = false;
        }
        self.retarget = Retarget {
            active: true,
            fresh: true,
            ..Retarget::default()
        };
        targets.iter().flat_map(|&t| self.add_trapped(t)).collect()
    }

    /// A switch that trapped becomes a target: its SwitchInfo (its PortStateChange is
    /// cleared by this sweep, a lost table seen) and the PortInfo of each of its ports.
    fn add_trapped(&mut self, node: u32) -> Gets {
        let mut gets = Vec::new();
        if self.retarget.verified.insert(node) {
            self.min_smps += 1;
            gets.push((Op::SwitchInfoGet, node, 0));
        }
        gets.extend(self.add_target(node));
        gets
    }

    /// A switch at `lid` trapped while a targeted sweep runs: it becomes one of its targets
    /// (SwitchInfo and every PortInfo), as if it had trapped before the sweep started. None
    /// when no targeted sweep runs, no switch of the last sweep answers to `lid`, or that
    /// switch was read already (what changed since is swept by another sweep).
    pub fn join_targeted(&mut self, lid: Lid) -> Option<Gets> {
        if !self.retarget.active {
            return None;
        }
        let node = self.switch_at_lid(lid)?;
        if self.retarget.read.contains(&node) {
            return None;
        }
        Some(self.add_trapped(node))
    }

    /// Makes `node` a target of the running targeted sweep: PortInfo of each of its ports
    /// (nothing when it already is one).
    fn add_target(&mut self, node: u32) -> Gets {
        if !self.retarget.read.insert(node) {
            return Vec::new();
        }
        self.retarget.round.push(node);
        let n = self.nodes[node as usize].nports;
        self.min_smps += u64::from(n) + 1;
        (0..=n).map(|p| (Op::PortInfoGet, node, p)).collect()
    }

    /// A SwitchInfo of a targeted sweep answered: a switch reporting a PortStateChange that
    /// is not a target yet becomes one.
    pub(super) fn targeted_switch_info(&mut self, node: u32, psc: bool) -> Gets {
        if self.retarget.active && psc {
            return self.add_target(node);
        }
        Vec::new()
    }

    /// The running targeted sweep has nothing in flight: after the targets read since the
    /// last pass, the reachable nodes are found again and the paths replaced; returns the
    /// SwitchInfo reads that check the replaced paths and the switches in `unreached` (a
    /// light sweep's polls that did not answer), none when nothing is left to check.
    pub fn settle_round(&mut self, unreached: &[u32]) -> Gets {
        if !self.retarget.fresh && self.retarget.round.is_empty() {
            return Vec::new();
        }
        self.retarget.fresh = false;
        self.retarget.round.clear();
        let mut suspects = self.reach_again();
        suspects.extend(unreached.iter().copied());
        let sweep = self.sweep;
        let mut gets = Vec::new();
        for n in suspects {
            let node = &self.nodes[n as usize];
            if node.is_switch && node.seen == sweep && self.retarget.verified.insert(n) {
                self.min_smps += 1;
                gets.push((Op::SwitchInfoGet, n, 0));
            }
        }
        gets
    }

    /// Is a targeted sweep running?
    pub fn targeted(&self) -> bool {
        self.retarget.active
    }

    /// A targeted sweep found something only a full discovery settles.
    pub fn needs_full(&self) -> bool {
        self.retarget.needs_full
    }

    /// A switch whose check read (SwitchInfo over its path) did not answer: taken to be gone,
    /// as a full discovery would not find it. Its links are removed at both ends and the
    /// port of each neighbour that led to it is read again: a port found up is probed and
    /// followed again (so a switch that was only slow is found back), one found down stays
    /// unlinked. None when that cannot settle it (not a switch, a target itself, the SM's
    /// own node, already taken to be gone): a full discovery then.
    pub fn switch_gone(&mut self, node: u32) -> Option<Gets> {
        let n = self.nodes.get(node as usize)?;
        if !self.retarget.active
            || !n.is_switch
            || node == self.local
            || self.retarget.read.contains(&node)
            || !self.retarget.gone.insert(node)
        {
            return None;
        }
        let sweep = self.sweep;
        let (first, nports) = (n.first_port as usize, n.nports);
        let mut gets = Vec::new();
        for p in 1..=nports {
            let pi = first + usize::from(p);
            let port = &self.ports[pi];
            if port.remote_sweep == sweep && port.remote != NONE {
                let (r, rp) = (port.remote, port.remote_port);
                self.unlink(pi);
                if self.nodes[r as usize].is_switch && r != node {
                    self.min_smps += 1;
                    gets.push((Op::PortInfoGet, r, rp));
                }
            }
        }
        self.retarget.fresh = true;
        Some(gets)
    }

    /// Asks for a full discovery after this targeted sweep.
    pub fn want_full(&mut self) {
        self.retarget.needs_full = true;
    }

    /// Is a SwitchInfo read of `node` a targeted sweep's check of a switch it does not read
    /// whole (a replaced path, a light sweep's unanswered poll)?
    pub fn is_check(&self, node: u32) -> bool {
        self.retarget.active
            && self.retarget.verified.contains(&node)
            && !self.retarget.read.contains(&node)
    }

    /// Is a check read of `node` in flight over a path that no longer leads to it (a
    /// target's port on it was read down since it went out)? It cannot answer: waiting for
    /// its timeout would only delay the sweep.
    pub fn check_doomed(&self, node: u32) -> bool {
        self.is_check(node) && {
            let ep = self.nodes[node as usize].port_index(0);
            !self.path_leads_to(ep, node, 0)
        }
    }

    /// A doomed check read (see [`Discovery::check_doomed`]) was taken back: the switch is
    /// checked again by the next round, over a path that leads to it, if one is left.
    pub fn uncheck(&mut self, node: u32) {
        if self.retarget.verified.remove(&node) {
            self.min_smps = self.min_smps.saturating_sub(1);
            self.retarget.fresh = true;
        }
    }

    /// Is `node` one of the targeted sweep's switches?
    pub(super) fn is_target(&self, node: u32) -> bool {
        self.retarget.active && self.retarget.read.contains(&node)
    }

    /// The targeted sweep ends (its last pass has run).
    pub(super) fn end_targeted(&mut self) {
        self.retarget.active = false;
    }

    /// A port of a target read down: its link (when it had one) is removed at both ends,
    /// left as a full sweep leaves a link it did not find (the peer kept, last found in
    /// the sweep before: `explain` names it).
    pub(super) fn unlink(&mut self, pi: usize) {
        let sweep = self.sweep;
        let p = &self.ports[pi];
        if p.remote_sweep != sweep || p.remote == NONE {
            return;
        }
        let (r, rp) = (p.remote, p.remote_port);
        let ri = self.nodes[r as usize].port_index(rp);
        for i in [pi, ri] {
            self.ports[i].remote_sweep = sweep - 1;
        }
        self.links = self.links.saturating_sub(1);
    }

    /// A breadth-first pass: the nodes reachable from the SM's port are found over the
    /// links in place; every path that no longer leads to its node is replaced; what is
    /// unreachable is no longer seen in this sweep. Returns the switches whose path was
    /// replaced.
    fn reach_again(&mut self) -> Vec<u32> {
        let sweep = self.sweep;
        let mut replaced = Vec::new();
        if self.local == NONE {
            self.want_full();
            return replaced;
        }
        let mut reached = vec![false; self.nodes.len()];
        let mut queue = VecDeque::from([self.local]);
        reached[self.local as usize] = true;
        while let Some(i) = queue.pop_front() {
            let n = &self.nodes[i as usize];
            // Probes go out of switches and the SM's own node only (as in discovery).
            if !n.is_switch && i != self.local {
                continue;
            }
            let (first, nports, is_switch) = (n.first_port as usize, n.nports, n.is_switch);
            let out = if is_switch {
                1..=nports
            } else {
                self.local_port..=self.local_port
            };
            for p in out {
                let port = &self.ports[first + p as usize];
                if port.remote_sweep != sweep || port.remote == NONE {
                    continue;
                }
                let (r, rp) = (port.remote, port.remote_port);
                let entry = if self.nodes[r as usize].is_switch {
                    0
                } else {
                    rp
                };
                let ep = self.nodes[r as usize].port_index(entry);
                if !self.path_leads_to(ep, r, entry) {
                    if !self.set_path(i, p, ep) {
                        self.want_full();
                    }
                    if entry == 0 {
                        replaced.push(r);
                    }
                }
                if !reached[r as usize] {
                    reached[r as usize] = true;
                    queue.push_back(r);
                }
            }
        }
        for (i, reached) in reached.into_iter().enumerate() {
            if self.nodes[i].seen != sweep {
                continue;
            }
            let (first, nports, is_switch) = {
                let n = &self.nodes[i];
                (n.first_port as usize, n.nports, n.is_switch)
            };
            if !reached {
                self.nodes[i].seen = sweep - 1;
                for pi in first..=first + nports as usize {
                    self.unlink(pi);
                    self.routes[pi].sweep = sweep - 1;
                }
                continue;
            }
            if is_switch {
                continue;
            }
            // A CA port without a link has no path any more; the node's own path goes
            // through a port that still has one.
            for p in 1..=nports {
                let pi = first + p as usize;
                if self.ports[pi].remote_sweep != sweep && self.routes[pi].sweep == sweep {
                    if i as u32 == self.local && p == self.local_port {
                        continue;
                    }
                    self.routes[pi].sweep = sweep - 1;
                }
            }
            let pp = self.nodes[i].path_port;
            if self.routes[first + pp as usize].sweep != sweep
                && let Some(p) =
                    (1..=nports).find(|&p| self.routes[first + p as usize].sweep == sweep)
            {
                self.nodes[i].path_port = p;
                self.shapes[i].path_port = p;
            }
        }
        replaced
    }

    /// Does the directed path recorded at port index `ep` still lead from the SM's port to
    /// `node` (arriving on `entry` for a CA) over links of this sweep?
    fn path_leads_to(&self, ep: usize, node: u32, entry: u8) -> bool {
        let r = &self.routes[ep];
        if r.sweep != self.sweep {
            return false;
        }
        let (mut cur, mut arrived) = (self.local, self.local_port);
        for &hop in &self.paths[r.off as usize..r.off as usize + r.len as usize] {
            let n = &self.nodes[cur as usize];
            if (!n.is_switch && cur != self.local) || hop == 0 || hop > n.nports {
                return false;
            }
            let port = &self.ports[n.port_index(hop)];
            if port.remote_sweep != self.sweep || port.remote == NONE {
                return false;
            }
            (cur, arrived) = (port.remote, port.remote_port);
        }
        cur == node && (self.nodes[node as usize].is_switch || arrived == entry)
    }

    /// Records the path to port index `ep` as the path of `parent` plus its port `out`
    /// (false: that path would be longer than a directed route may be).
    fn set_path(&mut self, parent: u32, out: u8, ep: usize) -> bool {
        let off = self.paths.len() as u32;
        let n = &self.nodes[parent as usize];
        let pr = self.routes[n.port_index(n.path_port)];
        let (o, len) = (pr.off as usize, pr.len as usize);
        if len + 1 >= mad::smp::MAX_HOPS as usize {
            return false;
        }
        self.paths.extend_from_within(o..o + len);
        self.paths.push(out);
        let r = &mut self.routes[ep];
        r.sweep = self.sweep;
        r.off = off;
        r.len = (len + 1) as u8;
        r.via = parent;
        true
    }
}
