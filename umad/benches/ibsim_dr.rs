//! Directed-route round trips through umad2sim on a generated fabric: every node's NodeInfo
//! by DR from one host with W requests in flight, timed.
//!
//! `cargo bench -p umad --bench ibsim_dr -- [SPEC] [WINDOW] [ROUNDS]` (default `ft2:36 128 3`).
//! The parent starts ibsim on the fabric and re-executes this binary under umad2sim as the
//! client; the client prints one line per round.

use fabric::netfile::node_id;
use fabric::{GenSpec, NodeId, PortRef, Topology};
use mad::Smp;
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};
use umad::testing::{Ibsim, SIM_DEVICE, UMAD2SIM_LIB};
use umad::{Dest, UmadPort};

const ROLE: &str = "UMAD_BENCH_CLIENT";

fn paths(t: &Topology, start: NodeId) -> Vec<Vec<u8>> {
    let mut seen = HashMap::from([(start, Vec::new())]);
    let mut q = VecDeque::from([start]);
    let mut out = vec![Vec::new()];
    while let Some(id) = q.pop_front() {
        let n = t.node(id);
        if id != start && !n.is_switch() {
            continue;
        }
        let path = seen[&id].clone();
        for p in n.port_numbers() {
            if let Some(r) = t.remote(PortRef::new(id, p.0))
                && !seen.contains_key(&r.node)
            {
                let mut np = path.clone();
                np.push(p.0);
                out.push(np.clone());
                seen.insert(r.node, np);
                q.push_back(r.node);
            }
        }
    }
    out
}

fn client(topo: &Topology, host: &str, window: usize, rounds: usize) -> anyhow::Result<()> {
    let me = topo
        .nodes()
        .find(|(_, n)| node_id(n) == host)
        .map(|(id, _)| id)
        .ok_or_else(|| anyhow::anyhow!("no node {host}"))?;
    let all = paths(topo, me);
    let port = UmadPort::open(SIM_DEVICE)?;
    port.register_smp_agents()?;
    let timeout = Duration::from_secs(1);
    for round in 0..rounds {
        let start = Instant::now();
        let mut pending: HashMap<u32, Instant> = HashMap::new();
        let (mut next, mut done, mut lost) = (0, 0, 0);
        while done < all.len() {
            while next < all.len() && pending.len() < window {
                let tid = port.next_tid();
                let smp = Smp::dr_get(tid, mad::AttributeId::NODE_INFO, 0, &all[next])?;
                port.send(&smp, Dest::directed())?;
                pending.insert(tid as u32, Instant::now() + timeout);
                next += 1;
            }
            let wait = pending.values().min().map_or(Duration::ZERO, |d| {
                d.saturating_duration_since(Instant::now())
            });
            match port.recv(wait)? {
                Some(r) => {
                    if let Some(k) = r.tid_key()
                        && pending.remove(&k).is_some()
                    {
                        done += 1;
                    }
                }
                None => {
                    let now = Instant::now();
                    let before = pending.len();
                    pending.retain(|_, d| *d > now);
                    lost += before - pending.len();
                    done += before - pending.len();
                }
            }
        }
        let s = start.elapsed().as_secs_f64();
        println!(
            "round {round}: {} nodes by DR NodeInfo, window {window}: {:.3} s, {:.0} SMPs/s, {lost} lost",
            all.len(),
            s,
            all.len() as f64 / s
        );
    }
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let spec = args.first().map_or("ft2:36", String::as_str);
    let window: usize = args.get(1).map_or(Ok(128), |s| s.parse())?;
    let rounds: usize = args.get(2).map_or(Ok(3), |s| s.parse())?;
    let topo = spec.parse::<GenSpec>()?.generate()?;
    let host = topo
        .cas()
        .next()
        .map(|(_, n)| node_id(n))
        .ok_or_else(|| anyhow::anyhow!("{spec} has no CA"))?;
    if std::env::var_os(ROLE).is_some() {
        return client(&topo, &host, window, rounds);
    }
    // A benchmark that cannot run says why and fails.
    if testenv::find_tool("ibsim").is_none() {
        anyhow::bail!("ibsim is not installed (Debian package ibsim-utils)");
    }
    if !std::path::Path::new(UMAD2SIM_LIB).is_file() {
        anyhow::bail!("{UMAD2SIM_LIB} is missing (Debian package libumad2sim0)");
    }
    let t0 = Instant::now();
    let sim = Ibsim::start_topology(&topo)?;
    println!(
        "ibsim on {spec} ({} nodes) ready in {:.2} s",
        topo.len(),
        t0.elapsed().as_secs_f64()
    );
    let mut c = sim.client(std::env::current_exe()?, Some(&host));
    c.args([spec, &window.to_string(), &rounds.to_string()])
        .env(ROLE, "1");
    let out = sim.run(c, Duration::from_secs(600))?;
    print!("{}", out.stdout);
    if !out.success() {
        anyhow::bail!("client failed: {}", out.describe());
    }
    sim.stop();
    Ok(())
}
