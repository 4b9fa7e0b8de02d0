//! Routing benchmark: time and peak memory per fabric, engine and worker count, plus the
//! incremental-vs-full comparison after one link loss on ft3 radix 36.
//!
//! Run: `cargo bench -p routing --bench route_bench` (optionally a filter such as `ft3:36`
//! or `torus`).
//! Each configuration runs in a child process of this binary so that its peak RSS
//! (VmHWM) is its own. Times are the best of three runs.

use fabric::{PortRef, Topology};
use routing::{
    Executor, Routing, RoutingError, RoutingInput, assign_lids_sequential, changed_blocks,
    engine_by_name, route_on,
};
use runner::Threads;
use std::process::Command;
use std::time::Instant;

fn peak_rss_mb() -> f64 {
    runner::peak_rss_bytes().map_or(f64::NAN, |b| b as f64 / (1024.0 * 1024.0))
}

/// CPU time (user + system, all threads) of this process in ms, from /proc/self/stat.
fn cpu_ms() -> f64 {
    let ticks = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            // Fields after the parenthesised command name; utime and stime are fields 14, 15.
            let rest = s.rsplit_once(')')?.1;
            let f: Vec<&str> = rest.split_whitespace().collect();
            Some(f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?)
        });
    // The kernel reports clock ticks of 1/100 s on Linux (USER_HZ).
    ticks.map_or(f64::NAN, |t| t * 10.0)
}

fn build(spec: &str) -> (Topology, RoutingInput) {
    // Degraded specs (`...:remove=3:seed=1`) too.
    let topo = spec
        .parse::<fabric::DegradedSpec>()
        .expect("valid spec")
        .generate()
        .expect("generates");
    let lids = assign_lids_sequential(&topo, 0).expect("LIDs fit");
    let input = RoutingInput::new(&topo, &lids, None).expect("valid input");
    (topo, input)
}

/// Routes three times with `workers` workers: the best wall and CPU times in ms (the
/// machine is shared, the minimum is the least disturbed run) and the last result.
fn best_of_three(
    input: &RoutingInput,
    engine: &str,
    workers: usize,
) -> (f64, f64, Result<Routing, RoutingError>) {
    let e = engine_by_name(engine, &Default::default()).expect("known engine");
    let mut best = f64::INFINITY;
    let mut best_cpu = f64::INFINITY;
    let mut last = None;
    for _ in 0..3 {
        drop(last.take()); // free the previous result first
        let c0 = cpu_ms();
        let t0 = Instant::now();
        last = Some(route_on(
            input,
            e.as_ref(),
            &Threads(workers),
            workers * 4,
            None,
        ));
        best = best.min(t0.elapsed().as_secs_f64() * 1e3);
        best_cpu = best_cpu.min(cpu_ms() - c0);
    }
    (best, best_cpu, last.expect("three runs"))
}

fn child(spec: &str, engine: &str, workers: usize) {
    let (_topo, input) = build(spec);
    let (ms, best_cpu, last) = best_of_three(&input, engine, workers);
    match last {
        Ok(_) => println!(
            "| {spec} | {} | {} | {engine} | {workers} | {ms:.1} | {best_cpu:.0} | {:.0} |",
            input.end_ports.len(),
            input.num_switches(),
            peak_rss_mb(),
        ),
        Err(e) => println!("| {spec} | {engine} | {workers} | refused: {e} |"),
    }
}

fn phases(spec: &str, engine: &str, workers: usize) {
    let (_topo, input) = build(spec);
    let e = engine_by_name(engine, &Default::default()).expect("known engine");
    let exec = Threads(workers);
    let t = Instant::now();
    let plan = e.plan(&input).expect("plan");
    let t_plan = t.elapsed();
    let shards = routing::split(&input, workers * 4);
    let t = Instant::now();
    let hs = exec.map(shards.len(), |i| plan.compute_hops(&input, &shards[i]));
    let t_p1 = t.elapsed();
    let t = Instant::now();
    let hops = plan.merge_hops(&input, hs).expect("hops");
    let t_m1 = t.elapsed();
    let t = Instant::now();
    let balance = plan.balance(&input, &hops, None);
    let t_bal = t.elapsed();
    let t = Instant::now();
    let rs = exec.map(shards.len(), |i| {
        plan.compute(&input, &hops, &shards[i], None, balance.as_ref())
    });
    let t_p2 = t.elapsed();
    let t = Instant::now();
    let l = routing::merge(&input, rs);
    let t_m2 = t.elapsed();
    println!(
        "{spec} {engine} {workers}w: plan {t_plan:?} hops {t_p1:?} merge {t_m1:?} balance {t_bal:?} lfts {t_p2:?} merge {t_m2:?} ({} tables)",
        l.switches.len()
    );
}

/// Route quality and the deadlock check: routing time (`route_on`), then the check of
/// `route_with_chain` (`cdg::check` with the routing's VLs) timed on its own, the busiest
/// all-to-all link and the VLs used. Credit loops are reported, not refused (min-hop).
fn quality(spec: &str, engine: &str, workers: usize) {
    let (_topo, input) = build(spec);
    let (best, _, last) = best_of_three(&input, engine, workers);
    let r = match last {
        Ok(r) => r,
        Err(err) => {
            println!("| {spec} | {engine} | {workers} | refused: {err} |");
            return;
        }
    };
    let t0 = Instant::now();
    let rep = routing::cdg::check(&input, &r.lfts, &r.path_vls());
    let check_ms = t0.elapsed().as_secs_f64() * 1e3;
    let m = routing::metrics::analyze(&input, &r.lfts, &Default::default());
    println!(
        "| {spec} | {engine} | {workers} | {best:.1} | {check_ms:.1} | {} | {:?} | {} | {} |",
        m.all_to_all.max_link_load,
        rep.vls_used,
        if rep.acyclic() { "acyclic" } else { "CYCLE" },
        m.max_switch_hops,
    );
}

fn incremental(spec: &str, engine: &str) {
    let (mut topo, input) = build(spec);
    let e = engine_by_name(engine, &Default::default()).expect("known engine");
    let before = route_on(&input, e.as_ref(), &Threads(2), 8, None).expect("routes");
    // Remove the first leaf's first uplink.
    let leaf = input.switches[0].node;
    let up = topo
        .node(leaf)
        .port_numbers()
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .find(|p| {
            topo.remote(PortRef::new(leaf, p.0))
                .is_some_and(|r| topo.node(r.node).is_switch())
        })
        .expect("leaf has an uplink");
    let removed = topo
        .disconnect(PortRef::new(leaf, up.0))
        .expect("was cabled");
    let lids = assign_lids_sequential(&topo, 0).expect("LIDs fit");
    let after_input = RoutingInput::new(&topo, &lids, None).expect("valid input");
    let t0 = Instant::now();
    let full = route_on(&after_input, e.as_ref(), &Threads(2), 8, None).expect("routes");
    let full_ms = t0.elapsed().as_secs_f64() * 1e3;
    let t0 = Instant::now();
    let inc =
        route_on(&after_input, e.as_ref(), &Threads(2), 8, Some(&before.lfts)).expect("routes");
    let inc_ms = t0.elapsed().as_secs_f64() * 1e3;
    println!(
        "| {spec} | {engine} | leaf port {} <-> {:?} | {} | {} ({full_ms:.0} ms) | {} ({inc_ms:.0} ms) |",
        up.0,
        removed,
        before.lfts.total_blocks(),
        changed_blocks(&before.lfts, &full.lfts),
        changed_blocks(&before.lfts, &inc.lfts),
    );
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if let Ok(job) = std::env::var("ROUTE_BENCH_CHILD") {
        let parts: Vec<&str> = job.split(',').collect();
        match parts.as_slice() {
            ["route", spec, engine, w] => child(spec, engine, w.parse().expect("workers")),
            ["incr", spec, engine] => incremental(spec, engine),
            ["phases", spec, engine, w] => phases(spec, engine, w.parse().expect("workers")),
            ["quality", spec, engine, w] => quality(spec, engine, w.parse().expect("workers")),
            _ => panic!("bad ROUTE_BENCH_CHILD {job}"),
        }
        return;
    }
    let filter = args.first().cloned().unwrap_or_default();
    let exe = std::env::current_exe().expect("own path");
    let run = |job: String| {
        let out = Command::new(&exe)
            .env("ROUTE_BENCH_CHILD", &job)
            .output()
            .expect("child runs");
        print!("{}", String::from_utf8_lossy(&out.stdout));
        if !out.status.success() {
            println!(
                "| {job} | failed: {} |",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
    };
    println!(
        "| fabric | hosts | switches | engine | workers | routing ms (wall) | CPU ms (all threads) | peak RSS MB |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for spec in ["ft2:36", "ft3:36", "ft3:48"] {
        if !spec.contains(filter.as_str()) {
            continue;
        }
        for engine in ["ftree", "minhop", "updn", "dfsssp"] {
            for workers in [1, 2] {
                run(format!("route,{spec},{engine},{workers}"));
            }
        }
    }
    let torus = "torus:6x6x6:hosts=4";
    if torus.contains(filter.as_str()) {
        for engine in ["torus-2QoS", "minhop", "updn"] {
            for workers in [1, 2] {
                run(format!("route,{torus},{engine},{workers}"));
            }
        }
        println!();
        println!(
            "| fabric | engine | workers | routing ms | deadlock check ms | busiest all-to-all link | VLs used | CDG | max switch hops |"
        );
        println!("|---|---|---|---|---|---|---|---|---|");
        for engine in ["torus-2QoS", "minhop", "updn"] {
            run(format!("quality,{torus},{engine},2"));
        }
    }
    // dfsssp on the fabrics it exists for (layers needed), against minhop and updn.
    let layered = [
        "random:256:radix=36:links=24:hosts=12",
        "torus:6x6x6:hosts=4",
        "ft3:36",
    ];
    for spec in layered {
        if !format!("{spec} layered").contains(filter.as_str()) {
            continue;
        }
        for engine in ["dfsssp", "minhop", "updn"] {
            for workers in [1, 2] {
                run(format!("route,{spec},{engine},{workers}"));
            }
        }
    }
    if "quality".contains(filter.as_str()) || filter.starts_with("quality") {
        let only = filter
            .strip_prefix("quality")
            .unwrap_or("")
            .trim_start_matches(':');
        println!();
        println!(
            "| fabric | engine | workers | routing ms | deadlock check ms | busiest all-to-all link | VLs used | CDG | max switch hops |"
        );
        println!("|---|---|---|---|---|---|---|---|---|");
        for spec in layered {
            if !spec.contains(only) {
                continue;
            }
            for engine in ["dfsssp", "minhop", "updn"] {
                run(format!("quality,{spec},{engine},2"));
            }
        }
    }
    if "ft3:36 incremental".contains(filter.as_str()) {
        println!();
        println!(
            "| fabric | engine | link removed | LFT blocks | changed by full recompute | changed incrementally |"
        );
        println!("|---|---|---|---|---|---|");
        for engine in ["minhop", "updn", "ftree"] {
            run(format!("incr,ft3:36,{engine}"));
        }
    }
}
