//! n-dimensional tori: one switch per coordinate, wraparound links in every dimension.

use super::{GenError, SwitchRole, attach_hosts, check_size, invalid, switch_guid};
use crate::topology::{NodeId, PortRef, Topology};
use crate::types::NodeType;

/// Parameters of a torus.
///
/// Switch index = coordinates in mixed radix, dimension 0 varying fastest; description
/// `torus x,y,z`. Ports: hosts on 1..=h, then for each dimension in order: two ports
/// (+1 neighbour, then −1 neighbour) when its size is 3 or more, one port when its size is
/// 2 (the two switches are joined once, not twice), none when its size is 1. Port +1 of a
/// switch is cabled to port −1 of its +1 neighbour (wrapping around).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TorusSpec {
    /// Size of each dimension (each at least 1; at most 16 dimensions).
    pub dims: Vec<u16>,
    /// Hosts attached to every switch (default 1).
    pub hosts_per_switch: u16,
}

impl TorusSpec {
    /// A torus with one host per switch.
    pub fn new(dims: Vec<u16>) -> TorusSpec {
        TorusSpec {
            dims,
            hosts_per_switch: 1,
        }
    }

    /// Ports each dimension uses on every switch.
    fn dim_ports(size: u16) -> u16 {
        match size {
            0 | 1 => 0,
            2 => 1,
            _ => 2,
        }
    }

    /// Ports per switch (hosts plus links).
    pub fn radix(&self) -> u32 {
        u32::from(self.hosts_per_switch)
            + self
                .dims
                .iter()
                .map(|&d| u32::from(Self::dim_ports(d)))
                .sum::<u32>()
    }

    /// Number of switches (product of the dimensions).
    pub fn num_switches(&self) -> u64 {
        self.dims
            .iter()
            .fold(1u64, |acc, &d| acc.saturating_mul(u64::from(d)))
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), GenError> {
        if self.dims.is_empty() || self.dims.len() > 16 {
            return Err(invalid(
                "dimensions",
                format!("a torus has 1 to 16 dimensions, not {}", self.dims.len()),
            ));
        }
        if self.dims.contains(&0) {
            return Err(invalid(
                "dimensions",
                "every dimension needs at least 1 switch",
            ));
        }
        let radix = self.radix();
        if radix == 0 || radix > 254 {
            return Err(invalid(
                "radix",
                format!("each torus switch would need {radix} ports; a switch has 1 to 254"),
            ));
        }
        Ok(())
    }
}

/// Builds a torus (see [`TorusSpec`] for the wiring).
pub fn torus(spec: &TorusSpec) -> Result<Topology, GenError> {
    spec.validate()?;
    let n = spec.num_switches();
    check_size(n.saturating_mul(1 + u64::from(spec.hosts_per_switch)))?;
    let n = n as usize;
    let radix = spec.radix() as u16;
    let h = spec.hosts_per_switch;
    let mut t = Topology::new();
    let mut coord = vec![0u16; spec.dims.len()];
    let mut switches = Vec::with_capacity(n);
    for i in 0..n {
        let desc = coord
            .iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(",");
        let guid = switch_guid(SwitchRole::Torus, 0, i as u32);
        switches.push(t.add_node(NodeType::Switch, radix, guid, format!("torus {desc}"))?);
        increment(&mut coord, &spec.dims);
    }
    // First port of each dimension.
    let mut base = Vec::with_capacity(spec.dims.len());
    let mut next = h + 1;
    for &d in &spec.dims {
        base.push(next);
        next += TorusSpec::dim_ports(d);
    }
    let mut stride = 1usize;
    for (d, &size) in spec.dims.iter().enumerate() {
        let size_us = usize::from(size);
        let plus = base[d] as u8;
        for (i, &sw) in switches.iter().enumerate() {
            let c = (i / stride) % size_us;
            match size {
                1 => {}
                2 => {
                    if c == 0 {
                        t.connect(
                            PortRef::new(sw, plus),
                            PortRef::new(switches[i + stride], plus),
                        )?;
                    }
                }
                _ => {
                    let j = if c + 1 == size_us {
                        i - c * stride
                    } else {
                        i + stride
                    };
                    t.connect(PortRef::new(sw, plus), PortRef::new(switches[j], plus + 1))?;
                }
            }
        }
        stride *= size_us;
    }
    let plan: Vec<(NodeId, u16)> = switches.iter().map(|&s| (s, h)).collect();
    attach_hosts(&mut t, &plan)?;
    Ok(t)
}

fn increment(coord: &mut [u16], dims: &[u16]) {
    for (c, &d) in coord.iter_mut().zip(dims) {
        *c += 1;
        if *c < d {
            return;
        }
        *c = 0;
    }
}
