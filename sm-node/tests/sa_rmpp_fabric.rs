//! RMPP through the in-process simulated fabric: a GetTable answered by the SA engine at
//! the SM's port (from the view of what sm-core's sweeper discovered, `sa_view`) and
//! reassembled by the client at another CA port.

mod sa_common;

use fabric::{Lid, PKey};
use mad::sa::{NodeRecord, PathRecord, SaMad, SaRecord};
use mad::{Method, MgmtClass};
use sa::{RmppConfig, RmppSender, SaClient, SenderState};
use sa_common::*;

/// The engine answers at the SM's port of the simulated fabric; the client, attached at
/// another CA, sends a GetTable as a GMP and ACKs the RMPP segments it receives.
#[test]
fn get_table_through_the_simulated_fabric_with_rmpp() {
    let mut up = bring_up("ft2:8", None);
    let mut e = up.engine();
    let client_port = ca_ports(&up.topo)[5].2;
    let client = up.fab.attach_client(client_port).unwrap();
    let sm_lid = up.lid_of_guid(up.sm_port);
    let mut c = SaClient::new(100, 0).with_window(4);
    let (q, mut t) = c.query(Method::GET_TABLE, 0, &NodeRecord::default());
    let mut now = up.now;
    up.fab
        .send_gmp(now, client, sm_lid, PKey(0xFFFF), &q.encode())
        .unwrap();
    let mut sender: Option<(RmppSender, Lid)> = None;
    let mut result = None;
    for _ in 0..100_000 {
        // The SM side.
        while let Some(g) = up.fab.poll_recv_gmp(up.sm) {
            let m = SaMad::decode(&g.mad).unwrap();
            assert_eq!(m.header.mad.mgmt_class, MgmtClass::SUBN_ADM);
            if m.header.mad.method.is_response() {
                if let Some((s, _)) = sender.as_mut() {
                    s.handle(now, &m);
                }
                continue;
            }
            let h = e.handle(now / 1_000_000, &sa_common::req(g.slid, m));
            let rep = h.reply.unwrap();
            assert!(rep.single().is_none(), "more than one MAD of NodeRecords");
            sender = Some((
                RmppSender::new(
                    rep.mad.clone(),
                    rep.table.clone().unwrap(),
                    RmppConfig::default(),
                ),
                rep.dlid,
            ));
        }
        if let Some((s, dlid)) = sender.as_mut() {
            while let Some(seg) = s.poll_transmit(now) {
                up.fab
                    .send_gmp(now, up.sm, *dlid, PKey(0xFFFF), &seg.encode())
                    .unwrap();
            }
            if matches!(s.poll_timeout(), Some(x) if x <= now) {
                s.handle_timeout(now);
            }
        }
        // The client side.
        while let Some(g) = up.fab.poll_recv_gmp(client) {
            let m = SaMad::decode(&g.mad).unwrap();
            let st = t.handle(&m).unwrap();
            if let Some(a) = st.send {
                up.fab
                    .send_gmp(now, client, sm_lid, PKey(0xFFFF), &a.encode())
                    .unwrap();
            }
            if st.done.is_some() {
                result = st.done;
            }
        }
        if result.is_some()
            && matches!(sender.as_ref(), Some((s, _)) if s.state() == SenderState::Done)
        {
            break;
        }
        match up.fab.next_event_time() {
            Some(x) => {
                now = now.max(x);
                up.fab.run_until(now);
            }
            None => match sender.as_ref().and_then(|(s, _)| s.poll_timeout()) {
                Some(x) => now = now.max(x),
                None => break,
            },
        }
    }
    let res = result.expect("the table arrived");
    let got: Vec<NodeRecord> = res.records().unwrap();
    let direct = {
        let h = e.handle(0, &sa_common::req(sm_lid, q));
        h.reply.unwrap().table.unwrap()
    };
    assert_eq!(res.payload, direct);
    let ends = ca_ports(&up.topo).len() + up.topo.switches().count();
    assert_eq!(got.len(), ends);
    assert!(sender.unwrap().0.segments() > 3);
    let _ = PathRecord::LEN;
}
