//! The same partitions.conf gives the same P_Key tables under OpenSM and under our SM
//! (issue 9): each SM runs on its own fresh ibsim instance of the same fabric, and
//! `smpquery pkeys` reads every CA port's table back on both. When ibsim, OpenSM or the diags
//! are not installed the tests fail under `CI=true` and print `SKIPPED: ...` otherwise.

mod ibsim_common;

use fabric::{Guid, Topology};
use ibsim_common::*;
use std::collections::BTreeMap;
use std::path::Path;
use umad::testing::{Ibsim, NET_2SW2PATH4HCA};

/// Port GUID → LID of every CA port, from ibnetdiscover's port lines
/// (`[1](100001) "S-..."[1] # lid 1 lmc 0 ...`).
fn ca_port_lids(ibnetdiscover: &str) -> BTreeMap<Guid, u16> {
    let mut m = BTreeMap::new();
    let mut in_ca = false;
    for line in ibnetdiscover.lines() {
        if line.starts_with("Ca") {
            in_ca = true;
        } else if line.starts_with("Switch") || line.starts_with("Rt") {
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

/// Every CA port's valid P_Keys (index, key), read with smpquery at `diag_host`.
fn read_pkeys(sim: &Ibsim, diag_host: &str, topo: &Topology) -> BTreeMap<Guid, Vec<(usize, u16)>> {
    let lids = ca_port_lids(&tool(sim, diag_host, "ibnetdiscover", &[]));
    let mut out = BTreeMap::new();
    for (guid, pr) in ca_ports(topo) {
        let lid = lids
            .get(&guid)
            .unwrap_or_else(|| panic!("port {guid} has no LID in ibnetdiscover"));
        let text = tool(
            sim,
            diag_host,
            "smpquery",
            &["pkeys", &lid.to_string(), &pr.port.0.to_string()],
        );
        out.insert(guid, parse_pkeys(&text));
    }
    out
}

fn compare(netfile: &Path, sm_host: &str, diag_host: &str) {
    // OpenSM.
    let sim = Ibsim::start(netfile, &[]).expect("ibsim");
    let topo = fabric::netfile::parse(&tool(&sim, diag_host, "ibnetdiscover", &[]))
        .expect("ibnetdiscover parses");
    let conf = two_tenants(&topo);
    let conf_path = sim.dir().join("partitions.conf");
    std::fs::write(&conf_path, &conf).unwrap();
    opensm_once(
        &sim,
        sm_host,
        sim.dir().join("opensm"),
        &["-P".as_ref(), conf_path.as_os_str()],
    );
    let theirs = read_pkeys(&sim, diag_host, &topo);
    sim.stop();

    // Ours, on a fresh instance of the same file (ibsim gives the same GUIDs).
    let sim = Ibsim::start(netfile, &[]).expect("ibsim");
    let topo2 = fabric::netfile::parse(&tool(&sim, diag_host, "ibnetdiscover", &[]))
        .expect("ibnetdiscover parses");
    assert_eq!(
        shape(&topo2, true),
        shape(&topo, true),
        "same fabric, same GUIDs"
    );
    let conf_path = sim.dir().join("partitions.conf");
    std::fs::write(&conf_path, &conf).unwrap();
    let sm = start_sm(
        &sim,
        sm_host,
        &["--partitions", conf_path.to_str().unwrap()],
    );
    let ours = read_pkeys(&sim, diag_host, &topo);
    drop(sm);
    sim.stop();

    let with_tenant = ours.values().filter(|k| k.len() > 1).count();
    println!(
        "{}: {} CA ports, {with_tenant} with a tenant key; OpenSM and ours agree: {}",
        netfile.display(),
        ours.len(),
        ours == theirs
    );
    assert!(with_tenant > 0, "the partitions reached the ports");
    assert_eq!(ours, theirs, "P_Key tables: ours (left) vs OpenSM (right)");
}

#[test]
fn opensm_and_ours_program_the_same_pkeys_on_net_2sw2path4hca() {
    if !ready(
        "opensm_and_ours_program_the_same_pkeys_on_net_2sw2path4hca",
        &["opensm"],
    ) {
        return;
    }
    compare(Path::new(NET_2SW2PATH4HCA), "Hca1", "Hca2");
}

#[test]
fn opensm_and_ours_program_the_same_pkeys_on_ft2_8() {
    if !ready(
        "opensm_and_ours_program_the_same_pkeys_on_ft2_8",
        &["opensm"],
    ) {
        return;
    }
    let (topo, dir, net) = generated_net("ft2:8", "pkeys");
    compare(&net, &first_ca_host(&topo), &last_ca_host(&topo));
    let _ = std::fs::remove_dir_all(&dir);
}
