//! Virtual-lane tables in a heavy sweep (see `crate::vl`): planned after routing from the
//! QoS configuration and policy, queued in stage 2 after the MFT blocks.

use super::Sweeper;
use crate::vl::{VlTables, want};
use fabric::Guid;

impl Sweeper {
    /// The SLtoVL and VLArb blocks the ports are known to hold: what a replicated state
    /// keeps for a takeover ([`crate::SweeperConfig::known_vl_tables`]).
    pub fn vl_tables(&self) -> &VlTables {
        self.lanes.known()
    }

    /// Replaces the QoS policy (a single replica's SIGHUP; a cluster restarts its master on
    /// the replicated one instead). A text that does not parse is the error and changes
    /// nothing; otherwise a heavy sweep is requested, which writes the VL table blocks the
    /// new policy changes; the answer is the number of the first heavy sweep certain to
    /// program it.
    pub fn set_qos_policy(
        &mut self,
        now: crate::VTime,
        text: Option<String>,
    ) -> Result<u64, crate::SmError> {
        let policy = text.as_deref().map(crate::vl::parse_policy).transpose()?;
        self.cfg.qos_policy = text;
        self.lanes.set_policy(policy);
        let first = self.disc.sweep() + 1;
        self.request_sweep(now, true);
        Ok(first)
    }

    /// The SL per switch pair the routing in force requires (None: free), for the SA.
    pub fn path_sl(&self) -> Option<std::sync::Arc<routing::PathSl>> {
        self.prog.path_sl()
    }

    /// The SL-to-VL tables the routing in force relies on (None: it needs none).
    pub fn routing_sl2vl(&self) -> Option<&routing::EngineSl2Vl> {
        self.prog.engine_sl2vl()
    }

    /// The QoS policy in force (None: none), for the SA's path SLs.
    pub fn qos_policy(&self) -> Option<std::sync::Arc<qos::Policy>> {
        self.lanes.policy_shared()
    }

    /// Plans this sweep's VL table writes (nothing while QoS is off and the routing needs
    /// no VLs of its own).
    pub(super) fn plan_vl_tables(&mut self) {
        let wanted = want::tables(
            &self.disc,
            &self.cfg,
            self.lanes.policy(),
            self.prog.engine_sl2vl(),
        );
        // Nodes whose tables are back to their reset content: a switch whose LFT is not
        // known valid (rebooted, or never programmed), a CA never configured since reset.
        let mut lost: Vec<Guid> = self
            .disc
            .switches()
            .iter()
            .filter(|s| !s.lft_valid)
            .map(|s| self.disc.node(s.node).guid)
            .collect();
        lost.extend(
            self.disc
                .end_ports_seen()
                .filter(|(_, _, n, p)| !n.is_switch && p.fresh)
                .map(|(_, _, n, _)| n.guid),
        );
        self.lanes.plan(&self.disc, wanted, &lost);
    }

    /// Queues the planned VL table Sets.
    pub(super) fn queue_vl_tables(&mut self) {
        for (op, node, port, arg) in self.lanes.queued() {
            self.prog.count_planned();
            self.push(op, node, port, arg);
        }
    }
}
