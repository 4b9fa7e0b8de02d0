//! raft-rs's Ready, handled in raft-rs's order: send what may leave before persisting;
//! install a snapshot; apply committed entries; append new entries and the hard state;
//! FLUSH; send what acknowledges persisted state; the light ready (commit index, messages,
//! more committed entries); flush again. Answers to proposals are released only after the
//! last flush.

use crate::VTime;
use crate::core::{ReplicaCore, storage};
use crate::error::CoreError;
use crate::output::{Notice, Output};
use crate::requests::PendingKind;
use crate::role::Role;
use prost::Message as _;
use proto::state::{Command, Noop, command::Kind};
use protobuf::Message as _;
use raft::eraftpb::{ConfChange, ConfChangeV2, Entry, EntryType, Message};
use replica::ReplicatedState;
use storage::RaftLog;

fn noop() -> Command {
    Command {
        request_id: 0,
        kind: Some(Kind::Noop(Noop {})),
    }
}

impl<S: RaftLog + Clone> ReplicaCore<S> {
    /// Queues messages, stamping heartbeats for the lease (dated now, before the send).
    pub(crate) fn send(&mut self, msgs: Vec<Message>, now: VTime) {
        for mut m in msgs {
            self.lease.acks.stamp(&mut m, now);
            self.out.push_back(Output::Send(m));
        }
    }

    pub(crate) fn one_ready(&mut self, now: VTime) -> Result<(), CoreError> {
        let mut rd = self.raw.ready();
        self.take_read_states(rd.read_states());
        // 1. Messages that may leave before persisting (the leader's appends, heartbeats).
        self.send(rd.take_messages(), now);
        // 2. A snapshot from the leader replaces log and state.
        if !rd.snapshot().is_empty() {
            let snap = rd.snapshot().clone();
            let idx = snap.get_metadata().index;
            self.state = ReplicatedState::restore(&snap.data).map_err(|e| CoreError::State {
                index: idx,
                reason: e.to_string(),
            })?;
            self.store
                .apply_snapshot(snap)
                .map_err(storage("apply snapshot"))?;
            self.persisted.last_saved = idx;
            self.persisted.last_snapshot = idx;
            self.notice(Notice::SnapshotInstalled { index: idx });
        }
        // 3. Committed entries (persisted on a quorum) to the state.
        let committed = rd.take_committed_entries();
        self.apply_entries(committed)?;
        // 4. New entries, 5. hard state, then FLUSH before anything acknowledges them.
        self.store.append(rd.entries()).map_err(storage("append"))?;
        if let Some(hs) = rd.hs() {
            self.store
                .set_hardstate(hs.clone())
                .map_err(storage("hard state"))?;
        }
        self.store.flush().map_err(storage("flush"))?;
        // 6. Messages acknowledging persisted state.
        self.send(rd.take_persisted_messages(), now);
        // 7. Light ready.
        let mut light = self.raw.advance(rd);
        if let Some(commit) = light.commit_index() {
            let mut hs = raft::Storage::initial_state(&self.store)?.hard_state;
            hs.commit = commit;
            self.store
                .set_hardstate(hs)
                .map_err(storage("commit index"))?;
        }
        self.send(light.take_messages(), now);
        let committed = light.take_committed_entries();
        self.apply_entries(committed)?;
        self.raw.advance_apply();
        self.store.flush().map_err(storage("flush"))?;
        // Answers only after everything above is on disk.
        self.out.extend(self.deferred.drain(..));
        Ok(())
    }

    fn decode(&mut self, e: &Entry) -> Result<Command, CoreError> {
        let index = e.index;
        let conf = |r: raft::Result<raft::eraftpb::ConfState>, core: &mut Self| match r {
            Ok(cs) => {
                core.notice(Notice::Membership {
                    voters: cs.voters.clone(),
                });
                core.store.set_conf_state(cs).map_err(storage("conf state"))
            }
            Err(err) => {
                core.notice(Notice::ConfChangeRefused {
                    error: err.to_string(),
                });
                Ok(())
            }
        };
        let r = match e.get_entry_type() {
            EntryType::EntryNormal if e.data.is_empty() => return Ok(noop()),
            EntryType::EntryNormal => match Command::decode(&e.data[..]) {
                Ok(c) => return Ok(c),
                Err(err) => {
                    self.notice(Notice::Undecodable {
                        index,
                        error: err.to_string(),
                    });
                    return Ok(noop());
                }
            },
            EntryType::EntryConfChange => match ConfChange::parse_from_bytes(&e.data) {
                Ok(cc) => {
                    let r = self.raw.apply_conf_change(&cc);
                    conf(r, self)
                }
                Err(err) => {
                    self.notice(Notice::Undecodable {
                        index,
                        error: format!("conf change: {err}"),
                    });
                    Ok(())
                }
            },
            EntryType::EntryConfChangeV2 => match ConfChangeV2::parse_from_bytes(&e.data) {
                Ok(cc) => {
                    let r = self.raw.apply_conf_change(&cc);
                    conf(r, self)
                }
                Err(err) => {
                    self.notice(Notice::Undecodable {
                        index,
                        error: format!("conf change: {err}"),
                    });
                    Ok(())
                }
            },
        };
        r.map(|()| noop())
    }

    fn apply_entries(&mut self, entries: Vec<Entry>) -> Result<(), CoreError> {
        if entries.is_empty() {
            return Ok(());
        }
        let mut policy_changed = false;
        for e in entries {
            let (index, term) = (e.index, e.term);
            if self.cfg.observe_applied {
                self.out.push_back(Output::Applied {
                    index,
                    term,
                    hash: crate::entry_hash(e.get_entry_type() as i32, &e.data),
                });
            }
            let cmd = self.decode(&e)?;
            if index <= self.state.applied_index() {
                continue; // replayed after a snapshot that already holds it
            }
            // Tenants named by node description resolve through the recorded topology.
            let tenant_text_before = (matches!(cmd.kind, Some(Kind::SetTopology(_)))
                && self.state.tenants_use_descriptions())
            .then(|| self.state.effective_policy_text().ok().flatten());
            let out = self.state.apply(index, term, &cmd);
            if out.is_accepted()
                && (matches!(cmd.kind, Some(Kind::SetTenants(_)))
                    || tenant_text_before
                        .is_some_and(|b| b != self.state.effective_policy_text().ok().flatten()))
            {
                policy_changed = true;
                self.notice(Notice::TenantsInForce {
                    version: self.state.tenants().version,
                    index,
                });
            }
            if let Err(err) = &out.result {
                self.notice(Notice::EntryRefused {
                    index,
                    error: err.to_string(),
                    own: cmd.request_id == 0,
                });
            }
            if matches!(cmd.kind, Some(Kind::ApplyQosPolicy(_))) && out.is_accepted() {
                policy_changed = true;
                self.notice(Notice::QosPolicyInForce {
                    version: out.policy_version,
                    index,
                });
            }
            if matches!(cmd.kind, Some(Kind::ApplyPolicy(_))) && out.is_accepted() {
                policy_changed = true;
                self.notice(Notice::PolicyInForce {
                    version: out.policy_version,
                    index,
                });
            }
            if cmd.request_id != 0
                && let Some(p) = self.requests.pending.remove(&cmd.request_id)
            {
                match p.kind {
                    PendingKind::Client => self.deferred.push(Output::Answer {
                        request: cmd.request_id,
                        result: out.to_proto(),
                    }),
                    PendingKind::Seal { intent, gen_ } => {
                        if !out.is_accepted() {
                            self.notice(Notice::IntentNotCommitted { id: intent });
                        }
                        self.deferred.push(Output::IntentResult {
                            gen_,
                            id: intent,
                            committed: out.is_accepted(),
                        });
                    }
                }
            }
        }
        let applied = self.state.applied_index();
        if applied >= self.persisted.last_saved + self.cfg.save_applied_every {
            self.save_applied()?;
        }
        if applied >= self.persisted.last_snapshot + self.cfg.snapshot_every {
            self.make_snapshot()?;
        }
        if policy_changed && matches!(self.role, Role::Master { .. }) {
            // The sweeper takes its policy at start: restart the master on the new one.
            self.notice(Notice::RestartingMaster);
            self.stop_role_keep_lease();
        }
        Ok(())
    }

    fn save_applied(&mut self) -> Result<(), CoreError> {
        let idx = self.state.applied_index();
        self.store
            .save_applied(idx, &self.state.snapshot_bytes())
            .map_err(storage("save applied state"))?;
        self.persisted.last_saved = idx;
        Ok(())
    }

    /// Snapshot of the applied state, then the log compacted to it. A snapshot that cannot
    /// be taken leaves the log as it is (noticed); only a failed read of the log is fatal.
    pub(crate) fn make_snapshot(&mut self) -> Result<(), CoreError> {
        let idx = self.state.applied_index();
        if idx == 0 {
            return Ok(());
        }
        let cs = raft::Storage::initial_state(&self.store)?.conf_state;
        let r = self
            .store
            .create_snapshot(idx, cs, self.state.snapshot_bytes())
            .and_then(|_| self.store.compact(idx));
        match r {
            Ok(()) => {
                self.persisted.last_snapshot = idx;
                self.persisted.last_saved = idx;
                self.notice(Notice::SnapshotTaken { index: idx });
            }
            Err(e) => self.notice(Notice::SnapshotFailed {
                index: idx,
                error: e.to_string(),
            }),
        }
        Ok(())
    }
}
