//! Same log -> bit-identical state, also through a snapshot/restore taken mid-way.

use proptest::prelude::*;
use proto::state::{
    AbortIntent, ApplyPolicy, BeginIntent, ClusterConfig, Command, IntentChunk, IntentDone,
    LidEntry, LidUpdate, MasterRecord, Noop, PortRef, ReplicaInfo, SaState, SealIntent, Tenant,
    Tenants, TopoLink, TopoNode, Topology, command::Kind,
};

use super::contents;
use crate::ReplicatedState;

const POLICIES: [&str; 4] = [
    "Default=0x7fff : ALL=full ;\n",
    "Default=0x7fff : ALL=limited, SELF=full ;\na=0x0002 : ALL ;\n",
    "Default=0x7fff ALL=full ;\n",
    "Default=0x7fff : ALL=full ;\nb=0x12345 : ALL ;\n",
];

/// An abstract operation; the term of its entry is filled in when it becomes a command.
#[derive(Clone, Debug)]
enum Op {
    Noop,
    Config(u32, u32),
    Policy(usize, u64),
    Topology(u8),
    Lids(Vec<(u8, u16, u8)>, Vec<u8>, bool),
    Begin(u64, bool, u8, u8),
    Chunk(u64, u32, u8),
    Seal(u64, u32),
    Done(u64, bool),
    Abort(u64),
    Master(u64),
    Tenants(u8),
    Sa(u8),
    Empty,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        Just(Op::Noop),
        (0u32..9, 0u32..18).prop_map(|(a, b)| Op::Config(a, b)),
        (0usize..4, 0u64..4).prop_map(|(p, v)| Op::Policy(p, v)),
        (0u8..4).prop_map(Op::Topology),
        (
            prop::collection::vec((0u8..8, 0u16..0xC100, 0u8..9), 0..4),
            prop::collection::vec(0u8..8, 0..3),
            any::<bool>()
        )
            .prop_map(|(s, r, a)| Op::Lids(s, r, a)),
        (1u64..4, any::<bool>(), 1u8..4, any::<u8>())
            .prop_map(|(i, t, n, s)| Op::Begin(i, t, n, s)),
        (1u64..4, 0u32..4, any::<u8>()).prop_map(|(i, q, s)| Op::Chunk(i, q, s)),
        (1u64..4, 0u32..4).prop_map(|(i, n)| Op::Seal(i, n)),
        (1u64..4, any::<bool>()).prop_map(|(i, f)| Op::Done(i, f)),
        (1u64..4).prop_map(Op::Abort),
        (0u64..8).prop_map(Op::Master),
        any::<u8>().prop_map(Op::Tenants),
        any::<u8>().prop_map(Op::Sa),
        Just(Op::Empty),
    ]
}

fn to_command(op: &Op, term: u64, request_id: u64) -> Command {
    let kind = match op.clone() {
        Op::Noop => Some(Kind::Noop(Noop {})),
        Op::Config(lmc, prio) => Some(Kind::SetConfig(ClusterConfig {
            lmc,
            sweep_interval_ms: 10_000,
            replicas: vec![ReplicaInfo {
                id: 1,
                priority: prio,
                port_guid: 0xa,
                ..ReplicaInfo::default()
            }],
            ..ClusterConfig::default()
        })),
        Op::Policy(p, v) => Some(Kind::ApplyPolicy(ApplyPolicy {
            text: POLICIES[p].into(),
            expected_version: v,
        })),
        Op::Topology(n) => Some(Kind::SetTopology(Topology {
            nodes: (0..=u64::from(n))
                .map(|i| TopoNode {
                    node_guid: 0x100 + i,
                    node_type: 2,
                    num_ports: 4,
                    description: format!("sw{i}"),
                    ..TopoNode::default()
                })
                .collect(),
            links: (0..u32::from(n))
                .map(|i| TopoLink {
                    a_node: i,
                    a_port: 1,
                    b_node: i + 1,
                    b_port: if n % 2 == 0 { 2 } else { 1 },
                    ..TopoLink::default()
                })
                .collect(),
        })),
        Op::Lids(set, remove, all) => Some(Kind::UpdateLids(LidUpdate {
            set: set
                .iter()
                .map(|(g, l, m)| LidEntry {
                    port_guid: u64::from(*g),
                    base_lid: u32::from(*l),
                    lmc: u32::from(*m),
                })
                .collect(),
            remove: remove.iter().map(|g| u64::from(*g)).collect(),
            replace_all: all,
        })),
        Op::Begin(id, same_term, n, salt) => Some(Kind::BeginIntent(BeginIntent {
            id,
            term: if same_term {
                term
            } else {
                term.saturating_sub(1)
            },
            contents: Some(contents(u64::from(n), 2, salt)),
        })),
        Op::Chunk(id, seq, salt) => Some(Kind::IntentChunk(IntentChunk {
            id,
            seq,
            contents: Some(contents(1, 3, salt)),
        })),
        Op::Seal(id, chunks) => Some(Kind::SealIntent(SealIntent { id, chunks })),
        Op::Done(id, fail) => Some(Kind::IntentDone(IntentDone {
            id,
            failed_switches: if fail { vec![0x2000] } else { vec![] },
            failed_ports: if fail {
                vec![PortRef {
                    node_guid: 0x1000,
                    port: 1,
                }]
            } else {
                vec![]
            },
        })),
        Op::Abort(id) => Some(Kind::AbortIntent(AbortIntent { id })),
        Op::Master(t) => Some(Kind::SetMaster(MasterRecord {
            term: t,
            replica_id: t % 3 + 1,
            sm_port_guid: 0xa + t,
            sm_lid: 1,
            m_key: t.wrapping_mul(0x9e37_79b9_7f4a_7c15),
        })),
        Op::Tenants(n) => Some(Kind::SetTenants(Tenants {
            tenants: vec![Tenant {
                name: format!("t{n}"),
                pkey: 0x100 + u32::from(n),
                members: vec![proto::state::TenantMember {
                    kind: Some(proto::state::tenant_member::Kind::PortGuid(u64::from(n))),
                }],
                ..Default::default()
            }],
            // Sometimes current, sometimes stale: both outcomes are replicated.
            version: u64::from(n % 3),
            ..Default::default()
        })),
        Op::Sa(n) => Some(Kind::SetSaState(SaState {
            groups: vec![proto::state::McGroup {
                mgid: vec![n; 16],
                mlid: 0xC000 + u32::from(n),
                ..Default::default()
            }],
            ..SaState::default()
        })),
        Op::Empty => None,
    };
    Command { request_id, kind }
}

/// (op, bump the term before it, request id 0..6).
fn log() -> impl Strategy<Value = Vec<(Op, bool, u64)>> {
    prop::collection::vec((op(), prop::bool::weighted(0.1), 0u64..6), 1..80)
}

fn commands(ops: &[(Op, bool, u64)]) -> Vec<(u64, u64, Command)> {
    let mut term = 1;
    ops.iter()
        .enumerate()
        .map(|(i, (op, bump, rid))| {
            if *bump {
                term += 1;
            }
            (i as u64 + 1, term, to_command(op, term, *rid))
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, .. ProptestConfig::default() })]

    #[test]
    fn same_log_same_state(ops in log(), cut in 0usize..80) {
        let cmds = commands(&ops);
        let cut = cut.min(cmds.len());
        let mut a = ReplicatedState::new();
        let mut b = ReplicatedState::new();
        let mut outcomes_a = Vec::new();
        for (i, t, c) in &cmds[..cut] {
            outcomes_a.push(a.apply(*i, *t, c));
            b.apply(*i, *t, c);
        }
        // Mid-way: a third replica restores from a's snapshot.
        let snap = a.snapshot_bytes();
        let mut c = ReplicatedState::restore(&snap).unwrap();
        prop_assert_eq!(c.snapshot_bytes(), snap);
        for (i, t, cmd) in &cmds[cut..] {
            let oa = a.apply(*i, *t, cmd);
            let ob = b.apply(*i, *t, cmd);
            let oc = c.apply(*i, *t, cmd);
            prop_assert_eq!(&oa, &ob);
            prop_assert_eq!(&oa, &oc);
            outcomes_a.push(oa);
        }
        let sa = a.snapshot_bytes();
        prop_assert_eq!(&sa, &b.snapshot_bytes());
        prop_assert_eq!(&sa, &c.snapshot_bytes());
        prop_assert_eq!(a.applied_index(), cmds.len() as u64);
        // Replaying the log changes nothing.
        for (i, t, cmd) in &cmds {
            prop_assert!(a.apply(*i, *t, cmd).result.is_err());
        }
        prop_assert_eq!(&sa, &a.snapshot_bytes());
        // The policy in force is the last accepted one, and every accepted version is in the
        // history (the log is shorter than the history bound).
        let accepted: Vec<u64> = outcomes_a
            .iter()
            .filter(|o| matches!(o.result, Ok(crate::Effect::PolicyApplied { .. })))
            .map(|o| o.policy_version)
            .collect();
        prop_assert_eq!(a.policy().version, accepted.last().copied().unwrap_or(0));
        let hist: Vec<u64> = a.policy_history().map(|p| p.version).collect();
        prop_assert_eq!(hist, accepted);
    }
}
