//! replica-bench: sizes and timings of the replicated state on a generated fabric.
//!
//! `cargo run --release -p replica --bin replica-bench -- [SPEC] [ROUNDS]` (default `ft3:36`,
//! 5 rounds). Builds the state a master would commit for a fresh fabric — topology, one LID
//! per port, an intent holding every LFT block of every switch and one P_Key block per CA
//! port, cut into commands of at most 1 MiB — applies it, then times snapshot encode and
//! restore. LFT entries are seeded pseudo-random egress ports (sizes do not depend on them).

use std::time::{Duration, Instant};

use fabric::rng::SplitMix64;
use fabric::{GenSpec, NodeType};
use proto::Message;
use proto::state::{
    Command, IntentContents, IntentDone, LftBlock, LidEntry, LidUpdate, PKeyBlock, PortPKeys,
    SwitchLft, command::Kind,
};
use replica::{DEFAULT_MAX_COMMAND_BYTES, LFT_BLOCK, ReplicatedState, split_intent};

fn mb(n: usize) -> String {
    format!("{:.2} MB", n as f64 / 1e6)
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let spec_text = args.next().unwrap_or_else(|| "ft3:36".into());
    let rounds: usize = args
        .next()
        .map(|r| r.parse())
        .transpose()?
        .unwrap_or(5)
        .max(1);
    let spec: GenSpec = spec_text.parse()?;
    let topo = spec.generate()?;
    let switches: Vec<_> = topo.switches().map(|(_, n)| n.node_guid).collect();
    let cas: Vec<_> = topo
        .nodes()
        .filter(|(_, n)| n.node_type != NodeType::Switch)
        .map(|(_, n)| n)
        .collect();
    // One LID per switch and per CA port, from 1.
    let mut lids = Vec::new();
    for (_, n) in topo.nodes() {
        let ports: Vec<u64> = if n.node_type == NodeType::Switch {
            vec![n.ports[0].guid.0]
        } else {
            n.ports.iter().skip(1).map(|p| p.guid.0).collect()
        };
        for g in ports {
            lids.push(LidEntry {
                port_guid: g,
                base_lid: lids.len() as u32 + 1,
                lmc: 0,
            });
        }
    }
    let top_lid = lids.len();
    let blocks = top_lid / LFT_BLOCK + 1;
    println!(
        "fabric {spec_text}: {} nodes, {} switches, {} links, {} LIDs, {} LFT blocks per switch",
        topo.len(),
        switches.len(),
        topo.num_links(),
        top_lid,
        blocks
    );

    let mut rng = SplitMix64::new(7);
    let radix = topo
        .switches()
        .map(|(_, n)| u64::from(n.num_ports()))
        .max()
        .unwrap_or(1);
    let contents = IntentContents {
        lfts: switches
            .iter()
            .map(|g| SwitchLft {
                switch_guid: g.0,
                blocks: (0..blocks as u32)
                    .map(|b| LftBlock {
                        block: b,
                        ports: (0..LFT_BLOCK).map(|_| 1 + rng.below(radix) as u8).collect(),
                    })
                    .collect(),
            })
            .collect(),
        pkeys: cas
            .iter()
            .flat_map(|n| n.port_numbers().map(move |p| (n.node_guid, p)))
            .map(|(g, p)| PortPKeys {
                node_guid: g.0,
                port: u32::from(p.0),
                blocks: vec![PKeyBlock {
                    block: 0,
                    pkeys: std::iter::once(0xffff)
                        .chain(std::iter::repeat_n(0, 31))
                        .collect(),
                }],
            })
            .collect(),
        port_infos: Vec::new(),
        vport_writes: Vec::new(),
        mfts: Vec::new(),
        vl_blocks: Vec::new(),
    };
    let raw_lft = switches.len() * blocks * LFT_BLOCK;
    let intent_len = contents.encoded_len();
    println!(
        "LFTs raw {} ({} switches x {} entries); whole intent encoded {}",
        mb(raw_lft),
        switches.len(),
        blocks * LFT_BLOCK,
        mb(intent_len)
    );

    let t = Instant::now();
    let mut cmds = vec![
        Command {
            request_id: 1,
            kind: Some(Kind::SetTopology(replica::topology_to_proto(&topo))),
        },
        Command {
            request_id: 2,
            kind: Some(Kind::UpdateLids(LidUpdate {
                set: lids,
                remove: Vec::new(),
                replace_all: true,
            })),
        },
    ];
    let t_topo = t.elapsed();
    let t = Instant::now();
    let intent_cmds = split_intent(1, 1, contents, DEFAULT_MAX_COMMAND_BYTES);
    let t_split = t.elapsed();
    let n_intent = intent_cmds.len();
    cmds.extend(intent_cmds);
    cmds.push(Command {
        request_id: 0,
        kind: Some(Kind::IntentDone(IntentDone {
            id: 1,
            ..IntentDone::default()
        })),
    });
    let sizes: Vec<usize> = cmds.iter().map(Message::encoded_len).collect();
    println!(
        "commands: topology {} (converted in {}), LID map {}, intent in {} commands (split in {}), largest intent command {} (bound {})",
        mb(sizes[0]),
        ms(t_topo),
        mb(sizes[1]),
        n_intent,
        ms(t_split),
        mb(sizes[2..].iter().copied().max().unwrap_or(0)),
        mb(DEFAULT_MAX_COMMAND_BYTES)
    );

    // Entries as they would come out of the log: decode each, then apply.
    let encoded: Vec<Vec<u8>> = cmds.iter().map(Message::encode_to_vec).collect();
    let mut apply_times = Vec::new();
    let mut state = ReplicatedState::new();
    for _ in 0..rounds {
        let mut s = ReplicatedState::new();
        let t = Instant::now();
        for (i, e) in encoded.iter().enumerate() {
            let c = Command::decode(e.as_slice())?;
            let o = s.apply(i as u64 + 1, 1, &c);
            if let Err(e) = o.result {
                return Err(format!("entry {} refused: {e}", i + 1).into());
            }
        }
        apply_times.push(t.elapsed());
        state = s;
    }
    println!(
        "decode + apply of all {} entries: median {} over {rounds} rounds",
        encoded.len(),
        ms(median(apply_times))
    );

    let mut enc = Vec::new();
    let mut dec = Vec::new();
    let mut bytes = Vec::new();
    for _ in 0..rounds {
        let t = Instant::now();
        bytes = state.snapshot_bytes();
        enc.push(t.elapsed());
        let t = Instant::now();
        let r = ReplicatedState::restore(&bytes)?;
        dec.push(t.elapsed());
        if r.applied_index() != state.applied_index() {
            return Err("restored state differs".into());
        }
    }
    println!(
        "snapshot: {} ({:.3} x raw LFT bytes); encode median {}, decode+restore median {} over {rounds} rounds",
        mb(bytes.len()),
        bytes.len() as f64 / raw_lft as f64,
        ms(median(enc)),
        ms(median(dec))
    );
    Ok(())
}
