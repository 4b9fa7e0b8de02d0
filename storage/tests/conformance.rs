//! The conformance suite run on raft-rs's MemStorage (wrapped) and on SledStorage.

use storage::{MemRaftLog, SledStorage, raft_log_conformance};

raft_log_conformance!(mem_storage, || MemRaftLog::new());
raft_log_conformance!(sled_storage, || SledStorage::open_temporary().unwrap());
