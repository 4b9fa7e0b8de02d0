//! The conformance suite run on raft-rs's MemStorage (wrapped), on the simulation's
//! VolatileLog and on SledStorage.

use storage::{MemRaftLog, SledStorage, VolatileLog, raft_log_conformance};

raft_log_conformance!(mem_storage, || MemRaftLog::new());
raft_log_conformance!(volatile_log, || VolatileLog::new());
raft_log_conformance!(sled_storage, || SledStorage::open_temporary().unwrap());
