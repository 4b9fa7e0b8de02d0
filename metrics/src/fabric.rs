//! Per-port fabric metrics, fed by the performance manager: its accumulated port counters
//! ([`super::set_port_counters`]), the health of each link ([`super::set_link_health`]) and
//! its alarms ([`super::add_port_alarms`]). This module only stores what it is handed and writes it out at
//! scrape time (a prometheus-client `Collector`); what a counter means, when a link is
//! degraded and when to raise an alarm are the perf manager's.
//!
//! The per-port families (`ib_port_<counter>_total`, `ib_link_health`) are off with
//! `metrics-port-counters = false` (`--no-metrics-port-counters`): the calls then store
//! nothing. Cardinality: one series per port and counter (docs/metrics.md).

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

pub use super::rows::{EXPORTED, LinkHealth, LinkHealthRow, PortCounterRow, info};
use mad::perf::Counter as PerfCounter;

/// A port's label values, formatted once when the row is stored.
#[derive(Debug)]
struct PortLabels {
    node_guid: String,
    port: String,
}

impl PortLabels {
    fn new(guid: u64, port: u8) -> PortLabels {
        PortLabels {
            node_guid: format!("{guid:#018x}"),
            port: port.to_string(),
        }
    }
}

/// What the perf manager handed in last, by (node GUID, port).
#[derive(Debug, Default)]
struct Tables {
    ports: BTreeMap<(u64, u8), (PortLabels, PortCounterRow)>,
    links: BTreeMap<(u64, u8), (PortLabels, PortLabels, LinkHealth)>,
}

/// The fabric families of one registry: the stored tables (written out by the collector)
/// and the alarms counter.
#[derive(Debug)]
pub struct FabricMetrics {
    tables: Arc<RwLock<Tables>>,
    alarms: Family<[(&'static str, &'static str); 1], Counter>,
    /// Per-port families on (`metrics-port-counters`).
    enabled: AtomicBool,
}

/// Writes the stored tables at scrape time.
#[derive(Debug)]
struct TablesCollector(Arc<RwLock<Tables>>);

impl Collector for TablesCollector {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Ok(t) = self.0.read() else {
            return Ok(());
        };
        if !t.ports.is_empty() {
            for c in EXPORTED {
                let Some((name, help)) = info(c) else {
                    continue;
                };
                let name = format!("ib_port_{name}");
                let help = format!("{help}.");
                let mut fam = enc.encode_descriptor(&name, &help, None, MetricType::Counter)?;
                for (l, row) in t.ports.values() {
                    let labels = [("node_guid", l.node_guid.as_str()), ("port", &l.port)];
                    ConstCounter::new(row.get(c)).encode(fam.encode_family(&labels)?)?;
                }
            }
        }
        if !t.links.is_empty() {
            let mut fam = enc.encode_descriptor(
                "ib_link_health",
                "Health of the link at this port as the performance manager judges it: 0 ok, 1 degraded, 2 down.",
                None,
                MetricType::Gauge,
            )?;
            for (here, peer, h) in t.links.values() {
                let labels = [
                    ("node_guid", here.node_guid.as_str()),
                    ("port", &here.port),
                    ("peer_guid", &peer.node_guid),
                    ("peer_port", &peer.port),
                ];
                ConstGauge::new(*h as i64).encode(fam.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

impl FabricMetrics {
    /// The fabric families, registered in `r` (per-port families on).
    pub fn register(r: &mut Registry) -> FabricMetrics {
        let tables = Arc::new(RwLock::new(Tables::default()));
        let alarms = Family::default();
        r.register(
            "ib_port_alarms",
            "Alarms the performance manager raised, by the port counter that crossed its threshold",
            alarms.clone(),
        );
        r.register_collector(Box::new(TablesCollector(tables.clone())));
        FabricMetrics {
            tables,
            alarms,
            enabled: AtomicBool::new(true),
        }
    }

    /// Turns the per-port families on or off (off: stored rows are dropped).
    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Ordering::Relaxed);
        if !on && let Ok(mut t) = self.tables.write() {
            *t = Tables::default();
        }
    }

    /// Per-port families on.
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// Replaces every port's counters with `rows` (ports not in `rows` disappear).
    pub fn set_port_counters(&self, rows: &[PortCounterRow]) {
        if !self.enabled() {
            return;
        }
        let ports = rows
            .iter()
            .map(|r| {
                (
                    (r.node_guid, r.port),
                    (PortLabels::new(r.node_guid, r.port), *r),
                )
            })
            .collect();
        if let Ok(mut t) = self.tables.write() {
            t.ports = ports;
        }
    }

    /// Adds or replaces the counters of the ports in `rows`, keeping the others.
    pub fn update_port_counters(&self, rows: &[PortCounterRow]) {
        if !self.enabled() {
            return;
        }
        if let Ok(mut t) = self.tables.write() {
            for r in rows {
                t.ports
                    .entry((r.node_guid, r.port))
                    .and_modify(|e| e.1 = *r)
                    .or_insert_with(|| (PortLabels::new(r.node_guid, r.port), *r));
            }
        }
    }

    /// Replaces every link's health with `rows`.
    pub fn set_link_health(&self, rows: &[LinkHealthRow]) {
        if !self.enabled() {
            return;
        }
        let links = rows
            .iter()
            .map(|r| {
                let here = PortLabels::new(r.node_guid, r.port);
                let peer = PortLabels::new(r.peer_guid, r.peer_port);
                ((r.node_guid, r.port), (here, peer, r.health))
            })
            .collect();
        if let Ok(mut t) = self.tables.write() {
            t.links = links;
        }
    }

    /// Counts `n` alarms raised on `counter` (kept with the per-port families off).
    pub fn add_port_alarms(&self, counter: PerfCounter, n: u64) {
        let Some((name, _)) = info(counter) else {
            return;
        };
        self.alarms.get_or_create(&[("counter", name)]).inc_by(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::encoding::text::encode;

    fn text(f: impl FnOnce(&FabricMetrics)) -> String {
        let mut r = Registry::default();
        let m = FabricMetrics::register(&mut r);
        f(&m);
        let mut s = String::new();
        encode(&mut s, &r).unwrap();
        s
    }

    fn row(guid: u64, port: u8, base: u64) -> PortCounterRow {
        let mut r = PortCounterRow {
            node_guid: guid,
            port,
            ..PortCounterRow::default()
        };
        for (i, c) in EXPORTED.into_iter().enumerate() {
            *r.counter_mut(c) = base + i as u64;
        }
        r
    }

    #[test]
    fn nothing_stored_writes_only_the_eof() {
        assert_eq!(text(|_| {}), "# EOF\n");
    }

    #[test]
    fn port_rows_become_one_counter_family_per_counter() {
        let s = text(|m| m.set_port_counters(&[row(0x0002_c903_0000_0001, 3, 100)]));
        let mut expected = String::new();
        for (i, c) in EXPORTED.iter().enumerate() {
            let (name, help) = info(*c).unwrap();
            expected += &format!(
                "# HELP ib_port_{name} {help}.\n# TYPE ib_port_{name} counter\nib_port_{name}_total{{node_guid=\"0x0002c90300000001\",port=\"3\"}} {}\n",
                100 + i
            );
        }
        expected += "# EOF\n";
        assert_eq!(s, expected);
        // The 17 names as the dashboards know them.
        let names: Vec<&str> = EXPORTED.iter().map(|c| info(*c).unwrap().0).collect();
        assert_eq!(
            names,
            [
                "symbol_error",
                "link_error_recovery",
                "link_downed",
                "rcv_errors",
                "rcv_remote_physical_errors",
                "rcv_switch_relay_errors",
                "xmit_discards",
                "xmit_constraint_errors",
                "rcv_constraint_errors",
                "local_link_integrity_errors",
                "excessive_buffer_overrun_errors",
                "vl15_dropped",
                "xmit_data",
                "rcv_data",
                "xmit_pkts",
                "rcv_pkts",
                "xmit_wait"
            ]
        );
    }

    #[test]
    fn set_replaces_update_merges_and_ports_are_ordered() {
        let s = text(|m| {
            m.set_port_counters(&[row(2, 1, 0), row(1, 2, 0)]);
            m.set_port_counters(&[row(5, 7, 0), row(5, 1, 0)]);
            m.update_port_counters(&[row(5, 7, 40), row(4, 0, 0)]);
        });
        let lines: Vec<&str> = s
            .lines()
            .filter(|l| l.starts_with("ib_port_symbol_error_total"))
            .collect();
        assert_eq!(
            lines,
            [
                "ib_port_symbol_error_total{node_guid=\"0x0000000000000004\",port=\"0\"} 0",
                "ib_port_symbol_error_total{node_guid=\"0x0000000000000005\",port=\"1\"} 0",
                "ib_port_symbol_error_total{node_guid=\"0x0000000000000005\",port=\"7\"} 40",
            ]
        );
        let xmit = s
            .lines()
            .find(|l| {
                l.starts_with(
                    "ib_port_xmit_data_total{node_guid=\"0x0000000000000005\",port=\"7\"}",
                )
            })
            .unwrap();
        assert!(xmit.ends_with(" 52"), "{xmit}");
    }

    #[test]
    fn link_health_and_alarms() {
        let s = text(|m| {
            m.set_link_health(&[
                LinkHealthRow {
                    node_guid: 0x10,
                    port: 1,
                    peer_guid: 0x20,
                    peer_port: 36,
                    health: LinkHealth::Degraded,
                },
                LinkHealthRow {
                    node_guid: 0x20,
                    port: 36,
                    peer_guid: 0x10,
                    peer_port: 1,
                    health: LinkHealth::Down,
                },
            ]);
            m.add_port_alarms(PerfCounter::SymbolError, 2);
            m.add_port_alarms(PerfCounter::SymbolError, 1);
            m.add_port_alarms(PerfCounter::LinkDowned, 1);
        });
        let help = "# HELP ib_link_health Health of the link at this port as the performance manager judges it: 0 ok, 1 degraded, 2 down.\n# TYPE ib_link_health gauge\n";
        assert!(s.contains(help), "{s}");
        assert!(s.contains("ib_link_health{node_guid=\"0x0000000000000010\",port=\"1\",peer_guid=\"0x0000000000000020\",peer_port=\"36\"} 1\n"), "{s}");
        assert!(s.contains("ib_link_health{node_guid=\"0x0000000000000020\",port=\"36\",peer_guid=\"0x0000000000000010\",peer_port=\"1\"} 2\n"), "{s}");
        assert!(s.contains("# TYPE ib_port_alarms counter\n"), "{s}");
        assert!(
            s.contains("ib_port_alarms_total{counter=\"symbol_error\"} 3\n"),
            "{s}"
        );
        assert!(
            s.contains("ib_port_alarms_total{counter=\"link_downed\"} 1\n"),
            "{s}"
        );
        assert!(
            !s.contains("ib_port_symbol_error"),
            "no port rows given: {s}"
        );
    }

    #[test]
    fn off_stores_nothing_but_alarms_still_count() {
        let s = text(|m| {
            m.set_port_counters(&[row(1, 1, 5)]);
            m.set_enabled(false);
            m.set_port_counters(&[row(1, 1, 5)]);
            m.update_port_counters(&[row(1, 2, 5)]);
            m.set_link_health(&[LinkHealthRow::default()]);
            m.add_port_alarms(PerfCounter::XmitWait, 1);
        });
        assert_eq!(
            s,
            "# HELP ib_port_alarms Alarms the performance manager raised, by the port counter that crossed its threshold.\n# TYPE ib_port_alarms counter\nib_port_alarms_total{counter=\"xmit_wait\"} 1\n# EOF\n"
        );
    }
}
