//! WatchEvents: one task per watcher turns what this replica sees into [`Event`]s —
//! leader changes and failovers, policy versions, sweeps and SUBNET UP (from the status it
//! polls every 50 ms), and the milestones of masters started on this replica after the
//! watch began (traps, sweeps, counter alarms, link health, counter sweeps). The texts of a status change are `views::cluster`'s.

use super::super::raft_actor::{AddObserver, GetClusterStatus, RaftActor};
use crate::milestone::{Milestone, MilestoneKind};
use actix::Addr;
use proto::admin::Event;
use std::time::Duration;
use tokio::sync::mpsc;

/// Poll period of the replica's status.
const POLL: Duration = Duration::from_millis(50);

fn milestone_event(m: &Milestone) -> Option<(&'static str, String)> {
    Some(match &m.kind {
        MilestoneKind::Trap { number } => ("trap", format!("trap {number} received")),
        MilestoneKind::HeavySweepStarted { sweep } => {
            ("sweep", format!("heavy sweep {sweep} started"))
        }
        MilestoneKind::HeavySweepComplete {
            sweep, min_smps, ..
        } => (
            "sweep",
            format!("heavy sweep {sweep} complete (minimum {min_smps} SMPs)"),
        ),
        MilestoneKind::LightSweepComplete { changed, smps } => {
            ("sweep", views::dashboard::light_sweep_text(*smps, *changed))
        }
        MilestoneKind::ProgrammingDone {
            lft_blocks,
            pkey_blocks,
            port_sets,
            failed,
        } => (
            "port",
            format!(
                "programmed {lft_blocks} LFT blocks, {pkey_blocks} P_Key blocks, {port_sets} PortInfo Sets ({failed} failed)"
            ),
        ),
        MilestoneKind::SubnetUp { .. } => ("subnet", "SUBNET UP".to_string()),
        MilestoneKind::PerfAlarm { text } => ("alarm", text.clone()),
        MilestoneKind::Rogue { text } => ("rogue", text.clone()),
        MilestoneKind::LinkHealth { text, .. } => ("link", text.clone()),
        MilestoneKind::PerfSweepDone {
            number,
            ports,
            failed,
            mads,
            ms,
        } => (
            "perf",
            format!(
                "counter sweep {number}: {ports} ports read, {failed} given up, {mads} MADs in {ms} ms"
            ),
        ),
        _ => return None,
    })
}

/// Starts the watcher task; events arrive on the returned receiver until it is dropped.
pub fn spawn(raft: Addr<RaftActor>, kinds: Vec<String>) -> mpsc::Receiver<Event> {
    let (tx, rx) = mpsc::channel(256);
    let (mtx, mut mrx) = mpsc::unbounded_channel::<Milestone>();
    raft.do_send(AddObserver(mtx));
    let keep = move |k: &str| {
        kinds.is_empty()
            || kinds
                .iter()
                .any(|w| w.is_empty() || w == k || (w == "leader" && k == "failover"))
    };
    tokio::spawn(async move {
        let mut last: Option<proto::admin::ClusterStatusReply> = None;
        let mut last_leader = 0u64;
        let mut tick = tokio::time::interval(POLL);
        loop {
            let mut out: Vec<(&'static str, String)> = Vec::new();
            let (term, leader);
            tokio::select! {
                m = mrx.recv() => {
                    let Some(m) = m else { return };
                    let Ok(st) = raft.send(GetClusterStatus).await else { return };
                    term = st.term;
                    leader = st.leader_id;
                    if let Some(e) = milestone_event(&m) {
                        out.push(e);
                    }
                }
                _ = tick.tick() => {
                    let Ok(st) = raft.send(GetClusterStatus).await else { return };
                    term = st.term;
                    leader = st.leader_id;
                    out = views::cluster::status_events(last.as_ref(), last_leader, &st);
                    if st.leader_id != 0 {
                        last_leader = st.leader_id;
                    }
                    last = Some(st);
                }
            }
            for (kind, text) in out {
                if !keep(kind) {
                    continue;
                }
                let ev = Event {
                    unix_ms: crate::clock::unix_ms(),
                    kind: kind.into(),
                    text,
                    term,
                    leader_id: leader,
                };
                if tx.send(ev).await.is_err() {
                    return;
                }
            }
        }
    });
    rx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rogue_milestones_are_rogue_events() {
        let ev = sm_core::Event::LftDrift {
            switch: fabric::Guid(0x2001),
            lid: fabric::Lid(9),
            block: 0,
        };
        let kind = MilestoneKind::from_event(&ev).expect("a milestone");
        let m = Milestone {
            elapsed: Duration::ZERO,
            kind,
        };
        let (k, text) = milestone_event(&m).expect("a watch event");
        assert_eq!(k, "rogue");
        assert!(text.contains("LID 9"), "{text}");
    }
}
