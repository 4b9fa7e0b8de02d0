//! SIGHUP reloads the partitions file of a running `sm-node` (single replica): a file with a
//! syntax error is logged as E_NODE_POLICY_RELOAD with file:line:col, the process keeps
//! running and no sweep follows; a valid file is programmed by the heavy sweep the reload
//! triggers (only P_KeyTable Sets, for the two tables that change), and the P_Key tables the
//! master then holds (`--dump-tables`) equal the planner's tables for the new file.
//!
//! Synchronisation is on log lines only (a reader thread hands stderr lines over a channel;
//! every wait is bounded by `common::BOUND` as a failure bound, and a watchdog plus a
//! kill-on-drop guard stop the child on every path).

mod common;

use common::{BOUND, Killed, ca_ports, temp_dir};
use fabric::{Guid, Topology};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Instant;

const BIN: &str = env!("CARGO_BIN_EXE_sm-node");

/// stderr lines of the child, and everything read so far.
struct Log {
    rx: Receiver<String>,
    all: String,
}

impl Log {
    /// Waits (bounded) for a line containing `what`; returns it.
    fn wait(&mut self, what: &str) -> String {
        let deadline = Instant::now() + BOUND;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(l) => {
                    self.all.push_str(&l);
                    self.all.push('\n');
                    if l.contains(what) {
                        return l;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!("no `{what}` within {BOUND:?}:\n{}", self.all)
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("sm-node exited before `{what}`:\n{}", self.all)
                }
            }
        }
    }
}

fn hup(pid: u32, sig: &str) {
    let st = Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(st.success());
}

/// Tenant A holds CA ports 1 and 2, tenant B ports 3 and 4; every port is a full member of
/// the default partition.
fn policy_a(g: &[Guid]) -> String {
    format!(
        "Default=0x7fff : ALL=full ;\nA=0x0001 : {}=full, {}=full ;\nB=0x0002 : {}=full, {}=full ;\n",
        g[1], g[2], g[3], g[4]
    )
}

/// Port 4 moves from tenant B to tenant A.
fn policy_b(g: &[Guid]) -> String {
    format!(
        "Default=0x7fff : ALL=full ;\nA=0x0001 : {}=full, {}=full, {}=full ;\nB=0x0002 : {}=full ;\n",
        g[1], g[2], g[4], g[3]
    )
}

type Tables = BTreeMap<(String, u8), Vec<u16>>;

fn trimmed(mut v: Vec<u16>) -> Vec<u16> {
    while v.last() == Some(&0) {
        v.pop();
    }
    v
}

/// The `pkeys` lines of a `--dump-tables` file.
fn dumped(path: &Path) -> Tables {
    let text = std::fs::read_to_string(path).unwrap();
    let mut m = Tables::new();
    for l in text.lines().filter(|l| l.starts_with("pkeys ")) {
        let f: Vec<&str> = l.split_whitespace().collect();
        let keys = f[3..]
            .iter()
            .map(|k| u16::from_str_radix(k.trim_start_matches("0x"), 16).unwrap())
            .collect();
        m.insert((f[1].to_string(), f[2].parse().unwrap()), trimmed(keys));
    }
    m
}

/// The planner's tables for `text` on `t` (the simulator's default capabilities).
fn planned(t: &Topology, text: &str, sm_port: Guid) -> Tables {
    let sim = fabric_sim::SimConfig::default();
    let opts = partitions::Options {
        sm_port_guid: Some(sm_port),
        ..partitions::Options::default()
    };
    let policy = partitions::load(text, opts).unwrap();
    let caps = partitions::Caps {
        ca_partition_cap: sim.ca_partition_cap,
        switch_partition_cap: sim.switch_partition_cap,
        enforcement_cap: sim.switch_partition_cap,
        ..partitions::Caps::default()
    };
    let plan = partitions::plan(&policy, t, &caps);
    let mut m = Tables::new();
    for pp in &plan.ports {
        let keys = pp.table.entries().iter().map(|k| k.0).collect();
        m.insert((pp.port.node_guid.to_string(), pp.port.port), trimmed(keys));
    }
    for sp in &plan.switch_ports {
        if let Some(tb) = &sp.table {
            let keys = tb.entries().iter().map(|k| k.0).collect();
            m.insert((sp.switch_guid.to_string(), sp.port), trimmed(keys));
        }
    }
    m
}

#[test]
fn sighup_reloads_partitions_and_a_bad_file_keeps_the_policy() {
    let t = sm_node::daemon::load_topology("ft2:8").unwrap();
    let guids: Vec<Guid> = ca_ports(&t).iter().map(|c| c.2).collect();
    let dir = temp_dir("partitions-reload");
    let conf = dir.join("partitions.conf");
    let dump = dir.join("tables");
    let a = policy_a(&guids);
    std::fs::write(&conf, &a).unwrap();
    let mut child = Command::new(BIN)
        .args([
            "--fabric",
            "sim:ft2:8",
            "--sweep-interval",
            "0",
            "--partitions",
        ])
        .arg(&conf)
        .arg("--dump-tables")
        .arg(&dump)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let _watchdog = common::watchdog(pid);
    let err = BufReader::new(child.stderr.take().unwrap());
    let mut proc_ = Killed(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in err.lines() {
            let Ok(l) = l else { break };
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let mut log = Log {
        rx,
        all: String::new(),
    };
    log.wait("SUBNET UP");
    log.wait("tables dumped to");
    // The SM sits on the first CA port (SELF).
    assert!(
        log.all.contains(&format!("port {}", guids[0])),
        "{}",
        log.all
    );
    let tables_a = dumped(&dump);
    assert_eq!(tables_a, planned(&t, &a, guids[0]));

    // A syntax error on line 4: logged with file:line:col, nothing else happens.
    let bad = format!("{a}C=0xZZ03 : ALL=full ;\n");
    std::fs::write(&conf, &bad).unwrap();
    let pos = partitions::parse(&bad).unwrap_err()[0].pos;
    assert_eq!(pos.line, 4);
    hup(pid, "HUP");
    let l = log.wait("E_NODE_POLICY_RELOAD");
    let at = format!("{}:{}:{}:", conf.display(), pos.line, pos.col);
    assert!(l.contains(&at), "no {at} in: {l}");
    assert!(l.contains("the policy in force is kept"), "{l}");
    assert!(l.contains("ERROR"), "{l}");
    assert!(
        proc_.0.try_wait().unwrap().is_none(),
        "sm-node stopped on SIGHUP"
    );

    // A valid file: in force from heavy sweep 2 (the bad reload started none), which
    // writes the two tables that change and nothing else.
    let b = policy_b(&guids);
    std::fs::write(&conf, &b).unwrap();
    hup(pid, "HUP");
    let l = log.wait("partitions reloaded from");
    assert!(l.contains("in force from heavy sweep 2"), "{l}");
    let done = log.wait("HEAVY SWEEP COMPLETE (sweep 2)");
    assert!(done.contains("P_KeyTable Set 2;"), "{done}");
    for other in [
        "PortInfo Set",
        "LinearForwardingTable Set",
        "SwitchInfo Set",
    ] {
        assert!(!done.contains(other), "{other} in {done}");
    }
    log.wait("reloaded partition policy programmed by heavy sweep 2");
    log.wait("tables dumped to");
    let tables_b = dumped(&dump);
    assert_eq!(tables_b, planned(&t, &b, guids[0]));
    let changed: Vec<_> = tables_a
        .iter()
        .filter(|(k, v)| tables_b.get(*k) != Some(*v))
        .map(|(k, _)| k.clone())
        .collect();
    assert_eq!(changed.len(), 2, "{changed:?}");
    assert!(
        log.all.matches("Entering heavy sweep").count() == 2,
        "{}",
        log.all
    );

    // Still a normal stop.
    hup(pid, "INT");
    log.wait("stopping (SIGINT)");
    let st = proc_.0.wait().unwrap();
    assert!(st.success(), "{st:?}\n{}", log.all);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Waits (bounded, polling the file) until `log` holds a line containing `what` that was not
/// there at `from` bytes; returns the line.
fn wait_in_file(log: &Path, from: usize, what: &str) -> String {
    let deadline = Instant::now() + BOUND;
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if let Some(l) = text
            .get(from..)
            .and_then(|t| t.lines().find(|l| l.contains(what)))
        {
            return l.to_string();
        }
        assert!(
            Instant::now() < deadline,
            "no `{what}` in {} within {BOUND:?}:\n{}",
            log.display(),
            text.get(from..).unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn file_len(p: &Path) -> usize {
    std::fs::metadata(p).map_or(0, |m| m.len() as usize)
}

/// Cluster mode: SIGHUP on a follower proposes its partitions file through the admin
/// ApplyPolicy path (forwarded to the leader); a bad file proposes nothing.
#[test]
fn sighup_on_a_follower_proposes_the_partitions_file_to_the_cluster() {
    use proto::admin::GetPolicyRequest;
    use sm_node::cluster::harness::LocalCluster;
    let d = std::env::temp_dir().join(format!("smnode-reload-cluster-{}", std::process::id()));
    let mut c = LocalCluster::new(&std::path::PathBuf::from(BIN), "ft2:4", 3, &d).unwrap();
    let guids: Vec<Guid> = ca_ports(&c.topo).iter().map(|x| x.2).collect();
    let conf = d.join("partitions.conf");
    let a = policy_a(&guids);
    std::fs::write(&conf, &a).unwrap();
    c.common.push("--partitions".into());
    c.common.push(conf.display().to_string());
    c.start_all().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let st = rt.block_on(c.wait_serving(0, BOUND)).unwrap();
    let leader = st.self_id;
    let follower = (1..=3).find(|&i| i != leader).unwrap();
    let pid = c.replicas[(follower - 1) as usize].pid().unwrap();
    let log = d.join(format!("replica{follower}.log"));
    let policy = |c: &LocalCluster| {
        rt.block_on(async {
            let mut adm = c.admin(leader).unwrap();
            adm.get_policy(GetPolicyRequest { linearizable: true })
                .await
                .unwrap()
                .into_inner()
        })
    };
    assert_eq!(
        policy(&c).version,
        0,
        "a policy was applied before any reload"
    );

    // A bad file: logged with file:line:col, nothing proposed.
    let bad = format!("{a}C=0xZZ03 : ALL=full ;\n");
    std::fs::write(&conf, &bad).unwrap();
    let pos = partitions::parse(&bad).unwrap_err()[0].pos;
    let from = file_len(&log);
    hup(pid, "HUP");
    let l = wait_in_file(&log, from, "E_NODE_POLICY_RELOAD");
    let at = format!("{}:{}:{}:", conf.display(), pos.line, pos.col);
    assert!(l.contains(&at), "no {at} in: {l}");
    assert!(c.is_running(follower));

    // A valid file: committed as version 1 (the bad one took no version), the master
    // programs it.
    let b = policy_b(&guids);
    std::fs::write(&conf, &b).unwrap();
    let from = file_len(&log);
    c.take_sets();
    hup(pid, "HUP");
    let l = wait_in_file(&log, from, "partitions reloaded from");
    assert!(l.contains("policy version 1 committed"), "{l}");
    let p = policy(&c);
    assert_eq!((p.version, p.text.as_str()), (1, b.as_str()));
    rt.block_on(c.wait_programmed(BOUND)).unwrap();
    let sm_port = c.replicas[(leader - 1) as usize].port_guid;
    let want = planned(&c.topo, &b, sm_port);
    let deadline = Instant::now() + BOUND;
    loop {
        let held: Vec<(String, Vec<u16>)> = c
            .ca_pkeys()
            .into_iter()
            .map(|(g, k)| (g, trimmed(k.iter().map(|k| k.0).collect())))
            .map(|(g, k)| (g.to_string(), k))
            .collect();
        let expect: Vec<(String, Vec<u16>)> = ca_ports(&c.topo)
            .iter()
            .map(|&(n, p, g)| {
                let node = c.topo.node(n).node_guid.to_string();
                (g.to_string(), want[&(node, p)].clone())
            })
            .collect();
        if held == expect {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "CA P_Key tables never matched B:\n{held:?}\n{expect:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // The restarted master was seeded with the replicated tables: no LFT rewritten, and the
    // P_KeyTable Sets touch only the moved port's tables.
    let sets = c.take_sets();
    assert!(
        !sets
            .iter()
            .any(|r| r.attr == mad::AttributeId::LINEAR_FORWARDING_TABLE.0),
        "an LFT block was rewritten: {sets:?}"
    );
    let moved = ca_ports(&c.topo)[4];
    let pkey_sets: Vec<_> = sets
        .iter()
        .filter(|r| r.attr == mad::AttributeId::P_KEY_TABLE.0)
        .collect();
    assert!(!pkey_sets.is_empty());
    assert!(
        pkey_sets.iter().all(|r| r.node == moved.0
            || c.topo.node(moved.0).ports[usize::from(moved.1)]
                .remote
                .is_some_and(|p| p.node == r.node)),
        "P_KeyTable Sets beyond the moved port and its switch: {pkey_sets:?}"
    );
    // Unchanged file: nothing proposed.
    let from = file_len(&log);
    hup(pid, "HUP");
    let l = wait_in_file(&log, from, "nothing proposed");
    assert!(l.contains("version 1"), "{l}");
    assert_eq!(policy(&c).version, 1);
    drop(c);
    let _ = std::fs::remove_dir_all(&d);
}
