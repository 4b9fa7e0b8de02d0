//! The daemon's SA over fabric-simd (the in-process server), with RMPP: a client attached at
//! another CA asks for every NodeRecord (more than one MAD), the master's SA sends the table
//! as RMPP segments in the windows the client's ACKs open, the client (the `sa` crate's
//! SaClient) reassembles exactly the records the fabric has; a PathRecord between two CAs
//! comes back in one MAD with the simulator's LIDs.

mod common;

use common::*;
use fabric::{Lid, PKey};
use fabric_sim::client::SimClient;
use fabric_sim::{SimConfig, SimFabric};
use mad::Method;
use mad::sa::{NodeRecord, PathRecord, SaMad};
use sa::SaClient;
use sm_node::daemon;
use sm_node::master::Shutdown;
use std::time::Duration;

/// Sends `m` and feeds every answer to `t` (ACKing RMPP segments) until it completes.
fn exchange(c: &mut SimClient, sm_lid: Lid, m: SaMad, mut t: sa::Transaction) -> sa::SaResponse {
    c.send_gmp(sm_lid, PKey(0xFFFF), &m.encode()).unwrap();
    loop {
        let g = c.recv_gmp().unwrap();
        let a = SaMad::decode(&g.mad).unwrap();
        if !t.owns(&a) {
            continue;
        }
        let st = t.handle(&a).unwrap();
        if let Some(ack) = st.send {
            c.send_gmp(sm_lid, PKey(0xFFFF), &ack.encode()).unwrap();
        }
        if let Some(done) = st.done {
            return done;
        }
    }
}

#[test]
fn sa_tables_over_fabric_simd_with_rmpp() {
    let dir = temp_dir("sa-simd");
    let t = daemon::load_topology("ft2:8").unwrap();
    let sim = SimFabric::new(&t, SimConfig::default()).unwrap();
    let server = fabric_sim::server::spawn(sim, &dir.join("simd.sock")).unwrap();
    let cas = ca_ports(&t);
    let port = format!("0x{:016x}", cas[3].2.0);
    let cfg = cfg(&format!("simd:{}@{port}", server.path().display()), 1);
    let path = server.path().to_path_buf();
    let ends = cas.len() + t.switches().count();
    let (a, b) = (cas[0], cas[9]);
    actix_rt::System::new().block_on(async {
        let (attached, _) = daemon::attach(&cfg).unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let master = daemon::start_master(&cfg, attached, vec![tx]).unwrap();
        wait_subnet_up(&mut rx).await;
        let lids = server.with_sim(|s| {
            let l = |x: (fabric::NodeId, u8, fabric::Guid)| s.port_info(x.0, x.1).unwrap().lid;
            (l(cas[3]), l(a), l(b))
        });
        let client_port = format!("0x{:016x}", cas[7].2.0);
        // The client blocks on the socket: on its own thread, with a deadline.
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut c = SimClient::connect(&path).unwrap();
            c.attach_client(&client_port).unwrap();
            let mut sa = SaClient::new(0x100, 0).with_window(4);
            let (m, t) = sa.query(Method::GET_TABLE, 0, &NodeRecord::default());
            let table = exchange(&mut c, lids.0, m, t);
            let (m, t) = sa.query(
                Method::GET,
                PathRecord::CM_SLID | PathRecord::CM_DLID,
                &PathRecord {
                    slid: lids.1,
                    dlid: lids.2,
                    ..PathRecord::default()
                },
            );
            let path = exchange(&mut c, lids.0, m, t);
            let _ = done_tx.send((table, path));
        });
        let (table, path) = actix_rt::task::spawn_blocking(move || {
            done_rx
                .recv_timeout(Duration::from_secs(60))
                .expect("the SA answered within 60 s")
        })
        .await
        .unwrap();
        assert_eq!(table.status(), 0);
        assert!(table.mad.header.rmpp.is_active(), "a table answer is RMPP");
        let recs: Vec<NodeRecord> = table.records().unwrap();
        assert_eq!(recs.len(), ends, "every end port's NodeRecord");
        assert!(
            table.payload.len() > 3 * 200,
            "more than three segments: {} bytes",
            table.payload.len()
        );
        let p: Vec<PathRecord> = path.records().unwrap();
        assert_eq!((p[0].slid, p[0].dlid), (lids.1, lids.2));
        assert_eq!(p[0].pkey, 0xFFFF);
        master.send(Shutdown).await.unwrap();
    });
    server.shutdown();
    std::fs::remove_dir_all(&dir).unwrap();
}
