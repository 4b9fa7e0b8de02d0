//! Shared helpers for the fabric-sim tests: small fabrics and SMP round trips through
//! the in-process handle.
#![allow(dead_code)]

pub mod perf;

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

thread_local! {
    static STASH: std::cell::RefCell<Vec<fabric_sim::Received>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Drains the SM's queue: the response to `tid` is returned, everything else (traps,
/// requests) is kept for [`others`].
fn collect(fab: &mut SimFabric, sm: AttachId, tid: u64) -> Option<Smp> {
    let mut out = None;
    while let Some(r) = fab.poll_recv_full(sm) {
        if r.smp.tid == tid && r.smp.is_response() {
            out = Some(r.smp);
        } else {
            STASH.with(|s| s.borrow_mut().push(r));
        }
    }
    out
}

/// MADs other than the awaited responses received so far (traps, requests), oldest
/// first, plus whatever is still queued; empties both.
pub fn others(fab: &mut SimFabric, sm: AttachId) -> Vec<fabric_sim::Received> {
    let mut v = STASH.with(|s| std::mem::take(&mut *s.borrow_mut()));
    while let Some(r) = fab.poll_recv_full(sm) {
        v.push(r);
    }
    v
}

/// Sends a directed-route SMP and returns the answer, if any.
pub fn dr(fab: &mut SimFabric, sm: AttachId, smp: &Smp) -> Option<Smp> {
    let now = fab.now();
    fab.send(now, sm, smp).unwrap();
    settle(fab);
    collect(fab, sm, smp.tid)
}

/// Sends a LID-routed SMP to `dlid` and returns the answer, if any.
pub fn lid(fab: &mut SimFabric, sm: AttachId, dlid: u16, smp: &Smp) -> Option<Smp> {
    let now = fab.now();
    fab.send_lid(now, sm, Lid(dlid), smp).unwrap();
    settle(fab);
    collect(fab, sm, smp.tid)
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

/// A two-switch fabric: S1[1]=H1, S1[2]=H2, S1[3]=S2[3], S1[4]=H5, S2[1]=H3, S2[2]=H4.
/// The SM is attached at H1 port 1.
pub struct Small {
    pub fab: SimFabric,
    pub sm: AttachId,
    pub s1: NodeId,
    pub s2: NodeId,
    /// H1..H5 (index 0 = H1).
    pub h: Vec<NodeId>,
}

/// LIDs: H1..H5 = 1..5, S1 = 10, S2 = 11.
pub const S1_LID: u16 = 10;
/// S2's LID.
pub const S2_LID: u16 = 11;

/// DR paths from H1 to each host (index 0 = H1) and switch.
pub const H_PATHS: [&[u8]; 5] = [&[], &[1, 2], &[1, 3, 1], &[1, 3, 2], &[1, 4]];
/// DR path to S1.
pub const S1_PATH: &[u8] = &[1];
/// DR path to S2.
pub const S2_PATH: &[u8] = &[1, 3];

/// The small fabric's topology: S1 and S2 (8 ports each) joined on port 3, H1, H2, H5 on
/// S1 ports 1, 2, 4 and H3, H4 on S2 ports 1, 2.
pub fn small_topology() -> Topology {
    let mut t = Topology::new();
    let s1 = t.add_node(NodeType::Switch, 8, Guid(0x2001), "S1").unwrap();
    let s2 = t.add_node(NodeType::Switch, 8, Guid(0x2002), "S2").unwrap();
    let h: Vec<NodeId> = (1..=5u64)
        .map(|i| {
            t.add_node(NodeType::Ca, 1, Guid(0x1000 + 0x10 * i), format!("H{i}"))
                .unwrap()
        })
        .collect();
    for (a, b) in [
        (PortRef::new(s1, 1), PortRef::new(h[0], 1)),
        (PortRef::new(s1, 2), PortRef::new(h[1], 1)),
        (PortRef::new(s1, 3), PortRef::new(s2, 3)),
        (PortRef::new(s1, 4), PortRef::new(h[4], 1)),
        (PortRef::new(s2, 1), PortRef::new(h[2], 1)),
        (PortRef::new(s2, 2), PortRef::new(h[3], 1)),
    ] {
        t.connect(a, b).unwrap();
    }
    t
}

/// Builds the small fabric (all links INIT, nothing programmed).
pub fn small(cfg: SimConfig) -> Small {
    let t = small_topology();
    let id = |g: u64| t.node_by_guid(Guid(g)).unwrap();
    let (s1, s2) = (id(0x2001), id(0x2002));
    let h: Vec<NodeId> = (1..=5u64).map(|i| id(0x1000 + 0x10 * i)).collect();
    let mut fab = SimFabric::new(&t, cfg).unwrap();
    let sm = fab.attach(fab.port_guid(h[0], 1).unwrap()).unwrap();
    STASH.with(|s| s.borrow_mut().clear());
    Small { fab, sm, s1, s2, h }
}

/// LFT block 0 of S1 and S2 for the LIDs above (index = LID).
pub fn small_lfts() -> ([u8; 64], [u8; 64]) {
    let mut a = [0xFFu8; 64];
    let mut b = [0xFFu8; 64];
    for (lid, p1, p2) in [
        (1, 1, 3),
        (2, 2, 3),
        (3, 3, 1),
        (4, 3, 2),
        (5, 4, 3),
        (10, 0, 3),
        (11, 3, 0),
    ] {
        a[lid] = p1;
        b[lid] = p2;
    }
    (a, b)
}

impl Small {
    /// Assigns LIDs and MasterSMLID (= 1) by DR, sets LinearFDBTop, writes the LFTs.
    pub fn program(&mut self) {
        let (fab, sm) = (&mut self.fab, self.sm);
        for (i, path) in H_PATHS.iter().enumerate() {
            let st = modify_port_info(fab, sm, path, 1, |pi| {
                pi.lid = Lid(i as u16 + 1);
                pi.master_sm_lid = Lid(1);
                pi.port_state = 0;
                pi.port_phys_state = 0;
            });
            assert_eq!(st, 0);
        }
        for (path, l) in [(S1_PATH, S1_LID), (S2_PATH, S2_LID)] {
            let st = modify_port_info(fab, sm, path, 0, |pi| {
                pi.lid = Lid(l);
                pi.master_sm_lid = Lid(1);
                pi.port_state = 0;
                pi.port_phys_state = 0;
            });
            assert_eq!(st, 0);
            let (st, mut si) = dr_get::<mad::SwitchInfo>(fab, sm, path, 0).unwrap();
            assert_eq!(st, 0);
            si.linear_fdb_top = S2_LID;
            let (st, back) = dr_set(fab, sm, path, 0, &si).unwrap();
            assert_eq!(st, 0);
            assert_eq!(back.linear_fdb_top, S2_LID);
        }
        let (a, b) = small_lfts();
        for (path, t) in [(S1_PATH, a), (S2_PATH, b)] {
            let (st, back) =
                dr_set(fab, sm, path, 0, &mad::LinearForwardingTable { ports: t }).unwrap();
            assert_eq!(st, 0);
            assert_eq!(back.ports, t);
        }
    }

    /// Every (path, port modifier) of a link end: CA ports and switch external ports.
    pub fn link_ends() -> Vec<(&'static [u8], u32)> {
        let mut v: Vec<(&'static [u8], u32)> = H_PATHS.iter().map(|p| (*p, 1u32)).collect();
        for p in 1..=4 {
            v.push((S1_PATH, p));
        }
        for p in 1..=3 {
            v.push((S2_PATH, p));
        }
        v
    }

    /// Moves every link end INIT -> ARMED -> ACTIVE in the legal order.
    pub fn activate(&mut self) {
        for state in [3u8, 4u8] {
            for (path, port) in Small::link_ends() {
                let st = set_port_state(&mut self.fab, self.sm, path, port, state);
                assert_eq!(st, 0, "path {path:?} port {port} -> {state}");
            }
        }
    }

    /// program + activate.
    pub fn bring_up(&mut self) {
        self.program();
        self.activate();
    }

    /// Port GUID of host i (1-based).
    pub fn hg(&self, i: usize) -> Guid {
        self.fab.port_guid(self.h[i - 1], 1).unwrap()
    }
}
