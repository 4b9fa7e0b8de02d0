//! Read-only views of the sweeper for operators (the admin API): the topology of the last
//! completed discovery and its P_Key table capacities.

use super::Sweeper;
use fabric::Topology;

impl Sweeper {
    /// The fabric as the last sweep discovered it (nodes seen in that sweep and the links
    /// between them), built the way routing sees it. Link width and speed are the defaults
    /// (the sweeper does not keep them). Inconsistent links are left out.
    pub fn discovered_topology(&self) -> Topology {
        match self.disc.topology(false) {
            Ok((topo, _, _)) => topo,
            // Not strict: nothing is refused, every error is skipped.
            Err(_) => Topology::new(),
        }
    }

    /// The P_Key table capacities of the nodes the last sweep saw (NodeInfo.PartitionCap,
    /// SwitchInfo.PartitionEnforcementCap), as the sweeper plans partitions with them.
    pub fn partition_caps(&self) -> partitions::Caps {
        crate::program::partition_caps(&self.disc)
    }

    /// PortInfo of `(node GUID, port)` as this sweeper last read it (a discovery Get, or the
    /// port's answer to a Set), with the heavy sweep it was read in. None when the port was
    /// never read.
    pub fn port_info_as_read(&self, node: fabric::Guid, port: u8) -> Option<(mad::PortInfo, u64)> {
        let i = self.disc.find(node)?;
        let n = self.disc.node(i);
        if port > n.nports {
            return None;
        }
        let p = self.disc.port(n.port_index(port));
        (p.info_sweep != 0).then_some((p.info, p.info_sweep))
    }
}
