//! A multicast group joined before a failover is still there after it: master A's SA
//! takes joins as GMPs over the simulated fabric, its SA state goes through the replicated
//! state (`set_sa_state` applied, snapshot, restore), A dies, master B (another port,
//! seeded with what the log holds, MFTs included) loads the SA state and answers the same
//! MCMemberRecords; handing its groups to its sweeper rewrites no MFT block, and the
//! members still reach each other. (In sm-node, beside `sa_view`: `sa` does not depend on
//! sm-core.)

mod sa_common;

use fabric::{Guid, Lid, PKey};
use fabric_sim::{AttachId, SimFabric};
use mad::Method;
use mad::sa::{Gid, McMemberRecord, SaMad, SaRecord, join_state};
use proto::state::{Command, command::Kind};
use sa::{Request, SaClient, SaEngine, SaResponse, policy_groups};
use sa_common::*;
use sm_core::{Event, IntentEvent, Phase, Sweeper, SweeperConfig, VTime, route_inline};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

const MFT: u16 = 0x1B;

/// Runs a sweeper on the fabric for `limit` of virtual time or until it is up and idle;
/// every intent is committed at once (the Raft log). Returns the MFT blocks planned by intents.
fn drive(
    sw: &mut Sweeper,
    fab: &mut SimFabric,
    sm: AttachId,
    now: &mut VTime,
    limit: VTime,
) -> usize {
    let end = *now + limit;
    let mut mft_planned = 0;
    while *now < end {
        while let Some(ie) = sw.poll_intent() {
            if let IntentEvent::Program(it) = ie {
                mft_planned += it.mft_blocks.len();
                sw.handle_intent_committed(*now, it.id);
            }
        }
        while let Some(tx) = sw.poll_transmit() {
            if tx.dlid.is_permissive() {
                fab.send(*now, sm, &tx.smp).unwrap();
            } else {
                fab.send_lid(*now, sm, tx.dlid, &tx.smp).unwrap();
            }
        }
        while let Some(ev) = sw.poll_event() {
            if std::env::var_os("SA_DEBUG").is_some() {
                eprintln!("{ev}");
            }
            if let Event::RoutingNeeded(job) = ev {
                sw.handle_routing_result(*now, route_inline(&job));
            }
        }
        if sw.is_subnet_up() && sw.phase() == Phase::Idle && fab.next_event_time().is_none() {
            break;
        }
        let mut committed = false;
        while let Some(ie) = sw.poll_intent() {
            if let IntentEvent::Program(it) = ie {
                mft_planned += it.mft_blocks.len();
                sw.handle_intent_committed(*now, it.id);
                committed = true;
            }
        }
        if committed {
            continue;
        }
        let next = match (fab.next_event_time(), sw.poll_timeout()) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => match a.or(b) {
                Some(t) => t,
                None => break,
            },
        };
        *now = (*now).max(next);
        fab.run_until(*now);
        while let Some(r) = fab.poll_recv_full(sm) {
            sw.handle_mad(*now, r.slid, r.smp);
        }
        if matches!(sw.poll_timeout(), Some(t) if t <= *now) {
            sw.handle_timeout(*now);
        }
    }
    mft_planned
}

/// One SA request from `client` to the SA at `sm`, as GMPs through the fabric.
#[allow(clippy::too_many_arguments)]
fn exchange(
    fab: &mut SimFabric,
    e: &mut SaEngine,
    sm: AttachId,
    sm_lid: Lid,
    client: AttachId,
    now: &mut VTime,
    m: SaMad,
    t: &mut sa::Transaction,
) -> (SaResponse, bool) {
    fab.send_gmp(*now, client, sm_lid, PKey(0xFFFF), &m.encode())
        .unwrap();
    let mut changed = false;
    let mut sender: Option<(sa::RmppSender, Lid)> = None;
    for _ in 0..10_000 {
        let Some(next) = fab.next_event_time() else {
            break;
        };
        *now = (*now).max(next);
        fab.run_until(*now);
        while let Some(g) = fab.poll_recv_gmp(sm) {
            let q = SaMad::decode(&g.mad).unwrap();
            if q.header.mad.method.is_response() {
                if let Some((s, _)) = sender.as_mut() {
                    s.handle(*now, &q);
                }
                continue;
            }
            let h = e.handle(
                0,
                &Request {
                    slid: g.slid,
                    mad: q,
                },
            );
            changed |= h.changed;
            let rep = h.reply.unwrap();
            match rep.single() {
                Some(r) => {
                    fab.send_gmp(*now, sm, g.slid, PKey(0xFFFF), &r.encode())
                        .unwrap();
                }
                None => {
                    sender = Some((
                        sa::RmppSender::new(
                            rep.mad.clone(),
                            rep.table.clone().unwrap(),
                            sa::RmppConfig::default(),
                        ),
                        rep.dlid,
                    ))
                }
            }
        }
        if let Some((s, dlid)) = sender.as_mut() {
            while let Some(seg) = s.poll_transmit(*now) {
                fab.send_gmp(*now, sm, *dlid, PKey(0xFFFF), &seg.encode())
                    .unwrap();
            }
        }
        while let Some(g) = fab.poll_recv_gmp(client) {
            let a = SaMad::decode(&g.mad).unwrap();
            let st = t.handle(&a).unwrap();
            if let Some(ack) = st.send {
                fab.send_gmp(*now, client, sm_lid, PKey(0xFFFF), &ack.encode())
                    .unwrap();
            }
            if let Some(done) = st.done {
                return (done, changed);
            }
        }
    }
    panic!("no answer");
}

#[test]
fn a_group_joined_before_a_failover_is_there_after_it_with_no_mft_rewrite() {
    let mut up = bring_up("ft2:8", None);
    let t = up.topo.clone();
    let cas = ca_ports(&t);
    let policy = partitions::Policy::no_file(partitions::Options::default());
    let mut a = up.engine();
    assert!(a.set_policy_groups(policy_groups(&policy)));
    let bcast = Gid::ipoib_broadcast(2, 0x7FFF);
    let sm_lid = up.lid_of_guid(up.sm_port);
    // Four hosts join the broadcast group through the fabric; a fifth creates its own.
    let members: Vec<Guid> = cas[1..5].iter().map(|c| c.2).collect();
    let mut c = SaClient::new(0, 0);
    let mut replica = replica::ReplicatedState::new();
    let mut index = 1;
    let mut commit = |state: proto::state::SaState, replica: &mut replica::ReplicatedState| {
        let cmd = Command {
            request_id: 0,
            kind: Some(Kind::SetSaState(state)),
        };
        assert!(replica.apply(index, 1, &cmd).is_accepted());
        index += 1;
    };
    for &g in &members {
        let client = up.fab.attach_client(g).unwrap();
        let rec = McMemberRecord {
            mgid: bcast,
            port_gid: Gid::new(PREFIX, g.0),
            join_state: join_state::FULL,
            ..McMemberRecord::default()
        };
        let mask =
            McMemberRecord::CM_MGID | McMemberRecord::CM_PORT_GID | McMemberRecord::CM_JOIN_STATE;
        let (m, mut tx) = c.query(Method::SET, mask, &rec);
        let (r, changed) = exchange(
            &mut up.fab,
            &mut a,
            up.sm,
            sm_lid,
            client,
            &mut up.now,
            m,
            &mut tx,
        );
        assert_eq!(r.status(), 0);
        assert!(changed);
        // The glue answers after commit; here: commit, then look at the answer.
        commit(a.state(), &mut replica);
        up.fab.detach(client).unwrap();
    }
    let creator = cas[6].2;
    let client = up.fab.attach_client(creator).unwrap();
    let rec = McMemberRecord {
        port_gid: Gid::new(PREFIX, creator.0),
        join_state: join_state::FULL,
        pkey: 0xFFFF,
        q_key: 0x1111,
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
    let (m, mut tx) = c.query(Method::SET, mask, &rec);
    let (r, _) = exchange(
        &mut up.fab,
        &mut a,
        up.sm,
        sm_lid,
        client,
        &mut up.now,
        m,
        &mut tx,
    );
    let created: Vec<McMemberRecord> = r.records().unwrap();
    assert_eq!(created[0].mlid, Lid(0xC001));
    commit(a.state(), &mut replica);
    up.fab.detach(client).unwrap();

    // A programs the groups' MFTs.
    let groups: Vec<sm_core::McastGroup> = a
        .forwarding_groups()
        .into_iter()
        .map(|(mlid, members)| sm_core::McastGroup { mlid, members })
        .collect();
    up.sw.set_multicast(up.now, groups.clone());
    drive(&mut up.sw, &mut up.fab, up.sm, &mut up.now, 2_000_000_000);
    assert!(
        up.fab.take_set_log().iter().any(|s| s.attr == MFT),
        "A programmed MFTs"
    );
    let before: Vec<McMemberRecord> = a
        .db()
        .groups
        .values()
        .flat_map(|g| {
            g.members
                .iter()
                .map(|(gid, m)| sa::mcast::group_record(g, Some((*gid, *m))))
                .collect::<Vec<_>>()
        })
        .collect();

    // The log is compacted into a snapshot and restored on the replica that takes over.
    let restored = replica::ReplicatedState::restore(&replica.snapshot_bytes()).unwrap();
    assert_eq!(restored.sa_state(), &a.state());

    // A dies; B takes over at another port with what the log holds.
    let seeded = SweeperConfig {
        guid2lid: up.sw.guid2lid().clone(),
        known_lfts: up.sw.lfts().map(|l| Arc::new(l.clone())),
        known_pkeys: Some(Arc::new(up.sw.pkey_tables())),
        known_mfts: Some(Arc::new(up.sw.mft_tables().clone())),
        reregister_on_takeover: false,
        gate_programming: true,
        sm_key: 1,
        ..SweeperConfig::default()
    };
    let mut fab = up.fab;
    fab.detach(up.sm).unwrap();
    fab.take_set_log();
    let b_port = cas[7].2;
    let b_sm = fab.attach(b_port).unwrap();
    let mut b_sw = Sweeper::new(seeded).unwrap();
    let mut now = up.now;
    let planned = drive(&mut b_sw, &mut fab, b_sm, &mut now, 60_000_000_000);
    assert!(b_sw.is_subnet_up());
    assert_eq!(planned, 0, "the takeover sweep planned MFT writes");
    let view =
        sm_node::sa_view::view_from_sweeper(&b_sw, b_port, PREFIX, HashMap::new(), HashMap::new());
    let mut b = SaEngine::new(sa::SaConfig::default());
    b.set_view(Arc::new(view));
    b.load(restored.sa_state()).unwrap();
    assert!(
        !b.set_policy_groups(policy_groups(&policy)),
        "nothing lost, nothing to create"
    );

    // B answers the same records to a client that asks after the failover.
    let b_lid = b_sw.sm_lid();
    let asker = cas[2].2;
    let client = fab.attach_client(asker).unwrap();
    let (m, mut tx) = c.query(Method::GET_TABLE, 0, &McMemberRecord::default());
    let (r, changed) = exchange(&mut fab, &mut b, b_sm, b_lid, client, &mut now, m, &mut tx);
    assert!(!changed);
    let after: BTreeSet<Vec<u8>> = r
        .records::<McMemberRecord>()
        .unwrap()
        .iter()
        .map(|x| x.to_bytes())
        .collect();
    let want: BTreeSet<Vec<u8>> = before.iter().map(|x| x.to_bytes()).collect();
    assert_eq!(after, want);

    // B hands the same groups to its sweeper: no MFT block is written.
    let b_groups: Vec<sm_core::McastGroup> = b
        .forwarding_groups()
        .into_iter()
        .map(|(mlid, members)| sm_core::McastGroup { mlid, members })
        .collect();
    assert_eq!(b_groups, groups);
    b_sw.set_multicast(now, b_groups);
    let planned = drive(&mut b_sw, &mut fab, b_sm, &mut now, 2_000_000_000);
    assert_eq!(planned, 0);
    let log = fab.take_set_log();
    assert!(
        !log.iter().any(|s| s.attr == MFT),
        "B rewrote {} MFT blocks",
        log.iter().filter(|s| s.attr == MFT).count()
    );
    // The members still reach each other through the MLID.
    let d = fab.deliver_mcast(members[0], Lid(0xC000), PKey::DEFAULT_FULL);
    let got: BTreeSet<Guid> = d.receivers().collect();
    let want: BTreeSet<Guid> = members[1..].iter().copied().collect();
    assert_eq!(got, want);
}
