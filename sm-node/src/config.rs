//! The daemon's configuration: [`deploy::config`] (the TOML file overlaid by flags, checked
//! into a [`NodeConfig`]), and here the one step that touches the daemon's own state: the
//! sweeper's configuration with the guid2lid store opened.

pub use deploy::config::*;

use crate::error::NodeError;
use crate::store::Guid2LidStore;
use sm_core::{MS, SweeperConfig};

/// Light sweep interval standing for "no light sweeps" (about 36 years).
const NEVER: sm_core::VTime = 1 << 60;

/// The sweeper's configuration of a [`NodeConfig`].
pub trait SweeperConfigOf {
    /// The sweeper's configuration, with the partitions policy and the remembered LIDs
    /// loaded, and the guid2lid store to keep them in.
    fn sweeper_config(&self) -> Result<(SweeperConfig, Option<Guid2LidStore>), NodeError>;
}

impl SweeperConfigOf for NodeConfig {
    fn sweeper_config(&self) -> Result<(SweeperConfig, Option<Guid2LidStore>), NodeError> {
        let partitions_conf = match &self.partitions {
            Some(p) => Some(load_partitions(p)?),
            None => None,
        };
        let (store, guid2lid) = match &self.guid2lid {
            Some(p) => {
                let (s, m) = Guid2LidStore::open(p)?;
                (Some(s), m)
            }
            None => (None, sm_core::Guid2Lid::new()),
        };
        let cfg = SweeperConfig {
            sm_priority: self.priority,
            lmc: self.lmc,
            engines: self.engines.clone(),
            updn_roots: self.updn_roots.clone(),
            accept_credit_loops: self.accept_credit_loops,
            routing_shards: if self.workers > 1 {
                self.workers * 2
            } else {
                1
            },
            // sm-core has no "off": an interval of 0 becomes one no run ever reaches.
            sweep_interval: if self.sweep_interval_ms == 0 {
                NEVER
            } else {
                self.sweep_interval_ms * MS
            },
            partitions_conf,
            guid2lid,
            timeout: self.smp_timeout_ms * MS,
            window: self.smp_window,
            max_op_vls: self.max_op_vls,
            qos: self.qos.clone(),
            qos_policy: match &self.qos_policy_file {
                Some(p) => Some(load_qos_policy(p)?),
                None => None,
            },
            partition_options: partitions::Options {
                qos: self.qos.is_some(),
                ..partitions::Options::default()
            },
            ..SweeperConfig::default()
        };
        Ok((cfg, store))
    }
}
