//! Moving a fabric from OpenSM to Quorum SM keeps every LID (issue 22): OpenSM brings a
//! fabric up on ibsim (`opensm -o`, its guid2lid written to a scratch OSM_CACHE_DIR) and
//! ibnetdiscover records every port's LID, switches' port 0 and CA ports; a fresh ibsim
//! instance of the same fabric starts with every LID 0; `sm-node import-opensm` takes
//! OpenSM's guid2lid and its own default configuration (`opensm -c`); sm-node started
//! with the imported configuration gives every port exactly OpenSM's LID. For contrast,
//! sm-node without the import on a third fresh instance is run too, and the test reports
//! how many ports would have changed LID. When ibsim, OpenSM or the diags are not
//! installed the test fails under `CI=true` and prints `SKIPPED: ...` otherwise.

mod ibsim_common;

use ibsim_common::*;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use umad::testing::Ibsim;

/// Every port's LID as ibnetdiscover prints it: a switch's port 0 (`Switch ... "S-GUID"
/// ... port 0 lid N`) keyed by its node id, a CA port (`[1](GUID) ... # lid N`) by its
/// port GUID.
fn port_lids(ibnetdiscover: &str) -> BTreeMap<String, u16> {
    let lid_after = |s: &str, key: &str| -> Option<u16> {
        s.split_once(key)?.1.split_whitespace().next()?.parse().ok()
    };
    let mut m = BTreeMap::new();
    let mut in_ca = false;
    for line in ibnetdiscover.lines() {
        if line.starts_with("Switch") {
            in_ca = false;
            let id = line.split('"').nth(1).unwrap_or_default().to_string();
            let lid = lid_after(line, " port 0 lid ")
                .unwrap_or_else(|| panic!("no port 0 LID in {line:?}"));
            m.insert(id, lid);
        } else if line.starts_with("Ca") {
            in_ca = true;
        } else if line.starts_with("Rt") {
            in_ca = false;
        } else if in_ca && line.starts_with('[') {
            let guid = line
                .split_once('(')
                .and_then(|(_, r)| r.split_once(')'))
                .map(|(g, _)| format!("port 0x{g:0>16}"))
                .unwrap_or_else(|| panic!("no port GUID in {line:?}"));
            let lid = lid_after(line, "# lid ").unwrap_or_else(|| panic!("no LID in {line:?}"));
            m.insert(guid, lid);
        }
    }
    m
}

#[test]
fn a_fabric_moved_from_opensm_with_its_guid2lid_keeps_every_lid() {
    let test = "a_fabric_moved_from_opensm_with_its_guid2lid_keeps_every_lid";
    if !ready(test, &["opensm"]) {
        return;
    }
    let (topo, dir, net) = generated_net("ft2:8", "lids");
    let (sm_host, diag_host) = (first_ca_host(&topo), last_ca_host(&topo));

    // OpenSM brings the fabric up once and writes its guid2lid to OSM_CACHE_DIR.
    let sim = Ibsim::start(&net, &[]).expect("ibsim");
    let osm = opensm_once(&sim, &sm_host, dir.join("opensm"), &[]);
    let theirs = port_lids(&tool(&sim, &diag_host, "ibnetdiscover", &[]));
    sim.stop();
    let switches = topo.switches().count();
    let cas: usize = ca_ports(&topo).len();
    assert_eq!(theirs.len(), switches + cas, "{theirs:?}");
    assert!(theirs.values().all(|l| *l != 0), "{theirs:?}");
    let guid2lid = osm.join("guid2lid");
    assert!(
        guid2lid.exists(),
        "OpenSM wrote no guid2lid in {}",
        osm.display()
    );

    // OpenSM's own default configuration, then the import.
    let conf = dir.join("opensm.conf");
    let opensm = testenv::require(test, ["opensm"]).unwrap()[0].clone();
    let out = Command::new(opensm).arg("-c").arg(&conf).output().unwrap();
    assert!(conf.exists(), "opensm -c wrote nothing: {out:?}");
    let (etc, data) = (dir.join("etc"), dir.join("data"));
    let p = |p: &Path| p.to_str().unwrap().to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_sm-node"))
        .args([
            "import-opensm",
            "--conf",
            &p(&conf),
            "--guid2lid",
            &p(&guid2lid),
        ])
        .args(["--fabric", "umad:/dev/infiniband/umad0:1"])
        .args(["--data-dir", &p(&data), "--out-dir", &p(&etc)])
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    assert!(out.status.success(), "import-opensm: {out:?}");

    // A fresh instance of the same fabric: every LID 0 again.
    let fresh = |what: &str| {
        let sim = Ibsim::start(&net, &[]).expect("ibsim");
        let lids = port_lids(&tool(&sim, &diag_host, "ibnetdiscover", &[]));
        assert!(lids.values().all(|l| *l == 0), "{what}: {lids:?}");
        sim
    };
    let sim = fresh("before the import");
    let cfg = etc.join("sm-node.toml");
    let sm = start_sm(&sim, &sm_host, &["--config", &p(&cfg)]);
    let ours = port_lids(&tool(&sim, &diag_host, "ibnetdiscover", &[]));
    let log = sm.stop();
    sim.stop();
    let lids_line = log
        .lines()
        .find(|l| l.contains("LID ASSIGNMENT COMPLETE"))
        .unwrap_or_else(|| panic!("no LID ASSIGNMENT line:\n{log}"))
        .to_string();
    println!("{lids_line}");
    // Every port's LID comes from the file ("remembered"); none is new. ("changing" counts
    // the ports whose current LID, 0 on the fresh fabric, differs.)
    let remembered = format!(": {} remembered, 0 kept, 0 new,", theirs.len());
    assert!(
        lids_line.contains(&remembered),
        "every LID from the file: {lids_line}"
    );

    // Without the import, for contrast (no guid2lid: the SM's own numbering).
    let sim = fresh("without the import");
    let own = start_sm(&sim, &sm_host, &[]);
    let unimported = port_lids(&tool(&sim, &diag_host, "ibnetdiscover", &[]));
    drop(own);
    sim.stop();
    let would_change = unimported
        .iter()
        .filter(|(k, l)| theirs.get(*k) != Some(l))
        .count();
    println!(
        "ft2:8 on ibsim: {} ports ({switches} switches, {cas} CA ports); with OpenSM's guid2lid imported {} keep OpenSM's LID; without it {would_change} would change",
        theirs.len(),
        ours.iter()
            .filter(|(k, l)| theirs.get(*k) == Some(l))
            .count(),
    );
    assert_eq!(
        ours, theirs,
        "LIDs: Quorum SM with the import (left) vs OpenSM (right)"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
