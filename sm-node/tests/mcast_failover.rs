//! Multicast across a failover, on three sm-node processes over fabric-simd: hosts join the
//! IPoIB broadcast group through the master's SA (MCMemberRecord Set as GMPs through the
//! fabric), the master programs the group's MFTs, then is killed with SIGKILL; the new master
//! (seeded with the replicated MFTs and SA state) writes no MFT block, and every member still
//! reaches every other member exactly once through the MLID.
//!
//! The SA is reached over the fabric-simd transport (GMP frames). Every wait is a failure
//! bound only; the check that the new master wrote no MFT block waits for the event that
//! would have written them (`LocalCluster::heavy_sweeps_since`), never for time to pass.

use fabric::{Guid, Lid, PKey};
use fabric_sim::client::SimClient;
use mad::Method;
use mad::sa::{Gid, McMemberRecord, SaMad, join_state};
use sa::SaClient;
use sm_node::cluster::harness::{LocalCluster, ca_ports};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

const BOUND: Duration = Duration::from_secs(60);
const MFT: u16 = 0x1B;
const PREFIX: u64 = 0xfe80_0000_0000_0000;

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_sm-node"))
}

fn dir(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("smnode-mcast-{name}-{}", std::process::id()))
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Joins `member` to `mgid` through the SA at `sm_lid`: one SA exchange over a fabric-simd
/// client connection attached at the member's port. The answer is read on a thread and
/// waited for with a bound (a missing answer fails the test, never hangs it).
fn join(socket: &std::path::Path, sm_lid: Lid, member: Guid, mgid: Gid, tid: u64) -> (u16, Lid) {
    let mut c = SimClient::connect(socket).expect("connect to fabric-simd");
    c.attach_client(&format!("{:#018x}", member.0))
        .expect("attach a client");
    let mut sa = SaClient::new(tid, 0);
    let rec = McMemberRecord {
        mgid,
        port_gid: Gid::new(PREFIX, member.0),
        join_state: join_state::FULL,
        ..McMemberRecord::default()
    };
    let mask =
        McMemberRecord::CM_MGID | McMemberRecord::CM_PORT_GID | McMemberRecord::CM_JOIN_STATE;
    let (m, mut t) = sa.query(Method::SET, mask, &rec);
    c.send_gmp(sm_lid, PKey(0xFFFF), &m.encode()).unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        loop {
            let Ok(g) = c.recv_gmp() else { return };
            let Ok(a) = SaMad::decode(&g.mad) else {
                continue;
            };
            match t.handle(&a) {
                Ok(st) => {
                    if let Some(done) = st.done {
                        let mlid = done
                            .records::<McMemberRecord>()
                            .ok()
                            .and_then(|r| r.first().map(|x| x.mlid))
                            .unwrap_or(Lid(0));
                        let _ = tx.send((done.status(), mlid));
                        return;
                    }
                }
                Err(_) => continue,
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("no SA answer to the join within 20 s")
}

/// Receivers of a packet each member sends to `mlid`: true when every member reaches every
/// other member exactly once and nobody else.
fn delivery_ok(c: &LocalCluster, mlid: Lid, members: &BTreeSet<Guid>) -> bool {
    c.with_sim(|s| {
        members.iter().all(|&m| {
            let d = s.deliver_mcast(m, mlid, PKey(0xFFFF));
            let want: BTreeSet<Guid> = members.iter().copied().filter(|&x| x != m).collect();
            d.exactly_once() && d.receivers().collect::<BTreeSet<_>>() == want
        })
    })
}

#[test]
fn multicast_group_survives_a_failover_with_no_mft_rewrite() {
    let d = dir("failover");
    let mut c = LocalCluster::new(&bin(), "ft2:8", 3, &d).unwrap();
    c.start_all().unwrap();
    let socket = d.join("simd.sock");
    let cas = ca_ports(&c.topo);
    rt().block_on(async {
        let st = c.wait_serving(0, BOUND).await.unwrap();
        let leader = st.leader_id;
        let sm_port = c.replicas[(leader - 1) as usize].port_guid;
        let sm_lid = c.with_sim(|s| {
            let (n, p) = s.port_by_guid(sm_port).unwrap();
            s.port_info(n, p).unwrap().lid
        });
        // Hosts other than the replicas' ports join the default partition's broadcast group.
        let bcast = Gid::ipoib_broadcast(2, 0x7FFF);
        let members: BTreeSet<Guid> = cas[3..9].iter().map(|x| x.2).collect();
        let mut mlids = BTreeSet::new();
        for (k, &m) in members.iter().enumerate() {
            let s = socket.clone();
            let (status, mlid) =
                tokio::task::spawn_blocking(move || join(&s, sm_lid, m, bcast, 0x100 + k as u64))
                    .await
                    .unwrap();
            assert_eq!(status, 0, "join of {m} refused");
            mlids.insert(mlid);
        }
        // One group, one multicast LID, as the SA gave it.
        assert_eq!(mlids.len(), 1, "{mlids:?}");
        let mlid = *mlids.iter().next().unwrap();
        assert!(mlid.0 >= 0xC000, "{mlid:?}");
        let t0 = Instant::now();
        while !delivery_ok(&c, mlid, &members) {
            assert!(t0.elapsed() < BOUND, "the group's MFTs never delivered");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // Let the master record everything (no intent pending, all applied).
        c.settle(leader, BOUND).await.unwrap();
        c.take_sets();
        let (st, from) = c.kill9_leader(leader, BOUND).await.unwrap();
        // The new master loaded the replicated SA state when it started and handed the groups
        // to its sweeper; whatever that sets off (the groups' planning in its first heavy
        // sweep, a multicast pass right after it) runs before any later sweep can start. So
        // ask for one more heavy sweep and wait until it has completed (its log's second
        // HEAVY SWEEP COMPLETE since the kill): by then every MFT Set of the takeover has
        // reached the fabric, and the triggered sweep plans the MFTs once more itself.
        let new = st.leader_id;
        c.wait_status(new, BOUND, |s| {
            !s.intent_pending && s.applied_index == s.commit_index
        })
        .await
        .unwrap();
        let from_new = from[(new - 1) as usize];
        assert!(
            c.heavy_sweeps_since(new, from_new) >= 1,
            "wait_serving saw a sweep"
        );
        c.admin(new)
            .unwrap()
            .trigger_sweep(proto::admin::TriggerSweepRequest { heavy: true })
            .await
            .unwrap();
        let t0 = Instant::now();
        while c.heavy_sweeps_since(new, from_new) < 2 {
            assert!(
                t0.elapsed() < BOUND,
                "the requested heavy sweep never completed"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let sets = c.take_sets();
        let mft: Vec<_> = sets.iter().filter(|s| s.attr == MFT).collect();
        assert!(
            mft.is_empty(),
            "the new master rewrote {} MFT blocks",
            mft.len()
        );
        assert!(
            delivery_ok(&c, mlid, &members),
            "delivery lost after the failover"
        );
        // The new master knows the group: one more host joins through its SA, only blocks
        // of the group's MLID are written, and the new member is reached too.
        let new_sm = c.replicas[(st.leader_id - 1) as usize].port_guid;
        let new_lid = c.with_sim(|s| {
            let (n, p) = s.port_by_guid(new_sm).unwrap();
            s.port_info(n, p).unwrap().lid
        });
        let late = cas[9].2;
        let s = socket.clone();
        let (status, late_mlid) =
            tokio::task::spawn_blocking(move || join(&s, new_lid, late, bcast, 0x200))
                .await
                .unwrap();
        assert_eq!((status, late_mlid), (0, mlid));
        let mut all = members.clone();
        all.insert(late);
        let t0 = Instant::now();
        while !delivery_ok(&c, mlid, &all) {
            assert!(t0.elapsed() < BOUND, "the late member is never reached");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let sets = c.take_sets();
        let block = u32::from((mlid.0 - 0xC000) / 32);
        let mft: Vec<_> = sets.iter().filter(|s| s.attr == MFT).collect();
        assert!(!mft.is_empty(), "the late join wrote no MFT block");
        assert!(
            mft.iter().all(|s| s.attr_mod & 0x1FF == block),
            "a block of another MLID was written: {mft:?}"
        );
    });
    drop(c);
    if std::env::var_os("SMNODE_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&d);
    }
}
