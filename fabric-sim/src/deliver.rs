//! The data-packet delivery check: walks a packet from a source end port to a
//! destination LID through the programmed LFTs, applying the HCA P_Key checks at source
//! and destination, switch partition enforcement, and port ACTIVE checks. SMPs are
//! exempt from key checks ([`SimFabric::deliver_smp`]).

use crate::sim::SimFabric;
use crate::state::NONE;
use fabric::{Guid, Lid, NodeId, PKey, PortState};
use serde::{Deserialize, Serialize};

/// Why a data packet did not arrive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DropReason {
    /// No end port has the source GUID.
    NoSuchSource,
    /// The source port is not ACTIVE (or its node is removed).
    SourceNotActive,
    /// The source port's P_KeyTable does not hold the key (an HCA sends only with keys
    /// in its table).
    SourcePKey,
    /// A link on the path is down or uncabled.
    LinkDown {
        /// Node sending.
        node: NodeId,
        /// Port.
        port: u8,
    },
    /// A port on the path is not ACTIVE.
    NotActive {
        /// Node.
        node: NodeId,
        /// Port.
        port: u8,
    },
    /// The switch's LFT has no valid entry for the LID (0xFF, above LinearFDBTop, or a
    /// port that does not exist).
    NoRoute {
        /// Switch.
        node: NodeId,
    },
    /// Switch inbound partition enforcement dropped it at the ingress port.
    SwitchInbound {
        /// Switch.
        node: NodeId,
        /// Ingress port.
        port: u8,
    },
    /// Switch outbound partition enforcement dropped it at the egress port.
    SwitchOutbound {
        /// Switch.
        node: NodeId,
        /// Egress port.
        port: u8,
    },
    /// The destination port's P_KeyTable has no entry matching the key.
    DestinationPKey {
        /// Node.
        node: NodeId,
        /// Port.
        port: u8,
    },
    /// The packet reached a CA port that does not own the DLID.
    WrongDestination {
        /// Node.
        node: NodeId,
        /// Port.
        port: u8,
    },
    /// A node on the path is removed.
    NodeAbsent {
        /// Node.
        node: NodeId,
    },
    /// More than 64 hops: a routing loop.
    Loop,
    /// A GMP reached its port, but no SM or client is attached there.
    NoReceiver,
    /// A GMP was lost by the random loss fault.
    Lost,
}

/// Result of [`SimFabric::deliver`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Delivery {
    /// Arrived at this end port after `hops` links.
    Delivered {
        /// GUID of the receiving port (a switch's GUID for its port 0).
        dst_port: Guid,
        /// Links crossed.
        hops: u8,
    },
    /// Dropped.
    Dropped(DropReason),
}

impl Delivery {
    /// True when delivered.
    pub fn is_delivered(&self) -> bool {
        matches!(self, Delivery::Delivered { .. })
    }
}

/// Switch enforcement compares the partition only (a switch port facing a limited
/// member carries that member's keys, and its traffic to full members must pass).
fn switch_key_ok(sim: &SimFabric, port: u32, key: PKey) -> bool {
    let p = &sim.st.ports[port as usize];
    if p.pkeys.is_empty() {
        return key.partition() == PKey::DEFAULT_FULL.partition();
    }
    !key.is_invalid()
        && p.pkeys
            .iter()
            .any(|k| !k.is_invalid() && k.partition() == key.partition())
}

impl SimFabric {
    /// Would a data packet from end port `src_port_guid` with P_Key `pkey` reach
    /// `dst_lid`? Counts P_Key violations on the port that drops it.
    pub fn deliver(&mut self, src_port_guid: Guid, dst_lid: Lid, pkey: PKey) -> Delivery {
        self.walk(src_port_guid, dst_lid, Some(pkey))
    }

    /// The same walk for a LID-routed SMP: SMPs are exempt from P_Key checks.
    pub fn deliver_smp(&mut self, src_port_guid: Guid, dst_lid: Lid) -> Delivery {
        self.walk(src_port_guid, dst_lid, None)
    }

    fn bump_pkey_violation(&mut self, port: u32) {
        let i = &mut self.st.ports[port as usize].info;
        i.p_key_violations = i.p_key_violations.saturating_add(1);
    }

    fn walk(&mut self, src: Guid, dst: Lid, key: Option<PKey>) -> Delivery {
        let Some(&src_port) = self.st.by_port_guid.get(&src) else {
            return Delivery::Dropped(DropReason::NoSuchSource);
        };
        match self.walk_from(src_port, dst, key) {
            Ok((port, hops)) => Delivery::Delivered {
                dst_port: self.st.ports[port as usize].guid,
                hops,
            },
            Err(r) => Delivery::Dropped(r),
        }
    }

    /// Walks a packet from end port index `src_port` to `dst`: Ok((receiving port index,
    /// links crossed)) or the reason it is dropped.
    pub(crate) fn walk_from(
        &mut self,
        src_port: u32,
        dst: Lid,
        key: Option<PKey>,
    ) -> Result<(u32, u8), DropReason> {
        use DropReason::*;
        let sp = &self.st.ports[src_port as usize];
        let sn = &self.st.nodes[sp.node as usize];
        if !sn.present || sp.state != PortState::Active {
            return Err(SourceNotActive);
        }
        if let Some(k) = key
            && !self.st.table_contains(src_port, k)
        {
            return Err(SourcePKey);
        }
        if self.st.owns_lid(src_port, dst) {
            return Ok((src_port, 0));
        }
        let mut egress = if sn.sw != NONE {
            match self.st.switches[sn.sw as usize].route(dst) {
                Some(o) if o != 0 && o <= sn.num_ports => sn.port_base + u32::from(o),
                _ => {
                    return Err(NoRoute {
                        node: NodeId(sp.node),
                    });
                }
            }
        } else {
            src_port
        };
        let mut hops: u8 = 0;
        loop {
            let e = &self.st.ports[egress as usize];
            let (enode, enum_) = (NodeId(e.node), e.num);
            if !e.link_up || e.cable == NONE {
                return Err(LinkDown {
                    node: enode,
                    port: enum_,
                });
            }
            if e.state != PortState::Active {
                return Err(NotActive {
                    node: enode,
                    port: enum_,
                });
            }
            let e_switch = self.st.nodes[e.node as usize].sw != NONE;
            if let (true, Some(k)) = (e_switch && e.info.partition_enforcement_outbound, key)
                && !switch_key_ok(self, egress, k)
            {
                self.bump_pkey_violation(egress);
                return Err(SwitchOutbound {
                    node: enode,
                    port: enum_,
                });
            }
            let ing = e.cable;
            let ip = &self.st.ports[ing as usize];
            let (inode, inum) = (ip.node, ip.num);
            let n = &self.st.nodes[inode as usize];
            if !n.present {
                return Err(NodeAbsent {
                    node: NodeId(inode),
                });
            }
            if ip.state != PortState::Active {
                return Err(NotActive {
                    node: NodeId(inode),
                    port: inum,
                });
            }
            hops += 1;
            if hops > 64 {
                return Err(Loop);
            }
            if n.sw != NONE {
                if let (true, Some(k)) = (ip.info.partition_enforcement_inbound, key)
                    && !switch_key_ok(self, ing, k)
                {
                    self.bump_pkey_violation(ing);
                    return Err(SwitchInbound {
                        node: NodeId(inode),
                        port: inum,
                    });
                }
                if self.st.owns_lid(ing, dst) {
                    let p0 = n.port_base;
                    if let Some(k) = key
                        && !self.st.table_matches(p0, k)
                    {
                        self.bump_pkey_violation(p0);
                        return Err(DestinationPKey {
                            node: NodeId(inode),
                            port: 0,
                        });
                    }
                    return Ok((p0, hops));
                }
                match self.st.switches[n.sw as usize].route(dst) {
                    Some(o) if o != 0 && o <= n.num_ports => {
                        egress = n.port_base + u32::from(o);
                    }
                    _ => {
                        return Err(NoRoute {
                            node: NodeId(inode),
                        });
                    }
                }
            } else {
                if !self.st.owns_lid(ing, dst) {
                    return Err(WrongDestination {
                        node: NodeId(inode),
                        port: inum,
                    });
                }
                if let Some(k) = key
                    && !self.st.table_matches(ing, k)
                {
                    self.bump_pkey_violation(ing);
                    return Err(DestinationPKey {
                        node: NodeId(inode),
                        port: inum,
                    });
                }
                return Ok((ing, hops));
            }
        }
    }
}
