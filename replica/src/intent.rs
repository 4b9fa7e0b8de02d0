//! Programming intents: the commands that open, fill, seal, finish and abort one, and
//! [`split_intent`], which cuts a large intent into commands of bounded size.
//!
//! # Rules
//!
//! * One intent at a time. `BeginIntent` (carrying chunk 0) opens it; `IntentChunk`s with
//!   seq 1, 2, ... add to it; `SealIntent` (with the chunk count) closes it. Only an intent
//!   whose seal is committed may be programmed. Chunks and the seal must be of the intent's
//!   own term: a new master never extends a previous master's unfinished intent.
//! * `BeginIntent` while an unsealed intent is open replaces it (it was never programmed);
//!   while a sealed intent is pending it is refused ([`ApplyError::IntentBusy`]), except
//!   for an orphan of a restarted master (below).
//! * Orphan of a restarted master: a master restarted within its term (new policy) numbers
//!   its intents from the term's base again (`term << 32` + 1, 2, ...), and the previous
//!   master of that term may have proposed an intent whose seal was applied only after the
//!   new one was seeded. The previous master was stopped before that seal was applied, so
//!   it never programmed it, and the new one never heard of it: nobody would ever finish or
//!   abort it, and every later `BeginIntent` would be refused. A `BeginIntent` of the
//!   pending intent's own term whose id is not above the pending id can only come from such
//!   a restarted master (ids only grow within one master, and a master seeded with a
//!   pending intent commits its `IntentDone` before its first `BeginIntent`), so it
//!   replaces the orphan, which is dropped unapplied.
//! * `IntentDone` applies the whole intent atomically (all chunks, in order: a later block
//!   for the same switch/port overrides an earlier one) to the programmed LFT / P_Key /
//!   PortInfo state and clears it. Targets listed as failed are not applied and their
//!   programmed state is dropped (unknown), so the next diff re-programs them.
//! * `AbortIntent` drops the intent, sealed or not, without applying it.
//! * A new master reads [`ReplicatedState::pending_intent`], re-programs it and commits
//!   `IntentDone` (or aborts an unsealed one).

use std::collections::BTreeSet;

use fabric::{Guid, PortNum};
use proto::Message;
use proto::state::{
    BeginIntent, Command, Intent, IntentChunk, IntentContents, IntentDone, MftTable, PKeyBlock,
    PortInfoChange, PortPKeys, SealIntent, SwitchLft, command::Kind,
};

use crate::apply::{Effect, port_num};
use crate::error::ApplyError;
use crate::state::{
    LFT_BLOCK, MAX_LFT_BLOCK, MAX_PKEY_BLOCK, NO_ROUTE, PKEY_BLOCK, ReplicatedState,
};

/// What an `IntentDone` changed in the programmed state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DoneStats {
    /// The intent id.
    pub id: u64,
    /// LFT blocks written into the programmed state.
    pub lft_blocks: usize,
    /// P_Key blocks written.
    pub pkey_blocks: usize,
    /// PortInfo changes merged.
    pub port_infos: usize,
    /// Switches whose programmed LFT was dropped (failed).
    pub dropped_switches: usize,
    /// Ports whose programmed P_Keys / PortInfo were dropped (failed).
    pub dropped_ports: usize,
    /// MFT blocks written.
    pub mft_blocks: usize,
    /// SLtoVL and VLArb blocks recorded.
    pub vl_blocks: usize,
}

impl ReplicatedState {
    pub(crate) fn begin_intent(
        &mut self,
        index: u64,
        term: u64,
        b: &BeginIntent,
    ) -> Result<Effect, ApplyError> {
        if b.term != term {
            return Err(ApplyError::IntentTermMismatch {
                id: b.id,
                intent_term: b.term,
                entry_term: term,
            });
        }
        if let Some(i) = &self.intent
            && i.sealed
            && !(i.term == b.term && b.id <= i.id)
        {
            return Err(ApplyError::IntentBusy { pending: i.id });
        }
        let contents = b.contents.clone().unwrap_or_default();
        validate_contents(&contents)?;
        self.intent = Some(Intent {
            id: b.id,
            term: b.term,
            chunks: 1,
            sealed: false,
            begun_at_index: index,
            contents: Some(contents),
        });
        Ok(Effect::IntentBegun { id: b.id })
    }

    /// The open intent with this id, checked for term and seal.
    fn open_unsealed(&mut self, id: u64, term: u64) -> Result<&mut Intent, ApplyError> {
        let open = self.intent.as_ref().map(|i| i.id);
        let intent = self
            .intent
            .as_mut()
            .filter(|i| i.id == id)
            .ok_or(ApplyError::NoSuchIntent { id, open })?;
        if intent.sealed {
            return Err(ApplyError::AlreadySealed { id });
        }
        if intent.term != term {
            return Err(ApplyError::IntentTermMismatch {
                id,
                intent_term: intent.term,
                entry_term: term,
            });
        }
        Ok(intent)
    }

    pub(crate) fn intent_chunk(
        &mut self,
        term: u64,
        c: &IntentChunk,
    ) -> Result<Effect, ApplyError> {
        let empty = IntentContents::default();
        let contents = c.contents.as_ref().unwrap_or(&empty);
        let intent = self.open_unsealed(c.id, term)?;
        if c.seq != intent.chunks {
            return Err(ApplyError::ChunkOutOfOrder {
                id: c.id,
                expected: intent.chunks,
                got: c.seq,
            });
        }
        validate_contents(contents)?;
        let dst = intent.contents.get_or_insert_with(IntentContents::default);
        dst.lfts.extend(contents.lfts.iter().cloned());
        dst.pkeys.extend(contents.pkeys.iter().cloned());
        dst.port_infos.extend(contents.port_infos.iter().cloned());
        dst.mfts.extend(contents.mfts.iter().cloned());
        dst.vl_blocks.extend(contents.vl_blocks.iter().cloned());
        dst.vport_writes
            .extend(contents.vport_writes.iter().cloned());
        intent.chunks += 1;
        Ok(Effect::IntentChunkAdded {
            id: c.id,
            seq: c.seq,
        })
    }

    pub(crate) fn seal_intent(&mut self, term: u64, s: &SealIntent) -> Result<Effect, ApplyError> {
        let intent = self.open_unsealed(s.id, term)?;
        if s.chunks != intent.chunks {
            return Err(ApplyError::ChunkCountMismatch {
                id: s.id,
                declared: s.chunks,
                received: intent.chunks,
            });
        }
        intent.sealed = true;
        Ok(Effect::IntentSealed { id: s.id })
    }

    pub(crate) fn intent_done(&mut self, d: &IntentDone) -> Result<Effect, ApplyError> {
        let open = self.intent.as_ref().map(|i| i.id);
        let Some(intent) = self.intent.as_ref().filter(|i| i.id == d.id) else {
            return Err(ApplyError::NoSuchIntent { id: d.id, open });
        };
        if !intent.sealed {
            return Err(ApplyError::NotSealed { id: d.id });
        }
        let mut failed_ports = BTreeSet::new();
        for p in &d.failed_ports {
            failed_ports.insert((Guid(p.node_guid), port_num(p.node_guid, p.port)?));
        }
        let failed_switches: BTreeSet<Guid> = d.failed_switches.iter().map(|g| Guid(*g)).collect();
        // Validated above; take it now that nothing can fail.
        let contents = self
            .intent
            .take()
            .and_then(|i| i.contents)
            .unwrap_or_default();
        let mut stats = DoneStats {
            id: d.id,
            ..DoneStats::default()
        };
        // A failed switch's tables are unknown only where the intent wrote them: an intent
        // that programmed only its MFTs leaves its LFT as recorded (and the other way round).
        let lft_written: BTreeSet<Guid> =
            contents.lfts.iter().map(|t| Guid(t.switch_guid)).collect();
        let mft_written: BTreeSet<Guid> =
            contents.mfts.iter().map(|t| Guid(t.switch_guid)).collect();
        for sw in contents.lfts {
            let guid = Guid(sw.switch_guid);
            if failed_switches.contains(&guid) {
                continue;
            }
            let table = self.lfts.entry(guid).or_default();
            for b in sw.blocks {
                write_lft_block(table, b.block, &b.ports);
                stats.lft_blocks += 1;
            }
        }
        for pp in contents.pkeys {
            // Ports were validated when the chunk was accepted.
            let key = (Guid(pp.node_guid), PortNum(pp.port as u8));
            if failed_ports.contains(&key) {
                continue;
            }
            let table = self.pkeys.entry(key).or_default();
            for b in pp.blocks {
                write_pkey_block(table, b.block, &b.pkeys);
                stats.pkey_blocks += 1;
            }
        }
        for pi in contents.port_infos {
            let key = (Guid(pi.node_guid), PortNum(pi.port as u8));
            if failed_ports.contains(&key) {
                continue;
            }
            let cur = self
                .port_infos
                .entry(key)
                .or_insert_with(|| PortInfoChange {
                    node_guid: pi.node_guid,
                    port: pi.port,
                    ..PortInfoChange::default()
                });
            merge_port_info(cur, &pi);
            stats.port_infos += 1;
        }
        for t in &contents.mfts {
            if !failed_switches.contains(&Guid(t.switch_guid)) {
                stats.mft_blocks += self.write_mft_blocks(t);
            }
        }
        let failed_port_nums: BTreeSet<(Guid, u8)> =
            failed_ports.iter().map(|(g, p)| (*g, p.0)).collect();
        stats.vl_blocks +=
            self.write_vl_blocks(&contents.vl_blocks, &failed_switches, &failed_port_nums);
        for g in &failed_switches {
            let lft = lft_written.contains(g) && self.lfts.remove(g).is_some();
            let mft = mft_written.contains(g) && self.drop_mft(*g);
            stats.dropped_switches += usize::from(lft || mft);
        }
        for k in &failed_ports {
            let a = self.pkeys.remove(k).is_some();
            let b = self.port_infos.remove(k).is_some();
            stats.dropped_ports += usize::from(a || b);
        }
        Ok(Effect::IntentDone(stats))
    }

    pub(crate) fn abort_intent(&mut self, id: u64) -> Result<Effect, ApplyError> {
        let open = self.intent.as_ref().map(|i| i.id);
        if open != Some(id) {
            return Err(ApplyError::NoSuchIntent { id, open });
        }
        self.intent = None;
        Ok(Effect::IntentAborted { id })
    }
}

fn write_lft_block(table: &mut Vec<u8>, block: u32, ports: &[u8]) {
    let lo = block as usize * LFT_BLOCK;
    if table.len() < lo + LFT_BLOCK {
        table.resize(lo + LFT_BLOCK, NO_ROUTE);
    }
    table[lo..lo + LFT_BLOCK].copy_from_slice(ports);
}

fn write_pkey_block(table: &mut Vec<u16>, block: u32, keys: &[u32]) {
    let lo = block as usize * PKEY_BLOCK;
    if table.len() < lo + PKEY_BLOCK {
        table.resize(lo + PKEY_BLOCK, 0);
    }
    for (d, k) in table[lo..lo + PKEY_BLOCK].iter_mut().zip(keys) {
        // Validated: every key fits 16 bits.
        *d = *k as u16;
    }
}

fn merge_port_info(cur: &mut PortInfoChange, new: &PortInfoChange) {
    macro_rules! take {
        ($($f:ident),*) => { $( if new.$f.is_some() { cur.$f = new.$f; } )* };
    }
    take!(
        lid,
        lmc,
        master_sm_lid,
        master_sm_sl,
        m_key,
        m_key_protect_bits,
        m_key_lease_period,
        subnet_prefix,
        port_state,
        neighbor_mtu,
        operational_vls,
        partition_enforcement
    );
}

/// Checks the shape of every block in `c` (64-byte LFT blocks, 32-key P_Key blocks, block
/// numbers and ports in range).
pub(crate) fn validate_contents(c: &IntentContents) -> Result<(), ApplyError> {
    for sw in &c.lfts {
        for b in &sw.blocks {
            if b.ports.len() != LFT_BLOCK || b.block > MAX_LFT_BLOCK {
                return Err(ApplyError::BadLftBlock {
                    switch: Guid(sw.switch_guid),
                    block: b.block,
                    len: b.ports.len(),
                });
            }
        }
    }
    for pp in &c.pkeys {
        port_num(pp.node_guid, pp.port)?;
        for b in &pp.blocks {
            if b.pkeys.len() != PKEY_BLOCK
                || b.block > MAX_PKEY_BLOCK
                || b.pkeys.iter().any(|k| *k > 0xFFFF)
            {
                return Err(ApplyError::BadPKeyBlock {
                    node: Guid(pp.node_guid),
                    port: pp.port,
                    block: b.block,
                    len: b.pkeys.len(),
                });
            }
        }
    }
    for pi in &c.port_infos {
        port_num(pi.node_guid, pi.port)?;
    }
    for w in &c.vport_writes {
        if w.data.len() != 64 || w.index > u32::from(u16::MAX) {
            return Err(ApplyError::BadVportWrite {
                port: Guid(w.port_guid),
                index: w.index,
                len: w.data.len(),
            });
        }
    }
    crate::mft::validate(&c.mfts)?;
    crate::vl::validate(&c.vl_blocks)?;
    Ok(())
}

/// Default bound on one command's encoded size: 1 MiB, so that a Raft append message with
/// raft-rs `max_size_per_msg` of 1 MiB carries about one such entry and a batch of a few
/// messages stays under tonic's default 4 MiB message limit.
pub const DEFAULT_MAX_COMMAND_BYTES: usize = 1024 * 1024;

fn flush(cur: &mut IntentContents, size: &mut usize, chunks: &mut Vec<IntentContents>) {
    chunks.push(std::mem::take(cur));
    *size = 0;
}

/// Bytes per item for its tag and length in the enclosing message (a length varint of up to
/// 3 bytes covers items below 2 MiB; larger single items are not split anyway).
const ITEM_OVERHEAD: usize = 4;
/// Bytes per switch or port entry opened in a chunk (tag, length, GUID, port).
const ENTRY_OVERHEAD: usize = 24;

/// Cuts an intent into `BeginIntent`, `IntentChunk`s and a final `SealIntent`, each command's
/// encoding at most about `max_bytes` (a single LFT block, P_Key block or PortInfo change is
/// never split; `max_bytes` must exceed a few hundred bytes). Blocks of one switch or port
/// may be spread over consecutive chunks; applied at IntentDone they give the same state as
/// the unsplit intent. Request ids are left 0 for the caller to fill in.
pub fn split_intent(
    id: u64,
    term: u64,
    contents: IntentContents,
    max_bytes: usize,
) -> Vec<Command> {
    let budget = max_bytes.saturating_sub(64).max(256);
    let mut chunks: Vec<IntentContents> = Vec::new();
    let mut cur = IntentContents::default();
    let mut size = 0usize;
    for sw in contents.lfts {
        let mut open: Option<SwitchLft> = None;
        for b in sw.blocks {
            let cost = b.encoded_len() + ITEM_OVERHEAD;
            if size + cost + ENTRY_OVERHEAD > budget && size > 0 {
                if let Some(s) = open.take() {
                    cur.lfts.push(s);
                }
                flush(&mut cur, &mut size, &mut chunks);
            }
            let s = open.get_or_insert_with(|| {
                size += ENTRY_OVERHEAD;
                SwitchLft {
                    switch_guid: sw.switch_guid,
                    blocks: Vec::new(),
                }
            });
            s.blocks.push(b);
            size += cost;
        }
        if let Some(s) = open {
            cur.lfts.push(s);
        }
    }
    for pp in contents.pkeys {
        let mut open: Option<PortPKeys> = None;
        for b in pp.blocks {
            let cost = PKeyBlock::encoded_len(&b) + ITEM_OVERHEAD;
            if size + cost + ENTRY_OVERHEAD > budget && size > 0 {
                if let Some(p) = open.take() {
                    cur.pkeys.push(p);
                }
                flush(&mut cur, &mut size, &mut chunks);
            }
            let p = open.get_or_insert_with(|| {
                size += ENTRY_OVERHEAD;
                PortPKeys {
                    node_guid: pp.node_guid,
                    port: pp.port,
                    blocks: Vec::new(),
                }
            });
            p.blocks.push(b);
            size += cost;
        }
        if let Some(p) = open {
            cur.pkeys.push(p);
        }
    }
    for t in contents.mfts {
        let mut open: Option<MftTable> = None;
        for b in t.blocks {
            let cost = b.encoded_len() + ITEM_OVERHEAD;
            if size + cost + ENTRY_OVERHEAD > budget && size > 0 {
                if let Some(s) = open.take() {
                    cur.mfts.push(s);
                }
                flush(&mut cur, &mut size, &mut chunks);
            }
            let s = open.get_or_insert_with(|| {
                size += ENTRY_OVERHEAD;
                MftTable {
                    switch_guid: t.switch_guid,
                    blocks: Vec::new(),
                }
            });
            s.blocks.push(b);
            size += cost;
        }
        if let Some(s) = open {
            cur.mfts.push(s);
        }
    }
    for pi in contents.port_infos {
        let cost = pi.encoded_len() + ENTRY_OVERHEAD;
        if size + cost > budget && size > 0 {
            flush(&mut cur, &mut size, &mut chunks);
        }
        cur.port_infos.push(pi);
        size += cost;
    }
    for b in contents.vl_blocks {
        let cost = b.encoded_len() + ENTRY_OVERHEAD;
        if size + cost > budget && size > 0 {
            flush(&mut cur, &mut size, &mut chunks);
        }
        cur.vl_blocks.push(b);
        size += cost;
    }
    for w in contents.vport_writes {
        let cost = w.encoded_len() + ENTRY_OVERHEAD;
        if size + cost > budget && size > 0 {
            flush(&mut cur, &mut size, &mut chunks);
        }
        cur.vport_writes.push(w);
        size += cost;
    }
    if size > 0 || chunks.is_empty() {
        chunks.push(cur);
    }
    let n = chunks.len() as u32;
    let mut out = Vec::with_capacity(chunks.len() + 1);
    for (seq, c) in chunks.into_iter().enumerate() {
        let kind = if seq == 0 {
            Kind::BeginIntent(BeginIntent {
                id,
                term,
                contents: Some(c),
            })
        } else {
            Kind::IntentChunk(IntentChunk {
                id,
                seq: seq as u32,
                contents: Some(c),
            })
        };
        out.push(Command {
            request_id: 0,
            kind: Some(kind),
        });
    }
    out.push(Command {
        request_id: 0,
        kind: Some(Kind::SealIntent(SealIntent { id, chunks: n })),
    });
    out
}
