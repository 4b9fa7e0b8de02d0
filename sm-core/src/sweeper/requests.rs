//! Requests and MADs: how a request becomes an SMP (`push`, `build`), where an answer or a
//! request given up goes (`on_reply`, `on_failure`), and the MADs addressed to the SM
//! itself (SMInfo requests, traps).

use super::{Phase, Sweeper};
use crate::events::{Event, SweepReason};
use crate::foreign::SetVerdict;
use crate::io::{Op, Req, Transmit};
use crate::mcast::Multicast;
use crate::readback::Readback;
use fabric::{Guid, Lid};
use mad::{
    AttributeId, Method, NodeDescription, NodeInfo, Notice, PortInfo, SmInfo, Smp, SmpAttribute,
    SwitchInfo,
};

impl Sweeper {
    /// Queues each of discovery's reads (op, node, port).
    pub(super) fn push_gets(&mut self, gets: impl IntoIterator<Item = (Op, u32, u8)>) {
        for (op, node, port) in gets {
            self.push(op, node, port, 0);
        }
    }

    /// Queues a request (LID-routed where allowed, see below) at its gate.
    pub(super) fn push(&mut self, op: Op, node: u32, port: u8, arg: u16) {
        // LID routes are trusted only once this sweep's LFTs are written (port bring-up,
        // PortStateChange clears) and for light-sweep polls; discovery, LID changes and
        // table writes happen while routes may be in flux, so they go directed.
        let after_tables = match op {
            Op::PortInfoSet => arg >= 3,
            Op::SwitchInfoSet => arg == 1,
            Op::LightSwitchInfo => true,
            _ => false,
        };
        let lid_routed = self.cfg.lid_routed_programming
            && self.io.lid_routes()
            && after_tables
            && self.disc.target_lid(node, port).0 != 0;
        let req = Req::new(op, node, port, arg, lid_routed);
        let g = self.disc.gate_of(&req);
        self.io.push(g, req);
    }

    /// Builds the SMP of a request.
    pub(super) fn build(&mut self, req: &Req, tid: u64) -> Option<Transmit> {
        let (method, attr, attr_mod) = match req.op {
            Op::Probe => (Method::GET, AttributeId::NODE_INFO, 0),
            Op::NodeDesc => (Method::GET, AttributeId::NODE_DESCRIPTION, 0),
            Op::PortInfoGet => (Method::GET, AttributeId::PORT_INFO, u32::from(req.port)),
            Op::SwitchInfoGet | Op::LightSwitchInfo | Op::SwitchInfoRecheck => {
                (Method::GET, AttributeId::SWITCH_INFO, 0)
            }
            Op::LftSet => (
                Method::SET,
                AttributeId::LINEAR_FORWARDING_TABLE,
                u32::from(req.arg),
            ),
            Op::PKeySet => (
                Method::SET,
                AttributeId::P_KEY_TABLE,
                mad::PKeyTable::modifier(req.port, req.arg),
            ),
            Op::PortInfoSet | Op::RekeySet => {
                (Method::SET, AttributeId::PORT_INFO, u32::from(req.port))
            }
            Op::SwitchInfoSet => (Method::SET, AttributeId::SWITCH_INFO, 0),
            Op::MftSet => (
                Method::SET,
                AttributeId::MULTICAST_FORWARDING_TABLE,
                Multicast::modifier(req),
            ),
            Op::SlToVlSet => (
                Method::SET,
                AttributeId::SL_TO_VL_TABLE,
                crate::vl::modifier(req, self.disc.node(req.node).is_switch),
            ),
            Op::VlArbSet => (
                Method::SET,
                AttributeId::VL_ARBITRATION_TABLE,
                crate::vl::modifier(req, self.disc.node(req.node).is_switch),
            ),
            Op::SlToVlGet => (
                Method::GET,
                AttributeId::SL_TO_VL_TABLE,
                crate::vl::modifier(req, self.disc.node(req.node).is_switch),
            ),
            Op::VlArbGet => (
                Method::GET,
                AttributeId::VL_ARBITRATION_TABLE,
                crate::vl::modifier(req, self.disc.node(req.node).is_switch),
            ),
            Op::ReadBack => Readback::attr(&self.disc, req),
            Op::SmInfoGet => (Method::GET, AttributeId::SM_INFO, 0),
            Op::SmInfoSet => (Method::SET, AttributeId::SM_INFO, u32::from(req.arg)),
            Op::LftGet => (
                Method::GET,
                AttributeId::LINEAR_FORWARDING_TABLE,
                u32::from(req.arg),
            ),
            Op::VirtInfoGet | Op::VPortInfoGet | Op::VPortPKeyGet | Op::GuidInfoGet => {
                let (a, m) = Self::vport_attr(req);
                (Method::GET, a, m)
            }
            Op::VPortInfoSet | Op::VPortPKeySet | Op::GuidInfoSet | Op::VirtInfoSet => {
                let (a, m) = Self::vport_attr(req);
                (Method::SET, a, m)
            }
            Op::PKeyGet => {
                // A CA's SMA answers for the port the SMP arrives on (port field 0).
                let port = if self.disc.node(req.node).is_switch {
                    req.port
                } else {
                    0
                };
                (
                    Method::GET,
                    AttributeId::P_KEY_TABLE,
                    mad::PKeyTable::modifier(port, req.arg),
                )
            }
        };
        let (mut smp, dlid) = if req.lid_routed {
            let lid = self.disc.target_lid(req.node, req.port);
            if lid.0 == 0 {
                return None;
            }
            (Smp::lid_routed(method, tid, attr, attr_mod), lid)
        } else {
            if req.op == Op::ReadBack && !self.disc.has_current_path(req) {
                return None;
            }
            let mut buf = [0u8; 64];
            let len = self.disc.path_to(req, &mut buf)?;
            (
                Smp::directed(method, tid, attr, attr_mod, &buf[..len]).ok()?,
                Lid::PERMISSIVE,
            )
        };
        smp.m_key = self.key_for(req).0;
        if req.op == Op::SmInfoSet {
            self.fill_sm_info_set(req, &mut smp.data);
        } else if method == Method::SET {
            self.fill_set(req, &mut smp.data)?;
        }
        Some(Transmit { dlid, smp })
    }

    /// Common failure path: a request was given up (recorded for `explain`).
    pub(super) fn fail(&mut self, req: Req, why: crate::explain::Why) {
        self.io.give_up();
        self.troubles.failed(&self.disc, &req, why);
        self.on_failure(req);
    }

    /// Dispatches a successful response.
    pub(super) fn on_reply(&mut self, req: Req, smp: &Smp) {
        self.troubles.answered(&req);
        match req.op {
            Op::Probe => {
                let gets = self.disc.on_node_info(
                    &req,
                    NodeInfo::decode(&smp.data),
                    self.cfg.known_pkeys.as_deref(),
                    self.prog.lfts(),
                );
                self.push_gets(gets);
            }
            Op::NodeDesc => self
                .disc
                .on_node_desc(req.node, NodeDescription::decode(&smp.data)),
            Op::PortInfoGet => {
                let info = PortInfo::decode(&smp.data);
                self.note_key(&req, &info);
                let links = self.disc.link_count();
                if self.disc.on_port_info(req.node, req.port, info) {
                    self.push(Op::Probe, req.node, req.port, 0);
                }
                // Only a read that removed a link can cut a check's path.
                if self.disc.link_count() < links
                    && self.disc.targeted()
                    && self.phase == Phase::Discovering
                {
                    self.take_back_doomed_checks();
                }
            }
            Op::SwitchInfoGet => {
                let gets = (self.disc).on_switch_info(req.node, SwitchInfo::decode(&smp.data));
                self.push_gets(gets);
            }
            Op::LightSwitchInfo => self.on_light_switch_info(req, SwitchInfo::decode(&smp.data)),
            Op::SwitchInfoRecheck => {
                self.on_switch_info_recheck(req, SwitchInfo::decode(&smp.data))
            }
            Op::ReadBack => self.on_readback_reply(req, smp),
            Op::SlToVlGet | Op::VlArbGet => self.on_vl_readback(req, Some(smp)),
            // The answer to a handover Set: nothing to do (the wait polls).
            Op::SmInfoSet => {}
            Op::SmInfoGet => {
                if let Ok(i) = smp.attr::<mad::SmInfo>() {
                    self.on_sm_info(req, i);
                }
            }
            Op::LftGet => self.on_lft_block(req, smp),
            Op::PKeyGet => self.on_audit_pkey_block(req, smp),
            Op::VirtInfoGet
            | Op::VirtInfoSet
            | Op::VPortInfoGet
            | Op::VPortPKeyGet
            | Op::VPortInfoSet
            | Op::VPortPKeySet
            | Op::GuidInfoGet
            | Op::GuidInfoSet => self.on_vport_reply(&req, &smp.data),
            Op::LftSet
            | Op::PKeySet
            | Op::PortInfoSet
            | Op::SwitchInfoSet
            | Op::RekeySet
            | Op::MftSet
            | Op::SlToVlSet
            | Op::VlArbSet => self.on_set_done(req, smp),
        }
    }

    /// A targeted sweep's check reads whose path a target's port read just cut are taken
    /// back instead of waiting for their timeout (a switch removed whole: its neighbours'
    /// traps and reads come in while the first check of it is in flight).
    fn take_back_doomed_checks(&mut self) {
        let disc = &self.disc;
        let doomed = (self.io.window())
            .take_where(|r| r.op == Op::SwitchInfoGet && disc.check_doomed(r.node));
        for r in doomed {
            self.io.settle();
            self.disc.uncheck(r.node);
        }
    }

    /// A request given up after every retry.
    pub(super) fn on_failure(&mut self, req: Req) {
        match req.op {
            // A probe that never returns: no usable peer on that port this sweep.
            // The sweep goes on with what it has, but is not clean: no SUBNET UP from it,
            // and the next interval brings a heavy sweep.
            Op::Probe | Op::NodeDesc | Op::PortInfoGet | Op::SwitchInfoGet => {
                if self.disc.targeted() {
                    // A switch's check read that does not answer: the switch is taken to be
                    // gone and its neighbours are read. Otherwise a targeted sweep cannot
                    // tell what it did not read.
                    let gone = (req.op == Op::SwitchInfoGet && self.phase == Phase::Discovering)
                        .then(|| self.disc.switch_gone(req.node))
                        .flatten();
                    match gone {
                        Some(gets) => self.push_gets(gets),
                        None => self.disc.want_full(),
                    }
                }
                self.sched.mark_dirty()
            }
            Op::LightSwitchInfo => self.light.unreached(req.node),
            Op::ReadBack => self.on_readback_failed(req),
            Op::SlToVlGet | Op::VlArbGet => self.on_vl_readback(req, None),
            // Another SM that does not answer (or a block not read back) stops nothing: the
            // SM is taken to be absent, the block is written.
            Op::SmInfoSet => self.sm_info_set_failed(req),
            Op::SmInfoGet | Op::LftGet | Op::PKeyGet => {}
            Op::VirtInfoGet
            | Op::VirtInfoSet
            | Op::VPortInfoGet
            | Op::VPortPKeyGet
            | Op::VPortInfoSet
            | Op::VPortPKeySet
            | Op::GuidInfoGet
            | Op::GuidInfoSet => self.on_vport_failure(&req),
            Op::LftSet
            | Op::PKeySet
            | Op::PortInfoSet
            | Op::SwitchInfoSet
            | Op::RekeySet
            | Op::MftSet
            | Op::SlToVlSet
            | Op::VlArbSet => self.on_set_failed(req),
            // Not read again: its Set is given up with it.
            Op::SwitchInfoRecheck => self.on_set_failed(Req {
                op: Op::SwitchInfoSet,
                ..req
            }),
        }
    }

    /// Requests addressed to the SM's port: SMInfo Get/Set is answered with this SM's
    /// priority, GUID, state, and SM_Key only to authenticated requesters: the SMP carries
    /// this SM's M_Key (any SMP does while M_Key is 0, as in OpenSM, which ignores an SM
    /// whose answer lacks its key) or the SMInfo presented the SM_Key. A Set with a
    /// handover modifier is checked, answered and acted on as `foreign::handover` says.
    pub(super) fn on_request(&mut self, slid: Lid, smp: Smp) {
        if smp.attr_id != AttributeId::SM_INFO
            || (smp.method != Method::GET && smp.method != Method::SET)
        {
            return;
        }
        let verdict = if smp.method == Method::SET {
            self.check_sm_info_set(&smp)
        } else {
            SetVerdict::AsGet
        };
        if matches!(verdict, SetVerdict::Ignore) {
            return;
        }
        let guid = self
            .disc
            .sm_port_guid()
            .or(self.cfg.sm_port_guid)
            .unwrap_or(Guid(0));
        let mut r = smp.make_response();
        let info = SmInfo {
            guid,
            sm_key: if self.cfg.m_key == 0
                || smp.m_key == self.cfg.m_key
                || smp
                    .attr::<SmInfo>()
                    .is_ok_and(|i| i.sm_key == self.cfg.sm_key)
            {
                self.cfg.sm_key
            } else {
                0
            },
            act_count: self.act_count(),
            priority: self.cfg.sm_priority,
            sm_state: self.state.to_wire(),
        };
        r.set_attr(&info);
        r.status = verdict.status();
        let dlid = if r.is_directed() {
            Lid::PERMISSIVE
        } else {
            slid
        };
        self.io.send(Transmit { dlid, smp: r });
        self.apply_sm_info_set(verdict);
    }

    /// A trap: repressed, reported, and a heavy sweep for the link and capability ones.
    pub(super) fn on_trap(&mut self, smp: Smp) {
        self.io.counters_mut().traps += 1;
        let Ok(n) = smp.attr::<Notice>() else {
            return;
        };
        let mut r = smp.clone();
        r.method = Method::TRAP_REPRESS;
        r.status = 0;
        // The SMA checks the M_Key of a TrapRepress like that of a Set: a repress with a
        // wrong key is a violation, which is itself trapped (a storm).
        r.m_key = self.key_at_lid(n.issuer_lid);
        self.io.send(Transmit {
            dlid: n.issuer_lid,
            smp: r,
        });
        let number = n.trap_number().unwrap_or(0);
        self.events.push_back(Event::Trap {
            number,
            issuer: n.issuer_lid,
        });
        if number == 144 && self.is_own_or_peer_lid(n.issuer_lid) {
            // This SM's own port or a replica peer's (its role attaching or leaving):
            // nothing another SM could have changed, and peers are never asked.
            return;
        }
        if matches!(number, 128 | 144 | 145) {
            // A switch trapping while a targeted discovery runs joins it (a switch removed
            // whole makes all its neighbours trap at once: read together, they show it gone
            // without a check read waiting for its timeout); one read already is swept again.
            if number == 128
                && self.phase == Phase::Discovering
                && let Some(gets) = self.disc.join_targeted(n.issuer_lid)
            {
                self.push_gets(gets);
                return;
            }
            if number == 128 {
                self.sched
                    .request_for_links(SweepReason::Trap(128), n.issuer_lid);
            } else {
                self.sched.request_heavy(SweepReason::Trap(number));
            }
            if self.phase == Phase::Idle {
                self.start_pending_heavy();
            }
        }
    }

    /// True when `lid` is this SM's port or the port of one of its cluster peers.
    fn is_own_or_peer_lid(&self, lid: Lid) -> bool {
        if lid.0 != 0 && lid == self.sm_lid() {
            return true;
        }
        // A trap can come before this sweep's discovery knows the port: the LID map then.
        let guid = self
            .disc
            .mgmt_index_at_lid(lid)
            .map(|i| self.disc.port(i).guid)
            .or_else(|| {
                self.cfg
                    .guid2lid
                    .iter()
                    .find(|&(_, lo, hi)| lo.0 != 0 && lo <= lid && lid <= hi)
                    .map(|(g, _, _)| g)
            });
        guid.is_some_and(|g| self.own_rank().1 == g || self.cfg.peer_sms.contains(&g))
    }

    /// The M_Key believed in force at the end port answering to `lid` (this term's key
    /// when no port is known by that LID).
    fn key_at_lid(&self, lid: Lid) -> u64 {
        self.keys.key_at_lid(&self.disc, lid, self.cfg.m_key)
    }
}
