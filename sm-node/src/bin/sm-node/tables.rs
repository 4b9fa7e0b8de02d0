//! `--dump-tables FILE`: after the first SUBNET UP, the master's LFTs and P_Key tables are
//! written to FILE in a line format tests and operators can diff against what
//! infiniband-diags read back (`ibroute`, `smpquery pkeys`):
//!
//! ```text
//! lid <port GUID> <base LID>               one line per port with a LID
//! lft <switch node GUID> <LID> <port>        one line per programmed entry
//! pkeys <node GUID> <port> <key> <key> ...   the whole table, index order, hex
//! ```
//!
//! Written to FILE.tmp and renamed, then logged as `tables dumped to FILE`.

use anyhow::Context;
use sm_node::master::{GetTables, MasterActor};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::OnceLock;

static DUMP_PATH: OnceLock<PathBuf> = OnceLock::new();

/// Remembers where to dump (from the command line).
pub fn set_path(p: Option<PathBuf>) {
    if let Some(p) = p {
        let _ = DUMP_PATH.set(p);
    }
}

/// Dumps the master's tables if `--dump-tables` was given (at SUBNET UP, and again after a
/// reloaded partition policy has been programmed).
pub async fn dump(master: &actix::Addr<MasterActor>) -> anyhow::Result<()> {
    let Some(path) = DUMP_PATH.get() else {
        return Ok(());
    };
    let t = master
        .send(GetTables)
        .await
        .context("E_NODE_ACTOR: tables")?;
    let mut s = String::new();
    for (guid, lo, _) in t.guid2lid.iter() {
        let _ = writeln!(s, "lid {guid} {}", lo.0);
    }
    if let Some(lfts) = &t.lfts {
        for sw in &lfts.switches {
            for (lid, &port) in sw.ports.iter().enumerate() {
                if port != routing::NO_ROUTE {
                    let _ = writeln!(s, "lft {} {lid} {port}", sw.guid);
                }
            }
        }
    }
    for ((guid, port), keys) in &t.pkeys {
        let _ = write!(s, "pkeys {guid} {port}");
        for k in keys {
            let _ = write!(s, " {k:#06x}");
        }
        s.push('\n');
    }
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, s).with_context(|| format!("E_NODE_DUMP: {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("E_NODE_DUMP: {}", path.display()))?;
    tracing::info!("tables dumped to {}", path.display());
    Ok(())
}
