//! GUIDs added to and removed from tenants and API-managed partitions in one call
//! (ChangeGuids, issue 26): `smctl tenants add-guid|remove-guid NAME GUID...` and `smctl pkey
//! add-guid|remove-guid|delete|list`. Adding a GUID to a tenant moves it out of every other
//! tenant and API partition in the same change (printed). `smctl pkey list` shows the
//! API-managed partitions (the UFM-compatible API also lists the tenants).

use crate::client::{Client, block_on, connect, status_err, write_err};
use clap::{Args, Subcommand};
use proto::admin::change_guids_request::{Op, Target};
use proto::admin::*;
use std::process::ExitCode;

fn parse_u64(s: &str) -> Result<u64, String> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => u64::from_str_radix(s, 16),
    }
    .map_err(|e| format!("{s:?}: {e} (hex)"))
}

/// Options of every GUID change.
#[derive(Args)]
pub struct GuidArgs {
    /// Port GUIDs or VF alias GUIDs (hex; at most 1,024).
    #[arg(required = true, value_parser = parse_u64)]
    guids: Vec<u64>,
    /// Refuse unless the tenant set version in force is this one.
    #[arg(long)]
    expected_version: Option<u64>,
}

/// `smctl pkey add-guid` options.
#[derive(Args)]
pub struct PkeyAdd {
    /// Partition number (hex, 0x0001..=0x7ffe).
    #[arg(value_parser = parse_u64)]
    pkey: u64,
    #[command(flatten)]
    g: GuidArgs,
    /// Limited membership (default full).
    #[arg(long)]
    limited: bool,
    /// When the call creates the partition: its name (default pkey_XXXX).
    #[arg(long, default_value = "")]
    name: String,
    /// When the call creates the partition: create its IPoIB broadcast group.
    #[arg(long)]
    ipoib: bool,
    /// When the call creates the partition: put the key at P_KeyTable index 0.
    #[arg(long)]
    index0: bool,
}

/// `smctl pkey` subcommands (all need --server).
#[derive(Subcommand)]
pub enum PkeyCmd {
    /// Add GUIDs to a partition by P_Key (created when absent; a tenant's P_Key adds to the
    /// tenant).
    AddGuid(PkeyAdd),
    /// Remove GUIDs from a partition by P_Key.
    RemoveGuid {
        /// Partition number (hex).
        #[arg(value_parser = parse_u64)]
        pkey: u64,
        #[command(flatten)]
        g: GuidArgs,
    },
    /// Delete an API-managed partition with its members.
    Delete {
        /// Partition number (hex).
        #[arg(value_parser = parse_u64)]
        pkey: u64,
        /// Refuse unless the tenant set version in force is this one.
        #[arg(long)]
        expected_version: Option<u64>,
    },
    /// The API-managed partitions and their GUIDs.
    List(crate::cluster_cmds::ReadOpts),
}

fn req(op: Op, target: Target, g: GuidArgs) -> ChangeGuidsRequest {
    ChangeGuidsRequest {
        op: op as i32,
        target: Some(target),
        guids: g.guids,
        expected_version: g.expected_version,
        request_id: crate::tenants::request_id(),
        ..ChangeGuidsRequest::default()
    }
}

/// `smctl tenants add-guid` / `remove-guid`.
pub fn tenant_change(add: bool, name: String, g: GuidArgs) -> anyhow::Result<ExitCode> {
    let op = if add { Op::Add } else { Op::Remove };
    call(req(op, Target::Tenant(name), g))
}

fn pkey_of(p: u64) -> anyhow::Result<u32> {
    u32::try_from(p).map_err(|_| anyhow::anyhow!("P_Key {p:#x} is wider than 16 bits"))
}

/// Runs a `smctl pkey` command.
pub fn run_pkey(cmd: PkeyCmd) -> anyhow::Result<ExitCode> {
    match cmd {
        PkeyCmd::AddGuid(a) => {
            let mut r = req(Op::Add, Target::Pkey(pkey_of(a.pkey)?), a.g);
            (r.limited, r.name, r.ipoib, r.index0) = (a.limited, a.name, a.ipoib, a.index0);
            call(r)
        }
        PkeyCmd::RemoveGuid { pkey, g } => call(req(Op::Remove, Target::Pkey(pkey_of(pkey)?), g)),
        PkeyCmd::Delete {
            pkey,
            expected_version,
        } => {
            let g = GuidArgs {
                guids: Vec::new(),
                expected_version,
            };
            call(req(Op::DeletePkey, Target::Pkey(pkey_of(pkey)?), g))
        }
        PkeyCmd::List(o) => block_on(async move {
            let mut c: Client = connect().await?;
            let r = c
                .list_tenants(ListTenantsRequest {
                    linearizable: o.linearizable,
                })
                .await
                .map_err(status_err)?
                .into_inner();
            let t = r.tenants.unwrap_or_default();
            if o.json {
                let v: Vec<_> = t
                    .pkeys
                    .iter()
                    .map(|p| {
                        serde_json::json!({
                            "pkey": format!("{:#06x}", p.pkey),
                            "name": p.name,
                            "ipoib": p.ipoib,
                            "index0": p.index0,
                            "guids": p.members.iter().map(|m| serde_json::json!({
                                "guid": format!("{:#018x}", m.guid),
                                "membership": if m.limited { "limited" } else { "full" },
                            })).collect::<Vec<_>>(),
                        })
                    })
                    .collect();
                let v = serde_json::json!({ "version": t.version, "pkeys": v });
                println!("{}", serde_json::to_string_pretty(&v)?);
                return Ok(ExitCode::SUCCESS);
            }
            println!("tenant set version {}", t.version);
            for p in &t.pkeys {
                let flags = [(p.ipoib, " ipoib"), (p.index0, " index0")];
                let f: String = flags.iter().filter(|x| x.0).map(|x| x.1).collect();
                println!("{:#06x} {}{f}", p.pkey, p.name);
                for m in &p.members {
                    let how = if m.limited { "limited" } else { "full" };
                    println!("  {:#018x} {how}", m.guid);
                }
            }
            Ok(ExitCode::SUCCESS)
        })?,
    }
}

fn call(r: ChangeGuidsRequest) -> anyhow::Result<ExitCode> {
    block_on(async move {
        let mut c: Client = connect().await?;
        let a = c.change_guids(r).await.map_err(write_err)?.into_inner();
        if a.index == 0 {
            println!("nothing to change: tenant set version {}", a.version);
        } else {
            println!("tenant set version {} (index {})", a.version, a.index);
        }
        for w in &a.warnings {
            println!("note: {w}");
        }
        Ok(ExitCode::SUCCESS)
    })?
}
