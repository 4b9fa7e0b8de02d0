//! Routing on the RoutingPool (a SyncArbiter thread, shards on scoped worker threads) gives
//! exactly the tables, winner and refusals `sm_core::route_inline` computes.

use fabric_sim::{SimConfig, SimFabric};
use sm_core::{Event, RoutingJob, Sweeper, SweeperConfig, route_inline};
use sm_node::pool::RoutingPool;

/// Drives a sweeper on the simulator (virtual time) until it asks for routing.
fn job_for(spec: &str, engines: &[&str]) -> RoutingJob {
    let t = spec.parse::<fabric::GenSpec>().unwrap().generate().unwrap();
    let mut fab = SimFabric::new(&t, SimConfig::default()).unwrap();
    let sm_port = sm_node::daemon::first_ca_port(&t).unwrap();
    let sm = fab.attach(sm_port).unwrap();
    let mut sw = Sweeper::new(SweeperConfig {
        engines: engines.iter().map(|s| s.to_string()).collect(),
        ..SweeperConfig::default()
    })
    .unwrap();
    let mut now = 0;
    loop {
        while let Some(tx) = sw.poll_transmit() {
            if tx.dlid.is_permissive() {
                fab.send(now, sm, &tx.smp).unwrap();
            } else {
                fab.send_lid(now, sm, tx.dlid, &tx.smp).unwrap();
            }
        }
        now = match (fab.next_event_time(), sw.poll_timeout()) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b).expect("sweeper stalled before routing"),
        }
        .max(now);
        fab.run_until(now);
        while let Some(r) = fab.poll_recv_full(sm) {
            sw.handle_mad(now, r.slid, r.smp);
        }
        if matches!(sw.poll_timeout(), Some(x) if x <= now) {
            sw.handle_timeout(now);
        }
        while let Some(ev) = sw.poll_event() {
            if let Event::RoutingNeeded(job) = ev {
                return *job;
            }
        }
    }
}

fn same_as_inline(spec: &str, engines: &[&str], workers: usize, shards: usize) {
    let mut job = job_for(spec, engines);
    job.shards = shards;
    let inline = route_inline(&job).unwrap();
    let pooled = actix_rt::System::new()
        .block_on(async move { RoutingPool::start(workers).route(job).await.unwrap() });
    assert_eq!(pooled.engine, inline.engine, "{spec}");
    assert_eq!(pooled.refusals, inline.refusals, "{spec}");
    assert_eq!(pooled.sweep, inline.sweep);
    assert_eq!(pooled.lfts.switches.len(), inline.lfts.switches.len());
    for (a, b) in pooled.lfts.switches.iter().zip(&inline.lfts.switches) {
        assert_eq!((a.guid, a.lid), (b.guid, b.lid));
        assert!(a.ports == b.ports, "{spec}: LFT of {} differs", a.guid);
    }
}

#[test]
fn fat_tree_shards_on_the_pool_match_inline() {
    same_as_inline("ft2:8", &["ftree", "updn", "minhop"], 3, 7);
    same_as_inline("ft3:6", &["ftree", "updn", "minhop"], 2, 4);
}

#[test]
fn torus_falls_back_through_the_chain_like_inline() {
    // ftree refuses a torus; the refusal text and the winner must match the inline chain.
    same_as_inline("torus:4x4x3", &["ftree", "updn", "minhop"], 2, 5);
    // min-hop has credit loops on a torus: refused, updn wins, identically on the pool.
    same_as_inline("torus:3x3x3", &["minhop", "updn"], 1, 3);
}

#[test]
fn random_fabric_updn_on_the_pool_matches_inline() {
    same_as_inline("random:24:seed=5:radix=12:links=6:hosts=3", &["updn"], 2, 6);
}

#[test]
fn every_engine_refusing_is_an_error_like_inline() {
    let job = job_for("torus:3x3x3", &["ftree"]);
    let inline = route_inline(&job).unwrap_err().to_string();
    let pooled = actix_rt::System::new()
        .block_on(async move { RoutingPool::start(2).route(job).await.unwrap_err() });
    assert_eq!(sm_core::SmError::from(pooled).to_string(), inline);
}
