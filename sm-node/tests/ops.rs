//! Running sm-node as a system daemon: the shipped configuration names every key and passes
//! `--check-config`; bad configurations are refused; JSON log lines parse; text logs carry
//! no colour off a terminal; `import-opensm` with OpenSM's guid2lid keeps every LID.

mod common;

use clap::Args;
use common::*;
use fabric::{Guid, Lid, Topology};
use sm_node::config::{FileConfig, NodeConfig};
use sm_node::daemon;
use sm_node::master::Shutdown;
use sm_node::milestone::MilestoneKind;
use sm_node::transport::sim::{Pace, SimHandle};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_sm-node");

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

fn sm_node(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("SM_LOG_FORMAT")
        .output()
        .unwrap()
}

#[test]
fn the_shipped_config_names_every_key_and_passes_check_config() {
    let path = repo("packaging/etc/sm-node.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    // Every key the daemon reads (the flags of FileConfig, and the [admin] table) is in
    // the file, set or commented out.
    let cmd = FileConfig::augment_args(clap::Command::new("keys"));
    let mut keys: Vec<String> = cmd
        .get_arguments()
        .filter_map(|a| a.get_long().map(str::to_string))
        .collect();
    assert!(keys.len() >= 14, "{keys:?}");
    keys.extend(
        [
            "tls-cert",
            "tls-key",
            "tls-ca",
            "tls-domain",
            "tokens-file",
            "insecure-loopback",
        ]
        .map(String::from),
    );
    for k in &keys {
        let named = text.lines().any(|l| {
            let l = l.trim_start_matches('#').trim_start();
            l.starts_with(&format!("{k} ="))
        });
        assert!(named, "key {k} is not in {}", path.display());
    }
    // It loads as it is, and sm-node checks it.
    let f = FileConfig::load(&path).unwrap();
    NodeConfig::try_from(f).unwrap();
    let out = sm_node(&["--config", path.to_str().unwrap(), "--check-config"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(stdout.starts_with("config OK: Umad"), "{stdout}");
}

#[test]
fn check_config_refuses_bad_configurations() {
    let dir = temp_dir("ops-badcfg");
    let cases = [
        (
            "fabric = \"umad:/dev/infiniband/umad0\"\npriority = 16\n",
            "priority 16",
        ),
        (
            "fabric = \"umad:/dev/infiniband/umad0\"\nno-such-key = 1\n",
            "no-such-key",
        ),
        ("priority = 1\n", "no fabric"),
        (
            "fabric = \"sim:ft2:4\"\nroot-guid-file = \"missing-roots\"\n",
            "missing-roots",
        ),
    ];
    for (i, (toml, what)) in cases.iter().enumerate() {
        let p = dir.join(format!("c{i}.toml"));
        std::fs::write(&p, toml).unwrap();
        let out = sm_node(&["--config", p.to_str().unwrap(), "--check-config"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{toml}: {out:?}");
        assert!(
            stderr.contains("E_NODE_CONFIG") && stderr.contains(what),
            "{toml}: {stderr}"
        );
    }
    let roots = dir.join("roots");
    std::fs::write(&roots, "0x0002c90200000001\nnot-a-guid\n").unwrap();
    let out = sm_node(&[
        "--fabric",
        "sim:ft2:4",
        "--root-guid-file",
        roots.to_str().unwrap(),
        "--check-config",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("line 2"),
        "{stderr}"
    );
    // The same file without the bad line: two roots for updn.
    std::fs::write(
        &roots,
        "0x0002c90200000001\n# spine 2\n0x0002c90200000002\n",
    )
    .unwrap();
    let out = sm_node(&[
        "--fabric",
        "sim:ft2:4",
        "--root-guid-file",
        roots.to_str().unwrap(),
        "--check-config",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("2 root GUIDs"),
        "{out:?}"
    );
    // QoS: a bad option and a bad policy file are refused with their position.
    let qos = dir.join("qos.toml");
    std::fs::write(
        &qos,
        "fabric = \"sim:ft2:4\"\n[qos]\nenabled = true\nqos_sl2vl = \"0,1,2\"\n",
    )
    .unwrap();
    let out = sm_node(&["--config", qos.to_str().unwrap(), "--check-config"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("QOS-E002"),
        "{stderr}"
    );
    let pol = dir.join("qos-policy.conf");
    std::fs::write(&pol, "qos-levels\n  qos-level\n    name: a\n    sl: 99\n").unwrap();
    std::fs::write(
        &qos,
        format!(
            "fabric = \"sim:ft2:4\"\n[qos]\nenabled = true\nqos_policy_file = {:?}\n",
            pol.to_str().unwrap()
        ),
    )
    .unwrap();
    let out = sm_node(&["--config", qos.to_str().unwrap(), "--check-config"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let at = format!("{}:4:", pol.display());
    assert!(
        !out.status.success() && stderr.contains("E_NODE_QOS_POLICY") && stderr.contains(&at),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn json_log_lines_parse_and_text_has_no_colour_off_a_terminal() {
    let run = |format: &str| {
        sm_node(&[
            "--fabric",
            "sim:ft2:4",
            "--sweep-interval",
            "0",
            "--exit-after-subnet-up",
            "--log-format",
            format,
        ])
    };
    let out = run("json");
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    let mut messages = Vec::new();
    for line in stderr.lines() {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert!(
            v["timestamp"].is_string() && v["level"].is_string(),
            "{line}"
        );
        messages.push(v["message"].as_str().unwrap_or_default().to_string());
    }
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("Entering MASTER state")),
        "{messages:?}"
    );
    assert!(
        messages.iter().any(|m| m.starts_with("SUBNET UP")),
        "{messages:?}"
    );
    // Text off a terminal (a pipe here), NO_COLOR unset: no escape sequence.
    let out = run("text");
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("SUBNET UP"), "{stderr}");
    assert!(!stderr.contains('\x1b'), "{stderr}");
}

fn all_lids(h: &SimHandle, t: &Topology) -> Vec<(Guid, Lid)> {
    let cas = ca_ports(t);
    h.with(|sim| {
        let mut v = Vec::new();
        for (id, n) in t.switches() {
            v.push((n.ports[0].guid, sim.port_info(id, 0).unwrap().lid));
        }
        for &(n, p, g) in &cas {
            v.push((g, sim.port_info(n, p).unwrap().lid));
        }
        v
    })
}

#[test]
fn import_opensm_with_its_guid2lid_keeps_every_lid() {
    let spec = "random:12:seed=3:radix=8:links=4:hosts=3";
    let dir = temp_dir("ops-import");
    // The LIDs OpenSM gave: here the GUID order reversed, so that only the file can explain
    // the numbering; OpenSM's guid2lid format, one port per line.
    let (h0, t) = daemon::new_sim(spec, 5).unwrap();
    let guids: Vec<Guid> = all_lids(&h0, &t).into_iter().map(|(g, _)| g).collect();
    let n = guids.len() as u16;
    let opensm: Vec<(Guid, Lid)> = guids
        .iter()
        .enumerate()
        .map(|(i, &g)| (g, Lid(n - i as u16 + 3)))
        .collect();
    let text: String = opensm
        .iter()
        .map(|(g, l)| format!("0x{:016x} 0x{:04x} 0x{:04x}\n", g.0, l.0, l.0))
        .collect();
    std::fs::write(dir.join("guid2lid"), text).unwrap();
    std::fs::write(dir.join("partitions.conf"), "Default=0x7fff : ALL=full ;\n").unwrap();
    let conf = repo("deploy/tests/data/opensm.conf.default");
    let (etc, data) = (dir.join("etc"), dir.join("data"));
    let fabric = format!("sim:{spec}");
    let p = |p: &Path| p.to_str().unwrap().to_string();
    let out = sm_node(&[
        "import-opensm",
        "--conf",
        &p(&conf),
        "--partitions",
        &p(&dir.join("partitions.conf")),
        "--guid2lid",
        &p(&dir.join("guid2lid")),
        "--fabric",
        &fabric,
        "--data-dir",
        &p(&data),
        "--out-dir",
        &p(&etc),
    ]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        table.contains("sm_priority") && table.contains("qos_max_vls"),
        "{table}"
    );
    // The daemon as the unit starts it: the imported configuration, flags on top.
    let file = FileConfig::load(&etc.join("sm-node.toml")).unwrap();
    let cfg = NodeConfig::try_from(file.overlay(FileConfig {
        routing_workers: Some(2),
        sweep_interval: Some(0.0),
        ..FileConfig::default()
    }))
    .unwrap();
    assert_eq!(
        cfg.guid2lid.as_deref(),
        Some(data.join("guid2lid").as_path())
    );
    assert_eq!(
        cfg.engines,
        ["minhop", "updn"],
        "OpenSM's default engine kept, updn after it (credit loops are refused)"
    );
    actix_rt::System::new().block_on(async {
        let (h, _) = daemon::new_sim(spec, 5).unwrap();
        let attached = h.attach(ca_ports(&t)[0].2, Pace::Fast).unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let master = daemon::start_master(&cfg, attached, vec![tx]).unwrap();
        let seen = wait_subnet_up(&mut rx).await;
        let new = seen.iter().find_map(|m| match m.kind {
            MilestoneKind::LidsAssigned { new, .. } => Some(new),
            _ => None,
        });
        assert_eq!(new, Some(0), "every port took its LID from the file");
        assert_eq!(all_lids(&h, &t), opensm);
        check_programmed(&h, &t);
        master.send(Shutdown).await.unwrap();
        wait_for(&mut rx, "Stopped", |k| {
            matches!(k, MilestoneKind::Stopped { .. })
        })
        .await;
    });
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_new_cluster_takes_its_lids_from_an_imported_guid2lid() {
    use sm_node::cluster::harness::{self, LocalCluster};
    let dir = temp_dir("ops-cluster-guid2lid");
    let mut c = LocalCluster::new(Path::new(BIN), "ft2:8", 3, &dir.join("cluster")).unwrap();
    // OpenSM's guid2lid for every switch and CA port, with LIDs Quorum SM would not choose
    // (from 200, in reverse topology order).
    let mut ports: Vec<(fabric::NodeId, u8, Guid)> = c
        .topo
        .switches()
        .map(|(id, n)| (id, 0, n.ports[0].guid))
        .collect();
    ports.extend(harness::ca_ports(&c.topo));
    let n = ports.len() as u16;
    let want: Vec<(Guid, Lid)> = ports
        .iter()
        .enumerate()
        .map(|(i, p)| (p.2, Lid(200 + n - i as u16)))
        .collect();
    let text: String = want
        .iter()
        .map(|(g, l)| format!("0x{:016x} 0x{:04x} 0x{:04x}\n", g.0, l.0, l.0))
        .collect();
    let file = dir.join("guid2lid");
    std::fs::write(&file, &text).unwrap();
    c.common
        .extend(["--guid2lid".to_string(), file.to_str().unwrap().to_string()]);
    c.start_all().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let st = rt
        .block_on(c.wait_serving(0, std::time::Duration::from_secs(60)))
        .unwrap();
    let got: Vec<(Guid, Lid)> = c.with_sim(|s| {
        ports
            .iter()
            .map(|&(id, p, g)| (g, s.port_info(id, p).map_or(Lid(0), |pi| pi.lid)))
            .collect()
    });
    assert_eq!(got, want, "every port has its LID from the file");
    // The master read the file and never wrote it.
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    println!(
        "3 replicas, master replica {}: {} ports took their LIDs from the imported guid2lid",
        st.leader_id, n
    );
    drop(c);
    std::fs::remove_dir_all(&dir).unwrap();
}
