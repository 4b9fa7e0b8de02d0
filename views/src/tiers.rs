//! A [`Drawing`] as an SVG of fixed width for a page (the dashboard): one row per tier,
//! top tier first, boxes spread evenly over the width; a label that does not fit its box's
//! width is written vertically, so every switch keeps a readable label however many share
//! a row (ft2:36's 36 leaves at 1400 px). Rows below the top are ordered by where their
//! upper neighbours are (one barycentre pass), edges are straight lines, and links folded
//! into one edge carry their count. No layout library: linear in boxes and edges.

use crate::fabric_view::{Drawing, LinkState, Shape};
use crate::render::{caption, edge_color, fill};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Label font size, px.
const FONT: f64 = 12.0;
/// Width of one label character, px (sans-serif at [`FONT`], generous).
const CHAR_W: f64 = 7.2;
/// Vertical gap between two rows, px.
const ROW_GAP: f64 = 150.0;
/// Height of a box whose label is written horizontally, px.
const FLAT_H: f64 = 24.0;
/// Top margin (caption and legend), px.
const TOP: f64 = 56.0;

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Where a box is drawn: centre x, top y, width, height, label vertical.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Placed {
    /// Centre x.
    pub x: f64,
    /// Top y.
    pub y: f64,
    /// Width.
    pub w: f64,
    /// Height.
    pub h: f64,
    /// The label is written bottom to top.
    pub vertical: bool,
}

/// Places every box of `d` on a page `width` px wide (index as in `d.boxes`) and returns
/// the height the picture needs.
pub fn place(d: &Drawing, width: f64) -> (Vec<Placed>, f64) {
    let mut rows: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (i, b) in d.boxes.iter().enumerate() {
        rows.entry(b.level).or_default().push(i);
    }
    let mut ups: Vec<Vec<usize>> = vec![Vec::new(); d.boxes.len()];
    for (u, w, _, _) in &d.edges {
        ups[*w].push(*u);
    }
    let mut placed = vec![
        Placed {
            x: 0.0,
            y: 0.0,
            w: 0.0,
            h: 0.0,
            vertical: false
        };
        d.boxes.len()
    ];
    let mut y = TOP;
    for row in rows.values_mut().rev() {
        // Below the top row: in the order of the upper neighbours' mean x (ties and boxes
        // without one keep their order).
        let key = |i: usize| -> f64 {
            let xs: Vec<f64> = ups[i].iter().map(|u| placed[*u].x).collect();
            if xs.is_empty() {
                f64::MAX
            } else {
                xs.iter().sum::<f64>() / xs.len() as f64
            }
        };
        let mut keyed: Vec<(f64, usize)> = row.iter().map(|&i| (key(i), i)).collect();
        keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        *row = keyed.into_iter().map(|(_, i)| i).collect();
        let slot = width / row.len() as f64;
        let longest = row
            .iter()
            .map(|&i| d.boxes[i].label.chars().count())
            .max()
            .unwrap_or(0) as f64
            * CHAR_W;
        let vertical = longest + 10.0 > slot - 4.0;
        let (w, h) = if vertical {
            ((slot - 4.0).clamp(FONT + 4.0, 40.0), longest + 12.0)
        } else {
            (longest + 12.0, FLAT_H)
        };
        for (k, &i) in row.iter().enumerate() {
            placed[i] = Placed {
                x: slot * (k as f64 + 0.5),
                y,
                w,
                h,
                vertical,
            };
        }
        y += h + ROW_GAP;
    }
    (placed, y - ROW_GAP + 16.0)
}

/// The drawing as an SVG `width` px wide (the height follows from the rows).
pub fn tiers_svg(d: &Drawing, width: u32) -> String {
    let wf = f64::from(width);
    let (p, height) = place(d, wf);
    let mut o = String::new();
    let _ = write!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height:.0}" viewBox="0 0 {width} {height:.0}" font-family="sans-serif" font-size="{FONT}">"#
    );
    let _ = write!(
        o,
        r#"<text x="8" y="20" font-size="14" font-weight="bold">{}</text>"#,
        caption(d)
    );
    let _ = write!(
        o,
        r##"<text x="8" y="40" fill="#555">links: <tspan fill="#2e7d32">active</tspan>, <tspan fill="#f9a825">degraded</tspan>, <tspan fill="#c62828">down (dashed)</tspan>; ×N: N parallel links; the master SM in orange</text>"##
    );
    // Edges first, boxes over them; dense rows get lighter lines.
    let opacity = if d.edges.len() > 200 { 0.35 } else { 0.8 };
    for (u, w, s, c) in &d.edges {
        let (a, b) = (p[*u], p[*w]);
        let width = 1.0 + (*c as f64).log2().min(4.0);
        let dash = if *s == LinkState::Down {
            r#" stroke-dasharray="5,3""#
        } else {
            ""
        };
        let _ = write!(
            o,
            r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{}" stroke-width="{width:.1}" stroke-opacity="{opacity}"{dash}/>"#,
            a.x,
            a.y + a.h,
            b.x,
            b.y,
            edge_color(*s)
        );
    }
    for (u, w, _, c) in &d.edges {
        if *c > 1 {
            let (a, b) = (p[*u], p[*w]);
            // Near the lower end, where the lines of a row fan out least.
            let (x, y) = (
                a.x + (b.x - a.x) * 0.8,
                (a.y + a.h) + (b.y - a.y - a.h) * 0.8,
            );
            let _ = write!(
                o,
                r##"<text x="{x:.1}" y="{y:.1}" font-size="10" text-anchor="middle" fill="#1b5e20" stroke="#fff" stroke-width="3" paint-order="stroke">×{c}</text>"##
            );
        }
    }
    for (t, q) in d.boxes.iter().zip(&p) {
        let (bw, sw) = if t.master {
            ("#b35900", 3)
        } else {
            ("#444", 1)
        };
        let rx = if t.shape == Shape::Switch { 2 } else { 8 };
        let _ = write!(
            o,
            r#"<g class="box" data-id="{}"><rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" rx="{rx}" fill="{}" stroke="{bw}" stroke-width="{sw}"/>"#,
            t.id,
            q.x - q.w / 2.0,
            q.y,
            q.w,
            q.h,
            fill(t)
        );
        let label = xml(&t.label);
        if q.vertical {
            let (cx, cy) = (q.x + FONT / 3.0, q.y + q.h / 2.0);
            let _ = write!(
                o,
                r#"<text x="{cx:.1}" y="{cy:.1}" text-anchor="middle" transform="rotate(-90 {cx:.1} {cy:.1})">{label}</text></g>"#
            );
        } else {
            let _ = write!(
                o,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{label}</text></g>"#,
                q.x,
                q.y + q.h / 2.0 + FONT / 3.0
            );
        }
    }
    o.push_str("</svg>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric_view::{DrawOptions, arrange, tests::ft};

    #[test]
    fn ft2_36_fits_1400_px_with_every_label_readable() {
        // ft2:36: 18 spines, 36 leaves, 18 hosts per leaf.
        let m = ft(18, 36, 18);
        let o = DrawOptions {
            max_hosts_per_leaf: 2,
            ..DrawOptions::default()
        };
        let d = arrange(&m, &o).unwrap();
        let (p, h) = place(&d, 1360.0);
        assert!(h < 1000.0, "height {h}");
        for (b, q) in d.boxes.iter().zip(&p) {
            // Inside the page, and the label's length fits along the box.
            assert!(
                q.x - q.w / 2.0 >= 0.0 && q.x + q.w / 2.0 <= 1360.0,
                "{b:?} {q:?}"
            );
            let along = if q.vertical { q.h } else { q.w };
            let across = if q.vertical { q.w } else { q.h };
            assert!(
                b.label.chars().count() as f64 * CHAR_W <= along,
                "{b:?} {q:?}"
            );
            assert!(across >= FONT + 4.0, "{b:?} {q:?}");
        }
        // No two boxes of a row overlap.
        for (i, a) in p.iter().enumerate() {
            for b in &p[i + 1..] {
                if a.y == b.y {
                    assert!((a.x - b.x).abs() >= (a.w + b.w) / 2.0, "{a:?} {b:?}");
                }
            }
        }
        let svg = tiers_svg(&d, 1360);
        for b in &d.boxes {
            assert!(
                svg.contains(&format!(">{}</text>", xml(&b.label))),
                "{}",
                b.label
            );
        }
        assert_eq!(svg.matches("<line ").count(), d.edges.len());
    }

    #[test]
    fn parallel_links_are_one_edge_with_a_count() {
        // Two spines, two leaves, every leaf-spine pair cabled three times.
        let mut m = ft(2, 2, 1);
        let extra: Vec<_> = m
            .links
            .iter()
            .filter(|l| l.a >= 0x100 && l.b >= 0x100 && l.a < 0x1000 && l.b < 0x1000)
            .cloned()
            .collect();
        assert_eq!(extra.len(), 4, "{:?}", m.links);
        for (k, l) in extra.iter().enumerate() {
            for n in 1..3u32 {
                let mut l2 = l.clone();
                l2.a_port += 10 * n + k as u32;
                l2.b_port += 10 * n + k as u32;
                m.links.push(l2);
            }
        }
        let d = arrange(&m, &DrawOptions::default()).unwrap();
        let sw: Vec<_> = d
            .edges
            .iter()
            .filter(|e| d.boxes[e.1].shape == Shape::Switch)
            .collect();
        assert_eq!(sw.len(), 4, "{:?}", d.edges);
        assert!(sw.iter().all(|e| e.3 == 3), "{sw:?}");
        assert_eq!(d.links, 12 + 2);
        let svg = tiers_svg(&d, 800);
        assert_eq!(svg.matches(">×3</text>").count(), 4);
    }
}
