//! Performance counters of every port: what a Performance Management Agent reports as
//! PortCounters (IBA 16.1.3.5) and PortCountersExtended (IBA 16.1.4.11), kept by the
//! packet paths and read by the PMA ([`crate::pma`]).
//!
//! # What counts
//!
//! * Every packet that crosses a link counts one PortXmitPkts at the sending port and one
//!   PortRcvPkts at the receiving port: SMPs at every hop (directed route and LID-routed,
//!   requests, answers, traps), GMPs (SA, PMA queries and answers), the data packets of the
//!   delivery checks ([`SimFabric::deliver`], [`SimFabric::deliver_sl`],
//!   [`SimFabric::deliver_smp`]) and every copy of [`SimFabric::deliver_mcast`].
//! * Data is counted as IBA defines PortXmitData/PortRcvData: the octets from the LRH up to
//!   and including the ICRC (the VCRC excluded), in 4-octet words. Every packet the
//!   simulator moves is a MAD on a UD QP (or treated as one): LRH 8 + BTH 12 + DETH 8 +
//!   MAD 256 + ICRC 4 = 288 octets = [`PACKET_WORDS`] (72) words, the figure ibsim counts.
//! * The PortCounters data and packet counters are 32-bit views of 64-bit running totals:
//!   a view reads `total - base`, clamped at its all-ones value (saturation, IBA 16.1.3.5),
//!   and a Set that clears it moves `base` to the total. PortCountersExtended has its own
//!   bases over the same totals, so it keeps counting past the 32-bit saturation and the
//!   two attributes clear independently. Unicast packets are all packets but the multicast
//!   copies.
//! * Error counters (8, 16 or 4 bits) stop at their all-ones value. Which drop counts
//!   where:
//!
//!   | what happens | counted |
//!   |---|---|
//!   | output link down or uncabled, either end not ACTIVE, receiving node removed | PortXmitDiscards at the output port (the packet is not sent) |
//!   | switch outbound partition enforcement | PortXmitConstraintErrors at the output port |
//!   | switch inbound partition enforcement | PortRcvConstraintErrors at the input port (received) |
//!   | a switch finds no LFT entry, or maps the SL to VL15 / a VL beyond OperationalVLs | PortRcvSwitchRelayErrors at the switch's input port (port 0 for a packet it originates) |
//!   | a CA maps its own packet's SL to an unusable VL | nothing (never sent; per-VL accounting) |
//!   | an HCA (or switch port 0) refuses the P_Key | PortInfo.P_KeyViolations only (received) |
//!   | a switch output queue full (VL15 depth) | VL15Dropped at that output port |
//!   | the receive error rate ([`SimFabric::set_port_error_rate`]) | PortRcvErrors at the receiving port (received, then dropped) |
//!   | a fault takes a link down ([`crate::Fault::LinkDown`], node removal, switch reboot) | LinkDownedCounter at both ends |
//!
//!   Not counted: the random loss fault (the packet counts as sent, never as received),
//!   directed-route drops, packets cut as looping, an SM's own Set of PortState=Down (an
//!   intentional down is not a link error). QP1Dropped is not modelled (ClassPortInfo
//!   leaves IsQP1DroppedSupported clear; it reads 0). Symbol errors, link error recovery,
//!   remote physical errors, local link integrity and buffer overrun errors only change
//!   through [`SimFabric::inject_port_errors`].
//! * PortXmitWait counts, at a port whose output link is busy, the time a packet waits
//!   for it, in ticks of `SimConfig::wire_time_ns` (rounded up). Only SMPs queue in the
//!   simulator (GMPs and delivery checks cross their path at once), so only they wait.
//! * A power cycle (node returned, switch rebooted) zeroes the node's counters.
//!
//! Counting is one increment per link end per hop: the packet totals live in the port's
//! `SimPort` slot, which every hop reads anyway (the data words follow from them, every
//! packet being [`PACKET_WORDS`] long); the rest ([`Perf`]) is indexed by the dense port
//! index and touched only by drops, waits, multicast, Sets and injection. Nothing
//! allocates and no map is consulted on the packet paths.

use crate::SimFabric;
use crate::error::SimError;
use crate::state::{NONE, SimPort};
use fabric::NodeId;
use fabric::rng::SplitMix64;
use mad::perf::{Counter, PortCounters, PortCountersExtended};

/// 4-octet words every packet adds to the data counters: LRH (8) + BTH (12) + DETH (8) +
/// MAD (256) + ICRC (4) octets.
pub const PACKET_WORDS: u64 = 72;

/// Index of the running totals of a port: PortXmitData, PortRcvData, PortXmitPkts,
/// PortRcvPkts (the order of CounterSelect bits 12..=15 and of the extended counters).
const XD: usize = 0;
const RD: usize = 1;
const XP: usize = 2;
const RP: usize = 3;

/// The error counters, in the order of their PortCounters CounterSelect bits 0..=11.
pub(crate) const ERR_COUNTERS: [Counter; 12] = Counter::ERRORS;

/// Positions in [`ERR_COUNTERS`] the packet paths bump.
pub(crate) const E_LINK_DOWNED: usize = 2;
pub(crate) const E_RCV_ERRORS: usize = 3;
pub(crate) const E_SWITCH_RELAY: usize = 5;
pub(crate) const E_XMIT_DISCARDS: usize = 6;
pub(crate) const E_XMIT_CONSTRAINT: usize = 7;
pub(crate) const E_RCV_CONSTRAINT: usize = 8;
pub(crate) const E_VL15_DROPPED: usize = 11;

fn err_index(c: Counter) -> Option<usize> {
    ERR_COUNTERS.iter().position(|&e| e == c)
}

/// What a port keeps besides the packet totals in its `SimPort` slot (allocated on first
/// use, so that the packet paths touch nothing but the port slots they already read).
#[derive(Clone, Default)]
struct PerfCold {
    /// Error counters, [`ERR_COUNTERS`] order, each at most its all-ones value.
    errors: [u16; 12],
    /// PortXmitWait (32 bits, saturating).
    xmit_wait: u32,
    /// Multicast copies sent and received (running totals).
    mcast: [u64; 2],
    /// What [`SimFabric::inject_port_errors`] added to the running totals (XD, RD, XP, RP).
    injected: [u64; 4],
    /// Carries of the 32-bit packet counts in the port slot (xmit, rcv), in units of 2^32.
    carries: [u64; 2],
    /// Running totals (XD, RD, XP, RP) when PortCounters last cleared each.
    pc_base: [u64; 4],
    /// Extended counters (ExtCounter order) when PortCountersExtended last cleared each.
    ext_base: [u64; 8],
}

/// The counters of every port beyond the packet totals, by port index.
pub(crate) struct Perf {
    /// Index into `cold` per port, NONE while the port has nothing but totals.
    cold_idx: Vec<u32>,
    cold: Vec<PerfCold>,
    /// Receive error probability per port; empty until a rate is set.
    err_rate: Vec<f64>,
    /// Draws of the error rates (its own stream: setting a rate leaves the loss and
    /// duplication draws unchanged).
    rng: SplitMix64,
}

impl Perf {
    pub(crate) fn new(ports: usize, seed: u64) -> Perf {
        Perf {
            cold_idx: vec![NONE; ports],
            cold: Vec::new(),
            err_rate: Vec::new(),
            rng: SplitMix64::new(seed ^ 0x5045_5246_4d47_5400),
        }
    }

    fn cold_mut(&mut self, p: u32) -> &mut PerfCold {
        let i = self.cold_idx[p as usize];
        let i = if i == NONE {
            self.cold.push(PerfCold::default());
            let i = (self.cold.len() - 1) as u32;
            self.cold_idx[p as usize] = i;
            i
        } else {
            i
        };
        &mut self.cold[i as usize]
    }

    fn cold(&self, p: u32) -> Option<&PerfCold> {
        let i = self.cold_idx[p as usize];
        (i != NONE).then(|| &self.cold[i as usize])
    }

    /// Adds `n` to error counter `e` ([`ERR_COUNTERS`] position) of port index `p`.
    pub(crate) fn add_error(&mut self, p: u32, e: usize, n: u64) {
        let max = ERR_COUNTERS[e].max();
        let c = &mut self.cold_mut(p).errors[e];
        *c = u64::from(*c).saturating_add(n).min(max) as u16;
    }

    /// Adds `n` ticks of PortXmitWait at port index `p`.
    pub(crate) fn add_wait(&mut self, p: u32, n: u64) {
        let c = &mut self.cold_mut(p).xmit_wait;
        *c = u64::from(*c).saturating_add(n).min(Counter::XmitWait.max()) as u32;
    }

    /// The 32-bit packet count `k` (0 sent, 1 received) of port index `p` wrapped.
    #[cold]
    pub(crate) fn carry(&mut self, p: u32, k: usize) {
        self.cold_mut(p).carries[k] += 1;
    }

    /// True when some port has a receive error rate.
    #[inline]
    pub(crate) fn any_error_rate(&self) -> bool {
        !self.err_rate.is_empty()
    }

    /// Draws whether a packet arriving at port index `p` is received in error.
    #[inline]
    pub(crate) fn rcv_error(&mut self, p: u32) -> bool {
        let r = self.err_rate.get(p as usize).copied().unwrap_or(0.0);
        r > 0.0 && self.rng.chance(r)
    }
}

impl SimPort {
    /// Counts a packet sent; true when the 32-bit count wrapped (the caller hands the
    /// carry to [`Perf::carry`]).
    #[inline]
    pub(crate) fn count_xmit(&mut self) -> bool {
        let (v, carry) = self.xmit_pkts.overflowing_add(1);
        self.xmit_pkts = v;
        carry
    }

    /// Counts a packet received; true when the 32-bit count wrapped.
    #[inline]
    pub(crate) fn count_rcv(&mut self) -> bool {
        let (v, carry) = self.rcv_pkts.overflowing_add(1);
        self.rcv_pkts = v;
        carry
    }
}

impl SimFabric {
    /// A packet left by port index `p`.
    #[inline]
    pub(crate) fn count_xmit(&mut self, p: u32) {
        if self.st.ports[p as usize].count_xmit() {
            self.perf.carry(p, 0);
        }
    }

    /// A packet arrived at port index `p`.
    #[inline]
    pub(crate) fn count_rcv(&mut self, p: u32) {
        if self.st.ports[p as usize].count_rcv() {
            self.perf.carry(p, 1);
        }
    }

    /// A multicast copy crossed the link from port index `out` to `inp`.
    pub(crate) fn count_mcast(&mut self, out: u32, inp: u32) {
        self.count_xmit(out);
        self.count_rcv(inp);
        self.perf.cold_mut(out).mcast[0] += 1;
        self.perf.cold_mut(inp).mcast[1] += 1;
    }

    /// The running totals of port index `p`: XD, RD, XP, RP.
    fn totals(&self, p: u32) -> [u64; 4] {
        let sp = &self.st.ports[p as usize];
        let (inj, carries) = self
            .perf
            .cold(p)
            .map_or(([0; 4], [0; 2]), |c| (c.injected, c.carries));
        let x = (carries[0] << 32) | u64::from(sp.xmit_pkts);
        let r = (carries[1] << 32) | u64::from(sp.rcv_pkts);
        [
            x.saturating_mul(PACKET_WORDS).saturating_add(inj[XD]),
            r.saturating_mul(PACKET_WORDS).saturating_add(inj[RD]),
            x.saturating_add(inj[XP]),
            r.saturating_add(inj[RP]),
        ]
    }

    /// The PortCounters of port index `p` (PortSelect and CounterSelect left 0).
    pub(crate) fn perf_counters(&self, p: u32) -> PortCounters {
        let f = self.totals(p);
        let d = PerfCold::default();
        let c = self.perf.cold(p).unwrap_or(&d);
        let view = |k: usize, ctr: Counter| (f[k] - c.pc_base[k]).min(ctr.max()) as u32;
        let e = |k: usize| c.errors[k];
        PortCounters {
            symbol_error: e(0),
            link_error_recovery: e(1) as u8,
            link_downed: e(2) as u8,
            rcv_errors: e(3),
            rcv_remote_physical_errors: e(4),
            rcv_switch_relay_errors: e(5),
            xmit_discards: e(6),
            xmit_constraint_errors: e(7) as u8,
            rcv_constraint_errors: e(8) as u8,
            local_link_integrity_errors: e(9) as u8,
            excessive_buffer_overrun_errors: e(10) as u8,
            vl15_dropped: e(11),
            xmit_data: view(XD, Counter::XmitData),
            rcv_data: view(RD, Counter::RcvData),
            xmit_pkts: view(XP, Counter::XmitPkts),
            rcv_pkts: view(RP, Counter::RcvPkts),
            xmit_wait: c.xmit_wait,
            ..PortCounters::default()
        }
    }

    /// The extended counters' running totals of port index `p`, ExtCounter order.
    fn ext_totals(&self, p: u32) -> [u64; 8] {
        let f = self.totals(p);
        let m = self.perf.cold(p).map_or([0; 2], |c| c.mcast);
        [
            f[XD],
            f[RD],
            f[XP],
            f[RP],
            f[XP].saturating_sub(m[0]),
            f[RP].saturating_sub(m[1]),
            m[0],
            m[1],
        ]
    }

    /// The PortCountersExtended of port index `p` (selects left 0).
    pub(crate) fn perf_extended(&self, p: u32) -> PortCountersExtended {
        let t = self.ext_totals(p);
        let base = self.perf.cold(p).map_or([0; 8], |c| c.ext_base);
        let v = |k: usize| t[k] - base[k];
        PortCountersExtended {
            xmit_data: v(0),
            rcv_data: v(1),
            xmit_pkts: v(2),
            rcv_pkts: v(3),
            unicast_xmit_pkts: v(4),
            unicast_rcv_pkts: v(5),
            multicast_xmit_pkts: v(6),
            multicast_rcv_pkts: v(7),
            ..PortCountersExtended::default()
        }
    }

    /// Clears the PortCounters CounterSelect (bits 0..=15) and CounterSelect2 (bit 0:
    /// PortXmitWait) name at port index `p`.
    pub(crate) fn perf_clear(&mut self, p: u32, select: u16, select2: u8) {
        let f = self.totals(p);
        let c = self.perf.cold_mut(p);
        for (k, e) in c.errors.iter_mut().enumerate() {
            if select & (1 << k) != 0 {
                *e = 0;
            }
        }
        for (k, (b, total)) in c.pc_base.iter_mut().zip(f).enumerate() {
            if select & (1 << (12 + k)) != 0 {
                *b = total;
            }
        }
        if select2 & 1 != 0 {
            c.xmit_wait = 0;
        }
    }

    /// Clears the PortCountersExtended CounterSelect (bits 0..=7, ExtCounter order) names
    /// at port index `p`.
    pub(crate) fn perf_clear_extended(&mut self, p: u32, select: u16) {
        let t = self.ext_totals(p);
        let c = self.perf.cold_mut(p);
        for (k, b) in c.ext_base.iter_mut().enumerate() {
            if select & (1 << k) != 0 {
                *b = t[k];
            }
        }
    }

    /// Power-up counters for the ports `range` (indexes).
    pub(crate) fn perf_reset(&mut self, range: std::ops::RangeInclusive<u32>) {
        for p in range {
            let sp = &mut self.st.ports[p as usize];
            (sp.xmit_pkts, sp.rcv_pkts) = (0, 0);
            let i = self.perf.cold_idx[p as usize];
            if i != NONE {
                self.perf.cold[i as usize] = PerfCold::default();
            }
        }
    }
}

/// Sums PortCounters the way an AllPortSelect answer does: every counter saturating at
/// its width.
pub(crate) fn sum_counters(a: &PortCounters, b: &PortCounters) -> PortCounters {
    let s = |c: Counter| (a.get(c) + b.get(c)).min(c.max());
    PortCounters {
        symbol_error: s(Counter::SymbolError) as u16,
        link_error_recovery: s(Counter::LinkErrorRecovery) as u8,
        link_downed: s(Counter::LinkDowned) as u8,
        rcv_errors: s(Counter::RcvErrors) as u16,
        rcv_remote_physical_errors: s(Counter::RcvRemotePhysicalErrors) as u16,
        rcv_switch_relay_errors: s(Counter::RcvSwitchRelayErrors) as u16,
        xmit_discards: s(Counter::XmitDiscards) as u16,
        xmit_constraint_errors: s(Counter::XmitConstraintErrors) as u8,
        rcv_constraint_errors: s(Counter::RcvConstraintErrors) as u8,
        local_link_integrity_errors: s(Counter::LocalLinkIntegrityErrors) as u8,
        excessive_buffer_overrun_errors: s(Counter::ExcessiveBufferOverrunErrors) as u8,
        qp1_dropped: s(Counter::Qp1Dropped) as u16,
        vl15_dropped: s(Counter::Vl15Dropped) as u16,
        xmit_data: s(Counter::XmitData) as u32,
        rcv_data: s(Counter::RcvData) as u32,
        xmit_pkts: s(Counter::XmitPkts) as u32,
        rcv_pkts: s(Counter::RcvPkts) as u32,
        xmit_wait: s(Counter::XmitWait) as u32,
        ..*a
    }
}

/// Sums PortCountersExtended (saturating at 2^64 - 1).
pub(crate) fn sum_extended(
    a: &PortCountersExtended,
    b: &PortCountersExtended,
) -> PortCountersExtended {
    PortCountersExtended {
        xmit_data: a.xmit_data.saturating_add(b.xmit_data),
        rcv_data: a.rcv_data.saturating_add(b.rcv_data),
        xmit_pkts: a.xmit_pkts.saturating_add(b.xmit_pkts),
        rcv_pkts: a.rcv_pkts.saturating_add(b.rcv_pkts),
        unicast_xmit_pkts: a.unicast_xmit_pkts.saturating_add(b.unicast_xmit_pkts),
        unicast_rcv_pkts: a.unicast_rcv_pkts.saturating_add(b.unicast_rcv_pkts),
        multicast_xmit_pkts: a.multicast_xmit_pkts.saturating_add(b.multicast_xmit_pkts),
        multicast_rcv_pkts: a.multicast_rcv_pkts.saturating_add(b.multicast_rcv_pkts),
        ..*a
    }
}

impl SimFabric {
    /// The PortCounters of port `port` of `node` as its PMA answers a Get with that
    /// PortSelect (PortSelect and CounterSelect 0 here). Switch port 0 is allowed (its
    /// counters stay 0: base port 0 has no link).
    pub fn port_counters(&self, node: NodeId, port: u8) -> Result<PortCounters, SimError> {
        let i = self.port_index(node, port)?;
        Ok(self.perf_counters(i))
    }

    /// The PortCountersExtended of port `port` of `node` (see [`SimFabric::port_counters`]).
    pub fn port_counters_extended(
        &self,
        node: NodeId,
        port: u8,
    ) -> Result<PortCountersExtended, SimError> {
        let i = self.port_index(node, port)?;
        Ok(self.perf_extended(i))
    }

    /// Adds `n` to counter `counter` of port `port` of `node`, as if the hardware had seen
    /// it (symbol errors, link error recovery, receive errors, ...): the counter stops at
    /// its all-ones value. The data and packet counters take `n` into their running totals,
    /// so PortCountersExtended moves too (a test can bring PortXmitData near saturation
    /// this way). QP1Dropped is not modelled ([`SimError::NotModelled`]).
    pub fn inject_port_errors(
        &mut self,
        node: NodeId,
        port: u8,
        counter: Counter,
        n: u64,
    ) -> Result<(), SimError> {
        let i = self.port_index(node, port)?;
        let flow = match counter {
            Counter::XmitData => Some(XD),
            Counter::RcvData => Some(RD),
            Counter::XmitPkts => Some(XP),
            Counter::RcvPkts => Some(RP),
            _ => None,
        };
        if let Some(k) = flow {
            let f = &mut self.perf.cold_mut(i).injected[k];
            *f = f.saturating_add(n);
            return Ok(());
        }
        match counter {
            Counter::XmitWait => self.perf.add_wait(i, n),
            Counter::Qp1Dropped => return Err(SimError::NotModelled(counter.name())),
            c => {
                let e = err_index(c).ok_or(SimError::NotModelled(c.name()))?;
                self.perf.add_error(i, e, n);
            }
        }
        Ok(())
    }

    /// Sets the receive error rate of port `port` of `node` (every port of the node when
    /// None), like ibsim's console `Error "node"[port] rate`: every packet arriving at the
    /// port (SMP, GMP, delivery check, multicast copy) is dropped with probability `prob`
    /// and counted in the port's PortRcvErrors (and in PortRcvPkts: IBA counts packets
    /// received with errors). The draws come from the fabric's seed. 0 turns it off.
    pub fn set_port_error_rate(
        &mut self,
        node: NodeId,
        port: Option<u8>,
        prob: f64,
    ) -> Result<(), SimError> {
        if !(0.0..=1.0).contains(&prob) {
            return Err(SimError::BadProbability(prob.to_string()));
        }
        let ports = match port {
            Some(p) => {
                let i = self.port_index(node, p)?;
                i..=i
            }
            None => {
                let n = self
                    .st
                    .nodes
                    .get(node.index())
                    .ok_or(SimError::NoSuchNode(node))?;
                n.port_base..=n.port_base + u32::from(n.num_ports)
            }
        };
        let rates = &mut self.perf.err_rate;
        if rates.is_empty() && prob > 0.0 {
            *rates = vec![0.0; self.st.ports.len()];
        }
        for i in ports {
            if let Some(r) = rates.get_mut(i as usize) {
                *r = prob;
            }
        }
        if rates.iter().all(|&r| r == 0.0) {
            rates.clear();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SimConfig;
    use fabric::{Guid, NodeType, PortRef, Topology};

    #[test]
    fn packet_counts_carry_past_32_bits() {
        let mut t = Topology::new();
        let a = t.add_node(NodeType::Ca, 1, Guid(0x10), "a").unwrap();
        let b = t.add_node(NodeType::Ca, 1, Guid(0x20), "b").unwrap();
        t.connect(PortRef::new(a, 1), PortRef::new(b, 1)).unwrap();
        let mut sim = SimFabric::new(&t, SimConfig::default()).unwrap();
        let p = sim.port_index(a, 1).unwrap();
        sim.st.ports[p as usize].xmit_pkts = u32::MAX - 1;
        for _ in 0..3 {
            sim.count_xmit(p);
        }
        let ext = sim.port_counters_extended(a, 1).unwrap();
        assert_eq!(ext.xmit_pkts, (1u64 << 32) + 1);
        assert_eq!(ext.xmit_data, ((1u64 << 32) + 1) * PACKET_WORDS);
        let pc = sim.port_counters(a, 1).unwrap();
        assert_eq!((pc.xmit_pkts, pc.xmit_data), (u32::MAX, u32::MAX));
        assert_eq!(pc.rcv_pkts, 0);
    }
}
