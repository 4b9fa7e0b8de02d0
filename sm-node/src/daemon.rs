//! Start-up glue: builds the fabric attachment, the routing pool and the master from a
//! [`NodeConfig`]. Must run inside an actix System (a later RaftActor calls
//! [`start_master`] when this replica becomes leader).

use crate::config::SweeperConfigOf as _;
use crate::config::{FabricSpec, NodeConfig};
use crate::error::NodeError;
use crate::master::{MasterActor, MasterParts};
use crate::milestone::Milestone;
use crate::pool::RoutingPool;
use crate::transport::sim::SimHandle;
use crate::transport::{Attached, TransportError, simd};
use actix::{Actor, Addr};
use fabric::{Guid, Topology};
use fabric_sim::{SimConfig, SimFabric};
use sm_core::Sweeper;
use tokio::sync::mpsc::UnboundedSender;

/// Loads a topology from a file or a generator spec.
pub fn load_topology(source: &str) -> Result<Topology, NodeError> {
    fabric_sim::server::load_topology(source)
        .map_err(|e| NodeError::Config(format!("topology: {e}")))
}

/// The first cabled CA port of a topology (where the SM attaches by default).
pub fn first_ca_port(t: &Topology) -> Option<Guid> {
    t.cas()
        .flat_map(|(_, n)| {
            n.port_numbers()
                .filter(|p| n.ports[p.0 as usize].remote.is_some())
                .map(|p| n.ports[p.0 as usize].guid)
                .collect::<Vec<_>>()
        })
        .next()
}

/// Creates an in-process simulated fabric for `topology` (spec or file).
pub fn new_sim(topology: &str, seed: u64) -> Result<(SimHandle, Topology), NodeError> {
    let topo = load_topology(topology)?;
    let sim = SimFabric::new(
        &topo,
        SimConfig {
            seed,
            log_sets: false,
            ..SimConfig::default()
        },
    )
    .map_err(|e| TransportError::Sim(e.to_string()))?;
    Ok((SimHandle::new(sim), topo))
}

/// Attaches to the configured fabric; for `sim:` also returns the simulator's handle.
pub fn attach(cfg: &NodeConfig) -> Result<(Attached, Option<SimHandle>), NodeError> {
    match &cfg.fabric {
        FabricSpec::Sim { topology, port } => {
            let (h, topo) = new_sim(topology, cfg.seed)?;
            let guid = match port {
                Some(p) => h.resolve_port(p)?,
                None => first_ca_port(&topo).ok_or_else(|| {
                    NodeError::Config("the topology has no cabled CA port for the SM".into())
                })?,
            };
            Ok((h.attach(guid, cfg.pace)?, Some(h)))
        }
        FabricSpec::Simd { socket, port } => Ok((simd::connect(socket, port)?, None)),
        FabricSpec::Umad { device, port } => Ok((
            crate::transport::umad::attach(device, *port, cfg.smp_timeout_ms)?,
            None,
        )),
    }
}

/// Builds the sweeper from the configuration and starts the master over `attached` with a
/// fresh routing pool of `cfg.workers` threads (stopped with the master).
pub fn start_master(
    cfg: &NodeConfig,
    attached: Attached,
    observers: Vec<UnboundedSender<Milestone>>,
) -> Result<Addr<MasterActor>, NodeError> {
    start_master_on(cfg, attached, RoutingPool::start(cfg.workers), observers)
}

/// Like [`start_master`] on an existing pool (a replica that gains and loses the master
/// role keeps one pool for its lifetime). The guid2lid file and the partitions file are
/// read again, so a master started later starts from what the last one saved.
pub fn start_master_on(
    cfg: &NodeConfig,
    attached: Attached,
    pool: RoutingPool,
    observers: Vec<UnboundedSender<Milestone>>,
) -> Result<Addr<MasterActor>, NodeError> {
    let (scfg, store) = cfg.sweeper_config()?;
    let sweeper = Sweeper::new(scfg)?;
    Ok(MasterActor::new(MasterParts {
        sweeper,
        attached,
        pool,
        store,
        observers,
        perf: Some(cfg.perf.clone()),
    })
    .start())
}
