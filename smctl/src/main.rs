//! `smctl` — the Quorum SM operator CLI. Offline commands (topology generation, routing,
//! partition checks and plans, pictures, sweep benchmarks on the in-process simulator) run
//! locally on the pure crates; cluster commands (status, nodes, ports, traces, audit,
//! sweeps, mastership, members, events, tenants, SA state, pictures) go to a replica's
//! SmAdmin gRPC service (`--server`, TLS, tokens, timeouts; exit codes in [`client`]). Every
//! file it reads has a size limit ([`input`]).
//!
//! It must never link the daemon: no dependency on `sm-node`, actix, sled or raft-rs —
//! everything it learns about a cluster comes through the admin API (`proto` with `grpc`).
//! Nor does it hold SM logic: what it computes or draws offline comes from `fabric`,
//! `routing`, `partitions`, `views`, and for `smctl bench` `sm-core` on `fabric-sim`.

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

mod bench;
mod client;
mod cluster_cmds;
mod draw;
mod explain;
mod guids;
mod input;
mod partitions;
mod perf;
mod qos;
mod route;
mod sa;
mod tenants;
mod topo;

/// Quorum SM operator CLI.
#[derive(Parser)]
#[command(name = "smctl", version, about, after_help = client::EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    conn: client::ConnArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Topology files: generate fat trees, tori and random fabrics.
    Topo(topo::TopoArgs),
    /// Partitions: check and plan partitions.conf, audit P_KeyTables read back from a fabric.
    #[command(subcommand)]
    Partitions(partitions::PartitionsCmd),
    /// QoS: check a qos-policy.conf, the VL tables of OpenSM's qos_* options; the policy
    /// in force and the VL tables as programmed, apply a policy (cluster).
    #[command(subcommand)]
    Qos(qos::QosCmd),
    /// Routing: route a topology offline (time, memory, metrics) or analyze an ibroute dump.
    Route(route::RouteArgs),
    /// Benchmarks: time an SM sweep to SUBNET UP on the in-process simulator.
    #[command(subcommand)]
    Bench(bench::BenchCmd),
    /// Cluster: the master SM, like `sminfo`.
    Sminfo(cluster_cmds::ReadOpts),
    /// Cluster: replicas, roles, term, commit/applied index, lag, leader, last sweep.
    Cluster(cluster_cmds::ReadOpts),
    /// Cluster: nodes and links, like `ibnetdiscover` (filters: --type, --name, --guid).
    Nodes(cluster_cmds::NodesArgs),
    /// Cluster: one port's PortInfo, like `smpquery portinfo LID PORT`.
    Port {
        /// LID of the node.
        lid: u32,
        /// Port number.
        port: u32,
        #[command(flatten)]
        read: cluster_cmds::ReadOpts,
    },
    /// Cluster: a port's performance counters read now by the master, like `perfquery LID
    /// [PORT]` (-x: the extended 64-bit counters).
    Counters(perf::CountersArgs),
    /// Cluster: ports whose counters exceed thresholds, like `ibqueryerrors` (from the
    /// master's last counter sweep).
    Errors(perf::ErrorsArgs),
    /// Cluster: links that are degraded or down (--all: every link's health).
    Links(perf::LinksArgs),
    /// Cluster: why a port is not Active (or cannot talk), from what the master read and
    /// the counters, with the next step (LID decimal, GUID 0x hex).
    Explain(explain::ExplainArgs),
    /// Cluster: the path between two LIDs hop by hop, like `ibtracert SLID DLID`.
    Trace {
        /// Source LID.
        slid: u32,
        /// Destination LID.
        dlid: u32,
        #[command(flatten)]
        read: cluster_cmds::ReadOpts,
    },
    /// Cluster: isolation audit of the P_Key tables (`smctl partitions audit` is the offline one).
    Audit(cluster_cmds::ReadOpts),
    /// Cluster: ask the master for a sweep now.
    Sweep {
        /// Heavy sweep (rediscover, re-route) instead of a light one.
        #[arg(long)]
        heavy: bool,
    },
    /// Cluster: mastership.
    #[command(subcommand)]
    Master(cluster_cmds::MasterCmd),
    /// Cluster: add or remove a replica (Raft conf change).
    #[command(subcommand)]
    Members(cluster_cmds::MembersCmd),
    /// Cluster: stream events (sweeps, traps, port changes, failovers, policy changes).
    Watch(cluster_cmds::WatchArgs),
    /// Cluster: tenants (own partition, shared storage, RDMA cgroup limits for host agents).
    #[command(subcommand)]
    Tenants(tenants::TenantsCmd),
    /// Cluster: partitions managed by P_Key through the admin API (the UFM-compatible API's
    /// "pkeys"): add-guid, remove-guid, delete, list.
    #[command(subcommand)]
    Pkey(guids::PkeyCmd),
    /// Cluster: SA state — multicast groups, members, services, subscriptions.
    #[command(subcommand)]
    Sa(sa::SaCmd),
    /// Pictures: the fabric as tiers (DOT/SVG), the partition reachability matrix (SVG).
    #[command(subcommand)]
    Draw(draw::DrawCmd),
    /// Shell completion script: `smctl completion bash > /etc/bash_completion.d/smctl`.
    Completion {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
}

/// A closed stdout (`smctl ... | head`) ends smctl the way it ends `cat`: killed by SIGPIPE
/// on its next write, quietly, status 141 in a shell. Rust starts programs with SIGPIPE
/// ignored, which turns that write into EPIPE and `println!` into a panic; restoring the
/// default covers every print path at once. Sockets are unaffected: Rust's TCP writes (std,
/// mio, hence tokio and tonic) use MSG_NOSIGNAL.
fn default_sigpipe() {
    // SAFETY: signal(2) with SIG_DFL installs no handler; called first in main, before any
    // thread is started.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Commands that never ask a replica: their help does not list the connection flags
/// (`--server`, TLS, token, timeouts). Those stay global, so `smctl --server H:P cluster`
/// and `smctl cluster --server H:P` both work; commands with an online and an offline form
/// (`route LID` / `route --topology`, `draw` without / with `--topology`, `partitions check`
/// and `plan` with / without `--server`) keep them listed.
const OFFLINE: &[&[&str]] = &[
    &["topo"],
    &["bench"],
    &["completion"],
    &["route", "analyze"],
    &["partitions", "audit"],
    &["qos", "check"],
    &["qos", "tables"],
];

/// `cmd` with hidden copies of the connection flags: clap propagates a global flag only to
/// subcommands without one of that name, so the copies (global too, for the subcommands'
/// own subcommands) keep the flags working and out of the help.
fn hide_conn(cmd: clap::Command) -> clap::Command {
    let conn = client::ConnArgs::augment_args(clap::Command::new("conn"));
    conn.get_arguments()
        .fold(cmd, |c, a| c.arg(a.clone().hide(true)))
}

/// The command line with the connection flags hidden in the [`OFFLINE`] commands.
fn command() -> clap::Command {
    OFFLINE.iter().fold(Cli::command(), |cmd, path| match path {
        [a] => cmd.mut_subcommand(*a, hide_conn),
        [a, b] => cmd.mut_subcommand(*a, |s| s.mut_subcommand(*b, hide_conn)),
        _ => cmd,
    })
}

fn main() -> std::process::ExitCode {
    default_sigpipe();
    let cli = Cli::from_arg_matches(&command().get_matches()).unwrap_or_else(|e| e.exit());
    client::set(cli.conn.clone());
    let result = match cli.command {
        Command::Topo(args) => topo::run(args),
        Command::Partitions(cmd) => partitions::run(cmd),
        Command::Qos(cmd) => qos::run_qos(cmd),
        Command::Route(args) => route::run(args),
        Command::Bench(cmd) => bench::run(cmd),
        Command::Sminfo(o) => cluster_cmds::sminfo(o),
        Command::Cluster(o) => cluster_cmds::cluster(o),
        Command::Nodes(a) => cluster_cmds::nodes(a),
        Command::Port { lid, port, read } => cluster_cmds::port(lid, port, read),
        Command::Counters(a) => perf::counters(a),
        Command::Errors(a) => perf::errors(a),
        Command::Links(a) => perf::links(a),
        Command::Explain(a) => explain::explain(a),
        Command::Trace { slid, dlid, read } => cluster_cmds::trace(slid, dlid, read),
        Command::Audit(o) => cluster_cmds::audit(o),
        Command::Sweep { heavy } => cluster_cmds::sweep(heavy),
        Command::Master(m) => cluster_cmds::master(m),
        Command::Members(m) => cluster_cmds::members(m),
        Command::Watch(a) => cluster_cmds::watch(a),
        Command::Tenants(c) => tenants::run_cmd(c),
        Command::Sa(c) => sa::run_cmd(c),
        Command::Pkey(c) => guids::run_pkey(c),
        Command::Draw(c) => draw::run(c),
        Command::Completion { shell } => {
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut command(), "smctl", &mut buf);
            let _ = std::io::Write::write_all(&mut std::io::stdout(), &buf);
            Ok(std::process::ExitCode::SUCCESS)
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("smctl: error: {e:#}");
            client::exit_code_of(&e)
        }
    }
}
