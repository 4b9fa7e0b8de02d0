//! Recognising a torus or mesh from the switch graph alone (no configuration file; GUIDs
//! carry no meaning beyond a deterministic tie-break).
//!
//! 1. **Seed frame.** At a seed switch `v`, two distinct neighbours `a`, `b` lie in
//!    different dimensions iff they close a square: they have a common neighbour other than
//!    `v` (the corner `v+x+y`). Neighbours in one dimension do not (ring size >= 5: no
//!    common neighbour; size 3: `v+x` and `v-x` are adjacent instead), except in a ring of
//!    4, where `v+x` and `v-x` share `v+2x`: a ring of 4 is itself a square (C4 = K2 x K2,
//!    a 4x4x4 torus *is* the hypercube Q6), so such neighbours form a group that squares
//!    with everyone and are paired in GUID order. Any pairing of that group is a valid torus
//!    structure of the same graph. An odd group (a ring of size 2, or a seed on a boundary)
//!    is refused at this seed. Parallel links count as one neighbour.
//! 2. **Frame transport.** A frame maps each direction (dimension, +/-) of a switch to its
//!    neighbour there. Going from `u` to `w = u+δ`: `w-δ = u`; for every other direction
//!    `δ'`, `w+δ'` is the one common neighbour of `w` and `u+δ'` other than `u` (two
//!    switches differing by ±1 in two dimensions have exactly two common neighbours, for
//!    any ring size >= 3); and when a switch has exactly one unknown direction and one
//!    neighbour not yet placed, that neighbour is there (the straight continuation).
//!    Frames are merged from every neighbour until nothing changes, so a missing link (a
//!    lost square corner) is filled in from another side. A link left in no intact square
//!    (failed links on both sides of it) is placed by provisional coordinates (ring sizes
//!    from the closed lines), and transport resumes.
//! 3. **Sizes and coordinates.** Each dimension's lines are followed through the frames:
//!    closed lines give the ring size (wrapped dimension), a dimension whose lines are all
//!    open is a mesh dimension. Coordinates follow by a breadth-first search from the seed.
//! 4. **Canonical form.** Independent of the seed (which a failure may change): the origin
//!    is the lowest-GUID switch; in each dimension `+` points to the lower-GUID of its two
//!    neighbour positions; dimensions are ordered by the lowest GUID next to the origin.
//! 5. **Verification.** Every switch-to-switch link must join switches whose coordinates
//!    differ by ±1 (mod k when wrapped) in exactly one dimension, every grid position must
//!    hold exactly one switch. A wrapped ring may miss one link; two missing links in one
//!    ring, a missing link in a mesh line, or a missing switch are refused
//!    ([`RoutingError::TorusFaults`]); anything else that does not fit is
//!    [`RoutingError::NotATorus`]. Seeds are tried in (degree descending, GUID) order, at
//!    most [`MAX_SEEDS`] of them.

use super::frames::{self, coordinates, faults, lines, not_torus};
use crate::error::RoutingError;
use crate::input::{NONE, Peer, RoutingInput};

/// At most this many seed switches are tried.
pub const MAX_SEEDS: usize = 32;
/// At most this many dimensions (an SL has 4 bits, one per dateline).
pub const MAX_DIMS: usize = 4;

/// A recognised torus or mesh: ring sizes, coordinates, and the ports of every switch per
/// dimension and direction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Ring (or line) size per dimension.
    pub sizes: Vec<u16>,
    /// True for a wrapped dimension (a ring with a dateline), false for a mesh dimension.
    pub wrapped: Vec<bool>,
    /// `coords[s * dims + d]`: coordinate of switch `s` in dimension `d`.
    coords: Vec<u16>,
    /// Switch at each grid position (mixed radix, dimension 0 fastest).
    at: Vec<u32>,
    /// `ports[(s * dims + d) * 2 + dir]`: ports of switch `s` towards `+` (dir 0) or `-`
    /// (dir 1) in dimension `d`; several with parallel links.
    ports: Vec<Vec<u8>>,
    /// `broken[d * positions + ring]`: the coordinate `f` of a ring whose link `f -> f+1`
    /// is missing, `u16::MAX` for an intact ring; `ring` is the position with coordinate
    /// `d` set to 0.
    broken: Vec<u16>,
}

impl Shape {
    /// Number of dimensions.
    pub fn dims(&self) -> usize {
        self.sizes.len()
    }

    /// Coordinates of switch `s`.
    pub fn coords(&self, s: usize) -> &[u16] {
        let d = self.dims();
        &self.coords[s * d..(s + 1) * d]
    }

    /// The switch at grid position `c`.
    pub fn switch_at(&self, c: &[u16]) -> usize {
        self.at[self.position(c)] as usize
    }

    /// Ports of switch `s` towards `+` (`plus`) or `-` in dimension `d`.
    pub fn ports(&self, s: usize, d: usize, plus: bool) -> &[u8] {
        &self.ports[(s * self.dims() + d) * 2 + usize::from(!plus)]
    }

    /// The missing link `f -> f+1` of the dimension-`d` ring through position `c`, if any.
    pub fn broken(&self, d: usize, c: &[u16]) -> Option<u16> {
        let ring = c
            .iter()
            .zip(&self.sizes)
            .enumerate()
            .rev()
            .fold(0, |acc, (i, (&x, &k))| {
                acc * k as usize + if i == d { 0 } else { x as usize }
            });
        let f = self.broken[d * self.at.len() + ring];
        (f != u16::MAX).then_some(f)
    }

    /// Every missing link as (dimension, ring position with coordinate `d` = 0, `f`).
    pub fn missing_links(&self) -> Vec<(usize, Vec<u16>, u16)> {
        let p = self.at.len();
        (0..self.broken.len())
            .filter(|&i| self.broken[i] != u16::MAX)
            .map(|i| {
                (
                    i / p,
                    self.coords(self.at[i % p] as usize).to_vec(),
                    self.broken[i],
                )
            })
            .collect()
    }

    fn position(&self, c: &[u16]) -> usize {
        c.iter()
            .zip(&self.sizes)
            .rev()
            .fold(0, |acc, (&x, &k)| acc * k as usize + x as usize)
    }
}

/// Recognises the switch graph of `input` as a torus or mesh (see the module doc).
pub fn recognise(input: &RoutingInput) -> Result<Shape, RoutingError> {
    let n = input.num_switches();
    if n < 3 {
        return Err(not_torus(format!("{n} switch(es)")));
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&s| {
        (
            std::cmp::Reverse(input.neighbours(s).len()),
            input.switches[s].guid,
        )
    });
    // A seed next to a failure may see a wrong frame; another seed may still succeed. A
    // fault report wins over "not a torus" when no seed succeeds.
    let mut last = not_torus("no seed switch");
    let mut fault = None;
    for &seed in order.iter().take(MAX_SEEDS) {
        match try_seed(input, seed) {
            Ok(shape) => return Ok(shape),
            Err(e @ RoutingError::TorusFaults { .. }) => {
                fault.get_or_insert(e);
            }
            Err(e) => last = e,
        }
    }
    Err(fault.unwrap_or(last))
}

fn try_seed(input: &RoutingInput, seed: usize) -> Result<Shape, RoutingError> {
    let n = input.num_switches();
    let f = frames::build(input, seed)?;
    let dims = f.slots / 2;
    // Sizes per dimension.
    let mut sizes = Vec::with_capacity(dims);
    let mut wrapped = Vec::with_capacity(dims);
    for d in 0..dims {
        let (open, closed) = lines(&f, d, n)?;
        let k = match (closed.first(), open.first()) {
            (Some(&k), _) => {
                if let Some(l) = open.iter().find(|&&l| l != k) {
                    return Err(faults(format!(
                        "dimension {d}: a line of {l} switch(es) where rings have {k} (a ring lost two links, or a switch is missing)"
                    )));
                }
                if closed.iter().any(|&l| l != k) {
                    return Err(not_torus(format!("dimension {d}: rings of unequal sizes")));
                }
                wrapped.push(true);
                k
            }
            (None, Some(&k)) => {
                if open.iter().any(|&l| l != k) {
                    return Err(faults(format!("dimension {d}: lines of unequal length")));
                }
                wrapped.push(false);
                k
            }
            (None, None) => return Err(not_torus("no switch")),
        };
        if wrapped[d] && k < 3 {
            return Err(not_torus(format!("dimension {d}: a ring of {k}")));
        }
        sizes.push(k as u16);
    }
    let positions = sizes
        .iter()
        .fold(1usize, |acc, &k| acc.saturating_mul(k as usize));
    if positions != n {
        return Err(faults(format!(
            "{n} switches for a {} grid (a missing switch?)",
            sizes
                .iter()
                .map(|k| k.to_string())
                .collect::<Vec<_>>()
                .join("x")
        )));
    }
    // Coordinates by breadth-first search (mesh dimensions offset afterwards).
    let mut coord = coordinates(&f, seed, &sizes, &wrapped)?;
    if coord.contains(&i32::MIN) {
        return Err(not_torus("the switch graph is disconnected"));
    }
    for d in 0..dims {
        let lo = (0..n).map(|s| coord[s * dims + d]).min().unwrap_or(0);
        for s in 0..n {
            coord[s * dims + d] -= lo;
        }
    }
    let coords: Vec<u16> = coord
        .iter()
        .map(|&c| u16::try_from(c).unwrap_or(u16::MAX))
        .collect();
    let shape = canonical(input, sizes, wrapped, coords)?;
    finish(input, shape)
}

/// Builds the position index, checking every position holds exactly one switch.
fn index(sizes: &[u16], coords: &[u16], n: usize) -> Result<Vec<u32>, RoutingError> {
    let dims = sizes.len();
    let positions: usize = sizes.iter().map(|&k| k as usize).product();
    let mut at = vec![NONE; positions];
    for s in 0..n {
        let c = &coords[s * dims..(s + 1) * dims];
        if c.iter().zip(sizes).any(|(&x, &k)| x >= k) {
            return Err(not_torus("a coordinate outside its line"));
        }
        let p = c
            .iter()
            .zip(sizes)
            .rev()
            .fold(0, |acc, (&x, &k)| acc * k as usize + x as usize);
        if at[p] != NONE {
            return Err(not_torus("two switches at one position"));
        }
        at[p] = s as u32;
    }
    Ok(at)
}

/// Seed-independent coordinates (see the module doc, step 4).
fn canonical(
    input: &RoutingInput,
    sizes: Vec<u16>,
    wrapped: Vec<bool>,
    mut coords: Vec<u16>,
) -> Result<Shape, RoutingError> {
    let n = input.num_switches();
    let dims = sizes.len();
    let guid = |s: u32| input.switches[s as usize].guid;
    let at = index(&sizes, &coords, n)?;
    let pos = |c: &[u16]| {
        c.iter()
            .zip(&sizes)
            .rev()
            .fold(0, |acc, (&x, &k)| acc * k as usize + x as usize)
    };
    let origin = (0..n).min_by_key(|&s| input.switches[s].guid).unwrap_or(0);
    repair_fours(input, &sizes, &wrapped, &mut coords, &at, origin);
    let o: Vec<u16> = coords[origin * dims..(origin + 1) * dims].to_vec();
    let mut key = Vec::with_capacity(dims);
    for d in 0..dims {
        let k = sizes[d];
        let mut c = o.clone();
        // The two positions next to the origin's (a mesh: the two ends of its line).
        let (lo, hi) = if wrapped[d] {
            ((o[d] + k - 1) % k, (o[d] + 1) % k)
        } else {
            (0, k - 1)
        };
        c[d] = lo;
        let g_lo = guid(at[pos(&c)]);
        c[d] = hi;
        let g_hi = guid(at[pos(&c)]);
        // Flip when the lower GUID sits on the `-` side (a mesh: at the far end).
        let flip = if wrapped[d] { g_lo < g_hi } else { g_hi < g_lo };
        for s in 0..n {
            let x = &mut coords[s * dims + d];
            *x = match (wrapped[d], flip) {
                (true, false) => (*x + k - o[d]) % k,
                (true, true) => (o[d] + k - *x) % k,
                (false, false) => *x,
                (false, true) => k - 1 - *x,
            };
        }
        key.push((g_lo.min(g_hi), d));
    }
    key.sort();
    let perm: Vec<usize> = key.iter().map(|&(_, d)| d).collect();
    let coords: Vec<u16> = (0..n)
        .flat_map(|s| perm.iter().map(move |&d| (s, d)))
        .map(|(s, d)| coords[s * dims + d])
        .collect();
    let sizes: Vec<u16> = perm.iter().map(|&d| sizes[d]).collect();
    let wrapped: Vec<bool> = perm.iter().map(|&d| wrapped[d]).collect();
    let at = index(&sizes, &coords, n)?;
    Ok(Shape {
        sizes,
        wrapped,
        coords,
        at,
        ports: Vec::new(),
        broken: Vec::new(),
    })
}

/// Canonical pairing of rings of 4. A ring of 4 is a square: its coordinate `c` is two
/// hypercube bits (Gray code: 0 = 00, 1 = 01, 2 = 11, 3 = 10; `+1` from 0 flips bit 0,
/// `-1` flips bit 1), and with several rings of 4 any pairing of those bits into rings is
/// a valid torus structure of the same graph; which one the seed found depends on the
/// seed. Here the bits are re-paired from the origin: the generators (the switches next to
/// the origin in those dimensions) sorted by GUID, consecutive ones form a ring, `+` on
/// the first. A failed link elsewhere then cannot change the pairing.
fn repair_fours(
    input: &RoutingInput,
    sizes: &[u16],
    wrapped: &[bool],
    coords: &mut [u16],
    at: &[u32],
    origin: usize,
) {
    let dims = sizes.len();
    let fours: Vec<usize> = (0..dims).filter(|&d| wrapped[d] && sizes[d] == 4).collect();
    if fours.len() < 2 {
        return;
    }
    let n = input.num_switches();
    let pos = |c: &[u16]| {
        c.iter()
            .zip(sizes)
            .rev()
            .fold(0, |acc, (&x, &k)| acc * k as usize + x as usize)
    };
    // Generators (dimension, bit): bit 0 is the `+1` neighbour, bit 1 the `-1` one.
    let o: Vec<u16> = coords[origin * dims..(origin + 1) * dims].to_vec();
    let mut gens: Vec<(fabric::Guid, usize, usize)> = Vec::new();
    for &d in &fours {
        for (bit, step) in [(0, 1), (1, 3)] {
            let mut p = o.clone();
            p[d] = (o[d] + step) % 4;
            gens.push((input.switches[at[pos(&p)] as usize].guid, d, bit));
        }
    }
    for &d in &fours {
        for s in 0..n {
            coords[s * dims + d] = (coords[s * dims + d] + 4 - o[d]) % 4;
        }
    }
    gens.sort();
    let bit_of = |c: u16, bit: usize| if bit == 0 { c == 1 || c == 2 } else { c >= 2 };
    for s in 0..n {
        let old: Vec<u16> = fours.iter().map(|&d| coords[s * dims + d]).collect();
        let get = |g: &(fabric::Guid, usize, usize)| {
            let i = fours.iter().position(|&d| d == g.1).unwrap_or(0);
            bit_of(old[i], g.2)
        };
        for (j, &d) in fours.iter().enumerate() {
            let (b0, b1) = (get(&gens[2 * j]), get(&gens[2 * j + 1]));
            coords[s * dims + d] = match (b0, b1) {
                (false, false) => 0,
                (true, false) => 1,
                (true, true) => 2,
                (false, true) => 3,
            };
        }
    }
}

/// Sorts every link into its dimension and direction, verifying the coordinates, and
/// records missing links (step 5).
fn finish(input: &RoutingInput, mut shape: Shape) -> Result<Shape, RoutingError> {
    let n = input.num_switches();
    let dims = shape.dims();
    let positions = shape.at.len();
    let mut ports = vec![Vec::new(); n * dims * 2];
    for s in 0..n {
        let cs = shape.coords(s).to_vec();
        for (p, peer) in input.ports(s).iter().enumerate() {
            let Peer::Switch { sw, .. } = *peer else {
                continue;
            };
            let ct = shape.coords(sw as usize);
            let diff: Vec<usize> = (0..dims).filter(|&d| cs[d] != ct[d]).collect();
            let slot = match diff[..] {
                [d] => {
                    let k = shape.sizes[d];
                    let up = if shape.wrapped[d] {
                        (cs[d] + 1) % k
                    } else {
                        cs[d] + 1
                    };
                    let down = if shape.wrapped[d] {
                        (cs[d] + k - 1) % k
                    } else {
                        cs[d].wrapping_sub(1)
                    };
                    if ct[d] == up {
                        Some(2 * d)
                    } else if ct[d] == down {
                        Some(2 * d + 1)
                    } else {
                        None
                    }
                }
                _ => None,
            };
            let Some(slot) = slot else {
                return Err(not_torus(format!(
                    "link {}:{p} joins {:?} and {:?}",
                    input.switches[s].guid, cs, ct
                )));
            };
            ports[(s * dims) * 2 + slot].push(p as u8);
        }
    }
    let mut broken = vec![u16::MAX; dims * positions];
    for s in 0..n {
        let c = shape.coords(s).to_vec();
        for d in 0..dims {
            let has_next = shape.wrapped[d] || c[d] + 1 < shape.sizes[d];
            if !has_next || !ports[(s * dims + d) * 2].is_empty() {
                continue;
            }
            if !shape.wrapped[d] {
                return Err(faults(format!(
                    "mesh line in dimension {d} at {c:?} misses a link"
                )));
            }
            let mut r = c.clone();
            r[d] = 0;
            let slot = &mut broken[d * positions + shape.position(&r)];
            if *slot != u16::MAX {
                return Err(faults(format!(
                    "the dimension-{d} ring through {c:?} misses two links"
                )));
            }
            *slot = c[d];
        }
    }
    shape.ports = ports;
    shape.broken = broken;
    Ok(shape)
}
