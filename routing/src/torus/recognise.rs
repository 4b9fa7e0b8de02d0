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
//!    lost square corner) is filled in from another side.
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

use crate::error::RoutingError;
use crate::input::{NONE, Peer, RoutingInput};
use std::collections::VecDeque;

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

fn not_torus(why: impl Into<String>) -> RoutingError {
    RoutingError::NotATorus { why: why.into() }
}

fn faults(why: impl Into<String>) -> RoutingError {
    RoutingError::TorusFaults { why: why.into() }
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

/// The common neighbours of `a` and `b` other than `except`.
fn common(input: &RoutingInput, a: usize, b: usize, except: usize) -> Vec<usize> {
    let nb = input.neighbours(b);
    input
        .neighbours(a)
        .iter()
        .map(|&x| x as usize)
        .filter(|&x| x != except && nb.binary_search(&(x as u32)).is_ok())
        .collect()
}

/// The seed's frame: one (+, -) pair of neighbours per dimension.
fn seed_frame(input: &RoutingInput, seed: usize) -> Result<Vec<[usize; 2]>, RoutingError> {
    let nb: Vec<usize> = input.neighbours(seed).iter().map(|&x| x as usize).collect();
    let guid = |s: usize| input.switches[s].guid;
    let mut partner = vec![None; nb.len()];
    for i in 0..nb.len() {
        for j in i + 1..nb.len() {
            let square = !common(input, nb[i], nb[j], seed).is_empty();
            let adjacent = input
                .neighbours(nb[i])
                .binary_search(&(nb[j] as u32))
                .is_ok();
            if square && adjacent {
                return Err(not_torus("a triangle next to a square"));
            }
            if !square {
                if partner[i].is_some() || partner[j].is_some() {
                    return Err(not_torus(
                        "a neighbour squares with none of two others (a missing link or not a torus)",
                    ));
                }
                partner[i] = Some(j);
                partner[j] = Some(i);
            }
        }
    }
    let mut pairs = Vec::new();
    let mut group = Vec::new();
    for (i, p) in partner.iter().enumerate() {
        match p {
            Some(j) if i < *j => pairs.push([nb[i], nb[*j]]),
            Some(_) => {}
            None => group.push(nb[i]),
        }
    }
    if group.len() % 2 == 1 {
        return Err(not_torus(
            "an odd number of neighbours square with every other (a ring of size 2 or a boundary)",
        ));
    }
    group.sort_by_key(|&s| guid(s));
    pairs.extend(group.chunks(2).map(|c| [c[0], c[1]]));
    for p in &mut pairs {
        p.sort_by_key(|&s| guid(s));
    }
    pairs.sort_by_key(|p| guid(p[0]));
    if pairs.is_empty() {
        return Err(not_torus("the seed has no neighbour"));
    }
    if pairs.len() > MAX_DIMS {
        return Err(not_torus(format!(
            "{} dimensions; the SL bits allow at most {MAX_DIMS}",
            pairs.len()
        )));
    }
    Ok(pairs)
}

/// Frames of every switch: `frame[s * 2D + 2d + dir]`, `NONE` when unknown or absent.
struct Frames<'a> {
    input: &'a RoutingInput,
    slots: usize,
    frame: Vec<u32>,
}

impl Frames<'_> {
    fn get(&self, s: usize, slot: usize) -> Option<usize> {
        let v = self.frame[s * self.slots + slot];
        (v != NONE).then_some(v as usize)
    }

    /// Places `v` in `slot` of `s`; Ok(true) when new.
    fn set(&mut self, s: usize, slot: usize, v: usize) -> Result<bool, RoutingError> {
        let row = &mut self.frame[s * self.slots..(s + 1) * self.slots];
        if row[slot] == v as u32 {
            return Ok(false);
        }
        if row[slot] != NONE || row.contains(&(v as u32)) {
            return Err(not_torus(format!(
                "switch {} has neighbours in conflicting directions",
                self.input.switches[s].guid
            )));
        }
        row[slot] = v as u32;
        Ok(true)
    }

    /// Transports `u`'s frame to its neighbour in `slot`; returns that neighbour when its
    /// frame grew.
    fn transport(&mut self, u: usize, slot: usize) -> Result<Option<usize>, RoutingError> {
        let Some(w) = self.get(u, slot) else {
            return Ok(None);
        };
        let mut grew = self.set(w, slot ^ 1, u)?;
        for s2 in 0..self.slots {
            if s2 / 2 == slot / 2 {
                continue;
            }
            let Some(a) = self.get(u, s2) else { continue };
            if let [corner] = common(self.input, w, a, u)[..] {
                grew |= self.set(w, s2, corner)?;
            }
        }
        // Straight continuation: one unknown direction, one unplaced neighbour.
        let row = &self.frame[w * self.slots..(w + 1) * self.slots];
        let unknown: Vec<usize> = (0..self.slots).filter(|&i| row[i] == NONE).collect();
        let rest: Vec<u32> = self
            .input
            .neighbours(w)
            .iter()
            .copied()
            .filter(|x| !row.contains(x))
            .collect();
        if let ([slot], [v]) = (&unknown[..], &rest[..]) {
            grew |= self.set(w, *slot, *v as usize)?;
        }
        Ok(grew.then_some(w))
    }
}

/// Lines of one dimension: (open line lengths, closed line lengths).
fn lines(f: &Frames<'_>, d: usize, n: usize) -> Result<(Vec<usize>, Vec<usize>), RoutingError> {
    let mut on_line = vec![false; n];
    let (mut open, mut closed) = (Vec::new(), Vec::new());
    // Open lines, from their `+` end.
    for s in 0..n {
        if f.get(s, 2 * d).is_none() {
            let (mut x, mut len) = (s, 1);
            on_line[s] = true;
            while let Some(y) = f.get(x, 2 * d + 1) {
                if on_line[y] {
                    return Err(not_torus("a line runs into itself"));
                }
                on_line[y] = true;
                x = y;
                len += 1;
            }
            open.push(len);
        }
    }
    for s in 0..n {
        if on_line[s] {
            continue;
        }
        let (mut x, mut len) = (s, 0);
        loop {
            on_line[x] = true;
            len += 1;
            match f.get(x, 2 * d) {
                Some(y) if y == s => break,
                Some(y) if !on_line[y] => x = y,
                _ => return Err(not_torus("a ring does not close on itself")),
            }
        }
        closed.push(len);
    }
    Ok((open, closed))
}

fn try_seed(input: &RoutingInput, seed: usize) -> Result<Shape, RoutingError> {
    let n = input.num_switches();
    let pairs = seed_frame(input, seed)?;
    let dims = pairs.len();
    let slots = 2 * dims;
    let mut f = Frames {
        input,
        slots,
        frame: vec![NONE; n * slots],
    };
    for (d, p) in pairs.iter().enumerate() {
        f.set(seed, 2 * d, p[0])?;
        f.set(seed, 2 * d + 1, p[1])?;
    }
    propagate(&mut f, &[seed])?;
    // A link in no intact square (failed links on both sides of it) cannot be placed by
    // transport; place it by provisional coordinates (sizes from the closed lines), then
    // propagate again.
    for _ in 0..=slots {
        let loose: Vec<(usize, usize)> = (0..n)
            .flat_map(|w| input.neighbours(w).iter().map(move |&z| (w, z as usize)))
            .filter(|&(w, z)| !f.frame[w * slots..(w + 1) * slots].contains(&(z as u32)))
            .collect();
        if loose.is_empty() {
            break;
        }
        let mut sizes = Vec::with_capacity(dims);
        for d in 0..dims {
            let (_, closed) = lines(&f, d, n)?;
            sizes.push(closed.first().map_or(0, |&k| k as u16));
        }
        let wrapped: Vec<bool> = sizes.iter().map(|&k| k > 0).collect();
        let coord = coordinates(&f, seed, &sizes, &wrapped)?;
        let mut grown = Vec::new();
        for (w, z) in loose {
            let (cw, cz) = (
                &coord[w * dims..(w + 1) * dims],
                &coord[z * dims..(z + 1) * dims],
            );
            if cw[0] == i32::MIN || cz[0] == i32::MIN {
                continue;
            }
            let diff: Vec<usize> = (0..dims).filter(|&d| cw[d] != cz[d]).collect();
            let [d] = diff[..] else { continue };
            let mut delta = cz[d] - cw[d];
            if wrapped[d] {
                delta = delta.rem_euclid(i32::from(sizes[d]));
                if delta == i32::from(sizes[d]) - 1 {
                    delta = -1;
                }
            }
            let slot = match delta {
                1 => 2 * d,
                -1 => 2 * d + 1,
                _ => continue,
            };
            f.set(w, slot, z)?;
            f.set(z, slot ^ 1, w)?;
            grown.extend([w, z]);
        }
        if grown.is_empty() {
            break;
        }
        propagate(&mut f, &grown)?;
    }
    for s in 0..n {
        let row = &f.frame[s * slots..(s + 1) * slots];
        if input.neighbours(s).iter().any(|x| !row.contains(x)) {
            return Err(not_torus(format!(
                "switch {} has links that fit no dimension",
                input.switches[s].guid
            )));
        }
    }
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
    let positions: usize = sizes.iter().map(|&k| k as usize).product();
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

/// Transports frames from `start` until nothing changes.
fn propagate(f: &mut Frames<'_>, start: &[usize]) -> Result<(), RoutingError> {
    let n = f.input.num_switches();
    let mut queued = vec![false; n];
    let mut queue = VecDeque::new();
    for &s in start {
        if !queued[s] {
            queued[s] = true;
            queue.push_back(s);
        }
    }
    while let Some(u) = queue.pop_front() {
        queued[u] = false;
        for slot in 0..f.slots {
            if let Some(w) = f.transport(u, slot)?
                && !queued[w]
            {
                queued[w] = true;
                queue.push_back(w);
            }
        }
    }
    Ok(())
}

/// Coordinates (`coord[s * dims + d]`) by a breadth-first search over the frames from
/// `seed` (at 0), modulo the size in wrapped dimensions; `i32::MIN` where not reached.
fn coordinates(
    f: &Frames<'_>,
    seed: usize,
    sizes: &[u16],
    wrapped: &[bool],
) -> Result<Vec<i32>, RoutingError> {
    let n = f.input.num_switches();
    let dims = sizes.len();
    let mut coord = vec![i32::MIN; n * dims];
    coord[seed * dims..(seed + 1) * dims].fill(0);
    let mut queue = VecDeque::from([seed]);
    while let Some(u) = queue.pop_front() {
        for slot in 0..f.slots {
            let Some(w) = f.get(u, slot) else { continue };
            let d = slot / 2;
            let mut c: Vec<i32> = coord[u * dims..(u + 1) * dims].to_vec();
            c[d] += if slot % 2 == 0 { 1 } else { -1 };
            if wrapped[d] {
                c[d] = c[d].rem_euclid(i32::from(sizes[d]));
            }
            let cw = &mut coord[w * dims..(w + 1) * dims];
            if cw[0] == i32::MIN {
                cw.copy_from_slice(&c);
                queue.push_back(w);
            } else if cw != &c[..] {
                return Err(not_torus("coordinates disagree around a cycle"));
            }
        }
    }
    Ok(coord)
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
