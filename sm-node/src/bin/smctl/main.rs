//! `smctl` — the Quorum SM operator CLI. Offline commands (topology generation, routing,
//! partition checks, benchmarks) run locally; cluster commands arrive with the admin API.

use clap::{Parser, Subcommand};

mod bench;
mod partitions;
mod route;
mod topo;

/// Quorum SM operator CLI.
#[derive(Parser)]
#[command(name = "smctl", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Topology files: generate fat trees, tori and random fabrics.
    Topo(topo::TopoArgs),
    /// Partitions: check and plan partitions.conf, audit P_KeyTables read back from a fabric.
    #[command(subcommand)]
    Partitions(partitions::PartitionsCmd),
    /// Routing: route a topology offline (time, memory, metrics) or analyze an ibroute dump.
    Route(route::RouteArgs),
    /// Benchmarks: time an SM sweep to SUBNET UP on the in-process simulator.
    #[command(subcommand)]
    Bench(bench::BenchCmd),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Topo(args) => topo::run(args),
        Command::Partitions(cmd) => partitions::run(cmd),
        Command::Route(args) => route::run(args),
        Command::Bench(cmd) => bench::run(cmd),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("smctl: error: {e:#}");
            std::process::ExitCode::from(1)
        }
    }
}
