//! Bench (ignored by default): PathRecord queries per second answered by `sm-node`'s SA on
//! ibsim, from a client at another CA (this test binary re-executed under umad2sim, the
//! `sa` crate's SaClient over umad, 32 requests in flight).
//!
//! `cargo test --release -p sm-node --test sa_ibsim_bench -- --ignored --nocapture`
//! (env SA_BENCH_SPEC, default ft2:16; SA_BENCH_N, default 20000).

mod ibsim_common;

use fabric::rng::SplitMix64;
use ibsim_common::*;
use mad::Method;
use mad::sa::{PathRecord, SaMad};
use sa::SaClient;
use std::collections::HashMap;
use std::time::{Duration, Instant};
use umad::testing::{Ibsim, SIM_DEVICE, child_role, one_test_passed};
use umad::{Dest, MethodMask, ReceivedMad, UmadPort};

const NAME: &str = "path_records_per_second_on_ibsim";
const WINDOW: usize = 32;

fn child() {
    let sm_lid: u16 = std::env::var("SA_TEST_SM_LID").unwrap().parse().unwrap();
    let lids: Vec<u16> = std::env::var("SA_TEST_LIDS")
        .unwrap()
        .split(',')
        .map(|s| s.parse().unwrap())
        .collect();
    let n: usize = std::env::var("SA_BENCH_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    let port = UmadPort::open(SIM_DEVICE).expect("umad");
    port.register(mad::MgmtClass::SUBN_ADM, 1, MethodMask::NONE, 2)
        .expect("SA agent");
    let mut rng = SplitMix64::new(9);
    let mut c = SaClient::new(0x1000, 0);
    let mask = PathRecord::CM_SLID | PathRecord::CM_DLID;
    let mut out: HashMap<u32, sa::Transaction> = HashMap::new();
    let (mut sent, mut done, mut failed) = (0usize, 0usize, 0usize);
    let t = Instant::now();
    while done < n {
        while sent < n && out.len() < WINDOW {
            let pick = |r: &mut SplitMix64| lids[r.below(lids.len() as u64) as usize];
            let q = PathRecord {
                slid: fabric::Lid(pick(&mut rng)),
                dlid: fabric::Lid(pick(&mut rng)),
                ..PathRecord::default()
            };
            let (m, tx) = c.query(Method::GET, mask, &q);
            port.send_mad(&m.encode(), Dest::gsi_to(fabric::Lid(sm_lid)))
                .expect("send");
            out.insert(tx.tid as u32, tx);
            sent += 1;
        }
        let Some(r) = port.recv(Duration::from_secs(5)).expect("recv") else {
            panic!("no answer in 5 s ({done} done, {} in flight)", out.len());
        };
        let ReceivedMad::Other { class: 3, bytes } = r.mad else {
            continue;
        };
        let a = SaMad::decode_slice(&bytes).unwrap();
        if let Some(mut tx) = out.remove(&(a.header.mad.tid as u32)) {
            let st = tx.handle(&a).unwrap().done.unwrap();
            if st.status() != 0 {
                failed += 1;
            }
            done += 1;
        }
    }
    let dt = t.elapsed().as_secs_f64();
    println!(
        "BENCH {n} PathRecord Gets in {dt:.3} s = {:.0} queries/s ({failed} without a path), window {WINDOW}",
        n as f64 / dt
    );
}

#[test]
#[ignore]
fn path_records_per_second_on_ibsim() {
    if child_role(NAME) {
        child();
        return;
    }
    if !ready("path_records_per_second_on_ibsim", &[]) {
        return;
    }
    let spec = std::env::var("SA_BENCH_SPEC").unwrap_or_else(|_| "ft2:16".into());
    let topo = spec.parse::<fabric::GenSpec>().unwrap().generate().unwrap();
    let sim = Ibsim::start_topology(&topo).expect("ibsim");
    let sm_host = first_ca_host(&topo);
    let client_host = last_ca_host(&topo);
    let sm = start_sm(&sim, &sm_host, &[]);
    let lids: Vec<String> = ca_ports(&topo)
        .iter()
        .filter_map(|(g, _)| sm.tables.lids.get(g))
        .map(|l| l.to_string())
        .collect();
    let sm_lid = parse_sminfo(&tool(&sim, &client_host, "sminfo", &[])).0;
    let mut c = sim.self_client(NAME, Some(&client_host)).unwrap();
    c.env("SA_TEST_SM_LID", sm_lid.to_string())
        .env("SA_TEST_LIDS", lids.join(","))
        .arg("--ignored");
    let out = sim.run(c, Duration::from_secs(600)).expect("bench client");
    assert!(one_test_passed(&out), "{}", out.describe());
    let line = out
        .stdout
        .lines()
        .find_map(|l| l.find("BENCH").map(|i| l[i..].to_string()))
        .unwrap_or_else(|| panic!("no BENCH line:\n{}", out.describe()));
    println!("{spec} ({} CA ports): {line}", lids.len());
    drop(sm);
}
