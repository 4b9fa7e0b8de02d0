//! The SA as a master serves it on the SM's port: [`SaServer`] wraps the [`SaEngine`] for
//! the daemon. It answers GMPs (class 0x03) that reach the SM's port, sends table answers
//! larger than one MAD through RMPP, takes each new [`FabricView`] (reporting end ports that
//! came or went as Notice 64/65), and turns database changes (joins, leaves, services,
//! subscriptions) into [`SaAction::Propose`]: in a cluster the master proposes the whole SA
//! state to Raft and sends the held answers once it is committed; alone, it sends them at
//! once. A new master loads the replicated SA state first ([`SaServer::load`]).
//!
//! Trust: a request carrying the SM_Key given to [`SaServer::new`] is trusted (OpenSM's
//! default key 1 when none is configured), as `saquery --smkey` expects.
//!
//! Plain data in, values out: the daemon builds the view and hands in the partition policy
//! ([`policy_of`] parses the text as the SM's configuration holds it); what is worth logging
//! comes back as [`LogLine`]s ([`SaServer::take_log`]), which the daemon writes to its log.

use crate::{FabricView, Reply, Request, RmppConfig, RmppSender, SaConfig, SaEngine};
use crate::{SenderState, VTime};
use fabric::{Guid, Lid};
use mad::sa::SaMad;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// QP the SA's answers go to when the request came from QP1.
const GSI_QPN: u32 = 1;

/// A GMP that reached the SM's port.
#[derive(Clone, Debug)]
pub struct Gmp {
    /// LRH source LID.
    pub slid: Lid,
    /// Source QP (where the answer goes; 0 reads as the GSI, QP1).
    pub src_qpn: u32,
    /// The MAD.
    pub mad: [u8; 256],
}

/// What the daemon must do for the SA.
#[derive(Debug)]
pub enum SaAction {
    /// Send a GMP.
    Send {
        /// Destination LID.
        dlid: Lid,
        /// Destination QP.
        dqpn: u32,
        /// The MAD.
        mad: [u8; 256],
        /// Bytes of it to send (56 + records for a one-MAD table).
        len: usize,
    },
    /// Commit this SA state, then send `replies` (or drop them if it is refused).
    Propose {
        /// The whole SA state after the change.
        state: proto::state::SaState,
        /// The answers held until commit.
        replies: Vec<(Reply, u32)>,
    },
}

/// How much a [`LogLine`] matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// Detail (an undecodable GMP, an RMPP transfer that ended early).
    Debug,
    /// Worth an operator's eye (ports in or out of service).
    Info,
    /// Something was lost (a replicated state that did not load).
    Error,
}

/// One line for the daemon's log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogLine {
    /// Its level.
    pub level: Level,
    /// The text (with its `SA-Wnnn` / `SA-Ennn` code when it has one).
    pub text: String,
}

/// The SA server of one master.
pub struct SaServer {
    engine: SaEngine,
    senders: Vec<(RmppSender, Lid, u32)>,
    rmpp: RmppConfig,
    /// The peer does no RMPP (ibsim's umad2sim): a table goes out as its first segment and
    /// is never resent, since stale resends would reach the next client of that port.
    first_segment_only: bool,
    log: Vec<LogLine>,
    /// Requests answered (for logs and benches).
    pub answered: u64,
    /// The last replicated state given to [`SaServer::load`] did not load: the clients'
    /// registrations are lost (the daemon has their ports reregister).
    pub state_lost: bool,
}

fn trust_key(sm_key: u64) -> u64 {
    if sm_key == 0 { 1 } else { sm_key }
}

/// The partition policy of an SM configuration: `text` is its partitions file (None: no
/// file, OpenSM's default policy); a text that does not parse gives None.
pub fn policy_of(text: Option<&str>, options: partitions::Options) -> Option<partitions::Policy> {
    match text {
        None => Some(partitions::Policy::no_file(options)),
        Some(text) => {
            let file = partitions::parse(text).ok()?;
            Some(partitions::Policy::from_file(&file, options).0)
        }
    }
}

/// The name of each partition of `policy` (by the low 15 bits of its key).
pub fn partition_names(policy: Option<&partitions::Policy>) -> HashMap<u16, String> {
    policy
        .map(|p| {
            p.partitions
                .iter()
                .map(|x| (x.pkey, x.name.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// The SL of each partition of `policy` (by the low 15 bits of its key), as the view takes it.
pub fn partition_sl(policy: Option<&partitions::Policy>) -> HashMap<u16, u8> {
    policy
        .map(|p| p.partitions.iter().map(|x| (x.pkey, x.sl)).collect())
        .unwrap_or_default()
}

impl SaServer {
    /// An SA trusting `sm_key` (0: OpenSM's default key 1) with the IPoIB broadcast groups of
    /// `policy`; `first_segment_only` when the peer does no RMPP (ibsim's umad2sim).
    pub fn new(
        sm_key: u64,
        policy: Option<&partitions::Policy>,
        first_segment_only: bool,
    ) -> SaServer {
        let cfg = SaConfig {
            sm_key: trust_key(sm_key),
            ..SaConfig::default()
        };
        let mut engine = SaEngine::new(cfg);
        if let Some(p) = policy {
            engine.set_policy_groups(crate::policy_groups(p));
        }
        SaServer {
            engine,
            senders: Vec::new(),
            rmpp: RmppConfig {
                timeout: 200_000_000,
                max_retries: 3,
                window: 16,
            },
            first_segment_only,
            log: Vec::new(),
            answered: 0,
            state_lost: false,
        }
    }

    /// The engine (tests, admin reads).
    pub fn engine(&self) -> &SaEngine {
        &self.engine
    }

    /// True when `mad` (a received GMP) asks for MulticastForwardingTableRecords: the
    /// caller hands in the MFT blocks as they are now ([`SaServer::set_mfts`]) first.
    pub fn asks_for_mfts(mad: &[u8]) -> bool {
        mad::MadHeader::decode(mad)
            .is_ok_and(|h| h.attr_id == mad::AttributeId::SA_MFT_RECORD && !h.method.is_response())
    }

    /// Takes the MFT blocks the switches now hold, by switch GUID.
    pub fn set_mfts(&mut self, mfts: &std::collections::HashMap<fabric::Guid, crate::MftBlocks>) {
        self.engine.set_mfts(mfts);
    }

    /// The lines to log since the last call, in order.
    pub fn take_log(&mut self) -> Vec<LogLine> {
        std::mem::take(&mut self.log)
    }

    fn note(&mut self, level: Level, text: String) {
        self.log.push(LogLine { level, text });
    }

    /// Loads the replicated SA state (a new master), then makes sure the groups of `policy`
    /// (the one in force) exist. Returns a proposal when that created groups.
    pub fn load(
        &mut self,
        state: &proto::state::SaState,
        policy: Option<&partitions::Policy>,
    ) -> Option<SaAction> {
        let loaded = self.engine.load(state);
        self.state_lost = loaded.is_err();
        if let Err(e) = loaded {
            self.note(
                Level::Error,
                format!("{e}; the SA starts from an empty database"),
            );
        }
        self.reload_policy(policy)
    }

    /// Takes the partition policy now in force (a reload): the IPoIB broadcast groups of its
    /// `ipoib` partitions are created where missing. Returns a proposal when that created or
    /// adopted groups. Groups of partitions the new policy no longer has, and the parameters
    /// (MTU, rate, Q_Key...) of groups that already exist, stay as they are.
    pub fn reload_policy(&mut self, policy: Option<&partitions::Policy>) -> Option<SaAction> {
        let groups = policy.map(crate::policy_groups).unwrap_or_default();
        self.engine
            .set_policy_groups(groups)
            .then(|| SaAction::Propose {
                state: self.engine.state(),
                replies: Vec::new(),
            })
    }

    /// The database as proposed last (what to commit at start).
    pub fn state(&self) -> proto::state::SaState {
        self.engine.state()
    }

    /// Takes a new fabric view (after a heavy sweep). End ports that appeared or went away
    /// since the last view become Notice 64/65 Reports to the subscribers (none on the first
    /// view: a new master does not know what changed).
    pub fn refresh(&mut self, v: FabricView) -> Vec<SaAction> {
        // Ordered maps: the Reports go out in GUID order, the same on every run.
        let ends = |v: &FabricView| -> BTreeMap<Guid, Lid> {
            v.end_ports().map(|(_, p)| (p.guid, p.lid)).collect()
        };
        let old = ends(self.engine.view());
        let new = ends(&v);
        self.engine.set_view(Arc::new(v));
        if old.is_empty() {
            return Vec::new();
        }
        let came: Vec<Guid> = new
            .keys()
            .filter(|g| !old.contains_key(g))
            .copied()
            .collect();
        let went: Vec<(Guid, Lid)> = old
            .iter()
            .filter(|(g, _)| !new.contains_key(g))
            .map(|(g, l)| (*g, *l))
            .collect();
        if came.is_empty() && went.is_empty() {
            return Vec::new();
        }
        self.note(
            Level::Info,
            format!(
                "SA: {} ports in service, {} out of service: Notice 64/65 to subscribers",
                came.len(),
                went.len()
            ),
        );
        self.engine
            .port_changes(&came, &went)
            .into_iter()
            .map(|o| SaAction::Send {
                dlid: o.dlid,
                dqpn: o.dqpn,
                mad: o.mad.encode(),
                len: 256,
            })
            .collect()
    }

    /// The multicast groups to forward: (MLID, member port GUIDs).
    pub fn forwarding_groups(&self) -> Vec<(Lid, Vec<Guid>)> {
        self.engine.forwarding_groups()
    }

    /// The alias GUIDs clients set (see [`SaEngine::aliases`]).
    pub fn aliases(&self) -> &crate::AliasTable {
        self.engine.aliases()
    }

    /// Answers a batch of GMPs at daemon time `now` (ns) and wall time `now_ms` (leases).
    pub fn handle(
        &mut self,
        now: VTime,
        now_ms: u64,
        batch: impl IntoIterator<Item = Gmp>,
    ) -> Vec<SaAction> {
        let mut out = Vec::new();
        let mut held: Vec<(Reply, u32)> = Vec::new();
        // Services whose lease ended leave the replicated state with the first batch after
        // (queries never list them): the purge is proposed like any change.
        let purged = self.engine.expire(now_ms);
        for g in batch {
            let m = match SaMad::decode(&g.mad) {
                Ok(m) => m,
                Err(e) => {
                    let text = format!("SA-W001 undecodable GMP from LID {}: {e}", g.slid.0);
                    self.note(Level::Debug, text);
                    continue;
                }
            };
            if m.header.mad.method.is_response() || m.header.rmpp.is_active() {
                // ACKs of our RMPP transfers (and ReportResp).
                let tid = m.header.mad.tid as u32;
                for (s, dlid, _) in &mut self.senders {
                    if s.tid() as u32 == tid && *dlid == g.slid {
                        s.handle(now, &m);
                    }
                }
                continue;
            }
            let qpn = if g.src_qpn == 0 { GSI_QPN } else { g.src_qpn };
            let h = self.engine.handle(
                now_ms,
                &Request {
                    slid: g.slid,
                    mad: m,
                },
            );
            self.answered += 1;
            let Some(reply) = h.reply else { continue };
            if h.changed {
                held.push((reply, qpn));
            } else {
                self.reply(now, reply, qpn, &mut out);
            }
        }
        if !held.is_empty() || purged {
            out.push(SaAction::Propose {
                state: self.engine.state(),
                replies: held,
            });
        }
        self.pump(now, &mut out);
        out
    }

    /// Sends an answer: one MAD, or an RMPP transfer.
    pub fn reply(&mut self, now: VTime, reply: Reply, qpn: u32, out: &mut Vec<SaAction>) {
        match reply.single() {
            Some(m) => out.push(SaAction::Send {
                dlid: reply.dlid,
                dqpn: qpn,
                mad: m.encode(),
                len: reply
                    .table
                    .as_ref()
                    .map_or(256, |t| mad::sa::SA_HEADER_LEN + t.len()),
            }),
            None => {
                let s = RmppSender::new(
                    reply.mad.clone(),
                    reply.table.unwrap_or_default(),
                    self.rmpp,
                );
                self.senders.push((s, reply.dlid, qpn));
                self.pump(now, out);
            }
        }
    }

    /// Segments due now; runs RMPP timers; forgets finished transfers.
    pub fn pump(&mut self, now: VTime, out: &mut Vec<SaAction>) {
        for (s, dlid, qpn) in &mut self.senders {
            if matches!(s.poll_timeout(), Some(t) if t <= now) {
                s.handle_timeout(now);
            }
            while let Some(m) = s.poll_transmit(now) {
                out.push(SaAction::Send {
                    dlid: *dlid,
                    dqpn: *qpn,
                    mad: m.encode(),
                    len: 256,
                });
            }
        }
        if self.first_segment_only {
            self.senders.clear();
        }
        let log = &mut self.log;
        self.senders.retain(|(s, _, _)| {
            if let SenderState::Aborted(st) = s.state() {
                log.push(LogLine {
                    level: Level::Debug,
                    text: format!("SA-W002 RMPP transfer {:#x} ended: status {st}", s.tid()),
                });
            }
            s.state() == SenderState::Sending
        });
    }

    /// When the RMPP timers next want [`SaServer::pump`].
    pub fn next_timer(&self) -> Option<VTime> {
        self.senders
            .iter()
            .filter_map(|(s, _, _)| s.poll_timeout())
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkeys(sa: &SaServer) -> Vec<u32> {
        let mut v: Vec<u32> = sa.state().groups.iter().map(|g| g.pkey & 0x7fff).collect();
        v.sort_unstable();
        v
    }

    fn policy(text: &str) -> Option<partitions::Policy> {
        policy_of(Some(text), partitions::Options::default())
    }

    #[test]
    fn a_new_policy_brings_its_ipoib_groups_and_keeps_the_old_ones() {
        let p = policy("Default=0x7fff, ipoib : ALL=full ;\n");
        let mut sa = SaServer::new(0, p.as_ref(), false);
        assert_eq!(pkeys(&sa), vec![0x7fff]);
        assert!(sa.reload_policy(p.as_ref()).is_none());
        let p2 = policy("Default=0x7fff, ipoib : ALL=full ;\nT=0x0005, ipoib : ALL=full ;\n");
        let Some(SaAction::Propose { state, replies }) = sa.reload_policy(p2.as_ref()) else {
            panic!("the new ipoib partition created no group");
        };
        assert!(replies.is_empty() && state.groups.len() == 2);
        // A text that does not parse is no policy; the groups stay.
        assert!(policy("T=0xZZ : ALL ;\n").is_none());
        assert!(sa.reload_policy(None).is_none());
        assert_eq!(pkeys(&sa), vec![0x0005, 0x7fff]);
        assert_eq!(partition_sl(p2.as_ref()).len(), 2);
    }

    #[test]
    fn undecodable_gmps_and_bad_state_are_logged_not_answered() {
        let mut sa = SaServer::new(7, None, false);
        let out = sa.handle(
            0,
            0,
            [Gmp {
                slid: Lid(3),
                src_qpn: 1,
                mad: [0xff; 256],
            }],
        );
        assert!(out.is_empty() && sa.answered == 0);
        let bad = proto::state::SaState {
            groups: vec![proto::state::McGroup::default()],
            ..Default::default()
        };
        assert!(sa.load(&bad, None).is_none());
        assert!(sa.state_lost);
        let log = sa.take_log();
        assert_eq!(log.len(), 2, "{log:?}");
        assert_eq!(log[0].level, Level::Debug);
        assert!(
            log[0]
                .text
                .starts_with("SA-W001 undecodable GMP from LID 3: ")
        );
        assert_eq!(log[1].level, Level::Error);
        assert!(
            log[1]
                .text
                .ends_with("; the SA starts from an empty database")
        );
        assert!(sa.take_log().is_empty());
    }

    #[test]
    fn an_ended_lease_is_purged_through_a_proposal() {
        let mut sa = SaServer::new(7, None, false);
        let rec = mad::sa::ServiceRecord {
            id: 0x10,
            lease: 5,
            ..Default::default()
        };
        let state = |expires_ms| proto::state::SaState {
            services: vec![proto::state::ServiceRecord {
                service_data: mad::sa::SaRecord::to_bytes(&rec),
                expires_ms,
                ..Default::default()
            }],
            ..Default::default()
        };
        assert!(sa.load(&state(5_000), None).is_none());
        assert!(!sa.state_lost);
        // Before the lease ends: nothing to propose.
        assert!(sa.handle(0, 4_999, []).is_empty());
        assert_eq!(sa.state().services.len(), 1);
        // After: the purge is proposed, with no answer held; once only.
        let out = sa.handle(0, 5_000, []);
        let [SaAction::Propose { state: st, replies }] = out.as_slice() else {
            panic!("no proposal: {out:?}");
        };
        assert!(st.services.is_empty() && replies.is_empty());
        assert!(sa.handle(0, 6_000, []).is_empty());
        // An infinite lease (0 in the state) is never purged.
        assert!(sa.load(&state(0), None).is_none());
        assert!(sa.handle(0, u64::MAX, []).is_empty());
        assert_eq!(sa.state().services.len(), 1);
    }
}
