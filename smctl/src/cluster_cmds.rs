//! Cluster commands of smctl: one per SmAdmin RPC, human output in the style of the
//! infiniband-diags tools, `--json` on every read.

use crate::client::{self, Client, block_on, connect, status_err};
use clap::{Args, Subcommand};
use proto::admin::*;
use std::process::ExitCode;

pub(crate) fn json<T: serde::Serialize>(v: &T) -> anyhow::Result<ExitCode> {
    println!("{}", serde_json::to_string_pretty(v)?);
    Ok(ExitCode::SUCCESS)
}

fn ms_utc(ms: u64) -> String {
    if ms == 0 {
        return "-".into();
    }
    let s = ms / 1000;
    format!(
        "{:02}:{:02}:{:02}.{:03} UTC",
        (s / 3600) % 24,
        (s / 60) % 60,
        s % 60,
        ms % 1000
    )
}

pub(crate) fn run<F, Fut>(f: F) -> anyhow::Result<ExitCode>
where
    F: FnOnce(Client) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<ExitCode>>,
{
    block_on(async move {
        let c = connect().await?;
        f(c).await
    })?
}

macro_rules! call {
    ($c:expr, $m:ident, $r:expr) => {
        $c.$m($r)
            .await
            .map_err($crate::client::status_err)?
            .into_inner()
    };
}
pub(crate) use call;

/// A call that writes to the log: a timeout or a connection lost after sending it leaves
/// its outcome unknown (exit 7).
macro_rules! write_call {
    ($c:expr, $m:ident, $r:expr) => {
        $c.$m($r)
            .await
            .map_err($crate::client::write_err)?
            .into_inner()
    };
}
pub(crate) use write_call;

/// Reads that may ask the leader.
#[derive(Args, Debug, Clone, Copy)]
pub struct ReadOpts {
    /// Answer linearizably (read-your-writes: served by the leader holding its lease).
    #[arg(long)]
    pub linearizable: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `smctl sminfo`.
pub fn sminfo(o: ReadOpts) -> anyhow::Result<ExitCode> {
    let js = o.json;
    run(|mut c| async move {
        let r = call!(
            c,
            sm_info,
            SmInfoRequest {
                linearizable: o.linearizable
            }
        );
        if js {
            return json(&serde_json::json!({
                "sm_lid": r.sm_lid, "sm_guid": format!("{:#018x}", r.sm_guid),
                "activity_count": r.activity_count, "priority": r.priority, "state": r.state,
                "state_name": r.state_name, "term": r.term, "replica_id": r.replica_id}));
        }
        println!(
            "sminfo: sm lid {} sm guid {:#018x}, activity count {} priority {} state {} {}",
            r.sm_lid, r.sm_guid, r.activity_count, r.priority, r.state, r.state_name
        );
        Ok(ExitCode::SUCCESS)
    })
}

/// `smctl cluster`.
pub fn cluster(o: ReadOpts) -> anyhow::Result<ExitCode> {
    let js = o.json;
    run(|mut c| async move {
        let s = call!(
            c,
            cluster_status,
            ClusterStatusRequest {
                linearizable: o.linearizable
            }
        );
        if js {
            let reps: Vec<_> = s
                .replicas
                .iter()
                .map(|r| {
                    serde_json::json!({
                "id": r.id, "address": r.admin_address, "role": Role::label(r.role),
                "match_index": r.match_index, "lag": r.lag, "priority": r.priority,
                "port_guid": format!("{:#018x}", r.port_guid), "voter": r.voter})
                })
                .collect();
            return json(&serde_json::json!({
                "self_id": s.self_id, "term": s.term, "leader_id": s.leader_id,
                "commit_index": s.commit_index, "applied_index": s.applied_index,
                "policy_version": s.policy_version, "tenants_version": s.tenants_version,
                "leader_figures": s.leader_figures, "intent_pending": s.intent_pending,
                "last_sweep_unix_ms": s.last_sweep_unix_ms, "subnet_up_unix_ms": s.subnet_up_unix_ms,
                "master": s.master.as_ref().map(|m| serde_json::json!({"term": m.term, "replica_id": m.replica_id,
                    "sm_port_guid": format!("{:#018x}", m.sm_port_guid)})),
                "replicas": reps}));
        }
        println!(
            "replica {} sees: term {} leader {} commit {} applied {} policy v{} tenants v{}{}",
            s.self_id,
            s.term,
            s.leader_id,
            s.commit_index,
            s.applied_index,
            s.policy_version,
            s.tenants_version,
            if s.intent_pending {
                " (intent pending)"
            } else {
                ""
            }
        );
        if let Some(m) = &s.master {
            println!(
                "master: replica {} term {} sm port {:#018x}",
                m.replica_id, m.term, m.sm_port_guid
            );
        }
        println!(
            "last sweep {}  SUBNET UP {}",
            ms_utc(s.last_sweep_unix_ms),
            ms_utc(s.subnet_up_unix_ms)
        );
        println!(
            "{:>3}  {:<21} {:<12} {:>8} {:>5}  VOTER",
            "ID", "ADDRESS", "ROLE", "MATCH", "LAG"
        );
        for r in &s.replicas {
            println!(
                "{:>3}  {:<21} {:<12} {:>8} {:>5}  {}",
                r.id,
                r.admin_address,
                Role::label(r.role),
                r.match_index,
                r.lag,
                if r.voter { "yes" } else { "no" }
            );
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// `smctl nodes` filters.
#[derive(Args, Debug, Clone)]
pub struct NodesArgs {
    /// Only this type: switch, ca, router.
    #[arg(long = "type")]
    pub node_type: Option<String>,
    /// Only nodes whose description contains this.
    #[arg(long)]
    pub name: Option<String>,
    /// Only the node with this node or port GUID.
    #[arg(long)]
    pub guid: Option<String>,
    #[command(flatten)]
    pub read: ReadOpts,
}

fn parse_guid(s: &str) -> anyhow::Result<u64> {
    let t = s.trim_start_matches("0x").trim_start_matches("0X");
    u64::from_str_radix(t, 16).map_err(|_| anyhow::anyhow!("bad GUID {s:?}"))
}

/// `smctl nodes`.
pub fn nodes(a: NodesArgs) -> anyhow::Result<ExitCode> {
    let js = a.read.json;
    let guid = a.guid.as_deref().map(parse_guid).transpose()?.unwrap_or(0);
    run(|mut c| async move {
        let r = call!(
            c,
            list_nodes,
            ListNodesRequest {
                linearizable: a.read.linearizable,
                node_type: a.node_type.unwrap_or_default(),
                name_contains: a.name.unwrap_or_default(),
                guid,
            }
        );
        if js {
            let v: Vec<_> = r.nodes.iter().map(|n| serde_json::json!({
                "type": n.node_type, "node_guid": format!("{:#018x}", n.node_guid),
                "description": n.description, "ports": n.num_ports, "lid": n.lid,
                "links": n.links.iter().map(|l| serde_json::json!({"port": l.port,
                    "port_guid": format!("{:#018x}", l.port_guid), "width": l.width, "speed": l.speed,
                    "remote_node_guid": format!("{:#018x}", l.remote_node_guid),
                    "remote_port": l.remote_port, "remote_description": l.remote_description})).collect::<Vec<_>>()
            })).collect();
            return json(&v);
        }
        for n in &r.nodes {
            let ty = match n.node_type.as_str() {
                "switch" => "Switch",
                "ca" => "Ca",
                _ => "Rt",
            };
            println!(
                "{ty}\t{} {:#018x}\t# \"{}\" lid {}",
                n.num_ports, n.node_guid, n.description, n.lid
            );
            for l in &n.links {
                println!(
                    "[{}]\t\"{:#018x}\"[{}]\t\t# \"{}\" {}{}",
                    l.port,
                    l.remote_node_guid,
                    l.remote_port,
                    l.remote_description,
                    l.width,
                    l.speed
                );
            }
            println!();
        }
        Ok(ExitCode::SUCCESS)
    })
}

fn dots(name: &str, value: impl std::fmt::Display) {
    println!("{name:.<32}{value}");
}

/// `smctl port LID PORT`.
pub fn port(lid: u32, port: u32, o: ReadOpts) -> anyhow::Result<ExitCode> {
    let js = o.json;
    run(|mut c| async move {
        let p = call!(
            c,
            get_port,
            GetPortRequest {
                linearizable: o.linearizable,
                lid,
                port
            }
        );
        if js {
            return json(&serde_json::json!({
                "node_guid": format!("{:#018x}", p.node_guid), "description": p.node_description,
                "type": p.node_type, "port": p.port, "port_guid": format!("{:#018x}", p.port_guid),
                "lid": p.lid, "lmc": p.lmc, "link_width": p.link_width, "link_speed": p.link_speed,
                "port_state": p.port_state, "remote_node_guid": format!("{:#018x}", p.remote_node_guid),
                "remote_port": p.remote_port, "master_sm_lid": p.master_sm_lid,
                "pkeys": p.pkeys.iter().map(|k| format!("{k:#06x}")).collect::<Vec<_>>(),
                "source": p.source,
                "port_info": p.port_info.iter().map(|f| (f.name.clone(), serde_json::Value::from(f.value.clone()))).collect::<serde_json::Map<_, _>>(),
                "read_sweep": p.read_sweep, "read_unix_ms": p.read_unix_ms,
                "read_by_replica": p.read_by_replica}));
        }
        println!(
            "# Port info: Lid {lid} port {port} ({}, source: {})",
            p.node_description, p.source
        );
        if !p.port_info.is_empty() {
            println!(
                "# read by the master on replica {} in heavy sweep {} (discovery at {})",
                p.read_by_replica,
                p.read_sweep,
                ms_utc(p.read_unix_ms)
            );
            for f in &p.port_info {
                dots(&format!("{}:", f.name), &f.value);
            }
            println!("# from the replicated state");
        }
        dots("NodeGuid:", format!("{:#018x}", p.node_guid));
        dots("PortGuid:", format!("{:#018x}", p.port_guid));
        dots("Lid:", p.lid);
        dots("LMC:", p.lmc);
        dots("SMLid:", p.master_sm_lid);
        dots("LinkState:", &p.port_state);
        dots(
            "LinkWidthActive:",
            if p.link_width.is_empty() {
                "-"
            } else {
                &p.link_width
            },
        );
        dots(
            "LinkSpeedActive:",
            if p.link_speed.is_empty() {
                "-"
            } else {
                &p.link_speed
            },
        );
        if p.remote_node_guid != 0 {
            dots(
                "Remote:",
                format!("{:#018x}[{}]", p.remote_node_guid, p.remote_port),
            );
        }
        dots(
            "P_KeyTable:",
            p.pkeys
                .iter()
                .filter(|k| **k & 0x7fff != 0)
                .map(|k| format!("{k:#06x}"))
                .collect::<Vec<_>>()
                .join(" "),
        );
        Ok(ExitCode::SUCCESS)
    })
}

/// `smctl route LID` (cluster).
pub fn route(lid: u32, linearizable: bool, js: bool) -> anyhow::Result<ExitCode> {
    run(|mut c| async move {
        let r = call!(c, get_route, GetRouteRequest { linearizable, lid });
        if js {
            return json(&serde_json::json!({
                "switch_guid": format!("{:#018x}", r.switch_guid), "description": r.description,
                "lid": r.lid, "top": r.top,
                "entries": r.entries.iter().map(|e| serde_json::json!({"dlid": e.dlid, "port": e.out_port, "dest": e.dest})).collect::<Vec<_>>()}));
        }
        println!(
            "Unicast lids [0x0-{:#x}] of switch Lid {} guid {:#018x} ({}):",
            r.top, r.lid, r.switch_guid, r.description
        );
        println!("  Lid  Out   Destination");
        println!("       Port     Info ");
        for e in &r.entries {
            println!("{:#06x} {:03} : ('{}')", e.dlid, e.out_port, e.dest);
        }
        println!("{} valid lids dumped ", r.entries.len());
        Ok(ExitCode::SUCCESS)
    })
}

/// `smctl trace SLID DLID`.
pub fn trace(slid: u32, dlid: u32, o: ReadOpts) -> anyhow::Result<ExitCode> {
    let js = o.json;
    run(|mut c| async move {
        let r = call!(
            c,
            trace_path,
            TracePathRequest {
                linearizable: o.linearizable,
                slid,
                dlid
            }
        );
        if js {
            return json(
                &serde_json::json!({"complete": r.complete, "problem": r.problem,
                "hops": r.hops.iter().map(|h| serde_json::json!({"node_guid": format!("{:#018x}", h.node_guid),
                "description": h.description, "type": h.node_type, "lid": h.lid, "in_port": h.in_port, "out_port": h.out_port})).collect::<Vec<_>>()}),
            );
        }
        let n = r.hops.len();
        for (i, h) in r.hops.iter().enumerate() {
            if i == 0 {
                println!(
                    "From {} {{{:#018x}}} portnum {} lid {} \"{}\"",
                    h.node_type, h.node_guid, h.out_port, h.lid, h.description
                );
            } else if i + 1 == n && r.complete {
                println!(
                    "To {} {{{:#018x}}} portnum {} lid {} \"{}\"",
                    h.node_type, h.node_guid, h.in_port, h.lid, h.description
                );
            } else {
                println!(
                    "[{}] -> {} port {{{:#018x}}}[{}] lid {} \"{}\"",
                    r.hops[i - 1].out_port,
                    h.node_type,
                    h.node_guid,
                    h.in_port,
                    h.lid,
                    h.description
                );
            }
        }
        if !r.complete {
            eprintln!("trace: incomplete: {}", r.problem);
            return Ok(ExitCode::from(client::EXIT_ERROR));
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// `smctl partitions show`.
pub fn partitions_show(o: ReadOpts) -> anyhow::Result<ExitCode> {
    let js = o.json;
    run(|mut c| async move {
        let p = call!(
            c,
            get_policy,
            GetPolicyRequest {
                linearizable: o.linearizable
            }
        );
        if js {
            return json(
                &serde_json::json!({"version": p.version, "applied_at_index": p.applied_at_index, "text": p.text}),
            );
        }
        println!(
            "# partition policy version {} (applied at index {})",
            p.version, p.applied_at_index
        );
        print!("{}", p.text);
        Ok(ExitCode::SUCCESS)
    })
}

/// A policy text (`-` = stdin), refused locally over `partitions::MAX_POLICY_BYTES`.
fn read_text(file: &str) -> anyhow::Result<String> {
    crate::input::read_policy(file)
}

/// `smctl partitions check FILE --server` (cluster validate).
pub fn partitions_check(file: &str, js: bool) -> anyhow::Result<ExitCode> {
    let text = read_text(file)?;
    let file = file.to_string();
    run(|mut c| async move {
        let r = call!(c, validate_policy, ValidatePolicyRequest { text });
        if js {
            return json(&serde_json::json!({"ok": r.ok, "partitions": r.partitions,
                "diagnostics": r.diagnostics.iter().map(|d| serde_json::json!({"code": d.code, "severity": d.severity,
                "line": d.line, "col": d.col, "message": d.message})).collect::<Vec<_>>()}));
        }
        for d in &r.diagnostics {
            println!(
                "{file}:{}:{}: {} {}: {}",
                d.line, d.col, d.severity, d.code, d.message
            );
        }
        println!(
            "{file}: {} ({} partitions with members on the fabric)",
            if r.ok { "ok" } else { "errors" },
            r.partitions
        );
        Ok(if r.ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(client::EXIT_ERROR)
        })
    })
}

fn keys(v: &[u32]) -> String {
    if v.is_empty() {
        return "-".into();
    }
    v.iter()
        .map(|k| format!("{k:#06x}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// `smctl partitions diff FILE`.
pub fn partitions_diff(file: &str, o: ReadOpts) -> anyhow::Result<ExitCode> {
    let text = read_text(file)?;
    let js = o.json;
    run(|mut c| async move {
        let r = call!(
            c,
            diff_policy,
            DiffPolicyRequest {
                linearizable: o.linearizable,
                text
            }
        );
        if js {
            return json(
                &serde_json::json!({"base_version": r.base_version, "unchanged": r.unchanged,
                "changes": r.changes.iter().map(|t| serde_json::json!({"node_guid": format!("{:#018x}", t.node_guid),
                "port": t.port, "description": t.description, "current": keys(&t.current), "proposed": keys(&t.proposed)})).collect::<Vec<_>>()}),
            );
        }
        println!(
            "# against policy version {}: {} table(s) change, {} unchanged",
            r.base_version,
            r.changes.len(),
            r.unchanged
        );
        for t in &r.changes {
            println!(
                "{:#018x}[{}] \"{}\"\n  - {}\n  + {}",
                t.node_guid,
                t.port,
                t.description,
                keys(&t.current),
                keys(&t.proposed)
            );
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// `smctl partitions apply FILE --expect-version N`.
pub fn partitions_apply(file: &str, expect: Option<u64>, js: bool) -> anyhow::Result<ExitCode> {
    let text = read_text(file)?;
    run(|mut c| async move {
        let expected_version = match expect {
            Some(v) => v,
            None => call!(c, get_policy, GetPolicyRequest { linearizable: true }).version,
        };
        let r = write_call!(
            c,
            apply_policy,
            ApplyPolicyRequest {
                text,
                expected_version,
                request_id: 0
            }
        );
        if js {
            return json(
                &serde_json::json!({"version": r.version, "index": r.index, "warnings": r.warnings}),
            );
        }
        for w in &r.warnings {
            eprintln!("warning: {w}");
        }
        println!(
            "partition policy version {} committed at index {}",
            r.version, r.index
        );
        Ok(ExitCode::SUCCESS)
    })
}

/// `smctl partitions plan [FILE] --server`.
pub fn partitions_plan(file: Option<&str>, o: ReadOpts) -> anyhow::Result<ExitCode> {
    let text = file.map(read_text).transpose()?.unwrap_or_default();
    let js = o.json;
    run(|mut c| async move {
        let r = call!(
            c,
            plan_policy,
            PlanPolicyRequest {
                linearizable: o.linearizable,
                text
            }
        );
        if js {
            println!("{}", r.plan_json);
            return Ok(ExitCode::SUCCESS);
        }
        println!(
            "{:<20} {:>4} {:<6} {:<3} {:<28} KEYS",
            "NODE", "PORT", "KIND", "ENF", "DESCRIPTION"
        );
        for p in &r.ports {
            let enf = match (p.enforce_in, p.enforce_out) {
                (true, true) => "io",
                (true, false) => "i",
                (false, true) => "o",
                _ => "-",
            };
            println!(
                "{:#018x}   {:>4} {:<6} {:<3} {:<28} {}",
                p.node_guid,
                p.port,
                p.kind,
                enf,
                p.description,
                keys(&p.pkeys)
            );
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// `smctl audit`.
pub fn audit(o: ReadOpts) -> anyhow::Result<ExitCode> {
    let js = o.json;
    client::set_command_timeout(client::AUDIT_REQUEST_TIMEOUT);
    run(|mut c| async move {
        let req = AuditRequest {
            linearizable: o.linearizable,
        };
        let pc = c.clone();
        let r = with_spinner(
            "audit: the master is reading every P_KeyTable back from the fabric",
            c.audit(req),
            move || {
                let mut pc = pc.clone();
                async move {
                    let p = pc
                        .audit_progress(AuditProgressRequest {})
                        .await
                        .ok()?
                        .into_inner();
                    p.running
                        .then(|| format!("{}/{} ports read", p.ports_done, p.ports_total))
                }
            },
        )
        .await
        .map_err(status_err)?
        .into_inner();
        eprintln!(
            "audit: {} port tables read from the {} by the master on replica {} in {} ms ({} SMPs) at {}; {} port(s) did not answer",
            r.ports,
            r.source,
            r.read_by_replica,
            r.read_ms,
            r.smps,
            ms_utc(r.read_unix_ms),
            r.unanswered.len()
        );
        for u in &r.unanswered {
            eprintln!("audit: not read: {u}");
        }
        if r.vl_blocks > 0 {
            eprintln!(
                "audit: {} VL table blocks read back, {} differ from the record or did not answer",
                r.vl_blocks,
                r.vl_findings.len()
            );
        }
        if js {
            println!("{}", r.report_json);
        } else {
            for f in r.findings.iter().chain(&r.vl_findings) {
                println!("{f}");
            }
            println!(
                "audit: {} ({} finding(s))",
                if r.has_errors {
                    "ISOLATION BROKEN"
                } else {
                    "ok"
                },
                r.findings.len()
            );
        }
        Ok(if r.has_errors {
            ExitCode::from(client::EXIT_ERROR)
        } else {
            ExitCode::SUCCESS
        })
    })
}

/// Awaits `fut`, showing `what` with a spinner, the seconds elapsed and what `progress`
/// says (polled every 250 ms) on stderr; one plain line when stderr is not a terminal.
async fn with_spinner<T, P, PF>(
    what: &str,
    fut: impl std::future::Future<Output = T>,
    progress: P,
) -> T
where
    P: Fn() -> PF,
    PF: std::future::Future<Output = Option<String>>,
{
    use std::io::{IsTerminal, Write};
    let tty = std::io::stderr().is_terminal();
    if !tty {
        eprintln!("{what} ...");
        return fut.await;
    }
    let start = std::time::Instant::now();
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(120));
    let frames = ['|', '/', '-', '\\'];
    let mut i = 0usize;
    let mut note = String::new();
    tokio::pin!(fut);
    loop {
        tokio::select! {
            out = &mut fut => {
                eprint!("\r\x1b[2K");
                let _ = std::io::stderr().flush();
                return out;
            }
            _ = tick.tick() => {
                if i.is_multiple_of(2)
                    && let Ok(Some(p)) =
                        tokio::time::timeout(std::time::Duration::from_millis(200), progress()).await
                {
                    note = format!(", {p}");
                }
                eprint!(
                    "\r\x1b[2K{} {what} ({:.1} s{note})",
                    frames[i % 4],
                    start.elapsed().as_secs_f64()
                );
                let _ = std::io::stderr().flush();
                i += 1;
            }
        }
    }
}

/// `smctl sweep [--heavy]`: a heavy sweep is followed until the master completes it.
pub fn sweep(heavy: bool) -> anyhow::Result<ExitCode> {
    run(|mut c| async move {
        // The master's own status carries its last completed sweep: watch that replica.
        let st = call!(c, cluster_status, ClusterStatusRequest::default());
        let master_addr = st
            .replicas
            .iter()
            .find(|r| r.id == st.leader_id)
            .map(|r| r.admin_address.clone());
        let mut master = match (&master_addr, heavy) {
            (Some(a), true) if !a.is_empty() => Some(client::connect_to(a).await?),
            _ => None,
        };
        let before = match master.as_mut() {
            Some(m) => {
                Some(call!(m, cluster_status, ClusterStatusRequest::default()).last_sweep_unix_ms)
            }
            None => None,
        };
        let r = call!(c, trigger_sweep, TriggerSweepRequest { heavy });
        println!(
            "{} sweep requested from the master (replica {})",
            if heavy { "heavy" } else { "light" },
            r.master_id
        );
        let (Some(mut m), Some(before)) = (master, before) else {
            return Ok(ExitCode::SUCCESS);
        };
        let started = std::time::Instant::now();
        let pm = m.clone();
        let done = with_spinner(
            "sweep: the master is rediscovering, routing and programming the fabric",
            async move {
                loop {
                    let s = m
                        .cluster_status(ClusterStatusRequest::default())
                        .await?
                        .into_inner();
                    if s.leader_id != r.master_id {
                        return Ok::<_, tonic::Status>(None);
                    }
                    if s.last_sweep_unix_ms > before {
                        return Ok(Some(s.last_sweep_unix_ms));
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                }
            },
            move || {
                let mut pm = pm.clone();
                async move {
                    let s = pm
                        .cluster_status(ClusterStatusRequest::default())
                        .await
                        .ok()?
                        .into_inner();
                    Some(if s.intent_pending {
                        "programming".to_string()
                    } else {
                        format!("term {}", s.term)
                    })
                }
            },
        )
        .await
        .map_err(status_err)?;
        match done {
            Some(at) => {
                println!(
                    "heavy sweep complete at {} ({:.1} s)",
                    ms_utc(at),
                    started.elapsed().as_secs_f64()
                );
                Ok(ExitCode::SUCCESS)
            }
            None => Err(anyhow::Error::new(client::CmdError {
                code: client::EXIT_UNAVAILABLE,
                msg: "mastership moved before the heavy sweep completed; the new master sweeps by itself".into(),
            })),
        }
    })
}

/// `smctl master`.
#[derive(Subcommand, Debug)]
pub enum MasterCmd {
    /// Hand mastership (Raft leadership) to replica ID.
    Transfer {
        /// Raft id.
        id: u64,
    },
}

/// Runs `smctl master ...`.
pub fn master(m: MasterCmd) -> anyhow::Result<ExitCode> {
    let MasterCmd::Transfer { id } = m;
    run(|mut c| async move {
        eprintln!("master: transferring to replica {id} ...");
        let r = call!(c, transfer_master, TransferMasterRequest { to_replica: id });
        println!("replica {} is master (term {})", r.leader_id, r.term);
        Ok(ExitCode::SUCCESS)
    })
}

/// `smctl members`.
#[derive(Subcommand, Debug)]
pub enum MembersCmd {
    /// Add replica ID (a configured replica) as a voter.
    Add {
        /// Raft id.
        id: u64,
    },
    /// Remove replica ID from the voters. Refused (exit 6) when fewer than a majority of the
    /// configured replicas would be healthy voters afterwards (E_NODE_MEMBERSHIP_QUORUM)
    /// unless --force; the last voter is never removed (E_NODE_MEMBERSHIP_LAST_VOTER).
    Remove {
        /// Raft id.
        id: u64,
        /// Remove it even when fewer than a majority of the configured replicas would be
        /// healthy voters afterwards.
        #[arg(long)]
        force: bool,
    },
}

/// Runs `smctl members ...`: answers once the leader has applied the change.
pub fn members(m: MembersCmd) -> anyhow::Result<ExitCode> {
    let (id, add, force) = match m {
        MembersCmd::Add { id } => (id, true, false),
        MembersCmd::Remove { id, force } => (id, false, force),
    };
    run(|mut c| async move {
        let r = write_call!(
            c,
            change_membership,
            ChangeMembershipRequest { id, add, force }
        );
        println!(
            "membership change applied by leader {}: {} replica {id} (voters now {:?})",
            r.leader_id,
            if add { "add" } else { "remove" },
            r.voters
        );
        Ok(ExitCode::SUCCESS)
    })
}

/// `smctl watch`.
#[derive(Args, Debug)]
pub struct WatchArgs {
    /// Kinds to show: sweep, trap, port, leader, policy, subnet (default: all).
    #[arg(long, value_delimiter = ',')]
    pub kinds: Vec<String>,
    /// Print one JSON object per event.
    #[arg(long)]
    pub json: bool,
    /// Stop after this many events.
    #[arg(long)]
    pub count: Option<usize>,
}

/// Runs `smctl watch`.
pub fn watch(a: WatchArgs) -> anyhow::Result<ExitCode> {
    let js = a.json;
    run(|mut c| async move {
        let mut s = call!(c, watch_events, WatchEventsRequest { kinds: a.kinds });
        let mut n = 0;
        while let Some(e) = s.message().await.map_err(status_err)? {
            if js {
                println!(
                    "{}",
                    serde_json::json!({"unix_ms": e.unix_ms, "kind": e.kind, "text": e.text, "term": e.term, "leader_id": e.leader_id})
                );
            } else {
                println!(
                    "{} {:<8} term {:<3} {}",
                    ms_utc(e.unix_ms),
                    e.kind,
                    e.term,
                    e.text
                );
            }
            n += 1;
            if a.count.is_some_and(|c| n >= c) {
                break;
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}
