//! The daemon end to end on the in-process simulator: MasterActor + RoutingPool + the sim
//! transport bring fabrics to SUBNET UP; delivery follows the partitions; restarts keep LIDs.

mod common;

use common::*;
use fabric::{Guid, Lid, PKey, Topology};
use sm_node::config::NodeConfig;
use sm_node::config::SweeperConfigOf as _;
use sm_node::daemon;
use sm_node::master::{GetStatus, Shutdown};
use sm_node::milestone::MilestoneKind;
use sm_node::transport::sim::{Pace, SimHandle};
use std::path::Path;

/// Starts a master on `h` at `port`, waits for the end of the first heavy sweep, shuts the
/// master down (transport detached when this returns) and gives back the milestones.
async fn run_once(
    cfg: &NodeConfig,
    h: &SimHandle,
    port: Guid,
) -> Vec<sm_node::milestone::Milestone> {
    let attached = h.attach(port, Pace::Fast).unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let master = daemon::start_master(cfg, attached, vec![tx]).unwrap();
    let mut seen = wait_subnet_up(&mut rx).await;
    let st = master.send(GetStatus).await.unwrap();
    assert!(st.subnet_up);
    assert_ne!(st.sm_lid.0, 0);
    master.send(Shutdown).await.unwrap();
    seen.extend(
        wait_for(&mut rx, "Stopped", |k| {
            matches!(k, MilestoneKind::Stopped { .. })
        })
        .await,
    );
    seen
}

fn sim(spec: &str, seed: u64) -> (SimHandle, Topology) {
    daemon::new_sim(spec, seed).unwrap()
}

#[test]
fn torus_comes_up_and_every_pair_delivers() {
    actix_rt::System::new().block_on(async {
        let (h, t) = sim("torus:4x4x3", 2);
        let cfg = cfg("sim:torus:4x4x3", 2);
        let seen = run_once(&cfg, &h, ca_ports(&t)[0].2).await;
        check_programmed(&h, &t);
        let (ok, blocked) = check_delivery(&h, &t, all_full, PKey(0xFFFF));
        assert_eq!((ok, blocked), (t.cas().count() * (t.cas().count() - 1), 0));
        // The pool routed it (torus: fat-tree refuses, another engine takes it).
        assert!(seen.iter().any(|m| matches!(
            m.kind,
            MilestoneKind::RoutingDone { engine, .. } if engine != "ftree"
        )));
    });
}

/// Two tenants: even CA ports in A (0x0001), odd ones in B (0x0002); Default limited for
/// everyone but the SM's port.
fn two_tenants(t: &Topology) -> (String, Vec<Guid>, Vec<Guid>) {
    let cas = ca_ports(t);
    let a: Vec<_> = cas.iter().step_by(2).map(|c| c.2).collect();
    let b: Vec<_> = cas.iter().skip(1).step_by(2).map(|c| c.2).collect();
    let list = |v: &[Guid]| {
        v.iter()
            .map(|g| format!("0x{:016x}=full", g.0))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let conf = format!(
        "Default=0x7fff : ALL=limited, SELF=full ;\nTenantA=0x0001 : {} ;\nTenantB=0x0002 : {} ;\n",
        list(&a),
        list(&b)
    );
    (conf, a, b)
}

#[test]
fn ft2_radix8_two_tenants_deliver_inside_and_never_across() {
    let dir = temp_dir("tenants");
    let (h, t) = sim("ft2:8", 3);
    let (conf, a, b) = two_tenants(&t);
    let path = dir.join("partitions.conf");
    std::fs::write(&path, conf).unwrap();
    let mut cfg = cfg("sim:ft2:8", 2);
    cfg.partitions = Some(path);
    let sm_port = ca_ports(&t)[0].2;
    actix_rt::System::new().block_on(async {
        let seen = run_once(&cfg, &h, sm_port).await;
        assert!(seen.iter().any(|m| matches!(
            m.kind,
            MilestoneKind::ProgrammingDone { pkey_blocks, failed: 0, .. } if pkey_blocks > 0
        )));
    });
    check_programmed(&h, &t);
    let tenant = |g: Guid| u16::from(a.contains(&g)) + 2 * u16::from(b.contains(&g));
    let allowed = |x: Guid, y: Guid| -> Option<PKey> {
        if tenant(x) == tenant(y) {
            Some(PKey(0x8000 | tenant(x)))
        } else if x == sm_port {
            Some(PKey(0xFFFF))
        } else if y == sm_port {
            Some(PKey(0x7FFF))
        } else {
            None
        }
    };
    let (ok, blocked) = check_delivery(&h, &t, allowed, PKey(0x8001));
    let (_, blocked2) = check_delivery(&h, &t, allowed, PKey(0x7FFF));
    assert!(
        ok > 0 && blocked > 0 && blocked == blocked2,
        "{ok} {blocked} {blocked2}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every LID in the fabric: switch port 0 and every cabled CA port.
fn all_lids(h: &SimHandle, t: &Topology) -> Vec<(Guid, Lid)> {
    let cas = ca_ports(t);
    h.with(|sim| {
        let mut v = Vec::new();
        for (id, n) in t.switches() {
            v.push((n.ports[0].guid, sim.port_info(id, 0).unwrap().lid));
        }
        for &(n, p, g) in &cas {
            v.push((g, sim.port_info(n, p).unwrap().lid));
        }
        v
    })
}

fn lids_assigned(seen: &[sm_node::milestone::Milestone]) -> (usize, usize) {
    seen.iter()
        .find_map(|m| match m.kind {
            MilestoneKind::LidsAssigned { new, changed, .. } => Some((new, changed)),
            _ => None,
        })
        .unwrap()
}

fn guid2lid_lines(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("guid2lid"))
        .unwrap()
        .lines()
        .count()
}

#[test]
fn restart_keeps_every_lid_through_the_data_dir() {
    let spec = "random:12:seed=3:radix=8:links=4:hosts=3";
    let dir = temp_dir("restart");
    let mut with_dir = cfg(&format!("sim:{spec}"), 2);
    with_dir.guid2lid = Some(dir.join("guid2lid"));
    let without = cfg(&format!("sim:{spec}"), 2);
    actix_rt::System::new().block_on(async {
        // First life.
        let (h, t) = sim(spec, 5);
        let cas = ca_ports(&t);
        let (first, last) = (cas[0].2, cas[cas.len() - 1].2);
        run_once(&with_dir, &h, first).await;
        let lids = all_lids(&h, &t);
        assert!(lids.iter().all(|(_, l)| l.0 != 0));
        assert_eq!(guid2lid_lines(&dir), lids.len());

        // Restart on the running fabric: nothing new, nothing changes.
        let seen = run_once(&with_dir, &h, first).await;
        assert_eq!(lids_assigned(&seen), (0, 0));
        assert_eq!(all_lids(&h, &t), lids);

        // Power-cycled fabric (every LID forgotten), SM elsewhere, same data dir.
        let (h2, _) = sim(spec, 5);
        run_once(&with_dir, &h2, last).await;
        assert_eq!(all_lids(&h2, &t), lids);

        // LID assignment is GUID-ordered, so the runs above would match without the file;
        // prove the file is what decides: a previous life with the LIDs reversed among the
        // ports must come back exactly on a power-cycled fabric.
        let reversed: Vec<(Guid, Lid)> = lids
            .iter()
            .zip(lids.iter().rev())
            .map(|(&(g, _), &(_, l))| (g, l))
            .collect();
        let text: String = reversed
            .iter()
            .map(|(g, l)| format!("0x{:016x} 0x{:04x} 0x{:04x}\n", g.0, l.0, l.0))
            .collect();
        std::fs::write(dir.join("guid2lid"), text).unwrap();
        let (h3, _) = sim(spec, 5);
        let seen = run_once(&with_dir, &h3, last).await;
        assert_eq!(all_lids(&h3, &t), reversed);
        assert_eq!(lids_assigned(&seen).0, 0, "no port needed a new LID");
        check_programmed(&h3, &t);

        // Without the file the same fabric gets the GUID-ordered numbering again.
        let (h4, _) = sim(spec, 5);
        run_once(&without, &h4, last).await;
        assert_eq!(all_lids(&h4, &t), lids);
    });
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_bad_partitions_file_refuses_to_start() {
    let dir = temp_dir("badparts");
    let path = dir.join("partitions.conf");
    std::fs::write(
        &path,
        "Default=0x7fff : ALL=full ;\nTenant=0x0002 ALL=full ;\n",
    )
    .unwrap();
    let mut cfg = cfg("sim:ft2:4", 1);
    cfg.partitions = Some(path);
    let e = cfg.sweeper_config().unwrap_err().to_string();
    assert!(e.starts_with("E_NODE_PARTITIONS"), "{e}");
    assert!(e.contains("partitions.conf:2:"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn light_sweeps_on_the_timer_and_a_requested_heavy_sweep_send_no_set() {
    let (h, t) = sim("ft2:8", 9);
    let mut cfg = cfg("sim:ft2:8", 2);
    cfg.sweep_interval_ms = 20;
    actix_rt::System::new().block_on(async {
        let attached = h.attach(ca_ports(&t)[0].2, Pace::Fast).unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let master = daemon::start_master(&cfg, attached, vec![tx]).unwrap();
        wait_subnet_up(&mut rx).await;
        let sets = master.send(GetStatus).await.unwrap().counters.sets();
        // The sweeper's timer (run on the daemon's clock) starts light sweeps by itself.
        for _ in 0..2 {
            wait_for(&mut rx, "LIGHT SWEEP", |k| {
                matches!(k, MilestoneKind::LightSweepComplete { changed: false, .. })
            })
            .await;
        }
        // A requested heavy sweep re-routes on the pool (incremental) and writes nothing.
        master
            .send(sm_node::master::RequestSweep { heavy: true })
            .await
            .unwrap();
        let seen = wait_for(&mut rx, "second HEAVY SWEEP COMPLETE", |k| {
            matches!(k, MilestoneKind::HeavySweepComplete { sweep: 2, .. })
        })
        .await;
        assert!(
            seen.iter()
                .any(|m| matches!(m.kind, MilestoneKind::RoutingDone { lft_blocks: 0, .. }))
        );
        assert_eq!(master.send(GetStatus).await.unwrap().counters.sets(), sets);
        master.send(Shutdown).await.unwrap();
    });
    check_programmed(&h, &t);
}

#[test]
fn realtime_pace_also_reaches_subnet_up() {
    let (h, t) = sim("ft2:4", 4);
    let cfg = cfg("sim:ft2:4", 1);
    actix_rt::System::new().block_on(async {
        let attached = h.attach(ca_ports(&t)[1].2, Pace::RealTime).unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let master = daemon::start_master(&cfg, attached, vec![tx]).unwrap();
        wait_subnet_up(&mut rx).await;
        master.send(Shutdown).await.unwrap();
    });
    check_programmed(&h, &t);
    check_delivery(&h, &t, all_full, PKey(0xFFFF));
}
