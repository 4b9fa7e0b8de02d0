//! `smctl topo ...`: topology generation.

use clap::Args;
use std::process::ExitCode;

/// Arguments of `smctl topo`.
#[derive(Args)]
pub struct TopoArgs {}

/// Runs `smctl topo`.
pub fn run(_args: TopoArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("topology generation is not built yet")
}
