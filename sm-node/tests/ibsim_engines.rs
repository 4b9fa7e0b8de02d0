//! The deadlock-free engines on ibsim (issue 20): our SM routes a torus with torus-2QoS and
//! programs its LFTs and SLtoVL tables. `ibroute` of every switch equals the routing crate's
//! torus-2QoS tables on the LIDs our SM assigned; `smpquery sl2vl` reads the engine's
//! tables back on every switch-to-switch output port; `ibtracert` between sampled pairs
//! follows those routes; `saquery PR` answers each pair with the SL of its switches (the
//! dateline bits). When ibsim or the diags are not installed the tests fail under `CI=true`
//! and print `SKIPPED: ...` otherwise.

mod ibsim_common;

use fabric::{Guid, NodeId, PortRef, Topology};
use ibsim_common::*;
use routing::{
    EngineOptions, EngineSl2Vl, Lfts, PathSl, RoutingInput, Sequential, route_with_chain,
};
use std::collections::BTreeMap;
use umad::testing::Ibsim;

/// The routing crate's result for `engine` on the discovered fabric with our SM's LIDs.
fn expected(
    disc: &Topology,
    lids: &BTreeMap<Guid, u16>,
    engine: &str,
    max_layers: u8,
) -> (Lfts, PathSl, EngineSl2Vl) {
    let la = lid_assignment(disc, lids);
    let input = RoutingInput::new(disc, &la, None).unwrap();
    let opts = EngineOptions {
        max_layers,
        ..EngineOptions::default()
    };
    let out = route_with_chain(&input, &[engine], &opts, &Sequential, 1, None)
        .unwrap_or_else(|e| panic!("{engine}: {e}"));
    assert!(out.cdg.acyclic());
    let r = out.routing;
    (
        r.lfts,
        (*r.path_sl.expect("path SLs")).clone(),
        (*r.sl2vl.expect("SL2VL")).clone(),
    )
}

/// Rows of `smpquery sl2vl LID OUT`: (in port, out port, the 16 VLs).
fn sl2vl_rows(text: &str) -> Vec<(u8, u8, Vec<u8>)> {
    text.lines()
        .filter_map(|l| {
            let rest = l.trim().strip_prefix("ports: in")?;
            let (inp, rest) = rest.split_once(", out")?;
            let (out, vls) = rest.split_once(':')?;
            let vls: Vec<u8> = vls
                .split('|')
                .filter_map(|v| v.trim().parse().ok())
                .collect();
            Some((inp.trim().parse().ok()?, out.trim().parse().ok()?, vls))
        })
        .collect()
}

/// The switch GUIDs an `ibtracert` output passes, in order.
fn traced_switches(text: &str) -> Vec<Guid> {
    text.lines()
        .filter(|l| l.contains("-> switch port"))
        .filter_map(|l| {
            let g = l.split_once("{0x")?.1.split_once('}')?.0;
            u64::from_str_radix(g, 16).ok().map(Guid)
        })
        .collect()
}

/// `sl......0x3` of a saquery PathRecord dump.
fn pr_sl(text: &str) -> Option<u8> {
    text.lines().find_map(|l| {
        let v = l.trim().strip_prefix("sl.")?.trim_start_matches('.');
        u8::from_str_radix(v.trim_start_matches("0x"), 16).ok()
    })
}

#[test]
fn torus_2qos_on_ibsim_tables_traces_and_path_sls() {
    if !ready(
        "torus_2qos_on_ibsim_tables_traces_and_path_sls",
        &["saquery", "ibtracert"],
    ) {
        return;
    }
    engine_on_ibsim("torus:4x4x3", "torus-2QoS");
}

#[test]
fn dfsssp_on_ibsim_tables_traces_and_path_sls() {
    if !ready(
        "dfsssp_on_ibsim_tables_traces_and_path_sls",
        &["saquery", "ibtracert"],
    ) {
        return;
    }
    engine_on_ibsim("random:24:seed=3:radix=12:links=8:hosts=2", "dfsssp");
}

/// Our SM on ibsim with `engine` on `spec`: verify's checks, the engine's LFTs, its SLtoVL
/// tables on every switch-to-switch output port, `ibtracert` along its routes and
/// `saquery PR` with each pair's SL (some pairs off SL 0).
fn engine_on_ibsim(spec: &str, engine: &str) {
    let (topo, dir, net) = generated_net(spec, &format!("engines-{engine}"));
    let sim = Ibsim::start(&net, &[]).expect("ibsim");
    let (host, diag) = (first_ca_host(&topo), last_ca_host(&topo));
    let sm = start_sm(&sim, &host, &["--routing-engine", engine]);
    println!("{}", sm.subnet_up_line());
    assert_eq!(sm.engine(), engine, "{}", sm.log);
    let v = verify(
        &sim,
        &sm,
        &host,
        &diag,
        &topo,
        "Default=0x7fff : ALL=full ;\n",
        Checks {
            ca_stride: 8,
            priority: 0,
            guids: true,
        },
    );
    let disc = v.discovered;
    // The data VLs the switch links operate (what our SM gave the engine): OperVLs of a
    // switch-to-switch port, `VL0-7` for instance.
    let (sw_guid, sw_port) = disc
        .switches()
        .find_map(|(_, n)| {
            (1..=n.num_ports()).find_map(|p| {
                let r = n.ports[p as usize].remote?;
                disc.node(r.node).is_switch().then_some((n.node_guid, p))
            })
        })
        .expect("a switch link");
    let pi = tool(
        &sim,
        &diag,
        "smpquery",
        &[
            "portinfo",
            &sm.tables.lids[&sw_guid].to_string(),
            &sw_port.to_string(),
        ],
    );
    let oper = portinfo_field(&pi, "OperVLs").unwrap_or_default();
    let max_layers = match oper.as_str() {
        "VL0" => 1,
        "VL0-1" => 2,
        "VL0-3" => 4,
        "VL0-7" => 8,
        "VL0-14" => 15,
        other => panic!("OperVLs {other:?}:\n{pi}"),
    };
    let (lfts, path_sl, sl2vl) = expected(&disc, &sm.tables.lids, engine, max_layers);
    let vl_mask = max_layers.min(16).next_power_of_two().saturating_sub(1);
    // 1. The LFTs our SM programmed (ibroute = our dump, checked by verify) are the engine's.
    for s in &lfts.switches {
        let ours = &sm.tables.lfts[&s.guid];
        for (&l, &p) in ours {
            assert_eq!(
                s.ports.get(l as usize),
                Some(&p),
                "switch {} LID {l}",
                s.guid
            );
        }
    }
    // 2. SLtoVL on every switch-to-switch output port, for every input port.
    let sw_lid = |g: Guid| sm.tables.lids[&g];
    let mut rows = 0;
    let mut on_vl1 = 0;
    for (_, n) in disc.switches() {
        for o in 1..=n.num_ports() {
            let Some(remote) = n.ports[o as usize].remote else {
                continue;
            };
            if !disc.node(remote.node).is_switch() {
                continue;
            }
            let text = tool(
                &sim,
                &diag,
                "smpquery",
                &["sl2vl", &sw_lid(n.node_guid).to_string(), &o.to_string()],
            );
            // Masked by the port's OperationalVLs as programmed (VL 15 kept), as OpenSM does.
            let want: Vec<u8> = sl2vl
                .table(n.node_guid, o)
                .iter()
                .map(|&v| if v == 15 { 15 } else { v & vl_mask })
                .collect();
            let got = sl2vl_rows(&text);
            assert_eq!(got.len(), n.num_ports() as usize + 1, "{text}");
            for (_, out, vls) in got {
                assert_eq!(out, o);
                assert_eq!(
                    vls.as_slice(),
                    &want[..],
                    "switch {} out {o}:\n{text}",
                    n.node_guid
                );
                rows += 1;
            }
            on_vl1 += usize::from(want.iter().any(|&v| v > 0));
        }
    }
    assert!(on_vl1 > 0, "some ports map SLs to VLs above 0");
    // 3. ibtracert and saquery PR between sampled pairs.
    let cas = ca_ports(&disc);
    let switch_of = |pr: PortRef| -> (NodeId, Guid) {
        let r = disc.node(pr.node).ports[pr.port.0 as usize]
            .remote
            .expect("cabled");
        (r.node, disc.node(r.node).node_guid)
    };
    let by_guid: BTreeMap<Guid, &routing::SwitchLft> =
        lfts.switches.iter().map(|s| (s.guid, s)).collect();
    let (mut pairs, mut crossing) = (0, 0);
    for (i, &(ga, pa)) in cas.iter().enumerate().step_by(7) {
        for &(gb, _) in cas.iter().skip(i % 5).step_by(5) {
            if ga == gb {
                continue;
            }
            let (la, lb) = (sm.tables.lids[&ga], sm.tables.lids[&gb]);
            let trace = tool(
                &sim,
                &diag,
                "ibtracert",
                &[&la.to_string(), &lb.to_string()],
            );
            // The engine's walk from a's switch to b's LID.
            let (mut node, mut guid) = switch_of(pa);
            let mut walk = vec![guid];
            loop {
                let p = by_guid[&guid].ports[lb as usize];
                let r = disc.node(node).ports[p as usize]
                    .remote
                    .expect("routed port cabled");
                if !disc.node(r.node).is_switch() {
                    break;
                }
                (node, guid) = (r.node, disc.node(r.node).node_guid);
                walk.push(guid);
            }
            assert_eq!(
                traced_switches(&trace),
                walk,
                "ibtracert {la} {lb}:\n{trace}"
            );
            let pr = tool(
                &sim,
                &diag,
                "saquery",
                &["PR", "--slid", &la.to_string(), "--dlid", &lb.to_string()],
            );
            let want = path_sl.get(walk[0], *walk.last().unwrap()).unwrap();
            assert_eq!(pr_sl(&pr), Some(want), "saquery PR {la} {lb}:\n{pr}");
            pairs += 1;
            crossing += usize::from(want != 0);
        }
    }
    assert!(
        crossing > 0 && crossing < pairs,
        "{crossing} of {pairs} pairs cross a dateline"
    );
    println!(
        "{spec}: {} switches' LFTs are {engine}'s ({oper} on switch links); {rows} SL2VL rows equal the engine's; {pairs} pairs traced, {crossing} off SL 0",
        lfts.switches.len()
    );
    drop(sm);
    sim.stop();
    let _ = std::fs::remove_dir_all(&dir);
}
