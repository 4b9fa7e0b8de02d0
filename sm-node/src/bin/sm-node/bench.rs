//! `sm-node bench-cluster` flags; the benchmark is `sm_harness::bench`.

use std::process::ExitCode;

/// `bench-cluster` flags.
#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// Topology.
    #[arg(long, default_value = "ft2:8")]
    fabric: String,
    /// Master kills.
    #[arg(long, default_value_t = 20)]
    kills: usize,
    /// Sequential proposals timed.
    #[arg(long, default_value_t = 200)]
    proposals: u64,
}

/// Runs the benchmark with replicas of this binary.
pub async fn run(a: &BenchArgs) -> anyhow::Result<ExitCode> {
    let exe = std::env::current_exe()?;
    sm_node::cluster::harness::bench::run(&exe, &a.fabric, a.kills, a.proposals)
        .await
        .map_err(|e| anyhow::anyhow!(e))?;
    Ok(ExitCode::SUCCESS)
}
