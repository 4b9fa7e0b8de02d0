use proto::Message;
use proto::state::{
    AbortIntent, BeginIntent, IntentChunk, IntentContents, IntentDone, PortRef, SealIntent,
    SwitchLft, command::Kind,
};

use super::{cmd, contents, lft_block, pkey_block};
use crate::{ApplyError, Effect, LFT_BLOCK, NO_ROUTE, ReplicatedState, split_intent};
use fabric::{Guid, PortNum};

fn begin(id: u64, term: u64, c: IntentContents) -> Kind {
    Kind::BeginIntent(BeginIntent {
        id,
        term,
        contents: Some(c),
    })
}

fn seal(id: u64, chunks: u32) -> Kind {
    Kind::SealIntent(SealIntent { id, chunks })
}

fn done(id: u64) -> Kind {
    Kind::IntentDone(IntentDone {
        id,
        ..IntentDone::default()
    })
}

/// Applies `kinds` from index `*next` on, asserting each is accepted.
fn run(s: &mut ReplicatedState, next: &mut u64, term: u64, kinds: Vec<Kind>) {
    for k in kinds {
        let o = s.apply(*next, term, &cmd(0, k));
        assert!(o.is_accepted(), "entry {next}: {o:?}");
        *next += 1;
    }
}

#[test]
fn begin_seal_done_programs_the_contents() {
    let mut s = ReplicatedState::new();
    let c = contents(3, 4, 0);
    let mut i = 1;
    run(&mut s, &mut i, 1, vec![begin(10, 1, c.clone())]);
    assert!(s.pending_intent().is_none(), "unsealed is not pending");
    assert_eq!(s.open_intent().unwrap().id, 10);
    assert!(
        s.lft(Guid(0x2000)).is_none(),
        "nothing programmed before done"
    );
    run(&mut s, &mut i, 1, vec![seal(10, 1)]);
    assert_eq!(s.pending_intent().unwrap().id, 10);
    let o = s.apply(i, 1, &cmd(0, done(10)));
    match o.result {
        Ok(Effect::IntentDone(st)) => {
            assert_eq!(st.lft_blocks, 12);
            assert_eq!(st.pkey_blocks, 2);
            assert_eq!(st.port_infos, 1);
        }
        other => panic!("{other:?}"),
    }
    assert!(s.open_intent().is_none());
    for sw in &c.lfts {
        let table = s.lft(Guid(sw.switch_guid)).unwrap();
        assert_eq!(table.len(), 4 * LFT_BLOCK);
        for b in &sw.blocks {
            assert_eq!(
                s.lft_block(Guid(sw.switch_guid), b.block).unwrap(),
                &b.ports[..]
            );
        }
    }
    assert!(s.lft_block(Guid(0x2000), 4).is_none());
    let pk = s.pkey_table(Guid(0x1000), PortNum(1)).unwrap();
    assert_eq!(pk.len(), 64);
    assert_eq!((pk[0], pk[32]), (0xffff, 0x8001));
    let pi = s.port_info(Guid(0x1000), PortNum(1)).unwrap();
    assert_eq!(
        (pi.lid, pi.master_sm_lid, pi.m_key),
        (Some(5), Some(1), None)
    );
}

#[test]
fn later_blocks_override_and_gaps_are_no_route() {
    let mut s = ReplicatedState::new();
    let mut i = 1;
    let c = IntentContents {
        lfts: vec![
            SwitchLft {
                switch_guid: 7,
                blocks: vec![lft_block(2, 3), lft_block(0, 1)],
            },
            SwitchLft {
                switch_guid: 7,
                blocks: vec![lft_block(0, 9)],
            },
        ],
        ..IntentContents::default()
    };
    run(&mut s, &mut i, 1, vec![begin(1, 1, c), seal(1, 1), done(1)]);
    let t = s.lft(Guid(7)).unwrap();
    assert_eq!(t.len(), 3 * LFT_BLOCK);
    assert!(t[..64].iter().all(|p| *p == 9));
    assert!(t[64..128].iter().all(|p| *p == NO_ROUTE));
    assert!(t[128..].iter().all(|p| *p == 3));
    // A second intent changes one block only.
    let c2 = IntentContents {
        lfts: vec![SwitchLft {
            switch_guid: 7,
            blocks: vec![lft_block(1, 4)],
        }],
        ..IntentContents::default()
    };
    run(
        &mut s,
        &mut i,
        1,
        vec![begin(2, 1, c2), seal(2, 1), done(2)],
    );
    let t = s.lft(Guid(7)).unwrap();
    assert!(t[..64].iter().all(|p| *p == 9));
    assert!(t[64..128].iter().all(|p| *p == 4));
}

#[test]
fn new_master_finds_sealed_intent_and_finishes_it() {
    let mut s = ReplicatedState::new();
    let mut i = 1;
    run(
        &mut s,
        &mut i,
        1,
        vec![begin(5, 1, contents(2, 2, 1)), seal(5, 1)],
    );
    // Term 2: the new master must not extend or replace it, but may finish it.
    let pending = s.pending_intent().unwrap().clone();
    assert_eq!((pending.id, pending.term, pending.sealed), (5, 1, true));
    let o = s.apply(i, 2, &cmd(0, begin(6, 2, contents(1, 1, 0))));
    assert_eq!(o.result, Err(ApplyError::IntentBusy { pending: 5 }));
    i += 1;
    let o = s.apply(
        i,
        2,
        &cmd(
            0,
            Kind::IntentChunk(IntentChunk {
                id: 5,
                seq: 1,
                contents: None,
            }),
        ),
    );
    assert_eq!(o.result, Err(ApplyError::AlreadySealed { id: 5 }));
    i += 1;
    run(&mut s, &mut i, 2, vec![done(5)]);
    let want = pending.contents.unwrap();
    for sw in &want.lfts {
        for b in &sw.blocks {
            assert_eq!(
                s.lft_block(Guid(sw.switch_guid), b.block).unwrap(),
                &b.ports[..]
            );
        }
    }
    run(&mut s, &mut i, 2, vec![begin(6, 2, contents(1, 1, 0))]);
}

#[test]
fn unsealed_intent_of_an_old_term_is_replaced_not_extended() {
    let mut s = ReplicatedState::new();
    let mut i = 1;
    run(&mut s, &mut i, 1, vec![begin(5, 1, contents(1, 1, 0))]);
    for k in [
        Kind::IntentChunk(IntentChunk {
            id: 5,
            seq: 1,
            contents: None,
        }),
        seal(5, 1),
    ] {
        let o = s.apply(i, 2, &cmd(0, k));
        assert!(
            matches!(o.result, Err(ApplyError::IntentTermMismatch { id: 5, .. })),
            "{o:?}"
        );
        i += 1;
    }
    assert!(s.pending_intent().is_none());
    // A begin naming another term than its entry's is refused.
    let o = s.apply(i, 2, &cmd(0, begin(6, 1, contents(1, 1, 0))));
    assert!(matches!(
        o.result,
        Err(ApplyError::IntentTermMismatch { .. })
    ));
    i += 1;
    run(&mut s, &mut i, 2, vec![begin(6, 2, contents(1, 1, 0))]);
    assert_eq!(s.open_intent().unwrap().id, 6);
}

#[test]
fn sequencing_errors_change_nothing() {
    let mut s = ReplicatedState::new();
    let mut i = 1;
    run(&mut s, &mut i, 1, vec![begin(1, 1, contents(1, 1, 0))]);
    let before = s.open_intent().cloned();
    let cases = vec![
        (
            Kind::IntentChunk(IntentChunk {
                id: 1,
                seq: 2,
                contents: None,
            }),
            ApplyError::ChunkOutOfOrder {
                id: 1,
                expected: 1,
                got: 2,
            },
        ),
        (
            Kind::IntentChunk(IntentChunk {
                id: 9,
                seq: 1,
                contents: None,
            }),
            ApplyError::NoSuchIntent {
                id: 9,
                open: Some(1),
            },
        ),
        (
            seal(1, 3),
            ApplyError::ChunkCountMismatch {
                id: 1,
                declared: 3,
                received: 1,
            },
        ),
        (done(1), ApplyError::NotSealed { id: 1 }),
        (
            done(2),
            ApplyError::NoSuchIntent {
                id: 2,
                open: Some(1),
            },
        ),
        (
            Kind::AbortIntent(AbortIntent { id: 2 }),
            ApplyError::NoSuchIntent {
                id: 2,
                open: Some(1),
            },
        ),
    ];
    for (k, e) in cases {
        let o = s.apply(i, 1, &cmd(0, k));
        assert_eq!(o.result, Err(e));
        i += 1;
        assert_eq!(s.open_intent().cloned(), before);
    }
    run(
        &mut s,
        &mut i,
        1,
        vec![Kind::AbortIntent(AbortIntent { id: 1 })],
    );
    assert!(s.open_intent().is_none());
    assert!(s.lft(Guid(0x2000)).is_none(), "abort programs nothing");
}

#[test]
fn malformed_blocks_are_refused() {
    let mut s = ReplicatedState::new();
    let mut short = contents(1, 1, 0);
    short.lfts[0].blocks[0].ports.pop();
    let o = s.apply(1, 1, &cmd(0, begin(1, 1, short)));
    assert_eq!(o.to_proto().code, "REPL-E012");
    let mut far = contents(1, 1, 0);
    far.lfts[0].blocks[0].block = 768;
    let o = s.apply(2, 1, &cmd(0, begin(1, 1, far)));
    assert_eq!(o.to_proto().code, "REPL-E012");
    let mut pk = contents(1, 1, 0);
    pk.pkeys[0].blocks[0].pkeys[3] = 0x1_0000;
    let o = s.apply(3, 1, &cmd(0, begin(1, 1, pk)));
    assert_eq!(o.to_proto().code, "REPL-E013");
    let mut port = contents(1, 1, 0);
    port.port_infos[0].port = 255;
    let o = s.apply(4, 1, &cmd(0, begin(1, 1, port)));
    assert_eq!(o.to_proto().code, "REPL-E014");
    assert!(s.open_intent().is_none());
}

/// Found by the chaos simulation once it drove the production replica with multicast
/// (issue 17): a switch whose MFT Set failed in an MFT-only intent lost its LFT record too,
/// while the master knew its LFT right and never rewrote it; the state and the fabric then
/// disagreed for good.
#[test]
fn a_failed_switch_loses_only_the_tables_the_intent_wrote() {
    let mut s = ReplicatedState::new();
    let mut i = 1;
    run(
        &mut s,
        &mut i,
        1,
        vec![begin(1, 1, contents(2, 2, 0)), seal(1, 1), done(1)],
    );
    let lft = s.lft(Guid(0x2000)).expect("recorded").to_vec();
    assert!(!s.mfts().is_empty());
    // An intent that writes only the MFTs of 0x2000, which fails there.
    let mut mft_only = contents(2, 2, 7);
    mft_only.lfts.clear();
    mft_only.pkeys.clear();
    mft_only.port_infos.clear();
    run(&mut s, &mut i, 1, vec![begin(2, 1, mft_only), seal(2, 1)]);
    let d = Kind::IntentDone(IntentDone {
        id: 2,
        failed_switches: vec![0x2000],
        failed_ports: vec![],
    });
    assert!(s.apply(i, 1, &cmd(0, d)).is_accepted());
    assert_eq!(
        s.lft(Guid(0x2000)),
        Some(&lft[..]),
        "the LFT was not written: kept"
    );
    assert!(
        !s.mfts().contains_key(&Guid(0x2000)),
        "the MFT the intent wrote is unknown"
    );
}

#[test]
fn failed_targets_become_unknown() {
    let mut s = ReplicatedState::new();
    let mut i = 1;
    run(
        &mut s,
        &mut i,
        1,
        vec![begin(1, 1, contents(2, 2, 0)), seal(1, 1), done(1)],
    );
    assert!(s.lft(Guid(0x2001)).is_some());
    let d = Kind::IntentDone(IntentDone {
        id: 2,
        failed_switches: vec![0x2001],
        failed_ports: vec![PortRef {
            node_guid: 0x1000,
            port: 1,
        }],
    });
    run(
        &mut s,
        &mut i,
        1,
        vec![begin(2, 1, contents(2, 2, 5)), seal(2, 1)],
    );
    let o = s.apply(i, 1, &cmd(0, d));
    match o.result {
        Ok(Effect::IntentDone(st)) => {
            assert_eq!(
                (st.dropped_switches, st.dropped_ports, st.lft_blocks),
                (1, 1, 2)
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(
        s.lft(Guid(0x2001)).is_none(),
        "failed switch is unknown, re-programmed next"
    );
    assert_eq!(
        s.lft_block(Guid(0x2000), 1).unwrap(),
        &contents(2, 2, 5).lfts[0].blocks[1].ports[..]
    );
    assert!(s.pkey_table(Guid(0x1000), PortNum(1)).is_none());
    assert!(s.port_info(Guid(0x1000), PortNum(1)).is_none());
}

#[test]
fn chunked_intent_is_bounded_and_applies_like_one() {
    // 200 switches x 208 blocks (13,284 LIDs) ~ 2.7 MB, cut at 256 KiB.
    let big = contents(200, 208, 3);
    let max = 256 * 1024;
    let cmds = split_intent(42, 3, big.clone(), max);
    assert!(cmds.len() > 10, "{} commands", cmds.len());
    for c in &cmds {
        assert!(c.encoded_len() <= max, "{} > {max}", c.encoded_len());
    }
    let mut chunked = ReplicatedState::new();
    let mut i = 1;
    let n = cmds.len();
    for (k, c) in cmds.into_iter().enumerate() {
        let o = chunked.apply(i, 3, &c);
        assert!(o.is_accepted(), "{o:?}");
        i += 1;
        assert!(
            chunked.lfts().next().is_none(),
            "chunk {k}/{n} programmed something"
        );
    }
    assert!(chunked.pending_intent().is_some());
    run(&mut chunked, &mut i, 3, vec![done(42)]);

    let mut whole = ReplicatedState::new();
    let mut j = 1;
    run(
        &mut whole,
        &mut j,
        3,
        vec![begin(42, 3, big), seal(42, 1), done(42)],
    );
    assert_eq!(chunked.lfts().count(), 200);
    assert!(chunked.lfts().eq(whole.lfts()));
    assert!(chunked.pkey_tables().eq(whole.pkey_tables()));
    assert_eq!(
        chunked.port_info(Guid(0x1000), PortNum(1)),
        whole.port_info(Guid(0x1000), PortNum(1))
    );
}

#[test]
fn one_switch_larger_than_a_chunk_is_split_by_blocks() {
    let c = contents(1, 208, 0);
    let cmds = split_intent(1, 1, c.clone(), 2048);
    assert!(cmds.len() > 3);
    for k in &cmds {
        assert!(k.encoded_len() <= 2048);
    }
    let mut s = ReplicatedState::new();
    for (i, k) in cmds.iter().enumerate() {
        assert!(s.apply(i as u64 + 1, 1, k).is_accepted());
    }
    assert!(
        s.apply(cmds.len() as u64 + 1, 1, &cmd(0, done(1)))
            .is_accepted()
    );
    for b in &c.lfts[0].blocks {
        assert_eq!(s.lft_block(Guid(0x2000), b.block).unwrap(), &b.ports[..]);
    }
}

#[test]
fn empty_intent_splits_into_begin_and_seal() {
    let cmds = split_intent(1, 1, IntentContents::default(), 1 << 20);
    assert_eq!(cmds.len(), 2);
    assert!(matches!(cmds[0].kind, Some(Kind::BeginIntent(_))));
    assert!(matches!(
        cmds[1].kind,
        Some(Kind::SealIntent(SealIntent { chunks: 1, .. }))
    ));
}

#[test]
fn ft3_r36_sized_intent_fits_the_default_bound() {
    // Every LFT block of 1,620 switches over 13,284 LIDs (208 blocks): ~24 MB in one intent.
    let big = contents(1620, 208, 0);
    assert!(big.encoded_len() > 20_000_000);
    let cmds = split_intent(1, 1, big, crate::DEFAULT_MAX_COMMAND_BYTES);
    assert!(
        cmds.iter()
            .all(|c| c.encoded_len() <= crate::DEFAULT_MAX_COMMAND_BYTES)
    );
    let mut s = ReplicatedState::new();
    let n = cmds.len() as u64;
    for (i, c) in cmds.iter().enumerate() {
        assert!(s.apply(i as u64 + 1, 1, c).is_accepted());
    }
    assert!(s.apply(n + 1, 1, &cmd(0, done(1))).is_accepted());
    assert_eq!(s.lfts().count(), 1620);
    assert!(s.lfts().all(|(_, t)| t.len() == 208 * LFT_BLOCK));
}

/// Chaos seed 7544: the master of term 5, restarted on a new policy, numbers its intents
/// from the term's base again; the previous master's last intent, sealed only after the
/// restart, was never programmed and must not block the new master for good.
#[test]
fn restarted_master_replaces_the_previous_masters_orphaned_intent() {
    let t = 5u64;
    let base = t << 32;
    let mut s = ReplicatedState::new();
    let mut i = 1;
    let mut orphan = contents(2, 1, 0);
    orphan.pkeys.clear();
    let mut mine = contents(1, 3, 1);
    mine.pkeys[0].blocks = vec![pkey_block(0, 0xffff), pkey_block(1, 0x8003)];
    // The previous master of term 5: intents base+1, base+2 done, base+3 sealed when the
    // policy change restarts it.
    run(
        &mut s,
        &mut i,
        t,
        vec![
            begin(base + 1, t, contents(1, 1, 0)),
            seal(base + 1, 1),
            done(base + 1),
            begin(base + 2, t, contents(1, 1, 0)),
            seal(base + 2, 1),
            done(base + 2),
            begin(base + 3, t, orphan),
            seal(base + 3, 1),
        ],
    );
    // A later intent of the same master, or one of another term, is still refused.
    let o = s.apply(i, t, &cmd(0, begin(base + 4, t, contents(1, 1, 0))));
    assert_eq!(o.result, Err(ApplyError::IntentBusy { pending: base + 3 }));
    i += 1;
    let o = s.apply(i, t + 1, &cmd(0, begin(base + 1, t + 1, contents(1, 1, 0))));
    assert_eq!(o.result, Err(ApplyError::IntentBusy { pending: base + 3 }));
    i += 1;
    // The restarted master's first intent (base+1 again, with P_Keys) replaces the orphan
    // and its done programs its own contents, not the orphan's.
    run(
        &mut s,
        &mut i,
        t,
        vec![begin(base + 1, t, mine.clone()), seal(base + 1, 1)],
    );
    let p = s.pending_intent().unwrap();
    assert_eq!((p.id, p.contents.as_ref()), (base + 1, Some(&mine)));
    run(&mut s, &mut i, t, vec![done(base + 1)]);
    assert!(s.pending_intent().is_none() && s.open_intent().is_none());
    for pp in &mine.pkeys {
        let got = s
            .pkey_table(Guid(pp.node_guid), PortNum(pp.port as u8))
            .unwrap_or_else(|| panic!("P_Keys of {:#x} not recorded", pp.node_guid));
        for b in &pp.blocks {
            let lo = b.block as usize * 32;
            let want: Vec<u16> = b.pkeys.iter().map(|k| *k as u16).collect();
            assert_eq!(&got[lo..lo + 32], &want[..]);
        }
    }
}
