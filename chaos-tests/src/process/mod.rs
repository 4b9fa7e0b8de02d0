//! Process level (see the crate documentation).

use crate::ChaosError;
use std::path::PathBuf;

/// Settings of a process-level run.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// sm-node binary.
    pub sm_node: PathBuf,
    /// Working directory.
    pub dir: PathBuf,
    /// Master kills.
    pub kills: u32,
    /// Seed.
    pub seed: u64,
}

/// Result of a run.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Violations.
    pub violations: Vec<String>,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.violations)
    }
}

/// Runs.
pub fn run(_o: &Options) -> Result<Report, ChaosError> {
    Err(ChaosError::Process("not built".into()))
}
