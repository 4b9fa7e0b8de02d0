//! What the performance manager hands to the registry after each counter sweep and alarm.

use sm_core::perf::PerfManager;

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
                    values: r.totals,
                };
                // Data counters count 4-octet words; the families count octets.
                for c in [Counter::XmitData, Counter::RcvData] {
                    let v = row.counter_mut(c);
                    *v = v.saturating_mul(4);
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
