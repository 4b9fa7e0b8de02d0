//! After the faults: heal everything, let the cluster converge (bounded), then check that
//! the fabric is what the replicated state says and what the policy wants.
//!
//! * every CA port ACTIVE;
//! * delivery between every pair of CA ports, in every partition of the policy in force,
//!   exactly as the policy says (both members and at least one full member);
//! * SM state equals fabric state: CA LIDs, switch LFTs and CA P_Key tables as recorded in
//!   the leader's replicated state;
//! * every replica caught up with an identical state; every acknowledged policy version
//!   present in the history in force.

use super::check::Violation;
use super::world::{MS, World};
use fabric::PortState;
use sm_core::{Phase, VTime};

/// Virtual time the cluster gets to converge after the faults end.
pub const SETTLE_BOUND: VTime = 60_000 * MS;

impl World {
    /// Heals every fault, waits for convergence and runs the final checks.
    pub fn settle(&mut self) -> Result<(), Violation> {
        let at = self.now;
        self.heal_all().map_err(|e| Violation {
            at,
            what: format!("INV-SETTLE healing failed: {e}"),
        })?;
        // Links and rebooted switches come back; give traps and light sweeps time.
        let start = self.now.max(self.fabric_busy_until);
        self.run_until(start + 1_000 * MS)?;
        let end = start + SETTLE_BOUND;
        let mut last = String::from("no leader with a serving master");
        while self.now < end {
            // A replica that exited meanwhile (a graceful stop ending late) is started again,
            // and replicas removed from the voters are added back.
            if self.nodes.iter().any(|n| !n.is_up()) {
                let at = self.now;
                self.act(&super::Action::RestartAll)
                    .map_err(|e| Violation {
                        at,
                        what: format!("INV-SETTLE restart failed: {e}"),
                    })?;
            }
            self.add_back_voters();
            if self.converged() {
                match self.final_checks() {
                    Ok(()) => {
                        self.stats.settle_ns = self.now - start;
                        return Ok(());
                    }
                    Err(e) => last = e,
                }
            }
            let t = self.now + 100 * MS;
            self.run_until(t)?;
        }
        Err(Violation {
            at: self.now,
            what: format!("INV-SETTLE no convergence within 60 s after the faults: {last}"),
        })
    }

    /// A leader serving as master, idle, subnet up, nothing pending, every replica applied
    /// as far as the leader.
    fn converged(&mut self) -> bool {
        let Some(l) = self.leader() else {
            return false;
        };
        let leader = &self.nodes[(l - 1) as usize];
        let Some(m) = &leader.master else {
            return false;
        };
        if !m.sw.is_subnet_up()
            || m.sw.phase() != Phase::Idle
            || leader.state().pending_intent().is_some()
            || leader.state().open_intent().is_some()
        {
            return false;
        }
        let applied = leader.state().applied_index();
        applied >= leader.last_index()
            && self
                .nodes
                .iter()
                .all(|n| n.is_up() && n.state().applied_index() == applied)
    }

    fn final_checks(&mut self) -> Result<(), String> {
        self.checker.checks += 1;
        let l = self.leader().ok_or("no leader")?;
        let st = self.nodes[(l - 1) as usize].state().clone();
        // Replicas identical.
        let bytes = st.snapshot_bytes();
        for n in &self.nodes {
            if n.state().snapshot_bytes() != bytes {
                return Err(format!(
                    "INV-REPLICAS replica {} state differs from the leader's at index {}",
                    n.id,
                    st.applied_index()
                ));
            }
        }
        // Acknowledged versions.
        for (index, version, text) in &self.checker.acked {
            if st.policy().version < *version {
                return Err(format!(
                    "INV-ACKED policy version {version} (index {index}) acknowledged, {} in force",
                    st.policy().version
                ));
            }
            if let Some(p) = st.policy_history().find(|p| p.version == *version)
                && p.text != *text
            {
                return Err(format!(
                    "INV-ACKED policy version {version} holds another text than acknowledged"
                ));
            }
        }
        // CA ports ACTIVE, LIDs as recorded, P_Key tables as recorded.
        let mut lids = Vec::new();
        for &(n, p, g) in &self.cas {
            let state = self.fab.port_state(n, p).map_err(|e| e.to_string())?;
            if state != PortState::Active {
                return Err(format!("INV-ACTIVE CA port {g} is {state:?}"));
            }
            let lid = self.fab.port_info(n, p).map_err(|e| e.to_string())?.lid;
            let rec = st.lid_of(g).map(|a| a.base);
            if rec != Some(lid) {
                return Err(format!(
                    "INV-STATE CA port {g} has LID {} in the fabric, {:?} recorded",
                    lid.0, rec
                ));
            }
            lids.push((g, lid));
            let node_guid = self.fab.node_guid(n).map_err(|e| e.to_string())?;
            let fab_keys = self.fab.pkey_table(n, p).map_err(|e| e.to_string())?;
            let rec_keys = st.pkey_table(node_guid, fabric::PortNum(p)).unwrap_or(&[]);
            let len = fab_keys.len().max(rec_keys.len());
            for i in 0..len {
                let a = fab_keys.get(i).map_or(0, |k| k.0);
                let b = rec_keys.get(i).copied().unwrap_or(0);
                if a != b {
                    return Err(format!(
                        "INV-STATE CA port {g} P_Key[{i}] is 0x{a:04x} in the fabric, 0x{b:04x} \
                         recorded"
                    ));
                }
            }
        }
        // Vports ACTIVE with the LID recorded for them.
        for g in self.vports.keys() {
            let v = self
                .fab
                .vport(*g)
                .ok_or(format!("INV-VPORT vport {g} gone"))?;
            let rec = st.lid_of(*g).map(|a| a.base);
            if v.state != PortState::Active || rec != Some(v.lid) {
                return Err(format!(
                    "INV-VPORT vport {g} is {:?} with LID {} in the fabric, {rec:?} recorded",
                    v.state, v.lid.0
                ));
            }
        }
        // LFTs as recorded, over the LIDs in use.
        let top = st
            .guid2lid()
            .values()
            .map(|a| a.base.0 + ((1u16 << a.lmc) - 1))
            .max()
            .unwrap_or(0);
        for (s, _) in self.topo.switches() {
            let g = self.fab.node_guid(s).map_err(|e| e.to_string())?;
            let fab = self.fab.lft(s).map_err(|e| e.to_string())?;
            let rec = st.lft(g).unwrap_or(&[]);
            for lid in 1..=usize::from(top) {
                let a = fab.get(lid).copied().unwrap_or(replica::NO_ROUTE);
                let b = rec.get(lid).copied().unwrap_or(replica::NO_ROUTE);
                if a != b {
                    return Err(format!(
                        "INV-STATE switch {g} LFT[{lid}] is {a} in the fabric, {b} recorded"
                    ));
                }
            }
        }
        let n = crate::delivery::check(
            &mut self.fab,
            &self.topo,
            st.policy().version,
            &st.policy().text,
            &lids,
        )?;
        self.checker.checks += n;
        Ok(())
    }
}
