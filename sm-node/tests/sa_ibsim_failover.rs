//! SA state across a failover on ibsim: three `sm-node` replicas (a Raft cluster) at three
//! CAs; a fourth CA joins the IPoIB broadcast group through the master's SA (a client of
//! this test binary re-executed under umad2sim, with the `sa` crate's SaClient over umad);
//! `saquery -m` lists it; the master is killed with SIGKILL; the new master answers
//! `saquery -g`/`-m` with the same group, MLID and member (it loaded the replicated SA
//! state), the switches' MFTs (`ibroute -M`) are what they were, and `smctl sa members` on a
//! surviving replica agrees. When ibsim or the diags are not installed the test fails under
//! `CI=true` and prints `SKIPPED: ...` otherwise (testenv).

mod common;
mod ibsim_common;

use ibsim_common::*;
use mad::Method;
use mad::sa::{Gid, McMemberRecord, SaMad, join_state};
use sa::SaClient;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};
use umad::testing::{Ibsim, NET_2SW2PATH4HCA, SIM_DEVICE, child_role, one_test_passed};
use umad::{Dest, MethodMask, ReceivedMad, UmadPort};

const NAME: &str = "sa_state_survives_a_failover_on_ibsim";
/// The replicas' SM port GUIDs (Hca1..Hca3 of net.2sw2path4hca), by index.
const REPLICA_PORTS: [u64; 3] = [0x100001, 0x100004, 0x100007];

/// Three replicas, killed by PID on drop.
struct Replicas(Vec<Option<Child>>);

impl Drop for Replicas {
    fn drop(&mut self) {
        for c in self.0.iter_mut().flatten() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The join, in the child: SaClient builds it, umad carries it to the SM's LID (QP1).
fn child_join() {
    let sm_lid: u16 = std::env::var("SA_TEST_SM_LID").unwrap().parse().unwrap();
    let guid = u64::from_str_radix(&std::env::var("SA_TEST_PORT_GUID").unwrap(), 16).unwrap();
    let port = UmadPort::open(SIM_DEVICE).expect("umad");
    port.register(mad::MgmtClass::SUBN_ADM, 1, MethodMask::NONE, 2)
        .expect("SA agent");
    let rec = McMemberRecord {
        mgid: Gid::ipoib_broadcast(2, 0x7FFF),
        port_gid: Gid::new(0xfe80_0000_0000_0000, guid),
        join_state: join_state::FULL,
        ..McMemberRecord::default()
    };
    let mask =
        McMemberRecord::CM_MGID | McMemberRecord::CM_PORT_GID | McMemberRecord::CM_JOIN_STATE;
    let mut c = SaClient::new(0x4000, 0);
    let (m, mut t) = c.query(Method::SET, mask, &rec);
    port.send_mad(&m.encode(), Dest::gsi_to(fabric::Lid(sm_lid)))
        .expect("send the join");
    let end = Instant::now() + Duration::from_secs(20);
    while Instant::now() < end {
        let Some(r) = port.recv(Duration::from_millis(200)).expect("recv") else {
            continue;
        };
        let ReceivedMad::Other { class: 3, bytes } = r.mad else {
            continue;
        };
        let a = SaMad::decode_slice(&bytes).expect("an SA MAD");
        if !t.owns(&a) {
            continue;
        }
        let done = t.handle(&a).unwrap().done.expect("one MAD");
        assert_eq!(done.status(), 0, "join refused");
        let got: Vec<McMemberRecord> = done.records().unwrap();
        assert_eq!(got[0].mlid, fabric::Lid(0xC000));
        println!("joined MLID {:#x}", got[0].mlid.0);
        return;
    }
    panic!("no answer to the join");
}

fn master_of(sim: &Ibsim) -> Option<(u16, u64)> {
    let out = sim
        .run_tool("sminfo", &[], Some("Hca4"), TOOL_TIMEOUT)
        .ok()?;
    if !out.success() || !out.stdout.contains("SMINFO_MASTER") {
        return None;
    }
    let (lid, guid, _, _) = parse_sminfo(&out.stdout);
    Some((lid, guid))
}

/// Replica `i`'s log (index 0..3).
fn log_path(sim: &Ibsim, i: usize) -> PathBuf {
    sim.dir().join(format!("r{}", i + 1)).join("log")
}

fn log_len(p: &Path) -> u64 {
    std::fs::metadata(p).map_or(0, |m| m.len())
}

/// Waits (bounded) until the log at `p` holds at least `n` completed sweeps (heavy or
/// light) after byte `from`. Sweeps run one after another, each from idle: when the n-th
/// has completed, whatever was under way when the first one started (a multicast pass for
/// groups just handed over, the programming of a join) has finished too.
fn wait_sweeps(p: &Path, from: u64, n: usize) {
    let end = Instant::now() + SM_DEADLINE;
    loop {
        let text = std::fs::read(p).unwrap_or_default();
        let tail = String::from_utf8_lossy(&text[(from as usize).min(text.len())..]).to_string();
        let done = tail.matches("SWEEP COMPLETE").count();
        if done >= n {
            return;
        }
        assert!(
            Instant::now() < end,
            "{}: {done} of {n} sweeps completed after byte {from}:\n{tail}",
            p.display()
        );
        // Polling a log file for an event, not waiting for time to pass.
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn member_gids(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("PortGid"))
        .map(|v| v.trim_start_matches('.').trim().to_string())
        .collect()
}

#[test]
fn sa_state_survives_a_failover_on_ibsim() {
    if child_role(NAME) {
        child_join();
        return;
    }
    if !ready("sa_state_survives_a_failover_on_ibsim", &["saquery"]) {
        return;
    }
    let smctl_bin = common::smctl::bin();
    let sim = Ibsim::start(Path::new(NET_2SW2PATH4HCA), &[]).expect("ibsim");
    let base = 20000 + (std::process::id() % 2000) as u16 * 3;
    let peers: String = (1..=3)
        .map(|i| format!("{i}=127.0.0.1:{}", base + i))
        .collect::<Vec<_>>()
        .join(",");
    let mut reps = Replicas(Vec::new());
    for i in 1..=3u16 {
        let dir = sim.dir().join(format!("r{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        let log = std::fs::File::create(dir.join("log")).unwrap();
        let child = sim
            .client(env!("CARGO_BIN_EXE_sm-node"), Some(&format!("Hca{i}")))
            .current_dir(&dir)
            .args(["--id", &i.to_string(), "--peers", &peers])
            .args(["--initial-cluster-state", "new", "--data-dir"])
            .arg(dir.join("data"))
            .args([
                "--fabric",
                "umad:/dev/infiniband/umad0",
                "--sweep-interval",
                "1",
                "--insecure-loopback",
            ])
            // The sweep lines the test waits for: heavy sweeps at info, light sweeps that
            // find no change at debug (the master's module).
            .env("RUST_LOG", "info,sm_node::master=debug")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn sm-node");
        reps.0.push(Some(child));
    }
    // sminfo names a master as soon as it is MASTER; its first heavy sweep, the SA state it
    // loaded at start and any multicast pass that set off are done once a second sweep has
    // completed in its log after `from` (the log's length per replica when the wait began).
    let wait_master = |not: Option<u64>, from: [u64; 3]| -> (u16, u64) {
        let end = Instant::now() + SM_DEADLINE;
        while Instant::now() < end {
            if let Some(m) = master_of(&sim)
                && Some(m.1) != not
            {
                let idx = REPLICA_PORTS
                    .iter()
                    .position(|g| *g == m.1)
                    .expect("the master is one of the replicas");
                wait_sweeps(&log_path(&sim, idx), from[idx], 2);
                return m;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("no master");
    };
    let (sm_lid, sm_guid) = wait_master(None, [0; 3]);
    let master_log = log_path(
        &sim,
        REPLICA_PORTS.iter().position(|g| *g == sm_guid).unwrap(),
    );
    // Hca4's port GUID (net.2sw2path4hca: 0x10000a).
    let topo = fabric::netfile::parse(&tool(&sim, "Hca4", "ibnetdiscover", &[])).unwrap();
    let hca4 = topo
        .nodes()
        .find(|(_, n)| n.description == "Hca4")
        .map(|(_, n)| n.ports[1].guid)
        .unwrap();
    let out = sim
        .run(
            {
                let mut c = sim.self_client(NAME, Some("Hca4")).unwrap();
                c.env("SA_TEST_SM_LID", sm_lid.to_string())
                    .env("SA_TEST_PORT_GUID", format!("{:x}", hca4.0));
                c
            },
            TOOL_TIMEOUT,
        )
        .expect("join client");
    assert!(one_test_passed(&out), "join client:\n{}", out.describe());
    // The MFTs the master programmed for the group, as the switches hold them: the join was
    // answered once committed and handed to the sweeper, whose pass for it has finished when
    // two more sweeps have completed.
    wait_sweeps(&master_log, log_len(&master_log), 2);
    let mfts = || -> String {
        parse_ibswitches(&tool(&sim, "Hca3", "ibswitches", &[]))
            .iter()
            .map(|l| tool(&sim, "Hca3", "ibroute", &["-M", &l.to_string()]))
            .collect()
    };
    let mft_before = mfts();
    println!("{mft_before}");
    assert!(
        mft_before.contains("0xc000"),
        "no MFT entry for the group:\n{mft_before}"
    );
    let gid = format!("fe80::{:x}:{:x}", hca4.0 >> 16, hca4.0 & 0xFFFF);
    let before = tool(&sim, "Hca3", "saquery", &["-m"]);
    assert_eq!(member_gids(&before), vec![gid.clone()], "{before}");

    // SIGKILL the master's replica (the one at the SM port sminfo names).
    let idx = REPLICA_PORTS
        .iter()
        .position(|g| *g == sm_guid)
        .expect("the master is one of the replicas");
    if let Some(mut c) = reps.0[idx].take() {
        let _ = c.kill();
        let _ = c.wait();
    }
    let survivor = base + if idx == 0 { 2 } else { 1 };
    let from = [0, 1, 2].map(|i| log_len(&log_path(&sim, i)));
    let (new_lid, new_guid) = wait_master(Some(sm_guid), from);
    assert_ne!(new_guid, sm_guid);
    let g = tool(&sim, "Hca3", "saquery", &["-g"]);
    assert!(
        g.contains("ff12:401b:ffff::ffff:ffff") && g.contains("0xC000"),
        "{g}"
    );
    assert_eq!(mfts(), mft_before, "the MFTs changed across the failover");
    let after = tool(&sim, "Hca3", "saquery", &["-m"]);
    assert_eq!(member_gids(&after), vec![gid], "after failover:\n{after}");
    let smir = tool(&sim, "Hca3", "saquery", &["SMIR"]);
    assert!(
        smir.contains(&format!("LID...................{new_lid}")),
        "{smir}"
    );
    // Every replica's admin API shows the member.
    let smctl = std::process::Command::new(smctl_bin)
        .args([
            "--server",
            &format!("127.0.0.1:{survivor}"),
            "sa",
            "members",
        ])
        .output()
        .expect("smctl");
    let text = String::from_utf8_lossy(&smctl.stdout);
    assert!(
        text.contains("ff12:401b:ffff::ffff:ffff") && text.contains("full"),
        "smctl sa members:\n{text}{}",
        String::from_utf8_lossy(&smctl.stderr)
    );
    drop(reps);
}
