//! Performance manager commands (issue 21): `smctl counters` (like `perfquery`), `smctl
//! errors` (like `ibqueryerrors`), `smctl links` (link health). The master reads and keeps
//! the counters; a follower forwards.

use crate::cluster_cmds::{call, json, run};
use crate::input;
use clap::Args;
use proto::admin::*;
use std::path::PathBuf;
use std::process::ExitCode;

/// `smctl counters`.
#[derive(Args, Debug)]
pub struct CountersArgs {
    /// LID of the node (a switch: its port-0 LID).
    pub lid: u32,
    /// Port (default 1; 255: all ports summed, where the node supports it).
    pub port: Option<u32>,
    /// PortCountersExtended (64-bit data counters), like `perfquery -x`.
    #[arg(short = 'x', long)]
    pub extended: bool,
    /// Print JSON instead of perfquery's layout.
    #[arg(long)]
    pub json: bool,
}

/// `smctl errors`.
#[derive(Args, Debug)]
pub struct ErrorsArgs {
    /// Thresholds in infiniband-diags' `error_thresholds` format (as `ibqueryerrors
    /// --threshold-file`; default: the master's `perfmgr-error-thresholds`).
    #[arg(long, short = 'T')]
    pub threshold_file: Option<PathBuf>,
    /// Print JSON instead of ibqueryerrors' layout.
    #[arg(long)]
    pub json: bool,
}

/// `smctl links`.
#[derive(Args, Debug)]
pub struct LinksArgs {
    /// Every link (default: only links that are not ok).
    #[arg(long)]
    pub all: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// A perfquery line: the name and colon padded with dots to 33 columns.
fn line(name: &str, value: &str) -> String {
    format!("{:.<33}{value}", format!("{name}:"))
}

/// `smctl counters LID [PORT]`.
pub fn counters(a: CountersArgs) -> anyhow::Result<ExitCode> {
    let port = a.port.unwrap_or(1);
    run(|mut c| async move {
        let r = call!(
            c,
            get_counters,
            GetCountersRequest {
                lid: a.lid,
                port,
                extended: a.extended,
            }
        );
        if a.json {
            let fields: serde_json::Map<_, _> = r
                .counters
                .iter()
                .map(|f| (f.name.clone(), serde_json::Value::from(f.value)))
                .collect();
            return json(&serde_json::json!({
                "lid": r.lid, "port": r.port, "extended": r.extended,
                "cap_mask": r.cap_mask_known.then(|| format!("{:#06x}", r.cap_mask)),
                "counters": fields,
            }));
        }
        print!("{}", counters_text(&r));
        Ok(ExitCode::SUCCESS)
    })
}

/// perfquery's layout of a reply.
pub fn counters_text(r: &GetCountersReply) -> String {
    let cap = if r.cap_mask_known {
        format!("{:#06x}", r.cap_mask)
    } else {
        "unknown".to_string()
    };
    let mut o = if r.extended {
        format!(
            "# Port extended counters: Lid {} port {} (CapMask: {cap})\n",
            r.lid, r.port
        )
    } else {
        format!(
            "# Port counters: Lid {} port {} (CapMask: {cap})\n",
            r.lid, r.port
        )
    };
    for f in &r.counters {
        let v = match f.name.as_str() {
            "CounterSelect" => format!("{:#06x}", f.value),
            "CounterSelect2" => format!("{:#04x}", f.value),
            _ => f.value.to_string(),
        };
        o.push_str(&line(&f.name, &v));
        o.push('\n');
    }
    o
}

/// `smctl errors`.
pub fn errors(a: ErrorsArgs) -> anyhow::Result<ExitCode> {
    let thresholds = match &a.threshold_file {
        Some(p) => input::read_limited(p, sm_core::perf::MAX_THRESHOLDS_TEXT, "threshold file")?,
        None => String::new(),
    };
    run(|mut c| async move {
        let r = call!(c, get_errors, GetErrorsRequest { thresholds });
        if a.json {
            let ports: Vec<_> = r
                .ports
                .iter()
                .map(|p| {
                    serde_json::json!({
                        "node_guid": format!("{:#018x}", p.node_guid),
                        "description": p.description, "lid": p.lid, "port": p.port,
                        "switch": p.is_switch,
                        "peer": (p.peer_node_guid != 0).then(|| serde_json::json!({
                            "node_guid": format!("{:#018x}", p.peer_node_guid),
                            "port": p.peer_port, "description": p.peer_description})),
                        "over": p.over.iter().map(|f| (f.name.clone(), serde_json::Value::from(f.value)))
                            .collect::<serde_json::Map<_, _>>(),
                    })
                })
                .collect();
            return json(&serde_json::json!({
                "ports": ports, "ports_checked": r.ports_checked, "sweep": r.sweep,
                "sweep_age_ms": r.sweep_age_ms, "enabled": r.enabled,
                "thresholds": r.thresholds,
            }));
        }
        print!("{}", errors_text(&r));
        Ok(ExitCode::SUCCESS)
    })
}

/// ibqueryerrors' layout: per node, its ports over threshold; then the summary.
pub fn errors_text(r: &GetErrorsReply) -> String {
    let mut o = String::new();
    if r.sweep == 0 {
        o.push_str(if r.enabled {
            "## no counter sweep has finished yet on this master\n"
        } else {
            "## the performance manager is off (perfmgr = false)\n"
        });
    }
    let mut last = None;
    let mut nodes = 0;
    for p in &r.ports {
        if last != Some(p.node_guid) {
            nodes += 1;
            last = Some(p.node_guid);
            o.push_str(&format!(
                "Errors for {:#018x} \"{}\"\n",
                p.node_guid, p.description
            ));
        }
        let over: Vec<String> = p
            .over
            .iter()
            .map(|f| format!("[{} == {}]", f.name, f.value))
            .collect();
        let peer = if p.peer_node_guid != 0 {
            format!(
                " (link to {:#018x} port {} \"{}\")",
                p.peer_node_guid, p.peer_port, p.peer_description
            )
        } else {
            String::new()
        };
        o.push_str(&format!(
            "   GUID {:#x} port {}: {}{peer}\n",
            p.node_guid,
            p.port,
            over.join(" ")
        ));
    }
    o.push_str(&format!(
        "## Summary: {nodes} nodes with errors; counter sweep {} ({} s ago)\n",
        r.sweep,
        r.sweep_age_ms / 1000
    ));
    o.push_str(&format!(
        "##          {} ports checked, {} ports have errors beyond threshold\n",
        r.ports_checked,
        r.ports.len()
    ));
    let th: Vec<&str> = r.thresholds.lines().collect();
    o.push_str(&format!("## Thresholds: {}\n", th.join(" ")));
    o
}

/// `smctl links`.
pub fn links(a: LinksArgs) -> anyhow::Result<ExitCode> {
    run(|mut c| async move {
        let r = call!(c, get_link_health, GetLinkHealthRequest {});
        let shown: Vec<&LinkHealthRow> = r
            .links
            .iter()
            .filter(|l| a.all || l.health != "ok")
            .collect();
        if a.json {
            let v: Vec<_> = shown
                .iter()
                .map(|l| {
                    let end = |e: &Option<LinkEnd>| {
                        let e = e.clone().unwrap_or_default();
                        serde_json::json!({"node_guid": format!("{:#018x}", e.node_guid),
                            "port": e.port, "description": e.description})
                    };
                    serde_json::json!({"a": end(&l.a), "b": end(&l.b), "health": l.health, "why": l.why})
                })
                .collect();
            return json(&v);
        }
        let (mut ok, mut degraded, mut down) = (0, 0, 0);
        for l in &r.links {
            match l.health.as_str() {
                "ok" => ok += 1,
                "degraded" => degraded += 1,
                _ => down += 1,
            }
        }
        for l in shown {
            let a = l.a.clone().unwrap_or_default();
            let b = l.b.clone().unwrap_or_default();
            println!(
                "{:<8} {:#018x}[{}] \"{}\" <-> {:#018x}[{}] \"{}\"{}",
                l.health,
                a.node_guid,
                a.port,
                a.description,
                b.node_guid,
                b.port,
                b.description,
                if l.why.is_empty() {
                    String::new()
                } else {
                    format!("  # {}", l.why)
                }
            );
        }
        println!(
            "## {} links: {ok} ok, {degraded} degraded, {down} down",
            r.links.len()
        );
        Ok(ExitCode::SUCCESS)
    })
}
