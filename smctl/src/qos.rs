//! `smctl qos ...`: check an OpenSM qos-policy.conf and show the VL tables OpenSM's `qos_*`
//! options give (offline); the QoS policy in force and the SLtoVL / VLArb tables as
//! programmed, and applying a new policy (cluster).

use crate::cluster_cmds::{ReadOpts, call, json, run, write_call};
use anyhow::bail;
use clap::Subcommand;
use proto::admin::{ApplyPolicyRequest, GetPolicyRequest, GetVlTablesRequest};
use proto::state::VlBlock;
use std::process::ExitCode;

/// `smctl qos`.
#[derive(Subcommand)]
pub enum QosCmd {
    /// Check a qos-policy.conf: every error and lint as file:line:col (exit 1 on an error).
    Check {
        /// The qos-policy.conf file (`-` = stdin).
        file: String,
    },
    /// The tables OpenSM's qos_* options give each kind of port (unset options take
    /// OpenSM's defaults), masked for OperationalVLs `--op-vls`.
    Tables {
        /// An option as in opensm.conf, `KEY=VALUE` (e.g. `qos_sl2vl=0,1,2,0,...`); repeatable.
        #[arg(long = "option")]
        options: Vec<String>,
        /// OperationalVLs code: 1 VL0, 2 VL0-1, 3 VL0-3, 4 VL0-7, 5 VL0-14.
        #[arg(long, default_value_t = 4)]
        op_vls: u8,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Cluster: the QoS policy in force (version, text) and the VL tables as programmed
    /// (a count per node; every block of one node with --node).
    Show {
        /// Only this node's blocks, in full (node GUID, 0x hex).
        #[arg(long)]
        node: Option<String>,
        #[command(flatten)]
        read: ReadOpts,
    },
    /// Cluster: commit FILE as the QoS policy (refused when another apply committed since).
    Apply {
        /// The new qos-policy.conf (`-` = stdin).
        file: String,
        /// The version you edited (default: the version in force now).
        #[arg(long)]
        expect_version: Option<u64>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Runs a `smctl qos` command.
pub fn run_qos(cmd: QosCmd) -> anyhow::Result<ExitCode> {
    match cmd {
        QosCmd::Check { file } => check(&file),
        QosCmd::Tables {
            options,
            op_vls,
            json: js,
        } => tables(&options, op_vls, js),
        QosCmd::Show { node, read } => show(node.as_deref(), read),
        QosCmd::Apply {
            file,
            expect_version,
            json: js,
        } => apply(&file, expect_version, js),
    }
}

fn read(file: &str) -> anyhow::Result<String> {
    crate::input::read_limited(
        std::path::Path::new(file),
        qos::MAX_POLICY_BYTES,
        "MAX_POLICY_BYTES",
    )
}

fn check(file: &str) -> anyhow::Result<ExitCode> {
    let text = read(file)?;
    match qos::Policy::parse(&text) {
        Err(errs) => {
            for e in &errs {
                let p = e.pos().unwrap_or_default();
                println!("{file}:{}:{}: error {e}", p.line, p.col);
            }
            println!("{file}: rejected, {} errors", errs.len());
            Ok(ExitCode::from(1))
        }
        Ok(p) => {
            let lints = qos::lints(&p, &qos::QosTables::default(), &[]);
            for l in &lints {
                println!(
                    "{file}:{}:{}: warning {}: {}",
                    l.pos.line,
                    l.pos.col,
                    l.code.code(),
                    l.message
                );
            }
            println!(
                "{file}: {} port groups, {} levels, {} rules, 0 errors, {} warnings",
                p.port_groups.len(),
                p.levels.len(),
                p.rules.len(),
                lints.len()
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn tables(options: &[String], op_vls: u8, js: bool) -> anyhow::Result<ExitCode> {
    let mut pairs = Vec::new();
    for o in options {
        let Some((k, v)) = o.split_once('=') else {
            bail!("--option {o:?}: expected KEY=VALUE");
        };
        pairs.push((k.trim(), v.trim()));
    }
    let built = qos::QosOptions::from_pairs(pairs)?.build()?;
    let mut out = Vec::new();
    for kind in qos::PortKind::ALL {
        let t = built.get(kind);
        let sl2vl = t.sl2vl_masked(op_vls);
        let arb = |b: u8| t.vlarb_block(b, op_vls, 64, 64).map(|e| e.to_vec());
        let fmt = |v: &[qos::VlArb]| {
            v.iter()
                .filter(|e| e.weight > 0)
                .map(|e| format!("{}:{}", e.vl, e.weight))
                .collect::<Vec<_>>()
                .join(",")
        };
        if js {
            out.push(serde_json::json!({"kind": kind.option_prefix(), "sl2vl": sl2vl,
                "vl_high_limit": t.vl_high_limit,
                "vlarb_low": fmt(&[arb(0).unwrap_or_default(), arb(1).unwrap_or_default()].concat()),
                "vlarb_high": fmt(&[arb(2).unwrap_or_default(), arb(3).unwrap_or_default()].concat())}));
            continue;
        }
        println!("{} (OperationalVLs code {op_vls}):", kind.option_prefix());
        println!(
            "  SL:      {}",
            (0..16)
                .map(|s| format!("{s:2}"))
                .collect::<Vec<_>>()
                .join("|")
        );
        println!("  VL:      {}", sl2vl.map(|v| format!("{v:2}")).join("|"));
        println!("  high limit {}", t.vl_high_limit);
        println!("  VLArb low  {}", fmt(&arb(0).unwrap_or_default()));
        println!("  VLArb high {}", fmt(&arb(2).unwrap_or_default()));
    }
    if js {
        return json(&out);
    }
    Ok(ExitCode::SUCCESS)
}

/// One block as text: `SL2VL in I out O: | 0| 1|...` or `VLArb port P block B: vl:weight,...`.
fn block_text(b: &VlBlock) -> String {
    let port = b.modifier & 0xFF;
    if b.attr == 1 {
        let vls: Vec<String> = b
            .data
            .iter()
            .flat_map(|x| [x >> 4, x & 0xF])
            .map(|v| format!("{v:2}"))
            .collect();
        format!(
            "SL2VL in {:3} out {port:3}: |{}|",
            (b.modifier >> 8) & 0xFF,
            vls.join("|")
        )
    } else {
        let e: Vec<String> = b
            .data
            .chunks_exact(2)
            .filter(|c| c[1] != 0)
            .map(|c| format!("{}:{}", c[0] & 0xF, c[1]))
            .collect();
        format!(
            "VLArb port {port:3} block {}: {}",
            b.modifier >> 16,
            e.join(",")
        )
    }
}

fn show(node: Option<&str>, o: ReadOpts) -> anyhow::Result<ExitCode> {
    let node_guid = match node {
        Some(s) => u64::from_str_radix(s.trim_start_matches("0x"), 16)
            .map_err(|e| anyhow::anyhow!("--node {s:?}: {e}"))?,
        None => 0,
    };
    run(|mut c| async move {
        let lin = o.linearizable;
        let p = call!(c, get_qos_policy, GetPolicyRequest { linearizable: lin });
        let req = GetVlTablesRequest {
            linearizable: lin,
            node_guid,
        };
        let t = call!(c, get_vl_tables, req);
        if o.json {
            let blocks: Vec<_> = t.blocks.iter().map(|b| serde_json::json!({
                "node": format!("{:#018x}", b.node_guid), "attr": if b.attr == 1 { "SLtoVL" } else { "VLArb" },
                "modifier": format!("{:#x}", b.modifier), "table": block_text(b)})).collect();
            return json(&serde_json::json!({"version": p.version,
                "applied_at_index": p.applied_at_index, "text": p.text, "blocks": blocks}));
        }
        println!(
            "# QoS policy version {} (applied at index {})",
            p.version, p.applied_at_index
        );
        print!("{}", p.text);
        let mut per: std::collections::BTreeMap<u64, (usize, usize)> = Default::default();
        for b in &t.blocks {
            let e = per.entry(b.node_guid).or_default();
            if b.attr == 1 { e.0 += 1 } else { e.1 += 1 }
        }
        println!(
            "# VL tables as programmed: {} blocks on {} nodes",
            t.blocks.len(),
            per.len()
        );
        if node_guid != 0 {
            for b in &t.blocks {
                println!("{:#018x} {}", b.node_guid, block_text(b));
            }
        } else {
            for (g, (s, a)) in per {
                println!("{g:#018x}: {s} SLtoVL, {a} VLArb blocks");
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}

fn apply(file: &str, expect: Option<u64>, js: bool) -> anyhow::Result<ExitCode> {
    let text = read(file)?;
    run(|mut c| async move {
        let expected_version = match expect {
            Some(v) => v,
            None => call!(c, get_qos_policy, GetPolicyRequest { linearizable: true }).version,
        };
        let req = ApplyPolicyRequest {
            text,
            expected_version,
            request_id: 0,
        };
        let r = write_call!(c, apply_qos_policy, req);
        if js {
            return json(&serde_json::json!({"version": r.version, "index": r.index,
                "warnings": r.warnings}));
        }
        for w in &r.warnings {
            eprintln!("warning: {w}");
        }
        println!(
            "QoS policy version {} committed at index {}",
            r.version, r.index
        );
        Ok(ExitCode::SUCCESS)
    })
}
