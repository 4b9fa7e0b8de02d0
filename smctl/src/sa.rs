//! `smctl sa groups|members|services|informs`: the SA state as the cluster replicates it
//! (GetSa), like `saquery -g`, `saquery -m`, `saquery -S`, `saquery -I` but from any
//! replica, with `--json`.

use crate::client::{Client, block_on, connect, status_err};
use clap::Subcommand;
use proto::admin::{GetSaReply, GetSaRequest};
use proto::state::SaState;
use serde_json::{Value, json};
use std::process::ExitCode;

/// `smctl sa` subcommands (all need --server).
#[derive(Subcommand)]
pub enum SaCmd {
    /// Multicast groups: MGID, MLID, P_Key, Q_Key, MTU, rate, SL, scope, members.
    Groups(crate::cluster_cmds::ReadOpts),
    /// Group members: MGID, MLID, port GID, JoinState.
    Members(crate::cluster_cmds::ReadOpts),
    /// Registered services: ID, name, GID, P_Key, lease.
    Services(crate::cluster_cmds::ReadOpts),
    /// InformInfo subscriptions: subscriber, trap, QPN.
    Informs(crate::cluster_cmds::ReadOpts),
}

/// A 16-byte GID in IPv6 notation ("?" when it is not 16 bytes).
fn gid(b: &[u8]) -> String {
    <[u8; 16]>::try_from(b)
        .map(|a| std::net::Ipv6Addr::from(a).to_string())
        .unwrap_or_else(|_| "?".into())
}

fn join_state(js: u32) -> String {
    let names = [
        (1, "full"),
        (2, "non"),
        (4, "sendonly-non"),
        (8, "sendonly-full"),
    ];
    let v: Vec<&str> = names
        .iter()
        .filter(|(b, _)| js & b != 0)
        .map(|(_, n)| *n)
        .collect();
    if v.is_empty() {
        "-".into()
    } else {
        v.join("+")
    }
}

fn to_json(sa: &SaState) -> Value {
    json!({
        "groups": sa.groups.iter().map(|g| json!({
            "mgid": gid(&g.mgid), "mlid": format!("{:#06x}", g.mlid), "pkey": format!("{:#06x}", g.pkey),
            "qkey": format!("{:#010x}", g.qkey), "mtu": g.mtu, "rate": g.rate, "sl": g.sl,
            "scope": g.scope, "from_policy": g.from_policy,
            "members": g.members.iter().map(|m| json!({
                "port_gid": gid(&m.port_gid), "join_state": join_state(m.join_state),
                "proxy_join": m.proxy_join,
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "services": sa.services.iter().map(|s| json!({
            "id": format!("{:#018x}", s.service_id), "name": s.service_name,
            "gid": gid(&s.service_gid), "pkey": format!("{:#06x}", s.service_pkey),
            "lease": s.lease, "expires_ms": s.expires_ms,
        })).collect::<Vec<_>>(),
        "informs": sa.informs.iter().map(|i| json!({
            "subscriber": gid(&i.subscriber_gid), "lid": i.subscriber_lid,
            "trap": i.trap_number, "qpn": i.qpn, "enum": i.enum_id,
        })).collect::<Vec<_>>(),
    })
}

async fn get(c: &mut Client, linearizable: bool) -> anyhow::Result<GetSaReply> {
    Ok(c.get_sa(GetSaRequest { linearizable })
        .await
        .map_err(status_err)?
        .into_inner())
}

/// Runs a `smctl sa` command.
pub fn run_cmd(cmd: SaCmd) -> anyhow::Result<ExitCode> {
    let (o, what) = match cmd {
        SaCmd::Groups(o) => (o, 0),
        SaCmd::Members(o) => (o, 1),
        SaCmd::Services(o) => (o, 2),
        SaCmd::Informs(o) => (o, 3),
    };
    block_on(async move {
        let mut c = connect().await?;
        let r = get(&mut c, o.linearizable).await?;
        let sa = r.sa.unwrap_or_default();
        if o.json {
            let j = to_json(&sa);
            let key = ["groups", "groups", "services", "informs"][what];
            println!("{}", serde_json::to_string_pretty(&j[key])?);
            return Ok(ExitCode::SUCCESS);
        }
        match what {
            0 => {
                println!(
                    "{:<40} {:<7} {:<7} {:<11} {:>3} {:>4} {:>2} {:>5} {:>7}",
                    "MGID", "MLID", "PKEY", "QKEY", "MTU", "RATE", "SL", "SCOPE", "MEMBERS"
                );
                for g in &sa.groups {
                    println!(
                        "{:<40} {:#06x} {:#06x} {:#010x} {:>3} {:>4} {:>2} {:>5} {:>7}{}",
                        gid(&g.mgid),
                        g.mlid,
                        g.pkey,
                        g.qkey,
                        g.mtu,
                        g.rate,
                        g.sl,
                        g.scope,
                        g.members.len(),
                        if g.from_policy { "  (policy)" } else { "" }
                    );
                }
            }
            1 => {
                println!("{:<40} {:<7} {:<40} JOIN", "MGID", "MLID", "PORT GID");
                for g in &sa.groups {
                    for m in &g.members {
                        println!(
                            "{:<40} {:#06x} {:<40} {}{}",
                            gid(&g.mgid),
                            g.mlid,
                            gid(&m.port_gid),
                            join_state(m.join_state),
                            if m.proxy_join { " (proxy)" } else { "" }
                        );
                    }
                }
            }
            2 => {
                println!(
                    "{:<18} {:<24} {:<40} {:<7} LEASE",
                    "SERVICE ID", "NAME", "GID", "PKEY"
                );
                for s in &sa.services {
                    let lease = if s.lease == u32::MAX {
                        "infinite".to_string()
                    } else {
                        format!("{} s", s.lease)
                    };
                    println!(
                        "{:#018x} {:<24} {:<40} {:#06x} {lease}",
                        s.service_id,
                        s.service_name,
                        gid(&s.service_gid),
                        s.service_pkey
                    );
                }
            }
            _ => {
                println!(
                    "{:<40} {:>6} {:>6} {:>6}",
                    "SUBSCRIBER", "LID", "TRAP", "QPN"
                );
                for i in &sa.informs {
                    let trap = if i.trap_number == 0xFFFF {
                        "all".to_string()
                    } else {
                        i.trap_number.to_string()
                    };
                    println!(
                        "{:<40} {:>6} {:>6} {:>6}",
                        gid(&i.subscriber_gid),
                        i.subscriber_lid,
                        trap,
                        i.qpn
                    );
                }
            }
        }
        println!("(applied index {})", r.applied_index);
        Ok(ExitCode::SUCCESS)
    })?
}
