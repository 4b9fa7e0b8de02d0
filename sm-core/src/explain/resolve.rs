//! What a target names: the port of a LID, a node GUID or a port GUID (or, with the aliases
//! given, a VF's PF port), and the other end of a port's link.

use super::reason::View;
use super::{ExplainPeer, ExplainTarget};
use crate::SmError;
use crate::state::NONE;
use fabric::{Guid, Lid};

const LID_HINT: &str = "no end port holds or was given this LID (`smctl nodes` lists them)";

const GUID_HINT: &str = "if it is a VF (an SR-IOV alias GUID in a PF port's GUIDInfo), it has \
    no port of its own: a VF has no SM access (no QP0), its management is relayed by the \
    host's PF driver. This master knows the vports of virtualization-capable ports and the \
    alias GUIDs set through the SA; one set by the host driver alone it cannot tell from an \
    unknown GUID: explain the PF port instead. A VF handed to a VM with vfio-pci and no PF \
    relay has no LID and stays Down: keep the PF driver on the host, or pass the whole PF";

/// What a target names.
pub(super) enum Found {
    Port(u32, u8),
    /// A VF alias GUID and its PF port.
    Vf(Guid, u32, u8),
}

impl View<'_> {
    pub(super) fn resolve(&self, what: ExplainTarget) -> Result<Found, SmError> {
        let unknown = |hint: &str| SmError::ExplainUnknown {
            target: what.to_string(),
            sweep: self.disc.sweep(),
            hint: hint.to_string(),
        };
        let (i, p, given) = match what {
            ExplainTarget::Lid(lid, given) => {
                let (i, p) = self.by_lid(lid).ok_or_else(|| unknown(LID_HINT))?;
                (i, p, given)
            }
            ExplainTarget::Guid(g, given) => {
                if let Some(i) = self.disc.find(g) {
                    (i, self.default_port(i), given)
                } else if let Some((i, p)) = self.by_port_guid(g) {
                    (i, p, given)
                } else if let Some(pf) = self.inputs.vf_aliases.and_then(|a| a.get(&g))
                    && let Some((i, p)) = self.by_port_guid(*pf)
                {
                    return Ok(Found::Vf(g, i, p));
                } else {
                    return Err(unknown(GUID_HINT));
                }
            }
        };
        let n = self.disc.node(i);
        let p = given.unwrap_or(p);
        if p > n.nports {
            return Err(SmError::ExplainPort {
                node: n.guid,
                port: p,
                nports: n.nports,
            });
        }
        Ok(Found::Port(i, p))
    }

    /// A node's port when none is given: a switch's port 0, the CA port the SM reached.
    fn default_port(&self, i: u32) -> u8 {
        let n = self.disc.node(i);
        if n.is_switch {
            return 0;
        }
        if n.path_port != 0 {
            return n.path_port;
        }
        (1..=n.nports)
            .find(|&p| self.disc.port_of(i, p).info_sweep != 0)
            .unwrap_or(1)
    }

    /// End ports (node, port) of every node, those the last sweep reached first.
    fn end_ports(&self) -> impl Iterator<Item = (u32, u8)> + '_ {
        let d = self.disc;
        let all = move |seen: bool| {
            (0..d.nodes().len() as u32)
                .filter(move |&i| d.seen(i) == seen)
                .flat_map(move |i| {
                    let n = d.node(i);
                    let range = if n.is_switch { 0..=0 } else { 1..=n.nports };
                    range.map(move |p| (i, p))
                })
        };
        all(true).chain(all(false))
    }

    fn by_lid(&self, lid: Lid) -> Option<(u32, u8)> {
        let covers = |base: Lid, lmc: u8| {
            base.0 != 0 && lid.0 >= base.0 && lid.0 - base.0 < (1u16 << lmc.min(7))
        };
        self.end_ports().find(|&(i, p)| {
            let port = self.disc.port_of(i, p);
            covers(port.lid, port.lmc) || covers(port.info.lid, port.info.lmc)
        })
    }

    fn by_port_guid(&self, g: Guid) -> Option<(u32, u8)> {
        self.end_ports().find(|&(i, p)| {
            let n = self.disc.node(i);
            if n.is_switch {
                n.info.port_guid == g
            } else {
                self.disc.port_of(i, p).guid == g
            }
        })
    }

    /// The other end of `(i, p)`'s link as last found.
    pub(super) fn peer_of(&self, i: u32, p: u8) -> Option<(u32, u8, ExplainPeer)> {
        let port = self.disc.port_of(i, p);
        if p == 0 || port.remote == NONE || port.remote_sweep == 0 {
            return None;
        }
        let (r, rp) = (port.remote, port.remote_port);
        let rn = self.disc.node(r);
        if rp > rn.nports {
            return None;
        }
        let rport = self.disc.port_of(r, rp);
        let read = rport.info_sweep != 0;
        Some((
            r,
            rp,
            ExplainPeer {
                node_guid: rn.guid,
                desc: rn.desc.text(),
                port: rp,
                state: if read { rport.info.port_state } else { 0 },
                phys_state: if read { rport.info.port_phys_state } else { 0 },
                sweep: port.remote_sweep,
                cause: None,
            },
        ))
    }
}
