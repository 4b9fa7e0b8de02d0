//! The replica core's commands, asserted exactly: who starts a master or a standby, when,
//! with which seed; intents; restarts on a new policy; stepping down; the graceful stop;
//! priority transfer.

mod common;

use common::{Cluster, MS, Seen};
use fabric::Guid;
use proto::state::{ApplyPolicy, Command, command::Kind};
use replica_core::Role;

fn policy(text: &str, expected_version: u64) -> Command {
    Command {
        request_id: 0,
        kind: Some(Kind::ApplyPolicy(ApplyPolicy {
            text: text.into(),
            expected_version,
        })),
    }
}

#[test]
fn the_leader_runs_the_master_and_the_others_the_standby() {
    let mut c = Cluster::new(3);
    let l = c.elect();
    let term = c.core(l).term();
    for (&id, n) in &c.nodes {
        let starts: Vec<_> = n
            .seen
            .iter()
            .filter(|s| {
                matches!(
                    s,
                    Seen::StartMaster { .. } | Seen::StartStandby { .. } | Seen::StopRole { .. }
                )
            })
            .collect();
        if id == l {
            // Standby first (a follower at boot), detached, then the master of the term.
            assert!(
                matches!(
                    starts[..],
                    [Seen::StartStandby { gen_: 1 }, Seen::StopRole { gen_: 1 }, Seen::StartMaster { gen_: 2, term: t }] if *t == term
                ),
                "{starts:?}"
            );
        } else {
            assert!(
                matches!(starts[..], [Seen::StartStandby { gen_: 1 }]),
                "replica {id}: {starts:?}"
            );
        }
    }
    // The master's record is in everyone's state.
    c.ticks(3);
    for n in c.nodes.values() {
        let m = n.core.state().master().expect("master record");
        assert_eq!((m.replica_id, m.term, m.sm_port_guid), (l, term, 0x100 + l));
    }
    let now = c.now;
    assert!(c.core(l).lease_valid(now));
}

#[test]
fn no_master_before_the_lease_and_the_standby_detaches_first() {
    let mut c = Cluster::new(3);
    for id in 1..=3 {
        c.node(id).auto = false;
    }
    let mut leader = None;
    for _ in 0..400 {
        c.tick();
        if let Some(l) = c.leader() {
            leader = Some(l);
            break;
        }
    }
    let l = leader.expect("a leader");
    // The standby must go before the master attaches: nothing but the stop so far.
    let n = c.node(l);
    assert!(
        matches!(
            n.seen[..],
            [Seen::StartStandby { gen_: 1 }, Seen::StopRole { gen_: 1 }]
        ),
        "{:?}",
        n.seen
    );
    assert_eq!(n.core.role(), Role::Detaching { gen_: 1 });
    c.ticks(3);
    assert!(
        c.node(l).core.master_gen().is_none(),
        "no master while the port is held"
    );
    let now = c.now;
    c.core(l).role_stopped(now, 1);
    c.drain(l);
    assert!(matches!(
        c.node(l).seen.last(),
        Some(Seen::StartMaster { gen_: 2, .. })
    ));
}

#[test]
fn a_failed_attach_is_retried_after_the_wait() {
    let mut c = Cluster::new(3);
    c.node(1).auto = false;
    c.node(2).auto = false;
    c.node(3).auto = false;
    let mut l = None;
    for _ in 0..400 {
        c.tick();
        if let Some(x) = c.leader() {
            l = Some(x);
            break;
        }
    }
    let l = l.expect("leader");
    let now = c.now;
    c.core(l).role_stopped(now, 1);
    c.drain(l);
    let Some(Seen::StartMaster { gen_, .. }) = c.node(l).seen.pop() else {
        panic!("no master start");
    };
    let now = c.now;
    c.core(l).attach_failed(now, gen_);
    c.drain(l);
    assert!(matches!(c.core(l).role(), Role::Idle { retry_at: Some(t) } if t == now + 20 * MS));
    c.tick();
    assert!(
        matches!(c.node(l).seen.last(), Some(Seen::StartMaster { gen_: g, .. }) if *g == gen_ + 1),
        "{:?}",
        c.node(l).seen
    );
}

#[test]
fn an_intent_is_committed_before_its_master_hears_of_it() {
    let mut c = Cluster::new(3);
    let l = c.elect();
    let gen_ = c.core(l).master_gen().unwrap();
    let term = c.core(l).term();
    let it = sm_core::Intent {
        id: (term << 32) | 1,
        ..Default::default()
    };
    let now = c.now;
    c.core(l)
        .intent(now, gen_, sm_core::IntentEvent::Program(it.clone()));
    c.drain(l);
    assert!(
        !c.node(l)
            .seen
            .iter()
            .any(|s| matches!(s, Seen::IntentResult { .. })),
        "answered before a quorum has it"
    );
    c.settle();
    c.tick();
    assert!(
        c.node(l).seen.iter().any(|s| matches!(s, Seen::IntentResult { gen_: g, id, committed: true } if *g == gen_ && *id == it.id)),
        "{:?}",
        c.node(l).seen
    );
    assert_eq!(
        c.core(l).state().pending_intent().map(|i| i.id),
        Some(it.id)
    );
    // A stale generation's intents are not proposed.
    let last = c.core(l).last_index();
    let now = c.now;
    c.core(l).intent(
        now,
        gen_ + 7,
        sm_core::IntentEvent::Program(sm_core::Intent {
            id: (term << 32) | 2,
            ..Default::default()
        }),
    );
    assert_eq!(c.core(l).last_index(), last);
}

#[test]
fn a_new_policy_restarts_the_master_on_it() {
    let mut c = Cluster::new(3);
    let l = c.elect();
    let gen_ = c.core(l).master_gen().unwrap();
    let now = c.now;
    let req = c
        .core(l)
        .propose(now, policy("Default=0x7fff : ALL=full ;\n", 0))
        .unwrap();
    c.settle();
    c.tick();
    let seen = &c.node(l).seen;
    let i = seen
        .iter()
        .position(|s| matches!(s, Seen::Answer { request, accepted: true } if *request == req))
        .expect("answered");
    assert!(
        seen[..]
            .iter()
            .any(|s| matches!(s, Seen::StopRole { gen_: g } if *g == gen_))
    );
    assert!(
        seen[i..]
            .iter()
            .chain(seen[..i].iter())
            .any(|s| matches!(s, Seen::StartMaster { gen_: g, .. } if *g == gen_ + 1))
    );
    let seed = c.core(l).master_seed();
    assert!(
        seed.seeds
            .policy
            .as_deref()
            .is_some_and(|p| p.contains("Default=0x7fff"))
    );
}

#[test]
fn a_deposed_leader_stops_its_master_and_loses_its_lease() {
    let mut c = Cluster::new(3);
    let l = c.elect();
    let gen_ = c.core(l).master_gen().unwrap();
    let other = if l == 1 { 2 } else { 1 };
    let now = c.now;
    c.core(l).transfer_leader(now, other).unwrap();
    c.settle();
    c.ticks(2);
    assert_eq!(c.leader(), Some(other));
    assert!(
        c.node(l)
            .seen
            .iter()
            .any(|s| matches!(s, Seen::StopRole { gen_: g } if *g == gen_))
    );
    assert_eq!(c.core(l).lease_until(), None);
    assert!(
        matches!(c.core(l).role(), Role::Standby { .. }),
        "{:?}",
        c.core(l).role()
    );
}

#[test]
fn proposals_through_a_follower_are_refused_with_the_leader() {
    let mut c = Cluster::new(3);
    let l = c.elect();
    let f = if l == 1 { 2 } else { 1 };
    let now = c.now;
    let e = c
        .core(f)
        .propose(now, policy("Default=0x7fff : ALL=full ;\n", 0))
        .unwrap_err();
    assert_eq!(
        e,
        replica_core::ProposeError::NotLeader {
            leader_id: l,
            leader_address: format!("127.0.0.1:{}", 7100 + l)
        }
    );
    assert!(c.core(f).read_index(now).is_err());
    assert!(c.core(f).transfer_leader(now, 3).is_err());
}

#[test]
fn a_graceful_stop_hands_leadership_over_first() {
    let mut c = Cluster::new(3);
    let l = c.elect();
    let now = c.now;
    c.core(l).graceful_stop(now);
    c.drain(l);
    assert!(
        !c.node(l).seen.iter().any(|s| matches!(s, Seen::Stopped)),
        "stopped before the transfer"
    );
    c.settle();
    c.ticks(2);
    assert!(c.node(l).seen.iter().any(|s| matches!(s, Seen::Stopped)));
    let nl = c.leader().expect("a new leader");
    assert_ne!(nl, l);
    // It never starts anything again, and refuses requests.
    let before = c.node(l).seen.len();
    c.ticks(40);
    assert!(
        !c.node(l).seen[before..]
            .iter()
            .any(|s| matches!(s, Seen::StartMaster { .. } | Seen::StartStandby { .. })),
        "{:?}",
        &c.node(l).seen[before..]
    );
}

#[test]
fn a_caught_up_replica_of_higher_priority_takes_the_master_role() {
    let mut c = Cluster::new(3);
    let l = c.elect();
    c.ticks(3);
    let others: Vec<u64> = (1..=3).filter(|&i| i != l).collect();
    let now = c.now;
    // Equal priorities: nothing moves.
    let peers: Vec<(u64, u8, Guid)> = (1..=3).map(|i| (i, 0, Guid(0x100 + i))).collect();
    assert_eq!(c.core(l).consider_priorities(now, &peers), None);
    // Two of higher priority: the higher wins; equal, the lower port GUID.
    let peers = vec![(others[0], 5, Guid(0x900)), (others[1], 5, Guid(0x800))];
    assert_eq!(c.core(l).consider_priorities(now, &peers), Some(others[1]));
    c.settle();
    c.ticks(2);
    assert_eq!(c.leader(), Some(others[1]));
}

#[test]
fn linearizable_reads_answer_the_confirmed_index_once_applied() {
    let mut c = Cluster::new(3);
    let l = c.elect();
    let now = c.now;
    let t = c.core(l).read_index(now).unwrap();
    c.drain(l);
    assert!(
        !c.node(l)
            .seen
            .iter()
            .any(|s| matches!(s, Seen::ReadDone { .. })),
        "no quorum heard yet"
    );
    c.settle();
    let last = c.core(l).last_index();
    assert!(c.node(l).seen.iter().any(|s| matches!(s, Seen::ReadDone { ticket, result: Ok(i) } if *ticket == t && *i <= last && *i > 0)));
}

#[test]
fn the_start_output_carries_the_seed_of_the_replicated_state() {
    let mut c = Cluster::new(3);
    let l = c.elect();
    let now = c.now;
    c.core(l)
        .propose(now, policy("Default=0x7fff : ALL=full ;\n", 0))
        .unwrap();
    c.settle();
    c.tick();
    // The restart's StartMaster carries the policy and the term's M_Key.
    c.node(l).auto = false;
    let gen_ = c.core(l).master_gen().unwrap();
    let now = c.now;
    c.core(l)
        .propose(now, policy("Default=0x7fff : ALL=limited ;\n", 1))
        .unwrap();
    c.settle();
    c.tick();
    assert!(
        c.node(l)
            .seen
            .iter()
            .any(|s| matches!(s, Seen::StopRole { gen_: g } if *g == gen_))
    );
    assert_eq!(c.core(l).role(), Role::Detaching { gen_ });
    let now = c.now;
    c.core(l).role_stopped(now, gen_);
    c.drain(l);
    let Some(Seen::StartMaster { gen_: g, .. }) = c.node(l).seen.last() else {
        panic!("not restarted: {:?}", c.node(l).seen);
    };
    let g = *g;
    let seed = c.node(l).last_seed.take().expect("seed");
    assert_eq!(g, gen_ + 1);
    assert_eq!(seed.term, c.core(l).term());
    assert_eq!(
        seed.m_key,
        replica_core::seed::m_key_of_term(replica_core::start::DEFAULT_M_KEY_BASE, seed.term)
    );
    assert!(seed.m_key_prev.contains(&0));
    let mut scfg = sm_core::SweeperConfig::default();
    seed.configure(&mut scfg);
    assert!(scfg.gate_programming);
    assert_eq!(scfg.intent_id_base, seed.term << 32);
    assert!(
        scfg.partitions_conf
            .as_deref()
            .is_some_and(|p| p.contains("ALL=limited"))
    );
}

#[test]
fn a_leader_that_applies_its_own_removal_hands_leadership_to_a_voter() {
    let mut c = Cluster::new(3);
    let l = c.elect();
    let now = c.now;
    c.core(l).change_membership(now, l, false).unwrap();
    c.settle();
    c.ticks(30);
    let nl = c.leader().expect("a leader");
    assert_ne!(nl, l, "the removed replica still leads");
    assert!(c.core(nl).master_gen().is_some(), "the new leader masters");
    assert!(c.core(l).master_gen().is_none());
    // The remaining voters still commit.
    let now = c.now;
    let r = c
        .core(nl)
        .propose(now, policy("Default=0x7fff : ALL=full ;\n", 0))
        .unwrap();
    c.settle();
    c.tick();
    assert!(
        c.node(nl)
            .seen
            .iter()
            .any(|s| matches!(s, Seen::Answer { request, accepted: true } if *request == r))
    );
}

/// Found by the simulation (seed 3738): a leader transferring leadership to a replica that
/// does not answer drops every proposal until the transfer times out; the master's
/// IntentDone was lost with it and its sealed intent blocked every later intent of the term.
/// The replica's own commands are now kept and proposed again.
#[test]
fn an_intent_done_dropped_during_a_transfer_is_proposed_again() {
    let mut c = Cluster::new(3);
    let l = c.elect();
    let gen_ = c.core(l).master_gen().unwrap();
    let term = c.core(l).term();
    let id = (term << 32) | 1;
    let now = c.now;
    c.core(l).intent(
        now,
        gen_,
        sm_core::IntentEvent::Program(sm_core::Intent {
            id,
            ..Default::default()
        }),
    );
    c.settle();
    c.tick();
    assert_eq!(c.core(l).state().pending_intent().map(|i| i.id), Some(id));
    let f = if l == 1 { 2 } else { 1 };
    c.paused.insert(f);
    let now = c.now;
    c.core(l).transfer_leader(now, f).unwrap();
    c.core(l).intent(
        now,
        gen_,
        sm_core::IntentEvent::Done {
            id,
            failed_switches: vec![],
            failed_ports: vec![],
            lft_blocks: 0,
            pkey_blocks: 0,
        },
    );
    c.drain(l);
    assert!(
        c.node(l)
            .notices
            .iter()
            .any(|n| n.contains("proposal dropped")),
        "{:?}",
        c.node(l).notices
    );
    c.ticks(40);
    assert_eq!(
        c.leader(),
        Some(l),
        "the transfer to a paused replica times out"
    );
    assert_eq!(
        c.core(l).state().pending_intent(),
        None,
        "the IntentDone was proposed again"
    );
}

#[test]
fn membership_changes_one_at_a_time_and_only_for_configured_replicas() {
    let mut c = Cluster::new(3);
    let l = c.elect();
    let f: Vec<u64> = (1..=3).filter(|&i| i != l).collect();
    let now = c.now;
    let e = c.core(l).change_membership(now, 9, true).unwrap_err();
    assert!(e.to_string().contains("not a configured peer"), "{e}");
    c.core(l).change_membership(now, f[0], false).unwrap();
    // Proposed, not applied: raft-rs would take a second one and replace it with an empty
    // entry; the core refuses it.
    let e = c.core(l).change_membership(now, f[1], false).unwrap_err();
    assert!(e.to_string().contains("not applied yet"), "{e}");
    c.settle();
    c.tick();
    c.settle();
    let now = c.now;
    c.core(l).change_membership(now, f[0], true).unwrap();
}

/// An intent of ft3:36's size (336,960 LFT blocks: some 30 MiB, about 30 log entries of the
/// 1 MiB command limit) is committed like a small one.
#[test]
fn an_intent_of_a_large_fabric_is_committed() {
    let mut c = Cluster::new(3);
    let l = c.elect();
    let gen_ = c.core(l).master_gen().unwrap();
    let term = c.core(l).term();
    let lft_blocks = (0..336_960u32)
        .map(|i| sm_core::LftBlockWrite {
            switch: fabric::Guid(0x2000_0000_0000_0000 + u64::from(i / 208)),
            block: (i % 208) as u16,
            ports: [(i % 36) as u8 + 1; 64],
        })
        .collect();
    let it = sm_core::Intent {
        id: (term << 32) | 1,
        lft_blocks,
        ..Default::default()
    };
    let now = c.now;
    c.core(l)
        .intent(now, gen_, sm_core::IntentEvent::Program(it));
    c.drain(l);
    for _ in 0..50 {
        c.settle();
        c.tick();
    }
    assert!(
        c.node(l).seen.iter().any(
            |s| matches!(s, Seen::IntentResult { gen_: g, committed: true, .. } if *g == gen_)
        ),
        "{:?}",
        c.node(l).seen
    );
}
