//! The SA on the master: [`SaService`] wraps the `sa` crate's engine for the
//! [`crate::master::MasterActor`]. It answers GMPs (class 0x03) that reach the SM's port,
//! sends table answers larger than one MAD through RMPP, keeps its fabric view in step with
//! the sweeper's discoveries, and turns database changes (joins, leaves, services,
//! subscriptions) into [`SaAction::Propose`]: in a cluster the master proposes the whole
//! SA state to Raft and sends the held answers once it is committed; alone, it sends them
//! at once. A new master loads the replicated SA state first ([`SaService::load`]).
//!
//! Trust: a request carrying the SweeperConfig's SM_Key is trusted (OpenSM's default key 1
//! when none is configured), as `saquery --smkey` expects.

use crate::transport::InboundGmp;
use fabric::{Guid, Lid};
use mad::sa::SaMad;
use sa::{Reply, Request, RmppConfig, RmppSender, SaConfig, SaEngine, SenderState};
use sm_core::{Sweeper, VTime};
use std::collections::HashMap;
use std::sync::Arc;

/// Link-local subnet prefix (what the sweeper programs).
const SUBNET_PREFIX: u64 = 0xfe80_0000_0000_0000;
/// QP the SA's answers go to when the request came from QP1.
const GSI_QPN: u32 = 1;

/// What the master must do for the SA.
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

/// The SA service of one master.
pub struct SaService {
    engine: SaEngine,
    sm_port: Guid,
    senders: Vec<(RmppSender, Lid, u32)>,
    rmpp: RmppConfig,
    /// The peer does no RMPP (ibsim's umad2sim): a table goes out as its first segment and
    /// is never resent, since stale resends would reach the next client of that port.
    first_segment_only: bool,
    /// Requests answered (for logs and benches).
    pub answered: u64,
}

fn trust_key(sm_key: u64) -> u64 {
    if sm_key == 0 { 1 } else { sm_key }
}

impl SaService {
    /// An SA for the SM at `sm_port`, with the key and partition policy of `sweeper`'s
    /// configuration.
    pub fn new(sweeper: &Sweeper, sm_port: Guid) -> SaService {
        let cfg = SaConfig {
            sm_key: trust_key(sweeper.config().sm_key),
            ..SaConfig::default()
        };
        let mut engine = SaEngine::new(cfg);
        if let Some(p) = policy_of(sweeper) {
            engine.set_policy_groups(sa::policy_groups(&p));
        }
        SaService {
            engine,
            sm_port,
            senders: Vec::new(),
            rmpp: RmppConfig {
                timeout: 200_000_000,
                max_retries: 3,
                window: 16,
            },
            answered: 0,
            first_segment_only: std::env::var("LD_PRELOAD").is_ok_and(|v| v.contains("umad2sim")),
        }
    }

    /// The engine (tests, admin reads).
    pub fn engine(&self) -> &SaEngine {
        &self.engine
    }

    /// Loads the replicated SA state (a new master), then makes sure the policy's groups
    /// exist. Returns a proposal when that created groups.
    pub fn load(&mut self, state: &proto::state::SaState, sweeper: &Sweeper) -> Option<SaAction> {
        if let Err(e) = self.engine.load(state) {
            tracing::error!("{e}; the SA starts from an empty database");
        }
        self.reload_policy(sweeper)
    }

    /// Takes the partition policy now in force in `sweeper` (a reload, see
    /// [`crate::master::ReloadPolicy`]): the IPoIB broadcast groups of its `ipoib`
    /// partitions are created where missing. Returns a proposal when that created or
    /// adopted groups. Groups of partitions the new policy no longer has, and the
    /// parameters (MTU, rate, Q_Key...) of groups that already exist, stay as they are.
    pub fn reload_policy(&mut self, sweeper: &Sweeper) -> Option<SaAction> {
        let groups = policy_of(sweeper)
            .map(|p| sa::policy_groups(&p))
            .unwrap_or_default();
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

    /// Rebuilds the fabric view from the sweeper (after a heavy sweep). End ports that
    /// appeared or went away since the last view become Notice 64/65 Reports to the
    /// subscribers (none on the first view: a new master does not know what changed).
    pub fn refresh(&mut self, sweeper: &Sweeper) -> Vec<SaAction> {
        let sl: HashMap<u16, u8> = policy_of(sweeper)
            .map(|p| p.partitions.iter().map(|x| (x.pkey, x.sl)).collect())
            .unwrap_or_default();
        let v = crate::sa_view::view_from_sweeper(
            sweeper,
            self.sm_port,
            SUBNET_PREFIX,
            sl,
            HashMap::new(),
        );
        let ends = |v: &sa::FabricView| -> HashMap<Guid, Lid> {
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
        tracing::info!(
            "SA: {} ports in service, {} out of service: Notice 64/65 to subscribers",
            came.len(),
            went.len()
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

    /// The multicast groups as sm-core's MFT programming takes them.
    pub fn mcast_groups(&self) -> Vec<sm_core::McastGroup> {
        self.engine
            .forwarding_groups()
            .into_iter()
            .map(|(mlid, members)| sm_core::McastGroup { mlid, members })
            .collect()
    }

    /// Answers a batch of GMPs at daemon time `now` (ns) and wall time `now_ms` (leases).
    pub fn handle(&mut self, now: VTime, now_ms: u64, batch: Vec<InboundGmp>) -> Vec<SaAction> {
        let mut out = Vec::new();
        let mut held: Vec<(Reply, u32)> = Vec::new();
        for g in batch {
            let m = match SaMad::decode(&g.mad) {
                Ok(m) => m,
                Err(e) => {
                    tracing::debug!("SA-W001 undecodable GMP from LID {}: {e}", g.slid.0);
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
        if !held.is_empty() {
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
        self.senders.retain(|(s, _, _)| {
            if let SenderState::Aborted(st) = s.state() {
                tracing::debug!("SA-W002 RMPP transfer {:#x} ended: status {st}", s.tid());
            }
            s.state() == SenderState::Sending
        });
    }

    /// When the RMPP timers next want [`SaService::pump`].
    pub fn next_timer(&self) -> Option<VTime> {
        self.senders
            .iter()
            .filter_map(|(s, _, _)| s.poll_timeout())
            .min()
    }
}

/// The partition policy of the sweeper's configuration.
fn policy_of(sweeper: &Sweeper) -> Option<partitions::Policy> {
    let cfg = sweeper.config();
    match &cfg.partitions_conf {
        None => Some(partitions::Policy::no_file(cfg.partition_options)),
        Some(text) => {
            let file = partitions::parse(text).ok()?;
            Some(partitions::Policy::from_file(&file, cfg.partition_options).0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkeys(sa: &SaService) -> Vec<u32> {
        let mut v: Vec<u32> = sa.state().groups.iter().map(|g| g.pkey & 0x7fff).collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn a_reloaded_policy_brings_its_ipoib_groups() {
        let cfg = sm_core::SweeperConfig {
            partitions_conf: Some("Default=0x7fff, ipoib : ALL=full ;\n".into()),
            ..sm_core::SweeperConfig::default()
        };
        let mut sw = Sweeper::new(cfg).unwrap();
        let mut sa = SaService::new(&sw, Guid(1));
        assert_eq!(pkeys(&sa), vec![0x7fff]);
        // Unchanged policy: nothing to propose.
        assert!(sa.reload_policy(&sw).is_none());
        sw.set_policy(
            0,
            Some("Default=0x7fff, ipoib : ALL=full ;\nT=0x0005, ipoib : ALL=full ;\n".into()),
        )
        .unwrap();
        let Some(SaAction::Propose { state, replies }) = sa.reload_policy(&sw) else {
            panic!("the new ipoib partition created no group");
        };
        assert!(replies.is_empty());
        assert_eq!(state.groups.len(), 2);
        assert_eq!(pkeys(&sa), vec![0x0005, 0x7fff]);
        // A refused text changes neither the sweeper's policy nor the SA's groups.
        assert!(sw.set_policy(0, Some("T=0xZZ : ALL ;\n".into())).is_err());
        assert!(sa.reload_policy(&sw).is_none());
        assert_eq!(pkeys(&sa), vec![0x0005, 0x7fff]);
    }
}
