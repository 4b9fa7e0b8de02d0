//! The SA of `sm-node --fabric umad:...` on ibsim, queried with the real `saquery`
//! (infiniband-diags) and compared with the fabric's truth (ibnetdiscover, smpquery,
//! sminfo, the SM's dumped tables). ibsim's umad2sim does no RMPP, so only answers of one
//! MAD are checked here (single records, and tables of at most 200 bytes); RMPP is tested
//! with the `sa` crate's client on the simulated fabric. When ibsim or the diags are not
//! installed the test fails under `CI=true` and prints `SKIPPED: ...` otherwise (testenv).

mod ibsim_common;

use fabric::Guid;
use ibsim_common::*;
use std::path::Path;
use umad::testing::{Ibsim, NET_2SW2PATH4HCA};

/// `Name....value` lines of a saquery dump, in order.
fn fields(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            let dots = l.find("..")?;
            let name = l[..dots].trim_end_matches(':').to_string();
            let value = l[dots..].trim_start_matches(['.', ':']).trim().to_string();
            Some((name, value))
        })
        .collect()
}

fn field(text: &str, name: &str) -> String {
    fields(text)
        .into_iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("no {name} in:\n{text}"))
}

fn saquery(sim: &Ibsim, host: &str, args: &[&str]) -> umad::testing::Output {
    sim.run_tool("saquery", args, Some(host), TOOL_TIMEOUT)
        .unwrap_or_else(|e| panic!("saquery {args:?}: {e}"))
}

#[test]
fn saquery_against_our_sa_on_ibsim() {
    if !ready("saquery_against_our_sa_on_ibsim", &["saquery"]) {
        return;
    }
    let sim = Ibsim::start(Path::new(NET_2SW2PATH4HCA), &[]).expect("ibsim");
    let before = fabric::netfile::parse(&tool(&sim, "Hca2", "ibnetdiscover", &[]))
        .expect("ibnetdiscover before the SM");
    let conf = two_tenants(&before);
    let conf_path = sim.dir().join("partitions.conf");
    std::fs::write(&conf_path, &conf).unwrap();
    let sm = start_sm(&sim, "Hca1", &["--partitions", conf_path.to_str().unwrap()]);
    let cas = ca_ports(&before);
    let lid_of = |g: Guid| *sm.tables.lids.get(&g).expect("LID of a CA port");

    // NodeRecord of every CA port, by LID: GUIDs and description as ibnetdiscover has them.
    for (g, at) in &cas {
        let lid = lid_of(*g).to_string();
        let out = tool(&sim, "Hca2", "saquery", &["NR", &lid]);
        let n = before.node(at.node);
        assert_eq!(field(&out, "lid"), lid);
        assert_eq!(
            field(&out, "node_guid"),
            format!("{:#018x}", n.node_guid.0),
            "{out}"
        );
        assert_eq!(field(&out, "port_guid"), format!("{:#018x}", g.0));
        assert_eq!(field(&out, "NodeDescription"), n.description);
        assert_eq!(field(&out, "port_num"), at.port.0.to_string());
    }

    // PortInfoRecord of each CA port against smpquery portinfo.
    for (g, _) in &cas {
        let lid = lid_of(*g).to_string();
        let out = tool(&sim, "Hca2", "saquery", &["PIR", &lid]);
        let truth = tool(&sim, "Hca2", "smpquery", &["portinfo", &lid, "1"]);
        for name in ["Lid", "SMLid", "LinkState", "LMC", "GidPrefix"] {
            assert_eq!(
                field(&out, name),
                portinfo_field(&truth, name).unwrap(),
                "{name} of LID {lid}:\n{out}\n{truth}"
            );
        }
    }

    // SMInfoRecord against sminfo.
    let (sm_lid, sm_guid, _, _) = parse_sminfo(&tool(&sim, "Hca2", "sminfo", &[]));
    let smir = tool(&sim, "Hca2", "saquery", &["SMIR"]);
    assert_eq!(field(&smir, "LID"), sm_lid.to_string());
    assert_eq!(field(&smir, "GUID"), format!("{sm_guid:#018x}"));
    assert_eq!(field(&smir, "SMState"), "3");
    assert_eq!(field(&smir, "SM_Key"), "0x0000000000000000");

    // PathRecords: the first half of the CAs share TenantA (and Default); a path between
    // two of them carries a key both hold; asking for TenantB's key between TenantA ports
    // gives nothing; between a full and a limited TenantB port it gives TenantB's key.
    let half = cas.len() / 2;
    let (a0, a1) = (lid_of(cas[0].0), lid_of(cas[1].0));
    let pr = tool(
        &sim,
        "Hca2",
        "saquery",
        &["--src-to-dst", &format!("{a0}:{a1}")],
    );
    assert_eq!(field(&pr, "slid"), a0.to_string());
    assert_eq!(field(&pr, "dlid"), a1.to_string());
    let pkey = u16::from_str_radix(field(&pr, "pkey").trim_start_matches("0x"), 16).unwrap();
    let holds = |i: usize, key: u16| {
        let at = cas[i].1;
        sm.tables.pkeys[&(before.node(at.node).node_guid, at.port.0)]
            .iter()
            .any(|(_, k)| *k == key)
    };
    assert!(holds(0, pkey), "the source holds the key");
    assert!(
        sm.tables.pkeys[&(before.node(cas[1].1.node).node_guid, cas[1].1.port.0)]
            .iter()
            .any(|(_, k)| k & 0x7fff == pkey & 0x7fff),
        "the destination holds the partition"
    );
    assert_eq!(field(&pr, "num_path_revers"), "0x80");
    let cross = saquery(
        &sim,
        "Hca2",
        &[
            "PR",
            "--slid",
            &a0.to_string(),
            "--dlid",
            &a1.to_string(),
            "--pkey",
            "0x1002",
        ],
    );
    assert!(
        !cross.stdout.contains("PathRecord dump"),
        "no path in a partition the two do not share:\n{}",
        cross.describe()
    );
    let (b_full, b_limited) = (lid_of(cas[half].0), lid_of(cas[half + 1].0));
    let hub = tool(
        &sim,
        "Hca2",
        "saquery",
        &[
            "PR",
            "--slid",
            &b_full.to_string(),
            "--dlid",
            &b_limited.to_string(),
            "--pkey",
            "0x1002",
        ],
    );
    assert_eq!(field(&hub, "pkey"), "0x9002", "the full member's key");

    // PKeyTableRecord: refused without the SM_Key (as OpenSM), the port's table with it.
    let lid = lid_of(cas[0].0).to_string();
    let denied = saquery(&sim, "Hca2", &["PKTR", &lid]);
    assert!(
        !denied.success() && denied.stderr.contains("SA_ERR_REQ_INVALID"),
        "{}",
        denied.describe()
    );
    let pk = tool(&sim, "Hca2", "saquery", &["--smkey", "1", "PKTR", &lid]);
    let truth = tool(&sim, "Hca2", "smpquery", &["pkeys", &lid, "1"]);
    let want: Vec<u16> = parse_pkeys(&truth).into_iter().map(|(_, k)| k).collect();
    let first_block = pk.split("PKeyTableRecord dump").nth(1).unwrap_or_default();
    let got: Vec<u16> = first_block
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("0x"))
        .filter_map(|h| u16::from_str_radix(h, 16).ok())
        .filter(|k| k & 0x7fff != 0)
        .collect();
    assert_eq!(got, want, "{pk}\n{truth}");

    // Multicast groups: the IPoIB broadcast groups of Default and TenantA, from 0xC000.
    let g = tool(&sim, "Hca2", "saquery", &["-g"]);
    let f = fields(&g);
    let mgids = f
        .iter()
        .filter(|(n, _)| n == "MGID")
        .map(|(_, v)| v.clone());
    let mlids = f
        .iter()
        .filter(|(n, _)| n == "Mlid")
        .map(|(_, v)| v.clone());
    let groups: std::collections::BTreeSet<(String, String)> = mgids.zip(mlids).collect();
    let want: std::collections::BTreeSet<(String, String)> = [
        ("ff12:401b:ffff::ffff:ffff", "0xC000"),
        ("ff12:401b:9001::ffff:ffff", "0xC001"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(groups, want, "{g}");
    let m = tool(&sim, "Hca2", "saquery", &["-m"]);
    assert!(m.contains("ff12:401b:ffff::ffff:ffff"), "{m}");

    // ClassPortInfo.
    let c = tool(&sim, "Hca2", "saquery", &["-c"]);
    assert!(c.contains("Class version............2"), "{c}");
    let log = sm.stop();
    assert!(log.contains("SA serving on port"), "{log}");
}
