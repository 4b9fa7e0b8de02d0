//! Property tests over generated partitions files: plans are consistent, a fabric
//! programmed exactly as planned audits clean, and an injected key is always found.

use fabric::{Guid, NodeType, PKey, PortRef, Topology};
use partitions::dump::PortReading;
use partitions::plan::{Caps, Plan, peer_entries};
use partitions::{Options, audit, check};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

/// Two switches linked twice, three CAs on each (port GUIDs 0x100001 + 3i).
fn topo() -> Topology {
    let mut t = Topology::new();
    let s1 = t
        .add_node(NodeType::Switch, 8, Guid(0x200000), "s1")
        .unwrap();
    let s2 = t
        .add_node(NodeType::Switch, 8, Guid(0x200001), "s2")
        .unwrap();
    t.connect(PortRef::new(s1, 7), PortRef::new(s2, 7)).unwrap();
    t.connect(PortRef::new(s1, 8), PortRef::new(s2, 8)).unwrap();
    for i in 0..6u64 {
        let h = t
            .add_node(NodeType::Ca, 2, Guid(0x100000 + 3 * i), format!("h{i}"))
            .unwrap();
        let sw = if i < 3 { s1 } else { s2 };
        t.connect(PortRef::new(sw, (i % 3) as u8 + 1), PortRef::new(h, 1))
            .unwrap();
    }
    t
}

fn member() -> impl Strategy<Value = String> {
    let target = prop_oneof![
        (0..7u64).prop_map(|i| if i == 6 {
            "0x999999".to_string()
        } else {
            format!("{:#x}", 0x100001 + 3 * i)
        }),
        Just("ALL".to_string()),
        Just("ALL_CAS".to_string()),
        Just("ALL_SWITCHES".to_string()),
        Just("SELF".to_string()),
        Just("NONE".to_string()),
    ];
    let mem = prop_oneof![Just(""), Just("=full"), Just("=limited"), Just("=both")];
    (target, mem).prop_map(|(t, m)| format!("{t}{m}"))
}

fn statement() -> impl Strategy<Value = String> {
    let pkey = prop_oneof![
        Just(String::new()),
        (1u16..6).prop_map(|k| format!("={k:#06x}")),
        Just("=0x7fff".to_string()),
        Just("=0x8002".to_string()),
    ];
    let name = prop_oneof![Just("A"), Just("B"), Just("C"), Just("Default")];
    let flags = proptest::collection::vec(
        prop_oneof![
            Just(", ipoib"),
            Just(", indx0"),
            Just(", defmember=full"),
            Just(", defmember=both"),
            Just(", mtu=5"),
        ],
        0..3,
    );
    let members = proptest::collection::vec(member(), 0..5);
    (name, pkey, flags, members)
        .prop_map(|(n, k, f, m)| format!("{n}{k}{} : {} ;", f.concat(), m.join(", ")))
}

fn file() -> impl Strategy<Value = String> {
    proptest::collection::vec(statement(), 0..7).prop_map(|v| v.join("\n"))
}

fn readings(plan: &Plan) -> Vec<PortReading> {
    let mut v: Vec<PortReading> = plan
        .ports
        .iter()
        .map(|p| PortReading {
            node: p.port.node_guid,
            port: p.port.port,
            pkeys: p.table.entries(),
            capacity: Some(p.table.cap),
            enforce_in: None,
            enforce_out: None,
        })
        .collect();
    for s in &plan.switch_ports {
        if let Some(t) = &s.table {
            v.push(PortReading {
                node: s.switch_guid,
                port: s.port,
                pkeys: t.entries(),
                capacity: Some(t.cap),
                enforce_in: Some(s.enforce_in),
                enforce_out: Some(s.enforce_out),
            });
        }
    }
    v
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, .. ProptestConfig::default() })]

    #[test]
    fn plans_are_consistent_and_audit_clean(src in file(), allow_both in any::<bool>(), small in any::<bool>()) {
        let t = topo();
        let opts = Options { allow_both_pkeys: allow_both, sm_port_guid: Some(Guid(0x100001)), ..Options::default() };
        let caps = if small {
            Caps { ca_partition_cap: 3, switch_partition_cap: 2, enforcement_cap: 2, ..Caps::default() }
        } else {
            Caps::default()
        };
        let r = check(&src, opts, Some((&t, &caps)));
        prop_assert!(r.parse_errors.is_empty(), "{:?}", r.parse_errors);
        let policy = r.policy.unwrap();
        let plan = r.plan.unwrap();
        let ends = partitions::plan::end_ports(&t);
        let members = policy.resolve(&ends);
        for (pp, m) in plan.ports.iter().zip(&members) {
            prop_assert_eq!(pp.port, m.port);
            let keys: Vec<PKey> = pp.table.valid().into_iter().map(|(_, k)| k).collect();
            let uniq: BTreeSet<PKey> = keys.iter().copied().collect();
            prop_assert_eq!(uniq.len(), keys.len(), "duplicate keys");
            let mut wanted = BTreeSet::new();
            for (i, h) in m.held.iter().enumerate() {
                let base = policy.partitions[i].pkey;
                if h.full { wanted.insert(PKey(base | 0x8000)); }
                if h.limited { wanted.insert(PKey(base)); }
                prop_assert!(allow_both || !(h.full && h.limited));
            }
            let got: BTreeSet<PKey> = uniq.iter().chain(pp.dropped.iter()).copied().collect();
            prop_assert_eq!(&got, &wanted);
            prop_assert_eq!(keys.len() + pp.dropped.len(), wanted.len());
            // Index 0: the indx0 key when there is one, else the default key when held.
            let k0 = pp.table.get(0);
            match m.indx0 {
                Some(x) if allow_both => prop_assert!(k0 == x || pp.dropped.contains(&x)),
                Some(x) => prop_assert_eq!(k0.partition(), x.partition()),
                None => {
                    let dflt = if allow_both { PKey(0xffff) } else { PKey(0) };
                    if allow_both {
                        if wanted.contains(&dflt) { prop_assert_eq!(k0, dflt); }
                    } else if wanted.iter().any(|k| k.partition() == 0x7fff) {
                        prop_assert_eq!(k0.partition(), 0x7fff);
                    }
                }
            }
        }
        for sp in &plan.switch_ports {
            let pp = plan.ports.iter().find(|p| p.port == sp.peer).unwrap();
            let want = peer_entries(&pp.table);
            let t = sp.table.as_ref().unwrap();
            let got: Vec<PKey> = t.valid().into_iter().map(|(_, k)| k).collect();
            let n = want.len().min(t.cap as usize);
            prop_assert_eq!(&got[..], &want[..n]);
            prop_assert_eq!(sp.overflow, want.len() > t.cap as usize);
            prop_assert_eq!(sp.enforce_in, !sp.overflow);
        }
        let names: BTreeMap<u16, String> = policy.partitions.iter().map(|p| (p.pkey, p.name.clone())).collect();
        let rep = audit(&t, &readings(&plan), Some(&plan), &names);
        prop_assert!(rep.findings.is_empty(), "{:#?}", rep.findings);
    }

    #[test]
    fn an_injected_key_is_found(src in file(), port in 0usize..6, part in 1u16..6) {
        let t = topo();
        let opts = Options { sm_port_guid: Some(Guid(0x100001)), ..Options::default() };
        let r = check(&src, opts, Some((&t, &Caps::default())));
        let plan = r.plan.unwrap();
        let ca: Vec<_> = plan.ports.iter().filter(|p| p.port.node_type == NodeType::Ca).collect();
        let target = ca[port];
        let held_full = target.table.valid().iter().any(|(_, k)| k.partition() == part && k.is_full());
        prop_assume!(!held_full);
        let mut rd = readings(&plan);
        // The CA now holds the full key of `part`; its switch port does not enforce.
        let x = rd.iter_mut().find(|x| x.node == target.port.node_guid && x.port == target.port.port).unwrap();
        x.pkeys.retain(|k| k.partition() != part);
        let slot = x.pkeys.iter().position(|k| k.is_invalid()).unwrap();
        x.pkeys[slot] = PKey(0x8000 | part);
        for s in &plan.switch_ports {
            if s.peer == target.port {
                let y = rd.iter_mut().find(|y| y.node == s.switch_guid && y.port == s.port).unwrap();
                y.enforce_in = Some(false);
                y.enforce_out = Some(false);
            }
        }
        let rep = audit(&t, &rd, Some(&plan), &BTreeMap::new());
        prop_assert!(rep.findings.iter().any(|f| f.code == "AUDIT-E002"), "{:#?}", rep.findings);
        // Another port of `part` it was not meant to reach through `part` makes an E001 break.
        let target_limited = target.table.valid().iter().any(|(_, k)| k.partition() == part);
        let others = plan.ports.iter().any(|p| {
            p.port != target.port
                && p.table.valid().iter().any(|(_, k)| k.partition() == part)
                && !(target_limited && p.table.valid().iter().any(|(_, k)| k.partition() == part && k.is_full()))
        });
        if others {
            prop_assert!(rep.findings.iter().any(|f| f.code == "AUDIT-E001"), "{:#?}", rep.findings);
        }
    }
}
