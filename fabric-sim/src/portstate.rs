//! Link and port state changes, and the traps they raise (128 link state change,
//! 144 capability change; 256 bad M_Key is raised by the SMA).

use crate::VTime;
use crate::sim::{EvKind, Packet, SimFabric};
use crate::state::NONE;
use fabric::{Lid, PhysState, PortState};
use mad::{AttributeId, Method, Notice, NoticeDetails, ProducerType, Smp, SmpAttribute};

/// TIDs of traps are this base plus a sequence number.
pub(crate) const TRAP_TID_BASE: u64 = 0x5A5A_0000_0000_0000;

impl SimFabric {
    /// One end of a link goes Down (logical Down; physical Polling, or Disabled when the
    /// SM disabled it). False when it already was.
    fn end_down(&mut self, port: u32, t: VTime, notify: bool) -> bool {
        let p = &mut self.st.ports[port as usize];
        if !p.link_up && p.state == PortState::Down {
            return false;
        }
        p.link_up = false;
        p.state = PortState::Down;
        p.phys = if p.disabled {
            PhysState::Disabled
        } else {
            PhysState::Polling
        };
        p.busy_until = 0;
        if notify {
            self.note_state_change(port, t);
        }
        self.vports_follow(port, t);
        true
    }

    /// Takes the link on `port` down at both ends (a fault: both ends see a link state
    /// machine change, and each end whose link was up counts LinkDownedCounter).
    pub(crate) fn link_down(&mut self, port: u32, t: VTime) {
        let remote = self.st.ports[port as usize].cable;
        for end in [port, remote] {
            if end != NONE && self.end_down(end, t, true) {
                self.perf.add_error(end, crate::perf::E_LINK_DOWNED, 1);
            }
        }
    }

    /// The SM set `port` Down (or Disabled): a SubnSet does not set the local switch's
    /// PortStateChange (IBA 14.2.5.4, as ibsim reads it), the far end sees a link change.
    pub(crate) fn link_down_by_sm(&mut self, port: u32, t: VTime) {
        let remote = self.st.ports[port as usize].cable;
        self.end_down(port, t, false);
        if remote != NONE {
            self.end_down(remote, t, true);
        }
    }

    fn can_train(&self, port: u32) -> bool {
        let p = &self.st.ports[port as usize];
        if p.cable == NONE || p.link_up {
            return false;
        }
        let r = &self.st.ports[p.cable as usize];
        !p.disabled
            && !p.fault_down
            && !r.disabled
            && !r.fault_down
            && self.st.nodes[p.node as usize].present
            && self.st.nodes[r.node as usize].present
    }

    /// Link training finished on `port`: when both ends are able, both come up in INIT
    /// with physical LinkUp.
    pub(crate) fn link_train(&mut self, port: u32, t: VTime) {
        if !self.can_train(port) {
            return;
        }
        let remote = self.st.ports[port as usize].cable;
        for i in [port, remote] {
            let p = &mut self.st.ports[i as usize];
            p.link_up = true;
            p.state = PortState::Init;
            p.phys = PhysState::LinkUp;
            p.busy_until = 0;
            self.note_state_change(i, t);
            self.vports_follow(i, t);
        }
    }

    /// A port's state changed outside the SM's control: a switch sets PortStateChange and
    /// sends trap 128 to its MasterSMLID.
    fn note_state_change(&mut self, port: u32, t: VTime) {
        let node = self.st.ports[port as usize].node;
        let n = &self.st.nodes[node as usize];
        if n.sw == NONE || !n.present {
            return;
        }
        let base = n.port_base;
        self.st.switches[n.sw as usize].port_state_change = true;
        let lid = self.st.cold[base as usize].info.lid;
        self.send_trap(
            base,
            128,
            Notice::TYPE_URGENT,
            NoticeDetails::LinkStateChange { lid },
            t,
        );
    }

    /// Sends generic trap `trap` from management port `mgmt` (CA port or switch port 0)
    /// to its MasterSMLID, LID-routed (class 0x01, method Trap, attribute Notice).
    /// Nothing is sent while the port has no LID or no MasterSMLID.
    pub(crate) fn send_trap(
        &mut self,
        mgmt: u32,
        trap: u16,
        notice_type: u8,
        details: NoticeDetails,
        t: VTime,
    ) {
        let info = &self.st.cold[mgmt as usize].info;
        let (master, issuer) = (info.master_sm_lid, info.lid);
        if master == Lid(0) || issuer == Lid(0) {
            return;
        }
        let node = self.st.ports[mgmt as usize].node;
        let producer = if self.st.nodes[node as usize].sw != NONE {
            ProducerType::SWITCH
        } else {
            ProducerType::CA
        };
        let notice = Notice::generic(notice_type, producer, trap, issuer, &details);
        self.trap_tid += 1;
        let mut smp = Smp::lid_routed(Method::TRAP, self.trap_tid, AttributeId::NOTICE, 0);
        notice.encode(&mut smp.data);
        if self.cfg.trap_repeat_ns > 0 && self.cfg.trap_repeats > 0 {
            let n = (self.trap_tid - TRAP_TID_BASE) as u32;
            self.pending_traps
                .insert(n, (mgmt, smp.clone(), self.cfg.trap_repeats));
            self.push(t + self.cfg.trap_repeat_ns, EvKind::TrapRepeat { n });
        }
        self.emit_trap(mgmt, smp, t);
    }

    /// Sends a trap SMP from `mgmt` to its current MasterSMLID.
    fn emit_trap(&mut self, mgmt: u32, smp: Smp, t: VTime) {
        let info = &self.st.cold[mgmt as usize].info;
        let (master, issuer) = (info.master_sm_lid, info.lid);
        if master == Lid(0) || issuer == Lid(0) {
            return;
        }
        let slot = self.alloc(Packet {
            smp,
            slid: issuer,
            dlid: master,
            lid_leg: true,
            origin: NONE,
            hops: 0,
        });
        self.acct.counters.traps_sent += 1;
        self.push(
            t + self.cfg.sma_latency_ns,
            EvKind::Depart { port: mgmt, slot },
        );
    }

    /// Repeats trap `n` unless it was repressed or ran out of repetitions.
    pub(crate) fn trap_repeat(&mut self, n: u32, t: VTime) {
        let Some((mgmt, smp, left)) = self.pending_traps.get_mut(&n) else {
            return;
        };
        let (mgmt, smp) = (*mgmt, smp.clone());
        *left -= 1;
        if *left == 0 {
            self.pending_traps.remove(&n);
        } else {
            self.push(t + self.cfg.trap_repeat_ns, EvKind::TrapRepeat { n });
        }
        self.emit_trap(mgmt, smp, t);
    }

    /// TrapRepress with `tid` reached the SMA behind `mgmt`: stop repeating that trap.
    pub(crate) fn repress_trap(&mut self, mgmt: u32, tid: u64) {
        if let Some(n) = tid
            .checked_sub(TRAP_TID_BASE)
            .and_then(|n| u32::try_from(n).ok())
            && self
                .pending_traps
                .get(&n)
                .is_some_and(|(m, _, _)| *m == mgmt)
        {
            self.pending_traps.remove(&n);
        }
    }

    /// Changes a CA port's CapabilityMask and sends trap 144 (capability change).
    pub(crate) fn change_capability(&mut self, port: u32, mask: u32, t: VTime) {
        let mask2 = self.st.cold[port as usize].info.capability_mask2;
        self.change_capabilities(port, mask, mask2, t);
    }

    /// Changes a CA port's CapabilityMask and CapabilityMask2 and, when either changed,
    /// sends trap 144 (capability change) carrying both.
    pub(crate) fn change_capabilities(&mut self, port: u32, mask: u32, mask2: u16, t: VTime) {
        let p = &mut self.st.cold[port as usize];
        if (p.info.capability_mask, p.info.capability_mask2) == (mask, mask2) {
            return;
        }
        p.info.capability_mask = mask;
        p.info.capability_mask2 = mask2;
        let lid = p.info.lid;
        self.send_trap(
            port,
            144,
            Notice::TYPE_INFO,
            NoticeDetails::CapabilityChange {
                lid,
                other_local_changes: false,
                capability_mask: mask,
                change_flags: 0,
                capability_mask2: mask2,
            },
            t,
        );
    }
}
