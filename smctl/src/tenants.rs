//! `smctl tenants list|show|set|set-storage|delete|add-guid|remove-guid|assignment`: tenants
//! through the admin API (add-guid and remove-guid: [`crate::guids`]).
//!
//! A tenant's RDMA limits are given as the kernel writes them (`--rdma "mlx5_0 hca_handle=2
//! hca_object=2000"`, `max` for no limit). Reads accept `--json`. Writes are compare-and-set on
//! the tenant set version: `--expected-version N` refuses the change when another committed
//! since (exit 1, FAILED_PRECONDITION); without it the server retries a race itself.

use crate::client::{self, Client, block_on, connect, status_err, write_err};
use anyhow::Context;
use clap::{Args, Subcommand};
use partitions::tenants::RdmaLimit as Limit;
use proto::admin::*;
use proto::state::{self, tenant_member};
use serde_json::{Value, json};
use std::process::ExitCode;

/// `smctl tenants` subcommands (all need --server).
#[derive(Subcommand)]
pub enum TenantsCmd {
    /// Every tenant and storage partition, resolved, with the set version.
    List(crate::cluster_cmds::ReadOpts),
    /// One tenant (or storage partition): members, ports, storage, RDMA limits; with
    /// `--policy` the compiled partitions.conf the master plans from.
    Show {
        /// Tenant or storage partition name.
        name: String,
        /// Print the effective (compiled) policy text instead.
        #[arg(long)]
        policy: bool,
        #[command(flatten)]
        read: crate::cluster_cmds::ReadOpts,
    },
    /// Add or replace a tenant.
    Set(SetArgs),
    /// Add or replace a storage partition (servers full, tenant ports limited).
    SetStorage(StorageArgs),
    /// Remove a tenant (or with --storage a storage partition).
    Delete {
        /// Name.
        name: String,
        /// Delete the storage partition of this name.
        #[arg(long)]
        storage: bool,
        /// Refuse unless the tenant set version in force is this one.
        #[arg(long)]
        expected_version: Option<u64>,
    },
    /// Add port or VF alias GUIDs to a tenant in one change: each leaves every other tenant
    /// and API partition (printed).
    AddGuid {
        /// Tenant name.
        name: String,
        #[command(flatten)]
        g: crate::guids::GuidArgs,
    },
    /// Remove GUIDs from a tenant.
    RemoveGuid {
        /// Tenant name.
        name: String,
        #[command(flatten)]
        g: crate::guids::GuidArgs,
    },
    /// What a host agent gets for its port GUIDs (tenant, limits, intended P_Keys).
    Assignment {
        /// Host port GUIDs.
        #[arg(required = true, value_parser = parse_u64)]
        ports: Vec<u64>,
        #[command(flatten)]
        read: crate::cluster_cmds::ReadOpts,
    },
}

/// `smctl tenants set`.
#[derive(Args)]
pub struct SetArgs {
    /// Tenant name.
    name: String,
    /// Its partition number (0x0001..=0x7ffe).
    #[arg(long, value_parser = parse_u64)]
    pkey: u64,
    /// Member port GUID (repeatable).
    #[arg(long = "member", value_parser = parse_u64)]
    members: Vec<u64>,
    /// Member node description (repeatable): every cabled CA port of that node.
    #[arg(long = "member-node")]
    member_nodes: Vec<String>,
    /// Storage partition it uses (repeatable).
    #[arg(long)]
    storage: Vec<String>,
    /// RDMA limit as the kernel writes it, e.g. "mlx5_0 hca_handle=2 hca_object=2000".
    #[arg(long)]
    rdma: Vec<String>,
    /// Create the IPoIB broadcast group of its partition.
    #[arg(long)]
    ipoib: bool,
    /// Keep its ports full members of Default (they can then reach other such tenants).
    #[arg(long)]
    default_full: bool,
    /// Refuse unless the tenant set version in force is this one.
    #[arg(long)]
    expected_version: Option<u64>,
}

/// `smctl tenants set-storage`.
#[derive(Args)]
pub struct StorageArgs {
    /// Storage partition name.
    name: String,
    /// Partition number (0x0001..=0x7ffe).
    #[arg(long, value_parser = parse_u64)]
    pkey: u64,
    /// Storage server port GUID (repeatable).
    #[arg(long = "storage-server", value_parser = parse_u64)]
    servers: Vec<u64>,
    /// Storage server node description (repeatable).
    #[arg(long = "storage-server-node")]
    server_nodes: Vec<String>,
    /// Create the IPoIB broadcast group.
    #[arg(long)]
    ipoib: bool,
    /// Refuse unless the tenant set version in force is this one.
    #[arg(long)]
    expected_version: Option<u64>,
}

fn parse_u64(s: &str) -> Result<u64, String> {
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|_| format!("'{s}' is not a number (decimal or 0x hex)"))
}

fn members(guids: &[u64], nodes: &[String]) -> Vec<state::TenantMember> {
    guids
        .iter()
        .map(|g| tenant_member::Kind::PortGuid(*g))
        .chain(
            nodes
                .iter()
                .map(|d| tenant_member::Kind::NodeDescription(d.clone())),
        )
        .map(|k| state::TenantMember { kind: Some(k) })
        .collect()
}

fn member_json(m: &state::TenantMember) -> Value {
    match &m.kind {
        Some(tenant_member::Kind::PortGuid(g)) => json!({ "port_guid": format!("{g:#018x}") }),
        Some(tenant_member::Kind::NodeDescription(d)) => json!({ "node": d }),
        None => Value::Null,
    }
}

fn member_text(m: &state::TenantMember) -> String {
    match &m.kind {
        Some(tenant_member::Kind::PortGuid(g)) => format!("{g:#018x}"),
        Some(tenant_member::Kind::NodeDescription(d)) => format!("node '{d}'"),
        None => "?".into(),
    }
}

fn limit_line(l: &state::RdmaLimit) -> String {
    Limit {
        device: l.device.clone(),
        hca_handle: l.hca_handle,
        hca_object: l.hca_object,
    }
    .to_line()
}

fn ports_of(r: &ListTenantsReply, name: &str) -> Vec<u64> {
    r.resolved
        .iter()
        .find(|x| x.name == name)
        .map(|x| x.ports.clone())
        .unwrap_or_default()
}

fn hex_list(v: &[u64]) -> Vec<String> {
    v.iter().map(|g| format!("{g:#018x}")).collect()
}

/// The JSON of a ListTenants answer.
fn list_json(r: &ListTenantsReply) -> Value {
    let set = r.tenants.clone().unwrap_or_default();
    let tenants: Vec<Value> = set
        .tenants
        .iter()
        .map(|t| {
            json!({
                "name": t.name,
                "pkey": format!("{:#06x}", t.pkey),
                "members": t.members.iter().map(member_json).collect::<Vec<_>>(),
                "ports": hex_list(&ports_of(r, &t.name)),
                "storage": t.storage,
                "rdma": t.rdma.iter().map(limit_line).collect::<Vec<_>>(),
                "ipoib": t.ipoib,
                "default_full": t.default_full,
            })
        })
        .collect();
    let storage: Vec<Value> = set
        .storage
        .iter()
        .map(|s| {
            json!({
                "name": s.name,
                "pkey": format!("{:#06x}", s.pkey),
                "servers": s.servers.iter().map(member_json).collect::<Vec<_>>(),
                "ports": hex_list(&ports_of(r, &s.name)),
                "ipoib": s.ipoib,
            })
        })
        .collect();
    json!({
        "version": set.version,
        "tenants": tenants,
        "storage": storage,
        "warnings": r.warnings,
    })
}

fn run<F, Fut>(f: F) -> anyhow::Result<ExitCode>
where
    F: FnOnce(Client) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<ExitCode>>,
{
    block_on(async move { f(connect().await?).await })?
}

async fn list_call(c: &mut Client, linearizable: bool) -> anyhow::Result<ListTenantsReply> {
    Ok(c.list_tenants(ListTenantsRequest { linearizable })
        .await
        .map_err(status_err)?
        .into_inner())
}

/// Runs a `smctl tenants` command.
pub fn run_cmd(cmd: TenantsCmd) -> anyhow::Result<ExitCode> {
    match cmd {
        TenantsCmd::List(o) => run(|mut c| async move {
            let r = list_call(&mut c, o.linearizable).await?;
            if o.json {
                println!("{}", serde_json::to_string_pretty(&list_json(&r))?);
                return Ok(ExitCode::SUCCESS);
            }
            let set = r.tenants.clone().unwrap_or_default();
            println!("tenant set version {}", set.version);
            println!(
                "{:<8} {:<20} {:<7} {:>5}  storage / limits",
                "KIND", "NAME", "PKEY", "PORTS"
            );
            for t in &set.tenants {
                let limits: Vec<String> = t.rdma.iter().map(limit_line).collect();
                println!(
                    "{:<8} {:<20} {:#06x} {:>5}  {} {}",
                    "tenant",
                    t.name,
                    t.pkey,
                    ports_of(&r, &t.name).len(),
                    t.storage.join(","),
                    if limits.is_empty() {
                        String::new()
                    } else {
                        format!("[{}]", limits.join("; "))
                    }
                );
            }
            for s in &set.storage {
                println!(
                    "{:<8} {:<20} {:#06x} {:>5}",
                    "storage",
                    s.name,
                    s.pkey,
                    ports_of(&r, &s.name).len()
                );
            }
            for w in &r.warnings {
                println!("warning: {w}");
            }
            Ok(ExitCode::SUCCESS)
        }),
        TenantsCmd::Show { name, policy, read } => run(|mut c| async move {
            let r = list_call(&mut c, read.linearizable).await?;
            if policy {
                print!("{}", r.effective_policy);
                return Ok(ExitCode::SUCCESS);
            }
            let js = list_json(&r);
            let found = ["tenants", "storage"].iter().find_map(|k| {
                js[k]
                    .as_array()
                    .and_then(|a| a.iter().find(|x| x["name"] == name.as_str()).cloned())
                    .map(|v| (*k, v))
            });
            let Some((kind, v)) = found else {
                return Err(anyhow::Error::new(client::CmdError {
                    code: client::EXIT_ERROR,
                    msg: format!("no tenant or storage partition named '{name}'"),
                }));
            };
            if read.json {
                println!("{}", serde_json::to_string_pretty(&v)?);
                return Ok(ExitCode::SUCCESS);
            }
            let set = r.tenants.clone().unwrap_or_default();
            println!(
                "{} {name} (tenant set version {})",
                kind.trim_end_matches('s'),
                set.version
            );
            println!("  pkey     {}", v["pkey"].as_str().unwrap_or(""));
            if let Some(t) = set.tenants.iter().find(|t| t.name == name) {
                let m: Vec<String> = t.members.iter().map(member_text).collect();
                println!("  members  {}", m.join(", "));
                println!("  storage  {}", t.storage.join(", "));
                for l in &t.rdma {
                    println!("  rdma     {}", limit_line(l));
                }
                println!("  ipoib    {}  default_full {}", t.ipoib, t.default_full);
            }
            if let Some(s) = set.storage.iter().find(|s| s.name == name) {
                let m: Vec<String> = s.servers.iter().map(member_text).collect();
                println!("  servers  {}", m.join(", "));
            }
            println!("  ports    {}", hex_list(&ports_of(&r, &name)).join(", "));
            Ok(ExitCode::SUCCESS)
        }),
        TenantsCmd::Set(a) => {
            let mut rdma = Vec::new();
            for line in &a.rdma {
                let l = Limit::parse_line(line).context("--rdma")?;
                rdma.push(state::RdmaLimit {
                    device: l.device,
                    hca_handle: l.hca_handle,
                    hca_object: l.hca_object,
                });
            }
            let pkey = u32::try_from(a.pkey).context("--pkey")?;
            let t = state::Tenant {
                name: a.name.clone(),
                pkey,
                members: members(&a.members, &a.member_nodes),
                storage: a.storage,
                rdma,
                ipoib: a.ipoib,
                default_full: a.default_full,
            };
            let req = SetTenantRequest {
                tenant: Some(t),
                storage: Vec::new(),
                expected_version: a.expected_version,
                request_id: request_id(),
            };
            set_call(req, format!("tenant {}", a.name))
        }
        TenantsCmd::SetStorage(a) => {
            let s = state::StoragePartition {
                name: a.name.clone(),
                pkey: u32::try_from(a.pkey).context("--pkey")?,
                servers: members(&a.servers, &a.server_nodes),
                ipoib: a.ipoib,
            };
            let req = SetTenantRequest {
                tenant: None,
                storage: vec![s],
                expected_version: a.expected_version,
                request_id: request_id(),
            };
            set_call(req, format!("storage partition {}", a.name))
        }
        TenantsCmd::Delete {
            name,
            storage,
            expected_version,
        } => run(|mut c| async move {
            let r = c
                .delete_tenant(DeleteTenantRequest {
                    name: name.clone(),
                    storage,
                    expected_version,
                    request_id: request_id(),
                })
                .await
                .map_err(write_err)?
                .into_inner();
            println!(
                "deleted {name}: tenant set version {} (index {})",
                r.version, r.index
            );
            Ok(ExitCode::SUCCESS)
        }),
        TenantsCmd::AddGuid { name, g } => crate::guids::tenant_change(true, name, g),
        TenantsCmd::RemoveGuid { name, g } => crate::guids::tenant_change(false, name, g),
        TenantsCmd::Assignment { ports, read } => run(|mut c| async move {
            let r = c
                .get_tenant_assignment(GetTenantAssignmentRequest {
                    port_guids: ports,
                    linearizable: read.linearizable,
                })
                .await
                .map_err(status_err)?
                .into_inner();
            if read.json {
                let v = json!({
                    "tenant": r.tenant,
                    "pkey": format!("{:#06x}", r.pkey),
                    "rdma": r.rdma.iter().map(limit_line).collect::<Vec<_>>(),
                    "ports": r.ports.iter().map(|p| json!({
                        "port_guid": format!("{:#018x}", p.port_guid),
                        "tenant": p.tenant,
                        "known": p.known,
                        "pkeys": p.pkeys.iter().map(|k| format!("{k:#06x}")).collect::<Vec<_>>(),
                    })).collect::<Vec<_>>(),
                    "tenants_version": r.tenants_version,
                    "policy_version": r.policy_version,
                });
                println!("{}", serde_json::to_string_pretty(&v)?);
                return Ok(ExitCode::SUCCESS);
            }
            println!(
                "tenant {} pkey {:#06x} (tenants v{}, policy v{})",
                if r.tenant.is_empty() { "-" } else { &r.tenant },
                r.pkey,
                r.tenants_version,
                r.policy_version
            );
            for l in &r.rdma {
                println!("  rdma.max  {}", limit_line(l));
            }
            for p in &r.ports {
                let keys: Vec<String> = p.pkeys.iter().map(|k| format!("{k:#06x}")).collect();
                println!(
                    "  port {:#018x}{}  pkeys {}",
                    p.port_guid,
                    if p.known { "" } else { " (not in the fabric)" },
                    keys.join(" ")
                );
            }
            Ok(ExitCode::SUCCESS)
        }),
    }
}

fn set_call(req: SetTenantRequest, what: String) -> anyhow::Result<ExitCode> {
    run(|mut c| async move {
        let r = c.set_tenant(req).await.map_err(write_err)?.into_inner();
        println!(
            "set {what}: tenant set version {} (index {})",
            r.version, r.index
        );
        for w in &r.warnings {
            println!("warning: {w}");
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// An idempotency key for one invocation (a retried call is applied at most once).
pub(crate) fn request_id() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    (t ^ (u64::from(std::process::id()) << 40)) | 1
}
