//! `sm-node bench-cluster`: three replica processes over an in-process fabric-simd server.
//! Measures (1) proposal commit latency: sequential ApplyPolicy calls to the leader, each
//! answered once committed and applied (p50/p99), and (2) failover: kill -9 of the master,
//! then time from the kill to the new master's first completed sweep, over N kills
//! (min/median/p90/max), with the LFT Sets the fabric accepted after each kill.

use crate::LocalCluster;
use mad::AttributeId;
use proto::admin::ApplyPolicyRequest;
use std::path::Path;
use std::time::{Duration, Instant};

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn pct(v: &[f64], p: f64) -> f64 {
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i.min(v.len() - 1)]
}

/// Runs the benchmark with replicas of the sm-node binary `exe` on `fabric`: `proposals`
/// sequential ApplyPolicy calls, then `kills` kills of the master; prints as it goes.
pub async fn run(exe: &Path, fabric: &str, kills: usize, proposals: u64) -> Result<(), String> {
    let a = (fabric, kills, proposals);
    let bound = Duration::from_secs(60);
    let dir = std::env::temp_dir().join(format!("quorum-sm-bench-{}", std::process::id()));
    let mut c = LocalCluster::new(exe, a.0, 3, &dir)?;
    c.start_all()?;
    let st = c.wait_serving(0, bound).await?;
    println!("cluster of 3 on {} up; leader {}", a.0, st.leader_id);
    // Commit latency.
    let mut admin = c.admin(st.leader_id)?;
    let mut lat = Vec::new();
    for v in 0..a.2 {
        let text = format!(
            "Default=0x7fff : ALL=full ;\nP{v}=0x{:04x} : ALL=full ;\n",
            2 + (v % 100)
        );
        let t = Instant::now();
        admin
            .apply_policy(ApplyPolicyRequest {
                text,
                expected_version: v,
                request_id: 0,
            })
            .await
            .map_err(|e| format!("proposal {v}: {}", e.message()))?;
        lat.push(t.elapsed().as_secs_f64() * 1e3);
    }
    lat.sort_by(|x, y| x.total_cmp(y));
    println!(
        "commit latency over {} sequential ApplyPolicy proposals on loopback: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        lat.len(),
        pct(&lat, 0.5),
        pct(&lat, 0.99),
        lat[lat.len() - 1]
    );
    // Failover.
    let mut times = Vec::new();
    let mut lft_sets = 0usize;
    for k in 0..a.1 {
        let st = c.wait_serving(0, bound).await?;
        let leader = st.leader_id;
        // Settled: everything recorded, every replica caught up.
        let s = c
            .wait_status(leader, bound, |s| {
                !s.intent_pending && s.applied_index == s.commit_index
            })
            .await?;
        for id in 1..=3 {
            c.wait_status(id, bound, |x| x.applied_index >= s.commit_index)
                .await?;
        }
        c.take_sets();
        let kill = unix_ms();
        c.kill9(leader);
        let st = c.wait_serving(kill + 1, bound).await?;
        let ms = st.last_sweep_unix_ms.saturating_sub(kill) as f64;
        let lft = c
            .take_sets()
            .iter()
            .filter(|s| s.attr == AttributeId::LINEAR_FORWARDING_TABLE.0)
            .count();
        lft_sets += lft;
        println!(
            "kill {:>2}: replica {leader} killed, replica {} serving after {ms:.0} ms ({lft} LFT Sets)",
            k + 1,
            st.leader_id
        );
        times.push(ms);
        c.start(leader)?;
    }
    if !times.is_empty() {
        times.sort_by(|x, y| x.total_cmp(y));
        println!(
            "failover (kill -9 of the master to the new master's first completed sweep) over {} kills: min {:.0} ms, median {:.0} ms, p90 {:.0} ms, max {:.0} ms; LFT Sets after kills: {lft_sets}",
            times.len(),
            times[0],
            pct(&times, 0.5),
            pct(&times, 0.9),
            times[times.len() - 1]
        );
    }
    drop(c);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
