//! Compatibility with OpenSM itself. For each tests/compat/*.conf: run OpenSM once on ibsim
//! over net.2sw2path4hca with that partitions file, read every end port's and every switch
//! port's P_KeyTable back with `smpquery PKeys`, and compare with our planner entry by
//! entry; compare the keys OpenSM reports dropped (ERR 0512) with ours; compare the
//! multicast groups in OpenSM's SA dump (sa_db_dump) with ours.
//!
//! A second test runs the cases where we knowingly depart from OpenSM's behaviour and checks
//! that OpenSM really behaves as the crate documentation says.
//!
//! When ibsim, opensm, smpquery or the net example is absent, the tests fail under `CI=true`
//! and print `SKIPPED: ...` otherwise (testenv); scripts/test.sh installs them.

use fabric::{Guid, PKey, Topology};
use partitions::plan::{Caps, PKeyTable, Plan};
use partitions::{Options, PartEnforce, PortReading, check, parse_dump};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

const NET: &str = "/usr/share/doc/ibsim-utils/net-examples/net.2sw2path4hca";
const UMAD2SIM: &str = testenv::UMAD2SIM_LIB;
/// OpenSM runs on Hca1 (SIM_HOST), whose port 1 has GUID 0x100001.
const SM_PORT: u64 = 0x100001;

/// The programs these tests run, by full path (testenv's lookup).
struct Tools {
    ibsim: PathBuf,
    opensm: PathBuf,
    smpquery: PathBuf,
    timeout: PathBuf,
}

/// The tools of `test`; None (after testenv reported it: a failure under CI=true, a
/// `SKIPPED:` line otherwise) when one is missing.
fn tools(test: &str) -> Option<Tools> {
    let [ibsim, opensm, smpquery, timeout] =
        testenv::require(test, ["ibsim", "opensm", "smpquery", "timeout"])?;
    testenv::require_files(test, &[NET, UMAD2SIM]).then_some(Tools {
        ibsim,
        opensm,
        smpquery,
        timeout,
    })
}

fn compat_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/compat")
}

struct Sim {
    child: Child,
}

impl Drop for Sim {
    fn drop(&mut self) {
        // Stop ibsim by its PID (its clients have exited by now).
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn client(cmd: &Path, sock: &str) -> Command {
    let mut c = Command::new(cmd);
    c.env("LD_PRELOAD", UMAD2SIM).env("IBSIM_SOCKNAME", sock);
    c
}

/// What one OpenSM run left behind.
struct Run {
    readings: Vec<PortReading>,
    log: String,
    sa_dump: String,
}

/// Runs OpenSM once with the partitions text `conf` and reads the fabric back.
fn run_opensm(tools: &Tools, name: &str, conf: &str, allow_both: bool) -> Run {
    let dir = std::env::temp_dir().join(format!("partitions-compat-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let conf_path = dir.join("partitions.conf");
    std::fs::write(&conf_path, conf).expect("write conf");
    let sock = format!("pcompat{}_{name}", std::process::id());
    let log = std::fs::File::create(dir.join("ibsim.log")).expect("log");
    let child = Command::new(&tools.ibsim)
        .args(["-s", "-n", NET])
        .env("IBSIM_SOCKNAME", &sock)
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log"))
        .stderr(log)
        .spawn()
        .expect("spawn ibsim");
    let sim = Sim { child };
    // Poll until the simulator answers a local NodeInfo (a readiness probe, not a timing).
    let mut ready = false;
    for _ in 0..250 {
        let ok = client(&tools.smpquery, &sock)
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
            "allow_both_pkeys {}\npart_enforce both\nsa_db_dump TRUE\n",
            if allow_both { "TRUE" } else { "FALSE" }
        ),
    )
    .expect("config");
    let status = client(&tools.timeout, &sock)
        .arg("60")
        .arg(&tools.opensm)
        .args(["-e", "-s", "0", "-o", "-F"])
        .arg(&cfg)
        .arg("-f")
        .arg(dir.join("osm.log"))
        .arg("-P")
        .arg(&conf_path)
        .env("OSM_TMP_DIR", &dir)
        .env("OSM_CACHE_DIR", &dir)
        .env("SIM_HOST", "Hca1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run opensm");
    assert!(status.success(), "opensm failed for {name}");
    let log = std::fs::read_to_string(dir.join("osm.log")).unwrap_or_default();
    assert!(log.contains("SUBNET UP"), "no SUBNET UP for {name}");
    let sa_dump = std::fs::read_to_string(dir.join("opensm-sa.dump")).unwrap_or_default();
    let rb = client(Path::new("/bin/sh"), &sock)
        .arg(compat_dir().join("readback.sh"))
        .arg("16")
        .env("SMPQUERY", &tools.smpquery)
        .output()
        .expect("readback");
    drop(sim);
    let _ = std::fs::remove_dir_all(&dir);
    let readings = parse_dump(&String::from_utf8_lossy(&rb.stdout)).expect("dump parses");
    Run {
        readings,
        log,
        sa_dump,
    }
}

fn entries_of(r: &PortReading, cap: u16) -> Vec<u16> {
    let mut v: Vec<u16> = r.pkeys.iter().map(|k| k.0).collect();
    v.resize(cap as usize, 0);
    v
}

fn table_of(t: &PKeyTable) -> Vec<u16> {
    t.entries().iter().map(|k| k.0).collect()
}

fn topo() -> Topology {
    fabric::netfile::parse(&std::fs::read_to_string(NET).expect("net file"))
        .expect("parse net file")
}

fn plan_for(src: &str, topo: &Topology, allow_both: bool) -> Plan {
    let opts = Options {
        allow_both_pkeys: allow_both,
        part_enforce: PartEnforce::Both,
        sm_port_guid: Some(Guid(SM_PORT)),
        qos: false,
    };
    let report = check(src, opts, Some((topo, &Caps::ibsim())));
    assert!(report.parse_errors.is_empty(), "{:?}", report.parse_errors);
    report.plan.expect("plan")
}

fn hex(v: &str) -> Option<u64> {
    u64::from_str_radix(v.trim_start_matches("0x"), 16).ok()
}

/// (mgid, pkey, mtu, rate, sl, scope, qkey, tclass, flow label)
type GroupKey = ([u8; 16], u16, u8, u8, u8, u8, u32, u8, u32);

/// Multicast groups from OpenSM's opensm-sa.dump.
fn sa_groups(dump: &str) -> BTreeSet<GroupKey> {
    let mut out = BTreeSet::new();
    for line in dump.lines().filter(|l| l.starts_with("MC Group")) {
        let f: BTreeMap<&str, &str> = line
            .split_whitespace()
            .filter_map(|w| w.split_once('='))
            .collect();
        let (hi, lo) = f["mgid"].split_once(':').expect("mgid");
        let mut mgid = [0u8; 16];
        mgid[..8].copy_from_slice(&hex(hi).expect("mgid hi").to_be_bytes());
        mgid[8..].copy_from_slice(&hex(lo).expect("mgid lo").to_be_bytes());
        let sfh = hex(f["sl_flow_hop"]).expect("sl_flow_hop") as u32;
        out.insert((
            mgid,
            hex(f["pkey"]).expect("pkey") as u16,
            (hex(f["mtu"]).expect("mtu") & 0x3f) as u8,
            (hex(f["rate"]).expect("rate") & 0x3f) as u8,
            (sfh >> 28) as u8,
            (hex(f["scope_state"]).expect("scope") >> 4) as u8,
            hex(f["qkey"]).expect("qkey") as u32,
            hex(f["tclass"]).expect("tclass") as u8,
            (sfh >> 8) & 0xF_FFFF,
        ));
    }
    out
}

fn our_groups(plan: &Plan) -> BTreeSet<GroupKey> {
    plan.partitions
        .iter()
        .flat_map(|p| p.groups.iter())
        .map(|g| {
            (
                g.mgid,
                g.pkey.0,
                g.mtu,
                g.rate,
                g.sl,
                g.scope,
                g.q_key,
                g.tclass,
                g.flow_label,
            )
        })
        .collect()
}

/// (node GUID, port, key) of every "ERR 0512 ... table is full" in OpenSM's log.
fn opensm_dropped(log: &str) -> BTreeSet<(u64, u8, u16)> {
    log.lines()
        .filter(|l| l.contains("ERR 0512"))
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let key = w
                .iter()
                .position(|x| *x == "PKey")
                .and_then(|i| hex(w[i + 1]))?;
            let node = w
                .iter()
                .position(|x| *x == "node")
                .and_then(|i| hex(w[i + 1]))?;
            let port = w
                .iter()
                .position(|x| *x == "port")
                .and_then(|i| w[i + 1].parse().ok())?;
            Some((node, port, key as u16))
        })
        .collect()
}

#[test]
fn opensm_compat() {
    let Some(tools) = tools("opensm_compat") else {
        return;
    };
    let topo = topo();
    let mut confs: Vec<PathBuf> = std::fs::read_dir(compat_dir())
        .expect("compat dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "conf"))
        .collect();
    confs.sort();
    assert!(confs.len() >= 8, "need at least 8 compat files");
    let mut failures = Vec::new();
    let (mut tables, mut groups, mut dropped_total) = (0usize, 0usize, 0usize);
    for conf in &confs {
        let name = conf.file_stem().unwrap().to_string_lossy().into_owned();
        let src = std::fs::read_to_string(conf).expect("conf");
        let allow_both = src.contains("# options: allow_both_pkeys");
        let plan = plan_for(&src, &topo, allow_both);
        let run = run_opensm(&tools, &name, &src, allow_both);
        assert!(
            run.readings.iter().any(|r| r
                .pkeys
                .iter()
                .any(|k| !k.is_invalid() && k.partition() != 0x7FFF)),
            "{name}: OpenSM wrote no non-default key anywhere"
        );
        let by_port: BTreeMap<(Guid, u8), &PortReading> =
            run.readings.iter().map(|r| ((r.node, r.port), r)).collect();
        let mut compare = |what: String, ours: Vec<u16>, r: Option<&&PortReading>| {
            let Some(r) = r else {
                failures.push(format!("{name}: {what} not read back"));
                return;
            };
            let theirs = entries_of(r, ours.len() as u16);
            tables += 1;
            if ours != theirs {
                let n = ours
                    .iter()
                    .rposition(|k| *k != 0)
                    .max(theirs.iter().rposition(|k| *k != 0));
                let n = n.map_or(1, |n| n + 1);
                failures.push(format!(
                    "{name}: {what}: ours {:04x?} opensm {:04x?}",
                    &ours[..n],
                    &theirs[..n]
                ));
            }
        };
        for pp in &plan.ports {
            compare(
                format!(
                    "{:?} node {} port {}",
                    pp.port.node_type, pp.port.node_guid, pp.port.port
                ),
                table_of(&pp.table),
                by_port.get(&(pp.port.node_guid, pp.port.port)),
            );
        }
        for sp in &plan.switch_ports {
            let Some(t) = &sp.table else { continue };
            compare(
                format!("switch {} port {}", sp.switch_guid, sp.port),
                table_of(t),
                by_port.get(&(sp.switch_guid, sp.port)),
            );
        }
        let ours_dropped: BTreeSet<(u64, u8, u16)> = plan
            .ports
            .iter()
            .flat_map(|p| {
                p.dropped
                    .iter()
                    .map(move |k| (p.port.node_guid.0, p.port.port, k.0))
            })
            .collect();
        let theirs_dropped = opensm_dropped(&run.log);
        dropped_total += theirs_dropped.len();
        if ours_dropped != theirs_dropped {
            failures.push(format!(
                "{name}: dropped keys differ: ours {} opensm {}",
                ours_dropped.len(),
                theirs_dropped.len()
            ));
        }
        let (og, tg) = (our_groups(&plan), sa_groups(&run.sa_dump));
        groups += tg.len();
        if og != tg {
            failures.push(format!(
                "{name}: multicast groups differ:\n  only ours {:x?}\n  only opensm {:x?}",
                og.difference(&tg).collect::<Vec<_>>(),
                tg.difference(&og).collect::<Vec<_>>()
            ));
        }
        println!("{name}: compared");
    }
    println!(
        "compared {tables} P_KeyTables, {groups} multicast groups, {dropped_total} dropped keys over {} files",
        confs.len()
    );
    assert!(failures.is_empty(), "mismatches:\n{}", failures.join("\n"));
}

/// The documented departures from OpenSM's behaviour are real: OpenSM does what the crate
/// documentation says it does, and we do what it says we do.
#[test]
fn opensm_documented_divergences() {
    let Some(tools) = tools("opensm_documented_divergences") else {
        return;
    };
    let topo = topo();
    let hca2 = (Guid(0x100003), 1u8);
    let sm = (Guid(0x100000), 1u8);
    let first = |run: &Run, p: (Guid, u8)| -> Vec<u16> {
        let r = run
            .readings
            .iter()
            .find(|r| (r.node, r.port) == p)
            .expect("port read");
        r.pkeys
            .iter()
            .filter(|k| !k.is_invalid())
            .map(|k| k.0)
            .collect()
    };
    let ours = |plan: &Plan, p: (Guid, u8)| -> Vec<u16> {
        let pp = plan
            .ports
            .iter()
            .find(|x| (x.port.node_guid, x.port.port) == p)
            .expect("port");
        pp.table.valid().iter().map(|(_, k)| k.0).collect()
    };
    // 1. Empty file: OpenSM falls back to ALL=full; we follow the documentation (limited).
    let src = "# nothing defined\n";
    let run = run_opensm(&tools, "div-empty", src, false);
    assert_eq!(first(&run, hca2), vec![0xffff]);
    assert_eq!(ours(&plan_for(src, &topo, false), hca2), vec![0x7fff]);
    // 2. A Default rule demoting everyone: OpenSM demotes its own port too; we keep it full.
    let src = "Default=0x7fff : ALL=limited ;\n";
    let run = run_opensm(&tools, "div-smport", src, false);
    assert_eq!(first(&run, sm), vec![0x7fff]);
    assert_eq!(ours(&plan_for(src, &topo, false), sm), vec![0xffff]);
    // 3. scope= on an ipoib partition: OpenSM ignores it for the broadcast group (ff12);
    //    we apply it as documented (ff15).
    let src = "Default=0x7fff, ipoib, scope=5 : ALL=full ;\n";
    let run = run_opensm(&tools, "div-scope", src, false);
    let theirs: Vec<[u8; 16]> = sa_groups(&run.sa_dump).iter().map(|g| g.0).collect();
    assert_eq!(theirs.len(), 1);
    assert_eq!(theirs[0][1], 0x12);
    let plan = plan_for(src, &topo, false);
    let mine: Vec<[u8; 16]> = our_groups(&plan).iter().map(|g| g.0).collect();
    assert_eq!(mine.len(), 1);
    assert_eq!(mine[0][1], 0x15);
    // 4. A syntax error: OpenSM silently falls back to ALL=full and drops every partition;
    //    we reject the file.
    let src = "Default=0x7fff : ALL=limited, SELF=full ;\nT=0x0001 : 0x100004=full, bogus ;\n";
    let run = run_opensm(&tools, "div-error", src, false);
    assert_eq!(first(&run, hca2), vec![0xffff]);
    assert!(
        run.readings.iter().all(|r| r
            .pkeys
            .iter()
            .all(|k| k.is_invalid() || k.partition() == 0x7FFF)),
        "OpenSM kept a partition despite the error"
    );
    assert!(partitions::parse(src).is_err());
    // 5. The man page's own example `ShareIO = 0x80 : defmember=limited : ...` is a syntax
    //    error to OpenSM's parser too (it falls back to ALL=full); we reject it.
    let src = "Default=0x7fff : ALL=limited, SELF=full ;\nShareIO = 0x80 : defmember=limited : 0x100004, 0x100007=full;\n";
    let run = run_opensm(&tools, "div-manpage", src, false);
    assert_eq!(first(&run, hca2), vec![0xffff]);
    assert!(
        run.readings
            .iter()
            .all(|r| !r.pkeys.contains(&PKey(0x0080)))
    );
    assert!(partitions::parse(src).is_err());
}
