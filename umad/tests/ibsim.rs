//! The umad transport against ibsim through umad2sim.
//!
//! Each test starts its own ibsim (own socket name and scratch directory). The part that
//! drives [`UmadPort`] must run in a process started with `LD_PRELOAD=libumad2sim.so`, so
//! each test re-executes this test binary filtered to itself ([`Ibsim::self_client`]): in
//! the child, [`child_role`] is true and the test body is the client; in the parent it
//! starts ibsim (and OpenSM or infiniband-diags tools where needed), runs the child, and
//! checks that exactly one test passed there. When ibsim, umad2sim or a tool a test needs is
//! missing, the test fails under `CI=true` and prints `SKIPPED: ...` otherwise (testenv).

use fabric::netfile::{self, node_id};
use fabric::{GenSpec, Guid, Lid, NodeId, PKey, PortRef, Topology};
use mad::{NodeInfo, PKeyTable, PortInfo, Smp};
use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use umad::testing::{
    Ibsim, NET_2SW2PATH4HCA, SIM_DEVICE, child_role, one_test_passed, require_ibsim,
};
use umad::{Dest, Reader, RecvStatus, UmadError, UmadPort};

/// How long one request may go unanswered before the test fails: a failure bound, not a
/// speed claim (a loaded machine delays ibsim's answers; ibsim's round-trip time is what
/// `cargo bench -p umad --bench ibsim_dr` measures).
const T: Duration = Duration::from_secs(30);
/// Long enough for a debug build on a loaded 2-core machine, short enough to keep the
/// lost-request tests quick (ibsim never answers those; nothing waits on time otherwise).
const LOST: Duration = Duration::from_millis(300);
const CHILD_TIMEOUT: Duration = Duration::from_secs(120);

/// True when `test` cannot run here: ibsim, umad2sim or one of `tools` is missing (reported
/// by testenv: a failure under CI=true, a `SKIPPED:` line otherwise).
fn skip(test: &str, tools: &[&str]) -> bool {
    !require_ibsim(test) || tools.iter().any(|t| testenv::require(test, [*t]).is_none())
}

/// Runs this test as a client of `sim` at `sim_host` and asserts it passed.
fn run_child(sim: &Ibsim, test: &str, sim_host: &str) {
    let cmd = sim.self_client(test, Some(sim_host)).expect("self client");
    let out = sim.run(cmd, CHILD_TIMEOUT).expect("child ran");
    assert!(
        one_test_passed(&out),
        "client of {test} failed: {}",
        out.describe()
    );
}

fn env_topology() -> Topology {
    let path = std::env::var("UMAD_TEST_NETFILE").expect("UMAD_TEST_NETFILE set by the parent");
    netfile::parse(&std::fs::read_to_string(path).expect("topology file")).expect("parses")
}

fn node_by_name(t: &Topology, name: &str) -> NodeId {
    t.nodes()
        .find(|(_, n)| n.description == name || node_id(n) == name)
        .map(|(id, _)| id)
        .unwrap_or_else(|| panic!("no node {name}"))
}

/// For every node reachable from `start`: a shortest directed path (output ports) and the
/// port it is entered by (for `start`, its first cabled port).
fn dr_paths(t: &Topology, start: NodeId) -> HashMap<NodeId, (Vec<u8>, u8)> {
    let first = t
        .node(start)
        .port_numbers()
        .find(|p| t.remote(PortRef::new(start, p.0)).is_some())
        .map_or(1, |p| p.0);
    let mut out = HashMap::from([(start, (Vec::new(), first))]);
    let mut q = VecDeque::from([start]);
    while let Some(id) = q.pop_front() {
        let n = t.node(id);
        // Only switches forward directed-route SMPs beyond themselves.
        if id != start && !n.is_switch() {
            continue;
        }
        let path = out[&id].0.clone();
        for p in n.port_numbers() {
            if id == start && p.0 != first {
                continue;
            }
            if let Some(r) = t.remote(PortRef::new(id, p.0))
                && !out.contains_key(&r.node)
            {
                let mut np = path.clone();
                np.push(p.0);
                out.insert(r.node, (np, r.port.0));
                q.push_back(r.node);
            }
        }
    }
    out
}

fn open_port() -> UmadPort {
    let port = UmadPort::open(SIM_DEVICE).expect("open umad0 through umad2sim");
    port.register_smp_agents().expect("register 0x81 and 0x01");
    port
}

fn assert_node(t: &Topology, id: NodeId, entered: u8, ni: &NodeInfo, what: &str) {
    let n = t.node(id);
    assert_eq!(ni.node_guid, n.node_guid, "{what}: node GUID");
    assert_eq!(ni.num_ports, n.num_ports(), "{what}: ports");
    assert_eq!(ni.is_switch(), n.is_switch(), "{what}: type");
    let port_guid = if n.is_switch() {
        n.node_guid
    } else {
        n.ports[usize::from(entered)].guid
    };
    assert_eq!(ni.port_guid, port_guid, "{what}: port GUID");
    assert_eq!(ni.local_port_num, entered, "{what}: local port");
}

#[test]
fn dr_nodeinfo_over_0_1_2_hops_and_local_identity() {
    const NAME: &str = "dr_nodeinfo_over_0_1_2_hops_and_local_identity";
    if child_role(NAME) {
        let t = env_topology();
        let me = node_by_name(&t, "Hca1");
        let port = open_port();

        // Local identity from the fabric (DR hop count 0) and from umad2sim's fake sysfs.
        let local = port.query_local(T).expect("local port");
        assert_eq!(local.node_guid(), Guid(0x10_0000));
        assert_eq!(local.port_guid(), Guid(0x10_0001));
        assert_eq!(local.port_num(), 1);
        assert_eq!(local.lid(), Lid(0), "no SM ran yet");
        let sys = umad::sysfs_port(0).expect("umad2sim fakes sysfs through open()");
        assert_eq!(sys.ibdev, "ibsim0");
        assert_eq!(sys.port, 1);
        assert_eq!(sys.node_guid, local.node_guid());
        assert_eq!(sys.port_guid, local.port_guid());

        // Hops 0, 1 and 2 answer as the topology file says.
        let paths = dr_paths(&t, me);
        let mut checked = 0;
        for (id, (path, entered)) in &paths {
            if path.len() > 2 {
                continue;
            }
            let ni: NodeInfo = port.get_dr(path, 0, T).expect("DR NodeInfo");
            assert_node(&t, *id, *entered, &ni, &format!("path {path:?}"));
            checked += 1;
        }
        // Hca1, Switch1, Hca3 and Switch2 (over either of the two links).
        assert_eq!(checked, 4);

        // IsSM: opening issm0 sets the capability bit (CapabilityMask bit 1).
        let cap = |p: &UmadPort| {
            p.get_dr::<PortInfo>(&[], 1, T)
                .expect("PortInfo")
                .capability_mask
        };
        assert_eq!(cap(&port) & 0x2, 0);
        port.claim_sm().expect("open issm0");
        assert_eq!(cap(&port) & 0x2, 0x2);

        // Pipelined requests through the reader thread, matched by the low 32 TID bits.
        let port = Arc::new(port);
        let reader = Reader::spawn(Arc::clone(&port)).expect("reader thread");
        let mut want = HashMap::new();
        for (id, (path, entered)) in &paths {
            let tid = 0xABCD_0000_0000_0000 | (0x100 + want.len() as u64);
            let smp = Smp::dr_get(tid, mad::AttributeId::NODE_INFO, 0, path).unwrap();
            port.send(&smp, Dest::directed()).expect("send");
            want.insert(tid as u32, (*id, *entered));
        }
        let total = want.len();
        while !want.is_empty() {
            let r = reader
                .recv_timeout(T)
                .expect("answer within the timeout")
                .expect("read ok");
            assert_eq!(r.status, RecvStatus::Ok);
            assert_eq!(r.slid, Lid::PERMISSIVE);
            let key = r.tid_key().expect("tid");
            let (id, entered) = want.remove(&key).expect("a TID we sent, once");
            let smp = r.into_smp().expect("an SMP");
            assert!(smp.is_response() && smp.direction);
            assert_node(&t, id, entered, &smp.attr().unwrap(), "pipelined");
        }
        assert_eq!(total, t.len(), "every node answered");
        reader.stop();
        assert!(port.counters().sent >= total as u64 + 8);
        return;
    }
    if skip(NAME, &[]) {
        return;
    }
    let sim = Ibsim::start(Path::new(NET_2SW2PATH4HCA), &[]).expect("ibsim");
    run_child(&sim, NAME, "Hca1");
    sim.stop();
}

#[test]
fn generated_fabric_every_node_by_directed_route() {
    const NAME: &str = "generated_fabric_every_node_by_directed_route";
    let topo = "ft2:4".parse::<GenSpec>().unwrap().generate().unwrap();
    let host = topo.cas().next().map(|(_, n)| node_id(n)).unwrap();
    if child_role(NAME) {
        let t = env_topology();
        assert_eq!(t, topo, "the written file reads back as generated");
        let me = node_by_name(&t, &host);
        let port = open_port();
        let paths = dr_paths(&t, me);
        assert_eq!(paths.len(), t.len(), "connected fabric");
        for (id, (path, entered)) in &paths {
            let ni: NodeInfo = port.get_dr(path, 0, T).expect("DR NodeInfo");
            assert_node(&t, *id, *entered, &ni, &format!("path {path:?}"));
        }
        return;
    }
    if skip(NAME, &["ibnetdiscover"]) {
        return;
    }
    let sim = Ibsim::start_topology(&topo).expect("ibsim");
    run_child(&sim, NAME, &host);
    // The same fabric through infiniband-diags: every node GUID appears in ibnetdiscover.
    let out = sim
        .run_tool("ibnetdiscover", &[], Some(&host), CHILD_TIMEOUT)
        .expect("ibnetdiscover ran");
    assert!(out.success(), "{}", out.describe());
    for (_, n) in topo.nodes() {
        let g = format!("{:016x}", n.node_guid.0);
        assert!(
            out.stdout.contains(&g),
            "ibnetdiscover misses {g}: {}",
            out.stdout
        );
    }
    sim.stop();
}

#[test]
fn lid_routed_get_after_opensm() {
    const NAME: &str = "lid_routed_get_after_opensm";
    if child_role(NAME) {
        let t = env_topology();
        let me = node_by_name(&t, "Hca2");
        let port = open_port();
        let local = port.query_local(T).expect("local");
        assert_ne!(local.lid(), Lid(0), "OpenSM gave us a LID");
        assert_ne!(local.sm_lid(), Lid(0), "and its own as MasterSMLID");
        // umad2sim's sysfs is a snapshot taken when we attached (after OpenSM here).
        let sys = umad::sysfs_port(0).expect("sysfs");
        assert_eq!((sys.lid, sys.sm_lid), (local.lid(), local.sm_lid()));
        let sm_node = node_by_name(&t, "Hca1");
        let mut seen = 0;
        for (id, (path, entered)) in dr_paths(&t, me) {
            let n = t.node(id);
            let pnum = if n.is_switch() { 0 } else { entered };
            let pi: PortInfo = port.get_dr(&path, u32::from(pnum), T).expect("DR PortInfo");
            assert_ne!(pi.lid, Lid(0), "{} has a LID", n.description);
            assert_eq!(pi.port_state, 4, "{} is Active", n.description);
            if id == sm_node {
                assert_eq!(pi.lid, local.sm_lid(), "MasterSMLID is OpenSM's port");
            }
            // The same node by LID routing through the LFTs OpenSM wrote.
            let req = Smp::lid_get(port.next_tid(), mad::AttributeId::NODE_INFO, 0);
            let r = port
                .request(&req, Dest::smp_to(pi.lid), T)
                .expect("LID-routed NodeInfo");
            assert_eq!(
                r.slid, pi.lid,
                "a LID-routed response comes from the LID asked"
            );
            let ni: NodeInfo = r.into_smp().unwrap().attr().unwrap();
            // A LID-routed SMP reaches a switch at its management port 0 (ibsim reports
            // LocalPortNum 0 then); a CA at the port that owns the LID.
            let via = if n.is_switch() { 0 } else { entered };
            assert_eq!(ni.local_port_num, via, "lid {}: local port", pi.lid);
            assert_node(
                &t,
                id,
                entered,
                &NodeInfo {
                    local_port_num: entered,
                    ..ni
                },
                &format!("lid {}", pi.lid),
            );
            seen += 1;
        }
        assert_eq!(seen, t.len());
        return;
    }
    if skip(NAME, &["opensm"]) {
        return;
    }
    let sim = Ibsim::start(Path::new(NET_2SW2PATH4HCA), &[]).expect("ibsim");
    let osm = sim
        .run_opensm(Some("Hca1"), CHILD_TIMEOUT)
        .expect("opensm ran");
    assert!(osm.success(), "opensm -o: {}", osm.describe());
    run_child(&sim, NAME, "Hca2");
    sim.stop();
}

/// Keys written to Hca2's port 1, block 0.
fn test_pkeys() -> PKeyTable {
    let mut keys = [PKey(0); 32];
    keys[0] = PKey(0xFFFF);
    keys[1] = PKey(0x8001);
    keys[2] = PKey(0x0002);
    keys[5] = PKey(0x7FFF);
    keys[31] = PKey(0x9234);
    PKeyTable { keys }
}

#[test]
fn pkey_table_set_reads_back_with_smpquery() {
    const NAME: &str = "pkey_table_set_reads_back_with_smpquery";
    // Hca1 -1-> Switch1 -3-> Switch2 -1-> Hca2.
    const PATH: [u8; 3] = [1, 3, 1];
    if child_role(NAME) {
        let port = open_port();
        let before: PKeyTable = port.get_dr(&PATH, 0, T).expect("Get P_KeyTable");
        assert_ne!(before, test_pkeys());
        let answered = port
            .set_dr(&PATH, 0, &test_pkeys(), T)
            .expect("Set P_KeyTable");
        assert_eq!(answered, test_pkeys());
        let after: PKeyTable = port.get_dr(&PATH, 0, T).expect("Get P_KeyTable");
        assert_eq!(after, test_pkeys());
        return;
    }
    if skip(NAME, &["smpquery"]) {
        return;
    }
    let sim = Ibsim::start(Path::new(NET_2SW2PATH4HCA), &[]).expect("ibsim");
    run_child(&sim, NAME, "Hca1");
    let out = sim
        .run_tool(
            "smpquery",
            &["-D", "pkeys", "0,1,3,1", "1"],
            Some("Hca1"),
            CHILD_TIMEOUT,
        )
        .expect("smpquery ran");
    assert!(out.success(), "{}", out.describe());
    // smpquery prints 8 keys a line: "   0: 0xffff 0x8001 ...".
    let mut read = Vec::new();
    for line in out.stdout.lines() {
        let Some((idx, rest)) = line.split_once(':') else {
            continue;
        };
        let Ok(idx) = idx.trim().parse::<usize>() else {
            continue;
        };
        for (i, w) in rest.split_whitespace().enumerate() {
            let v = u16::from_str_radix(w.trim_start_matches("0x"), 16).expect("hex key");
            read.push((idx + i, PKey(v)));
        }
    }
    for (i, k) in test_pkeys().keys.iter().enumerate() {
        assert!(
            read.contains(&(i, *k)),
            "entry {i} {k:?} not in smpquery output:\n{}",
            out.stdout
        );
    }
    sim.stop();
}

#[test]
fn misuse_and_lost_requests_are_errors_not_hangs() {
    const NAME: &str = "misuse_and_lost_requests_are_errors_not_hangs";
    if child_role(NAME) {
        let port = UmadPort::open(SIM_DEVICE).expect("open");
        let get = Smp::dr_get(1, mad::AttributeId::NODE_INFO, 0, &[]).unwrap();
        assert!(matches!(
            port.send(&get, Dest::directed()),
            Err(UmadError::NotRegistered(0x81))
        ));
        port.register_smp_agents().unwrap();
        // A DR SMP with permissive DrSLID must go to LID 0xFFFF; LID 0 is nobody; QP1 is GSI.
        assert!(matches!(
            port.send(&get, Dest::smp_to(Lid(1))),
            Err(UmadError::BadDest(_))
        ));
        let lid_get = Smp::lid_get(2, mad::AttributeId::NODE_INFO, 0);
        assert!(matches!(
            port.send(&lid_get, Dest::smp_to(Lid(0))),
            Err(UmadError::BadDest(_))
        ));
        assert!(matches!(
            port.send(&lid_get, Dest::gsi_to(Lid(1))),
            Err(UmadError::BadDest(_))
        ));
        // Out of an uncabled port, and out of a port the switch does not have: never answered.
        for path in [&[2u8][..], &[1, 9]] {
            match port.get_dr::<NodeInfo>(path, 0, LOST) {
                Err(UmadError::Timeout { .. }) => {}
                other => panic!("path {path:?}: expected a timeout, got {other:?}"),
            }
        }
        // Nothing stray is left over, and the port still works.
        assert!(port.recv(Duration::ZERO).unwrap().is_none());
        let ni: NodeInfo = port.get_dr(&[1], 0, T).expect("still works");
        assert_eq!(ni.node_guid, Guid(0x20_0000));
        return;
    }
    if skip(NAME, &[]) {
        return;
    }
    let sim = Ibsim::start(Path::new(NET_2SW2PATH4HCA), &[]).expect("ibsim");
    run_child(&sim, NAME, "Hca1");
    sim.stop();
}

#[test]
fn umad_probe_prints_local_port_and_remote_nodeinfo() {
    if skip("umad_probe_prints_local_port_and_remote_nodeinfo", &[]) {
        return;
    }
    let sim = Ibsim::start(Path::new(NET_2SW2PATH4HCA), &[]).expect("ibsim");
    let probe = env!("CARGO_BIN_EXE_umad-probe");
    let mut c = sim.client(probe, None);
    c.args(["--sim-host", "Hca3", "--port", "1", "0,1,3,2"]);
    let out = sim.run(c, CHILD_TIMEOUT).expect("probe ran");
    assert!(out.success(), "{}", out.describe());
    // Hca3 is the third HCA: GUID 0x100006, port GUID 0x100007; 0,1,3,2 reaches Hca4.
    assert!(out.stdout.contains("local: device /dev/infiniband/umad0 node_guid 0x0000000000100006 port_guid 0x0000000000100007 port 1 lid 0"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("sysfs: ibdev ibsim0 port 1 node_guid 0x0000000000100006"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("nodeinfo 0,1,3,2: type CA ports 2 node_guid 0x0000000000100009 port_guid 0x000000000010000a"), "{}", out.stdout);

    // Pipelined timing mode: every request answered.
    let mut c = sim.client(probe, None);
    c.args([
        "--sim-host",
        "Hca3",
        "--repeat",
        "500",
        "--window",
        "16",
        "0,1,3",
    ]);
    let out = sim.run(c, CHILD_TIMEOUT).expect("probe ran");
    assert!(out.success(), "{}", out.describe());
    assert!(
        out.stdout.contains("timed: 500 NodeInfo Gets, window 16,")
            && out.stdout.contains(" 0 lost"),
        "{}",
        out.stdout
    );

    let mut c = sim.client(probe, None);
    c.args(["--sim-host", "Hca3", "--port", "2"]);
    let out = sim.run(c, CHILD_TIMEOUT).expect("probe ran");
    assert!(
        !out.success() && out.stderr.contains("is port 1, not port 2"),
        "{}",
        out.describe()
    );
    sim.stop();
}

#[test]
fn trap_128_reaches_the_sm_port_on_the_lid_routed_agent() {
    const NAME: &str = "trap_128_reaches_the_sm_port_on_the_lid_routed_agent";
    if child_role(NAME) {
        let console = std::env::var(umad::testing::CONSOLE_ENV).expect("console FIFO");
        let port = Arc::new(open_port());
        // ibsim hands unsolicited QP0 MADs (traps, SMInfo from other SMs) only to a client
        // that is an SM: opening issm0 makes us one.
        port.claim_sm().expect("issm0");
        let local = port.query_local(T).expect("local");
        assert_eq!(local.lid(), local.sm_lid(), "OpenSM ran on this port");
        let sw_lid = port
            .get_dr::<PortInfo>(&[1], 0, T)
            .expect("Switch1 PortInfo")
            .lid;
        let reader = Reader::spawn(Arc::clone(&port)).expect("reader");
        umad::testing::write_console(Path::new(&console), "Unlink \"Switch1\"[2]")
            .expect("console");
        // Opening issm0 changed our CapabilityMask: our own port reports that with trap
        // 144 (to itself, the master). Then Switch1 reports the unlinked port with trap 128.
        let mut seen = Vec::new();
        while !seen.contains(&128) {
            assert!(seen.len() < 10, "no trap 128 among {seen:?}");
            let r = reader.recv_timeout(T).expect("a trap").expect("read ok");
            assert_eq!(r.status, RecvStatus::Ok);
            let slid = r.slid;
            let smp = r.into_smp().expect("an SMP");
            assert_eq!(smp.class, mad::MgmtClass::SUBN_LID_ROUTED);
            assert_eq!(smp.method, mad::Method::TRAP);
            let notice: mad::Notice = smp.attr().expect("a Notice");
            assert!(notice.is_generic);
            let from = match notice.trap_number_or_device_id {
                128 => sw_lid,
                144 => local.lid(),
                other => panic!("unexpected trap {other}"),
            };
            let trap = notice.trap_number_or_device_id;
            assert_eq!(notice.issuer_lid, from, "IssuerLID of trap {trap}");
            assert_eq!(slid, from, "header source LID of trap {trap}");
            seen.push(notice.trap_number_or_device_id);
            // Repress it, as an SM does (no response expected: sent without kernel timeout).
            let mut repress = smp.clone();
            repress.method = mad::Method::TRAP_REPRESS;
            port.send(&repress, Dest::smp_to(from))
                .expect("TrapRepress");
        }
        reader.stop();
        return;
    }
    if skip(NAME, &["opensm"]) {
        return;
    }
    let sim = Ibsim::start_with_console(Path::new(NET_2SW2PATH4HCA), &[]).expect("ibsim");
    let osm = sim
        .run_opensm(Some("Hca1"), CHILD_TIMEOUT)
        .expect("opensm ran");
    assert!(osm.success(), "opensm -o: {}", osm.describe());
    run_child(&sim, NAME, "Hca1");
    sim.stop();
}

#[test]
fn torus_every_node_pipelined_through_a_batching_reader_thread() {
    const NAME: &str = "torus_every_node_pipelined_through_a_batching_reader_thread";
    const WINDOW: usize = 32;
    let topo = "torus:4x4x2"
        .parse::<GenSpec>()
        .unwrap()
        .generate()
        .unwrap();
    let host = topo.cas().next().map(|(_, n)| node_id(n)).unwrap();
    if child_role(NAME) {
        let t = env_topology();
        let me = node_by_name(&t, &host);
        let port = Arc::new(open_port());
        let (tx, rx) = std::sync::mpsc::channel();
        let reader = umad::ReaderThread::spawn(Arc::clone(&port), 16, move |b| tx.send(b).is_ok())
            .expect("reader thread");
        let paths: Vec<_> = dr_paths(&t, me).into_iter().collect();
        assert_eq!(paths.len(), t.len());
        let mut pending: HashMap<u32, (NodeId, u8)> = HashMap::new();
        let (mut next, mut done, mut batches) = (0usize, 0usize, 0usize);
        while done < paths.len() {
            while next < paths.len() && pending.len() < WINDOW {
                let (id, (path, entered)) = &paths[next];
                // High TID bits that neither the kernel nor umad2sim keep.
                let tid = (0xFEED_u64 << 48) | (0x1000 + next as u64);
                let smp = Smp::dr_get(tid, mad::AttributeId::NODE_INFO, 0, path).unwrap();
                port.send(&smp, Dest::directed()).expect("send");
                pending.insert(tid as u32, (*id, *entered));
                next += 1;
            }
            let batch = rx
                .recv_timeout(T)
                .expect("a batch in time")
                .expect("read ok");
            assert!(!batch.is_empty() && batch.len() <= 16);
            batches += 1;
            for r in batch {
                let (id, entered) = pending
                    .remove(&r.tid_key().unwrap())
                    .expect("one answer per TID");
                let ni: NodeInfo = r.into_smp().unwrap().attr().unwrap();
                assert_node(&t, id, entered, &ni, "pipelined");
                done += 1;
            }
        }
        assert!(batches <= done);
        reader.stop();
        return;
    }
    if skip(NAME, &[]) {
        return;
    }
    let sim = Ibsim::start_topology(&topo).expect("ibsim");
    run_child(&sim, NAME, &host);
    sim.stop();
}
