//! The sweeper's I/O state ([`Io`]): the SMP window (requests queued per gate, the switch
//! whose VL15 buffers the SMP occupies; a fabric-wide limit, transaction ids, timeouts and
//! resends), the SMPs sent outside it, the counters of everything sent, and whether LID
//! routes may be used.
//!
//! It owns no knowledge of the fabric: gates, paths and LIDs are worked out by the caller.
//! It must never decide what to send, only how many may be out and when one timed out.

use crate::VTime;
use crate::counters::Counters;
use crate::state::NONE;
use fabric::Lid;
use mad::Smp;
use std::collections::VecDeque;

/// One SMP to hand to the fabric.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transmit {
    /// LRH destination LID: [`Lid::PERMISSIVE`] for a directed-route SMP (it leaves by the
    /// path in the SMP), the target's LID for a LID-routed one.
    pub dlid: Lid,
    /// The SMP.
    pub smp: Smp,
}

/// What a request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// NodeInfo Get out of `port` of `node` (NONE node: the local node, hop 0).
    Probe,
    NodeDesc,
    PortInfoGet,
    SwitchInfoGet,
    LftSet,
    PKeySet,
    /// `arg` is the stage: 1 fields, 3 ARMED, 4 ACTIVE.
    PortInfoSet,
    /// `arg` 0: LinearFDBTop; 1: clear PortStateChange.
    SwitchInfoSet,
    /// SwitchInfo read again right before its Set (same `arg`), when the fabric signalled a
    /// change since discovery: a switch that rebooted meanwhile is found out.
    SwitchInfoRecheck,
    /// Light sweep poll.
    LightSwitchInfo,
    /// M_Key rotation: PortInfo as read, with this term's key settings.
    RekeySet,
    /// MulticastForwardingTable block write (`port` = position, `arg` = block).
    MftSet,
    /// SLtoVLMappingTable write (`port` = output port, `arg` = input port; see `vl`).
    SlToVlSet,
    /// VLArbitrationTable write (`port` = port, `arg` = block 1-4; see `vl`).
    VlArbSet,
    /// P_KeyTable read-back Get (`arg` = block, or PortInfo; see `readback`).
    ReadBack,
    /// SLtoVLMappingTable read-back Get (`port`, `arg` as [`Op::SlToVlSet`]).
    SlToVlGet,
    /// VLArbitrationTable read-back Get (`port`, `arg` as [`Op::VlArbSet`]).
    VlArbGet,
    /// SMInfo Get of another SM at `port` of `node` (see `foreign`).
    SmInfoGet,
    /// SMInfo Set to another SM with modifier `arg` (HANDOVER, ACKNOWLEDGE; see
    /// `foreign::handover`).
    SmInfoSet,
    /// LinearForwardingTable block `arg` Get before writing it (see `foreign`).
    LftGet,
    /// P_KeyTable block `arg` of `port` read back by a light sweep's audit (see `light`).
    PKeyGet,
    /// VirtualizationInfo Get of CA port `port` (see `vports`).
    VirtInfoGet,
    /// VirtualizationInfo Set: virtualization on, VPortStateChange cleared.
    VirtInfoSet,
    /// VPortInfo Get of vport `arg` of CA port `port`.
    VPortInfoGet,
    /// VPortInfo Set of vport `arg`: its LID and the next state of its bring-up.
    VPortInfoSet,
    /// P_KeyTable block 0 Get of vport `arg`.
    VPortPKeyGet,
    /// P_KeyTable block 0 Set of vport `arg`.
    VPortPKeySet,
    /// GUIDInfo block 0 Get of end port `port` (alias GUIDs; see `vports`).
    GuidInfoGet,
    /// GUIDInfo block 0 Set of end port `port`.
    GuidInfoSet,
}

/// A request waiting for or occupying a window slot.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Req {
    pub op: Op,
    pub node: u32,
    pub port: u8,
    pub arg: u16,
    pub tries: u8,
    pub lid_routed: bool,
    /// Index of the candidate M_Key the last transmission carried.
    pub key: u8,
}

impl Req {
    /// A request not yet sent (no tries, current key index 0).
    pub fn new(op: Op, node: u32, port: u8, arg: u16, lid_routed: bool) -> Req {
        Req {
            op,
            node,
            port,
            arg,
            tries: 0,
            lid_routed,
            key: 0,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    tid: u32,
    gate: u32,
    req: Req,
}

/// The window. Gates are node indices; NONE requests are ungated.
#[derive(Debug, Default)]
pub(crate) struct Window {
    slots: Vec<Option<Slot>>,
    free: Vec<u16>,
    seq: u16,
    gate_q: Vec<VecDeque<Req>>,
    gate_out: Vec<u8>,
    in_run: Vec<bool>,
    runnable: VecDeque<u32>,
    ungated: VecDeque<Req>,
    timeouts: VecDeque<(VTime, u16, u32)>,
    /// Requests queued or outstanding.
    pending: u64,
    outstanding: usize,
}

impl Window {
    pub fn new(window: usize) -> Window {
        let n = window.clamp(1, u16::MAX as usize);
        Window {
            slots: vec![None; n],
            free: (0..n as u16).rev().collect(),
            seq: 1,
            ..Window::default()
        }
    }

    fn ensure_gate(&mut self, g: u32) {
        let need = g as usize + 1;
        if self.gate_q.len() < need {
            self.gate_q.resize_with(need, VecDeque::new);
            self.gate_out.resize(need, 0);
            self.in_run.resize(need, false);
        }
    }

    fn mark_runnable(&mut self, g: u32) {
        if !self.in_run[g as usize] {
            self.in_run[g as usize] = true;
            self.runnable.push_back(g);
        }
    }

    /// Queues a new request.
    pub fn push(&mut self, gate: u32, req: Req) {
        self.pending += 1;
        self.requeue(gate, req, false);
    }

    /// Queues a request again (resend): at the front of its gate.
    pub fn requeue(&mut self, gate: u32, req: Req, front: bool) {
        if gate == NONE {
            if front {
                self.ungated.push_front(req)
            } else {
                self.ungated.push_back(req)
            }
            return;
        }
        self.ensure_gate(gate);
        let q = &mut self.gate_q[gate as usize];
        if front {
            q.push_front(req)
        } else {
            q.push_back(req)
        }
        self.mark_runnable(gate);
    }

    /// The next request allowed to go out, with its slot, tid and gate.
    pub fn next(&mut self, per_gate: u8) -> Option<(u16, u32, u32, Req)> {
        if self.free.is_empty() {
            return None;
        }
        let (gate, req) = if let Some(r) = self.ungated.pop_front() {
            (NONE, r)
        } else {
            loop {
                let g = self.runnable.pop_front()?;
                let gi = g as usize;
                self.in_run[gi] = false;
                if self.gate_out[gi] >= per_gate {
                    continue; // re-marked when one of its SMPs completes
                }
                let Some(r) = self.gate_q[gi].pop_front() else {
                    continue;
                };
                self.gate_out[gi] += 1;
                if !self.gate_q[gi].is_empty() && self.gate_out[gi] < per_gate {
                    self.mark_runnable(g);
                }
                break (g, r);
            }
        };
        let slot = self.free.pop()?; // checked non-empty above
        self.seq = self.seq.wrapping_add(1).max(1);
        let tid = (u32::from(self.seq) << 16) | u32::from(slot);
        self.slots[slot as usize] = Some(Slot { tid, gate, req });
        self.outstanding += 1;
        Some((slot, tid, gate, req))
    }

    /// Takes out every outstanding request `doomed` picks (their slots are freed, so a late
    /// response is stale). Each is still pending: the caller settles it.
    pub fn take_where(&mut self, mut doomed: impl FnMut(&Req) -> bool) -> Vec<Req> {
        let picked: Vec<u16> = (self.slots.iter().enumerate())
            .filter(|(_, s)| s.as_ref().is_some_and(|s| doomed(&s.req)))
            .map(|(i, _)| i as u16)
            .collect();
        picked
            .into_iter()
            .filter_map(|s| self.take_slot(s))
            .collect()
    }

    /// Undoes [`Window::next`] for a request that could not be built.
    pub fn cancel(&mut self, slot: u16) -> Option<Req> {
        self.take_slot(slot)
    }

    /// Records the M_Key candidate a sent request carries.
    pub fn set_key(&mut self, slot: u16, key: u8) {
        if let Some(Some(s)) = self.slots.get_mut(slot as usize) {
            s.req.key = key;
        }
    }

    /// Drops every queued and outstanding request (transaction ids keep increasing, so
    /// late responses are stale).
    pub fn clear(&mut self) {
        let n = self.slots.len();
        self.slots.iter_mut().for_each(|s| *s = None);
        self.free = (0..n as u16).rev().collect();
        self.gate_q.iter_mut().for_each(VecDeque::clear);
        self.gate_out.iter_mut().for_each(|c| *c = 0);
        self.in_run.iter_mut().for_each(|r| *r = false);
        self.runnable.clear();
        self.ungated.clear();
        self.timeouts.clear();
        self.pending = 0;
        self.outstanding = 0;
    }

    /// Arms the timeout of a sent request.
    pub fn arm(&mut self, deadline: VTime, slot: u16, tid: u32) {
        self.timeouts.push_back((deadline, slot, tid));
    }

    fn take_slot(&mut self, slot: u16) -> Option<Req> {
        let s = self.slots.get_mut(slot as usize)?.take()?;
        self.free.push(slot);
        self.outstanding -= 1;
        if s.gate != NONE {
            let g = s.gate as usize;
            self.gate_out[g] -= 1;
            if !self.gate_q[g].is_empty() {
                self.mark_runnable(s.gate);
            }
        }
        Some(s.req)
    }

    /// Matches a response by tid; None for stale, duplicate or foreign tids.
    pub fn complete(&mut self, tid: u32) -> Option<(u32, Req)> {
        let slot = (tid & 0xFFFF) as u16;
        let s = (*self.slots.get(slot as usize)?)?;
        if s.tid != tid {
            return None;
        }
        let req = self.take_slot(slot)?;
        Some((s.gate, req))
    }

    /// The earliest live deadline.
    pub fn next_deadline(&mut self) -> Option<VTime> {
        while let Some(&(d, slot, tid)) = self.timeouts.front() {
            match self.slots[slot as usize] {
                Some(s) if s.tid == tid => return Some(d),
                _ => {
                    self.timeouts.pop_front();
                }
            }
        }
        None
    }

    /// Pops one expired request (its slot is freed), with its gate.
    pub fn expired(&mut self, now: VTime) -> Option<(u32, Req)> {
        while let Some(&(d, slot, tid)) = self.timeouts.front() {
            let live = matches!(self.slots[slot as usize], Some(s) if s.tid == tid);
            if !live {
                self.timeouts.pop_front();
                continue;
            }
            if d > now {
                return None;
            }
            self.timeouts.pop_front();
            let gate = self.slots[slot as usize].map_or(NONE, |s| s.gate);
            return self.take_slot(slot).map(|r| (gate, r));
        }
        None
    }

    /// True when nothing is queued or outstanding.
    pub fn idle(&self) -> bool {
        self.pending == 0
    }

    /// A request taken out of the window ([`Window::complete`], [`Window::expired`],
    /// [`Window::cancel`]) is finished: answered or given up.
    pub fn settle(&mut self) {
        self.pending -= 1;
    }
}

/// The sweeper's I/O: the window, the SMPs that skip it, the counters, LID-route use.
#[derive(Debug)]
pub(crate) struct Io {
    win: Window,
    /// SMPs sent outside the window (SMInfo answers, trap represses, traps, ACKNOWLEDGEs),
    /// handed out before any windowed one.
    out: VecDeque<Transmit>,
    counters: Counters,
    /// Sequence of the SMPs sent outside the window that expect an answer, for their tids.
    own_seq: u32,
    /// The SM port has its LID and the LFTs are programmed (a clean heavy sweep).
    lid_ok: bool,
    /// Every linked port was ACTIVE when this sweep discovered it.
    all_active: bool,
}

impl Io {
    pub fn new(window: usize) -> Io {
        Io {
            win: Window::new(window),
            out: VecDeque::new(),
            counters: Counters::default(),
            own_seq: 0,
            lid_ok: false,
            all_active: false,
        }
    }

    /// Counters since the sweeper started.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// For the counts kept outside sending (timeouts, stale answers, traps, ...).
    pub fn counters_mut(&mut self) -> &mut Counters {
        &mut self.counters
    }

    /// The window.
    pub fn window(&mut self) -> &mut Window {
        &mut self.win
    }

    /// True when nothing is queued or outstanding.
    pub fn idle(&self) -> bool {
        self.win.idle()
    }

    /// Queues a new request at its gate.
    pub fn push(&mut self, gate: u32, req: Req) {
        self.win.push(gate, req);
    }

    /// A request answered without error status: it leaves the window.
    pub fn settle(&mut self) {
        self.win.settle();
    }

    /// A request given up: counted, and it leaves the window.
    pub fn give_up(&mut self) {
        self.counters.failures += 1;
        self.win.settle();
    }

    /// Counts an SMP handed to the fabric.
    pub fn record(&mut self, t: &Transmit) {
        self.counters
            .record(t.smp.attr_id, t.smp.method, t.smp.is_directed());
    }

    /// Sends an SMP outside the window (counted; handed out first).
    pub fn send(&mut self, t: Transmit) {
        self.record(&t);
        self.out.push_back(t);
    }

    /// The next SMP sent outside the window.
    pub fn pop_out(&mut self) -> Option<Transmit> {
        self.out.pop_front()
    }

    /// A transaction id for an SMP sent outside the window (a trap, an ACKNOWLEDGE): slot
    /// 0xFFFF, which no window has, so an answer to it is never taken for another's.
    pub fn own_tid(&mut self, tid_high: u32) -> u64 {
        self.own_seq = self.own_seq.wrapping_add(1);
        let low = (self.own_seq << 16) | 0xFFFF;
        (u64::from(tid_high) << 32) | u64::from(low)
    }

    /// May LID-routed SMPs be used (SM port LID and LFTs programmed, every port ACTIVE)?
    pub fn lid_routes(&self) -> bool {
        self.lid_ok && self.all_active
    }

    /// Whether the SM port has its LID and the LFTs are programmed.
    pub fn set_lid_ok(&mut self, ok: bool) {
        self.lid_ok = ok;
    }

    /// Whether every linked port is ACTIVE.
    pub fn set_all_active(&mut self, all: bool) {
        self.all_active = all;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(node: u32) -> Req {
        Req::new(Op::NodeDesc, node, 0, 0, false)
    }

    #[test]
    fn per_gate_and_global_limits() {
        let mut w = Window::new(5);
        for _ in 0..4 {
            w.push(7, req(7));
        }
        w.push(8, req(8));
        w.push(NONE, req(NONE));
        // Gate 7 may have 2 out; gate 8 one; the ungated one goes first.
        let mut out = Vec::new();
        while let Some(x) = w.next(2) {
            out.push(x);
        }
        let gates: Vec<u32> = out.iter().map(|x| x.2).collect();
        assert_eq!(gates.len(), 4);
        assert_eq!(gates.iter().filter(|&&g| g == 7).count(), 2);
        assert!(gates.contains(&8) && gates.contains(&NONE));
        // Completing one of gate 7's frees a slot for the next of gate 7.
        let (_, tid7, _, _) = *out.iter().find(|x| x.2 == 7).unwrap();
        assert!(w.complete(tid7).is_some());
        let n = w.next(2).unwrap();
        assert_eq!(n.2, 7);
        assert!(w.next(2).is_none());
    }

    #[test]
    fn stale_and_duplicate_tids_are_ignored() {
        let mut w = Window::new(4);
        w.push(1, req(1));
        let (slot, tid, _, _) = w.next(4).unwrap();
        w.arm(100, slot, tid);
        assert!(w.complete(tid ^ 0x1_0000).is_none(), "wrong sequence");
        assert!(w.complete(tid).is_some());
        assert!(w.complete(tid).is_none(), "duplicate");
        // The slot is reused with a new tid; the old one stays stale.
        w.push(1, req(1));
        let (slot2, tid2, _, _) = w.next(4).unwrap();
        assert_eq!(slot2, slot);
        assert_ne!(tid2, tid);
        assert!(w.complete(tid).is_none());
        assert_eq!(
            w.next_deadline(),
            None,
            "the old deadline died with its tid"
        );
    }

    #[test]
    fn expiry_in_deadline_order() {
        let mut w = Window::new(4);
        w.push(1, req(1));
        w.push(2, req(2));
        let a = w.next(4).unwrap();
        let b = w.next(4).unwrap();
        w.arm(10, a.0, a.1);
        w.arm(20, b.0, b.1);
        assert_eq!(w.next_deadline(), Some(10));
        assert!(w.expired(9).is_none());
        assert_eq!(w.expired(15).unwrap().1.node, a.3.node);
        assert_eq!(w.next_deadline(), Some(20));
        assert!(w.complete(b.1).is_some());
        assert_eq!(w.next_deadline(), None);
        assert_eq!(w.pending, 2, "pending is the caller's to decrement");
    }
}
