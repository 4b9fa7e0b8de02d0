//! The SA engine on a fabric brought up by sm-core on the simulator: every answer is
//! compared with the simulator's state (the fabric's truth) or the sweeper's tables. (Here,
//! not in the `sa` crate: the view comes from `sm_node::sa_view`, and `sa` does not depend on
//! sm-core.)

mod sa_common;

use fabric::{Guid, Lid};
use mad::sa::{
    ClassPortInfo, Gid, InformInfo, InformInfoRecord, LftRecord, LinkRecord, McMemberRecord,
    NodeRecord, PKeyTableRecord, PathRecord, PortInfoRecord, SaMad, SaRecord, ServiceRecord,
    SmInfoRecord, SwitchInfoRecord, join_state, sa_status,
};
use mad::{AttributeId, Method};
use proptest::prelude::*;
use sa::{SaEngine, SaResponse, policy_groups};
use sa_common::*;
use std::collections::HashMap;
use std::sync::Arc;

#[test]
fn node_records_are_the_fabric_nodes() {
    let up = bring_up("ft2:4", None);
    let mut e = up.engine();
    let me = up.lid_of_guid(up.sm_port);
    let all: Vec<NodeRecord> = query(&mut e, me, Method::GET_TABLE, 0, &NodeRecord::default())
        .records()
        .unwrap();
    let ends = ca_ports(&up.topo).len() + up.topo.switches().count();
    assert_eq!(all.len(), ends);
    // Every CA port by its LID: the simulator's NodeInfo and description.
    for (id, port, guid) in ca_ports(&up.topo) {
        let lid = up.fab.port_info(id, port).unwrap().lid;
        let one: Vec<NodeRecord> = query(
            &mut e,
            me,
            Method::GET,
            1,
            &NodeRecord {
                lid,
                ..NodeRecord::default()
            },
        )
        .records()
        .unwrap();
        let n = up.topo.node(id);
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].lid, lid);
        assert_eq!(one[0].node_info.node_guid, n.node_guid);
        assert_eq!(one[0].node_info.port_guid, guid);
        assert_eq!(one[0].node_info.local_port_num, port);
        assert_eq!(one[0].node_desc.text(), n.description);
    }
    // A Get matching several records.
    let many = query(&mut e, me, Method::GET, 0, &NodeRecord::default());
    assert_eq!(many.status(), sa_status::TOO_MANY_RECORDS);
    let none = query(
        &mut e,
        me,
        Method::GET,
        1,
        &NodeRecord {
            lid: Lid(0xBFFF),
            ..NodeRecord::default()
        },
    );
    assert_eq!(none.status(), sa_status::NO_RECORDS);
}

#[test]
fn port_info_links_switches_and_lfts_match_the_fabric() {
    let up = bring_up("ft2:4", None);
    let mut e = up.engine();
    let me = up.lid_of_guid(up.sm_port);
    for (id, port, _) in ca_ports(&up.topo) {
        let truth = up.fab.port_info(id, port).unwrap();
        let r: Vec<PortInfoRecord> = query(
            &mut e,
            me,
            Method::GET,
            0b11,
            &PortInfoRecord {
                lid: truth.lid,
                port_num: port,
                ..PortInfoRecord::default()
            },
        )
        .records()
        .unwrap();
        assert_eq!(r[0].port_info.lid, truth.lid);
        assert_eq!(r[0].port_info.master_sm_lid, truth.master_sm_lid);
        assert_eq!(r[0].port_info.port_state, 4);
        assert_eq!(r[0].port_info.gid_prefix, truth.gid_prefix);
        assert_eq!(r[0].port_info.m_key, 0, "M_Key never shown");
    }
    let links: Vec<LinkRecord> = query(&mut e, me, Method::GET_TABLE, 0, &LinkRecord::default())
        .records()
        .unwrap();
    assert_eq!(links.len(), 2 * up.topo.num_links());
    let sws: Vec<SwitchInfoRecord> = query(
        &mut e,
        me,
        Method::GET_TABLE,
        0,
        &SwitchInfoRecord::default(),
    )
    .records()
    .unwrap();
    assert_eq!(sws.len(), up.topo.switches().count());
    let lfts = up.sw.lfts().unwrap();
    let recs: Vec<LftRecord> = query(&mut e, me, Method::GET_TABLE, 0, &LftRecord::default())
        .records()
        .unwrap();
    for r in &recs {
        let s = lfts.switches.iter().find(|s| s.lid == r.lid).unwrap();
        for i in 0..64 {
            let lid = r.block * 64 + i as u16;
            if usize::from(lid) < s.ports.len() {
                assert_eq!(r.lft.ports[i], s.port(lid));
            }
        }
    }
    assert!(recs.len() >= lfts.switches.len());
    let sm: Vec<SmInfoRecord> = query(&mut e, me, Method::GET_TABLE, 0, &SmInfoRecord::default())
        .records()
        .unwrap();
    assert_eq!(sm.len(), 1);
    assert_eq!(sm[0].lid, me);
    assert_eq!(sm[0].sm_info.guid, up.sm_port);
    assert_eq!(sm[0].sm_info.sm_state, 3);
    assert_eq!(
        sm[0].sm_info.sm_key, 0,
        "SM_Key hidden from an untrusted requester"
    );
    let cpi = ask(
        &mut e,
        me,
        0,
        SaMad::request(Method::GET, ClassPortInfo::ID, 1, 0, [0; 200]),
        0,
    )
    .0;
    let c: Vec<ClassPortInfo> = cpi.records().unwrap();
    assert_eq!(c[0].class_version, 2);
    assert_eq!(c[0].resp_time_value, 16);
}

#[test]
fn port_info_records_are_the_ports_as_the_sweeper_read_them() {
    // What the daemon does: no PortInfo handed in, the sweeper's reads only.
    let up = bring_up("ft2:4", None);
    let view = sm_node::sa_view::view_from_sweeper(
        &up.sw,
        up.sm_port,
        PREFIX,
        HashMap::new(),
        HashMap::new(),
    );
    let mut e = SaEngine::new(sa::SaConfig::default());
    e.set_view(Arc::new(view));
    let me = up.lid_of_guid(up.sm_port);
    let recs: Vec<PortInfoRecord> =
        query(&mut e, me, Method::GET_TABLE, 0, &PortInfoRecord::default())
            .records()
            .unwrap();
    let truth = up.port_infos();
    let mut by_lid_port = HashMap::new();
    for (id, n) in up.topo.nodes() {
        let first = if n.is_switch() { 0 } else { 1 };
        for p in first..n.ports.len() as u8 {
            let lid = up
                .fab
                .port_info(id, if n.is_switch() { 0 } else { p })
                .unwrap()
                .lid;
            by_lid_port.insert((lid, p), (truth[&(n.node_guid, p)], n.is_switch()));
        }
    }
    assert_eq!(recs.len(), by_lid_port.len(), "one record per port");
    for r in &recs {
        let (mut want, switch) = by_lid_port[&(r.lid, r.port_num)];
        want.m_key = 0;
        if switch {
            // A switch's SMA puts the port the Get arrived on in LocalPortNum (IBA 14.2.5.6),
            // not the port read: the record keeps what the wire said.
            assert_ne!(r.port_info.local_port_num, 0);
            want.local_port_num = r.port_info.local_port_num;
        }
        assert_eq!(r.port_info, want, "LID {} port {}", r.lid.0, r.port_num);
    }
}

fn tenants_conf(g: &[Guid]) -> String {
    format!(
        "Default=0x7fff, ipoib : ALL=full ;\n\
         TenantA=0x1001, ipoib, sl=3 : {:#018x}=full, {:#018x}=full ;\n\
         TenantB=0x1002 : {:#018x}=full, {:#018x}=limited, {:#018x}=limited ;\n\
         TenantC=0x1003 : {:#018x}=limited, {:#018x}=limited ;\n",
        g[0].0, g[1].0, g[2].0, g[3].0, g[4].0, g[5].0, g[6].0
    )
}

fn tenants() -> (sa_common::Up, Vec<Guid>) {
    let t = topo("ft2:4");
    let g: Vec<Guid> = ca_ports(&t).iter().map(|x| x.2).collect();
    let up = bring_up("ft2:4", Some(&tenants_conf(&g)));
    (up, g)
}

fn path(
    e: &mut SaEngine,
    from: Lid,
    s: Lid,
    d: Lid,
    mask_extra: u64,
    pr: PathRecord,
) -> SaResponse {
    let q = PathRecord {
        slid: s,
        dlid: d,
        ..pr
    };
    query(
        e,
        from,
        Method::GET,
        PathRecord::CM_SLID | PathRecord::CM_DLID | mask_extra,
        &q,
    )
}

#[test]
fn path_records_carry_the_shared_pkey_and_refuse_across_partitions() {
    let (up, g) = tenants();
    let mut e = up.engine();
    let lid = |i: usize| up.lid_of_guid(g[i]);
    let me = lid(0);
    // g0-g1 share Default (full) and TenantA: the first shared key in g0's table.
    let r: Vec<PathRecord> = path(&mut e, me, lid(0), lid(1), 0, PathRecord::default())
        .records()
        .unwrap();
    let p = &r[0];
    let table = &up.sw.pkey_tables()[&(up.topo.node(ca_ports(&up.topo)[0].0).node_guid, 1)];
    let expect = table
        .iter()
        .copied()
        .find(|k| k & 0x7FFF == 0x7FFF || k & 0x7FFF == 0x1001)
        .unwrap();
    assert_eq!(p.pkey, expect);
    assert_eq!((p.slid, p.dlid), (lid(0), lid(1)));
    assert_eq!(p.sgid, Gid::new(PREFIX, g[0].0));
    assert_eq!(p.dgid, Gid::new(PREFIX, g[1].0));
    assert!(p.reversible);
    // MTU and rate: the smallest of the links on the way (ft2: host-leaf-host here).
    let c0 = ca_ports(&up.topo)[0];
    let pi = up.fab.port_info(c0.0, c0.1).unwrap();
    assert_eq!(p.mtu, pi.mtu_cap.min(pi.neighbor_mtu));
    assert!(p.rate >= 2);
    // Asking for TenantA's key: the key and the partition's SL.
    let a: Vec<PathRecord> = path(
        &mut e,
        me,
        lid(0),
        lid(1),
        PathRecord::CM_PKEY,
        PathRecord {
            pkey: 0x9001,
            ..PathRecord::default()
        },
    )
    .records()
    .unwrap();
    assert_eq!(a[0].pkey & 0x7FFF, 0x1001);
    // g0 and g2 share only Default: TenantB's key is refused.
    let refused = path(
        &mut e,
        me,
        lid(0),
        lid(2),
        PathRecord::CM_PKEY,
        PathRecord {
            pkey: 0x9002,
            ..PathRecord::default()
        },
    );
    assert_eq!(refused.status(), sa_status::NO_RECORDS);
    // g3 and g4 are both limited in TenantB (and Default is full for all): asking for
    // TenantB is refused; g2 (full) to g3 (limited) works.
    let both_limited = path(
        &mut e,
        me,
        lid(3),
        lid(4),
        PathRecord::CM_PKEY,
        PathRecord {
            pkey: 0x1002,
            ..PathRecord::default()
        },
    );
    assert_eq!(both_limited.status(), sa_status::NO_RECORDS);
    let hub: Vec<PathRecord> = path(
        &mut e,
        me,
        lid(2),
        lid(3),
        PathRecord::CM_PKEY,
        PathRecord {
            pkey: 0x1002,
            ..PathRecord::default()
        },
    )
    .records()
    .unwrap();
    assert_eq!(hub[0].pkey, 0x9002, "g2's own (full) key");
    // A whole table from one source: one path per destination end port.
    let table: Vec<PathRecord> = query(
        &mut e,
        me,
        Method::GET_TABLE,
        PathRecord::CM_SLID,
        &PathRecord {
            slid: lid(0),
            ..PathRecord::default()
        },
    )
    .records()
    .unwrap();
    assert_eq!(
        table.len(),
        ca_ports(&up.topo).len() + up.topo.switches().count()
    );
    // An MTU greater than the path's cannot be had.
    let big = path(
        &mut e,
        me,
        lid(0),
        lid(1),
        PathRecord::CM_MTU | PathRecord::CM_MTU_SELECTOR,
        PathRecord {
            mtu: p.mtu,
            mtu_selector: 0,
            ..PathRecord::default()
        },
    );
    assert_eq!(big.status(), sa_status::NO_RECORDS);
}

#[test]
fn pkey_table_records_only_for_a_trusted_requester() {
    let (up, _) = tenants();
    let mut e = up.engine();
    let me = up.lid_of_guid(up.sm_port);
    let m = SaMad::request(
        Method::GET_TABLE,
        PKeyTableRecord::ID,
        1,
        0,
        PKeyTableRecord::default().to_data(),
    );
    let (r, _) = ask(&mut e, me, 0, m.clone(), 0);
    assert_eq!(r.status(), sa_status::REQ_INVALID);
    let (r, _) = ask(&mut e, me, 1, m, 0);
    let recs: Vec<PKeyTableRecord> = r.records().unwrap();
    let tables = up.sw.pkey_tables();
    assert!(!recs.is_empty());
    // Each record is the block of the table sm-core programmed into that port (a port it
    // did not write: the default table, 0xFFFF on a linked port), as many blocks as the
    // port holds (as OpenSM answers).
    let view = up.view(HashMap::new());
    let mut seen = std::collections::BTreeSet::new();
    for rec in &recs {
        let (ni, p) = view.port_by_lid(rec.lid).unwrap();
        let node = &view.nodes[ni];
        let port = if node.is_switch() { rec.port_num } else { p };
        let vp = &node.ports[usize::from(port)];
        let default = if vp.info.port_state == 1 {
            vec![]
        } else {
            vec![0xFFFF]
        };
        let t = tables.get(&(node.info.node_guid, port)).unwrap_or(&default);
        let lo = usize::from(rec.block) * 32;
        for (i, k) in rec.table.keys.iter().enumerate() {
            assert_eq!(k.0, t.get(lo + i).copied().unwrap_or(0));
        }
        let cap = match node.switch_info {
            Some(si) => si.partition_enforcement_cap,
            None => node.info.partition_cap,
        };
        assert!(usize::from(rec.block) < usize::from(cap).div_ceil(32).max(1));
        seen.insert((node.info.node_guid, port, rec.block));
    }
    for ((g, port), t) in &tables {
        for b in 0..t.len().div_ceil(32) {
            assert!(
                seen.contains(&(*g, *port, b as u16)),
                "{g:?}/{port} block {b}"
            );
        }
    }
}

fn join_rec(mgid: Gid, port: Guid, js: u8) -> McMemberRecord {
    McMemberRecord {
        mgid,
        port_gid: Gid::new(PREFIX, port.0),
        join_state: js,
        ..McMemberRecord::default()
    }
}

const JOIN_MASK: u64 =
    McMemberRecord::CM_MGID | McMemberRecord::CM_PORT_GID | McMemberRecord::CM_JOIN_STATE;
const CREATE_MASK: u64 = JOIN_MASK
    | McMemberRecord::CM_QKEY
    | McMemberRecord::CM_PKEY
    | McMemberRecord::CM_SL
    | McMemberRecord::CM_FLOW_LABEL
    | McMemberRecord::CM_TCLASS;

fn set(e: &mut SaEngine, slid: Lid, mask: u64, r: &McMemberRecord) -> (SaResponse, bool) {
    ask(
        e,
        slid,
        0,
        SaMad::request(Method::SET, McMemberRecord::ID, 1, mask, r.to_data()),
        0,
    )
}

#[test]
fn multicast_groups_follow_the_membership_rules_and_survive_a_reload() {
    let (up, g) = tenants();
    let mut e = up.engine();
    let lid = |i: usize| up.lid_of_guid(g[i]);
    let policy = partitions::Policy::from_file(
        &partitions::parse(&tenants_conf(&g)).unwrap(),
        partitions::Options::default(),
    )
    .0;
    assert!(e.set_policy_groups(policy_groups(&policy)));
    assert!(!e.set_policy_groups(policy_groups(&policy)), "idempotent");
    // IPoIB broadcast groups of Default and TenantA exist from the start, MLIDs from 0xC000.
    let groups: Vec<McMemberRecord> = query(
        &mut e,
        lid(0),
        Method::GET_TABLE,
        0,
        &McMemberRecord::default(),
    )
    .records()
    .unwrap();
    let bcast = Gid::ipoib_broadcast(2, 0x7FFF);
    let tena = Gid::ipoib_broadcast(2, 0x1001);
    assert_eq!(groups.len(), 2);
    assert_eq!(groups[0].mgid.min(groups[1].mgid), bcast.min(tena));
    let b = groups.iter().find(|r| r.mgid == bcast).unwrap();
    assert_eq!(b.mlid, Lid(0xC000));
    assert_eq!((b.q_key, b.mtu, b.rate, b.pkey), (0x0B1B, 4, 3, 0xFFFF));
    let ta = groups.iter().find(|r| r.mgid == tena).unwrap();
    assert_eq!(ta.mlid, Lid(0xC001));
    let pg = &policy
        .partitions
        .iter()
        .find(|x| x.pkey == 0x1001)
        .unwrap()
        .groups[0];
    assert_eq!(
        (ta.sl, ta.q_key),
        (pg.sl, pg.q_key),
        "the policy's group parameters"
    );

    // Join the broadcast group.
    let (r, changed) = set(
        &mut e,
        lid(0),
        JOIN_MASK,
        &join_rec(bcast, g[0], join_state::FULL),
    );
    assert!(changed);
    let rec: Vec<McMemberRecord> = r.records().unwrap();
    assert_eq!(rec[0].mlid, Lid(0xC000));
    // Another port cannot change g0's membership: g0 joined itself, not by proxy.
    let (r, changed) = set(
        &mut e,
        lid(1),
        JOIN_MASK,
        &join_rec(bcast, g[0], join_state::NON),
    );
    assert_eq!(r.status(), sa_status::REQ_INVALID);
    assert!(!changed);
    // g1 shares TenantA with g0: it may join g0 to TenantA's group by proxy (as OpenSM
    // takes it), and then change that membership; g0's own leave of it is its own.
    let (r, changed) = set(
        &mut e,
        lid(1),
        JOIN_MASK,
        &join_rec(tena, g[0], join_state::FULL),
    );
    assert_eq!(r.status(), 0);
    assert!(changed);
    let m = |e: &mut SaEngine| -> Vec<McMemberRecord> {
        let q = McMemberRecord {
            mgid: tena,
            port_gid: Gid::new(PREFIX, g[0].0),
            ..McMemberRecord::default()
        };
        query(
            e,
            lid(0),
            Method::GET_TABLE,
            McMemberRecord::CM_MGID | McMemberRecord::CM_PORT_GID,
            &q,
        )
        .records()
        .unwrap()
    };
    assert!(m(&mut e)[0].proxy_join, "recorded as joined by proxy");
    // A port outside TenantA cannot join its group.
    let (r, _) = set(
        &mut e,
        lid(2),
        JOIN_MASK,
        &join_rec(tena, g[2], join_state::FULL),
    );
    assert_eq!(r.status(), sa_status::REQ_INVALID);

    // Create a TenantB group: g3 (limited) cannot create it; g2 (full) can.
    let mut create = join_rec(Gid::default(), g[3], join_state::FULL);
    create.pkey = 0x1002;
    create.q_key = 0x1234;
    let (r, _) = set(&mut e, lid(3), CREATE_MASK, &create);
    assert_eq!(
        r.status(),
        sa_status::REQ_INVALID,
        "limited members cannot create"
    );
    // A join missing the create components creates nothing.
    create.port_gid = Gid::new(PREFIX, g[2].0);
    let (r, _) = set(&mut e, lid(2), JOIN_MASK, &create);
    assert_eq!(r.status(), sa_status::REQ_INSUFFICIENT_COMPONENTS);
    let (r, changed) = set(&mut e, lid(2), CREATE_MASK, &create);
    assert!(changed);
    let made: Vec<McMemberRecord> = r.records().unwrap();
    let mgid = made[0].mgid;
    assert!(mgid.is_multicast());
    assert_eq!(made[0].mlid, Lid(0xC002));
    assert_eq!(made[0].pkey, 0x9002);
    // g3 (limited) may join now that a full member is in; so may g4.
    let (r, _) = set(
        &mut e,
        lid(3),
        JOIN_MASK,
        &join_rec(mgid, g[3], join_state::FULL),
    );
    assert_eq!(r.status(), 0);
    // A TenantC group: both g5 and g6 limited: g5 cannot create, nor join anything there.
    let mut c = join_rec(Gid::default(), g[5], join_state::FULL);
    c.pkey = 0x1003;
    let (r, _) = set(&mut e, lid(5), CREATE_MASK, &c);
    assert_eq!(r.status(), sa_status::REQ_INVALID);

    // Forwarding groups: MLIDs and members for the multicast programming.
    let fwd = e.forwarding_groups();
    let tb = fwd.iter().find(|x| x.0 == Lid(0xC002)).unwrap();
    assert_eq!(tb.1.len(), 2);

    // The replicated state rebuilds the same answers.
    let state = e.state();
    let mut e2 = up.engine();
    e2.load(&state).unwrap();
    let a: Vec<McMemberRecord> = query(
        &mut e,
        lid(0),
        Method::GET_TABLE,
        0,
        &McMemberRecord::default(),
    )
    .records()
    .unwrap();
    let b2: Vec<McMemberRecord> = query(
        &mut e2,
        lid(0),
        Method::GET_TABLE,
        0,
        &McMemberRecord::default(),
    )
    .records()
    .unwrap();
    assert_eq!(a, b2);
    assert_eq!(e2.state(), state);

    // Leave: g2 leaves, g3 leaves, the created group disappears; the policy group stays.
    let del = |e: &mut SaEngine, i: usize, mgid: Gid| {
        ask(
            e,
            lid(i),
            0,
            SaMad::request(
                Method::DELETE,
                McMemberRecord::ID,
                1,
                JOIN_MASK,
                join_rec(mgid, g[i], join_state::FULL).to_data(),
            ),
            0,
        )
    };
    assert_eq!(del(&mut e, 2, mgid).0.status(), 0);
    assert_eq!(del(&mut e, 3, mgid).0.status(), 0);
    assert!(!e.db().groups.contains_key(&mgid));
    assert_eq!(del(&mut e, 0, bcast).0.status(), 0);
    assert!(e.db().groups.contains_key(&bcast));
    assert_eq!(del(&mut e, 0, bcast).0.status(), sa_status::REQ_INVALID);
}

#[test]
fn services_register_expire_and_delete() {
    let up = bring_up("ft2:4", None);
    let mut e = up.engine();
    let g = ca_ports(&up.topo)[1].2;
    let me = up.lid_of_guid(g);
    let mut s = ServiceRecord {
        id: 0x42,
        gid: Gid::new(PREFIX, g.0),
        pkey: 0xFFFF,
        lease: 10,
        ..ServiceRecord::default()
    };
    s.set_name("storage");
    let mask = ServiceRecord::CM_ID
        | ServiceRecord::CM_GID
        | ServiceRecord::CM_PKEY
        | ServiceRecord::CM_LEASE;
    let put = SaMad::request(Method::SET, ServiceRecord::ID, 1, mask, s.to_data());
    let (r, changed) = ask(&mut e, me, 0, put.clone(), 1_000);
    assert_eq!(r.status(), 0);
    assert!(changed);
    // Another port may not register for g.
    let other = up.lid_of_guid(ca_ports(&up.topo)[2].2);
    assert_eq!(
        ask(&mut e, other, 0, put, 1_000).0.status(),
        sa_status::REQ_DENIED
    );
    let by_name = |e: &mut SaEngine, now: u64| {
        let mut q = ServiceRecord::default();
        q.set_name("storage");
        ask(
            e,
            me,
            0,
            SaMad::request(
                Method::GET_TABLE,
                ServiceRecord::ID,
                1,
                ServiceRecord::CM_NAME,
                q.to_data(),
            ),
            now,
        )
        .0
        .records::<ServiceRecord>()
        .unwrap()
    };
    assert_eq!(by_name(&mut e, 5_000).len(), 1);
    // The lease (10 s from t=1 s) ends at 11 s.
    assert_eq!(by_name(&mut e, 10_999).len(), 1);
    assert_eq!(by_name(&mut e, 11_000).len(), 0);
    assert!(e.expire(11_000));
    // Register again, delete it.
    s.lease = ServiceRecord::INFINITE_LEASE;
    let put = SaMad::request(Method::SET, ServiceRecord::ID, 1, mask, s.to_data());
    ask(&mut e, me, 0, put, 20_000);
    let del = SaMad::request(
        Method::DELETE,
        ServiceRecord::ID,
        1,
        ServiceRecord::CM_ID,
        s.to_data(),
    );
    let (r, changed) = ask(&mut e, me, 0, del.clone(), 1_000_000);
    assert_eq!(r.status(), 0);
    assert!(changed);
    assert_eq!(
        ask(&mut e, me, 0, del, 1_000_000).0.status(),
        sa_status::NO_RECORDS
    );
    // As OpenSM: ServiceID and ServiceGID suffice, the GID names its port by its GUID
    // (osmtest sends the prefix in host order), and a lease left out is infinite.
    let mut s2 = ServiceRecord {
        id: 0x43,
        gid: Gid::new(PREFIX.swap_bytes(), g.0),
        ..s
    };
    s2.lease = 5;
    let cm = ServiceRecord::CM_ID | ServiceRecord::CM_GID;
    let put = SaMad::request(Method::SET, ServiceRecord::ID, 1, cm, s2.to_data());
    let (r, changed) = ask(&mut e, me, 0, put, 2_000_000);
    assert_eq!(r.status(), 0);
    assert!(changed);
    let got = r.records::<ServiceRecord>().unwrap();
    assert_eq!(got[0].lease, ServiceRecord::INFINITE_LEASE);
    assert!(!e.expire(u64::MAX / 2));
    // Without the ServiceGID: insufficient components.
    let put = SaMad::request(
        Method::SET,
        ServiceRecord::ID,
        1,
        ServiceRecord::CM_ID,
        s2.to_data(),
    );
    assert_eq!(
        ask(&mut e, me, 0, put, 2_000_000).0.status(),
        sa_status::REQ_INSUFFICIENT_COMPONENTS
    );
}

#[test]
fn inform_info_subscribers_get_notices_64_and_65() {
    let up = bring_up("ft2:4", None);
    let mut e = up.engine();
    let sub = ca_ports(&up.topo)[1].2;
    let me = up.lid_of_guid(sub);
    let ii = InformInfo {
        lid_range_begin: Lid(0xFFFF),
        is_generic: 1,
        subscribe: 1,
        trap_type: 0xFFFF,
        trap_number: 64,
        qpn: 1,
        producer_type: 0xFF_FFFF,
        ..InformInfo::default()
    };
    let (r, changed) = ask(
        &mut e,
        me,
        0,
        SaMad::request(Method::SET, InformInfo::ID, 1, 0, ii.to_data()),
        0,
    );
    assert_eq!(r.status(), 0);
    assert!(changed);
    let recs: Vec<InformInfoRecord> = query(
        &mut e,
        me,
        Method::GET_TABLE,
        0,
        &InformInfoRecord::default(),
    )
    .records()
    .unwrap();
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0].subscriber_gid, Gid::new(PREFIX, sub.0));
    let g = ca_ports(&up.topo)[3].2;
    let out = e.port_changes(&[g], &[(g, Lid(9))]);
    assert_eq!(out.len(), 1, "subscribed to 64 only");
    assert_eq!(out[0].dlid, me);
    assert_eq!(out[0].mad.header.mad.method, Method::REPORT);
    assert_eq!(out[0].mad.header.mad.attr_id, AttributeId::NOTICE);
    let mut full = [0u8; 80];
    full.copy_from_slice(&out[0].mad.data[..80]);
    let n = mad::Notice::decode_full(&full);
    assert_eq!(n.trap_number(), Some(64));
    assert_eq!(
        n.details(),
        mad::NoticeDetails::Gid {
            gid: Gid::new(PREFIX, g.0).0
        }
    );
    // Unsubscribe.
    let mut un = ii;
    un.subscribe = 0;
    let (r, _) = ask(
        &mut e,
        me,
        0,
        SaMad::request(Method::SET, InformInfo::ID, 1, 0, un.to_data()),
        0,
    );
    assert_eq!(r.status(), 0);
    assert!(e.port_changes(&[g], &[]).is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]
    #[test]
    fn any_request_gets_an_answer_and_never_panics(
        bytes in proptest::collection::vec(any::<u8>(), 256),
        attr in prop_oneof![Just(0x11u16), Just(0x12), Just(0x20), Just(0x35), Just(0x38), Just(0x31), Just(0x33), Just(0x3A), Just(0x03), Just(0xF3), any::<u16>()],
        method in prop_oneof![Just(1u8), Just(2), Just(0x12), Just(0x14), Just(0x15), any::<u8>()],
    ) {
        let up = shared_up();
        let mut e = SaEngine::new(sa::SaConfig::default());
        e.set_view(up.clone());
        let mut b = [0u8; 256];
        b.copy_from_slice(&bytes);
        b[0] = 1;
        b[1] = 3;
        b[2] = 2;
        b[3] = method & 0x7F;
        b[16..18].copy_from_slice(&attr.to_be_bytes());
        let m = SaMad::decode(&b).unwrap();
        let h = e.handle(0, &sa_common::req(Lid(1), m));
        let rep = h.reply.expect("every request is answered");
        prop_assert!(rep.mad.header.mad.method.is_response());
    }
}

fn shared_up() -> Arc<sa::FabricView> {
    use std::sync::OnceLock;
    static V: OnceLock<Arc<sa::FabricView>> = OnceLock::new();
    V.get_or_init(|| Arc::new(bring_up("ft2:4", None).view(HashMap::new())))
        .clone()
}

#[test]
fn an_all_pairs_path_query_too_large_is_refused() {
    // ft2:36 has 648 hosts and 54 switches: 702 x 702 pairs, more than MAX_PATH_PAIRS.
    let up = bring_up("ft2:36", None);
    let mut e = up.engine();
    let me = up.lid_of_guid(up.sm_port);
    let r = query(&mut e, me, Method::GET_TABLE, 0, &PathRecord::default());
    assert_eq!(r.status(), sa_status::NO_RESOURCES);
    // From one source it is fine.
    let one = query(
        &mut e,
        me,
        Method::GET_TABLE,
        PathRecord::CM_SLID,
        &PathRecord {
            slid: me,
            ..PathRecord::default()
        },
    );
    assert_eq!(one.records::<PathRecord>().unwrap().len(), 702);
}

#[test]
fn path_records_take_the_sl_a_routing_engine_requires_then_the_qos_policy() {
    let up = bring_up("ft2:8", None);
    let cas = ca_ports(&up.topo);
    let g = |i: usize| up.topo.node(cas[i].0).ports[cas[i].1 as usize].guid;
    let (a, b, c) = (g(0), g(1), g(cas.len() - 1));
    let lid = |x| up.lid_of_guid(x);
    // The switches the three hosts hang off.
    let leaf = |i: usize| {
        let r = up.topo.node(cas[i].0).ports[cas[i].1 as usize]
            .remote
            .unwrap();
        up.topo.node(r.node).node_guid
    };
    let switches: Vec<Guid> = up.topo.switches().map(|(_, n)| n.node_guid).collect();
    let mut layers = routing::PathSl::new(&switches);
    assert!(layers.set(leaf(0), leaf(cas.len() - 1), 5));
    // A QoS policy that puts every path on SL 2.
    let policy =
        "qos-levels\n  qos-level\n    name: DEFAULT\n    sl: 2\n  end-qos-level\nend-qos-levels\n";
    let mut view = up.view(HashMap::new());
    view.qos_policy = Some(Arc::new(qos::Policy::parse(policy).unwrap()));
    view.path_sl = Some(Arc::new(layers));
    let mut e = SaEngine::new(sa::SaConfig::default());
    e.set_view(Arc::new(view));
    let sl = |e: &mut SaEngine, d: Guid| -> u8 {
        let r: Vec<PathRecord> = path(e, lid(a), lid(a), lid(d), 0, PathRecord::default())
            .records()
            .unwrap();
        r[0].sl
    };
    // The engine's pair wins; a pair it leaves on SL 0 is still the engine's.
    assert_eq!(sl(&mut e, c), 5);
    assert_eq!(sl(&mut e, b), 0);
    // Without an engine requirement, the QoS policy's level.
    let mut view = up.view(HashMap::new());
    view.qos_policy = Some(Arc::new(qos::Policy::parse(policy).unwrap()));
    e.set_view(Arc::new(view));
    assert_eq!(sl(&mut e, c), 2);
}
