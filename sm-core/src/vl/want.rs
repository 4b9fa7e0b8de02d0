//! The VL tables and OperationalVLs this SM wants (placeholder until the qos crate lands).
use crate::config::SweeperConfig;
use crate::discovery::Discovery;
use crate::vl::VlTables;

pub(crate) fn tables(_disc: &Discovery, _cfg: &SweeperConfig) -> VlTables {
    VlTables::new()
}
