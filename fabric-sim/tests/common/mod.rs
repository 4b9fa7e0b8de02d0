//! Shared helpers for the fabric-sim tests: small fabrics and SMP round trips through
//! the in-process handle.
#![allow(dead_code)]

use fabric::{Guid, Lid, NodeId, NodeType, PortRef, Topology};
use fabric_sim::{AttachId, SimConfig, SimFabric};
use mad::{AttributeId, Method, PortInfo, Smp, SmpAttribute};

/// A chain H0 - S1 - S2 - S3 - S4 - S5 of 12-port switches, wired irregularly so that
/// every hop has distinct ports: H0[1] - S1[12]; S_i[i+1] - S_{i+1}[12-i]; host H_i on
/// S_i[1]. Returns (topology, H0, [S1..S5], [H1..H5]).
pub fn chain() -> (Topology, NodeId, Vec<NodeId>, Vec<NodeId>) {
    let mut t = Topology::new();
    let h0 = t.add_node(NodeType::Ca, 1, Guid(0x1000), "H0").unwrap();
    let mut sws = Vec::new();
    let mut hosts = Vec::new();
    for i in 1..=5u64 {
        sws.push(
            t.add_node(NodeType::Switch, 12, Guid(0x2000 + i), format!("S{i}"))
                .unwrap(),
        );
        hosts.push(
            t.add_node(NodeType::Ca, 2, Guid(0x1000 + 0x10 * i), format!("H{i}"))
                .unwrap(),
        );
    }
    t.connect(PortRef::new(h0, 1), PortRef::new(sws[0], 12))
        .unwrap();
    for i in 0..5usize {
        t.connect(PortRef::new(sws[i], 1), PortRef::new(hosts[i], 1))
            .unwrap();
        if i < 4 {
            let out = (i + 2) as u8; // S_{i+1} out port i+2 (1-based switch index i+1)
            let inp = (11 - i) as u8;
            t.connect(PortRef::new(sws[i], out), PortRef::new(sws[i + 1], inp))
                .unwrap();
        }
    }
    (t, h0, sws, hosts)
}

/// A fabric with tracing on.
pub fn sim(t: &Topology, trace: bool) -> SimFabric {
    SimFabric::new(
        t,
        SimConfig {
            seed: 1,
            trace,
            ..SimConfig::default()
        },
    )
    .unwrap()
}

/// Runs the fabric until nothing is pending (bounded at 10 s of virtual time).
pub fn settle(fab: &mut SimFabric) {
    let limit = fab.now() + 10_000_000_000;
    fab.run_until_idle(limit);
}

/// Sends a directed-route SMP and returns the answer, if any.
pub fn dr(fab: &mut SimFabric, sm: AttachId, smp: &Smp) -> Option<Smp> {
    let now = fab.now();
    fab.send(now, sm, smp).unwrap();
    settle(fab);
    let mut out = None;
    while let Some((_, m)) = fab.poll_recv(sm) {
        if m.tid == smp.tid && m.is_response() {
            out = Some(m);
        }
    }
    out
}

/// Sends a LID-routed SMP to `dlid` and returns the answer, if any.
pub fn lid(fab: &mut SimFabric, sm: AttachId, dlid: u16, smp: &Smp) -> Option<Smp> {
    let now = fab.now();
    fab.send_lid(now, sm, Lid(dlid), smp).unwrap();
    settle(fab);
    let mut out = None;
    while let Some((_, m)) = fab.poll_recv(sm) {
        if m.tid == smp.tid && m.is_response() {
            out = Some(m);
        }
    }
    out
}

static TID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A fresh transaction id.
pub fn tid() -> u64 {
    TID.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// DR Get of attribute `T` along `path`.
pub fn dr_get<T: SmpAttribute>(
    fab: &mut SimFabric,
    sm: AttachId,
    path: &[u8],
    attr_mod: u32,
) -> Option<(u16, T)> {
    let q = Smp::dr_get(tid(), T::ID, attr_mod, path).unwrap();
    dr(fab, sm, &q).map(|r| (r.status, T::decode(&r.data)))
}

/// DR Set of `v` along `path`; returns (status, attribute as answered).
pub fn dr_set<T: SmpAttribute>(
    fab: &mut SimFabric,
    sm: AttachId,
    path: &[u8],
    attr_mod: u32,
    v: &T,
) -> Option<(u16, T)> {
    let q = Smp::dr_set(tid(), attr_mod, path, v).unwrap();
    dr(fab, sm, &q).map(|r| (r.status, T::decode(&r.data)))
}

/// DR Set with an M_Key.
pub fn dr_set_key<T: SmpAttribute>(
    fab: &mut SimFabric,
    sm: AttachId,
    path: &[u8],
    attr_mod: u32,
    v: &T,
    m_key: u64,
) -> Option<(u16, T)> {
    let q = Smp::dr_set(tid(), attr_mod, path, v)
        .unwrap()
        .with_m_key(m_key);
    dr(fab, sm, &q).map(|r| (r.status, T::decode(&r.data)))
}

/// DR Get with an M_Key.
pub fn dr_get_key<T: SmpAttribute>(
    fab: &mut SimFabric,
    sm: AttachId,
    path: &[u8],
    attr_mod: u32,
    m_key: u64,
) -> Option<(u16, T)> {
    let q = Smp::dr_get(tid(), T::ID, attr_mod, path)
        .unwrap()
        .with_m_key(m_key);
    dr(fab, sm, &q).map(|r| (r.status, T::decode(&r.data)))
}

/// Reads PortInfo by DR, changes it with `f`, writes it back; returns the Set status.
pub fn modify_port_info(
    fab: &mut SimFabric,
    sm: AttachId,
    path: &[u8],
    port: u32,
    f: impl FnOnce(&mut PortInfo),
) -> u16 {
    let (st, mut pi) = dr_get::<PortInfo>(fab, sm, path, port).expect("PortInfo Get answered");
    assert_eq!(st, 0);
    f(&mut pi);
    // PortState 0 = no change unless f changed it; PortPhysicalState 0 = no change.
    let q = Smp::dr_set(tid(), port, path, &pi).unwrap();
    let r = dr(fab, sm, &q).expect("PortInfo Set answered");
    r.status
}

/// Reads PortInfo by DR and sets the state to `state` (wire value), leaving everything
/// else as read (PhysState no change).
pub fn set_port_state(fab: &mut SimFabric, sm: AttachId, path: &[u8], port: u32, state: u8) -> u16 {
    modify_port_info(fab, sm, path, port, |pi| {
        pi.port_state = state;
        pi.port_phys_state = 0;
    })
}

/// The method of a response is GetResp.
pub fn is_get_resp(m: &Smp) -> bool {
    m.method == Method::GET_RESP
}

/// Attribute id shorthand.
pub fn attr(a: AttributeId) -> u16 {
    a.0
}
