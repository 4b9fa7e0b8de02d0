//! `LidState` (the sweeper's LID step) owns the SM's own LID: it hands the end ports of
//! a sweep to [`assign`] and records what they get on the port records. It never writes
//! a LID to the fabric (programming does, in stage 1).
//!
//! The LID manager: keeps every valid, unique LID it can, remembers assignments in the
//! guid2lid map, and gives new ports the lowest free LMC-aligned block, in port GUID order.
//!
//! Precedence, as OpenSM's lid manager with a guid2lid cache: (1) the port's remembered
//! range when it is free; (2) the LID the port already carries (PortInfo.LID) when it is
//! valid, aligned, and claimed by nobody else, including ports that are absent but
//! remembered; (3) the lowest free aligned block. A LID is never moved without one of
//! these reasons.

use crate::SmError;
use crate::discovery::Discovery;
use crate::guid2lid::Guid2Lid;
use fabric::{Guid, Lid, NodeId, PortRef};
use routing::LidAssignment;

const FREE: u32 = u32::MAX;
const RESERVED: u32 = u32::MAX - 1;
const SPACE: usize = Lid::UNICAST_MAX.0 as usize + 1;

/// One port asking for LIDs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LidRequest {
    /// Port GUID.
    pub guid: Guid,
    /// LMC the port should get (0 for switch port 0).
    pub lmc: u8,
    /// PortInfo.LID as read from the fabric (0 = none).
    pub current: Lid,
}

/// How the LIDs were decided.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LidOutcome {
    /// Ports that got their remembered range.
    pub from_map: usize,
    /// Ports that kept the LID they carried (not remembered before).
    pub kept: usize,
    /// Ports that got a new block.
    pub new: usize,
    /// Ports whose assigned base differs from what they carried.
    pub changed: usize,
    /// Highest LID in use.
    pub max_lid: u16,
}

fn aligned(base: u32, lmc: u8) -> bool {
    base.is_multiple_of(1u32 << lmc)
}

fn range_free(owner: &[u32], base: u32, lmc: u8, me: u32) -> bool {
    let n = 1u32 << lmc;
    if base == 0 || base + n > SPACE as u32 || !aligned(base, lmc) {
        return false;
    }
    (base..base + n).all(|l| owner[l as usize] == FREE || owner[l as usize] == me)
}

fn claim(owner: &mut [u32], base: u32, lmc: u8, me: u32) {
    for l in base..base + (1u32 << lmc) {
        owner[l as usize] = me;
    }
}

/// Refuses a fabric whose end ports need more unicast LIDs than a subnet has (2^LMC per
/// port against 0x0001-0xBFFF), so it is reported as too large rather than as a port that
/// found no free block.
pub fn check_space(ports: &[LidRequest]) -> Result<(), SmError> {
    let available = u64::from(Lid::UNICAST_MAX.0);
    let needed: u64 = ports.iter().map(|p| 1u64 << p.lmc.min(7)).sum();
    if needed > available {
        return Err(SmError::FabricNeedsTooManyLids {
            needed,
            lmc: ports.iter().map(|p| p.lmc.min(7)).max().unwrap_or(0),
            available,
            ports: ports.len(),
        });
    }
    Ok(())
}

/// Assigns LIDs to `ports` (any order; the result is in the same order) and records every
/// assignment in `map`. Remembered ranges of ports not in `ports` stay reserved.
pub fn assign(ports: &[LidRequest], map: &mut Guid2Lid) -> Result<(Vec<Lid>, LidOutcome), SmError> {
    check_space(ports)?;
    let mut owner = vec![FREE; SPACE];
    let mut out = vec![Lid(0); ports.len()];
    let mut done = vec![false; ports.len()];
    let mut o = LidOutcome::default();
    let mut order: Vec<u32> = (0..ports.len() as u32).collect();
    order.sort_by_key(|&i| ports[i as usize].guid);
    let mut present = std::collections::HashSet::with_capacity(ports.len());
    for p in ports {
        present.insert(p.guid);
    }
    for (g, lo, hi) in map.iter() {
        if !present.contains(&g) {
            for l in lo.0..=hi.0 {
                if (l as usize) < SPACE {
                    owner[l as usize] = RESERVED;
                }
            }
        }
    }
    // (1) remembered ranges.
    for &i in &order {
        let p = ports[i as usize];
        if let Some((lo, _)) = map.get(p.guid)
            && range_free(&owner, lo.0 as u32, p.lmc, i)
        {
            claim(&mut owner, lo.0 as u32, p.lmc, i);
            out[i as usize] = lo;
            done[i as usize] = true;
            o.from_map += 1;
        }
    }
    // (2) LIDs the ports already carry.
    for &i in &order {
        let p = ports[i as usize];
        if done[i as usize] || p.current.0 == 0 {
            continue;
        }
        if range_free(&owner, p.current.0 as u32, p.lmc, i) {
            claim(&mut owner, p.current.0 as u32, p.lmc, i);
            out[i as usize] = p.current;
            done[i as usize] = true;
            o.kept += 1;
        }
    }
    // (3) lowest free aligned block, one cursor per LMC (blocks are never freed here).
    let mut cursor = [1u32; 8];
    for &i in &order {
        if done[i as usize] {
            continue;
        }
        let p = ports[i as usize];
        let lmc = p.lmc.min(7);
        let step = 1u32 << lmc;
        let mut b = cursor[lmc as usize].div_ceil(step) * step;
        loop {
            if b + step > SPACE as u32 {
                return Err(SmError::LidSpaceExhausted(p.guid));
            }
            if b != 0 && range_free(&owner, b, lmc, i) {
                break;
            }
            b += step;
        }
        claim(&mut owner, b, lmc, i);
        cursor[lmc as usize] = b + step;
        out[i as usize] = Lid(b as u16);
        o.new += 1;
    }
    for (i, p) in ports.iter().enumerate() {
        let base = out[i];
        let top = base.0 + ((1u16 << p.lmc.min(7)) - 1);
        map.set(p.guid, base, Lid(top));
        o.max_lid = o.max_lid.max(top);
        if base != p.current {
            o.changed += 1;
        }
    }
    Ok((out, o))
}

/// The sweeper's LIDs: the SM's own LID (the LIDs of the other ports live on their port
/// records, the remembered ones in the guid2lid map).
#[derive(Debug, Default)]
pub(crate) struct LidState {
    sm_lid: Lid,
}

impl LidState {
    /// The SM's own LID (0 before LIDs are assigned).
    pub fn sm_lid(&self) -> Lid {
        self.sm_lid
    }

    /// Assigns LIDs to the end ports of the nodes `order` of this sweep (a switch's port 0
    /// with LMC 0, every linked CA port with `lmc`), records them on the port records (a
    /// port whose LID moves no longer holds a known P_KeyTable unless it already carried
    /// the new LID) and in `map`. `tnode` maps node indices to the topology's node ids.
    /// Returns the assignment for routing and how the LIDs were decided.
    pub fn assign(
        &mut self,
        disc: &mut Discovery,
        map: &mut Guid2Lid,
        lmc: u8,
        order: &[usize],
        tnode: &[u32],
    ) -> Result<(LidAssignment, LidOutcome), SmError> {
        let sweep = disc.sweep();
        let mut reqs = Vec::new();
        let mut where_ = Vec::new();
        for &i in order {
            let n = &disc.nodes()[i];
            let end_ports: &[u8] = if n.is_switch { &[0] } else { &[] };
            let mut add = |p: u8, lmc: u8, port: &crate::state::Port| {
                let current = if port.info_sweep == sweep {
                    port.info.lid
                } else {
                    Lid(0)
                };
                reqs.push(LidRequest {
                    guid: port.guid,
                    lmc,
                    current,
                });
                where_.push((i, p));
            };
            for &p in end_ports {
                add(p, 0, disc.port(n.port_index(p)));
            }
            if !n.is_switch {
                for p in 1..=n.nports {
                    let port = disc.port(n.port_index(p));
                    if port.remote_sweep == sweep {
                        add(p, lmc, port);
                    }
                }
            }
        }
        let (assigned, outcome) = assign(&reqs, map)?;
        let mut la = LidAssignment::new();
        for ((&(i, p), lid), r) in where_.iter().zip(&assigned).zip(&reqs) {
            let port = disc.port_of_mut(i as u32, p);
            if port.lid != *lid && port.lid.0 != 0 {
                port.pkey_known_valid = port.pkey_known_valid && port.info.lid == *lid;
            }
            port.lid = *lid;
            port.lmc = r.lmc;
            la.set(PortRef::new(NodeId(tnode[i]), p), *lid, r.lmc)?;
        }
        self.sm_lid = disc.sm_port().lid;
        Ok((la, outcome))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(g: u64, lmc: u8, cur: u16) -> LidRequest {
        LidRequest {
            guid: Guid(g),
            lmc,
            current: Lid(cur),
        }
    }

    #[test]
    fn fresh_ports_get_lowest_lids_in_guid_order() {
        let mut m = Guid2Lid::new();
        let (l, o) = assign(&[req(30, 0, 0), req(10, 0, 0), req(20, 0, 0)], &mut m).unwrap();
        assert_eq!(l, vec![Lid(3), Lid(1), Lid(2)]);
        assert_eq!(o.new, 3);
        assert_eq!(m.get(Guid(30)), Some((Lid(3), Lid(3))));
    }

    #[test]
    fn keeps_valid_unique_lids_and_resolves_conflicts() {
        let mut m = Guid2Lid::new();
        // 10 and 20 both claim LID 7: the lower GUID keeps it; 30 keeps 9.
        let (l, o) = assign(&[req(10, 0, 7), req(20, 0, 7), req(30, 0, 9)], &mut m).unwrap();
        assert_eq!(l, vec![Lid(7), Lid(1), Lid(9)]);
        assert_eq!((o.kept, o.new, o.changed), (2, 1, 1));
    }

    #[test]
    fn map_wins_and_absent_ports_stay_reserved() {
        let mut m = Guid2Lid::new();
        m.set(Guid(10), Lid(5), Lid(5));
        m.set(Guid(99), Lid(1), Lid(1)); // absent port keeps LID 1 reserved
        let (l, _) = assign(&[req(10, 0, 8), req(20, 0, 0), req(30, 0, 5)], &mut m).unwrap();
        assert_eq!(l, vec![Lid(5), Lid(2), Lid(3)]);
    }

    #[test]
    fn lmc_blocks_are_aligned() {
        let mut m = Guid2Lid::new();
        let (l, _) = assign(&[req(1, 0, 0), req(2, 2, 0), req(3, 2, 6)], &mut m).unwrap();
        // 3 carries 6, not aligned to 4: gets a new block.
        assert_eq!(l, vec![Lid(1), Lid(4), Lid(8)]);
        assert_eq!(m.get(Guid(2)), Some((Lid(4), Lid(7))));
    }

    #[test]
    fn a_fabric_needing_more_lids_than_a_subnet_has_is_refused_with_the_count() {
        let mut m = Guid2Lid::new();
        // 384 ports at LMC 7 need 49,152 LIDs, one more than 0x0001-0xBFFF.
        let ports: Vec<_> = (1..=384).map(|g| req(g, 7, 0)).collect();
        let e = assign(&ports, &mut m).unwrap_err();
        assert!(matches!(
            e,
            SmError::FabricNeedsTooManyLids {
                needed: 49_152,
                lmc: 7,
                available: 49_151,
                ports: 384
            }
        ));
        assert!(
            e.to_string()
                .starts_with("SMC-E008 fabric needs 49152 LIDs (LMC 7) but a subnet has 49151"),
            "{e}"
        );
        assert_eq!(m.iter().count(), 0, "nothing is remembered");
        // One port fewer fits exactly: 383 blocks of 128 and nothing else.
        let (l, o) = assign(&ports[..383], &mut m).unwrap();
        assert_eq!(o.new, 383);
        assert_eq!(l[382], Lid(383 * 128));
    }

    #[test]
    fn reassignment_is_stable() {
        let mut m = Guid2Lid::new();
        let ports: Vec<_> = (1..200).map(|g| req(g * 7 % 211, 1, 0)).collect();
        let (a, _) = assign(&ports, &mut m).unwrap();
        let again: Vec<_> = ports
            .iter()
            .zip(&a)
            .map(|(p, l)| req(p.guid.0, 1, l.0))
            .collect();
        let mut m2 = Guid2Lid::new();
        let (b, o) = assign(&again, &mut m2).unwrap();
        assert_eq!(a, b);
        assert_eq!(o.changed, 0);
        let (c, o) = assign(&ports, &mut m).unwrap();
        assert_eq!(a, c);
        assert_eq!(o.from_map, ports.len());
    }
}
