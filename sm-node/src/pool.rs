//! The routing pool: a `SyncArbiter` of [`RoutingWorker`]s (one per core by default), and
//! [`RoutingPool::route`], which runs a sweeper's [`RoutingJob`] on it shard by shard —
//! plan, phase 1 (hop shards), merge, phase 2 (LFT shards), merge — with the routing crate's
//! split/compute/merge, so the result is bit-identical to `sm_core::route_inline`.

use actix::prelude::*;
use routing::{
    EngineOptions, Hints, HopShard, HopTable, Lfts, Plan, Refusal, RoutingError, RoutingInput,
    Shard, ShardResult, engine_by_name, merge, split,
};
use sm_core::{RoutingJob, RoutingOutcome, SmError};
use std::sync::Arc;

/// A routing worker: computes one piece of routing work per message on its own thread.
pub struct RoutingWorker;

impl Actor for RoutingWorker {
    type Context = SyncContext<Self>;
}

/// Builds an engine's plan (the non-sharded first step).
#[derive(Message)]
#[rtype(result = "Result<Arc<Plan>, RoutingError>")]
pub struct MakePlan {
    /// The routing input.
    pub input: Arc<RoutingInput>,
    /// Engine name.
    pub engine: String,
    /// Engine options.
    pub options: EngineOptions,
}

/// Phase 1 of one shard: hop counts towards a range of destination switches.
#[derive(Message)]
#[rtype(result = "HopShard")]
pub struct ComputeHops {
    /// The routing input.
    pub input: Arc<RoutingInput>,
    /// The plan.
    pub plan: Arc<Plan>,
    /// Destination switches.
    pub shard: Shard,
}

/// Phase 2 of one shard: the LFTs of a range of source switches.
#[derive(Message)]
#[rtype(result = "ShardResult")]
pub struct ComputeLfts {
    /// The routing input.
    pub input: Arc<RoutingInput>,
    /// The plan.
    pub plan: Arc<Plan>,
    /// The merged hop table.
    pub hops: Arc<HopTable>,
    /// Source switches.
    pub shard: Shard,
    /// Tables programmed before (incremental routing keeps their valid entries).
    pub prev: Option<Arc<Lfts>>,
}

impl Handler<MakePlan> for RoutingWorker {
    type Result = Result<Arc<Plan>, RoutingError>;
    fn handle(&mut self, m: MakePlan, _: &mut SyncContext<Self>) -> Self::Result {
        let engine = engine_by_name(&m.engine, &m.options)?;
        Ok(Arc::new(engine.plan(&m.input)?))
    }
}

impl Handler<ComputeHops> for RoutingWorker {
    type Result = MessageResult<ComputeHops>;
    fn handle(&mut self, m: ComputeHops, _: &mut SyncContext<Self>) -> Self::Result {
        MessageResult(m.plan.compute_hops(&m.input, &m.shard))
    }
}

impl Handler<ComputeLfts> for RoutingWorker {
    type Result = MessageResult<ComputeLfts>;
    fn handle(&mut self, m: ComputeLfts, _: &mut SyncContext<Self>) -> Self::Result {
        let hints = m.prev.as_deref().map(|p| Hints::new(&m.input, p));
        MessageResult(m.plan.compute(&m.input, &m.hops, &m.shard, hints.as_ref()))
    }
}

/// Why the pool could not route.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    /// The engines refused or the input is inconsistent.
    #[error(transparent)]
    Routing(#[from] RoutingError),
    /// A worker's mailbox is closed (the pool is gone).
    #[error("E_NODE_POOL: routing pool unavailable: {0}")]
    Mailbox(#[from] MailboxError),
}

impl From<PoolError> for SmError {
    fn from(e: PoolError) -> SmError {
        match e {
            PoolError::Routing(r) => SmError::Routing(r),
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
    /// Starts `workers` worker threads (at least one). Must run inside an actix System.
    pub fn start(workers: usize) -> RoutingPool {
        let workers = workers.max(1);
        RoutingPool {
            addr: SyncArbiter::start(workers, || RoutingWorker),
            workers,
        }
    }

    /// Number of worker threads.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// Address of the workers.
    pub fn addr(&self) -> &Addr<RoutingWorker> {
        &self.addr
    }

    /// Runs the job's engine chain on the pool (first engine that accepts wins, like
    /// `routing::route_with_chain`), `job.shards` shards per phase.
    pub async fn route(&self, job: RoutingJob) -> Result<RoutingOutcome, PoolError> {
        let RoutingJob {
            sweep,
            input,
            engines,
            options,
            shards,
            prev,
        } = job;
        let input = Arc::new(input);
        // Unknown engine names fail at once, before any engine runs.
        for e in &engines {
            engine_by_name(e, &options)?;
        }
        let mut refusals: Vec<Refusal> = Vec::new();
        for name in engines {
            match self
                .route_one(&input, &name, &options, shards, prev.clone())
                .await
            {
                Ok((engine, lfts)) => {
                    return Ok(RoutingOutcome {
                        sweep,
                        engine,
                        lfts,
                        refusals: refusals
                            .iter()
                            .map(|r| format!("{}: {}", r.engine, r.reason))
                            .collect(),
                    });
                }
                Err(PoolError::Routing(reason)) => refusals.push(Refusal {
                    engine: name,
                    reason,
                }),
                Err(e) => return Err(e),
            }
        }
        Err(RoutingError::AllRefused(refusals).into())
    }

    async fn route_one(
        &self,
        input: &Arc<RoutingInput>,
        engine: &str,
        options: &EngineOptions,
        shards: usize,
        prev: Option<Arc<Lfts>>,
    ) -> Result<(&'static str, Lfts), PoolError> {
        let plan = self
            .addr
            .send(MakePlan {
                input: input.clone(),
                engine: engine.to_string(),
                options: options.clone(),
            })
            .await??;
        let parts = split(input, shards);
        let hop_parts = futures_util::future::join_all(parts.iter().map(|s| {
            self.addr.send(ComputeHops {
                input: input.clone(),
                plan: plan.clone(),
                shard: s.clone(),
            })
        }))
        .await
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?;
        let hops = Arc::new(plan.merge_hops(input, hop_parts)?);
        let results = futures_util::future::join_all(parts.iter().map(|s| {
            self.addr.send(ComputeLfts {
                input: input.clone(),
                plan: plan.clone(),
                hops: hops.clone(),
                shard: s.clone(),
                prev: prev.clone(),
            })
        }))
        .await
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?;
        Ok((plan.engine(), merge(input, results)))
    }
}
