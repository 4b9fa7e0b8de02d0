//! Frames: which neighbour of a switch lies in which direction (see [`super::recognise`],
//! steps 1-3), built by transport from a seed switch.

use super::recognise::MAX_DIMS;
use crate::error::RoutingError;
use crate::input::{NONE, RoutingInput};
use std::collections::VecDeque;

/// A [`RoutingError::NotATorus`].
pub(super) fn not_torus(why: impl Into<String>) -> RoutingError {
    RoutingError::NotATorus { why: why.into() }
}

/// A [`RoutingError::TorusFaults`].
pub(super) fn faults(why: impl Into<String>) -> RoutingError {
    RoutingError::TorusFaults { why: why.into() }
}

/// The frames of every switch from `seed`: the seed frame, transport until nothing
/// changes, and links in no intact square placed by provisional coordinates. Every link
/// must end up placed.
pub(super) fn build(input: &RoutingInput, seed: usize) -> Result<Frames<'_>, RoutingError> {
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
    Ok(f)
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
pub(super) struct Frames<'a> {
    pub(super) input: &'a RoutingInput,
    /// Two per dimension.
    pub(super) slots: usize,
    frame: Vec<u32>,
}

impl Frames<'_> {
    pub(super) fn get(&self, s: usize, slot: usize) -> Option<usize> {
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
pub(super) fn lines(
    f: &Frames<'_>,
    d: usize,
    n: usize,
) -> Result<(Vec<usize>, Vec<usize>), RoutingError> {
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
pub(super) fn coordinates(
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
