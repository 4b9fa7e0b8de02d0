//! OpenSM on ibsim, read back with ibroute, measured with our metrics next to our own
//! routes on the same fabric. When a tool is absent the tests fail under `CI=true` and print
//! `SKIPPED: ...` otherwise (testenv); scripts/test.sh installs them.

mod common;

use common::*;
use routing::ibroute::{lfts_from_dump, parse_ibroute};
use routing::metrics::{self, Metrics, MetricsOptions};
use routing::{RoutingInput, route};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

const UMAD2SIM: &str = testenv::UMAD2SIM_LIB;

/// The programs these tests run, by full path (testenv's lookup: PATH, /usr/sbin, /sbin).
struct Tools {
    ibsim: PathBuf,
    opensm: PathBuf,
    ibroute: PathBuf,
    ibswitches: PathBuf,
    timeout: PathBuf,
}

/// The tools of `test`; None (after testenv reported it: a failure under CI=true, a
/// `SKIPPED:` line otherwise) when one is missing.
fn tools(test: &str) -> Option<Tools> {
    let [ibsim, opensm, ibroute, ibswitches, timeout] = testenv::require(
        test,
        ["ibsim", "opensm", "ibroute", "ibswitches", "timeout"],
    )?;
    testenv::require_files(test, &[UMAD2SIM]).then_some(Tools {
        ibsim,
        opensm,
        ibroute,
        ibswitches,
        timeout,
    })
}

/// Kills the simulator when the test ends, however it ends.
struct Sim(Child);

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn client(dir: &Path, sock: &str, prog: &Path) -> Command {
    let mut c = Command::new(prog);
    c.env("LD_PRELOAD", UMAD2SIM)
        .env("IBSIM_SOCKNAME", sock)
        .env("OSM_TMP_DIR", dir)
        .env("OSM_CACHE_DIR", dir)
        .stdin(Stdio::null());
    c
}

/// Runs OpenSM with each engine on one ibsim instance of `spec`; returns, per engine, the
/// metrics of OpenSM's tables (read back with ibroute) and of ours.
/// Per engine: OpenSM's metrics, ours (on our own LIDs), and how many of the entries
/// OpenSM programmed our engine sets differently on OpenSM's LIDs (and of how many).
type Compared = (Metrics, Metrics, usize, usize);

fn opensm_metrics(
    test: &str,
    spec: &str,
    engines: &[&str],
    roots: &[fabric::Guid],
    lmc: u8,
) -> Option<Vec<Compared>> {
    let tools = tools(test)?;
    let topo = fabric_of(spec);
    // One socket and directory per call: the tests of this file run in parallel.
    let tag = format!(
        "routing-test-{}-{}",
        std::process::id(),
        spec.replace([':', '='], "_")
    );
    let dir: PathBuf = std::env::temp_dir().join(&tag);
    std::fs::create_dir_all(&dir).unwrap();
    let net = dir.join("net");
    std::fs::write(&net, fabric::netfile::write(&topo).unwrap()).unwrap();

    let mut child = Command::new(&tools.ibsim)
        .args(["-s", "-n"])
        .arg(&net)
        .env("IBSIM_SOCKNAME", &tag)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let sim = Sim(child);
    // Wait for the simulator to say it is ready (blocking read, no sleeping).
    let mut lines = BufReader::new(out).lines();
    let ready = lines.any(|l| l.is_ok_and(|l| l.contains("Network simulator ready")));
    assert!(ready, "ibsim did not come up on {spec}");
    std::thread::spawn(move || for _ in lines {}); // keep draining its output

    let mut results = Vec::new();
    let root_file = dir.join("roots");
    let roots_text: String = roots.iter().map(|g| format!("{g}\n")).collect();
    std::fs::write(&root_file, roots_text).unwrap();
    for engine in engines {
        let mut root_args: Vec<std::ffi::OsString> = vec!["-l".into(), lmc.to_string().into()];
        if !roots.is_empty() {
            root_args.push("-a".into());
            root_args.push(root_file.clone().into_os_string());
        }
        let log = dir.join(format!("osm-{engine}.log"));
        let st = client(&dir, &tag, &tools.timeout)
            .arg("120")
            .arg(&tools.opensm)
            .args(["-e", "-s", "0", "-o", "-R", engine])
            .args(&root_args)
            .arg("-f")
            .arg(&log)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(st.success(), "opensm -R {engine} failed on {spec}: {st}");
        let sw = client(&dir, &tag, &tools.ibswitches).output().unwrap();
        let lids: Vec<String> = String::from_utf8_lossy(&sw.stdout)
            .lines()
            .filter_map(|l| {
                l.split_once(" lid ")
                    .and_then(|(_, r)| r.split_whitespace().next())
                    .map(str::to_string)
            })
            .collect();
        assert_eq!(lids.len(), topo.switches().count(), "ibswitches on {spec}");
        let mut dump = String::new();
        for lid in &lids {
            let o = client(&dir, &tag, &tools.ibroute)
                .arg(lid)
                .output()
                .unwrap();
            dump.push_str(&String::from_utf8_lossy(&o.stdout));
        }
        let (lids, lfts) = lfts_from_dump(&topo, &parse_ibroute(&dump).unwrap()).unwrap();
        let inp = RoutingInput::new(&topo, &lids, None).unwrap();
        let n = inp.end_ports.len();
        let opts = MetricsOptions {
            shifts: Some((1..n).collect()),
            ..MetricsOptions::default()
        };
        let theirs = metrics::analyze(&inp, &lfts, &opts);
        let ours_in = input(&topo, 0);
        let eopts = routing::EngineOptions {
            updn_roots: roots.to_vec(),
            ..Default::default()
        };
        let e = routing::engine_by_name(engine, &eopts).unwrap();
        let ours = metrics::analyze(&ours_in, &route(&ours_in, e.as_ref()).unwrap().lfts, &opts);
        // Our engine on OpenSM's own LIDs, entry by entry.
        let same_lids = route(&inp, e.as_ref()).unwrap().lfts;
        let (mut programmed, mut differ) = (0, 0);
        for t in &lfts.switches {
            let o = same_lids.by_guid(t.guid).unwrap();
            for (lid, &p) in t.ports.iter().enumerate() {
                if p != routing::NO_ROUTE {
                    programmed += 1;
                    differ += usize::from(o.port(lid as u16) != p);
                }
            }
        }
        println!("{spec} OpenSM {engine}: {theirs:?}");
        println!("{spec} ours {engine}: {ours:?}");
        println!("{spec} {engine}: {differ} of {programmed} OpenSM entries differ from ours");
        results.push((theirs, ours, differ, programmed));
    }
    drop(sim);
    let _ = std::fs::remove_dir_all(&dir);
    Some(results)
}

#[test]
fn opensm_routes_measure_like_ours() {
    let engines = ["ftree", "minhop", "updn"];
    let Some(results) =
        opensm_metrics("opensm_routes_measure_like_ours", "ft3:4", &engines, &[], 0)
    else {
        return;
    };
    for (engine, (theirs, ours, differ, programmed)) in engines.iter().zip(results) {
        assert!(programmed > 0);
        if *engine != "ftree" {
            // Same counters, same order, same tie-break: identical tables.
            assert_eq!(
                differ, 0,
                "{engine}: {differ} of {programmed} entries differ from OpenSM"
            );
        }
        assert_eq!(theirs.end_ports, ours.end_ports, "{engine}");
        assert_eq!(
            theirs.unreachable_pairs, 0,
            "OpenSM {engine} delivers every pair"
        );
        assert_eq!(theirs.loops, 0, "{engine}");
        assert_eq!(ours.dead_ends, 0, "{engine}");
        assert_eq!(theirs.hop_histogram, ours.hop_histogram, "{engine}");
        // With switch LIDs in the dependency graph min-hop (OpenSM's and ours, the same
        // tables) has credit loops on a fat tree: spine to spine through a leaf.
        if *engine != "minhop" {
            assert!(!theirs.cdg.has_cycle && !ours.cdg.has_cycle, "{engine}");
        }
        if *engine == "ftree" {
            assert_eq!(ours.max_link_load, 1);
            assert!(ours.max_link_load <= theirs.max_link_load);
        }
    }
}

#[test]
fn opensm_updn_on_a_torus_matches_ours_given_the_same_root() {
    let root = fabric::Guid(0x2004_0000_0000_0000); // torus switch 0,0
    let Some(results) = opensm_metrics(
        "opensm_updn_on_a_torus_matches_ours_given_the_same_root",
        "torus:5x4:hosts=2",
        &["updn"],
        &[root],
        0,
    ) else {
        return;
    };
    let (theirs, ours, differ, programmed) = &results[0];
    assert_eq!(
        *differ, 0,
        "{differ} of {programmed} entries differ from OpenSM"
    );
    assert_eq!(theirs.hop_histogram, ours.hop_histogram);
    assert!(!ours.cdg.has_cycle);
}

#[test]
fn opensm_lmc_routes_equal_ours() {
    // LMC 2: four LIDs per end port, OpenSM's enhanced LMC mode (next-switch diversity and
    // rotating scan start) against ours, on OpenSM's own LIDs.
    let engines = ["minhop", "updn"];
    let Some(results) = opensm_metrics(
        "opensm_lmc_routes_equal_ours",
        "ft3:6:hosts=2",
        &engines,
        &[],
        2,
    ) else {
        return;
    };
    for (engine, (theirs, _ours, differ, programmed)) in engines.iter().zip(results) {
        assert_eq!(theirs.unreachable_pairs, 0, "{engine}");
        assert_eq!(
            differ, 0,
            "{engine}: {differ} of {programmed} entries differ from OpenSM"
        );
    }
}
