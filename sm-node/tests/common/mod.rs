//! Shared test helpers: configuration, waiting on milestones (with a generous timeout as a
//! failure bound only), fabric checks through the simulator handle, the smctl binary
//! ([`smctl::bin`]).
#![allow(dead_code)]

pub mod smctl;

use fabric::{Guid, Lid, NodeId, PKey, PortState, Topology};
use sm_node::config::{FileConfig, NodeConfig};
use sm_node::milestone::{Milestone, MilestoneKind};
use sm_node::transport::sim::SimHandle;
use std::path::PathBuf;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedReceiver;

/// A child process killed and reaped when dropped, however the test ends (a failed
/// assertion included).
pub struct Killed(pub std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Failure bound for anything a test waits on.
pub const BOUND: Duration = Duration::from_secs(120);

pub fn cfg(fabric: &str, workers: usize) -> NodeConfig {
    NodeConfig::try_from(FileConfig {
        fabric: Some(fabric.into()),
        routing_workers: Some(workers),
        sweep_interval: Some(0.0),
        ..FileConfig::default()
    })
    .unwrap()
}

/// A fresh, empty temporary directory for this test.
pub fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("smnode-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Waits for a milestone matching `pred`; returns every milestone seen up to it.
pub async fn wait_for(
    rx: &mut UnboundedReceiver<Milestone>,
    what: &str,
    pred: impl Fn(&MilestoneKind) -> bool,
) -> Vec<Milestone> {
    let mut seen = Vec::new();
    loop {
        match tokio::time::timeout(BOUND, rx.recv()).await {
            Ok(Some(m)) => {
                let hit = pred(&m.kind);
                let stopped = matches!(m.kind, MilestoneKind::Stopped { .. });
                seen.push(m);
                if hit {
                    return seen;
                }
                assert!(!stopped, "master stopped before {what}: {seen:#?}");
            }
            Ok(None) => panic!("milestone channel closed before {what}: {seen:#?}"),
            Err(_) => panic!("no {what} within {BOUND:?}: {seen:#?}"),
        }
    }
}

/// Waits for the end of the first heavy sweep, asserting SUBNET UP came before it.
pub async fn wait_subnet_up(rx: &mut UnboundedReceiver<Milestone>) -> Vec<Milestone> {
    let seen = wait_for(rx, "HEAVY SWEEP COMPLETE", |k| {
        matches!(k, MilestoneKind::HeavySweepComplete { .. })
    })
    .await;
    assert!(
        seen.iter()
            .any(|m| matches!(m.kind, MilestoneKind::SubnetUp { .. })),
        "first heavy sweep ended without SUBNET UP: {seen:#?}"
    );
    seen
}

/// Every cabled CA port: (node, port, GUID).
pub fn ca_ports(t: &Topology) -> Vec<(NodeId, u8, Guid)> {
    let mut v = Vec::new();
    for (id, n) in t.cas() {
        for p in n.port_numbers() {
            if n.ports[p.0 as usize].remote.is_some() {
                v.push((id, p.0, n.ports[p.0 as usize].guid));
            }
        }
    }
    v
}

/// LID of every cabled CA port, in `ca_ports` order.
pub fn ca_lids(h: &SimHandle, t: &Topology) -> Vec<Lid> {
    h.with(|sim| {
        ca_ports(t)
            .iter()
            .map(|&(n, p, _)| sim.port_info(n, p).unwrap().lid)
            .collect()
    })
}

/// Asserts every cabled CA port is ACTIVE with a LID and every switch routes every CA LID.
pub fn check_programmed(h: &SimHandle, t: &Topology) {
    let cas = ca_ports(t);
    h.with(|sim| {
        for &(n, p, g) in &cas {
            assert_eq!(sim.port_state(n, p).unwrap(), PortState::Active, "{g}");
            assert_ne!(sim.port_info(n, p).unwrap().lid.0, 0, "{g} has no LID");
        }
        for (sid, _) in t.switches() {
            for &(n, p, g) in &cas {
                let lid = sim.port_info(n, p).unwrap().lid;
                assert_ne!(sim.lft_entry(sid, lid).unwrap(), 0xFF, "{sid:?} -> {g}");
            }
        }
    });
}

/// For every ordered CA pair: `allowed(a, b)` Some(key) -> a data packet with that key
/// must arrive; None -> one with `probe` must not. Returns (delivered, blocked).
pub fn check_delivery(
    h: &SimHandle,
    t: &Topology,
    allowed: impl Fn(Guid, Guid) -> Option<PKey>,
    probe: PKey,
) -> (usize, usize) {
    let cas = ca_ports(t);
    let lids = ca_lids(h, t);
    let (mut ok, mut blocked) = (0, 0);
    h.with(|sim| {
        for (i, &(_, _, a)) in cas.iter().enumerate() {
            for (j, &(_, _, b)) in cas.iter().enumerate() {
                if i == j {
                    continue;
                }
                match allowed(a, b) {
                    Some(k) => {
                        let d = sim.deliver(a, lids[j], k);
                        assert!(d.is_delivered(), "{a} -> {b} key {k}: {d:?}");
                        ok += 1;
                    }
                    None => {
                        let d = sim.deliver(a, lids[j], probe);
                        assert!(!d.is_delivered(), "{a} -> {b} must not deliver {probe}");
                        blocked += 1;
                    }
                }
            }
        }
    });
    (ok, blocked)
}

pub fn all_full(_: Guid, _: Guid) -> Option<PKey> {
    Some(PKey(0xFFFF))
}

/// Kills `pid` with SIGKILL if the returned guard is still alive after [`BOUND`]: a child that
/// ignores its stop signal fails the test (its pipes close) instead of hanging the suite.
pub fn watchdog(pid: u32) -> std::sync::mpsc::Sender<()> {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(BOUND) {
            // SAFETY: kill(2) with a plain pid and signal has no memory effects.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
    });
    tx
}
