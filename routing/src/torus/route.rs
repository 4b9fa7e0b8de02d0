//! Dimension-order routes, datelines and SL-to-VL tables on a recognised [`Shape`].

use super::recognise::{MAX_DIMS, Shape};
use crate::input::{NONE, RoutingInput};
use crate::lft::NO_ROUTE;
use crate::sl::{EngineSl2Vl, PathSl, SlVlTable};
use std::ops::Range;

/// The direction (`true` = `+`) of the dimension-`d` segment from coordinate `a` to `b` on
/// the ring through position `c`: the shorter way round, `+` on a tie; on a ring that
/// misses a link, the way that avoids it; on a mesh line, towards `b`.
pub fn direction(shape: &Shape, d: usize, c: &[u16], a: u16, b: u16) -> bool {
    if !shape.wrapped[d] {
        return b > a;
    }
    let k = shape.sizes[d];
    let fwd = (b + k - a) % k;
    let plus = 2 * fwd <= k;
    match shape.broken(d, c) {
        None => plus,
        Some(f) => {
            // Link f -> f+1 is on the `+` segment a..b iff f is in [a, b), on the `-`
            // segment iff f is in [b, a) (cyclically).
            let uses = if plus {
                (f + k - a) % k < fwd
            } else {
                (f + k - b) % k < k - fwd
            };
            plus != uses
        }
    }
}

/// The first hop of switch `x` towards switch `t`: (dimension, `+`?), None when `x == t`.
pub fn step(shape: &Shape, x: usize, t: usize) -> Option<(usize, bool)> {
    let (cx, ct) = (shape.coords(x), shape.coords(t));
    let d = (0..shape.dims()).find(|&d| cx[d] != ct[d])?;
    Some((d, direction(shape, d, cx, cx[d], ct[d])))
}

/// The SL of the pair (`s`, `t`): bit `d` set iff the path's dimension-`d` segment crosses
/// the dateline (the link `k-1 -> 0`, either way).
pub fn pair_sl(shape: &Shape, s: usize, t: usize) -> u8 {
    let mut buf = [0u16; MAX_DIMS];
    let c = &mut buf[..shape.dims()];
    c.copy_from_slice(shape.coords(s));
    let ct = shape.coords(t);
    let mut sl = 0u8;
    for d in 0..shape.dims() {
        let (a, b) = (c[d], ct[d]);
        if a == b {
            continue;
        }
        let plus = direction(shape, d, c, a, b);
        let crosses = if plus { b < a } else { b > a };
        if shape.wrapped[d] && crosses {
            sl |= 1 << d;
        }
        c[d] = b;
    }
    sl
}

/// The LFTs of source switches `range`: destinations in OpenSM's order, each to the
/// least-loaded port (end-port destinations counted, lowest port on a tie) among the
/// parallel links of its dimension-order next hop.
pub fn lfts(input: &RoutingInput, shape: &Shape, range: Range<usize>) -> Vec<Vec<u8>> {
    let dests = input.dests();
    range
        .map(|x| {
            let mut table = vec![NO_ROUTE; dests.len()];
            // The next hop depends on the destination switch only.
            let next: Vec<Option<(usize, bool)>> = (0..input.num_switches())
                .map(|t| step(shape, x, t))
                .collect();
            let mut load = vec![0u32; input.switches[x].num_ports as usize + 1];
            for &lid in input.routing_order() {
                let d = input.dest(lid);
                if !d.is_used() {
                    continue;
                }
                let Some((dim, plus)) = next[d.switch as usize] else {
                    table[lid as usize] = d.port;
                    continue;
                };
                // Never empty: a recognised shape has a port for every direction except a
                // missing ring link, which `direction` avoids, and mesh ends, never taken.
                let best = shape
                    .ports(x, dim, plus)
                    .iter()
                    .copied()
                    .min_by_key(|&p| (load.get(p as usize).copied().unwrap_or(0), p));
                if let Some(p) = best {
                    table[lid as usize] = p;
                    if d.end != NONE
                        && let Some(l) = load.get_mut(p as usize)
                    {
                        *l += 1;
                    }
                }
            }
            table
        })
        .collect()
}

/// The SL of every (source switch, destination switch) pair.
pub fn path_sl(input: &RoutingInput, shape: &Shape) -> PathSl {
    let guids: Vec<_> = input.switches.iter().map(|s| s.guid).collect();
    let mut sl = PathSl::new(&guids);
    for (s, &gs) in guids.iter().enumerate() {
        for (t, &gt) in guids.iter().enumerate() {
            let v = pair_sl(shape, s, t);
            if v != 0 {
                sl.set(gs, gt, v);
            }
        }
    }
    sl
}

/// SL-to-VL tables: a switch port in wrapped dimension `d` maps SL `s` to VL `(s >> d) & 1`;
/// every other port (host ports, mesh dimensions) maps every SL to VL 0.
pub fn sl2vl(input: &RoutingInput, shape: &Shape) -> EngineSl2Vl {
    let mut m = EngineSl2Vl {
        default: [0; 16],
        per_out_port: Default::default(),
    };
    for (s, sw) in input.switches.iter().enumerate() {
        for d in (0..shape.dims()).filter(|&d| shape.wrapped[d]) {
            let table: SlVlTable = std::array::from_fn(|sl| ((sl >> d) & 1) as u8);
            for plus in [true, false] {
                for &p in shape.ports(s, d, plus) {
                    m.per_out_port.insert((sw.guid, p), table);
                }
            }
        }
    }
    m
}
