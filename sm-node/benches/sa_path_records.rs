//! PathRecord queries per second answered by the SA engine on a fabric that sm-core brought
//! up on the in-process simulator: (1) the engine alone (decode, path walk through the LFTs,
//! P_Key choice, encode), (2) the whole round trip as GMPs through the simulated fabric
//! (client port -> SM port -> client port, virtual time; wall time measured).
//!
//! `cargo bench -p sm-node --bench sa_path_records [-- SPEC [QUERIES]]` (default ft2:36, 200000).

#[path = "../tests/sa_common/mod.rs"]
mod sa_common;

use fabric::PKey;
use fabric::rng::SplitMix64;
use mad::Method;
use mad::sa::{PathRecord, SaMad, SaRecord};
use sa::{Request, SaClient};
use sa_common::*;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let spec = args.first().cloned().unwrap_or_else(|| "ft2:36".into());
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(200_000);
    let t0 = Instant::now();
    let mut up = bring_up(&spec, None);
    let mut e = up.engine();
    let cas = ca_ports(&up.topo);
    println!(
        "{spec}: {} CA ports, SUBNET UP + view in {:.2} s",
        cas.len(),
        t0.elapsed().as_secs_f64()
    );
    let lids: Vec<_> = cas.iter().map(|c| up.lid_of_guid(c.2)).collect();
    let mut rng = SplitMix64::new(42);
    let mask = PathRecord::CM_SLID | PathRecord::CM_DLID;

    // (1) The engine alone.
    let mut reqs = Vec::with_capacity(n);
    for i in 0..n {
        let s = lids[rng.below(lids.len() as u64) as usize];
        let d = lids[rng.below(lids.len() as u64) as usize];
        let q = PathRecord {
            slid: s,
            dlid: d,
            ..PathRecord::default()
        };
        reqs.push(Request {
            slid: s,
            mad: SaMad::request(Method::GET, PathRecord::ID, i as u64, mask, q.to_data()),
        });
    }
    let t = Instant::now();
    let mut ok = 0usize;
    for r in &reqs {
        let h = e.handle(0, r);
        if h.reply.is_some_and(|x| x.mad.header.mad.status == 0) {
            ok += 1;
        }
    }
    let dt = t.elapsed().as_secs_f64();
    assert_eq!(ok, n, "every pair has a path");
    println!(
        "engine: {n} PathRecord Gets in {dt:.3} s = {:.0} queries/s ({:.2} us each)",
        n as f64 / dt,
        dt * 1e6 / n as f64
    );

    // (2) Through the simulated fabric: one client port, requests in windows of 64.
    let client_port = cas[cas.len() - 1].2;
    let client = up.fab.attach_client(client_port).unwrap();
    let sm_lid = up.lid_of_guid(up.sm_port);
    let mut c = SaClient::new(0, 0);
    let rounds = (n / 10).max(1000);
    let mut now = up.now;
    let mut done = 0usize;
    let t = Instant::now();
    while done < rounds {
        let batch = 64.min(rounds - done);
        let mut txs = Vec::with_capacity(batch);
        for _ in 0..batch {
            let d = lids[rng.below(lids.len() as u64) as usize];
            let q = PathRecord {
                slid: lids[lids.len() - 1],
                dlid: d,
                ..PathRecord::default()
            };
            let (m, tx) = c.query(Method::GET, mask, &q);
            up.fab
                .send_gmp(now, client, sm_lid, PKey(0xFFFF), &m.encode())
                .unwrap();
            txs.push(tx);
        }
        let mut got = 0;
        while got < batch {
            let Some(next) = up.fab.next_event_time() else {
                panic!("lost GMPs")
            };
            now = now.max(next);
            up.fab.run_until(now);
            while let Some(g) = up.fab.poll_recv_gmp(up.sm) {
                let m = SaMad::decode(&g.mad).unwrap();
                let h = e.handle(
                    0,
                    &Request {
                        slid: g.slid,
                        mad: m,
                    },
                );
                let r = h.reply.unwrap().single().unwrap();
                up.fab
                    .send_gmp(now, up.sm, g.slid, PKey(0xFFFF), &r.encode())
                    .unwrap();
            }
            while let Some(g) = up.fab.poll_recv_gmp(client) {
                let m = SaMad::decode(&g.mad).unwrap();
                let i = txs.iter().position(|t| t.owns(&m)).expect("our TID");
                let st = txs[i].handle(&m).unwrap();
                assert_eq!(st.done.unwrap().status(), 0);
                got += 1;
            }
        }
        done += batch;
    }
    let dt = t.elapsed().as_secs_f64();
    println!(
        "through the simulated fabric: {rounds} PathRecord Gets in {dt:.3} s = {:.0} queries/s",
        rounds as f64 / dt
    );
}
