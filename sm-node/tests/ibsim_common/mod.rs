//! Shared helpers of the ibsim tests: start `sm-node --fabric umad:...` under umad2sim,
//! wait for SUBNET UP in its log, and check the fabric with infiniband-diags (ibnetdiscover,
//! sminfo, ibswitches, ibroute, smpquery) against the topology, the routing crate and the
//! partitions planner.
#![allow(dead_code)]

use fabric::{Guid, NodeType, PortRef, Topology};
use routing::ibroute::parse_ibroute;
use routing::{NO_ROUTE, RoutingInput};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use umad::testing::Ibsim;

/// Per tool invocation.
pub const TOOL_TIMEOUT: Duration = Duration::from_secs(60);
/// From start to SUBNET UP, at most.
pub const SM_DEADLINE: Duration = Duration::from_secs(120);

/// The diags every ibsim test of this crate runs (through [`Ibsim::client`], which finds
/// them with testenv's lookup: PATH, /usr/sbin, /sbin).
pub const DIAGS: [&str; 5] = [
    "ibnetdiscover",
    "ibroute",
    "smpquery",
    "sminfo",
    "ibswitches",
];

/// True when test `test` can run here: ibsim, umad2sim, the diags and `extra` are installed.
/// Otherwise testenv reports it (a failure under CI=true, a `SKIPPED:` line otherwise) and
/// the test returns.
pub fn ready(test: &str, extra: &[&str]) -> bool {
    umad::testing::require_ibsim(test)
        && DIAGS
            .iter()
            .chain(extra)
            .all(|t| testenv::require(test, [*t]).is_some())
}

/// `sm-node` running as an ibsim client; killed by PID when dropped (before the ibsim).
pub struct SmNode {
    child: Child,
    /// Its tables, as dumped with `--dump-tables` at SUBNET UP.
    pub tables: SmTables,
    /// Everything it logged up to SUBNET UP (ANSI colours removed).
    pub log: String,
    log_path: PathBuf,
}

impl SmNode {
    /// The routing engine that won (`ROUTING COMPLETE: engine X`).
    pub fn engine(&self) -> String {
        self.log
            .lines()
            .find_map(|l| l.split("ROUTING COMPLETE: engine ").nth(1))
            .and_then(|r| r.split([',', ' ']).next())
            .unwrap_or_else(|| panic!("no ROUTING COMPLETE in the log:\n{}", self.log))
            .to_string()
    }

    /// The SUBNET UP line.
    pub fn subnet_up_line(&self) -> String {
        self.log
            .lines()
            .find(|l| l.contains("SUBNET UP after"))
            .unwrap_or_default()
            .to_string()
    }

    /// Stops it (SIGKILL by PID) and returns what it logged in all.
    pub fn stop(mut self) -> String {
        self.kill();
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for SmNode {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Removes ANSI escape sequences (tracing colours).
pub fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Starts `sm-node --fabric umad:/dev/infiniband/umad0` at `host` with `extra` flags (no
/// light sweeps) and reads its log until SUBNET UP. Panics with the log when it exits or
/// the deadline passes first.
pub fn start_sm(sim: &Ibsim, host: &str, extra: &[&str]) -> SmNode {
    let log_path = sim.dir().join(format!("sm-node-{host}.log"));
    let tables_path = sim.dir().join(format!("sm-node-{host}.tables"));
    let mut child = sim
        .client(env!("CARGO_BIN_EXE_sm-node"), Some(host))
        .args([
            "--fabric",
            "umad:/dev/infiniband/umad0:1",
            "--sweep-interval",
            "0",
            "--dump-tables",
        ])
        .arg(&tables_path)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn sm-node");
    let err = child.stderr.take().expect("piped stderr");
    let (tx, rx) = mpsc::channel::<String>();
    let path = log_path.clone();
    std::thread::spawn(move || {
        let mut file = std::fs::File::create(&path).ok();
        for line in BufReader::new(err).lines() {
            let Ok(line) = line else { break };
            let line = strip_ansi(&line);
            if let Some(f) = file.as_mut() {
                let _ = writeln!(f, "{line}");
            }
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + SM_DEADLINE;
    let mut log = String::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                let up = line.contains("tables dumped to");
                log.push_str(&line);
                log.push('\n');
                if up {
                    break;
                }
            }
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "sm-node at {host} did not reach SUBNET UP ({e:?}):\n{log}\nibsim:\n{}",
                    sim.log()
                );
            }
        }
    }
    let tables = SmTables::parse(&std::fs::read_to_string(&tables_path).expect("tables file"));
    SmNode {
        child,
        tables,
        log,
        log_path,
    }
}

/// What `sm-node --dump-tables` wrote.
#[derive(Debug, Default)]
pub struct SmTables {
    /// Port GUID → base LID.
    pub lids: BTreeMap<Guid, u16>,
    /// Switch GUID → LID → port.
    pub lfts: BTreeMap<Guid, BTreeMap<u16, u8>>,
    /// (node GUID, port) → the non-zero keys with their indices.
    pub pkeys: BTreeMap<(Guid, u8), Vec<(usize, u16)>>,
}

fn hex(s: &str) -> u64 {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap_or_else(|_| panic!("hex {s:?}"))
}

impl SmTables {
    /// Parses the dump.
    pub fn parse(text: &str) -> SmTables {
        let mut t = SmTables::default();
        for line in text.lines() {
            let w: Vec<&str> = line.split_whitespace().collect();
            match w.as_slice() {
                ["lid", g, l] => {
                    t.lids.insert(Guid(hex(g)), l.parse().unwrap());
                }
                ["lft", g, l, p] => {
                    t.lfts
                        .entry(Guid(hex(g)))
                        .or_default()
                        .insert(l.parse().unwrap(), p.parse().unwrap());
                }
                ["pkeys", g, p, keys @ ..] => {
                    let v = keys
                        .iter()
                        .enumerate()
                        .map(|(i, k)| (i, hex(k) as u16))
                        .filter(|(_, k)| k & 0x7fff != 0)
                        .collect();
                    t.pkeys.insert((Guid(hex(g)), p.parse().unwrap()), v);
                }
                _ => panic!("bad tables line {line:?}"),
            }
        }
        t
    }
}

/// `smpdump` output (hex words) → bytes.
pub fn parse_smpdump(text: &str) -> Vec<u8> {
    let mut v = Vec::new();
    for w in text.split_whitespace() {
        if w.len() == 4
            && let Ok(x) = u16::from_str_radix(w, 16)
        {
            v.extend(x.to_be_bytes());
        }
    }
    v
}

/// Runs a diags tool at `host`; panics with its output when it fails.
pub fn tool(sim: &Ibsim, host: &str, program: &str, args: &[&str]) -> String {
    let out = sim
        .run_tool(program, args, Some(host), TOOL_TIMEOUT)
        .unwrap_or_else(|e| panic!("{program} {args:?}: {e}"));
    assert!(out.success(), "{program} {args:?}: {}", out.describe());
    out.stdout
}

/// A topology's shape: nodes as (type, description, ports) and links between (description,
/// port) pairs; with `guids`, node GUIDs and port GUIDs too.
pub type Shape = (BTreeSet<String>, BTreeSet<String>);

/// See [`Shape`].
pub fn shape(t: &Topology, guids: bool) -> Shape {
    let name = |id: fabric::NodeId| {
        let n = t.node(id);
        if guids {
            format!("{}/{}", n.description, n.node_guid)
        } else {
            n.description.clone()
        }
    };
    let nodes = t
        .nodes()
        .map(|(id, n)| {
            let mut s = format!("{:?} {} {}", n.node_type, name(id), n.num_ports());
            if guids {
                for p in n.port_numbers() {
                    if n.ports[p.0 as usize].remote.is_some() {
                        s.push_str(&format!(" {}={}", p.0, n.ports[p.0 as usize].guid));
                    }
                }
            }
            s
        })
        .collect();
    let links = t
        .links()
        .map(|(a, b)| {
            let mut e = [
                format!("{}[{}]", name(a.node), a.port),
                format!("{}[{}]", name(b.node), b.port),
            ];
            e.sort();
            format!("{} -- {}", e[0], e[1])
        })
        .collect();
    (nodes, links)
}

/// Every cabled CA port: (port GUID, node, port number), in topology order.
pub fn ca_ports(t: &Topology) -> Vec<(Guid, PortRef)> {
    let mut v = Vec::new();
    for (id, n) in t.cas() {
        for p in n.port_numbers() {
            let port = &n.ports[p.0 as usize];
            if port.remote.is_some() {
                v.push((port.guid, PortRef::new(id, p.0)));
            }
        }
    }
    v
}

/// A two-tenant partitions.conf over the cabled CA ports: Default full for all; the first
/// half in TenantA (full), the second half in TenantB (every other one limited).
pub fn two_tenants(t: &Topology) -> String {
    let ports = ca_ports(t);
    let half = ports.len() / 2;
    let list = |range: &[(Guid, PortRef)], limited_odd: bool| {
        range
            .iter()
            .enumerate()
            .map(|(i, (g, _))| {
                let m = if limited_odd && i % 2 == 1 {
                    "limited"
                } else {
                    "full"
                };
                format!("{:#018x}={m}", g.0)
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "Default=0x7fff, ipoib : ALL=full ;\nTenantA=0x1001, ipoib : {} ;\nTenantB=0x1002 : {} ;\n",
        list(&ports[..half], false),
        list(&ports[half..], true)
    )
}

/// `smpquery pkeys` output → the non-zero keys with their indices.
pub fn parse_pkeys(text: &str) -> Vec<(usize, u16)> {
    let mut v = Vec::new();
    for line in text.lines() {
        let Some((idx, rest)) = line.split_once(':') else {
            continue;
        };
        let Ok(base) = idx.trim().parse::<usize>() else {
            continue;
        };
        for (i, w) in rest.split_whitespace().enumerate() {
            if let Some(k) = w
                .strip_prefix("0x")
                .and_then(|h| u16::from_str_radix(h, 16).ok())
                && k & 0x7fff != 0
            {
                v.push((base + i, k));
            }
        }
    }
    v
}

/// A field of `smpquery portinfo` (`Name:.....value`).
pub fn portinfo_field(text: &str, name: &str) -> Option<String> {
    text.lines().find_map(|l| {
        l.strip_prefix(name)
            .filter(|r| r.starts_with(':'))
            .map(|r| r.trim_start_matches([':', '.']).trim().to_string())
    })
}

/// What `sminfo` prints: (LID, GUID, priority, state name).
pub fn parse_sminfo(text: &str) -> (u16, u64, u8, String) {
    let w: Vec<&str> = text.split_whitespace().collect();
    let after = |k: &str| {
        w.windows(2)
            .find(|p| p[0] == k)
            .map(|p| p[1].trim_end_matches(','))
            .unwrap_or_else(|| panic!("sminfo: no {k:?} in {text:?}"))
    };
    let lid = w
        .windows(3)
        .find(|p| p[0] == "sm" && p[1] == "lid")
        .and_then(|p| p[2].parse().ok())
        .unwrap_or_else(|| panic!("sminfo: no LID in {text:?}"));
    let guid = w
        .windows(3)
        .find(|p| p[0] == "sm" && p[1] == "guid")
        .and_then(|p| {
            u64::from_str_radix(p[2].trim_end_matches(',').trim_start_matches("0x"), 16).ok()
        })
        .unwrap_or_else(|| panic!("sminfo: no GUID in {text:?}"));
    let prio = after("priority").parse().expect("priority");
    let state = w.last().copied().unwrap_or_default().to_string();
    (lid, guid, prio, state)
}

/// `ibswitches` output → switch LIDs.
pub fn parse_ibswitches(text: &str) -> Vec<u16> {
    text.lines()
        .filter_map(|l| {
            l.split_once(" lid ")?
                .1
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .collect()
}

/// How much of the fabric the checks cover.
#[derive(Clone, Copy, Debug)]
pub struct Checks {
    /// Query every `ca_stride`-th CA port with smpquery (1: every port).
    pub ca_stride: usize,
    /// Expected SM priority.
    pub priority: u8,
    /// Compare node and port GUIDs with the topology too (generated files carry them;
    /// ibsim makes up the GUIDs of the example files).
    pub guids: bool,
}

/// What the checks found, for the test's printout.
#[derive(Debug)]
pub struct Verified {
    /// LFT blocks read with smpdump because ibroute left them out.
    pub smpdumps: usize,
    /// Switches whose tables were compared.
    pub switches: usize,
    /// LFT entries compared.
    pub entries: usize,
    /// CA ports queried with smpquery.
    pub ca_ports: usize,
    /// The fabric as ibnetdiscover saw it.
    pub discovered: Topology,
}

/// Checks the fabric behind `sim` after our SM reached SUBNET UP at `sm_host`: ibnetdiscover
/// equals `expected` (by shape; GUIDs too when `guids`), sminfo names our SM as master, every
/// switch's ibroute equals the routing crate's tables on the LIDs our SM assigned with the
/// engine it logged, every queried CA port is Active with its LID and holds the partitions
/// planner's P_Keys for `partitions_conf`.
pub fn verify(
    sim: &Ibsim,
    sm: &SmNode,
    sm_host: &str,
    diag_host: &str,
    expected: &Topology,
    partitions_conf: &str,
    checks: Checks,
) -> Verified {
    // 1. ibnetdiscover.
    let disc_text = tool(sim, diag_host, "ibnetdiscover", &[]);
    let disc = fabric::netfile::parse(&disc_text)
        .unwrap_or_else(|e| panic!("ibnetdiscover output does not parse: {e}\n{disc_text}"));
    assert_eq!(
        shape(&disc, checks.guids),
        shape(expected, checks.guids),
        "ibnetdiscover differs from the topology"
    );

    // 2. sminfo names our master.
    let sm_node = disc
        .nodes()
        .find(|(_, n)| n.description == sm_host || fabric::netfile::node_id(n) == sm_host)
        .map(|(id, _)| id)
        .unwrap_or_else(|| panic!("{sm_host} not in ibnetdiscover's output"));
    let sm_port = PortRef::new(sm_node, 1);
    let sm_guid = disc.node(sm_node).ports[1].guid;

    // 3. LFTs: every switch by ibroute, against the tables our SM dumped.
    let ours = &sm.tables;
    let sw_lids = parse_ibswitches(&tool(sim, diag_host, "ibswitches", &[]));
    assert_eq!(sw_lids.len(), disc.switches().count(), "ibswitches");
    let mut entries = 0;
    let mut smpdumps = 0;
    for swlid in &sw_lids {
        let text = tool(sim, diag_host, "ibroute", &[&swlid.to_string()]);
        let d = parse_ibroute(&text).expect("ibroute output parses");
        assert_eq!(d.len(), 1, "ibroute {swlid}:\n{text}");
        let d = &d[0];
        assert_eq!(
            ours.lids
                .get(&disc.node(disc.node_by_guid(d.guid).expect("switch")).ports[0].guid)
                .or_else(|| ours.lids.get(&d.guid)),
            Some(&d.lid.0),
            "switch {} LID",
            d.guid
        );
        let mut theirs: BTreeMap<u16, u8> = d.entries.iter().map(|e| (e.lid.0, e.port)).collect();
        let mine = ours
            .lfts
            .get(&d.guid)
            .unwrap_or_else(|| panic!("switch {} not in our tables", d.guid));
        // ibroute leaves out the last block when the top LID is a multiple of 64
        // (IBSIM.md): read any block it printed nothing of with smpdump.
        let blocks: BTreeSet<u16> = mine.keys().map(|l| l / 64).collect();
        for b in blocks {
            if theirs.keys().any(|l| l / 64 == b) {
                continue;
            }
            smpdumps += 1;
            let bytes = parse_smpdump(&tool(
                sim,
                diag_host,
                "smpdump",
                &[&swlid.to_string(), "0x19", &b.to_string()],
            ));
            assert!(bytes.len() >= 64, "smpdump block {b} of LID {swlid}");
            for (i, &p) in bytes[..64].iter().enumerate() {
                let l = b * 64 + i as u16;
                if p != NO_ROUTE && l != 0 {
                    theirs.insert(l, p);
                }
            }
        }
        assert_eq!(
            &theirs, mine,
            "switch {} (LID {swlid}): ibroute vs our LFT",
            d.guid
        );
        entries += mine.len();
    }
    assert_eq!(ours.lfts.len(), sw_lids.len(), "switches in our tables");
    // Our tables route every switch to every LID: the routing crate's walk check.
    let la = lid_assignment(&disc, &ours.lids);
    assert_eq!(
        la.iter().count(),
        disc.switches().count() + ca_ports(&disc).len(),
        "every switch and cabled CA port has a LID"
    );
    let _ = RoutingInput::new(&disc, &la, Some(sm_port)).expect("LIDs fit the fabric");
    let (lid, guid, prio, state) = parse_sminfo(&tool(sim, diag_host, "sminfo", &[]));
    assert_eq!(guid, sm_guid.0, "sminfo GUID");
    assert_eq!(state, "SMINFO_MASTER", "sminfo state");
    assert_eq!(prio, checks.priority, "sminfo priority");
    assert_eq!(
        Some(&lid),
        ours.lids.get(&sm_guid),
        "sminfo LID is the SM port's"
    );
    let lids = la;

    // 4. CA ports: Active, their LID, the planner's P_Keys.
    let opts = partitions::Options {
        sm_port_guid: Some(sm_guid),
        ..partitions::Options::default()
    };
    let policy = partitions::load(partitions_conf, opts).expect("partitions.conf");
    let plan = partitions::plan(&policy, &disc, &partitions::Caps::default());
    let want: BTreeMap<(Guid, u8), Vec<(usize, u16)>> = plan
        .ports
        .iter()
        .map(|pp| {
            (
                (pp.port.node_guid, pp.port.port),
                pp.table
                    .valid()
                    .into_iter()
                    .map(|(i, k)| (i, k.0))
                    .collect(),
            )
        })
        .collect();
    let mut queried = 0;
    for (i, (_, pr)) in ca_ports(&disc).into_iter().enumerate() {
        if i % checks.ca_stride.max(1) != 0 {
            continue;
        }
        queried += 1;
        let node = disc.node(pr.node);
        let lid = lids
            .get(pr)
            .unwrap_or_else(|| panic!("{} port {} has no LID", node.description, pr.port))
            .base
            .0
            .to_string();
        let port = pr.port.0.to_string();
        let pi = tool(sim, diag_host, "smpquery", &["portinfo", &lid, &port]);
        assert_eq!(
            portinfo_field(&pi, "LinkState").as_deref(),
            Some("Active"),
            "{} port {port} (LID {lid}):\n{pi}",
            node.description
        );
        assert_eq!(portinfo_field(&pi, "Lid").as_deref(), Some(lid.as_str()));
        let pk = parse_pkeys(&tool(sim, diag_host, "smpquery", &["pkeys", &lid, &port]));
        let w = want
            .get(&(node.node_guid, pr.port.0))
            .unwrap_or_else(|| panic!("planner has no table for {}", node.description));
        assert_eq!(
            &pk, w,
            "{} port {port}: smpquery pkeys vs planner",
            node.description
        );
        if let Some(o) = ours.pkeys.get(&(node.node_guid, pr.port.0)) {
            assert_eq!(
                &pk, o,
                "{} port {port}: smpquery pkeys vs our tables",
                node.description
            );
        }
    }
    Verified {
        smpdumps,
        switches: sw_lids.len(),
        entries,
        ca_ports: queried,
        discovered: disc,
    }
}

/// The LIDs our SM dumped (port GUID -> base LID) as a LID assignment of `disc`: every
/// switch's port 0 (its node GUID) and every cabled CA port that has one.
pub fn lid_assignment(disc: &Topology, lids: &BTreeMap<Guid, u16>) -> routing::LidAssignment {
    let mut la = routing::LidAssignment::new();
    for (id, n) in disc.nodes() {
        if n.is_switch() {
            // A switch's LID is its port 0's, whose GUID is the node GUID.
            if let Some(&l) = lids.get(&n.node_guid) {
                la.set(PortRef::new(id, 0), fabric::Lid(l), 0).unwrap();
            }
            continue;
        }
        for p in n.port_numbers() {
            let port = &n.ports[p.0 as usize];
            if port.remote.is_some()
                && let Some(&l) = lids.get(&port.guid)
            {
                la.set(PortRef::new(id, p.0), fabric::Lid(l), 0).unwrap();
            }
        }
    }
    la
}

/// The first CA's node id as SIM_HOST (generated files: `H-<guid>`).
pub fn first_ca_host(t: &Topology) -> String {
    let (_, n) = t.cas().next().expect("a CA");
    fabric::netfile::node_id(n)
}

/// The last CA's node id as SIM_HOST.
pub fn last_ca_host(t: &Topology) -> String {
    let (_, n) = t.cas().last().expect("a CA");
    fabric::netfile::node_id(n)
}

/// True for CA nodes.
pub fn is_ca(n: &fabric::Node) -> bool {
    n.node_type == NodeType::Ca
}

/// Runs OpenSM once (`-o`) at `host` on `sim` with `extra` arguments, its cache and log in
/// `dir` (created; OpenSM writes its guid2lid there); fails the test when it fails. Returns
/// `dir`.
pub fn opensm_once(sim: &Ibsim, host: &str, dir: PathBuf, extra: &[&std::ffi::OsStr]) -> PathBuf {
    std::fs::create_dir_all(&dir).unwrap();
    let mut c = sim.client("opensm", Some(host));
    c.env("OSM_TMP_DIR", &dir)
        .env("OSM_CACHE_DIR", &dir)
        .args(extra)
        .arg("-e")
        .arg("-f")
        .arg(dir.join("osm.log"))
        .args(["-s", "0", "-o"]);
    let out = sim.run(c, Duration::from_secs(120)).expect("opensm");
    assert!(out.success(), "opensm: {}", out.describe());
    dir
}

/// A generated fabric written as an ibsim net file in a fresh temp directory named after
/// `tag`: (topology, directory, net file). The caller removes the directory.
pub fn generated_net(spec: &str, tag: &str) -> (Topology, PathBuf, PathBuf) {
    let topo = spec.parse::<fabric::GenSpec>().unwrap().generate().unwrap();
    let dir = std::env::temp_dir().join(format!("qsm-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let net = dir.join("fabric.net");
    std::fs::write(&net, fabric::netfile::write(&topo).unwrap()).unwrap();
    (topo, dir, net)
}
