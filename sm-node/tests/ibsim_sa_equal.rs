//! SA answers equal to OpenSM's, field by field (issue 25). On one ibsim fabric
//! (net.2sw2path4hca), OpenSM runs as the SM (no `-o`: it stays up and serves its SA) and a
//! client at another CA asks: `osmtest -f c` (the inventory), and `saquery` of every record
//! type it supports, one record per query (per LID, port and block, PathRecords for every
//! pair of LIDs) so that no answer needs RMPP, which umad2sim does not do (a GetTable larger
//! than one MAD reaches the client as its first segment only, from either SM). Then a fresh
//! ibsim instance of the same fabric, `sm-node` with OpenSM's guid2lid (so every port has
//! OpenSM's LID: LIDs map through GUIDs as the identity), and the same questions. Every
//! answer must be equal byte for byte, or be one of the divergences listed in [`DIVERGES`]
//! with its reason (docs/sa.md). When ibsim, OpenSM or the tools are missing the test fails
//! under `CI=true` and prints `SKIPPED: ...` otherwise.

mod ibsim_common;

use ibsim_common::*;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use umad::testing::{Ibsim, NET_2SW2PATH4HCA};

/// Where an answer may differ from OpenSM's, and why (docs/sa.md): (query name prefix, the
/// output line that may differ, or "" for the whole answer; the reason).
const DIVERGES: &[(&str, &str, &str)] = &[
    (
        "CPI",
        "Capability mask 2",
        "OpenSM's CapabilityMask2 0xB5E8 advertises features this SA does not have (alias \
         GUIDs, QoS...); this SA's 0x8 is IsMulticastFDBTopSupported only",
    ),
    ("SMIR", "ActCount", "ActCount counts the SM's own activity"),
    (
        "SWIR",
        "LifeTimeValue",
        "the switch's SwitchInfo as read: OpenSM writes LifeTimeValue 18, this SM does not write it",
    ),
    (
        "PIR",
        "HoqLife",
        "the port's PortInfo as read: OpenSM writes HOQLife 16/18 on switch ports, this SM does not",
    ),
    (
        "PIR",
        "LocalPort:",
        "a switch port's LocalPortNum is the port the SM's Get entered the switch by: each SM's \
         discovery path (they differ between equal paths, on the torus)",
    ),
    (
        "SL2VL",
        "",
        "this SM reads no SLtoVL table it does not write (QoS off: none, no record); OpenSM \
         reads every port's",
    ),
    (
        "VLAR",
        "",
        "this SM reads no VLArbitration table it does not write (QoS off: none, no record); \
         OpenSM reads every port's",
    ),
];

/// One fabric to compare on: its net file, where OpenSM / our SM run and the client asks,
/// how many LIDs OpenSM assigns (1..=lids: every end port, LMC 0), the most ports a node
/// has, and the LIDs whose ports and paths are asked one by one (all of them on a small
/// fabric; a sample, spread over the LIDs, on a larger one, to keep the test's run time).
struct Case {
    name: &'static str,
    net: PathBuf,
    sm_host: String,
    client: String,
    lids: u16,
    max_port: u8,
    sample: Vec<u16>,
    /// Minimum-hop routing has ties OpenSM and this SM break differently (a torus): the
    /// LFTRecords are compared with the LFTs this SM dumped instead of OpenSM's answers.
    routing_ties: bool,
}

impl Case {
    /// A generated fabric (`spec`), the SM at its first CA, the client at its last; about
    /// `sample` LIDs asked per port and per path.
    fn generated(name: &'static str, spec: &str, sample: usize) -> (Case, PathBuf) {
        let (topo, dir, net) = generated_net(spec, &format!("sa-equal-{name}"));
        let lids = topo.switches().count() + ca_ports(&topo).len();
        let lids = u16::try_from(lids).expect("LIDs");
        let max_port = topo.nodes().map(|(_, n)| n.num_ports()).max().unwrap_or(1);
        let step = usize::from(lids).div_ceil(sample).max(1);
        let case = Case {
            name,
            net,
            sm_host: first_ca_host(&topo),
            client: last_ca_host(&topo),
            lids,
            max_port,
            sample: (1..=lids).step_by(step).collect(),
            routing_ties: spec.starts_with("torus"),
        };
        (case, dir)
    }
}

/// Every question, as (name, saquery arguments).
fn questions(c: &Case) -> Vec<(String, Vec<String>)> {
    let mut q: Vec<(String, Vec<String>)> = Vec::new();
    let mut add = |name: String, args: &[&str]| {
        q.push((name, args.iter().map(|s| s.to_string()).collect()));
    };
    add("CPI".into(), &["-c"]);
    add("SMIR".into(), &["SMIR"]);
    for lid in 1..=c.lids {
        let l = lid.to_string();
        add(format!("NR {l}"), &["NR", &l]);
        add(format!("SWIR {l}"), &["SWIR", &l]);
        add(format!("LR {l}"), &["LR", &l]);
        add(format!("LFTR {l}/0"), &["LFTR", &format!("{l}/0")]);
        add(format!("GIR {l}/0"), &["GIR", &format!("{l}/0")]);
    }
    for &lid in &c.sample {
        let l = lid.to_string();
        for p in 0..=c.max_port {
            add(format!("PIR {l}/{p}"), &["PIR", &format!("{l}/{p}")]);
            for b in 0..2 {
                let a = format!("{l}/{p}/{b}");
                add(format!("PKTR {a}"), &["--smkey", "1", "PKTR", &a]);
            }
        }
        for d in 1..=c.lids {
            let pair = format!("{l}:{d}");
            add(format!("PR {pair}"), &["-p", "--src-to-dst", &pair]);
        }
        add(format!("SL2VL {l}"), &["SL2VL", &format!("{l}/0/0")]);
        add(format!("VLAR {l}"), &["VLAR", &format!("{l}/1/1")]);
    }
    add("MCMR".into(), &["-m"]);
    add("MCG".into(), &["-g"]);
    add("MFTR".into(), &["MFTR"]);
    add("SR".into(), &["-S"]);
    add("IIR".into(), &["-I"]);
    q
}

/// What one SM answered: every question's output (stdout, then `rc=N`) and the inventory.
struct Answers {
    saquery: BTreeMap<String, String>,
    inventory: String,
}

fn ask(sim: &Ibsim, c: &Case, dir: &Path) -> Answers {
    let host = c.client.as_str();
    let mut saquery = BTreeMap::new();
    for (name, args) in questions(c) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = sim
            .run_tool("saquery", &args, Some(host), TOOL_TIMEOUT)
            .unwrap_or_else(|e| panic!("saquery {args:?}: {e}"));
        let code = out.status.code().unwrap_or(-1);
        saquery.insert(name, format!("{}rc={code}\n", out.stdout));
    }
    let inv = dir.join("osmtest.dat");
    let inv_s = inv.to_str().unwrap();
    let out = sim
        .run_tool(
            "osmtest",
            &["-f", "c", "-i", inv_s],
            Some(host),
            TOOL_TIMEOUT,
        )
        .expect("osmtest");
    assert!(
        out.success() && out.stdout.contains("\"Create Inventory\" PASS"),
        "osmtest -f c: {}",
        out.describe()
    );
    Answers {
        saquery,
        inventory: std::fs::read_to_string(&inv).expect("inventory"),
    }
}

/// The inventory as its records (`DEFINE_x` .. `END` blocks) by kind and identity (NODE:
/// lid and port GUID, PORT: lid and port, PATH: sgid and dgid, LINK: both ends), lines
/// trimmed. A record whose identity is empty or zero is left out (the garbage past the
/// first RMPP segment, see the module doc).
fn records(inv: &str) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for b in inv.split("DEFINE_").skip(1) {
        let body = b.split("\nEND").next().unwrap_or_default();
        let mut lines = body.lines();
        let kind = lines.next().unwrap_or_default().trim().to_string();
        let fields: Vec<String> = lines.map(|l| l.trim().to_string()).collect();
        let get = |k: &str| {
            fields
                .iter()
                .find(|l| l.split_whitespace().next() == Some(k))
                .map(|l| l[k.len()..].trim().to_string())
                .unwrap_or_default()
        };
        let id: Vec<String> = match kind.as_str() {
            "NODE" => vec![get("lid"), get("port_guid")],
            "PORT" => vec![get("lid"), get("port_num")],
            "PATH" => vec![get("sgid"), get("dgid"), get("slid"), get("dlid")],
            "LINK" => vec![get("from_lid"), get("from_port_num"), get("to_lid")],
            _ => vec![],
        };
        if id.is_empty() || id.iter().any(|v| v.is_empty() || v == "0x0") {
            continue;
        }
        out.insert(format!("{kind} {}", id.join(" ")), fields);
    }
    out
}

/// `text` without the lines holding `field` (every line when `field` is empty) and
/// ibwarn lines (they carry a PID).
fn without(text: &str, field: &str) -> String {
    text.lines()
        .filter(|l| !l.starts_with("ibwarn:") && !field.is_empty() && !l.contains(field))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// The entries (LID -> port) a `saquery LFTR` answer lists.
fn lft_answer(text: &str) -> BTreeMap<u16, u8> {
    text.lines()
        .filter_map(|l| {
            let (a, b) = l.trim().split_once('\t')?;
            Some((a.parse().ok()?, b.parse().ok()?))
        })
        .collect()
}

/// The switch (node GUID) whose LID this SM dumped as `lid`.
fn switch_of(t: &SmTables, lid: u16) -> Option<fabric::Guid> {
    t.lids
        .iter()
        .find(|(g, l)| **l == lid && t.lfts.contains_key(g))
        .map(|(g, _)| *g)
}

/// Starts OpenSM at `host` (it stays up), its log and cache in `dir`; waits for SUBNET UP
/// in its log.
fn start_opensm(sim: &Ibsim, host: &str, dir: &Path) -> std::process::Child {
    std::fs::create_dir_all(dir).unwrap();
    let log = dir.join("osm.log");
    let mut c = sim.client("opensm", Some(host));
    c.env("OSM_TMP_DIR", dir)
        .env("OSM_CACHE_DIR", dir)
        .arg("-e")
        .arg("-f")
        .arg(&log)
        .args(["-s", "0", "-d", "2"])
        .stdout(std::fs::File::create(dir.join("opensm.out")).expect("opensm.out"))
        .stderr(std::process::Stdio::null());
    let mut child = c.spawn().expect("spawn opensm");
    let deadline = Instant::now() + SM_DEADLINE;
    loop {
        // `-d2`: OpenSM flushes its log after every message.
        let mut text = String::new();
        if let Ok(mut f) = std::fs::File::open(&log) {
            let _ = f.read_to_string(&mut text);
        }
        if text.contains("SUBNET UP") {
            return child;
        }
        if Instant::now() > deadline || child.try_wait().ok().flatten().is_some() {
            let _ = child.kill();
            let _ = child.wait();
            panic!("OpenSM did not reach SUBNET UP:\n{text}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Asks both SMs every question of `c` on fresh ibsim instances of its fabric (working
/// files under `dir`) and fails with every answer that differs beyond [`DIVERGES`].
fn compare(c: &Case, dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
    let (net, sm_host) = (&c.net, c.sm_host.as_str());

    let sim = Ibsim::start(net, &[]).expect("ibsim");
    let osm_dir = dir.join("opensm");
    let mut osm = start_opensm(&sim, sm_host, &osm_dir);
    let theirs = ask(&sim, c, &osm_dir);
    // SIGTERM: OpenSM writes its guid2lid as it exits.
    let term = std::process::Command::new("kill")
        .args(["-TERM", &osm.id().to_string()])
        .status();
    assert!(term.is_ok_and(|s| s.success()), "kill -TERM opensm");
    let stop = Instant::now() + Duration::from_secs(20);
    while osm.try_wait().ok().flatten().is_none() && Instant::now() < stop {
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = osm.kill();
    let _ = osm.wait();
    sim.stop();
    assert!(
        osm_dir.join("guid2lid").exists(),
        "OpenSM wrote no guid2lid in {}",
        osm_dir.display()
    );

    let sim = Ibsim::start(net, &[]).expect("ibsim");
    let g2l = osm_dir.join("guid2lid");
    let mut sm = start_sm(&sim, sm_host, &["--guid2lid", g2l.to_str().unwrap()]);
    let ours_dir = dir.join("ours");
    std::fs::create_dir_all(&ours_dir).unwrap();
    let ours = ask(&sim, c, &ours_dir);
    let tables = std::mem::take(&mut sm.tables);
    drop(sm);
    sim.stop();

    let mut differ = Vec::new();
    let mut exempt = 0;
    let mut tie_entries = 0;
    for (name, want) in &theirs.saquery {
        let got = &ours.saquery[name];
        if c.routing_ties && name.starts_with("LFTR") {
            // Ours must be the LFT this SM programmed; OpenSM's may route ties elsewhere.
            let lid: u16 = name[5..].split('/').next().unwrap().parse().unwrap();
            let mine = lft_answer(got);
            let (theirs_lft, sw) = (lft_answer(want), switch_of(&tables, lid));
            let Some(dumped) = sw.and_then(|g| tables.lfts.get(&g)) else {
                assert!(mine.is_empty() && theirs_lft.is_empty(), "{name}: {got}");
                continue;
            };
            for l in 0..64u16 {
                let port = dumped.get(&l).copied().unwrap_or(255);
                assert_eq!(mine.get(&l), Some(&port), "{name} LID {l}:\n{got}");
                tie_entries += usize::from(theirs_lft.get(&l) != Some(&port));
            }
            continue;
        }
        let (mut w, mut g) = (without(want, "\u{0}"), without(got, "\u{0}"));
        // (NUL is in no line: this only drops the ibwarn lines.)
        for (q, field, why) in DIVERGES.iter().filter(|(q, _, _)| name.starts_with(q)) {
            let (w2, g2) = (without(&w, field), without(&g, field));
            // Counted where the lines left out differ (or one side has them only).
            let only = |t: &str| -> Vec<String> {
                t.lines()
                    .filter(|l| field.is_empty() || l.contains(field))
                    .map(str::to_string)
                    .collect()
            };
            if only(&w) != only(&g) {
                println!("{name}: {field:?} differs on purpose ({q}: {why})");
                exempt += 1;
            }
            (w, g) = (w2, g2);
        }
        if w != g {
            differ.push(format!("--- {name}\n# OpenSM:\n{want}# Quorum SM:\n{got}"));
        }
    }
    // The inventories: umad2sim does no RMPP, so each table reached osmtest as its first
    // segment only, and the two SMs list records in different orders (OpenSM by GUID in
    // network byte order): the records both hold must be equal, field by field.
    let (inv_t, inv_o) = (records(&theirs.inventory), records(&ours.inventory));
    let mut common = 0;
    for (key, fields) in &inv_t {
        match inv_o.get(key) {
            Some(f) if f == fields => common += 1,
            Some(f) => differ.push(format!(
                "--- inventory {key}\n# OpenSM:\n{}\n# Quorum SM:\n{}",
                fields.join("\n"),
                f.join("\n")
            )),
            None => println!("inventory {key}: in OpenSM's only (first RMPP segment)"),
        }
    }
    for kind in ["NODE", "PORT", "PATH", "LINK"] {
        assert!(
            inv_t
                .keys()
                .any(|k| k.starts_with(kind) && inv_o.contains_key(k)),
            "no {kind} record in both inventories:\n{}\n{}",
            theirs.inventory,
            ours.inventory
        );
    }
    if c.routing_ties {
        println!(
            "{}: LFTRecords equal to the LFTs this SM programmed; {tie_entries} entries route \
             a minimum-hop tie differently from OpenSM",
            c.name
        );
    }
    println!(
        "{}: {} saquery answers compared ({exempt} documented field differences); \
         inventory: {common} records in both, all equal ({} in OpenSM's, {} in ours)",
        c.name,
        theirs.saquery.len(),
        inv_t.len(),
        inv_o.len()
    );
    assert!(
        differ.is_empty(),
        "{}: {} answers differ from OpenSM's:\n{}",
        c.name,
        differ.len(),
        differ.join("\n")
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn sa_answers_equal_opensms_on_net_2sw2path4hca() {
    if !ready(
        "sa_answers_equal_opensms_on_net_2sw2path4hca",
        &["opensm", "saquery", "osmtest"],
    ) {
        return;
    }
    // Switches have 8 ports, CAs 2; OpenSM gives LIDs 1-6.
    let c = Case {
        name: "net.2sw2path4hca",
        net: PathBuf::from(NET_2SW2PATH4HCA),
        sm_host: "Hca1".into(),
        client: "Hca4".into(),
        lids: 6,
        max_port: 8,
        sample: (1..=6).collect(),
        routing_ties: false,
    };
    let dir = std::env::temp_dir().join(format!("qsm-sa-equal-{}", std::process::id()));
    compare(&c, &dir);
}

#[test]
fn sa_answers_equal_opensms_on_ft2_8() {
    if !ready(
        "sa_answers_equal_opensms_on_ft2_8",
        &["opensm", "saquery", "osmtest"],
    ) {
        return;
    }
    let (c, dir) = Case::generated("ft2:8", "ft2:8", 4);
    compare(&c, &dir.join("run"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sa_answers_equal_opensms_on_a_torus() {
    if !ready(
        "sa_answers_equal_opensms_on_a_torus",
        &["opensm", "saquery", "osmtest"],
    ) {
        return;
    }
    let (c, dir) = Case::generated("torus:3x3", "torus:3x3", 6);
    compare(&c, &dir.join("run"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// osmtest's flows against our SA on net.2sw2path4hca: inventory (`-f c`) and event
/// forwarding (`-f e`) pass, as they do against OpenSM on ibsim. The others fail against
/// OpenSM on ibsim too:
/// - `-f s` (services) stops against both SMs at the same check, osmtest's own "Data
///   mismatch in service_data8" after its fourth registration (the one with ServiceData);
///   every registration before it is accepted (run here, so a refusal shows). Both SMs echo
///   the record osmtest sent; why osmtest finds other data in the answer is not established.
/// - `-f a` (validation) hangs against both SMs: the inventory `-f c` writes under umad2sim
///   holds each table's first RMPP segment only (and, from OpenSM, a garbage record past it),
///   and osmtest then waits without a timeout for answers that need RMPP. Not run.
/// - `-f m` (multicast) stops against both SMs at the same checks, osmtest's own "Wasn't
///   able to erase mgrp" (ERR 02FE) for the groups it created by proxy, after every check
///   before them passed (the rate and MTU selectors of a create, a non-0xFF MGID, partial
///   leaves and their answers, proxy joins): run against OpenSM and ours on fresh ibsim
///   instances, the ERR codes osmtest logs outside its expected-error sections are equal.
#[test]
fn osmtest_flows_end_against_our_sa_as_against_opensm() {
    let test = "osmtest_flows_end_against_our_sa_as_against_opensm";
    if !ready(test, &["osmtest"]) {
        return;
    }
    let sim = Ibsim::start(&PathBuf::from(NET_2SW2PATH4HCA), &[]).expect("ibsim");
    let sm = start_sm(&sim, "Hca1", &[]);
    let inv = sim.dir().join("osmtest.dat");
    let inv = inv.to_str().unwrap();
    for (flow, name) in [("c", "Create Inventory"), ("e", "Event Forwarding")] {
        let out = sim
            .run_tool(
                "osmtest",
                &["-f", flow, "-i", inv],
                Some("Hca4"),
                TOOL_TIMEOUT,
            )
            .expect("osmtest");
        assert!(
            out.success() && out.stdout.contains(&format!("\"{name}\" PASS")),
            "osmtest -f {flow}: {}",
            out.describe()
        );
    }
    let out = sim
        .run_tool(
            "osmtest",
            &["-f", "s", "-i", inv],
            Some("Hca4"),
            TOOL_TIMEOUT,
        )
        .expect("osmtest");
    let text = format!("{}{}", out.stdout, out.stderr);
    assert!(
        text.contains("Data mismatch in service_data8") && !text.contains("ERR 4A02"),
        "osmtest -f s did not stop where it stops against OpenSM: {}",
        out.describe()
    );
    let ours = osmtest_m_errors(&sim, inv);
    drop(sm);
    sim.stop();
    let sim = Ibsim::start(&PathBuf::from(NET_2SW2PATH4HCA), &[]).expect("ibsim");
    let dir = sim.dir().join("opensm");
    let mut osm = start_opensm(&sim, "Hca1", &dir);
    let inv = dir.join("osmtest.dat");
    let inv = inv.to_str().unwrap();
    let out = sim
        .run_tool(
            "osmtest",
            &["-f", "c", "-i", inv],
            Some("Hca4"),
            TOOL_TIMEOUT,
        )
        .expect("osmtest");
    assert!(
        out.success(),
        "osmtest -f c against OpenSM: {}",
        out.describe()
    );
    let theirs = osmtest_m_errors(&sim, inv);
    let _ = osm.kill();
    let _ = osm.wait();
    sim.stop();
    assert!(theirs.iter().any(|e| e == "ERR 02FE"), "OpenSM: {theirs:?}");
    eprintln!("osmtest -f m errors: ours {ours:?}, OpenSM {theirs:?}");
    assert_eq!(ours, theirs, "osmtest -f m: ours vs OpenSM's");
}

/// `osmtest -f m` at Hca4 with inventory `inv`: the ERR codes it logs outside its
/// "expecting errors" sections (and the query errors every refused request logs), in order,
/// each once.
fn osmtest_m_errors(sim: &Ibsim, inv: &str) -> Vec<String> {
    let out = sim
        .run_tool(
            "osmtest",
            &["-f", "m", "-i", inv],
            Some("Hca4"),
            TOOL_TIMEOUT,
        )
        .expect("osmtest");
    let text = format!("{}{}", out.stdout, out.stderr);
    let mut errors: Vec<String> = Vec::new();
    let mut expecting = false;
    for line in text.lines() {
        if line.contains("Expecting Errors - START") {
            expecting = true;
        } else if line.contains("Expecting Errors  -  END") {
            expecting = false;
        }
        let Some(at) = line.find("ERR ") else {
            continue;
        };
        let code = line[at..].chars().take(8).collect::<String>();
        let noise = ["ERR 5501", "ERR 0003", "ERR 0224"];
        if !expecting && !noise.contains(&code.as_str()) && !errors.contains(&code) {
            errors.push(code);
        }
    }
    errors
}
