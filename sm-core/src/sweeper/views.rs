//! Read-only views of the sweeper for operators (the admin API): the topology of the last
//! completed discovery and its P_Key table capacities.

use super::Sweeper;
use fabric::Topology;
use std::sync::Arc;

impl Sweeper {
    /// The fabric as the last completed discovery found it (nodes seen in that sweep and
    /// the links between them), built the way routing sees it; while a discovery runs, still
    /// the one before (never a half-read fabric). Link width and speed are the defaults (the
    /// sweeper does not keep them). Empty before the first discovery completes.
    pub fn discovered_topology(&self) -> Arc<Topology> {
        Arc::clone(&self.last_topology)
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

    /// NodeInfo of a node as this sweeper last read it (PortGUID and LocalPortNum are those
    /// of the port the Get entered through). None when the node was never reached.
    pub fn node_info_as_read(&self, node: fabric::Guid) -> Option<mad::NodeInfo> {
        let i = self.disc.find(node)?;
        let n = self.disc.node(i);
        (n.seen != 0).then_some(n.info)
    }

    /// SwitchInfo of a switch as this sweeper last read it (its discovery Get, or the
    /// answer to its own Set). None for a node that is not a switch or was never reached.
    pub fn switch_info_as_read(&self, node: fabric::Guid) -> Option<mad::SwitchInfo> {
        let i = self.disc.find(node)?;
        let n = self.disc.node(i);
        (n.seen != 0 && n.is_switch && n.sw != crate::state::NONE)
            .then(|| self.disc.switch(n.sw).info)
    }
}

impl Sweeper {
    /// Every port of the nodes the last heavy sweep reached, for the performance manager
    /// ([`crate::perf::PerfManager::set_fabric`]): each switch's external ports (read
    /// through its port-0 LID) and every CA port (read at its own LID), with the PortInfo
    /// state as read and the peer; ordered by node GUID and port.
    pub fn perf_targets(&self) -> Vec<crate::perf::PerfTarget> {
        use crate::perf::{Peer, PerfTarget};
        let sweep = self.disc.sweep();
        let mut out = Vec::new();
        for n in self.disc.nodes().iter().filter(|n| n.seen == sweep) {
            let desc = n.desc.text();
            let sw_lid = self.disc.port(n.port_index(0)).lid;
            for p in 1..=n.nports {
                let port = self.disc.port(n.port_index(p));
                let linked = port.remote_sweep == sweep && port.remote != crate::state::NONE;
                let peer = linked.then(|| {
                    let r = self.disc.node(port.remote);
                    Peer {
                        node_guid: r.guid,
                        port: port.remote_port,
                        desc: r.desc.text(),
                    }
                });
                if !n.is_switch && port.info_sweep != sweep {
                    continue; // a CA port not reached in this sweep
                }
                if n.is_switch && peer.is_none() {
                    continue; // an empty switch port
                }
                out.push(PerfTarget {
                    node_guid: n.guid,
                    desc: desc.clone(),
                    is_switch: n.is_switch,
                    lid: if n.is_switch { sw_lid } else { port.lid },
                    port: p,
                    state: port.info.port_state,
                    phys: port.info.port_phys_state,
                    peer,
                });
            }
        }
        out.sort_by_key(|t| (t.node_guid, t.port));
        out
    }
}
