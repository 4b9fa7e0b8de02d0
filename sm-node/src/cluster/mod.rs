//! The Raft-replicated cluster: a [`raft_actor::RaftActor`] per replica (actix, on its own
//! thread), peers talking over the tonic `Peer` service, operators over `SmAdmin` (both on
//! tokio, same listen address, plain HTTP/2 on loopback: TLS comes with issue 8).
//!
//! Threads: [`run`] starts the actix System on a thread of its own (an actix System cannot
//! start inside a running tokio runtime) and serves gRPC on the caller's tokio runtime; the
//! tonic handlers hold the RaftActor's `Addr`.

pub mod admin;
/// The process-level test cluster (its own crate, `sm-harness`).
pub use sm_harness as harness;
pub mod net;
pub mod preference;
pub mod raft_actor;
pub mod reload;
pub use replica_core::seed;

use crate::error::NodeError;
use fabric::Guid;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;

/// A replica's cluster settings.
#[derive(Clone, Debug)]
pub struct ClusterConfig {
    /// This replica's Raft id (>= 1).
    pub id: u64,
    /// Every replica's id and address (`host:port`), this one included.
    pub peers: BTreeMap<u64, String>,
    /// Where this replica serves Peer and SmAdmin.
    pub listen: SocketAddr,
    /// sled lives in `data_dir/raft`.
    pub data_dir: PathBuf,
    /// Raft tick.
    pub tick: Duration,
    /// Election timeout in ticks (randomised in [n, 2n)).
    pub election_ticks: usize,
    /// Heartbeat interval in ticks.
    pub heartbeat_ticks: usize,
    /// Snapshot and compact the log every this many applied entries.
    pub snapshot_every: u64,
    /// This replica's fabric port GUID (0 when the port is named otherwise).
    pub port_guid: Guid,
    /// The SM port GUIDs of the other replicas (`--peer-sm-guids`): never queried as
    /// foreign SMs. Non-empty: the master obeys the IBA 14.4 rules towards every other SM
    /// as the cluster's one SM (see docs/foreign-sms.md); empty: the rules are off.
    pub peer_sm_guids: Vec<Guid>,
    /// Voters of the initial membership, used only when the storage is first initialized
    /// (empty: every peer). A replica that joins later is started with the existing voters
    /// (it is not one of them, so it never campaigns) and added with ChangeMembership.
    pub voters: Vec<u64>,
    /// An empty data directory belongs to a new cluster (`--initial-cluster-state new`);
    /// else the replica recovers a lost log without voting (see `replica_core::CoreConfig`).
    pub bootstrap: bool,
}

impl ClusterConfig {
    /// Lease length: half the minimum election timeout.
    pub fn lease_duration(&self) -> Duration {
        self.tick * self.election_ticks as u32 / 2
    }
}

/// Parses `1=127.0.0.1:7101,2=127.0.0.1:7102,...`.
pub fn parse_peers(s: &str) -> Result<BTreeMap<u64, String>, NodeError> {
    let mut out = BTreeMap::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (id, addr) = part
            .split_once('=')
            .ok_or_else(|| NodeError::Config(format!("--peers {part:?}: expected ID=HOST:PORT")))?;
        let id: u64 = id
            .trim()
            .parse()
            .ok()
            .filter(|i| *i > 0)
            .ok_or_else(|| NodeError::Config(format!("--peers {part:?}: id must be >= 1")))?;
        if addr.trim().parse::<SocketAddr>().is_err() {
            return Err(NodeError::Config(format!(
                "--peers {part:?}: {addr:?} is not HOST:PORT (an IP address)"
            )));
        }
        if out.insert(id, addr.trim().to_string()).is_some() {
            return Err(NodeError::Config(format!("--peers: id {id} given twice")));
        }
    }
    if out.is_empty() {
        return Err(NodeError::Config("--peers: no replica".into()));
    }
    Ok(out)
}

/// Outgoing Raft messages, one queue per peer (served by [`net::spawn_senders`]).
#[derive(Clone, Debug, Default)]
pub struct PeerTx {
    queues: BTreeMap<u64, UnboundedSender<Vec<u8>>>,
}

impl PeerTx {
    /// Queues an encoded message for `to` (dropped when `to` is unknown: raft retries).
    pub fn send(&self, to: u64, msg: Vec<u8>) {
        if let Some(q) = self.queues.get(&to) {
            let _ = q.send(msg);
        }
    }
}

/// A replica's actix side, running on its own thread.
pub struct Replica {
    /// The RaftActor.
    pub raft: actix::Addr<raft_actor::RaftActor>,
    /// The actix System (stop it to end the thread).
    pub system: actix::System,
    /// The thread.
    pub thread: std::thread::JoinHandle<()>,
    /// Why the replica gave up (its log failed): the process must exit non-zero.
    pub died: tokio::sync::oneshot::Receiver<String>,
}

/// Why the replica's thread ended, from its join result (a panic's message when it
/// panicked).
pub fn thread_end(r: std::thread::Result<()>) -> String {
    match r {
        Ok(()) => "the replica thread ended".into(),
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(no message)".into());
            format!("the replica thread panicked: {msg}")
        }
    }
}

/// Starts the actix System on a thread of its own with the RaftActor in it. `peers` must
/// come from [`net::spawn_senders`] on the tokio runtime that also serves gRPC.
pub fn start_replica(
    cfg: ClusterConfig,
    node_cfg: crate::config::NodeConfig,
    peers: PeerTx,
    observers: Vec<UnboundedSender<crate::milestone::Milestone>>,
) -> Result<Replica, NodeError> {
    use actix::Actor;
    let (died_tx, died) = tokio::sync::oneshot::channel();
    let (tx, rx) = std::sync::mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("actix".into())
        .spawn(move || {
            let sys = actix_rt::System::new();
            let started = sys.block_on(async move {
                raft_actor::RaftActor::new(cfg, node_cfg, peers, observers)
                    .map(|a| (a.on_death(died_tx).start(), actix::System::current()))
            });
            let ok = started.is_ok();
            let _ = tx.send(started);
            if ok {
                let _ = sys.run();
            }
        })
        .map_err(|e| NodeError::Cluster(format!("E_NODE_THREAD: {e}")))?;
    match rx.recv() {
        Ok(Ok((raft, system))) => Ok(Replica {
            raft,
            system,
            thread,
            died,
        }),
        Ok(Err(e)) => {
            let _ = thread.join();
            Err(e)
        }
        Err(_) => Err(NodeError::Cluster(
            "E_NODE_THREAD: the actix thread died".into(),
        )),
    }
}

/// Serves Peer and SmAdmin on `listen` until `shutdown` completes.
pub async fn serve_grpc(
    id: u64,
    listen: SocketAddr,
    raft: actix::Addr<raft_actor::RaftActor>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), NodeError> {
    crate::tls::server_builder()
        .map_err(|e| NodeError::Cluster(format!("E_NODE_TLS: {e}")))?
        .add_service(net::peer_server(net::PeerService {
            id,
            raft: raft.clone(),
        }))
        .add_service(admin::admin_server(admin::AdminService::new(id, raft)))
        .serve_with_shutdown(listen, shutdown)
        .await
        .map_err(|e| {
            let why = std::error::Error::source(&e).map_or(String::new(), |s| format!(": {s}"));
            NodeError::Cluster(format!("E_NODE_GRPC: serve on {listen}: {e}{why}"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_parse_and_bad_ones_are_refused() {
        let p = parse_peers("1=127.0.0.1:7101, 2=127.0.0.1:7102,3=127.0.0.1:7103").unwrap();
        assert_eq!(p.len(), 3);
        assert_eq!(p[&2], "127.0.0.1:7102");
        for bad in [
            "",
            "1",
            "0=127.0.0.1:1",
            "1=localhost",
            "1=127.0.0.1:1,1=127.0.0.1:2",
        ] {
            assert!(parse_peers(bad).is_err(), "{bad}");
        }
    }
}
