//! Carrying out the core's role commands: attach the master (seeded) or the standby SM at
//! this replica's port, behind the lease fence, as a [`MasterActor`].

use super::{IntentFrom, RaftActor};
use crate::config::SweeperConfigOf as _;
use crate::daemon;
use crate::fence::FencedTransport;
use crate::master::{MasterActor, MasterParts, SetIntentSink, SetSaState};
use actix::prelude::*;
use replica_core::MasterSeed;
use sm_core::Sweeper;
use tokio::sync::mpsc;

impl RaftActor {
    /// Starts master `gen_` from `seed`; tells the core whether it attached.
    pub(super) fn start_master(&mut self, gen_: u64, seed: &MasterSeed, ctx: &mut Context<Self>) {
        // LIDs live in the log; the guid2lid file (read, never written here) only seeds a
        // new cluster's first master (`MasterSeed::configure`).
        let node_cfg = self.node_cfg.clone();
        let built = (|| -> Result<_, crate::NodeError> {
            let (mut scfg, _) = node_cfg.sweeper_config()?;
            seed.configure(&mut scfg);
            // The replicas' SM ports: never queried; the rules are on when given.
            scfg.peer_sms.clone_from(&self.cfg.peer_sm_guids);
            let (attached, _) = daemon::attach(&node_cfg)?;
            // Its own port before discovery reads it: the trap 144 of its own attach (IsSM
            // set) is then known as its own and asks for no sweep.
            scfg.sm_port_guid = Some(attached.transport.port_guid());
            let sweeper = Sweeper::new(scfg)?;
            Ok((sweeper, attached))
        })();
        let now = self.now();
        let (sweeper, mut attached) = match built {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!("E_NODE_MASTER: cannot start the master (retrying): {e}");
                return self.core.attach_failed(now, gen_);
            }
        };
        let port = attached.transport.port_guid();
        attached.transport = Box::new(FencedTransport::new(
            attached.transport,
            self.lease.clone(),
            self.fence_dropped.clone(),
        ));
        let (itx, mut irx) = mpsc::unbounded_channel::<sm_core::IntentEvent>();
        ctx.add_stream(futures_util::stream::poll_fn(move |cx| {
            irx.poll_recv(cx).map(|o| o.map(|m| IntentFrom(gen_, m)))
        }));
        let mut observers = self.observers.clone();
        observers.push(self.watch(gen_, ctx));
        let addr = MasterActor::new(MasterParts {
            sweeper,
            attached,
            pool: self.pool.clone(),
            store: None,
            observers,
            perf: Some(self.node_cfg.perf.clone()),
        })
        .start();
        addr.do_send(SetIntentSink {
            intents: itx,
            lease: self.lease.clone(),
        });
        // The SA answers from the replicated SA state; its changes are proposed here.
        addr.do_send(SetSaState {
            state: seed.sa_state.clone(),
            proposer: ctx.address().recipient(),
        });
        self.roles.insert(gen_, addr);
        self.role_versions.insert(gen_, seed.versions);
        self.core.master_started(now, gen_, port);
    }

    /// Attaches standby `gen_` (SMInfo STANDBY, sends nothing else).
    pub(super) fn start_standby(&mut self, gen_: u64, ctx: &mut Context<Self>) {
        let node_cfg = self.node_cfg.clone();
        let built = (|| -> Result<_, crate::NodeError> {
            let (mut scfg, _) = node_cfg.sweeper_config()?;
            let (attached, _) = daemon::attach(&node_cfg)?;
            replica_core::start::configure_standby(&mut scfg, attached.transport.port_guid());
            Ok((Sweeper::new(scfg)?, attached))
        })();
        let (sweeper, mut attached) = match built {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!("E_NODE_STANDBY: cannot attach the standby SM (retrying): {e}");
                let now = self.now();
                return self.core.attach_failed(now, gen_);
            }
        };
        attached.transport = Box::new(FencedTransport::new(
            attached.transport,
            self.lease.clone(),
            self.fence_dropped.clone(),
        ));
        let tx = self.watch(gen_, ctx);
        let addr = MasterActor::new(MasterParts {
            sweeper,
            attached,
            pool: self.pool.clone(),
            store: None,
            observers: vec![tx],
            perf: None,
        })
        .start();
        self.roles.insert(gen_, addr);
    }
}
