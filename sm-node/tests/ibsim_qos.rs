//! The same QoS options give the same SLtoVL and VLArb tables under OpenSM and under our
//! SM on ibsim (issue 19): each SM runs on its own fresh ibsim instance of the same fabric
//! with QoS on (3 SLs on 3 VLs), and `smpquery sl2vl` / `smpquery vlarb` read every switch
//! port's and every CA port's tables back on both; the OperationalVLs each SM negotiated
//! are read with `smpquery portinfo`. When ibsim, OpenSM or the diags are not installed the
//! tests fail under `CI=true` and print `SKIPPED: ...` otherwise.

mod ibsim_common;

use fabric::{Guid, Topology};
use ibsim_common::*;
use std::collections::BTreeMap;
use std::path::Path;
use umad::testing::Ibsim;

/// 3 SLs on 3 VLs: SL 0-2 -> VL 0-2, the rest on VL 0; VL 0-2 share the low priority table.
const QOS: [(&str, &str); 4] = [
    ("qos_sl2vl", "0,1,2,0,0,0,0,0,0,0,0,0,0,0,0,0"),
    ("qos_vlarb_low", "0:32,1:32,2:32"),
    ("qos_vlarb_high", "0:0,1:0,2:0"),
    ("qos_high_limit", "0"),
];

/// Node GUID -> LID of every switch, from `ibswitches`
/// (`Switch : 0x... ports 8 "..." base port 0 lid 3 lmc 0`).
fn switch_lids(text: &str) -> BTreeMap<Guid, u16> {
    text.lines()
        .filter_map(|l| {
            let g = l.split_once("0x")?.1.split_whitespace().next()?;
            let g = u64::from_str_radix(g, 16).ok()?;
            let lid = l.split_once(" lid ")?.1.split_whitespace().next()?;
            Some((Guid(g), lid.parse().ok()?))
        })
        .collect()
}

/// Port GUID -> LID of every CA port, from ibnetdiscover's CA port lines.
fn ca_lids(ibnetdiscover: &str) -> BTreeMap<Guid, u16> {
    let mut m = BTreeMap::new();
    let mut in_ca = false;
    for line in ibnetdiscover.lines() {
        if line.starts_with("Ca") {
            in_ca = true;
        } else if line.starts_with("Switch") {
            in_ca = false;
        } else if in_ca && line.starts_with('[') {
            let guid = line
                .split_once('(')
                .and_then(|(_, r)| r.split_once(')'))
                .and_then(|(g, _)| u64::from_str_radix(g, 16).ok());
            let lid = line
                .split_once("# lid ")
                .and_then(|(_, r)| r.split_whitespace().next())
                .and_then(|l| l.parse().ok());
            if let (Some(g), Some(l)) = (guid, lid) {
                m.insert(Guid(g), l);
            }
        }
    }
    m
}

/// A table as smpquery prints it, without the header lines that name the LID (each SM
/// assigns its own LIDs).
fn normalize(text: &str) -> String {
    text.lines()
        .filter(|l| !l.contains("Lid") && !l.trim().is_empty())
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
}

/// What the fabric holds: per (node GUID, port, what) the normalized smpquery output.
type Tables = BTreeMap<(Guid, u8, &'static str), String>;

fn read_tables(sim: &Ibsim, diag_host: &str, topo: &Topology) -> Tables {
    let sw = switch_lids(&tool(sim, diag_host, "ibswitches", &[]));
    let cas = ca_lids(&tool(sim, diag_host, "ibnetdiscover", &[]));
    let mut out = Tables::new();
    let mut q = |lid: u16, port: u8, key: (Guid, u8)| {
        for what in ["sl2vl", "vlarb"] {
            let t = tool(
                sim,
                diag_host,
                "smpquery",
                &[what, &lid.to_string(), &port.to_string()],
            );
            out.insert((key.0, key.1, what), normalize(&t));
        }
        let pi = tool(
            sim,
            diag_host,
            "smpquery",
            &["portinfo", &lid.to_string(), &port.to_string()],
        );
        let op = portinfo_field(&pi, "OperVLs").unwrap_or_default();
        let hl = portinfo_field(&pi, "VLHighLimit").unwrap_or_default();
        out.insert((key.0, key.1, "opvls"), format!("{op} {hl}"));
    };
    for (_, n) in topo.switches() {
        let lid = *sw
            .get(&n.node_guid)
            .unwrap_or_else(|| panic!("switch {} has no LID", n.node_guid));
        for p in 1..=n.num_ports() {
            if n.port(fabric::PortNum(p)).and_then(|x| x.remote).is_some() {
                q(lid, p, (n.node_guid, p));
            }
        }
    }
    for (guid, pr) in ca_ports(topo) {
        let lid = *cas
            .get(&guid)
            .unwrap_or_else(|| panic!("CA port {guid} has no LID"));
        q(lid, pr.port.0, (guid, pr.port.0));
    }
    out
}

fn compare(netfile: &Path, sm_host: &str, diag_host: &str) {
    // OpenSM with `qos TRUE` and the options.
    let sim = Ibsim::start(netfile, &[]).expect("ibsim");
    let topo = fabric::netfile::parse(&tool(&sim, diag_host, "ibnetdiscover", &[]))
        .expect("ibnetdiscover parses");
    let conf: String = std::iter::once("qos TRUE".to_string())
        .chain(QOS.iter().map(|(k, v)| format!("{k} {v}")))
        .map(|l| l + "\n")
        .collect();
    let conf_path = sim.dir().join("opensm.conf");
    std::fs::write(&conf_path, conf).unwrap();
    let osm_dir = sim.dir().join("opensm");
    opensm_once(
        &sim,
        sm_host,
        osm_dir,
        &["-F".as_ref(), conf_path.as_os_str()],
    );
    let theirs = read_tables(&sim, diag_host, &topo);
    sim.stop();

    // Ours, on a fresh instance of the same file.
    let sim = Ibsim::start(netfile, &[]).expect("ibsim");
    let toml: String = std::iter::once("[qos]\nenabled = true".to_string())
        .chain(QOS.iter().map(|(k, v)| format!("{k} = \"{v}\"")))
        .map(|l| l + "\n")
        .collect();
    let cfg = sim.dir().join("sm-node.toml");
    std::fs::write(&cfg, toml).unwrap();
    let sm = start_sm(&sim, sm_host, &["--config", cfg.to_str().unwrap()]);
    let ours = read_tables(&sim, diag_host, &topo);
    drop(sm);
    sim.stop();

    let differ: Vec<_> = ours
        .iter()
        .filter(|(k, v)| theirs.get(k) != Some(v))
        .map(|(k, v)| format!("{k:?}:\n ours:\n{v}\n OpenSM:\n{:?}", theirs.get(k)))
        .collect();
    println!(
        "{}: {} tables read back; ours and OpenSM's differ in {}",
        netfile.display(),
        ours.len(),
        differ.len()
    );
    let sample = ours
        .iter()
        .find(|(k, _)| k.2 == "sl2vl")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    // Rows `ports: in  N, out  M: | 0| 1| 2| 0| ...`: SL 2 is the third entry.
    let sl2: Vec<&str> = ours
        .iter()
        .filter(|(k, _)| k.2 == "sl2vl")
        .flat_map(|(_, v)| v.lines())
        .filter_map(|l| l.split('|').nth(3))
        .collect();
    assert!(
        !sl2.is_empty() && sl2.iter().all(|v| v.trim() == "2"),
        "SL 2 maps to VL 2 on every pair: {sample}"
    );
    assert!(
        differ.is_empty(),
        "tables differ:\n{}",
        differ[..differ.len().min(6)].join("\n")
    );
    assert_eq!(ours.len(), theirs.len());
}

#[test]
fn opensm_and_ours_program_the_same_vl_tables_on_ft2_8() {
    if !ready(
        "opensm_and_ours_program_the_same_vl_tables_on_ft2_8",
        &["opensm"],
    ) {
        return;
    }
    let (topo, dir, net) = generated_net("ft2:8", "qos");
    compare(&net, &first_ca_host(&topo), &last_ca_host(&topo));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `Name....value` of a saquery dump.
fn sa_field(text: &str, name: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let l = l.trim();
        let dots = l.find("..")?;
        (l[..dots].trim_end_matches(':') == name)
            .then(|| l[dots..].trim_start_matches(['.', ':']).trim().to_string())
    })
}

#[test]
fn saquery_pr_in_a_partition_with_sl_2_returns_sl_2() {
    if !ready(
        "saquery_pr_in_a_partition_with_sl_2_returns_sl_2",
        &["saquery"],
    ) {
        return;
    }
    let sim = Ibsim::start(Path::new(umad::testing::NET_2SW2PATH4HCA), &[]).expect("ibsim");
    let conf = "Default=0x7fff, ipoib : ALL=full;\nStorage=0x0010, sl=2 : ALL=full;\n";
    let conf_path = sim.dir().join("partitions.conf");
    std::fs::write(&conf_path, conf).unwrap();
    let cfg = sim.dir().join("sm-node.toml");
    std::fs::write(&cfg, "[qos]\nenabled = true\n").unwrap();
    let sm = start_sm(
        &sim,
        "Hca1",
        &[
            "--config",
            cfg.to_str().unwrap(),
            "--partitions",
            conf_path.to_str().unwrap(),
        ],
    );
    let topo = fabric::netfile::parse(&tool(&sim, "Hca2", "ibnetdiscover", &[])).unwrap();
    let cas = ca_ports(&topo);
    let lid = |g: Guid| sm.tables.lids.get(&g).expect("LID").to_string();
    let (a, b) = (lid(cas[0].0), lid(cas[cas.len() - 1].0));
    let pr = |pkey: &str| {
        tool(
            &sim,
            "Hca2",
            "saquery",
            &["PR", "--slid", &a, "--dlid", &b, "--pkey", pkey],
        )
    };
    let storage = pr("0x8010");
    assert_eq!(
        sa_field(&storage, "sl").as_deref(),
        Some("0x2"),
        "{storage}"
    );
    let default = pr("0xffff");
    assert_eq!(
        sa_field(&default, "sl").as_deref(),
        Some("0x0"),
        "{default}"
    );
    println!("saquery PR {a} -> {b}: SL 2 in Storage, SL 0 in Default");
    drop(sm);
    sim.stop();
}

#[test]
fn opensm_and_ours_program_the_same_vl_tables_on_torus_4x4x2() {
    if !ready(
        "opensm_and_ours_program_the_same_vl_tables_on_torus_4x4x2",
        &["opensm"],
    ) {
        return;
    }
    let (topo, dir, net) = generated_net("torus:4x4x2:hosts=1", "qos-torus");
    compare(&net, &first_ca_host(&topo), &last_ca_host(&topo));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn saquery_pr_takes_the_sl_of_the_qos_policy_level() {
    if !ready(
        "saquery_pr_takes_the_sl_of_the_qos_policy_level",
        &["saquery"],
    ) {
        return;
    }
    let sim = Ibsim::start(Path::new(umad::testing::NET_2SW2PATH4HCA), &[]).expect("ibsim");
    let topo = fabric::netfile::parse(&tool(&sim, "Hca2", "ibnetdiscover", &[])).unwrap();
    let cas = ca_ports(&topo);
    let (storage, other) = (cas[cas.len() - 1].0, cas[1].0);
    // Paths to the storage port ride SL 3 (a match rule by destination), the rest SL 0.
    let policy = format!(
        "port-groups\n  port-group\n    name: Storage\n    port-guid: {:#x}\n  end-port-group\n\
         end-port-groups\nqos-levels\n  qos-level\n    name: DEFAULT\n    sl: 0\n  end-qos-level\n\
         \x20 qos-level\n    name: Storage\n    sl: 3\n  end-qos-level\nend-qos-levels\n\
         qos-match-rules\n  qos-match-rule\n    destination: Storage\n    qos-level-name: Storage\n\
         \x20 end-qos-match-rule\nend-qos-match-rules\n",
        storage.0
    );
    let pol = sim.dir().join("qos-policy.conf");
    std::fs::write(&pol, policy).unwrap();
    let cfg = sim.dir().join("sm-node.toml");
    std::fs::write(
        &cfg,
        format!(
            "[qos]\nenabled = true\nqos_policy_file = {:?}\n",
            pol.to_str().unwrap()
        ),
    )
    .unwrap();
    let sm = start_sm(&sim, "Hca1", &["--config", cfg.to_str().unwrap()]);
    let lid = |g: Guid| sm.tables.lids.get(&g).expect("LID").to_string();
    let src = lid(cas[0].0);
    let pr = |dst: Guid| {
        tool(
            &sim,
            "Hca2",
            "saquery",
            &["PR", "--slid", &src, "--dlid", &lid(dst)],
        )
    };
    let to_storage = pr(storage);
    assert_eq!(
        sa_field(&to_storage, "sl").as_deref(),
        Some("0x3"),
        "{to_storage}"
    );
    let to_other = pr(other);
    assert_eq!(
        sa_field(&to_other, "sl").as_deref(),
        Some("0x0"),
        "{to_other}"
    );
    println!("saquery PR: SL 3 to the Storage group, SL 0 elsewhere");
    drop(sm);
    sim.stop();
}
