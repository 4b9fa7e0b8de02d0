//! ChangeGuids semantics on a replicated state: add, remove, moves between tenants, a reused
//! GUID, API partitions, and refusals that change nothing.

use super::*;
use crate::ReplicatedState;
use crate::admin::tenants::{View, precheck};
use fabric::{Guid, NodeType, PortRef, Topology};
use proto::state::{self, Command, Tenant, TenantMember, command::Kind};

const OPERATOR: &str = "Default=0x7fff : ALL=full ;\nstore=0x0300 : ALL=full ;\n";

fn member(g: u64) -> TenantMember {
    TenantMember {
        kind: Some(tenant_member::Kind::PortGuid(g)),
    }
}

/// Port GUID of host i (hosts h0..h5 on one switch).
fn h(i: u64) -> u64 {
    0x100001 + 3 * i
}

fn apply(st: &mut ReplicatedState, index: u64, k: Kind) -> bool {
    st.apply(
        index,
        1,
        &Command {
            request_id: 0,
            kind: Some(k),
        },
    )
    .is_accepted()
}

/// Tenants red {h1} (0x101) and blue {h2} (0x102) under the operator's ALL=full.
fn state() -> ReplicatedState {
    let mut t = Topology::new();
    let sw = t
        .add_node(NodeType::Switch, 8, Guid(0x200000), "sw")
        .unwrap();
    for i in 0..6u64 {
        let n = t
            .add_node(NodeType::Ca, 1, Guid(0x100000 + 3 * i), format!("h{i}"))
            .unwrap();
        t.connect(PortRef::new(sw, i as u8 + 1), PortRef::new(n, 1))
            .unwrap();
    }
    let tenants = Tenants {
        tenants: vec![
            Tenant {
                name: "red".into(),
                pkey: 0x101,
                members: vec![member(h(1))],
                ..Default::default()
            },
            Tenant {
                name: "blue".into(),
                pkey: 0x102,
                members: vec![member(h(2))],
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    let mut st = ReplicatedState::new();
    let policy = Kind::ApplyPolicy(state::ApplyPolicy {
        text: OPERATOR.into(),
        expected_version: 0,
    });
    assert!(apply(&mut st, 1, policy));
    assert!(apply(
        &mut st,
        2,
        Kind::SetTopology(crate::topology_to_proto(&t))
    ));
    assert!(apply(&mut st, 3, Kind::SetTenants(tenants)));
    st
}

/// Applies a ChangeGuids to the state as the daemon does: change, precheck, SetTenants.
fn run(st: &mut ReplicatedState, r: &ChangeGuidsRequest) -> Result<Vec<String>, AdminError> {
    let (new, notes) = change_guids(st.tenants(), r)?;
    precheck(&View::of(st), &new)?;
    let index = st.applied_index() + 1;
    assert!(apply(st, index, Kind::SetTenants(new)));
    Ok(notes)
}

fn ports(st: &ReplicatedState, tenant: &str) -> Vec<u64> {
    let t = st.tenants().tenants.iter().find(|t| t.name == tenant);
    t.unwrap()
        .members
        .iter()
        .filter_map(|m| match m.kind {
            Some(tenant_member::Kind::PortGuid(g)) => Some(g),
            _ => None,
        })
        .collect()
}

fn to_tenant(op: Op, name: &str, guids: Vec<u64>) -> ChangeGuidsRequest {
    request(op, Target::Tenant(name.into()), guids)
}

fn to_pkey(op: Op, pkey: u32, guids: Vec<u64>) -> ChangeGuidsRequest {
    request(op, Target::Pkey(pkey), guids)
}

fn effective(st: &ReplicatedState) -> String {
    st.effective_policy_text().unwrap().unwrap()
}

#[test]
fn add_moves_a_guid_out_of_every_other_tenant_and_remove_takes_it_out() {
    let mut st = state();
    let notes = run(&mut st, &to_tenant(Op::Add, "blue", vec![h(1), h(3)])).unwrap();
    assert_eq!(
        notes,
        vec![format!("GUID {:#018x} moved from tenant 'red'", h(1))]
    );
    assert_eq!(ports(&st, "red"), Vec::<u64>::new());
    assert_eq!(ports(&st, "blue"), vec![h(2), h(1), h(3)]);
    let text = effective(&st);
    let red = text.split("# tenant red").nth(1).unwrap();
    assert!(red.starts_with("\nred=0x0101 : NONE ;"), "{text}");
    // Adding again changes nothing (the daemon proposes nothing then).
    let (same, notes) =
        change_guids(st.tenants(), &to_tenant(Op::Add, "blue", vec![h(1)])).unwrap();
    assert_eq!((&same, notes.len()), (st.tenants(), 0));
    // Removing: out of the tenant's partition and of the generated Default statement.
    run(&mut st, &to_tenant(Op::Remove, "blue", vec![h(1), h(5)])).unwrap();
    assert_eq!(ports(&st, "blue"), vec![h(2), h(3)]);
    assert!(!effective(&st).contains(&format!("{:#018x}", h(1))));
}

#[test]
fn partitions_by_pkey_are_created_changed_and_deleted() {
    let mut st = state();
    let mut add = to_pkey(Op::Add, 0x10, vec![h(3), h(4)]);
    (add.ipoib, add.index0) = (true, true);
    let notes = run(&mut st, &add).unwrap();
    assert_eq!(notes, vec!["partition 0x0010 created".to_string()]);
    let mut lim = to_pkey(Op::Add, 0x10, vec![h(4)]);
    lim.limited = true;
    run(&mut st, &lim).unwrap();
    // The derived-view cache key follows the partitions.
    let key = crate::admin::tenants::fingerprint(&st);
    let mut again = to_pkey(Op::Add, 0x10, vec![h(4)]);
    again.limited = false;
    run(&mut st, &again).unwrap();
    assert_ne!(key, crate::admin::tenants::fingerprint(&st));
    run(&mut st, &lim).unwrap();
    let text = effective(&st);
    let want = format!(
        "pkey_0010=0x0010,ipoib,indx0 :\n    {:#018x}=full,\n    {:#018x}=limited\n;\n",
        h(3),
        h(4)
    );
    assert!(text.contains(&want), "{text}");
    // The effective policy loads and gives h4 the limited key.
    let p = partitions::load(&text, partitions::Options::default()).unwrap();
    assert!(p.partitions.iter().any(|x| x.pkey == 0x10));
    // Remove one, then delete the partition.
    run(&mut st, &to_pkey(Op::Remove, 0x10, vec![h(3)])).unwrap();
    assert_eq!(st.tenants().pkeys[0].members.len(), 1);
    run(&mut st, &to_pkey(Op::DeletePkey, 0x10, vec![])).unwrap();
    assert!(st.tenants().pkeys.is_empty());
    let e = change_guids(st.tenants(), &to_pkey(Op::DeletePkey, 0x10, vec![])).unwrap_err();
    assert_eq!(e.code(), "E_NODE_PKEY_UNKNOWN");
    // REMOVE from a partition that does not exist is a no-op (ib-kubernetes retries).
    let (same, _) = change_guids(st.tenants(), &to_pkey(Op::Remove, 0x11, vec![h(3)])).unwrap();
    assert_eq!(&same, st.tenants());
}

#[test]
fn a_reused_guid_keeps_no_old_membership() {
    let mut st = state();
    run(&mut st, &to_pkey(Op::Add, 0x10, vec![h(3)])).unwrap();
    // The GUID is reused by tenant red: it leaves the partition in the same change.
    let notes = run(&mut st, &to_tenant(Op::Add, "red", vec![h(3)])).unwrap();
    assert_eq!(
        notes,
        vec![format!(
            "GUID {:#018x} left partition 0x0010 (now in tenant 'red')",
            h(3)
        )]
    );
    assert!(st.tenants().pkeys[0].members.is_empty());
    // A P_Key that is a tenant's adds to the tenant (moving the GUID out of blue).
    run(&mut st, &to_pkey(Op::Add, 0x101, vec![h(2)])).unwrap();
    assert_eq!(ports(&st, "red"), vec![h(1), h(3), h(2)]);
    assert_eq!(ports(&st, "blue"), Vec::<u64>::new());
}

#[test]
fn refusals_change_nothing() {
    let mut st = state();
    let before = st.tenants().clone();
    let code = |st: &ReplicatedState, r: ChangeGuidsRequest| {
        let e = change_guids(st.tenants(), &r)
            .and_then(|(n, _)| precheck(&View::of(st), &n).map(|_| n))
            .unwrap_err();
        e.code()
    };
    assert_eq!(
        code(&st, to_pkey(Op::Add, 0x7fff, vec![h(3)])),
        "TENANT-E003"
    );
    assert_eq!(code(&st, to_pkey(Op::Add, 0, vec![h(3)])), "TENANT-E003");
    assert_eq!(
        code(&st, to_pkey(Op::Add, 0x300, vec![h(3)])),
        "TENANT-E005"
    );
    assert_eq!(code(&st, to_pkey(Op::Add, 0x10, vec![0])), "TENANT-E015");
    assert_eq!(code(&st, to_tenant(Op::Add, "red", vec![0])), "TENANT-E015");
    // A tenant's port joins no API partition.
    assert_eq!(code(&st, to_pkey(Op::Add, 0x10, vec![h(1)])), "TENANT-E017");
    assert_eq!(
        code(&st, to_tenant(Op::Add, "green", vec![h(3)])),
        "E_NODE_TENANT_UNKNOWN"
    );
    let many = (1..=MAX_GUIDS_PER_CALL as u64 + 1).collect();
    assert_eq!(code(&st, to_pkey(Op::Add, 0x10, many)), "E_ADMIN_LIMIT");
    let mut none = to_pkey(Op::Add, 0x10, vec![h(3)]);
    none.target = None;
    assert_eq!(code(&st, none), "E_ADMIN_CHANGE");
    assert_eq!(
        code(&st, to_pkey(Op::DeletePkey, 0x101, vec![])),
        "E_ADMIN_CHANGE"
    );
    assert_eq!(st.tenants(), &before);
    // More members than a partition holds: refused by the compile apply runs too.
    let mut big = before.clone();
    big.pkeys.push(state::ApiPartition {
        pkey: 0x10,
        members: (1..=partitions::tenants::MAX_API_MEMBERS as u64 + 1)
            .map(|g| ApiMember {
                guid: g,
                limited: false,
            })
            .collect(),
        ..Default::default()
    });
    let e = precheck(&View::of(&st), &big).unwrap_err();
    assert_eq!(e.code(), "TENANT-E016");
    let index = st.applied_index() + 1;
    assert!(!apply(&mut st, index, Kind::SetTenants(big)));
    assert_eq!(st.tenants(), &before);
}

#[test]
fn a_tenant_set_without_partitions_decodes_as_before() {
    use prost::Message;
    // Fields 1..=3 only, as a snapshot written before issue 26.
    let old = Tenants {
        tenants: vec![Tenant {
            name: "red".into(),
            pkey: 0x101,
            ..Default::default()
        }],
        version: 7,
        ..Default::default()
    };
    let bytes = old.encode_to_vec();
    let back = Tenants::decode(bytes.as_slice()).unwrap();
    assert_eq!((back.pkeys.len(), back.version), (0, 7));
    assert_eq!(back, old);
}
