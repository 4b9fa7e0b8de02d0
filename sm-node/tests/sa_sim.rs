//! GMPs on the in-process `sim:` transport: the master's SA answers a client attached to the
//! same in-process fabric (a NodeRecord table over RMPP, a PathRecord), and GMPs sent
//! through the transport reach a node's Performance Management Agent and a client, with
//! the answers coming back on the transport's GMP channel.

mod common;

use common::*;
use fabric::{Guid, Lid, PKey};
use fabric_sim::AttachId;
use mad::Method;
use mad::perf::{ClassPortInfo, PerfMad, PortCounters};
use mad::sa::{NodeRecord, PathRecord, SaMad};
use sa::SaClient;
use sm_node::daemon;
use sm_node::master::Shutdown;
use sm_node::milestone::MilestoneKind;
use sm_node::transport::GmpRx;
use sm_node::transport::sim::{Pace, SimHandle};
use std::time::{Duration, Instant};

/// The next GMP delivered to `client`, waiting up to the failure bound.
fn recv(h: &SimHandle, client: AttachId) -> fabric_sim::ReceivedGmp {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(g) = h.with(|s| s.poll_recv_gmp(client)) {
            return g;
        }
        assert!(
            Instant::now() < deadline,
            "no GMP for the client within 60 s"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Sends `m` from `client` and feeds every answer to `t` (ACKing RMPP segments) until it
/// completes.
fn exchange(
    h: &SimHandle,
    client: AttachId,
    sm_lid: Lid,
    m: SaMad,
    mut t: sa::Transaction,
) -> sa::SaResponse {
    let send = |bytes: &[u8; 256]| {
        let d = h
            .with(|s| s.send_gmp(s.now(), client, sm_lid, PKey(0xFFFF), bytes))
            .unwrap();
        assert!(d.is_delivered(), "{d:?}");
    };
    send(&m.encode());
    loop {
        let g = recv(h, client);
        let a = SaMad::decode(&g.mad).unwrap();
        if !t.owns(&a) {
            continue;
        }
        let st = t.handle(&a).unwrap();
        if let Some(ack) = st.send {
            send(&ack.encode());
        }
        if let Some(done) = st.done {
            return done;
        }
    }
}

#[test]
fn the_sa_answers_on_the_in_process_transport() {
    let (h, t) = daemon::new_sim("ft2:8", 3).unwrap();
    let cas = ca_ports(&t);
    let cfg = cfg("sim:ft2:8", 1);
    let ends = cas.len() + t.switches().count();
    let (a, b) = (cas[0], cas[9]);
    actix_rt::System::new().block_on(async {
        let attached = h.attach(cas[3].2, Pace::Fast).unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let master = daemon::start_master(&cfg, attached, vec![tx]).unwrap();
        wait_subnet_up(&mut rx).await;
        let lid = |x: (fabric::NodeId, u8, Guid)| h.with(|s| s.port_info(x.0, x.1).unwrap().lid);
        let lids = (lid(cas[3]), lid(a), lid(b));
        let client = h.with(|s| s.attach_client(cas[7].2)).unwrap();
        // The client blocks on the fabric: on its own thread.
        let hc = h.clone();
        let (table, path) = actix_rt::task::spawn_blocking(move || {
            let mut sa = SaClient::new(0x100, 0).with_window(4);
            let (m, tr) = sa.query(Method::GET_TABLE, 0, &NodeRecord::default());
            let table = exchange(&hc, client, lids.0, m, tr);
            let (m, tr) = sa.query(
                Method::GET,
                PathRecord::CM_SLID | PathRecord::CM_DLID,
                &PathRecord {
                    slid: lids.1,
                    dlid: lids.2,
                    ..PathRecord::default()
                },
            );
            (table, exchange(&hc, client, lids.0, m, tr))
        })
        .await
        .unwrap();
        assert_eq!(table.status(), 0);
        assert!(table.mad.header.rmpp.is_active(), "a table answer is RMPP");
        let recs: Vec<NodeRecord> = table.records().unwrap();
        assert_eq!(recs.len(), ends, "every end port's NodeRecord");
        let p: Vec<PathRecord> = path.records().unwrap();
        assert_eq!((p[0].slid, p[0].dlid), (lids.1, lids.2));
        assert_eq!(p[0].pkey, 0xFFFF);
        master.send(Shutdown).await.unwrap();
        wait_for(&mut rx, "Stopped", |k| {
            matches!(k, MilestoneKind::Stopped { .. })
        })
        .await;
    });
}

/// The next GMP on the transport's channel, waiting up to the failure bound.
fn next_gmp(rx: &mut GmpRx) -> sm_node::transport::InboundGmp {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match rx.try_recv() {
            Ok(mut batch) => {
                assert_eq!(batch.len(), 1, "one GMP at a time here");
                return batch.remove(0);
            }
            Err(tokio::sync::mpsc::error::TryRecvError::Empty) => {
                assert!(Instant::now() < deadline, "no GMP within 60 s");
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => panic!("GMP channel: {e}"),
        }
    }
}

#[test]
fn gmps_through_the_transport_reach_pmas_and_clients() {
    // A master brings the fabric up (LIDs, LFTs, ACTIVE ports) and stops; the fabric stays.
    let (h, t) = daemon::new_sim("ft2:8", 5).unwrap();
    let cas = ca_ports(&t);
    let mut cfg = cfg("sim:ft2:8", 1);
    // No counter sweep: the PMA requests counted below are this test's only.
    cfg.perf.enabled = false;
    actix_rt::System::new().block_on(async {
        let attached = h.attach(cas[0].2, Pace::Fast).unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let master = daemon::start_master(&cfg, attached, vec![tx]).unwrap();
        wait_subnet_up(&mut rx).await;
        master.send(Shutdown).await.unwrap();
        wait_for(&mut rx, "Stopped", |k| {
            matches!(k, MilestoneKind::Stopped { .. })
        })
        .await;
    });
    let (sw, _) = t.switches().next().unwrap();
    let sw_lid = h.with(|s| s.port_info(sw, 0).unwrap().lid);
    let (peer, peer_port, peer_guid) = cas[5];
    let peer_lid = h.with(|s| s.port_info(peer, peer_port).unwrap().lid);
    let me = h.attach(cas[2].2, Pace::Fast).unwrap();
    let mut tr = me.transport;
    let mut gmps = tr
        .take_gmps()
        .expect("the in-process transport carries GMPs");
    assert!(tr.take_gmps().is_none(), "taken once");

    // The switch's PMA: ClassPortInfo with AllPortSelect.
    let q = PerfMad::request(Method::GET, 0x51, mad::AttributeId::CLASS_PORT_INFO, 0);
    tr.send_gmp(sw_lid, 1, &q.encode(), 256).unwrap();
    let g = next_gmp(&mut gmps);
    assert_eq!(g.slid, sw_lid);
    let r = PerfMad::decode(&g.mad).unwrap();
    assert_eq!((r.header.method, r.header.tid), (Method::GET_RESP, 0x51));
    let cpi = r.attr::<ClassPortInfo>().unwrap();
    assert!(cpi.all_port_select() && cpi.extended_width());

    // A CA's PMA: PortCounters of its port, which the master's sweep used.
    let q = PerfMad::get(
        0x52,
        0,
        &PortCounters {
            port_select: peer_port,
            ..PortCounters::default()
        },
    );
    tr.send_gmp(peer_lid, 1, &q.encode(), 256).unwrap();
    let r = PerfMad::decode(&next_gmp(&mut gmps).mad).unwrap();
    assert_eq!(r.mad_status(), mad::MadStatus::OK);
    let pc = r.attr::<PortCounters>().unwrap();
    assert!(pc.rcv_pkts > 0 && pc.xmit_pkts > 0, "{pc:?}");
    assert_eq!(pc.rcv_data, pc.rcv_pkts * fabric_sim::PACKET_WORDS as u32);

    // A client at another CA gets a GMP from the transport and answers it.
    let client = h.with(|s| s.attach_client(peer_guid)).unwrap();
    let mut ping = [0u8; 256];
    (ping[0], ping[1], ping[2], ping[3], ping[15]) = (1, 0x03, 2, 0x01, 0x77);
    tr.send_gmp(peer_lid, 1, &ping, 256).unwrap();
    let got = recv(&h, client);
    assert_eq!(got.mad, ping);
    let mut pong = ping;
    pong[3] = 0x81;
    let d = h
        .with(|s| s.send_gmp(s.now(), client, got.slid, got.pkey, &pong))
        .unwrap();
    assert!(d.is_delivered(), "{d:?}");
    let back = next_gmp(&mut gmps);
    assert_eq!((back.slid, back.src_qpn, back.mad), (peer_lid, 1, pong));
    let c = h.with(|s| s.accounting().counters.clone());
    assert_eq!((c.pma_requests, c.pma_responses), (2, 2));
    drop(tr);
}
