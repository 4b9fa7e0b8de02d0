//! fabric-sim benchmark (harness = false; run with `cargo bench -p fabric-sim`).
//!
//! Reports, for ft3 radix 36 and 48: topology generation time, SimFabric load time and
//! peak memory (VmHWM, measured in a child process per size); then DR SMP round trips
//! per second through the in-process handle and through the fabric-simd socket.
//!
//! Options: `sim_bench [--quick]` (smaller counts), `sim_bench load SPEC` (child mode).

use fabric::{GenSpec, NodeId, Topology};
use fabric_sim::client::SimClient;
use fabric_sim::{SimConfig, SimFabric, server};
use mad::{NodeInfo, Smp, SmpAttribute};

use std::collections::VecDeque;
use std::time::Instant;

fn vm_hwm_kib() -> u64 {
    runner::peak_rss_bytes().map_or(0, |b| b / 1024)
}

fn generate(spec: &str) -> Topology {
    let s: GenSpec = spec.parse().expect("valid spec");
    s.generate().expect("generates")
}

/// Child mode: load one size and print its figures.
fn load(spec: &str) {
    let t0 = Instant::now();
    let topo = generate(spec);
    let t_gen = t0.elapsed();
    let hwm_topo = vm_hwm_kib();
    let t1 = Instant::now();
    let fab = SimFabric::new(&topo, SimConfig::default()).expect("loads");
    let t_load = t1.elapsed();
    let hwm = vm_hwm_kib();
    let program = std::env::args().any(|a| a == "--program");
    println!(
        "load {spec}: {} nodes ({} switches), generate {:.0} ms, SimFabric::new {:.0} ms, \
         VmHWM {:.0} MiB (topology alone {:.0} MiB)",
        fab.num_nodes(),
        topo.switches().count(),
        t_gen.as_secs_f64() * 1e3,
        t_load.as_secs_f64() * 1e3,
        hwm as f64 / 1024.0,
        hwm_topo as f64 / 1024.0
    );
    if program {
        program_all_lfts(fab, &topo, spec);
    }
}

/// Writes LinearFDBTop and every LFT block (LIDs 1..=nodes) of every switch by DR Sets
/// through the in-process handle, 64 outstanding; reports time and VmHWM.
fn program_all_lfts(mut fab: SimFabric, topo: &Topology, spec: &str) {
    let (h, _) = topo.cas().next().expect("a host");
    let sm = fab.attach(topo.node(h).ports[1].guid).expect("attach");
    let paths = dr_paths(topo, h);
    // Map each path's end node: BFS order matches node discovery; keep switch paths.
    let mut switch_paths = Vec::new();
    for p in &paths {
        let mut at = h;
        for (i, &port) in p.iter().enumerate() {
            let port = if i == 0 { 1 } else { port };
            at = topo
                .remote(fabric::PortRef::new(at, port))
                .expect("cabled")
                .node;
        }
        if topo.node(at).is_switch() {
            switch_paths.push(p.clone());
        }
    }
    let top = topo.len() as u16;
    let blocks = u32::from(top) / 64 + 1;
    let per_switch = u64::from(blocks) + 1;
    let total = switch_paths.len() as u64 * per_switch;
    // Request i: switch i / per_switch; SwitchInfo first, then the blocks.
    let make = |i: u64| -> Smp {
        let p = &switch_paths[(i / per_switch) as usize];
        match i % per_switch {
            0 => {
                let si = mad::SwitchInfo {
                    linear_fdb_top: top,
                    ..mad::SwitchInfo::default()
                };
                Smp::dr_set(i, 0, p, &si).expect("fits")
            }
            b => {
                let t = mad::LinearForwardingTable { ports: [1; 64] };
                Smp::dr_set(i, (b - 1) as u32, p, &t).expect("fits")
            }
        }
    };
    let t0 = Instant::now();
    let (mut next, mut done, mut out, mut lost) = (0u64, 0u64, 0u64, 0u64);
    let mut now = 0;
    while done + lost < total {
        while out < 64 && next < total {
            fab.send(now, sm, &make(next)).expect("send");
            next += 1;
            out += 1;
        }
        match fab.next_event_time() {
            Some(t) => {
                fab.run_until(t);
                now = t;
            }
            None => {
                lost += out;
                out = 0;
            }
        }
        while let Some((_, r)) = fab.poll_recv(sm) {
            if r.is_response() {
                out -= 1;
                done += 1;
            }
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "program {spec}: {} switches x ({blocks} LFT blocks + SwitchInfo) = {total} DR Sets in {secs:.2} s \
         ({:.0}/s, lost {lost}, {} in the Set log), virtual {:.3} s, VmHWM {:.0} MiB",
        switch_paths.len(),
        total as f64 / secs,
        fab.accounting().set_log.len(),
        fab.now() as f64 / 1e9,
        vm_hwm_kib() as f64 / 1024.0
    );
}

/// Directed paths (output ports) from `src` port 1 to every node, breadth first.
fn dr_paths(topo: &Topology, src: NodeId) -> Vec<Vec<u8>> {
    let mut seen = vec![false; topo.len()];
    let mut out = Vec::new();
    let mut q = VecDeque::new();
    seen[src.index()] = true;
    q.push_back((src, Vec::<u8>::new()));
    while let Some((n, path)) = q.pop_front() {
        out.push(path.clone());
        let node = topo.node(n);
        if !path.is_empty() && !node.is_switch() {
            continue;
        }
        for p in node.port_numbers() {
            if path.is_empty() && p.0 != 1 {
                continue;
            }
            if let Some(r) = topo.remote(fabric::PortRef { node: n, port: p })
                && !seen[r.node.index()]
                && path.len() < 63
            {
                seen[r.node.index()] = true;
                let mut np = path.clone();
                np.push(p.0);
                q.push_back((r.node, np));
            }
        }
    }
    out
}

/// In-process DR NodeInfo round trips with `window` outstanding; returns (done, lost, secs).
fn inproc(fab: &mut SimFabric, paths: &[Vec<u8>], total: u64, window: u64) -> (u64, u64, f64) {
    let sm_guid = SM_GUID.with(|g| *g.borrow());
    let sm = fab.attach(sm_guid).expect("attach");
    let t0 = Instant::now();
    let (mut sent, mut done, mut lost, mut out) = (0u64, 0u64, 0u64, 0u64);
    let mut now = fab.now();
    let mut i = 0usize;
    while done + lost < total {
        while out < window && sent < total {
            let p = &paths[i % paths.len()];
            i += 1;
            let q = Smp::dr_get(sent, NodeInfo::ID, 0, p).expect("path fits");
            fab.send(now, sm, &q).expect("send");
            sent += 1;
            out += 1;
        }
        match fab.next_event_time() {
            Some(t) => {
                fab.run_until(t);
                now = t;
            }
            None => {
                lost += out;
                out = 0;
            }
        }
        while let Some((_, r)) = fab.poll_recv(sm) {
            if r.is_response() {
                out -= 1;
                done += 1;
            }
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    fab.detach(sm).expect("detach");
    (done, lost, secs)
}

thread_local! {
    static SM_GUID: std::cell::RefCell<fabric::Guid> = const { std::cell::RefCell::new(fabric::Guid(0)) };
}

fn socket(fab: SimFabric, name: &str, paths: &[Vec<u8>], total: u64, window: u64) -> (u64, f64) {
    let dir = std::env::temp_dir().join(format!("fabric-sim-bench-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("bench.sock");
    let _ = std::fs::remove_file(&path);
    let srv = server::spawn(fab, &path).expect("server");
    let mut c = SimClient::connect(&path).expect("connect");
    c.attach(name).expect("attach");
    let t0 = Instant::now();
    let (mut sent, mut done, mut out) = (0u64, 0u64, 0u64);
    while done < total {
        while out < window && sent < total {
            let q = Smp::dr_get(sent, NodeInfo::ID, 0, &paths[sent as usize % paths.len()])
                .expect("path fits");
            c.send_nf(fabric::Lid::PERMISSIVE, &q).expect("send");
            sent += 1;
            out += 1;
        }
        c.flush().expect("flush");
        let (_, _, r) = c.recv().expect("recv");
        if r.is_response() {
            out -= 1;
            done += 1;
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    srv.shutdown();
    let _ = std::fs::remove_dir_all(&dir);
    (done, secs)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() >= 3 && args[1] == "load" {
        load(&args[2]);
        return;
    }
    let quick = args.iter().any(|a| a == "--quick");
    let exe = std::env::current_exe().expect("own path");
    for spec in ["ft3:36", "ft3:48"] {
        let out = std::process::Command::new(&exe)
            .args(["load", spec, "--program"])
            .output()
            .expect("child runs");
        print!("{}", String::from_utf8_lossy(&out.stdout));
    }

    let topo = generate("ft3:36");
    let (h, _) = topo.cas().next().expect("a host");
    let guid = topo.node(h).ports[1].guid;
    SM_GUID.with(|g| *g.borrow_mut() = guid);
    let name = format!("{:#x}", guid.0);
    let paths = dr_paths(&topo, h);
    let hops: usize = paths.iter().map(|p| p.len()).sum();
    println!(
        "ft3:36 DR targets from one host: {} nodes, mean {:.2} hops",
        paths.len(),
        hops as f64 / paths.len() as f64
    );
    let mut fab = SimFabric::new(
        &topo,
        SimConfig {
            log_sets: false,
            ..SimConfig::default()
        },
    )
    .expect("loads");
    let total = if quick { 200_000 } else { 1_000_000 };
    for window in [1u64, 16, 64, 256] {
        let (done, lost, secs) = inproc(&mut fab, &paths, total, window);
        println!(
            "in-process DR NodeInfo round trips, window {window:>3}: {done} in {secs:.3} s = {:.0}/s (lost {lost}, VL15 drops so far {})",
            done as f64 / secs,
            fab.accounting().counters.dropped_vl15
        );
    }
    let stotal = if quick { 20_000 } else { 100_000 };
    for window in [1u64, 64] {
        let fab = SimFabric::new(&topo, SimConfig::default()).expect("loads");
        let (done, secs) = socket(fab, &name, &paths, stotal, window);
        println!(
            "socket DR NodeInfo round trips, window {window:>3}: {done} in {secs:.3} s = {:.0}/s",
            done as f64 / secs
        );
    }
}
