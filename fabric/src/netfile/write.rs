//! Writer for the ibsim / ibnetdiscover topology file format.

use crate::topology::{LinkSpeed, Node, Topology};
use crate::types::{Guid, NodeType};
use std::fmt::Write as _;
use thiserror::Error;

/// A topology that cannot be written so that ibsim and [`super::parse`] read it back.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WriteError {
    /// A NodeDescription the format cannot carry.
    #[error("node {guid}: description {description:?} cannot be written: {reason}")]
    BadDescription {
        /// The node GUID.
        guid: Guid,
        /// The description.
        description: String,
        /// Why.
        reason: &'static str,
    },
}

/// The id a node gets in written files: `S-`, `H-` or `R-` and the 16-digit node GUID, as
/// ibnetdiscover names nodes. Use it as `SIM_HOST` to attach an ibsim client to that node.
pub fn node_id(node: &Node) -> String {
    let mut s = String::with_capacity(18);
    push_id(&mut s, node);
    s
}

fn push_id(out: &mut String, node: &Node) {
    let prefix = match node.node_type {
        NodeType::Switch => 'S',
        NodeType::Ca => 'H',
        NodeType::Router => 'R',
    };
    // Writing to a String cannot fail.
    let _ = write!(out, "{prefix}-{:016x}", node.node_guid.0);
}

/// Table sizes ibsim needs to load a topology (`ibsim -N nodes -S switches -P ports`).
/// ibsim counts `num_ports + 1` ports for a switch (port 0) and `num_ports` for a CA or
/// router; its defaults are 2048 nodes, 256 switches and 13312 ports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IbsimLimits {
    /// Nodes (`-N`).
    pub nodes: usize,
    /// Switches (`-S`).
    pub switches: usize,
    /// Ports (`-P`).
    pub ports: usize,
}

impl IbsimLimits {
    /// ibsim's built-in limits.
    pub const DEFAULT: IbsimLimits = IbsimLimits {
        nodes: 2048,
        switches: 256,
        ports: 13312,
    };

    /// The exact sizes `topo` needs.
    pub fn of(topo: &Topology) -> IbsimLimits {
        let mut l = IbsimLimits {
            nodes: topo.len(),
            switches: 0,
            ports: 0,
        };
        for (_, n) in topo.nodes() {
            l.switches += usize::from(n.is_switch());
            l.ports += usize::from(n.num_ports()) + usize::from(n.is_switch());
        }
        l
    }

    /// True when ibsim's defaults are too small.
    pub fn exceed_defaults(&self) -> bool {
        self.nodes > Self::DEFAULT.nodes
            || self.switches > Self::DEFAULT.switches
            || self.ports > Self::DEFAULT.ports
    }

    /// The command-line flags: `["-N", n, "-S", s, "-P", p]`.
    pub fn args(&self) -> Vec<String> {
        vec![
            "-N".into(),
            self.nodes.to_string(),
            "-S".into(),
            self.switches.to_string(),
            "-P".into(),
            self.ports.to_string(),
        ]
    }
}

/// Writes `topo` as an ibnetdiscover-style topology file (see [`crate::netfile`]).
pub fn write(topo: &Topology) -> Result<String, WriteError> {
    let mut out = String::new();
    write_into(topo, &mut out)?;
    Ok(out)
}

/// Like [`write()`], appending to `out` (reserve its capacity to avoid regrowth).
pub fn write_into(topo: &Topology, out: &mut String) -> Result<(), WriteError> {
    for (_, n) in topo.nodes() {
        check_description(n)?;
    }
    let switches = topo.switches().count();
    let cas = topo.cas().count();
    let routers = topo.len() - switches - cas;
    let links = topo.num_links();
    // ~60 bytes per port line (two per link), ~200 per node header.
    out.reserve(links * 2 * 64 + topo.len() * 200);
    // Writing to a String cannot fail, so the fmt::Results below are ignored.
    let _ = writeln!(
        out,
        "#\n# Topology file written by Quorum SM (fabric::netfile)\n\
         # {switches} switches, {cas} CAs, {routers} routers, {links} links\n\
         # ibsim loads it with these GUIDs (ibsim -s -n FILE); clients attach to the first\n\
         # node unless SIM_HOST names another node id (the quoted S-/H-/R- string).\n#"
    );
    for (_, node) in topo.nodes() {
        let _ = write!(
            out,
            "\nvendid={:#x}\ndevid={:#x}\n",
            node.vendor_id, node.device_id
        );
        if node.sys_image_guid.0 != 0 {
            let _ = writeln!(out, "sysimgguid={:#x}", node.sys_image_guid.0);
        }
        let g = node.node_guid.0;
        match node.node_type {
            NodeType::Switch => {
                let _ = write!(
                    out,
                    "switchguid={g:#x}({g:x})\nSwitch\t{} \"",
                    node.num_ports()
                );
            }
            NodeType::Ca => {
                let _ = write!(out, "caguid={g:#x}\nCa\t{} \"", node.num_ports());
            }
            NodeType::Router => {
                let _ = write!(out, "rtguid={g:#x}\nRt\t{} \"", node.num_ports());
            }
        }
        push_id(out, node);
        let _ = write!(out, "\"\t\t# \"{}\"", node.description);
        if node.is_switch() {
            out.push_str(" base port 0 lid 0 lmc 0");
        }
        out.push('\n');
        for pn in node.port_numbers() {
            let port = &node.ports[usize::from(pn.0)];
            let Some(remote) = port.remote else {
                continue;
            };
            let rnode = topo.node(remote.node);
            let _ = write!(out, "[{}]", pn.0);
            if !node.is_switch() {
                let _ = write!(out, "({:x}) ", port.guid.0);
            }
            out.push_str("\t\"");
            push_id(out, rnode);
            let _ = write!(out, "\"[{}]", remote.port.0);
            if !rnode.is_switch() {
                let rguid = rnode.ports[usize::from(remote.port.0)].guid.0;
                let _ = write!(out, "({rguid:x}) ");
            }
            if node.node_type == NodeType::Router {
                // ibsim reads the width/speed comment only on switch and CA lines; a router
                // port gets the link's exact width and speed as enable options.
                let (base, ext) = speed_bits(port.speed);
                let _ = write!(out, "\tw={} s={base}", port.width.to_wire());
                if ext != 0 {
                    let _ = write!(out, " e={ext}");
                }
            }
            let _ = writeln!(
                out,
                "\t\t# lid 0 {}x{}",
                port.width.lanes(),
                port.speed.name()
            );
        }
    }
    Ok(())
}

/// PortInfo LinkSpeedEnabled and LinkSpeedExtEnabled bits selecting exactly `speed`.
fn speed_bits(speed: LinkSpeed) -> (u8, u8) {
    match speed {
        LinkSpeed::Sdr => (1, 0),
        LinkSpeed::Ddr => (2, 0),
        LinkSpeed::Qdr => (4, 0),
        LinkSpeed::Fdr => (4, 1),
        LinkSpeed::Edr => (4, 2),
        LinkSpeed::Hdr => (4, 4),
        LinkSpeed::Ndr => (4, 8),
    }
}

fn check_description(n: &Node) -> Result<(), WriteError> {
    let reason = if n.description.contains('"') {
        "it contains a double quote"
    } else if n.description.contains(['\n', '\r']) {
        "it contains a line break"
    } else if n.description.len() > 64 {
        "it is longer than 64 bytes"
    } else {
        return Ok(());
    };
    Err(WriteError::BadDescription {
        guid: n.node_guid,
        description: n.description.clone(),
        reason,
    })
}
