//! `smctl topo ...`: generate topology files (fat trees, tori, random fabrics) that ibsim
//! loads, and summarise topology files or generator specs.
//!
//! Errors reaching the operator start with a stable code: `E_TOPO_ARGS` (bad generator
//! parameters or spec), `E_TOPO_PARSE` (a topology file that does not parse), `E_TOPO_IO`
//! (reading or writing a file), `E_TOPO_WRITE` (a topology the file format cannot carry).

use anyhow::{Context, anyhow};
use clap::{Args, Subcommand};
use fabric::generate::{FatTreeSpec, RandomSpec, TorusSpec};
use fabric::{DegradedSpec, GenSpec, NodeType, Topology, netfile};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `smctl topo`.
#[derive(Args)]
pub struct TopoArgs {
    #[command(subcommand)]
    cmd: TopoCmd,
}

#[derive(Subcommand)]
enum TopoCmd {
    /// Generate a topology file (ibnetdiscover/ibsim format) on stdout or into -o FILE.
    #[command(subcommand)]
    Gen(GenCmd),
    /// Print node and link counts of a topology file or a generator spec (e.g. ft3:36).
    Info {
        /// A topology file, or a spec: ft2:K, ft3:K[:hosts=H][:pods=P], torus:AxBxC[:hosts=H],
        /// random:N[:seed=S][:radix=R][:links=L][:hosts=H], any of them degraded with
        /// :remove=N or :remove=P% (switch-to-switch links) and :seed=S.
        source: String,
    },
}

#[derive(Args)]
struct Output {
    /// Write the file here instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
}

#[derive(Subcommand)]
enum GenCmd {
    /// A 2- or 3-level fat tree of radix-K switches.
    FatTree {
        /// Levels: 2 (leaves and spines) or 3 (pods of leaves and aggregation switches, cores).
        #[arg(long, default_value_t = 2)]
        levels: u8,
        /// Switch radix K (even, 2 to 254).
        #[arg(long)]
        radix: u16,
        /// Hosts per leaf switch (default K/2, the most that fit).
        #[arg(long)]
        hosts_per_leaf: Option<u16>,
        /// Pods of a 3-level tree (default K).
        #[arg(long)]
        pods: Option<u16>,
        #[command(flatten)]
        out: Output,
    },
    /// An n-dimensional torus, one switch per coordinate.
    Torus {
        /// Dimension sizes, e.g. 6x6x6.
        #[arg(long)]
        dims: String,
        /// Hosts per switch.
        #[arg(long, default_value_t = 1)]
        hosts_per_switch: u16,
        #[command(flatten)]
        out: Output,
    },
    /// A random connected irregular fabric (seeded, reproducible).
    Random {
        /// Number of switches.
        #[arg(long)]
        switches: u32,
        /// Seed of the random choices.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Ports per switch.
        #[arg(long, default_value_t = 36)]
        radix: u16,
        /// Switch-to-switch links per switch (default radix/2).
        #[arg(long)]
        links_per_switch: Option<u16>,
        /// Hosts per switch (default radix minus links per switch).
        #[arg(long)]
        hosts_per_switch: Option<u16>,
        #[command(flatten)]
        out: Output,
    },
    /// Any fabric named by a spec string such as ft3:36, torus:6x6x6, random:256:seed=7,
    /// also degraded (switch-to-switch links removed): ft2:36:remove=3:seed=1, ft3:36:remove=1%.
    Spec {
        /// The spec.
        spec: String,
        #[command(flatten)]
        out: Output,
    },
}

/// Runs `smctl topo`.
pub fn run(args: TopoArgs) -> anyhow::Result<ExitCode> {
    match args.cmd {
        TopoCmd::Gen(cmd) => {
            let (spec, out) = gen_spec(cmd)?;
            generate(&spec, out.output.as_deref())
        }
        TopoCmd::Info { source } => info(&source),
    }
}

/// Turns `smctl topo gen ...` arguments into a validated spec (degraded only with `spec`).
fn gen_spec(cmd: GenCmd) -> anyhow::Result<(DegradedSpec, Output)> {
    let (spec, out) = match cmd {
        GenCmd::FatTree {
            levels,
            radix,
            hosts_per_leaf,
            pods,
            out,
        } => {
            let mut s = FatTreeSpec::new(levels, radix);
            if let Some(h) = hosts_per_leaf {
                s.hosts_per_leaf = h;
            }
            if let Some(p) = pods {
                s.pods = p;
            }
            (GenSpec::FatTree(s), out)
        }
        GenCmd::Torus {
            dims,
            hosts_per_switch,
            out,
        } => {
            let sizes = dims
                .split(['x', 'X'])
                .map(|d| d.trim().parse::<u16>())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|_| {
                    anyhow!(
                        "E_TOPO_ARGS: --dims must look like 6x6x6 (sizes 1 to 65535), not {dims:?}"
                    )
                })?;
            (
                GenSpec::Torus(TorusSpec {
                    dims: sizes,
                    hosts_per_switch,
                }),
                out,
            )
        }
        GenCmd::Random {
            switches,
            seed,
            radix,
            links_per_switch,
            hosts_per_switch,
            out,
        } => {
            let links = links_per_switch.unwrap_or(radix / 2);
            let spec = RandomSpec {
                switches,
                radix,
                links_per_switch: links,
                hosts_per_switch: hosts_per_switch.unwrap_or(radix.saturating_sub(links)),
                seed,
            };
            (GenSpec::Random(spec), out)
        }
        GenCmd::Spec { spec, out } => {
            let d = spec
                .parse::<DegradedSpec>()
                .map_err(|e| anyhow!("E_TOPO_ARGS: {e}"))?;
            d.base.validate().map_err(|e| anyhow!("E_TOPO_ARGS: {e}"))?;
            return Ok((d, out));
        }
    };
    spec.validate().map_err(|e| anyhow!("E_TOPO_ARGS: {e}"))?;
    Ok((
        DegradedSpec {
            base: spec,
            remove: None,
            seed: 0,
        },
        out,
    ))
}

fn generate(spec: &DegradedSpec, output: Option<&Path>) -> anyhow::Result<ExitCode> {
    let topo = spec.generate().map_err(|e| anyhow!("E_TOPO_ARGS: {e}"))?;
    let text = netfile::write(&topo).map_err(|e| anyhow!("E_TOPO_WRITE: {e}"))?;
    match output {
        Some(path) => std::fs::write(path, &text)
            .with_context(|| format!("E_TOPO_IO: cannot write {}", path.display()))?,
        None => {
            let mut stdout = std::io::stdout().lock();
            match stdout
                .write_all(text.as_bytes())
                .and_then(|()| stdout.flush())
            {
                Ok(()) => {}
                // (A reader that went away, `| head`, ends smctl by SIGPIPE: see main.rs.)
                Err(e) => return Err(anyhow!("E_TOPO_IO: cannot write to stdout: {e}")),
            }
        }
    }
    let c = Counts::of(&topo);
    let limits = netfile::IbsimLimits::of(&topo);
    eprintln!(
        "{spec}: {} switches, {} hosts, {} routers, {} links{}{}",
        c.switches,
        c.cas,
        c.routers,
        c.links,
        output.map_or(String::new(), |p| format!(" -> {}", p.display())),
        if limits.exceed_defaults() {
            format!(" (ibsim needs {})", limits.args().join(" "))
        } else {
            String::new()
        }
    );
    Ok(ExitCode::SUCCESS)
}

fn info(source: &str) -> anyhow::Result<ExitCode> {
    let path = Path::new(source);
    let (topo, what) = if path.exists() {
        let text = crate::input::read_file(path)
            .with_context(|| format!("E_TOPO_IO: cannot read {}", path.display()))?;
        let topo = netfile::parse(&text).map_err(|e| {
            anyhow!(
                "E_TOPO_PARSE: {}:{}:{}: {}",
                path.display(),
                e.line,
                e.col,
                e.kind
            )
        })?;
        (topo, format!("file {}", path.display()))
    } else {
        match source.parse::<DegradedSpec>() {
            Ok(spec) => (
                spec.generate().map_err(|e| anyhow!("E_TOPO_ARGS: {e}"))?,
                format!("generated {spec}"),
            ),
            Err(e) => {
                return Err(anyhow!(
                    "E_TOPO_ARGS: {source:?} is neither an existing file nor a valid spec ({e})"
                ));
            }
        }
    };
    let c = Counts::of(&topo);
    println!("source:          {what}");
    println!("switches:        {}", c.switches);
    println!("hosts (CAs):     {}", c.cas);
    println!("routers:         {}", c.routers);
    println!(
        "links:           {} ({} switch-switch, {} switch-CA, {} other)",
        c.links, c.switch_links, c.host_links, c.other_links
    );
    println!(
        "switch ports:    {} ({} cabled), radix {}..{}",
        c.switch_ports, c.switch_ports_cabled, c.min_radix, c.max_radix
    );
    println!(
        "ibsim flags:     {}",
        netfile::IbsimLimits::of(&topo).args().join(" ")
    );
    Ok(ExitCode::SUCCESS)
}

/// Summary counts of a topology.
#[derive(Debug, Default, PartialEq, Eq)]
struct Counts {
    switches: usize,
    cas: usize,
    routers: usize,
    links: usize,
    switch_links: usize,
    host_links: usize,
    other_links: usize,
    switch_ports: usize,
    switch_ports_cabled: usize,
    min_radix: u8,
    max_radix: u8,
}

impl Counts {
    fn of(t: &Topology) -> Counts {
        let mut c = Counts {
            min_radix: u8::MAX,
            ..Counts::default()
        };
        for (_, n) in t.nodes() {
            match n.node_type {
                NodeType::Switch => {
                    c.switches += 1;
                    c.switch_ports += usize::from(n.num_ports());
                    c.switch_ports_cabled += n.ports.iter().filter(|p| p.remote.is_some()).count();
                    c.min_radix = c.min_radix.min(n.num_ports());
                    c.max_radix = c.max_radix.max(n.num_ports());
                }
                NodeType::Ca => c.cas += 1,
                NodeType::Router => c.routers += 1,
            }
        }
        if c.switches == 0 {
            c.min_radix = 0;
        }
        for (a, b) in t.links() {
            c.links += 1;
            let types = (t.node(a.node).node_type, t.node(b.node).node_type);
            match types {
                (NodeType::Switch, NodeType::Switch) => c.switch_links += 1,
                (NodeType::Switch, NodeType::Ca) | (NodeType::Ca, NodeType::Switch) => {
                    c.host_links += 1
                }
                _ => c.other_links += 1,
            }
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(subcommand)]
        cmd: TopoCmd,
    }

    fn spec_of(args: &[&str]) -> anyhow::Result<DegradedSpec> {
        let cli = Cli::try_parse_from(std::iter::once("topo").chain(args.iter().copied()))?;
        match cli.cmd {
            TopoCmd::Gen(cmd) => gen_spec(cmd).map(|(s, _)| s),
            TopoCmd::Info { .. } => Err(anyhow!("not gen")),
        }
    }

    #[test]
    fn gen_arguments_make_specs() {
        let s = spec_of(&["gen", "fat-tree", "--levels", "3", "--radix", "36"]).unwrap();
        assert_eq!(s.to_string(), "ft3:36");
        let s = spec_of(&[
            "gen",
            "fat-tree",
            "--levels",
            "3",
            "--radix",
            "48",
            "--hosts-per-leaf",
            "8",
            "-o",
            "x",
        ])
        .unwrap();
        assert_eq!(s.to_string(), "ft3:48:hosts=8");
        let s = spec_of(&["gen", "torus", "--dims", "6x6x6"]).unwrap();
        assert_eq!(s.to_string(), "torus:6x6x6");
        let s = spec_of(&["gen", "random", "--switches", "256", "--seed", "7"]).unwrap();
        assert_eq!(s.to_string(), "random:256:seed=7");
        let s = spec_of(&["gen", "spec", "ft2:36"]).unwrap();
        assert_eq!(s.to_string(), "ft2:36");
        // Degraded specs (as `smctl route --topology` takes them) name the same fabric.
        let s = spec_of(&["gen", "spec", "ft2:36:remove=3:seed=1"]).unwrap();
        assert_eq!(s.to_string(), "ft2:36:remove=3:seed=1");
        let full = "ft2:36".parse::<GenSpec>().unwrap().generate().unwrap();
        let c = Counts::of(&s.generate().unwrap());
        assert_eq!(c.switch_links, Counts::of(&full).switch_links - 3);
        assert_eq!(c.cas, Counts::of(&full).cas);
        let s = spec_of(&["gen", "spec", "ft3:36:pods=6:remove=1%:seed=1"]).unwrap();
        assert_eq!(s.to_string(), "ft3:36:pods=6:remove=1%:seed=1");
        assert!(spec_of(&["gen", "spec", "ft2:35:remove=3"]).is_err());
    }

    #[test]
    fn bad_arguments_are_explained() {
        let e = spec_of(&["gen", "fat-tree", "--levels", "3", "--radix", "35"]).unwrap_err();
        assert!(
            e.to_string().contains("E_TOPO_ARGS") && e.to_string().contains("even"),
            "{e}"
        );
        let e =
            spec_of(&["gen", "fat-tree", "--radix", "36", "--hosts-per-leaf", "19"]).unwrap_err();
        assert!(e.to_string().contains("at most radix/2 = 18"), "{e}");
        let e = spec_of(&["gen", "torus", "--dims", "6xx6"]).unwrap_err();
        assert!(e.to_string().contains("--dims"), "{e}");
        let e = spec_of(&["gen", "random", "--switches", "0"]).unwrap_err();
        assert!(e.to_string().contains("at least 1 switch"), "{e}");
        assert!(spec_of(&["gen", "fat-tree", "--radix", "-4"]).is_err());
    }

    #[test]
    fn counts() {
        let t = "ft2:4".parse::<GenSpec>().unwrap().generate().unwrap();
        let c = Counts::of(&t);
        assert_eq!((c.switches, c.cas, c.links), (6, 8, 16));
        assert_eq!((c.switch_links, c.host_links, c.other_links), (8, 8, 0));
        assert_eq!((c.switch_ports, c.switch_ports_cabled), (24, 24));
        assert_eq!((c.min_radix, c.max_radix), (4, 4));
    }
}
