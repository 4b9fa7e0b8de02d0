//! The routing pool: [`RoutingPool::route`] runs a sweeper's [`RoutingJob`] off the actix
//! System thread, on a `SyncArbiter` thread ([`RoutingWorker`]), through the routing crate's
//! own fallback chain (`routing::route_with_chain`, by way of [`RoutingJob::run`]) with the
//! shards of each phase on `workers` scoped threads (`runner::Threads`). Same chain, same
//! refusals and errors, and — routing being bit-identical for any worker count — the same
//! tables as `sm_core::route_inline`.

use actix::prelude::*;
use runner::Threads;
use sm_core::{RoutingJob, RoutingOutcome, SmError};

/// The thread that routes: one job at a time, its shards on scoped threads.
pub struct RoutingWorker {
    exec: Threads,
}

impl Actor for RoutingWorker {
    type Context = SyncContext<Self>;
}

/// Routes one job (its engine chain, first engine that accepts wins).
#[derive(Message)]
#[rtype(result = "Result<RoutingOutcome, SmError>")]
pub struct Route(pub RoutingJob);

impl Handler<Route> for RoutingWorker {
    type Result = Result<RoutingOutcome, SmError>;
    fn handle(&mut self, Route(job): Route, _: &mut SyncContext<Self>) -> Self::Result {
        job.run(&self.exec)
    }
}

/// Why the pool could not route.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    /// The engines refused or the input is inconsistent (as `RoutingJob::run` reports it).
    #[error(transparent)]
    Routing(#[from] SmError),
    /// The worker's mailbox is closed (the pool is gone).
    #[error("E_NODE_POOL: routing pool unavailable: {0}")]
    Mailbox(#[from] MailboxError),
}

impl From<PoolError> for SmError {
    fn from(e: PoolError) -> SmError {
        match e {
            PoolError::Routing(e) => e,
            PoolError::Mailbox(m) => SmError::Config(format!("E_NODE_POOL: {m}")),
        }
    }
}

/// Handle of the routing pool (cheap to clone).
#[derive(Clone)]
pub struct RoutingPool {
    addr: Addr<RoutingWorker>,
    workers: usize,
}

impl RoutingPool {
    /// Starts the routing thread; each job's shards run on `workers` threads (at least
    /// one). Must run inside an actix System.
    pub fn start(workers: usize) -> RoutingPool {
        let workers = workers.max(1);
        RoutingPool {
            addr: SyncArbiter::start(1, move || RoutingWorker {
                exec: Threads(workers),
            }),
            workers,
        }
    }

    /// Number of threads a job's shards run on.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// Runs the job's engine chain (first engine that accepts wins, like
    /// `routing::route_with_chain`), `job.shards` shards per phase.
    pub async fn route(&self, job: RoutingJob) -> Result<RoutingOutcome, PoolError> {
        Ok(self.addr.send(Route(job)).await??)
    }
}
