//! `smctl partitions ...`: check and plan an OpenSM partitions.conf, and audit the
//! P_KeyTables read back from a fabric.
//!
//! The audit's `--pkeys DUMP` is text: per port a header line `### node <node GUID> port <N>`
//! followed by what `smpquery PKeys <lid> <N>` prints (and optionally what `smpquery portinfo
//! <lid> <N>` prints, for the PartEnforceInb/Outb bits of switch ports); or a JSON array of
//! `{"node": "0x...", "port": N, "pkeys": ["0xffff", ...], "enforce_in": bool, "enforce_out": bool}`.

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use fabric::{Guid, Topology};
use partitions::{Caps, Options, PartEnforce, Severity};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::ExitCode;

/// `smctl partitions` subcommands.
#[derive(Subcommand)]
pub enum PartitionsCmd {
    /// Cluster commands: show, diff, apply (need --server).
    #[command(flatten)]
    Cluster(ClusterPartitionsCmd),
    /// Parse and lint a partitions.conf (exit 1 on errors).
    Check {
        /// The partitions.conf file.
        file: String,
        /// Topology: an ibnetdiscover/ibsim file or a generator spec (e.g. ft2:36).
        #[arg(long)]
        topology: Option<String>,
        #[command(flatten)]
        opts: CommonOpts,
    },
    /// Plan every P_KeyTable, switch enforcement and IPoIB group for a topology (with
    /// --server: on the cluster's fabric; FILE `-` or omitted = the policy in force).
    Plan {
        /// The partitions.conf file.
        #[arg(default_value = "")]
        file: String,
        /// Topology: an ibnetdiscover/ibsim file or a generator spec.
        #[arg(long, default_value = "")]
        topology: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        opts: CommonOpts,
    },
    /// Audit P_KeyTables read back from the fabric (exit 1 on isolation breaks).
    Audit {
        /// Topology: an ibnetdiscover/ibsim file or a generator spec.
        #[arg(long)]
        topology: String,
        /// The read-back dump (text with `### node <GUID> port <N>` headers, or JSON).
        #[arg(long)]
        pkeys: String,
        /// The intended partitions.conf; without it the audit only reports reachability.
        #[arg(long)]
        policy: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        opts: CommonOpts,
    },
}

/// Cluster subcommands of `smctl partitions` (need --server).
#[derive(Subcommand)]
pub enum ClusterPartitionsCmd {
    /// Cluster: the policy in force, with its version.
    Show(crate::cluster_cmds::ReadOpts),
    /// Cluster: which P_Key tables FILE would change, where.
    Diff {
        /// The proposed partitions.conf (`-` = stdin).
        file: String,
        #[command(flatten)]
        read: crate::cluster_cmds::ReadOpts,
    },
    /// Cluster: commit FILE (optimistic: refused when another apply committed since).
    Apply {
        /// The new partitions.conf (`-` = stdin).
        file: String,
        /// The version you edited (default: the version in force now).
        #[arg(long)]
        expect_version: Option<u64>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

fn run_cluster(c: &ClusterPartitionsCmd) -> anyhow::Result<ExitCode> {
    match c {
        ClusterPartitionsCmd::Show(r) => crate::cluster_cmds::partitions_show(*r),
        ClusterPartitionsCmd::Diff { file, read } => {
            crate::cluster_cmds::partitions_diff(file, *read)
        }
        ClusterPartitionsCmd::Apply {
            file,
            expect_version,
            json,
        } => crate::cluster_cmds::partitions_apply(file, *expect_version, *json),
    }
}

/// Options shared by the subcommands (OpenSM's names).
#[derive(Args)]
pub struct CommonOpts {
    /// allow_both_pkeys: a port may hold full and limited keys of one partition.
    #[arg(long)]
    allow_both_pkeys: bool,
    /// part_enforce: both, in, out or off.
    #[arg(long, default_value = "both")]
    part_enforce: PartEnforce,
    /// The SM's port GUID (what SELF names).
    #[arg(long)]
    sm_port: Option<String>,
    /// qos enabled (otherwise partition SLs are forced to 0, as OpenSM does).
    #[arg(long)]
    qos: bool,
    /// NodeInfo.PartitionCap of CAs and routers.
    #[arg(long, default_value_t = 128)]
    ca_cap: u16,
    /// NodeInfo.PartitionCap of switches (their port 0).
    #[arg(long, default_value_t = 128)]
    switch_cap: u16,
    /// SwitchInfo.PartitionEnforcementCap.
    #[arg(long, default_value_t = 64)]
    enforce_cap: u16,
}

impl CommonOpts {
    fn options(&self) -> anyhow::Result<Options> {
        let sm_port_guid = match &self.sm_port {
            Some(s) => Some(Guid(
                partitions::parser::parse_c_number(s)
                    .with_context(|| format!("bad --sm-port GUID '{s}'"))?,
            )),
            None => None,
        };
        Ok(Options {
            allow_both_pkeys: self.allow_both_pkeys,
            part_enforce: self.part_enforce,
            sm_port_guid,
            qos: self.qos,
        })
    }

    fn caps(&self) -> Caps {
        Caps {
            ca_partition_cap: self.ca_cap,
            switch_partition_cap: self.switch_cap,
            enforcement_cap: self.enforce_cap,
            ..Caps::default()
        }
    }
}

fn load_topology(t: &str) -> anyhow::Result<Topology> {
    if std::path::Path::new(t).exists() {
        let text = crate::input::read_file(std::path::Path::new(t))
            .with_context(|| format!("reading {t}"))?;
        return fabric::netfile::parse(&text).with_context(|| format!("parsing topology {t}"));
    }
    let spec: fabric::GenSpec = t
        .parse()
        .with_context(|| format!("'{t}' is neither a topology file nor a generator spec"))?;
    spec.generate()
        .with_context(|| format!("generating topology {t}"))
}

/// A policy file (bounded by `partitions::MAX_POLICY_BYTES`).
fn read(path: &str) -> anyhow::Result<String> {
    crate::input::read_policy(path).with_context(|| format!("reading {path}"))
}

/// A P_Key dump (bounded by `input::MAX_FILE_BYTES`).
fn read_dump(path: &str) -> anyhow::Result<String> {
    crate::input::read_file(std::path::Path::new(path)).with_context(|| format!("reading {path}"))
}

/// Runs a `smctl partitions` subcommand.
pub fn run(cmd: PartitionsCmd) -> anyhow::Result<ExitCode> {
    let mut o = String::new();
    let code = run_into(&mut o, cmd);
    emit(&o)?;
    code
}

/// Writes the output (a reader that went away, `| head`, ends smctl by SIGPIPE: see main.rs).
fn emit(o: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    out.write_all(o.as_bytes())?;
    out.flush()?;
    Ok(())
}

fn run_into(o: &mut String, cmd: PartitionsCmd) -> anyhow::Result<ExitCode> {
    // With --server, check and plan run on the cluster (the replicated topology).
    if crate::client::server_given() {
        match &cmd {
            PartitionsCmd::Check {
                file,
                topology: None,
                ..
            } => {
                return crate::cluster_cmds::partitions_check(file, false);
            }
            PartitionsCmd::Plan {
                file,
                json,
                topology,
                ..
            } if topology.is_empty() => {
                let f = (!file.is_empty() && file != "-").then_some(file.as_str());
                let read = crate::cluster_cmds::ReadOpts {
                    linearizable: false,
                    json: *json,
                };
                return crate::cluster_cmds::partitions_plan(f, read);
            }
            PartitionsCmd::Cluster(c) => return run_cluster(c),
            _ => {}
        }
    }
    match cmd {
        PartitionsCmd::Cluster(c) => run_cluster(&c),
        PartitionsCmd::Check {
            file,
            topology,
            opts,
        } => {
            let src = read(&file)?;
            let topo = topology.as_deref().map(load_topology).transpose()?;
            let caps = opts.caps();
            let report =
                partitions::check(&src, opts.options()?, topo.as_ref().map(|t| (t, &caps)));
            for e in &report.parse_errors {
                let _ = writeln!(o, "{file}:{e}");
            }
            for l in &report.lints {
                let _ = writeln!(o, "{file}:{l}");
            }
            let errors = report.parse_errors.len()
                + report
                    .lints
                    .iter()
                    .filter(|l| l.severity() == Severity::Error)
                    .count();
            let warnings = report.lints.len() + report.parse_errors.len() - errors;
            match &report.policy {
                Some(p) => writeln!(
                    o,
                    "{file}: {} partitions, {errors} errors, {warnings} warnings",
                    p.partitions.len()
                ),
                None => writeln!(o, "{file}: rejected, {errors} errors"),
            }?;
            Ok(if report.has_errors() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        PartitionsCmd::Plan {
            file,
            topology,
            json,
            opts,
        } => {
            let src = read(&file)?;
            let topo = load_topology(&topology)?;
            let caps = opts.caps();
            let report = partitions::check(&src, opts.options()?, Some((&topo, &caps)));
            if report.has_errors() {
                for e in &report.parse_errors {
                    eprintln!("{file}:{e}");
                }
                for l in report
                    .lints
                    .iter()
                    .filter(|l| l.severity() == Severity::Error)
                {
                    eprintln!("{file}:{l}");
                }
                bail!("{file} has errors; run `smctl partitions check` for all lints");
            }
            let Some(plan) = report.plan else {
                bail!("no plan produced");
            };
            if json {
                let _ = writeln!(o, "{}", serde_json::to_string_pretty(&plan)?);
            } else {
                print_plan(o, &plan);
            }
            Ok(ExitCode::SUCCESS)
        }
        PartitionsCmd::Audit {
            topology,
            pkeys,
            policy,
            json,
            opts,
        } => {
            let topo = load_topology(&topology)?;
            let text = read_dump(&pkeys)?;
            let readings = if text.trim_start().starts_with('[') {
                serde_json::from_str(&text).with_context(|| format!("parsing JSON {pkeys}"))?
            } else {
                partitions::parse_dump(&text).with_context(|| format!("parsing {pkeys}"))?
            };
            let mut names = BTreeMap::new();
            let plan = match &policy {
                Some(f) => {
                    let src = read(f)?;
                    let caps = opts.caps();
                    let report = partitions::check(&src, opts.options()?, Some((&topo, &caps)));
                    for e in &report.parse_errors {
                        eprintln!("{f}:{e}");
                    }
                    let Some(pol) = &report.policy else {
                        bail!("{f} does not parse");
                    };
                    for p in &pol.partitions {
                        names.insert(p.pkey, p.name.clone());
                    }
                    report.plan
                }
                None => None,
            };
            let report = partitions::audit(&topo, &readings, plan.as_ref(), &names);
            if json {
                let _ = writeln!(o, "{}", serde_json::to_string_pretty(&report)?);
            } else {
                print_audit(o, &report);
            }
            Ok(if report.has_errors() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
    }
}

fn short_list(v: &[Guid]) -> String {
    let mut s: Vec<String> = v.iter().take(6).map(|g| format!("{:#x}", g.0)).collect();
    if v.len() > 6 {
        s.push(format!("... ({} more)", v.len() - 6));
    }
    s.join(", ")
}

fn print_plan(o: &mut String, plan: &partitions::Plan) {
    let _ = writeln!(o, "part_enforce {}", plan.part_enforce);
    let _ = writeln!(o, "partitions:");
    for p in &plan.partitions {
        let _ = writeln!(
            o,
            "  {:#06x} {}: {} full [{}], {} limited [{}]",
            p.pkey,
            p.name,
            p.full.len(),
            short_list(&p.full),
            p.limited.len(),
            short_list(&p.limited)
        );
        for g in &p.groups {
            let _ = writeln!(
                o,
                "    group {} pkey {} mtu {} rate {} sl {} scope {} qkey {:#x}{}",
                g.mgid_string(),
                g.pkey,
                g.mtu,
                g.rate,
                g.sl,
                g.scope,
                g.q_key,
                if g.broadcast {
                    " (IPoIB broadcast)"
                } else {
                    ""
                }
            );
        }
    }
    let _ = writeln!(o, "end ports:");
    for pp in &plan.ports {
        let keys: Vec<String> = pp
            .table
            .valid()
            .iter()
            .map(|(i, k)| format!("{i}:{k}"))
            .collect();
        let _ = writeln!(
            o,
            "  node {:#x} port {} (guid {:#x}, cap {}): {}{}",
            pp.port.node_guid.0,
            pp.port.port,
            pp.port.port_guid.0,
            pp.table.cap,
            keys.join(" "),
            if pp.dropped.is_empty() {
                String::new()
            } else {
                format!("  DROPPED {}", partitions::plan::list_keys(&pp.dropped))
            }
        );
    }
    let _ = writeln!(o, "switch ports facing end ports:");
    for sp in &plan.switch_ports {
        let keys = sp
            .table
            .as_ref()
            .map(|t| {
                t.valid()
                    .iter()
                    .map(|(i, k)| format!("{i}:{k}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_else(|| "(not written)".into());
        let _ = writeln!(
            o,
            "  switch {:#x} port {} -> {:#x}: enforce in={} out={}{} {}",
            sp.switch_guid.0,
            sp.port,
            sp.peer.port_guid.0,
            sp.enforce_in as u8,
            sp.enforce_out as u8,
            if sp.overflow { " OVERFLOW" } else { "" },
            keys
        );
    }
    let _ = writeln!(
        o,
        "inter-switch ports (enforcement cleared, tables untouched): {}",
        plan.inter_switch_ports.len()
    );
    for l in &plan.lints {
        let _ = writeln!(o, "{l}");
    }
}

fn print_audit(o: &mut String, r: &partitions::AuditReport) {
    let _ = writeln!(o, "effective partitions (from read-back tables):");
    for p in &r.partitions {
        let _ = writeln!(
            o,
            "  {:#06x}{}: {} full [{}], {} limited [{}]{}",
            p.pkey,
            p.name.as_ref().map(|n| format!(" {n}")).unwrap_or_default(),
            p.full.len(),
            short_list(&p.full),
            p.limited.len(),
            short_list(&p.limited),
            if p.blocked.is_empty() {
                String::new()
            } else {
                format!(
                    ", blocked by switch enforcement [{}]",
                    short_list(&p.blocked)
                )
            }
        );
    }
    let _ = writeln!(o, "groups:");
    for (name, ports) in &r.groups {
        let _ = writeln!(o, "  {name}: {} ports [{}]", ports.len(), short_list(ports));
    }
    let _ = writeln!(o, "exchange between groups:");
    for gp in &r.exchange {
        let via: Vec<String> = gp.via.iter().map(|p| format!("{p:#06x}")).collect();
        let _ = writeln!(
            o,
            "  {} <-> {}: {} port pairs via {}{}",
            gp.a,
            gp.b,
            gp.pairs,
            via.join(", "),
            if gp.unintended.is_empty() {
                String::new()
            } else {
                "  UNINTENDED".to_string()
            }
        );
    }
    let _ = writeln!(o, "findings: {}", r.findings.len());
    for f in &r.findings {
        let sev = match f.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let _ = writeln!(o, "  {sev} {}: {}", f.code, f.message);
    }
}
