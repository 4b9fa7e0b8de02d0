//! `smctl explain LID|GUID [PORT]` (issue 21 item 7): why a port is not Active (or cannot
//! talk), from what the master read and the counters, with the next step. The master
//! answers; a follower forwards. Causes and their codes: `docs/explain.md`.

use crate::cluster_cmds::{call, json, run};
use clap::Args;
use proto::admin::*;
use std::process::ExitCode;

/// `smctl explain`.
#[derive(Args, Debug)]
pub struct ExplainArgs {
    /// The port: its LID (decimal; a switch's LID names its port 0), or a node or port GUID
    /// (hex with 0x).
    pub target: String,
    /// That port of the node (default: the port the LID or port GUID names, a switch's
    /// port 0, the CA port the SM reached).
    pub port: Option<u32>,
    /// Print JSON instead of the verdict, facts and next step.
    #[arg(long)]
    pub json: bool,
}

/// The request for `target` (`0x…`: a GUID, else a decimal LID) and `port`.
pub fn request(target: &str, port: Option<u32>) -> anyhow::Result<ExplainRequest> {
    let t = target.trim();
    let (lid, guid) = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => {
            let g = u64::from_str_radix(h, 16)
                .map_err(|_| anyhow::anyhow!("bad GUID {target:?} (hex after 0x)"))?;
            anyhow::ensure!(g != 0, "GUID 0 names no port");
            (0, g)
        }
        None => {
            let l: u16 = t.parse().map_err(|_| {
                anyhow::anyhow!("bad LID {target:?} (decimal; a GUID is hex with 0x)")
            })?;
            anyhow::ensure!(
                (1..0xC000).contains(&l),
                "{l} is not a unicast LID (1..=49151)"
            );
            (u32::from(l), 0)
        }
    };
    if let Some(p) = port {
        anyhow::ensure!(p <= 255, "port {p} > 255");
    }
    Ok(ExplainRequest { lid, guid, port })
}

/// `smctl explain`.
pub fn explain(a: ExplainArgs) -> anyhow::Result<ExitCode> {
    let req = request(&a.target, a.port)?;
    run(|mut c| async move {
        let r = call!(c, explain, req);
        if a.json {
            return json(&explain_json(&r));
        }
        print!("{}", explain_text(&r));
        Ok(ExitCode::SUCCESS)
    })
}

fn state_name(s: u32) -> &'static str {
    sm_core::explain::port_state_name(u8::try_from(s).unwrap_or(u8::MAX))
}

fn phys_name(s: u32) -> &'static str {
    sm_core::explain::phys_state_name(u8::try_from(s).unwrap_or(u8::MAX))
}

/// The JSON of a reply (GUIDs as 0x hex).
pub fn explain_json(r: &ExplainReply) -> serde_json::Value {
    let peer = r.peer.as_ref().map(|p| {
        serde_json::json!({
            "node_guid": format!("{:#018x}", p.node_guid), "description": p.description,
            "port": p.port, "state": state_name(p.state), "phys_state": phys_name(p.phys_state),
            "sweep": p.sweep,
            "cause": (!p.cause_code.is_empty()).then_some(&p.cause_code),
        })
    });
    serde_json::json!({
        "cause": r.cause_code, "summary": r.summary,
        "node_guid": format!("{:#018x}", r.node_guid), "description": r.description,
        "switch": r.is_switch, "port": r.port, "port_guid": format!("{:#018x}", r.port_guid),
        "lid": r.lid, "state": state_name(r.state), "phys_state": phys_name(r.phys_state),
        "read_sweep": r.read_sweep, "sweep": r.sweep, "peer": peer,
        "facts": r.facts, "next_step": r.next_step, "replica": r.replica,
    })
}

/// One line with the verdict, the port and its peer, the facts, and the next step.
pub fn explain_text(r: &ExplainReply) -> String {
    let mut o = format!("{}: {}\n", r.cause_code, r.summary);
    o.push_str(&format!(
        "  port:  \"{}\" {:#018x} port {} (LID {}): {} / {}\n",
        r.description,
        r.node_guid,
        r.port,
        r.lid,
        state_name(r.state),
        phys_name(r.phys_state)
    ));
    if let Some(p) = &r.peer {
        let when = if p.sweep < r.sweep {
            format!(", link last found in heavy sweep {}", p.sweep)
        } else {
            String::new()
        };
        let cause = if p.cause_code.is_empty() {
            String::new()
        } else {
            format!(" [{}]", p.cause_code)
        };
        o.push_str(&format!(
            "  peer:  \"{}\" {:#018x} port {}: {} / {}{when}{cause}\n",
            p.description,
            p.node_guid,
            p.port,
            state_name(p.state),
            phys_name(p.phys_state)
        ));
    }
    for f in &r.facts {
        o.push_str(&format!("  - {f}\n"));
    }
    o.push_str(&format!("next step: {}\n", r.next_step));
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lid_is_decimal_and_guid_is_hex_with_0x() {
        let r = request("12", Some(3)).unwrap();
        assert_eq!((r.lid, r.guid, r.port), (12, 0, Some(3)));
        let r = request("0x0002c90300ab0001", None).unwrap();
        assert_eq!((r.lid, r.guid, r.port), (0, 0x0002_c903_00ab_0001, None));
        assert!(request("0xzz", None).is_err());
        assert!(
            request("c903", None).is_err(),
            "hex without 0x is not a LID"
        );
        assert!(request("0", None).is_err());
        assert!(request("49152", None).is_err());
        assert!(request("0x0", None).is_err());
        assert!(request("5", Some(256)).is_err());
    }

    #[test]
    fn text_has_the_verdict_facts_and_next_step() {
        let r = ExplainReply {
            node_guid: 0x2001,
            description: "leaf 1".into(),
            is_switch: true,
            port: 2,
            lid: 10,
            state: 3,
            phys_state: 5,
            read_sweep: 4,
            sweep: 4,
            peer: Some(ExplainPeerPort {
                node_guid: 0x30,
                description: "host 3 HCA-1".into(),
                port: 1,
                state: 2,
                phys_state: 5,
                sweep: 4,
                cause_code: "EXPLAIN-MKEY".into(),
            }),
            cause_code: "EXPLAIN-ARMED-PEER".into(),
            summary: "Armed, waiting for its neighbour".into(),
            facts: vec!["PortInfo as read in heavy sweep 4: PortState Armed".into()],
            next_step: "fix the peer first".into(),
            ..ExplainReply::default()
        };
        let t = explain_text(&r);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[0],
            "EXPLAIN-ARMED-PEER: Armed, waiting for its neighbour"
        );
        assert!(lines[1].contains("\"leaf 1\" 0x0000000000002001 port 2 (LID 10): Armed / LinkUp"));
        assert!(
            lines[2].ends_with("port 1: Init / LinkUp [EXPLAIN-MKEY]"),
            "{t}"
        );
        assert_eq!(
            lines[3],
            "  - PortInfo as read in heavy sweep 4: PortState Armed"
        );
        assert_eq!(lines[4], "next step: fix the peer first");
        let j = explain_json(&r);
        assert_eq!(j["cause"], "EXPLAIN-ARMED-PEER");
        assert_eq!(j["peer"]["cause"], "EXPLAIN-MKEY");
        assert_eq!(j["state"], "Armed");
    }
}
