//! Virtual ports in a heavy sweep (see `crate::vports`): read after discovery, LIDs with
//! the physical ports', routed with them, P_KeyTables in stage 2, brought up in stage 5.

use super::{Phase, Sweeper};
use crate::io::{Op, Req};
use crate::vports::{VPORT_PKEYS, VirtPort};
use fabric::{Guid, Lid, NodeType, PKey, PortState};
use mad::{PortInfo, SmpAttribute, VPortInfo, VPortPKeyTable, VirtualizationInfo};

impl Sweeper {
    /// The virtualization-capable CA ports the last heavy sweep read, with their vports.
    pub fn virt_ports(&self) -> impl Iterator<Item = &VirtPort> {
        self.vports.ports()
    }

    /// Discovery is over: reads the vports of the virtualization-capable CA ports this sweep
    /// read. True when reads were queued (the sweep waits in `Phase::VportRead`).
    pub(super) fn start_vport_reads(&mut self) -> bool {
        let sweep = self.disc.sweep();
        let mut capable = Vec::new();
        for (i, p, n, port) in self.disc.end_ports_seen() {
            if !n.is_switch
                && port.info_sweep == sweep
                && port.remote_sweep == sweep
                && port.info.capability_mask & PortInfo::CAP_IS_CAPABILITY_MASK2_SUPPORTED != 0
                && port.info.capability_mask2 & PortInfo::CAP2_IS_VIRTUALIZATION_SUPPORTED != 0
            {
                capable.push((i, p, port.guid, n.guid));
            }
        }
        let mut reads = self.vports.start(&capable);
        let managed: Vec<Guid> = self.vports.alias_managed().collect();
        let alias_ports: Vec<(u32, u8, Guid)> = managed
            .into_iter()
            .filter_map(|g| {
                let (n, p) = self.disc.end_port_with_path(g)?;
                (self.disc.port_of(n, p).remote_sweep == sweep).then_some((n, p, g))
            })
            .collect();
        reads.extend(self.vports.start_aliases(&alias_ports));
        if reads.is_empty() {
            return false;
        }
        self.phase = Phase::VportRead;
        for (op, node, port, arg) in reads {
            self.push(op, node, port, arg);
        }
        true
    }

    /// Replaces the alias GUIDs the end ports' GUIDInfo should hold (by port GUID and
    /// index; what the SA's GUIDInfoRecord Sets made). A change asks for a heavy sweep,
    /// which reads block 0 of every port concerned and writes the blocks that differ.
    pub fn set_alias_guids(
        &mut self,
        now: crate::VTime,
        aliases: &std::collections::BTreeMap<Guid, std::collections::BTreeMap<u16, Guid>>,
    ) {
        if self.vports.set_aliases(aliases) {
            self.request_sweep(now, true);
        }
    }

    /// A read round is over: the next one, or on with the sweep.
    pub(super) fn next_vport_round(&mut self) {
        for (op, node, port, arg) in self.vports.next_round() {
            self.push(op, node, port, arg);
        }
        if !self.vports.reading() {
            self.after_discovery();
        }
    }

    /// LIDs phase: gives the vports their LIDs (after the physical ports got theirs) and
    /// plans their P_KeyTables; the switch ports facing virtualized ports take the union.
    pub(super) fn plan_vports(&mut self) {
        self.vport_routes.clear();
        if self.vports.ports().next().is_none() {
            // No virtualization-capable port: nothing to assign, plan or merge (no second
            // load of the policy, no walk of the guid2lid map).
            return;
        }
        let disc = &self.disc;
        let own = self
            .vports
            .assign_lids(&mut self.cfg.guid2lid, |n, p| disc.port_of(n, p).lid);
        self.vport_routes = own
            .iter()
            .map(|&(vlid, n, p)| (vlid, self.disc.port_of(n, p).lid))
            .collect();
        let mut opts = self.cfg.partition_options;
        opts.sm_port_guid = self.disc.sm_port_guid();
        let policy = match self.prog.policy_text() {
            Some(t) => match partitions::load(t, opts) {
                Ok(p) => p,
                // The text was checked when it was handed in; a policy that no longer
                // loads leaves the vports' tables alone.
                Err(_) => return,
            },
            None => partitions::Policy::no_file(opts),
        };
        let unions = self.vports.plan_pkeys(|node_guid, _pf, port, vguid| {
            let m = policy.resolve_port(partitions::policy::EndPort {
                node_guid,
                port_guid: vguid,
                port,
                node_type: NodeType::Ca,
            });
            let (table, _) = partitions::plan::layout(&policy, &m, VPORT_PKEYS as u16);
            table.entries().iter().map(|k| k.0).collect()
        });
        for (node, port, keys) in unions {
            let pf = self.disc.port_of(node, port);
            if pf.remote_sweep != self.disc.sweep() {
                continue;
            }
            let (sw, sp) = (pf.remote, pf.remote_port);
            let peer = self.disc.port_of_mut(sw, sp);
            if peer.pkey_want.is_empty() {
                continue;
            }
            merge_keys(&mut peer.pkey_want, &keys);
        }
    }

    /// Stage 2: the vports' P_KeyTable blocks and the GUIDInfo alias blocks that differ
    /// from what they hold.
    pub(super) fn queue_vport_pkeys(&mut self) {
        let mut sets = self.vports.enable_sets();
        sets.extend(self.vports.pkey_sets());
        sets.extend(self.vports.alias_sets());
        for (op, node, port, arg) in sets {
            self.prog.count_planned();
            self.push(op, node, port, arg);
        }
    }

    /// Stage 4 (`arm`): vports in INIT to ARMED with their LIDs; stage 5: vports of ACTIVE
    /// physical ports to ACTIVE.
    pub(super) fn queue_vport_bring_up(&mut self, arm: bool) {
        let disc = &self.disc;
        let sets = self.vports.bring_up_sets(arm, |n, p| {
            disc.port_of(n, p).info.state() == Some(PortState::Active)
        });
        for (op, node, port, arg) in sets {
            self.prog.count_planned();
            self.push(op, node, port, arg);
        }
    }

    /// The data of a vport Set.
    pub(super) fn fill_vport_set(&self, req: &Req, data: &mut [u8; 64]) -> Option<()> {
        if req.op == Op::VirtInfoSet {
            let p = self
                .vports
                .ports()
                .find(|p| (p.node, p.port) == (req.node, req.port))?;
            let mut info = p.info;
            info.virtualization_enable = true;
            info.vport_state_change = true;
            info.vclient_reregister = false;
            info.encode(data);
            return Some(());
        }
        if req.op == Op::GuidInfoSet {
            let guids = self.vports.alias_block(req.node, req.port)?;
            mad::GuidInfo { guids }.encode(data);
            return Some(());
        }
        let v = self.vports.vport(req.node, req.port, req.arg)?;
        match req.op {
            Op::VPortInfoSet => {
                let mut info = v.info;
                info.vport_lid = v.lid_want;
                info.vport_state = crate::vports::Vports::next_state(v);
                info.client_reregister = false;
                info.encode(data);
            }
            _ => {
                let mut t = VPortPKeyTable::default();
                for (e, k) in t.keys.iter_mut().zip(&v.pkey_want) {
                    *e = PKey(*k);
                }
                t.encode(data);
            }
        }
        Some(())
    }

    /// (attribute, modifier) of a vport request.
    pub(super) fn vport_attr(req: &Req) -> (mad::AttributeId, u32) {
        match req.op {
            Op::VirtInfoGet | Op::VirtInfoSet => {
                (VirtualizationInfo::ID, VirtualizationInfo::MODIFIER)
            }
            Op::VPortInfoGet | Op::VPortInfoSet => (VPortInfo::ID, VPortInfo::modifier(req.arg)),
            Op::GuidInfoGet | Op::GuidInfoSet => (mad::GuidInfo::ID, 0),
            _ => (VPortPKeyTable::ID, VPortPKeyTable::modifier(req.arg, 0)),
        }
    }

    /// A vport read or Set answered.
    pub(super) fn on_vport_reply(&mut self, req: &Req, data: &[u8; 64]) {
        let (n, p, i) = (req.node, req.port, req.arg);
        match req.op {
            Op::VirtInfoGet => self.vports.on_info(n, p, VirtualizationInfo::decode(data)),
            Op::VirtInfoSet => {
                self.vports.on_info(n, p, VirtualizationInfo::decode(data));
                // Its vports go to INIT now: the next heavy sweep reads and brings them up.
                self.sched.request_heavy(crate::events::SweepReason::Change);
            }
            Op::VPortInfoGet => self.vports.on_vport_info(n, p, i, VPortInfo::decode(data)),
            Op::VPortInfoSet => self.vports.on_vport_set(n, p, i, VPortInfo::decode(data)),
            Op::GuidInfoGet | Op::GuidInfoSet => {
                self.vports
                    .on_guid_info(n, p, mad::GuidInfo::decode(data).guids)
            }
            _ => {
                let t = VPortPKeyTable::decode(data);
                let mut keys = [0u16; VPORT_PKEYS];
                for (k, e) in keys.iter_mut().zip(t.keys) {
                    *k = e.0;
                }
                self.vports.on_pkeys(n, p, i, keys);
            }
        }
    }

    /// A vport request given up: a read leaves the vport unmanaged this sweep (not clean),
    /// a Set leaves it unknown.
    pub(super) fn on_vport_failure(&mut self, req: &Req) {
        match req.op {
            Op::GuidInfoGet | Op::GuidInfoSet => {
                if req.op == Op::GuidInfoSet {
                    self.prog.on_set_failed(&mut self.disc, req);
                }
                self.vports.on_guid_info_failed(req.node, req.port);
            }
            Op::VirtInfoSet => {
                self.prog.on_set_failed(&mut self.disc, req);
                self.vports
                    .on_read_failed(req.node, req.port, req.op, req.arg);
            }
            Op::VPortInfoSet | Op::VPortPKeySet => {
                self.prog.on_set_failed(&mut self.disc, req);
                self.vports
                    .on_set_failed(req.node, req.port, req.op, req.arg);
            }
            _ => self
                .vports
                .on_read_failed(req.node, req.port, req.op, req.arg),
        }
        self.sched.mark_dirty();
    }

    /// What this sweep's vport and alias stages will write, for its intent.
    pub(super) fn planned_vport_writes(&self) -> Vec<crate::VportWrite> {
        let mut out = Vec::new();
        let mut sets = self.vports.enable_sets();
        sets.extend(self.vports.pkey_sets());
        sets.extend(self.vports.alias_sets());
        for (op, node, port, arg) in sets {
            let req = Req::new(op, node, port, arg, false);
            let mut data = [0u8; 64];
            if self.fill_vport_set(&req, &mut data).is_some() {
                let (attribute, _) = Self::vport_attr(&req);
                out.push(crate::VportWrite {
                    port_guid: self.disc.port_of(node, port).guid,
                    index: if op == Op::VPortPKeySet { arg } else { 0 },
                    attribute: attribute.0,
                    data,
                });
            }
        }
        for (p, v) in self.vports.bring_up_candidates() {
            let mut info = v.info;
            info.vport_lid = v.lid_want;
            info.set_state(PortState::Active);
            info.client_reregister = false;
            out.push(crate::VportWrite {
                port_guid: p.pf_guid,
                index: v.index,
                attribute: VPortInfo::ID.0,
                data: info.to_data(),
            });
        }
        out
    }

    /// The end of a heavy sweep's programming: the vports as they now are (nothing when
    /// the fabric has no virtualization-capable port).
    pub(super) fn report_vports(&mut self) {
        let ports = self.vports.ports().count();
        if ports == 0 {
            return;
        }
        let (vports, active) = self.vports.counts();
        self.events.push_back(crate::Event::Vports {
            ports,
            vports,
            active,
        });
    }

    /// The vport LIDs with the base LID of their physical port (for routing).
    pub(super) fn vport_routes(&self) -> &[(Lid, Lid)] {
        &self.vport_routes
    }

    /// The vport with `guid`: its physical port's (node GUID, port) and its LID.
    pub fn vport_by_guid(&self, guid: Guid) -> Option<(Guid, u8, Lid)> {
        let (p, v) = self.vports.find(guid)?;
        Some((p.node_guid, p.port, v.lid_want))
    }
}

/// Adds `keys` to a switch port's enforcement table: a partition not in it is appended, a
/// limited entry becomes full when a full key of its partition is added.
fn merge_keys(table: &mut Vec<u16>, keys: &[u16]) {
    for &k in keys {
        match table.iter_mut().find(|e| **e & 0x7FFF == k & 0x7FFF) {
            Some(e) => *e |= k & 0x8000,
            None => match table.iter_mut().find(|e| **e & 0x7FFF == 0) {
                Some(free) => *free = k,
                None => table.push(k),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::merge_keys;

    #[test]
    fn the_switch_port_takes_the_union_with_full_winning() {
        let mut t = vec![0xFFFF, 0x0001, 0, 0];
        merge_keys(&mut t, &[0x8001, 0x8002, 0x7FFF]);
        assert_eq!(t, vec![0xFFFF, 0x8001, 0x8002, 0]);
    }
}
