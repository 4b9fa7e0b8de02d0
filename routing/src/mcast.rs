//! Multicast forwarding: for each group (an MLID and its member end ports) a spanning tree
//! over the switch graph, turned into one port mask per switch — what the switches'
//! MulticastForwardingTables must hold for the group's MLID.
//!
//! The tree, as OpenSM builds it in spirit (osm_mcast_mgr.c): a root switch central to the
//! members — the switch whose largest hop count to a member's switch is smallest (OpenSM's
//! non-ANAFA choice), ties to the lowest node GUID — then shortest paths from the root to
//! every member's switch. Here the paths come from one breadth-first search from the root
//! that visits ports in port-number order, so every switch has exactly one parent: the union
//! of the root-to-member paths is a tree, loop-free by construction, and a packet a member
//! sends crosses each tree link once and reaches every other member exactly once (a switch
//! never forwards a multicast packet back out of the port it came in on).
//!
//! Everything depends on GUIDs and port numbers only, never on dense indices or discovery
//! order, so two masters that discovered the same fabric from different ports compute the
//! same tables (a takeover rewrites no MFT block).

use crate::input::{Peer, RoutingInput};
use fabric::{Guid, Lid};
use std::collections::{BTreeMap, HashMap, VecDeque};

/// First multicast LID.
pub const MLID_BASE: u16 = 0xC000;
/// Highest multicast LID (0xFFFF is the permissive LID).
pub const MLID_MAX: u16 = 0xFFFE;
/// Multicast LIDs per MulticastForwardingTable block.
pub const MFT_BLOCK_MLIDS: usize = 32;
/// Ports per MFT position (one 16-bit mask).
pub const MFT_POSITION_PORTS: usize = 16;

/// A set of switch ports 0..=255 in MulticastForwardingTable form: element `p` is the mask of
/// position `p`, bit `i` of it port `16 p + i`.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct PortMask(pub [u16; 16]);

impl PortMask {
    /// Adds a port.
    pub fn set(&mut self, port: u8) {
        self.0[usize::from(port) / 16] |= 1 << (port % 16);
    }

    /// True when the port is in the set.
    pub fn contains(&self, port: u8) -> bool {
        self.0[usize::from(port) / 16] & (1 << (port % 16)) != 0
    }

    /// True when no port is set.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&m| m == 0)
    }

    /// The ports in the set, ascending.
    pub fn ports(&self) -> impl Iterator<Item = u8> + '_ {
        (0..=255u8).filter(|&p| self.contains(p))
    }

    /// Number of ports in the set.
    pub fn count(&self) -> u32 {
        self.0.iter().map(|m| m.count_ones()).sum()
    }
}

/// One multicast group: its MLID and the port GUIDs of its members (end ports; a switch's
/// GUID stands for its management port 0).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct McastGroup {
    /// Multicast LID (0xC000..=0xFFFE).
    pub mlid: Lid,
    /// Member port GUIDs (order and duplicates do not matter).
    pub members: Vec<Guid>,
}

/// The spanning tree of one group.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct McastTree {
    /// The group's MLID.
    pub mlid: Lid,
    /// GUID of the root switch (None when no member is reachable).
    pub root: Option<Guid>,
    /// Port mask per switch on the tree, by switch GUID (switches off the tree absent).
    pub masks: BTreeMap<Guid, PortMask>,
    /// Member GUIDs that are not end ports of this fabric or not connected to the root.
    pub unreachable: Vec<Guid>,
}

/// Multicast forwarding tables: per switch GUID, per MLID, the port mask. Only non-empty
/// masks are kept.
pub type Mfts = BTreeMap<Guid, BTreeMap<u16, PortMask>>;

/// The switch graph indexed for multicast trees (built once per routing input, reused for
/// every group).
pub struct McastGraph<'a> {
    input: &'a RoutingInput,
    /// End port GUID (and switch GUID for port 0) -> (switch index, switch port).
    attach: HashMap<Guid, (u32, u8)>,
}

impl<'a> McastGraph<'a> {
    /// Indexes `input`.
    pub fn new(input: &'a RoutingInput) -> McastGraph<'a> {
        let mut attach = HashMap::with_capacity(input.end_ports.len() + input.num_switches());
        for (s, sw) in input.switches.iter().enumerate() {
            attach.insert(sw.guid, (s as u32, 0));
        }
        for e in &input.end_ports {
            attach.insert(e.guid, (e.switch, e.switch_port));
        }
        McastGraph { input, attach }
    }

    /// Where a member port attaches: (switch GUID, switch port; 0 for a switch itself).
    pub fn attachment(&self, member: Guid) -> Option<(Guid, u8)> {
        self.attach
            .get(&member)
            .map(|&(s, p)| (self.input.switches[s as usize].guid, p))
    }

    /// The spanning tree of one group (see the module documentation). No member: an empty
    /// tree. Members on one switch only: that switch alone, its member ports set.
    pub fn tree(&self, mlid: Lid, members: &[Guid]) -> McastTree {
        let inp = self.input;
        let mut tree = McastTree {
            mlid,
            ..McastTree::default()
        };
        let mut resolved: Vec<(Guid, u32, u8)> = Vec::with_capacity(members.len());
        for &g in members {
            match self.attach.get(&g) {
                Some(&(s, p)) => resolved.push((g, s, p)),
                None => tree.unreachable.push(g),
            }
        }
        let mut at: Vec<(u32, u8)> = resolved.iter().map(|&(_, s, p)| (s, p)).collect();
        at.sort_unstable();
        at.dedup();
        if at.is_empty() {
            tree.unreachable.sort_unstable();
            tree.unreachable.dedup();
            return tree;
        }
        let mut member_sw: Vec<u32> = at.iter().map(|a| a.0).collect();
        member_sw.dedup();
        let root = self.choose_root(&member_sw);
        tree.root = Some(inp.switches[root].guid);
        // Breadth-first from the root, ports in port order: parent (switch, its port) and
        // the port this switch reaches its parent by.
        let n = inp.num_switches();
        let mut parent: Vec<(u32, u8, u8)> = vec![(u32::MAX, 0, 0); n];
        let mut seen = vec![false; n];
        seen[root] = true;
        let mut q = VecDeque::from([root]);
        while let Some(s) = q.pop_front() {
            for (p, peer) in inp.ports(s).iter().enumerate() {
                if let Peer::Switch { sw, port } = *peer
                    && !seen[sw as usize]
                {
                    seen[sw as usize] = true;
                    parent[sw as usize] = (s as u32, p as u8, port);
                    q.push_back(sw as usize);
                }
            }
        }
        let mut masks: Vec<PortMask> = vec![PortMask::default(); n];
        let mut on_tree = vec![false; n];
        on_tree[root] = true;
        for &(s, p) in &at {
            if !seen[s as usize] {
                continue;
            }
            masks[s as usize].set(p);
            // Walk up to the root, stopping where the path joins the tree already.
            let mut cur = s as usize;
            while !on_tree[cur] {
                on_tree[cur] = true;
                let (ps, pp, up) = parent[cur];
                masks[cur].set(up);
                masks[ps as usize].set(pp);
                cur = ps as usize;
            }
        }
        tree.unreachable.extend(
            resolved
                .iter()
                .filter(|&&(_, s, _)| !seen[s as usize])
                .map(|&(g, _, _)| g),
        );
        tree.unreachable.sort_unstable();
        tree.unreachable.dedup();
        for (s, m) in masks.into_iter().enumerate() {
            if !m.is_empty() {
                tree.masks.insert(inp.switches[s].guid, m);
            }
        }
        tree
    }

    /// The switch whose largest hop count to a member switch is smallest (fewest member
    /// switches unreachable first), ties to the lowest GUID. Bit-parallel breadth-first
    /// search: one bit per member switch, 64 per word.
    fn choose_root(&self, member_sw: &[u32]) -> usize {
        let inp = self.input;
        let n = inp.num_switches();
        if member_sw.len() == 1 {
            return member_sw[0] as usize;
        }
        let words = member_sw.len().div_ceil(64);
        let mut reached = vec![0u64; n * words];
        for (k, &s) in member_sw.iter().enumerate() {
            reached[s as usize * words + k / 64] |= 1 << (k % 64);
        }
        let full = |r: &[u64]| -> u32 { r.iter().map(|w| w.count_ones()).sum() };
        // ecc[s]: levels until switch s had every member bit (None: not yet).
        let mut ecc: Vec<Option<u32>> = vec![None; n];
        let want = member_sw.len() as u32;
        let mut next = reached.clone();
        let mut level = 0u32;
        loop {
            let mut open = false;
            for s in 0..n {
                if ecc[s].is_none() {
                    if full(&reached[s * words..(s + 1) * words]) == want {
                        ecc[s] = Some(level);
                    } else {
                        open = true;
                    }
                }
            }
            if !open || level as usize >= n {
                break;
            }
            let mut changed = false;
            for s in 0..n {
                let dst = s * words;
                for &t in inp.neighbours(s) {
                    let src = t as usize * words;
                    for w in 0..words {
                        let v = reached[src + w];
                        if next[dst + w] | v != next[dst + w] {
                            next[dst + w] |= v;
                            changed = true;
                        }
                    }
                }
            }
            reached.copy_from_slice(&next);
            level += 1;
            if !changed {
                break;
            }
        }
        (0..n)
            .min_by_key(|&s| {
                let have = full(&reached[s * words..(s + 1) * words]);
                (
                    want - have,
                    ecc[s].unwrap_or(u32::MAX),
                    inp.switches[s].guid,
                )
            })
            .unwrap_or(member_sw[0] as usize)
    }

    /// The tables for a set of groups: every group's tree merged per switch and MLID.
    /// Groups with an MLID outside 0xC000..=0xFFFE are skipped.
    pub fn tables(&self, groups: &[McastGroup]) -> Mfts {
        let mut out = Mfts::new();
        for g in groups {
            if g.mlid.0 < MLID_BASE || g.mlid.0 > MLID_MAX {
                continue;
            }
            let t = self.tree(g.mlid, &g.members);
            for (sw, m) in t.masks {
                let e = out.entry(sw).or_default().entry(g.mlid.0).or_default();
                for (d, s) in e.0.iter_mut().zip(m.0) {
                    *d |= s;
                }
            }
        }
        out
    }
}

/// The MFT block (0..=511) of an MLID.
pub fn mft_block(mlid: u16) -> u16 {
    (mlid.saturating_sub(MLID_BASE)) / MFT_BLOCK_MLIDS as u16
}

/// The 32 masks of one MFT block of one position for one switch's table (MLID ->
/// port mask): entry `i` is for MLID `0xC000 + 32 block + i`.
pub fn block_masks(table: &BTreeMap<u16, PortMask>, position: u8, block: u16) -> [u16; 32] {
    let mut out = [0u16; 32];
    let lo = MLID_BASE + block * MFT_BLOCK_MLIDS as u16;
    for (&mlid, m) in table.range(lo..lo.saturating_add(MFT_BLOCK_MLIDS as u16)) {
        out[usize::from(mlid - lo)] = m.0[usize::from(position & 0xF)];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::assign_lids_sequential;
    use fabric::rng::SplitMix64;
    use fabric::{GenSpec, NodeId, PortRef, Topology};
    use std::collections::BTreeSet;

    fn input_of(topo: &Topology) -> RoutingInput {
        let lids = assign_lids_sequential(topo, 0).unwrap();
        RoutingInput::new(topo, &lids, None).unwrap()
    }

    fn generated(spec: &str) -> Topology {
        spec.parse::<GenSpec>().unwrap().generate().unwrap()
    }

    /// Sends one packet from `src` through the tables the way switches forward multicast
    /// (every port of the mask but the ingress one) and counts copies per receiving port.
    /// Panics when a switch is entered twice (a loop or a duplicate path).
    fn flood(inp: &RoutingInput, t: &BTreeMap<Guid, PortMask>, src: Guid) -> BTreeMap<Guid, u32> {
        let g = McastGraph::new(inp);
        let (sw, port) = g.attachment(src).expect("source attached");
        let mut got = BTreeMap::new();
        let idx = |guid: Guid| inp.switch_by_guid(guid).unwrap();
        let mut entered = vec![0u32; inp.num_switches()];
        let mut q = VecDeque::from([(idx(sw), port)]);
        while let Some((s, in_port)) = q.pop_front() {
            entered[s] += 1;
            assert_eq!(
                entered[s], 1,
                "switch {:?} entered twice",
                inp.switches[s].guid
            );
            let Some(mask) = t.get(&inp.switches[s].guid) else {
                continue;
            };
            for p in mask.ports() {
                if p == in_port {
                    continue;
                }
                if p == 0 {
                    if inp.switches[s].guid != src {
                        *got.entry(inp.switches[s].guid).or_insert(0) += 1;
                    }
                    continue;
                }
                match inp.ports(s)[usize::from(p)] {
                    Peer::Switch { sw, port } => q.push_back((sw as usize, port)),
                    Peer::End(e) => *got.entry(inp.end_ports[e as usize].guid).or_insert(0) += 1,
                    _ => panic!("mask names port {p} of {:?}, cabled to nothing", s),
                }
            }
        }
        got
    }

    fn check_group(inp: &RoutingInput, members: &[Guid]) -> McastTree {
        let g = McastGraph::new(inp);
        let tree = g.tree(Lid(0xC001), members);
        assert!(tree.unreachable.is_empty(), "{:?}", tree.unreachable);
        let set: BTreeSet<Guid> = members.iter().copied().collect();
        for &m in &set {
            let got = flood(inp, &tree.masks, m);
            for (&r, &n) in &got {
                assert!(set.contains(&r), "non-member {r:?} got a copy from {m:?}");
                assert_eq!(n, 1, "{r:?} got {n} copies from {m:?}");
            }
            let want: BTreeSet<Guid> = set.iter().copied().filter(|&x| x != m).collect();
            let have: BTreeSet<Guid> = got.keys().copied().collect();
            assert_eq!(have, want, "receivers of a packet from {m:?}");
        }
        tree
    }

    fn sample(inp: &RoutingInput, n: usize, seed: u64) -> Vec<Guid> {
        let mut all: Vec<Guid> = inp.end_ports.iter().map(|e| e.guid).collect();
        SplitMix64::new(seed).shuffle(&mut all);
        all.truncate(n);
        all
    }

    #[test]
    fn every_member_reaches_every_other_exactly_once() {
        for (spec, sizes) in [
            ("ft2:8", &[2usize, 5, 32][..]),
            ("ft3:8", &[2, 17, 128][..]),
            ("torus:4x4x3", &[3, 20, 48][..]),
            ("random:40:seed=3:radix=8:links=4", &[2, 30, 160][..]),
        ] {
            let inp = input_of(&generated(spec));
            for (k, &n) in sizes.iter().enumerate() {
                let m = sample(&inp, n, 7 + k as u64);
                let t = check_group(&inp, &m);
                assert!(t.root.is_some(), "{spec}");
            }
        }
    }

    #[test]
    fn members_on_one_switch_stay_on_it() {
        let inp = input_of(&generated("ft2:8"));
        let first: Vec<Guid> = inp
            .end_ports
            .iter()
            .filter(|e| e.switch == 0)
            .map(|e| e.guid)
            .collect();
        assert!(first.len() >= 3);
        let t = check_group(&inp, &first[..3]);
        assert_eq!(t.masks.len(), 1, "only the members' switch");
        assert_eq!(t.root, Some(inp.switches[0].guid));
        let m = t.masks.values().next().unwrap();
        assert_eq!(m.count(), 3);
    }

    #[test]
    fn zero_and_one_member() {
        let inp = input_of(&generated("torus:3x3"));
        let g = McastGraph::new(&inp);
        let t = g.tree(Lid(0xC000), &[]);
        assert!(t.masks.is_empty() && t.root.is_none());
        let one = inp.end_ports[4].guid;
        let t = check_group(&inp, &[one]);
        assert_eq!(t.masks.len(), 1);
        let (sw, mask) = t.masks.iter().next().unwrap();
        assert_eq!(*sw, inp.switches[inp.end_ports[4].switch as usize].guid);
        assert_eq!(
            mask.ports().collect::<Vec<_>>(),
            vec![inp.end_ports[4].switch_port]
        );
        // An unknown GUID is reported, not routed.
        let t = g.tree(Lid(0xC000), &[Guid(0xdead), one]);
        assert_eq!(t.unreachable, vec![Guid(0xdead)]);
        assert_eq!(t.masks.len(), 1);
    }

    #[test]
    fn root_minimises_the_largest_hop_count() {
        // A line of 5 switches, one host at each end: the middle switch is the root.
        let mut t = Topology::new();
        let sws: Vec<NodeId> = (0..5)
            .map(|i| {
                t.add_node(fabric::NodeType::Switch, 4, Guid(0x100 + i), "s")
                    .unwrap()
            })
            .collect();
        for w in sws.windows(2) {
            t.connect(PortRef::new(w[0], 2), PortRef::new(w[1], 1))
                .unwrap();
        }
        let a = t
            .add_node(fabric::NodeType::Ca, 1, Guid(0x1000), "a")
            .unwrap();
        let b = t
            .add_node(fabric::NodeType::Ca, 1, Guid(0x2000), "b")
            .unwrap();
        t.connect(PortRef::new(a, 1), PortRef::new(sws[0], 3))
            .unwrap();
        t.connect(PortRef::new(b, 1), PortRef::new(sws[4], 3))
            .unwrap();
        let inp = input_of(&t);
        let tree = check_group(&inp, &[Guid(0x1001), Guid(0x2001)]);
        assert_eq!(tree.root, Some(Guid(0x102)));
        assert_eq!(tree.masks.len(), 5);
    }

    #[test]
    fn tables_do_not_depend_on_node_order() {
        // The same fabric with nodes added in reverse order: the same masks by GUID.
        let topo = generated("random:30:seed=5:radix=8:links=4");
        let mut rev = Topology::new();
        let ids: Vec<(NodeId, &fabric::Node)> = topo.nodes().collect();
        let mut map = HashMap::new();
        for (id, n) in ids.iter().rev() {
            let nid = rev
                .add_node(
                    n.node_type,
                    n.num_ports().into(),
                    n.node_guid,
                    &n.description,
                )
                .unwrap();
            map.insert(*id, nid);
        }
        for (a, b) in topo.links() {
            rev.connect(
                PortRef::new(map[&a.node], a.port.0),
                PortRef::new(map[&b.node], b.port.0),
            )
            .unwrap();
        }
        let (i1, i2) = (input_of(&topo), input_of(&rev));
        let groups: Vec<McastGroup> = (0..6)
            .map(|k| McastGroup {
                mlid: Lid(0xC000 + k as u16),
                members: sample(&i1, 5 + 20 * k, k as u64),
            })
            .collect();
        let a = McastGraph::new(&i1).tables(&groups);
        let b = McastGraph::new(&i2).tables(&groups);
        assert!(!a.is_empty());
        assert_eq!(a, b);
    }

    #[test]
    fn blocks_and_positions() {
        let mut t = BTreeMap::new();
        let mut m = PortMask::default();
        m.set(3);
        m.set(17);
        t.insert(0xC000 + 33, m);
        assert_eq!(mft_block(0xC000 + 33), 1);
        let b0 = block_masks(&t, 0, 1);
        let b1 = block_masks(&t, 1, 1);
        assert_eq!(b0[1], 1 << 3);
        assert_eq!(b1[1], 1 << 1);
        assert_eq!(block_masks(&t, 0, 0), [0; 32]);
        assert_eq!(m.ports().collect::<Vec<_>>(), vec![3, 17]);
    }
}
