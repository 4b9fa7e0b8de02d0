//! Helpers of the PMA and port counter tests: PerfMgt queries from the SM of the small
//! fabric, and snapshots of every port's counts.

use super::*;
use fabric::{Lid, NodeId, PKey};
use fabric_sim::{PACKET_WORDS, SimConfig, SimFabric};
use mad::MadStatus;
use mad::Method;
use mad::perf::{PerfMad, PortCounters, PortCountersExtended};
use std::collections::BTreeMap;

/// The small fabric, programmed and ACTIVE.
pub fn up() -> Small {
    let mut s = small(SimConfig::default());
    s.bring_up();
    s
}

/// Sends `req` from the SM (H1) to `dlid` and returns the PMA's answer.
pub fn pma(s: &mut Small, dlid: u16, req: &PerfMad) -> PerfMad {
    let now = s.fab.now();
    let d = s
        .fab
        .send_gmp(now, s.sm, Lid(dlid), PKey(0xFFFF), &req.encode())
        .unwrap();
    assert!(d.is_delivered(), "{d:?}");
    settle(&mut s.fab);
    let g = s.fab.poll_recv_gmp(s.sm).expect("the PMA answered");
    assert!(s.fab.poll_recv_gmp(s.sm).is_none(), "one answer");
    let r = PerfMad::decode(&g.mad).unwrap();
    if matches!(req.header.method, Method::GET | Method::SET) {
        assert_eq!(r.header.method, Method::GET_RESP);
    } else {
        assert_eq!(r.header.method, req.header.method.response());
    }
    assert_eq!(r.header.tid, req.header.tid);
    assert_eq!(g.slid, Lid(dlid), "answered from the PMA's port");
    r
}

pub fn get_pc(s: &mut Small, dlid: u16, port: u8) -> PortCounters {
    let q = PortCounters {
        port_select: port,
        ..PortCounters::default()
    };
    let r = pma(s, dlid, &PerfMad::get(tid(), 0, &q));
    assert_eq!(r.mad_status(), MadStatus::OK);
    r.attr::<PortCounters>().unwrap()
}

pub fn get_ext(s: &mut Small, dlid: u16, port: u8) -> PortCountersExtended {
    let q = PortCountersExtended {
        port_select: port,
        ..PortCountersExtended::default()
    };
    let r = pma(s, dlid, &PerfMad::get(tid(), 0, &q));
    assert_eq!(r.mad_status(), MadStatus::OK);
    r.attr::<PortCountersExtended>().unwrap()
}

/// Every port's (XmitPkts, RcvPkts, XmitData, RcvData) from the extended counters.
pub type Snap = BTreeMap<(NodeId, u8), [u64; 4]>;

pub fn snapshot(f: &SimFabric) -> Snap {
    let mut m = BTreeMap::new();
    for n in 0..f.num_nodes() as u32 {
        let node = NodeId(n);
        for p in 0..=16u8 {
            if let Ok(x) = f.port_counters_extended(node, p) {
                m.insert(
                    (node, p),
                    [x.xmit_pkts, x.rcv_pkts, x.xmit_data, x.rcv_data],
                );
            }
        }
    }
    m
}

/// The ports whose counts changed between two snapshots, with the change.
pub fn diff(a: &Snap, b: &Snap) -> BTreeMap<(NodeId, u8), [u64; 4]> {
    b.iter()
        .filter_map(|(k, v)| {
            let o = a[k];
            let d = [v[0] - o[0], v[1] - o[1], v[2] - o[2], v[3] - o[3]];
            (d != [0; 4]).then_some((*k, d))
        })
        .collect()
}

/// `n` packets sent and `m` received: the expected change of one port.
pub fn pk(sent: u64, rcvd: u64) -> [u64; 4] {
    [sent, rcvd, sent * PACKET_WORDS, rcvd * PACKET_WORDS]
}
