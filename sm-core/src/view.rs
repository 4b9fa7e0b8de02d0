//! Read-only views of the sweeper for operators (the admin API): the topology of the last
//! completed discovery.

use crate::state::NONE;
use crate::sweeper::Sweeper;
use fabric::{NodeId, PortRef, Topology};

impl Sweeper {
    /// The fabric as the last sweep discovered it (nodes seen in that sweep and the links
    /// between them), built the way routing sees it. Link width and speed are the defaults
    /// (the sweeper does not keep them). Inconsistent links are left out.
    pub fn discovered_topology(&self) -> Topology {
        let sweep = self.sweep;
        let mut topo = Topology::new();
        let mut tnode = vec![NONE; self.nodes.len()];
        let mut order = Vec::new();
        for (i, n) in self.nodes.iter().enumerate() {
            if n.seen != sweep {
                continue;
            }
            let Some(kind) = n.info.kind() else { continue };
            let Ok(id) = topo.add_node(kind, u16::from(n.nports), n.guid, n.desc.text()) else {
                continue;
            };
            tnode[i] = id.0;
            order.push(i);
            if !n.is_switch {
                for p in 1..=n.nports {
                    let port = &self.ports[n.port_index(p)];
                    if port.path_sweep == sweep && port.guid.0 != 0 {
                        let _ = topo.set_port_guid(PortRef::new(id, p), port.guid);
                    }
                }
            }
        }
        for &i in &order {
            let n = &self.nodes[i];
            for p in 1..=n.nports {
                let port = &self.ports[n.port_index(p)];
                if port.remote_sweep != sweep || port.remote == NONE {
                    continue;
                }
                let r = port.remote as usize;
                if tnode[r] == NONE || (r, port.remote_port) <= (i, p) {
                    continue;
                }
                let _ = topo.connect(
                    PortRef::new(NodeId(tnode[i]), p),
                    PortRef::new(NodeId(tnode[r]), port.remote_port),
                );
            }
        }
        topo
    }
}

impl Sweeper {
    /// PortInfo of `(node GUID, port)` as this sweeper last read it (a discovery Get, or the
    /// port's answer to a Set), with the heavy sweep it was read in. None when the port was
    /// never read.
    pub fn port_info_as_read(&self, node: fabric::Guid, port: u8) -> Option<(mad::PortInfo, u64)> {
        let &i = self.by_guid.get(&node)?;
        let n = &self.nodes[i as usize];
        if port > n.nports {
            return None;
        }
        let p = &self.ports[n.port_index(port)];
        (p.info_sweep != 0).then_some((p.info, p.info_sweep))
    }
}
