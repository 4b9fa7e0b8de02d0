//! The Performance Management Agent (PMA) of every node (IBA 16.1): a PerfMgt GMP
//! (management class 0x04) sent with [`SimFabric::send_gmp`] to a CA port's LID or a
//! switch's LID is taken by the destination node's PMA, which answers the sender with a
//! GetResp along the same GMP path (it arrives through [`SimFabric::poll_recv_gmp`]), after
//! `SimConfig::sma_latency_ns`, with the request's P_Key and SL. Requests are every method
//! but the responses, Trap and Report (those reach whoever is attached, as any GMP).
//!
//! What the agent answers (the counters are [`crate::perf`]'s):
//!
//! * ClassPortInfo Get: base and class version 1, RespTimeValue 18 (ibsim's), and the
//!   CapabilityMask of the current HCAs and switches ibsim models: IsExtendedWidthSupported
//!   (all eight PortCountersExtended counters are kept) and PortCountersXmitWaitSupported
//!   on every node, AllPortSelect on switches only. IsQP1DroppedSupported is clear.
//! * PortCounters Get/Set and PortCountersExtended Get/Set. PortSelect names the port: on a
//!   switch 1..=NumPorts, or 0xFF for the sum over every port (AllPortSelect; each counter
//!   saturating at its width); on a CA the port the MAD arrived at. Anything else (a
//!   switch's base port 0 included: it has no link and no counters) is an invalid field.
//!   A Set clears the counters its CounterSelect names (PortCounters: bits 0..=15 in the
//!   order of IBA 16.1.3.5, CounterSelect2 bit 0 PortXmitWait; PortCountersExtended: bits
//!   0..=7, one per counter in wire order), on every port PortSelect names, and answers the
//!   values after clearing. Answers echo PortSelect and the selects.
//! * Status (IBA 13.4.7): 0x04 bad base or class version, 0x08 a method other than Get or
//!   Set, 0x0C an attribute the PMA does not implement or Set of ClassPortInfo, 0x1C a bad
//!   PortSelect. An answer with a non-zero status carries the request's data.
//!
//! The PMA has no key checks (no PM_Key), and a removed node answers nothing.

use crate::VTime;
use crate::error::SimError;
use crate::gmp::ReceivedGmp;
use crate::perf::{sum_counters, sum_extended};
use crate::sim::SimFabric;
use crate::state::NONE;
use fabric::NodeId;
use mad::perf::{
    ALL_PORTS, ClassPortInfo, PERF_CLASS_VERSION, PERF_DATA_LEN, PerfAttribute, PerfMad,
    PortCounters, PortCountersExtended,
};
use mad::{AttributeId, MadStatus, Method, MgmtClass};
use std::ops::RangeInclusive;

/// ClassPortInfo.RespTimeValue of every PMA (ibsim's: 4.096 us x 2^18).
const RESP_TIME_VALUE: u8 = 0x12;

/// True for a MAD the destination node's PMA takes: class PerfMgt, a request method.
pub(crate) fn is_pma_request(mad: &[u8; 256]) -> bool {
    let m = Method(mad[3]);
    mad[1] == MgmtClass::PERF_MGMT.0 && !m.is_response() && m != Method::TRAP && m != Method::REPORT
}

impl SimFabric {
    /// The ClassPortInfo the PMA of `node` answers (see the `pma` module).
    pub fn pma_class_port_info(&self, node: NodeId) -> Result<ClassPortInfo, SimError> {
        let n = self
            .st
            .nodes
            .get(node.index())
            .ok_or(SimError::NoSuchNode(node))?;
        let mut cap =
            ClassPortInfo::CAP_EXTENDED_WIDTH | ClassPortInfo::CAP_PORT_COUNTERS_XMIT_WAIT;
        if n.sw != NONE {
            cap |= ClassPortInfo::CAP_ALL_PORT_SELECT;
        }
        let mut cpi = ClassPortInfo::default();
        cpi.info.base_version = 1;
        cpi.info.class_version = PERF_CLASS_VERSION;
        cpi.info.capability_mask = cap;
        cpi.info.resp_time_value = RESP_TIME_VALUE;
        Ok(cpi)
    }

    /// The PMA of the node owning port index `port` (the CA port, or switch port 0) takes a
    /// request that arrived there on `sl` and sends the answer back to its source.
    pub(crate) fn pma_request(&mut self, port: u32, sl: u8, g: &ReceivedGmp, t: VTime) {
        self.acct.counters.pma_requests += 1;
        let Ok(req) = PerfMad::decode(&g.mad) else {
            // Not reached: only class 0x04 MADs come here.
            return;
        };
        let mut resp = req.response();
        resp.header.status = self.pma_answer(port, &req, &mut resp.data);
        self.acct.counters.pma_responses += 1;
        let at = t + self.cfg.sma_latency_ns;
        // A drop on the way back is counted by the route; the requester times out.
        let _ = self.route_gmp(at, port, g.slid, g.pkey, sl, &resp.encode());
    }

    /// Carries out one request; writes the answer's data area, returns the status.
    fn pma_answer(&mut self, port: u32, req: &PerfMad, data: &mut [u8; PERF_DATA_LEN]) -> u16 {
        let h = &req.header;
        if h.base_version != 1 || h.class_version != PERF_CLASS_VERSION {
            return MadStatus::BAD_VERSION.0;
        }
        let set = match h.method {
            Method::GET => false,
            Method::SET => true,
            _ => return MadStatus::METHOD_UNSUPPORTED.0,
        };
        match h.attr_id {
            AttributeId::CLASS_PORT_INFO if !set => {
                let node = NodeId(self.st.ports[port as usize].node);
                match self.pma_class_port_info(node) {
                    Ok(cpi) => cpi.encode(data),
                    Err(_) => return MadStatus::INVALID_FIELD.0,
                }
            }
            AttributeId::PERF_PORT_COUNTERS => {
                let q = PortCounters::decode(&req.data);
                let Some(ports) = self.pma_ports(port, q.port_select) else {
                    return MadStatus::INVALID_FIELD.0;
                };
                let mut sum = PortCounters::default();
                for p in ports {
                    if set {
                        self.perf_clear(p, q.counter_select, q.counter_select2);
                    }
                    sum = sum_counters(&sum, &self.perf_counters(p));
                }
                sum.port_select = q.port_select;
                sum.counter_select = q.counter_select;
                sum.counter_select2 = q.counter_select2;
                sum.encode(data);
            }
            AttributeId::PERF_PORT_COUNTERS_EXTENDED => {
                let q = PortCountersExtended::decode(&req.data);
                let Some(ports) = self.pma_ports(port, q.port_select) else {
                    return MadStatus::INVALID_FIELD.0;
                };
                let mut sum = PortCountersExtended::default();
                for p in ports {
                    if set {
                        self.perf_clear_extended(p, q.counter_select);
                    }
                    sum = sum_extended(&sum, &self.perf_extended(p));
                }
                sum.port_select = q.port_select;
                sum.counter_select = q.counter_select;
                sum.counter_select2 = q.counter_select2;
                sum.encode(data);
            }
            _ => return MadStatus::METHOD_ATTR_UNSUPPORTED.0,
        }
        MadStatus::OK.0
    }

    /// The port indexes PortSelect `select` names at the node owning `port` (the port the
    /// request arrived at), or None when it names none.
    fn pma_ports(&self, port: u32, select: u8) -> Option<RangeInclusive<u32>> {
        let p = &self.st.ports[port as usize];
        let n = &self.st.nodes[p.node as usize];
        if n.sw == NONE {
            return (select == p.num).then_some(port..=port);
        }
        let base = n.port_base;
        match select {
            ALL_PORTS => Some(base + 1..=base + u32::from(n.num_ports)),
            s if s >= 1 && s <= n.num_ports => {
                let i = base + u32::from(s);
                Some(i..=i)
            }
            _ => None,
        }
    }
}
