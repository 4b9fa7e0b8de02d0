//! Conversion of what the admin API returns (ListNodes, SmInfo) or a topology file into a
//! [`FabricModel`] (smctl's `draw fabric` and the dashboard's picture). A link whose width or
//! speed differs from the fabric's most common one is drawn degraded; links that are down are
//! not in the listing (the master drops them from the topology); [`apply_health`] adds them
//! back as down, and colours degraded ones, from the performance manager's link health.

use crate::{FabricModel, LinkState, ModelLink, ModelNode, NodeKind};
use fabric::{NodeType, Topology};
use proto::admin::{GetLinkHealthReply, ListNodesReply, SmInfoReply};
use std::collections::BTreeMap;

fn kind_of(s: &str) -> NodeKind {
    match s {
        "switch" => NodeKind::Switch,
        "router" => NodeKind::Router,
        _ => NodeKind::Ca,
    }
}

/// Marks links whose (width, speed) is not the most common one as degraded.
fn mark_degraded(links: &mut [ModelLink], attrs: &[(String, String)]) {
    let mut count: BTreeMap<&(String, String), usize> = BTreeMap::new();
    for a in attrs {
        *count.entry(a).or_default() += 1;
    }
    let Some(usual) = count
        .iter()
        .max_by_key(|(_, n)| **n)
        .map(|(a, _)| (*a).clone())
    else {
        return;
    };
    for (l, a) in links.iter_mut().zip(attrs) {
        if *a != usual {
            l.state = LinkState::Degraded;
        }
    }
}

/// The model of a ListNodes reply (all nodes) and, when known, the master from SmInfo.
pub fn from_list_nodes(nodes: &ListNodesReply, sm: Option<&SmInfoReply>) -> FabricModel {
    let mut m = FabricModel {
        master_port_guid: sm.map(|s| s.sm_guid),
        master_lid: sm.map(|s| s.sm_lid),
        ..FabricModel::default()
    };
    let mut attrs = Vec::new();
    for n in &nodes.nodes {
        m.nodes.push(ModelNode {
            guid: n.node_guid,
            kind: kind_of(&n.node_type),
            description: n.description.clone(),
            lid: n.lid,
            port_guids: n.links.iter().map(|l| l.port_guid).collect(),
        });
        for l in &n.links {
            // Each link once: from the lower (GUID, port) end.
            if (n.node_guid, l.port) < (l.remote_node_guid, l.remote_port) {
                m.links.push(ModelLink {
                    a: n.node_guid,
                    a_port: l.port,
                    b: l.remote_node_guid,
                    b_port: l.remote_port,
                    state: LinkState::Active,
                });
                attrs.push((l.width.clone(), l.speed.clone()));
            }
        }
    }
    mark_degraded(&mut m.links, &attrs);
    m
}

/// Colours the model's links with the performance manager's health: a degraded link is
/// drawn degraded, a down one down; a down link no longer in the listing (its ports no
/// longer see each other) is added, dashed, when both its nodes are in the model.
pub fn apply_health(m: &mut FabricModel, h: &GetLinkHealthReply) {
    let known: std::collections::BTreeSet<u64> = m.nodes.iter().map(|n| n.guid).collect();
    for row in &h.links {
        let state = match row.health.as_str() {
            "degraded" => LinkState::Degraded,
            "down" => LinkState::Down,
            _ => continue,
        };
        let (Some(a), Some(b)) = (&row.a, &row.b) else {
            continue;
        };
        let ends = ((a.node_guid, a.port), (b.node_guid, b.port));
        let found = m.links.iter_mut().find(|l| {
            let e = ((l.a, l.a_port), (l.b, l.b_port));
            e == ends || (e.1, e.0) == ends
        });
        match found {
            Some(l) if state > l.state => l.state = state,
            Some(_) => {}
            None if state == LinkState::Down
                && known.contains(&a.node_guid)
                && known.contains(&b.node_guid) =>
            {
                m.links.push(ModelLink {
                    a: a.node_guid,
                    a_port: a.port,
                    b: b.node_guid,
                    b_port: b.port,
                    state,
                });
            }
            None => {}
        }
    }
}

/// The model of a topology (offline drawing: no LIDs, no master).
pub fn from_topology(t: &Topology) -> FabricModel {
    let mut m = FabricModel::default();
    let mut attrs = Vec::new();
    for (_, n) in t.nodes() {
        m.nodes.push(ModelNode {
            guid: n.node_guid.0,
            kind: match n.node_type {
                NodeType::Switch => NodeKind::Switch,
                NodeType::Router => NodeKind::Router,
                NodeType::Ca => NodeKind::Ca,
            },
            description: n.description.clone(),
            lid: 0,
            port_guids: n.ports.iter().map(|p| p.guid.0).collect(),
        });
        for pn in n.port_numbers() {
            let p = &n.ports[pn.0 as usize];
            let Some(r) = p.remote else { continue };
            let rn = t.node(r.node);
            if (n.node_guid.0, pn.0) < (rn.node_guid.0, r.port.0) {
                m.links.push(ModelLink {
                    a: n.node_guid.0,
                    a_port: u32::from(pn.0),
                    b: rn.node_guid.0,
                    b_port: u32::from(r.port.0),
                    state: LinkState::Active,
                });
                attrs.push((format!("{}x", p.width.lanes()), p.speed.name().to_string()));
            }
        }
    }
    mark_degraded(&mut m.links, &attrs);
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::admin::{NodeEntry, PortLink};

    fn link(port: u32, remote: u64, rport: u32, width: &str) -> PortLink {
        PortLink {
            port,
            port_guid: 0,
            width: width.into(),
            speed: "EDR".into(),
            remote_node_guid: remote,
            remote_port: rport,
            remote_description: String::new(),
        }
    }

    #[test]
    fn links_once_degraded_by_width_master_from_sminfo() {
        let sw = |g: u64, links: Vec<PortLink>| NodeEntry {
            node_type: "switch".into(),
            node_guid: g,
            description: format!("sw{g}"),
            num_ports: 4,
            lid: g as u32,
            links,
        };
        let reply = ListNodesReply {
            nodes: vec![
                sw(1, vec![link(1, 2, 1, "4x"), link(2, 3, 1, "4x")]),
                sw(2, vec![link(1, 1, 1, "4x"), link(2, 3, 2, "1x")]),
                sw(3, vec![link(1, 1, 2, "4x"), link(2, 2, 2, "1x")]),
            ],
            applied_index: 0,
        };
        let sm = SmInfoReply {
            sm_lid: 3,
            ..SmInfoReply::default()
        };
        let m = from_list_nodes(&reply, Some(&sm));
        assert_eq!(m.links.len(), 3);
        let degraded: Vec<_> = m
            .links
            .iter()
            .filter(|l| l.state == LinkState::Degraded)
            .map(|l| (l.a, l.b))
            .collect();
        assert_eq!(degraded, vec![(2, 3)]);
        assert_eq!(m.master_lid, Some(3));
    }

    #[test]
    fn a_generated_fat_tree_converts() {
        let t: Topology = "ft2:8"
            .parse::<fabric::GenSpec>()
            .unwrap()
            .generate()
            .unwrap();
        let m = from_topology(&t);
        assert_eq!(m.nodes.len(), t.len());
        assert!(m.links.iter().all(|l| l.state == LinkState::Active));
        let d = crate::arrange(&m, &crate::DrawOptions::default()).unwrap();
        assert_eq!(d.links, m.links.len());
    }

    #[test]
    fn health_colours_links_and_adds_gone_ones() {
        use proto::admin::{LinkEnd, LinkHealthRow};
        let t = "ft2:4"
            .parse::<fabric::GenSpec>()
            .unwrap()
            .generate()
            .unwrap();
        let mut m = from_topology(&t);
        let n = m.links.len();
        let l0 = m.links[0].clone();
        let end = |g, p| {
            Some(LinkEnd {
                node_guid: g,
                port: p,
                description: String::new(),
            })
        };
        let h = GetLinkHealthReply {
            links: vec![
                LinkHealthRow {
                    a: end(l0.b, l0.b_port),
                    b: end(l0.a, l0.a_port),
                    health: "degraded".into(),
                    why: String::new(),
                },
                LinkHealthRow {
                    a: end(l0.a, 99),
                    b: end(l0.b, 98),
                    health: "down".into(),
                    why: String::new(),
                },
                LinkHealthRow {
                    a: end(12345, 1),
                    b: end(l0.b, 97),
                    health: "down".into(),
                    why: String::new(),
                },
            ],
        };
        apply_health(&mut m, &h);
        assert_eq!(m.links[0].state, LinkState::Degraded);
        assert_eq!(
            m.links.len(),
            n + 1,
            "a gone link between known nodes is added"
        );
        assert_eq!(m.links[n].state, LinkState::Down);
    }
}
