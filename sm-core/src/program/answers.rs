//! What a Set writes (the PortInfo wanted at each stage, LFT and P_KeyTable blocks,
//! SwitchInfo) and what its answer, or its failure, says of the target.

use super::{ACTIVE, ARMED, INIT, Programming};
use crate::config::SweeperConfig;
use crate::discovery::Discovery;
use crate::events::Event;
use crate::io::{Op, Req};
use fabric::{Lid, PKey};
use mad::{LinearForwardingTable, PortInfo, Smp, SmpAttribute, SwitchInfo};
use routing::NO_ROUTE;

impl Programming {
    /// Writes the data of an LFT, P_KeyTable, PortInfo (stage) or SwitchInfo Set; None when
    /// it no longer makes sense.
    pub fn fill_set(
        &self,
        disc: &Discovery,
        want: &Wanted<'_>,
        req: &Req,
        data: &mut [u8; 64],
    ) -> Option<()> {
        match req.op {
            Op::LftSet => {
                let s = disc.switch(disc.shape(req.node).sw);
                let t = &self.lfts.as_ref()?.switches[s.lft_idx as usize];
                let mut lft = LinearForwardingTable::default();
                let lo = (usize::from(req.arg) * 64).min(t.ports.len());
                let hi = (lo + 64).min(t.ports.len());
                lft.ports[..hi - lo].copy_from_slice(&t.ports[lo..hi]);
                lft.ports[hi - lo..].fill(NO_ROUTE);
                lft.encode(data);
            }
            Op::PKeySet => {
                let p = disc.port(disc.node(req.node).port_index(req.port));
                let mut t = mad::PKeyTable::default();
                let lo = usize::from(req.arg) * 32;
                for (k, e) in t.keys.iter_mut().enumerate() {
                    *e = PKey(p.pkey_want.get(lo + k).copied().unwrap_or(0));
                }
                t.encode(data);
            }
            Op::PortInfoSet => {
                desired(disc, want, req.node, req.port, req.arg as u8).encode(data);
            }
            Op::SwitchInfoSet => {
                let s = disc.switch(disc.node(req.node).sw);
                let mut si: SwitchInfo = s.info;
                si.linear_fdb_top = self.max_lid;
                if let Some(t) = s.mft_top_want {
                    si.multicast_fdb_top = t;
                }
                si.port_state_change = req.arg == 1;
                si.encode(data);
            }
            _ => return None,
        }
        Some(())
    }

    /// A PortInfo Set (stage or M_Key rotation) was answered with `info`: it is what the
    /// port holds now. Returns a [`Event::FieldNotHeld`] for each field the port is found
    /// not to hold (once per port and field).
    pub fn on_port_info_set(
        &self,
        disc: &mut Discovery,
        req: &Req,
        info: PortInfo,
        lease: u16,
    ) -> Vec<Event> {
        let n = disc.node(req.node);
        let pi = n.port_index(req.port);
        let is_switch = n.is_switch;
        let node_guid = n.guid;
        let p = disc.port_mut(pi);
        let mut not_held = Vec::new();
        if (!is_switch || req.port == 0)
            && p.lid.0 != 0
            && info.m_key_lease_period != lease
            && !p.lease_not_held
        {
            p.lease_not_held = true;
            not_held.push((
                "M_KeyLeasePeriod",
                u32::from(lease),
                u32::from(info.m_key_lease_period),
            ));
        }
        let enforce = |i: bool, o: bool| u32::from(i) << 1 | u32::from(o);
        if is_switch
            && req.port != 0
            && req.op == Op::PortInfoSet
            && req.arg == 3
            && !p.enforce_not_held
            && (info.partition_enforcement_inbound != p.enforce_in
                || info.partition_enforcement_outbound != p.enforce_out)
        {
            p.enforce_not_held = true;
            not_held.push((
                "PartitionEnforcement(Inbound,Outbound)",
                enforce(p.enforce_in, p.enforce_out),
                enforce(
                    info.partition_enforcement_inbound,
                    info.partition_enforcement_outbound,
                ),
            ));
        }
        p.info = info;
        p.programmed = true;
        p.rereg_wanted = false;
        not_held
            .into_iter()
            .map(|(field, wrote, holds)| Event::FieldNotHeld {
                node: node_guid,
                port: req.port,
                field,
                wrote,
                holds,
            })
            .collect()
    }

    /// A SwitchInfo Set was answered: what the switch holds now, LinearFDBTop included.
    pub fn on_switch_info_set(&self, disc: &mut Discovery, req: &Req, smp: &Smp) {
        let sw = disc.node(req.node).sw;
        let s = disc.switch_mut(sw);
        s.info = SwitchInfo::decode(&smp.data);
        s.fdb_top = self.max_lid;
    }

    /// A Set was given up: counted, and what it was to write is not known to be held.
    pub fn on_set_failed(&mut self, disc: &mut Discovery, req: &Req) {
        self.failed_sets += 1;
        let n = disc.node(req.node);
        let (guid, sw) = (n.guid, n.sw);
        match req.op {
            Op::LftSet => {
                let s = disc.switch_mut(sw);
                s.lft_failed = true;
                s.lft_valid = false;
            }
            Op::PKeySet => {
                disc.port_of_mut(req.node, req.port).pkey_known_valid = false;
                self.failed_ports.push((guid, req.port));
            }
            Op::PortInfoSet | Op::RekeySet => self.failed_ports.push((guid, req.port)),
            _ => {}
        }
    }
}

/// What a PortInfo Set writes besides what the port holds: the configuration's settings
/// and this SM's LID.
pub(crate) struct Wanted<'a> {
    pub cfg: &'a SweeperConfig,
    pub sm_lid: Lid,
    /// The QoS policy in force (VLHighLimit of the ports in its vlarb scopes).
    pub qos_policy: Option<&'a qos::Policy>,
}

/// The PortInfo this SM wants a port to hold at a stage.
pub(crate) fn desired(
    disc: &Discovery,
    want: &Wanted<'_>,
    node: u32,
    port: u8,
    stage: u8,
) -> PortInfo {
    let cfg = want.cfg;
    let n = disc.node(node);
    let p = disc.port(n.port_index(port));
    let mut pi = p.info;
    pi.port_state = 0;
    pi.port_phys_state = 0;
    pi.link_down_default_state = 0;
    pi.client_reregister = false;
    let end = !n.is_switch || port == 0;
    if end && p.lid.0 != 0 {
        pi.lid = p.lid;
        pi.lmc = p.lmc;
        pi.master_sm_lid = want.sm_lid;
        pi.gid_prefix = cfg.subnet_prefix;
        pi.m_key = cfg.m_key;
        pi.m_key_protect_bits = cfg.m_key_protect_bits;
        pi.m_key_lease_period = if p.lease_not_held {
            p.info.m_key_lease_period
        } else {
            cfg.m_key_lease_period
        };
        let rereg_cap =
            p.info.capability_mask & PortInfo::CAP_IS_CLIENT_REREGISTRATION_SUPPORTED != 0;
        // ClientReregister where the port is new to this SM (or the SA's state was lost) or
        // its LID changes, with the Set that writes its fields (stage 1, or stage 3 for a
        // port still in INIT).
        let writes_fields = stage == 1 || (stage == 3 && p.info.port_state == INIT);
        let new_to_us = (!p.programmed && cfg.reregister_on_takeover) || p.rereg_wanted;
        if writes_fields && !n.is_switch && rereg_cap && (new_to_us || p.info.lid != p.lid) {
            pi.client_reregister = true;
        }
    }
    if n.is_switch && port != 0 {
        pi.partition_enforcement_inbound = p.enforce_in;
        pi.partition_enforcement_outbound = p.enforce_out;
    }
    if stage == 3 && p.info.port_state == INIT && !(n.is_switch && port == 0) {
        // Bring-up: the OperationalVLs negotiated with the peer (a PortInfo Set of 0
        // changes nothing, so ports already up keep theirs).
        pi.operational_vls = crate::vl::want::op_vls(disc, cfg, node, port);
    }
    if stage == 3
        && let Some(limit) = crate::vl::want::vl_high_limit(disc, cfg, want.qos_policy, node, port)
    {
        pi.vl_high_limit = limit;
    }
    match stage {
        3 if p.info.port_state == INIT => pi.port_state = ARMED,
        4 if p.info.port_state == ARMED => pi.port_state = ACTIVE,
        _ => {}
    }
    pi
}

pub(super) fn fields_differ(have: &PortInfo, want: &PortInfo) -> bool {
    have.lid != want.lid
        || have.lmc != want.lmc
        || have.master_sm_lid != want.master_sm_lid
        || have.gid_prefix != want.gid_prefix
        || have.m_key != want.m_key
        || have.m_key_protect_bits != want.m_key_protect_bits
        || have.m_key_lease_period != want.m_key_lease_period
        || want.client_reregister
}
