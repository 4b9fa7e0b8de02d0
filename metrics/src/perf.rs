//! What the performance manager hands to the registry after each counter sweep and alarm.

use sm_core::perf::PerfManager;

/// The metrics' name of a counter (QP1Dropped has none: not modelled as a family).
pub fn metric_of(c: mad::perf::Counter) -> Option<crate::PortCounter> {
    use crate::PortCounter as M;
    use mad::perf::Counter as C;
    Some(match c {
        C::SymbolError => M::SymbolError,
        C::LinkErrorRecovery => M::LinkErrorRecovery,
        C::LinkDowned => M::LinkDowned,
        C::RcvErrors => M::RcvErrors,
        C::RcvRemotePhysicalErrors => M::RcvRemotePhysicalErrors,
        C::RcvSwitchRelayErrors => M::RcvSwitchRelayErrors,
        C::XmitDiscards => M::XmitDiscards,
        C::XmitConstraintErrors => M::XmitConstraintErrors,
        C::RcvConstraintErrors => M::RcvConstraintErrors,
        C::LocalLinkIntegrityErrors => M::LocalLinkIntegrityErrors,
        C::ExcessiveBufferOverrunErrors => M::ExcessiveBufferOverrunErrors,
        C::Qp1Dropped => return None,
        C::Vl15Dropped => M::Vl15Dropped,
        C::XmitData => M::XmitData,
        C::RcvData => M::RcvData,
        C::XmitPkts => M::XmitPkts,
        C::RcvPkts => M::RcvPkts,
        C::XmitWait => M::XmitWait,
    })
}

/// Hands the totals of every port read and every link's health to the metrics (per-port
/// families only when they are served and wanted).
pub fn publish_perf(p: &PerfManager) {
    use crate::{LinkHealth as MH, LinkHealthRow, PortCounterRow};
    use mad::perf::Counter;
    if crate::port_counters_wanted() {
        let rows: Vec<PortCounterRow> = p
            .ports()
            .iter()
            .filter(|r| r.last.is_some())
            .map(|r| {
                let mut row = PortCounterRow {
                    node_guid: r.target.node_guid.0,
                    port: r.target.port,
                    ..PortCounterRow::default()
                };
                for (c, v) in Counter::ALL.into_iter().zip(r.totals) {
                    if let Some(m) = metric_of(c) {
                        // Data counters count 4-octet words; the families count octets.
                        let data = matches!(c, Counter::XmitData | Counter::RcvData);
                        *row.counter_mut(m) = if data { v.saturating_mul(4) } else { v };
                    }
                }
                row
            })
            .collect();
        crate::set_port_counters(&rows);
    }
    let links: Vec<LinkHealthRow> = p
        .links()
        .into_iter()
        .map(|l| LinkHealthRow {
            node_guid: l.a.node_guid.0,
            port: l.a.port,
            peer_guid: l.b.node_guid.0,
            peer_port: l.b.port,
            health: match l.health {
                sm_core::perf::Health::Ok => MH::Ok,
                sm_core::perf::Health::Degraded => MH::Degraded,
                sm_core::perf::Health::Down => MH::Down,
            },
        })
        .collect();
    crate::set_link_health(&links);
}
