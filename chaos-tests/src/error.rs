//! The crate's error type.

/// Errors of the chaos harnesses (an invariant violation is not an error: it is a
/// [`crate::sim::Failure`] or a process-level finding).
#[derive(Debug, thiserror::Error)]
pub enum ChaosError {
    /// A topology spec that does not build.
    #[error("CHAOS-E001 topology {spec:?}: {reason}")]
    Topology {
        /// The spec.
        spec: String,
        /// Why.
        reason: String,
    },
    /// The simulated fabric refused something.
    #[error("CHAOS-E002 fabric: {0}")]
    Fabric(#[from] fabric_sim::SimError),
    /// raft-rs refused a configuration or storage operation.
    #[error("CHAOS-E003 raft: {0}")]
    Raft(#[from] raft::Error),
    /// A replica core could not be built (its configuration or its disk).
    #[error("CHAOS-E007 replica: {0}")]
    Replica(#[from] replica_core::CoreError),
    /// The sweeper refused its configuration.
    #[error("CHAOS-E004 sweeper: {0}")]
    Sweeper(#[from] sm_core::SmError),
    /// A process-level step failed (spawn, signal, socket, admin call).
    #[error("CHAOS-E005 process: {0}")]
    Process(String),
    /// IO.
    #[error("CHAOS-E006 io: {0}")]
    Io(#[from] std::io::Error),
}
