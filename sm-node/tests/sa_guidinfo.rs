//! GUIDInfoRecord Set and Delete (alias GUIDs) as OpenSM takes them, on a fabric sm-core
//! brought up on the simulator; the aliases survive the replicated SA state and resolve in
//! PathRecords.

mod sa_common;

use fabric::Lid;
use mad::Method;
use mad::sa::{Gid, GuidInfoRecord, McMemberRecord, PathRecord, sa_status};
use sa::guidinfo::{ASSIGNED_VENDOR, COMP_BLOCK, COMP_GID0, COMP_LID};
use sa::{SaEngine, SaResponse};
use sa_common::*;

const MASK: u64 = COMP_LID | COMP_BLOCK;

fn gir(lid: Lid, guids: [u64; 8]) -> GuidInfoRecord {
    GuidInfoRecord {
        lid,
        block: 0,
        guids,
    }
}

fn one(r: SaResponse) -> GuidInfoRecord {
    assert_eq!(r.status(), 0, "{r:?}");
    let v: Vec<GuidInfoRecord> = r.records().unwrap();
    assert_eq!(v.len(), 1);
    v[0]
}

fn modify(e: &mut SaEngine, me: Lid, m: Method, mask: u64, r: &GuidInfoRecord) -> SaResponse {
    query(e, me, m, mask, r)
}

#[test]
fn aliases_are_set_assigned_kept_and_deleted_as_opensm_does() {
    let up = bring_up("ft2:4", None);
    let mut e = up.engine();
    let me = up.lid_of_guid(up.sm_port);
    let (_, _, target) = ca_ports(&up.topo)[1];
    let lid = up.lid_of_guid(target);

    // Index 1 set to a chosen GUID, index 2 to 0: the SA assigns one.
    let mut g = [0u64; 8];
    g[1] = 0x0002_c903_00aa_0001;
    let r = one(modify(
        &mut e,
        me,
        Method::SET,
        MASK | (COMP_GID0 << 1) | (COMP_GID0 << 2),
        &gir(lid, g),
    ));
    assert_eq!(r.guids[0], target.0, "index 0 is the port GUID");
    assert_eq!(r.guids[1], 0x0002_c903_00aa_0001);
    assert_eq!(r.guids[2] >> 40, ASSIGNED_VENDOR);
    let assigned = r.guids[2];
    // A Get answers the same block.
    let got = one(query(&mut e, me, Method::GET, COMP_LID, &gir(lid, [0; 8])));
    assert_eq!(got.guids, r.guids);
    // The alias GID resolves in a PathRecord to the port's LID.
    let pr = PathRecord {
        dgid: Gid::new(PREFIX, 0x0002_c903_00aa_0001),
        sgid: Gid::new(PREFIX, up.sm_port.0),
        ..PathRecord::default()
    };
    let paths: Vec<PathRecord> = query(&mut e, me, Method::GET, (1 << 2) | (1 << 3), &pr)
        .records()
        .unwrap();
    assert_eq!(paths.len(), 1);
    assert_eq!(paths[0].dlid, lid);

    // The same GUID asked for at another index, or a port GUID: answered 0, nothing set.
    let mut dup = [0u64; 8];
    dup[3] = 0x0002_c903_00aa_0001;
    dup[4] = up.sm_port.0;
    let r = one(modify(
        &mut e,
        me,
        Method::SET,
        MASK | (COMP_GID0 << 3) | (COMP_GID0 << 4),
        &gir(lid, dup),
    ));
    assert_eq!((r.guids[3], r.guids[4]), (0, 0));

    // Index 0 is read only; a missing BlockNum is insufficient; a block beyond GUIDCap or an
    // unknown LID has no record.
    let st = |r: SaResponse| r.status();
    assert_eq!(
        st(modify(
            &mut e,
            me,
            Method::SET,
            MASK | COMP_GID0,
            &gir(lid, [1; 8])
        )),
        sa_status::REQ_INVALID
    );
    assert_eq!(
        st(modify(
            &mut e,
            me,
            Method::SET,
            COMP_LID | (COMP_GID0 << 1),
            &gir(lid, [0; 8])
        )),
        sa_status::REQ_INSUFFICIENT_COMPONENTS
    );
    let far = GuidInfoRecord {
        block: 200,
        ..gir(lid, [0; 8])
    };
    assert_eq!(
        st(modify(
            &mut e,
            me,
            Method::SET,
            MASK | (COMP_GID0 << 1),
            &far
        )),
        sa_status::NO_RECORDS
    );
    assert_eq!(
        st(modify(
            &mut e,
            me,
            Method::SET,
            MASK | (COMP_GID0 << 1),
            &gir(Lid(0xBFF0), [0; 8])
        )),
        sa_status::NO_RECORDS
    );

    // Delete index 2, then ask for an assigned GUID there again: the same GUID comes back.
    let r = one(modify(
        &mut e,
        me,
        Method::DELETE,
        MASK | (COMP_GID0 << 2),
        &gir(lid, [0; 8]),
    ));
    assert_eq!(r.guids[2], 0);
    let r = one(modify(
        &mut e,
        me,
        Method::SET,
        MASK | (COMP_GID0 << 2),
        &gir(lid, [0; 8]),
    ));
    assert_eq!(
        r.guids[2], assigned,
        "an SA-assigned GUID is kept for its port and index"
    );

    // The aliases are SA state: a new engine loaded from it answers the same.
    let state = e.state();
    let mut e2 = up.engine();
    e2.load(&state).unwrap();
    let got = one(query(&mut e2, me, Method::GET, COMP_LID, &gir(lid, [0; 8])));
    assert_eq!(got.guids[1..3], [0x0002_c903_00aa_0001, assigned]);
}

#[test]
fn an_alias_in_a_multicast_group_is_not_deleted() {
    let up = bring_up("ft2:4", None);
    let mut e = up.engine();
    let (_, _, target) = ca_ports(&up.topo)[1];
    let lid = up.lid_of_guid(target);
    let mut g = [0u64; 8];
    g[1] = 0x0002_c903_00bb_0001;
    one(modify(
        &mut e,
        lid,
        Method::SET,
        MASK | (COMP_GID0 << 1),
        &gir(lid, g),
    ));
    // The alias joins a group (its own port asks).
    let j = McMemberRecord {
        port_gid: Gid::new(PREFIX, 0x0002_c903_00bb_0001),
        q_key: 1,
        pkey: 0xffff,
        join_state: 1,
        ..McMemberRecord::default()
    };
    let mask = McMemberRecord::CM_MGID
        | McMemberRecord::CM_PORT_GID
        | McMemberRecord::CM_JOIN_STATE
        | McMemberRecord::CM_QKEY
        | McMemberRecord::CM_PKEY
        | McMemberRecord::CM_SL
        | McMemberRecord::CM_FLOW_LABEL
        | McMemberRecord::CM_TCLASS;
    let r = query(&mut e, lid, Method::SET, mask, &j);
    assert_eq!(r.status(), 0, "join: {r:?}");
    let st = modify(
        &mut e,
        lid,
        Method::DELETE,
        MASK | (COMP_GID0 << 1),
        &gir(lid, [0; 8]),
    );
    assert_eq!(st.status(), sa_status::REQ_DENIED);
}

/// The NodeRecords at `lid`.
fn node_records(e: &mut SaEngine, me: Lid, lid: Lid) -> Vec<mad::sa::NodeRecord> {
    let q = mad::sa::NodeRecord {
        lid,
        ..mad::sa::NodeRecord::default()
    };
    query(e, me, Method::GET, 1, &q).records().unwrap()
}

/// Vports of a virtualization-capable port answer as virtual nodes: a NodeRecord at the
/// vport's LID names the vport, a PathRecord to the vport's GID ends at its own LID.
#[test]
fn vport_gids_and_lids_resolve_to_the_vports() {
    let t = topo("ft2:4");
    let mut fab = fabric_sim::SimFabric::new(&t, fabric_sim::SimConfig::default()).unwrap();
    let (_, _, pf) = ca_ports(&t)[2];
    fab.enable_virtualization(pf, fabric_sim::VirtSpec::uniform(pf, 2, true))
        .unwrap();
    let cfg = sm_core::SweeperConfig {
        sm_key: 1,
        ..sm_core::SweeperConfig::default()
    };
    let up = bring_up_on(t, fab, cfg, Vec::new());
    let mut e = up.engine();
    let me = up.lid_of_guid(up.sm_port);
    let pf_lid = up.lid_of_guid(pf);
    for i in 1..=2 {
        let vg = fabric_sim::vport_guid(pf, i);
        let vlid = up.fab.vport(vg).unwrap().lid;
        assert!(vlid.0 != 0 && vlid != pf_lid);
        let pr = PathRecord {
            dgid: Gid::new(PREFIX, vg.0),
            sgid: Gid::new(PREFIX, up.sm_port.0),
            ..PathRecord::default()
        };
        let paths: Vec<PathRecord> = query(&mut e, me, Method::GET, (1 << 2) | (1 << 3), &pr)
            .records()
            .unwrap();
        assert_eq!(paths.len(), 1, "one path to vport {vg}");
        assert_eq!((paths[0].dlid, paths[0].dgid), (vlid, pr.dgid));
        let nr = node_records(&mut e, me, vlid);
        assert_eq!(nr.len(), 1);
        assert_eq!(nr[0].node_info.port_guid, vg);
    }
    // The physical port's LID still names the physical port.
    let nr = node_records(&mut e, me, pf_lid);
    assert_eq!(nr[0].node_info.port_guid, pf);
}
