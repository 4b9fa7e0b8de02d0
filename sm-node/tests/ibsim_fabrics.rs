//! `sm-node --fabric umad:...` on ibsim (issue 9): our SM reaches SUBNET UP through the
//! kernel user-MAD interface (umad2sim), and infiniband-diags read back what it programmed:
//! ibnetdiscover equals the topology, sminfo names our master, ibroute of every switch
//! equals our LFTs, smpquery shows every queried CA port Active with the partitions
//! planner's P_Keys (two-tenant partitions.conf). When ibsim or the diags are not installed
//! the tests fail under `CI=true` and print `SKIPPED: ...` otherwise (testenv).

mod ibsim_common;

use fabric::{GenSpec, Topology};
use ibsim_common::*;
use std::path::Path;
use umad::testing::{Ibsim, NET_2SW2PATH4HCA};

const EXAMPLES: &str = "/usr/share/doc/ibsim-utils/net-examples";

fn generated(spec: &str) -> Topology {
    spec.parse::<GenSpec>()
        .unwrap_or_else(|e| panic!("{spec}: {e}"))
        .generate()
        .unwrap_or_else(|e| panic!("{spec}: {e}"))
}

/// Runs our SM at `sm_host` with a two-tenant partitions.conf built from the fabric as
/// ibnetdiscover sees it before any SM ran, then checks everything with the diags.
fn prove(
    sim: &Ibsim,
    expected: &Topology,
    guids: bool,
    sm_host: &str,
    diag_host: &str,
    ca_stride: usize,
) -> Verified {
    // GUIDs of the example files are ibsim's: read them from the fabric (DR, no SM needed).
    let before = fabric::netfile::parse(&tool(sim, diag_host, "ibnetdiscover", &[]))
        .expect("ibnetdiscover before the SM");
    let conf = two_tenants(&before);
    let conf_path = sim.dir().join("partitions.conf");
    std::fs::write(&conf_path, &conf).unwrap();
    let sm = start_sm(
        sim,
        sm_host,
        &[
            "--priority",
            "5",
            "--partitions",
            conf_path.to_str().unwrap(),
        ],
    );
    println!("{}", sm.subnet_up_line());
    let v = verify(
        sim,
        &sm,
        sm_host,
        diag_host,
        expected,
        &conf,
        Checks {
            ca_stride,
            priority: 5,
            guids,
        },
    );
    println!(
        "verified: {} switches, {} LFT entries ({} blocks by smpdump), {} CA ports (engine {})",
        v.switches,
        v.entries,
        v.smpdumps,
        v.ca_ports,
        sm.engine()
    );
    drop(sm); // clients before ibsim
    v
}

#[test]
fn net_examples_subnet_up_and_diags_agree() {
    if !ready("net_examples_subnet_up_and_diags_agree", &[]) {
        return;
    }
    // Diags attach at Hca2 except in `net`, whose Hca2 is cabled at port 2 only (umad2sim
    // serves port 1): there they share Hca1 with the SM.
    for (name, diag_host) in [
        ("net.2sw2path4hca", "Hca2"),
        ("net.2sw2path4hca2port", "Hca2"),
        ("net.2sw2path", "Hca2"),
        ("net", "Hca1"),
        ("net.1", "Hca2"),
    ] {
        let path = Path::new(EXAMPLES).join(name);
        let expected = fabric::netfile::parse(&std::fs::read_to_string(&path).unwrap())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let sim = Ibsim::start(&path, &[]).expect("ibsim");
        println!("== {name}");
        let v = prove(&sim, &expected, false, "Hca1", diag_host, 1);
        assert_eq!(v.ca_ports, ca_ports(&expected).len());
        sim.stop();
    }
    assert!(Path::new(NET_2SW2PATH4HCA).exists());
}

#[test]
fn generated_fat_tree_ft2_8() {
    if !ready("generated_fat_tree_ft2_8", &[]) {
        return;
    }
    let topo = generated("ft2:8");
    let sim = Ibsim::start_topology(&topo).expect("ibsim");
    let v = prove(
        &sim,
        &topo,
        true,
        &first_ca_host(&topo),
        &last_ca_host(&topo),
        1,
    );
    assert_eq!(v.ca_ports, ca_ports(&topo).len());
    sim.stop();
}

#[test]
fn generated_fat_tree_ft2_36_every_lft_sampled_ca_ports() {
    if !ready("generated_fat_tree_ft2_36_every_lft_sampled_ca_ports", &[]) {
        return;
    }
    let topo = generated("ft2:36");
    let sim = Ibsim::start_topology(&topo).expect("ibsim");
    // Every switch's table; every 9th CA port by smpquery (72 of 648, each on a different
    // leaf position), to stay within a minute.
    let v = prove(
        &sim,
        &topo,
        true,
        &first_ca_host(&topo),
        &last_ca_host(&topo),
        9,
    );
    assert_eq!(v.switches, 54);
    sim.stop();
}

#[test]
fn generated_torus_top_lid_64() {
    if !ready("generated_torus_top_lid_64", &[]) {
        return;
    }
    // 32 switches + 32 hosts: the top LID is 64, the case where ibroute leaves out the
    // last LFT block (IBSIM.md); `verify` reads that block with smpdump.
    let topo = generated("torus:4x4x2");
    let sim = Ibsim::start_topology(&topo).expect("ibsim");
    let v = prove(
        &sim,
        &topo,
        true,
        &first_ca_host(&topo),
        &last_ca_host(&topo),
        1,
    );
    assert_eq!(v.ca_ports, ca_ports(&topo).len());
    assert_eq!(
        v.smpdumps, v.switches,
        "one smpdump per switch (block of LID 64)"
    );
    sim.stop();
}
