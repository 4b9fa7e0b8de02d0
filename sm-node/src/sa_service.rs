//! The SA on the master: [`SaService`] hands the `sa` crate's [`SaServer`] what it needs
//! from the [`crate::master::MasterActor`]'s sweeper (its SM_Key, the partition policy in
//! force, the fabric view after each heavy sweep, built by [`crate::sa_view`]), the GMPs the
//! transport received, and writes the server's log lines to the daemon's log. What to send
//! and what to propose are the server's [`SaAction`]s; see `sa::server` for the rules.
//!
//! Trust: a request carrying the SweeperConfig's SM_Key is trusted (OpenSM's default key 1
//! when none is configured), as `saquery --smkey` expects.

use crate::transport::InboundGmp;
use fabric::Guid;
pub use sa::SaAction;
use sa::server::{Gmp, Level};
use sa::{Reply, SaEngine, SaServer};
use sm_core::{Sweeper, VTime};
use std::collections::HashMap;

/// Link-local subnet prefix (what the sweeper programs).
const SUBNET_PREFIX: u64 = 0xfe80_0000_0000_0000;

/// The SA service of one master.
pub struct SaService {
    server: SaServer,
    sm_port: Guid,
}

impl SaService {
    /// An SA for the SM at `sm_port`, with the key and partition policy of `sweeper`'s
    /// configuration.
    pub fn new(sweeper: &Sweeper, sm_port: Guid) -> SaService {
        // ibsim's umad2sim does no RMPP: tables go out as their first segment.
        let umad2sim = std::env::var("LD_PRELOAD").is_ok_and(|v| v.contains("umad2sim"));
        let policy = policy_of(sweeper);
        let server = SaServer::new(sweeper.config().sm_key, policy.as_ref(), umad2sim);
        SaService { server, sm_port }
    }

    /// The engine (tests, admin reads).
    pub fn engine(&self) -> &SaEngine {
        self.server.engine()
    }

    /// Requests answered (for logs and benches).
    pub fn answered(&self) -> u64 {
        self.server.answered
    }

    /// Writes what the server had to say to the log.
    fn log(&mut self) {
        for l in self.server.take_log() {
            match l.level {
                Level::Debug => tracing::debug!("{}", l.text),
                Level::Info => tracing::info!("{}", l.text),
                Level::Error => tracing::error!("{}", l.text),
            }
        }
    }

    /// Loads the replicated SA state (a new master), then makes sure the policy's groups
    /// exist. Returns a proposal when that created groups. A state that does not load
    /// has every client port reregister (`Sweeper::reregister_clients`).
    pub fn load(
        &mut self,
        state: &proto::state::SaState,
        sweeper: &mut Sweeper,
        now: VTime,
    ) -> Option<SaAction> {
        let a = self.server.load(state, policy_of(sweeper).as_ref());
        if self.server.state_lost {
            sweeper.reregister_clients(now);
        }
        self.log();
        a
    }

    /// Takes the partition policy now in force in `sweeper` (a reload, see
    /// [`crate::master::ReloadPolicy`]): the IPoIB broadcast groups of its `ipoib`
    /// partitions are created where missing. Returns a proposal when that created or
    /// adopted groups (see [`SaServer::reload_policy`]).
    pub fn reload_policy(&mut self, sweeper: &Sweeper) -> Option<SaAction> {
        self.server.reload_policy(policy_of(sweeper).as_ref())
    }

    /// The database as proposed last (what to commit at start).
    pub fn state(&self) -> proto::state::SaState {
        self.server.state()
    }

    /// Rebuilds the fabric view from the sweeper (after a heavy sweep). End ports that
    /// appeared or went away since the last view become Notice 64/65 Reports to the
    /// subscribers (none on the first view: a new master does not know what changed).
    pub fn refresh(&mut self, sweeper: &Sweeper) -> Vec<SaAction> {
        let policy = policy_of(sweeper);
        let sl = sa::server::partition_sl(policy.as_ref());
        let mut v = crate::sa_view::view_from_sweeper(
            sweeper,
            self.sm_port,
            SUBNET_PREFIX,
            sl,
            HashMap::new(),
        );
        v.qos_policy = sweeper.qos_policy();
        v.path_sl = sweeper.path_sl();
        v.partition_names = sa::server::partition_names(policy.as_ref());
        let out = self.server.refresh(v);
        self.log();
        out
    }

    /// The multicast groups as sm-core's MFT programming takes them.
    pub fn mcast_groups(&self) -> Vec<sm_core::McastGroup> {
        self.server
            .forwarding_groups()
            .into_iter()
            .map(|(mlid, members)| sm_core::McastGroup { mlid, members })
            .collect()
    }

    /// The alias GUIDs clients set, for the ports' GUIDInfo.
    pub fn aliases(&self) -> &sa::AliasTable {
        self.server.aliases()
    }

    /// Answers a batch of GMPs at daemon time `now` (ns) and wall time `now_ms` (leases);
    /// MFTRecords from the blocks `sweeper` holds now.
    pub fn handle(
        &mut self,
        sweeper: &Sweeper,
        now: VTime,
        now_ms: u64,
        batch: Vec<InboundGmp>,
    ) -> Vec<SaAction> {
        if batch.iter().any(|g| SaServer::asks_for_mfts(&g.mad)) {
            let mfts = sweeper.mft_tables().iter().map(|(g, t)| (*g, t.clone()));
            self.server.set_mfts(&mfts.collect());
        }
        let gmps = batch.into_iter().map(|g| Gmp {
            slid: g.slid,
            src_qpn: g.src_qpn,
            mad: g.mad,
        });
        let out = self.server.handle(now, now_ms, gmps);
        self.log();
        out
    }

    /// Sends an answer: one MAD, or an RMPP transfer.
    pub fn reply(&mut self, now: VTime, reply: Reply, qpn: u32, out: &mut Vec<SaAction>) {
        self.server.reply(now, reply, qpn, out);
        self.log();
    }

    /// Segments due now; runs RMPP timers; forgets finished transfers.
    pub fn pump(&mut self, now: VTime, out: &mut Vec<SaAction>) {
        self.server.pump(now, out);
        self.log();
    }

    /// When the RMPP timers next want [`SaService::pump`].
    pub fn next_timer(&self) -> Option<VTime> {
        self.server.next_timer()
    }
}

/// The partition policy of the sweeper's configuration.
fn policy_of(sweeper: &Sweeper) -> Option<partitions::Policy> {
    let cfg = sweeper.config();
    sa::server::policy_of(cfg.partitions_conf.as_deref(), cfg.partition_options)
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
