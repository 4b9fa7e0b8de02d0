//! The fabric model handed in by callers and its arrangement into tiers: end nodes at the
//! bottom, leaf switches above them, each further switch level above the one it reaches
//! first; hosts of one leaf collapsed into a single box with a count when there are too many.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Kind of a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum NodeKind {
    /// A switch.
    Switch,
    /// A channel adapter (host).
    Ca,
    /// A router.
    Router,
}

/// A node as the admin API lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelNode {
    /// Node GUID.
    pub guid: u64,
    /// Kind.
    pub kind: NodeKind,
    /// NodeDescription.
    pub description: String,
    /// LID (switch port 0, or the CA port's base LID); 0 when unknown.
    pub lid: u32,
    /// Port GUIDs of the node (a CA has one per port; a switch one for port 0).
    pub port_guids: Vec<u64>,
}

/// State of a link, as far as the listing tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LinkState {
    /// Up at the fabric's usual width and speed.
    Active,
    /// Up, but narrower or slower than the fabric's usual width and speed.
    Degraded,
    /// Known to be down.
    Down,
}

/// A link between two nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelLink {
    /// One end's node GUID.
    pub a: u64,
    /// Its port.
    pub a_port: u32,
    /// Other end's node GUID.
    pub b: u64,
    /// Its port.
    pub b_port: u32,
    /// State.
    pub state: LinkState,
}

/// What callers hand in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FabricModel {
    /// Nodes.
    pub nodes: Vec<ModelNode>,
    /// Links (each once).
    pub links: Vec<ModelLink>,
    /// The master SM's port GUID, when known.
    pub master_port_guid: Option<u64>,
    /// The master SM's LID, when known (used when the port GUID matches no node).
    pub master_lid: Option<u32>,
}

/// Options of the arrangement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DrawOptions {
    /// Hosts of one leaf drawn one by one up to this many; more become one box with a count.
    pub max_hosts_per_leaf: usize,
    /// LIDs drawn highlighted (never collapsed).
    pub highlight: BTreeSet<u32>,
}

impl Default for DrawOptions {
    fn default() -> Self {
        DrawOptions {
            max_hosts_per_leaf: 4,
            highlight: BTreeSet::new(),
        }
    }
}

/// How a drawn box looks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// A switch.
    Switch,
    /// One host.
    Host,
    /// Several hosts collapsed into one box.
    HostGroup,
}

/// One box of the drawing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tier {
    /// Stable identifier (DOT node id).
    pub id: String,
    /// Text inside the box.
    pub label: String,
    /// Look.
    pub shape: Shape,
    /// Tier: 0 hosts, 1 leaf switches, 2 and up higher switch levels.
    pub level: u32,
    /// The master SM runs here.
    pub master: bool,
    /// Highlighted by the caller.
    pub highlight: bool,
}

/// The arranged picture: boxes by tier and edges between them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Drawing {
    /// Boxes, in tier order (highest tier first), then by label.
    pub boxes: Vec<Tier>,
    /// Edges: (upper box index, lower box index, state, count of links folded into it).
    pub edges: Vec<(usize, usize, LinkState, usize)>,
    /// Counts shown in the caption: switches, hosts, links, links not active.
    pub switches: usize,
    /// Hosts (channel adapters and routers).
    pub hosts: usize,
    /// Links.
    pub links: usize,
    /// Links degraded or down.
    pub links_not_active: usize,
}

fn short(desc: &str, guid: u64) -> String {
    let d = desc.trim();
    if d.is_empty() {
        format!("{guid:#018x}")
    } else {
        // Markup characters never reach the SVG/DOT text.
        d.chars()
            .filter(|c| !matches!(c, '<' | '>' | '&' | '"' | '\'' | '\\'))
            .take(28)
            .collect()
    }
}

/// Switch levels: 1 for switches with an end node attached, then one more per hop away
/// from the nearest such switch; switches with no end node reachable get level 1.
fn levels(m: &FabricModel) -> BTreeMap<u64, u32> {
    let kind: BTreeMap<u64, NodeKind> = m.nodes.iter().map(|n| (n.guid, n.kind)).collect();
    let mut adj: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for l in &m.links {
        adj.entry(l.a).or_default().push(l.b);
        adj.entry(l.b).or_default().push(l.a);
    }
    let is_sw = |g: &u64| kind.get(g) == Some(&NodeKind::Switch);
    let mut lvl: BTreeMap<u64, u32> = BTreeMap::new();
    let mut q = VecDeque::new();
    for n in &m.nodes {
        if n.kind != NodeKind::Switch {
            lvl.insert(n.guid, 0);
        } else if adj.get(&n.guid).is_some_and(|v| {
            v.iter()
                .any(|g| kind.get(g).is_some_and(|k| *k != NodeKind::Switch))
        }) {
            lvl.insert(n.guid, 1);
            q.push_back(n.guid);
        }
    }
    while let Some(g) = q.pop_front() {
        let next = lvl[&g] + 1;
        for nb in adj.get(&g).into_iter().flatten() {
            if is_sw(nb) && !lvl.contains_key(nb) {
                lvl.insert(*nb, next);
                q.push_back(*nb);
            }
        }
    }
    for n in &m.nodes {
        lvl.entry(n.guid).or_insert(1);
    }
    lvl
}

fn master_node(m: &FabricModel) -> Option<u64> {
    if let Some(pg) = m.master_port_guid.filter(|g| *g != 0)
        && let Some(n) = m.nodes.iter().find(|n| n.port_guids.contains(&pg))
    {
        return Some(n.guid);
    }
    let lid = m.master_lid.filter(|l| *l != 0)?;
    m.nodes.iter().find(|n| n.lid == lid).map(|n| n.guid)
}

/// Arranges the model into tiers, collapsing the hosts of a leaf beyond
/// `max_hosts_per_leaf` (the master's host and highlighted LIDs always stay visible).
pub fn arrange(m: &FabricModel, o: &DrawOptions) -> Result<Drawing, crate::ViewsError> {
    if m.nodes.is_empty() {
        return Err(crate::ViewsError::Empty);
    }
    let lvl = levels(m);
    let master = master_node(m);
    let by_guid: BTreeMap<u64, &ModelNode> = m.nodes.iter().map(|n| (n.guid, n)).collect();
    // The leaf each host hangs from (its first switch neighbour by port order).
    let mut host_leaf: BTreeMap<u64, u64> = BTreeMap::new();
    let mut links: Vec<&ModelLink> = m.links.iter().collect();
    links.sort_by_key(|l| (l.a, l.a_port, l.b, l.b_port));
    for l in &links {
        for (h, s) in [(l.a, l.b), (l.b, l.a)] {
            let hk = by_guid.get(&h).map(|n| n.kind);
            let sk = by_guid.get(&s).map(|n| n.kind);
            if hk.is_some_and(|k| k != NodeKind::Switch) && sk == Some(NodeKind::Switch) {
                host_leaf.entry(h).or_insert(s);
            }
        }
    }
    let keep = |n: &ModelNode| Some(n.guid) == master || o.highlight.contains(&n.lid);
    let mut per_leaf: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for (h, s) in &host_leaf {
        if by_guid.get(h).is_some_and(|n| !keep(n)) {
            per_leaf.entry(*s).or_default().push(*h);
        }
    }
    let collapsed_leaf: BTreeSet<u64> = per_leaf
        .iter()
        .filter(|(_, v)| v.len() > o.max_hosts_per_leaf)
        .map(|(s, _)| *s)
        .collect();

    let mut d = Drawing::default();
    let mut index: BTreeMap<u64, usize> = BTreeMap::new();
    let mut group_of_leaf: BTreeMap<u64, usize> = BTreeMap::new();
    let mut nodes: Vec<&ModelNode> = m.nodes.iter().collect();
    // Within a tier in GUID order (generators and vendors number leaves in GUID order).
    nodes.sort_by_key(|n| (std::cmp::Reverse(lvl[&n.guid]), n.guid));
    for n in nodes {
        let is_switch = n.kind == NodeKind::Switch;
        if is_switch {
            d.switches += 1;
        } else {
            d.hosts += 1;
        }
        if !is_switch
            && let Some(s) = host_leaf.get(&n.guid)
            && collapsed_leaf.contains(s)
            && !keep(n)
        {
            continue;
        }
        let mut label = short(&n.description, n.guid);
        if n.lid != 0 {
            label.push_str(&format!(" L{}", n.lid));
        }
        if Some(n.guid) == master {
            label.push_str(" [master SM]");
        }
        index.insert(n.guid, d.boxes.len());
        d.boxes.push(Tier {
            id: format!("n{:016x}", n.guid),
            label,
            shape: if is_switch {
                Shape::Switch
            } else {
                Shape::Host
            },
            level: lvl[&n.guid],
            master: Some(n.guid) == master,
            highlight: n.lid != 0 && o.highlight.contains(&n.lid),
        });
    }
    for s in &collapsed_leaf {
        let count = per_leaf.get(s).map_or(0, Vec::len);
        group_of_leaf.insert(*s, d.boxes.len());
        d.boxes.push(Tier {
            id: format!("h{s:016x}"),
            label: format!("{count} hosts"),
            shape: Shape::HostGroup,
            level: 0,
            master: false,
            highlight: false,
        });
    }
    // Edges, upper end first; links folded into one edge are counted on it.
    let mut folded: BTreeMap<(usize, usize), (LinkState, usize)> = BTreeMap::new();
    for l in &links {
        d.links += 1;
        if l.state != LinkState::Active {
            d.links_not_active += 1;
        }
        let end = |g: u64| -> Option<usize> {
            index.get(&g).copied().or_else(|| {
                host_leaf
                    .get(&g)
                    .and_then(|s| group_of_leaf.get(s).copied())
            })
        };
        let (Some(ia), Some(ib)) = (end(l.a), end(l.b)) else {
            continue;
        };
        let (up, down) = if d.boxes[ia].level >= d.boxes[ib].level {
            (ia, ib)
        } else {
            (ib, ia)
        };
        // Parallel links between two switches, and the links of a host group, are one
        // edge with their count; the worst state wins.
        let e = folded.entry((up, down)).or_insert((LinkState::Active, 0));
        e.0 = e.0.max(l.state);
        e.1 += 1;
    }
    for ((u, w), (s, c)) in folded {
        d.edges.push((u, w, s, c));
    }
    Ok(d)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A two-level fat tree: `spines` spines, `leaves` leaves, `hosts` hosts per leaf.
    pub(crate) fn ft(spines: u64, leaves: u64, hosts: u64) -> FabricModel {
        let mut m = FabricModel::default();
        let mut lid = 1;
        for s in 0..spines {
            m.nodes.push(ModelNode {
                guid: 0x100 + s,
                kind: NodeKind::Switch,
                description: format!("spine{s}"),
                lid,
                port_guids: vec![0x100 + s],
            });
            lid += 1;
        }
        for l in 0..leaves {
            m.nodes.push(ModelNode {
                guid: 0x200 + l,
                kind: NodeKind::Switch,
                description: format!("leaf{l}"),
                lid,
                port_guids: vec![0x200 + l],
            });
            lid += 1;
            for s in 0..spines {
                m.links.push(ModelLink {
                    a: 0x200 + l,
                    a_port: (hosts + s + 1) as u32,
                    b: 0x100 + s,
                    b_port: (l + 1) as u32,
                    state: LinkState::Active,
                });
            }
            for h in 0..hosts {
                let g = 0x10_000 + l * 0x100 + h;
                m.nodes.push(ModelNode {
                    guid: g,
                    kind: NodeKind::Ca,
                    description: format!("host{l}-{h}"),
                    lid,
                    port_guids: vec![g + 1],
                });
                lid += 1;
                m.links.push(ModelLink {
                    a: g,
                    a_port: 1,
                    b: 0x200 + l,
                    b_port: (h + 1) as u32,
                    state: LinkState::Active,
                });
            }
        }
        m
    }

    #[test]
    fn tiers_of_a_two_level_fat_tree() {
        let m = ft(2, 3, 2);
        let d = arrange(&m, &DrawOptions::default()).unwrap();
        let level = |name: &str| {
            d.boxes
                .iter()
                .find(|b| b.label.starts_with(name))
                .map(|b| b.level)
        };
        assert_eq!(level("spine0"), Some(2));
        assert_eq!(level("leaf2"), Some(1));
        assert_eq!(level("host1-1"), Some(0));
        assert_eq!((d.switches, d.hosts, d.links), (5, 6, 12));
        // Upper end first on every edge.
        assert!(
            d.edges
                .iter()
                .all(|(u, w, _, _)| d.boxes[*u].level > d.boxes[*w].level)
        );
    }

    #[test]
    fn hosts_collapse_per_leaf_but_master_and_highlight_stay() {
        let mut m = ft(2, 2, 10);
        let master_host = m.nodes.iter().find(|n| n.description == "host0-3").unwrap();
        m.master_port_guid = Some(master_host.port_guids[0]);
        let lit = m
            .nodes
            .iter()
            .find(|n| n.description == "host1-7")
            .unwrap()
            .lid;
        let o = DrawOptions {
            max_hosts_per_leaf: 4,
            highlight: [lit].into(),
        };
        let d = arrange(&m, &o).unwrap();
        let groups: Vec<&Tier> = d
            .boxes
            .iter()
            .filter(|b| b.shape == Shape::HostGroup)
            .collect();
        assert_eq!(groups.len(), 2);
        assert!(groups.iter().all(|g| g.label == "9 hosts"));
        let master: Vec<&Tier> = d.boxes.iter().filter(|b| b.master).collect();
        assert_eq!(master.len(), 1);
        assert!(master[0].label.contains("host0-3"));
        assert!(
            d.boxes
                .iter()
                .any(|b| b.highlight && b.label.contains("host1-7"))
        );
        // Folded edges carry their link count: 9 per group.
        let folded: Vec<usize> = d
            .edges
            .iter()
            .filter(|(_, w, _, _)| d.boxes[*w].shape == Shape::HostGroup)
            .map(|e| e.3)
            .collect();
        assert_eq!(folded, vec![9, 9]);
        assert_eq!(d.hosts, 20);
    }

    #[test]
    fn worst_state_wins_on_a_folded_edge_and_empty_is_an_error() {
        let mut m = ft(1, 1, 6);
        m.links[3].state = LinkState::Degraded;
        let d = arrange(&m, &DrawOptions::default()).unwrap();
        assert_eq!(d.links_not_active, 1);
        assert!(
            d.edges
                .iter()
                .any(|e| e.2 == LinkState::Degraded && e.3 == 6)
        );
        assert!(arrange(&FabricModel::default(), &DrawOptions::default()).is_err());
    }
}
