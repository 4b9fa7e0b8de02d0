//! Compatibility with OpenSM itself: for each tests/compat/*.conf, run OpenSM once on ibsim
//! over net.2sw2path4hca with that partitions file, read every end port's and every switch
//! port's P_KeyTable back with `smpquery PKeys`, and compare with our planner block by block.
//!
//! Skipped (with a printed reason) when ibsim, opensm, smpquery or the net example are absent.

use fabric::{Guid, NodeType};
use partitions::plan::{Caps, PKeyTable};
use partitions::{Options, PartEnforce, PortReading, check, parse_dump};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

const NET: &str = "/usr/share/doc/ibsim-utils/net-examples/net.2sw2path4hca";
const UMAD2SIM: &str = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so";
/// OpenSM runs on Hca1 (SIM_HOST), whose port 1 has GUID 0x100001.
const SM_PORT: u64 = 0x100001;

fn have(tool: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .stdout(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

fn compat_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/compat")
}

struct Sim {
    child: Child,
}

impl Drop for Sim {
    fn drop(&mut self) {
        // Stop ibsim by its PID (clients are already gone).
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn client(cmd: &str, sock: &str) -> Command {
    let mut c = Command::new(cmd);
    c.env("LD_PRELOAD", UMAD2SIM).env("IBSIM_SOCKNAME", sock);
    c
}

/// Runs OpenSM once with `conf` and returns the read-back dump text.
fn run_opensm(name: &str, conf: &Path, allow_both: bool) -> String {
    let dir = std::env::temp_dir().join(format!("partitions-compat-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let sock = format!("pcompat{}_{name}", std::process::id());
    let log = std::fs::File::create(dir.join("ibsim.log")).expect("log");
    let child = Command::new("ibsim")
        .args(["-s", "-n", NET])
        .env("IBSIM_SOCKNAME", &sock)
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log"))
        .stderr(log)
        .spawn()
        .expect("spawn ibsim");
    let sim = Sim { child };
    // Poll until the simulator answers a local NodeInfo.
    let mut ready = false;
    for _ in 0..200 {
        let ok = client("smpquery", &sock)
            .args(["-D", "nodeinfo", "0"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if ok {
            ready = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(ready, "ibsim did not come up for {name}");
    let cfg = dir.join("opensm.conf");
    std::fs::write(
        &cfg,
        format!(
            "allow_both_pkeys {}\npart_enforce both\n",
            if allow_both { "TRUE" } else { "FALSE" }
        ),
    )
    .expect("config");
    let out = client("timeout", &sock)
        .arg("60")
        .arg("opensm")
        .args(["-e", "-s", "0", "-o", "-F"])
        .arg(&cfg)
        .arg("-f")
        .arg(dir.join("osm.log"))
        .arg("-P")
        .arg(conf)
        .env("OSM_TMP_DIR", &dir)
        .env("OSM_CACHE_DIR", &dir)
        .env("SIM_HOST", "Hca1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run opensm");
    assert!(out.success(), "opensm failed for {name}");
    let osm_log = std::fs::read_to_string(dir.join("osm.log")).unwrap_or_default();
    assert!(osm_log.contains("SUBNET UP"), "no SUBNET UP for {name}");
    let rb = client("sh", &sock)
        .arg(compat_dir().join("readback.sh"))
        .arg("16")
        .output()
        .expect("readback");
    drop(sim);
    let _ = std::fs::remove_dir_all(&dir);
    String::from_utf8_lossy(&rb.stdout).into_owned()
}

fn entries_of(r: &PortReading, cap: u16) -> Vec<u16> {
    let mut v: Vec<u16> = r.pkeys.iter().map(|k| k.0).collect();
    v.resize(cap as usize, 0);
    v.truncate(cap as usize);
    v
}

fn table_of(t: &PKeyTable) -> Vec<u16> {
    t.entries().iter().map(|k| k.0).collect()
}

#[test]
fn opensm_compat() {
    for tool in ["ibsim", "opensm", "smpquery", "timeout"] {
        if !have(tool) {
            println!("SKIP opensm_compat: {tool} is not installed");
            return;
        }
    }
    if !Path::new(NET).exists() || !Path::new(UMAD2SIM).exists() {
        println!("SKIP opensm_compat: {NET} or {UMAD2SIM} is absent");
        return;
    }
    let topo = fabric::netfile::parse(&std::fs::read_to_string(NET).expect("net file"))
        .expect("parse net file");
    let mut confs: Vec<PathBuf> = std::fs::read_dir(compat_dir())
        .expect("compat dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "conf"))
        .collect();
    confs.sort();
    assert!(confs.len() >= 8, "need at least 8 compat files");
    let mut failures = Vec::new();
    let mut compared = 0usize;
    for conf in &confs {
        let name = conf.file_stem().unwrap().to_string_lossy().into_owned();
        let src = std::fs::read_to_string(conf).expect("conf");
        let allow_both = src.contains("# options: allow_both_pkeys");
        let opts = Options {
            allow_both_pkeys: allow_both,
            part_enforce: PartEnforce::Both,
            sm_port_guid: Some(Guid(SM_PORT)),
            qos: false,
        };
        let caps = Caps::ibsim();
        let report = check(&src, opts, Some((&topo, &caps)));
        assert!(
            report.parse_errors.is_empty(),
            "{name}: {:?}",
            report.parse_errors
        );
        let plan = report.plan.expect("plan");
        let dump = run_opensm(&name, conf, allow_both);
        let readings = parse_dump(&dump).expect("dump parses");
        assert!(
            readings.iter().any(|r| r
                .pkeys
                .iter()
                .any(|k| !k.is_invalid() && k.partition() != 0x7FFF)),
            "{name}: OpenSM wrote no non-default key anywhere"
        );
        let by_port: BTreeMap<(Guid, u8), &PortReading> =
            readings.iter().map(|r| ((r.node, r.port), r)).collect();
        for pp in &plan.ports {
            let Some(r) = by_port.get(&(pp.port.node_guid, pp.port.port)) else {
                failures.push(format!("{name}: port {:?} not read back", pp.port));
                continue;
            };
            let ours = table_of(&pp.table);
            let theirs = entries_of(r, pp.table.cap);
            compared += 1;
            if ours != theirs {
                failures.push(format!(
                    "{name}: {:?} node {} port {}: ours {:04x?} opensm {:04x?}",
                    pp.port.node_type,
                    pp.port.node_guid,
                    pp.port.port,
                    &ours[..8.min(ours.len())],
                    &theirs[..8.min(theirs.len())]
                ));
            }
        }
        for sp in &plan.switch_ports {
            let Some(t) = &sp.table else { continue };
            let Some(r) = by_port.get(&(sp.switch_guid, sp.port)) else {
                failures.push(format!(
                    "{name}: switch port {} {} not read",
                    sp.switch_guid, sp.port
                ));
                continue;
            };
            let ours = table_of(t);
            let theirs = entries_of(r, t.cap);
            compared += 1;
            if ours != theirs {
                failures.push(format!(
                    "{name}: switch {} port {}: ours {:04x?} opensm {:04x?}",
                    sp.switch_guid,
                    sp.port,
                    &ours[..8.min(ours.len())],
                    &theirs[..8.min(theirs.len())]
                ));
            }
        }
        assert!(
            plan.ports.iter().any(|p| p.port.node_type == NodeType::Ca),
            "{name}: no CA ports planned"
        );
        println!("{name}: compared");
    }
    println!("compared {compared} tables over {} files", confs.len());
    assert!(failures.is_empty(), "mismatches:\n{}", failures.join("\n"));
}
