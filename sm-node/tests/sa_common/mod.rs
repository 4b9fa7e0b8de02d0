//! Test driver: sm-core's sweeper brings a simulated fabric up (virtual time), then an SA
//! engine answers from the view of what it discovered, with PortInfo read from the
//! simulator (the fabric's truth). Shared by the `sa_*` tests and the `sa_path_records`
//! bench.
#![allow(dead_code)]

use fabric::{Guid, Lid, NodeId, Topology};
use fabric_sim::{AttachId, SimConfig, SimFabric};
use mad::Method;
use mad::sa::{SaMad, SaRecord};
use sa::{FabricView, Request, RmppConfig, RmppSender, SaClient, SaConfig, SaEngine, SaResponse};
use sm_core::{Event, Sweeper, SweeperConfig, VTime, route_inline};
use sm_node::sa_view::view_from_sweeper;
use std::collections::HashMap;
use std::sync::Arc;

pub const PREFIX: u64 = 0xfe80_0000_0000_0000;

pub struct Up {
    pub topo: Topology,
    pub fab: SimFabric,
    pub sm: AttachId,
    pub sm_port: Guid,
    pub sw: Sweeper,
    pub now: VTime,
}

pub fn topo(spec: &str) -> Topology {
    spec.parse::<fabric::GenSpec>().unwrap().generate().unwrap()
}

/// Every cabled CA port: (node, port, port GUID), node order.
pub fn ca_ports(t: &Topology) -> Vec<(NodeId, u8, Guid)> {
    let mut v = Vec::new();
    for (id, n) in t.cas() {
        for p in n.port_numbers() {
            if n.ports[p.0 as usize].remote.is_some() {
                v.push((id, p.0, n.ports[p.0 as usize].guid));
            }
        }
    }
    v
}

/// Brings `spec` up with `partitions` (None: no file) and the SM on the first CA port.
pub fn bring_up(spec: &str, partitions: Option<&str>) -> Up {
    let cfg = SweeperConfig {
        partitions_conf: partitions.map(str::to_string),
        sm_key: 1,
        ..SweeperConfig::default()
    };
    bring_up_with(spec, cfg, Vec::new())
}

/// Brings `spec` up with `cfg`, the multicast `groups` handed over before the first sweep
/// (its programming writes their MFT blocks), the SM on the first CA port.
pub fn bring_up_with(spec: &str, cfg: SweeperConfig, groups: Vec<sm_core::McastGroup>) -> Up {
    let t = topo(spec);
    let fab = SimFabric::new(
        &t,
        SimConfig {
            seed: 7,
            ..SimConfig::default()
        },
    )
    .unwrap();
    bring_up_on(t, fab, cfg, groups)
}

/// Brings `fab` (built from `t`) up with `cfg` and `groups`, the SM on the first CA port.
pub fn bring_up_on(
    t: Topology,
    mut fab: SimFabric,
    cfg: SweeperConfig,
    groups: Vec<sm_core::McastGroup>,
) -> Up {
    let sm_port = ca_ports(&t)[0].2;
    let sm = fab.attach(sm_port).unwrap();
    let mut sw = Sweeper::new(cfg).unwrap();
    let mut now: VTime = 0;
    if !groups.is_empty() {
        sw.set_multicast(now, groups);
    }
    let mut up = false;
    for _ in 0..2_000_000 {
        while let Some(tx) = sw.poll_transmit() {
            if tx.dlid.is_permissive() {
                fab.send(now, sm, &tx.smp).unwrap();
            } else {
                fab.send_lid(now, sm, tx.dlid, &tx.smp).unwrap();
            }
        }
        let next = match (fab.next_event_time(), sw.poll_timeout()) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => match a.or(b) {
                Some(t) => t,
                None => break,
            },
        };
        now = now.max(next);
        fab.run_until(now);
        while let Some(r) = fab.poll_recv_full(sm) {
            sw.handle_mad(now, r.slid, r.smp);
        }
        if matches!(sw.poll_timeout(), Some(x) if x <= now) {
            sw.handle_timeout(now);
        }
        while let Some(ev) = sw.poll_event() {
            match ev {
                Event::RoutingNeeded(job) => {
                    let r = route_inline(&job);
                    sw.handle_routing_result(now, r);
                }
                Event::SubnetUp { .. } => up = true,
                _ => {}
            }
        }
        // Vports come up in the heavy sweep after the one that turned virtualization on.
        let vports_up = sw
            .virt_ports()
            .all(|p| p.enabled && !p.vports.is_empty() && p.vports.values().all(|v| v.state == 4));
        if up && vports_up {
            break;
        }
    }
    assert!(up, "no SUBNET UP");
    Up {
        topo: t,
        fab,
        sm,
        sm_port,
        sw,
        now,
    }
}

impl Up {
    /// PortInfo of every port as the simulator holds it, by (node GUID, port).
    pub fn port_infos(&self) -> HashMap<(Guid, u8), mad::PortInfo> {
        let mut m = HashMap::new();
        for (id, n) in self.topo.nodes() {
            let first = if n.is_switch() { 0 } else { 1 };
            for p in first..n.ports.len() as u8 {
                if let Ok(pi) = self.fab.port_info(id, p) {
                    m.insert((n.node_guid, p), pi);
                }
            }
        }
        m
    }

    pub fn view(&self, partition_sl: HashMap<u16, u8>) -> FabricView {
        view_from_sweeper(
            &self.sw,
            self.sm_port,
            PREFIX,
            partition_sl,
            self.port_infos(),
        )
    }

    pub fn engine(&self) -> SaEngine {
        let mut e = SaEngine::new(SaConfig::default());
        e.set_view(Arc::new(self.view(HashMap::new())));
        e
    }

    pub fn lid_of_guid(&self, g: Guid) -> Lid {
        self.sw.guid2lid().get(g).unwrap().0
    }
}

/// A request from `slid`.
pub fn req(slid: Lid, mad: mad::sa::SaMad) -> Request {
    Request { slid, mad }
}

/// Sends one request through the engine and reassembles the answer (RMPP in memory).
pub fn ask(e: &mut SaEngine, slid: Lid, sm_key: u64, m: SaMad, now_ms: u64) -> (SaResponse, bool) {
    let mut c = SaClient::new(0, sm_key);
    let (mut q, mut t) = c.request(
        m.header.mad.method,
        m.header.mad.attr_id,
        m.header.comp_mask,
        m.data,
    );
    q.header.sm_key = sm_key;
    let h = e.handle(now_ms, &req(slid, q));
    let reply = h.reply.expect("an answer");
    assert_eq!(reply.dlid, slid);
    if let Some(one) = reply.single() {
        let st = t.handle(&one).unwrap();
        return (st.done.expect("complete"), h.changed);
    }
    let mut s = RmppSender::new(
        reply.mad.clone(),
        reply.table.clone().unwrap(),
        RmppConfig::default(),
    );
    for _ in 0..10_000 {
        let Some(seg) = s.poll_transmit(0) else {
            panic!("sender stalled in {:?}", s.state());
        };
        let st = t.handle(&seg).unwrap();
        if let Some(a) = st.send {
            s.handle(0, &a);
        }
        if let Some(done) = st.done {
            return (done, h.changed);
        }
    }
    panic!("no end");
}

pub fn query<R: SaRecord>(
    e: &mut SaEngine,
    slid: Lid,
    method: Method,
    mask: u64,
    r: &R,
) -> SaResponse {
    ask(
        e,
        slid,
        0,
        SaMad::request(method, R::ID, 1, mask, r.to_data()),
        0,
    )
    .0
}
